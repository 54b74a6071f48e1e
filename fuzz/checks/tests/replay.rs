//! The fuzz targets on stable Rust, bounded: every committed seed (`fuzz/seeds/<target>/`,
//! plus the recorded tmux transcripts and reducer fixtures), then a seeded stream of
//! inputs mutated from those seeds. A crash found by `cargo fuzz` is committed under
//! `fuzz/seeds/<target>/` and replayed here from then on.
//!
//! It runs with the workspace's tests. `COHORT_FUZZ_CASES` sets the mutated inputs per
//! target (default 3000);
//! `COHORT_FUZZ_SEED` picks the stream (default fixed, so a failure reproduces).

use std::path::{Path, PathBuf};

use cohort_fuzz_checks::TARGETS;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files_in(dir: &Path) -> Vec<Vec<u8>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    paths.sort();
    paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

/// The seeds of `target`: its `fuzz/seeds/` directory and the project's recorded fixtures.
fn seeds(target: &str) -> Vec<Vec<u8>> {
    let mut seeds = files_in(&root().join("../seeds").join(target));
    let fixtures = root().join("../../fixtures");
    match target {
        "control_mode" => seeds.extend(files_in(&fixtures.join("tmux"))),
        "output_stream" => {
            // The recorded output streams, behind a byte that picks how they are cut.
            for (i, f) in files_in(&fixtures.join("reducers")).into_iter().enumerate() {
                let mut seed = vec![i as u8];
                seed.extend(f.into_iter().take(64 * 1024));
                seeds.push(seed);
            }
        }
        "reduce" => {
            for (i, f) in files_in(&fixtures.join("reducers")).into_iter().enumerate() {
                let mut seed = vec![i as u8];
                seed.extend(f);
                seeds.push(seed);
            }
        }
        _ => {}
    }
    seeds.push(Vec::new());
    seeds
}

/// xorshift64*: small, seeded, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Bytes that matter to the parsers: escapes, OSC 133 pieces, tmux guards, JSON.
const DICTIONARY: &[&[u8]] = &[
    b"\x1b]133;A\x07",
    b"\x1b]133;C\x07",
    b"\x1b]133;D;0\x07",
    b"\x1b]133;D;",
    b"\x1b\\",
    b"\x1b[31m",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"%begin 1 2 1\n",
    b"%end 1 2 1\n",
    b"%error 1 2 1\n",
    b"%output %1 ",
    b"%extended-output %1 5 : ",
    b"%pause %1\n",
    b"%continue %1\n",
    b"%exit\n",
    b"\\033",
    b"\\134",
    b"{\"split\":\"horizontal\",\"children\":[",
    b"{\"pane\":0,\"size\":50}",
    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":",
    b"\"target\":\"x\"",
    b"\"keys\":[\"C-c\",\"M-\",\"F13\"]",
    b"rm -rf /",
    b"[[[[[[[[",
    b"\x08\x01\xa2\x06",
    b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",
];

/// One mutation of `seed`: flips, insertions, deletions, splices of dictionary words.
fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..1 + rng.below(8) {
        match rng.below(6) {
            0 if !data.is_empty() => {
                let i = rng.below(data.len());
                data[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(data.len() + 1);
                data.insert(i, rng.next() as u8);
            }
            2 if !data.is_empty() => {
                let i = rng.below(data.len());
                let n = 1 + rng.below(16.min(data.len() - i));
                data.drain(i..i + n);
            }
            3 | 4 => {
                let word = DICTIONARY[rng.below(DICTIONARY.len())];
                let i = rng.below(data.len() + 1);
                data.splice(i..i, word.iter().copied());
            }
            _ => {
                let n = rng.below(64);
                data.extend((0..n).map(|_| rng.next() as u8));
            }
        }
    }
    data
}

#[test]
fn every_target_survives_its_seeds_and_a_seeded_stream_of_mutations() {
    let cases: usize = std::env::var("COHORT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let seed: u64 = std::env::var("COHORT_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x00c0_ff17_5eed);
    for (name, target) in TARGETS {
        let started = std::time::Instant::now();
        let seeds = seeds(name);
        for s in &seeds {
            target(s);
        }
        let mut rng = Rng(seed ^ name.len() as u64 ^ 0x9e37_79b9_7f4a_7c15);
        let mut last = Vec::new();
        for _ in 0..cases {
            let base = if rng.below(4) == 0 && !last.is_empty() {
                &last
            } else {
                &seeds[rng.below(seeds.len())]
            };
            let input = mutate(&mut rng, base);
            // Keep the input on a failure: the panic message names the target, and
            // the input is printed to commit as a corpus file.
            let result = std::panic::catch_unwind(|| target(&input));
            if let Err(e) = result {
                let path = std::env::temp_dir().join(format!("cohort-fuzz-{name}-crash"));
                let _ = std::fs::write(&path, &input);
                eprintln!("{name}: crash input written to {}", path.display());
                std::panic::resume_unwind(e);
            }
            last = input;
        }
        println!(
            "{name}: {} seeds and {cases} mutated inputs in {:.1?}",
            seeds.len(),
            started.elapsed()
        );
    }
}
