//! Prompts that are really submitted.
//!
//! The text goes in as one bracketed paste; cohort waits until the TUI has drawn it
//! and gone quiet, presses Enter, and then **verifies**: the agent's
//! `UserPromptSubmit` hook fired (or its transcript shows the prompt, or the composer
//! emptied). When the Enter was lost (an Enter inside a paste burst becomes a newline
//! in the composer), it removes that newline and presses Enter again — only Enter,
//! never the text — a bounded number of times, then fails with what the screen
//! shows. A prompt starting with `/` or `!` is not taken as a slash or shell command
//! unless asked: it gets an invisible zero-width space in front.

use std::time::Duration;

use cohort_backends::{Key, KeyCode, PaneInfo};

use crate::registry::WorkerTables;
use crate::Workers;
use crate::{
    error::WorkerError,
    events::{fnv1a64, now_ms},
    observe::Observation,
    registry::WorkerRow,
};
use cohort_terminal::{sanitize, Purpose, TerminalError};

/// What a submission did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// When Enter took (Unix ms).
    pub at_ms: i64,
    /// How many times Enter was pressed.
    pub enters: u32,
    /// What proved it: `hook`, `transcript` or `screen` (`unverified` for a program
    /// whose screen cohort cannot read).
    pub proof: &'static str,
    /// Set when the agent received something other than what was sent.
    pub warning: Option<String>,
}

/// The zero-width space that keeps a leading `/` or `!` from being a command.
pub const COMMAND_GUARD: char = '\u{200b}';

/// The text as it is pasted: escape sequences removed, line ends as `\n`, no
/// trailing newlines (Enter follows), and a leading `/` or `!` guarded unless
/// `command`.
pub fn prepare(text: &str, command: bool) -> Result<String, String> {
    let mut text = sanitize::sanitize_input(text);
    while text.ends_with('\n') {
        text.pop();
    }
    if text.trim().is_empty() {
        return Err("the message is empty: give the text to submit".into());
    }
    if !command && text.trim_start().starts_with(['/', '!']) {
        text.insert(0, COMMAND_GUARD);
    }
    Ok(text)
}

/// How long one Enter may take to show its effect.
const PROOF_WINDOW: Duration = Duration::from_millis(1500);

/// The most a paste waits to be drawn.
const DRAW_LIMIT: Duration = Duration::from_secs(3);

