//! What the benchmarks that run fake agent CLIs share: the fake agent's binary and
//! when an answer reached a transcript.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cohort_workers::transcript::{Entry, Parser};
use cohort_workers::AgentKind;

/// The fake agent next to this benchmark's profile, built when missing.
pub fn fake_agent() -> PathBuf {
    let exe = std::env::current_exe().expect("benchmark executable");
    let profile = exe.parent().and_then(Path::parent).expect("target dir");
    let bin = profile.join("cohort-fake-agent");
    if !bin.exists() {
        let mut build =
            std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        build.args(["build", "-p", "cohort-fake-agent"]);
        if profile.ends_with("release") {
            build.arg("--release");
        }
        assert!(
            build.status().expect("cargo").success(),
            "building the fake agent failed"
        );
    }
    bin
}

/// When the agent wrote `answer` in its transcript (Unix ms).
pub fn answer_time(transcript: &Path, answer: &str) -> Option<i64> {
    let entries = Parser::read_all(AgentKind::Claude, transcript, 64 << 20).ok()?;
    entries.iter().rev().find_map(|e| match e {
        Entry::Say { at_ms, text } if text == answer => Some(*at_ms),
        _ => None,
    })
}

/// The environment fake agents run with: `bin` (where `claude` is the fake agent)
/// first on the PATH, `home` as their home.
pub fn agent_env(bin: &Path, home: &Path) -> BTreeMap<String, String> {
    let claude = bin.join("claude");
    if !claude.exists() {
        std::fs::create_dir_all(bin).unwrap();
        std::os::unix::fs::symlink(fake_agent(), &claude).unwrap();
    }
    BTreeMap::from([
        (
            "PATH".to_string(),
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        ),
        ("HOME".to_string(), home.display().to_string()),
    ])
}
