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
use crate::restriction::{forced_refusal, permission_named, refusal};
use cohort_orchestration::{
    playbook::Playbook,
    roles::{Permission, Role},
    watch::Action,
};

/// The permission a tool needs, by what it does ([`permission_named`]). Tools not
/// named there need the permission their annotations suggest: destructive ones
/// `close`, read-only ones `read`, the rest `orchestrate`.
pub fn permission_of(tool: &rmcp::model::Tool) -> Permission {
    if let Some(permission) = permission_named(tool.name.as_ref()) {
        return permission;
    }
    let hints = tool.annotations.as_ref();
    if hints.is_some_and(|a| a.destructive_hint == Some(true)) {
        Permission::Close
    } else if hints.is_some_and(|a| a.read_only_hint == Some(true)) {
        Permission::Read
    } else {
        Permission::Orchestrate
    }
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
                let message = forced_refusal(&role, &name);
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
        self.restriction().allow_playbook(book)
    }

    /// Refuses a watcher whose action does more than the role allows.
    pub(super) fn refuse_watch_action(&self, action: Option<&Action>) -> Result<(), String> {
        let (Some(role), Some(action)) = (&self.role, action) else {
            return Ok(());
        };
        let (tool, permission) = match action {
            Action::Send { .. } => ("send", Permission::Type),
            Action::Step { .. } => ("run", Permission::Run),
            Action::Appearance { .. } | Action::Alert {} => {
                ("set_appearance", Permission::Appearance)
            }
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
