//! Prints the reduction of one recorded fixture: `cargo run -p cohort-reducers --example show
//! -- git-status-human`.

use cohort_reducers::{reduce, Options};
use std::path::PathBuf;

fn main() {
    let name = std::env::args().nth(1).expect("usage: show FIXTURE-NAME");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/reducers");
    let meta = std::fs::read_to_string(dir.join(format!("{name}.toml"))).expect("fixture meta");
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
    let raw = std::fs::read(dir.join(format!("{name}.out"))).expect("fixture output");
    let r = reduce(&command, &raw, &Options::default());
    println!("$ {command}\n{}\n-- {}", r.text, r.meta_line());
}
