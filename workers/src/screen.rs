//! What an agent's screen says: busy, a dialog waiting for an answer, the composer
//! and what is in it. A pure reading of the rendered rows, per CLI, written against
//! the strings the real CLIs draw (Claude Code's `❯`/`>` composer under a rule or in
//! a box and its `esc to interrupt` line; Codex's `›` composer and `Working (… esc
//! to interrupt)` line; their permission dialogs).
//!
//! The words each CLI draws are data ([`crate::screen_rules`]): built in, and
//! extended or replaced by the user's `screens.toml` when a release moves them.
//!
//! Only the live part of a frame counts. An inline TUI leaves blank rows below its
//! frame and its history above it: the busy line counts where a live one is drawn
//! (right above the composer, or in the footer under it), and a dialog with a
//! composer drawn below it was answered and is history.

use crate::agent::AgentKind;
use crate::screen_rules::{Phrases, Wording};

/// A dialog that waits for a human (or the manager) to answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dialog {
    /// Permission to run a tool; the dialog's question.
    Approval(String),
    /// A question to the user.
    Question,
    /// Whether to trust the working directory (first start in a new folder).
    Trust,
    /// Codex: new hooks wait for review.
    HookReview,
    /// The CLI is not signed in: its first-run or sign-in page is up, which only a
    /// human can get through.
    SignIn,
}

impl Dialog {
    /// The dialog in words.
    pub fn describe(&self) -> String {
        match self {
            Dialog::Approval(q) => format!("an approval dialog ({q})"),
            Dialog::Question => "a question for the user".into(),
            Dialog::Trust => "a dialog asking whether to trust the working directory".into(),
            Dialog::HookReview => "Codex's \"Hooks need review\" dialog".into(),
            Dialog::SignIn => {
                "its sign-in page: the CLI is not signed in here; a human signs it in once (attach to the worker), then it takes prompts".into()
            }
        }
    }
}

/// The composer (prompt input) as drawn.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Composer {
    /// Its text, lines joined with `\n`, prefixes removed (placeholders as drawn).
    pub text: String,
    /// Nothing typed (hint texts count as nothing).
    pub empty: bool,
    /// A collapsed paste (`[Pasted text #N…]`, `[Pasted Content N chars]`) is in it.
    pub placeholder: bool,
    /// The text ends with an empty line (an Enter taken as a newline).
    pub trailing_blank: bool,
    /// Messages typed while busy wait in a queue.
    pub queued: bool,
}

/// Everything the screen tells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScreenFacts {
    /// The busy indicator is showing.
    pub busy: bool,
    /// A dialog is up.
    pub dialog: Option<Dialog>,
    /// The composer, when it is drawn.
    pub composer: Option<Composer>,
    /// The rule that decided the screen's class, and the row it matched.
    pub matched: Option<Matched>,
}

/// The screen in one word, as the state machine weighs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScreenClass {
    /// Working.
    Busy,
    /// Waiting for an answer to a dialog.
    Waiting(Dialog),
    /// At its prompt, nothing running.
    Idle,
    /// Nothing recognised (a custom program, a screen mid-redraw).
    Unknown,
}

impl ScreenFacts {
    /// The screen in one word: a dialog first, then busy, then an idle composer.
    pub fn class(&self) -> ScreenClass {
        if let Some(d) = &self.dialog {
            return ScreenClass::Waiting(d.clone());
        }
        if self.busy {
            return ScreenClass::Busy;
        }
        if self.composer.is_some() {
            return ScreenClass::Idle;
        }
        ScreenClass::Unknown
    }

    /// A draft someone typed is in the composer (cohort does not type over it).
    pub fn draft(&self) -> Option<&str> {
        self.composer
            .as_ref()
            .filter(|c| !c.empty)
            .map(|c| c.text.as_str())
    }
}

/// Reads `rows` (the rendered screen, trailing spaces trimmed) of `kind`'s TUI, with
/// the cursor's row when known.
pub fn read(kind: AgentKind, rows: &[String], cursor_row: Option<usize>) -> ScreenFacts {
    read_at(kind, None, rows, cursor_row)
}

/// [`read`] for the release `version` of the CLI, when known: with the words of the
/// version ranges of `screens.toml` it is in.
pub fn read_at(
    kind: AgentKind,
    version: Option<&str>,
    rows: &[String],
    cursor_row: Option<usize>,
) -> ScreenFacts {
    let words = crate::screen_rules::current();
    match words.ranges_at(kind, version).is_empty() {
        true => read_with(&words, kind, rows, cursor_row),
        false => read_with(&words.at(kind, version), kind, rows, cursor_row),
    }
}

