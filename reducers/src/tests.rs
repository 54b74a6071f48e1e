//! Invariants checked over every recorded fixture (with the default options and with tight
//! ones that force elision and clipping), over random input, and golden outputs for
//! representative fixtures.
//!
//! Set `UPDATE_GOLDEN=1` to rewrite the golden files after an intended change. Set
//! `COHORT_EXTRA_FIXTURES=DIR` to check the invariants over more recorded outputs laid
//! out like `fixtures/reducers` (`NAME.out` plus `NAME.toml` naming the command).

use crate::doc::Src;
use crate::random::Random;
use crate::{decode, run, Options, Reduced};
use regex::Regex;
use std::ops::Range;

#[path = "../tests/support/mod.rs"]
mod support;

use support::{fixture_dir, fixtures_in};

/// Every recorded fixture, for the other modules' tests.
pub(crate) fn all_fixtures() -> Vec<support::Fixture> {
    fixtures()
}

fn fixtures() -> Vec<support::Fixture> {
    let out = fixtures_in(&fixture_dir());
    assert!(
        out.len() >= 60,
        "expected the recorded fixtures, found {}",
        out.len()
    );
    out
}

/// The fact rules the invariants and the corpus check rest on.
mod fact_rules {
    use super::support;

    #[test]
    fn terminal_lines_act_on_line_editing() {
        let raw = b"\xe2\xa0\x99\x1b[1G\x1b[0Knpm error code E404\n10%\r50%\r100%\nab\x08c\n";
        assert_eq!(
            support::facts::terminal_lines(raw),
            ["npm error code E404", "100%", "ac"]
        );
    }

    #[test]
    fn problems_by_grammar() {
        for l in [
            "error[E0308]: mismatched types",
            "src/a.c:3:4: warning: unused",
            "FAILED tests/t.py::test_x - assert 1 == 2",
            "test result: FAILED. 3 passed; 1 failed; 0 ignored",
            "2026-03-05 09:00:01,369 ERROR app: boom",
            "KeyError: 'x'",
        ] {
            assert!(support::facts::is_problem(l), "{l}");
        }
        for l in [
            "test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured",
            "Success: no issues found in 3 source files",
            "gcc -Werror -c a.c",
            "src/error/mod.rs",
            "2026-03-05 09:00:01,369 INFO poller: poll ok: 0 new jobs",
        ] {
            assert!(!support::facts::is_problem(l), "{l}");
        }
    }
}

fn tight() -> Options {
    Options {
        max_lines: Some(12),
        head: 5,
        tail: 5,
        max_line_width: Some(60),
        max_signal_lines: 3,
        ..Options::default()
    }
}

fn marker_re() -> &'static Regex {
    static RE: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"… (\d+) ([a-z ]+?)(?: in \d+ ranges)? \((\d+)(?:-(\d+))?(?:; (\d+) errors/warnings among them)?\)").unwrap()
    });
    &RE
}

