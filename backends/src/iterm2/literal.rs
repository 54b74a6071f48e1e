//! Strings handed to iTerm2 so that it takes them literally.
//!
//! iTerm2 evaluates much of what it is given:
//!
//! - a session's name, a tab's title and a badge are *interpolated strings*: `\(…)`
//!   is an expression (variables, function calls), and backslash escapes expand;
//! - an invocation (`iterm2.set_name(name: "…")`) is an expression whose string
//!   literals are interpolated strings too;
//! - a profile's command is an interpolated string evaluated *with side effects
//!   allowed*, then its `$$NAME$$` placeholders are substituted (an unknown one
//!   stops the launch), then iTerm2 splits it into words with rules of its own (a
//!   backslash escapes even inside single quotes, `\n` becomes a newline).
//!
//! So every string cohort sends is encoded for each layer it goes through:
//! [`interpolated`] for a format, [`string_literal`] inside an invocation,
//! [`command`] for a program and its arguments. User variables are values, never
//! evaluated, and go as JSON as they are.

/// `text` as an interpolated string that evaluates to exactly `text`: every
/// backslash doubled, so no `\(` starts an expression and no escape expands.
pub fn interpolated(text: &str) -> String {
    text.replace('\\', "\\\\")
}

/// `text` as a string literal of iTerm2's expression language (quotes included)
/// that evaluates to exactly `text`.
///
/// JSON's string syntax is this literal's: iTerm2 expands `\"`, `\\`, `\n`, `\t`,
/// `\r`, `\b`, `\f`, `\/` and `\uXXXX` as JSON writes them, and since every
/// backslash JSON writes starts an escape, a `(` never follows an unescaped one.
/// The literal is itself interpolated: pass [`interpolated`] text to get a format.
pub fn string_literal(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// A profile command that makes iTerm2 run exactly `argv`.
///
/// Each argument is one word with every character that iTerm2's splitting treats
/// specially escaped with a backslash (outside quotes a backslash keeps the next
/// character as it is; `$` is escaped too, so no `$$` pair can ask for a
/// substitution); the whole line is then [`interpolated`].
pub fn command(argv: &[&str]) -> String {
    let words: Vec<String> = argv.iter().map(|arg| word(arg)).collect();
    interpolated(&words.join(" "))
}

fn word(arg: &str) -> String {
    if arg.is_empty() {
        return "''".to_string();
    }
    let mut out = String::with_capacity(arg.len() * 2);
    for c in arg.chars() {
        // Letters stay bare: `\n`, `\t`, `\r` and `\a` would become control characters.
        if c.is_ascii_alphanumeric() || "_./,:@%+=-".contains(c) {
            out.push(c);
        } else {
            out.push('\\');
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_keep_backslashes_and_expressions_literal() {
        assert_eq!(interpolated(r"a \(b) \n c"), r"a \\(b) \\n c");
        assert_eq!(interpolated("plain"), "plain");
    }

    #[test]
    fn literals_are_json_strings() {
        assert_eq!(string_literal("a \"b\"\n"), r#""a \"b\"\n""#);
        assert_eq!(string_literal(r"\(x)"), r#""\\(x)""#);
    }

    #[test]
    fn commands_escape_what_iterm2_splits_on() {
        assert_eq!(
            command(&["/bin/sh", "-c", "echo $$"]),
            r"/bin/sh -c echo\\ \\$\\$"
        );
        assert_eq!(command(&["a b", ""]), r"a\\ b ''");
        assert_eq!(command(&["it's"]), r"it\\'s");
    }
}