/// [`read`] with the words `w`.
pub fn read_with(
    w: &Wording,
    kind: AgentKind,
    rows: &[String],
    cursor_row: Option<usize>,
) -> ScreenFacts {
    // What the CLIs' first-run and sign-in pages say (Codex's "Welcome to Codex"
    // menu, Claude Code's theme and login method pickers, Gemini's authentication
    // choice).
    let sign_in = rows
        .iter()
        .enumerate()
        .find_map(|(i, r)| contained(r, &w.all.sign_in).map(|p| (i, p)));
    if let Some((row, phrase)) = sign_in.filter(|_| kind != AgentKind::Custom) {
        // Its menu rows look like a composer; nothing typed there is a prompt.
        return ScreenFacts {
            dialog: Some(Dialog::SignIn),
            matched: Matched::at("sign-in page", rows, row)
                .map(|m| m.by(format!("all.sign_in {phrase:?}"))),
            ..ScreenFacts::default()
        };
    }
    match kind {
        AgentKind::Claude => claude(w, rows, cursor_row),
        AgentKind::Codex => codex(w, rows, cursor_row),
        AgentKind::Gemini => gemini(w, rows),
        AgentKind::Aider => aider(w, rows),
        AgentKind::Custom => ScreenFacts {
            dialog: find_dialog(&w.all, rows, |_| None).map(|f| f.dialog),
            ..ScreenFacts::default()
        },
    }
}

/// The first of `phrases` that `text` contains.
fn contained<'a>(text: &str, phrases: &'a [String]) -> Option<&'a str> {
    phrases
        .iter()
        .find(|p| text.contains(p.as_str()))
        .map(String::as_str)
}

/// The first of `phrases` that `text` begins with.
fn begun<'a>(text: &str, phrases: &'a [String]) -> Option<&'a str> {
    phrases
        .iter()
        .find(|p| text.starts_with(p.as_str()))
        .map(String::as_str)
}

/// Whether a row of the frame contains one of `phrases`.
fn any(rows: &[String], phrases: &[String]) -> bool {
    rows.iter().any(|r| contained(r, phrases).is_some())
}

fn placeholder(text: &str) -> bool {
    text.contains("[Pasted text #") || text.contains("[Pasted Content ")
}

/// The rows a frame draws: trailing blank rows removed. An inline TUI that does not
/// fill its pane leaves them below its frame; nothing there is live.
fn drawn(rows: &[String], cursor_row: Option<usize>) -> &[String] {
    let end = rows
        .iter()
        .rposition(|r| !r.trim().is_empty())
        .map_or(0, |i| i + 1)
        .max(cursor_row.map_or(0, |c| c + 1))
        .min(rows.len());
    &rows[..end]
}

/// A dialog's numbered choice (`1. Yes`), as drawn after its marker.
fn is_choice(text: &str) -> bool {
    let t = text.trim_start();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && t[digits..].starts_with(". ")
}

/// Whether the busy line shows where a live one is drawn: the first row above the
/// composer's top (`above`, exclusive) that is not blank, not a tip and not a
/// queued message (`passes`), or a footer row below the composer (from `below`).
/// Anything higher is history: a spinner line an interrupt left behind, with the
/// interrupt's own line under it. Without a composer, the last ten drawn rows.
///
/// The row, and the phrase of `needles` it shows (matched with case ignored).
fn busy_line<'a>(
    rows: &[String],
    composer: Option<(usize, usize)>,
    passes: impl Fn(&str) -> bool,
    needles: &'a [String],
) -> Option<(usize, &'a str)> {
    let shows = |i: usize| {
        let row = rows[i].to_lowercase();
        needles
            .iter()
            .find(|n| row.contains(&n.to_lowercase()))
            .map(|n| (i, n.as_str()))
    };
    let Some((above, below)) = composer else {
        return (rows.len().saturating_sub(10)..rows.len()).find_map(shows);
    };
    let live_above = (0..above)
        .rev()
        .find(|i| !rows[*i].trim().is_empty() && !passes(rows[*i].trim()));
    live_above
        .and_then(shows)
        .or_else(|| (below.min(rows.len())..rows.len()).find_map(shows))
}

/// Whether a row above the composer lets a live busy line above it through: it
/// begins with one of the CLI's `above_composer` phrases, or with a `hanging` one and
/// holds none of its `interrupted` ones.
fn passes_above(p: &Phrases, row: &str) -> bool {
    begun(row, &p.above_composer).is_some()
        || (begun(row, &p.hanging).is_some() && contained(row, &p.interrupted).is_none())
}

/// Which screen rule decided, on which row (0-based) of the frame, and that row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matched {
    /// The rule: `dialog`, `busy line`, `composer`, `sign-in page`.
    pub rule: &'static str,
    /// The row.
    pub row: usize,
    /// The row's text, trimmed.
    pub text: String,
    /// The phrase of the screen words that matched, with its table and key
    /// (`claude.busy "esc to interrupt"`), when a phrase decided.
    pub phrase: Option<String>,
}

