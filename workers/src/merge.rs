//! Bringing workers' branches together. Each branch is merged in turn onto a new
//! branch made from the target, in a scratch worktree of its own; a check command
//! (the tests) runs after each merge; the first conflict or failing check stops it,
//! reported with the conflicting files and hunks or the check's last lines, and the
//! new branch keeps only the merges that passed. The user's checkout and its branch
//! are never touched, and nothing is pushed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::{error::WorkerError, machine::Machine, registry::WorkerRow, worktree, Workers};

/// In which order the branches are merged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MergeOrder {
    /// As the caller named the workers.
    #[default]
    Given,
    /// The smallest change first (lines added and removed against the target), so
    /// the big ones meet a tree that already holds the small ones.
    SmallestFirst,
}

impl MergeOrder {
    /// The order named `name`.
    pub fn parse(name: &str) -> Result<MergeOrder, String> {
        match name {
            "given" => Ok(MergeOrder::Given),
            "smallest_first" | "smallest" => Ok(MergeOrder::SmallestFirst),
            other => Err(format!(
                "unknown order {:?}: use given or smallest_first",
                other.chars().take(40).collect::<String>()
            )),
        }
    }
}

/// What to merge into, and how.
#[derive(Clone, Debug, Default)]
pub struct MergeRequest {
    /// The branch (or commit) the merges start from; default: the branch checked
    /// out in the repository's main checkout.
    pub into: Option<String>,
    /// The new branch that takes the merges; default `cohort/merge-<unix seconds>`.
    pub branch: Option<String>,
    /// A command run after each merge in the scratch worktree (`sh -c`); a non-zero
    /// status stops the merging.
    pub check: Option<String>,
    /// How long the check may run each time.
    pub check_timeout: Duration,
    /// In which order.
    pub order: MergeOrder,
}

/// How one worker's branch went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// Merged, as this commit.
    Merged(String),
    /// Nothing to merge: the target already holds it.
    UpToDate,
    /// It conflicts: the files, and the conflicted hunks (shortened).
    Conflict {
        /// The conflicting files.
        files: Vec<String>,
        /// The hunks with their conflict markers.
        hunks: String,
    },
    /// The check failed after merging it (the merge was taken back out).
    CheckFailed {
        /// The check's exit status (`None`: killed at its time limit).
        status: Option<i32>,
        /// Its last lines.
        tail: String,
    },
    /// git failed for another reason (the branch is gone, unrelated histories…).
    Failed(String),
    /// Not tried: an earlier step stopped the merging.
    NotTried,
}

/// One worker's step.
#[derive(Clone, Debug)]
pub struct MergeStep {
    /// The worker.
    pub worker: String,
    /// Its branch.
    pub branch: String,
    /// Lines it adds and removes against the target.
    pub lines_changed: usize,
    /// Files with uncommitted changes in its worktree, which the merge leaves out.
    pub uncommitted: usize,
    /// What happened.
    pub outcome: StepOutcome,
}

/// What merging did.
#[derive(Clone, Debug)]
pub struct MergeReport {
    /// The target the merges started from.
    pub into: String,
    /// The new branch holding the merges that passed.
    pub branch: String,
    /// The scratch worktree, kept when the merging stopped (to resolve there).
    pub worktree: Option<PathBuf>,
    /// Each worker, in the order tried.
    pub steps: Vec<MergeStep>,
    /// Every branch merged and checked.
    pub complete: bool,
    /// The remote host the repository (and the kept worktree) is on; `None`: this
    /// machine.
    pub host: Option<String>,
}

/// The most of a conflict's hunks returned.
const HUNKS_MAX: usize = 6000;
/// The check's lines returned.
const TAIL_LINES: usize = 30;

fn git(m: &Machine, dir: &Path, args: &[&str]) -> Result<String, WorkerError> {
    m.git(dir, args, false)
}

/// Whether git has no committer identity for `repo` (it would refuse to commit).
fn lacks_identity(m: &Machine, repo: &Path) -> bool {
    git(m, repo, &["var", "GIT_COMMITTER_IDENT"]).is_err()
}

/// Lines added plus removed between `from` and `to` (`git diff --numstat`).
fn lines_between(m: &Machine, repo: &Path, from: &str, to: &str) -> usize {
    git(m, repo, &["diff", "--numstat", &format!("{from}...{to}")])
        .map(|text| {
            text.lines()
                .map(|l| {
                    l.split_whitespace()
                        .take(2)
                        .filter_map(|n| n.parse::<usize>().ok())
                        .sum::<usize>()
                })
                .sum()
        })
        .unwrap_or(0)
}

