//! The completion ladder as a pure decision.
//!
//! [`Ladder::step`] looks at a pane as it is now (a [`PaneView`]: its output, prompt
//! marks and exit), at the time since Enter, and at the [`Facts`] it asked for, and
//! answers with a [`Decision`]: a verdict, facts to gather, or a time to look again.
//! It reads no clock, no terminal and no kernel itself, so what it decides depends
//! only on what it was shown: the driver (`completion::driver`) feeds it a live pane, and
//! a recording ([`super::record`]) feeds it a session captured earlier, to the same
//! decisions.

use std::ops::Range;
use std::time::Duration;

use cohort_backends::PromptMark;
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::facts::{Facts, Need};
use super::hints;
use super::{mark_regex, plain_text, Layer, Started, WaitSpec};
use crate::runtime::MarkAt;

/// How long the output must stay still after the shell is seen back.
pub const QUIESCENCE_GRACE: Duration = Duration::from_millis(50);

/// How long the output must stay still before a `D` after typed input is taken as the
/// running command's end (see [`Started::continues`]).
pub const ANSWER_GRACE: Duration = Duration::from_millis(150);

/// What the ladder reads of a pane.
pub trait PaneView {
    /// Bytes of output so far (the position of the next byte).
    fn len(&self) -> u64;
    /// Whether there is no output at all.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Output bytes `[start, end)`, or `None` where they are not kept.
    fn read(&mut self, start: u64, end: u64) -> Option<Vec<u8>>;
    /// Prompt marks, oldest first.
    fn marks(&self) -> &[MarkAt];
    /// Whether the shell announces command starts (`C` marks).
    fn announces_start(&self) -> bool;
    /// Set when the pane's process exited: its status when known.
    fn exited(&self) -> Option<Option<i32>>;
    /// Time from Enter to the last output (zero when the last output came before).
    fn quiet_since(&self) -> Duration;
    /// Whether an interrupt (`C-c`) was pressed into the pane after the Enter at
    /// `enter_offset`.
    fn interrupted(&self, enter_offset: u64) -> bool;
}

/// A verdict as the ladder decides it (the driver adds the time it took).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Whether the command completed.
    pub complete: bool,
    /// Who decided.
    pub layer: Layer,
    /// Exit status, when known.
    pub exit_status: Option<i32>,
    /// What to do next, when not complete.
    pub hint: Option<String>,
    /// Output range holding the command's output (after its echo).
    pub output: Range<u64>,
}

/// What the ladder wants next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The answer.
    Verdict(Outcome),
    /// Gather these facts and step again with them; a change in the pane first
    /// cancels the question (see [`Ladder::changed`]).
    Probe(Need),
    /// Nothing to decide before this time since Enter, unless the pane changes.
    Sleep(Duration),
}

/// Why the ladder asked for facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Asked {
    /// Is the shell back after text typed into a running command ended it?
    Answer,
    /// Quiet long enough: what is in the foreground?
    Foreground,
    /// Timed out: is the shell still starting?
    Starting,
}

/// The ladder's state between steps.
#[derive(Debug)]
pub struct Ladder {
    started: Started,
    spec: WaitSpec,
    sentinel: Option<Regex>,
    /// Output already searched for `until` or the sentinel.
    scanned_to: u64,
    next_foreground_check: Option<Duration>,
    check_backoff: Duration,
    next_answer_check: Duration,
    answer_backoff: Duration,
    unknown_checks: u32,
    /// A verdict the foreground facts gave, standing once the output has stayed still
    /// through a short grace (what the shell printed last may still be on its way).
    settling: Option<Settling>,
    asked: Option<Asked>,
}

/// A verdict waiting out its grace: the output end seen, the verdict, when the grace
/// ends.
#[derive(Debug)]
struct Settling {
    end: u64,
    complete: bool,
    layer: Layer,
    hint: Option<String>,
    until: Duration,
}

