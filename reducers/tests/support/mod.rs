//! Shared by the corpus check, the benchmark and the unit tests: the recorded fixtures, and
//! the facts of a raw output with the check of a reduction against them.
#![allow(dead_code)]

pub mod facts;

use std::path::{Path, PathBuf};

/// A recorded output and the command that produced it.
pub struct Fixture {
    pub name: String,
    pub command: String,
    pub raw: Vec<u8>,
}

/// The crate's own fixtures.
pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/reducers")
}

/// Every `NAME.toml` + `NAME.out` pair in `dir`, by name. The `.toml` names the command
/// (`command = "…"`).
pub fn fixtures_in(dir: &Path) -> Vec<Fixture> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("fixture metadata");
        let meta: toml::Table =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let command = meta["command"].as_str().expect("a command line").to_owned();
        let raw = std::fs::read(path.with_extension("out")).expect("fixture output");
        out.push(Fixture {
            name: path.file_stem().unwrap().to_string_lossy().into_owned(),
            command,
            raw,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The crate's fixtures, and those of `COHORT_EXTRA_FIXTURES=DIR` when it is set.
pub fn all_fixtures() -> Vec<Fixture> {
    let mut all = fixtures_in(&fixture_dir());
    if let Some(extra) = std::env::var_os("COHORT_EXTRA_FIXTURES") {
        all.extend(fixtures_in(Path::new(&extra)));
    }
    all
}

/// The median of `values` (the upper one of an even count); 0 for none.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
