//! Prints how much each recorded fixture shrinks and how many of its facts survive (the
//! rules of `tests/support/facts.rs`), the median and total saving, the outside benchmark's
//! six scenarios, and the throughput of each reducer on inputs below the 2 MiB point (the
//! reducer runs on all of it) and above it (the reducer runs on the head and tail, the
//! middle is only scanned for errors), each against a plain line split timed in the same
//! run. It asserts nothing about time.
//!
//! ```sh
//! cargo bench -p cohort-reducers --bench reduce
//! COHORT_EXTRA_FIXTURES=DIR cargo bench -p cohort-reducers --bench reduce   # more outputs
//! ```

#[path = "../tests/support/mod.rs"]
mod support;

use cohort_reducers::{estimate_tokens, reduce, Options};
use std::hint::black_box;
use std::time::Instant;
use support::facts;

/// The outside benchmark's six scenarios: (what, fixture).
const SCENARIOS: &[(&str, &str)] = &[
    ("git log -n 30", "git-log-medium"),
    ("git status, 40 changes", "git-status-human"),
    ("grep -rn, 136 hits", "grep-rn-stdlib"),
    ("pytest, failing", "pytest-fail"),
    ("cargo --version", "cargo-version"),
    ("ls -la, 200 files", "ls-la"),
];

/// Splits `input` into lines with a plain byte search and sums their lengths: the floor any
/// line-based pipeline pays, measured in the same run so the ratio does not depend on load.
fn plain_split(input: &[u8]) -> usize {
    let mut n = 0;
    for line in input.split(|&b| b == b'\n') {
        n += black_box(line).len();
    }
    n
}

fn throughput(command: &str, input: &[u8], options: &Options) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        black_box(reduce(command, black_box(input), options));
        best = best.min(start.elapsed().as_secs_f64());
    }
    input.len() as f64 / best / 1e6
}

/// Bytes of `raw` repeated (each copy ending in a newline) up to `size`.
fn repeated(raw: &[u8], size: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(size + raw.len() + 1);
    while v.len() < size {
        v.extend_from_slice(raw);
        if !raw.ends_with(b"\n") {
            v.push(b'\n');
        }
    }
    v
}

fn main() {
    let options = Options::default();
    let fixtures = support::all_fixtures();
    println!(
        "{:<28} {:<13} {:>7} {:>7} {:>7}  facts",
        "fixture", "reducer", "raw", "shown", "saved"
    );
    let mut savings = Vec::new();
    let mut sizeable = Vec::new();
    let (mut raw_total, mut shown_total, mut kept, mut found) = (0, 0, 0, 0);
    for f in &fixtures {
        let r = reduce(&f.command, &f.raw, &options);
        let report = facts::check(&f.command, &f.raw, &r);
        let saved = if r.raw_tokens == 0 {
            0.0
        } else {
            100.0 * (1.0 - r.shown_tokens as f64 / r.raw_tokens as f64)
        };
        if r.raw_tokens > 0 {
            savings.push(saved);
            if r.raw_lines >= 20 {
                sizeable.push(saved);
            }
        }
        raw_total += r.raw_tokens;
        shown_total += r.shown_tokens;
        found += report.facts;
        kept += report.facts - report.lost.len();
        println!(
            "{:<28} {:<13} {:>7} {:>7} {:>6.1}%  {}/{}",
            f.name,
            r.reducer,
            r.raw_tokens,
            r.shown_tokens,
            saved,
            report.facts - report.lost.len(),
            report.facts
        );
    }
    println!(
        "\nmedian saving: {:.1}% over {} outputs; {:.1}% over the {} of 20+ lines; facts kept {kept}/{found}",
        support::median(&mut savings),
        savings.len(),
        support::median(&mut sizeable),
        sizeable.len()
    );
    println!(
        "all fixtures together: {raw_total} -> {shown_total} tokens ({:.1}% saved)",
        100.0 * (1.0 - shown_total as f64 / raw_total as f64)
    );

    println!("\nbenchmark scenarios (tokens returned vs raw; facts kept):");
    let (mut raw_sum, mut shown_sum, mut meta_sum) = (0, 0, 0);
    for (what, name) in SCENARIOS {
        let Some(f) = fixtures.iter().find(|f| f.name == *name) else {
            continue;
        };
        let r = reduce(&f.command, &f.raw, &options);
        let with_meta = estimate_tokens(&format!("{}\n{}", r.text, r.meta_line()));
        let report = facts::check(&f.command, &f.raw, &r);
        raw_sum += r.raw_tokens;
        shown_sum += r.shown_tokens;
        meta_sum += with_meta;
        println!(
            "{what:<24} {:>5} -> {:>4} tokens  {:.2}x  ({:.2}x with the meta line)  facts {}/{}",
            r.raw_tokens,
            r.shown_tokens,
            r.shown_tokens as f64 / r.raw_tokens as f64,
            with_meta as f64 / r.raw_tokens as f64,
            report.facts - report.lost.len(),
            report.facts
        );
    }
    println!(
        "{:<24} {raw_sum:>5} -> {shown_sum:>4} tokens  {:.2}x  ({:.2}x with the meta line)",
        "all six",
        shown_sum as f64 / raw_sum as f64,
        meta_sum as f64 / raw_sum as f64
    );

    // Throughput: one fixture per reducer, repeated to just under the 2 MiB point (reduced
    // whole) and to 8 MB (head and tail reduced, the middle scanned).
    const BELOW: usize = (2 << 20) - (64 << 10);
    const ABOVE: usize = 8 << 20;
    println!("\nthroughput, MB/s (best of 5; release build expected):");
    let mut seen = std::collections::BTreeMap::new();
    for f in &fixtures {
        let r = reduce(&f.command, &f.raw, &options);
        if f.raw.len() > 500 && f.raw.len() < BELOW && !seen.contains_key(&r.reducer) {
            seen.insert(r.reducer.clone(), f);
        }
    }
    let mixed: Vec<u8> = fixtures
        .iter()
        .filter(|f| f.raw.len() < BELOW)
        .flat_map(|f| f.raw.clone())
        .collect();
    let split = |input: &[u8]| {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let start = Instant::now();
            black_box(plain_split(black_box(input)));
            best = best.min(start.elapsed().as_secs_f64());
        }
        input.len() as f64 / best / 1e6
    };
    println!(
        "{:<14} {:<24} {:>14} {:>14}",
        "reducer", "input", "< 2 MiB, whole", "8 MB, scanned"
    );
    let (small, big) = (repeated(&mixed, BELOW), repeated(&mixed, ABOVE));
    println!(
        "{:<14} {:<24} {:>14.0} {:>14.0}",
        "line split",
        "all fixtures",
        split(&small),
        split(&big)
    );
    println!(
        "{:<14} {:<24} {:>14.0} {:>14.0}",
        "generic",
        "all fixtures",
        throughput("cat all.txt", &small, &options),
        throughput("cat all.txt", &big, &options)
    );
    for (reducer, f) in &seen {
        let (small, big) = (repeated(&f.raw, BELOW), repeated(&f.raw, ABOVE));
        println!(
            "{:<14} {:<24} {:>14.0} {:>14.0}",
            reducer,
            f.name,
            throughput(&f.command, &small, &options),
            throughput(&f.command, &big, &options)
        );
    }
}
