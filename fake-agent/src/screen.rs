//! Drawing: each frame is painted whole (history, busy line, composer or dialog,
//! footer) with the strings the real CLIs show, so screen checks written against
//! them hold here.

use crate::cli::{Flavor, CLAUDE_VERSION, CODEX_VERSION};

/// A dialog that replaces the composer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dialog {
    /// Permission to run a shell command.
    Approval {
        /// The command.
        command: String,
        /// Why it is asked.
        reason: String,
        /// The highlighted choice, 0-based.
        selected: usize,
    },
    /// A question to the user.
    Question {
        /// The question.
        question: String,
        /// The choices.
        options: Vec<String>,
        /// The highlighted choice, 0-based.
        selected: usize,
    },
    /// Codex: hooks that are new or changed need trusting before they run.
    HookTrust {
        /// How many hooks.
        count: usize,
        /// The highlighted choice, 0-based.
        selected: usize,
    },
}

impl Dialog {
    /// How many choices the dialog has.
    pub fn choices(&self) -> usize {
        match self {
            Dialog::Approval { .. } | Dialog::HookTrust { .. } => 3,
            Dialog::Question { options, .. } => options.len(),
        }
    }

    /// Moves the highlight by `delta`, staying inside the choices.
    pub fn move_selection(&mut self, delta: isize) {
        let n = self.choices();
        let (Dialog::Approval { selected, .. }
        | Dialog::Question { selected, .. }
        | Dialog::HookTrust { selected, .. }) = self;
        *selected = (*selected as isize + delta).clamp(0, n.saturating_sub(1) as isize) as usize;
    }

    /// The highlighted choice.
    pub fn selected(&self) -> usize {
        match self {
            Dialog::Approval { selected, .. }
            | Dialog::Question { selected, .. }
            | Dialog::HookTrust { selected, .. } => *selected,
        }
    }
}

/// Everything a frame shows.
#[derive(Debug)]
pub struct View<'a> {
    /// Which CLI's look.
    pub flavor: Flavor,
    /// The model name.
    pub model: &'a str,
    /// The working directory.
    pub cwd: &'a str,
    /// Transcript lines shown above the composer.
    pub history: &'a [String],
    /// Seconds busy, when a turn is running.
    pub busy: Option<u64>,
    /// Messages typed while busy, waiting for the turn to end.
    pub queued: &'a [String],
    /// The composer's text.
    pub composer: &'a str,
    /// A dialog replacing the composer.
    pub dialog: Option<&'a Dialog>,
    /// A footer message replacing the usual one.
    pub hint: Option<&'a str>,
    /// How the frame is laid out.
    pub look: Look,
}

/// How Claude's frame is drawn: the releases and terminals differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Look {
    /// Drawn inline from the top without filling the pane: blank rows stay below
    /// the frame (a fresh pane of an inline TUI).
    pub inline: bool,
    /// The composer's frame.
    pub rules: Rules,
}

/// The lines around Claude's composer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rules {
    /// A rule above and one below, `❯` (2.x).
    #[default]
    Two,
    /// A rule above only, `>`.
    One,
    /// A rounded box, `>` (1.x).
    Boxed,
}

impl Look {
    /// Reads `inline`, `one-rule` and `box` from a comma-separated list; anything
    /// else is the default look.
    pub fn parse(text: &str) -> Look {
        let mut look = Look::default();
        for word in text.split(',').map(str::trim) {
            match word {
                "inline" => look.inline = true,
                "one-rule" => look.rules = Rules::One,
                "box" => look.rules = Rules::Boxed,
                _ => {}
            }
        }
        look
    }
}

const SPINNER: [&str; 6] = ["·", "✢", "✳", "✶", "✻", "✽"];

/// Paints `view` on a `cols`×`rows` screen.
pub fn render(view: &View, cols: u16, rows: u16) -> Vec<u8> {
    let cols = usize::from(cols.max(20));
    let rows = usize::from(rows.max(8));
    let (mut top, bottom, cursor_col) = match view.flavor {
        Flavor::Claude => claude(view, cols),
        Flavor::Codex => codex(view, cols),
    };
    let inline = view.look.inline && view.flavor == Flavor::Claude;
    let room = rows.saturating_sub(bottom.len() + top.len());
    let start = view.history.len().saturating_sub(room);
    top.extend(
        view.history[start..]
            .iter()
            .flat_map(|l| l.split('\n').map(str::to_string)),
    );
    let mut lines = top;
    let keep_top = rows.saturating_sub(bottom.len());
    if lines.len() > keep_top {
        // The header scrolls away first, then the oldest history.
        let cut = lines.len() - keep_top;
        lines.drain(..cut);
    }
    while !inline && lines.len() + bottom.len() < rows {
        lines.push(String::new());
    }
    lines.extend(bottom.iter().cloned());
    lines.truncate(rows);
    let drawn = lines.len();
    let mut out = String::from("\x1b[?2026h\x1b[?25l\x1b[H");
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push_str("\r\n");
        }
        let line = clip(line, cols);
        let full = line.chars().count() >= cols;
        out.push_str(&line);
        if !full {
            // Erasing at the last column would eat the line's final character.
            out.push_str("\x1b[K");
        }
    }
    if inline {
        // Nothing below the frame.
        out.push_str("\x1b[J");
    }
    if let Some((row_from_bottom, col)) = cursor_col {
        let row = drawn.saturating_sub(row_from_bottom);
        out.push_str(&format!("\x1b[{};{}H\x1b[?25h", row, col.min(cols) + 1));
    }
    out.push_str("\x1b[?2026l");
    out.into_bytes()
}

