//! The workers toolset's arguments and results, with their schemas and how each
//! reads as text.

use super::*;
use cohort_workers::transcript::usage::Usage;

pub(super) fn yes() -> bool {
    true
}

/// A worker's worktree settings.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorktreeArgs {
    /// Branch (default from branch_pattern).
    #[serde(default)]
    pub branch: Option<String>,
    /// Ref the branch starts from (default HEAD).
    #[serde(default)]
    pub base: Option<String>,
}

/// One worker to start.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerArgs {
    /// Name (default: themed, unique).
    #[serde(default)]
    pub name: Option<String>,
    /// claude (default), codex, gemini, aider or custom.
    #[serde(default, alias = "agent_type")]
    pub agent: Option<String>,
    /// Command line (custom agents).
    #[serde(default)]
    pub command: Option<String>,
    /// First prompt.
    #[serde(default)]
    pub prompt: Option<String>,
    /// Repository or directory (default: the server's).
    #[serde(default, alias = "cwd")]
    pub project_path: Option<String>,
    /// Own git worktree on its own branch (default: yes in a repository).
    #[serde(default)]
    pub use_worktree: Option<bool>,
    /// Worktree branch and base.
    #[serde(default)]
    pub worktree: Option<WorktreeArgs>,
    /// Model.
    #[serde(default)]
    pub model: Option<String>,
    /// Extra CLI arguments.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// No permission prompts.
    #[serde(default)]
    pub skip_permissions: bool,
    /// Untracked files to copy in (gitignore patterns), besides .worktreeinclude.
    #[serde(default)]
    pub include: Vec<String>,
    /// Shell command run in the worktree before the agent starts.
    #[serde(default)]
    pub setup: Option<String>,
    /// Team.
    #[serde(default)]
    pub team: Option<String>,
    /// Role.
    #[serde(default)]
    pub role: Option<String>,
    /// Your label for it (kept as a note).
    #[serde(default)]
    pub badge: Option<String>,
    /// Tokens it may spend (its transcript's count); reaching them notifies everyone.
    #[serde(default)]
    pub budget_tokens: Option<u64>,
    /// US dollars it may spend (the CLI's stated cost, or the price table's).
    #[serde(default)]
    pub budget_usd: Option<f64>,
    /// Interrupt its turns once the budget is spent.
    #[serde(default)]
    pub budget_interrupt: bool,
}

/// `spawn_workers` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnWorkersArgs {
    /// 1-16 workers.
    pub workers: Vec<WorkerArgs>,
    /// tiled (one new window; default), windows (one each), or split (of target).
    #[serde(default)]
    pub layout: Option<String>,
    /// A create_layout tree instead (leaf i is worker i).
    #[serde(default)]
    pub tree: Option<TreeArg>,
    /// Session to split (layout split).
    #[serde(default)]
    pub target: Option<String>,
    /// Window name.
    #[serde(default)]
    pub window: Option<String>,
    /// Name theme: marx, beatles, scientists, greek, painters.
    #[serde(default)]
    pub names: Option<String>,
    /// Branch pattern with {name}, {team} (default cohort/{name}).
    #[serde(default)]
    pub branch_pattern: Option<String>,
    /// Remote host for all of them (an SSH destination or a declared host): each
    /// gets a window there and a worktree of project_path on that host, its setup
    /// run there; claude and codex report through their hooks there as locally.
    #[serde(default)]
    pub host: Option<String>,
}

/// A worker as the tools show it.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct WorkerOut {
    /// Name.
    pub name: String,
    /// State: spawning, ready, busy, idle, needs_approval, stuck, exited.
    pub state: String,
    /// Why.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Seconds in this state.
    pub since_s: i64,
    /// Agent CLI.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agent: String,
    /// Branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The remote host it runs on (none: this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Which signal decided (verbose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// Worktree or directory (verbose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// Session (verbose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Pane (verbose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane: Option<String>,
    /// Team.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// Role (verbose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Colour (verbose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub colour: Option<String>,
    /// Transcript file (verbose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// Messages held for it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub held_messages: usize,
    /// Its notes (verbose).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What its agent spent so far (tokens, and the cost when the CLI states it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent: Option<String>,
    /// Every token its agent spent (the breakdown is in `examine_worker`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