/// What one look at the pane shows.
struct Snapshot {
    end: u64,
    output_start: u64,
    exit: Option<(Option<i32>, Range<u64>)>,
    pending: Option<(u64, Vec<u8>)>,
    announced: bool,
    answered: Option<MarkAt>,
    /// The prompt drawn after a line the shell ran nothing of.
    rejected: Option<u64>,
    quiet_since: Duration,
}

impl Ladder {
    /// A ladder for the command `started`, waiting as `spec` says.
    pub fn new(started: Started, spec: WaitSpec) -> Ladder {
        let sentinel = spec.mark.as_deref().map(mark_regex);
        Ladder {
            check_backoff: spec.quiet,
            started,
            spec,
            sentinel,
            scanned_to: 0,
            next_foreground_check: None,
            next_answer_check: Duration::ZERO,
            answer_backoff: Duration::from_millis(5),
            unknown_checks: 0,
            settling: None,
            asked: None,
        }
    }

    /// The command waited for.
    pub fn started(&self) -> &Started {
        &self.started
    }

    /// The pane changed (output, a mark, an exit, a foreground change): a question
    /// asked is dropped, and the quiet window starts over.
    pub fn changed(&mut self) {
        self.check_backoff = self.spec.quiet;
        self.next_foreground_check = None;
        self.settling = None;
        self.asked = None;
    }

