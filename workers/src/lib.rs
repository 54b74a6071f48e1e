//! Workers: agent CLIs (Claude Code, Codex, Gemini, Aider, any command) running in
//! panes a human can watch, each in its own git worktree, with a state cohort can
//! trust.
//!
//! - [`agent`]: the CLIs and their command lines; [`theme`]: names and colours;
//!   [`worktree`]: git worktrees made ready to work in;
//! - [`spawn`]: launching workers (worktree, setup, layout, hooks, readiness);
//! - [`events`]: what the agents' hooks record (`cohort hook`) and the wake socket;
//!   [`transcript`]: the agents' own logs; [`screen`]: what their screens say;
//!   [`screen_rules`], [`transcript_rules`]: the words both are read by, as data
//!   the user can extend ([`rule_file`]: the file shape they share);
//! - [`state`]: the state machine, a pure function of those signals; [`observe`]:
//!   gathering them; [`hub`]: the per-engine side (settings, trackers, wake socket);
//! - [`submit`]: prompts that are really submitted; [`messages`]: messages held for
//!   busy workers and waits; [`inspect`]: listing, examining, logs, notes;
//! - [`recover`]: discovery and adoption after a crash, resuming dead panes;
//!   [`remote`]: workers on remote hosts, their hooks heard through the host's tmux;
//!   [`close`]: ending workers and removing their worktrees;
//! - [`registry`]: the workers' tables in the shared registry.
//!
//! [`Workers`] stands on the terminal ([`cohort_terminal::Terminal`]): it opens panes,
//! types through the terminal's one input path and reads screens there. It knows no
//! orchestration: what it learns of an agent's state it publishes on the terminal's
//! event bus ([`cohort_terminal::events::EngineEvent::AgentState`]), where waits,
//! watchers and notifications pick it up.

pub mod agent;
pub mod approve;
pub mod budget;
pub mod cli_version;
pub mod close;
mod error;
pub mod events;
pub mod explain;
pub mod hooks;
pub mod hub;
pub mod inspect;
pub mod machine;
pub mod merge;
pub mod messages;
pub mod observe;
pub mod policy;
pub mod prices;
mod ready;
pub mod recover;
pub mod registry;
pub mod remote;
pub mod rule_file;
pub mod screen;
pub mod screen_rules;
pub mod spawn;
pub mod state;
pub mod submit;
pub mod theme;
pub mod transcript;
pub mod transcript_rules;
pub mod user_file;
pub mod worktree;

pub use agent::{AgentKind, LaunchSpec};
pub use error::WorkerError;
pub use hub::{Hub, WorkerSettings};
pub use observe::Observation;
pub use state::{Assessment, Signal, WorkerState};

use std::sync::Arc;

use cohort_terminal::events::EngineEvent;
use cohort_terminal::{Caller, Terminal};

use crate::registry::{WorkerRow, WorkerTables};

/// The workers of one terminal; cheap to clone.
#[derive(Clone, Debug)]
pub struct Workers {
    terminal: Terminal,
    hub: Arc<Hub>,
}

impl Workers {
    /// The workers over `terminal`: their tables are added to its registry, and the
    /// agent CLIs' programs are named to it as programs that redraw in frames.
    pub fn new(terminal: Terminal) -> Result<Workers, WorkerError> {
        terminal.registry().add_schema(registry::WORKER_SCHEMA)?;
        terminal.redraws_in_frames(AgentKind::PROGRAMS);
        let hub = Arc::new(Hub::new(terminal.state_dir()));
        Ok(Workers { terminal, hub })
    }

    /// The workers as a caller of the terminal: their keystrokes pass a session's
    /// lock only when no one holds it.
    fn caller(&self) -> Caller {
        Caller::new("workers")
    }

    /// The terminal the workers run in.
    pub fn terminal(&self) -> &Terminal {
        &self.terminal
    }

    /// Publishes `agent`'s state on the event bus: whatever follows agents (waits,
    /// watchers, notifications, other processes through the relay) takes it from
    /// there.
    pub fn report_agent_state(&self, agent: &str, state: &str, reason: &str) {
        self.terminal
            .publish(EngineEvent::agent_state(agent, state, reason));
    }

    /// Changes the workers' settings (the hook program, the state machine's bounds…).
    pub fn configure_workers(&self, change: impl FnOnce(&mut WorkerSettings)) {
        change(&mut self.hub.settings.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// The workers' settings.
    pub fn worker_settings(&self) -> WorkerSettings {
        self.hub.settings()
    }

    /// A receiver woken whenever an agent's hook reports (or cohort changes a worker).
    pub fn wakes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.hear_hosts();
        self.hub.wakes()
    }

    /// The ids of the workers whose hooks reported since the last call.
    pub fn take_woken(&self) -> std::collections::HashSet<String> {
        self.hub.take_woken()
    }

    /// The worker named `name` (or with that id), if there is one.
    pub async fn find_worker(&self, name: &str) -> Result<Option<WorkerRow>, WorkerError> {
        let name = name.to_string();
        Ok(self.terminal.db(move |r| r.worker(&name)).await?)
    }

    /// Every worker the registry knows.
    pub async fn worker_rows(&self) -> Result<Vec<WorkerRow>, WorkerError> {
        Ok(self.terminal.db(|r| r.workers()).await?)
    }

    /// The worker named `name` (or with that id, or working in that session).
    pub async fn worker_row(&self, name: &str) -> Result<WorkerRow, WorkerError> {
        let rows = self.worker_rows().await?;
        let wanted = name.trim();
        if let Some(row) = rows
            .iter()
            .find(|w| w.name == wanted || w.id == wanted || w.session_id == wanted)
        {
            return Ok(row.clone());
        }
        // A pane id or session name: the worker working there.
        if let Ok(pane) = self.terminal.resolve(wanted).await {
            if let Some(row) = pane
                .identity
                .as_ref()
                .and_then(|i| rows.iter().find(|w| w.session_id == i.id))
            {
                return Ok(row.clone());
            }
        }
        Err(WorkerError::Unknown {
            name: wanted.to_string(),
            known: known_workers(&rows),
        })
    }

    /// The workers named, in order, each at most once; `all` when `names` is empty
    /// and `all_if_empty`.
    pub async fn worker_rows_named(
        &self,
        names: &[String],
        all_if_empty: bool,
    ) -> Result<Vec<WorkerRow>, WorkerError> {
        if names.is_empty() {
            if all_if_empty {
                return self.worker_rows().await;
            }
            return Err(WorkerError::Invalid(
                "no workers named: pass their names (list_workers shows them)".into(),
            ));
        }
        let mut out: Vec<WorkerRow> = Vec::new();
        for name in names {
            let row = self.worker_row(name).await?;
            if !out.iter().any(|w| w.id == row.id) {
                out.push(row);
            }
        }
        Ok(out)
    }
}

/// The workers that exist, for an error message.
pub(crate) fn known_workers(rows: &[WorkerRow]) -> String {
    if rows.is_empty() {
        return "there are no workers: start some with spawn_workers".into();
    }
    let names: Vec<&str> = rows.iter().map(|w| w.name.as_str()).take(20).collect();
    format!("workers: {}", names.join(", "))
}
