//! Gathering a worker's signals and deciding its state.
//!
//! A [`Tracker`] per worker keeps what was read so far: its event file (hooks and
//! notifications), its transcript, the screen's class and since when, when its
//! process was first seen gone. [`Workers::observe`] brings each up to date (reading
//! only what is new; the screen only when the pane printed something or a second
//! passed) and hands the lot to the pure [`state::assess`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use cohort_backends::PaneInfo;

use crate::registry::WorkerTables;
use crate::state::{
    self, Assessment, Observed, ProcessFacts, Report, ReportKind, ScreenView, Signal, WorkerState,
};
use crate::Workers;
use crate::{
    agent::{claude_project_dir, AgentKind, LaunchSpec},
    error::WorkerError,
    events::{now_ms, EventTail, HookEvent, LineTail},
    registry::WorkerRow,
    screen::{self, ScreenClass, ScreenFacts},
    transcript::{codex, Parser},
};

/// The most reports kept per worker (older ones no longer change a decision).
const REPORTS_KEPT: usize = 512;

/// The most of a remote transcript read in one round trip.
const FAR_PIECE: u64 = 4 << 20;

/// What cohort has read of one worker's signals.
#[derive(Debug)]
pub struct Tracker {
    events: EventTail,
    reports: Vec<Report>,
    transcript: Option<(PathBuf, LineTail, Parser)>,
    transcript_reports: Vec<Report>,
    last_scan_ms: i64,
    /// When a remote transcript was last read.
    far_read: i64,
    /// How far this machine's clock is ahead of a remote worker's host's (ms), when
    /// by more than the measure's precision: added to the transcript's own times,
    /// so they compare with hook events and prompts timed here.
    far_skew_ms: i64,
    screen: Option<(ScreenClass, i64)>,
    facts: Option<ScreenFacts>,
    screen_seen: (u64, i64),
    /// The CLI's version the screen was last read for.
    screen_version: Option<String>,
    dead_since_ms: Option<i64>,
    pane: Option<PaneInfo>,
    /// Requests the worker's approval policy answered, not yet noted on it.
    policy_decisions: Vec<String>,
    /// What the hooks told beyond the state.
    pub hook: HookMemory,
}

/// Details the hooks reported, kept for `examine_worker`.
#[derive(Clone, Debug, Default)]
pub struct HookMemory {
    /// The tool running now (between `PreToolUse` and its end).
    pub tool: Option<String>,
    /// The tool and input a permission request asks for, until the tool ran or the
    /// turn ended.
    pub permission_request: Option<String>,
    /// The assistant's last message (`Stop`).
    pub last_message: Option<String>,
    /// Background tasks at the last `Stop`.
    pub background: Vec<String>,
    /// The agent's session id.
    pub session_id: Option<String>,
    /// Its transcript, as it reported it.
    pub transcript_path: Option<String>,
    /// Prompts it received: when, length, FNV-1a digest.
    pub prompts: Vec<(i64, usize, String)>,
    /// When the last event came.
    pub last_event_ms: Option<i64>,
}

impl Tracker {
    /// A tracker reading worker `id`'s event file from its start.
    pub fn new(state_dir: &Path, id: &str) -> Tracker {
        Tracker {
            events: EventTail::new(state_dir, id),
            reports: Vec::new(),
            transcript: None,
            transcript_reports: Vec::new(),
            last_scan_ms: 0,
            far_read: 0,
            far_skew_ms: 0,
            screen: None,
            facts: None,
            screen_seen: (u64::MAX, 0),
            screen_version: None,
            dead_since_ms: None,
            pane: None,
            policy_decisions: Vec::new(),
            hook: HookMemory::default(),
        }
    }

    fn take_events(&mut self) {
        for e in self.events.read_new() {
            self.remember(&e);
            if let Some(r) = e.report() {
                self.reports.push(r);
            }
        }
        trim(&mut self.reports);
    }

