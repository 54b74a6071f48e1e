//! User-defined reducers for private tools, read from TOML (see [`UserRules`]).

use crate::choose::invocation;
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason;
use regex::{Regex, RegexSet};
use serde::Deserialize;
use std::fmt;
use toml::Spanned;

/// A set of user-defined reducers, in priority order.
///
/// cohort reads `.cohort/reducers.toml` in the project and `reducers.toml` in the user's
/// config directory and passes their text here (this crate does no I/O); rules from the
/// first source win. Each `[[reducer]]` names the command it applies to and what to do with
/// its lines:
///
/// ```toml
/// [[reducer]]
/// name = "deploy"                  # shown as the reducer "user:deploy"
/// command = "deploy"               # program (after sudo, env, npx … are seen through),
///                                  # optionally with leading arguments: "mytool sync"
/// match = "^\\./scripts/deploy"    # or/and: a regex over the whole command line
/// keep = ["^ERROR", "deployed to"] # regexes: always shown, never elided
/// drop = ["^\\s+Uploading ", "^DEBUG "]  # regexes: hidden (and counted)
/// head = 10                        # elision: lines kept from the start …
/// tail = 30                        # … and from the end …
/// max_lines = 50                   # … once more than this many remain
/// fold = true                      # fold repeated and number-only-different runs (default)
/// ```
///
/// Lines that read as errors or warnings are never dropped by a `drop` pattern. A rule
/// replaces the built-in reducer for its command; the generic pipeline still runs.
///
/// ```
/// use cohort_reducers::{reduce, Options, UserRules};
/// let rules = UserRules::from_toml_str(
///     "[[reducer]]\nname = \"deploy\"\ncommand = \"deploy\"\ndrop = [\"^Uploading \"]\n",
///     ".cohort/reducers.toml",
/// ).unwrap();
/// let options = Options { user_rules: Some(rules), ..Options::default() };
/// let out = reduce("deploy --prod", b"Uploading a\nUploading b\nerror: quota\ndone\n", &options);
/// assert_eq!(out.text, "error: quota\ndone");
/// assert_eq!(out.reducer, "user:deploy");
///
/// let err = UserRules::from_toml_str("[[reducer]]\nname = \"x\"\ncommand = \"x\"\ndrop = [\"(\"]\n", "rules.toml")
///     .unwrap_err();
/// assert_eq!(err.line, 4);
/// assert!(err.to_string().starts_with("rules.toml:4:"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct UserRules {
    rules: Vec<Rule>,
}

/// One user-defined reducer.
#[derive(Clone, Debug)]
pub(crate) struct Rule {
    pub name: String,
    command: Vec<String>,
    pattern: Option<Regex>,
    keep: RegexSet,
    drop: RegexSet,
    head: Option<usize>,
    tail: Option<usize>,
    max_lines: Option<usize>,
    fold: Option<bool>,
}

/// A rules file that could not be used, with where the problem is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RulesError {
    /// Where the text came from, as the caller named it (usually a path).
    pub origin: String,
    /// 1-based line of the problem.
    pub line: usize,
    /// 1-based column of the problem.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.origin, self.line, self.column, self.message
        )
    }
}

impl std::error::Error for RulesError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileToml {
    #[serde(default)]
    reducer: Vec<RuleToml>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleToml {
    name: Spanned<String>,
    command: Option<Spanned<String>>,
    #[serde(rename = "match")]
    pattern: Option<Spanned<String>>,
    #[serde(default)]
    keep: Vec<Spanned<String>>,
    #[serde(default)]
    drop: Vec<Spanned<String>>,
    head: Option<usize>,
    tail: Option<usize>,
    max_lines: Option<usize>,
    fold: Option<bool>,
}

impl UserRules {
    /// Parses a rules file. `origin` names it in errors (`".cohort/reducers.toml"`).
    pub fn from_toml_str(src: &str, origin: &str) -> Result<Self, RulesError> {
        let error = |offset: usize, message: String| {
            let (line, column) = line_col(src, offset);
            RulesError {
                origin: origin.to_owned(),
                line,
                column,
                message,
            }
        };
        let file: FileToml = toml::from_str(src).map_err(|e| {
            let offset = e.span().map_or(0, |s| s.start);
            error(offset, e.message().trim().to_owned())
        })?;
        let mut rules = Vec::with_capacity(file.reducer.len());
        for r in file.reducer {
            let regex = |s: &Spanned<String>| {
                Regex::new(s.get_ref())
                    .map_err(|e| error(s.span().start, format!("bad regex: {e}")))
            };
            let set = |list: &[Spanned<String>]| {
                for s in list {
                    regex(s)?;
                }
                RegexSet::new(list.iter().map(|s| s.get_ref().as_str())).map_err(|e| {
                    error(
                        list.first().map_or(0, |s| s.span().start),
                        format!("bad regex: {e}"),
                    )
                })
            };
            if r.command.is_none() && r.pattern.is_none() {
                return Err(error(
                    r.name.span().start,
                    format!("reducer {:?} needs `command` or `match`", r.name.get_ref()),
                ));
            }
            rules.push(Rule {
                name: r.name.get_ref().clone(),
                command: r
                    .command
                    .as_ref()
                    .map(|c| c.get_ref().split_whitespace().map(str::to_owned).collect())
                    .unwrap_or_default(),
                pattern: r.pattern.as_ref().map(regex).transpose()?,
                keep: set(&r.keep)?,
                drop: set(&r.drop)?,
                head: r.head,
                tail: r.tail,
                max_lines: r.max_lines,
                fold: r.fold,
            });
        }
        Ok(UserRules { rules })
    }

