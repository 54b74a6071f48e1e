//! The working representation between the stages: cleaned source lines in, entries and
//! hidden ranges out.

use crate::clean::{clean_line_digits, raw_lines};
use crate::model::{Hidden, HiddenReason};
use crate::options::Options;
use crate::signal::{is_signal, marks_signal, signal_offsets, summary_offsets, words_signal};
use std::borrow::Cow;
use std::ops::Range;

/// The raw output, cleaned line by line. Index = raw line number.
pub(crate) struct Src<'a> {
    /// Cleaned lines.
    pub lines: Vec<Cow<'a, str>>,
    /// Whether each cleaned line reads as an error, failure, panic, traceback or warning.
    pub signal: Vec<bool>,
    /// Whether each cleaned line holds an ASCII digit (found while cleaning it).
    pub digits: Vec<bool>,
    /// Whether each line is a tool's summary (counts of tests, problems, changes): never
    /// elided, folded or cut.
    pub summary: Vec<bool>,
}

impl<'a> Src<'a> {
    /// Splits and cleans `text`, and classifies every line.
    pub fn new(text: &'a str, binary: bool) -> Self {
        let capacity = text.len() / 40 + 1;
        let mut src = Src {
            lines: Vec::with_capacity(capacity),
            signal: Vec::with_capacity(capacity),
            digits: Vec::with_capacity(capacity),
            summary: Vec::with_capacity(capacity),
        };
        classify(text, binary, |_, cleaned, line| {
            src.lines.push(cleaned);
            src.signal.push(line.signal);
            src.digits.push(line.digits);
            src.summary.push(line.summary);
        });
        src
    }

    /// Number of raw lines.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// A cleaned line.
    pub fn line(&self, i: usize) -> &str {
        &self.lines[i]
    }
}

/// What [`classify`] finds in one line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LineKind {
    /// It reads as an error, failure, panic, traceback or warning.
    pub signal: bool,
    /// It holds an ASCII digit (found while cleaning it).
    pub digits: bool,
    /// It is a tool's summary (counts of tests, problems, changes).
    pub summary: bool,
}

/// Splits `text` into lines, cleans and classifies each, and hands `each` the byte
/// offset where the raw line starts, its cleaned text (borrowed from `text` when
/// cleaning only trimmed it: then a prefix of the raw line) and what it is.
///
/// No pattern the classification uses crosses a newline, so the lines of a text cut
/// after a newline are classified the same in its pieces as in the whole.
pub(crate) fn classify<'a>(
    text: &'a str,
    binary: bool,
    mut each: impl FnMut(usize, Cow<'a, str>, LineKind),
) {
    let mut hits = signal_offsets(text).peekable();
    let mut summaries = summary_offsets(text).peekable();
    let mut start = 0;
    for line in raw_lines(text) {
        let end = start + line.len();
        while summaries.next_if(|&at| at < start).is_some() {}
        let summary = summaries.peek().is_some_and(|&at| at < end);
        let mut candidate = false;
        while let Some(&at) = hits.peek() {
            if at < start {
                hits.next();
            } else {
                candidate = at < end;
                break;
            }
        }
        let (cleaned, digits) = clean_line_digits(line, binary);
        // The whole-text scan finds the lines that may hold a signal word (checked again
        // here: not in a success phrase or a path); lines that were rewritten are
        // classified again as shown.
        let signal = if matches!(cleaned, Cow::Owned(_)) {
            is_signal(&cleaned)
        } else {
            (candidate && words_signal(&cleaned)) || marks_signal(&cleaned)
        };
        each(
            start,
            cleaned,
            LineKind {
                signal,
                digits,
                summary,
            },
        );
        start = end + 1;
    }
}

/// One line of the reduced output.
#[derive(Clone, Debug)]
pub(crate) struct Entry<'a> {
    pub text: Cow<'a, str>,
    /// First raw line this entry stands for; for a note, the raw line it sits before.
    pub raw: usize,
    /// How many raw lines it stands for: 1 for a kept line, more for a line that groups
    /// several (a folded run, a grouped listing), 0 for a note the reducer wrote.
    pub nraw: usize,
    /// Never elided, never folded as similar.
    pub pinned: bool,
    /// Stands for a line that reads as an error or warning.
    pub signal: bool,
    /// The text is the cleaned raw line, unchanged.
    pub verbatim: bool,
    /// For a verbatim entry, whether the text holds an ASCII digit (false otherwise).
    pub digits: bool,
    /// Stands for a tool's summary line: never cut.
    pub summary: bool,
}

impl<'a> Entry<'a> {
    /// A marker or summary written by the crate.
    pub fn note(text: String, anchor: usize) -> Self {
        Entry {
            text: Cow::Owned(text),
            raw: anchor,
            nraw: 0,
            pinned: false,
            signal: false,
            verbatim: false,
            digits: false,
            summary: false,
        }
    }

    pub fn is_blank(&self) -> bool {
        self.text.is_empty()
    }
}

/// Settings for the generic finishing stages, from [`Options`] and the reducer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Post {
    pub fold_identical: bool,
    pub fold_similar: bool,
    /// Shortest run of number-only-different lines that is folded.
    pub similar_run: usize,
    pub max_lines: Option<usize>,
    pub head: usize,
    pub tail: usize,
    pub width: Option<usize>,
    pub max_signal: usize,
    /// The raw line number of the first line, for the ranges markers name: not zero when
    /// the input is the tail of a larger output.
    pub line_base: usize,
}

