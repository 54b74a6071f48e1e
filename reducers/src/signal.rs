//! Which lines carry the signal: errors, failures, panics, tracebacks and warnings.
//!
//! The rule every reducer obeys is built on this: a line that reads as one of these is shown,
//! or counted in a visible summary, never silently dropped.

use regex::Regex;
use std::sync::LazyLock;

/// One pattern for the whole vocabulary: literals only (plus ASCII word boundaries), so the
/// search runs on a literal prefilter and the fast engines; nothing in it can match a
/// newline, so it can scan a whole text at once. Exception classes (`AssertionError`,
/// `DeprecationWarning`) are caught by their suffix. Besides the words, the messages the C
/// library and the shells print for a failed call (`strerror` texts such as `No such file
/// or directory`, `cannot stat`, `command not found`) and for a process killed by a signal
/// (`OOMKilled`; bash's job report `1234 Killed    cmd`, whose status is padded with
/// blanks, and zsh's `zsh: killed  cmd`). Line-start markers and lines that are nothing but
/// a signal's name are checked apart by [`marks_signal`].
static SIGNAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?-u:\b)(?:errors?|ERRORS?|Errors?|ERR|warnings?|WARNINGS?|Warnings?|warn|WARN|fail|fails|failed|failing|failures?|FAIL|FAILS|FAILED|FAILURES?|Fail|Failed|Failures?|panic|panicked|PANIC|fatal|FATAL|Fatal|CRITICAL|critical|CRIT|EMERG|ALERT|exception|Exception|EXCEPTION|Traceback|Aborted|Segmentation fault|core dumped",
        r"|No such file or directory|Permission denied|Operation not permitted|No space left on device|Read-only file system",
        r"|command not found|cannot stat|cannot open|cannot access|cannot find|cannot create|cannot remove|Cannot stat|Cannot open|Cannot access|Cannot find|Cannot create|Cannot remove",
        r"|Connection refused|Connection reset|Network is unreachable|No route to host|Could not resolve host|timed out|Timed out",
        r"|connection refused|connection reset|permission denied|no such file or directory|operation not permitted",
        r"|OOMKilled|Illegal instruction)(?-u:\b)",
        r"|(?:Error|Exception|Warning)(?-u:\b)",
        r"| Killed  | Terminated  |zsh: killed |zsh: terminated ",
    ))
    .expect("signal pattern is valid")
});

/// Lines a shell prints, alone, when the foreground job dies of a signal (the rest of such
/// reports, `Aborted`, `Segmentation fault`, are words of [`SIGNAL`]).
const SIGNAL_LINES: &[&str] = &["Killed", "Terminated"];

/// Line-start markers of failure: pytest's `E   ` detail lines, apt's `E: ` (error),
/// `W: ` (warning) and `Err:` (failed fetch) lines, the crosses test runners print before a
/// failing test (`× name`, `✕ name`, node's `✖ name`), and a line that is only `Killed` or `Terminated`.
pub(crate) fn marks_signal(line: &str) -> bool {
    // Every marker starts with `E`, `W`, `K`, `T`, a blank, or the lead byte of `×` (C3) or
    // of the other crosses (E2): one byte tells most lines apart.
    if !matches!(
        line.as_bytes().first(),
        Some(b'E' | b'W' | b'K' | b'T' | b' ' | b'\t' | 0xc3 | 0xe2)
    ) {
        return false;
    }
    if ["E  ", "E: ", "W: ", "Err:"]
        .iter()
        .any(|m| line.starts_with(m))
    {
        return true;
    }
    let rest = line.trim_start_matches([' ', '\t']);
    ["× ", "✕ ", "✗ ", "✘ ", "✖ "]
        .iter()
        .any(|m| rest.starts_with(m))
        || SIGNAL_LINES.contains(&rest.trim_end())
}

/// What a tool prints when there is nothing wrong: `0 failed`, `no errors`, `-Werror`,
/// `warnings=0`. A signal word inside one of these does not count.
static SUCCESS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b0 (errors?|failed|failures?|warnings?|problems?|vulnerabilities)\b",
        r"|\bno (errors?|warnings?|failures?|problems?|issues)\b|\bwithout (errors?|warnings?)\b",
        r"|(^|\s)-W[\w=-]*|\b(errors?|warnings?|failures?)[=:] ?0\b",
    ))
    .expect("success pattern is valid")
});

