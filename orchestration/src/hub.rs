//! The engine's orchestration state: the last state of every agent (kept from the
//! event stream), the relay to other cohort processes, and the long-running parts a
//! server starts (watchers, the notifier).
//!
//! Agents' states come as [`EngineEvent::AgentState`] events from whatever tracks
//! them (the workers, or another process through the relay); the event bus keeps the
//! last one per agent, and the relay records it in the registry, where a process that
//! started later finds it.
//!
//! The notifier (which turns command ends, exits and agent states into
//! notifications) must run once per terminal server, whatever number of cohort
//! processes follow it: the process holding the server's orchestration lock (a
//! `flock` in the state directory) runs it, and when that process ends the next one
//! waiting takes over at once.

use cohort_terminal::{
    events::{EngineEvent, EventBus},
    ids::short_id,
    registry::Registry,
    TerminalError,
};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use tokio_util::sync::CancellationToken;

use crate::registry::OrchestrationTables;
use crate::relay::Relay;
use crate::Orchestrator;

/// An agent's state now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentNow {
    /// The state: spawning, ready, busy, idle, needs_approval, stuck, exited.
    pub state: String,
    /// Why, in words.
    pub reason: String,
    /// Unix seconds since it holds.
    pub since: i64,
}

/// Orchestrator instances of this process that run watchers (a watcher held by one of
/// them is not an orphan).
static LIVE: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();

fn live() -> std::sync::MutexGuard<'static, HashSet<String>> {
    LIVE.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The per-engine orchestration state.
#[derive(Debug)]
pub struct Hub {
    stop: CancellationToken,
    /// The engine's event bus, which keeps the last state of every agent.
    bus: EventBus,
    relay: Option<Arc<Relay>>,
    /// This engine's identity as a holder of watchers: the process's start time and
    /// an instance id.
    instance: String,
    started: OnceLock<()>,
    state_dir: PathBuf,
    /// Wakes this engine's watcher runner when its watchers changed.
    pub(crate) watch_changes: tokio::sync::Notify,
    /// For the panes of watchers added here that the runner has not taken in yet: the
    /// journal offset each was added at, so what they print from then on is watched
    /// even before the runner wakes.
    pub(crate) watch_from: Mutex<HashMap<cohort_backends::PaneId, u64>>,
    /// Where the notifier posts the notifications that need a person, if anywhere.
    pub(crate) webhook: Mutex<Option<crate::webhook::Webhook>>,
    /// Where notifications show on this machine's desktop, when asked.
    pub(crate) desktop: Mutex<Option<crate::desktop::Desktop>>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.stop.cancel();
        live().remove(&self.instance);
    }
}

/// When process `pid` started (clock ticks since boot, from `/proc`), where known.
fn process_start(pid: i64) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_whitespace().nth(19).map(str::to_string)
}

/// Whether the holder `pid` with `start` (`<process start>:<instance>`) still runs.
pub(crate) fn holder_alive(pid: i64, start: Option<&str>) -> bool {
    let own = i64::from(std::process::id());
    if pid == own {
        return start.is_some_and(|s| live().contains(s));
    }
    // SAFETY: signal 0 only checks that the process exists.
    let exists = pid > 0 && unsafe { libc::kill(pid as libc::pid_t, 0) } == 0;
    if !exists {
        return false;
    }
    match (process_start(pid), start.and_then(|s| s.split(':').next())) {
        (Some(now), Some(then)) if !then.is_empty() => now == then,
        _ => true,
    }
}

impl Hub {
    /// The hub of an engine whose state lives in `state_dir`: starts following
    /// agents' states and the relay.
    pub fn new(state_dir: &Path, bus: &EventBus, registry: Arc<Registry>) -> Hub {
        let stop = CancellationToken::new();
        let relay = Relay::start(state_dir, bus, registry, stop.clone());
        let instance = format!(
            "{}:{}",
            process_start(i64::from(std::process::id())).unwrap_or_default(),
            short_id(12)
        );
        Hub {
            stop,
            bus: bus.clone(),
            relay,
            instance,
            started: OnceLock::new(),
            state_dir: state_dir.to_path_buf(),
            watch_changes: tokio::sync::Notify::new(),
            watch_from: Mutex::new(HashMap::new()),
            webhook: Mutex::new(None),
            desktop: Mutex::new(None),
        }
    }