/// Tokens and cost, as the agent's transcript records them.
#[derive(Debug, Default, Clone, Serialize, Deserialize, JsonSchema)]
pub struct UsageOut {
    /// Input tokens not read from the cache.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
    /// Reasoning tokens (Codex).
    pub reasoning: u64,
    /// Every token.
    pub total: u64,
    /// Model calls.
    pub calls: u64,
    /// Cost in US dollars, when the CLI states it or the user's price table
    /// (`prices.toml`) gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The cost is the price table's, not the CLI's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub priced: bool,
    /// The model last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl From<&Usage> for UsageOut {
    fn from(u: &Usage) -> Self {
        UsageOut {
            input: u.input,
            output: u.output,
            cache_read: u.cache_read,
            cache_write: u.cache_write,
            reasoning: u.reasoning,
            total: u.total(),
            calls: u.calls,
            cost_usd: u.cost_usd,
            priced: u.priced,
            model: u.model.clone(),
        }
    }
}

/// What the workers of one team spent together.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TeamSpentOut {
    /// The team (empty for workers outside teams).
    pub team: String,
    /// Workers counted.
    pub workers: usize,
    /// Their tokens and cost.
    pub spent: String,
    /// The team's budget and what its workers spent against it, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
}

/// The spending of `views`, rolled up per team (only teams that spent anything),
/// with each team's budget as `budget_of` words it.
pub(super) fn spent_by_team(
    views: &[WorkerView],
    budget_of: impl Fn(&str, &Usage) -> Option<String>,
) -> Vec<TeamSpentOut> {
    let mut teams: std::collections::BTreeMap<String, (usize, Usage)> = Default::default();
    for v in views {
        if let Some(u) = &v.observation.usage {
            let entry = teams
                .entry(v.row.team.clone().unwrap_or_default())
                .or_default();
            entry.0 += 1;
            entry.1.add(u);
        }
    }
    teams
        .into_iter()
        .map(|(team, (workers, usage))| TeamSpentOut {
            budget: (!team.is_empty())
                .then(|| budget_of(&team, &usage))
                .flatten(),
            team,
            workers,
            spent: usage.summary(),
        })
        .collect()
}

pub(super) fn is_zero(n: &usize) -> bool {
    *n == 0
}

pub(super) fn since(o: &Observation) -> i64 {
    ((now_ms() - o.assessment.since_ms).max(0)) / 1000
}

pub(super) fn out(row: &WorkerRow, o: &Observation, verbose: bool) -> WorkerOut {
    let a = &o.assessment;
    let mut w = WorkerOut {
        name: row.name.clone(),
        state: a.state.name().into(),
        reason: a.reason.clone(),
        since_s: since(o),
        agent: row.agent.name().to_string(),
        branch: row.branch.clone(),
        host: row.spec.host.clone(),
        team: row.team.clone(),
        spent: o.usage.as_ref().map(Usage::summary),
        ..WorkerOut::default()
    };
    w.tokens = o.usage.as_ref().map(Usage::total);
    if verbose {
        w.signal = Some(a.signal.name().into());
        w.worktree = Some(row.worktree.clone().unwrap_or_else(|| row.cwd.clone()));
        w.session = o.pane.as_ref().map(cohort_terminal::sessions::session_name);
        w.pane = o.pane.as_ref().map(|p| p.id.to_string());
        w.role = row.role.clone();
        w.colour = row.colour.clone();
        w.transcript = o.transcript.as_ref().map(|p| p.display().to_string());
    }
    w
}

pub(super) fn view_out(v: &WorkerView, verbose: bool) -> WorkerOut {
    let mut w = out(&v.row, &v.observation, verbose);
    w.held_messages = v.pending;
    if verbose {
        w.notes = v.notes.iter().map(|n| n.note.clone()).collect();
    }
    w
}

