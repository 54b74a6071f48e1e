//! The facts of a raw output, found by rules of their own (not the reducers'), and the
//! check of a reduction against them.
//!
//! A fact is one of:
//! - a **problem** line: an error, failure or warning in the grammar tools print them
//!   (`error[E0308]: …`, `file:12:3: error: …`, `FAILED …`, `npm error …`, a Python
//!   exception, a log line of level ERROR or WARN …), never a word inside a success line
//!   (`0 failed`, `no errors`, `-Werror`), a source excerpt or a grep hit's text;
//! - a **count** of a summary line (`3 failed`, `12 passed`, `2 files changed`, `ℹ tests 29`);
//! - a **path** (a word with a directory or a file extension);
//! - a failing **test** name;
//! - a commit **subject** of a git log.
//!
//! A reduction keeps a problem line when the text holds every word of it, or when the line
//! is hidden in a range that counts errors and warnings; a count or a test name when the
//! text holds it; a path or a subject when the text holds it whole or its line is hidden
//! (every hidden range is named, so it can be read back). Invented signal is a count of
//! errors or warnings the raw output does not have: a hidden range that claims more of them
//! than it holds, a written line that counts more than the output has, or success wording
//! the output never used.

use cohort_reducers::{command, HiddenReason, Reduced};
use regex::Regex;
use std::sync::LazyLock;

/// What kind of fact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Problem,
    Count,
    Path,
    Test,
    Subject,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Problem => "problem",
            Kind::Count => "count",
            Kind::Path => "path",
            Kind::Test => "test",
            Kind::Subject => "subject",
        }
    }
}

/// One fact, and the raw line (0-based) it is on.
#[derive(Clone, Debug)]
pub struct Fact {
    pub kind: Kind,
    pub line: usize,
    pub what: String,
}

/// What a reduction kept of a raw output's facts, and what it invented.
#[derive(Debug, Default)]
pub struct Report {
    pub facts: usize,
    pub lost: Vec<Fact>,
    pub invented: Vec<String>,
}

/// The raw output's lines as a terminal shows them: carriage returns, cursor moves to a
/// column (`ESC[nG`), line erasing (`ESC[K`, `ESC[2K`) and backspaces acted on; other
/// escape sequences and control characters dropped; trailing blanks removed.
pub fn terminal_lines(raw: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(raw);
    let mut lines: Vec<String> = text.split('\n').map(render_line).collect();
    if text.ends_with('\n') || text.is_empty() {
        lines.pop();
    }
    lines
}

fn render_line(line: &str) -> String {
    let mut cells: Vec<char> = Vec::new();
    let mut at = 0usize;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => at = 0,
            '\u{8}' => at = at.saturating_sub(1),
            // An escape inside an escape starts it again.
            '\u{1b}' if chars.peek() == Some(&'\u{1b}') => {}
            // Controls inside an escape sequence do not end it.
            '\u{1b}' => match chars.find(|c| *c == '\u{1b}' || !c.is_ascii_control()) {
                Some('\u{1b}') => {}
                Some('[') => {
                    let mut params = String::new();
                    let mut fin = None;
                    for p in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&p) {
                            fin = Some(p);
                            break;
                        }
                        params.push(p);
                    }
                    let n: usize = params.parse().unwrap_or(0);
                    match fin {
                        Some('G') => at = n.max(1) - 1,
                        Some('C') => at += n.max(1),
                        Some('D') => at = at.saturating_sub(n.max(1)),
                        Some('K') if n == 2 => cells.clear(),
                        Some('K') if n == 1 => {
                            for cell in cells.iter_mut().take(at + 1) {
                                *cell = ' ';
                            }
                        }
                        Some('K') => cells.truncate(at),
                        _ => {}
                    }
                }
                Some(']' | 'P' | '_' | '^' | 'X') => {
                    while let Some(p) = chars.next() {
                        if p == '\u{7}' || (p == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                // `ESC`, intermediates (` ` to `/`), one final character.
                Some(' '..='/') => {
                    while chars.next_if(|c| (' '..='/').contains(c)).is_some() {}
                    chars.next();
                }
                _ => {}
            },
            c if c == '\t' || !c.is_control() => {
                while cells.len() < at {
                    cells.push(' ');
                }
                if at < cells.len() {
                    cells[at] = c;
                } else {
                    cells.push(c);
                }
                at += 1;
            }
            _ => {}
        }
    }
    let s: String = cells.into_iter().collect();
    s.trim_end().to_owned()
}

