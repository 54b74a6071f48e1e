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
/// failing test (`× name`, `✕ name`), and a line that is only `Killed` or `Terminated`.
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
    ["× ", "✕ ", "✗ ", "✘ "].iter().any(|m| rest.starts_with(m))
        || SIGNAL_LINES.contains(&rest.trim_end())
}

/// Whether one (cleaned) line reads as an error, failure, panic, traceback or warning.
pub(crate) fn is_signal(line: &str) -> bool {
    marks_signal(line) || SIGNAL.is_match(line)
}

/// For each line of `text` that reads as a signal, one byte offset inside it, in order.
///
/// Scanning the whole text once is much faster than asking line by line, and asking only
/// where a match ends (no pattern can cross a newline) keeps the search on the forward DFA.
pub(crate) fn signal_offsets(text: &str) -> impl Iterator<Item = usize> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let end = SIGNAL.shortest_match_at(text, at)?;
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
        ] {
            assert!(!is_signal(line), "{line}");
        }
    }
}