/// A started worker.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SpawnedOut {
    /// The worker.
    #[serde(flatten)]
    pub worker: WorkerOut,
    /// How a human watches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach: Option<String>,
    /// The first prompt: how it was proven submitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Untracked files copied into its worktree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copied: Vec<String>,
    /// End of the setup script's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    /// What went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `spawn_workers` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SpawnWorkersResult {
    /// Each worker, in order.
    pub workers: Vec<SpawnedOut>,
}

/// Workers by name (`session_ids`, as the peer calls them).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkersArgs {
    /// Worker names (empty: all).
    #[serde(default, alias = "workers", alias = "names")]
    pub session_ids: Vec<String>,
}

/// `list_workers` arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListWorkersArgs {
    /// Every field, notes included.
    #[serde(default)]
    pub verbose: bool,
    /// Only workers in this state.
    #[serde(default, alias = "status_filter")]
    pub state: Option<String>,
}

/// Workers.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct WorkersResult {
    /// Each worker.
    pub workers: Vec<WorkerOut>,
    /// What the workers listed spent, per team.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spent_by_team: Vec<TeamSpentOut>,
}

/// One worker by name.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerArg {
    /// Worker name.
    #[serde(alias = "worker", alias = "name")]
    pub session_id: String,
}

/// `examine_worker` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ExamineResult {
    /// The worker (every field).
    #[serde(flatten)]
    pub worker: WorkerOut,
    /// Last activity, seconds ago.
    pub last_activity_s: Option<i64>,
    /// Tool call running now.
    pub current_tool: Option<String>,
    /// `git diff --stat` against the base.
    pub diff_stat: Option<String>,
    /// Commits since the base.
    pub commits: Option<usize>,
    /// Files with uncommitted changes.
    pub dirty_files: Option<usize>,
    /// Last turn of its transcript, reduced.
    pub last_turn: Option<String>,
    /// What its agent spent, by kind of token.
    pub usage: Option<UsageOut>,
    /// Last lines of its screen.
    pub screen: Option<String>,
    /// How a human watches it.
    pub attach: Option<String>,
    /// Why it is in its state: the deciding signal, the newest report, the screen
    /// rule and row that matched, its output, the bounds.
    pub explain: Vec<String>,
    /// Its token budget and what it spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
}

/// `annotate_worker` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnnotateArgs {
    /// Worker name.
    #[serde(alias = "worker")]
    pub session_id: String,
    /// The note.
    #[serde(alias = "note")]
    pub annotation: String,
    /// Who writes it.
    #[serde(default)]
    pub author: Option<String>,
}

/// `budget_workers` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetArgs {
    /// Worker names, each given its own budget (or name a team instead).
    #[serde(default, alias = "workers")]
    pub session_ids: Vec<String>,
    /// A team, whose workers share the budget between them (spawned before or after).
    #[serde(default)]
    pub team: Option<String>,
    /// Tokens they may spend; null (and no usd) removes the budget.
    #[serde(default)]
    pub tokens: Option<u64>,
    /// US dollars they may spend (the CLI's stated cost, or the price table's); the
    /// first limit reached counts.
    #[serde(default)]
    pub usd: Option<f64>,
    /// Interrupt turns worked on past the budget (default false).
    #[serde(default)]
    pub interrupt: bool,
}

/// A budget now, and what was spent against it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct BudgetOut {
    /// The worker or team.
    pub name: String,
    /// `12.3k of 50.0k tokens`, `$1.20 of $5.00`, or none when it has no budget.
    pub budget: Option<String>,
}

/// `budget_workers` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct BudgetResult {
    /// Each worker named, with its budget now.
    pub workers: Vec<BudgetOut>,
    /// The team named, with its budget now.
    pub team: Option<BudgetOut>,
}

