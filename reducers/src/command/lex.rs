//! The lexer: one level of a command line into commands, words and redirections.
//!
//! It works on bytes (every character with a meaning to the shell is ASCII, and UTF-8
//! never uses ASCII bytes inside a multi-byte character) and reads each byte once;
//! nested constructs are skipped with [`skip_nested`] and kept as text for the caller.

use super::scan::{ansi_c_end, single_quote_end, skip_nested, Frame};
use super::{Body, BodyKind, Command, Redirect, RedirectOp, Script, Separator, Word};

pub(super) fn parse(line: &str) -> Script {
    let mut lexer = Lexer {
        s: line.as_bytes(),
        i: 0,
        commands: Vec::new(),
        cur: Command::default(),
        word: None,
        redirect: None,
        here_docs: Vec::new(),
        complete: true,
    };
    lexer.run();
    Script {
        commands: lexer.commands,
        complete: lexer.complete,
    }
}

/// A word being read.
struct WordBuf {
    text: Vec<u8>,
    start: usize,
    quoted: bool,
    substitutions: Vec<String>,
}

/// A here-document whose body comes after the next newline.
struct PendingHereDoc {
    /// Index of its command in `commands` (the command is pushed before bodies are read).
    command: usize,
    redirect: usize,
    delimiter: Vec<u8>,
    strip_tabs: bool,
    quoted: bool,
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
    commands: Vec<Command>,
    cur: Command,
    word: Option<WordBuf>,
    /// A redirection operator waiting for its target word.
    redirect: Option<(Option<u32>, RedirectOp)>,
    here_docs: Vec<PendingHereDoc>,
    complete: bool,
}

