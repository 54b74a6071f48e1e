//! Typed input is not output: which bytes of a pane's journal are the echo of a
//! command line rather than what a program printed.
//!
//! A terminal echoes what is typed into it, so the journal holds command lines
//! beside output. A watcher for `ERROR` must not fire on the echoed line
//! `echo "ERROR …"`, and a wait for `MARK` must not end on the `sleep 1; echo MARK`
//! that will print it. Two sources say where the echo is:
//!
//! - the shell's own marks: from a prompt's `A` to the command's `C` is the prompt
//!   and the line the shell accepted ([`Echoes::from_marks`]); a prompt with no `C`
//!   after it (an empty line, a line the shell refused) has only its first line taken
//!   as the echo, so a refusal the shell prints below it stays output;
//! - what cohort typed and where ([`TypedLog`]): for a program without marks (a REPL,
//!   a remote shell, a shell without the integration) and for text typed into a
//!   running command. From the journal position where typing began to the end of the
//!   line Enter closed, a line is taken as echo only when its text *is* a typed line
//!   (after at most a short prompt such as `... ` or `> `): a traceback a REPL prints
//!   between the lines of a pasted block stays output.
//!
//! Where the echo of Enter lands is not always the line the journal had open when
//! Enter was noted: output the program wrote before the keys reached it may still
//! be on its way (a busy machine, a shell that just accepted the line before), and
//! the echo then comes after it. A line whose echo is not on the lines it covers
//! is looked for in what follows ([`TypedLog::settle`]): the first line that is the
//! typed line whole is its late echo, and output after it is output again, even
//! when it repeats the line (`cat`).
//!
//! When in doubt a line is output: hiding a real line from a watcher is worse than
//! matching an echo.

use std::collections::VecDeque;
use std::ops::Range;

use cohort_backends::PromptMark;

use crate::completion::plain_text;
use crate::journal::Journal;
use crate::runtime::MarkAt;

/// Typed records kept per pane.
const KEPT: usize = 64;
/// Characters of one record's text kept (its end: what was typed last).
const TEXT_MAX: usize = 64 << 10;
/// The longest prompt in front of an echoed line of a multi-line input (`... `,
/// `> `, `In [3]: `).
const PROMPT_MAX: usize = 12;
/// How far past the journal's end at Enter a late echo is looked for: output that
/// was on its way then. Past it, the line is taken as echoed where Enter was noted.
const LATE_MAX: u64 = 16 << 10;

/// Text cohort typed into a pane as one line (or one pasted block).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Typed {
    /// Journal offset when typing began.
    pub from: u64,
    /// Journal offset when Enter (or a key dropping the line) ended it: `None`
    /// while the line is still being typed.
    pub ended: Option<u64>,
    /// What was typed (its last 64 KiB).
    pub text: String,
    /// Where the echo of the line Enter ended turned up.
    pub echo: EchoAt,
}

/// Where the echo of an ended line was found in the journal (see
/// [`TypedLog::settle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EchoAt {
    /// Not found yet: complete lines before `scanned` were looked at, and the ones
    /// after the line open at Enter were not the typed line.
    Awaited {
        /// Where the next line to look at starts.
        scanned: u64,
    },
    /// On the lines up to the one open when Enter was noted (the usual case), or
    /// nowhere within 16 KiB after it (a program that does not echo).
    AtEnter,
    /// Late, on a line after the one open at Enter: that line only (what came
    /// between is output that was on its way).
    Late {
        /// The offset of the echoed line's first byte.
        start: u64,
        /// The offset of the newline ending it.
        end: u64,
    },
}

/// How a typed record's echo can be on a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cover {
    /// It cannot.
    No,
    /// As any echo can: a typed line, behind a short prompt, or a piece of one.
    Echo,
    /// Only as a whole typed line: the lines before a late echo of the last, where
    /// the echoes of a pasted block's earlier lines come, among output.
    Whole,
}