/// `message_workers` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageArgs {
    /// Worker names.
    #[serde(default, alias = "workers")]
    pub session_ids: Vec<String>,
    /// Text for all of them.
    #[serde(default)]
    pub message: Option<String>,
    /// A text per worker: {name: text}.
    #[serde(default)]
    pub messages: BTreeMap<String, String>,
    /// none (default), any or all: wait until their turns end.
    #[serde(default, alias = "wait")]
    pub wait_mode: Option<String>,
    /// Wait limit in seconds (default 600).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// idle (default: held while busy) or now.
    #[serde(default)]
    pub when: Option<String>,
    /// A leading / or ! is the CLI's command (default false).
    #[serde(default)]
    pub command: bool,
}

/// What became of one message.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MessageOut {
    /// Worker.
    pub worker: String,
    /// submitted, held or failed.
    pub status: String,
    /// What proved it went in: hook, transcript or screen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<String>,
    /// Enters pressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enters: Option<u32>,
    /// Why held or failed; a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The state of workers after a check or wait.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct IdleResult {
    /// Idle (or ready) workers.
    pub idle: Vec<String>,
    /// Waiting for an approval or answer.
    pub needs_approval: Vec<String>,
    /// Contradicting signals or no activity.
    pub stuck: Vec<String>,
    /// Agent gone.
    pub exited: Vec<String>,
    /// Still working.
    pub busy: Vec<String>,
    /// All are done.
    pub all_idle: bool,
    /// The wait ran out.
    #[serde(default)]
    pub timed_out: bool,
    /// Milliseconds waited.
    #[serde(default)]
    pub waited_ms: i64,
    /// Each worker.
    pub workers: Vec<WorkerOut>,
}

impl IdleResult {
    pub(super) fn from_report(r: &WaitReport, rows: &[WorkerRow]) -> IdleResult {
        let mut out = IdleResult {
            all_idle: r.workers.iter().all(|w| w.done),
            timed_out: r.timed_out,
            waited_ms: r.waited_ms,
            ..IdleResult::default()
        };
        // Each worker under one name: what needs attention first, then whether it is
        // done (a worker idle but not yet past the turn it was sent is still busy).
        for w in &r.workers {
            let list = match listed_as(w.observation.assessment.state, w.done) {
                WorkerState::NeedsApproval => &mut out.needs_approval,
                WorkerState::Stuck => &mut out.stuck,
                WorkerState::Exited => &mut out.exited,
                WorkerState::Idle => &mut out.idle,
                _ => &mut out.busy,
            };
            list.push(w.name.clone());
        }
        for w in &r.workers {
            if let Some(row) = rows.iter().find(|row| row.name == w.name) {
                let mut o = self::out(row, &w.observation, false);
                o.held_messages = w.pending;
                out.workers.push(o);
            }
        }
        out
    }
}

/// The one list of [`IdleResult`] a worker in `state` goes under (`Idle` for idle and
/// ready, `Busy` for still working): what needs attention first, then whether the wait
/// is done with it (a worker idle but not yet past the turn it was sent is busy).
fn listed_as(state: WorkerState, done: bool) -> WorkerState {
    match state {
        WorkerState::NeedsApproval | WorkerState::Stuck | WorkerState::Exited => state,
        WorkerState::Idle | WorkerState::Ready if done => WorkerState::Idle,
        _ => WorkerState::Busy,
    }
}

#[cfg(test)]
mod listing_tests {
    use super::*;

    #[test]
    fn each_worker_is_listed_under_one_state() {
        // A stuck worker the wait is not done with is stuck, not also busy.
        assert_eq!(listed_as(WorkerState::Stuck, false), WorkerState::Stuck);
        assert_eq!(listed_as(WorkerState::Exited, false), WorkerState::Exited);
        assert_eq!(
            listed_as(WorkerState::NeedsApproval, true),
            WorkerState::NeedsApproval
        );
        assert_eq!(listed_as(WorkerState::Ready, true), WorkerState::Idle);
        // Idle, but its message not yet taken: still busy, not also idle.
        assert_eq!(listed_as(WorkerState::Idle, false), WorkerState::Busy);
        assert_eq!(listed_as(WorkerState::Spawning, false), WorkerState::Busy);
    }
}