    /// Stops everything the hub started.
    pub fn stop(&self) {
        self.stop.cancel();
        live().remove(&self.instance);
    }

    /// Fires when the hub stops.
    pub fn stopped(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// The last state seen of `agent` in this process.
    pub fn state_of(&self, agent: &str) -> Option<AgentNow> {
        self.bus.agent_state(agent).map(|seen| AgentNow {
            state: seen.state,
            reason: seen.reason,
            since: seen.since,
        })
    }

    /// Whether the relay to other processes is up.
    pub fn relaying(&self) -> bool {
        self.relay.is_some()
    }

    /// This engine as a holder of watchers: the process id and its instance.
    pub fn holder(&self) -> (i64, String) {
        (i64::from(std::process::id()), self.instance.clone())
    }

    /// Whether this engine runs watchers (a server started its orchestration).
    pub fn running_watchers(&self) -> bool {
        self.started.get().is_some() && !self.stop.is_cancelled()
    }
}

/// Waits (on a thread of its own, which never holds up the runtime) for the
/// exclusive lock at `path`; the lock is held while the returned file is open.
/// `None` when the lock cannot be taken at all.
async fn leadership(path: PathBuf) -> Option<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).ok()?;
    }
    let file = File::options()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .ok()?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("cohort-leader".into())
        .spawn(move || {
            // SAFETY: flock on an open descriptor, blocking until granted.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            // A receiver gone (the engine stopped) drops the file: the lock goes on.
            let _ = tx.send((rc == 0).then_some(file));
        })
        .ok()?;
    rx.await.ok().flatten()
}

impl Orchestrator {
    /// Starts what a long-running server does beyond answering calls: it runs the
    /// watchers it holds (and those whose holder is gone), and, once it holds the
    /// terminal server's orchestration lock, the notifier. Calling it again does
    /// nothing.
    pub fn start_orchestration(&self) {
        if self.hub.started.set(()).is_err() {
            return;
        }
        live().insert(self.hub.instance.clone());
        let engine = self.clone();
        tokio::spawn(async move {
            if let Err(e) = engine.run_held_watches().await {
                tracing::warn!(target: "cohort::watch", "watchers not started: {e}");
            }
        });
        let path = cohort_terminal::input::lock_path(
            &self.hub.state_dir.join("locks"),
            self.terminal.server_key(),
            "orchestration",
        );
        let engine = self.clone();
        let stop = self.hub.stopped();
        tokio::spawn(async move {
            let held = tokio::select! {
                _ = stop.cancelled() => return,
                held = leadership(path) => held,
            };
            let Some(_lock) = held else {
                tracing::warn!(target: "cohort::notify", "the notifier's lock could not be taken: command ends and agent states make no notifications here");
                return;
            };
            engine.notifier(stop).await;
        });
    }

    /// Stops the watchers, the notifier and the relay of this engine (a server
    /// going away).
    pub fn stop_orchestration(&self) {
        self.hub.stop();
    }

    /// Reports `agent`'s state: the hook for whatever tracks agents (the workers).
    /// It is kept as the agent's state (here, in the registry, in other processes
    /// through the relay), ends `wait_for` idle waits, sets off watchers on agent
    /// events and, for idle, needs_approval, stuck and exited, leaves a notification.
    pub fn report_agent_state(&self, agent: &str, state: &str, reason: &str) {
        self.terminal
            .publish(EngineEvent::agent_state(agent, state, reason));
    }

    /// The last known state of `agent`: as seen in this process, else as recorded
    /// in the registry.
    pub async fn agent_state(&self, agent: &str) -> Result<Option<AgentNow>, TerminalError> {
        if let Some(now) = self.hub.state_of(agent) {
            return Ok(Some(now));
        }
        let name = agent.to_string();
        Ok(self
            .terminal
            .db(|r| r.agent_states())
            .await?
            .into_iter()
            .find(|row| row.agent == name)
            .map(|row| AgentNow {
                state: row.state,
                reason: row.reason,
                since: row.since,
            }))
    }
}