impl Typed {
    /// How the echo of this record can be on the line starting at `start` (or on
    /// the part of a line from `start`, for a follower that began mid-line).
    fn covers(&self, start: u64) -> Cover {
        match (self.ended, self.echo) {
            (None, _) => Cover::Echo,
            (Some(ended), _) if start <= ended => Cover::Echo,
            (Some(_), EchoAt::Late { start: line, end }) if (line..=end).contains(&start) => {
                Cover::Echo
            }
            (Some(_), EchoAt::Late { start: line, .. }) if start < line => Cover::Whole,
            (Some(_), EchoAt::Awaited { scanned }) if start >= scanned => Cover::Echo,
            _ => Cover::No,
        }
    }

    /// The last journal offset its echo can reach: `None` while that is not known.
    fn reach(&self) -> Option<u64> {
        match (self.ended, self.echo) {
            (None, _) | (_, EchoAt::Awaited { .. }) => None,
            (Some(ended), EchoAt::AtEnter) => Some(ended),
            (Some(ended), EchoAt::Late { end, .. }) => Some(ended.max(end)),
        }
    }

    /// Looks at the complete lines of `bytes` (the journal from `at`) for the echo
    /// of the line Enter ended: on a line up to the one open at Enter, it is where
    /// it belongs; on a later one, late. Where typing began shows the start of the
    /// line (an echo cut by Ctrl-C, a line editor's redraw), the echo came on time,
    /// whole or not: only a journal that was behind shows something else there.
    fn look_for_echo(&mut self, at: u64, bytes: &[u8]) {
        let Some(ended) = self.ended else { return };
        let (Some(first), Some(last)) = (
            typed_lines(&self.text).next(),
            typed_lines(&self.text).last(),
        ) else {
            self.echo = EchoAt::AtEnter;
            return;
        };
        if at == self.from {
            let Some(newline) = bytes.iter().position(|b| *b == b'\n') else {
                // Not decided before the line is whole.
                self.echo = EchoAt::Awaited { scanned: at };
                return;
            };
            if begins_like(&plain_text(&bytes[..newline]), first) {
                self.echo = EchoAt::AtEnter;
                return;
            }
        }
        let mut start = at;
        let mut rest = bytes;
        while let Some(newline) = rest.iter().position(|b| *b == b'\n') {
            let end = start + newline as u64;
            if is_whole_echo(&plain_text(&rest[..newline]), last) {
                self.echo = if start <= ended {
                    EchoAt::AtEnter
                } else {
                    EchoAt::Late { start, end }
                };
                return;
            }
            start = end + 1;
            rest = &rest[newline + 1..];
        }
        self.echo = if start > ended.saturating_add(LATE_MAX) {
            EchoAt::AtEnter
        } else {
            EchoAt::Awaited { scanned: start }
        };
    }
}

/// The text cohort typed into one pane, most recent last.
#[derive(Clone, Debug, Default)]
pub struct TypedLog {
    records: VecDeque<Typed>,
    /// Records ever begun, so a checkpoint knows which ones came after it.
    begun: u64,
}

/// Where a [`TypedLog`] stood before a keystroke was noted, to return to when the
/// keystroke never reached the pane. Typing is noted *before* it is sent: the echo
/// can come back, and be read, before the send returns.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    begun: u64,
    /// The open record's text length and end at the checkpoint.
    open: Option<(usize, Option<u64>)>,
}

