//! Names and short texts: one validator for everything a caller names or labels.
//!
//! Every name that enters cohort (a session, agent, team, role, lock owner or tag),
//! and every short label (a title, a badge, a reason), passes through here, whichever
//! front end it came from and whichever call carried it. A name that could be a
//! target must be one that resolves back to exactly one thing: no empty names, no
//! control characters (NUL, newlines), no leading or trailing spaces, nothing that
//! looks like a pane id, and a bounded size, so a 10 MB "team name" is refused at
//! the door instead of being stored, stamped on panes and echoed back in every list.

use crate::TerminalError;

/// What a name names, for messages and for the rules that differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameKind {
    /// A session (also a target).
    Session,
    /// An agent (also a target).
    Agent,
    /// A team (also a target of many-session calls).
    Team,
    /// A role.
    Role,
    /// The owner of a lock, or who asks for one.
    Owner,
    /// A tag on a session.
    Tag,
    /// A saved arrangement.
    Arrangement,
}

impl NameKind {
    /// The word used in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            NameKind::Session => "session",
            NameKind::Agent => "agent",
            NameKind::Team => "team",
            NameKind::Role => "role",
            NameKind::Owner => "owner",
            NameKind::Tag => "tag",
            NameKind::Arrangement => "arrangement",
        }
    }
}

/// The longest name, in characters.
pub const NAME_MAX: usize = 64;

/// The longest title or badge, in characters.
pub const LABEL_MAX: usize = 256;

/// The longest reason or note, in characters.
pub const NOTE_MAX: usize = 4096;

/// The start of `value`, for an error message that must not echo megabytes back.
pub fn shown(value: &str) -> String {
    const SHOWN: usize = 40;
    if value.chars().count() <= SHOWN {
        value.to_string()
    } else {
        let head: String = value.chars().take(SHOWN).collect();
        format!("{head}… ({} characters)", value.chars().count())
    }
}

