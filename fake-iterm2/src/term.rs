//! One terminal behind a fake session: a PTY running a real program, and a VT
//! emulator (`vt100`) holding its screen, scrollback and cursor.
//!
//! Output is shaped by [`OutputSplitter`] so OSC 133 marks are seen at their exact
//! place in the stream: each mark records the cursor's absolute position, like
//! iTerm2's screen marks, and becomes a prompt record. User variables set with
//! `OSC 1337 ; SetUserVar` ([`crate::uservar`]) and custom control sequences
//! (`OSC 1337 ; Custom=id=…:…`) are reported at their place too, in order with the
//! marks.
//!
//! Line numbers are absolute as in iTerm2: line 0 is the first line ever, and
//! lines that fell off the retained scrollback still count (`overflow`). The
//! emulator does not report scrolling once its scrollback is full, so past that
//! point `overflow` is estimated from line feeds.

use cohort_backends::stream::{OutputSplitter, Piece};
use cohort_backends::PromptMark;

use crate::uservar::{Chunk, UserVar, UserVarSplitter};

/// A position: column and absolute line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AbsCoord {
    /// Column.
    pub x: i32,
    /// Absolute line.
    pub y: i64,
}

/// One prompt, as iTerm2's screen marks describe it.
#[derive(Clone, Debug, Default)]
pub struct PromptRecord {
    /// Unique id.
    pub id: String,
    /// Where the prompt started (`A`).
    pub prompt_start: AbsCoord,
    /// Where the prompt ended and input began (`B`).
    pub prompt_end: Option<AbsCoord>,
    /// Where the command's output began (`C`).
    pub output_start: Option<AbsCoord>,
    /// Where the command finished (`D`).
    pub output_end: Option<AbsCoord>,
    /// The command line, once known.
    pub command: Option<String>,
    /// Exit status, once finished.
    pub exit_status: Option<i32>,
}

/// What the output asked of the terminal, in order, for notifications.
#[derive(Clone, Debug)]
pub enum TermEvent {
    /// A prompt mark.
    Mark(MarkEvent),
    /// A user variable set (or unset) with `OSC 1337 ; SetUserVar`.
    UserVar(UserVar),
    /// A notification the program posted (`OSC 9 ; <text>`), or its request for
    /// the user's attention (`OSC 1337 ; RequestAttention=…`, as `None`).
    Alert(Option<String>),
    /// A custom control sequence, `OSC 1337 ; Custom=id=<identity>:<payload>`; like
    /// iTerm2, the terminal shows nothing of it.
    Custom {
        /// The `id` it carried.
        identity: String,
        /// What followed the first `:`.
        payload: String,
    },
}

/// What a mark did, for notifications.
#[derive(Clone, Debug)]
pub enum MarkEvent {
    /// `B`: the prompt is drawn.
    Prompt(String),
    /// `C`: a command started.
    CommandStart(String, String),
    /// `D`: a command ended.
    CommandEnd(String, i32),
}

/// The notifications (`OSC 9`) and requests for attention a piece of output holds,
/// whole within it (what is injected comes in one piece).
fn alerts_in(data: &[u8]) -> Vec<TermEvent> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(at) = rest.windows(2).position(|w| w == b"\x1b]") {
        let body = &rest[at + 2..];
        let Some(end) = body.iter().position(|&b| b == 0x07) else {
            break;
        };
        let osc = &body[..end];
        if let Some(text) = osc.strip_prefix(b"9;") {
            out.push(TermEvent::Alert(Some(
                String::from_utf8_lossy(text).into_owned(),
            )));
        } else if osc.starts_with(b"1337;RequestAttention=") {
            out.push(TermEvent::Alert(None));
        }
        rest = &body[end + 1..];
    }
    out
}

/// One line as GetBuffer reports it.
#[derive(Clone, Debug, Default)]
pub struct Line {
    /// Text, without never-written trailing cells.
    pub text: String,
    /// Code points per cell, run-length encoded `(code points, repeats)`.
    pub cells: Vec<(i32, i32)>,
    /// Whether the row wraps into the next one.
    pub soft_wrap: bool,
}

