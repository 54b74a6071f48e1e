//! The engine: the one door every front end (MCP, the command line) goes through.
//!
//! A *session* is a named terminal (a tmux window with its pane). Its identity (a
//! persistent UUID and its name) is stamped on the pane, so any cohort process finds
//! it by name, id or pane id. Everything below runs on backend events: output goes
//! to each pane's [`journal`], prompt marks drive the [`completion`] ladder.
//!
//! The [`Engine`]'s methods live with their job:
//!
//! - [`sessions`]: open, split, layouts, adoption, shells coming up, close;
//! - [`targets`]: which session a name, id, agent or team stands for;
//! - [`send`]: typing, keys, the session's lock and the input turn;
//! - [`run`]: run and wait on the ladder, reads, the screen;
//! - [`team`]: agents and teams; [`access`]: locks, access requests,
//!   notifications, tags; [`many`]: messages and reads across many sessions;
//! - [`status`]: the server's and a session's state, appearance and focus;
//! - [`observe`]: what watchers see (styled screens, raw output, last verdicts);
//!   [`record`]: sessions recorded to asciicast files.
//! - orchestration: [`playbook`] (whole workflows), [`waits`] (block until a
//!   condition holds), [`watch`] (watchers with actions), [`notify`] (the
//!   notification queue, agents' one-line status), [`colours`] (team colours,
//!   appearance of many sessions), [`roles`] (which tools an agent may call), all on
//!   the event stream ([`hub`], [`relay`] between processes);
//! - [`workers`]: agent CLIs as workers in their own worktrees, with a state cohort
//!   can trust.
//!
//! Rules (names, locks, the tripwire) are checked here, so every front end gets them.

pub mod access;
pub mod colours;
pub mod completion;
pub mod cursors;
mod error;
pub mod events;
pub mod hierarchy;
pub mod hub;
pub mod ids;
pub mod input;
pub mod journal;
pub mod layout;
mod lines;
pub mod many;
pub mod names;
pub mod notify;
pub mod observe;
pub mod orchestrate;
pub mod pattern;
pub mod playbook;
pub mod read;
pub mod ready;
pub mod record;
pub mod registry;
pub mod relay;
pub mod roles;
pub mod run;
pub mod runtime;
pub mod sanitize;
pub mod send;
pub mod sessions;
pub mod slot;
pub mod status;
pub mod targets;
pub mod team;
pub mod tripwire;
pub mod waits;
pub mod watch;
pub mod workers;

use std::path::PathBuf;
use std::sync::Arc;

use cohort_backends::TerminalBackend;
use serde::Serialize;

use crate::config::Config;

use self::registry::{Registry, RegistryError};
use self::runtime::Runtimes;

pub use error::EngineError;
pub use names::validate_name;
pub use run::{append_verdict, RunOutput};
pub use send::{SendOptions, Sent};
pub use sessions::{LayoutPane, OpenOptions, HISTORY_TAKEN};
pub use targets::{describe_targets, resolve_target, ExpandedTarget};

/// Summary of engine memory, for diagnostics.
#[derive(Clone, Debug, Serialize)]
pub struct EngineStats {
    /// Journal bytes held in memory across panes.
    pub journal_memory: usize,
}

/// The engine; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    backend: Arc<dyn TerminalBackend>,
    runtimes: Arc<Runtimes>,
    lock_dir: PathBuf,
    server_key: String,
    journal_dir: PathBuf,
    rules: Option<Arc<cohort_reducers::UserRules>>,
    registry: Arc<Registry>,
    /// The terminal server restarts plus registry replacements the registry has been
    /// brought in line with (see [`Engine::list`]).
    adopted_epoch: Arc<std::sync::atomic::AtomicU64>,
    /// The workers' side: settings, signal trackers, the wake socket.
    workers: Arc<workers::Hub>,
    /// Where what happens is published (see [`events`]).
    bus: events::EventBus,
    /// Sessions being recorded (see [`record`]).
    recordings: Arc<record::Recordings>,
    /// Agents' states, the relay, watchers and the notifier (see [`hub`]).
    hub: Arc<hub::Hub>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("backend", &self.backend.kind())
            .finish()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // The last clone removes this process's journal directory.
        if Arc::strong_count(&self.runtimes) == 1 {
            let _ = std::fs::remove_dir_all(&self.journal_dir);
        }
    }
}

