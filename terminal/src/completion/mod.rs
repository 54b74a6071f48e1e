//! The completion ladder: is the command done, and who says so?
//!
//! After cohort presses Enter, [`wait`] answers with a [`Verdict`] naming the layer
//! that decided:
//!
//! 1. **exit**: the shell's OSC 133 `D;<status>` mark for this command (after its
//!    `C` mark when the shell announces starts); for text typed into a command still
//!    running (an answer, `exit()` to a REPL), that command's `D`; or the pane's
//!    process exiting.
//! 2. **mark**: for nested shells (ssh, `docker exec`), a sentinel cohort appended to
//!    the command, answered by the remote shell with the exit status. The typed text
//!    spells the sentinel with `printf` directives, so its echo never matches.
//! 3. **until**: a literal (or regex) in the output produced after the command's
//!    echo, so the typed text itself never matches.
//! 4. **quiescence**: no output for the quiet window *and* the shell is the
//!    foreground process again.
//! 5. **nested**: quiet, and something waits for input that will not finish by itself:
//!    a program in the foreground (a REPL, ssh, an editor, a pager behind a pipeline) or
//!    the shell's own `read` inside the command; nothing else was asked: not complete,
//!    with a hint saying how to go on. Never a false "done".
//! 6. **timeout**: not complete; a verdict, not an error.
//!
//! The ladder itself is a pure decision ([`ladder`]): shown the pane's output, marks
//! and exit, the time since Enter and the [`facts`] it asked for (the pane's state,
//! the kernel's view of the foreground process), it answers with a verdict, a
//! question, or a time to look again. The driver ([`wait`]) shows it the live pane and
//! sleeps on the pane's change channel (output, marks, exits, foreground changes) and
//! on the times the ladder names: there is no fixed polling interval. Every wait can
//! be recorded and replayed through the ladder ([`record`]).

mod driver;
pub mod facts;
pub mod hints;
pub mod ladder;
pub mod record;

use std::ops::Range;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cohort_backends::PromptMark;
use regex::Regex;
use serde::{Deserialize, Serialize};

pub use driver::{verdict_word, wait};

/// Which rung of the ladder decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// The shell reported the exit status, or the pane's process exited.
    Exit,
    /// The appended sentinel came back with the exit status.
    Mark,
    /// The `until` pattern appeared.
    Until,
    /// Output stopped and the shell is in the foreground again.
    Quiescence,
    /// A program is waiting for input in the foreground (not complete).
    Nested,
    /// Time ran out (not complete).
    Timeout,
    /// The session was closed (its pane is gone) before the command finished (not
    /// complete).
    Closed,
}

impl Layer {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Exit => "exit",
            Layer::Mark => "mark",
            Layer::Until => "until",
            Layer::Quiescence => "quiescence",
            Layer::Nested => "nested",
            Layer::Timeout => "timeout",
            Layer::Closed => "closed",
        }
    }
}

/// The answer to "is it done?".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the command completed.
    pub complete: bool,
    /// Who decided.
    pub layer: Layer,
    /// Exit status, when known.
    pub exit_status: Option<i32>,
    /// Time from Enter to the verdict.
    pub elapsed: Duration,
    /// What to do next, when not complete.
    pub hint: Option<String>,
    /// Journal range holding the command's output (after its echo).
    pub output: Range<u64>,
}

impl Verdict {
    /// One phrase: `complete (exit 0, exit layer)`, `not complete (timeout after 1.0 s)`.
    pub fn describe(&self) -> String {
        let status = self
            .exit_status
            .map(|s| format!("exit {s}, "))
            .unwrap_or_default();
        if self.complete {
            format!(
                "complete ({status}{} layer, {:.0} ms)",
                self.layer.as_str(),
                self.elapsed.as_secs_f64() * 1000.0
            )
        } else {
            format!(
                "not complete ({}, after {:.1} s)",
                self.layer.as_str(),
                self.elapsed.as_secs_f64()
            )
        }
    }
}

/// A pattern to wait for.
#[derive(Clone, Debug)]
pub enum Until {
    /// Literal text.
    Literal(String),
    /// A regular expression.
    Regex(Regex),
}

impl Until {
    /// Builds a pattern; `regex` selects regular-expression syntax.
    pub fn new(pattern: &str, regex: bool) -> Result<Until, String> {
        if pattern.is_empty() {
            return Err("`until` is empty: give the text to wait for, e.g. \">>> \"".into());
        }
        if regex {
            super::pattern::compile("until", pattern)
                .map(Until::Regex)
                .map_err(|e| format!("{e}; pass regex: false to match it literally"))
        } else {
            super::pattern::check_length("until", pattern)?;
            Ok(Until::Literal(pattern.to_string()))
        }
    }

    /// Whether `text` holds a match.
    pub fn find(&self, text: &str) -> bool {
        match self {
            Until::Literal(s) => text.contains(s.as_str()),
            Until::Regex(r) => r.is_match(text),
        }
    }
}

/// What to wait for.
#[derive(Clone, Debug)]
pub struct WaitSpec {
    /// Give up after this long.
    pub timeout: Duration,
    /// Wait for this pattern.
    pub until: Option<Until>,
    /// The sentinel nonce when the command carries a mark (see [`mark_suffix`]).
    pub mark: Option<String>,
    /// Quiet window for the quiescence and nested layers.
    pub quiet: Duration,
    /// Record the wait to this file (see [`record`]).
    pub record: Option<PathBuf>,
}

