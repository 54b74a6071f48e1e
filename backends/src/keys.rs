//! Named keys: parsing, validation, and rendering for each backend.
//!
//! A key is written the way tmux writes it (`Enter`, `C-c`, `M-x`, `S-Up`, `F5`),
//! and a few common spellings are accepted too (`ctrl+c`, `Ctrl-C`, `^C`, `esc`,
//! `return`, `backspace`, `pgup`). Anything else is refused with
//! [`BackendError::InvalidKey`], so a typo never reaches the terminal as text.
//!
//! ```
//! use cohort_backends::Key;
//! let key: Key = "ctrl+c".parse().unwrap();
//! assert_eq!(key.tmux_name(), "C-c");
//! assert_eq!(key.to_bytes(), vec![0x03]);
//! assert!("Entr".parse::<Key>().is_err());
//! ```

use std::fmt;
use std::str::FromStr;

use crate::error::BackendError;

/// A key without modifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyCode {
    /// A printable character (`a`, `?`, `é`).
    Char(char),
    /// Return.
    Enter,
    /// Escape.
    Escape,
    /// Tab.
    Tab,
    /// Shift-Tab (back tab).
    BackTab,
    /// Space bar.
    Space,
    /// Backspace.
    Backspace,
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
    /// Home.
    Home,
    /// End.
    End,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// Insert.
    Insert,
    /// Forward delete.
    Delete,
    /// Function key F1–F12.
    F(u8),
}

/// A key with modifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// Control held.
    pub ctrl: bool,
    /// Alt/Meta held.
    pub alt: bool,
    /// Shift held.
    pub shift: bool,
    /// The key itself.
    pub code: KeyCode,
}

impl Key {
    /// A key without modifiers.
    pub const fn plain(code: KeyCode) -> Self {
        Key {
            ctrl: false,
            alt: false,
            shift: false,
            code,
        }
    }

    /// Enter.
    pub const ENTER: Key = Key::plain(KeyCode::Enter);

    /// The key as tmux's `send-keys` names it.
    pub fn tmux_name(&self) -> String {
        let mut out = String::new();
        if self.ctrl {
            out.push_str("C-");
        }
        if self.alt {
            out.push_str("M-");
        }
        if self.shift {
            out.push_str("S-");
        }
        match self.code {
            KeyCode::Char(c) => out.push(c),
            KeyCode::Enter => out.push_str("Enter"),
            KeyCode::Escape => out.push_str("Escape"),
            KeyCode::Tab => out.push_str("Tab"),
            KeyCode::BackTab => out.push_str("BTab"),
            KeyCode::Space => out.push_str("Space"),
            KeyCode::Backspace => out.push_str("BSpace"),
            KeyCode::Up => out.push_str("Up"),
            KeyCode::Down => out.push_str("Down"),
            KeyCode::Left => out.push_str("Left"),
            KeyCode::Right => out.push_str("Right"),
            KeyCode::Home => out.push_str("Home"),
            KeyCode::End => out.push_str("End"),
            KeyCode::PageUp => out.push_str("PPage"),
            KeyCode::PageDown => out.push_str("NPage"),
            KeyCode::Insert => out.push_str("IC"),
            KeyCode::Delete => out.push_str("DC"),
            KeyCode::F(n) => {
                out.push('F');
                out.push_str(&n.to_string());
            }
        }
        out
    }