    /// One step: the pane as `view` shows it at `now` (since Enter), with the facts
    /// the previous step asked for.
    pub fn step(
        &mut self,
        view: &mut dyn PaneView,
        now: Duration,
        facts: Option<Facts>,
    ) -> Decision {
        let asked = self.asked.take();
        let facts = facts.filter(|_| asked.is_some());
        let snap = self.look(view);
        let verdict = |complete, layer, exit_status, hint: Option<String>, output| {
            Decision::Verdict(Outcome {
                complete,
                layer,
                exit_status,
                hint,
                output,
            })
        };

        if let Some((status, range)) = snap.exit {
            let (layer, status, range) = self.with_sentinel(view, status, range);
            return verdict(true, layer, status, None, range);
        }
        if let Some(prompt) = snap.rejected {
            // The shell drew its prompt again without running anything: it refused the
            // line (a syntax error, a failed history expansion) or found no command in
            // it (a comment). Its message is the output; no status was reported.
            return verdict(
                true,
                Layer::Exit,
                None,
                Some(self.ran_nothing(view, prompt).into()),
                snap.output_start.min(prompt)..prompt,
            );
        }
        // Quiet, the shell back, and the grace over: done, unless output came.
        if let Some(s) = self.settling.take() {
            if now < s.until {
                let until = s.until;
                self.settling = Some(s);
                return Decision::Sleep(until);
            }
            if view.len() == s.end {
                return verdict(s.complete, s.layer, None, s.hint, snap.output_start..s.end);
            }
        }
        if let Some(d) = snap.answered {
            // A `D` that was still on its way when Enter was pressed would look the
            // same, and then the text went to the shell, which runs it at once: only
            // when nothing more comes for a moment, no `C` follows and the shell sits
            // reading its terminal was the text the running command's.
            if now >= (snap.quiet_since + ANSWER_GRACE).max(self.next_answer_check) {
                match (asked, &facts) {
                    (Some(Asked::Answer), Some(facts)) => {
                        let started_again = view
                            .marks()
                            .iter()
                            .any(|m| m.offset > d.offset && m.mark == PromptMark::CommandStart);
                        // Text still in the terminal's input queue was typed ahead
                        // of the shell, not read by the command.
                        let typed_ahead = facts.input_pending.is_some_and(|n| n > 0);
                        if facts.shell_reading() && !started_again && !typed_ahead {
                            let status = d.mark.finished().flatten();
                            let range = snap.output_start.min(d.offset)..d.offset;
                            let (layer, status, range) = self.with_sentinel(view, status, range);
                            return verdict(true, layer, status, None, range);
                        }
                        self.next_answer_check = now + self.answer_backoff;
                        self.answer_backoff = (self.answer_backoff * 2).min(self.spec.quiet);
                    }
                    _ => {
                        self.asked = Some(Asked::Answer);
                        return Decision::Probe(Need::Foreground);
                    }
                }
            }
        }
        if let Some((from, bytes)) = &snap.pending {
            let text = plain_text(bytes);
            if let Some(re) = &self.sentinel {
                if let Some(cap) = re.captures(&text) {
                    let status = cap[1].parse().ok();
                    // The output ends where the sentinel's line (and the blank line
                    // printf puts before it) begins.
                    let needle = format!(
                        "__cohort_mark_{}:",
                        self.spec.mark.as_deref().unwrap_or_default()
                    );
                    let cut = bytes
                        .windows(needle.len())
                        .position(|w| w == needle.as_bytes())
                        .map_or(snap.end, |at| {
                            let line = bytes[..at]
                                .iter()
                                .rposition(|b| *b == b'\n')
                                .map_or(0, |i| i + 1);
                            from + line as u64
                        });
                    return verdict(
                        true,
                        Layer::Mark,
                        status,
                        None,
                        snap.output_start..cut.max(snap.output_start),
                    );
                }
            }
            if let Some(until) = &self.spec.until {
                if until.find(&text) {
                    return verdict(true, Layer::Until, None, None, snap.output_start..snap.end);
                }
            }
            self.scanned_to = snap.end;
        }
        if now >= self.spec.timeout {
            let (until, mark) = (self.spec.until.is_some(), self.spec.mark.is_some());
            if !until && !mark && view.marks().is_empty() {
                // Never a prompt: is the shell still running its startup files?
                match (asked, &facts) {
                    (Some(Asked::Starting), Some(facts)) => {
                        if facts.at_shell && hints::SHELLS.contains(&facts.shell_command.as_str()) {
                            return verdict(
                                false,
                                Layer::Timeout,
                                None,
                                Some(hints::STILL_STARTING.into()),
                                snap.output_start..snap.end,
                            );
                        }
                    }
                    _ => {
                        self.asked = Some(Asked::Starting);
                        return Decision::Probe(Need::Foreground);
                    }
                }
            }
            return verdict(
                false,
                Layer::Timeout,
                None,
                Some(hints::timeout(until, mark).into()),
                snap.output_start..snap.end,
            );
        }

        // Quiet long enough? Then look at the foreground process.
        let quiet_at = snap.quiet_since + self.spec.quiet;
        if now >= quiet_at && self.next_foreground_check.is_none_or(|t| now >= t) {
            let facts = match (asked, facts) {
                (Some(Asked::Foreground), Some(facts)) => facts,
                _ => {
                    self.asked = Some(Asked::Foreground);
                    return Decision::Probe(Need::Foreground);
                }
            };
            if let Some(decision) = self.judge_foreground(view, now, &snap, quiet_at, &facts) {
                return decision;
            }
            self.next_foreground_check = Some(now + self.check_backoff);
            self.check_backoff = (self.check_backoff * 2).min(Duration::from_secs(2));
        }

        let mut wake = self.spec.timeout;
        if snap.answered.is_some() {
            wake = wake.min((snap.quiet_since + ANSWER_GRACE).max(self.next_answer_check));
        }
        if now < quiet_at {
            wake = wake.min(quiet_at);
        } else if let Some(t) = self.next_foreground_check {
            wake = wake.min(t);
        }
        Decision::Sleep(wake)
    }