/// Words that may come before a command without being it.
pub(super) fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "!" | "if" | "then" | "elif" | "else" | "while" | "until" | "do" | "time"
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl Lexer<'_> {
    fn run(&mut self) {
        let s = self.s;
        while let Some(&c) = s.get(self.i) {
            let next = s.get(self.i + 1).copied();
            if self.group_opens(c) {
                continue;
            }
            match c {
                b' ' | b'\t' | b'\r' => {
                    self.end_word();
                    self.i += 1;
                }
                b'\n' => {
                    self.i += 1;
                    self.end_command(Separator::Newline);
                    self.read_here_docs();
                }
                b'\\' => {
                    if next == Some(b'\n') {
                        // A line continuation joins the lines.
                    } else {
                        let w = self.word();
                        w.quoted = true;
                        w.text.extend(next);
                    }
                    self.i += 2;
                }
                b'\'' => {
                    let (end, closed) = single_quote_end(s, self.i);
                    self.quoted_text(self.i + 1, end, closed, false);
                }
                b'"' => self.double_quoted(self.i + 1),
                b'$' if next == Some(b'\'') => {
                    let (end, closed) = ansi_c_end(s, self.i);
                    self.quoted_text(self.i + 2, end, closed, true);
                }
                // `$"…"`: a translated string, otherwise double quotes.
                b'$' if next == Some(b'"') => self.double_quoted(self.i + 2),
                b'$' | b'`' if self.expansion() => {}
                b'<' | b'>' if next == Some(b'(') && self.word.is_none() => {
                    // Process substitution: a word that names a pipe to the code inside.
                    self.substitution(self.i, self.i + 2, Frame::Paren);
                }
                b'#' if self.word.is_none() => {
                    self.i = s[self.i..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(s.len(), |p| self.i + p);
                }
                b'(' => self.open_paren(),
                b')' => {
                    // Unmatched at this level: a `case` pattern's end.
                    self.i += 1;
                    self.end_command(Separator::Semi);
                }
                b'|' => {
                    let (sep, len) = match next {
                        Some(b'|') => (Separator::Or, 2),
                        Some(b'&') => (Separator::PipeAll, 2),
                        _ => (Separator::Pipe, 1),
                    };
                    self.i += len;
                    self.end_command(sep);
                }
                b'&' => match next {
                    Some(b'&') => {
                        self.i += 2;
                        self.end_command(Separator::And);
                    }
                    Some(b'>') => {
                        self.end_word();
                        let append = s.get(self.i + 2) == Some(&b'>');
                        self.i += 2 + usize::from(append);
                        let op = if append {
                            RedirectOp::AppendOutErr
                        } else {
                            RedirectOp::OutErr
                        };
                        self.start_redirect(None, op);
                    }
                    _ => {
                        self.i += 1;
                        self.end_command(Separator::Background);
                    }
                },
                b';' => {
                    // `;;`, `;&` and `;;&` end a `case` arm.
                    self.i += 1;
                    while matches!(s.get(self.i), Some(b';' | b'&')) {
                        self.i += 1;
                    }
                    self.end_command(Separator::Semi);
                }
                b'<' | b'>' => self.redirection(c),
                _ => {
                    self.word().text.push(c);
                    self.i += 1;
                }
            }
        }
        self.end_command(Separator::End);
        if !self.here_docs.is_empty() {
            self.complete = false;
            self.here_docs.clear();
        }
    }

    /// Adds the text of a quote whose inside starts at `from` and that ends at `end`
    /// (just after the closing quote when `closed`); `$'…'` has its escapes decoded.
    fn quoted_text(&mut self, from: usize, end: usize, closed: bool, ansi_c: bool) {
        self.complete &= closed;
        let inner = self
            .s
            .get(from..if closed { end - 1 } else { end })
            .unwrap_or(&[]);
        let inner = if ansi_c {
            decode_ansi_c(inner)
        } else {
            inner.to_vec()
        };
        let w = self.word();
        w.quoted = true;
        w.text.extend_from_slice(&inner);
        self.i = end;
    }

    /// The word being read, started here if there is none.
    fn word(&mut self) -> &mut WordBuf {
        let start = self.i;
        self.word.get_or_insert_with(|| WordBuf {
            text: Vec::new(),
            start,
            quoted: false,
            substitutions: Vec::new(),
        })
    }

    /// Whether a command may start here: nothing but keywords read so far.
    fn at_command(&self) -> bool {
        self.cur.body.is_none()
            && self.cur.redirects.is_empty()
            && self.redirect.is_none()
            && self
                .cur
                .words
                .iter()
                .all(|w| !w.quoted && is_keyword(&w.text))
    }

    /// `{` followed by a blank where a command may start opens a group: its body is read
    /// to the matching `}` and kept as text.
    fn group_opens(&mut self, c: u8) -> bool {
        let plain_brace = self
            .word
            .as_ref()
            .is_some_and(|w| !w.quoted && w.text == b"{" && w.substitutions.is_empty());
        if !(plain_brace && matches!(c, b' ' | b'\t' | b'\n') && self.at_command()) {
            return false;
        }
        self.word = None;
        self.body(self.i, Frame::Brace, BodyKind::Group);
        true
    }

    /// Reads a body whose code starts at `from`, to the closer of `frame`.
    fn body(&mut self, from: usize, frame: Frame, kind: BodyKind) {
        let (end, closed) = skip_nested(self.s, from, frame);
        self.complete &= closed;
        let inner_end = if closed { end - 1 } else { end };
        self.cur.body = Some(Body {
            kind,
            text: text(self.s.get(from..inner_end).unwrap_or(&[])),
        });
        self.i = end;
    }

    fn open_paren(&mut self) {
        let s = self.s;
        if self.word.is_none() && self.at_command() {
            self.body(self.i + 1, Frame::Paren, BodyKind::Subshell);
            return;
        }
        let array = self
            .word
            .as_ref()
            .is_some_and(|w| !w.quoted && w.text.ends_with(b"="));
        if array {
            // `arr=(a b c)`: the list is part of the word.
            let (end, closed) = skip_nested(s, self.i + 1, Frame::Paren);
            self.complete &= closed;
            let raw = &s[self.i..end];
            self.word().text.extend_from_slice(raw);
            self.i = end;
            return;
        }
        let mut j = self.i + 1;
        while matches!(s.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        if s.get(j) == Some(&b')') && self.word.is_some() {
            // `name() { …; }`: a function definition; the body is run when it is called.
            self.end_word();
            j += 1;
            while matches!(s.get(j), Some(b' ' | b'\t' | b'\n')) {
                j += 1;
            }
            match (s.get(j), s.get(j + 1)) {
                (Some(b'{'), Some(b' ' | b'\t' | b'\n')) => {
                    self.body(j + 1, Frame::Brace, BodyKind::Function)
                }
                (Some(b'('), _) => self.body(j + 1, Frame::Paren, BodyKind::Function),
                _ => self.i = j,
            }
            return;
        }
        // A parenthesis inside a word (a syntax error to a shell): kept as text.
        self.word().text.push(b'(');
        self.i += 1;
    }

    /// `$( … )`, `$(( … ))`, `${ … }` or `` ` … ` `` at `self.i`, kept in the word as
    /// written; returns false for a `$` that starts none of them.
    fn expansion(&mut self) -> bool {
        let s = self.s;
        let at = self.i;
        match (s[at], s.get(at + 1), s.get(at + 2)) {
            // Arithmetic (the inner parenthesis nests, so one scan finds `))`) and
            // parameters: kept as written, with the substitutions inside them.
            (b'$', Some(b'('), Some(b'(')) => self.expansion_text(at, at + 2, Frame::Paren),
            (b'$', Some(b'('), _) => self.substitution(at, at + 2, Frame::Paren),
            (b'$', Some(b'{'), _) => self.expansion_text(at, at + 2, Frame::Param),
            (b'`', _, _) => self.substitution(at, at + 1, Frame::Backtick),
            _ => return false,
        }
        true
    }

    /// An expansion opened at `at` whose text starts at `from`: kept in the word as
    /// written, with the code of the substitutions inside it.
    fn expansion_text(&mut self, at: usize, from: usize, frame: Frame) {
        let s = self.s;
        let (end, closed) = skip_nested(s, from, frame);
        self.complete &= closed;
        let inner = &s[from..if closed { end - 1 } else { end }];
        let found = substitutions_in(inner);
        let w = self.word();
        w.text.extend_from_slice(&s[at..end]);
        w.substitutions.extend(found);
        self.i = end;
    }

    /// A substitution opened at `at` whose code starts at `from`: kept in the word as
    /// written, and its code recorded.
    fn substitution(&mut self, at: usize, from: usize, frame: Frame) {
        let s = self.s;
        let (end, closed) = skip_nested(s, from, frame);
        self.complete &= closed;
        let inner = &s[from..if closed { end - 1 } else { end }];
        let w = self.word();
        w.text.extend_from_slice(&s[at..end]);
        w.substitutions.push(text(inner));
        self.i = end;
    }

    /// A double-quoted string whose text starts at `from`.
    fn double_quoted(&mut self, from: usize) {
        let s = self.s;
        self.word().quoted = true;
        self.i = from;
        loop {
            let Some(&c) = s.get(self.i) else {
                self.complete = false;
                return;
            };
            match c {
                b'"' => {
                    self.i += 1;
                    return;
                }
                b'\\' => {
                    let next = s.get(self.i + 1).copied();
                    match next {
                        Some(b'$' | b'`' | b'"' | b'\\') => self.word().text.extend(next),
                        Some(b'\n') => {}
                        _ => {
                            self.word().text.push(b'\\');
                            self.i += 1;
                            continue;
                        }
                    }
                    self.i += 2;
                }
                b'$' | b'`' if self.expansion() => {}
                _ => {
                    self.word().text.push(c);
                    self.i += 1;
                }
            }
        }
    }

    /// `<` or `>` at `self.i`: an operator, with the descriptor digits just before it.
    fn redirection(&mut self, c: u8) {
        let s = self.s;
        let fd_word = self.word.as_ref().is_some_and(|w| {
            !w.quoted
                && !w.text.is_empty()
                && w.text.len() <= 9
                && w.text.iter().all(u8::is_ascii_digit)
                && w.start + w.text.len() == self.i
        });
        let fd = if fd_word {
            self.word
                .take()
                .and_then(|w| String::from_utf8_lossy(&w.text).parse().ok())
        } else {
            self.end_word();
            None
        };
        let rest = &s[self.i..];
        let (op, len) = match (c, rest.get(1), rest.get(2)) {
            (b'>', Some(b'>'), _) => (RedirectOp::Append, 2),
            (b'>', Some(b'|'), _) => (RedirectOp::Clobber, 2),
            (b'>', Some(b'&'), _) => (RedirectOp::DupOut, 2),
            (b'>', _, _) => (RedirectOp::Out, 1),
            (_, Some(b'<'), Some(b'<')) => (RedirectOp::HereString, 3),
            (_, Some(b'<'), Some(b'-')) => (RedirectOp::HereDocTabs, 3),
            (_, Some(b'<'), _) => (RedirectOp::HereDoc, 2),
            (_, Some(b'&'), _) => (RedirectOp::DupIn, 2),
            (_, Some(b'>'), _) => (RedirectOp::ReadWrite, 2),
            _ => (RedirectOp::In, 1),
        };
        self.i += len;
        if matches!(op, RedirectOp::DupOut | RedirectOp::DupIn) {
            // `2>&1`, `>&-`: the descriptor is part of the operator's token.
            let digits = s[self.i..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || **b == b'-')
                .count();
            if digits > 0 {
                let raw = text(&s[self.i..self.i + digits]);
                self.i += digits;
                self.cur.redirects.push(Redirect {
                    fd,
                    op,
                    target: Some(Word {
                        text: raw.clone(),
                        raw,
                        quoted: false,
                        substitutions: Vec::new(),
                    }),
                    here_doc: None,
                });
                return;
            }
        }
        self.start_redirect(fd, op);
    }

    fn start_redirect(&mut self, fd: Option<u32>, op: RedirectOp) {
        self.flush_redirect();
        self.redirect = Some((fd, op));
    }

    /// A redirection whose target never came.
    fn flush_redirect(&mut self) {
        if let Some((fd, op)) = self.redirect.take() {
            self.cur.redirects.push(Redirect {
                fd,
                op,
                target: None,
                here_doc: None,
            });
        }
    }

    /// Ends the word being read: a redirection's target, or the command's next word.
    fn end_word(&mut self) {
        let Some(w) = self.word.take() else {
            return;
        };
        let raw = text(self.s.get(w.start..self.i).unwrap_or(&[]));
        let word = Word {
            text: text(&w.text),
            raw,
            quoted: w.quoted,
            substitutions: w.substitutions,
        };
        if let Some((fd, op)) = self.redirect.take() {
            if matches!(op, RedirectOp::HereDoc | RedirectOp::HereDocTabs) {
                self.here_docs.push(PendingHereDoc {
                    command: self.commands.len(),
                    redirect: self.cur.redirects.len(),
                    delimiter: w.text,
                    strip_tabs: op == RedirectOp::HereDocTabs,
                    quoted: word.quoted,
                });
            }
            self.cur.redirects.push(Redirect {
                fd,
                op,
                target: Some(word),
                here_doc: None,
            });
        } else if !word.quoted && word.text == "}" && self.at_command() {
            // The close of a group this level did not open.
        } else {
            self.cur.words.push(word);
        }
    }

    /// Ends the current command with `then`; an empty one is dropped.
    fn end_command(&mut self, then: Separator) {
        self.end_word();
        self.flush_redirect();
        let cur = std::mem::take(&mut self.cur);
        if !(cur.words.is_empty() && cur.redirects.is_empty() && cur.body.is_none()) {
            self.commands.push(Command { then, ..cur });
        }
    }

    /// After a newline: the bodies of the here-documents opened on the line before.
    fn read_here_docs(&mut self) {
        let s = self.s;
        for doc in std::mem::take(&mut self.here_docs) {
            let from = self.i;
            let mut body_end = None;
            while self.i < s.len() {
                let end = s[self.i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(s.len(), |p| self.i + p);
                let mut line = &s[self.i..end];
                if doc.strip_tabs {
                    while let Some(rest) = line.strip_prefix(b"\t") {
                        line = rest;
                    }
                }
                let line_start = self.i;
                self.i = (end + 1).min(s.len());
                if line == doc.delimiter.as_slice() {
                    body_end = Some(line_start);
                    break;
                }
            }
            self.complete &= body_end.is_some();
            let body = &s[from..body_end.unwrap_or(s.len())];
            let substitutions = if doc.quoted {
                Vec::new()
            } else {
                substitutions_in(body)
            };
            let body = text(body);
            let redirect = self
                .commands
                .get_mut(doc.command)
                .and_then(|c| c.redirects.get_mut(doc.redirect));
            if let Some(redirect) = redirect {
                redirect.here_doc = Some(Word {
                    text: body.clone(),
                    raw: body,
                    quoted: doc.quoted,
                    substitutions,
                });
            }
        }
    }
}

/// The code of every `$( … )` and `` ` … ` `` in expanded text (a here-document body).
fn substitutions_in(s: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        match (s[i], s.get(i + 1), s.get(i + 2)) {
            (b'\\', _, _) => i += 2,
            (b'$', Some(b'('), Some(b'(')) => i = skip_nested(s, i + 2, Frame::Paren).0,
            (b'$', Some(b'('), _) | (b'`', _, _) => {
                let (from, frame) = if s[i] == b'`' {
                    (i + 1, Frame::Backtick)
                } else {
                    (i + 2, Frame::Paren)
                };
                let (end, closed) = skip_nested(s, from, frame);
                out.push(text(&s[from..if closed { end - 1 } else { end }]));
                i = end;
            }
            _ => i += 1,
        }
    }
    out
}

/// Decodes the inside of `$'…'`: `\n`, `\t`, `\\`, `\'`, `\xHH`, octal, `\uHHHH`, `\cX` …
fn decode_ansi_c(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    let digits = |from: usize, max: usize, radix: u32| -> (u32, usize) {
        let mut value = 0u32;
        let mut n = 0;
        while n < max {
            match s.get(from + n).and_then(|&b| (b as char).to_digit(radix)) {
                Some(d) => value = value.saturating_mul(radix).saturating_add(d),
                None => break,
            }
            n += 1;
        }
        (value, n)
    };
    while i < s.len() {
        if s[i] != b'\\' || i + 1 >= s.len() {
            out.push(s[i]);
            i += 1;
            continue;
        }
        let e = s[i + 1];
        i += 2;
        let simple = match e {
            b'a' => Some(7),
            b'b' => Some(8),
            b'e' | b'E' => Some(0x1b),
            b'f' => Some(0xc),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0xb),
            b'\\' | b'\'' | b'"' | b'?' => Some(e),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            continue;
        }
        let code = match e {
            b'0'..=b'7' => {
                let (v, n) = digits(i - 1, 3, 8);
                i += n - 1;
                Some(v & 0xff)
            }
            b'x' | b'u' | b'U' => {
                let max = match e {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let (v, n) = digits(i, max, 16);
                i += n;
                (n > 0).then_some(v)
            }
            b'c' if i < s.len() => {
                i += 1;
                Some(u32::from(s[i - 1] & 0x1f))
            }
            _ => None,
        };
        match code {
            Some(v) if e == b'x' || (b'0'..=b'7').contains(&e) => out.push(v as u8),
            Some(v) => {
                let c = char::from_u32(v).unwrap_or(char::REPLACEMENT_CHARACTER);
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            }
            None => out.extend_from_slice(&[b'\\', e]),
        }
    }
    out
}
