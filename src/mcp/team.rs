//! The *team* toolset: agents and teams, messaging many sessions at once,
//! broadcasts with a cascade, locks and tags.

use std::collections::BTreeMap;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};

use super::reply::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::types::*;
use super::CohortServer;
use crate::engine::many::{Delivery, ManyRead};
use crate::engine::registry::{AgentRecord, LockRecord, TeamRecord};
use crate::engine::SendOptions;

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

/// An agent as the tools show it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AgentOut {
    /// Unique agent name.
    pub name: String,
    /// Session it works in.
    pub session: Option<String>,
    /// Role (free text: "reviewer", "builder").
    pub role: Option<String>,
    /// Teams it belongs to.
    pub teams: Vec<String>,
}

impl From<AgentRecord> for AgentOut {
    fn from(a: AgentRecord) -> Self {
        AgentOut {
            name: a.name,
            session: a.session,
            role: a.role,
            teams: a.teams,
        }
    }
}

/// A team as the tools show it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TeamOut {
    /// Unique team name.
    pub name: String,
    /// Parent team, for hierarchies.
    pub parent: Option<String>,
    /// Agents in it.
    pub members: Vec<String>,
}

impl From<TeamRecord> for TeamOut {
    fn from(t: TeamRecord) -> Self {
        TeamOut {
            name: t.name,
            parent: t.parent,
            members: t.members,
        }
    }
}

/// A lock as the tools show it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct LockOut {
    /// Session name.
    pub session: String,
    /// Who holds it.
    pub owner: String,
    /// Unix seconds.
    pub since: i64,
}

impl From<LockRecord> for LockOut {
    fn from(l: LockRecord) -> Self {
        LockOut {
            session: l.session,
            owner: l.owner,
            since: l.since,
        }
    }
}

/// `list_agents` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AgentsResult {
    /// Every agent.
    pub agents: Vec<AgentOut>,
}

/// `list_teams` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TeamsResult {
    /// Every team.
    pub teams: Vec<TeamOut>,
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

impl From<Delivery> for TargetOutcome {
    fn from(d: Delivery) -> Self {
        TargetOutcome {
            target: d.target,
            session: d.session,
            ok: d.error.is_none(),
            error: d.error,
            text: d.text,
            meta: d.meta,
        }
    }
}

/// Result of a many-target call.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ManyResult {
    /// One entry per distinct session.
    pub results: Vec<TargetOutcome>,
}

impl From<Vec<Delivery>> for ManyResult {
    fn from(deliveries: Vec<Delivery>) -> Self {
        ManyResult {
            results: deliveries.into_iter().map(TargetOutcome::from).collect(),
        }
    }
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
    /// Messages by hierarchy: [{target: "org/web" | "web/alice" | team | agent, message}].
    #[serde(default)]
    pub messages: Vec<HierarchicalMessage>,
    /// Press Enter after each message (default true).
    #[serde(default = "yes")]
    pub enter: bool,
    /// Who is sending (your agent name), checked against locks.
    #[serde(default)]
    pub owner: Option<String>,
}