    /// The foreground check, once the pane has been quiet for the window: a verdict,
    /// a further question, or `None` to look again later.
    fn judge_foreground(
        &mut self,
        view: &mut dyn PaneView,
        now: Duration,
        snap: &Snapshot,
        quiet_at: Duration,
        facts: &Facts,
    ) -> Option<Decision> {
        let range = snap.output_start..snap.end;
        let verdict = |complete, layer, exit_status, hint: Option<String>| {
            Some(Decision::Verdict(Outcome {
                complete,
                layer,
                exit_status,
                hint,
                output: range.clone(),
            }))
        };
        if facts.pane_gone {
            return verdict(false, Layer::Closed, None, Some(hints::CLOSED.into()));
        }
        if facts.dead {
            return verdict(true, Layer::Exit, facts.exit_status, None);
        }
        let has_integration = view.marks().iter().any(|m| m.mark.finished().is_some());
        // The pane's own shell, or a shell started inside it (a nested `bash`), sitting
        // at its prompt: the command is over.
        let shell_back = facts.shell_reading();
        let same_group =
            facts.foreground_pid.is_some() && facts.foreground_pid == self.started.typed_into;
        let waits = self.spec.until.is_none() && self.spec.mark.is_none();
        // A shell that stopped marking its prompts (its hook replaced: a new
        // PROMPT_COMMAND, `exec bash`) is back when it is, with no status.
        let mut lost_hook = false;
        let mut refused = false;
        // Either of those, where the shell has not shown yet that it announces starts.
        let mut unreported = false;
        if shell_back && snap.announced && same_group {
            // The shell that read the command line announced it and has not reported
            // its end, and nothing took the terminal from it. Either it stopped
            // reporting (it replaced itself, or its hook was replaced) and is back at
            // its prompt, or it runs a builtin of its own that reads the terminal
            // (`read -n1`, `select`) and waits for an answer.
            if self.hook_gone(view, facts) {
                lost_hook = true;
            } else if waits
                && (facts.leader_waiting == Some(true) || facts.leader_line_mode == Some(false))
            {
                // The same facts hold for a moment after the command ended, until its
                // `D` arrives: the verdict stands only if nothing comes.
                return Some(self.settle_on_shell_reading(snap.end, now));
            } else {
                return None;
            }
        } else if shell_back
            && !self.started.continues
            && !self.started.typed.is_empty()
            && facts.at_shell
            && silent_since_enter(view.marks(), self.started.enter_offset)
        {
            // The pane's shell reads its terminal, but since Enter it has neither
            // started a command (C) nor drawn its prompt (A), which it does even for an
            // empty line: either it took the line as the start of a longer one and
            // shows its continuation prompt, or it no longer marks. fish draws no
            // continuation prompt, only indentation.
            let continuation = match facts.continuation_prompt() {
                _ if facts.shell_command == "fish" => true,
                Some(shown) => shown,
                None => {
                    self.asked = Some(Asked::Foreground);
                    return Some(Decision::Probe(Need::ForegroundAndScreen));
                }
            };
            if continuation {
                return verdict(false, Layer::Nested, None, Some(hints::CONTINUATION.into()));
            }
            // Back at its prompt with no mark at all: its hook stopped reporting, or it
            // refused the line while reading it (a failed history expansion draws the
            // prompt again without running the hook).
            if !view.announces_start() {
                unreported = true;
            } else if self.hook_gone(view, facts) {
                lost_hook = true;
            } else {
                refused = true;
            }
        }
        if shell_back && (lost_hook || refused || unreported || !(snap.announced && same_group)) {
            if waits && facts.shell_builtin_reading() {
                // Not back at its prompt: the shell reads the terminal without its line
                // editor, so a builtin of a command (`read -n1`) waits for an answer.
                return Some(self.settle_on_shell_reading(snap.end, now));
            }
            // With shell integration the D mark is the answer; allow it a moment.
            if !has_integration || now >= quiet_at + self.spec.quiet * 2 {
                // The shell may have printed its last output a moment ago and the
                // terminal not delivered it yet: the output must stay still for a
                // short grace before the verdict stands.
                let hint = match (lost_hook, refused, unreported) {
                    (true, _, _) => Some(hints::LOST_HOOK),
                    (_, true, _) => Some(self.ran_nothing(view, snap.end)),
                    (_, _, true) => Some(hints::UNREPORTED),
                    _ => None,
                };
                let until = now + QUIESCENCE_GRACE;
                self.settling = Some(Settling {
                    end: snap.end,
                    complete: true,
                    layer: Layer::Quiescence,
                    hint: hint.map(str::to_string),
                    until,
                });
                return Some(Decision::Sleep(until));
            }
        } else if waits {
            // The leader may be waiting on (or gone before) a member that reads the
            // terminal: the pager `git log` started, the `less` at the end of a
            // pipeline. Shells among the members are scripts in progress.
            let leader = facts.leader_waiting;
            let member = match leader {
                Some(true) => None,
                _ => facts.member_waiting.clone(),
            };
            let (name, waiting) = match (leader, member) {
                (Some(true), _) => (facts.foreground_command.clone(), true),
                (_, Some(member)) => (member, true),
                (Some(false), None) => (facts.foreground_command.clone(), false),
                (None, None) => {
                    // Unknown (no `/proc`, or a process caught between states: exiting,
                    // its entry going): the terminal's mode, which every POSIX system
                    // tells, is the fact left. Raw mode is a program reading keys (a
                    // REPL's line editor, a TUI); line mode says nothing, and a quiet
                    // program is still running. With the kernel's facts, look again
                    // before judging.
                    let name = facts.foreground_command.clone();
                    let gone = facts.foreground_pid.is_some() && facts.leader_name.is_none();
                    self.unknown_checks += 1;
                    let judge = !facts.kernel || self.unknown_checks > 2;
                    let waiting = !gone && judge && facts.leader_line_mode == Some(false);
                    (name, waiting)
                }
            };
            if waiting || facts.alternate_screen {
                // What the hint suggests depends on what the screen shows at the cursor.
                let Some(cursor_line) = facts.cursor_line.as_deref() else {
                    self.asked = Some(Asked::Foreground);
                    return Some(Decision::Probe(Need::ForegroundAndScreen));
                };
                let hint = hints::waiting(&name, facts.alternate_screen, cursor_line);
                return verdict(false, Layer::Nested, None, Some(hint));
            }
        }
        None
    }

