//! What a restricted front end lets its caller do: the role it serves with and the
//! agent it serves, applied alike by MCP ([`crate::mcp`]) and gRPC ([`crate::grpc`]).
//!
//! Each operation needs one permission, named by the MCP tool that does it
//! ([`permission_named`]); a role allows it or the call is refused with a message
//! that names the role and what it lacks. A restricted server binds every name a
//! caller gives for itself (a lock's owner, a notification's sender) to the agent it
//! serves, and a playbook is refused when one of its steps needs more than the role
//! allows.

use std::sync::Arc;

use cohort_orchestration::{
    playbook::{Playbook, StepWait},
    roles::{Permission, Role},
};

/// The permission the operation `name` (an MCP tool's name) needs, when it is one
/// cohort knows.
pub fn permission_named(name: &str) -> Option<Permission> {
    use Permission::{
        Appearance, Close, Lock, Notify, Open, Orchestrate, Read, Run, Team, Type, Watch,
    };
    Some(match name {
        "list" | "status" | "read" | "read_many" | "list_agents" | "list_teams"
        | "list_watches" | "agent_status" | "wait_for" | "notifications" | "list_locks"
        | "events" => Read,
        "notify" | "request_access" => Notify,
        "watch" | "unwatch" => Watch,
        "send" | "key" | "write_many" | "broadcast" | "broadcast_input" => Type,
        "run" => Run,
        "open" | "split" | "create_layout" | "adopt" | "arrange" => Open,
        "focus" | "set_appearance" | "hide" => Appearance,
        "register_agent" | "remove_agent" | "create_team" | "remove_team" | "assign_team"
        | "tag" => Team,
        "lock" | "unlock" => Lock,
        "playbook" => Orchestrate,
        "close" | "close_workers" => Close,
        "list_workers" | "examine_worker" | "read_worker_logs" | "list_worktrees"
        | "discover_workers" | "check_idle_workers" | "wait_idle_workers" | "diff_workers" => Read,
        "merge_workers" => Run,
        "message_workers" | "approve_workers" => Type,
        "spawn_workers" | "adopt_worker" => Open,
        "annotate_worker" => Team,
        _ => return None,
    })
}

/// Why `role` refuses the operation `tool`, which needs `permission`.
pub fn refusal(role: &Role, tool: &str, permission: Permission) -> String {
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

/// Why `role` refuses a destructive choice (`force`) in `tool`.
pub fn forced_refusal(role: &Role, tool: &str) -> String {
    format!(
        "the role {:?} does not allow destructive choices: `force` was refused (call {tool} without it)",
        role.name
    )
}

/// The role and agent a front end serves; unrestricted by default.
#[derive(Clone, Debug, Default)]
pub struct Restriction {
    /// The role, when the server has one.
    pub role: Option<Arc<Role>>,
    /// The agent the server serves.
    pub agent: Option<Arc<str>>,
}

impl Restriction {
    /// A front end serving `role` for `agent`.
    pub fn new(role: Option<Role>, agent: Option<String>) -> Restriction {
        Restriction {
            role: role.map(Arc::new),
            agent: agent.map(Arc::from),
        }
    }

    /// Whether a role applies.
    pub fn is_restricted(&self) -> bool {
        self.role.is_some()
    }

    /// Whether the operation `tool` may run, with `forced` for a destructive choice.
    pub fn allow(&self, tool: &str, forced: bool) -> Result<(), String> {
        let Some(role) = &self.role else {
            return Ok(());
        };
        let permission = permission_named(tool).unwrap_or(Permission::Orchestrate);
        if !role.allows(tool, permission) {
            return Err(refusal(role, tool, permission));
        }
        if forced && !role.destructive {
            return Err(forced_refusal(role, tool));
        }
        Ok(())
    }

    /// The name a caller acts as, given `given` for `what`. Without a role the
    /// caller's word is taken. With one, the name is bound to the agent served (a
    /// different name is refused), and with no agent to none at all, since a role
    /// that could name anyone could read anyone's messages.
    pub fn own_name(&self, given: &str, what: &str) -> Result<String, String> {
        let Some(role) = &self.role else {
            return Ok(given.to_string());
        };
        match &self.agent {
            Some(agent) if given.is_empty() || given == &**agent => Ok(agent.to_string()),
            Some(agent) => Err(format!(
                "this server serves the agent {agent:?}: {what} is {agent:?}, not {:?}",
                cohort_terminal::names::shown(given)
            )),
            None => Err(format!(
                "a server with the role {:?} and no agent has no name of its own for {what}: \
                 start it with --agent NAME (the agent's registered role applies)",
                role.name
            )),
        }
    }

    /// The owner a caller's keystrokes act as: a restricted server serving an agent
    /// always acts as that agent.
    pub fn owner(&self, given: Option<String>) -> Option<String> {
        match (&self.role, &self.agent) {
            (Some(_), Some(agent)) => Some(agent.to_string()),
            _ => given,
        }
    }

    /// Refuses a playbook that does more than the role allows.
    pub fn allow_playbook(&self, book: &Playbook) -> Result<(), String> {
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
}
