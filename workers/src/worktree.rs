//! Git worktrees for workers: one per worker on its own branch, made ready to work
//! in (the untracked files a `.worktreeinclude` names copied in, a setup script run
//! with its output kept), inspected (dirty or not, `git diff --stat` against the
//! base) and removed only when that loses nothing.
//!
//! Everything here runs `git` and blocks: callers run it on a blocking thread. Each
//! function works on a [`Machine`]: this one, or the remote host a worker runs on.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::WorkerError;
use crate::machine::Machine;

/// Where cohort puts the worktrees of a repository: `<repo>/.worktrees/<name>`
/// (excluded from the repository's status through `info/exclude`).
pub const WORKTREES_DIR: &str = ".worktrees";

/// The file naming untracked files to copy into new worktrees (gitignore syntax).
pub const INCLUDE_FILE: &str = ".worktreeinclude";

fn git(m: &Machine, dir: &Path, args: &[&str]) -> Result<String, WorkerError> {
    m.git(dir, args, false)
}

/// The main checkout of the repository `dir` is in (for a linked worktree, the
/// repository it belongs to); `None` outside a repository.
pub fn main_checkout(m: &Machine, dir: &Path) -> Option<PathBuf> {
    let common = git(
        m,
        dir,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )
    .ok()?;
    let common = PathBuf::from(common.trim());
    if common.file_name().is_some_and(|n| n == ".git") {
        return common.parent().map(Path::to_path_buf);
    }
    // A bare repository, or a separate git dir: the top of this checkout.
    git(m, dir, &["rev-parse", "--show-toplevel"])
        .ok()
        .map(|t| PathBuf::from(t.trim()))
}

/// The top of the checkout `dir` is in.
pub fn toplevel(m: &Machine, dir: &Path) -> Option<PathBuf> {
    git(m, dir, &["rev-parse", "--show-toplevel"])
        .ok()
        .map(|t| PathBuf::from(t.trim()))
}

/// The branch checked out in `dir`, if any.
pub fn current_branch(m: &Machine, dir: &Path) -> Option<String> {
    git(m, dir, &["symbolic-ref", "--quiet", "--short", "HEAD"])
        .ok()
        .map(|b| b.trim().to_string())
        .filter(|b| !b.is_empty())
}

/// A worktree made for a worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Made {
    /// Its directory.
    pub path: PathBuf,
    /// Its branch.
    pub branch: String,
    /// The commit the branch started from.
    pub base_commit: String,
    /// Untracked files copied in from the main checkout.
    pub copied: Vec<String>,
}

