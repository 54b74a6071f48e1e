//! Roles: what an agent may do, enforced by the server that serves it.
//!
//! A role grants permissions (read, type, run, …) and says whether destructive
//! choices are allowed (closing sessions, passing the tripwire with `force`, taking
//! a lock by force). Six roles are built in: `readonly`, `monitor`, `tester`,
//! `builder`, `devops`, `orchestrator`. Custom roles come from a TOML file:
//!
//! ```toml
//! [roles.reviewer]
//! base = "readonly"            # start from a built-in role (optional)
//! permissions = ["notify"]      # add permissions
//! tools = ["run"]               # allow these tools by name too
//! deny = ["read_many"]          # and never these
//! destructive = false
//! description = "reads everything, runs checks"
//! ```
//!
//! Custom roles are kept in the registry, so every cohort process (a manager's
//! server, each worker's) knows the same ones; an agent's role is the one it was
//! registered with.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use cohort_terminal::registry::Registry;

use crate::registry::OrchestrationTables;

/// What a tool needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Look: list, status, read, wait, notifications.
    Read,
    /// Leave messages for others, ask for access.
    Notify,
    /// Watch sessions for patterns and events.
    Watch,
    /// Type into sessions (send, key, write_many, broadcast).
    Type,
    /// Run commands and wait for their verdict.
    Run,
    /// Open sessions and layouts.
    Open,
    /// Change what a human sees (titles, colours, focus).
    Appearance,
    /// Manage agents, teams and tags.
    Team,
    /// Lock and unlock sessions.
    Lock,
    /// Run playbooks.
    Orchestrate,
    /// Close sessions.
    Close,
}

impl Permission {
    /// Every permission.
    pub const ALL: [Permission; 11] = [
        Permission::Read,
        Permission::Notify,
        Permission::Watch,
        Permission::Type,
        Permission::Run,
        Permission::Open,
        Permission::Appearance,
        Permission::Team,
        Permission::Lock,
        Permission::Orchestrate,
        Permission::Close,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Notify => "notify",
            Permission::Watch => "watch",
            Permission::Type => "type",
            Permission::Run => "run",
            Permission::Open => "open",
            Permission::Appearance => "appearance",
            Permission::Team => "team",
            Permission::Lock => "lock",
            Permission::Orchestrate => "orchestrate",
            Permission::Close => "close",
        }
    }
}

/// A role.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Role {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// What it may do.
    pub permissions: BTreeSet<Permission>,
    /// Tools allowed by name besides.
    pub tools: BTreeSet<String>,
    /// Tools never allowed.
    pub deny: BTreeSet<String>,
    /// Destructive choices allowed (close, `force`).
    pub destructive: bool,
}

/// The built-in roles' names.
pub const BUILTIN: [&str; 6] = [
    "readonly",
    "monitor",
    "tester",
    "builder",
    "devops",
    "orchestrator",
];

impl Role {
    /// A built-in role.
    pub fn builtin(name: &str) -> Option<Role> {
        use Permission::{
            Appearance, Close, Lock, Notify, Open, Orchestrate, Read, Run, Type, Watch,
        };
        let (description, permissions, destructive): (&str, &[Permission], bool) = match name {
            "readonly" => (
                "reads sessions and the registry; changes nothing",
                &[Read],
                false,
            ),
            "monitor" => (
                "reads, watches and notifies; types nothing",
                &[Read, Notify, Watch],
                false,
            ),
            "tester" => (
                "runs commands in existing sessions",
                &[Read, Notify, Watch, Type, Run, Lock],
                false,
            ),
            "builder" => (
                "opens sessions and runs commands",
                &[Read, Notify, Watch, Type, Run, Lock, Open, Appearance],
                false,
            ),
            "devops" => (
                "everything but managing agents and teams, destructive choices included",
                &[
                    Read,
                    Notify,
                    Watch,
                    Type,
                    Run,
                    Lock,
                    Open,
                    Appearance,
                    Orchestrate,
                    Close,
                ],
                true,
            ),
            "orchestrator" => ("everything", &Permission::ALL, true),
            _ => return None,
        };
        Some(Role {
            name: name.to_string(),
            description: description.to_string(),
            permissions: permissions.iter().copied().collect(),
            tools: BTreeSet::new(),
            deny: BTreeSet::new(),
            destructive,
        })
    }