    fn remember(&mut self, e: &HookEvent) {
        if e.event == crate::events::POLICY_DECISION {
            let request = e.tool.as_deref().map_or_else(
                || "a request".into(),
                |t| tool_call(t, e.tool_input.as_deref()),
            );
            let how = e.detail.as_deref().unwrap_or("answered by policy");
            self.policy_decisions
                .push(format!("approval: {request}: {how}"));
        }
        let m = &mut self.hook;
        m.last_event_ms = Some(e.at_ms);
        if e.session_id.is_some() {
            m.session_id = e.session_id.clone();
        }
        if e.transcript_path.is_some() {
            m.transcript_path = e.transcript_path.clone();
        }
        match e.event.as_str() {
            "PreToolUse" => {
                m.tool = e
                    .tool
                    .as_ref()
                    .map(|t| tool_call(t, e.tool_input.as_deref()))
            }
            "PermissionRequest" => {
                m.permission_request = e.tool.as_ref().map(|t| {
                    let request = tool_call(t, e.tool_input.as_deref());
                    match e.detail.as_deref().filter(|d| d.starts_with("policy: ")) {
                        Some(why) => format!("{request} ({why})"),
                        None => request,
                    }
                })
            }
            "PostToolUse" | "PostToolUseFailure" | "Stop" | "StopFailure" | "UserPromptSubmit" => {
                m.tool = None;
                m.permission_request = None;
            }
            _ => {}
        }
        if matches!(e.event.as_str(), "Stop" | "StopFailure" | "notify") && e.message.is_some() {
            m.last_message = e.message.clone();
        }
        if e.event == "Stop" {
            m.background = e.background.clone();
        }
        if let (Some(len), Some(fnv)) = (e.prompt_len, &e.prompt_fnv) {
            m.prompts.push((e.at_ms, len, fnv.clone()));
            if m.prompts.len() > 64 {
                m.prompts.remove(0);
            }
        }
    }

    fn take_transcript(&mut self, path: Option<PathBuf>, kind: AgentKind) {
        let Some(path) = path else { return };
        let Some(caught_up) = self.renew_transcript(path, kind) else {
            return;
        };
        while let Some((_, tail, _)) = self.transcript.as_mut() {
            let lines = tail.read_new(32 << 20);
            let (read, offset) = (!lines.is_empty(), tail.offset());
            self.parse_transcript(lines);
            if !read || offset >= caught_up {
                break;
            }
        }
    }

    /// Starts reading the transcript at `path` when it is a new one, or again from
    /// its start when the rules it is read by changed (an entry the old rules
    /// passed over may end a turn; it is read at once as far as it had been, so no
    /// report read before goes missing): the offset reading must reach now (`None`:
    /// this CLI's transcript is not read).
    fn renew_transcript(&mut self, path: PathBuf, kind: AgentKind) -> Option<u64> {
        if kind == AgentKind::Gemini {
            return None;
        }
        let (renew, caught_up) = match self.transcript.as_mut() {
            None => (true, 0),
            Some((p, _, _)) if *p != path => (true, 0),
            Some((_, tail, parser)) => (parser.stale(), tail.offset()),
        };
        if renew {
            let parser = Parser::for_kind(kind)?;
            self.transcript = Some((path.clone(), LineTail::new(path), parser));
            self.transcript_reports.clear();
        }
        Some(caught_up)
    }

    fn parse_transcript(&mut self, lines: Vec<String>) {
        let Some((_, _, parser)) = self.transcript.as_mut() else {
            return;
        };
        for line in lines {
            for entry in parser.line(&line) {
                if let Some(mut r) = entry.report() {
                    r.at_ms += self.far_skew_ms;
                    self.transcript_reports.push(r);
                }
            }
        }
        trim(&mut self.transcript_reports);
    }

    /// Reads on in a transcript on a remote host: where to read from (see
    /// [`crate::remote::read_from`]), then [`Tracker::feed_transcript`].
    /// Where the next read starts, and the offset it must reach now (a re-read for
    /// changed rules starts over and reads at once as far as it had been).
    fn far_transcript_offset(&mut self, path: PathBuf, kind: AgentKind) -> Option<(u64, u64)> {
        let reach = self.renew_transcript(path, kind)?;
        self.transcript
            .as_ref()
            .map(|(_, tail, _)| (tail.offset(), reach))
    }

    /// Takes what a remote transcript held past `from`, the file being `len` bytes.
    fn feed_transcript(&mut self, len: u64, from: u64, bytes: &[u8]) {
        let Some((_, tail, _)) = self.transcript.as_mut() else {
            return;
        };
        if tail.start(len) != from {
            return;
        }
        let lines = tail.feed(bytes);
        self.parse_transcript(lines);
    }

