//! What each agent CLI's screen says, as data: the words the screen reader
//! ([`crate::screen`]) tells a frame's parts apart by.
//!
//! The reader finds the parts of a frame by their shape (the composer's prompt
//! character under a rule or in a box, a dialog's numbered choices) and names them by
//! their words: the busy line's `esc to interrupt`, a permission question, a sign-in
//! menu. The words move with every release of a CLI, so they are data:
//! `workers/rules/screens.toml`, compiled in, and the user's `screens.toml` (in the
//! user's config directory, or the file `COHORT_SCREENS_FILE` names), which adds
//! phrases to the built-in lists or, in a table with `replace = true`, replaces them.
//! The user's file is read again when it changes (looked at at most once a second),
//! without a rebuild or a restart. A file with an error is refused with its path,
//! line and reason, logged once, and shown by `cohort workers rules` and in every
//! worker's `explain`; the built-in words keep working meanwhile.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::user_file::{toml_line, Standing, Watched};

/// The built-in words.
const BUILT_IN: &str = include_str!("../rules/screens.toml");

/// The environment variable that names the user's file in place of the default.
pub const FILE_ENV: &str = "COHORT_SCREENS_FILE";

/// The words, per CLI: `all` for what every CLI shares.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Wording {
    /// What every CLI draws alike (sign-in pages, trust and permission questions).
    pub all: Phrases,
    /// Claude Code.
    pub claude: Phrases,
    /// Codex.
    pub codex: Phrases,
    /// Gemini CLI.
    pub gemini: Phrases,
    /// Aider.
    pub aider: Phrases,
}

/// The phrases of one CLI (or of all), by what they tell. Which keys a CLI's reader
/// uses, and how (contained, begins a row), the built-in file says beside each.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Phrases {
    /// In a user's file: the lists given replace the built-in ones (lists not given
    /// keep theirs) instead of adding to them.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replace: bool,
    /// A first-run or sign-in page.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sign_in: Vec<String>,
    /// A question whether to trust the working directory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trust: Vec<String>,
    /// A permission question.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approval: Vec<String>,
    /// A question for the user.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub question: Vec<String>,
    /// New hooks waiting for review (Codex).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hook_review: Vec<String>,
    /// The busy line (matched with case ignored).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub busy: Vec<String>,
    /// Rows that may sit between a live busy line and the composer (their start).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub above_composer: Vec<String>,
    /// Rows hanging under the spinner (their start): they may sit there too, unless
    /// they hold an `interrupted` phrase.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hanging: Vec<String>,
    /// What makes a hanging row the end of a turn instead (an interrupt's line).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interrupted: Vec<String>,
    /// What an empty composer shows, as its whole text.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<String>,
    /// What an empty composer shows, as its start.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hint_prefixes: Vec<String>,
    /// Messages queued while busy.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queued: Vec<String>,
}

impl Phrases {
    /// Every list with its key, in the file's order.
    fn lists_mut(&mut self) -> [(&'static str, &mut Vec<String>); 12] {
        [
            ("sign_in", &mut self.sign_in),
            ("trust", &mut self.trust),
            ("approval", &mut self.approval),
            ("question", &mut self.question),
            ("hook_review", &mut self.hook_review),
            ("busy", &mut self.busy),
            ("above_composer", &mut self.above_composer),
            ("hanging", &mut self.hanging),
            ("interrupted", &mut self.interrupted),
            ("hints", &mut self.hints),
            ("hint_prefixes", &mut self.hint_prefixes),
            ("queued", &mut self.queued),
        ]
    }

    /// These phrases with a user's `over` them: added, or in place of a list the
    /// user gave with `replace`.
    fn with(mut self, mut over: Phrases) -> Phrases {
        let replace = over.replace;
        for ((_, mine), (_, theirs)) in self.lists_mut().into_iter().zip(over.lists_mut()) {
            if theirs.is_empty() {
                continue;
            }
            if replace {
                mine.clear();
            }
            for phrase in theirs.drain(..) {
                if !mine.contains(&phrase) {
                    mine.push(phrase);
                }
            }
        }
        self
    }

    /// A list that holds an empty phrase (which every row contains), by its key.
    fn empty_phrase(&mut self) -> Option<&'static str> {
        self.lists_mut()
            .into_iter()
            .find(|(_, list)| list.iter().any(|p| p.trim().is_empty()))
            .map(|(key, _)| key)
    }

    /// A list with phrases under a key that `used` does not name: its reader never
    /// looks there.
    fn unused(&mut self, used: &[&str]) -> Option<&'static str> {
        self.lists_mut()
            .into_iter()
            .find(|(key, list)| !list.is_empty() && !used.contains(key))
            .map(|(key, _)| key)
    }
}