impl Default for WaitSpec {
    fn default() -> Self {
        WaitSpec {
            timeout: Duration::from_secs(30),
            until: None,
            mark: None,
            quiet: Duration::from_millis(500),
            record: None,
        }
    }
}

/// Where the command started.
#[derive(Clone, Debug)]
pub struct Started {
    /// Journal offset when Enter was pressed.
    pub enter_offset: u64,
    /// When Enter was pressed.
    pub at: Instant,
    /// The text went to a command the shell was still running (an answer to its
    /// question, `exit()` to its REPL), not to the shell.
    pub continues: bool,
    /// The foreground process group that read the line (the shell at its prompt).
    pub typed_into: Option<u32>,
    /// That process's command line then, to tell when it replaced itself (`exec sh`).
    pub typed_into_args: Option<String>,
    /// The text typed, to tell its echo from the command's output.
    pub typed: String,
    /// The nonce of the sentinel appended to it, when one was.
    pub mark: Option<String>,
}

impl Started {
    /// The wait for `command`, whose Enter was pressed `at`.
    pub fn after(command: &super::runtime::CommandAt, at: Instant) -> Started {
        Started {
            enter_offset: command.offset,
            at,
            continues: command.continues,
            typed_into: command.typed_into,
            typed_into_args: command.typed_into_args.clone(),
            typed: command.text.clone(),
            mark: command.mark.clone(),
        }
    }

    /// The wait for the pane's latest command, from `at`: the last one typed here, or
    /// one that another process (another cohort, a human) started after it; with
    /// nothing typed here and no start announced, whatever follows the latest prompt.
    pub fn latest(data: &super::runtime::PaneData, at: Instant) -> Started {
        let last = data.commands.last().cloned().unwrap_or_default();
        // Where the last command typed here ended (nothing typed: the start).
        let ours_ended = if data.commands.is_empty() {
            Some(0)
        } else {
            data.marks
                .iter()
                .find(|m| m.offset > last.offset && m.mark.finished().is_some())
                .map(|m| m.offset)
        };
        let later_start = data
            .marks
            .iter()
            .rev()
            .find(|m| m.mark == PromptMark::CommandStart)
            .map(|m| m.offset)
            .filter(|c| ours_ended.is_some_and(|end| *c >= end));
        match later_start {
            Some(c) => Started {
                enter_offset: c.saturating_sub(1),
                ..Started::after(&Default::default(), at)
            },
            None if data.commands.is_empty() => Started {
                enter_offset: data.marks.last().map_or(0, |m| m.offset),
                ..Started::after(&last, at)
            },
            None => Started::after(&last, at),
        }
    }
}

/// The text appended to a command for the mark layer: `; printf …` printing
/// `__cohort_mark_<nonce>:<status>__`. The `%s` directives keep the typed text from
/// ever containing the sentinel itself.
pub fn mark_suffix(nonce: &str) -> String {
    format!("; printf '\\n__cohort_mark_%s:%s__\\n' {nonce} \"$?\"")
}

/// The shell variable a nonce handed over with echo off is read into (see
/// [`handover_line`]).
const HANDED_NONCE: &str = "__cohort_n";

/// The line that has a shell read the sentinel's nonce with its terminal's echo off,
/// so the nonce is never on screen, where a program could read it and print the
/// sentinel itself. It prints `__cohort_ready_<id>__` once echo is off (the `%s`
/// keeps that text out of the line's own echo); the nonce is typed after it, as a line
/// of its own. A leading space keeps the line out of the shell's history.
pub fn handover_line(id: &str) -> String {
    format!(
        " stty -echo; printf '\\n__cohort_ready_%s__\\n' {id}; IFS= read -r {HANDED_NONCE}; stty echo"
    )
}

/// What the shell prints once it reads the handed-over nonce (see [`handover_line`]).
pub fn handover_ready(id: &str) -> String {
    format!("__cohort_ready_{id}__")
}

/// [`mark_suffix`] for a nonce handed over with [`handover_line`]: the line names the
/// shell variable, not the nonce.
pub fn handed_mark_suffix() -> String {
    format!("; printf '\\n__cohort_mark_%s:%s__\\n' \"${HANDED_NONCE}\" \"$?\"")
}

pub(crate) fn mark_regex(nonce: &str) -> Regex {
    Regex::new(&format!(
        r"__cohort_mark_{}:(-?\d+)__",
        regex::escape(nonce)
    ))
    .expect("valid sentinel regex")
}

/// Strips escape sequences for matching (`until`, sentinels).
pub fn plain_text(bytes: &[u8]) -> String {
    let stripped = strip_ansi_escapes::strip(bytes);
    String::from_utf8_lossy(&stripped).replace('\r', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_never_matches_its_own_echo() {
        let nonce = "k3x9";
        let typed = format!("false{}", mark_suffix(nonce));
        assert!(!mark_regex(nonce).is_match(&typed));
        let answered = "\n__cohort_mark_k3x9:1__\n";
        assert_eq!(&mark_regex(nonce).captures(answered).unwrap()[1], "1");
    }

    #[test]
    fn until_patterns() {
        assert!(Until::new("", false).is_err());
        assert!(Until::new("(", true).is_err());
        assert!(Until::new(">>> ", false).unwrap().find("Python\n>>> "));
        assert!(Until::new(r"^\d+ passed", true).unwrap().find("3 passed"));
    }

    #[test]
    fn plain_text_drops_escapes() {
        assert_eq!(
            plain_text(b"\x1b[?2004h>>> \x1b[31mx\x1b[0m\r\n"),
            ">>> x\n"
        );
    }
}