/// Which tools' output the command line shows, as far as the rules need to know.
#[derive(Clone, Copy, Debug, Default)]
struct Tools {
    /// grep and its kin: `path:line:text` lines are hits, their text is an excerpt.
    grep: bool,
    /// git diff/log/show: `+`, `-`, ` ` lines and indented commit messages are excerpts.
    diff: bool,
    /// git log: commit subjects are facts.
    log: bool,
    /// git log --oneline: a line is a hash, its refs and the subject.
    oneline: bool,
}

fn tools(line: &str) -> Tools {
    let mut t = Tools::default();
    for found in command::walk(line).found {
        let run = found.command.effective();
        let Some(first) = run.first() else { continue };
        let prog = command::program_name(&first.text);
        // The first word after the options (git's `-c x=y` and `-C dir` take a value).
        let mut rest = run.iter().skip(1).map(|w| w.text.as_str());
        let mut sub = None;
        while let Some(w) = rest.next() {
            if matches!(w, "-c" | "-C") {
                rest.next();
            } else if !w.starts_with('-') {
                sub = Some(w);
                break;
            }
        }
        match (prog, sub) {
            ("grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack", _) | ("git", Some("grep")) => {
                t.grep = true
            }
            ("git", Some("log" | "show")) => {
                t.diff = true;
                t.log = true;
                t.oneline |= run.iter().any(|w| w.text == "--oneline");
            }
            ("git", Some("diff")) | ("diff", _) => t.diff = true,
            _ => {}
        }
    }
    t
}

macro_rules! re {
    ($name:ident, $pat:expr) => {
        static $name: LazyLock<Regex> = LazyLock::new(|| Regex::new($pat).expect($pat));
    };
}