/// Checks every invariant for one reduction; returns a description of the first failure.
fn check(name: &str, command: &str, raw: &[u8], options: &Options) -> Result<Reduced, String> {
    let (r, spans) = run(command, raw, options, true, 0);
    let decoded = decode::decode(raw);
    let src = Src::new(&decoded.text, decoded.binary);
    let ctx = |what: String| {
        format!(
            "{name} [{}]: {what}\n--- text ---\n{}\n--- meta ---\n{}",
            r.reducer,
            r.text,
            r.meta_line()
        )
    };

    // Never longer than the raw output; figures consistent.
    if r.shown_tokens > r.raw_tokens {
        return Err(ctx(format!(
            "{} tokens shown > {} raw",
            r.shown_tokens, r.raw_tokens
        )));
    }
    if r.shown_tokens != crate::estimate_tokens(&r.text) || r.raw_lines != src.len() {
        return Err(ctx("figures do not match the text".into()));
    }
    let shown_lines = if ["raw", "machine"].contains(&r.reducer.as_str()) {
        r.text.split_terminator('\n').count()
    } else if r.text.is_empty() {
        0
    } else {
        r.text.split('\n').count()
    };
    if r.shown_lines != shown_lines {
        return Err(ctx(format!(
            "shown_lines {} but the text has {shown_lines}",
            r.shown_lines
        )));
    }
    // Lossy text always comes with a notice.
    if std::str::from_utf8(raw).is_err() && r.notices.is_empty() {
        return Err(ctx("invalid UTF-8 without a notice".into()));
    }
    // Hidden ranges are inside the raw output and their counts fit.
    for h in &r.hidden {
        if h.lines.end > r.raw_lines
            || h.lines.start >= h.lines.end
            || h.count == 0
            || h.count > h.lines.len()
            || h.signal > h.count
        {
            return Err(ctx(format!("bad hidden range {h:?}")));
        }
    }
    let shown = |i: usize| spans.iter().any(|s: &Range<usize>| s.contains(&i));
    let hidden_in = |i: usize| {
        r.hidden
            .iter()
            .find(|h| h.lines.contains(&i) && h.why != crate::HiddenReason::Clipped)
    };
    // Every non-blank raw line is shown, stood for by a shown line, or listed as hidden.
    for i in 0..src.len() {
        if !src.line(i).trim().is_empty() && !shown(i) && hidden_in(i).is_none() {
            return Err(ctx(format!(
                "raw line {} ({:?}) is neither shown nor listed as hidden",
                i + 1,
                src.line(i)
            )));
        }
    }
    // Every fact of the raw output (errors, failures and warnings by the tools' grammar,
    // counts, paths, failing tests, subjects) is kept, and no count of errors is invented.
    // (On lines holding escape sequences, other control bytes or invalid UTF-8 only the
    // corpus check, on real outputs, holds them to it: random bytes after an `ESC` need a
    // full VT parser to agree on byte by byte, and a NUL inside a word is shown as U+FFFD
    // in binary output where a terminal would show nothing.)
    let report = support::facts::check(command, raw, &r);
    let raw_lines: Vec<&[u8]> = raw.split(|&b| b == b'\n').collect();
    let plain = |i: usize| {
        raw_lines.get(i).is_some_and(|l| {
            !l.iter().any(|&b| b < b' ' && b != b'\t' && b != b'\r')
                && std::str::from_utf8(l).is_ok()
        })
    };
    if let Some(fact) = report.lost.iter().find(|f| plain(f.line)) {
        return Err(ctx(format!(
            "lost {} on raw line {}: {:?}",
            fact.kind.name(),
            fact.line + 1,
            fact.what
        )));
    }
    let all_plain = (0..raw_lines.len()).all(plain);
    if let Some(what) = report.invented.first().filter(|_| all_plain) {
        return Err(ctx(format!("invented: {what}")));
    }
    let counted: usize = r.hidden.iter().map(|h| h.signal).sum();
    if counted > 0 && !r.meta_line().contains("errors/warnings among them") {
        return Err(ctx("hidden errors/warnings not in the meta line".into()));
    }
    // Markers count exactly what the hidden ranges under them hold.
    for caps in marker_re().captures_iter(&r.text) {
        let n: usize = caps[1].parse().unwrap();
        let a: usize = caps[3].parse::<usize>().unwrap() - 1;
        let b: usize = caps.get(4).map_or(a + 1, |m| m.as_str().parse().unwrap());
        let why = match &caps[2] {
            "lines hidden" => crate::HiddenReason::Elided,
            "similar lines" => crate::HiddenReason::Similar,
            _ => crate::HiddenReason::Capped,
        };
        let sum: usize = r
            .hidden
            .iter()
            .filter(|h| h.lines.start >= a && h.lines.end <= b && h.why == why)
            .map(|h| h.count)
            .sum();
        if sum != n {
            return Err(ctx(format!(
                "marker {:?} says {n}, hidden ranges under it hold {sum}",
                &caps[0]
            )));
        }
        let sig: usize = caps.get(5).map_or(0, |m| m.as_str().parse().unwrap());
        let held: usize = r
            .hidden
            .iter()
            .filter(|h| h.lines.start >= a && h.lines.end <= b && h.why == why)
            .map(|h| h.signal)
            .sum();
        if sig != held {
            return Err(ctx(format!(
                "marker {:?} counts {sig} errors/warnings, ranges hold {held}",
                &caps[0]
            )));
        }
    }
    Ok(r)
}

