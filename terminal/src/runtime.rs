//! Live state per pane, fed by the backend's event stream.
//!
//! One dispatcher task per engine receives every backend event and updates the
//! pane's [`PaneRuntime`]: output goes to the journal, prompt marks are recorded at
//! the journal position where they occurred, exits and foreground changes are
//! noted. Every update bumps the pane's version on a `watch` channel, which is what
//! waiters sleep on: nothing polls.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cohort_backends::{BackendEvent, EventStream, MarkParams, PaneId, PromptMark};
use tokio::sync::{mpsc, watch};

use crate::{
    cursors::Cursors,
    events::{EngineEvent, EventBus},
    journal::{Journal, DEFAULT_DISK_CAP, DEFAULT_MEMORY},
};

/// How long a pane may stay alive after its shell's "exiting" mark before the mark is
/// taken for a wrong one: the shell lingers 0.1 s after it, then its pane closes.
pub const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// A prompt mark and where it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkAt {
    /// Journal offset right after the mark.
    pub offset: u64,
    /// The mark.
    pub mark: PromptMark,
}

/// A command cohort typed, and where its output starts.
#[derive(Clone, Debug, Default)]
pub struct CommandAt {
    /// Journal offset when Enter was pressed.
    pub offset: u64,
    /// The command text.
    pub text: String,
    /// Typed while the shell was still running its previous command (it announced the
    /// start and not yet the end): input for that command, not a new one.
    pub continues: bool,
    /// The terminal's foreground process group when Enter was pressed: what read the
    /// line (the shell, at its prompt).
    pub typed_into: Option<u32>,
    /// That process's command line then (see [`PaneRuntime::command_line_of`]).
    pub typed_into_args: Option<String>,
    /// The nonce of the exit-status sentinel appended to it, for the mark layer.
    pub mark: Option<String>,
    /// When Enter was pressed.
    pub entered: Option<std::time::Instant>,
    /// An interrupt (`C-c`) was pressed into the pane after its Enter: a line the
    /// shell had not read yet is dropped by it, not run.
    pub interrupted: bool,
}

/// Which prompt marks are the pane's own shell's (see [`cohort_backends::MarkParams`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum MarkKey {
    /// Not learned yet (a pane seen before its session's record): signed marks are
    /// kept for now and checked once the key is known; unsigned ones are not the
    /// shell's.
    #[default]
    Unknown,
    /// The shell signs its marks with this key: every other mark is a program's.
    Keyed(String),
    /// The shell signs each mark with a one-time token of a hash chain (see
    /// [`cohort_backends::pad`]); a mark verifies when its token is the next link down
    /// from `anchor`, which then moves to it. `adopted`: the anchor was read back from
    /// the pane, where it may lag behind the tokens another server saw, so the first
    /// mark may be anywhere further down the chain.
    Chain {
        /// The last token verified (the chain's end at first).
        anchor: cohort_backends::pad::Anchor,
        /// The anchor was read back from the pane.
        adopted: bool,
    },
    /// The pane's marks are not signed (a pane made before marks were signed, or a
    /// backend that cannot tell): every mark is taken.
    Unsigned,
}

