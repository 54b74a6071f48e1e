//! Line cleaning: CRLF, carriage-return redraws, ANSI/OSC/DCS sequences, control characters
//! and trailing blanks.

use std::borrow::Cow;

/// Splits text into raw lines: on `\n`, with no empty last line for a trailing newline. The
/// index of a line in this sequence is its raw line number (0-based).
pub(crate) fn raw_lines(text: &str) -> RawLines<'_> {
    RawLines { text, at: 0 }
}

/// The iterator of [`raw_lines`]: a plain byte search for `\n` (it vectorises), cheaper per
/// line than the generic `char` pattern searcher on outputs of many short lines.
pub(crate) struct RawLines<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for RawLines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self
            .text
            .as_bytes()
            .get(self.at..)
            .filter(|r| !r.is_empty())?;
        let len = find_newline(rest).unwrap_or(rest.len());
        let line = &self.text[self.at..self.at + len];
        self.at += len + 1;
        Some(line)
    }
}

/// What one pass over a raw line's bytes tells: whether it may hold anything beyond
/// printable text and tabs (a cheap test that vectorises; [`needs_cleaning`] confirms),
/// and whether it holds a digit (for the similar-line folding, which then need not look
/// again).
fn scan(bytes: &[u8]) -> (bool, bool) {
    // Two plain OR-folds: each vectorises, where one fold with two flags does not.
    let suspect = bytes.iter().fold(false, |acc, &b| {
        acc | ((b < 0x20 && b != b'\t') || b == 0x7f || b == 0xc2)
    });
    let digits = bytes.iter().fold(false, |acc, &b| acc | b.is_ascii_digit());
    (suspect, digits)
}

/// The first `\n` in `bytes`, eight bytes at a time: a word holds a newline byte when
/// XOR with a word of newlines leaves a zero byte (the classic SWAR test, exact for the first
/// match because only the lowest flagged byte is used).
fn find_newline(bytes: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = LO * b'\n' as u64;
    let mut k = 0;
    while k + 8 <= bytes.len() {
        let w = u64::from_le_bytes(bytes[k..k + 8].try_into().expect("8 bytes")) ^ NL;
        let zero = w.wrapping_sub(LO) & !w & HI;
        if zero != 0 {
            return Some(k + (zero.trailing_zeros() / 8) as usize);
        }
        k += 8;
    }
    bytes[k..].iter().position(|&b| b == b'\n').map(|p| k + p)
}

/// Whether a line holds anything beyond printable text and tabs, given [`scan`]'s first
/// answer; the C1 check only when a 0xC2 lead byte is there.
fn needs_cleaning(line: &str, suspect: bool, binary: bool) -> bool {
    let bytes = line.as_bytes();
    (suspect
        && bytes.iter().enumerate().any(|(i, &b)| {
            (b < 0x20 && b != b'\t')
                || b == 0x7f
                || (b == 0xc2 && matches!(bytes.get(i + 1), Some(0x80..=0x9f)))
        }))
        || (binary && line.contains(char::REPLACEMENT_CHARACTER))
}

/// Cleans one raw line (without its `\n`). Borrows when only trailing blanks go.
///
/// - a trailing `\r` (CRLF) goes;
/// - first of all, the line-editing controls that progress bars and spinners use act as a
///   terminal acts on them: `\r` and `ESC[nG` move to a column, `ESC[K` erases, backspace
///   steps back, later text overwrites earlier (a line the editing leaves blank keeps its
///   last non-blank state);
/// - ANSI CSI, OSC, DCS, SOS, PM and APC sequences go (strip-ansi-escapes, run between tabs
///   because it drops tabs), then every remaining C0/C1 control except tab;
/// - in binary output, runs of U+FFFD shrink to one;
/// - trailing whitespace goes.
#[cfg(test)]
pub(crate) fn clean_line(line: &str, binary: bool) -> Cow<'_, str> {
    clean_line_digits(line, binary).0
}

/// [`clean_line`], and whether the cleaned line holds an ASCII digit.
pub(crate) fn clean_line_digits(line: &str, binary: bool) -> (Cow<'_, str>, bool) {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let (suspect, digits) = scan(line.as_bytes());
    if !needs_cleaning(line, suspect, binary) {
        // Most lines end in a printable ASCII byte: nothing to trim, no need to look.
        let trimmed = match line.as_bytes().last() {
            Some(&b) if b.is_ascii_graphic() => line,
            _ => line.trim_end(),
        };
        return (Cow::Borrowed(trimmed), digits);
    }
    let cleaned = if line.contains(['\r', '\u{8}']) || has_editing_csi(line) {
        clean_segment(&edit_line(line), binary)
    } else {
        clean_segment(line, binary)
    };
    let trimmed = cleaned.trim_end().len();
    let mut cleaned = cleaned;
    cleaned.truncate(trimmed);
    let digits = cleaned.bytes().any(|b| b.is_ascii_digit());
    (Cow::Owned(cleaned), digits)
}