    /// The transcript being read, if one was found.
    pub fn transcript_path(&self) -> Option<&Path> {
        self.transcript.as_ref().map(|(p, _, _)| p.as_path())
    }

    /// The agent CLI's version, when its transcript says it.
    fn cli_version(&self) -> Option<String> {
        self.transcript
            .as_ref()
            .and_then(|(_, _, parser)| parser.version())
            .map(str::to_string)
    }
}

/// A tool call as shown: `Bash(git status)`, or the tool alone.
pub(crate) fn tool_call(tool: &str, input: Option<&str>) -> String {
    match input {
        Some(i) => format!("{tool}({i})"),
        None => tool.to_string(),
    }
}

fn trim(reports: &mut Vec<Report>) {
    if reports.len() > REPORTS_KEPT {
        reports.drain(..reports.len() - REPORTS_KEPT);
    }
}

/// A worker's state and what it was decided from.
#[derive(Clone, Debug)]
pub struct Observation {
    /// The decision.
    pub assessment: Assessment,
    /// The worker's pane, when it has one.
    pub pane: Option<PaneInfo>,
    /// What the screen shows.
    pub screen: Option<ScreenFacts>,
    /// What the hooks told.
    pub hook: HookMemory,
    /// The transcript file, when known.
    pub transcript: Option<PathBuf>,
    /// When anything last happened (a report or output), Unix ms.
    pub last_activity_ms: Option<i64>,
    /// How many reports were seen since launch.
    pub reports: usize,
    /// When the agent last reported a turn beginning (Unix ms).
    pub turn_started_ms: Option<i64>,
    /// When the agent last reported a turn ending (Unix ms).
    pub turn_ended_ms: Option<i64>,
    /// What the agent's session spent so far, from its transcript.
    pub usage: Option<crate::transcript::usage::Usage>,
    /// The agent's newest report.
    pub last_report: Option<Report>,
    /// Since when the screen has shown its class (Unix ms).
    pub screen_since_ms: Option<i64>,
    /// When the pane last printed (Unix ms).
    pub last_output_ms: Option<i64>,
    /// The agent CLI.
    pub kind: AgentKind,
    /// Its version, as its transcript said it when the screen was read (with the
    /// words of that release).
    pub cli_version: Option<String>,
    /// The transcript rule that decided the newest entry a rule decided.
    pub transcript_rule: Option<crate::transcript_rules::Matched>,
}

impl Observation {
    /// Whether there is something to act on: the agent exited, or its screen shows
    /// a composer or a dialog (not a frame mid-repaint, nor one cohort cannot read).
    pub fn legible(&self) -> bool {
        self.assessment.state == WorkerState::Exited
            || self
                .screen
                .as_ref()
                .is_some_and(|s| s.composer.is_some() || s.dialog.is_some())
    }
}

/// The environment the agent runs with: its process's own (where the system shows
/// it), else cohort's, with the launch's extra variables on top.
pub(crate) fn agent_env(pid: Option<u32>, spec: &LaunchSpec) -> HashMap<String, String> {
    let mut env: HashMap<String, String> = pid
        .and_then(|p| std::fs::read(format!("/proc/{p}/environ")).ok())
        .map(|bytes| {
            bytes
                .split(|b| *b == 0)
                .filter_map(|kv| {
                    let kv = String::from_utf8_lossy(kv);
                    kv.split_once('=')
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                })
                .collect()
        })
        .unwrap_or_else(|| std::env::vars().collect());
    for (k, v) in &spec.env {
        env.insert(k.clone(), v.clone());
    }
    env
}