impl TypedLog {
    /// Where the log stands now.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            begun: self.begun,
            open: self.records.back().map(|t| (t.text.len(), t.ended)),
        }
    }

    /// Forgets what was noted since `checkpoint` (the keystrokes were not sent).
    pub fn restore(&mut self, checkpoint: &Checkpoint) {
        while self.begun > checkpoint.begun {
            self.begun -= 1;
            self.records.pop_back();
        }
        if let (Some(open), Some((len, ended))) = (self.records.back_mut(), checkpoint.open) {
            // A record cut at its front since then keeps what it has: only its end can
            // be told apart.
            if open.text.len() > len && open.text.is_char_boundary(len) {
                open.text.truncate(len);
            }
            if open.ended != ended {
                open.ended = ended;
                open.echo = EchoAt::Awaited { scanned: open.from };
            }
        }
    }

    /// Notes `text` typed at journal offset `at`: it extends the line being typed,
    /// or begins a new one.
    pub fn typed(&mut self, at: u64, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.records.back_mut() {
            Some(open) if open.ended.is_none() => {
                open.text.push_str(text);
                if open.text.len() > TEXT_MAX {
                    let cut = crate::runtime::char_ceil(&open.text, open.text.len() - TEXT_MAX);
                    open.text.drain(..cut);
                }
            }
            _ => {
                let cut = crate::runtime::char_ceil(text, text.len().saturating_sub(TEXT_MAX));
                self.begun += 1;
                self.records.push_back(Typed {
                    from: at,
                    ended: None,
                    text: text[cut..].to_string(),
                    echo: EchoAt::Awaited { scanned: at },
                });
                while self.records.len() > KEPT {
                    self.records.pop_front();
                }
            }
        }
    }

    /// Notes that the line being typed ended at journal offset `at` (Enter, or a key
    /// that drops it): its echo ends with the line it is on.
    pub fn ended(&mut self, at: u64) {
        if let Some(open) = self.records.back_mut() {
            if open.ended.is_none() {
                open.ended = Some(at);
                open.echo = EchoAt::Awaited { scanned: open.from };
            }
        }
    }

    /// Finds where the echo of each ended line is, from what `journal` received
    /// since it was last looked at (see [`EchoAt`]).
    pub fn settle(&mut self, journal: &mut Journal) {
        let len = journal.len();
        self.settle_with(len, |from, to| journal.read(from, to).ok());
    }

    /// [`TypedLog::settle`] over any journal: `read` gives bytes `[from, to)`, or
    /// `None` when they are no longer kept.
    fn settle_with(&mut self, len: u64, mut read: impl FnMut(u64, u64) -> Option<Vec<u8>>) {
        for t in &mut self.records {
            let (Some(ended), EchoAt::Awaited { scanned }) = (t.ended, t.echo) else {
                continue;
            };
            let to = len.min(ended.saturating_add(LATE_MAX + 1));
            if scanned >= to && len <= to {
                continue;
            }
            // A line open at Enter longer than the bound is not read again and again.
            if ended.saturating_sub(scanned) > LATE_MAX {
                t.echo = EchoAt::AtEnter;
                continue;
            }
            match read(scanned, to) {
                Some(bytes) => t.look_for_echo(scanned, &bytes),
                None => t.echo = EchoAt::AtEnter,
            }
            // A line longer than what is looked at gives up the search.
            if len > to && matches!(t.echo, EchoAt::Awaited { .. }) {
                t.echo = EchoAt::AtEnter;
            }
        }
    }

    /// The records whose echo can reach `[from, to)`.
    fn reaching(&self, from: u64, to: u64) -> impl Iterator<Item = &Typed> {
        self.records
            .iter()
            .filter(move |t| t.from < to && t.reach().is_none_or(|r| r >= from))
    }
}

/// Where the echo of typed input lies around a stretch of the journal.
#[derive(Clone, Debug, Default)]
pub struct Echoes {
    /// Prompt and accepted line, by the shell's marks: all of it is input.
    exact: Vec<Range<u64>>,
    /// A prompt with no command after it: its first line is input.
    first_lines: Vec<u64>,
    /// What cohort typed: lines that are a typed line are input.
    typed: Vec<Typed>,
}

impl Echoes {
    /// The echoes that can reach `[from, to)`, from the pane's marks (oldest first)
    /// and its typed log.
    pub fn around(marks: &[MarkAt], typed: &TypedLog, from: u64, to: u64) -> Echoes {
        let mut echoes = Echoes::from_marks(marks, from, to);
        echoes.typed = typed.reaching(from, to).cloned().collect();
        echoes
    }

