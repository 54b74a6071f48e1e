//! Prints how much each recorded fixture shrinks, the median saving, and the throughput of
//! the generic pipeline and of each reducer on large inputs (fixtures repeated to ~8 MB).
//! It asserts nothing about time.
//!
//! ```sh
//! cargo bench -p cohort-reducers --bench reduce
//! ```

use cohort_reducers::{reduce, Options};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

struct Fixture {
    name: String,
    command: String,
    raw: Vec<u8>,
}

fn fixtures() -> Vec<Fixture> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/reducers");
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
        "all fixtures together: {raw_total} -> {shown_total} tokens ({:.1}% saved)",
        100.0 * (1.0 - shown_total as f64 / raw_total as f64)
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
    println!(
        "{:<14} {:<26} {:>9.0}",
        "generic",
        "all fixtures concatenated",
        throughput("cat all.txt", &mixed, &options)
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