/// Runs `check` in `dir` for at most `limit`, in a process group of its own: its
/// status (`None` when it was stopped at the limit, with everything it started) and
/// its last lines.
async fn run_check(dir: &Path, check: &str, limit: Duration) -> (Option<i32>, String) {
    use tokio::io::AsyncReadExt;
    let child = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("exec 2>&1; {check}"))
        .current_dir(dir)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return (Some(127), format!("the check could not start: {e}")),
    };
    let group = child.id();
    let reader = child.stdout.take().map(|mut out| {
        tokio::spawn(async move {
            let mut bytes = Vec::new();
            let _ = (&mut out).take(8 << 20).read_to_end(&mut bytes).await;
            bytes
        })
    });
    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(status)) => Some(status.code().unwrap_or(128)),
        Ok(Err(_)) => Some(127),
        Err(_) => None,
    };
    if let Some(pid) = group.and_then(|p| i32::try_from(p).ok()) {
        // What it left running (a test runner's workers, a server) goes with it.
        // SAFETY: signals the process group the check was started in.
        unsafe {
            libc::killpg(
                pid,
                if status.is_none() {
                    libc::SIGKILL
                } else {
                    libc::SIGTERM
                },
            );
        }
    }
    if status.is_none() {
        let _ = child.wait().await;
    }
    // A background process holding the pipe does not hold up the report.
    let bytes = match reader {
        Some(r) => tokio::time::timeout(Duration::from_secs(2), r)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let mut tail = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    if status.is_none() {
        tail.push_str(&stopped_note(limit));
    }
    (status, tail)
}

/// What a check's tail ends with when it was stopped at its limit.
fn stopped_note(limit: Duration) -> String {
    format!(
        "\n(the check ran past its {} s limit and was stopped)",
        limit.as_secs()
    )
}

/// Merges `branch` into the scratch worktree's HEAD. A conflict is left in place,
/// to resolve there; any other failure is reported as it is.
fn merge_one(
    m: &Machine,
    scratch: &Path,
    worker: &str,
    branch: &str,
    identity: bool,
) -> StepOutcome {
    let head = || git(m, scratch, &["rev-parse", "HEAD"]).map(|h| h.trim().to_string());
    let Ok(before) = head() else {
        return StepOutcome::Failed("the scratch worktree has no HEAD".into());
    };
    let message = format!("Merge worker {worker} ({branch})");
    let merged = m.git(
        scratch,
        &["merge", "--no-ff", "--no-edit", "-m", &message, branch],
        identity,
    );
    match merged {
        Ok(_) => match head() {
            Ok(after) if after == before => StepOutcome::UpToDate,
            Ok(after) => StepOutcome::Merged(after),
            Err(e) => StepOutcome::Failed(e.to_string()),
        },
        Err(e) => {
            let files: Vec<String> = git(m, scratch, &["diff", "--name-only", "--diff-filter=U"])
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect();
            if files.is_empty() {
                let _ = git(m, scratch, &["merge", "--abort"]);
                return StepOutcome::Failed(e.to_string());
            }
            let mut hunks = git(m, scratch, &["diff"]).unwrap_or_default();
            if hunks.len() > HUNKS_MAX {
                let mut end = HUNKS_MAX;
                while !hunks.is_char_boundary(end) {
                    end -= 1;
                }
                hunks.truncate(end);
                hunks.push_str("\n… (shortened: the scratch worktree holds the whole conflict)");
            }
            StepOutcome::Conflict { files, hunks }
        }
    }
}

