//! New output as lines: a follower of one pane's journal hands out each complete
//! line once (escape sequences removed), plus the line still being written, so a
//! pattern is matched the moment its line appears, including a prompt that ends
//! without a newline. Each line comes with its output apart: the echo of typed input
//! left out (see [`crate::echo`]), which is what patterns match unless asked to look
//! at input too.

use crate::{completion::plain_text, echo::Echoes, runtime::PaneRuntime};

/// The most of one unfinished line looked at (a program printing megabytes without
/// a newline is matched on its last part).
const PARTIAL_MAX: u64 = 16 << 10;

/// A line of output and where it starts in the journal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// Journal offset of its first byte.
    pub start: u64,
    /// Its text, without escape sequences or the newline.
    pub text: String,
    /// What of it a program printed: `text` without the echo of typed input (empty
    /// for a line that is only echo).
    pub output: String,
}

impl Line {
    /// The text a pattern looks at: the output, or with `input` the whole line.
    pub fn matched(&self, input: bool) -> &str {
        if input {
            &self.text
        } else {
            &self.output
        }
    }
}

/// Follows one pane's journal from a position.
#[derive(Debug)]
pub struct LineFeed {
    /// Where the next complete line starts.
    pos: u64,
}

impl LineFeed {
    /// A follower from journal offset `pos`.
    pub fn at(pos: u64) -> LineFeed {
        LineFeed { pos }
    }

    /// Where the next complete line starts (after a [`LineFeed::feed`], the start of
    /// the line still being written, if any).
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// A follower of what `runtime` writes from now on.
    pub fn from_now(runtime: &PaneRuntime) -> LineFeed {
        LineFeed::at(runtime.lock().journal.len())
    }

    /// The lines completed since the last call, and the line being written now.
    pub fn feed(&mut self, runtime: &PaneRuntime) -> (Vec<Line>, Option<Line>) {
        let (bytes, echoes) = {
            let mut guard = runtime.lock();
            let data = &mut *guard;
            data.typed.settle(&mut data.journal);
            let end = data.journal.len();
            self.pos = self.pos.max(data.journal.floor()).min(end);
            match data.journal.read(self.pos, end) {
                Ok(bytes) => (
                    bytes,
                    Echoes::around(&data.marks, &data.typed, self.pos, end),
                ),
                Err(_) => {
                    self.pos = end;
                    return (Vec::new(), None);
                }
            }
        };
        let line = |from: usize, to: usize, text: String| {
            let start = self.pos + from as u64;
            let output = if echoes.is_empty() {
                text.clone()
            } else {
                echoes.output_of(&bytes[from..to], start, &text)
            };
            Line {
                start,
                text,
                output,
            }
        };
        let mut lines = Vec::new();
        let mut start = 0usize;
        for (i, byte) in bytes.iter().enumerate() {
            if *byte == b'\n' {
                let text = plain_text(&bytes[start..i]);
                lines.push(line(start, i, text.trim_end_matches('\n').to_string()));
                start = i + 1;
            }
        }
        let partial = (start < bytes.len()).then(|| {
            let from = start.max(bytes.len().saturating_sub(PARTIAL_MAX as usize));
            let mut partial = line(from, bytes.len(), plain_text(&bytes[from..]));
            partial.start = self.pos + start as u64;
            partial
        });
        self.pos += start as u64;
        (lines, partial.filter(|p| !p.text.trim().is_empty()))
    }
}
