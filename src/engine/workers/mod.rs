//! Workers: agent CLIs (Claude Code, Codex, Gemini, Aider, any command) running in
//! panes a human can watch, each in its own git worktree, with a state cohort can
//! trust.
//!
//! - [`agent`]: the CLIs and their command lines; [`theme`]: names and colours;
//!   [`worktree`]: git worktrees made ready to work in;
//! - [`spawn`]: launching workers (worktree, setup, layout, hooks, readiness);
//! - [`events`]: what the agents' hooks record (`cohort hook`) and the wake socket;
//!   [`transcript`]: the agents' own logs; [`screen`]: what their screens say;
//! - [`state`]: the state machine, a pure function of those signals; [`observe`]:
//!   gathering them; [`hub`]: the per-engine side (settings, trackers, wake socket);
//! - [`submit`]: prompts that are really submitted; [`messages`]: messages held for
//!   busy workers and waits; [`inspect`]: listing, examining, logs, notes;
//! - [`recover`]: discovery and adoption after a crash, resuming dead panes;
//!   [`close`]: ending workers and removing their worktrees.

pub mod agent;
pub mod close;
mod error;
pub mod events;
pub mod hooks;
pub mod hub;
pub mod inspect;
pub mod messages;
pub mod observe;
mod ready;
pub mod recover;
pub mod screen;
pub mod spawn;
pub mod state;
pub mod submit;
pub mod theme;
pub mod transcript;
pub mod worktree;

pub use agent::{AgentKind, LaunchSpec};
pub use error::WorkerError;
pub use hub::{Hub, WorkerSettings};
pub use observe::Observation;
pub use state::{Assessment, Signal, WorkerState};

use crate::engine::registry::WorkerRow;
use crate::engine::Engine;

impl Engine {
    /// Changes the workers' settings (the hook program, the state machine's bounds…).
    pub fn configure_workers(&self, change: impl FnOnce(&mut WorkerSettings)) {
        change(
            &mut self
                .workers
                .settings
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
    }

    /// The workers' settings.
    pub fn worker_settings(&self) -> WorkerSettings {
        self.workers.settings()
    }

    /// Every worker the registry knows.
    pub async fn worker_rows(&self) -> Result<Vec<WorkerRow>, WorkerError> {
        Ok(self.db(|r| r.workers()).await?)
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
        if let Ok(pane) = self.resolve(wanted).await {
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
