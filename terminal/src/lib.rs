//! cohort's terminal core: named sessions in panes a human can watch, one way for
//! keystrokes to reach them, each pane's output journal, the completion ladder that
//! says when a command is done, reduced reads, and the identities (agents, teams)
//! stamped on panes.
//!
//! A *session* is a named terminal (a tmux window with its pane). Its identity (a
//! persistent UUID and its name) is stamped on the pane, so any cohort process finds
//! it by name, id or pane id. Everything below runs on backend events: output goes
//! to each pane's [`journal`], prompt marks drive the [`completion`] ladder, and what
//! happens is published on the [`events`] bus for the layers above.
//!
//! The [`Terminal`]'s methods live with their job:
//!
//! - [`sessions`]: open, split, layouts, adoption, shells coming up, close;
//! - [`targets`]: which session a name, id, agent or team stands for;
//!   [`ownership`]: only panes cohort opened or adopted are sessions;
//! - [`input`]: the one way keys reach a pane: typing, keys, the session's lock and
//!   the input lease;
//! - [`run`]: run and wait on the ladder, reads, the screen;
//! - [`team`]: agents and teams; [`colours`]: team colours and appearance of many
//!   sessions; [`access`]: locks and tags;
//! - [`status`]: the server's and a session's state, appearance and focus;
//! - [`observe`]: what watchers see (styled screens, raw output, last verdicts);
//!   [`record`]: sessions recorded to asciicast files; [`signals`]: what programs in
//!   panes tell cohort with their pane's secret; [`monitor`]: focus, layouts and
//!   panes a person opens or closes, as events.
//!
//! The terminal knows no agent CLI, no orchestration and no wire format: the
//! workers and the orchestration crates build on its named API and its bus.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use cohort_backends::tmux::{config::TmuxConfig, TmuxBackend};
//! use cohort_terminal::{OpenOptions, Terminal};
//!
//! let state = std::path::Path::new("/tmp/cohort-demo");
//! let backend = TmuxBackend::connect(TmuxConfig::new(state.join("tmux"))).await?;
//! let terminal = Terminal::with_backend(Arc::new(backend), state, "-L cohort")?;
//! let pane = terminal.open(OpenOptions::named("builder")).await?;
//! terminal.type_line(&pane.id, "cargo build").await?;
//! # Ok(()) }
//! ```

pub mod access;
pub mod arrangements;
pub mod broadcast;
pub mod colours;
pub mod completion;
pub mod cursors;
pub mod echo;
mod error;
pub mod events;
pub mod filtered;
pub mod hidden;
pub mod hierarchy;
pub mod holder;
pub mod ids;
pub mod input;
pub mod journal;
pub mod layout;
pub mod lines;
pub mod monitor;
pub mod names;
pub mod observe;
pub mod ownership;
pub mod pattern;
pub mod prepare;
pub mod private;
pub mod profiles;
pub mod read;
pub mod ready;
pub mod record;
pub mod registry;
pub mod request;
pub mod run;
pub mod runtime;
pub mod sanitize;
pub mod seal;
pub mod sessions;
pub mod signals;
pub mod status;
pub mod targets;
pub mod team;
pub mod tripwire;
pub mod user_config;

use std::path::PathBuf;
use std::sync::Arc;

use cohort_backends::TerminalBackend;
use serde::Serialize;

use self::registry::{Registry, RegistryError};
use self::runtime::Runtimes;

pub use error::TerminalError;
pub use input::{Caller, InputTurn, Purpose, SendOptions, Sent};
pub use lines::{Line, LineFeed};
pub use names::validate_name;
pub use run::{append_verdict, RunOutput};
pub use sessions::{LayoutPane, OpenOptions, HISTORY_TAKEN};
pub use targets::{describe_targets, resolve_target, Delivery, ExpandedTarget};

/// Summary of the terminal's memory, for diagnostics.
#[derive(Clone, Debug, Serialize)]
pub struct TerminalStats {
    /// Journal bytes held in memory across panes.
    pub journal_memory: usize,
    /// Bytes of runs' output reduced while it arrived (see [`prepare`]).
    pub prepared_bytes: u64,
}

/// The terminal core; cheap to clone.
#[derive(Clone)]
pub struct Terminal {
    backend: Arc<dyn TerminalBackend>,
    runtimes: Arc<Runtimes>,
    lock_dir: PathBuf,
    server_key: String,
    journal_dir: PathBuf,
    state_dir: PathBuf,
    rules: Option<Arc<cohort_reducers::UserRules>>,
    registry: Arc<Registry>,
    /// The terminal server restarts plus registry replacements the registry has been
    /// brought in line with (see [`Terminal::list`]).
    adopted_epoch: Arc<std::sync::atomic::AtomicU64>,
    /// [`TerminalStats::prepared_bytes`].
    prepared_bytes: Arc<std::sync::atomic::AtomicU64>,
    /// Where what happens is published (see [`events`]).
    bus: events::EventBus,
    /// Sessions being recorded (see [`record`]).
    recordings: Arc<record::Recordings>,
    /// Programs that redraw their input in frames (see [`Terminal::redraws_in_frames`]).
    framed_programs: Arc<std::sync::RwLock<std::collections::BTreeSet<String>>>,
    /// Teams whose profile this process wrote to the terminal (see [`profiles`]).
    profiled_teams: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    /// Whether this process tried to write the profiles, and whether that failed.
    profiles_tried: Arc<std::sync::atomic::AtomicBool>,
    profiles_failed: Arc<std::sync::atomic::AtomicBool>,
    /// Held while the profiles are written.
    profiles_writing: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("backend", &self.backend.kind())
            .finish()
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // The last clone removes this process's journal directory.
        if Arc::strong_count(&self.runtimes) == 1 {
            let _ = std::fs::remove_dir_all(&self.journal_dir);
        }
    }
}