    /// Appends `other`'s rules after these (these win when both match).
    pub fn extend(&mut self, other: UserRules) {
        self.rules.extend(other.rules);
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The first rule that applies to `command`.
    pub(crate) fn find(&self, command: &str) -> Option<&Rule> {
        if self.rules.is_empty() {
            return None;
        }
        let words = invocation(command).unwrap_or_default();
        self.rules.iter().find(|r| r.applies(command, &words))
    }
}

impl Rule {
    fn applies(&self, command: &str, words: &[String]) -> bool {
        let by_words = self.command.is_empty()
            || (words.len() >= self.command.len()
                && self
                    .command
                    .iter()
                    .zip(words)
                    .enumerate()
                    .all(|(n, (want, got))| {
                        let got = if n == 0 {
                            got.rsplit('/').next().unwrap_or(got)
                        } else {
                            got
                        };
                        want == got
                    }));
        let by_pattern = self.pattern.as_ref().is_none_or(|p| p.is_match(command));
        by_words && by_pattern
    }

    /// Applies the rule's keep and drop patterns and its elision settings.
    pub(crate) fn apply<'a>(&self, src: &Src<'a>, mut post: Post) -> Out<'a> {
        if let Some(fold) = self.fold {
            post.fold_identical = fold;
            post.fold_similar = fold;
        }
        post.head = self.head.unwrap_or(post.head);
        post.tail = self.tail.unwrap_or(post.tail);
        if self.max_lines.is_some() {
            post.max_lines = self.max_lines;
        }
        let mut out = Out::new(post);
        for i in 0..src.len() {
            let line = src.line(i);
            if self.keep.is_match(line) {
                out.pin(src, i);
            } else if self.drop.is_match(line) {
                out.hide(src, i, HiddenReason::Rule);
            } else {
                out.keep(src, i);
            }
        }
        out
    }
}

fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_name_the_line() {
        let err = UserRules::from_toml_str("[[reducer]]\nname = \"a\"\ncommand = \n", "x.toml")
            .unwrap_err();
        assert_eq!((err.origin.as_str(), err.line), ("x.toml", 3), "{err}");
    }

    #[test]
    fn unknown_keys_are_errors() {
        let err = UserRules::from_toml_str(
            "[[reducer]]\nname = \"a\"\ncommand = \"a\"\nheda = 3\n",
            "x.toml",
        )
        .unwrap_err();
        assert_eq!(err.line, 4, "{err}");
    }

    #[test]
    fn a_rule_needs_a_command_or_a_match() {
        let err = UserRules::from_toml_str("\n[[reducer]]\nname = \"a\"\n", "x.toml").unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        assert!(err.message.contains("needs `command`"));
    }

    #[test]
    fn matching_sees_through_wrappers_and_checks_leading_args() {
        let rules = UserRules::from_toml_str(
            "[[reducer]]\nname = \"sync\"\ncommand = \"tool sync\"\n[[reducer]]\nname = \"any\"\nmatch = \"^deploy\"\n",
            "x",
        )
        .unwrap();
        assert_eq!(
            rules
                .find("sudo ./bin/tool sync --all")
                .map(|r| r.name.as_str()),
            Some("sync")
        );
        assert!(rules.find("tool other").is_none());
        assert_eq!(
            rules.find("deploy now").map(|r| r.name.as_str()),
            Some("any")
        );
    }
}