    /// The bytes an xterm-compatible terminal sends for this key, for backends that
    /// take input as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        // xterm modifier parameter: 1 + shift + 2*alt + 4*ctrl.
        let modifier = 1 + u8::from(self.shift) + 2 * u8::from(self.alt) + 4 * u8::from(self.ctrl);
        let csi = |final_byte: char| -> Vec<u8> {
            if modifier == 1 {
                format!("\x1b[{final_byte}").into_bytes()
            } else {
                format!("\x1b[1;{modifier}{final_byte}").into_bytes()
            }
        };
        let tilde = |n: u8| -> Vec<u8> {
            if modifier == 1 {
                format!("\x1b[{n}~").into_bytes()
            } else {
                format!("\x1b[{n};{modifier}~").into_bytes()
            }
        };
        let with_alt = |mut bytes: Vec<u8>| -> Vec<u8> {
            if self.alt {
                bytes.insert(0, 0x1b);
            }
            bytes
        };
        match self.code {
            KeyCode::Char(c) => {
                let base = if self.shift {
                    c.to_uppercase().next().unwrap_or(c)
                } else {
                    c
                };
                if self.ctrl {
                    if let Some(b) = control_byte(base) {
                        return with_alt(vec![b]);
                    }
                }
                with_alt(base.to_string().into_bytes())
            }
            KeyCode::Enter => with_alt(vec![b'\r']),
            KeyCode::Escape => with_alt(vec![0x1b]),
            KeyCode::Tab => with_alt(vec![b'\t']),
            KeyCode::BackTab => b"\x1b[Z".to_vec(),
            KeyCode::Space => {
                if self.ctrl {
                    with_alt(vec![0])
                } else {
                    with_alt(vec![b' '])
                }
            }
            KeyCode::Backspace => {
                if self.ctrl {
                    with_alt(vec![0x08])
                } else {
                    with_alt(vec![0x7f])
                }
            }
            KeyCode::Up => csi('A'),
            KeyCode::Down => csi('B'),
            KeyCode::Right => csi('C'),
            KeyCode::Left => csi('D'),
            KeyCode::Home => csi('H'),
            KeyCode::End => csi('F'),
            KeyCode::Insert => tilde(2),
            KeyCode::Delete => tilde(3),
            KeyCode::PageUp => tilde(5),
            KeyCode::PageDown => tilde(6),
            KeyCode::F(n @ 1..=4) => {
                let final_byte = (b'P' + (n - 1)) as char;
                if modifier == 1 {
                    format!("\x1bO{final_byte}").into_bytes()
                } else {
                    format!("\x1b[1;{modifier}{final_byte}").into_bytes()
                }
            }
            KeyCode::F(n) => {
                let code = match n {
                    5 => 15,
                    6 => 17,
                    7 => 18,
                    8 => 19,
                    9 => 20,
                    10 => 21,
                    11 => 23,
                    _ => 24,
                };
                tilde(code)
            }
        }
    }
}

/// The C0 byte for Ctrl plus a character, when there is one.
fn control_byte(c: char) -> Option<u8> {
    match c {
        'a'..='z' => Some(c as u8 - b'a' + 1),
        'A'..='Z' => Some(c as u8 - b'A' + 1),
        '@' | ' ' | '2' => Some(0),
        '[' | '3' => Some(0x1b),
        '\\' | '4' => Some(0x1c),
        ']' | '5' => Some(0x1d),
        '^' | '6' => Some(0x1e),
        '_' | '/' | '7' => Some(0x1f),
        '?' | '8' => Some(0x7f),
        _ => None,
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tmux_name())
    }
}

fn named_code(name: &str) -> Option<KeyCode> {
    let lower = name.to_ascii_lowercase();
    Some(match lower.as_str() {
        "enter" | "return" | "ret" | "cr" => KeyCode::Enter,
        "escape" | "esc" => KeyCode::Escape,
        "tab" => KeyCode::Tab,
        "btab" | "backtab" => KeyCode::BackTab,
        "space" | "spc" => KeyCode::Space,
        "bspace" | "backspace" | "bs" => KeyCode::Backspace,
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "ppage" | "pageup" | "pgup" | "prior" => KeyCode::PageUp,
        "npage" | "pagedown" | "pgdn" | "next" => KeyCode::PageDown,
        "ic" | "insert" | "ins" => KeyCode::Insert,
        "dc" | "delete" | "del" => KeyCode::Delete,
        _ => {
            let n = lower.strip_prefix('f')?.parse::<u8>().ok()?;
            if (1..=12).contains(&n) {
                KeyCode::F(n)
            } else {
                return None;
            }
        }
    })
}

