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

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::agent::AgentKind;
use crate::rule_file::{self, Lists, Parts, RuleFile, Schema};
use crate::user_file::{Standing, Watched};

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
    /// Words of some releases only, by version range (`">=2.1"`, `">=0.40, <0.46"`; see
    /// [`crate::cli_version`]): for a CLI whose version is in a range, its lists are
    /// added to this table's, or, with `replace = true`, used instead of the lists
    /// they give. Ranges apply in the order of their text.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub versions: BTreeMap<String, Phrases>,
    /// In a version table: the lists (by key) that replace the table's own where it
    /// applies, those a file gave under `replace = true`. Kept per list, so that two
    /// files' tables for one range each keep their own choice.
    #[serde(skip)]
    replacing: BTreeSet<&'static str>,
}

impl Lists for Phrases {
    fn lists_mut(&mut self) -> Vec<(&'static str, &mut Vec<String>)> {
        vec![
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

    fn versions(&self) -> &BTreeMap<String, Self> {
        &self.versions
    }

    fn parts(&mut self) -> Parts<'_, Self> {
        Parts {
            replace: &mut self.replace,
            versions: &mut self.versions,
            replacing: &mut self.replacing,
        }
    }
}

impl RuleFile for Wording {
    type Table = Phrases;

    fn tables_mut(&mut self) -> Vec<(&'static str, &mut Phrases)> {
        vec![
            ("all", &mut self.all),
            ("claude", &mut self.claude),
            ("codex", &mut self.codex),
            ("gemini", &mut self.gemini),
            ("aider", &mut self.aider),
        ]
    }
}

impl Wording {
    /// The words for `kind` at `version`: its table with the words of every range
    /// the version is in over it (see [`rule_file::at`]). An unknown version gets
    /// the table's own words.
    pub fn at(&self, kind: AgentKind, version: Option<&str>) -> Wording {
        let mut words = self.clone();
        if let Some(table) = words.table_mut(kind) {
            *table = rule_file::at(table, version);
        }
        words
    }

    /// The ranges of `kind`'s table that hold for `version`.
    pub fn ranges_at(&self, kind: AgentKind, version: Option<&str>) -> Vec<String> {
        self.table(kind)
            .map(|table| rule_file::ranges_at(table, version))
            .unwrap_or_default()
    }

    fn table(&self, kind: AgentKind) -> Option<&Phrases> {
        match kind {
            AgentKind::Claude => Some(&self.claude),
            AgentKind::Codex => Some(&self.codex),
            AgentKind::Gemini => Some(&self.gemini),
            AgentKind::Aider => Some(&self.aider),
            AgentKind::Custom => None,
        }
    }

    fn table_mut(&mut self, kind: AgentKind) -> Option<&mut Phrases> {
        match kind {
            AgentKind::Claude => Some(&mut self.claude),
            AgentKind::Codex => Some(&mut self.codex),
            AgentKind::Gemini => Some(&mut self.gemini),
            AgentKind::Aider => Some(&mut self.aider),
            AgentKind::Custom => None,
        }
    }