/// `message_workers` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MessageResult {
    /// Each message.
    pub results: Vec<MessageOut>,
    /// After the wait (wait_mode any or all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<IdleResult>,
}

/// `wait_idle_workers` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitArgs {
    /// Worker names (empty: all).
    #[serde(default, alias = "workers")]
    pub session_ids: Vec<String>,
    /// all (default) or any.
    #[serde(default)]
    pub mode: Option<String>,
    /// Limit in seconds (default 600).
    #[serde(default)]
    pub timeout: Option<f64>,
}

/// `read_worker_logs` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogsArgs {
    /// Worker name.
    #[serde(alias = "worker")]
    pub session_id: String,
    /// Turns to read (default 1).
    #[serde(default, alias = "turns")]
    pub pages: Option<usize>,
    /// Turns to skip back from the last (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
}

/// `read_worker_logs` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct LogsResult {
    /// Worker.
    pub worker: String,
    /// The turns, reduced.
    pub output: String,
    /// What was read and how to read more.
    pub meta: String,
    /// Turns in the transcript.
    pub turns: usize,
}

/// `close_workers` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseArgs {
    /// Worker names.
    #[serde(alias = "workers")]
    pub session_ids: Vec<String>,
    /// Close busy workers too; remove dirty worktrees.
    #[serde(default)]
    pub force: bool,
    /// Remove their worktrees (only clean ones unless force; branches stay).
    #[serde(default)]
    pub remove_worktree: bool,
}

/// `approve_workers` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveArgs {
    /// Worker names (default: every worker, when only listing).
    #[serde(default, alias = "workers")]
    pub session_ids: Vec<String>,
    /// allow, allow_always or deny; leave out to list what waits.
    #[serde(default)]
    pub decision: Option<String>,
    /// Who decides (kept with the decision; a restricted server uses its agent).
    #[serde(default)]
    pub by: Option<String>,
    /// With one worker named: answer only the request listed with this `since_ms`,
    /// so that a request drawn after you looked is not answered unseen.
    #[serde(default)]
    pub since_ms: Option<i64>,
    /// Requests the named workers' hooks answer at once from now on, in Claude Code's
    /// rule form (`Read`, `Bash(git status*)`, `mcp__github__*`); deny rules first; a
    /// command the tripwire refuses is never allowed; empty lists remove it.
    #[serde(default)]
    pub policy: Option<PolicyArgs>,
}

/// An approval policy.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyArgs {
    /// Rules whose requests are allowed.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules whose requests are denied.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Deny a request left to the dialog when nobody answered it for this many seconds.
    #[serde(default)]
    pub deny_after_s: Option<u64>,
}

/// A permission request a worker waits on.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PendingOut {
    /// Worker.
    pub worker: String,
    /// Tool and input, as its hook reported them.
    pub request: Option<String>,
    /// The dialog's question.
    pub question: Option<String>,
    /// The screen's last rows.
    pub shows: String,
    /// Seconds it has waited.
    pub waiting_s: i64,
    /// Since when it waits (Unix ms): give it back as `since_ms` to answer this
    /// request and no other.
    pub since_ms: i64,
}

/// One answered request.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AnsweredOut {
    /// Worker.
    pub worker: String,
    /// The request.
    pub request: Option<String>,
    /// The dialog went after the keys.
    pub answered: bool,
    /// What happened.
    pub detail: String,
}

/// `approve_workers` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ApproveResult {
    /// Requests still waiting (all of them, when listing).
    pub pending: Vec<PendingOut>,
    /// Requests answered by this call.
    pub answered: Vec<AnsweredOut>,
    /// Workers given the policy by this call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_set: Vec<String>,
}

