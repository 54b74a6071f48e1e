//! Waiting until a new worker's input takes keys: a probe key seen in its composer
//! and removed again, a folder-trust dialog answered when asked to.

use std::time::Duration;

use cohort_backends::{Key, KeyCode, PaneId};
use cohort_terminal::Purpose;

use crate::registry::WorkerTables;
use crate::Workers;
use crate::*;
use crate::{events::now_ms, screen::Dialog};

/// How long after the agent's first hook a frame cohort cannot read ends the wait.
const UNREAD_AFTER_START: Duration = Duration::from_secs(8);

impl Workers {
    /// Waits until the agent's input takes keys (a probe key shows in its composer
    /// and is removed again), answering a folder-trust dialog when `trust`. A dialog
    /// it cannot answer ends the wait: the worker then needs approval.
    pub(crate) async fn await_ready(
        &self,
        row: &WorkerRow,
        trust: bool,
    ) -> Result<WorkerRow, WorkerError> {
        let limit = self.hub.settings().ready_timeout;
        let deadline = tokio::time::Instant::now() + limit;
        let kind = row.agent;
        let not_ready = |why: String| WorkerError::NotReady {
            worker: row.name.clone(),
            why,
        };
        let mut trusted = false;
        // The pane last seen, to say what it shows when time runs out.
        let mut last_pane: Option<PaneId> = None;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                let tail = match &last_pane {
                    Some(pane) => self.screen_tail(pane, 4).await,
                    None => String::new(),
                };
                let shows = if tail.trim().is_empty() {
                    String::new()
                } else {
                    format!("; its screen ends with: {tail}")
                };
                return Err(not_ready(format!(
                    "nothing took keys within {} s{shows}",
                    limit.as_secs()
                )));
            }
            let seen = self
                .await_composer(
                    row,
                    crate::observe::Observation::legible,
                    left.min(Duration::from_secs(if kind == AgentKind::Custom {
                        1
                    } else {
                        5
                    })),
                )
                .await?;
            if seen.assessment.state.name() == "exited" {
                let tail = match &seen.pane {
                    Some(p) => self.screen_tail(&p.id, 4).await,
                    None => String::new(),
                };
                return Err(not_ready(format!(
                    "{}; its screen ends with: {tail}",
                    seen.assessment.reason
                )));
            }
            let Some(pane) = seen.pane.clone() else {
                return Err(not_ready("its pane is gone".into()));
            };
            last_pane = Some(pane.id.clone());
            if kind == AgentKind::Custom {
                // No screen to read: ready once its output has been quiet a moment.
                self.terminal
                    .settle(&pane.id, Duration::from_millis(500), left)
                    .await;
                return self.mark_ready(row).await;
            }
            match seen.screen.as_ref().and_then(|s| s.dialog.clone()) {
                Some(Dialog::Trust) if trust && !trusted => {
                    trusted = true;
                    self.press(&pane.id, &[Key::ENTER]).await?;
                    continue;
                }
                Some(Dialog::SignIn) => {
                    return Err(not_ready(format!("it shows {}", Dialog::SignIn.describe())))
                }
                Some(_) => return Ok(row.clone()),
                None => {}
            }
            if seen
                .screen
                .as_ref()
                .and_then(|s| s.composer.as_ref())
                .is_none()
            {
                // The agent's hooks say its session is up, yet no frame cohort
                // knows has shown for a while: say so now, not at the time limit.
                let reported = seen
                    .hook
                    .last_event_ms
                    .filter(|at| *at >= row.launched_ms)
                    .map(|at| now_ms() - at);
                if reported.is_some_and(|ago| ago >= UNREAD_AFTER_START.as_millis() as i64) {
                    let tail = self.screen_tail(&pane.id, 4).await;
                    return Err(not_ready(format!(
                        "its hooks report its session started, but after {} s its screen still shows no composer or dialog cohort recognises (nothing was typed into it); its screen ends with: {tail}",
                        UNREAD_AFTER_START.as_secs()
                    )));
                }
                continue;
            }
            // The probe: a key typed before the input handler is mounted is dropped.
            self.type_probe(&pane.id, "x").await?;
            let probe_shown = |o: &crate::observe::Observation| {
                o.screen
                    .as_ref()
                    .and_then(|s| s.draft())
                    .is_some_and(|d| d.trim() == "x")
            };
            let shown = self
                .await_composer(row, probe_shown, Duration::from_millis(800))
                .await?;
            if !probe_shown(&shown) {
                if shown
                    .screen
                    .as_ref()
                    .and_then(|s| s.draft())
                    .is_some_and(|d| d.ends_with('x'))
                {
                    // Something else is in the composer (a human typing): take the
                    // probe back out if it went in, and look again.
                    self.press(&pane.id, &[Key::plain(KeyCode::Backspace)])
                        .await?;
                }
                continue;
            }
            self.press(&pane.id, &[Key::plain(KeyCode::Backspace)])
                .await?;
            let cleared = self
                .await_composer(
                    row,
                    |o| {
                        o.screen
                            .as_ref()
                            .and_then(|s| s.composer.as_ref())
                            .is_some_and(|c| c.empty)
                    },
                    Duration::from_secs(2),
                )
                .await?;
            if cleared
                .screen
                .as_ref()
                .and_then(|s| s.composer.as_ref())
                .is_some_and(|c| c.empty)
            {
                return self.mark_ready(row).await;
            }
            return Err(not_ready(
                "the probe key could not be removed from its composer".into(),
            ));
        }
    }

    /// Presses `keys` in the worker's pane, through the terminal's input path.
    pub(crate) async fn press(&self, pane: &PaneId, keys: &[Key]) -> Result<(), WorkerError> {
        let mut turn = self
            .terminal
            .input(pane, &self.caller(), Purpose::Prompt)
            .await?;
        turn.keys(keys).await?;
        Ok(())
    }

    /// Types `text` (a probe key, a command for the agent) without pressing Enter.
    async fn type_probe(&self, pane: &PaneId, text: &str) -> Result<(), WorkerError> {
        let mut turn = self
            .terminal
            .input(pane, &self.caller(), Purpose::Prompt)
            .await?;
        turn.text(text).await?;
        Ok(())
    }

    pub(super) async fn mark_ready(&self, row: &WorkerRow) -> Result<WorkerRow, WorkerError> {
        let id = row.id.clone();
        let updated = self
            .terminal
            .db(move |r| r.update_worker(&id, |w| w.input_ready = true))
            .await?
            .unwrap_or_else(|| row.clone());
        self.hub.poke();
        Ok(updated)
    }
}