/// Makes `<repo>/.worktrees/<dir_name>` on `branch`, from `base` (a ref; `HEAD`
/// when `None`). An existing branch not checked out elsewhere is reused.
pub fn create(
    m: &Machine,
    repo: &Path,
    dir_name: &str,
    branch: &str,
    base: Option<&str>,
    include: &[String],
) -> Result<Made, WorkerError> {
    let base_ref = base.unwrap_or("HEAD");
    let base_commit = git(
        m,
        repo,
        &["rev-parse", "--verify", &format!("{base_ref}^{{commit}}")],
    )
    .map_err(|e| match e {
        WorkerError::Git { dir, .. } => WorkerError::Git {
            command: format!("rev-parse {base_ref}"),
            dir,
            message: format!(
                "{base_ref:?} names no commit: give an existing branch, tag or commit as the base"
            ),
        },
        other => other,
    })?
    .trim()
    .to_string();
    exclude(m, repo, &format!("/{WORKTREES_DIR}/"))?;
    let path = repo.join(WORKTREES_DIR).join(dir_name);
    if m.exists(&path)? {
        return Err(WorkerError::Invalid(format!(
            "{} already exists: close the worker that used it (or remove it with list_worktrees remove_orphans), or pick another name",
            path.display()
        )));
    }
    let path_text = path.to_string_lossy().into_owned();
    let exists = git(
        m,
        repo,
        &[
            "show-ref",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .is_ok();
    if exists {
        git(m, repo, &["worktree", "add", &path_text, branch])?;
    } else {
        git(
            m,
            repo,
            &["worktree", "add", "-b", branch, &path_text, &base_commit],
        )?;
    }
    let base_commit = if exists {
        git(m, &path, &["merge-base", "HEAD", &base_commit])
            .map(|c| c.trim().to_string())
            .unwrap_or(base_commit)
    } else {
        base_commit
    };
    let copied = match copy_includes(m, repo, &path, include) {
        Ok(copied) => copied,
        Err(e) => {
            // Half made: the worktree goes (its branch stays), the error says why.
            let _ = remove(m, repo, &path, true);
            return Err(e);
        }
    };
    Ok(Made {
        path,
        branch: branch.to_string(),
        base_commit,
        copied,
    })
}

/// Adds `pattern` to the repository's `info/exclude` (shared by its worktrees) once.
pub fn exclude(m: &Machine, repo: &Path, pattern: &str) -> Result<(), WorkerError> {
    let common = git(
        m,
        repo,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )?;
    let file = PathBuf::from(common.trim()).join("info").join("exclude");
    // A file that could not be read is never rewritten from nothing.
    let text = m.read_to_string(&file)?.unwrap_or_default();
    if text.lines().any(|l| l.trim() == pattern) {
        return Ok(());
    }
    let mut text = text;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(pattern);
    text.push('\n');
    m.write(&file, &text)
}

/// Copies into `worktree` the untracked files of `repo`'s main checkout that its
/// `.worktreeinclude` (and `extra` patterns) name. Returns their paths.
pub fn copy_includes(
    m: &Machine,
    repo: &Path,
    worktree: &Path,
    extra: &[String],
) -> Result<Vec<String>, WorkerError> {
    let file = repo.join(INCLUDE_FILE);
    let listed_file = m
        .read_to_string(&file)?
        .unwrap_or_default()
        .lines()
        .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let extra: Vec<&String> = extra.iter().filter(|p| !p.trim().is_empty()).collect();
    if !listed_file && extra.is_empty() {
        return Ok(Vec::new());
    }
    let from_file = format!("--exclude-from={}", file.display());
    let mut args = vec!["ls-files", "--others", "--ignored", "-z"];
    if listed_file {
        args.push(&from_file);
    }
    for p in &extra {
        args.push("--exclude");
        args.push(p);
    }
    let listed = git(m, repo, &args)?;
    let mut copied = Vec::new();
    for rel in listed.split('\0').filter(|r| !r.is_empty()) {
        if rel.starts_with(&format!("{WORKTREES_DIR}/")) {
            continue;
        }
        let from = repo.join(rel);
        let to = worktree.join(rel);
        if !m.is_file(&from)? || m.exists(&to)? {
            continue;
        }
        m.copy(&from, &to)?;
        copied.push(rel.to_string());
    }
    Ok(copied)
}

/// Runs `script` with `sh -c` in `dir`, its output (stdout and stderr) to `log`
/// (a file on `m`); fails with the log's tail when it fails or runs past `limit`.
pub fn run_setup(
    m: &Machine,
    dir: &Path,
    script: &str,
    log: &Path,
    limit: Duration,
) -> Result<String, WorkerError> {
    // How it ended (whether it succeeded, and its status said), `None`: stopped.
    let (ended, tail) = match m.host() {
        Some(_) => {
            let (status, tail) = m.run_limited(dir, script, Some(log), limit, 20)?;
            (status.map(|c| (c == 0, format!("exit status: {c}"))), tail)
        }
        None => run_setup_here(dir, script, log, limit)?,
    };
    match ended {
        Some((true, _)) => Ok(tail),
        other => Err(WorkerError::Setup {
            worktree: dir.to_path_buf(),
            status: match other {
                Some((_, said)) => said,
                None => format!("still running after {} s, stopped", limit.as_secs()),
            },
            log: log.to_path_buf(),
            tail,
        }),
    }
}

/// [`run_setup`] on this machine: how the script ended and its output's tail.
fn run_setup_here(
    dir: &Path,
    script: &str,
    log: &Path,
    limit: Duration,
) -> Result<(Option<(bool, String)>, String), WorkerError> {
    let io = |what, source| WorkerError::Io {
        what,
        path: log.to_path_buf(),
        source,
    };
    if let Some(parent) = log.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io("could not create the directory of", e))?;
    }
    let file = std::fs::File::create(log).map_err(|e| io("could not create", e))?;
    let err = file.try_clone().map_err(|e| io("could not open", e))?;
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| io("could not start the setup script for", e))?;
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(io("could not wait for the setup script of", e)),
        }
    };
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(20)..].join("\n");
    Ok((status.map(|s| (s.success(), s.to_string())), tail))
}

