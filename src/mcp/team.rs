//! The *team* toolset: agents and teams, messaging many sessions at once,
//! broadcasts with a cascade, locks and tags.

use std::collections::BTreeMap;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router, Json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use futures_util::future::join_all;

use super::types::*;
use super::CohortServer;
use crate::engine::orchestrate::cascade;
use crate::engine::read::{ReadOptions, ReadWhat};
use crate::engine::registry::{AgentRecord, LockRecord, TeamRecord};
use crate::engine::{EngineError, ExpandedTarget, SendOptions};

/// `register_agent` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterAgentArgs {
    /// Agent name (unique).
    pub name: String,
    /// The session it works in (name, persistent id or pane id).
    pub session: String,
    /// Role, free text ("reviewer", "builder").
    #[serde(default)]
    pub role: Option<String>,
    /// Teams to put it in (created as needed).
    #[serde(default)]
    pub teams: Vec<String>,
}

/// A name-only argument.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameArgs {
    /// The name.
    pub name: String,
}

/// `create_team` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTeamArgs {
    /// Team name (unique).
    pub name: String,
    /// Parent team, for hierarchies.
    #[serde(default)]
    pub parent: Option<String>,
}

/// `assign_team` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignTeamArgs {
    /// Agent name.
    pub agent: String,
    /// Team name.
    pub team: String,
    /// Take the agent out of the team instead (default false).
    #[serde(default)]
    pub remove: bool,
}

/// `list_agents` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AgentsResult {
    /// Every agent.
    pub agents: Vec<AgentRecord>,
}

/// `list_teams` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TeamsResult {
    /// Every team.
    pub teams: Vec<TeamRecord>,
}

/// A plain acknowledgement.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Ack {
    /// What happened, in words.
    pub message: String,
}

/// `write_many` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteManyArgs {
    /// Sessions, agents or teams (a team means all its agents, sub-teams included). A session named twice is written once.
    pub targets: Vec<String>,
    /// Text typed into each.
    pub text: String,
    /// Press Enter afterwards (default true).
    #[serde(default = "yes")]
    pub enter: bool,
    /// Pass cohort's tripwire (default false).
    #[serde(default)]
    pub force: bool,
    /// Who is typing (your agent name), checked against locks.
    #[serde(default)]
    pub owner: Option<String>,
}

/// The outcome for one target.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TargetOutcome {
    /// The target as resolved (agent or session name).
    pub target: String,
    /// Session name (empty when the target names no open session).
    pub session: String,
    /// Whether it worked.
    pub ok: bool,
    /// Why not, when it did not.
    pub error: Option<String>,
    /// The message sent (broadcast) or the text read (read_many).
    pub text: Option<String>,
    /// Meta line (read_many), or which cascade level chose the message (broadcast).
    pub meta: Option<String>,
}

/// The expanded targets, unless none names a session: then the first reason is the
/// call's error.
fn resolved_somewhere(
    targets: Result<Vec<ExpandedTarget>, EngineError>,
) -> Result<Vec<ExpandedTarget>, String> {
    let targets = targets.map_err(err)?;
    match targets.iter().find_map(|(_, pane)| pane.as_ref().err()) {
        Some(first) if targets.iter().all(|(_, pane)| pane.is_err()) => Err(first.to_string()),
        _ => Ok(targets),
    }
}

impl TargetOutcome {
    /// The answer for a target that names no session.
    fn unresolved(target: &str, error: &EngineError) -> TargetOutcome {
        TargetOutcome {
            target: target.to_string(),
            session: String::new(),
            ok: false,
            error: Some(error.to_string()),
            text: None,
            meta: None,
        }
    }
}

/// Result of a many-target call.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ManyResult {
    /// One entry per distinct session.
    pub results: Vec<TargetOutcome>,
}

/// `read_many` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadManyArgs {
    /// Sessions, agents or teams.
    pub targets: Vec<String>,
    /// "new" (default: since your last read), "tail" or "screen".
    #[serde(default)]
    pub mode: Option<String>,
    /// Lines per target at most (default 40).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Keep only lines matching this regex.
    #[serde(default)]
    pub filter: Option<String>,
}

