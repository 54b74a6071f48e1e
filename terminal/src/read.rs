//! Reads: which part of the journal, through which reducer, and the meta line.
//!
//! Every read ends with one meta line that says which lines were read, how much was
//! shown against the raw output (lines and tokens), what was hidden and the exact
//! `lines=` read that returns it, and, after a wait, the verdict and its layer. When
//! everything was shown as it was, the line only says which lines they were.

use std::ops::Range;

use cohort_reducers::{reduce, Options as ReduceOptions, Prepared};
use serde::Serialize;

use crate::prepare::Progress;
use crate::{runtime::PaneData, sanitize::sanitize_output};

/// Which part of a pane's output to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadWhat {
    /// What is new since this caller's last read (the default).
    New,
    /// Lines by absolute number, 0-based, end exclusive.
    Lines(Range<u64>),
    /// The last N lines.
    Tail(u64),
    /// Everything (reduced and capped like any read; the meta line says how to page).
    All,
    /// A byte range of the journal (what a command printed).
    Bytes(Range<u64>),
}

/// How to read.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Which part.
    pub what: ReadWhat,
    /// Whose cursor (for [`ReadWhat::New`]).
    pub caller: String,
    /// Skip the reducers (escape payloads are still removed).
    pub raw: bool,
    /// Lines shown at most before head+tail elision.
    pub max_lines: Option<usize>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            what: ReadWhat::New,
            caller: "default".into(),
            raw: false,
            max_lines: None,
        }
    }
}

/// A read's result.
#[derive(Clone, Debug, Serialize)]
pub struct ReadOutput {
    /// The text.
    pub text: String,
    /// The meta line (without a verdict; callers append theirs).
    pub meta: String,
    /// First line read (1-based), 0 when nothing was read.
    pub first_line: u64,
    /// Last line read (1-based, inclusive).
    pub last_line: u64,
    /// Lines in the pane's journal so far.
    pub total_lines: u64,
    /// Reducer used.
    pub reducer: String,
    /// Tokens shown.
    pub shown_tokens: usize,
    /// Tokens in the raw output.
    pub raw_tokens: usize,
}

impl ReadOutput {
    /// A read that returned nothing, with `why` in its meta line.
    pub fn unavailable(why: String) -> ReadOutput {
        ReadOutput {
            text: String::new(),
            meta: format!("[output unavailable: {why}]"),
            first_line: 0,
            last_line: 0,
            total_lines: 0,
            reducer: "none".into(),
            shown_tokens: 0,
            raw_tokens: 0,
        }
    }
}

/// What a read took from a pane under its lock: the bytes and the facts its meta
/// line needs. Reducing them happens after the lock is released (see [`render`]), so
/// a big read never holds up the pane's events.
#[derive(Debug)]
pub struct Slice {
    /// The bytes read (escapes not yet sanitised): all of the range, or what follows
    /// the part already prepared.
    bytes: Vec<u8>,
    /// The range's output up to `bytes`, prepared while it arrived.
    prepared: Option<Prepared>,
    /// Why the bytes could not be read, when they could not.
    unavailable: Option<String>,
    /// The command whose output this is, when one command's.
    command: Option<String>,
    /// Line number (0-based) of the first byte.
    first: u64,
    /// Lines in the journal.
    total_lines: u64,
    /// Whether the range reaches into scrollback taken in at start, and where that ends.
    history_end_line: Option<u64>,
    /// Whether output was lost inside the range.
    gap: bool,
    /// When the range asked for began before the oldest output kept: the first line
    /// kept and why the older ones were dropped.
    dropped: Option<(u64, String)>,
    /// The answer when the range asked for is past the end.
    past_end: Option<String>,
}

impl Slice {
    /// Bytes of the range's output prepared while it arrived.
    pub fn prepared_len(&self) -> usize {
        self.prepared.as_ref().map_or(0, Prepared::len)
    }
}

/// Takes what a read needs from the pane's data (call with the pane locked; cheap
/// but for copying the bytes).
pub fn take(data: &mut PaneData, options: &ReadOptions) -> Slice {
    take_after(data, options, None)
}

