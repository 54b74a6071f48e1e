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
//! Waiting sleeps on the pane's change channel (output, marks, exits, foreground
//! changes) and on the quiet-window deadline; there is no fixed polling interval.

use std::ops::Range;
use std::time::{Duration, Instant};

use cohort_backends::{PaneId, PromptMark, TerminalBackend};
use regex::Regex;
use serde::Serialize;

use super::runtime::PaneRuntime;

/// Which rung of the ladder decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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
            Regex::new(pattern).map(Until::Regex).map_err(|e| {
                format!(
                    "`until` is not a valid regex ({e}); pass regex: false to match it literally"
                )
            })
        } else {
            Ok(Until::Literal(pattern.to_string()))
        }
    }

    fn find(&self, text: &str) -> bool {
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
}

impl Default for WaitSpec {
    fn default() -> Self {
        WaitSpec {
            timeout: Duration::from_secs(30),
            until: None,
            mark: None,
            quiet: Duration::from_millis(500),
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

fn mark_regex(nonce: &str) -> Regex {
    Regex::new(&format!(
        r"__cohort_mark_{}:(-?\d+)__",
        regex::escape(nonce)
    ))
    .expect("valid sentinel regex")
}

/// How long the output must stay still after the shell is seen back.
const QUIESCENCE_GRACE: Duration = Duration::from_millis(50);

/// How long the output must stay still before a `D` after typed input is taken as the
/// running command's end (see [`Started::continues`]).
const ANSWER_GRACE: Duration = Duration::from_millis(150);

/// Shells: in the foreground and waiting, the command they ran is over.
const SHELLS: &[&str] = &[
    "bash", "zsh", "fish", "sh", "dash", "ksh", "mksh", "tcsh", "csh", "ash", "busybox",
];

/// Pagers: they wait for a key at the end of every screenful.
const PAGERS: &[&str] = &["less", "more", "most", "pg"];

/// Programs that wait for input when quiet: REPLs, remote shells, editors, pagers.
const INTERACTIVE: &[&str] = &[
    "python",
    "python3",
    "python2",
    "ipython",
    "node",
    "deno",
    "bun",
    "irb",
    "pry",
    "ruby",
    "php",
    "ghci",
    "R",
    "julia",
    "lua",
    "erl",
    "iex",
    "scala",
    "sbt",
    "clojure",
    "ssh",
    "mosh",
    "mosh-client",
    "telnet",
    "psql",
    "mysql",
    "mariadb",
    "sqlite3",
    "redis-cli",
    "mongo",
    "mongosh",
    "bash",
    "zsh",
    "sh",
    "dash",
    "fish",
    "ksh",
    "docker",
    "kubectl",
    "claude",
    "codex",
    "aider",
    "gemini",
    "less",
    "more",
    "man",
    "vi",
    "vim",
    "nvim",
    "nano",
    "emacs",
    "top",
    "htop",
    "watch",
    "tail",
    "gdb",
    "lldb",
    "pdb",
    "ftp",
    "sftp",
];

use cohort_backends::{group_members_waiting, waiting_for_input};

/// Strips escape sequences for matching (`until`, sentinels).
pub fn plain_text(bytes: &[u8]) -> String {
    let stripped = strip_ansi_escapes::strip(bytes);
    String::from_utf8_lossy(&stripped).replace('\r', "")
}

/// Waits for the command started at `started` to complete, per the ladder.
pub async fn wait(
    runtime: &PaneRuntime,
    backend: &dyn TerminalBackend,
    pane: &PaneId,
    started: &Started,
    spec: &WaitSpec,
) -> Verdict {
    let deadline = started.at + spec.timeout;
    let mut changes = runtime.watch();
    let sentinel = spec.mark.as_deref().map(mark_regex);
    let mut scanned_to: u64 = 0; // for until/mark: bytes already searched
    let mut next_foreground_check: Option<Instant> = None;
    let mut check_backoff = spec.quiet;
    let mut next_answer_check = started.at;
    let mut unknown_checks = 0u32;
    let mut answer_backoff = Duration::from_millis(5);
    loop {
        changes.borrow_and_update();
        let now = Instant::now();
        let verdict =
            |complete, layer, exit_status, hint: Option<String>, output: Range<u64>| Verdict {
                complete,
                layer,
                exit_status,
                elapsed: now.saturating_duration_since(started.at),
                hint,
                output,
            };

        // Snapshot what the ladder needs.
        let (exit, output_start, end, last_output, pending, announced, answered) = {
            let mut data = runtime.lock();
            let end = data.journal.len();
            let after: Vec<_> = data
                .marks
                .iter()
                .filter(|m| m.offset > started.enter_offset)
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
            let finish = match (data.announces_start, start_mark) {
                (true, Some(c)) => finished(c.offset),
                (true, None) => None,
                (false, _) => finished(0),
            };
            // Output begins after the command's C mark, else after the echo line.
            let echo_end = match start_mark {
                Some(c) => Some(c.offset),
                None => echo_end(&mut data.journal, started, end),
            };
            let exit = match finish {
                Some(d) => {
                    let status = d.mark.finished().flatten();
                    Some((
                        status,
                        echo_end.unwrap_or(started.enter_offset).min(d.offset)..d.offset,
                    ))
                }
                None => data
                    .exited
                    .map(|status| (status, echo_end.unwrap_or(started.enter_offset)..end)),
            };
            let output_start = echo_end.unwrap_or(end);
            // New bytes to search for until/mark: from the start of the last line scanned.
            let pending = if (spec.until.is_some() || sentinel.is_some()) && end > output_start {
                let from = scanned_to.max(output_start);
                let from = line_start_before(&mut data.journal, from, output_start);
                data.journal.read(from, end).ok().map(|b| (from, b))
            } else {
                None
            };
            // The shell said the command started and has not said it ended.
            let announced = start_mark.is_some();
            // Text typed into a running command: the shell's next `D` with no `C` of
            // its own before it is that command ending.
            let answered = match (started.continues, start_mark, exit.is_some()) {
                (true, None, false) => finished(0),
                _ => None,
            };
            (
                exit,
                output_start,
                end,
                data.last_output,
                pending,
                announced,
                answered,
            )
        };

        if let Some((status, range)) = exit {
            return verdict(true, Layer::Exit, status, None, range);
        }
        if let Some(d) = answered {
            // A `D` that was still on its way when Enter was pressed would look the same,
            // and then the text went to the shell, which runs it at once: only when
            // nothing more comes for a moment, no `C` follows and the shell sits reading
            // its terminal was the text the running command's.
            if now >= (last_output + ANSWER_GRACE).max(next_answer_check) {
                let state = tokio::select! {
                    biased;
                    _ = changes.changed() => continue,
                    state = backend.pane_state(pane) => state,
                };
                let idle = state.is_ok_and(|s| shell_reading(&s));
                let started_again = runtime
                    .lock()
                    .marks
                    .iter()
                    .any(|m| m.offset > d.offset && m.mark == PromptMark::CommandStart);
                if idle && !started_again {
                    let status = d.mark.finished().flatten();
                    return verdict(
                        true,
                        Layer::Exit,
                        status,
                        None,
                        output_start.min(d.offset)..d.offset,
                    );
                }
                next_answer_check = Instant::now() + answer_backoff;
                answer_backoff = (answer_backoff * 2).min(spec.quiet);
            }
        }
        if let Some((_, bytes)) = &pending {
            let text = plain_text(bytes);
            if let Some(re) = &sentinel {
                if let Some(cap) = re.captures(&text) {
                    let status = cap[1].parse().ok();
                    // The output ends where the sentinel's line (and the blank line
                    // printf puts before it) begins.
                    let (from, bytes) = pending.as_ref().expect("scanned bytes");
                    let needle = format!(
                        "__cohort_mark_{}:",
                        spec.mark.as_deref().unwrap_or_default()
                    );
                    let cut = bytes
                        .windows(needle.len())
                        .position(|w| w == needle.as_bytes())
                        .map_or(end, |at| {
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
                        output_start..cut.max(output_start),
                    );
                }
            }
            if let Some(until) = &spec.until {
                if until.find(&text) {
                    return verdict(true, Layer::Until, None, None, output_start..end);
                }
            }
            scanned_to = end;
        }
        if now >= deadline {
            let hint = Some(match (&spec.until, &spec.mark) {
                (Some(_), _) => "the pattern did not appear: read the output, or wait again (read with wait: true and a longer timeout_ms)".to_string(),
                (_, Some(_)) => "the sentinel did not come back; the command may still be running: wait again (read with wait: true) or read".to_string(),
                _ if shell_still_starting(runtime, backend, pane).await => STILL_STARTING.to_string(),
                _ => "still running: wait again (read with wait: true and a longer timeout_ms), or read what it printed so far".to_string(),
            });
            return verdict(false, Layer::Timeout, None, hint, output_start..end);
        }

        // Quiet long enough? Then look at the foreground process.
        let quiet_since = last_output.max(started.at);
        let quiet_at = quiet_since + spec.quiet;
        if now >= quiet_at && next_foreground_check.is_none_or(|t| now >= t) {
            // Any pane event (the D mark, more output) preempts the check.
            let checked = tokio::select! {
                biased;
                changed = changes.changed() => {
                    if changed.is_err() {
                        return verdict(false, Layer::Timeout, None, Some("the pane went away".into()), output_start..end);
                    }
                    check_backoff = spec.quiet;
                    next_foreground_check = None;
                    continue;
                }
                state = backend.pane_state(pane) => state,
            };
            if let Err(cohort_backends::BackendError::PaneGone(_)) = &checked {
                let hint = "the session was closed while the command ran: its output up to then is here; open a new session to go on".to_string();
                return verdict(false, Layer::Closed, None, Some(hint), output_start..end);
            }
            if let Ok(state) = checked {
                if state.dead {
                    return verdict(
                        true,
                        Layer::Exit,
                        state.exit_status,
                        None,
                        output_start..end,
                    );
                }
                let has_integration = runtime
                    .lock()
                    .marks
                    .iter()
                    .any(|m| m.mark.finished().is_some());
                // The pane's own shell, or a shell started inside it (a nested
                // `bash`), sitting at its prompt: the command is over.
                let shell_back = shell_reading(&state);
                let same_group =
                    state.foreground_pid.is_some() && state.foreground_pid == started.typed_into;
                // A shell that stopped marking its prompts (its hook replaced: a new
                // PROMPT_COMMAND, `exec bash`) is back when it is, with no status.
                let mut lost_hook = false;
                if shell_back && announced && same_group {
                    // The shell that read the command line announced it and has not
                    // reported its end, and nothing took the terminal from it: it runs
                    // a builtin of its own (`read`, a loop of builtins), and is not at
                    // its prompt. (A nested shell runs in a process group of its own.)
                    // Unless its line editor holds the terminal in raw mode: then it is
                    // at its prompt, and its hook did not report.
                    // (fish reads its own `read` with its line editor too: there raw
                    // mode says nothing, and fish's hook is not a variable to replace.)
                    let at_line_editor = state.shell_command != "fish"
                        && state
                            .foreground_pid
                            .and_then(cohort_backends::process::terminal_in_line_mode)
                            == Some(false);
                    if at_line_editor {
                        lost_hook = true;
                    } else if state.foreground_pid.and_then(waiting_for_input) == Some(true)
                        && spec.until.is_none()
                        && spec.mark.is_none()
                    {
                        let hint =
                            "the shell is waiting for input inside the command (a `read` or a \
                                    question): answer it with send, or send the key C-c to stop it"
                                .to_string();
                        return verdict(false, Layer::Nested, None, Some(hint), output_start..end);
                    }
                } else if shell_back
                    && !started.continues
                    && !started.typed.is_empty()
                    && state.at_shell()
                    && silent_since_enter(runtime, started)
                {
                    // The pane's shell reads its terminal, but since Enter it has neither
                    // started a command (C) nor drawn its prompt (A), which it does even
                    // for an empty line: either it took the line as the start of a longer
                    // one and shows its continuation prompt, or it no longer marks.
                    // fish draws no continuation prompt, only indentation.
                    if state.shell_command == "fish"
                        || shows_continuation_prompt(backend, pane).await
                    {
                        let hint = "the shell is waiting for the rest of the command (an unclosed quote, \
                                    bracket or here-document, or a trailing backslash): send the rest, or \
                                    send the key C-c to drop the line"
                            .to_string();
                        return verdict(false, Layer::Nested, None, Some(hint), output_start..end);
                    }
                    lost_hook = true;
                }
                if shell_back && (lost_hook || !(announced && same_group)) {
                    // With shell integration the D mark is the answer; allow it a moment.
                    if !has_integration || now >= quiet_at + spec.quiet * 2 {
                        // The shell may have printed its last output a moment ago and
                        // tmux not delivered it yet: the journal must stay still for a
                        // short grace before the verdict stands.
                        tokio::select! {
                            biased;
                            _ = changes.changed() => continue,
                            _ = tokio::time::sleep(QUIESCENCE_GRACE) => {}
                        }
                        let settled = runtime.lock().journal.len();
                        if settled == end {
                            let hint = lost_hook.then(|| LOST_HOOK.to_string());
                            return Verdict {
                                elapsed: Instant::now().saturating_duration_since(started.at),
                                ..verdict(true, Layer::Quiescence, None, hint, output_start..end)
                            };
                        }
                        continue;
                    }
                } else if spec.until.is_none() && spec.mark.is_none() {
                    let leader = state.foreground_pid.and_then(waiting_for_input);
                    // The leader may be waiting on (or gone before) a member that reads
                    // the terminal: the pager `git log` started, the `less` at the end of
                    // a pipeline. Shells among the members are scripts in progress.
                    let member = match leader {
                        Some(true) => None,
                        _ => state.foreground_pid.and_then(|pgid| {
                            group_members_waiting(state.shell_pid, pgid)
                                .into_iter()
                                .find(|(_, name)| !SHELLS.contains(&name.as_str()))
                        }),
                    };
                    let (name, waiting) = match (leader, member) {
                        (Some(true), _) => (state.foreground_command.clone(), true),
                        (_, Some((_, member))) => (member, true),
                        (Some(false), None) => (state.foreground_command.clone(), false),
                        (None, None) => {
                            // Unknown: where the platform cannot tell, judge by name; on
                            // Linux it is a process caught between states (exiting, its
                            // /proc entry going): look again before judging.
                            let name = state.foreground_command.clone();
                            let gone = state.foreground_pid.is_some_and(|pid| {
                                cohort_backends::process::process_name(pid).is_none()
                            });
                            unknown_checks += 1;
                            let judge = !cfg!(target_os = "linux") || unknown_checks > 2;
                            let waiting = !gone && judge && INTERACTIVE.contains(&name.as_str());
                            (name, waiting)
                        }
                    };
                    if waiting || state.alternate_screen {
                        let hint = waiting_hint(&name, state.alternate_screen);
                        return verdict(false, Layer::Nested, None, Some(hint), output_start..end);
                    }
                }
            }
            next_foreground_check = Some(Instant::now() + check_backoff);
            check_backoff = (check_backoff * 2).min(Duration::from_secs(2));
        }

        let mut wake = deadline;
        if answered.is_some() {
            wake = wake.min((last_output + ANSWER_GRACE).max(next_answer_check));
        }
        if now < quiet_at {
            wake = wake.min(quiet_at);
        } else if let Some(t) = next_foreground_check {
            wake = wake.min(t);
        }
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return verdict(false, Layer::Timeout, None, Some("the pane went away".into()), output_start..end);
                }
                // New output restarts the quiet window and the foreground backoff.
                check_backoff = spec.quiet;
                next_foreground_check = None;
            }
            _ = tokio::time::sleep_until(wake.into()) => {}
        }
    }
}

/// The hint of a quiescence verdict from a shell whose prompt hook no longer reports.
const LOST_HOOK: &str = "the shell is back at its prompt, but it no longer reports exit statuses: \
     its prompt hook was replaced (PROMPT_COMMAND set, `exec bash`); open a new session to \
     get them back, or pass mark: true";

/// Whether the text before the cursor is a continuation prompt: `> ` (bash, sh, ksh) or
/// zsh's `quote> `, `dquote> `, `heredoc> `, … . Read from the screen only on this rare
/// path.
async fn shows_continuation_prompt(backend: &dyn TerminalBackend, pane: &PaneId) -> bool {
    let Ok(screen) = backend.read_screen(pane).await else {
        return false;
    };
    let row = screen
        .rows
        .get(usize::from(screen.cursor.y))
        .map(String::as_str)
        .unwrap_or_default();
    let before: String = row.chars().take(usize::from(screen.cursor.x)).collect();
    is_continuation_prompt(&before)
}

/// `>` alone, or words then `>` (zsh's `dquote>`, `if then>`): not a prompt that names a
/// user, host or directory (`me@host:~>`).
fn is_continuation_prompt(text: &str) -> bool {
    text.trim_end()
        .strip_suffix('>')
        .is_some_and(|words| words.chars().all(|c| c.is_ascii_lowercase() || c == ' '))
}

/// Whether the pane's shell, which marks its prompts, has marked nothing since Enter.
fn silent_since_enter(runtime: &PaneRuntime, started: &Started) -> bool {
    let data = runtime.lock();
    let marked_before = data.marks.iter().any(|m| m.offset <= started.enter_offset);
    let marked_after = data.marks.iter().any(|m| m.offset > started.enter_offset);
    marked_before && !marked_after
}

/// What to do about `name`, a program in the foreground that waits for input.
fn waiting_hint(name: &str, full_screen: bool) -> String {
    if PAGERS.contains(&name) {
        format!(
            "`{name}`, a pager, is waiting for a key and will not finish by itself: send the key q \
             to leave it, and pass env PAGER=cat (or GIT_PAGER=cat) where a pager was set back on"
        )
    } else if SHELLS.contains(&name) {
        format!(
            "`{name}` is running a script that waits for input (a `read` or a question) and will \
             not finish by itself: answer it with send, or send the key C-c to stop it"
        )
    } else if full_screen {
        format!(
            "`{name}` is a full-screen program waiting for keys and will not finish by itself: \
             read with mode: screen to see it, and drive it with key and send"
        )
    } else {
        format!(
            "`{name}` is in the foreground waiting for input and will not finish by itself: pass until \
             (e.g. its prompt, \">>> \") to wait for it, answer it with send, or pass mark: true when it \
             is a shell (ssh, docker exec)"
        )
    }
}

/// The timeout hint when the pane's shell never showed a prompt.
const STILL_STARTING: &str = "the shell has not shown its first prompt yet: its startup files \
     (~/.bashrc, ~/.zshrc, ...) are still running, and what was typed runs when they finish; \
     wait again (read with wait: true), or read the screen to see what the shell is doing";

/// True when the pane's shell is in the foreground but has never shown a prompt:
/// its startup files are still running (a slow `~/.bashrc`), so a command typed
/// into it has not even started.
async fn shell_still_starting(
    runtime: &PaneRuntime,
    backend: &dyn TerminalBackend,
    pane: &PaneId,
) -> bool {
    if !runtime.lock().marks.is_empty() {
        return false;
    }
    matches!(backend.pane_state(pane).await,
        Ok(state) if state.at_shell() && SHELLS.contains(&state.shell_command.as_str()))
}

/// A shell in the foreground that, where the platform tells, waits for input: a wrapper
/// `sh` running its own builtins is not "back".
fn shell_reading(state: &cohort_backends::PaneState) -> bool {
    foreground_is_shell(state) && state.foreground_pid.and_then(waiting_for_input) != Some(false)
}

/// Whether the terminal's foreground process group is a shell: the pane's own, or one
/// started inside it. The group's leader is asked by its pid, not by the name the
/// terminal reports: when a pipeline's first command (`seq 1 500 | less`) has exited,
/// its group still holds the terminal, and tmux names the pane's shell instead.
fn foreground_is_shell(state: &cohort_backends::PaneState) -> bool {
    if state.at_shell() {
        return true;
    }
    match state.foreground_pid {
        // A leader that is gone leaves a pipeline still running. A shell running a
        // script (`bash install.sh`) is a program like any other: at its `read` it
        // waits for an answer, not for the next command.
        Some(pid) => {
            cohort_backends::process::process_name(pid)
                .is_some_and(|name| SHELLS.contains(&name.as_str()))
                && cohort_backends::process::shell_runs_a_script(pid) != Some(true)
        }
        None => SHELLS.contains(&state.foreground_command.as_str()),
    }
}

/// Where the echo of the typed line ends: after the first line that follows Enter
/// when that line is the echo (the Enter's own newline, or the typed text arriving late),
/// at Enter itself when the program did not echo (a password prompt: the first line
/// is already its output). `None` until that line is complete.
fn echo_end(journal: &mut super::journal::Journal, started: &Started, end: u64) -> Option<u64> {
    let newline = first_newline_after(journal, started.enter_offset, end)?;
    let line = journal.read(started.enter_offset, newline).ok()?;
    let seen = plain_text(&line);
    let seen = seen.trim();
    if seen.is_empty() || started.typed.contains(seen) {
        Some(newline)
    } else {
        Some(started.enter_offset)
    }
}

/// Offset right after the first `\n` in `[from, end)`.
fn first_newline_after(journal: &mut super::journal::Journal, from: u64, end: u64) -> Option<u64> {
    let mut pos = from;
    while pos < end {
        let chunk_end = (pos + 64 * 1024).min(end);
        let bytes = journal.read(pos, chunk_end).ok()?;
        if let Some(i) = bytes.iter().position(|b| *b == b'\n') {
            return Some(pos + i as u64 + 1);
        }
        pos = chunk_end;
    }
    None
}

/// The start of the line containing `offset`, not before `floor`.
fn line_start_before(journal: &mut super::journal::Journal, offset: u64, floor: u64) -> u64 {
    if offset <= floor {
        return floor;
    }
    let from = offset.saturating_sub(4096).max(floor);
    match journal.read(from, offset) {
        Ok(bytes) => match bytes.iter().rposition(|b| *b == b'\n') {
            Some(i) => from + i as u64 + 1,
            None => from,
        },
        Err(_) => floor,
    }
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
    fn continuation_prompts() {
        for text in ["> ", ">", "dquote> ", "heredoc> ", "if then> "] {
            assert!(is_continuation_prompt(text), "{text:?}");
        }
        for text in ["me@host:~> ", "$ ", "", "PS C:\\> ", ">>> "] {
            assert!(!is_continuation_prompt(text), "{text:?}");
        }
    }

    #[test]
    fn plain_text_drops_escapes() {
        assert_eq!(
            plain_text(b"\x1b[?2004h>>> \x1b[31mx\x1b[0m\r\n"),
            ">>> x\n"
        );
    }
}
