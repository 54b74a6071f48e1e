//! Closing workers: the agent is asked to exit with its own command, then given the
//! keys that end it, then its pane is closed; its worktree is removed only when asked
//! and only when that loses no work (unless forced). The branch always stays.

use std::path::PathBuf;
use std::time::Duration;

use cohort_backends::Key;

use crate::registry::WorkerTables;
use crate::Workers;
use crate::{
    agent::AgentKind, error::WorkerError, events::worker_dir, registry::WorkerRow,
    state::WorkerState, worktree,
};
use cohort_terminal::Purpose;

/// What closing one worker did.
#[derive(Clone, Debug)]
pub struct Closed {
    /// The worker.
    pub name: String,
    /// How the agent ended: `exit command`, `keys`, `pane closed`, `already exited`.
    pub ended: &'static str,
    /// The worktree was removed.
    pub worktree_removed: bool,
    /// The worktree that stays, and why.
    pub worktree_kept: Option<String>,
    /// Its branch (kept).
    pub branch: Option<String>,
    /// Why it was not closed, when it was not.
    pub error: Option<String>,
}

/// How long the agent gets to exit after each step.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// Worktrees are removed one at a time: workers closed together share their
/// repository, and git takes its own locks there.
static GIT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl Workers {
    /// Closes the workers. A busy worker (working, or waiting for an approval) is
    /// refused unless `force`, which interrupts it first. With `remove_worktree`, a
    /// worktree cohort made is removed when clean (or anyway with `force`).
    pub async fn close_workers(
        &self,
        rows: &[WorkerRow],
        force: bool,
        remove_worktree: bool,
    ) -> Vec<Closed> {
        // Each worker is closed at once, not one after another: most of the time is
        // spent waiting for an agent to exit, and the agents exit side by side. Their
        // worktrees are removed one at a time (see `GIT`).
        let closing = rows.iter().map(|row| async move {
            match self.close_worker(row, force, remove_worktree).await {
                Ok(c) => c,
                Err(e) => Closed {
                    name: row.name.clone(),
                    ended: "not closed",
                    worktree_removed: false,
                    worktree_kept: row.worktree.clone(),
                    branch: row.branch.clone(),
                    error: Some(e.to_string()),
                },
            }
        });
        futures_util::future::join_all(closing).await
    }

    async fn close_worker(
        &self,
        row: &WorkerRow,
        force: bool,
        remove_worktree: bool,
    ) -> Result<Closed, WorkerError> {
        let seen = self.observe(row, true).await?;
        let state = seen.assessment.state;
        if matches!(
            state,
            WorkerState::Busy | WorkerState::NeedsApproval | WorkerState::Spawning
        ) && !force
        {
            return Err(WorkerError::Invalid(format!(
                "{} is {state} ({}): wait for it, or pass force: true to interrupt and close it",
                row.name, seen.assessment.reason
            )));
        }
        let kind = row.agent;
        let mut ended = "already exited";
        let mut typed_exit = false;
        if let Some(pane) = seen.pane.clone().filter(|_| state != WorkerState::Exited) {
            let gone = |engine: &Workers, row: &WorkerRow| {
                let (engine, row) = (engine.clone(), row.clone());
                async move {
                    engine
                        .await_composer(
                            &row,
                            |o| o.assessment.state == WorkerState::Exited,
                            EXIT_WAIT,
                        )
                        .await
                        .is_ok_and(|o| o.assessment.state == WorkerState::Exited)
                }
            };
            {
                // Best effort: a pane that takes no input now is closed below anyway.
                if let Ok(mut turn) = self
                    .terminal
                    .input(&pane.id, &self.caller(), Purpose::Prompt)
                    .await
                {
                    if matches!(
                        state,
                        WorkerState::Busy | WorkerState::NeedsApproval | WorkerState::Stuck
                    ) {
                        let _ = turn.keys(&[key("Escape")]).await;
                        tokio::time::sleep(Duration::from_millis(300)).await;
                    }
                    if let Some(exit) = kind.exit_command() {
                        typed_exit = self.type_exit(row, &mut turn, exit).await;
                    }
                }
            }
            if typed_exit && gone(self, row).await {
                ended = "exit command";
            } else {
                let keys = match kind {
                    AgentKind::Claude => vec![key("C-c"), key("C-c")],
                    _ => vec![key("C-c"), key("C-d")],
                };
                let _ = self.press(&pane.id, &keys).await;
                ended = if gone(self, row).await {
                    "keys"
                } else {
                    "pane closed"
                };
            }
        }
        // The pane (dead, or still running when nothing else worked) goes.
        if let Some(pane) = self.worker_pane(row).await? {
            let _ = self.terminal.close(&pane.id).await;
        }
        let mut closed = Closed {
            name: row.name.clone(),
            ended,
            worktree_removed: false,
            worktree_kept: row.worktree.clone(),
            branch: row.branch.clone(),
            error: None,
        };
        if remove_worktree {
            match (&row.repo, &row.worktree, row.worktree_owned) {
                (Some(repo), Some(path), true) => {
                    let (repo, path) = (PathBuf::from(repo), PathBuf::from(path));
                    let _git = GIT.lock().await;
                    let m = self.machine_of(row);
                    let removed = tokio::task::spawn_blocking(move || {
                        // Codex's hooks file, written here for a local worker only.
                        let hooks = path.join(".codex").join("hooks.json");
                        if m.host().is_none()
                            && std::fs::read_to_string(&hooks)
                                .is_ok_and(|t| t.contains("written by cohort"))
                        {
                            let _ = std::fs::remove_file(&hooks);
                            let _ = std::fs::remove_dir(path.join(".codex"));
                        }
                        worktree::remove(&m, &repo, &path, force)
                    })
                    .await
                    .map_err(|e| WorkerError::Invalid(format!("git could not be run: {e}")))?;
                    match removed {
                        Ok(()) => {
                            closed.worktree_removed = true;
                            closed.worktree_kept = None;
                        }
                        Err(e) => closed.error = Some(e.to_string()),
                    }
                }
                (_, Some(path), false) => {
                    closed.error = Some(format!(
                        "{path} was not made by cohort for this worker: it was left alone"
                    ));
                }
                _ => {}
            }
        }
        self.forget_worker(row).await?;
        self.hub.poke();
        Ok(closed)
    }

    /// Types the agent's exit command and presses Enter, only into its composer:
    /// a draft there is taken out first (it would go out with the command), and
    /// Enter waits until the composer shows the command and nothing else. A dialog,
    /// a sign-in menu or a frame cohort does not know gets no key (Enter would
    /// choose something there); the caller's keys and the pane's closing follow.
    async fn type_exit(
        &self,
        row: &WorkerRow,
        turn: &mut cohort_terminal::InputTurn,
        exit: &str,
    ) -> bool {
        if !self.clear_composer(row, turn).await.unwrap_or(false) {
            return false;
        }
        if turn.text(exit).await.is_err() {
            return false;
        }
        let shows_exit = |o: &crate::observe::Observation| {
            o.screen
                .as_ref()
                .and_then(|s| s.composer.as_ref())
                .is_some_and(|c| c.text.trim() == exit)
        };
        match self.await_composer(row, shows_exit, EXIT_WAIT).await {
            Ok(seen) if shows_exit(&seen) => turn.keys(&[Key::ENTER]).await.is_ok(),
            _ => {
                let _ = self.clear_composer(row, turn).await;
                false
            }
        }
    }

    /// Removes every trace of a worker whose pane and worktree are dealt with: its
    /// row, its agent, its tracker and its state directory.
    pub(crate) async fn forget_worker(&self, row: &WorkerRow) -> Result<(), WorkerError> {
        let (id, name) = (row.id.clone(), row.name.clone());
        self.terminal
            .db(move |r| {
                r.remove_worker(&id)?;
                r.remove_agent(&name)
            })
            .await?;
        self.hub.forget(&row.id);
        if let Some(host) = row.spec.host.as_deref() {
            crate::remote::forget(self.terminal.backend(), host, &row.id).await;
        }
        let dir = worker_dir(&self.hub.state_dir, &row.id);
        let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir)).await;
        Ok(())
    }
}

fn key(name: &str) -> Key {
    name.parse().expect("a known key")
}