impl FromStr for Key {
    type Err = BackendError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        // The name as given, or its start when long: an error never echoes a
        // megabyte back.
        let invalid = || BackendError::InvalidKey {
            name: if input.chars().count() > 40 {
                format!(
                    "{}… ({} characters)",
                    input.chars().take(40).collect::<String>(),
                    input.chars().count()
                )
            } else {
                input.to_string()
            },
        };
        let name = input.trim();
        if name.is_empty() {
            return Err(invalid());
        }
        // Caret notation: ^C.
        if let Some(rest) = name.strip_prefix('^') {
            let mut chars = rest.chars();
            if let (Some(c), None) = (chars.next(), chars.next()) {
                if control_byte(c).is_some() {
                    return Ok(Key {
                        ctrl: true,
                        ..Key::plain(KeyCode::Char(c.to_ascii_lowercase()))
                    });
                }
            }
            return Err(invalid());
        }
        let mut key = Key::plain(KeyCode::Enter);
        let mut rest = name;
        // Modifier prefixes: C- M- S- (tmux), ctrl+ alt+ shift+ meta+ (common), any order.
        loop {
            let lower = rest.to_ascii_lowercase();
            let skip = if rest.len() > 2 && (lower.starts_with("c-") || lower.starts_with("c+")) {
                key.ctrl = true;
                2
            } else if rest.len() > 2 && (lower.starts_with("m-") || lower.starts_with("m+")) {
                key.alt = true;
                2
            } else if rest.len() > 2 && (lower.starts_with("s-") || lower.starts_with("s+")) {
                key.shift = true;
                2
            } else if let Some(n) = ["ctrl-", "ctrl+", "control-", "control+"]
                .iter()
                .find(|p| rest.len() > p.len() && lower.starts_with(*p))
            {
                key.ctrl = true;
                n.len()
            } else if let Some(n) = ["alt-", "alt+", "meta-", "meta+", "opt-", "opt+", "option+"]
                .iter()
                .find(|p| rest.len() > p.len() && lower.starts_with(*p))
            {
                key.alt = true;
                n.len()
            } else if let Some(n) = ["shift-", "shift+"]
                .iter()
                .find(|p| rest.len() > p.len() && lower.starts_with(*p))
            {
                key.shift = true;
                n.len()
            } else {
                break;
            };
            rest = &rest[skip..];
        }
        let mut chars = rest.chars();
        key.code = match (chars.next(), chars.next()) {
            (Some(c), None) if !c.is_control() && c != ' ' => {
                // Ctrl combines with letters and a few punctuation keys only.
                if key.ctrl && control_byte(c).is_none() {
                    return Err(invalid());
                }
                KeyCode::Char(if key.ctrl { c.to_ascii_lowercase() } else { c })
            }
            _ => named_code(rest).ok_or_else(invalid)?,
        };
        Ok(key)
    }
}

/// What became of keys typed under a guard
/// ([`crate::TerminalBackend::send_input_guarded`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Guarded {
    /// The pane was as presumed, and the keys went in.
    Typed,
    /// The pane was not as presumed: nothing was typed.
    Refused,
    /// The line reached the terminal after its deadline (a link that held it, a
    /// server that stalled) and was refused for that alone: nothing was typed.
    Late,
    /// This backend (or this input) cannot be typed under a guard: nothing was typed.
    Unsupported,
}

/// The bytes of `input` when every part is text or a key that is one control byte
/// (Enter, C-u…), the same in every keyboard mode; `None` otherwise. A key with a
/// modifier the byte does not carry (S-Enter, M-x, C-Tab) is not one of them.
pub fn plain_bytes(input: &[Keystrokes]) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    for part in input {
        match part {
            Keystrokes::Text(text) => bytes.extend_from_slice(text.as_bytes()),
            Keystrokes::Keys(keys) => {
                for key in keys {
                    let ctrl_in_byte = matches!(key.code, KeyCode::Char(_) | KeyCode::Space);
                    if key.alt || key.shift || (key.ctrl && !ctrl_in_byte) {
                        return None;
                    }
                    match key.to_bytes().as_slice() {
                        [b] if *b < 0x20 || *b == 0x7f => bytes.push(*b),
                        _ => return None,
                    }
                }
            }
        }
    }
    Some(bytes)
}

/// `input` as the text a paste would write for it: every part text or a one-byte
/// control key, and no line feed (a paste turns it into a carriage return). `None`
/// when it cannot be so typed ([`crate::TerminalBackend::send_input_guarded`] says
/// unsupported).
pub fn pasteable(input: &[Keystrokes]) -> Option<String> {
    // A NUL would end tmux's argument there: the rest would be lost.
    plain_bytes(input)
        .filter(|b| !b.is_empty() && !b.contains(&b'\n') && !b.contains(&0))
        .and_then(|b| String::from_utf8(b).ok())
}