fn clip(line: &str, cols: usize) -> String {
    line.chars().take(cols).collect()
}

type Frame = (Vec<String>, Vec<String>, Option<(usize, usize)>);

fn claude(view: &View, cols: usize) -> Frame {
    let rule = "─".repeat(cols);
    let top = vec![
        format!("╭─── Claude Code v{CLAUDE_VERSION} ───"),
        format!("│ {} · {}", view.model, view.cwd),
        "╰───".to_string(),
        String::new(),
    ];
    let mut bottom = Vec::new();
    if let Some(secs) = view.busy {
        bottom.push(format!(
            "{} Working… ({secs}s)",
            SPINNER[(secs as usize) % 6]
        ));
    }
    for q in view.queued {
        bottom.push(format!("  ❯ {q}"));
    }
    bottom.push(String::new());
    bottom.push(rule.clone());
    let mut cursor = None;
    match view.dialog {
        Some(Dialog::Approval {
            command,
            reason,
            selected,
        }) => {
            bottom.push(" Bash command".into());
            bottom.push(String::new());
            bottom.push(format!("   {command}"));
            bottom.push(format!("   {reason}"));
            bottom.push(String::new());
            bottom.push(" Do you want to proceed?".into());
            let choices = [
                "1. Yes",
                "2. Yes, and don't ask again for this command",
                "3. No",
            ];
            for (i, c) in choices.iter().enumerate() {
                bottom.push(format!(" {} {c}", if i == *selected { "❯" } else { " " }));
            }
            bottom.push(String::new());
            bottom.push(" Esc to cancel · Tab to amend · ctrl+e to explain".into());
        }
        Some(Dialog::Question {
            question,
            options,
            selected,
        }) => {
            bottom.push(format!(" {question}"));
            bottom.push(String::new());
            for (i, o) in options.iter().enumerate() {
                let mark = if i == *selected { "❯" } else { " " };
                bottom.push(format!(" {mark} {}. {o}", i + 1));
            }
            bottom.push(String::new());
            bottom.push(" Enter to select · Esc to cancel".into());
        }
        _ => {
            let text = if view.composer.is_empty() && !view.queued.is_empty() {
                "Press up to edit queued messages"
            } else {
                view.composer
            };
            let mut last = 0;
            let (sign, boxed) = match view.look.rules {
                Rules::Two => ("❯ ", false),
                Rules::One => ("> ", false),
                Rules::Boxed => ("> ", true),
            };
            if boxed {
                // The box replaces the rule above.
                bottom.pop();
                bottom.push(format!("╭{}╮", "─".repeat(cols.saturating_sub(2))));
            }
            for (i, line) in text.split('\n').enumerate() {
                let prefix = if i == 0 { sign } else { "  " };
                let inner = format!("{prefix}{line}");
                last = 2 + line.chars().count();
                if boxed {
                    let pad = cols.saturating_sub(4 + inner.chars().count());
                    bottom.push(format!("│ {inner}{} │", " ".repeat(pad)));
                    last += 2;
                } else {
                    bottom.push(inner);
                }
            }
            match view.look.rules {
                Rules::Two => bottom.push(rule),
                Rules::One => bottom.push(String::new()),
                Rules::Boxed => bottom.push(format!("╰{}╯", "─".repeat(cols.saturating_sub(2)))),
            }
            let footer = match (view.hint, view.busy) {
                (Some(h), _) => format!("  {h}"),
                (None, Some(_)) => "  esc to interrupt".into(),
                (None, None) => "  ? for shortcuts".into(),
            };
            bottom.push(footer);
            cursor = Some((2, last));
        }
    }
    (top, bottom, cursor)
}