impl Workers {
    /// Submits `text` to the worker's agent and verifies it went in. The worker must
    /// take prompts (`ready` or `idle`) unless `busy_ok` (the agent queues it then).
    /// A draft in the composer is never typed over.
    pub async fn submit_prompt(
        &self,
        row: &WorkerRow,
        text: &str,
        command: bool,
        busy_ok: bool,
    ) -> Result<Submitted, WorkerError> {
        let not = |why: String| WorkerError::NotSubmitted {
            worker: row.name.clone(),
            why,
        };
        let text = prepare(text, command).map_err(WorkerError::Invalid)?;
        if text.len() > cohort_terminal::input::TEXT_MAX {
            return Err(WorkerError::Invalid(format!(
                "the message is {} bytes; at most 1 MiB is submitted at once: write it to a file in the worktree and ask the worker to read it",
                text.len()
            )));
        }
        let kind = row.agent;
        let readable = kind != crate::agent::AgentKind::Custom;
        let mut seen = self.observe(row, true).await?;
        if readable
            && seen
                .screen
                .as_ref()
                .is_none_or(|s| s.composer.is_none() && s.dialog.is_none())
        {
            // Mid-repaint, or a frame cohort does not know: look until the composer
            // (or a dialog) shows; nothing is typed into a screen cohort cannot read.
            seen = self
                .await_composer(row, Observation::legible, DRAW_LIMIT)
                .await?;
        }
        let Some(pane) = seen
            .pane
            .clone()
            .filter(|_| seen.assessment.state.name() != "exited")
        else {
            return Err(not(format!(
                "its agent is not running ({})",
                seen.assessment.reason
            )));
        };
        if !busy_ok && !seen.assessment.state.takes_prompts() {
            return Err(not(format!(
                "it is {} ({}); hold the message with when: \"idle\", or send it now with when: \"now\"",
                seen.assessment.state, seen.assessment.reason
            )));
        }
        if let Some(draft) = seen.screen.as_ref().and_then(|s| s.draft()) {
            return Err(WorkerError::Draft {
                worker: row.name.clone(),
                draft: draft.chars().take(60).collect(),
            });
        }
        if let Some(dialog) = seen.screen.as_ref().and_then(|s| s.dialog.clone()) {
            return Err(not(format!(
                "the screen shows {}: answer it first",
                dialog.describe()
            )));
        }
        if readable && seen.screen.as_ref().is_none_or(|s| s.composer.is_none()) {
            // Nothing is typed into a frame cohort does not know.
            return Err(not(
                "its composer is not on the screen (an unknown frame): read its screen, and send again".into(),
            ));
        }
        let mut turn = self
            .terminal
            .input(&pane.id, &self.caller(), Purpose::Prompt)
            .await
            .map_err(|e| match e {
                TerminalError::Busy { reason, .. } => not(format!(
                    "its pane's input is held by another cohort process ({reason})"
                )),
                other => other.into(),
            })?;
        let before = turn.journal_len();
        turn.paste(&text).await?;
        // The TUI draws the paste (a collapsed placeholder for a long one); Enter waits
        // until it has and the screen has been quiet a moment.
        turn.settle_after_echo(before, Duration::from_millis(100), DRAW_LIMIT)
            .await;
        if !readable {
            // A program whose screen cohort cannot read (a custom command): Enter
            // once, after the paste settled; nothing on the screen can prove more.
            let at = now_ms();
            turn.keys(&[Key::ENTER]).await?;
            let id = row.id.clone();
            self.terminal
                .db(move |r| r.update_worker(&id, |w| w.last_prompt_ms = Some(at)))
                .await?;
            self.hub.poke();
            return Ok(Submitted {
                at_ms: at,
                enters: 1,
                proof: "unverified",
                warning: None,
            });
        }
        let drawn = self
            .await_composer(row, composer_holds_text, DRAW_LIMIT)
            .await?;
        if !composer_holds_text(&drawn) {
            let tail = self.screen_tail(&pane.id, 4).await;
            return Err(not(format!(
                "the paste never showed in the composer (the agent's input is not taking keys, or its frame changed); the screen shows {}, ending with: {tail}; Enter was not pressed",
                describe_frame(&drawn)
            )));
        }
        let (attempts, patience) = {
            let settings = self.hub.settings();
            (settings.enter_attempts.max(1), settings.enter_patience)
        };
        let pressing = tokio::time::Instant::now();
        let drawn_text = drawn
            .screen
            .as_ref()
            .and_then(|s| s.composer.as_ref())
            .map(|c| c.text.clone())
            .unwrap_or_default();
        let mut enters = 0;
        let mut last_enter = now_ms();
        let mut last = drawn;
        let mut proven: Option<(Observation, i64, &'static str)> = None;
        // Quick presses first (a paste burst that swallowed Enter), then slower ones
        // for as long as the agent's patience lasts: a fresh TUI may draw its
        // composer well before Enter does anything. Each press goes only into a
        // composer that still holds the prompt.
        while enters < attempts || pressing.elapsed() < patience {
            if enters > 0 {
                // The agent still counts the paste as a burst: give it longer each
                // time (100 ms, 200 ms, 400 ms… up to 3.2 s), then take out the
                // newline a lost Enter left, so the prompt submitted is exactly what
                // was pasted.
                tokio::time::sleep(Duration::from_millis(100 << (enters - 1).min(5))).await;
                // The screen as it is now, not as it was when the wait gave up.
                let now = self.observe(row, true).await?;
                if let Some(proof) = submitted(&now, last_enter) {
                    proven = Some((now, last_enter, proof));
                    break;
                }
                if !composer_holds_text(&now) {
                    // A menu or a dialog took the composer's place (a CLI that drew
                    // its composer a moment before its sign-in page): an Enter
                    // there would choose something. Nothing more is pressed.
                    return Err(not(frame_changed(enters, &now)));
                }
                let grew = |o: &Observation| {
                    o.screen
                        .as_ref()
                        .and_then(|s| s.composer.as_ref())
                        .is_some_and(|c| c.trailing_blank || c.text == format!("{drawn_text}\n"))
                };
                if grew(&now) || grew(&last) {
                    turn.keys(&[Key::plain(KeyCode::Backspace)]).await?;
                }
                turn.settle(Duration::from_millis(150), Duration::from_secs(1))
                    .await;
                // A last look: the frame may have changed while it settled.
                let before_enter = self.observe(row, true).await?;
                if let Some(proof) = submitted(&before_enter, last_enter) {
                    proven = Some((before_enter, last_enter, proof));
                    break;
                }
                if !composer_holds_text(&before_enter) {
                    return Err(not(frame_changed(enters, &before_enter)));
                }
            }
            let at = now_ms();
            last_enter = at;
            turn.keys(&[Key::ENTER]).await?;
            enters += 1;
            let outcome = self
                .await_composer(
                    row,
                    |o| submitted(o, at).is_some() || newline_taken(o),
                    PROOF_WINDOW,
                )
                .await?;
            if let Some(proof) = submitted(&outcome, at) {
                proven = Some((outcome, at, proof));
                break;
            }
            last = outcome;
        }
        if let Some((outcome, at, proof)) = proven {
            {
                let warning = received_other(&outcome, at, &text);
                if composer_holds_text(&outcome) {
                    // The agent reported the prompt before repainting (its hooks run
                    // first): let the screen catch up, so the next look sees no draft.
                    let _ = self
                        .await_composer(row, |o| !composer_holds_text(o), Duration::from_secs(1))
                        .await;
                }
                let (id, name) = (row.id.clone(), row.name.clone());
                self.terminal
                    .db(move |r| r.update_worker(&id, |w| w.last_prompt_ms = Some(at)))
                    .await?;
                self.hub.poke();
                tracing::debug!(target: "cohort::workers", worker = %name, enters, proof, "prompt submitted");
                return Ok(Submitted {
                    at_ms: at,
                    enters,
                    proof,
                    warning,
                });
            }
        }
        let shown = last
            .screen
            .as_ref()
            .and_then(|s| s.composer.as_ref())
            .map(|c| c.text.chars().take(80).collect::<String>())
            .unwrap_or_default();
        // Left there, the text would go out with the next prompt: take it back.
        let taken_back = self.clear_composer(row, &mut turn).await.unwrap_or(false);
        Err(not(format!(
            "Enter was pressed {enters} times over {} s and the prompt stayed in the composer ({shown:?}); {}",
            pressing.elapsed().as_secs(),
            if taken_back {
                "it was taken back out, so nothing of it goes with a later prompt"
            } else {
                "it could not be taken back out: read the worker's screen before sending again"
            }
        )))
    }

    /// Empties the composer with Backspace, checked on the screen: as many presses
    /// as its text has characters (a collapsed paste goes with the first), a few
    /// rounds at most. Presses nothing into a frame that is not a composer. Returns
    /// whether the composer shows empty after.
    pub(crate) async fn clear_composer(
        &self,
        row: &WorkerRow,
        turn: &mut cohort_terminal::InputTurn,
    ) -> Result<bool, WorkerError> {
        let emptied = |o: &Observation| {
            o.screen
                .as_ref()
                .and_then(|s| s.composer.as_ref())
                .is_some_and(|c| c.empty && !c.placeholder)
        };
        for _ in 0..3 {
            let seen = self.observe(row, true).await?;
            let Some(composer) = seen.screen.as_ref().and_then(|s| s.composer.as_ref()) else {
                return Ok(false);
            };
            if emptied(&seen) {
                return Ok(true);
            }
            let presses = composer.text.chars().count().clamp(1, 1024);
            turn.keys(&vec![Key::plain(KeyCode::Backspace); presses])
                .await?;
            if emptied(
                &self
                    .await_composer(row, emptied, Duration::from_secs(1))
                    .await?,
            ) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Observes the worker until `done` holds or `limit` passes, waking on its
    /// output and its hooks; returns the last observation.
    pub(crate) async fn await_composer(
        &self,
        row: &WorkerRow,
        done: impl Fn(&Observation) -> bool,
        limit: Duration,
    ) -> Result<Observation, WorkerError> {
        let deadline = tokio::time::Instant::now() + limit;
        let mut wakes = self.hub.wakes();
        let pane: Option<PaneInfo> = self.worker_pane(row).await?;
        let mut output = pane.as_ref().map(|p| self.terminal.pane_changes(&p.id));
        loop {
            wakes.borrow_and_update();
            if let Some(o) = output.as_mut() {
                o.borrow_and_update();
            }
            let seen = self.observe(row, true).await?;
            if done(&seen) || tokio::time::Instant::now() >= deadline {
                return Ok(seen);
            }
            let tick = tokio::time::Instant::now() + Duration::from_millis(40);
            tokio::select! {
                _ = wakes.changed() => {}
                _ = async { match output.as_mut() { Some(o) => { let _ = o.changed().await; } None => std::future::pending().await } } => {}
                _ = tokio::time::sleep_until(tick.min(deadline)) => {}
            }
        }
    }
}

/// Why pressing stopped: the frame is no composer holding the prompt any more.
fn frame_changed(enters: u32, o: &Observation) -> String {
    format!(
        "after Enter was pressed {enters} time(s) the screen shows {} and not the prompt in a composer; no more keys were pressed",
        describe_frame(o)
    )
}

/// What a frame shows, in words, for an error.
pub(crate) fn describe_frame(o: &Observation) -> String {
    match o.screen.as_ref() {
        Some(s) => match (&s.dialog, &s.composer) {
            (Some(d), _) => d.describe(),
            (None, Some(c)) if c.empty => "an empty composer".into(),
            (None, Some(_)) => "a composer with text in it".into(),
            (None, None) => "a frame cohort does not know (no composer, no dialog)".into(),
        },
        None => "nothing readable".into(),
    }
}

/// The composer shows the pasted text (or its placeholder).
fn composer_holds_text(o: &Observation) -> bool {
    o.screen
        .as_ref()
        .and_then(|s| s.composer.as_ref())
        .is_some_and(|c| !c.empty)
}

/// The Enter went in as a newline (the composer now ends with an empty line).
fn newline_taken(o: &Observation) -> bool {
    o.screen
        .as_ref()
        .and_then(|s| s.composer.as_ref())
        .is_some_and(|c| c.trailing_blank)
}

/// What proves the prompt went in after `at`: the agent's report of a new turn, or
/// its composer emptied (nothing left, no placeholder).
fn submitted(o: &Observation, at: i64) -> Option<&'static str> {
    if o.hook.prompts.iter().any(|(t, _, _)| *t >= at) {
        return Some("hook");
    }
    if o.turn_started_ms.is_some_and(|t| t >= at) {
        return Some("transcript");
    }
    let screen = o.screen.as_ref()?;
    let composer = screen.composer.as_ref()?;
    (composer.empty && !composer.placeholder).then_some("screen")
}

/// A warning when the agent's hook saw a prompt other than the one sent.
fn received_other(o: &Observation, at: i64, sent: &str) -> Option<String> {
    let (_, len, fnv) = o.hook.prompts.iter().find(|(t, _, _)| *t >= at)?;
    let ours = format!("{:016x}", fnv1a64(sent.as_bytes()));
    (*fnv != ours).then(|| {
        format!(
            "the agent received {len} bytes (digest {fnv}), not the {} bytes sent (digest {ours})",
            sent.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_prepared_for_the_composer() {
        assert_eq!(prepare("fix it\n\n", false).unwrap(), "fix it");
        assert_eq!(prepare("a\r\nb\x1b[31m!\x1b[0m", false).unwrap(), "a\nb!");
        assert_eq!(
            prepare("/etc/hosts is wrong", false).unwrap(),
            "\u{200b}/etc/hosts is wrong"
        );
        assert_eq!(prepare("/compact", true).unwrap(), "/compact");
        assert_eq!(prepare("  !ls", false).unwrap(), "\u{200b}  !ls");
        assert!(prepare("\n \n", false).is_err());
    }
}