impl Workers {
    /// Merges the workers' branches, in `request.order`, onto a new branch made from
    /// the target, checking after each; see the module's overview.
    pub async fn merge_workers(
        &self,
        rows: &[WorkerRow],
        request: &MergeRequest,
    ) -> Result<MergeReport, WorkerError> {
        if rows.is_empty() {
            return Err(WorkerError::Invalid(
                "no workers named: pass the workers whose branches to merge".into(),
            ));
        }
        let mut repo: Option<PathBuf> = None;
        let mut planned = Vec::new();
        // The merge runs where the workers' repository is: this machine or their host.
        let host = rows[0].spec.host.clone();
        for row in rows {
            if row.spec.host != host {
                return Err(WorkerError::Invalid(format!(
                    "{} works on {}, {} on {}: merge the workers of one machine at a time",
                    rows[0].name,
                    host.as_deref().unwrap_or("this machine"),
                    row.name,
                    row.spec.host.as_deref().unwrap_or("this machine"),
                )));
            }
            let (Some(r), Some(branch)) = (&row.repo, &row.branch) else {
                return Err(WorkerError::Invalid(format!(
                    "{} has no branch of its own (it works in a shared directory): nothing to merge",
                    row.name
                )));
            };
            let r = PathBuf::from(r);
            if repo.as_ref().is_some_and(|known| *known != r) {
                return Err(WorkerError::Invalid(format!(
                    "{} works in another repository ({}): merge the workers of one repository at a time",
                    row.name,
                    r.display()
                )));
            }
            repo = Some(r);
            planned.push((row.clone(), branch.clone()));
        }
        let repo = repo.expect("at least one worker");
        let request = request.clone();
        let m = self.machine_of_host(host.as_deref());
        tokio::task::spawn_blocking(move || plan_and_start(m, &repo, planned, &request))
            .await
            .map_err(|e| WorkerError::Invalid(format!("the merge could not run: {e}")))??
            .finish()
            .await
    }
}

/// What a worker changed against its base: one line (commits, the diff's size,
/// untracked files) and `git diff --stat`.
#[derive(Clone, Debug)]
pub struct Changes {
    /// The worker.
    pub worker: String,
    /// Its branch.
    pub branch: Option<String>,
    /// One line on it.
    pub line: String,
    /// The diff's stat.
    pub stat: String,
}

impl Workers {
    /// What each worker changed against the commit its worktree started from.
    pub async fn diff_workers(&self, rows: &[WorkerRow]) -> Vec<Changes> {
        let mut out = Vec::new();
        for row in rows {
            let (dir, base) = (PathBuf::from(&row.cwd), row.base_commit.clone());
            let m = self.machine_of(row);
            let found = match base.filter(|_| row.repo.is_some()) {
                Some(base) => tokio::task::spawn_blocking(move || {
                    if !m.exists(&dir).unwrap_or(false) {
                        return None;
                    }
                    let line = worktree::change_line(&m, &dir, &base).ok()?;
                    let stat = worktree::diff_stat(&m, &dir, &base).ok()?;
                    Some((line, stat))
                })
                .await
                .ok()
                .flatten(),
                None => None,
            };
            let (line, stat) = found.unwrap_or_else(|| {
                (
                    "no worktree of its own: nothing to compare".into(),
                    String::new(),
                )
            });
            out.push(Changes {
                worker: row.name.clone(),
                branch: row.branch.clone(),
                line,
                stat,
            });
        }
        out
    }
}

/// The merging, set up: the scratch worktree made, the steps ordered.
struct Started {
    /// Where the repository is.
    machine: Machine,
    repo: PathBuf,
    scratch: PathBuf,
    /// Merge commits need an author given (the repository has none).
    identity: bool,
    into: String,
    branch: String,
    steps: Vec<MergeStep>,
    request: MergeRequest,
}