/// Whether one (cleaned) line reads as an error, failure, panic, traceback or warning.
pub(crate) fn is_signal(line: &str) -> bool {
    marks_signal(line) || words_signal(line)
}

/// Whether a signal word of [`SIGNAL`] in `line` counts: where a tool's grammar puts it
/// (see [`in_grammar`]), not inside a success phrase (`test result: ok. 3 passed; 0
/// failed`), not part of a path or file name (`src/error/mod.rs`, `?? error.log`).
pub(crate) fn words_signal(line: &str) -> bool {
    let mut found = SIGNAL.find_iter(line).peekable();
    if found.peek().is_none() {
        return false;
    }
    let success: Vec<std::ops::Range<usize>> = SUCCESS.find_iter(line).map(|m| m.range()).collect();
    found.any(|m| {
        let in_success = success
            .iter()
            .any(|r| r.start <= m.start() && m.end() <= r.end);
        !in_success && !in_path(line, m.start(), m.end()) && in_grammar(line, m.start(), m.end())
    })
}

/// The words that name a level or an outcome, and so read as a problem only where a tool
/// puts them; anything else [`SIGNAL`] matches is a phrase of its own (`Permission denied`,
/// `panicked`, `Segmentation fault`, `timed out`).
const LEVEL_WORDS: &[&str] = &[
    "error",
    "errors",
    "err",
    "warning",
    "warnings",
    "warn",
    "fail",
    "fails",
    "failed",
    "failing",
    "failure",
    "failures",
    "fatal",
    "critical",
    "crit",
    "exception",
    "panic",
    "emerg",
    "alert",
];

/// A line that starts with a date or a time: a log line, where a level word anywhere is the
/// line's level or outcome.
static LOG_STAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(\d{4}-\d\d-\d\d[T ][\d:.,]+|\w{3} [ \d]\d [\d:]{8}|\[[\d\-T:., ]+\]|\d\d:\d\d:\d\d)",
    )
    .expect("log stamp pattern is valid")
});

/// Whether a word after `before` heads a message: at the start of the line (after blanks or
/// box drawing), or after a prefix that names where it comes from (`gcc: `,
/// `src/a.c:3:4: `, `sshd[41]: `).
fn at_head(before: &str) -> bool {
    before
        .trim_start_matches([' ', '\t', '│', '|', '╷', '╵'])
        .is_empty()
        || before.ends_with(": ")
        || before.ends_with("] ")
}

/// eslint's location column before a level: `  12:5   error  …`.
static ESLINT_AT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+\d+:\d+\s+$").expect("location pattern is valid"));

/// Whether `before` ends with a count other than zero and a blank: `2 `, `, 1 `.
fn counted(before: &str) -> bool {
    let Some(rest) = before.strip_suffix(' ') else {
        return false;
    };
    let digits = rest.len() - rest.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let number = &rest[rest.len() - digits..];
    let opens = rest[..rest.len() - digits].chars().next_back();
    digits > 0
        && number.bytes().any(|b| b != b'0')
        && opens.is_none_or(|c| c.is_whitespace() || "(,;[".contains(c))
}

/// Whether the level word at `line[start..end]` stands where a tool's grammar puts one:
/// in capitals (`ERROR`, `FAILED`), heading a message before `:`, `!` or `[` (`error:`,
/// `gcc: error:`, `error[E0308]`), ending an exception's name (`KeyError`), counted (`2 errors`,
/// `Error 1`), after eslint's location column, before a diagnostic's code (`error TS2345:`), on a log line, or after
/// `npm`, `pnpm` or `yarn`. A word in prose (`fix the
/// error`, a commit subject, a comment) does not count.
fn in_grammar(line: &str, start: usize, end: usize) -> bool {
    let word = &line[start..end];
    if !LEVEL_WORDS.contains(&word.to_ascii_lowercase().as_str()) {
        return true;
    }
    let before = &line[..start];
    let after = &line[end..];
    word.len() > 1 && word.bytes().all(|b| b.is_ascii_uppercase())
        || (after.starts_with([':', '!', '[', ']']) && at_head(before))
        || before.ends_with(|c: char| c.is_ascii_alphanumeric())
        || counted(before)
        || ESLINT_AT.is_match(before)
        || after.strip_prefix(' ').is_some_and(|a| {
            // `Error 1` (make), `error TS2345:` (a diagnostic's code).
            let code: String = a.chars().take_while(|c| !c.is_whitespace()).collect();
            let code = code.trim_end_matches(':');
            a.starts_with(|c: char| c.is_ascii_digit())
                || (code.len() > 1
                    && code.starts_with(|c: char| c.is_ascii_uppercase())
                    && code.ends_with(|c: char| c.is_ascii_digit())
                    && code.chars().all(|c| c.is_ascii_alphanumeric()))
        })
        || LOG_STAMP.is_match(line)
        || ["npm ", "pnpm ", "yarn "]
            .iter()
            .any(|t| before.trim_start() == *t)
}