/// `broadcast` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BroadcastArgs {
    /// Message for every registered agent that gets nothing closer.
    #[serde(default)]
    pub message: Option<String>,
    /// Messages per team (reaching its sub-teams too), beating the broadcast.
    #[serde(default)]
    pub teams: BTreeMap<String, String>,
    /// Messages per agent, beating its teams' and the broadcast.
    #[serde(default)]
    pub agents: BTreeMap<String, String>,
    /// Press Enter after each message (default true).
    #[serde(default = "yes")]
    pub enter: bool,
    /// Who is sending (your agent name), checked against locks.
    #[serde(default)]
    pub owner: Option<String>,
}

/// `lock`/`unlock` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockArgs {
    /// Session name, persistent id, agent name or pane id.
    pub target: String,
    /// Who holds (or releases) the lock: your agent name.
    pub owner: String,
    /// For unlock: release someone else's lock (default false).
    #[serde(default)]
    pub force: bool,
}

/// How long ago Unix second `since` was, for people: `42 s ago`, `3 min ago`, `2 h ago`.
fn ago(since: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(since, |d| d.as_secs() as i64);
    match (now - since).max(0) {
        s if s < 120 => format!("{s} s ago"),
        s if s < 2 * 3600 => format!("{} min ago", s / 60),
        s if s < 2 * 86_400 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}

/// `lock` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct LockResult {
    /// Whether you hold the lock now.
    pub locked: bool,
    /// The holder.
    pub holder: Option<LockRecord>,
    /// What happened.
    pub message: String,
}

/// `request_access` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestAccessArgs {
    /// The locked session.
    pub target: String,
    /// Who asks (your agent name).
    pub requester: String,
    /// Why, for the holder.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `notifications` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotificationsArgs {
    /// Whose messages: your agent name (the owner you lock with).
    pub owner: String,
    /// Every message kept, handed out before or not (default: only new ones).
    #[serde(default)]
    pub all: bool,
}

/// One message.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct NotificationOut {
    /// Who left it.
    pub from: String,
    /// What kind: "access_request", …
    pub kind: String,
    /// The message.
    pub message: String,
    /// How long ago it was left.
    pub when: String,
}

/// `notifications` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct NotificationsResult {
    /// The messages, oldest first.
    pub notifications: Vec<NotificationOut>,
}

/// `tag` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TagArgs {
    /// Session name, persistent id, agent name or pane id.
    pub target: String,
    /// Tags to add.
    #[serde(default)]
    pub add: Vec<String>,
    /// Tags to remove.
    #[serde(default)]
    pub remove: Vec<String>,
}

/// `tag` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TagResult {
    /// Session name.
    pub session: String,
    /// Its tags now.
    pub tags: Vec<String>,
}

fn reg(e: crate::engine::registry::RegistryError) -> String {
    e.to_string()
}