impl Post {
    pub fn from_options(options: &Options) -> Self {
        Post {
            fold_identical: true,
            fold_similar: true,
            similar_run: 4,
            max_lines: options.max_lines,
            head: options.head,
            tail: options.tail,
            width: options.max_line_width,
            max_signal: options.max_signal_lines,
            line_base: 0,
        }
    }

    /// The marker standing for `count` hidden lines in `lines` (numbered from this
    /// input's first line), naming them by their raw line numbers.
    pub fn marker(&self, count: usize, what: &str, lines: &Range<usize>, signal: usize) -> String {
        let base = self.line_base;
        crate::pipeline::marker(count, what, &(lines.start + base..lines.end + base), signal)
    }
}

/// A reducer's output: entries in raw order, what it hid, and what it left out of lines it
/// shows in part.
pub(crate) struct Out<'a> {
    pub entries: Vec<Entry<'a>>,
    pub hidden: Vec<Hidden>,
    /// For [`Reduced::notices`](crate::Reduced::notices): what the reducer left out that no
    /// hidden range stands for (columns of lines it shows), and how to get it back.
    pub notices: Vec<String>,
    /// Raw lines that are excerpts (a grep hit's text, a diff's context, a commit message,
    /// a table row): whatever words they hold, they are never counted as errors.
    pub excerpts: Vec<usize>,
    pub post: Post,
}

impl<'a> Out<'a> {
    pub fn new(post: Post) -> Self {
        Out {
            entries: Vec::new(),
            hidden: Vec::new(),
            notices: Vec::new(),
            excerpts: Vec::new(),
            post,
        }
    }

    /// Tells the reader, once, something the reducer left out that no hidden range stands
    /// for, with the way to get it back.
    pub fn notice(&mut self, text: &str) {
        if !self.notices.iter().any(|n| n == text) {
            self.notices.push(text.to_owned());
        }
    }

    /// Shows raw line `i` as it is.
    pub fn keep(&mut self, src: &Src<'a>, i: usize) {
        self.push_line(src, i, false);
    }

    /// Shows raw line `i` and protects it from elision and similar-folding.
    pub fn pin(&mut self, src: &Src<'a>, i: usize) {
        self.push_line(src, i, true);
    }

    fn push_line(&mut self, src: &Src<'a>, i: usize, pinned: bool) {
        self.entries.push(Entry {
            text: src.lines[i].clone(),
            raw: i,
            nraw: 1,
            pinned: pinned || src.summary[i],
            signal: src.signal[i],
            verbatim: true,
            digits: src.digits[i],
            summary: src.summary[i],
        });
    }

    /// Shows `text` in place of raw lines `raw..raw + nraw` (a rewritten or grouped line).
    /// The reducer must keep every fact of those lines in `text`.
    pub fn rewrite(&mut self, src: &Src<'a>, text: String, raw: usize, nraw: usize) {
        let signal = (raw..raw + nraw).any(|i| src.signal[i]);
        let summary = (raw..raw + nraw).any(|i| src.summary[i]);
        self.entries.push(Entry {
            text: Cow::Owned(text),
            raw,
            nraw,
            pinned: signal || summary,
            signal,
            verbatim: false,
            digits: false,
            summary,
        });
    }

    /// Adds a line written by the reducer (a count, a cap notice), placed before raw line
    /// `anchor`.
    pub fn note(&mut self, text: String, anchor: usize) {
        self.entries.push(Entry::note(text, anchor));
    }

    /// Hides raw line `i` — unless it reads as an error or warning, which is then pinned
    /// instead. For diagnostics, where such a line is always worth its tokens.
    pub fn hide(&mut self, src: &Src<'a>, i: usize, why: HiddenReason) {
        if src.signal[i] {
            self.pin(src, i);
        } else {
            record(&mut self.hidden, i, why, false);
        }
    }

    /// Hides raw line `i` even when it reads as an error or warning (a grep hit that contains
    /// the word "error"). The caller must show a note that counts what it hides.
    pub fn hide_counted(&mut self, src: &Src<'a>, i: usize, why: HiddenReason) {
        record(&mut self.hidden, i, why, src.signal[i]);
    }

    /// Hides raw line `i`, an excerpt (a grep hit's text, a diff's context, a commit
    /// message, a table row): never counted as an error or warning, whatever words it
    /// holds, here or when a later stage folds it.
    pub fn hide_excerpt(&mut self, i: usize, why: HiddenReason) {
        self.excerpts.push(i);
        record(&mut self.hidden, i, why, false);
    }

    /// [`Out::hide_excerpt`], starting a range of its own even when the last one ends just
    /// before `i`: for the first line under a new marker, so each marker's count matches
    /// the ranges inside its own span.
    pub fn hide_excerpt_apart(&mut self, i: usize, why: HiddenReason) {
        self.excerpts.push(i);
        self.hidden.push(Hidden {
            lines: i..i + 1,
            count: 1,
            why,
            signal: 0,
        });
    }
}

/// Records raw line `i` as hidden for `why`, extending the last range when it continues it.
pub(crate) fn record(hidden: &mut Vec<Hidden>, i: usize, why: HiddenReason, signal: bool) {
    if let Some(last) = hidden.last_mut() {
        if last.why == why && last.lines.end == i {
            last.lines.end = i + 1;
            last.count += 1;
            last.signal += usize::from(signal);
            return;
        }
    }
    hidden.push(Hidden {
        lines: i..i + 1,
        count: 1,
        why,
        signal: usize::from(signal),
    });
}