/// Whether `line[start..end]` lies in a path or file name: the word around it holds a `/`,
/// or it is followed by a file extension (`error.log`, `failures.py`).
fn in_path(line: &str, start: usize, end: usize) -> bool {
    let word_start = line[..start]
        .rfind(char::is_whitespace)
        .map_or(0, |p| p + 1);
    let word_end = line[end..]
        .find(char::is_whitespace)
        .map_or(line.len(), |p| end + p);
    let word = line[word_start..word_end].trim_matches(|c: char| "'\"`()[],;".contains(c));
    let rest = &line[end..word_end];
    let extension = rest.strip_prefix('.').is_some_and(|ext| {
        let ext = ext.trim_end_matches([':', ',', ';', ')', '\'', '"']);
        (1..=6).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric())
    });
    word.contains('/') || extension
}

/// A tool's summary: counts of tests, problems or changes (`3 failed, 12 passed`,
/// `Found 2 errors`, `5 files changed`, node's `ℹ tests 29`). Such lines are never elided,
/// folded or cut.
static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?-u:\b)\d+ (?:passed|failed|errors?|warnings?|skipped|ignored|tests?|problems?|deselected|xfailed|xpassed|todo|files? changed|insertions?|deletions?|vulnerabilit(?:y|ies)|packages?)(?-u:\b)",
        r"|(?m:^(?:ℹ|#) (?:tests|suites|pass|fail|cancelled|skipped|todo) \d+$)",
    ))
    .expect("summary pattern is valid")
});

/// For each line of `text` that reads as a signal, one byte offset inside it, in order.
///
/// Scanning the whole text once is much faster than asking line by line, and asking only
/// where a match ends (no pattern can cross a newline) keeps the search on the forward DFA.
pub(crate) fn signal_offsets(text: &str) -> impl Iterator<Item = usize> + '_ {
    offsets(&SIGNAL, text)
}

/// For each line of `text` that holds a tool's summary counts, one byte offset inside it.
pub(crate) fn summary_offsets(text: &str) -> impl Iterator<Item = usize> + '_ {
    offsets(&SUMMARY, text)
}

fn offsets<'t>(re: &'t Regex, text: &'t str) -> impl Iterator<Item = usize> + 't {
    let mut at = 0;
    std::iter::from_fn(move || {
        let end = re.shortest_match_at(text, at)?;
        // The match ends on the line it started on; resume at the next line.
        let inside = end.saturating_sub(1).max(at);
        at = text[inside..]
            .find('\n')
            .map_or(text.len(), |nl| inside + nl + 1);
        Some(inside)
    })
}

#[cfg(test)]
mod tests {
    use super::is_signal;

    #[test]
    fn reads_the_usual_suspects() {
        for line in [
            "error[E0308]: mismatched types",
            "warning: unused variable: `x`",
            "npm ERR! code E404",
            "npm warn deprecated request@2.88.2",
            "FAILED tests/test_a.py::test_x - assert 1 == 2",
            "--- FAIL: TestAdd (0.00s)",
            "thread 'main' panicked at src/main.rs:2:5:",
            "panic: runtime error: index out of range",
            "Traceback (most recent call last):",
            "E       AssertionError: assert 4 == 5",
            "KeyError: 'missing'",
            "ModuleNotFoundError: No module named 'x'",
            "   × multiplies wrongly 3ms",
            "  ✕ multiplies wrongly (2 ms)",
            "make: *** [Makefile:2: all] Error 1",
            "Segmentation fault (core dumped)",
            "DeprecationWarning: old() is deprecated",
        ] {
            assert!(is_signal(line), "{line}");
        }
    }