#[tool_router(router = team_router, vis = "pub(crate)")]
impl CohortServer {
    #[tool(
        description = "Register an agent as working in a session, optionally in teams (created as needed). The pane is stamped with the agent and titled \"Team :: Agent\"; the agent's name then works as a target everywhere.",
        annotations(
            title = "Register an agent",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn register_agent(
        &self,
        Parameters(args): Parameters<RegisterAgentArgs>,
    ) -> Result<Json<AgentsResult>, String> {
        let engine = self.engine().await?;
        let pane = engine.resolve(&args.session).await.map_err(err)?;
        engine
            .register_agent(&args.name, &pane, args.role.as_deref(), &args.teams)
            .await
            .map_err(err)?;
        let agents = engine.registry().agents().map_err(reg)?;
        Ok(Json(AgentsResult {
            agents: agents.into_iter().filter(|a| a.name == args.name).collect(),
        }))
    }

    #[tool(
        description = "List registered agents with their session, role and teams.",
        annotations(
            title = "List agents",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_agents(&self) -> Result<Json<AgentsResult>, String> {
        let engine = self.engine().await?;
        Ok(Json(AgentsResult {
            agents: engine.registry().agents().map_err(reg)?,
        }))
    }

    #[tool(
        description = "Forget an agent (its session stays open).",
        annotations(
            title = "Remove an agent",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn remove_agent(
        &self,
        Parameters(args): Parameters<NameArgs>,
    ) -> Result<Json<Ack>, String> {
        let engine = self.engine().await?;
        let removed = engine.registry().remove_agent(&args.name).map_err(reg)?;
        Ok(Json(Ack {
            message: if removed {
                format!("agent {:?} removed", args.name)
            } else {
                format!("no agent named {:?}; nothing to do", args.name)
            },
        }))
    }

    #[tool(
        description = "Create a team, optionally inside a parent team (teams form a hierarchy; a message to a team reaches its sub-teams).",
        annotations(
            title = "Create a team",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn create_team(
        &self,
        Parameters(args): Parameters<CreateTeamArgs>,
    ) -> Result<Json<TeamsResult>, String> {
        let engine = self.engine().await?;
        crate::engine::validate_name(&args.name).map_err(err)?;
        engine
            .registry()
            .create_team(&args.name, args.parent.as_deref())
            .map_err(reg)?;
        Ok(Json(TeamsResult {
            teams: engine
                .registry()
                .teams()
                .map_err(reg)?
                .into_iter()
                .filter(|t| t.name == args.name)
                .collect(),
        }))
    }

    #[tool(
        description = "List teams with their parent and members.",
        annotations(
            title = "List teams",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_teams(&self) -> Result<Json<TeamsResult>, String> {
        let engine = self.engine().await?;
        Ok(Json(TeamsResult {
            teams: engine.registry().teams().map_err(reg)?,
        }))
    }

    #[tool(
        description = "Remove a team (its agents stay, without it; sub-teams lose their parent).",
        annotations(
            title = "Remove a team",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn remove_team(
        &self,
        Parameters(args): Parameters<NameArgs>,
    ) -> Result<Json<Ack>, String> {
        let engine = self.engine().await?;
        let removed = engine.registry().remove_team(&args.name).map_err(reg)?;
        Ok(Json(Ack {
            message: if removed {
                format!("team {:?} removed", args.name)
            } else {
                format!("no team named {:?}; nothing to do", args.name)
            },
        }))
    }

    #[tool(
        description = "Put an agent in a team, or take it out (remove: true).",
        annotations(
            title = "Assign a team",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn assign_team(
        &self,
        Parameters(args): Parameters<AssignTeamArgs>,
    ) -> Result<Json<AgentsResult>, String> {
        let engine = self.engine().await?;
        engine
            .registry()
            .assign_team(&args.agent, &args.team, !args.remove)
            .map_err(reg)?;
        let agents = engine.registry().agents().map_err(reg)?;
        Ok(Json(AgentsResult {
            agents: agents
                .into_iter()
                .filter(|a| a.name == args.agent)
                .collect(),
        }))
    }

    #[tool(
        description = "Type the same text into many sessions at once (targets by session, agent or team; in parallel; a session named twice gets it once). Each target reports success or why not.",
        annotations(
            title = "Write to many",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn write_many(
        &self,
        Parameters(args): Parameters<WriteManyArgs>,
    ) -> Result<Json<ManyResult>, String> {
        let engine = self.engine().await?;
        if args.targets.is_empty() {
            return Err("no targets: name sessions, agents or teams".into());
        }
        let targets = resolved_somewhere(engine.expand_targets(&args.targets).await)?;
        let options = SendOptions {
            enter: args.enter,
            force: args.force,
            owner: args.owner.clone(),
            ..SendOptions::default()
        };
        let sends = targets.iter().map(|(label, pane)| {
            let engine = engine.clone();
            let options = options.clone();
            let text = args.text.clone();
            async move {
                let pane = match pane {
                    Ok(pane) => pane,
                    Err(e) => return TargetOutcome::unresolved(label, e),
                };
                let result = engine.send(&pane.id, &text, &options).await;
                TargetOutcome {
                    target: label.clone(),
                    session: name_of(pane),
                    ok: result.is_ok(),
                    error: result.err().map(|e| e.to_string()),
                    text: None,
                    meta: None,
                }
            }
        });
        Ok(Json(ManyResult {
            results: join_all(sends).await,
        }))
    }

    #[tool(
        description = "Read many sessions at once (targets by session, agent or team; in parallel): what is new since your last read, the tail, or the screen; at most `limit` lines each; optionally only lines matching a regex.",
        annotations(
            title = "Read many",
            read_only_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn read_many(
        &self,
        Parameters(args): Parameters<ReadManyArgs>,
    ) -> Result<Json<ManyResult>, String> {
        let engine = self.engine().await?;
        let filter = args
            .filter
            .as_deref()
            .map(regex::Regex::new)
            .transpose()
            .map_err(|e| {
                format!(
                    "filter is not a valid regex ({e}); escape special characters such as ( [ . *"
                )
            })?;
        let limit = args.limit.unwrap_or(40).clamp(1, 10_000);
        let mode = args.mode.clone().unwrap_or_else(|| "new".into());
        if !["new", "tail", "screen"].contains(&mode.as_str()) {
            return Err(format!(
                "unknown mode {mode:?}: use \"new\", \"tail\" or \"screen\""
            ));
        }
        let targets = resolved_somewhere(engine.expand_targets(&args.targets).await)?;
        let reads = targets.iter().map(|(label, pane)| {
            let engine = engine.clone();
            let filter = filter.clone();
            let mode = mode.clone();
            async move {
                let pane = match pane {
                    Ok(pane) => pane,
                    Err(e) => return TargetOutcome::unresolved(label, e),
                };
                let outcome = |text: Result<(String, String), String>| match text {
                    Ok((text, meta)) => TargetOutcome {
                        target: label.clone(),
                        session: name_of(pane),
                        ok: true,
                        error: None,
                        text: Some(text),
                        meta: Some(meta),
                    },
                    Err(e) => TargetOutcome {
                        target: label.clone(),
                        session: name_of(pane),
                        ok: false,
                        error: Some(e),
                        text: None,
                        meta: None,
                    },
                };
                let text = if mode == "screen" {
                    engine
                        .screen(&pane.id)
                        .await
                        .map(|s| {
                            (
                                s.rows.join("\n").trim_end().to_string(),
                                format!("[screen {}x{}]", s.size.cols, s.size.rows),
                            )
                        })
                        .map_err(|e| e.to_string())
                } else {
                    let what = if mode == "tail" {
                        ReadWhat::Tail(limit as u64)
                    } else {
                        ReadWhat::New
                    };
                    let out = engine.read(
                        &pane.id,
                        &ReadOptions {
                            what,
                            caller: super::core::READER.into(),
                            raw: false,
                            max_lines: Some(limit),
                        },
                    );
                    Ok((out.text, out.meta))
                };
                let text = text.map(|(text, meta)| match &filter {
                    Some(re) => {
                        let kept: Vec<&str> = text.lines().filter(|l| re.is_match(l)).collect();
                        let meta = format!("{meta} [filter kept {} line(s)]", kept.len());
                        (
                            kept.into_iter().take(limit).collect::<Vec<_>>().join("\n"),
                            meta,
                        )
                    }
                    None => (
                        text.lines().take(limit).collect::<Vec<_>>().join("\n"),
                        meta,
                    ),
                });
                outcome(text)
            }
        });
        Ok(Json(ManyResult {
            results: join_all(reads).await,
        }))
    }

    #[tool(
        description = "Send messages to registered agents with a cascade: an agent's own message beats its team's (the nearest team up the hierarchy), which beats the broadcast message. Every agent gets at most one message; agents sharing a session get it once.",
        annotations(
            title = "Broadcast",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn broadcast(
        &self,
        Parameters(args): Parameters<BroadcastArgs>,
    ) -> Result<Json<ManyResult>, String> {
        let engine = self.engine().await?;
        if args.message.is_none() && args.teams.is_empty() && args.agents.is_empty() {
            return Err("nothing to send: give message, teams or agents".into());
        }
        let agents = engine.registry().agents().map_err(reg)?;
        let teams = engine.registry().teams().map_err(reg)?;
        for name in args.agents.keys() {
            if !agents.iter().any(|a| &a.name == name) {
                return Err(format!(
                    "no agent named {name:?}: register it first (list_agents shows who exists)"
                ));
            }
        }
        for name in args.teams.keys() {
            if !teams.iter().any(|t| &t.name == name) {
                return Err(format!(
                    "no team named {name:?}: create it first (list_teams shows what exists)"
                ));
            }
        }
        let chosen = cascade(
            &agents,
            &teams,
            args.message.as_deref(),
            &args.teams,
            &args.agents,
        );
        let panes = engine.list().await.map_err(err)?;
        let mut seen = std::collections::BTreeSet::new();
        let mut jobs = Vec::new();
        let mut results = Vec::new();
        for (agent, (message, level)) in chosen {
            let session = agents
                .iter()
                .find(|a| a.name == agent)
                .and_then(|a| a.session.clone());
            let Some(pane) = session
                .as_deref()
                .and_then(|s| crate::engine::resolve_target(&panes, s))
                .cloned()
            else {
                results.push(TargetOutcome {
                    target: agent,
                    session: session.unwrap_or_default(),
                    ok: false,
                    error: Some("the agent has no open session".into()),
                    text: Some(message),
                    meta: Some(level.into()),
                });
                continue;
            };
            if !seen.insert((pane.id.clone(), message.clone())) {
                // The same message to the same session goes once; the agent is still
                // answered for.
                results.push(TargetOutcome {
                    target: agent,
                    session: name_of(&pane),
                    ok: true,
                    error: None,
                    text: Some(message),
                    meta: Some(format!(
                        "{level}; its session already got this message from another agent's entry: sent once"
                    )),
                });
                continue;
            }
            let engine = engine.clone();
            let options = SendOptions {
                enter: args.enter,
                owner: args.owner.clone(),
                ..SendOptions::default()
            };
            jobs.push(async move {
                let result = engine.send(&pane.id, &message, &options).await;
                TargetOutcome {
                    target: agent,
                    session: name_of(&pane),
                    ok: result.is_ok(),
                    error: result.err().map(|e| e.to_string()),
                    text: Some(message),
                    meta: Some(level.into()),
                }
            });
        }
        results.extend(join_all(jobs).await);
        Ok(Json(ManyResult { results }))
    }

    #[tool(
        description = "Lock a session's input for an owner (your agent name): others' send, run, key and write_many are refused until unlock. Locking a session you hold is fine; locked by someone else, the answer names the holder.",
        annotations(
            title = "Lock a session",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn lock(
        &self,
        Parameters(args): Parameters<LockArgs>,
    ) -> Result<Json<LockResult>, String> {
        let engine = self.engine().await?;
        if args.owner.trim().is_empty() {
            return Err(
                "owner is empty: give your agent name, which your send, run and key then pass as owner"
                    .into(),
            );
        }
        let (pane, id) = self.session_id(&args.target).await?;
        match engine.registry().lock(&id, &args.owner).map_err(reg)? {
            None => Ok(Json(LockResult {
                locked: true,
                holder: engine.registry().lock_of(&id).map_err(reg)?,
                message: format!("{} is locked for {}", name_of(&pane), args.owner),
            })),
            Some(holder) => Err(format!(
                "session {:?} is already locked by {:?}: ask with request_access, or wait for unlock",
                holder.session, holder.owner
            )),
        }
    }

    #[tool(
        description = "Release a session's lock (yours; someone else's only with force: true).",
        annotations(
            title = "Unlock a session",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn unlock(
        &self,
        Parameters(args): Parameters<LockArgs>,
    ) -> Result<Json<LockResult>, String> {
        let engine = self.engine().await?;
        let (pane, id) = self.session_id(&args.target).await?;
        let released = engine
            .registry()
            .unlock(&id, &args.owner, args.force)
            .map_err(reg)?;
        Ok(Json(LockResult {
            locked: false,
            holder: None,
            message: if released {
                format!("{} is unlocked", name_of(&pane))
            } else {
                format!("{} was not locked", name_of(&pane))
            },
        }))
    }

    #[tool(
        description = "Ask the holder of a session's lock for access: leaves a notification for the holder (who reads it with notifications) and answers who holds it.",
        annotations(
            title = "Request access",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn request_access(
        &self,
        Parameters(args): Parameters<RequestAccessArgs>,
    ) -> Result<Json<LockResult>, String> {
        let engine = self.engine().await?;
        let (pane, id) = self.session_id(&args.target).await?;
        let Some(holder) = engine.registry().lock_of(&id).map_err(reg)? else {
            return Ok(Json(LockResult {
                locked: false,
                holder: None,
                message: format!("{} is not locked: go ahead", name_of(&pane)),
            }));
        };
        let message = format!(
            "{} asks for access to {}{}",
            args.requester,
            name_of(&pane),
            args.reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        );
        engine
            .registry()
            .notify(&args.requester, &holder.owner, "access_request", &message)
            .map_err(reg)?;
        Ok(Json(LockResult {
            locked: false,
            message: format!(
                "asked {} (they hold the lock, taken {}); it is still theirs: wait for their unlock",
                holder.owner,
                ago(holder.since)
            ),
            holder: Some(holder),
        }))
    }

    #[tool(
        description = "Messages left for you by other agents (access requests for sessions you locked): the ones not handed out yet, oldest first; all: true for every one kept.",
        annotations(
            title = "Notifications",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn notifications(
        &self,
        Parameters(args): Parameters<NotificationsArgs>,
    ) -> Result<Json<NotificationsResult>, String> {
        let engine = self.engine().await?;
        if args.owner.trim().is_empty() {
            return Err("owner is empty: give your agent name, as you gave it to lock".into());
        }
        let records = if args.all {
            engine.registry().notifications(&args.owner)
        } else {
            engine.registry().take_notifications(&args.owner)
        }
        .map_err(reg)?;
        Ok(Json(NotificationsResult {
            notifications: records
                .into_iter()
                .map(|n| NotificationOut {
                    from: n.source,
                    kind: n.kind,
                    message: n.message,
                    when: ago(n.created),
                })
                .collect(),
        }))
    }

    #[tool(
        description = "Add or remove tags on a session.",
        annotations(
            title = "Tag a session",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn tag(&self, Parameters(args): Parameters<TagArgs>) -> Result<Json<TagResult>, String> {
        let engine = self.engine().await?;
        if let Some(bad) = args
            .add
            .iter()
            .find(|t| t.trim().is_empty() || t.chars().any(char::is_control))
        {
            return Err(format!(
                "tag {bad:?} is not usable: tags are non-empty text without control characters"
            ));
        }
        let (pane, id) = self.session_id(&args.target).await?;
        engine
            .registry()
            .tag(&id, &args.add, &args.remove)
            .map_err(reg)?;
        let tags = engine
            .registry()
            .sessions()
            .map_err(reg)?
            .into_iter()
            .find(|s| s.id == id)
            .map(|s| s.tags)
            .unwrap_or_default();
        Ok(Json(TagResult {
            session: name_of(&pane),
            tags,
        }))
    }
}

impl CohortServer {
    /// The pane and registry id of a target session.
    async fn session_id(
        &self,
        target: &str,
    ) -> Result<(cohort_backends::PaneInfo, String), String> {
        let engine = self.engine().await?;
        let pane = engine.resolve(target).await.map_err(err)?;
        let record = engine
            .session_record(&pane.id)
            .map_err(err)?
            .ok_or_else(|| format!("{target:?} is not a cohort session (no persistent identity): open it with cohort"))?;
        Ok((pane, record.id))
    }
}
