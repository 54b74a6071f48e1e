//! Finding where a nested construct ends: `$( … )`, `( … )`, `{ …; }`, `` ` … ` ``,
//! `${ … }` and double quotes, with everything they may hold inside (quotes, further
//! nesting, comments, `case` patterns).
//!
//! The scan keeps its own stack of open constructs instead of calling itself, so input
//! nested a hundred thousand levels deep costs memory in proportion, never the call stack.
//! It looks at every byte once.

/// A construct the scan is inside of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Frame {
    /// Shell code ended by `)`: `$( … )`, `( … )`, `<( … )`, `$(( … ))` (one frame per paren).
    Paren,
    /// Shell code ended by a `}` word where a command may start: `{ …; }`.
    Brace,
    /// A `case` statement, ended by the word `esac`; its patterns' `)` close nothing.
    Case,
    /// `" … "`.
    DoubleQuote,
    /// `` ` … ` ``.
    Backtick,
    /// `${ … }`.
    Param,
}

/// Words after which a command may still start (`then { …; }`, `! ( … )`).
const KEYWORDS: &[&[u8]] = &[
    b"!", b"if", b"then", b"elif", b"else", b"while", b"until", b"do", b"time",
];

/// The end of `'…'` opening at `at` (the index of the quote): the index just after the
/// closing quote and true, or the length and false when it is not closed.
pub(super) fn single_quote_end(s: &[u8], at: usize) -> (usize, bool) {
    match s
        .get(at + 1..)
        .and_then(|r| r.iter().position(|&b| b == b'\''))
    {
        Some(p) => (at + 1 + p + 1, true),
        None => (s.len(), false),
    }
}

/// The end of `$'…'` whose `$` is at `at`, as [`single_quote_end`] (a backslash escapes
/// the next byte).
pub(super) fn ansi_c_end(s: &[u8], at: usize) -> (usize, bool) {
    let mut i = at + 2;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'\'' => return (i + 1, true),
            _ => i += 1,
        }
    }
    (s.len(), false)
}