/// `merge_workers` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeArgs {
    /// Workers whose branches to merge, in this order unless order says otherwise.
    #[serde(alias = "workers")]
    pub session_ids: Vec<String>,
    /// Branch or commit to start from (default: the branch checked out in the repository).
    #[serde(default)]
    pub into: Option<String>,
    /// New branch for the merges (default cohort/merge-<time>); never an existing one.
    #[serde(default)]
    pub branch: Option<String>,
    /// Command run after each merge in the scratch worktree (the tests); a failure stops.
    #[serde(default)]
    pub check: Option<String>,
    /// Seconds the check may run each time (default 600).
    #[serde(default)]
    pub check_timeout: Option<f64>,
    /// given (default) or smallest_first.
    #[serde(default)]
    pub order: Option<String>,
    /// On a conflict, a worker to resolve it, started in the scratch worktree with the
    /// conflict as its prompt.
    #[serde(default)]
    pub resolver: Option<ResolverArgs>,
}

/// The worker a merge hands its conflict to.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolverArgs {
    /// Name (default: themed, unique).
    #[serde(default)]
    pub name: Option<String>,
    /// claude (default), codex, gemini, aider or custom.
    #[serde(default)]
    pub agent: Option<String>,
    /// Command line (custom agents).
    #[serde(default)]
    pub command: Option<String>,
    /// Said after the conflict's own prompt.
    #[serde(default)]
    pub prompt: Option<String>,
    /// Model.
    #[serde(default)]
    pub model: Option<String>,
    /// Extra CLI arguments.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// No permission prompts.
    #[serde(default)]
    pub skip_permissions: bool,
    /// Team.
    #[serde(default)]
    pub team: Option<String>,
}

impl ResolverArgs {
    /// The worker to spawn in `dir` with `prompt` (the conflict's), the caller's
    /// words after it.
    pub fn into_worker(self, dir: String, prompt: String) -> WorkerArgs {
        WorkerArgs {
            name: self.name,
            agent: self.agent,
            command: self.command,
            prompt: Some(match self.prompt {
                Some(more) => format!("{prompt} {more}"),
                None => prompt,
            }),
            project_path: Some(dir),
            use_worktree: Some(false),
            model: self.model,
            flags: self.flags,
            env: self.env,
            skip_permissions: self.skip_permissions,
            team: self.team,
            role: Some("resolver".into()),
            ..WorkerArgs::default()
        }
    }
}

/// One worker's merge.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct MergeStepOut {
    /// Worker.
    pub worker: String,
    /// Its branch.
    pub branch: String,
    /// merged, up_to_date, conflict, check_failed, failed or not_tried.
    pub outcome: String,
    /// Lines it adds and removes against the target.
    pub lines_changed: usize,
    /// Uncommitted files in its worktree, left out of the merge.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub uncommitted: usize,
    /// The merge commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Conflicting files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// The conflicted hunks, with their markers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunks: Option<String>,
    /// The check's exit status (null with check_failed: it ran out of time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_status: Option<i32>,
    /// The check's last lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_output: Option<String>,
    /// What git said, when the merge failed for another reason than a conflict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `merge_workers` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MergeResult {
    /// Every branch merged (and checked).
    pub complete: bool,
    /// What the merges started from.
    pub into: String,
    /// The branch holding the merges that passed.
    pub branch: String,
    /// The scratch worktree, kept when it stopped (resolve there).
    pub worktree: Option<String>,
    /// The remote host the repository and that worktree are on (none: this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Each worker, in the order tried.
    pub steps: Vec<MergeStepOut>,
    /// The worker handed the conflict (with resolver): once it is idle, merge the rest
    /// with into set to this result's branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<SpawnedOut>,
    /// The prompt it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver_prompt: Option<String>,
    /// Why no resolver could be started (the merge's report stands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver_error: Option<String>,
}

/// `diff_workers` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffArgs {
    /// Worker names (default: all).
    #[serde(default, alias = "workers")]
    pub session_ids: Vec<String>,
}

/// What one worker changed.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChangesOut {
    /// Worker.
    pub worker: String,
    /// Its branch.
    pub branch: Option<String>,
    /// Commits, diff size, untracked files.
    pub change: String,
    /// git diff --stat against its base.
    pub stat: String,
}

