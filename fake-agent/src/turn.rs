//! One turn's plan: the steps a scripted turn goes through, in order.

use std::collections::VecDeque;
use std::time::Instant;

use crate::script::Script;

/// The shell command an `[[approval]]` turn asks to run.
pub const APPROVAL_COMMAND: &str = "touch approved.txt";

/// One step of a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A tool call that needs no approval.
    Tool {
        /// The tool (`Read`, `Bash`).
        name: &'static str,
        /// Its argument (a path or a command).
        arg: &'static str,
    },
    /// Busy for this many milliseconds.
    Wait(u64),
    /// A shell command that needs approval; waits for the answer.
    Approval,
    /// A question to the user; waits for the answer.
    Ask,
    /// The process dies here.
    Crash,
    /// The process hangs here (until the terminal hangs up).
    Hang,
    /// The turn ends with an API error.
    ApiError,
    /// The turn ends with its answer.
    Answer,
}

/// What the turn waits for, if anything besides time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiting {
    /// Nothing: steps run as their time comes.
    Nothing,
    /// The approval dialog's answer.
    Approval,
    /// The question's answer.
    Question,
}

/// A running turn.
#[derive(Debug)]
pub struct Turn {
    /// Claude's prompt id, or Codex's turn id.
    pub id: String,
    /// The prompt as submitted (placeholders expanded).
    pub prompt: String,
    /// The markers it carried.
    pub script: Script,
    /// When it started.
    pub started: Instant,
    /// What is left to do.
    pub steps: VecDeque<Step>,
    /// The current wait ends then.
    pub deadline: Option<Instant>,
    /// What it waits for.
    pub waiting: Waiting,
    /// Tool calls made so far (for ids).
    pub tools: u32,
}

impl Turn {
    /// A turn for `prompt` starting at `now`.
    pub fn new(id: String, prompt: String, now: Instant) -> Turn {
        let script = Script::parse(&prompt);
        let steps = plan(&script);
        Turn {
            id,
            prompt,
            script,
            started: now,
            steps,
            deadline: None,
            waiting: Waiting::Nothing,
            tools: 0,
        }
    }

    /// Milliseconds since the turn started.
    pub fn elapsed_ms(&self, now: Instant) -> u128 {
        now.saturating_duration_since(self.started).as_millis()
    }
}

/// The steps of a turn: a read, half the work, a shell call, the other half, then
/// the question, the approval, and the answer (or the error).
pub fn plan(script: &Script) -> VecDeque<Step> {
    let first = script.work_ms / 2;
    let mut steps = VecDeque::from([
        Step::Tool {
            name: "Read",
            arg: "README.md",
        },
        Step::Wait(first),
    ]);
    if script.crash {
        steps.push_back(Step::Crash);
    }
    if script.hang {
        steps.push_back(Step::Hang);
    }
    steps.push_back(Step::Tool {
        name: "Bash",
        arg: "ls",
    });
    steps.push_back(Step::Wait(script.work_ms - first));
    if script.ask {
        steps.push_back(Step::Ask);
    }
    if script.approval {
        steps.push_back(Step::Approval);
    }
    steps.push_back(if script.api_error {
        Step::ApiError
    } else {
        Step::Answer
    });
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_follow_the_markers() {
        let p = plan(&Script::parse("[[approval]] [[api-error]] [[work 10]]"));
        assert_eq!(p.iter().filter(|s| matches!(s, Step::Wait(_))).count(), 2);
        assert_eq!(p.iter().rev().nth(1), Some(&Step::Approval));
        assert_eq!(p.back(), Some(&Step::ApiError));
        let crash = plan(&Script::parse("[[crash]]"));
        assert_eq!(crash[2], Step::Crash);
    }
}