/// Scans from `start`, just inside an opened `first`, to just after the closer that
/// matches it. Returns that index and whether the construct was closed (if not, the
/// index is the length of `s`).
pub(super) fn skip_nested(s: &[u8], start: usize, first: Frame) -> (usize, bool) {
    let mut stack = vec![first];
    let mut i = start;
    // In code frames: whether a command may start here, and where the current word began
    // (with whether it is plain, unquoted text that could be `{` or `}`).
    let mut at_command = true;
    let mut word: Option<(usize, bool)> = None;
    while let Some(&top) = stack.last() {
        let Some(&c) = s.get(i) else {
            // The input ends: a last `}` word still closes the outermost group.
            let closes = stack.len() == 1
                && top == Frame::Brace
                && at_command
                && word.is_some_and(|(from, plain)| plain && &s[from..] == b"}");
            return (s.len(), closes);
        };
        let next = s.get(i + 1).copied();
        match top {
            Frame::DoubleQuote | Frame::Backtick | Frame::Param => {
                let closer = match top {
                    Frame::DoubleQuote => b'"',
                    Frame::Backtick => b'`',
                    _ => b'}',
                };
                if c == closer {
                    stack.pop();
                    i += 1;
                    continue;
                }
                match (c, next) {
                    (b'\\', _) => i += 2,
                    (b'$', Some(b'(')) if top != Frame::Backtick => {
                        stack.push(Frame::Paren);
                        i += 2;
                    }
                    (b'$', Some(b'{')) if top != Frame::Backtick => {
                        stack.push(Frame::Param);
                        i += 2;
                    }
                    (b'`', _) => {
                        stack.push(Frame::Backtick);
                        i += 1;
                    }
                    (b'\'', _) if top == Frame::Param => i = single_quote_end(s, i).0,
                    (b'"', _) if top == Frame::Param => {
                        stack.push(Frame::DoubleQuote);
                        i += 1;
                    }
                    _ => i += 1,
                }
                continue;
            }
            Frame::Paren | Frame::Brace | Frame::Case => {}
        }
        // Shell code.
        let delimiter = matches!(
            c,
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
        );
        if delimiter {
            if let Some((from, plain)) = word.take() {
                let w = &s[from..i];
                if plain && at_command && w == b"{" {
                    stack.push(Frame::Brace);
                } else if plain && at_command && w == b"case" {
                    stack.push(Frame::Case);
                    at_command = false;
                } else if plain && w == b"esac" && top == Frame::Case {
                    stack.pop();
                    at_command = false;
                } else if plain && at_command && w == b"}" && top == Frame::Brace {
                    stack.pop();
                    at_command = false;
                    if stack.is_empty() {
                        return (i, true);
                    }
                    continue;
                } else {
                    at_command = plain && at_command && KEYWORDS.contains(&w);
                }
            }
            // The stack may have changed; the delimiter belongs to the frame now on top.
            let top = *stack.last().unwrap_or(&first);
            match c {
                b'\n' | b';' | b'&' | b'|' => at_command = true,
                b'(' => {
                    stack.push(Frame::Paren);
                    at_command = true;
                }
                b')' if top == Frame::Paren => {
                    stack.pop();
                    at_command = false;
                }
                // A `case` pattern's `)`: the arm's command follows.
                b')' => at_command = true,
                _ => {}
            }
            i += 1;
            continue;
        }
        let word_start = word.is_none();
        if word_start {
            word = Some((i, true));
        }
        let quoted = |word: &mut Option<(usize, bool)>| {
            if let Some((_, plain)) = word {
                *plain = false;
            }
        };
        match (c, next) {
            (b'#', _) if word_start => {
                // A comment, to the end of the line.
                word = None;
                i = s[i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(s.len(), |p| i + p);
            }
            (b'\\', _) => {
                quoted(&mut word);
                i += 2;
            }
            (b'\'', _) => {
                quoted(&mut word);
                i = single_quote_end(s, i).0;
            }
            (b'$', Some(b'\'')) => {
                quoted(&mut word);
                i = ansi_c_end(s, i).0;
            }
            (b'"', _) => {
                quoted(&mut word);
                stack.push(Frame::DoubleQuote);
                i += 1;
            }
            (b'`', _) => {
                quoted(&mut word);
                stack.push(Frame::Backtick);
                i += 1;
            }
            (b'$', Some(b'(')) => {
                quoted(&mut word);
                stack.push(Frame::Paren);
                i += 2;
            }
            (b'$', Some(b'{')) => {
                quoted(&mut word);
                stack.push(Frame::Param);
                i += 2;
            }
            _ => i += 1,
        }
    }
    (i, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(s: &str, first: Frame) -> (usize, bool) {
        skip_nested(s.as_bytes(), 0, first)
    }

    #[test]
    fn parens_close_at_their_match() {
        let s = "echo \")\" ')' $(a (b) `c)`) x) rest";
        let (at, closed) = end(s, Frame::Paren);
        assert!(closed);
        assert_eq!(&s[at..], " rest");
    }

    #[test]
    fn groups_close_at_a_brace_word_where_a_command_starts() {
        let s = " echo } '}' {a,b}; { inner; }; x=}; } after";
        let (at, closed) = end(s, Frame::Brace);
        assert!(closed);
        assert_eq!(&s[at..], " after");
    }

    #[test]
    fn comments_and_case_patterns_do_not_close() {
        let s = " # ) not this\n case x in a) y;; (b) z;; esac )tail";
        let (at, closed) = end(s, Frame::Paren);
        assert!(closed);
        assert_eq!(&s[at..], "tail");
        let (at, closed) = end("a ( b", Frame::Paren);
        assert!(!closed);
        assert_eq!(at, 5);
    }

    #[test]
    fn deep_nesting_uses_no_call_stack() {
        let s = "$(".repeat(200_000) + &")".repeat(200_000);
        let (at, closed) = skip_nested(s.as_bytes(), 2, Frame::Paren);
        assert!(closed);
        assert_eq!(at, s.len());
    }
}