impl Wording {
    /// Every table with its name.
    fn tables_mut(&mut self) -> [(&'static str, &mut Phrases); 5] {
        [
            ("all", &mut self.all),
            ("claude", &mut self.claude),
            ("codex", &mut self.codex),
            ("gemini", &mut self.gemini),
            ("aider", &mut self.aider),
        ]
    }

    /// The built-in words with a user's `over` them.
    fn with(self, over: Wording) -> Wording {
        Wording {
            all: self.all.with(over.all),
            claude: self.claude.with(over.claude),
            codex: self.codex.with(over.codex),
            gemini: self.gemini.with(over.gemini),
            aider: self.aider.with(over.aider),
        }
    }

    /// The words as a `screens.toml` would give them.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }
}

/// `base` with the user's words `over` it: each list added to, or replaced in a
/// table with `replace = true`.
pub fn merged(base: &Wording, over: Wording) -> Wording {
    base.clone().with(over)
}

/// The keys each table's reader looks at.
const USED: [(&str, &[&str]); 5] = [
    ("all", &["sign_in", "trust", "approval"]),
    (
        "claude",
        &[
            "busy",
            "above_composer",
            "hanging",
            "interrupted",
            "question",
            "hints",
            "hint_prefixes",
            "queued",
        ],
    ),
    (
        "codex",
        &[
            "busy",
            "above_composer",
            "hanging",
            "interrupted",
            "approval",
            "hook_review",
            "question",
            "hints",
            "hint_prefixes",
            "queued",
        ],
    ),
    ("gemini", &["busy", "approval", "hints", "hint_prefixes"]),
    ("aider", &["approval"]),
];

/// Reads a `screens.toml` text (`origin` names it in errors): the error says the
/// line and what is wrong.
pub fn parse(text: &str, origin: &str) -> Result<Wording, String> {
    let mut wording: Wording = toml::from_str(text)
        .map_err(|e| format!("{origin}{}: {}", toml_line(text, &e), e.message()))?;
    for ((table, phrases), (_, used)) in wording.tables_mut().into_iter().zip(USED) {
        if let Some(key) = phrases.empty_phrase() {
            return Err(format!(
                "{origin}: [{table}] {key} holds an empty phrase, which every row contains: remove it"
            ));
        }
        if let Some(key) = phrases.unused(used) {
            return Err(format!(
                "{origin}: [{table}] {key} is not read for this table (its keys: {}): move the phrases where they are read",
                used.join(", ")
            ));
        }
    }
    Ok(wording)
}

/// The built-in words.
pub fn built_in() -> &'static Wording {
    static BUILT: OnceLock<Wording> = OnceLock::new();
    BUILT.get_or_init(|| {
        parse(BUILT_IN, "the built-in screens.toml").expect("the built-in words parse")
    })
}

/// The user's words, merged with the built-in ones, read again when they change.
static WORDS: Watched<Wording> = Watched::new(
    "screens.toml",
    FILE_ENV,
    |text, origin| parse(text, origin).map(|user| merged(built_in(), user)),
    || built_in().clone(),
);

/// Where the user's words are looked for.
pub fn user_file() -> Option<PathBuf> {
    WORDS.path()
}

/// In a line: which words are in use.
pub fn describe(standing: &Standing) -> String {
    match (&standing.file, &standing.error) {
        (_, Some(error)) => {
            format!("built-in screen words only: the user's file was refused: {error}")
        }
        (Some(file), None) => {
            format!("built-in screen words with the user's {}", file.display())
        }
        (None, None) => "built-in screen words".into(),
    }
}

/// The words in use, read again when the user's file changed.
pub fn current() -> Arc<Wording> {
    if cfg!(test) {
        return Arc::new(built_in().clone());
    }
    WORDS.current()
}

/// Which words are in use, and why the user's file was refused if it was.
pub fn standing() -> Standing {
    WORDS.standing()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_words_parse_and_name_every_cli() {
        let w = built_in();
        assert!(w.claude.busy.contains(&"esc to interrupt".to_string()));
        assert!(!w.codex.hints.is_empty());
        assert!(!w.all.sign_in.is_empty());
        assert!(!w.gemini.busy.is_empty() && !w.aider.approval.is_empty());
    }

    #[test]
    fn a_users_phrases_are_added_or_replace_with_replace() {
        let user = parse(
            "[claude]\nbusy = [\"esc to stop\"]\n\n[codex]\nreplace = true\nbusy = [\"ctrl-c to stop\"]\n",
            "test",
        )
        .unwrap();
        let w = merged(built_in(), user);
        assert_eq!(w.claude.busy, ["esc to interrupt", "esc to stop"]);
        assert_eq!(w.codex.busy, ["ctrl-c to stop"]);
        // Lists the user did not give keep theirs, replace or not.
        assert_eq!(w.codex.hints, built_in().codex.hints);
    }

    #[test]
    fn a_file_with_an_error_says_where_and_why() {
        let e = parse(
            "[claude]\nbusy = [\"a\"]\nspinner = [\"b\"]\n",
            "screens.toml",
        )
        .unwrap_err();
        assert!(e.starts_with("screens.toml, line 3"), "{e}");
        assert!(e.contains("spinner"), "{e}");
        let e = parse("[claude]\nbusy = 3\n", "screens.toml").unwrap_err();
        assert!(e.starts_with("screens.toml, line 2"), "{e}");
        let e = parse("[codex]\nquestion = [\"\"]\n", "screens.toml").unwrap_err();
        assert!(e.contains("[codex] question holds an empty phrase"), "{e}");
        let e = parse("[aider]\nbusy = [\"working\"]\n", "screens.toml").unwrap_err();
        assert!(e.contains("[aider] busy is not read for this table"), "{e}");
    }

    #[test]
    fn the_words_print_as_a_file_that_reads_back() {
        let w = built_in().clone();
        assert_eq!(parse(&w.to_toml(), "printed").unwrap(), w);
    }
}
