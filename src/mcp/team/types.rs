//! The team toolset's arguments and results, with their schemas.

use super::*;

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
    /// Environment variables every new pane of the team starts with (replaces the
    /// team's; a variable given when a pane opens wins).
    #[serde(default)]
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// Raise what needs a person about the team's sessions (an agent needing
    /// approval, stuck or exited, a budget reached, an approval timed out; at most
    /// one per session every 30 s) as an alert
    /// before whoever watches them: a desktop notification through the terminal
    /// (OSC 9 / OSC 777, iTerm2's attention request) and, on tmux, a message and a
    /// bell. Unchanged when omitted.
    #[serde(default)]
    pub alerts: Option<bool>,
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
    /// Its colour (`#rrggbb`), shown on its panes and on the dashboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub colour: Option<String>,
    /// The variables its new panes start with.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    /// Whether what needs a person about its sessions is raised as an alert.
    #[serde(default)]
    pub alerts: bool,
}

impl From<TeamRecord> for TeamOut {
    fn from(t: TeamRecord) -> Self {
        TeamOut {
            name: t.name,
            parent: t.parent,
            members: t.members,
            colour: None,
            env: Default::default(),
            alerts: false,
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
pub(super) fn ago(since: i64) -> String {
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
    /// Whether the session is locked now (by you or by someone else: see `yours`).
    pub locked: bool,
    /// Whether the lock is yours.
    pub yours: bool,
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