re!(GREP_HIT, r"^([^\s:][^:]*?)[:-](\d+)[:-]");
re!(HEADING_HIT, r"^\d+[:-]");
re!(
    SNIPPET,
    r"^\s*\d*\s*\|(\s|$)|^\s+[\^~][\^~ -]*$|^\s*=\s(note|help):"
);
re!(PY_FRAME, r#"^\s*File "[^"]*", line \d+"#);
re!(
    SUCCESS,
    r"(?i)\b0 (errors?|failed|failures?|warnings?|problems?|vulnerabilities)\b|\bno (errors|warnings|failures|issues|problems)( found)?\b|-W(error|no-[\w-]+)\b|\b(warnings?|errors?)=0\b"
);
re!(
    PROBLEM,
    concat!(
        r"^[\s│╷╵|]*(\S+: )?(fatal error|error|warning|fatal|ERROR|WARNING|WARN|FATAL|CRITICAL|Error|Warning|PANIC)(\[[^\]]*\])?(:|!| -|\s*$)",
        r"|^\s*[^\s:]+:\d+(:\d+)?: (fatal error|error|warning|\w*Error|\w*Warning)\b",
        r"|^(vet: )?[^\s:]+\.\w+:\d+:\d+: \S",
        r"|\(\d+,\d+\): (error|warning) ",
        r"|^\s+\d+:\d+\s+(error|warning)\s",
        r"|^(FAIL|FAILED|ERROR|FAILURE)\b|^--- FAIL|^\s*(✕|×|✗|✘|✖)\s|^not ok \d|^E\s{2,}\S",
        r"|^npm (ERR!|error|warn|WARN)\b|^\s*(WARN|ERR_PNPM_\w+)\s|^#\d+ (ERROR|error)\b",
        r"|^Traceback \(most recent call last\)|^\s*(Uncaught )?([\w.]+\.)?[A-Z]\w*(Error|Exception)\b(:|$| \[)",
        r"|panicked at|^panic: |^CONFLICT \(|^(E|W): |^Err:\d",
        r"|^(make|gmake)(\[\d+\])?: \*\*\*",
        r"|(No such file or directory|Permission denied|command not found|Operation not permitted|Connection refused|Connection timed out|No space left on device)",
        r"|^\s*(\[\d+\]\+?\s+)?(Killed|Terminated|Segmentation fault|Aborted)\b|\d+ (Killed|Terminated)  ",
        r"|\b(CrashLoopBackOff|ImagePullBackOff|ErrImagePull|OOMKilled|Evicted|CreateContainerConfigError)\b",
        r"|\bExited \([1-9]\d*\)|^< HTTP/[\d.]+ [45]\d\d|^curl: \(\d+\)|^\* (Failed|Could not|Closing connection -?1)",
        r#"|"level":\s*"(error|warning)""#,
        r"|\b[1-9]\d* (errors?|failed|failures?|warnings?|problems?)\b",
    )
);
re!(
    LOG_LINE,
    r"^(\d{4}-\d\d-\d\d[T ][\d:.,]+(Z|[+-]\d\d:?\d\d)?|\w{3} [ \d]\d [\d:]{8}|\[[\d\-T:., ]+\])\s"
);
re!(
    LOG_PROBLEM,
    r"(?i)\b(error|err|warn|warning|fatal|critical|crit|panic|fail|failed|failure|denied|refused)\b"
);
re!(
    COUNT,
    r"\b(\d+) (passed|failed|errors?|warnings?|skipped|ignored|tests?|problems?|deselected|xfailed|xpassed|todo|files? changed|insertions?\(\+\)|deletions?\(-\)|vulnerabilit(y|ies)|packages?|measured|filtered out)\b"
);
re!(
    COUNT_WORD_FIRST,
    r"^(ℹ|#) (tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$"
);
re!(
    SUMMARY_OPENER,
    r"^\s*(Found|Ran|Tests?:|Test Suites:|Test Files|Suites?:|Summary|✖|✔|added|removed|changed|up to date|audited|=+|-+|FAILED \(|OK \(|error: could not compile|warning: .* generated|test result:|\d+ (passed|failed|errors?|warnings?|tests?|problems?|files? changed))"
);
re!(
    TEST_NAME,
    r"^FAILED (\S+?)(?: - .*)?$|^ERROR (\S+::\S+?)(?: - .*)?$|^--- FAIL: (\S+)|^test (\S+) \.\.\. FAILED|^\s+FAIL \[\s*[\d.]+s\] (.+)$|^\s*(?:✕|×|✗|✘) (.+?)(?: \(\d+(?:\.\d+)? ?m?s\)| \d+(?:\.\d+)?m?s)?$|^not ok \d+ - (.+?)(?: #.*)?$|^(?:FAIL|ERROR): (\w+) \("
);
re!(COMMIT, r"^commit [0-9a-f]{40}");
re!(ONELINE, r"^[*|\\/ ]*[0-9a-f]{7,40} (?:\([^)]*\) )?(.+)$");
re!(
    PATH,
    r"^(\.{0,2}/|~/)?([\w@+.~-]+/)*[\w@+~-][\w@+.~-]*\.[A-Za-z][A-Za-z0-9]{0,7}$|^(\.{0,2}|~)?/?([\w@+.~-]+/)+[\w@+.~-]*$"
);
re!(
    CLAIM,
    r"(?:^|[\s(,;])([1-9]\d*) (errors?|warnings?|failed|failures?|problems?)\b"
);

/// Success words a reduction may only use when the raw output does.
const SUCCESS_WORDS: &[&str] = &[
    "ok",
    "passed",
    "success",
    "successfully",
    "succeeded",
    "no errors",
    "0 errors",
    "0 failed",
    "clean",
    "nothing to commit",
    "✓",
];

/// Which cleaned lines are excerpts: a grep hit's text, a diff's changed or context line
/// (inside a hunk), a commit message (after a `commit` line), a compiler's source snippet,
/// a traceback's source line.
fn excerpts(lines: &[String], t: Tools) -> Vec<bool> {
    let mut out = Vec::with_capacity(lines.len());
    let (mut in_hunk, mut in_commit) = (false, false);
    for (i, l) in lines.iter().enumerate() {
        if t.diff {
            if l.starts_with("diff --") || COMMIT.is_match(l) {
                in_hunk = false;
                in_commit = COMMIT.is_match(l);
            } else if l.starts_with("@@") {
                in_hunk = true;
            }
        }
        let hunk_line = in_hunk && (l.starts_with(['+', '-', ' ', '\\']) || l.is_empty());
        let message = in_commit && !in_hunk && l.starts_with("    ");
        out.push(
            (t.grep && (GREP_HIT.is_match(l) || HEADING_HIT.is_match(l) || l == "--"))
                || hunk_line
                || message
                || SNIPPET.is_match(l)
                || (i > 0 && PY_FRAME.is_match(&lines[i - 1]) && l.starts_with("    ")),
        );
    }
    out
}

re!(
    SUPPLEMENT,
    r"^\s*[^\s:]+:\d+(:\d+)?: (note|remark|info|help): "
);

/// Whether a cleaned, non-excerpt line reports an error, failure or warning (a compiler's
/// `note:` beside one is not one itself).
pub fn is_problem(line: &str) -> bool {
    if SUPPLEMENT.is_match(line) {
        return false;
    }
    let l = SUCCESS.replace_all(line, "");
    PROBLEM.is_match(&l) || (LOG_LINE.is_match(&l) && LOG_PROBLEM.is_match(&l))
}

/// The words of a problem line that `text` does not hold (decoration aside).
pub fn missing_words<'a>(line: &'a str, text: &str) -> Vec<&'a str> {
    words(line)
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .filter(|w| !text.contains(w))
        .collect()
}

fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| c.is_whitespace() || "'\"`()[]{}<>,;=|".contains(c))
        .map(|w| w.trim_end_matches([':', '.', ',', ';']))
        .filter(|w| !w.is_empty())
}

/// The path words of a line: a directory or a file extension, `:12:3` suffixes dropped.
fn paths(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in words(line) {
        let w = w.split(':').next().unwrap_or(w).trim_end_matches('/');
        if w.len() > 2 && w.len() < 200 && PATH.is_match(w) && !w.starts_with("//") {
            out.push(w.to_owned());
        }
    }
    out
}

/// Every fact of `lines` (as [`terminal_lines`] gives them) for the output of `command`.
pub fn facts(command: &str, lines: &[String]) -> Vec<Fact> {
    let t = tools(command);
    let excerpt = excerpts(lines, t);
    let mut out = Vec::new();
    let mut push = |kind, line, what: &str| {
        out.push(Fact {
            kind,
            line,
            what: what.to_owned(),
        })
    };
    for (i, l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        if excerpt[i] {
            if t.grep {
                if let Some(c) = GREP_HIT.captures(l) {
                    for p in paths(&c[1]) {
                        push(Kind::Path, i, &p);
                    }
                }
            }
            continue;
        }
        if is_problem(l) {
            push(Kind::Problem, i, l.trim());
        }
        let summary = SUMMARY_OPENER.is_match(l) || COUNT.find_iter(l).count() >= 2;
        if summary {
            for c in COUNT.captures_iter(l) {
                push(Kind::Count, i, &format!("{} {}", &c[1], &c[2]));
            }
        }
        if let Some(c) = COUNT_WORD_FIRST.captures(l) {
            push(Kind::Count, i, &format!("{} {}", &c[2], &c[3]));
        }
        if let Some(c) = TEST_NAME.captures(l) {
            if let Some(name) = c.iter().skip(1).flatten().next() {
                push(Kind::Test, i, name.as_str().trim());
            }
        }
        for p in paths(l) {
            // `a/x` and `b/x` in a diff's headers are git's names for the two sides of `x`.
            let header = ["diff --git ", "--- ", "+++ "]
                .iter()
                .any(|h| l.starts_with(h));
            let p = match (
                t.diff && header,
                p.strip_prefix("a/").or(p.strip_prefix("b/")),
            ) {
                (true, Some(path)) => path.to_owned(),
                _ => p,
            };
            push(Kind::Path, i, &p);
        }
        if t.log {
            if COMMIT.is_match(l) {
                // The subject: the first indented line after the header's blank line.
                let mut j = i + 1;
                while j < lines.len() && !lines[j].is_empty() {
                    j += 1;
                }
                if let Some(s) = lines.get(j + 1).filter(|s| s.starts_with("    ")) {
                    push(Kind::Subject, j + 1, s.trim());
                }
            } else if let Some(c) = ONELINE.captures(l).filter(|_| t.oneline) {
                push(Kind::Subject, i, c[1].trim());
            }
        }
    }
    out
}