    /// Whether the shell that read the command stopped reporting its ends: it replaced
    /// itself (its command line changed: `exec sh`), an earlier command already ended
    /// without a report, or this command line replaces the hook (`PROMPT_COMMAND=…`,
    /// `exec …` where command lines cannot be read).
    fn hook_gone(&self, view: &dyn PaneView, facts: &Facts) -> bool {
        let replaced_itself = match (&self.started.typed_into_args, &facts.leader_args) {
            (Some(before), Some(now)) => before != now,
            _ => hints::replaces_shell(&self.started.typed),
        };
        replaced_itself
            || unreported_before(view.marks(), self.started.enter_offset)
            || hints::replaces_prompt_hook(&self.started.typed)
    }

    /// An exit verdict's layer, status and output when a sentinel was appended: the
    /// shell reported the status of the sentinel's `printf`, and the sentinel holds the
    /// command's; its line is not output. Without a sentinel, as the shell reported.
    fn with_sentinel(
        &self,
        view: &mut dyn PaneView,
        status: Option<i32>,
        range: Range<u64>,
    ) -> (Layer, Option<i32>, Range<u64>) {
        let Some(re) = &self.sentinel else {
            return (Layer::Exit, status, range);
        };
        let from = range.end.saturating_sub(64 * 1024).max(range.start);
        let Some(bytes) = view.read(from, range.end) else {
            return (Layer::Exit, None, range);
        };
        let text = String::from_utf8_lossy(&bytes);
        match re.captures_iter(&text).last() {
            Some(cap) => {
                let at = cap.get(0).map_or(0, |m| m.start());
                let line = text[..at].rfind('\n').map_or(0, |i| i + 1);
                let status = cap[1].parse().ok();
                (Layer::Mark, status, range.start..from + line as u64)
            }
            // The sentinel never ran (the line ended the shell, or was refused): the
            // status reported is not the command's.
            None => (Layer::Exit, None, range),
        }
    }