impl Matched {
    fn at(rule: &'static str, rows: &[String], row: usize) -> Option<Matched> {
        Some(Matched {
            rule,
            row,
            text: rows.get(row)?.trim().chars().take(160).collect(),
            phrase: None,
        })
    }

    fn by(mut self, phrase: String) -> Matched {
        self.phrase = Some(phrase);
        self
    }
}

/// A dialog found: where its question is, what it is, and the phrase that told.
struct Found {
    row: usize,
    dialog: Dialog,
    phrase: String,
}

/// A row inside a box (`│ … │`) without its borders.
fn unboxed(row: &str) -> &str {
    let t = row.trim();
    match t.strip_prefix('│') {
        Some(inner) => inner.strip_suffix('│').unwrap_or(inner).trim_end(),
        None => row,
    }
}

/// A horizontal rule: a full-width line, or a box's top or bottom edge.
fn is_rule(row: &str) -> bool {
    let t = row.trim();
    let inner = t
        .trim_start_matches(['╭', '╰', '┌', '└', '├'])
        .trim_end_matches(['╮', '╯', '┐', '┘', '┤']);
    inner.chars().count() >= 10 && inner.chars().all(|c| matches!(c, '─' | '━' | '═'))
}

/// Where a dialog's question is, and the dialog: the dialogs every CLI words alike
/// (`all`), then `extra` for the CLI's own.
fn find_dialog(
    all: &Phrases,
    rows: &[String],
    extra: impl Fn(&[String]) -> Option<Found>,
) -> Option<Found> {
    let trust = rows
        .iter()
        .enumerate()
        .find_map(|(i, r)| contained(r, &all.trust).map(|p| (i, p)));
    if let Some((row, phrase)) = trust {
        return Some(Found {
            row,
            dialog: Dialog::Trust,
            phrase: format!("all.trust {phrase:?}"),
        });
    }
    let approval = rows.iter().enumerate().rev().find_map(|(i, r)| {
        let q = unboxed(r).trim();
        let phrase = begun(q, &all.approval).filter(|_| q.ends_with('?'))?;
        Some(Found {
            row: i,
            dialog: Dialog::Approval(q.to_string()),
            phrase: format!("all.approval {phrase:?}"),
        })
    });
    approval.or_else(|| extra(rows))
}

/// The first row of Claude Code's composer and the rows its text takes: a row that
/// starts with `❯` or `>` right under a rule (its box or its top rule), or right
/// above one; the text runs to the next rule, or, with a single rule, to the cursor
/// or the first blank row.
fn claude_composer_rows(rows: &[String], cursor_row: Option<usize>) -> Option<(usize, usize)> {
    // A dialog's highlighted choice (`❯ 3. No`) is no composer, even on a box's edge.
    let prompt_row = |r: &str| {
        let t = unboxed(r).trim_start();
        let after = t.trim_start_matches(['❯', '>']);
        (t.starts_with("❯ ") || t == "❯" || t.starts_with("> ") || t == ">") && !is_choice(after)
    };
    let start = (0..rows.len()).rev().find(|&i| {
        prompt_row(&rows[i])
            && (i > 0 && is_rule(&rows[i - 1]) || rows.get(i + 1).is_some_and(|r| is_rule(r)))
    })?;
    if let Some(bottom) = (start + 1..rows.len()).find(|&i| is_rule(&rows[i])) {
        return Some((start, bottom));
    }
    // One rule, above: the text ends at the cursor, else at the first blank row or
    // the first row that is not indented as a continuation.
    let end = match cursor_row.filter(|c| *c >= start && *c < rows.len()) {
        Some(c) => c + 1,
        None => (start + 1..rows.len())
            .find(|&i| rows[i].trim().is_empty() || !rows[i].starts_with("  "))
            .unwrap_or(rows.len()),
    };
    Some((start, end))
}