/// Whether `text` holds `word` with no path character just before or after it.
fn holds_whole(text: &str, word: &str) -> bool {
    let path_char = |c: char| c.is_alphanumeric() || "_@+.~-/".contains(c);
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(path_char)
            && !after.is_some_and(|c| path_char(c) && !(c == '/' || c == '.'))
    })
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Checks the reduction `r` of the raw output `raw` of `command` against its facts.
pub fn check(command: &str, raw: &[u8], r: &Reduced) -> Report {
    let lines = terminal_lines(raw);
    let facts = facts(command, &lines);
    let text = &r.text;
    let squashed = squash(text);
    let hidden = |i: usize| {
        r.hidden
            .iter()
            .find(|h| h.lines.contains(&i) && h.why != HiddenReason::Clipped)
    };
    let clipped = |i: usize| {
        r.hidden
            .iter()
            .any(|h| h.lines.contains(&i) && h.why == HiddenReason::Clipped)
    };
    let mut report = Report {
        facts: facts.len(),
        ..Report::default()
    };
    for fact in facts {
        let kept = match fact.kind {
            Kind::Problem => {
                missing_words(&fact.what, text).is_empty()
                    || hidden(fact.line).is_some_and(|h| h.signal > 0)
                    || clipped(fact.line)
            }
            Kind::Count => squashed.contains(&squash(&fact.what)),
            Kind::Test => squashed.contains(&squash(&fact.what)) || clipped(fact.line),
            Kind::Path | Kind::Subject => {
                holds_whole(text, &fact.what) || hidden(fact.line).is_some() || clipped(fact.line)
            }
        };
        if !kept {
            report.lost.push(fact);
        }
    }
    // Hidden ranges claim no more errors and warnings than they hold.
    let excerpt = excerpts(&lines, tools(command));
    let problem_at: Vec<bool> = (0..lines.len())
        .map(|i| !excerpt[i] && is_problem(&lines[i]))
        .collect();
    for h in r.hidden.iter().filter(|h| h.signal > 0) {
        let held = problem_at
            .get(h.lines.clone())
            .map_or(0, |s| s.iter().filter(|&&p| p).count());
        if h.signal > held {
            report.invented.push(format!(
                "lines {} hidden as {}: {} errors/warnings claimed, {held} there",
                h.display_range(),
                h.why.as_str(),
                h.signal
            ));
        }
    }
    // Lines the reduction wrote count no more problems than the output has.
    let total = problem_at.iter().filter(|&&p| p).count();
    let raw_set: std::collections::HashSet<&str> = lines.iter().map(|l| l.trim()).collect();
    for line in text.lines().filter(|l| !raw_set.contains(l.trim())) {
        if line.starts_with("… ") && line.contains("errors/warnings among them") {
            continue;
        }
        for c in CLAIM.captures_iter(line) {
            let n: usize = c[1].parse().unwrap_or(0);
            let said = format!("{} {}", &c[1], &c[2]);
            if n > total && !lines.iter().any(|l| l.contains(&said)) {
                report
                    .invented
                    .push(format!("{line:?} says {said}; the output has {total}"));
            }
        }
    }
    // No success wording the output does not use.
    let lower_raw = lines.join("\n").to_lowercase();
    let lower_text = text.to_lowercase();
    for w in SUCCESS_WORDS {
        let re = Regex::new(&format!(r"(^|[^\w]){}($|[^\w])", regex::escape(w))).unwrap();
        if re.is_match(&lower_text) && !re.is_match(&lower_raw) {
            report
                .invented
                .push(format!("says {w:?}, which the output does not"));
        }
    }
    report
}