/// Checks a name of `kind`: 1–64 characters, no control characters, no spaces at
/// either end; names that are targets (sessions, agents, teams) may not start with
/// `_` or `%` (reserved for cohort and for pane ids).
pub fn check(kind: NameKind, name: &str) -> Result<(), TerminalError> {
    let invalid = |why: &str| TerminalError::InvalidName {
        kind: kind.as_str(),
        name: shown(name),
        why: why.to_string(),
    };
    if name.trim().is_empty() {
        return Err(invalid("it is empty: give a name of 1-64 characters"));
    }
    if name.chars().count() > NAME_MAX {
        return Err(invalid(
            "it is longer than 64 characters: use a shorter name",
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(invalid(
            "it contains control characters (NUL, newline, tab, escape): use printable text",
        ));
    }
    if let Some(c) = name.chars().find(|&c| is_format_char(c)) {
        return Err(invalid(&format!(
            "it contains the invisible format character U+{:04X} (zero-width, joiner or \
             direction change), so it would not read as it is: use visible characters",
            c as u32
        )));
    }
    if name != name.trim() {
        return Err(invalid("it starts or ends with spaces: trim them"));
    }
    let target = matches!(kind, NameKind::Session | NameKind::Agent | NameKind::Team);
    if target && (name.starts_with('_') || name.starts_with('%')) {
        return Err(invalid(
            "names starting with '_' or '%' are reserved (for cohort and for pane ids)",
        ));
    }
    if target && name.starts_with(crate::targets::TAG_PREFIX) {
        return Err(invalid(
            "names starting with 'tag:' are reserved: `tag:NAME` targets every session with that tag",
        ));
    }
    Ok(())
}

/// Whether `c` is a Unicode format character (general category Cf) or a line or
/// paragraph separator: characters that draw nothing, or change how the text
/// around them reads (`U+202E` turns the rest of a name around), so a name holding
/// one is not what it looks like.
pub fn is_format_char(c: char) -> bool {
    matches!(c as u32,
        0x00AD
        | 0x0600..=0x0605
        | 0x061C
        | 0x06DD
        | 0x070F
        | 0x0890..=0x0891
        | 0x08E2
        | 0x180E
        | 0x200B..=0x200F
        | 0x2028..=0x202E
        | 0x2060..=0x2064
        | 0x2066..=0x206F
        | 0xFEFF
        | 0xFFF9..=0xFFFB
        | 0x110BD
        | 0x110CD
        | 0x13430..=0x1343F
        | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A
        | 0xE0001
        | 0xE0020..=0xE007F)
}

/// Checks an optional name (absent is fine).
pub fn check_opt(kind: NameKind, name: Option<&str>) -> Result<(), TerminalError> {
    name.map_or(Ok(()), |n| check(kind, n))
}

/// Session names (see [`check`]).
pub fn validate_name(name: &str) -> Result<(), TerminalError> {
    check(NameKind::Session, name)
}

/// Checks a free-text label (`what`: "title", "badge", "reason"): at most `max`
/// characters, no control characters except, when `lines` is set, newlines.
pub fn check_text(what: &str, text: &str, max: usize, lines: bool) -> Result<(), TerminalError> {
    let invalid = |why: String| {
        TerminalError::InvalidArgument(format!("the {what} {:?} is not usable: {why}", shown(text)))
    };
    if text.chars().count() > max {
        return Err(invalid(format!("it is longer than {max} characters")));
    }
    if text
        .chars()
        .any(|c| c.is_control() && !(lines && (c == '\n' || c == '\t')))
    {
        return Err(invalid(
            "it contains control characters (NUL, escape, carriage return): use printable text"
                .into(),
        ));
    }
    Ok(())
}

/// Checks an environment variable for a new session: a POSIX name (letters, digits
/// and `_`, not starting with a digit, at most 128 characters) and a value without
/// NUL, at most 64 KiB.
pub fn check_env(key: &str, value: &str) -> Result<(), TerminalError> {
    let valid = !key.is_empty()
        && key.len() <= 128
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(TerminalError::InvalidArgument(format!(
            "environment variable name {:?} is not usable: use letters, digits and _ (not starting with a digit), at most 128 characters",
            shown(key)
        )));
    }
    if value.len() > 64 << 10 || value.contains('\0') {
        return Err(TerminalError::InvalidArgument(format!(
            "the value of {key} is not usable: at most 64 KiB, without NUL"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_not_be_targets_are_refused() {
        for bad in [
            "",
            " ",
            "a\0b",
            "a\nb",
            " a",
            "a ",
            "_x",
            "%3",
            &"x".repeat(65),
        ] {
            assert!(check(NameKind::Team, bad).is_err(), "{bad:?}");
        }
        for good in [
            "build",
            "api-server",
            "Team A",
            "naïve",
            "a#(x)",
            &"x".repeat(64),
        ] {
            check(NameKind::Team, good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
        }
        // Tags and roles may start with an underscore; they are never targets.
        check(NameKind::Tag, "_wip").unwrap();
    }

    #[test]
    fn names_that_would_not_read_as_they_are_refused() {
        for bad in [
            "api\u{202e}gpj.exe",
            "a\u{200b}b",
            "\u{feff}web",
            "x\u{2066}y",
            "tag\u{e0041}",
        ] {
            let e = check(NameKind::Session, bad).unwrap_err().to_string();
            assert!(e.contains("invisible format character U+"), "{bad:?}: {e}");
        }
        check(NameKind::Session, "日本語-セッション").unwrap();
        check(NameKind::Session, "build 🚀").unwrap();
    }

    #[test]
    fn a_huge_name_is_not_echoed_back() {
        let huge = "n".repeat(10 * 1024 * 1024);
        let message = check(NameKind::Team, &huge).unwrap_err().to_string();
        assert!(message.len() < 300, "{}", message.len());
        assert!(message.contains("10485760 characters"), "{message}");
    }

    #[test]
    fn labels_are_bounded_and_printable() {
        check_text("title", "Team :: Agent", LABEL_MAX, false).unwrap();
        assert!(check_text("title", "a\u{1b}]0;x\u{7}", LABEL_MAX, false).is_err());
        assert!(check_text("title", &"t".repeat(LABEL_MAX + 1), LABEL_MAX, false).is_err());
        check_text("reason", "line one\nline two", NOTE_MAX, true).unwrap();
    }
}