#[test]
fn invariants_hold_on_every_fixture() {
    let mut failures = Vec::new();
    for f in support::all_fixtures() {
        for options in [Options::default(), tight()] {
            if let Err(e) = check(&f.name, &f.command, &f.raw, &options) {
                failures.push(e);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_fixture_uses_its_reducer_or_says_generic() {
    // The outputs a command's reducer does not recognise, and so leaves to the generic
    // pipeline: one-line failures and a listing of one name a line. (Machine-readable
    // outputs are returned byte for byte, not declined.)
    const DECLINED: &[&str] = &[
        "df-missing",
        "docker-build",
        "docker-ps",
        "git-diff-badpath",
        "git-status-notrepo",
        "grep-nohits",
        "ls-missing",
        "ls-plain",
        "ps-bad",
        "rg-missing",
    ];
    let mut declined = Vec::new();
    for f in fixtures() {
        let kind = crate::choose_reducer(&f.command);
        let r = crate::reduce(&f.command, &f.raw, &Options::default());
        if r.reducer == kind.name() {
            continue;
        }
        assert!(
            ["generic", "raw", "machine"].contains(&r.reducer.as_str()),
            "{}: {} reduced by {}",
            f.name,
            kind.name(),
            r.reducer
        );
        if kind != crate::ReducerKind::Generic && r.reducer == "generic" {
            declined.push(f.name);
        }
    }
    assert_eq!(declined, DECLINED);
}

#[test]
fn raw_option_bypasses_everything() {
    for f in fixtures() {
        let r = crate::reduce(
            &f.command,
            &f.raw,
            &Options {
                raw: true,
                ..Options::default()
            },
        );
        assert_eq!(r.text, String::from_utf8_lossy(&f.raw), "{}", f.name);
        assert!(r.hidden.is_empty());
    }
}

#[test]
fn exact_reads_show_every_non_blank_line_whole() {
    for f in fixtures() {
        let r = crate::reduce(
            &f.command,
            &f.raw,
            &Options {
                exact: true,
                ..Options::default()
            },
        );
        // Only blank lines may go (runs collapsed); nothing is folded, elided or clipped.
        assert!(r.hidden.is_empty(), "{}: {:?}", f.name, r.hidden);
        assert!(
            !r.text.contains("… "),
            "{}: a marker in an exact read",
            f.name
        );
    }
}

/// A git log hides a few lines around every subject it shows: the meta line must name them
/// in a few ranges, not one per commit, or it costs about what the reduction saved.
#[test]
fn git_log_hides_its_details_in_few_ranges() {
    let all = fixtures();
    for name in ["git-log-medium", "git-log-stat"] {
        let f = all.iter().find(|f| f.name == name).expect(name);
        let r = crate::reduce(&f.command, &f.raw, &Options::default());
        assert!(r.hidden.len() <= 4, "{name}: {:?}", r.hidden);
        let meta = crate::estimate_tokens(&r.meta_line());
        let saved = r.raw_tokens - r.shown_tokens;
        assert!(meta * 5 < saved, "{name}: {}", r.meta_line());
    }
}

/// Fixtures whose reduced text is pinned as a golden file.
const GOLDEN: &[&str] = &[
    "git-status-human",
    "git-status-detached",
    "git-status-v2",
    "git-status-conflict",
    "git-status-conflict-human",
    "git-log-author",
    "git-log-graph-author",
    "eslint-many",
    "tsc-many",
    "git-log-medium",
    "git-diff",
    "git-diff-conflict",
    "grep-rn",
    "rg-heading",
    "pytest-fail",
    "pytest-collect-error",
    "cargo-build-errors",
    "cargo-test-fail",
    "cargo-test-ok",
    "nextest-fail",
    "jest-fail",
    "vitest-fail",
    "tsc-errors-pretty",
    "go-test-panic",
    "make-fail",
    "make-k-errors",
    "gcc-errors",
    "javac-errors",
    "node-error",
    "python-traceback",
    "python-unittest",
    "grep-context",
    "git-diff-stat",
    "ls-la",
    "find-tree",
    "du-sorted",
    "pip-install-again",
    "journalctl",
    "log-tail",
    "progress-tqdm",
    "binary-head",
    "latin1",
    "script-errors",
    "pytest-quiet",
];

#[test]
fn golden_outputs() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let dir = fixture_dir().join("golden");
    let all = fixtures();
    let mut diffs = Vec::new();
    for name in GOLDEN {
        let f = all
            .iter()
            .find(|f| f.name == *name)
            .unwrap_or_else(|| panic!("no fixture {name}"));
        let r = crate::reduce(&f.command, &f.raw, &Options::default());
        let got = format!("$ {}\n{}\n-- {}\n", f.command, r.text, r.meta_line());
        let path = dir.join(format!("{name}.txt"));
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &got).unwrap();
        } else {
            let want = std::fs::read_to_string(&path).unwrap_or_default();
            if want != got {
                diffs.push(format!(
                    "{name}: golden differs\n--- want ---\n{want}\n--- got ---\n{got}"
                ));
            }
        }
    }
    assert!(
        diffs.is_empty(),
        "{}\n(set UPDATE_GOLDEN=1 to accept)",
        diffs.join("\n")
    );
}

/// Output-like bytes: pieces of what tools print (lines, escapes, odd encodings),
/// words and raw bytes, up to 120 pieces.
fn noisy_bytes(random: &mut Random) -> Vec<u8> {
    const PIECES: &[&[u8]] = &[
        b"\n",
        b"\r\n",
        b"\r",
        b"error: bad thing\n",
        b"warning: unused\n",
        b"test x ... ok\n",
        b"test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n",
        b"src/a.rs:12:fn main() {}\n",
        b"commit 0123456789abcdef0123456789abcdef01234567\n",
        b" M src/mod01.py\n",
        b"?? error.log\n",
        b"1 .M N... 100644 100644 100644 0123456 0123456 src/a.py\n",
        b"* 0123abc Ada Demo 2026-03-01 fix the error\n",
        b"src/a.ts(4,30): error TS2345: bad\n",
        b"  1:5   error  'x' is not defined  no-undef\n",
        b"\x1b[31m",
        b"\x1b]0;t\x07",
        b"\x1b",
        &[0u8],
        &[0xff, 0xfe],
        "世界🎉".as_bytes(),
        b"  ",
        b"\t",
    ];
    let mut out = Vec::new();
    for _ in 0..random.below(121) {
        match random.below(PIECES.len() + 2) {
            n if n < PIECES.len() => out.extend_from_slice(PIECES[n]),
            n if n == PIECES.len() => out.extend(
                random
                    .string_of("abcdefghijklmnopqrstuvwxyz0123456789 .:/_-", 30)
                    .bytes(),
            ),
            _ => out.extend(random.bytes(7)),
        }
    }
    out
}

const COMMANDS: &[&str] = &[
    "",
    "git status",
    "git log",
    "git status --porcelain=v2",
    "git log --oneline --graph",
    "eslint .",
    "git diff",
    "grep -rn x .",
    "pytest",
    "cargo build",
    "cargo test",
    "npm install",
    "jest",
    "tsc",
    "go test ./...",
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
    "tail -f log",
    "cat x",
];

#[test]
fn random_input_keeps_the_invariants() {
    for seed in 0..300 {
        let mut random = Random::new(seed);
        let raw = noisy_bytes(&mut random);
        let command = random.pick(COMMANDS);
        let options = if random.coin() {
            tight()
        } else {
            Options::default()
        };
        if let Err(e) = check("random", command, &raw, &options) {
            panic!("seed {seed}, command {command:?}, output {raw:?}: {e}");
        }
    }
}

#[test]
fn inputs_that_once_broke_an_invariant_keep_it() {
    let cases = include_str!("../regressions/random_input.txt");
    let mut checked = 0;
    for line in cases
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut fields = line.split('\t');
        let (Some(command), Some(options), Some(hex)) =
            (fields.next(), fields.next(), fields.next())
        else {
            panic!("malformed case: {line:?}");
        };
        let raw: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let options = if options == "tight" {
            tight()
        } else {
            Options::default()
        };
        if let Err(e) = check("regression", command, &raw, &options) {
            panic!("command {command:?}, output {raw:?}: {e}");
        }
        checked += 1;
    }
    assert!(checked > 0, "no cases in regressions/random_input.txt");
}