    /// The echoes the shell's marks bound: each prompt (`A`) up to its command's
    /// start (`C`); a prompt not followed by a `C` before the next mark, its first
    /// line only; the last prompt, when nothing followed it yet, up to the end.
    pub fn from_marks(marks: &[MarkAt], from: u64, to: u64) -> Echoes {
        let mut echoes = Echoes::default();
        // From the last prompt at or before `from` on.
        let first = marks.partition_point(|m| m.offset <= from);
        let start = marks[..first]
            .iter()
            .rposition(|m| m.mark == PromptMark::PromptStart)
            .unwrap_or(first);
        for (i, m) in marks.iter().enumerate().skip(start) {
            if m.offset >= to {
                break;
            }
            if m.mark != PromptMark::PromptStart {
                continue;
            }
            match marks.get(i + 1) {
                Some(next) if next.mark == PromptMark::CommandStart => {
                    echoes.exact.push(m.offset..next.offset);
                }
                Some(_) => echoes.first_lines.push(m.offset),
                // The prompt being edited now: its line so far is input, and a line
                // the shell has not started yet (a continuation) is not known to be.
                None => echoes.first_lines.push(m.offset),
            }
        }
        echoes
    }

    /// Whether nothing is known to be echo.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.first_lines.is_empty() && self.typed.is_empty()
    }

    /// The output of one line: `line` holds its bytes (without the newline), which
    /// begin at journal offset `start`; `text` is its plain text. The parts that are
    /// echo are left out (all of it for a line that is only echo).
    pub fn output_of(&self, line: &[u8], start: u64, text: &str) -> String {
        let end = start + line.len() as u64;
        let mut input: Vec<Range<u64>> = Vec::new();
        for r in &self.exact {
            if r.start < end.max(start + 1) && r.end > start {
                input.push(r.start.max(start)..r.end.min(end));
            }
        }
        for a in &self.first_lines {
            if (start..=end).contains(a) {
                input.push(*a..end);
            }
        }
        // Where the shell's marks begin a stretch of input on this line.
        let marked: Vec<u64> = input.iter().map(|r| r.start).collect();
        for t in &self.typed {
            // Lines from where typing began through the one Enter ended (or the
            // one its echo came late on).
            let cover = if t.from <= end {
                t.covers(start)
            } else {
                Cover::No
            };
            if cover == Cover::No {
                continue;
            }
            let from = t.from.max(start);
            // Text typed before the shell drew its prompt is echoed twice: by the
            // terminal as it arrives, then by the line editor behind the prompt. The
            // first copy ends where the prompt's mark begins, and is judged alone.
            let cut = marked.iter().copied().filter(|&s| s > from).min();
            let to = cut.unwrap_or(end);
            let seen = plain_text(&line[(from - start) as usize..(to - start) as usize]);
            let echoed = match cover {
                Cover::Whole => typed_lines(&t.text).any(|typed| is_whole_echo(&seen, typed)),
                _ => is_echo(&seen, &t.text) || cut.is_some() && is_typed_start(&seen, &t.text),
            };
            if echoed {
                input.push(from..to);
            }
        }
        if input.is_empty() {
            return text.to_string();
        }
        input.sort_by_key(|r| r.start);
        let mut kept = Vec::with_capacity(line.len());
        let mut at = start;
        for r in input {
            if r.start > at {
                kept.extend_from_slice(&line[(at - start) as usize..(r.start - start) as usize]);
            }
            at = at.max(r.end);
        }
        if at < end {
            kept.extend_from_slice(&line[(at - start) as usize..]);
        }
        let output = plain_text(&kept);
        if output.trim().is_empty() {
            String::new()
        } else {
            output
        }
    }
}

/// Whether `seen` (a line's text from where typing began) is the echo of `typed`:
/// blank, one of its lines, one of them behind a short prompt, or a stretch of one
/// (an echo arriving in pieces). A line typed ahead of a program's prompt may show
/// twice, the terminal's echo before the prompt and the program's after it
/// (`print(1)>>> print(1)`): that is echo too.
fn is_echo(seen: &str, typed: &str) -> bool {
    let seen = seen.trim();
    if seen.is_empty() {
        return true;
    }
    typed_lines(typed)
        .any(|t| is_whole_echo(seen, t) || seen.chars().count() >= 8 && t.contains(seen))
}

