//! Escape sanitising, both ways.
//!
//! Output is stripped of string escape sequences (OSC, DCS, APC, PM, SOS) before it
//! reaches the model: clipboard writes (OSC 52), hyperlinks (OSC 8), title sets,
//! iTerm2 and kitty payloads. Input typed on the model's behalf loses
//! bracketed-paste terminators and stray escape sequences, so text can never break
//! out of a paste or send keys it did not name.

/// Removes string escape sequences (OSC, DCS, APC, PM, SOS: titles, clipboard
/// writes, hyperlinks, images) from output, and zsh's partial-line mark. CSI
/// sequences (colours, cursor moves) are kept for raw reads; the reducers strip them
/// for normal reads.
pub fn sanitize_output(bytes: &[u8]) -> Vec<u8> {
    let out = remove_string_escapes(bytes);
    // zsh's PROMPT_SP: before each prompt, the end-of-line mark (`%`, `#` for root) in
    // reverse video, spaces to the margin, then `\r \r`. On a terminal it is erased or
    // marks a last line without a newline; in a transcript it would end every output.
    static PROMPT_SP: std::sync::LazyLock<regex::bytes::Regex> = std::sync::LazyLock::new(|| {
        regex::bytes::Regex::new(
            r"\x1b\[1m\x1b\[7m[^\x1b\r\n]{1,16}\x1b\[27m\x1b\[1m\x1b\[0m *\r \r",
        )
        .expect("a valid pattern")
    });
    match PROMPT_SP.replace_all(&out, &b""[..]) {
        std::borrow::Cow::Borrowed(_) => out,
        std::borrow::Cow::Owned(cleaned) => cleaned,
    }
}

/// Where output may be cut so that [`sanitize_output`] cleans the two parts as it
/// cleans the whole: right after the last newline outside a string escape (0 when
/// there is none). Nothing it removes crosses a newline but a string's payload.
pub fn line_cut(bytes: &[u8]) -> usize {
    let mut cut = 0;
    let mut i = 0;
    loop {
        let esc = bytes[i..].iter().position(|b| *b == 0x1b).map(|p| i + p);
        let plain = &bytes[i..esc.unwrap_or(bytes.len())];
        if let Some(nl) = plain.iter().rposition(|b| *b == b'\n') {
            cut = i + nl + 1;
        }
        let Some(esc) = esc else {
            return cut;
        };
        i = match string_at(bytes, esc) {
            // A string's payload may hold newlines; one not ended yet may end in bytes
            // still to come.
            Some(None) => return cut,
            Some(Some(after)) => after,
            None => esc + 1,
        };
    }
}

/// Whether a string escape (OSC, DCS, APC, PM, SOS) starts at `i`, and if so where it
/// ends: right after its BEL or ST, or `None` when `bytes` end first. Only the 7-bit
/// forms: in UTF-8 the bytes 0x80-0x9f are continuation bytes (an emoji such as
/// F0 9F 8E 89 holds one), never C1 controls.
fn string_at(bytes: &[u8], i: usize) -> Option<Option<usize>> {
    if bytes.get(i) != Some(&0x1b)
        || !matches!(bytes.get(i + 1), Some(b']' | b'P' | b'_' | b'^' | b'X'))
    {
        return None;
    }
    let mut j = i + 2;
    Some(loop {
        match bytes.get(j) {
            None => break None,
            Some(0x07) => break Some(j + 1),
            Some(0x1b) if bytes.get(j + 1) == Some(&b'\\') => break Some(j + 2),
            Some(_) => j += 1,
        }
    })
}

fn remove_string_escapes(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match string_at(bytes, i) {
            None => {
                out.push(bytes[i]);
                i += 1;
            }
            // The payload is skipped up to BEL, ST, or the end.
            Some(end) => i = end.unwrap_or(bytes.len()),
        }
    }
    out
}