    /// The words as a `screens.toml` would give them.
    pub fn to_toml(&self) -> String {
        rule_file::to_toml(self)
    }
}

/// `base` with the user's words `over` it: each list added to, or replaced in a
/// table with `replace = true`.
pub fn merged(base: &Wording, over: Wording) -> Wording {
    rule_file::merged(base, over)
}

/// What a `screens.toml` may hold: the keys each table's reader looks at; version
/// ranges for the CLIs whose transcript gives their version.
const SCHEMA: Schema = Schema {
    used: &[
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
    ],
    versioned: &["claude", "codex"],
};

/// Reads a `screens.toml` text (`origin` names it in errors): the error says the
/// line and what is wrong.
pub fn parse(text: &str, origin: &str) -> Result<Wording, String> {
    rule_file::parse(text, origin, &SCHEMA)
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

/// In a line: which words are in use.
pub fn describe(standing: &Standing) -> String {
    standing.describe("screen words")
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
    fn words_of_a_version_range_hold_for_the_releases_in_it() {
        let user = parse(
            "[claude.versions.\">=9.0\"]\nbusy = [\"esc to halt\"]\n\n\
             [claude.versions.\">=8, <9\"]\nreplace = true\nbusy = [\"old busy\"]\n",
            "test",
        )
        .unwrap();
        let words = merged(built_in(), user);
        let newer = words.at(AgentKind::Claude, Some("9.1.0"));
        assert!(newer.claude.busy.contains(&"esc to interrupt".to_string()));
        assert!(newer.claude.busy.contains(&"esc to halt".to_string()));
        assert!(newer.claude.versions.contains_key(">=9.0"));
        let older = words.at(AgentKind::Claude, Some("v8.5.2"));
        assert_eq!(older.claude.busy, ["old busy"]);
        // What the range did not list is the table's own.
        assert_eq!(older.claude.hanging, built_in().claude.hanging);
        for unknown in [None, Some("7.0.1"), Some("not a version")] {
            assert_eq!(
                words.at(AgentKind::Claude, unknown).claude.busy,
                built_in().claude.busy
            );
        }
        assert_eq!(words.ranges_at(AgentKind::Claude, Some("8.9")), [">=8, <9"]);
        assert!(words.ranges_at(AgentKind::Codex, Some("9.1")).is_empty());
        // Ranges of the same text in a second file add to the first's.
        let more = parse(
            "[claude.versions.\">=9.0\"]\nbusy = [\"halting\"]\n",
            "test",
        )
        .unwrap();
        let words = merged(&words, more);
        let busy = &words.at(AgentKind::Claude, Some("9.0")).claude.busy;
        assert!(busy.contains(&"esc to halt".to_string()) && busy.contains(&"halting".to_string()));
    }

    #[test]
    fn a_version_range_with_an_error_says_where_and_why() {
        let e = parse(
            "[claude]\nbusy = [\"a\"]\n[claude.versions.\"~2.1\"]\nbusy = [\"b\"]\n",
            "screens.toml",
        )
        .unwrap_err();
        assert!(
            e.starts_with("screens.toml, line 3: [claude.versions.\"~2.1\"]"),
            "{e}"
        );
        assert!(e.contains("is not a comparison"), "{e}");
        let e = parse(
            "[all.versions.\">=1\"]\nsign_in = [\"x\"]\n",
            "screens.toml",
        )
        .unwrap_err();
        assert!(e.contains("[all] has versions"), "{e}");
        let e = parse(
            "[codex.versions.\">=1\"]\nhanging = [\"\"]\n",
            "screens.toml",
        )
        .unwrap_err();
        assert!(e.contains("hanging holds an empty phrase"), "{e}");
        let e = parse(
            "[aider.versions.\">=1\"]\napproval = [\"w\"]\n",
            "screens.toml",
        )
        .unwrap_err();
        assert!(
            e.contains("[aider] has versions, but this CLI's transcript"),
            "{e}"
        );
        let e = parse(
            "[codex.versions.\">=1\"]\nsign_in = [\"w\"]\n",
            "screens.toml",
        )
        .unwrap_err();
        assert!(e.contains("sign_in is not read for this table"), "{e}");
        // The line is the range's own, not another table's of the same text.
        let e = parse(
            "[claude.versions.\">=2\"]\nbusy = [\"a\"]\n[codex.versions.\">=2\"]\nbusy = [\"\"]\n",
            "screens.toml",
        )
        .unwrap_err();
        assert!(
            e.starts_with("screens.toml, line 3: [codex.versions"),
            "{e}"
        );
        let e = parse(
            "[claude.versions.\">=1\".versions.\">=2\"]\nbusy = [\"w\"]\n",
            "screens.toml",
        )
        .unwrap_err();
        assert!(e.contains("has versions of its own"), "{e}");
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
        let user = parse(
            "[claude.versions.\">=2.3, <2.5\"]\nreplace = true\nbusy = [\"x\"]\n[codex.versions.\"0.4\"]\nhints = [\"y\"]\n",
            "test",
        )
        .unwrap();
        let w = merged(built_in(), user);
        assert_eq!(parse(&w.to_toml(), "printed").unwrap(), w);
    }

    #[test]
    fn replacements_come_before_additions_and_each_list_keeps_its_files_choice() {
        // Whatever order the ranges sort in, an addition is not lost to a replacement.
        for (adds, replaces) in [(">=2.0", ">=2.4, <2.5"), (">=2.0", "2.4")] {
            let user = parse(
                &format!(
                    "[claude.versions.\"{adds}\"]\nbusy = [\"added\"]\n\
                     [claude.versions.\"{replaces}\"]\nreplace = true\nbusy = [\"only\"]\n"
                ),
                "test",
            )
            .unwrap();
            let words = merged(built_in(), user);
            assert_eq!(
                words.at(AgentKind::Claude, Some("2.4.1")).claude.busy,
                ["only", "added"],
                "{adds} / {replaces}"
            );
        }
        // A second file's table for the same range: its `replace` is its own lists'.
        let first = parse(
            "[claude.versions.\">=3\"]\nreplace = true\nbusy = [\"first\"]\n",
            "first",
        )
        .unwrap();
        let second = parse("[claude.versions.\">=3\"]\nhanging = [\"~\"]\n", "second").unwrap();
        let words = merged(&merged(built_in(), first), second);
        let at = words.at(AgentKind::Claude, Some("3.0"));
        assert_eq!(at.claude.busy, ["first"]);
        let mut hanging = built_in().claude.hanging.clone();
        hanging.push("~".into());
        assert_eq!(at.claude.hanging, hanging);
    }
}