    /// Whether `tool`, which needs `permission`, is allowed.
    pub fn allows(&self, tool: &str, permission: Permission) -> bool {
        if self.deny.contains(tool) {
            return false;
        }
        if permission == Permission::Close && !self.destructive {
            return false;
        }
        self.tools.contains(tool) || self.permissions.contains(&permission)
    }
}

/// A custom role as written in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleSpec {
    #[serde(default)]
    base: Option<String>,
    #[serde(default)]
    permissions: Vec<Permission>,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    destructive: Option<bool>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RolesFile {
    #[serde(default)]
    roles: std::collections::BTreeMap<String, RoleSpec>,
}

/// Reads custom roles from TOML; errors name the file and the role.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Role>, String> {
    let file: RolesFile =
        toml::from_str(text).map_err(|e| format!("{origin}: not a roles file: {e}"))?;
    let mut roles = Vec::new();
    for (name, spec) in file.roles {
        cohort_terminal::names::check(cohort_terminal::names::NameKind::Role, &name)
            .map_err(|e| format!("{origin}: {e}"))?;
        if BUILTIN.contains(&name.as_str()) {
            return Err(format!(
                "{origin}: role {name:?} is built in and cannot be redefined: give yours another name (with base = {name:?} to start from it)"
            ));
        }
        let mut role = match spec.base.as_deref() {
            Some(base) => Role::builtin(base).ok_or_else(|| {
                format!(
                    "{origin}: role {name:?}: base {base:?} is not a built-in role ({})",
                    BUILTIN.join(", ")
                )
            })?,
            None => Role {
                name: name.clone(),
                description: String::new(),
                permissions: BTreeSet::new(),
                tools: BTreeSet::new(),
                deny: BTreeSet::new(),
                destructive: false,
            },
        };
        role.name = name.clone();
        role.permissions.extend(spec.permissions);
        role.tools.extend(spec.tools);
        role.deny.extend(spec.deny);
        if let Some(d) = spec.destructive {
            role.destructive = d;
        }
        role.description = spec
            .description
            .unwrap_or_else(|| format!("custom role {name}"));
        roles.push(role);
    }
    Ok(roles)
}

/// The roles file to read: `explicit`, else `.cohort/roles.toml` in `cwd` or the
/// nearest parent that has one, else `roles.toml` in the user's config directory.
pub fn roles_file(explicit: Option<&Path>, cwd: &Path) -> Option<PathBuf> {
    if let Some(path) = explicit {
        return Some(path.to_path_buf());
    }
    if let Some(project) = cwd
        .ancestors()
        .map(|dir| dir.join(".cohort/roles.toml"))
        .find(|p| p.is_file())
    {
        return Some(project);
    }
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|c| c.join("cohort/roles.toml"))
        .filter(|p| p.is_file())
}

/// Reads the roles in `path` into the registry; returns their names.
pub fn load(registry: &Registry, path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the roles file {}: {e}", path.display()))?;
    let roles = parse(&text, &path.display().to_string())?;
    for role in &roles {
        let spec = serde_json::to_string(role).map_err(|e| e.to_string())?;
        registry
            .put_role(&role.name, &spec)
            .map_err(|e| e.to_string())?;
    }
    Ok(roles.into_iter().map(|r| r.name).collect())
}