fn plan_and_start(
    m: Machine,
    repo: &Path,
    planned: Vec<(WorkerRow, String)>,
    request: &MergeRequest,
) -> Result<Started, WorkerError> {
    let into = match &request.into {
        Some(into) => into.clone(),
        None => worktree::current_branch(&m, repo).ok_or_else(|| {
            WorkerError::Invalid(
                "the repository's checkout is on no branch: say which branch to merge into (into)"
                    .into(),
            )
        })?,
    };
    git(
        &m,
        repo,
        &["rev-parse", "--verify", &format!("{into}^{{commit}}")],
    )
    .map_err(|_| {
        WorkerError::Invalid(format!(
            "{into:?} names no branch or commit in {}: give the branch to merge into",
            repo.display()
        ))
    })?;
    let stamp = crate::events::now_ms() / 1000;
    let branch = request
        .branch
        .clone()
        .unwrap_or_else(|| format!("cohort/merge-{stamp}"));
    git(&m, repo, &["check-ref-format", "--branch", &branch]).map_err(|_| {
        WorkerError::Invalid(format!("{branch:?} is not a branch name git accepts"))
    })?;
    if git(
        &m,
        repo,
        &[
            "show-ref",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .is_ok()
    {
        return Err(WorkerError::Invalid(format!(
            "the branch {branch} exists already: name a new one (branch), so nothing of it is overwritten"
        )));
    }
    let mut steps: Vec<MergeStep> = planned
        .into_iter()
        .map(|(row, b)| MergeStep {
            lines_changed: lines_between(&m, repo, &into, &b),
            uncommitted: row
                .worktree
                .as_deref()
                .map(Path::new)
                .filter(|p| m.exists(p).unwrap_or(false))
                .and_then(|p| worktree::dirty_files(&m, p).ok())
                .unwrap_or(0),
            worker: row.name,
            branch: b,
            outcome: StepOutcome::NotTried,
        })
        .collect();
    if request.order == MergeOrder::SmallestFirst {
        steps.sort_by_key(|s| s.lines_changed);
    }
    worktree::exclude(&m, repo, &format!("/{}/", worktree::WORKTREES_DIR))?;
    // Named after its branch: a worktree kept from a merge that stopped says which.
    let dir = format!("merge-{}", branch.replace('/', "-"));
    let root = repo.join(worktree::WORKTREES_DIR);
    let scratch = (1..)
        .map(|n| match n {
            1 => root.join(&dir),
            n => root.join(format!("{dir}-{n}")),
        })
        .take(100)
        .map(|p| m.exists(&p).map(|taken| (!taken).then_some(p)))
        .find_map(Result::transpose)
        .transpose()?
        .ok_or_else(|| {
            WorkerError::Invalid(format!(
                "no free name for the merge's worktree under {}",
                root.display()
            ))
        })?;
    let scratch_text = scratch.to_string_lossy().into_owned();
    git(
        &m,
        repo,
        &["worktree", "add", "-b", &branch, &scratch_text, &into],
    )?;
    // Locked while it works: list_worktrees' remove_orphans leaves it alone.
    let _ = git(
        &m,
        repo,
        &[
            "worktree",
            "lock",
            "--reason",
            "a merge_workers in progress",
            &scratch_text,
        ],
    );
    Ok(Started {
        identity: lacks_identity(&m, repo),
        machine: m,
        repo: repo.to_path_buf(),
        scratch,
        into,
        branch,
        steps,
        request: request.clone(),
    })
}

impl Started {
    async fn finish(mut self) -> Result<MergeReport, WorkerError> {
        let blocking =
            |e: tokio::task::JoinError| WorkerError::Invalid(format!("git could not run: {e}"));
        let mut stopped = false;
        for i in 0..self.steps.len() {
            let (scratch, worker, branch, identity, m) = (
                self.scratch.clone(),
                self.steps[i].worker.clone(),
                self.steps[i].branch.clone(),
                self.identity,
                self.machine.clone(),
            );
            let before = {
                let (scratch, m) = (scratch.clone(), m.clone());
                tokio::task::spawn_blocking(move || git(&m, &scratch, &["rev-parse", "HEAD"]))
                    .await
                    .map_err(blocking)?
                    .map(|h| h.trim().to_string())
            };
            let outcome = match &before {
                Ok(_) => tokio::task::spawn_blocking(move || {
                    merge_one(&m, &scratch, &worker, &branch, identity)
                })
                .await
                .map_err(blocking)?,
                Err(e) => StepOutcome::Failed(e.to_string()),
            };
            let merged = matches!(outcome, StepOutcome::Merged(_));
            let stops = matches!(
                outcome,
                StepOutcome::Conflict { .. } | StepOutcome::Failed(_)
            );
            self.steps[i].outcome = outcome;
            if stops {
                stopped = true;
                break;
            }
            if let (true, Some(check), Ok(before)) = (merged, self.request.check.as_deref(), before)
            {
                let (status, tail) = match self.machine.host() {
                    None => run_check(&self.scratch, check, self.request.check_timeout).await,
                    Some(_) => {
                        let (m, scratch) = (self.machine.clone(), self.scratch.clone());
                        let (check, limit) = (check.to_string(), self.request.check_timeout);
                        let (status, mut tail) = tokio::task::spawn_blocking(move || {
                            m.run_limited(&scratch, &check, None, limit, TAIL_LINES)
                        })
                        .await
                        .map_err(blocking)?
                        .unwrap_or_else(|e| (Some(127), e.to_string()));
                        if status.is_none() {
                            tail.push_str(&stopped_note(limit));
                        }
                        (status, tail)
                    }
                };
                if status != Some(0) {
                    // The branch keeps only what passed.
                    let (scratch, m) = (self.scratch.clone(), self.machine.clone());
                    let _ = tokio::task::spawn_blocking(move || {
                        git(&m, &scratch, &["reset", "--hard", &before])
                    })
                    .await;
                    self.steps[i].outcome = StepOutcome::CheckFailed { status, tail };
                    stopped = true;
                    break;
                }
            }
        }
        let (repo, scratch, m) = (
            self.repo.clone(),
            self.scratch.clone(),
            self.machine.clone(),
        );
        let keep = stopped;
        let _ = tokio::task::spawn_blocking(move || {
            let text = scratch.to_string_lossy().into_owned();
            let _ = git(&m, &repo, &["worktree", "unlock", &text]);
            if !keep {
                let _ = worktree::remove(&m, &repo, &scratch, true);
            }
        })
        .await;
        Ok(MergeReport {
            into: self.into,
            branch: self.branch,
            worktree: stopped.then_some(self.scratch),
            complete: !stopped,
            steps: self.steps,
            host: self.machine.host().map(str::to_string),
        })
    }
}

impl MergeReport {
    /// The prompt for a worker handed the conflict this merging stopped at, in its
    /// scratch worktree: where it is, which branch conflicts in which files, what
    /// "resolved" means (no markers, `check` passing, the merge committed) and what
    /// not to touch. `None` when it did not stop at a conflict.
    pub fn conflict_prompt(&self, check: Option<&str>) -> Option<String> {
        let worktree = self.worktree.as_ref()?;
        let (step, files) = self.steps.iter().find_map(|s| match &s.outcome {
            StepOutcome::Conflict { files, .. } => Some((s, files)),
            _ => None,
        })?;
        let check = check
            .map(|c| format!(", run `{c}` until it passes"))
            .unwrap_or_default();
        Some(format!(
            "Resolve a merge conflict. {dir} is a scratch git worktree on branch {branch}, made from {into}; merging {worker}'s branch {theirs} into it stopped with conflicts in: {files}. Edit each of those files so it keeps what both sides meant and holds no conflict markers{check}, then `git add` them and `git commit --no-edit` to conclude the merge. Stay on {branch} in this directory: do not push, rebase, switch branches or touch other worktrees.",
            dir = worktree.display(),
            branch = self.branch,
            into = self.into,
            worker = step.worker,
            theirs = step.branch,
            files = files.join(", "),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_is_put_to_a_worker_with_its_place_files_and_check() {
        let step = |worker: &str, outcome| MergeStep {
            worker: worker.into(),
            branch: format!("cohort/{worker}"),
            lines_changed: 1,
            uncommitted: 0,
            outcome,
        };
        let mut report = MergeReport {
            into: "main".into(),
            branch: "cohort/merge-1".into(),
            worktree: Some(PathBuf::from("/repo/.worktrees/merge-1")),
            host: None,
            steps: vec![
                step("left", StepOutcome::Merged("abc".into())),
                step(
                    "right",
                    StepOutcome::Conflict {
                        files: vec!["README.md".into(), "src/a.rs".into()],
                        hunks: "<<<<<<<".into(),
                    },
                ),
                step("big", StepOutcome::NotTried),
            ],
            complete: false,
        };
        let prompt = report.conflict_prompt(Some("cargo test")).unwrap();
        for part in [
            "/repo/.worktrees/merge-1 is a scratch git worktree on branch cohort/merge-1, made from main",
            "merging right's branch cohort/right",
            "conflicts in: README.md, src/a.rs",
            "run `cargo test` until it passes",
            "git commit --no-edit",
            "do not push",
        ] {
            assert!(prompt.contains(part), "{part:?} not in {prompt}");
        }
        assert!(
            !prompt.contains('\n'),
            "one line for any composer: {prompt}"
        );
        assert!(!report
            .conflict_prompt(None)
            .unwrap()
            .contains("until it passes"));
        // A check that failed is not a conflict to hand over.
        report.steps[1].outcome = StepOutcome::CheckFailed {
            status: Some(1),
            tail: String::new(),
        };
        assert_eq!(report.conflict_prompt(None), None);
    }

    #[test]
    fn orders_parse() {
        assert_eq!(
            MergeOrder::parse("smallest_first"),
            Ok(MergeOrder::SmallestFirst)
        );
        assert!(MergeOrder::parse("random")
            .unwrap_err()
            .contains("smallest_first"));
    }
}