    #[test]
    fn reads_failed_calls_and_killed_processes() {
        for line in [
            "/usr/bin/ld: cannot find -lfoo: No such file or directory",
            "cat: /etc/shadow: Permission denied",
            "bash: frob: command not found",
            "build.sh: line 12: frob: command not found",
            "zsh: command not found: frob",
            "zsh:1: command not found: frob",
            "E: Unable to locate package foo",
            "W: Some index files failed to download. They have been ignored.",
            "W: GPG error: http://deb.example.org stable InRelease: NO_PUBKEY 0123",
            "Err:1 http://deb.example.org stable InRelease",
            "Killed",
            "Terminated",
            "  Killed  ",
            "Aborted",
            "Segmentation fault",
            "Segmentation fault (core dumped)",
            "build.sh: line 3: 12609 Killed                  sh -c 'kill -9 $$'",
            "[1]+  Terminated              sleep 100",
            "zsh: killed     sleep 100",
            "web-7d4b9   0/1     OOMKilled   3          2m",
            "ssh: connect to host x port 22: Connection timed out",
            "ssh: connect to host 127.0.0.1 port 1: Connection refused",
            "Connection to 10.255.255.1 port 22 timed out",
            "read: Connection reset by peer",
            "curl: (6) Could not resolve host: example.invalid",
            "mv: cannot stat 'a': No such file or directory",
            "rm: cannot remove '/x': Operation not permitted",
            "mkdir: cannot create directory '/x/y': No such file or directory",
            "ls: cannot access '/nonexistent': No such file or directory",
            "cp: cannot open 'a' for reading: Permission denied",
            "tee: out.log: No space left on device",
            "touch: cannot touch '/usr/x': Read-only file system",
            "Error: Cannot find module 'express'",
        ] {
            assert!(is_signal(line), "{line}");
        }
    }

    /// A long output with failed calls spread through it: its middle is elided, and every
    /// one of them is kept from the middle as an error, not hidden as an ordinary line.
    #[test]
    fn failed_calls_survive_elision() {
        let errors = [
            "/usr/bin/ld: cannot find -lfoo: No such file or directory",
            "bash: frob: command not found",
            "E: Unable to locate package foo",
            "Killed",
            "ssh: connect to host x port 22: Connection timed out",
            "mv: cannot stat 'a': No such file or directory",
        ];
        let mut raw = String::new();
        for n in 0..3000 {
            raw.push_str(&format!(
                "row {} of the table: {}\n",
                n * 7 % 1000,
                "x".repeat(n % 13)
            ));
            if n % 500 == 250 {
                raw.push_str(errors[n / 500]);
                raw.push('\n');
            }
        }
        let r = crate::reduce("cat table.txt", raw.as_bytes(), &crate::Options::default());
        let hidden: usize = r.hidden.iter().map(|h| h.count).sum();
        assert!(hidden > 2500, "{}", r.meta_line());
        for e in errors {
            assert!(r.text.lines().any(|l| l == e), "{e} hidden:\n{}", r.text);
        }
    }

    #[test]
    fn leaves_ordinary_lines_alone() {
        for line in [
            "   Compiling thiserror v2.0.1",
            "src/error_log.rs:12: fn main() {}",
            "test tests::adds ... ok",
            "Downloading 12/300",
            "Everything up-to-date",
            "interrupts handled: 3",
            "-rw-r--r-- 1 demo demo 120 Mar  1 10:00 error_handler.py",
            "./permission_denied_test.py",
            "src/no_such_file.rs",
            "Killed_by_the_bell.mp3",
            "Terminated instances: 0",
            "Killed 3 stale sessions",
            "Everything is fine: 0 jobs killed",
            "Extracting templates from packages: 100%",
            "Werkzeug 3.0.1",
            "Total: 12",
            "test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
            "Success: no issues found in 3 source files",
            "=== 12 passed, 0 errors in 0.3s ===",
            "gcc -Wall -Werror -c a.c",
            "?? error.log",
            "src/error/mod.rs",
            "tests/test_failures.py::test_x PASSED",
            "* 0123abc Ada Demo 2026-03-01 fix the error",
            "    # the parser fails on empty input",
            "Retry after a warning was printed",
        ] {
            assert!(!is_signal(line), "{line}");
        }
    }
}
