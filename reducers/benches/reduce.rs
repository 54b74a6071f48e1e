//! Prints how much each recorded fixture shrinks, the median saving, and the throughput of
//! the generic pipeline and of each reducer on large inputs (fixtures repeated to ~8 MB).
//! It asserts nothing about time.
//!
//! ```sh
//! cargo bench -p cohort-reducers --bench reduce
//! COHORT_FIXTURES=DIR cargo bench -p cohort-reducers --bench reduce   # another corpus
//! ```

use cohort_reducers::{estimate_tokens, reduce, Options, Reduced};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

struct Fixture {
    name: String,
    command: String,
    raw: Vec<u8>,
}

fn fixtures() -> Vec<Fixture> {
    let dir = std::env::var_os("COHORT_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/reducers"));
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("fixture dir") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let meta = std::fs::read_to_string(&path).expect("meta");
        let command = meta
            .lines()
            .find_map(|l| l.strip_prefix("command = "))
            .map(|c| {
                c.trim()
                    .trim_matches('"')
                    .replace("\\\"", "\"")
                    .replace("\\\\", "\\")
            })
            .expect("command line");
        out.push(Fixture {
            name: path.file_stem().unwrap().to_string_lossy().into_owned(),
            command,
            raw: std::fs::read(path.with_extension("out")).expect("output"),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The outside benchmark's six scenarios: (what, fixture, kind of fact).
const SCENARIOS: &[(&str, &str, &str)] = &[
    ("git log -n 30", "git-log-medium", "subjects"),
    ("git status, 40 changes", "git-status-human", "paths"),
    ("grep -rn, 136 hits", "grep-rn-stdlib", "hits"),
    ("pytest, failing", "pytest-fail", "failed"),
    ("cargo --version", "cargo-version", "whole"),
    ("ls -la, 200 files", "ls-la", "names"),
];

/// Words of `text`, shell brace ranges (`mod{03..05}.py`) expanded.
fn words(text: &str) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    for w in text.split_whitespace() {
        let w = w.trim_end_matches([',', ':', ';']);
        for w in [w, w.trim_end_matches(['/', '*', '@'])] {
            match w.find('{').zip(w.find('}')) {
                Some((a, b)) if w[a + 1..b].contains("..") => {
                    let (lo, hi) = w[a + 1..b].split_once("..").unwrap();
                    let width = if lo.starts_with('0') { lo.len() } else { 0 };
                    let (l, h): (u64, u64) = (lo.parse().unwrap_or(1), hi.parse().unwrap_or(0));
                    for n in l..=h {
                        out.insert(format!("{}{n:0width$}{}", &w[..a], &w[b + 1..]));
                    }
                }
                _ => {
                    out.insert(w.to_owned());
                }
            }
        }
    }
    out
}

/// Facts in the raw output, and how many of them the reduction keeps (shown, or counted
/// under a marker that names their exact raw lines).
fn facts(raw: &str, r: &Reduced, kind: &str) -> (usize, usize) {
    let lines: Vec<&str> = raw.lines().collect();
    let text_words = words(&r.text);
    let marked = |i: usize| {
        r.text.lines().flat_map(|l| l.split(" (").skip(1)).any(|m| {
            let range = m.split([')', ';']).next().unwrap_or("");
            let (a, b) = range.split_once('-').unwrap_or((range, range));
            matches!((a.parse::<usize>(), b.parse::<usize>()), (Ok(a), Ok(b)) if a <= i + 1 && i < b)
        })
    };
    let mut found = 0;
    let mut kept = 0;
    for (i, l) in lines.iter().enumerate() {
        let fact: Option<bool> = match kind {
            "subjects" if i > 0 && lines[i - 1].is_empty() && l.starts_with("    ") => {
                Some(r.text.contains(l.trim()))
            }
            "paths" if l.starts_with('\t') => {
                let path = l.rsplit(":   ").next().unwrap().trim();
                let (dir, name) = path
                    .trim_end_matches('/')
                    .rsplit_once('/')
                    .map_or(("", path), |(d, _)| (d, &path[d.len() + 1..]));
                Some(
                    r.text.contains(path)
                        || r.text
                            .lines()
                            .any(|t| t.contains(dir) && words(t).contains(name)),
                )
            }
            "hits" => l.split_once(':').and_then(|(f, rest)| {
                let (n, _) = rest.split_once(':')?;
                n.parse::<usize>().ok()?;
                let shown = r.text.contains(&format!("{f}:{n}:"))
                    || r.text.lines().any(|t| t.starts_with(&format!("{n}:")))
                        && r.text.contains(&format!("{f} ("));
                Some(shown || marked(i))
            }),
            "failed" => l
                .strip_prefix("FAILED ")
                .map(|id| r.text.contains(id.split(" - ").next().unwrap())),
            "whole" if !l.is_empty() => Some(r.text.contains(l)),
            "names" if l.len() > 10 && matches!(l.as_bytes()[0], b'-' | b'd' | b'l') => {
                let name = l.split_whitespace().nth(8).unwrap_or("");
                (name != "." && name != "..").then(|| text_words.contains(name))
            }
            _ => None,
        };
        if let Some(ok) = fact {
            found += 1;
            kept += usize::from(ok);
        }
    }
    (kept, found)
}

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

fn main() {
    let options = Options::default();
    let fixtures = fixtures();
    println!(
        "{:<24} {:<13} {:>7} {:>7} {:>7}",
        "fixture", "reducer", "raw", "shown", "saved"
    );
    let mut savings = Vec::new();
    let mut sizeable = Vec::new();
    // Outputs of a few lines: a one-line failure, a version string, a short table.
    let mut tiny: Vec<(&str, usize)> = Vec::new();
    let (mut raw_total, mut shown_total) = (0, 0);
    for f in &fixtures {
        let r = reduce(&f.command, &f.raw, &options);
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
        if r.raw_tokens > 0 && r.raw_lines < 5 && saved < 10.0 {
            tiny.push((&f.name, r.raw_lines));
        }
        raw_total += r.raw_tokens;
        shown_total += r.shown_tokens;
        println!(
            "{:<24} {:<13} {:>7} {:>7} {:>6.1}%",
            f.name, r.reducer, r.raw_tokens, r.shown_tokens, saved
        );
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "\nmedian saving: {:.1}% over {} fixtures with output; {:.1}% over the {} with 20+ lines",
        median(&mut savings),
        savings.len(),
        median(&mut sizeable),
        sizeable.len()
    );
    println!(
        "{} fixtures are under 5 lines and save under 10%: they cannot shrink without hiding their message (one-line \
         failures such as 'fatal: not a git repository', version strings, two-row df tables, \
         single-file diagnostics); they hold the whole-suite median down:\n  {}",
        tiny.len(),
        tiny.iter()
            .map(|(n, l)| format!("{n} ({l})"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "all fixtures together: {raw_total} -> {shown_total} tokens ({:.1}% saved)",
        100.0 * (1.0 - shown_total as f64 / raw_total as f64)
    );

    println!("\nbenchmark scenarios (tokens returned vs raw; facts kept):");
    let (mut raw_sum, mut shown_sum, mut meta_sum) = (0, 0, 0);
    for (what, name, kind) in SCENARIOS {
        let Some(f) = fixtures.iter().find(|f| f.name == *name) else {
            continue;
        };
        let r = reduce(&f.command, &f.raw, &options);
        let with_meta = estimate_tokens(&format!("{}\n{}", r.text, r.meta_line()));
        let (kept, found) = facts(&String::from_utf8_lossy(&f.raw), &r, kind);
        raw_sum += r.raw_tokens;
        shown_sum += r.shown_tokens;
        meta_sum += with_meta;
        println!(
            "{what:<24} {:>5} -> {:>4} tokens  {:.2}x  ({:.2}x with the meta line)  facts {kept}/{found}",
            r.raw_tokens,
            r.shown_tokens,
            r.shown_tokens as f64 / r.raw_tokens as f64,
            with_meta as f64 / r.raw_tokens as f64
        );
    }
    println!(
        "{:<24} {raw_sum:>5} -> {shown_sum:>4} tokens  {:.2}x  ({:.2}x with the meta line)",
        "all six",
        shown_sum as f64 / raw_sum as f64,
        meta_sum as f64 / raw_sum as f64
    );

    println!("\nthroughput on ~8 MB inputs (best of 5, release build expected):");
    let big = |raw: &[u8]| -> Vec<u8> {
        let mut v = Vec::with_capacity(8 << 20);
        while v.len() < 8 << 20 {
            v.extend_from_slice(raw);
            if !raw.ends_with(b"\n") {
                v.push(b'\n');
            }
        }
        v
    };
    let mut seen = std::collections::BTreeMap::new();
    for f in &fixtures {
        let r = reduce(&f.command, &f.raw, &options);
        if f.raw.len() > 500 && !seen.contains_key(&r.reducer) {
            seen.insert(r.reducer.clone(), f);
        }
    }
    let mixed: Vec<u8> = big(&fixtures
        .iter()
        .flat_map(|f| f.raw.clone())
        .collect::<Vec<u8>>());
    println!("{:<14} {:<26} {:>9}", "reducer", "input", "MB/s");
    let generic = throughput("cat all.txt", &mixed, &options);
    let mut split_best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        black_box(plain_split(black_box(&mixed)));
        split_best = split_best.min(start.elapsed().as_secs_f64());
    }
    let split = mixed.len() as f64 / split_best / 1e6;
    println!(
        "{:<14} {:<26} {:>9.0}   ({:.1}x the time of a plain line split, {:.0} MB/s, same run)",
        "generic",
        "all fixtures concatenated",
        generic,
        split / generic,
        split
    );
    for (reducer, f) in &seen {
        let input = big(&f.raw);
        println!(
            "{:<14} {:<26} {:>9.0}",
            reducer,
            f.name,
            throughput(&f.command, &input, &options)
        );
    }
}