/// Screen, scrollback and prompts of one session.
pub struct Term {
    parser: vt100::Parser,
    user_vars: UserVarSplitter,
    splitter: OutputSplitter,
    capacity: usize,
    overflow: i64,
    prompts: Vec<PromptRecord>,
    next_prompt: u64,
    session: String,
}

impl Term {
    /// A blank terminal of `cols` × `rows` keeping `scrollback` lines.
    pub fn new(session: &str, cols: u16, rows: u16, scrollback: usize) -> Term {
        Term {
            parser: vt100::Parser::new(rows, cols, scrollback),
            user_vars: UserVarSplitter::default(),
            splitter: OutputSplitter::default(),
            capacity: scrollback,
            overflow: 0,
            prompts: Vec::new(),
            next_prompt: 1,
            session: session.to_string(),
        }
    }

    /// Feeds program output; returns the marks and user variables it contained, in
    /// order.
    pub fn feed(&mut self, data: &[u8]) -> Vec<TermEvent> {
        let mut chunks = Vec::new();
        self.user_vars.push(data, &mut chunks);
        let mut events = alerts_in(data);
        for chunk in chunks {
            let bytes = match chunk {
                Chunk::Bytes(bytes) => bytes,
                Chunk::Set(var) => {
                    events.push(TermEvent::UserVar(var));
                    continue;
                }
            };
            let mut pieces = Vec::new();
            self.splitter.push(&bytes, &mut pieces);
            for piece in pieces {
                match piece {
                    Piece::Bytes(bytes) => self.process(&bytes),
                    Piece::Mark(mark, _) => {
                        if let Some(e) = self.mark(mark) {
                            events.push(TermEvent::Mark(e));
                        }
                    }
                    Piece::Signal { identity, payload } => {
                        events.push(TermEvent::Custom { identity, payload })
                    }
                }
            }
        }
        events
    }

    fn process(&mut self, bytes: &[u8]) {
        let before = self.scrollback_len();
        self.parser.process(bytes);
        let after = self.scrollback_len();
        if after >= self.capacity && self.capacity > 0 {
            let feeds = bytes.iter().filter(|&&b| b == b'\n').count();
            let grown = after.saturating_sub(before);
            self.overflow += feeds.saturating_sub(grown) as i64;
        }
    }

    fn scrollback_len(&mut self) -> usize {
        let screen = self.parser.screen_mut();
        screen.set_scrollback(usize::MAX);
        let len = screen.scrollback();
        screen.set_scrollback(0);
        len
    }

    /// The cursor as an absolute coordinate.
    pub fn cursor(&mut self) -> AbsCoord {
        let (row, col) = self.parser.screen().cursor_position();
        AbsCoord {
            x: col as i32,
            y: self.first_screen_line() + row as i64,
        }
    }

    /// Absolute number of the screen's top line.
    pub fn first_screen_line(&mut self) -> i64 {
        self.overflow + self.scrollback_len() as i64
    }

    /// Lines lost off the top of the scrollback.
    pub fn overflow(&self) -> i64 {
        self.overflow
    }

    /// Retained scrollback lines.
    pub fn history(&mut self) -> i64 {
        self.scrollback_len() as i64
    }

    /// `(cols, rows)`.
    pub fn size(&self) -> (u16, u16) {
        let (rows, cols) = self.parser.screen().size();
        (cols, rows)
    }

