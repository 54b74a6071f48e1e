//! How each agent CLI's transcript is read, as data: the entry types, fields and
//! texts the transcript parsers ([`crate::transcript`]) tell a turn's start, end,
//! interrupt and error by, and the texts that are not the user's prompt.
//!
//! The parsers read each log's structure in code (JSON entries, their types, their
//! texts; Aider's Markdown lines); the names and texts that mean something move with
//! the CLIs' releases, so they are data: `workers/rules/transcripts.toml`, compiled
//! in, and the user's `transcripts.toml` (in the user's config directory, or the file
//! `COHORT_TRANSCRIPTS_FILE` names), with the same tables, keys, version ranges and
//! merging as the screen words ([`crate::rule_file`]). The user's file is read again
//! when it changes; a file with an error is refused with its path, line and reason,
//! and the built-in rules keep working meanwhile.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::agent::AgentKind;
use crate::rule_file::{self, Lists, Parts, RuleFile, Schema};
use crate::state::{Report, ReportKind, Signal, TurnOutcome};
use crate::user_file::{Standing, Watched};

/// The built-in rules.
const BUILT_IN: &str = include_str!("../rules/transcripts.toml");

/// The environment variable that names the user's file in place of the default.
pub const FILE_ENV: &str = "COHORT_TRANSCRIPTS_FILE";

/// The rules, per CLI.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TranscriptRules {
    /// Claude Code's project JSONL.
    pub claude: EntryWords,
    /// Codex's rollout file.
    pub codex: EntryWords,
    /// Aider's Markdown chat history.
    pub aider: EntryWords,
    /// Gemini's chat checkpoints.
    pub gemini: EntryWords,
}

/// The names and texts of one CLI's transcript, by what they tell. Which keys a
/// CLI's parser reads, and how (a whole name, the start of a text), the built-in
/// file says beside each.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct EntryWords {
    /// In a user's file: the lists given replace the built-in ones.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replace: bool,
    /// Fields that mark an entry that is not the conversation's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// What begins a turn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub turn_starts: Vec<String>,
    /// What ends a turn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub turn_ends: Vec<String>,
    /// What ends a turn as interrupted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interrupted: Vec<String>,
    /// What carries an error the turn's end is reported with.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Fields that mark an answer as an API error.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_errors: Vec<String>,
    /// Texts of the user's role that are not a prompt.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_prompts: Vec<String>,
    /// Texts the CLI adds as the user's that the user never typed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub injected: Vec<String>,
    /// Entry types that are a tool call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<String>,
    /// Lines that are the user's prompt.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<String>,
    /// Lines that begin a new chat.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub session_starts: Vec<String>,
    /// Lines that are tool output.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_output: Vec<String>,
    /// Tool output that names a command run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<String>,
    /// Message types that are the user's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub user: Vec<String>,
    /// Message types that are the assistant's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assistant: Vec<String>,
    /// Rules of some releases only, by version range (see [`crate::rule_file`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub versions: BTreeMap<String, EntryWords>,
    /// In a version table: the lists that replace the table's own.
    #[serde(skip)]
    replacing: BTreeSet<&'static str>,
}

impl Lists for EntryWords {
    fn lists_mut(&mut self) -> Vec<(&'static str, &mut Vec<String>)> {
        vec![
            ("skipped", &mut self.skipped),
            ("turn_starts", &mut self.turn_starts),
            ("turn_ends", &mut self.turn_ends),
            ("interrupted", &mut self.interrupted),
            ("errors", &mut self.errors),
            ("api_errors", &mut self.api_errors),
            ("not_prompts", &mut self.not_prompts),
            ("injected", &mut self.injected),
            ("tool_calls", &mut self.tool_calls),
            ("prompts", &mut self.prompts),
            ("session_starts", &mut self.session_starts),
            ("tool_output", &mut self.tool_output),
            ("runs", &mut self.runs),
            ("user", &mut self.user),
            ("assistant", &mut self.assistant),
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

impl RuleFile for TranscriptRules {
    type Table = EntryWords;

    fn tables_mut(&mut self) -> Vec<(&'static str, &mut EntryWords)> {
        vec![
            ("claude", &mut self.claude),
            ("codex", &mut self.codex),
            ("aider", &mut self.aider),
            ("gemini", &mut self.gemini),
        ]
    }
}

impl TranscriptRules {
    /// `kind`'s table at `version`, with the rules of every range the version is in
    /// over it; `None` for a CLI without a transcript cohort reads.
    pub fn at(&self, kind: AgentKind, version: Option<&str>) -> Option<EntryWords> {
        let table = match kind {
            AgentKind::Claude => &self.claude,
            AgentKind::Codex => &self.codex,
            AgentKind::Aider => &self.aider,
            AgentKind::Gemini => &self.gemini,
            AgentKind::Custom => return None,
        };
        Some(rule_file::at(table, version))
    }

    /// The rules as a `transcripts.toml` would give them.
    pub fn to_toml(&self) -> String {
        rule_file::to_toml(self)
    }
}

/// The phrase of `list` that is the whole of `name`.
pub fn named<'a>(list: &'a [String], name: &str) -> Option<&'a String> {
    list.iter().find(|p| *p == name)
}

/// The phrase of `list` that `text` starts with.
pub fn starting<'a>(list: &'a [String], text: &str) -> Option<&'a String> {
    list.iter().find(|p| text.starts_with(p.as_str()))
}