/// Whether `line` holds a CSI sequence that moves along or erases the line (`ESC[nG`,
/// `ESC[nC`, `ESC[nD`, `ESC[K`).
fn has_editing_csi(line: &str) -> bool {
    let b = line.as_bytes();
    let mut at = 0;
    while let Some(p) = b[at..].iter().position(|&c| c == 0x1b) {
        let mut k = at + p + 1;
        if b.get(k) == Some(&b'[') {
            k += 1;
            while b.get(k).is_some_and(|c| (0x20..=0x3f).contains(c)) {
                k += 1;
            }
            if matches!(b.get(k), Some(b'G' | b'K' | b'C' | b'D')) {
                return true;
            }
        }
        at = k;
    }
    false
}

/// Renders a line as a terminal would: `\r`, `ESC[nG`, `ESC[nC`, `ESC[nD` and backspace move
/// the cursor, `ESC[K` (0, 1, 2) erases, text overwrites; every other escape sequence is
/// dropped. When the editing leaves the line blank, its last non-blank state is returned.
fn edit_line(line: &str) -> String {
    let mut cells: Vec<char> = Vec::with_capacity(line.len());
    let mut last_shown: Vec<char> = Vec::new();
    let mut at = 0usize;
    let mut chars = line.chars().peekable();
    let blank = |cells: &[char]| cells.iter().all(|c| c.is_whitespace());
    while let Some(c) = chars.next() {
        match c {
            '\r' => at = 0,
            '\u{8}' => at = at.saturating_sub(1),
            // An escape inside an escape starts it again.
            '\u{1b}' if chars.peek() == Some(&'\u{1b}') => {}
            // Controls inside an escape sequence do not end it.
            '\u{1b}' => match chars.find(|c| *c == '\u{1b}' || !c.is_ascii_control()) {
                Some('\u{1b}') => {}
                Some('[') => {
                    let mut n = 0usize;
                    let mut fin = None;
                    for p in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&p) {
                            fin = Some(p);
                            break;
                        }
                        if let Some(d) = p.to_digit(10) {
                            n = n.saturating_mul(10).saturating_add(d as usize);
                        }
                    }
                    let erases_all = matches!(fin, Some('K')) && (n == 2 || at == 0);
                    if erases_all && !blank(&cells) {
                        last_shown.clone_from(&cells);
                    }
                    match fin {
                        Some('G') => at = n.max(1) - 1,
                        Some('C') => at = at.saturating_add(n.max(1)),
                        Some('D') => at = at.saturating_sub(n.max(1)),
                        Some('K') if n == 2 => cells.clear(),
                        Some('K') if n == 1 => {
                            for cell in cells.iter_mut().take(at.saturating_add(1)) {
                                *cell = ' ';
                            }
                        }
                        Some('K') => cells.truncate(at),
                        _ => {}
                    }
                }
                // String sequences (OSC, DCS, APC, PM, SOS) up to BEL or ST.
                Some(']' | 'P' | '_' | '^' | 'X') => {
                    while let Some(p) = chars.next() {
                        if p == '\u{7}' || (p == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                // Intermediates (` ` to `/`), then one final character.
                Some(' '..='/') => {
                    while chars.next_if(|c| (' '..='/').contains(c)).is_some() {}
                    chars.next();
                }
                _ => {}
            },
            c if c == '\t' || !c.is_control() => {
                if at > cells.len() {
                    cells.resize(at, ' ');
                }
                if at < cells.len() {
                    cells[at] = c;
                } else {
                    cells.push(c);
                }
                at += 1;
            }
            _ => {}
        }
    }
    if blank(&cells) {
        last_shown.into_iter().collect()
    } else {
        cells.into_iter().collect()
    }
}

fn clean_segment(segment: &str, binary: bool) -> String {
    let mut s = segment.to_owned();
    if s.contains('\u{1b}') {
        s = strip_escapes(&s);
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let control = (c < ' ' && c != '\t') || ('\u{7f}'..='\u{9f}').contains(&c);
        if control {
            continue;
        }
        if binary && c == char::REPLACEMENT_CHARACTER && out.ends_with(c) {
            continue;
        }
        out.push(c);
    }
    out
}

fn strip_escapes(s: &str) -> String {
    if let Some(out) = strip_csi(s) {
        return out;
    }
    let mut out = String::with_capacity(s.len());
    for (i, piece) in s.split('\t').enumerate() {
        if i > 0 {
            out.push('\t');
        }
        if piece.contains('\u{1b}') {
            let stripped = strip_ansi_escapes::strip(piece.as_bytes());
            out.push_str(&String::from_utf8_lossy(&stripped));
        } else {
            out.push_str(piece);
        }
    }
    out
}

/// The common case of colour output, without the terminal parser: when every escape in `s`
/// is a well-formed CSI sequence (`ESC [`, parameter and intermediate bytes, one final
/// byte), those sequences go and everything else stays, which is what the parser does with
/// them too (it prints nothing for any CSI sequence). Anything else (OSC, DCS, a lone or
/// cut-off escape, a control byte inside a sequence) returns `None`: the parser handles it.
fn strip_csi(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    while let Some(esc) = b[at..].iter().position(|&c| c == 0x1b).map(|p| at + p) {
        out.push_str(&s[at..esc]);
        if b.get(esc + 1) != Some(&b'[') {
            return None;
        }
        let mut k = esc + 2;
        while b.get(k).is_some_and(|c| (0x20..=0x3f).contains(c)) {
            k += 1;
        }
        if !b.get(k).is_some_and(|c| (0x40..=0x7e).contains(c)) {
            return None;
        }
        at = k + 1;
    }
    out.push_str(&s[at..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(s: &str) -> String {
        clean_line(s, false).into_owned()
    }

    #[test]
    fn plain_lines_are_borrowed_and_trimmed() {
        assert!(matches!(clean_line("abc  \t", false), Cow::Borrowed("abc")));
        assert_eq!(clean("a\tb"), "a\tb");
    }

    #[test]
    fn crlf_and_progress_bars() {
        assert_eq!(clean("done\r"), "done");
        assert_eq!(clean(" 10%\r 50%\r100%"), "100%");
        assert_eq!(clean("100%\r\u{1b}[K"), "100%");
    }

    #[test]
    fn spinners_and_column_moves_act_like_a_terminal() {
        // npm's spinner: a frame, back to column 1, erase, the message.
        assert_eq!(
            clean("\u{280b}\u{1b}[1G\u{1b}[0K\u{2819}\u{1b}[1G\u{1b}[0Knpm error code ENOTCACHED"),
            "npm error code ENOTCACHED"
        );
        assert_eq!(clean("abcdef\u{1b}[3Gx"), "abxdef");
        assert_eq!(clean("abc\u{1b}[2K\rxy"), "xy");
        assert_eq!(clean("\u{1b}[31mred\u{1b}[0m\r\u{1b}[2Cd"), "red");
        assert_eq!(clean("long progress 50%\rshort"), "shortprogress 50%");
        // `ESC`, intermediates and a final character are one sequence, as to the parser.
        assert_eq!(clean("\r\u{1b}  1:5 x"), clean("\u{1b}  1:5 x"));
    }

    #[test]
    fn escapes_and_controls() {
        assert_eq!(clean("\u{1b}[1;31merror\u{1b}[0m:\tbad"), "error:\tbad");
        assert_eq!(clean("\u{1b}]0;title\u{7}text"), "text");
        assert_eq!(
            clean("\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\"),
            "link"
        );
        assert_eq!(clean("\u{1b}P1$r0m\u{1b}\\after"), "after");
        assert_eq!(clean("bell\u{7} and \u{1}soh"), "bell and soh");
        assert_eq!(clean("_\u{8}Ab\u{8}B"), "AB");
        assert_eq!(clean("c1\u{9b}x"), "c1x");
    }

    #[test]
    fn csi_fast_path_agrees_with_the_parser() {
        for s in [
            "\u{1b}[1;31merror\u{1b}[0m: bad",
            "\u{1b}[38;5;196mred\u{1b}[m and \u{1b}[?25lhidden cursor\u{1b}[2K",
            "a\u{1b}[1 qb",
            "\u{1b}[31m世界\u{1b}[0m🎉",
            "plain \u{1b}[Kend",
        ] {
            let fast = strip_csi(s).expect("only CSI here");
            let parser = String::from_utf8(strip_ansi_escapes::strip(s.as_bytes())).unwrap();
            assert_eq!(fast, parser, "{s:?}");
        }
        for s in [
            "\u{1b}]0;t\u{7}x",
            "\u{1b}Px\u{1b}\\",
            "cut \u{1b}[31",
            "lone \u{1b}",
            "\u{1b}[3\u{1}m",
        ] {
            assert_eq!(strip_csi(s), None, "{s:?}");
        }
    }

    #[test]
    fn csi_fast_path_agrees_on_every_recorded_line() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/reducers");
        let mut checked = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("out") {
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            for line in text
                .lines()
                .filter(|l| l.contains('\u{1b}') && !l.contains('\t'))
            {
                if let Some(fast) = strip_csi(line) {
                    let parser = strip_ansi_escapes::strip(line.as_bytes());
                    assert_eq!(fast, String::from_utf8_lossy(&parser), "{path:?}: {line:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 100, "{checked}");
    }

    #[test]
    fn binary_replacement_runs_shrink() {
        assert_eq!(
            clean_line("a\u{fffd}\u{fffd}\u{fffd}b\u{0}", true),
            "a\u{fffd}b"
        );
    }

    #[test]
    fn newline_search_finds_the_first() {
        for text in [
            "",
            "a",
            "\n",
            "abcdefgh\n",
            "abcdefghij\nk\n",
            "\u{e9}\u{e9}\u{e9}\u{e9}x\ny",
        ] {
            assert_eq!(find_newline(text.as_bytes()), text.find('\n'), "{text:?}");
        }
        let long: String = "x".repeat(37) + "\n\n";
        assert_eq!(find_newline(long.as_bytes()), Some(37));
    }

    #[test]
    fn raw_line_numbering() {
        assert_eq!(raw_lines("").count(), 0);
        assert_eq!(raw_lines("a\nb\n").collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(raw_lines("a\n\nb").count(), 3);
    }
}