/// The outside token-reduction benchmark: six everyday commands, scored by tokens returned
/// against raw and by whether every fact survives (shown, or counted with the exact raw
/// range that holds it).
pub(crate) mod scenarios {
    use super::*;

    /// What the facts of a scenario are.
    #[derive(Clone, Copy, Debug)]
    pub(crate) enum Facts {
        /// Every commit subject of a medium-format git log.
        Subjects,
        /// Every changed path of a human git status.
        StatusPaths,
        /// Every `path:line:` hit of grep -rn.
        GrepHits,
        /// Every `FAILED` test id of pytest's short summary.
        FailedTests,
        /// The whole (one-line) output.
        Whole,
        /// Every file name of an ls -l listing.
        LsNames,
    }

    /// (benchmark command, fixture, facts).
    pub(crate) const SCENARIOS: &[(&str, &str, Facts)] = &[
        ("git log -n 30", "git-log-medium", Facts::Subjects),
        (
            "git status, 40 changes",
            "git-status-human",
            Facts::StatusPaths,
        ),
        ("grep -rn, 136 hits", "grep-rn-stdlib", Facts::GrepHits),
        ("pytest, failing", "pytest-fail", Facts::FailedTests),
        ("cargo --version", "cargo-version", Facts::Whole),
        ("ls -la, 200 files", "ls-la", Facts::LsNames),
    ];