fn claude(w: &Wording, rows: &[String], cursor_row: Option<usize>) -> ScreenFacts {
    let p = &w.claude;
    let rows = drawn(rows, cursor_row);
    let composer_rows = claude_composer_rows(rows, cursor_row);
    let found = find_dialog(&w.all, rows, |rows| {
        let choice = rows
            .iter()
            .rposition(|r| r.trim_start().starts_with("❯ 1."))?;
        let phrase = rows.iter().find_map(|r| contained(r, &p.question))?;
        Some(Found {
            row: choice,
            dialog: Dialog::Question,
            phrase: format!("claude.question {phrase:?}"),
        })
    })
    // A dialog with a composer drawn below it was answered: it is history now.
    .filter(|f| composer_rows.is_none_or(|(start, _)| start < f.row));
    let dialog_at = found.as_ref().map(|f| (f.row, f.phrase.clone()));
    let dialog = found.map(|f| f.dialog);
    let around = composer_rows.map(|(start, end)| {
        let top = if start > 0 && is_rule(&rows[start - 1]) {
            start - 1
        } else {
            start
        };
        (top, end)
    });
    // Above the composer's top rule: what hangs under a live spinner line (a tip,
    // the todo list: `⎿ ☐ …`, `☒ …`) and queued messages (`❯ …`) may sit between it
    // and the spinner line; an interrupt's own line does not.
    let busy_at = busy_line(rows, around, |r| passes_above(p, r), &p.busy)
        .filter(|_| dialog.is_none())
        .map(|(row, phrase)| (row, format!("claude.busy {phrase:?}")));
    let busy = busy_at.is_some();
    let composer = composer_rows
        .filter(|_| dialog.is_none())
        .map(|(start, end)| {
            let first = unboxed(&rows[start]).trim_start();
            let first = first.trim_start_matches(['❯', '>']);
            let mut lines = vec![first.strip_prefix(' ').unwrap_or(first).to_string()];
            lines.extend(rows[start + 1..end].iter().map(|l| {
                let l = unboxed(l);
                l.strip_prefix("  ").unwrap_or(l).to_string()
            }));
            let text = lines.join("\n");
            let queued = p.queued.iter().any(|q| text.trim() == q.as_str());
            let hint = queued
                || p.hints.iter().any(|h| text.trim() == h.as_str())
                || begun(text.trim_start(), &p.hint_prefixes).is_some();
            Composer {
                empty: text.trim().is_empty() || hint,
                placeholder: placeholder(&text),
                trailing_blank: lines.len() > 1
                    && lines.last().is_some_and(|l| l.trim().is_empty()),
                queued: queued || any(rows, &p.queued),
                text: if hint { String::new() } else { text },
            }
        });
    let matched = matched(
        rows,
        dialog_at,
        busy_at,
        composer_rows.map(|(start, _)| start),
    );
    ScreenFacts {
        busy,
        dialog,
        composer,
        matched,
    }
}

/// The rule that decides the class, in the class's order: a dialog, the busy line,
/// the composer; with the phrase that told, where one did.
fn matched(
    rows: &[String],
    dialog: Option<(usize, String)>,
    busy: Option<(usize, String)>,
    composer: Option<usize>,
) -> Option<Matched> {
    match (dialog, busy, composer) {
        (Some((row, phrase)), _, _) => Matched::at("dialog", rows, row).map(|m| m.by(phrase)),
        (None, Some((row, phrase)), _) => Matched::at("busy line", rows, row).map(|m| m.by(phrase)),
        (None, None, Some(row)) => Matched::at("composer", rows, row),
        _ => None,
    }
}

fn codex(w: &Wording, rows: &[String], cursor_row: Option<usize>) -> ScreenFacts {
    let p = &w.codex;
    let rows = drawn(rows, cursor_row);
    // The composer's row; a dialog's choices (`› 1. Yes, proceed`) are not one.
    let start = rows.iter().rposition(|r| {
        (r.starts_with("› ") || r.as_str() == "›") && !is_choice(r.trim_start_matches('›'))
    });
    let found = find_dialog(&w.all, rows, |rows| {
        rows.iter().enumerate().rev().find_map(|(i, r)| {
            let t = r.trim();
            let found = |dialog, key: &str, phrase: &str| Found {
                row: i,
                dialog,
                phrase: format!("codex.{key} {phrase:?}"),
            };
            if let Some(phrase) = begun(t, &p.hook_review) {
                Some(found(Dialog::HookReview, "hook_review", phrase))
            } else if let Some(phrase) = begun(t, &p.approval).filter(|_| t.ends_with('?')) {
                Some(found(Dialog::Approval(t.to_string()), "approval", phrase))
            } else {
                begun(t, &p.question).map(|phrase| found(Dialog::Question, "question", phrase))
            }
        })
    })
    // A dialog with the composer drawn below it was answered: it is history now.
    .filter(|f| start.is_none_or(|s| s < f.row));
    let dialog_at = found.as_ref().map(|f| (f.row, f.phrase.clone()));
    let dialog = found.map(|f| f.dialog);
    // Codex's queued messages sit between its working line and the composer.
    let around = start.map(|s| (s, s + 1));
    let busy_at = busy_line(rows, around, |r| passes_above(p, r), &p.busy)
        .filter(|_| dialog.is_none())
        .map(|(row, phrase)| (row, format!("codex.busy {phrase:?}")));
    let busy = busy_at.is_some();
    let composer = match (start, &dialog) {
        (Some(start), None) => {
            let mut lines = vec![rows[start].strip_prefix("› ").unwrap_or("").to_string()];
            for row in &rows[start + 1..] {
                // Continuation lines are indented by two; a blank row ends the text
                // unless the cursor sits on it (an Enter taken as a newline).
                let blank = row.trim().is_empty();
                let at = start + lines.len();
                if blank && cursor_row != Some(at) {
                    break;
                }
                if !blank && !row.starts_with("  ") {
                    break;
                }
                lines.push(row.strip_prefix("  ").unwrap_or(row).to_string());
                if cursor_row == Some(at) {
                    break;
                }
            }
            let text = lines.join("\n");
            let hint = lines.len() == 1
                && (p.hints.iter().any(|h| text.trim() == h.as_str())
                    || begun(text.trim(), &p.hint_prefixes).is_some());
            Some(Composer {
                empty: text.trim().is_empty() || hint,
                placeholder: placeholder(&text),
                trailing_blank: lines.len() > 1
                    && lines.last().is_some_and(|l| l.trim().is_empty()),
                queued: any(rows, &p.queued),
                text: if hint { String::new() } else { text },
            })
        }
        // A composer taller than the pane: its `›` row scrolled off the top, and the
        // cursor sits in the text that is left.
        (None, None) => cursor_row.filter(|c| *c < rows.len()).and_then(|c| {
            let kept: Vec<String> = rows[..=c]
                .iter()
                .map(|r| r.strip_prefix("  ").unwrap_or(r).to_string())
                .collect();
            let text = kept.join("\n").trim_start_matches('\n').to_string();
            (!text.trim().is_empty()).then(|| Composer {
                empty: false,
                placeholder: placeholder(&text),
                trailing_blank: rows[c].trim().is_empty(),
                queued: any(rows, &p.queued),
                text,
            })
        }),
        _ => None,
    };
    let matched = matched(rows, dialog_at, busy_at, start);
    ScreenFacts {
        busy,
        dialog,
        composer,
        matched,
    }
}

