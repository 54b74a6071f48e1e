//! Fuzzes `cohort_reducers::reduce`: any bytes, under any command, with default and tight
//! options, must reduce without panicking and keep the invariants that need no fixture:
//! never more tokens than the raw output, hidden ranges inside the raw output, honest
//! figures.
#![no_main]

use cohort_reducers::{estimate_tokens, reduce, Options};
use libfuzzer_sys::fuzz_target;

const COMMANDS: &[&str] = &[
    "",
    "git status",
    "git log",
    "git status -s",
    "git status --porcelain=v2 --branch",
    "git log --oneline --graph",
    "git log --format='%h %an %ad %s'",
    "git diff",
    "grep -rn x .",
    "rg x",
    "pytest",
    "cargo build",
    "cargo test",
    "cargo nextest run",
    "npm install",
    "npx jest",
    "vitest run",
    "tsc",
    "eslint .",
    "go test ./...",
    "go build",
    "make",
    "ls -la",
    "find .",
    "tree",
    "du -a",
    "df -h",
    "ps aux",
    "docker build .",
    "pip install x",
    "journalctl",
    "tail -f app.log",
    "sudo env A=1 uv run python -m pytest | tail -5",
    "a && b; c",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, raw)) = data.split_first() else {
        return;
    };
    let command = COMMANDS[selector as usize % COMMANDS.len()];
    let options = if selector & 0x80 != 0 {
        Options {
            max_lines: Some(8),
            head: 3,
            tail: 3,
            max_line_width: Some(40),
            max_signal_lines: 2,
            ..Options::default()
        }
    } else {
        Options::default()
    };
    let r = reduce(command, raw, &options);
    assert!(
        r.shown_tokens <= r.raw_tokens,
        "{} > {}",
        r.shown_tokens,
        r.raw_tokens
    );
    assert_eq!(r.shown_tokens, estimate_tokens(&r.text));
    for h in &r.hidden {
        assert!(
            h.lines.start < h.lines.end && h.lines.end <= r.raw_lines,
            "{h:?} of {}",
            r.raw_lines
        );
        assert!(
            h.count >= 1 && h.count <= h.lines.len() && h.signal <= h.count,
            "{h:?}"
        );
    }
    if std::str::from_utf8(raw).is_err() {
        assert!(!r.notices.is_empty());
    }
    let _ = r.meta_line();
});
