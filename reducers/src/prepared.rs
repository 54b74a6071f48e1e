//! Reducing while the output arrives.
//!
//! Most of a reduction's time goes to work on each line alone: decoding, cleaning,
//! classifying (errors, digits, summaries). [`Prepared`] does that as a command's output
//! streams in, a piece at a time, so that when the command ends only the stages that
//! need every line (the reducer, folding, elision) are left. The result is the one
//! [`reduce`](crate::reduce) gives for the same bytes: the line stages read one line at
//! a time and no pattern they use crosses a newline, so pieces cut after a newline are
//! read as the whole is.
//!
//! What it keeps is the output's text once (as [`reduce`](crate::reduce) reads it) and a
//! few bytes per line; what it cannot do as well as the whole reduction, it gives up on
//! and says so: output past the size reduced whole (read as head, middle and tail from
//! the bytes) and output with NUL bytes (binary).

use std::borrow::Cow;

use crate::decode::{decode_counting, Counts};
use crate::doc::{classify, LineKind, Src};
use crate::large::WHOLE_LIMIT;
use crate::{Options, Reduced};

/// A cleaned line: `len` bytes of the text from `start` (cleaning only trimmed it), or
/// [`REWRITTEN`]: the next of the rewritten lines.
#[derive(Clone, Copy, Debug)]
struct LineAt {
    start: u32,
    len: u32,
}

/// The `len` of a line cleaning rewrote.
const REWRITTEN: u32 = u32::MAX;

/// Every line prepared so far: where its cleaned text is, and what it is.
#[derive(Debug, Default)]
struct Lines {
    at: Vec<LineAt>,
    /// The lines cleaning rewrote, in order.
    rewritten: Vec<String>,
    signal: Vec<bool>,
    digits: Vec<bool>,
    summary: Vec<bool>,
}

impl Lines {
    /// Adds a line whose raw text starts at byte `start` of the text.
    fn push(&mut self, start: u32, cleaned: Cow<'_, str>, kind: LineKind) {
        self.at.push(match cleaned {
            // Cleaning only trimmed it: a prefix of the raw line.
            Cow::Borrowed(line) => LineAt {
                start,
                len: line.len() as u32,
            },
            Cow::Owned(line) => {
                self.rewritten.push(line);
                LineAt {
                    start,
                    len: REWRITTEN,
                }
            }
        });
        self.signal.push(kind.signal);
        self.digits.push(kind.digits);
        self.summary.push(kind.summary);
    }

    /// The lines as the reducers read them, over `text`, the text they were found in.
    fn into_src(self, text: &str) -> Src<'_> {
        let mut rewritten = self.rewritten.into_iter();
        let lines = self
            .at
            .iter()
            .map(|at| match at.len {
                REWRITTEN => Cow::Owned(rewritten.next().unwrap_or_default()),
                len => {
                    let start = at.start as usize;
                    Cow::Borrowed(&text[start..start + len as usize])
                }
            })
            .collect();
        Src {
            lines,
            signal: self.signal,
            digits: self.digits,
            summary: self.summary,
        }
    }
}

/// A command's output, its lines cleaned and classified as they arrived.
#[derive(Debug, Default)]
pub struct Prepared {
    /// The text of every ended line taken, decoded.
    text: String,
    /// The bytes of a line not ended yet.
    partial: Vec<u8>,
    /// What decoding found in the ended lines.
    counts: Counts,
    /// The ended lines, cleaned and classified.
    lines: Lines,
    /// Too big or binary: nothing is kept, and the output is reduced whole.
    given_up: bool,
}

impl Prepared {
    /// The most bytes it takes: a bigger output is reduced as head, middle and tail
    /// from its bytes, and [`Prepared`] gives up on it.
    pub const MAX_LEN: usize = WHOLE_LIMIT;

    /// Nothing taken yet.
    pub fn new() -> Prepared {
        Prepared::default()
    }

