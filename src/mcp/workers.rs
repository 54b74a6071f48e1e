//! The *workers* toolset: agent CLIs as workers in panes, each in its own worktree.
//! Tool and argument names follow the most-used peer (`spawn_workers`,
//! `message_workers`, `wait_idle_workers`, `session_ids`, `wait_mode`…), so a
//! manager prompt written for it works here.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::layout::TreeArg;
use super::reply::{output_with_meta, Json, Plain};
use super::CohortServer;
use crate::engine::registry::WorkerRow;
use crate::engine::workers::events::now_ms;
use crate::engine::workers::inspect::WorkerView;
use crate::engine::workers::messages::{After, WaitMode, WaitReport, When};
use crate::engine::workers::spawn::{SpawnLayout, SpawnRequest, WorkerSpec};
use crate::engine::workers::{AgentKind, LaunchSpec, Observation, WorkerError, WorkerState};
use crate::engine::Engine;

fn yes() -> bool {
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
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn since(o: &Observation) -> i64 {
    ((now_ms() - o.assessment.since_ms).max(0)) / 1000
}

fn out(row: &WorkerRow, o: &Observation, verbose: bool) -> WorkerOut {
    let a = &o.assessment;
    let mut w = WorkerOut {
        name: row.name.clone(),
        state: a.state.name().into(),
        reason: a.reason.clone(),
        since_s: since(o),
        agent: row.agent.clone(),
        branch: row.branch.clone(),
        team: row.team.clone(),
        ..WorkerOut::default()
    };
    if verbose {
        w.signal = Some(a.signal.name().into());
        w.worktree = Some(row.worktree.clone().unwrap_or_else(|| row.cwd.clone()));
        w.session = o.pane.as_ref().map(super::types::name_of);
        w.pane = o.pane.as_ref().map(|p| p.id.to_string());
        w.role = row.role.clone();
        w.colour = row.colour.clone();
        w.transcript = o.transcript.as_ref().map(|p| p.display().to_string());
    }
    w
}

fn view_out(v: &WorkerView, verbose: bool) -> WorkerOut {
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
    /// Last lines of its screen.
    pub screen: Option<String>,
    /// How a human watches it.
    pub attach: Option<String>,
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
    fn from_report(r: &WaitReport, rows: &[WorkerRow]) -> IdleResult {
        let mut out = IdleResult {
            idle: r.in_state(WorkerState::Idle),
            needs_approval: r.in_state(WorkerState::NeedsApproval),
            stuck: r.in_state(WorkerState::Stuck),
            exited: r.in_state(WorkerState::Exited),
            busy: r
                .workers
                .iter()
                .filter(|w| !w.done)
                .map(|w| w.name.clone())
                .collect(),
            all_idle: r.workers.iter().all(|w| w.done),
            timed_out: r.timed_out,
            waited_ms: r.waited_ms,
            workers: Vec::new(),
        };
        out.idle.extend(r.in_state(WorkerState::Ready));
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
impl Plain for DiscoverResult {}
impl Plain for AdoptResult {}
impl Plain for WorktreesResult {}
impl Plain for LogsResult {
    fn plain(&self) -> String {
        output_with_meta(&self.output, &self.meta)
    }
}

fn e(e: WorkerError) -> String {
    e.to_string()
}

fn seconds(timeout: Option<f64>) -> Duration {
    Duration::from_secs_f64(timeout.unwrap_or(600.0).clamp(0.0, 86_400.0))
}

/// Runs `work`, sending the latest `status` as a progress notification each second
/// (when the client asked for progress); gives up when the client cancels.
async fn with_status<T>(
    work: impl std::future::Future<Output = T>,
    status: Arc<Mutex<String>>,
    ctx: &RequestContext<RoleServer>,
) -> Result<T, String> {
    super::core::with_progress_as(
        work,
        ctx,
        |_| status.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        "cancelled by the client; the workers go on: check them with check_idle_workers",
    )
    .await
}

/// Waits on `rows` with progress.
async fn wait(
    engine: &Engine,
    rows: &[WorkerRow],
    mode: WaitMode,
    timeout: Duration,
    after: &HashMap<String, After>,
    ctx: &RequestContext<RoleServer>,
) -> Result<IdleResult, String> {
    let status = Arc::new(Mutex::new("waiting for workers".to_string()));
    let sink = status.clone();
    let progress = move |line: String| *sink.lock().unwrap_or_else(|e| e.into_inner()) = line;
    let report = with_status(
        engine.wait_workers(rows, mode, timeout, after, &progress),
        status,
        ctx,
    )
    .await?
    .map_err(e)?;
    Ok(IdleResult::from_report(&report, rows))
}

#[tool_router(router = workers_router, vis = "pub(crate)")]
impl CohortServer {
    #[tool(
        description = "Start 1-16 agent CLI workers (claude, codex, gemini, aider, custom) in panes, each in its own git worktree and branch, and submit their first prompts. Returns each worker's name, branch, worktree and state.",
        annotations(
            title = "Spawn workers",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn spawn_workers(
        &self,
        Parameters(args): Parameters<SpawnWorkersArgs>,
    ) -> Result<Json<SpawnWorkersResult>, String> {
        let engine = self.engine().await?;
        let layout = match (args.layout.as_deref(), args.tree) {
            (_, Some(tree)) => SpawnLayout::Tree(tree.into()),
            (None | Some("tiled" | "auto" | "new"), None) => SpawnLayout::Tiled,
            (Some("windows" | "window"), None) => SpawnLayout::Windows,
            (Some("split"), None) => SpawnLayout::Split {
                target: args
                    .target
                    .clone()
                    .ok_or("layout split needs target: the session to split")?,
                direction: cohort_backends::SplitDirection::Horizontal,
            },
            (Some(other), None) => {
                return Err(format!(
                "unknown layout {other:?}: use tiled, windows, split (with target), or give tree"
            ))
            }
        };
        let mut badges = Vec::new();
        let mut workers = Vec::new();
        for w in args.workers {
            let agent = AgentKind::parse(w.agent.as_deref().unwrap_or("claude"))?;
            badges.push(w.badge.clone());
            let tree = w.worktree.clone().unwrap_or_default();
            workers.push(WorkerSpec {
                name: w.name,
                launch: LaunchSpec {
                    agent,
                    command: w.command,
                    model: w.model,
                    flags: w.flags,
                    env: w.env,
                    skip_permissions: w.skip_permissions,
                    ..LaunchSpec::default()
                },
                prompt: w.prompt,
                project: w.project_path,
                worktree: w.use_worktree.or(w.worktree.as_ref().map(|_| true)),
                branch: tree.branch,
                base: tree.base,
                include: w.include,
                setup: w.setup,
                team: w.team,
                role: w.role,
            });
        }
        let request = SpawnRequest {
            workers,
            layout,
            window: args.window,
            names: args.names,
            branch_pattern: args
                .branch_pattern
                .unwrap_or_else(|| "cohort/{name}".into()),
            ..SpawnRequest::default()
        };
        let spawned = engine.spawn_workers(request).await.map_err(e)?;
        let mut results = Vec::new();
        for (s, badge) in spawned.into_iter().zip(badges) {
            let mut worker = WorkerOut {
                name: s.name.clone(),
                state: "exited".into(),
                ..WorkerOut::default()
            };
            if let Some(row) = &s.row {
                if let Some(badge) = badge.filter(|b| !b.trim().is_empty()) {
                    let _ = engine
                        .annotate_worker(row, &format!("badge: {badge}"), None)
                        .await;
                }
                if let Ok(o) = engine.observe(row, false).await {
                    worker = out(row, &o, true);
                }
            }
            results.push(SpawnedOut {
                worker,
                attach: s.pane.as_ref().map(|p| engine.attach_text(&p.id)),
                prompt: s
                    .prompt
                    .map(|p| format!("submitted ({}, {} Enter)", p.proof, p.enters)),
                copied: s.copied,
                setup: s.setup_tail,
                error: s.error,
            });
        }
        Ok(Json(SpawnWorkersResult { workers: results }))
    }

    #[tool(
        description = "List workers with their state and why (compact; verbose: true for everything).",
        annotations(
            title = "List workers",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_workers(
        &self,
        Parameters(args): Parameters<ListWorkersArgs>,
    ) -> Result<Json<WorkersResult>, String> {
        let engine = self.engine().await?;
        let views = engine.list_workers().await.map_err(e)?;
        let workers = views
            .iter()
            .filter(|v| {
                args.state
                    .as_deref()
                    .is_none_or(|s| v.observation.assessment.state.name() == s)
            })
            .map(|v| view_out(v, args.verbose))
            .collect();
        Ok(Json(WorkersResult { workers }))
    }

    #[tool(
        description = "One worker in detail: state with reason and since when, current tool call, last activity, worktree and branch, git diff --stat against its base, its last turn, notes.",
        annotations(
            title = "Examine a worker",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn examine_worker(
        &self,
        Parameters(args): Parameters<WorkerArg>,
    ) -> Result<Json<ExamineResult>, String> {
        let engine = self.engine().await?;
        let row = engine.worker_row(&args.session_id).await.map_err(e)?;
        let x = engine.examine_worker(&row).await.map_err(e)?;
        let o = &x.view.observation;
        Ok(Json(ExamineResult {
            worker: view_out(&x.view, true),
            last_activity_s: o.last_activity_ms.map(|t| ((now_ms() - t).max(0)) / 1000),
            current_tool: o.hook.tool.clone(),
            diff_stat: x.diff_stat,
            commits: x.commits,
            dirty_files: x.dirty_files,
            last_turn: x.last_turn,
            screen: x.screen_tail,
            attach: x.attach,
        }))
    }

    #[tool(
        description = "Keep a note on a worker (shown by examine_worker and list_workers verbose).",
        annotations(
            title = "Annotate a worker",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn annotate_worker(
        &self,
        Parameters(args): Parameters<AnnotateArgs>,
    ) -> Result<Json<WorkersResult>, String> {
        let engine = self.engine().await?;
        let row = engine.worker_row(&args.session_id).await.map_err(e)?;
        engine
            .annotate_worker(&row, &args.annotation, args.author.as_deref())
            .await
            .map_err(e)?;
        let view = engine.view_worker(&row).await.map_err(e)?;
        Ok(Json(WorkersResult {
            workers: vec![view_out(&view, true)],
        }))
    }

    #[tool(
        description = "Send a message to workers (one text, or one per worker), verified as submitted; held while a worker is busy unless when: \"now\". wait_mode any/all waits until their turns end.",
        annotations(
            title = "Message workers",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn message_workers(
        &self,
        Parameters(args): Parameters<MessageArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<MessageResult>, String> {
        let engine = self.engine().await?;
        let when = match args.when.as_deref() {
            None | Some("idle") => When::Idle,
            Some("now") => When::Now,
            Some(other) => return Err(format!("unknown when {other:?}: use idle or now")),
        };
        let mode = WaitMode::parse(args.wait_mode.as_deref().unwrap_or("none"))?;
        let mut names = args.session_ids.clone();
        names.extend(
            args.messages
                .keys()
                .filter(|k| !args.session_ids.contains(k))
                .cloned(),
        );
        let rows = engine.worker_rows_named(&names, false).await.map_err(e)?;
        let mut targets = Vec::new();
        for row in &rows {
            let text = args
                .messages
                .get(&row.name)
                .or(args.message.as_ref())
                .ok_or_else(|| {
                    format!(
                        "no message for {}: give message, or messages with its name",
                        row.name
                    )
                })?;
            targets.push((row.clone(), text.clone()));
        }
        let outcomes = engine.message_workers(targets, when, args.command).await;
        let mut after = HashMap::new();
        for (row, o) in rows.iter().zip(&outcomes) {
            match (&o.submitted, o.held) {
                (Some(s), _) => after.insert(row.id.clone(), After::Prompt(s.at_ms)),
                (None, Some(id)) => after.insert(row.id.clone(), After::Held(id)),
                _ => None,
            };
        }
        let results = outcomes
            .into_iter()
            .map(|o| MessageOut {
                worker: o.worker,
                status: o.status.into(),
                proof: o.submitted.as_ref().map(|s| s.proof.to_string()),
                enters: o.submitted.as_ref().map(|s| s.enters),
                note: o.note,
            })
            .collect();
        let wait = match mode {
            WaitMode::None => None,
            _ => Some(wait(engine, &rows, mode, seconds(args.timeout), &after, &ctx).await?),
        };
        Ok(Json(MessageResult { results, wait }))
    }

    #[tool(
        description = "The current state of workers: who is idle, needs approval, is stuck, exited or busy.",
        annotations(
            title = "Check idle workers",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn check_idle_workers(
        &self,
        Parameters(args): Parameters<WorkersArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<IdleResult>, String> {
        let engine = self.engine().await?;
        let rows = engine
            .worker_rows_named(&args.session_ids, true)
            .await
            .map_err(e)?;
        Ok(Json(
            wait(
                engine,
                &rows,
                WaitMode::None,
                Duration::ZERO,
                &HashMap::new(),
                &ctx,
            )
            .await?,
        ))
    }

    #[tool(
        description = "Wait until all (or any) workers are done: idle, needing approval, stuck or exited. Wakes on the agents' hooks within milliseconds; progress notifications while waiting.",
        annotations(
            title = "Wait for idle workers",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn wait_idle_workers(
        &self,
        Parameters(args): Parameters<WaitArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<IdleResult>, String> {
        let engine = self.engine().await?;
        let mode = match args.mode.as_deref().unwrap_or("all") {
            "none" => return Err("mode none does not wait: use check_idle_workers".into()),
            m => WaitMode::parse(m)?,
        };
        let rows = engine
            .worker_rows_named(&args.session_ids, true)
            .await
            .map_err(e)?;
        Ok(Json(
            wait(
                engine,
                &rows,
                mode,
                seconds(args.timeout),
                &HashMap::new(),
                &ctx,
            )
            .await?,
        ))
    }

    #[tool(
        description = "A worker's own transcript (Claude JSONL, Codex rollout, Aider or Gemini log), paged by turn from the last: tool calls summarised, final answers whole.",
        annotations(
            title = "Read worker logs",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn read_worker_logs(
        &self,
        Parameters(args): Parameters<LogsArgs>,
    ) -> Result<Json<LogsResult>, String> {
        let engine = self.engine().await?;
        let row = engine.worker_row(&args.session_id).await.map_err(e)?;
        let page = engine
            .read_worker_logs(&row, args.pages.unwrap_or(1), args.offset.unwrap_or(0))
            .await
            .map_err(e)?;
        Ok(Json(LogsResult {
            worker: row.name,
            output: page.text,
            meta: page.meta,
            turns: page.total,
        }))
    }

    #[tool(
        description = "Close workers: the agent exits by its own command, then signals; worktrees are removed only with remove_worktree and only when clean unless force. Branches are kept.",
        annotations(
            title = "Close workers",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn close_workers(
        &self,
        Parameters(args): Parameters<CloseArgs>,
    ) -> Result<Json<CloseResult>, String> {
        let engine = self.engine().await?;
        let rows = engine
            .worker_rows_named(&args.session_ids, false)
            .await
            .map_err(e)?;
        let results = engine
            .close_workers(&rows, args.force, args.remove_worktree)
            .await
            .into_iter()
            .map(|c| ClosedOut {
                worker: c.name,
                ended: c.ended.into(),
                worktree_removed: c.worktree_removed,
                worktree: c.worktree_kept,
                branch: c.branch,
                error: c.error,
            })
            .collect();
        Ok(Json(CloseResult { results }))
    }

    #[tool(
        description = "Find workers after a crash or from another cohort process (orphaned, managed elsewhere, known only on disk) and agent CLIs running in unmanaged panes.",
        annotations(
            title = "Discover workers",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn discover_workers(&self) -> Result<Json<DiscoverResult>, String> {
        let engine = self.engine().await?;
        let found = engine.discover_workers().await.map_err(e)?;
        let adoptable = found
            .iter()
            .filter(|f| !matches!(f.standing.name(), "managed" | "managed_elsewhere"))
            .count();
        let workers = found
            .into_iter()
            .map(|f| FoundOut {
                name: f.name,
                standing: f.standing.name().into(),
                agent: f.agent,
                pane: f.pane.map(|p| p.id.to_string()),
                owner_pid: f.owner_pid,
                branch: f.row.as_ref().and_then(|r| r.branch.clone()),
                cwd: f.cwd,
                transcript: f.transcript,
            })
            .collect();
        Ok(Json(DiscoverResult { workers, adoptable }))
    }

    #[tool(
        description = "Take over a worker (after a crash: restarts it with its session if its pane died) or make an agent CLI running in a pane a worker. Returns its state, transcript and worktree.",
        annotations(
            title = "Adopt a worker",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn adopt_worker(
        &self,
        Parameters(args): Parameters<AdoptArgs>,
    ) -> Result<Json<AdoptResult>, String> {
        let engine = self.engine().await?;
        let target = args
            .session_id
            .or(args.name.clone())
            .ok_or("name the worker, pane or session to adopt (discover_workers lists them)")?;
        let adopted = engine
            .adopt_worker(&target, args.name.as_deref(), args.restart, args.force)
            .await
            .map_err(e)?;
        let mut worker = out(&adopted.row, &adopted.observation, true);
        worker.held_messages = adopted.pending;
        Ok(Json(AdoptResult {
            worker,
            restarted: adopted.restarted,
            requeued: adopted.requeued,
        }))
    }

    #[tool(
        description = "Cohort's worktrees with their worker, branch and dirty state; orphans (no live worker) flagged, and removed with remove_orphans when clean.",
        annotations(
            title = "List worktrees",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_worktrees(
        &self,
        Parameters(args): Parameters<WorktreesArgs>,
    ) -> Result<Json<WorktreesResult>, String> {
        let engine = self.engine().await?;
        let repo = args.repo_path.as_deref().map(std::path::Path::new);
        let listed = engine
            .list_worktrees(repo, args.remove_orphans)
            .await
            .map_err(e)?;
        let worktrees = listed
            .into_iter()
            .map(|w| WorktreeOut {
                path: w.path.display().to_string(),
                branch: w.branch,
                worker: w.worker,
                dirty_files: w.dirty_files,
                orphan: w.orphan,
                removed: w.removed,
            })
            .collect();
        Ok(Json(WorktreesResult { worktrees }))
    }
}