/// One part of what is typed into a pane in one go
/// ([`crate::TerminalBackend::send_input`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keystrokes {
    /// Text typed literally, as [`crate::TerminalBackend::send_text`] types it.
    Text(String),
    /// Named keys pressed in order, as [`crate::TerminalBackend::send_keys`] presses them.
    Keys(Vec<Key>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_bytes_take_text_and_control_keys_only() {
        let keys = |names: &[&str]| Keystrokes::Keys(names.iter().map(|n| parse(n)).collect());
        assert_eq!(
            plain_bytes(&[
                keys(&["C-a", "C-k"]),
                Keystrokes::Text("echo é".into()),
                keys(&["Enter"])
            ]),
            Some(b"\x01\x0becho \xc3\xa9\r".to_vec())
        );
        // A key whose bytes depend on the keyboard mode is not typed as bytes.
        assert_eq!(plain_bytes(&[keys(&["Up"])]), None);
        assert_eq!(plain_bytes(&[keys(&["M-x"])]), None);
        assert_eq!(plain_bytes(&[keys(&["S-Enter"])]), None);
        assert_eq!(plain_bytes(&[keys(&["C-Tab"])]), None);
        // Nor is a NUL pasted, nor a line feed (a paste makes it a carriage return).
        assert_eq!(pasteable(&[keys(&["C-a", "C-Space"])]), None);
        assert_eq!(pasteable(&[keys(&["C-j"])]), None);
        assert_eq!(pasteable(&[keys(&["C-c"])]), Some("\x03".into()));
    }

    fn parse(s: &str) -> Key {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn tmux_names_round_trip() {
        for name in [
            "Enter", "Escape", "Tab", "BTab", "Space", "BSpace", "Up", "Down", "Left", "Right",
            "Home", "End", "PPage", "NPage", "IC", "DC", "F1", "F12", "C-c", "M-x", "C-M-a",
            "S-Up", "a", "?", "é",
        ] {
            assert_eq!(parse(name).tmux_name(), name);
        }
    }

    #[test]
    fn common_spellings_are_accepted() {
        assert_eq!(parse("ctrl+c").tmux_name(), "C-c");
        assert_eq!(parse("Ctrl-C").tmux_name(), "C-c");
        assert_eq!(parse("^C").tmux_name(), "C-c");
        assert_eq!(parse("esc").tmux_name(), "Escape");
        assert_eq!(parse("return").tmux_name(), "Enter");
        assert_eq!(parse("backspace").tmux_name(), "BSpace");
        assert_eq!(parse("pgup").tmux_name(), "PPage");
        assert_eq!(parse("alt+f").tmux_name(), "M-f");
        assert_eq!(parse("shift+tab").tmux_name(), "S-Tab");
    }

    #[test]
    fn unknown_names_are_refused() {
        for bad in [
            "",
            "Entr",
            "F13",
            "C-",
            "ctrl+",
            "C-é",
            "hello",
            "^é",
            "Enter Enter",
        ] {
            assert!(bad.parse::<Key>().is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn bytes_follow_xterm() {
        assert_eq!(parse("Enter").to_bytes(), b"\r");
        assert_eq!(parse("C-c").to_bytes(), vec![3]);
        assert_eq!(parse("C-d").to_bytes(), vec![4]);
        assert_eq!(parse("Escape").to_bytes(), vec![0x1b]);
        assert_eq!(parse("Up").to_bytes(), b"\x1b[A");
        assert_eq!(parse("C-Up").to_bytes(), b"\x1b[1;5A");
        assert_eq!(parse("M-x").to_bytes(), b"\x1bx");
        assert_eq!(parse("F1").to_bytes(), b"\x1bOP");
        assert_eq!(parse("F5").to_bytes(), b"\x1b[15~");
        assert_eq!(parse("BSpace").to_bytes(), vec![0x7f]);
        assert_eq!(parse("DC").to_bytes(), b"\x1b[3~");
    }
}