/// What a `transcripts.toml` may hold: the keys each CLI's parser reads; version
/// ranges for the CLIs whose transcript gives their version.
const SCHEMA: Schema = Schema {
    used: &[
        (
            "claude",
            &[
                "skipped",
                "interrupted",
                "not_prompts",
                "turn_ends",
                "api_errors",
            ],
        ),
        (
            "codex",
            &[
                "turn_starts",
                "turn_ends",
                "interrupted",
                "errors",
                "tool_calls",
                "injected",
            ],
        ),
        (
            "aider",
            &["prompts", "session_starts", "tool_output", "runs"],
        ),
        ("gemini", &["user", "assistant"]),
    ],
    versioned: &["claude", "codex"],
};

/// Reads a `transcripts.toml` text (`origin` names it in errors): the error says the
/// line and what is wrong.
pub fn parse(text: &str, origin: &str) -> Result<TranscriptRules, String> {
    rule_file::parse(text, origin, &SCHEMA)
}

/// `base` with the user's rules `over` it.
pub fn merged(base: &TranscriptRules, over: TranscriptRules) -> TranscriptRules {
    rule_file::merged(base, over)
}

/// The built-in rules.
pub fn built_in() -> &'static TranscriptRules {
    static BUILT: OnceLock<TranscriptRules> = OnceLock::new();
    BUILT.get_or_init(|| {
        parse(BUILT_IN, "the built-in transcripts.toml").expect("the built-in rules parse")
    })
}

/// The user's rules, merged with the built-in ones, read again when they change.
static RULES: Watched<TranscriptRules> = Watched::new(
    "transcripts.toml",
    FILE_ENV,
    |text, origin| parse(text, origin).map(|user| merged(built_in(), user)),
    || built_in().clone(),
);

/// The rules in use, read again when the user's file changed.
pub fn current() -> Arc<TranscriptRules> {
    if cfg!(test) {
        static BUILT: OnceLock<Arc<TranscriptRules>> = OnceLock::new();
        return BUILT.get_or_init(|| Arc::new(built_in().clone())).clone();
    }
    RULES.current()
}

/// Which rules are in use, and why the user's file was refused if it was.
pub fn standing() -> Standing {
    RULES.standing()
}

/// In a line: which rules are in use.
pub fn describe(standing: &Standing) -> String {
    standing.describe("transcript rules")
}

/// A rule that matched an entry: what `explain` names beside a transcript's report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matched {
    /// When the entry was written (Unix ms).
    pub at_ms: i64,
    /// The rule: table and key (`claude.turn_ends`).
    pub rule: String,
    /// The phrase that matched.
    pub phrase: String,
}

impl Matched {
    /// Whether this rule read the entry `report` came from: written then, and
    /// reported as what its key tells.
    pub fn read(&self, report: &Report) -> bool {
        let key = self.rule.rsplit('.').next().unwrap_or("");
        report.source == Signal::Transcript
            && report.at_ms == self.at_ms
            && match &report.kind {
                ReportKind::TurnStart => key == "turn_starts",
                ReportKind::TurnEnd { outcome, .. } => match outcome {
                    TurnOutcome::Interrupted => key == "interrupted",
                    _ => key == "turn_ends",
                },
                ReportKind::Activity { .. } => key == "tool_calls",
                _ => false,
            }
    }
}

/// One CLI's rules at the version its transcript gives, resolved again when the
/// version or the rules in use change; and the rule that last matched.
#[derive(Debug)]
pub struct RulesAt {
    kind: AgentKind,
    file: Arc<TranscriptRules>,
    version: Option<String>,
    table: Arc<EntryWords>,
    matched: Option<Matched>,
}

impl RulesAt {
    /// `kind`'s rules in use now, before its version is known.
    pub fn new(kind: AgentKind) -> RulesAt {
        RulesAt::from_file(kind, current())
    }

    /// `kind`'s rules in `file`, before its version is known.
    pub fn from_file(kind: AgentKind, file: Arc<TranscriptRules>) -> RulesAt {
        let table = Arc::new(file.at(kind, None).unwrap_or_default());
        RulesAt {
            kind,
            file,
            version: None,
            table,
            matched: None,
        }
    }

    /// The rules for a transcript at `version`.
    pub fn at(&mut self, version: Option<&str>) -> Arc<EntryWords> {
        if self.version.as_deref() != version {
            self.version = version.map(str::to_string);
            self.table = Arc::new(self.file.at(self.kind, version).unwrap_or_default());
        }
        self.table.clone()
    }

    /// Whether the rules in use read this transcript otherwise than these (the
    /// user's file changed what its CLI's table says at its version). A change that
    /// leaves them as they were (another CLI's table, a file touched, a refused file
    /// standing for the built-in rules) is taken without a word.
    pub fn stale(&mut self) -> bool {
        let now = current();
        if Arc::ptr_eq(&now, &self.file) {
            return false;
        }
        let table = now
            .at(self.kind, self.version.as_deref())
            .unwrap_or_default();
        self.file = now;
        table != *self.table
    }