    /// Waits a grace period on "the shell is waiting for input inside the command":
    /// the verdict stands only if no output (a late `D`) comes before it ends.
    fn settle_on_shell_reading(&mut self, end: u64, now: Duration) -> Decision {
        let until = now + QUIESCENCE_GRACE;
        self.settling = Some(Settling {
            end,
            complete: false,
            layer: Layer::Nested,
            hint: Some(hints::SHELL_READS.into()),
            until,
        });
        Decision::Sleep(until)
    }

    /// What the pane shows now, as the ladder reads it.
    fn look(&self, view: &mut dyn PaneView) -> Snapshot {
        let end = view.len();
        let enter = self.started.enter_offset;
        let after: Vec<MarkAt> = view
            .marks()
            .iter()
            .filter(|m| m.offset > enter)
            .copied()
            .collect();
        let start_mark = after
            .iter()
            .find(|m| m.mark == PromptMark::CommandStart)
            .copied();
        let finished = |from: u64| {
            after
                .iter()
                .find(|m| m.offset >= from && m.mark.finished().is_some())
                .copied()
        };
        let finish = match (view.announces_start(), start_mark) {
            (true, Some(c)) => finished(c.offset),
            // A wait on whatever runs now, which started before this process saw it
            // (another server typed it): its end is the next `D`.
            (true, None) if self.started.typed.is_empty() => finished(0),
            (true, None) => None,
            // Not known to announce starts (this process has seen no `C` yet) and typed
            // while a command ran: the first `D` after Enter is that command's end
            // (`answered` below decides whether the text was its answer); this line's
            // own end is the next one.
            (false, _) if self.started.continues => {
                finished(0).and_then(|d| finished(d.offset + 1))
            }
            (false, _) => finished(0),
        };
        // Output begins after the command's C mark, else after the echo line.
        let echo_end = match start_mark {
            Some(c) => Some(c.offset),
            None => echo_end(view, &self.started, end),
        };
        let exit = match finish {
            Some(d) => {
                let status = d.mark.finished().flatten();
                Some((status, echo_end.unwrap_or(enter).min(d.offset)..d.offset))
            }
            None => view
                .exited()
                .map(|status| (status, echo_end.unwrap_or(enter)..end)),
        };
        let output_start = echo_end.unwrap_or(end);
        // New bytes to search for until/mark: from the start of the last line scanned.
        let pending =
            if (self.spec.until.is_some() || self.sentinel.is_some()) && end > output_start {
                let from = self.scanned_to.max(output_start);
                let from = line_start_before(view, from, output_start);
                view.read(from, end).map(|b| (from, b))
            } else {
                None
            };
        // Text typed into a running command: the shell's next `D` with no `C` of its
        // own before it is that command ending.
        let answered = match (self.started.continues, start_mark, exit.is_some()) {
            (true, None, false) => finished(0),
            _ => None,
        };
        // A shell that announces its commands drew its prompt after the line's echo
        // without starting one: it ran nothing. The previous command's prompt can
        // still be arriving after Enter; that one follows its command's `D`, where a
        // prompt drawn again over a refused line follows the prompt it was typed at.
        let rejected = match (start_mark, &exit, echo_end) {
            (None, None, Some(echo))
                if view.announces_start()
                    && !self.started.continues
                    && !self.started.typed.trim().is_empty() =>
            {
                let marks = view.marks();
                marks
                    .iter()
                    .enumerate()
                    .find(|(i, m)| {
                        m.offset > enter
                            && m.offset >= echo
                            && m.mark == PromptMark::PromptStart
                            && i.checked_sub(1)
                                .is_none_or(|p| marks[p].mark.finished().is_none())
                    })
                    .map(|(_, m)| m.offset)
            }
            _ => None,
        };
        Snapshot {
            end,
            output_start,
            exit,
            pending,
            announced: start_mark.is_some(),
            answered,
            rejected,
            quiet_since: view.quiet_since(),
        }
    }
}