impl Terminal {
    /// A terminal over any backend. `state_dir` holds journals, locks and the
    /// registry; `server_key` names the terminal server (locks are per server and
    /// pane).
    pub fn with_backend(
        backend: Arc<dyn TerminalBackend>,
        state_dir: &std::path::Path,
        server_key: &str,
    ) -> Result<Terminal, TerminalError> {
        private::secure_dir_or_warn(state_dir, "state directory");
        let registry = Arc::new(Registry::open(&state_dir.join("registry.db"))?);
        let journal_root = state_dir.join("journal");
        sessions::remove_stale_journals(&journal_root);
        let journal_dir = journal_root.join(std::process::id().to_string());
        let runtimes = Arc::new(Runtimes::new(journal_dir.clone()));
        runtimes.set_signed_marks(backend.capabilities().signed_marks);
        if let Some(key) = signals::SignalKey::of_state_dir(state_dir) {
            runtimes.set_signal_key(key);
        }
        runtime::persist_mark_state(&runtimes, backend.clone());
        runtime::verify_late_signals(&runtimes, &backend);
        monitor::start(&runtimes, &backend);
        tokio::spawn(runtime::dispatch(runtimes.clone(), backend.subscribe()));
        let bus = runtimes.bus().clone();
        Ok(Terminal {
            backend,
            runtimes,
            lock_dir: state_dir.join("locks"),
            server_key: server_key.to_string(),
            journal_dir,
            state_dir: state_dir.to_path_buf(),
            rules: None,
            registry,
            adopted_epoch: Default::default(),
            prepared_bytes: Default::default(),
            profiled_teams: Default::default(),
            profiles_tried: Default::default(),
            profiles_failed: Default::default(),
            profiles_writing: Default::default(),
            bus,
            recordings: Arc::new(record::Recordings::new(state_dir.join("recordings"))),
            framed_programs: Default::default(),
        })
    }

    /// How much of each pane's output to keep on disk (for panes first seen from now
    /// on); older output is dropped, and reads say so.
    pub fn set_journal_disk_cap(&self, bytes: u64) {
        self.runtimes.set_disk_cap(bytes);
    }

    /// Uses these user-defined reducer rules for reads.
    pub fn set_rules(&mut self, rules: Option<cohort_reducers::UserRules>) {
        self.rules = rules.map(Arc::new);
    }

    /// The shared registry: the store every cohort process meets in. Other crates
    /// keep their own tables in it (see [`Registry::add_schema`]); front ends use the
    /// terminal's methods, which check the rules.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Runs `work` on the registry on a blocking thread: SQLite may wait for another
    /// process's transaction (up to its busy timeout), and that wait must not hold a
    /// runtime worker that other panes' events need.
    pub async fn db<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Registry) -> Result<T, RegistryError> + Send + 'static,
    ) -> Result<T, TerminalError> {
        let registry = self.registry.clone();
        tokio::task::spawn_blocking(move || work(&registry))
            .await
            .map_err(|e| TerminalError::Internal(format!("a registry call failed: {e}")))?
            .map_err(TerminalError::from)
    }

    /// The terminal server this terminal drives (its registry key).
    pub fn server_key(&self) -> &str {
        &self.server_key
    }

    /// The directory cohort keeps its state in (journals, locks, the registry).
    pub fn state_dir(&self) -> &std::path::Path {
        &self.state_dir
    }

    /// The backend's kind and capabilities (front ends never type through it: every
    /// keystroke goes through [`input`]).
    pub fn backend(&self) -> &Arc<dyn TerminalBackend> {
        &self.backend
    }

    /// The live state of `pane` (its journal, marks, cursors), created on first
    /// sight: for the layers above that follow a pane's output as it comes.
    pub fn pane_runtime(&self, pane: &cohort_backends::PaneId) -> Arc<runtime::PaneRuntime> {
        self.runtimes.get(pane)
    }

    /// Follows the notes programs on remote hosts leave for cohort (an agent's hooks
    /// there; see [`signals::NOTE_IDENTITY`]) from now on.
    pub fn host_notes(&self) -> tokio::sync::broadcast::Receiver<signals::HostNote> {
        self.runtimes.host_notes()
    }

    /// A receiver woken by every change of `pane` (output, marks, its exit).
    pub fn pane_changes(
        &self,
        pane: &cohort_backends::PaneId,
    ) -> tokio::sync::watch::Receiver<u64> {
        self.runtimes.get(pane).watch()
    }

    /// Waits until `pane` has produced no output for `quiet` (at most `limit`).
    pub async fn settle(
        &self,
        pane: &cohort_backends::PaneId,
        quiet: std::time::Duration,
        limit: std::time::Duration,
    ) {
        input::settle(&self.runtimes.get(pane), quiet, limit).await;
    }

    /// The state of `pane` now (its foreground program, cursor, size, whether it
    /// exited).
    pub async fn pane_state(
        &self,
        pane: &cohort_backends::PaneId,
    ) -> Result<cohort_backends::PaneState, TerminalError> {
        Ok(self.backend.pane_state(pane).await?)
    }

    /// Memory figures.
    pub fn stats(&self) -> TerminalStats {
        TerminalStats {
            journal_memory: self.runtimes.memory_used(),
            prepared_bytes: self
                .prepared_bytes
                .load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}
