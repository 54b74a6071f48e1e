//! Which lines carry the signal: errors, failures, panics, tracebacks and warnings.
//!
//! The rule every reducer obeys is built on this: a line that reads as one of these is shown,
//! or counted in a visible summary, never silently dropped.

use regex::Regex;
use std::sync::LazyLock;

/// One pattern for the whole vocabulary: literals only (plus ASCII word boundaries), so the
/// search runs on a literal prefilter and the fast engines; nothing in it can match a
/// newline, so it can scan a whole text at once. Exception classes (`AssertionError`,
/// `DeprecationWarning`) are caught by their suffix. Line-start markers are checked apart
/// by [`marks_signal`].
static SIGNAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?-u:\b)(?:errors?|ERRORS?|Errors?|ERR|warnings?|WARNINGS?|Warnings?|warn|WARN|fail|fails|failed|failing|failures?|FAIL|FAILS|FAILED|FAILURES?|Fail|Failed|Failures?|panic|panicked|PANIC|fatal|FATAL|Fatal|CRITICAL|critical|CRIT|EMERG|ALERT|exception|Exception|EXCEPTION|Traceback|Aborted|Segmentation fault|core dumped)(?-u:\b)|(?:Error|Exception|Warning)(?-u:\b)",
    )
    .expect("signal pattern is valid")
});

/// Line-start markers of failure: pytest's `E   ` detail lines and the crosses test runners
/// print before a failing test (`× name`, `✕ name`).
pub(crate) fn marks_signal(line: &str) -> bool {
    // Every marker starts with `E`, a blank, or the lead byte of `×` (C3) or of the other
    // crosses (E2): one byte tells most lines apart.
    if !matches!(
        line.as_bytes().first(),
        Some(b'E' | b' ' | b'\t' | 0xc3 | 0xe2)
    ) {
        return false;
    }
    if line.starts_with("E  ") {
        return true;
    }
    let rest = line.trim_start_matches([' ', '\t']);
    ["× ", "✕ ", "✗ ", "✘ "].iter().any(|m| rest.starts_with(m))
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
    fn leaves_ordinary_lines_alone() {
        for line in [
            "   Compiling thiserror v2.0.1",
            "src/error_log.rs:12: fn main() {}",
            "test tests::adds ... ok",
            "Downloading 12/300",
            "Everything up-to-date",
            "interrupts handled: 3",
        ] {
            assert!(!is_signal(line), "{line}");
        }
    }
}