/// How many files in `dir` differ from its HEAD (untracked ones included; excluded
/// ones not).
pub fn dirty_files(m: &Machine, dir: &Path) -> Result<usize, WorkerError> {
    Ok(git(m, dir, &["status", "--porcelain"])?.lines().count())
}

/// `git diff --stat` of `dir`'s working tree against `base`, plus a line for
/// untracked files.
pub fn diff_stat(m: &Machine, dir: &Path, base: &str) -> Result<String, WorkerError> {
    let mut stat = git(m, dir, &["diff", "--stat", base])?
        .trim_end()
        .to_string();
    let untracked = git(m, dir, &["ls-files", "--others", "--exclude-standard"])?
        .lines()
        .count();
    if untracked > 0 {
        if !stat.is_empty() {
            stat.push('\n');
        }
        stat.push_str(&format!(" {untracked} untracked file(s)"));
    }
    if stat.is_empty() {
        stat = "no changes".into();
    }
    Ok(stat)
}

/// One line on what changed in `dir` since `base`: `2 commits · 3 files changed, 20
/// insertions(+), 4 deletions(-) · 1 untracked`, or `no changes`.
pub fn change_line(m: &Machine, dir: &Path, base: &str) -> Result<String, WorkerError> {
    let mut parts = Vec::new();
    let commits = commits_since(m, dir, base)?;
    if commits > 0 {
        parts.push(format!(
            "{commits} commit{}",
            if commits == 1 { "" } else { "s" }
        ));
    }
    let short = git(m, dir, &["diff", "--shortstat", base])?;
    if !short.trim().is_empty() {
        parts.push(short.trim().to_string());
    }
    let untracked = git(m, dir, &["ls-files", "--others", "--exclude-standard"])?
        .lines()
        .count();
    if untracked > 0 {
        parts.push(format!("{untracked} untracked"));
    }
    Ok(match parts.is_empty() {
        true => "no changes".into(),
        false => parts.join(" · "),
    })
}

/// Commits on `dir`'s HEAD since `base`.
pub fn commits_since(m: &Machine, dir: &Path, base: &str) -> Result<usize, WorkerError> {
    Ok(
        git(m, dir, &["rev-list", "--count", &format!("{base}..HEAD")])?
            .trim()
            .parse()
            .unwrap_or(0),
    )
}

/// Removes the worktree at `path` of `repo` (its branch stays). Refused when it
/// has uncommitted work, unless `force`.
pub fn remove(m: &Machine, repo: &Path, path: &Path, force: bool) -> Result<(), WorkerError> {
    if !m.exists(path)? {
        let _ = git(m, repo, &["worktree", "prune"]);
        return Ok(());
    }
    let files = dirty_files(m, path)?;
    if files > 0 && !force {
        return Err(WorkerError::Dirty {
            path: path.to_path_buf(),
            files,
        });
    }
    let text = path.to_string_lossy().into_owned();
    let mut args = vec!["worktree", "remove"];
    if force {
        args.push("--force");
    }
    args.push(&text);
    git(m, repo, &args)?;
    Ok(())
}

