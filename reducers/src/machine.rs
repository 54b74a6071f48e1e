//! Machine-readable output is returned as the program wrote it.
//!
//! An agent that asks for `git status --porcelain`, `-z`, `--json`, `-o yaml` or
//! `--message-format=json` means to parse what comes back, and a reducer that packs,
//! folds or drops lines breaks the parser (and hides the very facts the format was
//! asked for). So output is left byte for byte when the command asks for a machine
//! format, or when the output is JSON throughout (one document, or one per line),
//! unless it is larger than [`MACHINE_MAX`]: then it is reduced like any output, and
//! the reply says how to read it whole.

use crate::choose::invocation;

/// The most machine-readable output returned byte for byte (32 KiB, about 8,000
/// tokens); larger output is reduced.
pub const MACHINE_MAX: usize = 32 << 10;

/// Values of a format or output option that name a machine format.
const FORMATS: &[&str] = &[
    "json",
    "jsonl",
    "ndjson",
    "json-lines",
    "yaml",
    "yml",
    "csv",
    "tsv",
    "porcelain",
    "jsonpath",
    "go-template",
    "short-json",
];

/// Whether `text`, printed by `command`, is machine-readable (see the module docs).
pub fn readable(command: &str, text: &str) -> bool {
    asks_for_a_machine_format(command) || is_json(text)
}

/// Whether the command that printed the output asks for a machine format.
fn asks_for_a_machine_format(command: &str) -> bool {
    let Some(words) = invocation(command) else {
        return false;
    };
    let mut words = words.iter().skip(1).map(String::as_str).peekable();
    while let Some(word) = words.next() {
        if matches!(
            word,
            "-z" | "--null" | "--print0" | "-print0" | "--porcelain"
        ) {
            return true;
        }
        if let Some(option) = word.strip_prefix("--") {
            let (name, value) = match option.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (option, None),
            };
            if name.starts_with("porcelain") || name == "json" {
                return true;
            }
            let formats = name.ends_with("format") || name == "output" || name == "out";
            let value = value.or_else(|| words.peek().copied());
            if formats && value.is_some_and(names_a_machine_format) {
                return true;
            }
        } else if let Some(value) = word.strip_prefix("-o") {
            // `-o json`, `-ojson`, `-o=jsonpath=…` (kubectl and its kin).
            let value = match value.trim_start_matches('=') {
                "" => words.peek().copied(),
                v => Some(v),
            };
            if value.is_some_and(names_a_machine_format) {
                return true;
            }
        }
    }
    false
}

/// Whether an option's value names a machine format: `json`, `jsonpath={…}`.
fn names_a_machine_format(value: &str) -> bool {
    let head = value
        .split(['=', '{', ':'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    FORMATS.contains(&head.as_str())
}

/// Whether `text` is JSON throughout: one document, or one object or array per line.
fn is_json(text: &str) -> bool {
    let trimmed = text.trim();
    if !trimmed.starts_with(['{', '[']) {
        return false;
    }
    if serde_json::from_str::<serde::de::IgnoredAny>(trimmed).is_ok() {
        return true;
    }
    let mut lines = trimmed.lines().filter(|l| !l.trim().is_empty()).peekable();
    lines.peek().is_some()
        && lines.all(|line| {
            let line = line.trim();
            line.starts_with(['{', '['])
                && serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_that_ask_for_a_machine_format() {
        for command in [
            "git status --porcelain",
            "git status --porcelain=v2 --branch",
            "git status -z",
            "git ls-files -z",
            "find . -print0",
            "cargo build --message-format=json",
            "cargo metadata --format-version 1 --no-deps --message-format json",
            "kubectl get pods -o json",
            "kubectl get pods -ojsonpath={.items[*].metadata.name}",
            "gh pr list --json number,title",
            "aws s3api list-buckets --output json",
            "npm ls --json",
            "cd repo && git status --porcelain",
        ] {
            assert!(asks_for_a_machine_format(command), "{command}");
        }
        for command in [
            "git status",
            "git status -s",
            "ls -la",
            "cargo build",
            "kubectl get pods -o wide",
            "gcc -o app main.c",
            "docker ps --format table",
        ] {
            assert!(!asks_for_a_machine_format(command), "{command}");
        }
    }

    #[test]
    fn json_throughout_is_machine_readable() {
        assert!(is_json("{\"a\": [1, 2]}\n"));
        assert!(is_json("[1, 2, 3]"));
        assert!(is_json("{\"level\":\"info\"}\n{\"level\":\"warn\"}\n"));
        assert!(!is_json("{\"level\":\"info\"}\nplain text\n"));
        assert!(!is_json("error: {not json}"));
        assert!(!is_json(""));
    }
}