/// Mutable state of one pane.
#[derive(Debug)]
pub struct PaneData {
    /// Output history.
    pub journal: Journal,
    /// Prompt marks, oldest first (the most recent 4096).
    pub marks: Vec<MarkAt>,
    /// Commands typed through cohort, oldest first (the most recent 1024).
    pub commands: Vec<CommandAt>,
    /// When output last arrived.
    pub last_output: Instant,
    /// Set when the pane's process exited: its status when known.
    pub exited: Option<Option<i32>>,
    /// Whether the shell announces command starts (`C` marks).
    pub announces_start: bool,
    /// Output was lost at these offsets (flow control, reconnects).
    pub gaps: Vec<u64>,
    /// Read cursors per caller (bounded).
    pub cursors: Cursors,
    /// Where the pane's scrollback from before this process ends in the journal (it
    /// starts it): 0 when none was taken in. Plain text, without colours or marks.
    pub history_end: u64,
    /// Which marks are the shell's.
    pub mark_key: MarkKey,
    /// Signed marks kept while the key was unknown, with the key they carried.
    provisional: Vec<(u64, String)>,
    /// Marks seen that were not the shell's (a program printed them).
    pub foreign_marks: u64,
    /// The persistent id of the session in the pane, once known: its signals are
    /// verified against it (see [`crate::signals`]).
    pub session_id: Option<String>,
    /// Signals seen whose `id` was not the pane's secret.
    pub foreign_signals: u64,
    /// Signals of the pane waiting for its session to be looked up: later ones
    /// wait behind them, so they are published in the order written.
    late_signals: u32,
    /// The pane was looked up and carries no session: its signals are dropped
    /// without another look.
    pub no_session: bool,
    /// The shell sent its last mark on its way out (with its status), at this
    /// moment: what is typed now would be lost. A prompt drawn after it says the
    /// shell did not exit, and so does a pane still alive a moment later (see
    /// [`EXIT_GRACE`]).
    pub exiting: Option<(Option<i32>, Instant)>,
    /// What cohort typed since the last Enter (or line kill): the line a shell will
    /// run when Enter is pressed, which the tripwire judges (see [`crate::input`]).
    pub pending_line: String,
    /// The pane's state as last asked for typing into it: what its shell is (pid,
    /// name), for presuming its state without asking (see [`crate::input`]).
    pub last_state: Option<cohort_backends::PaneState>,
    /// The backend cannot type into this pane under a guard: its state is always
    /// asked.
    pub unguarded: bool,
    /// The last line typed under a guard was refused for arriving late (a link that
    /// held it, a server that stalled), not for the pane's state: no reason to stop
    /// typing under the guard.
    pub guard_late: bool,
    /// What cohort typed and where, to tell its echo from output (see [`crate::echo`]).
    pub typed: crate::echo::TypedLog,
    /// The command line of the process commands were first typed into (the shell at its
    /// prompt), by pid: kept from the first look, so a shell that replaced itself
    /// (`exec sh`) is told by its new command line.
    first_command_line: Option<(u32, String)>,
}

impl PaneData {
    /// Takes a mark that arrived now, when it is the shell's own; returns where it
    /// was kept, or `None` when it was a program's.
    fn take_mark(&mut self, mark: PromptMark, params: MarkParams) -> Option<u64> {
        let own = match (&mut self.mark_key, &params.key) {
            (MarkKey::Unsigned, _) => true,
            (MarkKey::Keyed(key), Some(signed)) => key == signed,
            (MarkKey::Keyed(_), None) => false,
            (MarkKey::Chain { anchor, adopted }, Some(token)) => anchor.verify_next(token, adopted),
            (MarkKey::Chain { .. }, None) => false,
            (MarkKey::Unknown, Some(_)) => true,
            (MarkKey::Unknown, None) => false,
        };
        if !own {
            self.foreign_marks += 1;
            return None;
        }
        let offset = self.journal.len();
        if let (MarkKey::Unknown, Some(key)) = (&self.mark_key, params.key) {
            self.provisional.push((offset, key));
        }
        if mark == PromptMark::CommandStart {
            self.announces_start = true;
        }
        if params.exiting {
            self.exiting = Some((mark.finished().flatten(), Instant::now()));
        } else if mark == PromptMark::PromptStart {
            self.exiting = None;
        }
        self.marks.push(MarkAt { offset, mark });
        if self.marks.len() > 4096 {
            self.marks.drain(..2048);
        }
        Some(offset)
    }

