//! The engine a front end drives: the terminal, its workers and the orchestration
//! over both, started together.
//!
//! Each part is its own crate with its own job ([`cohort_terminal`],
//! [`cohort_workers`], [`cohort_orchestration`]); this module only puts them
//! together from the configuration. Front ends (MCP, gRPC, the command line, the
//! dashboard) call the part they need through [`Engine::terminal`],
//! [`Engine::workers`] and [`Engine::orchestrator`].

pub mod slot;

use std::path::PathBuf;
use std::sync::Arc;

use cohort_backends::TerminalBackend;
use cohort_orchestration::Orchestrator;
use cohort_terminal::{Terminal, TerminalError};
use cohort_workers::Workers;

use crate::config::Config;

pub use slot::EngineSlot;

/// The terminal, its workers and the orchestration; cheap to clone.
#[derive(Clone, Debug)]
pub struct Engine {
    /// Sessions, input, reads, verdicts, identities.
    pub terminal: Terminal,
    /// Agent CLIs as workers in their own worktrees.
    pub workers: Workers,
    /// Cascades, waits, watchers, notifications, roles, playbooks.
    pub orchestrator: Orchestrator,
}

impl Engine {
    /// Starts the engine on the backend the configuration names (tmux unless told
    /// otherwise): connects, loads the user's reducer rules, adopts the sessions
    /// that exist.
    pub async fn start(config: &Config) -> Result<Engine, TerminalError> {
        let local =
            cohort_backends::iterm2::connect_auto(config.backend, config.tmux(), config.iterm2())
                .await?;
        let declared = crate::hosts::load().unwrap_or_else(|e| {
            tracing::error!(target: "cohort::engine", "remote hosts not loaded: {e}");
            Vec::new()
        });
        // Sessions on remote hosts go through the same backend, by their ids.
        let backend: Arc<dyn TerminalBackend> = Arc::new(cohort_backends::hosts::Hosts::new(
            local,
            config.tmux(),
            declared,
        ));
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
        let mut terminal = Terminal::with_backend(backend, &config.state_dir, &key)?;
        terminal.set_journal_disk_cap(config.journal_disk_cap);
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        match crate::rules::load(&cwd) {
            Ok(rules) => terminal.set_rules(rules),
            Err(e) => {
                tracing::warn!(target: "cohort::engine", "user reducer rules not loaded: {e}")
            }
        }
        if let Some(message) = terminal.registry().recovered() {
            tracing::error!(target: "cohort::engine", "{message}");
        }
        terminal.adopt().await?;
        let engine = Engine::over(terminal)?;
        match cohort_orchestration::webhook::Webhook::from_env() {
            Some(Ok(hook)) => engine.orchestrator.set_webhook(Some(hook)),
            Some(Err(e)) => tracing::error!(target: "cohort::engine", "no webhook: {e}"),
            None => {}
        }
        match cohort_orchestration::desktop::Desktop::from_env() {
            Some(Ok(desktop)) => engine.orchestrator.set_desktop(Some(desktop)),
            Some(Err(e)) => {
                tracing::error!(target: "cohort::engine", "no desktop notifications: {e}")
            }
            None => {}
        }
        if let Some(after) = config.stuck_after {
            engine.workers.configure_workers(|s| {
                s.bounds.stall_ms = i64::try_from(after.as_millis()).unwrap_or(i64::MAX)
            });
        }
        Ok(engine)
    }

    /// An engine over any backend. `state_dir` holds journals, locks and the
    /// registry; `server_key` names the terminal server.
    pub fn with_backend(
        backend: Arc<dyn TerminalBackend>,
        state_dir: &std::path::Path,
        server_key: &str,
    ) -> Result<Engine, TerminalError> {
        Engine::over(Terminal::with_backend(backend, state_dir, server_key)?)
    }

    /// The workers and the orchestration over `terminal`.
    pub fn over(terminal: Terminal) -> Result<Engine, TerminalError> {
        let workers = Workers::new(terminal.clone())
            .map_err(|e| TerminalError::Internal(format!("the workers did not start: {e}")))?;
        let orchestrator = Orchestrator::new(workers.clone())?;
        Ok(Engine {
            terminal,
            workers,
            orchestrator,
        })
    }
}