/// Cleans text typed on the model's behalf: bracketed-paste markers and other escape
/// sequences are removed, CR and CRLF become LF, other control characters except tab
/// are dropped.
pub fn sanitize_input(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // Drop the whole sequence: ESC [ params final, ESC ] … BEL/ST, or ESC + one char.
                match chars.peek() {
                    Some('[') => {
                        chars.next();
                        while let Some(&n) = chars.peek() {
                            chars.next();
                            if ('\u{40}'..='\u{7e}').contains(&n) {
                                break;
                            }
                        }
                    }
                    Some(']') | Some('P') | Some('_') | Some('^') | Some('X') => {
                        chars.next();
                        while let Some(n) = chars.next() {
                            if n == '\u{7}' || (n == '\u{1b}' && chars.peek() == Some(&'\\')) {
                                if n == '\u{1b}' {
                                    chars.next();
                                }
                                break;
                            }
                        }
                    }
                    Some(_) => {
                        chars.next();
                    }
                    None => {}
                }
            }
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('\n');
            }
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_cut_where_line_cut_says_cleans_as_the_whole() {
        let outputs: [&[u8]; 5] = [
            b"one\ntwo\x1b]0;a\ntitle\x07three\nfour\x1b]8;;u\x1b\\link\n\x1b[1m\x1b[7m%\x1b[27m\x1b[1m\x1b[0m   \r \rfive\n",
            b"\x1b]133;D;0\x07\n\x1b]1337;File=x:\nAAAA\nBBBB\x1b\\\nend\n",
            b"no newline at all \x1b]2;t\x07",
            b"\n\n\x1b\n\x1b]\n",
            b"a\x1bPq\n#0;2\n\x1b\\b\nc",
        ];
        for raw in outputs {
            let whole = sanitize_output(raw);
            for k in 0..=raw.len() {
                let cut = line_cut(&raw[..k]);
                assert!(cut == 0 || raw[cut - 1] == b'\n', "{raw:?} at {k}: {cut}");
                let mut pieces = sanitize_output(&raw[..cut]);
                pieces.extend(sanitize_output(&raw[cut..]));
                assert_eq!(pieces, whole, "{raw:?} cut at {cut} of {k}");
            }
        }
        assert_eq!(line_cut(b"a\nb\x1b]0;open\nstill open"), 2);
        assert_eq!(line_cut(b"a\nb\x1b]0;t\x07c\nd"), 11);
    }

    #[test]
    fn output_loses_string_sequences_only() {
        let raw = b"a\x1b]52;c;ZXZpbA==\x07b\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\c\x1b]0;title\x07\x1b[31mred\x1b[0m";
        assert_eq!(sanitize_output(raw), b"ablinkc\x1b[31mred\x1b[0m");
        assert_eq!(sanitize_output(b"x\x1bPq#0;1;2\x1b\\y"), b"xy");
        assert_eq!(sanitize_output(b"unterminated\x1b]0;ti"), b"unterminated");
    }

    #[test]
    fn zsh_partial_line_marks_are_removed() {
        // As zsh 5.9 writes them after `printf nonl` and after `echo ok` (root: `#`).
        let pad = " ".repeat(59);
        let sp = |mark: &str| format!("\x1b[1m\x1b[7m{mark}\x1b[27m\x1b[1m\x1b[0m{pad}\r \r");
        let raw = format!("nonl{}\x1b[0mvm# ok\r\n{}", sp("#"), sp("%"));
        assert_eq!(
            sanitize_output(raw.as_bytes()),
            b"nonl\x1b[0mvm# ok\r\n".to_vec()
        );
        // Reverse video of the program's own stays.
        let own = "\x1b[7m#\x1b[27m kept\r\n";
        assert_eq!(sanitize_output(own.as_bytes()), own.as_bytes());
    }

    #[test]
    fn utf8_continuation_bytes_are_not_controls() {
        let text = "héllo 世界 🎉 ✓ 🧪 \u{9f}";
        assert_eq!(sanitize_output(text.as_bytes()), text.as_bytes());
        let osc = "\x1b]0;títle 🎉\x07after 🎉";
        assert_eq!(sanitize_output(osc.as_bytes()), "after 🎉".as_bytes());
    }

    #[test]
    fn input_loses_paste_markers_and_escapes() {
        assert_eq!(sanitize_input("ls\x1b[201~; rm x\x1b[200~"), "ls; rm x");
        assert_eq!(sanitize_input("a\r\nb\rc"), "a\nb\nc");
        assert_eq!(sanitize_input("x\x1b]0;t\x07y\u{7}\tz"), "xy\tz");
        assert_eq!(sanitize_input("é 日本 🎉"), "é 日本 🎉");
    }
}