/// Whether the last command announced before Enter never reported its end: the
/// shell's hook stopped reporting then.
fn unreported_before(marks: &[MarkAt], enter: u64) -> bool {
    let before = &marks[..marks.partition_point(|m| m.offset <= enter)];
    match before
        .iter()
        .rposition(|m| m.mark == PromptMark::CommandStart)
    {
        Some(c) => !before[c + 1..].iter().any(|m| m.mark.finished().is_some()),
        None => false,
    }
}

/// Whether the pane's shell, which marks its prompts, has marked nothing since Enter.
fn silent_since_enter(marks: &[MarkAt], enter: u64) -> bool {
    let marked_before = marks.iter().any(|m| m.offset <= enter);
    let marked_after = marks.iter().any(|m| m.offset > enter);
    marked_before && !marked_after
}

impl Ladder {
    /// Why the shell ran nothing of the line, up to `end`: an interrupt pressed
    /// before the shell read it dropped it (all the pane showed after Enter is the
    /// line's echo, however the terminal drew the keys before it, and the
    /// interrupt's `^C`), or the shell refused it (its message, a continuation
    /// prompt: it read the line).
    fn ran_nothing(&self, view: &mut dyn PaneView, end: u64) -> &'static str {
        let started = &self.started;
        let typed = started.typed.trim();
        let dropped = !typed.is_empty()
            && view.interrupted(started.enter_offset)
            && view.read(started.enter_offset, end).is_some_and(|after| {
                let shown = plain_text(&after);
                let mut rest = shown
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.ends_with(typed));
                rest.next() == Some("^C") && rest.next().is_none()
            });
        match dropped {
            true => hints::DROPPED,
            false => hints::REJECTED,
        }
    }
}

/// Where the echo of the typed line ends: after the first line that follows Enter when
/// that line is the echo (the Enter's own newline, or the typed text arriving late), at
/// Enter itself when the program did not echo (a password prompt: the first line is
/// already its output). `None` until that line is complete.
fn echo_end(view: &mut dyn PaneView, started: &Started, end: u64) -> Option<u64> {
    let newline = first_newline_after(view, started.enter_offset, end)?;
    let line = view.read(started.enter_offset, newline)?;
    let seen = plain_text(&line);
    let seen = seen.trim();
    if seen.is_empty() || started.typed.contains(seen) {
        Some(newline)
    } else {
        Some(started.enter_offset)
    }
}

/// Offset right after the first `\n` in `[from, end)`.
fn first_newline_after(view: &mut dyn PaneView, from: u64, end: u64) -> Option<u64> {
    let mut pos = from;
    while pos < end {
        let chunk_end = (pos + 64 * 1024).min(end);
        let bytes = view.read(pos, chunk_end)?;
        if let Some(i) = bytes.iter().position(|b| *b == b'\n') {
            return Some(pos + i as u64 + 1);
        }
        pos = chunk_end;
    }
    None
}

/// The start of the line containing `offset`, not before `floor`.
fn line_start_before(view: &mut dyn PaneView, offset: u64, floor: u64) -> u64 {
    if offset <= floor {
        return floor;
    }
    let from = offset.saturating_sub(4096).max(floor);
    match view.read(from, offset) {
        Some(bytes) => match bytes.iter().rposition(|b| *b == b'\n') {
            Some(i) => from + i as u64 + 1,
            None => from,
        },
        None => floor,
    }
}