/// A message addressed through the team tree.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HierarchicalMessage {
    /// A team, an agent, or a path: `org/web`, `web/alice`.
    pub target: String,
    /// The message.
    pub message: String,
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
    pub holder: Option<LockOut>,
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
    /// Nothing new: wait for the next one (up to timeout_ms, default 60000).
    #[serde(default)]
    pub wait: bool,
    /// With wait: give up after this many ms.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
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
        let agent = engine
            .register_agent(&args.name, &pane, args.role.as_deref(), &args.teams)
            .await
            .map_err(err)?;
        Ok(Json(AgentsResult {
            agents: vec![AgentOut::from(agent)],
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
    async fn list_agents(
        &self,
        Parameters(_): Parameters<NoArgs>,
    ) -> Result<Json<AgentsResult>, String> {
        let engine = self.engine().await?;
        Ok(Json(AgentsResult {
            agents: engine
                .agents()
                .await
                .map_err(err)?
                .into_iter()
                .map(AgentOut::from)
                .collect(),
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
        let removed = engine.remove_agent(&args.name).await.map_err(err)?;
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
        let team = engine
            .create_team(&args.name, args.parent.as_deref())
            .await
            .map_err(err)?;
        Ok(Json(TeamsResult {
            teams: vec![TeamOut::from(team)],
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
    async fn list_teams(
        &self,
        Parameters(_): Parameters<NoArgs>,
    ) -> Result<Json<TeamsResult>, String> {
        let engine = self.engine().await?;
        Ok(Json(TeamsResult {
            teams: engine
                .teams()
                .await
                .map_err(err)?
                .into_iter()
                .map(TeamOut::from)
                .collect(),
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
        let removed = engine.remove_team(&args.name).await.map_err(err)?;
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
        let agent = engine
            .assign_team(&args.agent, &args.team, !args.remove)
            .await
            .map_err(err)?;
        Ok(Json(AgentsResult {
            agents: vec![AgentOut::from(agent)],
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
        let options = SendOptions {
            enter: args.enter,
            force: args.force,
            owner: args.owner.clone(),
            owner_token: Some(self.connection().into()),
            ..SendOptions::default()
        };
        let results = engine
            .write_many(&args.targets, &args.text, &options)
            .await
            .map_err(err)?;
        Ok(Json(ManyResult::from(results)))
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
            .map(|f| crate::engine::pattern::compile("filter", f))
            .transpose()?;
        let limit = args.limit.unwrap_or(40).clamp(1, 10_000);
        let how = match args.mode.as_deref().unwrap_or("new") {
            "new" => ManyRead::New,
            "tail" => ManyRead::Tail,
            "screen" => ManyRead::Screen,
            mode => {
                return Err(format!(
                    "unknown mode {mode:?}: use \"new\", \"tail\" or \"screen\""
                ))
            }
        };
        let results = engine
            .read_many(
                &args.targets,
                how,
                self.connection(),
                limit,
                filter.as_ref(),
            )
            .await
            .map_err(err)?;
        Ok(Json(ManyResult::from(results)))
    }

    #[tool(
        description = "Send messages to registered agents with a cascade: an agent's own message beats its team's (the nearest team up the hierarchy), which beats the broadcast message. Every agent gets at most one message; agents sharing a session get it once. messages addresses by hierarchy (org/web, web/alice).",
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
        let options = SendOptions {
            enter: args.enter,
            owner: args.owner.clone(),
            owner_token: Some(self.connection().into()),
            ..SendOptions::default()
        };
        let (mut teams, mut agents) = (args.teams, args.agents);
        if !args.messages.is_empty() {
            let listed: Vec<(String, String)> = args
                .messages
                .into_iter()
                .map(|m| (m.target, m.message))
                .collect();
            let (by_team, by_agent) = crate::engine::hierarchy::sort_messages(
                &listed,
                &engine.teams().await.map_err(err)?,
                &engine.agents().await.map_err(err)?,
            )?;
            for (map, more, what) in [
                (&mut teams, by_team, "team"),
                (&mut agents, by_agent, "agent"),
            ] {
                for (name, message) in more {
                    if map.insert(name.clone(), message).is_some() {
                        return Err(format!("two messages for {what} {name:?}: in {what}s and in messages; give one"));
                    }
                }
            }
        }
        let results = engine
            .broadcast(args.message.as_deref(), &teams, &agents, &options)
            .await
            .map_err(err)?;
        Ok(Json(ManyResult::from(results)))
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
        let pane = engine.resolve(&args.target).await.map_err(err)?;
        let lock = engine
            .lock(&pane.id, &args.owner, Some(self.connection()))
            .await
            .map_err(err)?;
        Ok(Json(LockResult {
            locked: true,
            message: format!("{} is locked for {}", lock.session, lock.owner),
            holder: Some(LockOut::from(lock)),
        }))
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
        let pane = engine.resolve(&args.target).await.map_err(err)?;
        let released = engine
            .unlock(&pane.id, &args.owner, Some(self.connection()), args.force)
            .await
            .map_err(err)?;
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
        let pane = engine.resolve(&args.target).await.map_err(err)?;
        let answer = engine
            .request_access(&pane.id, &args.requester, args.reason.as_deref())
            .await
            .map_err(err)?;
        Ok(Json(match answer.holder {
            None => LockResult {
                locked: false,
                holder: None,
                message: format!("{} is not locked: go ahead", answer.session),
            },
            Some(holder) => LockResult {
                locked: false,
                message: format!(
                    "asked {} (they hold the lock, taken {}); it is still theirs: wait for their unlock",
                    holder.owner,
                    ago(holder.since)
                ),
                holder: Some(LockOut::from(holder)),
            },
        }))
    }

    #[tool(
        description = "Messages for you and for everyone (notify, access requests, watcher hits, failed commands, agent states): new ones, oldest first; all: every one kept; wait: block until the next.",
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
        ctx: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<Json<NotificationsResult>, String> {
        let engine = self.engine().await?;
        let wait = args.wait.then(|| {
            std::time::Duration::from_millis(args.timeout_ms.unwrap_or(60_000).clamp(1, 3_600_000))
        });
        let (_, rx) = tokio::sync::mpsc::unbounded_channel();
        let records = super::orchestration::with_updates(
            engine.notifications_for(&args.owner, args.all, wait),
            rx,
            &ctx,
            "cancelled by the client",
        )
        .await?
        .map_err(err)?;
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
        let pane = engine.resolve(&args.target).await.map_err(err)?;
        let tags = engine
            .tag(&pane.id, &args.add, &args.remove)
            .await
            .map_err(err)?;
        Ok(Json(TagResult {
            session: name_of(&pane),
            tags,
        }))
    }
}