    /// Changes the size.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.parser.screen_mut().set_size(rows, cols);
    }

    /// One past the last absolute line.
    pub fn end_line(&mut self) -> i64 {
        self.first_screen_line() + self.size().1 as i64
    }

    /// Whether the program asked for bracketed paste.
    pub fn bracketed_paste(&self) -> bool {
        self.parser.screen().bracketed_paste()
    }

    /// Whether the program switched to the alternate screen.
    pub fn alternate_screen(&self) -> bool {
        self.parser.screen().alternate_screen()
    }

    /// Lines `[start, end)` by absolute number, clamped to what is retained.
    pub fn lines(&mut self, start: i64, end: i64) -> (i64, Vec<Line>) {
        let sb = self.scrollback_len() as i64;
        let rows = self.size().1 as i64;
        let first_kept = self.overflow;
        let total_end = self.overflow + sb + rows;
        let start = start.max(first_kept);
        let end = end.min(total_end);
        let mut out = Vec::new();
        let mut y = start;
        while y < end {
            // Index into scrollback + screen.
            let idx = y - self.overflow;
            let (offset, row) = if idx < sb {
                // Scroll so that line `idx` is the top row.
                ((sb - idx) as usize, 0u16)
            } else {
                (0usize, (idx - sb) as u16)
            };
            let screen = self.parser.screen_mut();
            screen.set_scrollback(offset);
            // Read as many rows as this view shows.
            let mut r = row;
            while (r as i64) < rows && y < end {
                out.push(read_row(self.parser.screen(), r));
                r += 1;
                y += 1;
            }
            self.parser.screen_mut().set_scrollback(0);
        }
        (start, out)
    }

    fn mark(&mut self, mark: PromptMark) -> Option<MarkEvent> {
        let at = self.cursor();
        match mark {
            PromptMark::PromptStart => {
                self.new_prompt(at);
                None
            }
            PromptMark::InputStart => {
                if self.prompts.last().is_none_or(|p| p.prompt_end.is_some()) {
                    self.new_prompt(at);
                }
                let p = self.prompts.last_mut()?;
                p.prompt_end = Some(at);
                Some(MarkEvent::Prompt(p.id.clone()))
            }
            PromptMark::CommandStart => {
                if self.prompts.last().is_none_or(|p| p.output_start.is_some()) {
                    self.new_prompt(at);
                }
                let from = {
                    let p = self.prompts.last()?;
                    p.prompt_end.unwrap_or(p.prompt_start)
                };
                let command = self.text_between(from, at);
                let p = self.prompts.last_mut()?;
                p.output_start = Some(at);
                p.command = Some(command.clone());
                Some(MarkEvent::CommandStart(p.id.clone(), command))
            }
            PromptMark::CommandFinished { exit_status } => {
                if self.prompts.last().is_none_or(|p| p.output_end.is_some()) {
                    self.new_prompt(at);
                }
                let p = self.prompts.last_mut()?;
                if p.output_start.is_none() {
                    p.output_start = Some(p.prompt_end.unwrap_or(p.prompt_start));
                }
                p.output_end = Some(at);
                let status = exit_status.unwrap_or(0);
                p.exit_status = Some(status);
                Some(MarkEvent::CommandEnd(p.id.clone(), status))
            }
        }
    }

    fn new_prompt(&mut self, at: AbsCoord) {
        let id = format!("{}-prompt-{}", self.session, self.next_prompt);
        self.next_prompt += 1;
        self.prompts.push(PromptRecord {
            id,
            prompt_start: at,
            ..Default::default()
        });
        if self.prompts.len() > 4096 {
            self.prompts.drain(..1024);
        }
    }

    /// Text from `from` up to `to` (the command line typed after a prompt).
    fn text_between(&mut self, from: AbsCoord, to: AbsCoord) -> String {
        let (first, lines) = self.lines(from.y, to.y + 1);
        let mut out = String::new();
        for (i, line) in lines.iter().enumerate() {
            let y = first + i as i64;
            let start = if y == from.y { from.x } else { 0 };
            let end = if y == to.y { to.x } else { i32::MAX };
            let text: String = cells_text(line, start, end);
            out.push_str(&text);
            if y < to.y && !line.soft_wrap && y + 1 < to.y {
                out.push('\n');
            }
        }
        out.trim().to_string()
    }

    /// The prompt with this id, or the last one.
    pub fn prompt(&self, id: Option<&str>) -> Option<&PromptRecord> {
        match id {
            Some(id) => self.prompts.iter().find(|p| p.id == id),
            None => self.prompts.last(),
        }
    }

    /// Every prompt id, oldest first.
    pub fn prompt_ids(&self) -> Vec<String> {
        self.prompts.iter().map(|p| p.id.clone()).collect()
    }
}