fn codex(view: &View, cols: usize) -> Frame {
    let _ = cols;
    let top = vec![
        String::new(),
        format!("  >_ OpenAI Codex (v{CODEX_VERSION})"),
        format!("     {}", view.cwd),
        String::new(),
    ];
    let mut bottom = Vec::new();
    if let Some(secs) = view.busy {
        let dot = if secs.is_multiple_of(2) { "•" } else { "◦" };
        bottom.push(format!("{dot} Working ({secs}s • esc to interrupt)"));
    }
    if !view.queued.is_empty() {
        bottom.push(
            "• Messages to be submitted after next tool call (press esc to interrupt and send \
             immediately)"
                .into(),
        );
        for q in view.queued {
            bottom.push(format!("  ↳ {q}"));
        }
    }
    bottom.push(String::new());
    let mut cursor = None;
    let choice = |i: usize, selected: usize, text: &str| {
        format!(
            "{} {}. {text}",
            if i == selected { "›" } else { " " },
            i + 1
        )
    };
    match view.dialog {
        Some(Dialog::Approval {
            command,
            reason,
            selected,
        }) => {
            let first = command.split_whitespace().next().unwrap_or("");
            bottom.push("  Would you like to run the following command?".into());
            bottom.push(String::new());
            bottom.push(format!("  Reason: {reason}"));
            bottom.push(String::new());
            bottom.push(format!("  $ {command}"));
            bottom.push(String::new());
            bottom.push(choice(0, *selected, "Yes, proceed (y)"));
            bottom.push(choice(
                1,
                *selected,
                &format!("Yes, and don't ask again for commands that start with `{first}` (p)"),
            ));
            bottom.push(choice(
                2,
                *selected,
                "No, and tell Codex what to do differently (esc)",
            ));
            bottom.push(String::new());
            bottom.push("  Press enter to confirm or esc to cancel".into());
        }
        Some(Dialog::Question {
            question,
            options,
            selected,
        }) => {
            bottom.push("  Question 1/1".into());
            bottom.push(format!("  {question}"));
            bottom.push(String::new());
            for (i, o) in options.iter().enumerate() {
                bottom.push(choice(i, *selected, o));
            }
            bottom.push(String::new());
            bottom.push("  enter to submit answer · esc to interrupt".into());
        }
        Some(Dialog::HookTrust { count, selected }) => {
            bottom.push("  Hooks need review".into());
            bottom.push(format!("  {count} hooks are new or changed."));
            bottom.push("  Hooks can run outside the sandbox after you trust them.".into());
            bottom.push(String::new());
            bottom.push(choice(0, *selected, "Review hooks"));
            bottom.push(choice(1, *selected, "Trust all and continue"));
            bottom.push(choice(
                2,
                *selected,
                "Continue without trusting (hooks won't run)",
            ));
            bottom.push(String::new());
            bottom.push("  enter confirm · esc skip".into());
        }
        None => {
            let mut last = 2;
            if view.composer.is_empty() {
                bottom.push("› Ask Codex to do anything".into());
            } else {
                for (i, line) in view.composer.split('\n').enumerate() {
                    let prefix = if i == 0 { "› " } else { "  " };
                    bottom.push(format!("{prefix}{line}"));
                    last = 2 + line.chars().count();
                }
            }
            bottom.push(String::new());
            bottom.push(format!("  {} default · {}", view.model, view.cwd));
            bottom.push(format!("  {}", view.hint.unwrap_or("? for shortcuts")));
            cursor = Some((3, last));
        }
    }
    (top, bottom, cursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn frames_carry_the_real_markers() {
        let history = vec!["❯ hi".to_string()];
        let mut view = View {
            flavor: Flavor::Claude,
            model: "m",
            cwd: "/w",
            history: &history,
            busy: Some(3),
            queued: &[],
            composer: "draft",
            dialog: None,
            hint: None,
            look: Look::default(),
        };
        let frame = text(render(&view, 80, 24));
        assert!(frame.contains("esc to interrupt") && frame.contains("❯ draft"));
        let dialog = Dialog::Approval {
            command: "touch x".into(),
            reason: "r".into(),
            selected: 0,
        };
        view.dialog = Some(&dialog);
        assert!(text(render(&view, 80, 24)).contains("Do you want to proceed?"));
        view.flavor = Flavor::Codex;
        let frame = text(render(&view, 80, 24));
        assert!(frame.contains("Would you like to run the following command?"));
        assert!(frame.contains("› 1. Yes, proceed (y)"));
    }

    #[test]
    fn tiny_and_huge_screens_do_not_panic() {
        let history: Vec<String> = (0..500).map(|i| format!("line {i}")).collect();
        for (c, r) in [(0, 0), (1, 1), (20, 8), (300, 200)] {
            for flavor in [Flavor::Claude, Flavor::Codex] {
                let view = View {
                    flavor,
                    model: "m",
                    cwd: "/w",
                    history: &history,
                    busy: None,
                    queued: &["q".to_string()],
                    composer: "a\nb\nc",
                    dialog: None,
                    hint: Some("Press Ctrl-D again to exit"),
                    look: Look::parse("inline,box"),
                };
                let _ = render(&view, c, r);
            }
        }
    }
}
