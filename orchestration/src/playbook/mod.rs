//! Playbooks: a whole workflow in one call.
//!
//! A playbook optionally opens sessions (a layout with names, agents, teams and
//! commands), then runs its steps in order: each step types commands or messages
//! into targets (sessions, agents, teams, paths), all at once or one after another,
//! and waits for each as it says (the exit status, a pattern, the agent becoming
//! idle, or not at all), with a timeout. The first failing step stops the playbook
//! unless the step says `continue_on_error` or the playbook `stop_on_error: false`.
//! Then an optional cascade of messages, then reads. The report has every step's
//! result per target, with its verdict. A playbook can be cancelled: the wait ends at
//! once, and what was typed keeps running.
//!
//! [`spec`] reads and checks a playbook (from JSON or a TOML/JSON file); [`run`]
//! runs it.

pub mod run;
pub mod spec;

use cohort_terminal::completion::Verdict;
use cohort_terminal::Delivery;

pub use spec::{CascadeSpec, Item, LayoutSpec, Playbook, ReadsSpec, Step, StepWait};

/// One target's result in a step.
#[derive(Clone, Debug)]
pub struct TargetResult {
    /// The target as resolved (agent or session name).
    pub target: String,
    /// Its session (empty when the target names none).
    pub session: String,
    /// Whether it succeeded: typed, and (when waited for) complete with exit 0, the
    /// pattern seen, or the agent idle again.
    pub ok: bool,
    /// The completion verdict, for commands waited for on the ladder.
    pub verdict: Option<Verdict>,
    /// What happened, in words (the verdict, "sent", "idle: …", the error).
    pub summary: String,
    /// The command's output, reduced (its last lines).
    pub output: Option<String>,
}

/// One step's result.
#[derive(Clone, Debug)]
pub struct StepReport {
    /// Its label (`step 2 ("build")`).
    pub label: String,
    /// Ran, or skipped after an earlier failure or a cancel.
    pub ran: bool,
    /// Every target succeeded.
    pub ok: bool,
    /// Per target, in order.
    pub results: Vec<TargetResult>,
    /// Milliseconds it took.
    pub elapsed_ms: u64,
}

/// A playbook's result.
#[derive(Clone, Debug, Default)]
pub struct PlaybookReport {
    /// Its name.
    pub name: Option<String>,
    /// Every step ran and succeeded (or failed with `continue_on_error`), and the
    /// layout, cascade and reads worked.
    pub ok: bool,
    /// Sessions the layout opened.
    pub opened: Vec<String>,
    /// Per step, in order (skipped ones too).
    pub steps: Vec<StepReport>,
    /// The step the playbook stopped at.
    pub stopped_at: Option<String>,
    /// It was cancelled.
    pub cancelled: bool,
    /// What the cascade sent.
    pub cascade: Vec<Delivery>,
    /// Why the cascade was not sent, when the playbook has one and it was not.
    pub cascade_skipped: Option<String>,
    /// What the reads found.
    pub reads: Vec<Delivery>,
    /// Why the layout, cascade or reads failed.
    pub error: Option<String>,
}

impl PlaybookReport {
    /// One line: ok or failed, how many steps were ok, where it stopped, whether it
    /// was cancelled.
    pub fn summary(&self) -> String {
        let ran = self.steps.iter().filter(|s| s.ran).count();
        let good = self.steps.iter().filter(|s| s.ran && s.ok).count();
        format!(
            "{}: {good} of {} steps ok{}{}",
            if self.ok { "ok" } else { "failed" },
            self.steps.len(),
            self.stopped_at
                .as_ref()
                .map(|s| format!(", stopped at {s}"))
                .unwrap_or_default(),
            if self.cancelled {
                format!(" (cancelled after {ran} steps; commands keep running)")
            } else {
                String::new()
            }
        )
    }
}

/// Where a playbook is, for progress notifications.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Steps done.
    pub done: usize,
    /// Steps in all.
    pub total: usize,
    /// What is happening, in words.
    pub message: String,
}
