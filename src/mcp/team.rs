//! The *team* toolset: agents and teams, messaging many sessions at once,
//! broadcasts with a cascade, locks and tags.

use cohort_terminal::{
    access::{lock_released, lock_taken},
    registry::{AgentRecord, LockRecord, TeamRecord},
    sessions::session_name,
    SendOptions,
};
use std::collections::BTreeMap;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};

use super::reply::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::types::*;
use super::CohortServer;
use cohort_orchestration::many::ManyRead;
use cohort_terminal::targets::Delivery;

mod types;

use types::ago;
pub use types::*;

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
        let pane = engine.terminal.resolve(&args.session).await.map_err(err)?;
        let agent = engine
            .terminal
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
                .terminal
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
        let removed = engine
            .terminal
            .remove_agent(&args.name)
            .await
            .map_err(err)?;
        Ok(Json(Ack {
            message: if removed {
                format!("agent {:?} removed", args.name)
            } else {
                format!("no agent named {:?}; nothing to do", args.name)
            },
        }))
    }

    #[tool(
        description = "Create a team, optionally inside a parent team (teams form a hierarchy; a message to a team reaches its sub-teams); env sets the variables every new pane of the team starts with (again on an existing team: replaces them). Each team has a colour; on iTerm2 also a profile of its own that its panes start from.",
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
        let terminal = &engine.terminal;
        let env: Option<Vec<(String, String)>> = args
            .env
            .as_ref()
            .map(|env| env.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
        // The variables are checked before the team is made.
        if let Some(env) = &env {
            cohort_terminal::profiles::check_env(env).map_err(err)?;
        }
        let team = terminal
            .create_team(&args.name, args.parent.as_deref())
            .await
            .map_err(err)?;
        if let Some(env) = &env {
            terminal.set_team_env(&team.name, env).await.map_err(err)?;
        }
        if let Some(on) = args.alerts {
            terminal
                .set_team_alerts(&team.name, on)
                .await
                .map_err(err)?;
        }
        Ok(Json(TeamsResult {
            teams: vec![team_out(terminal, team).await],
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
        let mut teams = Vec::new();
        for record in engine.terminal.teams().await.map_err(err)? {
            teams.push(team_out(&engine.terminal, record).await);
        }
        Ok(Json(TeamsResult { teams }))
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
        let removed = engine.terminal.remove_team(&args.name).await.map_err(err)?;
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
            .terminal
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
            ..SendOptions::default()
        };
        let caller = self.caller(args.owner.clone());
        let results = engine
            .orchestrator
            .write_many(&args.targets, &args.text, &options, &caller)
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
            .map(|f| cohort_terminal::pattern::compile("filter", f))
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
            .orchestrator
            .read_many(
                &args.targets,
                how,
                &self.caller(None),
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
            ..SendOptions::default()
        };
        let caller = self.caller(args.owner.clone());
        let addressed: Vec<(String, String)> = args
            .messages
            .into_iter()
            .map(|m| (m.target, m.message))
            .collect();
        let results = engine
            .orchestrator
            .broadcast_addressed(
                args.message.as_deref(),
                &args.teams,
                &args.agents,
                &addressed,
                &options,
                &caller,
            )
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
        let pane = engine.terminal.resolve(&args.target).await.map_err(err)?;
        let lock = engine
            .terminal
            .lock(&pane.id, &args.owner, Some(self.connection()))
            .await
            .map_err(err)?;
        Ok(Json(LockResult {
            locked: true,
            yours: true,
            message: lock_taken(&lock),
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
        let pane = engine.terminal.resolve(&args.target).await.map_err(err)?;
        let released = engine
            .terminal
            .unlock(&pane.id, &args.owner, Some(self.connection()), args.force)
            .await
            .map_err(err)?;
        Ok(Json(LockResult {
            locked: false,
            yours: false,
            holder: None,
            message: lock_released(&session_name(&pane), released),
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
        let requester = self.own_name(&args.requester, "the requester")?;
        let engine = self.engine().await?;
        let pane = engine.terminal.resolve(&args.target).await.map_err(err)?;
        let answer = engine
            .orchestrator
            .request_access(&pane.id, &requester, args.reason.as_deref())
            .await
            .map_err(err)?;
        Ok(Json(match answer.holder {
            None => LockResult {
                locked: false,
                yours: false,
                holder: None,
                message: format!("{} is not locked: go ahead", answer.session),
            },
            Some(holder) => LockResult {
                locked: true,
                yours: holder.owner == requester,
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
        let owner = self.own_name(&args.owner, "the reader of notifications")?;
        let engine = self.engine().await?;
        let wait = args.wait.then(|| {
            std::time::Duration::from_millis(args.timeout_ms.unwrap_or(60_000).clamp(1, 3_600_000))
        });
        let (_, rx) = tokio::sync::mpsc::unbounded_channel();
        let records = super::orchestration::with_updates(
            engine
                .orchestrator
                .notifications_for(&owner, args.all, wait),
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
        let pane = engine.terminal.resolve(&args.target).await.map_err(err)?;
        let tags = engine
            .terminal
            .tag(&pane.id, &args.add, &args.remove)
            .await
            .map_err(err)?;
        Ok(Json(TagResult {
            session: session_name(&pane),
            tags,
        }))
    }
}

/// A team as the tools show it: with its colour and its variables.
async fn team_out(
    terminal: &cohort_terminal::Terminal,
    record: cohort_terminal::registry::TeamRecord,
) -> TeamOut {
    let colour = terminal.team_colour(&record.name).await.ok();
    let env = terminal.team_env(&record.name).await.unwrap_or_default();
    let alerts = terminal.team_alerts(&record.name).await.unwrap_or(false);
    TeamOut {
        colour: colour.map(|c| c.hex),
        env: env.into_iter().collect(),
        alerts,
        ..TeamOut::from(record)
    }
}