/// The role named `name`: built in, or custom from the registry.
pub fn find(registry: &Registry, name: &str) -> Result<Role, String> {
    if let Some(role) = Role::builtin(name) {
        return Ok(role);
    }
    let custom = registry.roles().map_err(|e| e.to_string())?;
    if let Some((_, spec)) = custom.iter().find(|(n, _)| n == name) {
        return serde_json::from_str(spec)
            .map_err(|e| format!("role {name:?} in the registry is unreadable: {e}"));
    }
    let mut known: Vec<String> = BUILTIN.iter().map(|s| s.to_string()).collect();
    known.extend(custom.into_iter().map(|(n, _)| n));
    Err(format!(
        "no role named {name:?}; roles: {} (custom roles come from a roles file, see --roles)",
        known.join(", ")
    ))
}

/// The role of the registered agent `agent`.
pub fn of_agent(registry: &Registry, agent: &str) -> Result<Role, String> {
    let agents = registry.agents().map_err(|e| e.to_string())?;
    let Some(record) = agents.into_iter().find(|a| a.name == agent) else {
        return Err(format!(
            "no agent named {agent:?} is registered: register it (register_agent with a role) or start with --role"
        ));
    };
    let Some(role) = record.role else {
        return Err(format!(
            "agent {agent:?} has no role: register it with one ({}) or start with --role",
            BUILTIN.join(", ")
        ));
    };
    find(registry, &role)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_roles_grow_from_readonly_to_orchestrator() {
        let readonly = Role::builtin("readonly").unwrap();
        assert!(readonly.allows("read", Permission::Read));
        assert!(!readonly.allows("run", Permission::Run));
        let tester = Role::builtin("tester").unwrap();
        assert!(tester.allows("run", Permission::Run) && !tester.allows("open", Permission::Open));
        assert!(
            !tester.allows("close", Permission::Close),
            "not destructive"
        );
        let devops = Role::builtin("devops").unwrap();
        assert!(
            devops.allows("close", Permission::Close)
                && !devops.allows("create_team", Permission::Team)
        );
        assert!(Role::builtin("orchestrator")
            .unwrap()
            .allows("create_team", Permission::Team));
        assert!(Role::builtin("root").is_none());
    }

    #[test]
    fn custom_roles_start_from_a_base_and_errors_name_the_role() {
        let roles = parse(
            "[roles.reviewer]\nbase = \"readonly\"\npermissions = [\"notify\"]\ntools = [\"run\"]\ndeny = [\"read_many\"]\n",
            "roles.toml",
        )
        .unwrap();
        let r = &roles[0];
        assert!(r.allows("run", Permission::Run) && r.allows("notify", Permission::Notify));
        assert!(!r.allows("read_many", Permission::Read) && r.allows("read", Permission::Read));
        assert!(!r.allows("send", Permission::Type));
        let e = parse("[roles.readonly]\n", "roles.toml").unwrap_err();
        assert!(e.contains("built in"), "{e}");
        let e = parse("[roles.x]\npermissions = [\"fly\"]\n", "roles.toml").unwrap_err();
        assert!(e.contains("roles.toml") && e.contains("fly"), "{e}");
        let e = parse("[roles.x]\nbase = \"root\"\n", "roles.toml").unwrap_err();
        assert!(e.contains("base \"root\""), "{e}");
    }

    #[test]
    fn roles_live_in_the_registry() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::open(&dir.path().join("registry.db")).unwrap();
        registry.add_schema(crate::registry::SCHEMA).unwrap();
        let file = dir.path().join("roles.toml");
        std::fs::write(&file, "[roles.auditor]\nbase = \"monitor\"\n").unwrap();
        assert_eq!(load(&registry, &file).unwrap(), ["auditor"]);
        let again = Registry::open(&dir.path().join("registry.db")).unwrap();
        again.add_schema(crate::registry::SCHEMA).unwrap();
        assert!(find(&again, "auditor")
            .unwrap()
            .allows("watch", Permission::Watch));
        assert!(find(&again, "nobody").unwrap_err().contains("auditor"));
        again
            .register_agent("ann", None, Some("tester"), &[])
            .unwrap();
        assert_eq!(of_agent(&again, "ann").unwrap().name, "tester");
        assert!(of_agent(&again, "bob").unwrap_err().contains("no agent"));
    }
}