/// [`take`], after what `progress` prepared of the range's output when it is the
/// start of that output (only the bytes after it are taken, and the reduction finishes
/// from it); otherwise as [`take`].
pub fn take_after(data: &mut PaneData, options: &ReadOptions, progress: Option<Progress>) -> Slice {
    let len = data.journal.len();
    let total_lines = data.journal.line_count();
    let empty = |past_end: Option<String>| Slice {
        bytes: Vec::new(),
        prepared: None,
        unavailable: None,
        command: None,
        first: 0,
        total_lines,
        history_end_line: None,
        gap: false,
        dropped: None,
        past_end,
    };
    if let ReadWhat::Lines(range) = &options.what {
        if range.start >= total_lines {
            return empty(Some(format!(
                "[lines {}-{} are past the end: the output has {total_lines} lines so far; read a range within 1-{total_lines}, or the tail]",
                range.start + 1,
                range.end
            )));
        }
    }
    let (start, end) = match &options.what {
        ReadWhat::New => {
            // A caller's first read starts where this process started watching: the
            // scrollback before that is not new to anyone (tail and lines reach it).
            let from = data
                .cursors
                .get(&options.caller)
                .unwrap_or(data.history_end)
                .min(len);
            data.cursors.set(&options.caller, len);
            (from, len)
        }
        ReadWhat::Lines(range) => {
            // Lines asked for by number are shown exactly, at most EXACT_LINES at a time;
            // lines older than the journal keeps start the read at the oldest kept
            // (the floor, below), which says they were dropped.
            let end = range.end.min(range.start + EXACT_LINES);
            let first_kept = data.journal.first_line();
            let a = if range.start < first_kept {
                0
            } else {
                data.journal.line_start(range.start).unwrap_or(len)
            };
            let b = data.journal.line_start(end.max(first_kept)).unwrap_or(len);
            (a, b.max(a))
        }
        ReadWhat::Tail(n) => {
            let a = data
                .journal
                .line_start(total_lines.saturating_sub(*n))
                .unwrap_or(len);
            (a, len)
        }
        ReadWhat::All => (0, len),
        ReadWhat::Bytes(range) => (range.start.min(len), range.end.min(len)),
    };
    // Output older than the journal keeps (its disk cap, or a failed spill) is
    // dropped: read from the oldest kept, and say so.
    let floor = data.journal.floor();
    let dropped = (start < floor && end > start).then(|| {
        (
            data.journal.first_line(),
            data.journal
                .dropped_why()
                .unwrap_or("it is no longer kept")
                .to_string(),
        )
    });
    let start = start.max(floor);
    let end = end.max(start);
    let read = |data: &mut PaneData, from: u64| match data.journal.read(from, end) {
        Ok(b) => (b, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    // Raw and exact reads skip the reducers: there is nothing prepared to use.
    let reduced = !options.raw && !matches!(options.what, ReadWhat::Lines(_));
    let progress =
        progress.filter(|p| reduced && dropped.is_none() && p.start == start && p.upto <= end);
    let rest = progress.and_then(|p| match read(data, p.upto) {
        (rest, None) if p.prepared.takes(&rest) => Some((rest, p.prepared)),
        _ => None,
    });
    let (bytes, unavailable, prepared) = match rest {
        Some((rest, prepared)) => (rest, None, Some(prepared)),
        None => {
            let (bytes, unavailable) = read(data, start);
            (bytes, unavailable, None)
        }
    };
    Slice {
        bytes,
        prepared,
        unavailable,
        command: command_for(data, start, end),
        first: data.journal.line_of(start),
        total_lines,
        history_end_line: (start < data.history_end)
            .then(|| data.journal.line_of(data.history_end)),
        gap: data.gaps.iter().any(|g| *g > start && *g <= end),
        dropped,
        past_end: None,
    }
}

/// Reduces what [`take`] took and writes its meta line (no lock needed).
pub fn render(
    slice: Slice,
    options: &ReadOptions,
    user_rules: Option<&cohort_reducers::UserRules>,
) -> ReadOutput {
    let total_lines = slice.total_lines;
    let nothing = |meta: String| ReadOutput {
        text: String::new(),
        meta,
        first_line: 0,
        last_line: 0,
        total_lines,
        reducer: "none".into(),
        shown_tokens: 0,
        raw_tokens: 0,
    };
    if let Some(meta) = slice.past_end {
        return nothing(meta);
    }
    if let Some(e) = slice.unavailable {
        return nothing(format!("[output unavailable: {e}]"));
    }
    let first = slice.first;
    let clean = sanitize_output(&slice.bytes);
    drop(slice.bytes);
    let exact = matches!(options.what, ReadWhat::Lines(_));
    let reduce_options = ReduceOptions {
        raw: options.raw,
        exact,
        max_lines: options.max_lines.or(ReduceOptions::default().max_lines),
        user_rules: user_rules.cloned(),
        // Markers in the text name the pane's line numbers, as `read lines=` takes them.
        line_base: usize::try_from(first).unwrap_or(usize::MAX),
        ..ReduceOptions::default()
    };
    let command = slice.command.as_deref().unwrap_or("");
    let reduced = match slice.prepared {
        Some(prepared) => match prepared.finish(command, &clean, &reduce_options) {
            Some(reduced) => reduced,
            // `take` checked that it takes the rest.
            None => {
                return nothing(
                    "[the output could not be reduced: read it by lines or with mode \"all\"]"
                        .into(),
                )
            }
        },
        None => reduce(command, &clean, &reduce_options),
    };
    drop(clean);
    let last = if reduced.raw_lines == 0 {
        first
    } else {
        first + reduced.raw_lines as u64
    };
    // Shown whole, nothing to add: the meta line only places the lines (a run's
    // verdict follows), so a short answer stays short.
    let whole = reduced.hidden.is_empty()
        && reduced.notices.is_empty()
        && reduced.shown_lines == reduced.raw_lines;
    let mut meta = if reduced.raw_lines == 0 {
        format!("[no new output; {total_lines} lines so far")
    } else if whole {
        format!("[lines {}-{last} of {total_lines}", first + 1)
    } else {
        format!(
            "[lines {}-{} of {total_lines}; shown {}/{} lines, {}/{} tokens ({})",
            first + 1,
            last,
            reduced.shown_lines,
            reduced.raw_lines,
            reduced.shown_tokens,
            reduced.raw_tokens,
            reduced.reducer
        )
    };
    let span = |a: u64, b: u64| {
        if a >= b {
            a.to_string()
        } else {
            format!("{a}-{b}")
        }
    };
    // Each hidden range with the read that returns it; past a few, the rest as one span,
    // so the meta line stays short next to the text it saved.
    let listed = cohort_reducers::ranges_named(reduced.hidden.len());
    for hidden in &reduced.hidden[..listed] {
        let range = span(
            first + hidden.lines.start as u64 + 1,
            first + hidden.lines.end as u64,
        );
        meta.push_str(&format!(
            "; hidden {} at {range}{}: read lines={range}",
            hidden.why.describe(hidden.count),
            signal_note(hidden.signal)
        ));
    }
    let rest = &reduced.hidden[listed..];
    if let (Some(a), Some(b)) = (rest.first(), rest.last()) {
        let range = span(first + a.lines.start as u64 + 1, first + b.lines.end as u64);
        meta.push_str(&format!(
            "; {} more hidden range(s), {} line(s){} within {range}: read lines={range}",
            rest.len(),
            rest.iter().map(|h| h.count).sum::<usize>(),
            signal_note(rest.iter().map(|h| h.signal).sum())
        ));
    }
    for notice in &reduced.notices {
        meta.push_str("; ");
        meta.push_str(notice);
    }
    if let ReadWhat::Lines(range) = &options.what {
        let shown_to = range.start + EXACT_LINES;
        if range.end > shown_to && last < total_lines {
            meta.push_str(&format!(
                "; at most {EXACT_LINES} lines a read: read lines={}-{} for the next",
                shown_to + 1,
                range.end.min(total_lines).min(shown_to + EXACT_LINES)
            ));
        }
    }
    if let Some(line) = slice.history_end_line.filter(|_| reduced.raw_lines > 0) {
        meta.push_str(&format!(
            "; lines up to {line} are the terminal's scrollback from before cohort attached (plain text)"
        ));
    }
    if slice.gap {
        meta.push_str(
            "; some output was lost in transit here: read the screen for the current state",
        );
    }
    if let Some((line, why)) = &slice.dropped {
        meta.push_str(&format!("; lines before {} were dropped ({why})", line + 1));
    }
    meta.push(']');
    ReadOutput {
        text: reduced.text,
        meta,
        first_line: if reduced.raw_lines == 0 { 0 } else { first + 1 },
        last_line: last,
        total_lines,
        reducer: reduced.reducer,
        shown_tokens: reduced.shown_tokens,
        raw_tokens: reduced.raw_tokens,
    }
}

/// Lines a `lines` read shows, exactly, at once.
const EXACT_LINES: u64 = 500;

fn signal_note(signal: usize) -> String {
    if signal > 0 {
        format!(", {signal} errors/warnings among them")
    } else {
        String::new()
    }
}

/// The command whose output `[start, end)` is: the last command typed at or before
/// `start`, when no other command starts inside the range.
fn command_for(data: &PaneData, start: u64, end: u64) -> Option<String> {
    let inside = data
        .commands
        .iter()
        .filter(|c| c.offset > start && c.offset < end)
        .count();
    if inside > 0 {
        // Several commands' output: the generic pipeline is the honest choice, unless
        // the range starts exactly at the one command's Enter.
        return None;
    }
    data.commands
        .iter()
        .rev()
        .find(|c| c.offset <= start)
        .map(|c| c.text.clone())
}