    /// Notes that `key`'s `phrase` decided the entry written at `at_ms`.
    pub fn note(&mut self, at_ms: i64, key: &str, phrase: &str) {
        self.matched = Some(Matched {
            at_ms,
            rule: format!("{}.{key}", self.kind.name()),
            phrase: phrase.to_string(),
        });
    }

    /// The rule that last decided an entry.
    pub fn matched(&self) -> Option<&Matched> {
        self.matched.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_rules_parse_and_print_as_a_file_that_reads_back() {
        let rules = built_in();
        assert_eq!(
            rules.claude.turn_ends,
            ["turn_duration", "stop_hook_summary"]
        );
        assert_eq!(rules.codex.interrupted, ["turn_aborted"]);
        assert!(!rules.aider.prompts.is_empty() && !rules.gemini.assistant.is_empty());
        assert_eq!(parse(&rules.to_toml(), "printed").unwrap(), *rules);
    }

    #[test]
    fn a_users_rules_are_added_or_replace_and_hold_for_their_versions() {
        let user = parse(
            "[claude]\nturn_ends = [\"turn_summary\"]\n\n\
             [codex]\nreplace = true\ninjected = [\"<context>\"]\n\n\
             [claude.versions.\">=3\"]\nreplace = true\ninterrupted = [\"[Stopped by user\"]\n",
            "test",
        )
        .unwrap();
        let rules = merged(built_in(), user);
        let claude = rules.at(AgentKind::Claude, Some("2.1.197")).unwrap();
        assert_eq!(
            claude.turn_ends,
            ["turn_duration", "stop_hook_summary", "turn_summary"]
        );
        assert_eq!(claude.interrupted, built_in().claude.interrupted);
        let newer = rules.at(AgentKind::Claude, Some("3.0.1")).unwrap();
        assert_eq!(newer.interrupted, ["[Stopped by user"]);
        let codex = rules.at(AgentKind::Codex, None).unwrap();
        assert_eq!(codex.injected, ["<context>"]);
        assert_eq!(codex.turn_ends, built_in().codex.turn_ends);
        assert_eq!(rules.at(AgentKind::Custom, None), None);
    }

    #[test]
    fn a_file_with_an_error_says_where_and_why() {
        let e = parse("[claude]\nturn_ends = [\"a\"]\nends = [\"b\"]\n", "t.toml").unwrap_err();
        assert!(e.starts_with("t.toml, line 3"), "{e}");
        let e = parse("[codex]\nnot_prompts = [\"<x\"]\n", "t.toml").unwrap_err();
        assert!(
            e.contains("[codex] not_prompts is not read for this table"),
            "{e}"
        );
        let e = parse("[claude]\ninterrupted = [\"\"]\n", "t.toml").unwrap_err();
        assert!(e.contains("interrupted holds an empty phrase"), "{e}");
        let e = parse("[aider.versions.\">=1\"]\nprompts = [\"## \"]\n", "t.toml").unwrap_err();
        assert!(e.contains("[aider] has versions"), "{e}");
        let e = parse("[codex.versions.\"new\"]\nerrors = [\"e\"]\n", "t.toml").unwrap_err();
        assert!(
            e.starts_with("t.toml, line 1: [codex.versions.\"new\"]"),
            "{e}"
        );
    }

    #[test]
    fn the_rules_follow_the_version_and_name_what_matched() {
        let user = parse(
            "[claude.versions.\">=3\"]\nturn_ends = [\"turn_summary\"]\n",
            "test",
        )
        .unwrap();
        let file = Arc::new(merged(built_in(), user));
        let mut rules = RulesAt::from_file(AgentKind::Claude, file);
        assert_eq!(named(&rules.at(None).turn_ends, "turn_summary"), None);
        assert_eq!(
            named(&rules.at(Some("2.9.1")).turn_ends, "turn_summary"),
            None
        );
        assert_eq!(
            named(&rules.at(Some("3.0.1")).turn_ends, "turn_summary"),
            Some(&"turn_summary".to_string())
        );
        assert!(starting(&rules.at(None).interrupted, "[Request interrupted by user]").is_some());
        rules.note(5, "turn_ends", "turn_summary");
        let matched = rules.matched().unwrap();
        assert_eq!(matched.rule, "claude.turn_ends");
        // It names the report of the entry it read, not another of the same moment.
        let report = |kind: ReportKind, at_ms: i64| Report {
            at_ms,
            kind,
            source: Signal::Transcript,
        };
        let ended = ReportKind::TurnEnd {
            outcome: TurnOutcome::Answered,
            background: 0,
        };
        assert!(matched.read(&report(ended.clone(), 5)));
        assert!(!matched.read(&report(ReportKind::TurnStart, 5)));
        assert!(!matched.read(&report(ended.clone(), 6)));
        assert!(!matched.read(&Report {
            source: Signal::Hook,
            ..report(ended, 5)
        }));
    }
}
