//! Runs the generic pipeline once over every fixture concatenated to about `MB` megabytes
//! (default 2), for profilers: `valgrind --tool=callgrind target/release/examples/generic`.

use cohort_reducers::{reduce, Options};
use std::path::PathBuf;

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/reducers");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("out"))
        .collect();
    names.sort();
    let mut all: Vec<u8> = Vec::new();
    for p in &names {
        all.extend_from_slice(&std::fs::read(p).expect("read"));
    }
    let mut input = Vec::with_capacity(mb << 20);
    while input.len() < mb << 20 {
        input.extend_from_slice(&all);
    }
    let r = reduce("cat all.txt", &input, &Options::default());
    println!("{} bytes -> {} tokens shown", input.len(), r.shown_tokens);
}