fn home_of(env: &HashMap<String, String>) -> PathBuf {
    env.get("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Where Claude Code keeps its configuration and transcripts.
pub(crate) fn claude_config_dir(env: &HashMap<String, String>) -> PathBuf {
    env.get("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| home_of(env).join(".claude"))
}

/// Codex's home.
pub(crate) fn codex_home(env: &HashMap<String, String>) -> PathBuf {
    env.get("CODEX_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home_of(env).join(".codex"))
}

/// Claude Code's transcript for session `id` started in `cwd`.
pub(crate) fn claude_transcript(env: &HashMap<String, String>, cwd: &Path, id: &str) -> PathBuf {
    claude_config_dir(env)
        .join("projects")
        .join(claude_project_dir(cwd))
        .join(format!("{id}.jsonl"))
}

/// The newest Codex rollout started in `cwd` since `since_ms`, not in `claimed`.
pub(crate) fn find_rollout(
    env: &HashMap<String, String>,
    cwd: &str,
    since_ms: i64,
    claimed: &[String],
) -> Option<(PathBuf, String)> {
    codex::rollouts_since(&codex_home(env).join("sessions"), since_ms)
        .into_iter()
        .filter(|(p, _)| !claimed.iter().any(|c| Path::new(c) == p))
        .find_map(|(p, _)| {
            let (id, dir) = codex::rollout_meta(&p)?;
            (same_dir(&dir, cwd)).then_some((p, id))
        })
}

fn same_dir(a: &str, b: &str) -> bool {
    let canon = |p: &str| std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p));
    a == b || canon(a) == canon(b)
}

/// How long a worker may wait for its pane while its spawn prepares the others
/// (worktrees, setup scripts) before a missing pane counts as lost.
const PANE_AWAITED_MS: i64 = 30 * 60 * 1000;

impl Workers {
    /// The pane of a worker's session, if it exists.
    pub async fn worker_pane(&self, row: &WorkerRow) -> Result<Option<PaneInfo>, WorkerError> {
        if row.session_id.is_empty() {
            return Ok(None);
        }
        Ok(self
            .terminal
            .list()
            .await?
            .into_iter()
            .find(|p| p.identity.as_ref().is_some_and(|i| i.id == row.session_id)))
    }

    /// The pane's screen read between frames: a TUI that writes a frame in several
    /// pieces must not be seen half drawn (a cut-off hint would read as a draft, a
    /// missing spinner as idle). Reads when the output has been still a moment, and
    /// again when output arrived during the read. Returns the screen and the journal
    /// length it shows.
    pub(crate) async fn stable_screen(
        &self,
        pane: &cohort_backends::PaneId,
    ) -> Option<(cohort_backends::Screen, u64)> {
        const STILL: std::time::Duration = std::time::Duration::from_millis(15);
        let runtime = self.terminal.pane_runtime(pane);
        let mut last = None;
        for _ in 0..12 {
            let (len, quiet) = {
                let data = runtime.lock();
                (data.journal.len(), data.last_output.elapsed())
            };
            if quiet < STILL {
                tokio::time::sleep(STILL - quiet).await;
                continue;
            }
            let screen = self.terminal.backend().read_screen(pane).await.ok()?;
            let after = runtime.lock().journal.len();
            if after == len {
                return Some((screen, len));
            }
            last = Some((screen, after));
        }
        match last {
            Some(read) => Some(read),
            None => {
                let screen = self.terminal.backend().read_screen(pane).await.ok()?;
                let len = runtime.lock().journal.len();
                Some((screen, len))
            }
        }
    }

    /// What a worker's agent spent so far, from its transcript, read on from where
    /// the last look stopped. Cheap next to [`Workers::observe`]: no screen is read
    /// and no state decided.
    pub async fn usage_of(&self, row: &WorkerRow) -> Option<crate::transcript::usage::Usage> {
        let tracker = self.hub.tracker(&row.id);
        let mut t = tracker.lock().await;
        let path = t
            .hook
            .transcript_path
            .clone()
            .or_else(|| row.transcript.clone())
            .map(PathBuf::from)
            .or_else(|| t.transcript_path().map(Path::to_path_buf));
        match (row.spec.host.as_deref(), path) {
            (Some(host), Some(path)) => {
                self.read_far_transcript(&mut t, host, path, row.agent, now_ms())
                    .await
            }
            (Some(_), None) => {}
            (None, path) => t.take_transcript(path, row.agent),
        }
        t.transcript
            .as_ref()
            .and_then(|(_, _, parser)| parser.usage())
            .filter(|u| !u.is_empty())
    }

    /// Brings a worker's signals up to date and decides its state. `fresh_screen`
    /// reads the screen even when the pane printed nothing since the last look.
    pub async fn observe(
        &self,
        row: &WorkerRow,
        fresh_screen: bool,
    ) -> Result<Observation, WorkerError> {
        let spec = row.spec.clone();
        let kind = row.agent;
        let tracker = self.hub.tracker(&row.id);
        let mut t = tracker.lock().await;
        t.take_events();
        let now = now_ms();
        // The pane: remembered while it answers, else looked up again.
        let mut state = match &t.pane {
            Some(p) => self.terminal.backend().pane_state(&p.id).await.ok(),
            None => None,
        };
        if state.is_none() {
            t.pane = self.worker_pane(row).await?;
            state = match &t.pane {
                Some(p) => self.terminal.backend().pane_state(&p.id).await.ok(),
                None => None,
            };
        }
        let pane = t.pane.clone();
        // A spawn makes every worker's worktree (and runs its setup) before it opens
        // any pane: until then a worker has no pane because it has none yet, not
        // because its agent went. The start signal (`go`) is given once the panes are
        // open, so after it a missing pane is a lost one; so it is when the spawn has
        // been at it past any setup's bound (its call was given up). One whose
        // process died before the signal is swept up by the next spawn or discovery.
        let awaiting_pane = pane.is_none()
            && row.state == WorkerState::Spawning
            && row.session_id.is_empty()
            && now - row.launched_ms < PANE_AWAITED_MS
            && !crate::events::worker_dir(&self.hub.state_dir, &row.id)
                .join("go")
                .exists();
        let dead = !awaiting_pane && state.as_ref().is_none_or(|s| s.dead);
        if dead && t.dead_since_ms.is_none() {
            t.dead_since_ms = Some(now);
        }
        let mut process = ProcessFacts {
            dead,
            exit_status: state.as_ref().and_then(|s| s.exit_status),
            dead_since_ms: if dead { t.dead_since_ms } else { None },
            ..ProcessFacts::default()
        };
        if !dead {
            t.dead_since_ms = None;
        }
        // Output: when the pane last printed, from its journal; once the program is
        // gone, the last line it printed.
        let mut journal_len = 0;
        if let Some(p) = &pane {
            let runtime = self.terminal.pane_runtime(&p.id);
            let mut data = runtime.lock();
            journal_len = data.journal.len();
            let ago = data.last_output.elapsed().as_millis() as i64;
            process.last_output_ms = Some(now - ago);
            if dead {
                let tail = data
                    .journal
                    .read(journal_len.saturating_sub(4096), journal_len)
                    .unwrap_or_default();
                process.last_words = last_words(&tail);
            }
        }
        if let (Some(s), true) = (&state, spec.in_shell) {
            if !s.dead && s.at_shell() {
                process.replaced_by = Some(s.foreground_command.clone());
            }
        }
        // The transcript: as reported, as recorded, or found (first: the screen is
        // read with the words of the release it names). A remote worker's is a file
        // on its host (this machine may hold another under the same name), read on
        // there when a hook reported since, or every two seconds.
        let mut transcript = t
            .hook
            .transcript_path
            .clone()
            .or_else(|| row.transcript.clone())
            .map(PathBuf::from);
        if let Some(host) = spec.host.as_deref() {
            self.hear_hosts();
            if let Some(path) = transcript.clone() {
                self.read_far_transcript(&mut t, host, path, kind, now)
                    .await;
            }
        } else {
            if transcript.as_ref().is_none_or(|p| !p.exists()) && now - t.last_scan_ms >= 2000 {
                t.last_scan_ms = now;
                if let Some(found) = self.find_transcript(row, &spec, kind, state.as_ref()).await {
                    transcript = Some(found);
                }
            }
            t.take_transcript(transcript.clone(), kind);
        }
        // The screen, when it may have changed.
        if let Some(p) = pane.as_ref().filter(|_| !dead) {
            let (seen_len, seen_at) = t.screen_seen;
            if fresh_screen || seen_len != journal_len || now - seen_at >= 1000 {
                if let Some((s, journal_len)) = self.stable_screen(&p.id).await {
                    // Seen now, after the capture: never earlier than it was drawn.
                    let seen = now_ms();
                    let rows: Vec<String> =
                        s.rows.iter().map(|r| r.trim_end().to_string()).collect();
                    let version = t.cli_version();
                    let facts = screen::read_at(
                        kind,
                        version.as_deref(),
                        &rows,
                        Some(usize::from(s.cursor.y)),
                    );
                    let class = facts.class();
                    if t.screen.as_ref().is_none_or(|(c, _)| *c != class) {
                        // When cohort first saw it: never earlier than it was drawn,
                        // so a report is taken as newer than a frame only when it is.
                        t.screen = Some((class, seen));
                    }
                    t.facts = Some(facts);
                    t.screen_version = version;
                    t.screen_seen = (journal_len, seen);
                }
            }
        }
        // Hooks run before the agent writes its transcript: events recorded while the
        // transcript was read belong with what it showed.
        t.take_events();
        let launched = row.launched_ms;
        let mut reports: Vec<Report> = t
            .reports
            .iter()
            .chain(t.transcript_reports.iter())
            .filter(|r| r.at_ms >= launched)
            .cloned()
            .collect();
        reports.sort_by_key(|r| r.at_ms);
        let bounds = self.hub.settings().bounds;
        let screen_view = match (kind, &t.screen) {
            (AgentKind::Custom, Some((ScreenClass::Waiting(d), since))) => Some(ScreenView {
                class: ScreenClass::Waiting(d.clone()),
                since_ms: *since,
            }),
            (AgentKind::Custom, _) => None,
            (_, Some((class, since))) => Some(ScreenView {
                class: class.clone(),
                since_ms: *since,
            }),
            _ => None,
        };
        let assessment = if awaiting_pane {
            Assessment {
                state: WorkerState::Spawning,
                reason: "waiting for its pane: the spawn is still preparing its workers".into(),
                signal: Signal::Launch,
                since_ms: row.state_since_ms,
                recheck_ms: None,
            }
        } else {
            state::assess(&Observed {
                now_ms: now,
                launched_ms: row.launched_ms,
                input_ready: row.input_ready,
                reports: &reports,
                screen: screen_view,
                process: process.clone(),
                prompted_ms: row.last_prompt_ms,
                queued: t
                    .facts
                    .as_ref()
                    .and_then(|f| f.composer.as_ref())
                    .is_some_and(|c| c.queued),
                bounds,
            })
        };
        let last_activity = reports
            .last()
            .map(|r| r.at_ms)
            .into_iter()
            .chain(process.last_output_ms)
            .max();
        let observation = Observation {
            assessment,
            pane,
            screen: t.facts.clone(),
            hook: t.hook.clone(),
            transcript: t.transcript_path().map(Path::to_path_buf).or(transcript),
            last_activity_ms: last_activity,
            reports: reports.len(),
            turn_started_ms: reports
                .iter()
                .rev()
                .find(|r| matches!(r.kind, ReportKind::TurnStart))
                .map(|r| r.at_ms),
            turn_ended_ms: reports
                .iter()
                .rev()
                .find(|r| matches!(r.kind, ReportKind::TurnEnd { .. }))
                .map(|r| r.at_ms),
            usage: t
                .transcript
                .as_ref()
                .and_then(|(_, _, parser)| parser.usage())
                .filter(|u| !u.is_empty()),
            last_report: reports.last().cloned(),
            screen_since_ms: t.screen.as_ref().map(|(_, since)| *since),
            last_output_ms: process.last_output_ms,
            kind,
            cli_version: t.screen_version.clone(),
            transcript_rule: t
                .transcript
                .as_ref()
                .and_then(|(_, _, parser)| parser.matched())
                .cloned(),
        };
        let decided = std::mem::take(&mut t.policy_decisions);
        drop(t);
        for note in decided {
            let note = crate::inspect::note_text(&note);
            if let Err(e) = self.annotate_worker(row, &note, Some("policy")).await {
                tracing::warn!(target: "cohort::workers", worker = %row.name, "a policy decision was not noted: {e}");
            }
        }
        self.remember_state(row, &observation).await;
        Ok(observation)
    }

    /// Has the next look at a remote worker read its transcript on its host at once
    /// (a close look at it: what it spent, its last turn), not two seconds after the
    /// last read.
    pub(crate) async fn read_transcript_soon(&self, row: &WorkerRow) {
        if row.spec.host.is_some() {
            self.hub.tracker(&row.id).lock().await.far_read = 0;
        }
    }

    /// Reads on in a remote worker's transcript on its host, two seconds after the
    /// last read (one round trip).
    async fn read_far_transcript(
        &self,
        t: &mut Tracker,
        host: &str,
        path: PathBuf,
        kind: AgentKind,
        now: i64,
    ) {
        // Every two seconds: the hooks' notes say a turn ended sooner, and a read
        // costs a round trip on the way of the wait they wake.
        let at = t.far_read;
        let same_path = t.transcript_path() == Some(path.as_path());
        if same_path && now - at < 2000 {
            return;
        }
        let Some((mut offset, reach)) = t.far_transcript_offset(path.clone(), kind) else {
            return;
        };
        t.far_read = now;
        let text = path.to_string_lossy();
        // In pieces a slow link carries within a call's time, as far as the file
        // goes (up to 64 MiB a look): a re-read reaches where it had been at once.
        for _ in 0..16 {
            let Some(read) =
                crate::remote::read_from(self.terminal.backend(), host, &text, offset, FAR_PIECE)
                    .await
            else {
                break;
            };
            let skew = now_ms() - read.host_now_s * 1000;
            // `date +%s` is whole seconds: only a skew beyond that is corrected.
            if skew.abs() > 2000 {
                t.far_skew_ms = skew - 500;
            } else if skew.abs() < 1000 {
                t.far_skew_ms = 0;
            }
            t.feed_transcript(read.len, read.from, &read.bytes);
            let Some(next) = t.transcript.as_ref().map(|(_, tail, _)| tail.offset()) else {
                break;
            };
            if (read.bytes.len() as u64) < FAR_PIECE && next >= reach {
                break;
            }
            offset = next;
        }
    }

    /// Writes a changed state (and a newly found transcript or session) to the
    /// registry, so other processes and a later one see it.
    async fn remember_state(&self, row: &WorkerRow, o: &Observation) {
        let a = &o.assessment;
        let transcript = o
            .transcript
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned());
        let session = o.hook.session_id.clone();
        let changed = row.state != a.state
            || row.reason != a.reason
            || (transcript.is_some() && row.transcript != transcript)
            || (session.is_some() && row.agent_session.is_none());
        if !changed {
            return;
        }
        // Waits, watchers and the notifier follow agents' states: a change is
        // published once, by the look whose write made it (`row` may be older than
        // what another look, here or in another process, already wrote), right after
        // the registry holds it (so whoever it wakes reads it there, and changes are
        // published in the order they were written).
        let (id, state, reason, since) = (row.id.clone(), a.state, a.reason.clone(), a.since_ms);
        let (bus, name) = (self.terminal.bus().clone(), row.name.clone());
        let written = self
            .terminal
            .db(move |r| {
                // The state the registry held before the write that took.
                let mut before = None;
                let updated = r.update_worker(&id, |w| {
                    before = Some(w.state);
                    w.state = state;
                    w.reason = reason.clone();
                    w.state_since_ms = since;
                    if transcript.is_some() {
                        w.transcript = transcript.clone();
                    }
                    if w.agent_session.is_none() {
                        w.agent_session = session.clone();
                    }
                })?;
                let made_it = updated.and(before).is_some_and(|before| before != state);
                if made_it {
                    bus.publish(cohort_terminal::events::EngineEvent::agent_state(
                        name,
                        state.name(),
                        reason,
                    ));
                }
                Ok(made_it)
            })
            .await;
        let made_it = match written {
            Ok(made_it) => made_it,
            // Not recorded: said anyway, as this look sees it.
            Err(_) if row.state != state => {
                self.report_agent_state(&row.name, a.state.name(), &a.reason);
                true
            }
            Err(_) => false,
        };
        if made_it {
            trace_state(row, o);
        }
    }

    /// Looks for a worker's transcript where its CLI writes it.
    async fn find_transcript(
        &self,
        row: &WorkerRow,
        spec: &LaunchSpec,
        kind: AgentKind,
        state: Option<&cohort_backends::PaneState>,
    ) -> Option<PathBuf> {
        let pid = state.and_then(|s| s.foreground_pid.or(s.shell_pid));
        let env = agent_env(pid, spec);
        let cwd = PathBuf::from(&row.cwd);
        match kind {
            AgentKind::Claude => {
                let id = row.agent_session.clone()?;
                let path = claude_transcript(&env, &cwd, &id);
                path.exists().then_some(path)
            }
            AgentKind::Codex => {
                let claimed: Vec<String> = self
                    .terminal
                    .db(|r| r.workers())
                    .await
                    .ok()?
                    .into_iter()
                    .filter(|w| w.id != row.id)
                    .filter_map(|w| w.transcript)
                    .collect();
                let (cwd_text, since) = (row.cwd.clone(), row.launched_ms - 5000);
                let found = tokio::task::spawn_blocking(move || {
                    find_rollout(&env, &cwd_text, since, &claimed)
                })
                .await
                .ok()??;
                let (path, thread) = found;
                let id = row.id.clone();
                let path_text = path.to_string_lossy().into_owned();
                let _ = self
                    .terminal
                    .db(move |r| {
                        r.update_worker(&id, |w| {
                            w.transcript = Some(path_text.clone());
                            w.agent_session = Some(thread.clone());
                        })
                    })
                    .await;
                Some(path)
            }
            AgentKind::Aider => {
                let path = cwd.join(".aider.chat.history.md");
                path.exists().then_some(path)
            }
            AgentKind::Gemini => {
                let root = home_of(&env).join(".gemini").join("tmp");
                let since = row.launched_ms - 5000;
                tokio::task::spawn_blocking(move || newest_gemini_chat(&root, since))
                    .await
                    .ok()?
            }
            AgentKind::Custom => None,
        }
    }
}

/// The newest Gemini chat checkpoint modified since `since_ms`.
fn newest_gemini_chat(root: &Path, since_ms: i64) -> Option<PathBuf> {
    let mut best: Option<(i64, PathBuf)> = None;
    for project in std::fs::read_dir(root).ok()?.flatten() {
        let Ok(chats) = std::fs::read_dir(project.path().join("chats")) else {
            continue;
        };
        for chat in chats.flatten() {
            let modified = chat
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0);
            if modified >= since_ms && best.as_ref().is_none_or(|(t, _)| modified > *t) {
                best = Some((modified, chat.path()));
            }
        }
    }
    best.map(|(_, p)| p)
}