impl Engine {
    /// Starts the engine on the tmux backend.
    pub async fn start(config: &Config) -> Result<Engine, EngineError> {
        let backend =
            cohort_backends::iterm2::connect_auto(config.backend, config.tmux(), config.iterm2())
                .await?;
        let key = match backend.kind() {
            cohort_backends::BackendKind::Tmux => config.tmux_socket.to_string(),
            cohort_backends::BackendKind::Iterm2 => format!(
                "iterm2 {}",
                config
                    .iterm2_socket
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "default".into())
            ),
        };
        let mut engine = Engine::with_backend(backend, &config.state_dir, &key)?;
        engine.set_journal_disk_cap(config.journal_disk_cap);
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        match crate::rules::load(&cwd) {
            Ok(rules) => engine.rules = rules.map(Arc::new),
            Err(e) => {
                tracing::warn!(target: "cohort::engine", "user reducer rules not loaded: {e}")
            }
        }
        if let Some(message) = engine.registry.recovered() {
            tracing::error!(target: "cohort::engine", "{message}");
        }
        engine.adopt().await?;
        Ok(engine)
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

    /// An engine over any backend. `state_dir` holds journals and locks; `server_key`
    /// names the terminal server (locks are per server and pane).
    pub fn with_backend(
        backend: Arc<dyn TerminalBackend>,
        state_dir: &std::path::Path,
        server_key: &str,
    ) -> Result<Engine, EngineError> {
        let registry = Arc::new(Registry::open(&state_dir.join("registry.db"))?);
        let journal_root = state_dir.join("journal");
        sessions::remove_stale_journals(&journal_root);
        let journal_dir = journal_root.join(std::process::id().to_string());
        let runtimes = Arc::new(Runtimes::new(journal_dir.clone()));
        runtimes.set_signed_marks(backend.capabilities().signed_marks);
        tokio::spawn(runtime::dispatch(runtimes.clone(), backend.subscribe()));
        let bus = runtimes.bus().clone();
        let hub = Arc::new(hub::Hub::new(state_dir, &bus, registry.clone()));
        Ok(Engine {
            backend,
            runtimes,
            lock_dir: state_dir.join("locks"),
            server_key: server_key.to_string(),
            journal_dir,
            rules: None,
            registry,
            adopted_epoch: Default::default(),
            workers: Arc::new(workers::Hub::new(state_dir)),
            bus,
            recordings: Arc::new(record::Recordings::new(state_dir.join("recordings"))),
            hub,
        })
    }

    /// The shared registry (for tests and diagnostics; front ends use the engine's
    /// methods, which check the rules).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Runs `work` on the registry on a blocking thread: SQLite may wait for another
    /// process's transaction (up to its busy timeout), and that wait must not hold a
    /// runtime worker that other panes' events need.
    pub(crate) async fn db<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Registry) -> Result<T, RegistryError> + Send + 'static,
    ) -> Result<T, EngineError> {
        let registry = self.registry.clone();
        tokio::task::spawn_blocking(move || work(&registry))
            .await
            .map_err(|e| EngineError::Internal(format!("a registry call failed: {e}")))?
            .map_err(EngineError::from)
    }

    /// The terminal server this engine drives (its registry key).
    pub fn server_key(&self) -> &str {
        &self.server_key
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn TerminalBackend> {
        &self.backend
    }

    /// Memory figures.
    pub fn stats(&self) -> EngineStats {
        EngineStats {
            journal_memory: self.runtimes.memory_used(),
        }
    }
}
