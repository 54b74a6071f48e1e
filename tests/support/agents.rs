//! Fake agent CLIs for the workers tests: the fake-agent binary (built by `cargo test
//! --workspace`; built here once when missing) symlinked as `claude` and `codex` on a
//! PATH handed to the panes, a private home for their transcripts, and real git
//! repositories to make worktrees of.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{json, Value};

/// The fake agent's binary.
pub fn fake_agent_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("test executable");
            // target/<profile>/deps/<test> -> target/<profile>/cohort-fake-agent
            let profile = exe.parent().and_then(Path::parent).expect("target dir");
            let bin = profile.join("cohort-fake-agent");
            if !bin.exists() {
                let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
                let status = Command::new(cargo)
                    .args(["build", "-p", "cohort-fake-agent"])
                    .current_dir(env!("CARGO_MANIFEST_DIR"))
                    .status()
                    .expect("cargo build -p cohort-fake-agent");
                assert!(status.success(), "building the fake agent failed");
            }
            assert!(bin.exists(), "no fake agent at {}", bin.display());
            bin
        })
        .clone()
}

/// A place for fake agents: `bin/` with `claude` and `codex`, a home, repositories.
pub struct Agents {
    pub dir: tempfile::TempDir,
}

impl Agents {
    pub fn new() -> Agents {
        let dir = tempfile::Builder::new()
            .prefix("cohort-agents-")
            .tempdir()
            .expect("temp dir");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        for name in ["claude", "codex"] {
            std::os::unix::fs::symlink(fake_agent_binary(), bin.join(name)).unwrap();
        }
        Agents { dir }
    }

    pub fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// The environment a worker's agent gets: the fakes first on the PATH, a private
    /// home (transcripts, Codex's home), and `extra`.
    pub fn env(&self, extra: &[(&str, &str)]) -> BTreeMap<String, String> {
        let path = format!(
            "{}:{}",
            self.bin().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut env = BTreeMap::from([
            ("PATH".to_string(), path),
            ("HOME".to_string(), self.home().display().to_string()),
            (
                "CODEX_HOME".to_string(),
                self.home().join(".codex").display().to_string(),
            ),
        ]);
        for (k, v) in extra {
            env.insert(k.to_string(), v.to_string());
        }
        env
    }

    /// The same environment as JSON (for MCP arguments).
    pub fn env_json(&self, extra: &[(&str, &str)]) -> Value {
        json!(self.env(extra))
    }

    /// A git repository with one commit, a `.env` the `.worktreeinclude` names.
    pub fn repo(&self, name: &str) -> PathBuf {
        demo_repo(&self.dir.path().join(name))
    }
}

/// A repository made at `repo` with one commit, and an untracked `.env` its
/// `.worktreeinclude` names (`.env*`); its resolved path.
pub fn demo_repo(repo: &Path) -> PathBuf {
    std::fs::create_dir_all(repo).unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "# demo\n").unwrap();
    std::fs::write(repo.join(".gitignore"), ".env*\n").unwrap();
    std::fs::write(repo.join(".worktreeinclude"), ".env*\n").unwrap();
    git(repo, &["add", "."]);
    git(repo, &["commit", "-q", "-m", "first"]);
    std::fs::write(repo.join(".env"), "SECRET=1\n").unwrap();
    repo.canonicalize().unwrap()
}

/// Runs git in `dir` with a fixed identity; panics when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "cohort tests")
        .env("GIT_AUTHOR_EMAIL", "tests@cohort.invalid")
        .env("GIT_COMMITTER_NAME", "cohort tests")
        .env("GIT_COMMITTER_EMAIL", "tests@cohort.invalid")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The answer a fake agent gives to `prompt` received whole.
pub fn answer(prompt: &str) -> String {
    cohort_fake_agent::script::answer(prompt)
}