/// The last line with words in `tail` (a program's last output), without escape
/// sequences, at most 200 characters.
fn last_words(tail: &[u8]) -> Option<String> {
    let text = cohort_terminal::completion::plain_text(tail);
    let line = text
        .lines()
        .map(str::trim)
        .rev()
        .find(|l| l.chars().any(char::is_alphabetic))?;
    Some(line.chars().take(200).collect())
}

/// For traces (the `otel` feature): a worker's change of state as a span that starts
/// and ends with it, carrying what the worker has spent so far by its transcript
/// (tokens, and the cost when the CLI states it or the price table gives it), so a
/// trace shows each turn's end with the session's running total. Running totals
/// are `cohort.usage.*`, not the GenAI conventions' per-call `gen_ai.usage.*`, which
/// tools sum.
#[allow(unused_variables)] // without `otel` the span is none and its fields unread
fn trace_state(row: &WorkerRow, o: &Observation) {
    let none = crate::transcript::usage::Usage::default();
    let usage = o.usage.as_ref().unwrap_or(&none);
    let span = cohort_backends::otel_span!(
        "worker.state",
        otel.name = %format_args!("worker {} {}", row.name, o.assessment.state.name()),
        worker = %row.name,
        agent = row.agent.name(),
        team = row.team.as_deref().unwrap_or(""),
        state = o.assessment.state.name(),
        reason = %o.assessment.reason,
        gen_ai.request.model = usage.model.as_deref().unwrap_or(""),
        cohort.usage.input_tokens = usage.tokens_in(),
        cohort.usage.output_tokens = usage.tokens_out(),
        cohort.usage.cache_read_tokens = usage.cache_read,
        cohort.usage.cache_write_tokens = usage.cache_write,
        cohort.usage.calls = usage.calls,
        cohort.usage.cost_usd = tracing::field::Empty,
    );
    if let Some(cost) = usage.cost_usd {
        span.record("cohort.usage.cost_usd", cost);
    }
}