    /// Learns which marks are the shell's: marks kept provisionally under another
    /// key are dropped.
    pub fn set_mark_key(&mut self, mut key: MarkKey) {
        let wrong: Vec<u64> = match &mut key {
            MarkKey::Keyed(own) => self
                .provisional
                .iter()
                .filter(|(_, k)| k != own)
                .map(|(offset, _)| *offset)
                .collect(),
            // In the order they came: each token moves the anchor for the next.
            MarkKey::Chain { anchor, adopted } => self
                .provisional
                .iter()
                .filter(|(_, token)| !anchor.verify_next(token, adopted))
                .map(|(offset, _)| *offset)
                .collect(),
            MarkKey::Unknown | MarkKey::Unsigned => Vec::new(),
        };
        if !wrong.is_empty() {
            self.foreign_marks += wrong.len() as u64;
            let mut dropped = wrong.into_iter().peekable();
            self.marks
                .retain(|m| dropped.next_if_eq(&m.offset).is_none());
        }
        self.provisional.clear();
        self.mark_key = key;
    }

    /// Whether the shell announced a command's start (`C`) and not yet its end (`D`).
    pub fn command_running(&self) -> bool {
        self.marks
            .iter()
            .rev()
            .find(|m| m.mark == PromptMark::CommandStart || m.mark.finished().is_some())
            .is_some_and(|m| m.mark == PromptMark::CommandStart)
    }

    /// Where the shell announced the start of its latest command (the offset of its
    /// `C` mark), if it did.
    pub fn last_command_start(&self) -> Option<u64> {
        self.marks
            .iter()
            .rev()
            .find(|m| m.mark == PromptMark::CommandStart)
            .map(|m| m.offset)
    }

    /// Whether the shell has yet to take the line typed last, entered less than
    /// `recent` ago: a shell that announces its commands has marked nothing since
    /// Enter, neither the line's start nor its prompt drawn again. Keys pressed now
    /// reach the shell before the line's command, if any, has the terminal.
    pub fn line_not_taken(&self, recent: std::time::Duration) -> bool {
        let Some(last) = self.commands.last() else {
            return false;
        };
        self.announces_start
            && !last.continues
            && !last.text.trim().is_empty()
            && last.entered.is_some_and(|at| at.elapsed() < recent)
            && self.marks.last().is_none_or(|m| m.offset <= last.offset)
    }
}

/// A pane's state plus the channel waiters sleep on.
#[derive(Debug)]
pub struct PaneRuntime {
    /// The pane.
    pub pane: PaneId,
    data: Mutex<PaneData>,
    version: watch::Sender<u64>,
    /// Held by a `run` from its send to its verdict: runs on one pane take turns, so
    /// none types into another's command or takes its output and exit status.
    runs: tokio::sync::Mutex<()>,
}

impl PaneRuntime {
    fn new(pane: PaneId, journal: Journal) -> Self {
        PaneRuntime {
            pane,
            data: Mutex::new(PaneData {
                journal,
                marks: Vec::new(),
                commands: Vec::new(),
                last_output: Instant::now(),
                exited: None,
                announces_start: false,
                gaps: Vec::new(),
                cursors: Cursors::default(),
                history_end: 0,
                mark_key: MarkKey::Unknown,
                provisional: Vec::new(),
                foreign_marks: 0,
                session_id: None,
                foreign_signals: 0,
                late_signals: 0,
                no_session: false,
                exiting: None,
                pending_line: String::new(),
                last_state: None,
                unguarded: false,
                guard_late: false,
                typed: crate::echo::TypedLog::default(),
                first_command_line: None,
            }),
            version: watch::channel(0).0,
            runs: tokio::sync::Mutex::new(()),
        }
    }