    /// One scenario's score.
    pub(crate) struct Score {
        pub raw_tokens: usize,
        pub shown_tokens: usize,
        /// Tokens of the text plus its meta line, as a read returns them.
        pub with_meta: usize,
        pub facts: usize,
        /// Facts neither shown nor counted with their exact range.
        pub lost: Vec<String>,
    }

    fn words(text: &str) -> std::collections::HashSet<String> {
        text.split_whitespace()
            .map(|w| w.trim_end_matches([',', ':', ';']))
            .flat_map(|w| [w, w.trim_end_matches(['/', '*', '@'])])
            .map(str::to_owned)
            .collect()
    }

    /// Whether raw line `i` lies inside a range a marker of `text` names exactly.
    fn counted(r: &Reduced, i: usize) -> bool {
        r.hidden.iter().any(|h| {
            h.lines.contains(&i)
                && h.why != crate::HiddenReason::Clipped
                && marker_re().captures_iter(&r.text).any(|c| {
                    let a: usize = c[3].parse().unwrap();
                    let b: usize = c.get(4).map_or(a, |m| m.as_str().parse().unwrap());
                    a <= i + 1 && i < b
                })
        })
    }

    pub(crate) fn score(command: &str, raw: &[u8], facts: Facts) -> Score {
        let (r, spans) = run(command, raw, &Options::default(), true, 0);
        let decoded = decode::decode(raw);
        let src = Src::new(&decoded.text, decoded.binary);
        let lines: Vec<&str> = src.lines.iter().map(|l| &**l).collect();
        let shown = |i: usize| spans.iter().any(|s: &Range<usize>| s.contains(&i));
        let text_words = words(&r.text);
        let mut all = Vec::new();
        let mut lost = Vec::new();
        match facts {
            Facts::Subjects => {
                for (i, l) in lines.iter().enumerate() {
                    if l.starts_with("commit ") {
                        let mut j = i + 1;
                        while j < lines.len() && !lines[j].is_empty() {
                            j += 1;
                        }
                        if let Some(s) = lines.get(j + 1) {
                            all.push(s.trim().to_owned());
                            if !r.text.contains(s.trim()) {
                                lost.push(s.trim().to_owned());
                            }
                        }
                    }
                }
            }
            Facts::StatusPaths => {
                for (i, l) in lines
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.starts_with('\t'))
                {
                    let path = l.rsplit(":   ").next().unwrap().trim();
                    all.push(path.to_owned());
                    if !text_words.contains(path) && !counted(&r, i) {
                        lost.push(path.to_owned());
                    }
                }
            }
            Facts::GrepHits => {
                let hit = Regex::new(r"^[^:]+:\d+:").unwrap();
                for (i, l) in lines.iter().enumerate() {
                    if hit.is_match(l) {
                        all.push(l.to_string());
                        if !shown(i) && !counted(&r, i) {
                            lost.push(l.to_string());
                        }
                    }
                }
            }
            Facts::FailedTests => {
                for l in lines.iter().filter(|l| l.starts_with("FAILED ")) {
                    let id = l[7..].split(" - ").next().unwrap();
                    all.push(id.to_owned());
                    if !r.text.contains(id) {
                        lost.push(id.to_owned());
                    }
                }
            }
            Facts::Whole => {
                for l in lines.iter().filter(|l| !l.is_empty()) {
                    all.push(l.to_string());
                    if !r.text.contains(l) {
                        lost.push(l.to_string());
                    }
                }
            }
            Facts::LsNames => {
                let row = Regex::new(r"^[-dlcbps][-rwxsStT]{9}\S*\s+\d+\s+\S+\s+\S+\s+\d+\s+\w{3}\s+\d+\s+[\d:]+\s(.+)$").unwrap();
                for (i, l) in lines.iter().enumerate() {
                    if let Some(c) = row.captures(l) {
                        let name = c[1].split(" -> ").next().unwrap();
                        if name == "." || name == ".." {
                            continue;
                        }
                        all.push(name.to_owned());
                        if !text_words.contains(name) && !counted(&r, i) {
                            lost.push(name.to_owned());
                        }
                    }
                }
            }
        }
        Score {
            raw_tokens: r.raw_tokens,
            shown_tokens: r.shown_tokens,
            with_meta: crate::estimate_tokens(&format!("{}\n{}", r.text, r.meta_line())),
            facts: all.len(),
            lost,
        }
    }

    #[test]
    fn benchmark_scenarios_keep_every_fact_at_under_a_third_in_all() {
        let all = fixtures();
        let (mut raw, mut shown) = (0, 0);
        let mut report = Vec::new();
        let mut failures = Vec::new();
        for &(what, name, facts) in SCENARIOS {
            let f = all.iter().find(|f| f.name == name).expect(name);
            let s = score(&f.command, &f.raw, facts);
            let ratio = s.shown_tokens as f64 / s.raw_tokens as f64;
            report.push(format!(
                "{what}: {ratio:.2}x ({:.2}x with the meta line), facts {}/{}",
                s.with_meta as f64 / s.raw_tokens as f64,
                s.facts - s.lost.len(),
                s.facts
            ));
            if s.facts == 0 || !s.lost.is_empty() {
                failures.push(format!("{name}: lost {:?} of {} facts", s.lost, s.facts));
            }
            // A one-line answer cannot shrink without losing its fact. A status shows
            // every path whole with its state (no folding into directories or brace
            // ranges): the paths are most of its raw cost, so it keeps more of it.
            let bound = match facts {
                Facts::StatusPaths => 0.60,
                _ => 0.45,
            };
            if s.raw_tokens > 20 && ratio > bound {
                failures.push(format!("{name}: {ratio:.2}x raw"));
            }
            raw += s.raw_tokens;
            shown += s.shown_tokens;
        }
        assert!(failures.is_empty(), "{failures:#?}\n{report:#?}");
        let ratio = shown as f64 / raw as f64;
        assert!(ratio <= 0.30, "all scenarios: {ratio:.2}x raw ({report:?})");
    }
}
