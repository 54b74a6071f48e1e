//! Which lines carry the signal: errors, failures, panics, tracebacks and warnings.
//!
//! The rule every reducer obeys is built on this: a line that reads as one of these is shown,
//! or counted in a visible summary, never silently dropped.

use regex::Regex;
use std::sync::LazyLock;

/// One pattern for the whole vocabulary. ASCII word boundaries keep it on the fast engines,
/// and nothing in it can match a newline, so it can scan a whole text at once.
static SIGNAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)(?-u:\b)(?:errors?|ERRORS?|Errors?|ERR|warnings?|WARNINGS?|Warnings?|warn|WARN|fail|fails|failed|failing|failures?|FAIL|FAILS|FAILED|FAILURES?|Fail|Failed|Failures?|panic|panicked|PANIC|fatal|FATAL|Fatal|CRITICAL|critical|CRIT|EMERG|ALERT|exception|Exception|EXCEPTION|Traceback|Aborted|Segmentation fault|core dumped)(?-u:\b)|(?-u:\b)[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning)(?-u:\b)|^E[ ]{2,}|^[ \t]*[×✕✗✘][ ]",
    )
    .expect("signal pattern is valid")
});

/// Whether one (cleaned) line reads as an error, failure, panic, traceback or warning.
pub(crate) fn is_signal(line: &str) -> bool {
    SIGNAL.is_match(line)
}

/// Byte offsets in `text` where a signal word starts, in order. Scanning the whole text once
/// is much faster than asking line by line.
pub(crate) fn signal_offsets(text: &str) -> impl Iterator<Item = usize> + '_ {
    SIGNAL.find_iter(text).map(|m| m.start())
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