    /// Waits for the runs before this one on the pane to reach their verdicts.
    pub async fn run_turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.runs.lock().await
    }

    /// Locks the pane's data.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, PaneData> {
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A receiver that wakes on every change.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    /// Notes that output was lost here (flow control, a reconnect): reads spanning
    /// this point say so.
    fn mark_gap(&self) {
        {
            let mut data = self.lock();
            let offset = data.journal.len();
            data.gaps.push(offset);
        }
        self.bump();
    }

    /// The command line `pid` had when commands were first typed into it: read once
    /// per pid (from `/proc`, or `ps` where there is none), then kept.
    pub fn command_line_of(&self, pid: u32) -> Option<String> {
        if let Some((seen, line)) = &self.lock().first_command_line {
            if *seen == pid {
                return Some(line.clone());
            }
        }
        let line = cohort_backends::process::command_line(pid)?;
        self.lock().first_command_line = Some((pid, line.clone()));
        Some(line)
    }

    /// Records text about to be entered (call right before pressing Enter) into
    /// `typed_into`, the foreground process group, with the nonce of its sentinel when
    /// one was appended, and whether a program other than the shell holds the
    /// terminal; returns the record.
    pub fn record_command(
        &self,
        text: &str,
        typed_into: Option<u32>,
        mark: Option<String>,
        program_running: bool,
    ) -> CommandAt {
        let typed_into_args = typed_into.and_then(|pid| self.command_line_of(pid));
        let mut data = self.lock();
        let command = CommandAt {
            offset: data.journal.len(),
            text: kept_text(text),
            // Input for a command still running: the shell said so, or a program other
            // than the pane's shell holds the terminal (a process that started after
            // the command did has not seen its C mark).
            continues: data.command_running() || program_running,
            typed_into,
            typed_into_args,
            mark,
            entered: Some(std::time::Instant::now()),
            interrupted: false,
        };
        data.commands.push(command.clone());
        if data.commands.len() > 1024 {
            data.commands.drain(..512);
        }
        command
    }

    /// Forgets `command`, the last one recorded, when its keystrokes never reached
    /// the pane: no wait may take it for the pane's latest command.
    pub fn forget_command(&self, command: &CommandAt) {
        let mut data = self.lock();
        if data
            .commands
            .last()
            .is_some_and(|c| c.offset == command.offset && c.text == command.text)
        {
            data.commands.pop();
        }
    }
}

/// Bytes of a typed command's start and end that its record keeps.
const KEPT_HEAD: usize = 4 << 10;
const KEPT_TAIL: usize = 8 << 10;

/// What a command record keeps of a long text (the pane keeps 1024 records): its
/// start, which names the program (the reducer is chosen by it), and its end, which
/// is what the terminal echoes after Enter (see the completion ladder's echo check).
fn kept_text(text: &str) -> String {
    if text.len() <= KEPT_HEAD + KEPT_TAIL {
        return text.to_string();
    }
    let head = char_floor(text, KEPT_HEAD);
    let mut tail = text.len() - KEPT_TAIL;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}\n…\n{}", &text[..head], &text[tail..])
}