/// `diff_workers` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct DiffResult {
    /// Each worker.
    pub workers: Vec<ChangesOut>,
}

/// One closed worker.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ClosedOut {
    /// Worker.
    pub worker: String,
    /// How the agent ended.
    pub ended: String,
    /// Worktree removed.
    pub worktree_removed: bool,
    /// Worktree kept.
    pub worktree: Option<String>,
    /// Branch (kept).
    pub branch: Option<String>,
    /// What went wrong.
    pub error: Option<String>,
}

/// `close_workers` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CloseResult {
    /// Each worker.
    pub results: Vec<ClosedOut>,
}

/// A found worker or agent CLI.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct FoundOut {
    /// Worker or session name.
    pub name: String,
    /// managed, managed_elsewhere, orphaned, unregistered or unmanaged.
    pub standing: String,
    /// Agent CLI.
    pub agent: String,
    /// Pane (none: it died; adopt restarts it).
    pub pane: Option<String>,
    /// Managing process.
    pub owner_pid: Option<i64>,
    /// Directory.
    pub cwd: Option<String>,
    /// Branch.
    pub branch: Option<String>,
    /// Transcript.
    pub transcript: Option<String>,
}

/// `discover_workers` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct DiscoverResult {
    /// What was found.
    pub workers: Vec<FoundOut>,
    /// How many can be adopted.
    pub adoptable: usize,
}

/// `adopt_worker` arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdoptArgs {
    /// Worker name, or a pane or session running an agent CLI.
    #[serde(
        default,
        alias = "worker",
        alias = "tmux_pane_id",
        alias = "iterm_session_id"
    )]
    pub session_id: Option<String>,
    /// Name for an adopted agent CLI.
    #[serde(default, alias = "session_name")]
    pub name: Option<String>,
    /// Restart a worker whose pane died, resuming its session (default true).
    #[serde(default = "yes")]
    pub restart: bool,
    /// Take it from a cohort process that still runs.
    #[serde(default)]
    pub force: bool,
}

/// `adopt_worker` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AdoptResult {
    /// The worker (every field).
    #[serde(flatten)]
    pub worker: WorkerOut,
    /// Its agent was restarted.
    pub restarted: bool,
    /// Why its agent had exited, when it had (before any restart): its status and last
    /// words; a restart does not fix what needs a person (the network, a sign-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub had_exited: Option<String>,
    /// Messages queued again.
    pub requeued: usize,
}

/// `list_worktrees` arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorktreesArgs {
    /// Repository (default: those of the workers).
    #[serde(default)]
    pub repo_path: Option<String>,
    /// Remove clean worktrees of cohort's that no worker uses.
    #[serde(default)]
    pub remove_orphans: bool,
}

/// A worktree.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct WorktreeOut {
    /// Directory.
    pub path: String,
    /// Branch.
    pub branch: Option<String>,
    /// Worker using it.
    pub worker: Option<String>,
    /// Files with uncommitted changes.
    pub dirty_files: Option<usize>,
    /// Cohort's, and no live worker uses it.
    pub orphan: bool,
    /// Removed now.
    pub removed: bool,
}

/// `list_worktrees` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct WorktreesResult {
    /// Each worktree.
    pub worktrees: Vec<WorktreeOut>,
}

// How the results read as text: the logs as output and meta line, like `read`; the
// records as compact JSON.
impl Plain for SpawnWorkersResult {}
impl Plain for WorkersResult {}
impl Plain for ExamineResult {}
impl Plain for MessageResult {}
impl Plain for IdleResult {}
impl Plain for CloseResult {}
impl Plain for ApproveResult {}
impl Plain for MergeResult {}
impl Plain for DiffResult {}
impl Plain for BudgetResult {}
impl Plain for DiscoverResult {}
impl Plain for AdoptResult {}
impl Plain for WorktreesResult {}
impl Plain for LogsResult {
    fn plain(&self) -> String {
        output_with_meta(&self.output, &self.meta)
    }
}