/// One worktree of a repository.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listed {
    /// Its directory.
    pub path: PathBuf,
    /// Its branch (none when detached).
    pub branch: Option<String>,
    /// Its HEAD commit.
    pub head: String,
    /// Whether it is the main checkout.
    pub main: bool,
    /// Git considers it prunable (its directory is gone).
    pub prunable: bool,
}

/// Every worktree of `repo` (`git worktree list --porcelain`).
pub fn list(m: &Machine, repo: &Path) -> Result<Vec<Listed>, WorkerError> {
    let text = git(m, repo, &["worktree", "list", "--porcelain"])?;
    let mut out: Vec<Listed> = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut w = Listed {
            main: out.is_empty(),
            ..Listed::default()
        };
        for line in block.lines() {
            if let Some(p) = line.strip_prefix("worktree ") {
                w.path = PathBuf::from(p);
            } else if let Some(h) = line.strip_prefix("HEAD ") {
                w.head = h.to_string();
            } else if let Some(b) = line.strip_prefix("branch ") {
                w.branch = Some(b.trim_start_matches("refs/heads/").to_string());
            } else if line.starts_with("prunable") {
                w.prunable = true;
            }
        }
        out.push(w);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Machine = Machine::Local;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(args)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@e")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@e")
                .output()
                .unwrap();
            assert!(
                ok.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&ok.stderr)
            );
        };
        run(&["init", "-q", "-b", "main"]);
        std::fs::write(dir.path().join("README.md"), "hi\n").unwrap();
        std::fs::write(dir.path().join(".gitignore"), ".env\n").unwrap();
        run(&["add", "."]);
        run(&["commit", "-q", "-m", "first"]);
        dir
    }

    #[test]
    fn worktrees_are_made_with_includes_inspected_and_removed_only_when_clean() {
        let r = repo();
        let repo = r.path().canonicalize().unwrap();
        std::fs::write(repo.join(".env"), "KEY=1\n").unwrap();
        std::fs::write(repo.join(INCLUDE_FILE), ".env\n").unwrap();
        let made = create(&L, &repo, "harpo", "cohort/harpo", None, &[]).unwrap();
        assert_eq!(made.copied, vec![".env".to_string()]);
        assert_eq!(
            std::fs::read_to_string(made.path.join(".env")).unwrap(),
            "KEY=1\n"
        );
        assert_eq!(main_checkout(&L, &made.path).unwrap(), repo);
        assert_eq!(
            current_branch(&L, &made.path).as_deref(),
            Some("cohort/harpo")
        );
        // The main checkout stays clean: .worktrees/ is excluded.
        assert_eq!(
            dirty_files(&L, &repo).unwrap(),
            1,
            "only the untracked .worktreeinclude"
        );
        assert_eq!(dirty_files(&L, &made.path).unwrap(), 0);
        std::fs::write(made.path.join("new.txt"), "x").unwrap();
        assert!(diff_stat(&L, &made.path, &made.base_commit)
            .unwrap()
            .contains("1 untracked"));
        let listed = list(&L, &repo).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[1].branch.as_deref(), Some("cohort/harpo"));
        assert!(matches!(
            remove(&L, &repo, &made.path, false),
            Err(WorkerError::Dirty { files: 1, .. })
        ));
        remove(&L, &repo, &made.path, true).unwrap();
        assert!(!made.path.exists());
        // The branch is kept, and a new worktree can take it again.
        let again = create(&L, &repo, "harpo", "cohort/harpo", None, &[]).unwrap();
        assert_eq!(again.base_commit, made.base_commit);
        assert!(create(&L, &repo, "x", "b", Some("no-such-ref"), &[])
            .unwrap_err()
            .to_string()
            .contains("names no commit"));
    }

    #[test]
    fn setup_scripts_keep_their_output_and_fail_loudly() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("setup.log");
        let tail = run_setup(
            &L,
            dir.path(),
            "echo one; echo two >&2",
            &log,
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(tail, "one\ntwo");
        let err = run_setup(
            &L,
            dir.path(),
            "echo broken; exit 3",
            &log,
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert!(err.to_string().contains("broken"), "{err}");
    }
}