    /// Takes the next bytes of the output. Lines are prepared as they end; a line's
    /// bytes may come in several pieces.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.given_up {
            return;
        }
        if self.counts.len + self.partial.len() + bytes.len() > WHOLE_LIMIT {
            return self.give_up();
        }
        let Some(last) = bytes.iter().rposition(|b| *b == b'\n') else {
            self.partial.extend_from_slice(bytes);
            return;
        };
        let (ended, rest) = bytes.split_at(last + 1);
        if self.partial.is_empty() {
            self.take(ended);
        } else {
            let mut piece = std::mem::take(&mut self.partial);
            piece.extend_from_slice(ended);
            self.take(&piece);
        }
        if !self.given_up {
            self.partial.extend_from_slice(rest);
        }
    }

    /// Bytes taken so far.
    pub fn len(&self) -> usize {
        self.counts.len + self.partial.len()
    }

    /// Whether nothing was taken.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it gave up (the output is too big to reduce whole, or binary):
    /// [`finish`](Self::finish) will say `None`.
    pub fn given_up(&self) -> bool {
        self.given_up
    }

    /// Whether [`finish`](Self::finish) takes `rest` (or what is left of it once
    /// cleaned of escapes): it has not given up, and `rest` is neither binary nor too
    /// much.
    pub fn takes(&self, rest: &[u8]) -> bool {
        !self.given_up && self.len() + rest.len() <= WHOLE_LIMIT && !rest.contains(&0)
    }

    /// The reduction of every byte taken and then `rest`, as
    /// [`reduce`](crate::reduce) reduces them all; `None` when it gave up, and the
    /// caller reduces the whole output itself.
    pub fn finish(mut self, command: &str, rest: &[u8], options: &Options) -> Option<Reduced> {
        self.push(rest);
        if !self.partial.is_empty() && !self.given_up {
            let last = std::mem::take(&mut self.partial);
            self.take(&last);
        }
        if self.given_up {
            return None;
        }
        let (binary, notices) = self.counts.verdict();
        let Prepared { text, lines, .. } = self;
        let (reduced, _) = crate::reduce_text(
            command,
            &text,
            binary,
            notices,
            options,
            false,
            0,
            |text, binary| {
                if binary {
                    // Mostly invalid UTF-8: binary lines are cleaned otherwise.
                    Src::new(text, true)
                } else {
                    lines.into_src(text)
                }
            },
        );
        Some(reduced)
    }

    /// Prepares `piece`: ended lines, or the last of the output.
    fn take(&mut self, piece: &[u8]) {
        let (text, counts) = decode_counting(piece);
        if counts.nul > 0 {
            return self.give_up();
        }
        self.counts.add(counts);
        let base = self.text.len();
        let lines = &mut self.lines;
        // Offsets fit: the text is at most `WHOLE_LIMIT` bytes and a few replacement
        // characters.
        classify(&text, false, |start, cleaned, kind| {
            lines.push((base + start) as u32, cleaned, kind)
        });
        self.text.push_str(&text);
    }

    /// Drops everything: the whole output is reduced by the caller.
    fn give_up(&mut self) {
        *self = Prepared {
            given_up: true,
            ..Prepared::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::Prepared;
    use crate::random::Random;
    use crate::{reduce, Options};

    /// `raw` pushed in pieces cut at random places reduces as the whole does.
    fn same_in_pieces(command: &str, raw: &[u8], options: &Options, random: &mut Random) {
        let whole = reduce(command, raw, options);
        let mut prepared = Prepared::new();
        let mut at = 0;
        let end = raw.len() - random.below(raw.len().min(300) + 1);
        while at < end {
            let most = if random.coin() { 64 } else { 64 << 10 };
            let step = 1 + random.below(most);
            let to = (at + step).min(end);
            prepared.push(&raw[at..to]);
            at = to;
        }
        let Some(pieces) = prepared.finish(command, &raw[at..], options) else {
            assert!(
                raw.contains(&0) || raw.len() > super::WHOLE_LIMIT,
                "gave up on {} bytes",
                raw.len()
            );
            return;
        };
        assert_eq!(pieces.text, whole.text, "{command}");
        assert_eq!(pieces.reducer, whole.reducer);
        assert_eq!(pieces.raw_lines, whole.raw_lines);
        assert_eq!(pieces.shown_lines, whole.shown_lines);
        assert_eq!(pieces.raw_tokens, whole.raw_tokens);
        assert_eq!(pieces.shown_tokens, whole.shown_tokens);
        assert_eq!(pieces.hidden, whole.hidden);
        assert_eq!(pieces.notices, whole.notices);
    }

    #[test]
    fn pieces_reduce_as_the_whole_for_every_fixture() {
        let mut random = Random::new(7);
        let tight = Options {
            max_lines: Some(30),
            head: 10,
            tail: 10,
            max_line_width: Some(60),
            ..Options::default()
        };
        for fixture in crate::tests::all_fixtures() {
            for options in [&Options::default(), &tight] {
                same_in_pieces(&fixture.command, &fixture.raw, options, &mut random);
            }
        }
    }

    #[test]
    fn pieces_reduce_as_the_whole_for_random_output() {
        let mut random = Random::new(11);
        for _ in 0..300 {
            // Random bytes nearly always hold a NUL, on which the preparing gives up
            // (the whole is reduced at the end): most outputs here have none, so
            // that the pieces are compared with the whole.
            let nul = random.below(4) == 0;
            let mut raw = Vec::new();
            for _ in 0..random.below(400) {
                let bytes = random.bytes(80);
                raw.extend(bytes.into_iter().filter(|b| nul || *b != 0));
                raw.extend(random.pick(&[&b"\n"[..], b"\r\n", b"\r", b""]));
            }
            if raw.is_empty() {
                continue;
            }
            let command = random.pick(&["cargo build", "pytest", "git status", "ls -l", "seq 9"]);
            same_in_pieces(command, &raw, &Options::default(), &mut random);
        }
    }

    #[test]
    fn many_similar_lines_reduce_as_the_whole() {
        let mut raw = Vec::new();
        for i in 1..=20_000 {
            raw.extend(format!("{i}\r\n").as_bytes());
        }
        same_in_pieces(
            "seq 1 20000",
            &raw,
            &Options::default(),
            &mut Random::new(3),
        );
    }

    #[test]
    fn gives_up_on_binary_and_on_output_too_big_to_reduce_whole() {
        let mut binary = Prepared::new();
        binary.push(b"ELF\x00\x01\n");
        assert!(binary.given_up() && binary.is_empty());
        assert!(binary
            .finish("cat a.out", b"", &Options::default())
            .is_none());

        let mut big = Prepared::new();
        let line = [b'x'; 1023];
        for _ in 0..(super::WHOLE_LIMIT / 1024) {
            big.push(&line);
            big.push(b"\n");
        }
        assert!(!big.given_up());
        big.push(b"one more line\n");
        assert!(big.given_up() && big.is_empty());
    }
}