/// The largest character boundary of `text` at or before `at`.
pub(crate) fn char_floor(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest character boundary of `text` at or after `at`.
pub(crate) fn char_ceil(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// Every pane's runtime, created on first sight.
#[derive(Debug)]
pub struct Runtimes {
    panes: Mutex<HashMap<PaneId, Arc<PaneRuntime>>>,
    dir: PathBuf,
    memory: usize,
    /// Bytes of output each new journal keeps on disk.
    disk_cap: std::sync::atomic::AtomicU64,
    /// Whether the backend signs marks: new panes start with their key unknown, or,
    /// when it cannot, unsigned.
    signed_marks: std::sync::atomic::AtomicBool,
    /// How many times the terminal server was replaced by a new one.
    restarts: std::sync::atomic::AtomicU64,
    /// The key panes' signal secrets derive from; none, nothing signals.
    signal_key: std::sync::OnceLock<crate::signals::SignalKey>,
    /// Where the monitor is told what to look at (see [`crate::monitor`]).
    monitor: Mutex<Option<mpsc::UnboundedSender<crate::monitor::Look>>>,
    /// Where signals from panes whose session is not known yet go to be checked
    /// once it is (see [`verify_late_signals`]).
    late_signals: Mutex<Option<mpsc::UnboundedSender<(PaneId, String, String)>>>,
    /// Where what happens in panes is published.
    bus: EventBus,
    /// Where what marks teach about a pane goes to be stamped on it (see
    /// [`persist_mark_state`]).
    stamps: Mutex<Option<mpsc::UnboundedSender<(PaneId, MarkState)>>>,
    /// The last [`BackendEvent::Synced`] token applied: every event before it is in.
    synced: watch::Sender<u64>,
    /// Notes from programs on remote hosts (see [`crate::signals::NOTE_IDENTITY`]).
    notes: tokio::sync::broadcast::Sender<crate::signals::HostNote>,
}

impl Runtimes {
    /// Runtimes whose journals spill under `dir`.
    pub fn new(dir: PathBuf) -> Self {
        Runtimes {
            panes: Mutex::new(HashMap::new()),
            dir,
            memory: DEFAULT_MEMORY,
            disk_cap: DEFAULT_DISK_CAP.into(),
            signed_marks: true.into(),
            restarts: Default::default(),
            signal_key: Default::default(),
            late_signals: Mutex::new(None),
            monitor: Mutex::new(None),
            bus: EventBus::default(),
            stamps: Mutex::new(None),
            synced: watch::channel(0).0,
            notes: tokio::sync::broadcast::channel(1024).0,
        }
    }

    /// Follows the notes programs on remote hosts leave for cohort from now on.
    pub fn host_notes(&self) -> tokio::sync::broadcast::Receiver<crate::signals::HostNote> {
        self.notes.subscribe()
    }

    /// The stream pane events are published on.
    pub fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// Says whether the backend signs prompt marks (see [`MarkKey`]).
    pub fn set_signed_marks(&self, signed: bool) {
        self.signed_marks
            .store(signed, std::sync::atomic::Ordering::Relaxed);
    }

    /// Sets the key panes' signal secrets derive from (once).
    pub fn set_signal_key(&self, key: crate::signals::SignalKey) {
        let _ = self.signal_key.set(key);
    }

    /// The key panes' signal secrets derive from, when there is one.
    pub fn signal_key(&self) -> Option<&crate::signals::SignalKey> {
        self.signal_key.get()
    }

    /// Where the monitor of the panes is told what to look at.
    pub(crate) fn set_monitor(&self, sender: mpsc::UnboundedSender<crate::monitor::Look>) {
        *self.monitor.lock().unwrap_or_else(|e| e.into_inner()) = Some(sender);
    }

    fn tell_monitor(&self, look: crate::monitor::Look) {
        if let Some(monitor) = &*self.monitor.lock().unwrap_or_else(|e| e.into_inner()) {
            let _ = monitor.send(look);
        }
    }

    /// Publishes a signal from `pane` when `identity` is its session's secret; counts
    /// and drops it otherwise (see [`crate::signals`]).
    fn take_signal(&self, pane: PaneId, identity: &str, payload: &str) {
        let rt = self.get(&pane);
        let verified = {
            let mut data = rt.lock();
            let verified = match (&data.session_id, self.signal_key()) {
                (Some(session), Some(key)) => key.verify(session, identity),
                _ => false,
            };
            if !verified {
                data.foreign_signals += 1;
            }
            verified
        };
        if verified {
            self.bus.publish(EngineEvent::Signal {
                pane,
                payload: crate::signals::clean_payload(payload),
            });
        } else {
            tracing::debug!(target: "cohort::engine", pane = %pane, "a signal without its pane's secret was dropped");
        }
    }

    /// Sets how much output journals created from now on keep on disk.
    pub fn set_disk_cap(&self, bytes: u64) {
        self.disk_cap
            .store(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// The runtime of `pane`, if one was made.
    pub fn existing(&self, pane: &PaneId) -> Option<Arc<PaneRuntime>> {
        self.panes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(pane)
            .cloned()
    }

    /// The runtime of `pane`, created (with an empty journal) if needed.
    pub fn get(&self, pane: &PaneId) -> Arc<PaneRuntime> {
        let mut panes = self.panes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(rt) = panes.get(pane) {
            return rt.clone();
        }
        let file = self
            .dir
            .join(format!("{}.log", pane.as_str().replace(['%', '/'], "")));
        let cap = self.disk_cap.load(std::sync::atomic::Ordering::Relaxed);
        let journal = Journal::create(&file, self.memory, cap);
        let rt = Arc::new(PaneRuntime::new(pane.clone(), journal));
        if !self.signed_marks.load(std::sync::atomic::Ordering::Relaxed) {
            rt.lock().mark_key = MarkKey::Unsigned;
        }
        panes.insert(pane.clone(), rt.clone());
        rt
    }

    /// Starts `pane`'s journal with its scrollback from before this process (`lines`,
    /// oldest first), so tail, line and full reads reach back as far as the terminal
    /// does. Only into an empty journal: output that already arrived came later.
    pub fn take_in_history(&self, pane: &PaneId, lines: &[String]) {
        let end = lines
            .iter()
            .rposition(|l| !l.trim().is_empty())
            .map_or(0, |i| i + 1);
        if end == 0 {
            return;
        }
        let mut text = lines[..end].join("\n");
        text.push('\n');
        let rt = self.get(pane);
        {
            let mut data = rt.lock();
            if !data.journal.is_empty() {
                return;
            }
            data.journal.append(text.as_bytes());
            data.history_end = data.journal.len();
        }
        rt.bump();
    }

    /// How many times the terminal server was replaced so far.
    pub fn restarts(&self) -> u64 {
        self.restarts.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until the [`BackendEvent::Synced`] barrier `token` has been applied, so
    /// every event before it is too; false when `limit` passed first.
    pub async fn wait_synced(&self, token: u64, limit: Duration) -> bool {
        let mut synced = self.synced.subscribe();
        tokio::time::timeout(limit, synced.wait_for(|last| *last >= token))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Forgets a closed pane (its journal file is removed).
    pub fn remove(&self, pane: &PaneId) {
        self.panes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(pane);
    }

    /// Total journal memory in use.
    pub fn memory_used(&self) -> usize {
        let panes: Vec<Arc<PaneRuntime>> = self
            .panes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        panes.iter().map(|p| p.lock().journal.memory_used()).sum()
    }

    /// Applies one backend event.
    pub fn apply(&self, event: BackendEvent) {
        match event {
            BackendEvent::Output { pane, bytes } => {
                let rt = self.get(&pane);
                let (from, to) = {
                    let mut data = rt.lock();
                    let from = data.journal.len();
                    // The journal feeds reads, watchers and recordings: it never
                    // keeps the signature a replayed mark could be forged from.
                    data.journal
                        .append(&cohort_backends::stream::without_signatures(&bytes));
                    data.last_output = Instant::now();
                    (from, data.journal.len())
                };
                rt.bump();
                self.bus.publish(EngineEvent::Output { pane, from, to });
            }
            BackendEvent::Prompt { pane, mark, params } => {
                let rt = self.get(&pane);
                let (kept, learned) = {
                    let mut data = rt.lock();
                    let announced = data.announces_start;
                    let kept = data.take_mark(mark, params);
                    let learned = MarkState {
                        anchor: match &data.mark_key {
                            MarkKey::Chain { anchor, .. } if kept.is_some() => Some(*anchor),
                            _ => None,
                        },
                        announces_start: data.announces_start && !announced,
                    };
                    (kept, learned)
                };
                rt.bump();
                if learned.anchor.is_some() || learned.announces_start {
                    if let Some(stamps) = &*self.stamps.lock().unwrap_or_else(|e| e.into_inner()) {
                        let _ = stamps.send((pane.clone(), learned));
                    }
                }
                match (kept, mark) {
                    (Some(offset), PromptMark::CommandStart) => {
                        self.bus
                            .publish(EngineEvent::CommandStarted { pane, offset });
                    }
                    (Some(offset), PromptMark::CommandFinished { exit_status }) => {
                        self.bus.publish(EngineEvent::CommandEnded {
                            pane,
                            exit_status,
                            offset,
                        });
                    }
                    _ => {}
                }
            }
            BackendEvent::PaneExited { pane, exit_status } => {
                let rt = self.get(&pane);
                rt.lock().exited = Some(exit_status);
                rt.bump();
                self.bus
                    .publish(EngineEvent::PaneExited { pane, exit_status });
            }
            BackendEvent::OutputLost { pane } => self.get(&pane).mark_gap(),
            BackendEvent::ForegroundChanged { pane, .. } | BackendEvent::ModeChanged { pane } => {
                self.get(&pane).bump();
            }
            BackendEvent::Disconnected { .. } | BackendEvent::Reconnected => {
                let panes: Vec<Arc<PaneRuntime>> = self
                    .panes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .values()
                    .cloned()
                    .collect();
                for rt in panes {
                    rt.mark_gap();
                }
            }
            BackendEvent::Synced { token } => {
                self.synced.send_if_modified(|last| {
                    let newer = token > *last;
                    if newer {
                        *last = token;
                    }
                    newer
                });
            }
            BackendEvent::ServerRestarted => {
                // Every pane of the old server is gone, and new ones reuse their ids:
                // nothing kept for an id may pass to a new pane. Waiters still holding
                // an old runtime are woken and find their pane gone.
                let old: Vec<Arc<PaneRuntime>> = self
                    .panes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .drain()
                    .map(|(_, rt)| rt)
                    .collect();
                self.restarts
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                self.tell_monitor(crate::monitor::Look::Restarted);
                for rt in old {
                    rt.bump();
                }
            }
            BackendEvent::Signal {
                pane,
                identity,
                payload,
            } if identity == crate::signals::NOTE_IDENTITY => {
                // Not a pane's signal: a note whose reader checks it (no subscriber:
                // nothing of this process asked for notes).
                let at_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64);
                let _ = self.notes.send(crate::signals::HostNote {
                    pane,
                    text: payload,
                    at_ms,
                });
            }
            BackendEvent::Signal {
                pane,
                identity,
                payload,
            } => {
                let rt = self.get(&pane);
                let late = self.late_signals.lock().unwrap_or_else(|e| e.into_inner());
                let mut data = rt.lock();
                let look_up =
                    (data.session_id.is_none() && !data.no_session) || data.late_signals > 0;
                match late.as_ref() {
                    // A pane this process has not listed yet (or one whose earlier
                    // signals wait for that): its session is looked up first (see
                    // `verify_late_signals`).
                    Some(late) if look_up && self.signal_key().is_some() => {
                        data.late_signals += 1;
                        let _ = late.send((pane, identity, payload));
                    }
                    _ => {
                        drop(data);
                        self.take_signal(pane, &identity, &payload);
                    }
                }
            }
            BackendEvent::LayoutChanged { window } | BackendEvent::WindowClosed { window } => {
                self.bus
                    .publish(EngineEvent::LayoutChanged { window: window.0 });
                self.tell_monitor(crate::monitor::Look::Panes);
            }
            BackendEvent::Focused { window, pane } => match (pane, window) {
                (Some(pane), _) => self.bus.publish(EngineEvent::Focused { pane }),
                (None, Some(window)) => self.tell_monitor(crate::monitor::Look::FocusOf(window)),
                (None, None) => {}
            },
        }
    }
}

/// How long the marks of one command are gathered before their state is stamped.
const STAMP_GATHER: std::time::Duration = std::time::Duration::from_millis(20);

/// What a mark taught this process about its pane, to stamp on the pane.
#[derive(Clone, Copy, Debug, Default)]
struct MarkState {
    /// The mark anchor moved here.
    anchor: Option<cohort_backends::pad::Anchor>,
    /// The shell was seen announcing a command's start.
    announces_start: bool,
}

/// Stamps what marks teach about each pane as it comes (the latest anchor per pane
/// when several wait), until the runtimes are gone: a server that adopts the pane
/// later starts from there, takes no token this one saw spent, and knows its shell
/// announces command starts before it sees one.
pub fn persist_mark_state(runtimes: &Runtimes, backend: Arc<dyn cohort_backends::TerminalBackend>) {
    let (sender, mut learned) = mpsc::unbounded_channel::<(PaneId, MarkState)>();
    *runtimes.stamps.lock().unwrap_or_else(|e| e.into_inner()) = Some(sender);
    // Weak: this task must not keep the terminal's connection alive.
    let backend = Arc::downgrade(&backend);
    tokio::spawn(async move {
        while let Some(first) = learned.recv().await {
            // A command's marks (its start, its end, the next prompt) come within a
            // few milliseconds: gathered, they cost the terminal one command, not
            // three. The stamp trails the last token by that, and by the stamps of
            // other panes before it, which an adopting server allows for (see
            // `MarkKey::Chain`); a process that ends meanwhile leaves the previous
            // anchor, as before.
            tokio::time::sleep(STAMP_GATHER).await;
            let mut latest: HashMap<PaneId, MarkState> = HashMap::new();
            let mut take = |(pane, state): (PaneId, MarkState)| {
                let kept = latest.entry(pane).or_default();
                kept.anchor = state.anchor.or(kept.anchor);
                kept.announces_start |= state.announces_start;
            };
            take(first);
            while let Ok(next) = learned.try_recv() {
                take(next);
            }
            let Some(backend) = backend.upgrade() else {
                return;
            };
            for (pane, state) in latest {
                let anchor = state.anchor.map(|a| a.to_string());
                if let Err(e) = backend
                    .stamp_mark_state(&pane, anchor.as_deref(), state.announces_start)
                    .await
                {
                    tracing::debug!(target: "cohort::engine", pane = %pane, error = %e, "mark state not stamped");
                }
            }
        }
    });
}

/// Checks the signals of panes this process has not listed yet (a session another
/// process opened after it started): a burst of them costs one listing, which
/// teaches every pane's session; then each is taken as any other. Runs until the
/// runtimes are gone.
pub fn verify_late_signals(
    runtimes: &Arc<Runtimes>,
    backend: &Arc<dyn cohort_backends::TerminalBackend>,
) {
    let (sender, mut late) = mpsc::unbounded_channel::<(PaneId, String, String)>();
    *runtimes
        .late_signals
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = Some(sender);
    let runtimes = Arc::downgrade(runtimes);
    // Weak: this task must not keep the terminal's connection alive.
    let backend = Arc::downgrade(backend);
    tokio::spawn(async move {
        while let Some(first) = late.recv().await {
            let mut signals = vec![first];
            while let Ok(next) = late.try_recv() {
                signals.push(next);
            }
            let Some(terminal) = backend.upgrade() else {
                return;
            };
            let listed = terminal.list_panes().await;
            drop(terminal);
            let Some(runtimes) = runtimes.upgrade() else {
                return;
            };
            if let Ok(panes) = &listed {
                for pane in panes {
                    let rt = runtimes.get(&pane.id);
                    let mut data = rt.lock();
                    match &pane.identity {
                        Some(identity) => {
                            data.session_id.get_or_insert_with(|| identity.id.clone());
                        }
                        None => data.no_session = true,
                    }
                }
            }
            for (pane, identity, payload) in signals {
                {
                    let rt = runtimes.get(&pane);
                    let mut data = rt.lock();
                    data.late_signals = data.late_signals.saturating_sub(1);
                }
                runtimes.take_signal(pane, &identity, &payload);
            }
        }
    });
}

/// Feeds backend events into the runtimes until the stream ends.
pub async fn dispatch(runtimes: Arc<Runtimes>, mut events: EventStream) {
    while let Some(event) = events.recv().await {
        runtimes.apply(event);
    }
}