/// Whether `seen`, a whole line, is the echo of the typed line `typed`: itself,
/// behind a short prompt, or behind the terminal's copy of it (see [`is_echo`]);
/// never just a piece of it.
fn is_whole_echo(seen: &str, typed: &str) -> bool {
    let seen = seen.trim();
    if seen == typed {
        return true;
    }
    seen.strip_suffix(typed).is_some_and(|before| {
        let before = before.trim_start();
        // Behind the terminal's copy of the line (or of its start), typed ahead.
        is_prompt(before) || is_prompt(&before[common_prefix(before, typed)..])
    })
}

/// Whether `seen` (a whole line's text from where typing began) shows the typed
/// line `typed`: it begins with all of it (`abc^C`, a suggestion drawn after it).
fn begins_like(seen: &str, typed: &str) -> bool {
    seen.trim_start().starts_with(typed)
}

/// Whether `seen`, which the shell's prompt mark follows on its line, is the start
/// of a typed line: the terminal's echo of a line typed before the prompt was drawn,
/// cut where the prompt began.
fn is_typed_start(seen: &str, typed: &str) -> bool {
    let seen = seen.trim();
    typed_lines(typed).any(|t| t.starts_with(seen))
}

/// The non-blank lines of a typed record, trimmed.
fn typed_lines(typed: &str) -> impl Iterator<Item = &str> {
    typed.lines().map(str::trim).filter(|t| !t.is_empty())
}

/// The length in bytes of the longest common start of `a` and `b`.
fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i)
}

