//! Quoting for tmux's command parser and for `/bin/sh`.
//!
//! Over control mode every command is one line parsed by tmux's own parser. Two
//! forms are used:
//!
//! - [`single`] for plain text: inside `'…'` tmux interprets nothing (no `$`, `~`,
//!   `#{}`, backslash), and `'` itself is written `'\''`.
//! - [`double`] for text with control characters or newlines, which may not appear
//!   raw on a command line: inside `"…"` tmux decodes `\n`, `\ooo`, `\\`, `\"`, `\$`,
//!   and expands a leading `~` (so that one is written `\176`).
//!
//! Text arguments follow `--`, so text that starts with `-` is never taken for flags.
//!
//! Some arguments are also *formats*: tmux expands `#{…}`, runs `#(…)` as a shell
//! command, and so on, in a window name (`new-window -n`, `rename-window`), a pane
//! title (`select-pane -T`) and a start directory (`-c`). Text that reaches those goes
//! through [`format_literal`] first, so tmux takes it as it is.
//!
//! Both were checked byte-for-byte against tmux 3.3a.

/// Whether `text` can go inside single quotes on one control-mode line.
pub fn is_plain(text: &str) -> bool {
    !text.bytes().any(|b| b < 0x20 || b == 0x7f)
}

/// Quotes plain text (see [`is_plain`]) for tmux's parser with single quotes.
pub fn single(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// Quotes any text for tmux's parser with double quotes and escapes. A leading `~`,
/// which tmux expands to a home directory even inside double quotes, is written as an
/// escape.
pub fn double(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for (i, c) in text.chars().enumerate() {
        match c {
            '~' if i == 0 => out.push_str("\\176"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '$' => out.push_str("\\$"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\{:03o}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Quotes for tmux's parser, picking the simplest form that is exact.
pub fn arg(text: &str) -> String {
    if is_plain(text) {
        single(text)
    } else {
        double(text)
    }
}

/// Escapes `text` for an argument tmux expands as a format, so that the expansion
/// gives back exactly `text` and runs nothing: every `#` is doubled, except in a run of
/// `#` followed by `[`, which tmux copies as it is (it keeps `##[` for its style
/// parser). Checked byte-for-byte against tmux 3.3a.
pub fn format_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(at) = rest.find('#') {
        out.push_str(&rest[..at]);
        let run = rest[at..].bytes().take_while(|b| *b == b'#').count();
        let after = &rest[at + run..];
        let hashes = &rest[at..at + run];
        out.push_str(hashes);
        if !after.starts_with('[') {
            out.push_str(hashes);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Quotes one word for a POSIX shell command line (bare when it is safe as is).
pub fn sh(text: &str) -> String {
    let bare = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@%+,".contains(&b));
    if bare {
        text.to_string()
    } else {
        // POSIX single quotes work exactly like tmux's: nothing inside is special.
        single(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_tilde_is_not_left_for_tmux_to_expand() {
        assert_eq!(double("~/x\ny"), "\"\\176/x\\012y\"");
        assert_eq!(double("a~b\n"), "\"a~b\\012\"");
        // Single quotes keep it as it is.
        assert_eq!(single("~/x"), "'~/x'");
    }

    #[test]
    fn single_quotes_escape_only_quotes() {
        assert_eq!(
            single("it's $HOME #{pane_id}"),
            r"'it'\''s $HOME #{pane_id}'"
        );
    }

    #[test]
    fn double_quotes_escape_controls() {
        assert_eq!(double("a\nb\"$\\\x1b"), r#""a\012b\"\$\\\033""#);
    }

    #[test]
    fn format_literals_double_hashes_except_before_a_style() {
        assert_eq!(format_literal("a#(touch x)b"), "a##(touch x)b");
        assert_eq!(format_literal("#{pane_id}"), "##{pane_id}");
        assert_eq!(format_literal("x##"), "x####");
        assert_eq!(format_literal("a#[fg=red]b"), "a#[fg=red]b");
        assert_eq!(format_literal("##[x"), "##[x");
        assert_eq!(format_literal("héllo #"), "héllo ##");
        assert_eq!(format_literal("plain"), "plain");
    }

    #[test]
    fn sh_quoting() {
        assert_eq!(sh("/usr/bin/bash"), "/usr/bin/bash");
        assert_eq!(sh("a b"), "'a b'");
        assert_eq!(sh("it's"), r"'it'\''s'");
        assert_eq!(sh(""), "''");
    }
}
