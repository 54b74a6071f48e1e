//! Roles on the server: which tools a server started for an agent lists, and the
//! clear refusal of the others.
//!
//! A server with a role (`cohort mcp --role tester`, or `--agent NAME` for the role
//! that agent was registered with) lists only the tools the role allows. A call to
//! another tool is answered with an error naming the role and what it lacks, not
//! "unknown tool"; so is a destructive choice (`force`) the role does not allow.

use std::sync::Arc;

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::model::{CallToolResult, ContentBlock};

use super::CohortServer;
use cohort_orchestration::{
    playbook::{Playbook, StepWait},
    roles::{Permission, Role},
    watch::Action,
};

/// The permission a tool needs, by what it does. Tools not named here need the
/// permission their annotations suggest: destructive ones `close`, read-only ones
/// `read`, the rest `orchestrate`.
pub fn permission_of(tool: &rmcp::model::Tool) -> Permission {
    use Permission::{
        Appearance, Close, Lock, Notify, Open, Orchestrate, Read, Run, Team, Type, Watch,
    };
    match tool.name.as_ref() {
        "list" | "status" | "read" | "read_many" | "list_agents" | "list_teams"
        | "list_watches" | "agent_status" | "wait_for" | "notifications" => Read,
        "notify" | "request_access" => Notify,
        "watch" | "unwatch" => Watch,
        "send" | "key" | "write_many" | "broadcast" => Type,
        "run" => Run,
        "open" | "split" | "create_layout" => Open,
        "focus" | "set_appearance" => Appearance,
        "register_agent" | "remove_agent" | "create_team" | "remove_team" | "assign_team"
        | "tag" => Team,
        "lock" | "unlock" => Lock,
        "playbook" => Orchestrate,
        "close" | "close_workers" => Close,
        "list_workers" | "examine_worker" | "read_worker_logs" | "list_worktrees"
        | "discover_workers" | "check_idle_workers" | "wait_idle_workers" => Read,
        "message_workers" => Type,
        "spawn_workers" | "adopt_worker" => Open,
        "annotate_worker" => Team,
        _ if tool
            .annotations
            .as_ref()
            .is_some_and(|a| a.destructive_hint == Some(true)) =>
        {
            Close
        }
        _ if tool
            .annotations
            .as_ref()
            .is_some_and(|a| a.read_only_hint == Some(true)) =>
        {
            Read
        }
        _ => Orchestrate,
    }
}

/// Why `role` refuses `tool`.
fn refusal(role: &Role, tool: &str, permission: Permission) -> String {
    if permission == Permission::Close && role.permissions.contains(&Permission::Close) {
        return format!(
            "the role {:?} does not allow destructive tools such as `{tool}`; ask an agent whose role allows them (devops, orchestrator)",
            role.name
        );
    }
    format!(
        "the role {:?} does not allow `{tool}` (it needs the {:?} permission; this role has: {}); ask an agent whose role allows it",
        role.name,
        permission.name(),
        role.permissions
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn refused(message: String) -> rmcp::model::CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(message)]).into()
}

/// Applies `role` to `router`: tools it does not allow answer with a refusal (and
/// are hidden from the list, see [`hidden`]); `force: true` is refused when the role
/// allows nothing destructive.
pub fn restrict(router: &mut ToolRouter<CohortServer>, role: &Arc<Role>) {
    for route in router.map.values_mut() {
        let permission = permission_of(&route.attr);
        let name = route.attr.name.to_string();
        let original = route.call.clone();
        let role = role.clone();
        let allowed = role.allows(&name, permission);
        *route = ToolRoute::new_dyn(route.attr.clone(), move |ctx| {
            if !allowed {
                let message = refusal(&role, &name, permission);
                return Box::pin(async move { Ok(refused(message)) });
            }
            let forced = ctx
                .arguments
                .as_ref()
                .and_then(|a| a.get("force"))
                .and_then(|f| f.as_bool())
                == Some(true);
            if forced && !role.destructive {
                let message = format!(
                    "the role {:?} does not allow destructive choices: `force` was refused (call {name} without it)",
                    role.name
                );
                return Box::pin(async move { Ok(refused(message)) });
            }
            original(ctx)
        });
    }
}

/// The tools `role` does not allow (listed by no one).
pub fn hidden(router: &ToolRouter<CohortServer>, role: &Role) -> Vec<String> {
    router
        .map
        .values()
        .filter(|r| !role.allows(r.attr.name.as_ref(), permission_of(&r.attr)))
        .map(|r| r.attr.name.to_string())
        .collect()
}

impl CohortServer {
    /// Refuses a playbook that does more than the role allows.
    pub(super) fn refuse_destructive_playbook(&self, book: &Playbook) -> Result<(), String> {
        let Some(role) = &self.role else {
            return Ok(());
        };
        let mut needs = Vec::new();
        if book.layout.is_some() {
            needs.push(("open sessions", "open", Permission::Open));
        }
        for step in &book.steps {
            for item in &step.items {
                if step.wait_of(item) == StepWait::Exit && item.command.is_some() {
                    needs.push(("run commands", "run", Permission::Run));
                } else {
                    needs.push(("type into sessions", "send", Permission::Type));
                }
            }
        }
        if book.cascade.is_some() {
            needs.push(("send a cascade", "broadcast", Permission::Type));
        }
        match needs
            .into_iter()
            .find(|(_, tool, p)| !role.allows(tool, *p))
        {
            Some((what, _, p)) => Err(format!(
                "the role {:?} may not {what} (the {:?} permission), which this playbook does",
                role.name,
                p.name()
            )),
            None => Ok(()),
        }
    }

    /// Refuses a watcher whose action does more than the role allows.
    pub(super) fn refuse_watch_action(&self, action: Option<&Action>) -> Result<(), String> {
        let (Some(role), Some(action)) = (&self.role, action) else {
            return Ok(());
        };
        let (tool, permission) = match action {
            Action::Send { .. } => ("send", Permission::Type),
            Action::Step { .. } => ("run", Permission::Run),
            Action::Appearance { .. } => ("set_appearance", Permission::Appearance),
        };
        if role.allows(tool, permission) {
            Ok(())
        } else {
            Err(format!(
                "the role {:?} may not act this way (the {:?} permission): watch without an action, or ask an agent whose role allows it",
                role.name,
                permission.name()
            ))
        }
    }
}