fn gemini(w: &Wording, rows: &[String]) -> ScreenFacts {
    let p = &w.gemini;
    let dialog = find_dialog(&w.all, rows, |_| None)
        .map(|f| f.dialog)
        .or_else(|| {
            rows.iter()
                .map(|r| r.trim().trim_matches('│').trim())
                .find(|r| begun(r, &p.approval).is_some())
                .map(|q| Dialog::Approval(q.to_string()))
        });
    let busy = rows.iter().any(|r| {
        let r = r.to_lowercase();
        p.busy.iter().any(|b| r.contains(&b.to_lowercase()))
    });
    let composer = rows
        .iter()
        .rev()
        .map(|r| r.trim().trim_matches('│').trim())
        .find(|r| r.starts_with('>'))
        .map(|r| {
            let text = r.trim_start_matches('>').trim().to_string();
            let hint = begun(&text, &p.hint_prefixes).is_some()
                || p.hints.iter().any(|h| text == h.as_str());
            Composer {
                empty: text.is_empty() || hint,
                placeholder: placeholder(&text),
                text: if hint { String::new() } else { text },
                ..Composer::default()
            }
        });
    ScreenFacts {
        busy,
        dialog,
        composer,
        matched: None,
    }
}

fn aider(w: &Wording, rows: &[String]) -> ScreenFacts {
    let dialog = find_dialog(&w.all, rows, |_| None)
        .map(|f| f.dialog)
        .or_else(|| {
            rows.iter()
                .rev()
                .take(4)
                .find(|r| contained(r, &w.aider.approval).is_some())
                .map(|q| Dialog::Approval(q.trim().to_string()))
        });
    let last = rows.iter().rev().find(|r| !r.trim().is_empty());
    let composer = last
        .filter(|r| r.starts_with('>') || r.ends_with("> ") || r.ends_with('>'))
        .map(|r| {
            let text = r.rsplit_once('>').map_or("", |(_, t)| t).trim().to_string();
            Composer {
                empty: text.is_empty(),
                text,
                ..Composer::default()
            }
        });
    ScreenFacts {
        busy: false,
        dialog,
        composer,
        matched: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Vec<String> {
        text.lines().map(|l| l.trim_end().to_string()).collect()
    }

    const RULE: &str = "────────────────────────────────────────";

    fn claude_frame(composer: &str, footer: &str, busy: bool) -> Vec<String> {
        let mut s = String::from("╭─── Claude Code v2.1.197 ───\n│ opus · /w\n╰───\n\n");
        if busy {
            s.push_str("✶ Working… (3s)\n");
        }
        s.push_str(&format!("\n{RULE}\n{composer}\n{RULE}\n  {footer}\n"));
        rows(&s)
    }

    #[test]
    fn claude_idle_busy_draft_placeholder_and_newline() {
        let idle = read(
            AgentKind::Claude,
            &claude_frame("❯", "? for shortcuts", false),
            None,
        );
        assert_eq!(idle.class(), ScreenClass::Idle);
        assert!(idle.composer.as_ref().unwrap().empty);
        let busy = read(
            AgentKind::Claude,
            &claude_frame("❯", "esc to interrupt", true),
            None,
        );
        assert_eq!(busy.class(), ScreenClass::Busy);
        let draft = read(
            AgentKind::Claude,
            &claude_frame("❯ fix the\n  tests", "?", false),
            None,
        );
        assert_eq!(draft.draft(), Some("fix the\ntests"));
        let pasted = read(
            AgentKind::Claude,
            &claude_frame("❯ [Pasted text #1 +4 lines]\n", "?", false),
            None,
        );
        let c = pasted.composer.unwrap();
        assert!(c.placeholder && c.trailing_blank && !c.empty, "{c:?}");
        let queued = read(
            AgentKind::Claude,
            &claude_frame(
                "❯ Press up to edit queued messages",
                "esc to interrupt",
                true,
            ),
            None,
        );
        let c = queued.composer.unwrap();
        assert!(c.empty && c.queued);
    }

    /// A queued message that happens to say "Interrupted" still lets the live
    /// spinner above it through; only a hanging `⎿` line saying so ends the turn.
    #[test]
    fn a_queued_message_saying_interrupted_is_no_interrupt() {
        let frame = rows(&format!(
            "✻ Cogitating… (4s · esc to interrupt)\n❯ retry the Interrupted build\n\n{RULE}\n❯\n{RULE}\n  ? for shortcuts"
        ));
        assert_eq!(
            read(AgentKind::Claude, &frame, Some(4)).class(),
            ScreenClass::Busy
        );
    }

    /// A busy line worded anew by one release only is read as busy for that release,
    /// from the words of its version range, and not for others.
    #[test]
    fn a_busy_phrase_of_one_release_is_read_for_that_release() {
        let frame = claude_frame("❯", "esc to halt", true);
        let user = crate::screen_rules::parse(
            "[claude.versions.\">=9.1, <9.2\"]\nbusy = [\"esc to halt\"]\n",
            "test",
        )
        .unwrap();
        let words = crate::screen_rules::merged(crate::screen_rules::built_in(), user);
        for (version, class) in [
            (Some("9.1.4"), ScreenClass::Busy),
            (Some("9.2.0"), ScreenClass::Idle),
            (None, ScreenClass::Idle),
        ] {
            let at = words.at(AgentKind::Claude, version);
            assert_eq!(
                read_with(&at, AgentKind::Claude, &frame, None).class(),
                class,
                "{version:?}"
            );
        }
    }

    /// A release that words its busy line anew reads idle with the built-in words,
    /// busy once the user's screens.toml adds the new phrase, and the match names
    /// the phrase that told.
    #[test]
    fn a_new_busy_phrase_from_the_users_words_is_read() {
        let frame = claude_frame("❯", "esc to stop", true);
        let built_in = crate::screen_rules::built_in().clone();
        assert_eq!(
            read_with(&built_in, AgentKind::Claude, &frame, None).class(),
            ScreenClass::Idle
        );
        let user =
            crate::screen_rules::parse("[claude]\nbusy = [\"Esc to stop\"]\n", "test").unwrap();
        let words = crate::screen_rules::merged(&built_in, user);
        let f = read_with(&words, AgentKind::Claude, &frame, None);
        assert_eq!(f.class(), ScreenClass::Busy);
        let m = f.matched.unwrap();
        assert_eq!(m.rule, "busy line");
        assert_eq!(m.phrase.as_deref(), Some("claude.busy \"Esc to stop\""));
        // The old phrase still reads: the user's words were added.
        let old = claude_frame("❯", "esc to interrupt", true);
        assert_eq!(
            read_with(&words, AgentKind::Claude, &old, None).class(),
            ScreenClass::Busy
        );
    }

    /// An inline TUI that does not fill its pane: its frame sits at the top with
    /// blank rows below; the busy line is live though it is far from the last row.
    #[test]
    fn an_inline_frame_is_read_where_it_is_drawn() {
        let mut frame = rows(&format!(
            "❯ earlier prompt\n⏺ Earlier answer.\n\n✻ Cogitating… (4s · esc to interrupt)\n\n{RULE}\n❯\n{RULE}\n  ? for shortcuts"
        ));
        frame.extend(std::iter::repeat_n(String::new(), 30));
        let f = read(AgentKind::Claude, &frame, Some(6));
        assert_eq!(f.class(), ScreenClass::Busy, "{f:?}");
        let m = f.matched.unwrap();
        assert_eq!((m.rule, m.row), ("busy line", 3), "{}", m.text);
        // The same turn, interrupted: the spinner line left above is history.
        let mut frame = rows(&format!(
            "✻ Cogitating… (4s · esc to interrupt)\n  ⎿  Interrupted · What should Claude do instead?\n\n{RULE}\n❯\n{RULE}\n  ? for shortcuts"
        ));
        frame.extend(std::iter::repeat_n(String::new(), 30));
        assert_eq!(
            read(AgentKind::Claude, &frame, Some(4)).class(),
            ScreenClass::Idle
        );
        // A tip under a live spinner line does not hide it.
        let frame = rows(&format!(
            "✻ Cogitating… (4s · esc to interrupt)\n  ⎿  Tip: Use /memory to edit memory\n\n{RULE}\n❯\n{RULE}"
        ));
        assert_eq!(
            read(AgentKind::Claude, &frame, Some(4)).class(),
            ScreenClass::Busy
        );
    }

    /// A boxed dialog whose highlighted last choice sits on the box's edge is a
    /// dialog, and a todo list under a live spinner does not hide it.
    #[test]
    fn choices_are_not_composers_and_todo_lists_hang_under_the_spinner() {
        let boxed = rows("╭──────────────────────────────╮\n│ Bash command                 │\n│ Do you want to proceed?      │\n│   1. Yes                     │\n│ ❯ 3. No, and tell Claude     │\n╰──────────────────────────────╯");
        assert!(matches!(
            read(AgentKind::Claude, &boxed, None).class(),
            ScreenClass::Waiting(Dialog::Approval(_))
        ));
        let todo = rows(&format!(
            "✻ Working… (12s · esc to interrupt)\n  ⎿  ☐ Fix the parser\n     ☒ Read the tests\n\n{RULE}\n❯\n{RULE}"
        ));
        assert_eq!(
            read(AgentKind::Claude, &todo, Some(5)).class(),
            ScreenClass::Busy
        );
    }

    /// Composers drawn with one rule, with two, or in a box, with `❯` or `>`.
    #[test]
    fn claude_composers_with_one_rule_two_or_a_box() {
        let one = rows(&format!(
            "⏺ hi\n\n{RULE}\n> fix the\n  tests\n\n  ? for shortcuts"
        ));
        let f = read(AgentKind::Claude, &one, Some(4));
        assert_eq!(f.draft(), Some("fix the\ntests"), "{f:?}");
        let empty = rows(&format!("⏺ hi\n\n{RULE}\n❯ \n\n  ? for shortcuts"));
        let f = read(AgentKind::Claude, &empty, Some(3));
        assert_eq!(f.class(), ScreenClass::Idle);
        assert!(f.composer.unwrap().empty);
        // An Enter taken as a newline: the cursor on the blank row under the text.
        let newline = rows(&format!("{RULE}\n❯ hello\n\n"));
        let c = read(AgentKind::Claude, &newline, Some(2)).composer.unwrap();
        assert!(c.trailing_blank && c.text == "hello\n", "{c:?}");
        let boxed = rows("╭──────────────────────────────╮\n│ > Try \"fix lint errors\"      │\n╰──────────────────────────────╯\n  ? for shortcuts");
        let f = read(AgentKind::Claude, &boxed, Some(1));
        assert!(f.composer.as_ref().is_some_and(|c| c.empty), "{f:?}");
        let drafted = rows("╭──────────────────────────────╮\n│ > ship it                    │\n╰──────────────────────────────╯");
        assert_eq!(
            read(AgentKind::Claude, &drafted, Some(1)).draft(),
            Some("ship it")
        );
        // A past prompt in the history is not a composer.
        let history = rows("> an old prompt\n⏺ its answer");
        assert_eq!(read(AgentKind::Claude, &history, None).composer, None);
    }

    /// A dialog answered on screen whose text stays above a fresh composer is
    /// history, for both CLIs.
    #[test]
    fn an_answered_dialog_left_above_the_composer_is_history() {
        let claude = rows(&format!(
            " Do you want to proceed?\n ❯ 1. Yes\n   2. No\n⏺ Bash(touch approved.txt)\n\n{RULE}\n❯\n{RULE}\n  ? for shortcuts"
        ));
        let f = read(AgentKind::Claude, &claude, Some(6));
        assert_eq!(f.class(), ScreenClass::Idle, "{f:?}");
        let question = rows(&format!(
            " Which file?\n ❯ 1. a.txt\n   2. b.txt\n Enter to select · Esc to cancel\n\n{RULE}\n❯\n{RULE}"
        ));
        assert_eq!(
            read(AgentKind::Claude, &question, Some(6)).class(),
            ScreenClass::Idle
        );
        let codex = rows("  Would you like to run the following command?\n  $ touch approved.txt\n› 1. Yes, proceed (y)\n• Ran touch approved.txt\n\n› Ask Codex to do anything\n\n  gpt-5 default · /w");
        let f = read(AgentKind::Codex, &codex, Some(5));
        assert_eq!(f.class(), ScreenClass::Idle, "{f:?}");
        // The dialog still up: the choices are not a composer.
        let up = rows("  Would you like to run the following command?\n\n  $ touch approved.txt\n\n› 1. Yes, proceed (y)\n  2. No");
        assert!(matches!(
            read(AgentKind::Codex, &up, Some(4)).class(),
            ScreenClass::Waiting(Dialog::Approval(_))
        ));
    }

    #[test]
    fn claude_permission_dialog() {
        let s = rows(&format!(
            "hist\n\n{RULE}\n Bash command\n\n   touch approved.txt\n   Create approved.txt\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and don't ask again for this command\n   3. No\n\n Esc to cancel"
        ));
        let f = read(AgentKind::Claude, &s, None);
        assert_eq!(
            f.class(),
            ScreenClass::Waiting(Dialog::Approval("Do you want to proceed?".into()))
        );
        assert!(f.composer.is_none());
    }

    #[test]
    fn codex_states_and_hints() {
        let idle = rows("\n  >_ OpenAI Codex (v0.169.0)\n     /w\n\n› Ask Codex to do anything\n\n  gpt-5 default · /w\n  ? for shortcuts");
        let f = read(AgentKind::Codex, &idle, Some(4));
        assert_eq!(f.class(), ScreenClass::Idle);
        assert!(f.composer.unwrap().empty);
        let busy = rows(
            "• Working (3s • esc to interrupt)\n\n› \n\n  gpt-5 default · /w\n  ? for shortcuts",
        );
        assert_eq!(
            read(AgentKind::Codex, &busy, None).class(),
            ScreenClass::Busy
        );
        let tall = rows("tests fix\n  über CI\n  naïve\n\n  gpt-5 default · /w\n  ? for shortcuts");
        let c = read(AgentKind::Codex, &tall, Some(2)).composer.unwrap();
        assert!(!c.empty && !c.trailing_blank, "{c:?}");
        let tall_newline = read(AgentKind::Codex, &tall, Some(3)).composer.unwrap();
        assert!(tall_newline.trailing_blank, "{tall_newline:?}");
        let newline = rows("› hello\n\n\n  gpt-5 default · /w\n  ? for shortcuts");
        let c = read(AgentKind::Codex, &newline, Some(1)).composer.unwrap();
        assert_eq!(c.text, "hello\n");
        assert!(c.trailing_blank);
        let plain = read(AgentKind::Codex, &newline, Some(0)).composer.unwrap();
        assert_eq!(plain.text, "hello");
        let approval = rows("  Would you like to run the following command?\n\n  $ touch approved.txt\n\n› 1. Yes, proceed (y)");
        assert!(matches!(
            read(AgentKind::Codex, &approval, None).class(),
            ScreenClass::Waiting(Dialog::Approval(_))
        ));
        let review = rows("  Hooks need review\n  3 hooks are new or changed.\n› 1. Review hooks");
        assert_eq!(
            read(AgentKind::Codex, &review, None).class(),
            ScreenClass::Waiting(Dialog::HookReview)
        );
        let queued = rows("• Working (1s • esc to interrupt)\n• Messages to be submitted after next tool call (press esc to interrupt and send immediately)\n  ↳ next\n\n› \n\n  m\n  ?");
        let f = read(AgentKind::Codex, &queued, None);
        assert!(f.busy && f.composer.unwrap().queued);
    }

    #[test]
    fn sign_in_pages_are_dialogs_not_composers() {
        // Codex 0.169 without an account, as tmux renders it.
        let codex = rows("  Welcome to Codex, OpenAI's command-line coding agent\n\n  Choose how you want to use Codex.\n\n> 1. Sign in with ChatGPT\n     Usage included with Plus, Pro, Business, and Enterprise plans\n  2. Sign in with Device Code\n     Sign in from another device with a one-time code\n  3. Sign in another way\n     Use an API key or another provider\n\n  Press enter to continue");
        for cursor in [None, Some(4), Some(12)] {
            let f = read(AgentKind::Codex, &codex, cursor);
            assert_eq!(
                f.class(),
                ScreenClass::Waiting(Dialog::SignIn),
                "{cursor:?}"
            );
            assert!(f.composer.is_none() && f.draft().is_none());
        }
        let claude = rows(" Select login method:\n\n ❯ 1. Claude account with subscription\n   2. Anthropic Console account");
        assert_eq!(
            read(AgentKind::Claude, &claude, None).class(),
            ScreenClass::Waiting(Dialog::SignIn)
        );
        // A custom program printing the words is not taken for a CLI's page.
        assert_eq!(
            read(AgentKind::Custom, &claude, None).class(),
            ScreenClass::Unknown
        );
    }

    #[test]
    fn unknown_programs_and_trust_dialogs() {
        let shell = rows("$ python3\n>>> ");
        assert_eq!(
            read(AgentKind::Custom, &shell, None).class(),
            ScreenClass::Unknown
        );
        let trust =
            rows(" Do you trust the files in this folder?\n ❯ 1. Yes, proceed\n   2. No, exit");
        assert_eq!(
            read(AgentKind::Claude, &trust, None).class(),
            ScreenClass::Waiting(Dialog::Trust)
        );
        let aider = rows("Added x.py to the chat\n> ");
        assert_eq!(
            read(AgentKind::Aider, &aider, None).class(),
            ScreenClass::Idle
        );
    }
}