/// Whether `text` can be the prompt in front of an echoed line: short and without
/// letters or digits (`... `, `> `).
fn is_prompt(text: &str) -> bool {
    text.chars().count() <= PROMPT_MAX && !text.chars().any(char::is_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(offset: u64, mark: PromptMark) -> MarkAt {
        MarkAt { offset, mark }
    }

    /// `log` with the echo of its lines looked for in `journal` (from offset 0).
    fn settled<'a>(log: &'a mut TypedLog, journal: &str) -> &'a TypedLog {
        let bytes = journal.as_bytes();
        log.settle_with(bytes.len() as u64, |from, to| {
            Some(bytes[from as usize..(to as usize).min(bytes.len())].to_vec())
        });
        log
    }

    #[test]
    fn an_echo_behind_output_still_on_its_way_is_input() {
        // Both lines were noted at offset 10, before anything came back: the shell
        // accepted the first, and the terminal echoed the second, after Enter.
        let first = ": ALARM typed only; sleep 0.3";
        let second = "echo ALARM-$((40+2))";
        let journal = format!(
            "root@vm:~# {first}\r\n\x1b]133;C\x07{second}\r\n\x1b]133;D;0\x07root@vm:~# {second}\r\nALARM-42\r\n"
        );
        let mut log = TypedLog::default();
        for line in [first, second] {
            log.typed(11, line);
            log.ended(11);
        }
        let echoes = Echoes::around(&[], settled(&mut log, &journal), 0, journal.len() as u64);
        let seen: Vec<String> = outputs(&journal, &echoes)
            .iter()
            .map(|l| plain_text(l.as_bytes()).trim().to_string())
            .collect();
        assert_eq!(
            seen,
            [
                "root@vm:~#",
                "",
                "root@vm:~# echo ALARM-$((40+2))",
                "ALARM-42",
                ""
            ]
        );
        assert_eq!(
            log.records[1].echo,
            EchoAt::Late {
                start: journal.find(&format!("\x1b]133;C\x07{second}")).unwrap() as u64,
                end: journal.find(&format!("{second}\r\n")).unwrap() as u64
                    + second.len() as u64
                    + 1
            }
        );
        // Then what a program prints again is output: cat behind the same lag.
        let journal = "make: done\nALARM-in-cat\nALARM-in-cat\n";
        let mut log = TypedLog::default();
        log.typed(0, "ALARM-in-cat");
        log.ended(0);
        let echoes = Echoes::around(&[], settled(&mut log, journal), 0, journal.len() as u64);
        assert_eq!(
            outputs(journal, &echoes),
            ["make: done", "", "ALARM-in-cat", ""]
        );
        // Output that came between Enter and the late echo stays output, even when it
        // is a piece of the typed line.
        let journal = "$ echo ALARM-42\nALARM-42\necho done\n$ echo done\ndone\n";
        let mut log = TypedLog::default();
        for line in ["echo ALARM-42", "echo done"] {
            log.typed(2, line);
            log.ended(2);
        }
        let echoes = Echoes::around(&[], settled(&mut log, journal), 0, journal.len() as u64);
        assert_eq!(
            outputs(journal, &echoes),
            ["$ ", "ALARM-42", "", "$ echo done", "done", ""]
        );
    }

    #[test]
    fn a_pasted_blocks_late_echo_is_input_line_by_line() {
        let journal = "$ sleep 1\nslept\n>>> a = 1\n>>> print(a)\n1\n>>> ";
        let mut log = TypedLog::default();
        log.typed(2, "a = 1\nprint(a)");
        log.ended(2);
        let echoes = Echoes::around(&[], settled(&mut log, journal), 0, journal.len() as u64);
        assert_eq!(
            outputs(journal, &echoes),
            ["$ sleep 1", "slept", "", "", "1", ">>> "]
        );
        // A follower that begins in the middle of the late line still sees echo.
        let late = journal.find(">>> print").unwrap() as u64;
        assert_eq!(log.records[0].covers(late + 4), Cover::Echo);
        assert_eq!(log.records[0].covers(late - 3), Cover::Whole);
        assert_eq!(log.records[0].covers(late + 13), Cover::No);
    }

    #[test]
    fn an_echo_where_typing_began_is_on_time_even_when_cut() {
        // Ctrl-C dropped the line: its echo is on its line, not whole; the program
        // printing the same text later is output.
        let journal = "$ sleep 9^C\n$ sleep 9\n";
        let mut log = TypedLog::default();
        log.typed(2, "sleep 9");
        log.ended(11);
        settled(&mut log, journal);
        assert_eq!(log.records[0].echo, EchoAt::AtEnter);
        // A line that only starts like it (`ls`, then `ls -la` typed behind it) is not
        // its echo: the later one is.
        let journal = "$ ls\nREADME\nls -la\n";
        let mut log = TypedLog::default();
        log.typed(2, "ls");
        log.ended(2);
        log.typed(2, "ls -la");
        log.ended(2);
        let echoes = Echoes::around(&[], settled(&mut log, journal), 0, journal.len() as u64);
        assert_eq!(outputs(journal, &echoes), ["$ ", "README", "", ""]);
        // Nothing is decided before the line where typing began is whole.
        let mut log = TypedLog::default();
        log.typed(2, "ALARM-42");
        log.ended(2);
        settled(&mut log, "$ A");
        assert_eq!(log.records[0].echo, EchoAt::Awaited { scanned: 2 });
    }

    #[test]
    fn a_late_echo_is_awaited_line_by_line_and_not_past_its_bound() {
        let mut log = TypedLog::default();
        log.typed(0, "ALARM-in-cat");
        log.ended(0);
        // The line open at Enter is not complete: nothing is decided.
        let journal = "step 1";
        settled(&mut log, journal);
        assert_eq!(log.records[0].echo, EchoAt::Awaited { scanned: 0 });
        // A line that is not the echo, then the echo arriving in pieces.
        let journal = "step 1\nALARM-in";
        let echoes = Echoes::around(&[], settled(&mut log, journal), 0, journal.len() as u64);
        assert_eq!(log.records[0].echo, EchoAt::Awaited { scanned: 7 });
        assert_eq!(outputs(journal, &echoes), ["step 1", ""]);
        // Output that never echoed (a program reading without echo) is given up on
        // once more than the bound has come.
        let filler = "x".repeat(LATE_MAX as usize);
        let journal = format!("step 1\n{filler}\nALARM-in-cat\n");
        let echoes = Echoes::around(&[], settled(&mut log, &journal), 0, journal.len() as u64);
        assert_eq!(log.records[0].echo, EchoAt::AtEnter);
        assert_eq!(outputs(&journal, &echoes)[2], "ALARM-in-cat");
    }

    /// The output of each line of `journal` (a whole journal from offset 0).
    fn outputs(journal: &str, echoes: &Echoes) -> Vec<String> {
        let mut start = 0u64;
        journal
            .split('\n')
            .map(|line| {
                let out = echoes.output_of(line.as_bytes(), start, line);
                start += line.len() as u64 + 1;
                out
            })
            .collect()
    }

    #[test]
    fn the_line_between_prompt_and_command_start_is_input() {
        let journal = "$ echo \"ERROR here\"\nERROR here\n$ ";
        let c = journal.find("\nERROR").unwrap() as u64 + 1;
        let a2 = journal.len() as u64 - 2;
        let marks = [
            mark(0, PromptMark::PromptStart),
            mark(c, PromptMark::CommandStart),
            mark(
                a2,
                PromptMark::CommandFinished {
                    exit_status: Some(0),
                },
            ),
            mark(a2, PromptMark::PromptStart),
        ];
        let echoes = Echoes::from_marks(&marks, 0, journal.len() as u64);
        assert_eq!(outputs(journal, &echoes), ["", "ERROR here", ""]);
    }

    #[test]
    fn a_refused_line_keeps_what_the_shell_printed_below_it() {
        let journal = "$ fi\nbash: syntax error near unexpected token `fi'\n$ ";
        let a2 = journal.len() as u64 - 2;
        let marks = [
            mark(0, PromptMark::PromptStart),
            mark(a2, PromptMark::PromptStart),
        ];
        let echoes = Echoes::from_marks(&marks, 0, journal.len() as u64);
        assert_eq!(
            outputs(journal, &echoes),
            ["", "bash: syntax error near unexpected token `fi'", ""]
        );
    }

    #[test]
    fn keystrokes_that_were_not_sent_are_forgotten() {
        let mut log = TypedLog::default();
        log.typed(0, "echo one");
        let before = log.checkpoint();
        // More of the same line, then Enter and a new line: none of it was sent.
        log.typed(8, " two");
        log.ended(8);
        log.typed(9, "echo three");
        log.restore(&before);
        let records: Vec<_> = log.records.iter().cloned().collect();
        assert_eq!(
            records,
            [Typed {
                from: 0,
                ended: None,
                text: "echo one".into(),
                echo: EchoAt::Awaited { scanned: 0 },
            }]
        );
        // Noting goes on from where it was.
        log.typed(8, "!");
        assert_eq!(log.records.back().unwrap().text, "echo one!");
        let empty = TypedLog::default().checkpoint();
        log.restore(&empty);
        assert!(log.records.is_empty());
    }

    #[test]
    fn typed_lines_are_input_and_what_a_repl_prints_between_them_is_output() {
        let journal = ">>> x = 1\n>>> raise KeyError('mid')\nTraceback (most recent call last):\nKeyError: 'mid'\n... print('after')\nafter\n>>> ";
        let mut log = TypedLog::default();
        log.typed(4, "x = 1\nraise KeyError('mid')\nprint('after')");
        log.ended(journal.find("after\n>>>").unwrap() as u64 - 2);
        let echoes = Echoes::around(&[], settled(&mut log, journal), 0, journal.len() as u64);
        assert_eq!(
            outputs(journal, &echoes),
            [
                ">>> ",
                "",
                "Traceback (most recent call last):",
                "KeyError: 'mid'",
                "",
                "after",
                ">>> "
            ]
        );
    }

    #[test]
    fn output_that_repeats_a_few_typed_characters_stays_output() {
        let journal = ">>> print(1)\n1\n>>> ";
        let mut log = TypedLog::default();
        log.typed(4, "print(1)");
        log.ended(12);
        let echoes = Echoes::around(&[], settled(&mut log, journal), 0, journal.len() as u64);
        assert_eq!(outputs(journal, &echoes), [">>> ", "1", ">>> "]);
    }

    #[test]
    fn a_line_being_typed_is_input_until_it_ends() {
        let journal = "> echo ERROR";
        let mut log = TypedLog::default();
        log.typed(2, "echo ");
        log.typed(7, "ERROR");
        let echoes = Echoes::around(&[], settled(&mut log, journal), 0, journal.len() as u64);
        assert_eq!(outputs(journal, &echoes), ["> "]);
        // Output after the line ended is output, even when it repeats it.
        let journal = "> echo ERROR\necho ERROR";
        log.ended(12);
        let echoes = Echoes::around(&[], settled(&mut log, journal), 0, journal.len() as u64);
        assert_eq!(outputs(journal, &echoes), ["> ", "echo ERROR"]);
    }

    #[test]
    fn a_line_typed_before_the_prompt_is_input_in_both_copies() {
        // The line was typed while the shell was still busy with the one before: the
        // terminal echoed it as it came, then the shell drew its prompt and the line
        // editor echoed it again behind it.
        let line = "echo ALARM-$((40+2))";
        for first_copy in [line, "echo ALA", "e"] {
            let journal = format!("{first_copy}root@vm:~# {line}\nALARM-42\n");
            let a = first_copy.len() as u64;
            let c = journal.find("\nALARM-42").unwrap() as u64 + 1;
            let marks = [
                mark(a, PromptMark::PromptStart),
                mark(c, PromptMark::CommandStart),
            ];
            let mut log = TypedLog::default();
            log.typed(0, line);
            log.ended(c - 1);
            let echoes =
                Echoes::around(&marks, settled(&mut log, &journal), 0, journal.len() as u64);
            assert_eq!(
                outputs(&journal, &echoes),
                ["", "ALARM-42", ""],
                "{journal:?}"
            );
        }
        // Without marks (a REPL typed into before it started): copy, prompt, copy.
        let journal = "print(1)>>> print(1)\n1\n>>> ";
        let mut log = TypedLog::default();
        log.typed(0, "print(1)");
        log.ended(20);
        let echoes = Echoes::around(&[], settled(&mut log, journal), 0, journal.len() as u64);
        assert_eq!(outputs(journal, &echoes), ["", "1", ">>> "]);
        // What a program printed before the prompt is not a typed line's start.
        let journal = format!("ALARM-42root@vm:~# {line}\n");
        let marks = [mark(8, PromptMark::PromptStart)];
        let mut log = TypedLog::default();
        log.typed(0, line);
        let echoes = Echoes::around(&marks, settled(&mut log, &journal), 0, journal.len() as u64);
        assert_eq!(outputs(&journal, &echoes), ["ALARM-42", ""]);
        assert!(!is_echo("Error: print(1)", "print(1)"));
        assert!(!is_echo("printed print(1)", "print(1)"));
    }

    #[test]
    fn text_that_is_not_the_echo_stays_output() {
        // Typed while a program was printing: its line is not what was typed.
        let journal = "progress 50%\nprogress 100%\n";
        let mut log = TypedLog::default();
        log.typed(0, "yes");
        log.ended(14);
        let echoes = Echoes::around(&[], settled(&mut log, journal), 0, journal.len() as u64);
        assert_eq!(
            outputs(journal, &echoes),
            ["progress 50%", "progress 100%", ""]
        );
        assert!(is_echo("  ", "anything"));
        assert!(is_echo("... y = 2", "x = 1\ny = 2"));
        assert!(!is_echo("Error: y = 2", "x = 1\ny = 2"));
    }
}