/// Text of the cells `[start, end)` of a line.
fn cells_text(line: &Line, start: i32, end: i32) -> String {
    let mut chars = line.text.chars();
    let mut out = String::new();
    let mut cell = 0i32;
    for &(points, repeats) in &line.cells {
        for _ in 0..repeats {
            let taken: String = (0..points).filter_map(|_| chars.next()).collect();
            if cell >= start && cell < end {
                out.push_str(&taken);
            }
            cell += 1;
        }
    }
    out
}

fn read_row(screen: &vt100::Screen, row: u16) -> Line {
    let (_, cols) = screen.size();
    let mut cells: Vec<(i32, String)> = Vec::with_capacity(cols as usize);
    let mut last_written = 0usize;
    for col in 0..cols {
        let Some(cell) = screen.cell(row, col) else {
            break;
        };
        if cell.is_wide_continuation() {
            cells.push((0, String::new()));
            continue;
        }
        let contents = cell.contents();
        if contents.is_empty() {
            cells.push((1, " ".to_string()));
        } else {
            cells.push((contents.chars().count() as i32, contents.to_string()));
            last_written = cells.len();
        }
    }
    // Keep a wide character's right half with it.
    while last_written < cells.len() && cells[last_written].0 == 0 {
        last_written += 1;
    }
    cells.truncate(last_written);
    let mut text = String::new();
    let mut runs: Vec<(i32, i32)> = Vec::new();
    for (points, s) in &cells {
        text.push_str(s);
        match runs.last_mut() {
            Some((p, n)) if p == points => *n += 1,
            _ => runs.push((*points, 1)),
        }
    }
    Line {
        text,
        cells: runs,
        soft_wrap: screen.row_wrapped(row),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_record_positions_and_commands() {
        let mut t = Term::new("S", 20, 5, 100);
        let e = t.feed(b"\x1b]133;A\x07$ \x1b]133;B\x07");
        assert!(matches!(&e[..], [TermEvent::Mark(MarkEvent::Prompt(_))]));
        let e = t.feed(
            b"echo hi\r\n\x1b]133;C\x07hi\r\n\x1b]1337;SetUserVar=v=aGk=\x07\x1b]133;D;3\x07",
        );
        match &e[..] {
            [TermEvent::Mark(MarkEvent::CommandStart(_, cmd)), TermEvent::UserVar(var), TermEvent::Mark(MarkEvent::CommandEnd(_, 3))] =>
            {
                assert_eq!(cmd, "echo hi");
                assert_eq!((var.name.as_str(), var.value.as_deref()), ("v", Some("hi")));
            }
            other => panic!("{other:?}"),
        }
        let p = t.prompt(None).unwrap();
        assert_eq!(p.output_start, Some(AbsCoord { x: 0, y: 1 }));
        assert_eq!(p.output_end, Some(AbsCoord { x: 0, y: 2 }));
    }

    #[test]
    fn scrollback_lines_keep_absolute_numbers() {
        let mut t = Term::new("S", 10, 3, 100);
        for i in 0..10 {
            t.feed(format!("line{i}\r\n").as_bytes());
        }
        assert_eq!(t.first_screen_line(), 8);
        let (first, lines) = t.lines(0, 11);
        assert_eq!(first, 0);
        assert_eq!(lines[0].text, "line0");
        assert_eq!(lines[9].text, "line9");
        assert_eq!(lines.len(), 11);
    }

    #[test]
    fn wide_characters_take_two_cells() {
        let mut t = Term::new("S", 10, 2, 10);
        t.feed("日x".as_bytes());
        let (_, lines) = t.lines(0, 1);
        assert_eq!(lines[0].text, "日x");
        assert_eq!(lines[0].cells, vec![(1, 1), (0, 1), (1, 1)]);
    }
}
