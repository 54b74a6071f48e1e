//! The prompt composer: typed text, pasted text and its placeholders, and the
//! paste-burst rule that decides whether an Enter submits or inserts a newline.
//!
//! The cursor always stays at the end of the text (arrow keys do not move it); that
//! is all an orchestrator needs, which types, pastes, submits or clears.

use std::time::{Duration, Instant};

use crate::cli::Flavor;

/// Claude Code collapses a paste longer than this many characters.
pub const CLAUDE_PASTE_CHARS: usize = 800;
/// Claude Code collapses a paste with at least this many line breaks.
pub const CLAUDE_PASTE_BREAKS: usize = 3;
/// Codex collapses a paste longer than this many characters.
pub const CODEX_PASTE_CHARS: usize = 1000;
/// Typed characters at most this far apart count as one burst (Codex).
const BURST_CHAR_INTERVAL: Duration = Duration::from_millis(8);
/// A typed burst this long is taken for an unbracketed paste (Codex).
const BURST_MIN_CHARS: u32 = 6;

/// How Enter behaves around pastes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PasteRule {
    /// When false, Enter always submits (as the measured current releases do after a
    /// bracketed paste).
    pub trap: bool,
    /// How long after a paste (or a typed burst, Codex) an Enter is still a newline.
    /// An Enter in the same read as the paste end is a newline even when this is zero.
    pub window: Duration,
}

impl Default for PasteRule {
    fn default() -> Self {
        PasteRule {
            trap: true,
            window: Duration::from_millis(20),
        }
    }
}

/// The composer's state.
#[derive(Debug)]
pub struct Composer {
    flavor: Flavor,
    rule: PasteRule,
    text: String,
    pastes: Vec<(String, String)>,
    paste_counter: u32,
    last_char_at: Option<Instant>,
    burst_chars: u32,
    newline_until: Option<Instant>,
}

impl Composer {
    /// An empty composer for `flavor`.
    pub fn new(flavor: Flavor, rule: PasteRule) -> Self {
        Composer {
            flavor,
            rule,
            text: String::new(),
            pastes: Vec::new(),
            paste_counter: 0,
            last_char_at: None,
            burst_chars: 0,
            newline_until: None,
        }
    }

    /// The text as shown (placeholders not expanded).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// True when nothing is typed.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Inserts a typed character read at `now`.
    pub fn type_char(&mut self, c: char, now: Instant) {
        let close = self
            .last_char_at
            .is_some_and(|t| now.saturating_duration_since(t) <= BURST_CHAR_INTERVAL);
        self.burst_chars = if close { self.burst_chars + 1 } else { 1 };
        self.last_char_at = Some(now);
        if self.flavor == Flavor::Codex && self.burst_chars >= BURST_MIN_CHARS {
            self.newline_until = Some(now + self.rule.window);
        }
        self.text.push(c);
    }

    /// Inserts a bracketed paste that ended at `now`, collapsing a long one into a
    /// placeholder the way the real composer does.
    pub fn paste(&mut self, raw: &str, now: Instant) {
        let text = raw.replace("\r\n", "\n").replace('\r', "\n");
        self.newline_until = Some(now + self.rule.window);
        self.last_char_at = None;
        self.burst_chars = 0;
        let chars = text.chars().count();
        let breaks = text.matches('\n').count();
        let placeholder = match self.flavor {
            Flavor::Claude if chars > CLAUDE_PASTE_CHARS || breaks >= CLAUDE_PASTE_BREAKS => {
                self.paste_counter += 1;
                Some(if breaks == 0 {
                    format!("[Pasted text #{}]", self.paste_counter)
                } else {
                    format!("[Pasted text #{} +{} lines]", self.paste_counter, breaks)
                })
            }
            Flavor::Codex if chars > CODEX_PASTE_CHARS => {
                Some(format!("[Pasted Content {chars} chars]"))
            }
            _ => None,
        };
        match placeholder {
            Some(p) => {
                self.text.push_str(&p);
                self.pastes.push((p, text));
            }
            None => self.text.push_str(&text),
        }
    }

    /// Inserts a newline (Shift-Enter, Ctrl-J, or an Enter inside a burst).
    pub fn newline(&mut self) {
        self.text.push('\n');
    }

    /// Decides whether an Enter read at `now` is a newline rather than a submit.
    pub fn enter_is_newline(&self, now: Instant) -> bool {
        self.rule.trap && self.newline_until.is_some_and(|until| now <= until)
    }

    /// Deletes the last character, or the whole placeholder it ends.
    pub fn backspace(&mut self) {
        if let Some((p, _)) = self.pastes.iter().find(|(p, _)| self.text.ends_with(p)) {
            let cut = self.text.len() - p.len();
            self.text.truncate(cut);
            return;
        }
        self.text.pop();
    }

    /// Empties the composer.
    pub fn clear(&mut self) {
        self.text.clear();
        self.pastes.clear();
    }

    /// Takes the prompt to submit, placeholders expanded; `None` when it is blank
    /// (both CLIs ignore an Enter on a blank composer).
    pub fn take(&mut self) -> Option<String> {
        if self.text.trim().is_empty() {
            return None;
        }
        let mut text = std::mem::take(&mut self.text);
        for (p, content) in self.pastes.drain(..) {
            if let Some(at) = text.find(&p) {
                text.replace_range(at..at + p.len(), &content);
            }
        }
        self.newline_until = None;
        Some(text)
    }

    /// Puts `text` back (a queued message taken up for editing).
    pub fn set_text(&mut self, text: &str) {
        self.clear();
        self.text.push_str(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> PasteRule {
        PasteRule {
            trap: true,
            window: Duration::from_millis(20),
        }
    }

    #[test]
    fn claude_collapses_long_or_multi_line_pastes_and_expands_on_submit() {
        let now = Instant::now();
        let mut c = Composer::new(Flavor::Claude, rule());
        c.paste("a\nb\nc", now);
        assert_eq!(c.text(), "a\nb\nc");
        c.clear();
        c.paste("1\r2\r3\r4", now);
        assert_eq!(c.text(), "[Pasted text #1 +3 lines]");
        c.type_char('!', now + Duration::from_secs(1));
        assert_eq!(c.take().as_deref(), Some("1\n2\n3\n4!"));
        c.paste(&"x".repeat(801), now);
        assert_eq!(c.text(), "[Pasted text #2]");
        c.backspace();
        assert!(c.is_empty());
    }

    #[test]
    fn codex_collapses_pastes_over_a_thousand_chars() {
        let mut c = Composer::new(Flavor::Codex, rule());
        c.paste(&"y".repeat(1001), Instant::now());
        assert_eq!(c.text(), "[Pasted Content 1001 chars]");
        assert_eq!(c.take().map(|t| t.len()), Some(1001));
    }

    #[test]
    fn enter_right_after_a_paste_is_a_newline_and_later_submits() {
        let now = Instant::now();
        let mut c = Composer::new(Flavor::Claude, rule());
        c.paste("hello", now);
        assert!(c.enter_is_newline(now));
        assert!(c.enter_is_newline(now + Duration::from_millis(20)));
        assert!(!c.enter_is_newline(now + Duration::from_millis(21)));
        let mut off = Composer::new(
            Flavor::Claude,
            PasteRule {
                trap: false,
                window: Duration::from_millis(20),
            },
        );
        off.paste("hello", now);
        assert!(!off.enter_is_newline(now));
    }

    #[test]
    fn typed_burst_traps_enter_on_codex_only() {
        let now = Instant::now();
        for (flavor, trapped) in [(Flavor::Codex, true), (Flavor::Claude, false)] {
            let mut c = Composer::new(flavor, rule());
            for ch in "abcdefgh".chars() {
                c.type_char(ch, now);
            }
            assert_eq!(c.enter_is_newline(now), trapped, "{flavor:?}");
        }
        // Slow typing is never a burst.
        let mut c = Composer::new(Flavor::Codex, rule());
        for (i, ch) in "abcdefgh".chars().enumerate() {
            c.type_char(ch, now + Duration::from_millis(50 * i as u64));
        }
        assert!(!c.enter_is_newline(now + Duration::from_millis(400)));
    }

    #[test]
    fn blank_composer_submits_nothing() {
        let mut c = Composer::new(Flavor::Codex, rule());
        c.type_char(' ', Instant::now());
        assert_eq!(c.take(), None);
    }
}
