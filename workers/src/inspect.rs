//! Looking at workers: the listing, a close look at one (state with its reason,
//! activity, the current tool, the worktree's changes against its base, the last turn
//! of its transcript), the manager's notes, the transcript paged by turn, and the
//! worktrees cohort made.

use std::path::{Path, PathBuf};

use crate::machine::Machine;
use crate::registry::WorkerTables;
use crate::Workers;
use crate::{
    agent::AgentKind,
    error::WorkerError,
    hub::alive,
    observe::Observation,
    registry::{WorkerNote, WorkerRow},
    spawn::last_lines,
    transcript::{self, Parser},
    worktree,
};
use cohort_terminal::names::{check_text, NOTE_MAX};

/// A worker and its current state.
#[derive(Clone, Debug)]
pub struct WorkerView {
    /// Its registry row.
    pub row: WorkerRow,
    /// Its state and what it was decided from.
    pub observation: Observation,
    /// Messages held for it.
    pub pending: usize,
    /// Its notes.
    pub notes: Vec<WorkerNote>,
    /// Whether the process managing it runs.
    pub owner_alive: bool,
}

/// A close look at one worker.
#[derive(Clone, Debug)]
pub struct Examination {
    /// The worker.
    pub view: WorkerView,
    /// `git diff --stat` of its worktree against the base.
    pub diff_stat: Option<String>,
    /// Commits on its branch since the base.
    pub commits: Option<usize>,
    /// Files with uncommitted changes.
    pub dirty_files: Option<usize>,
    /// The last turn of its transcript, reduced.
    pub last_turn: Option<String>,
    /// The last lines of its screen.
    pub screen_tail: Option<String>,
    /// How a human watches it.
    pub attach: Option<String>,
    /// Why it is in its state, line by line ([`crate::explain::explain`]).
    pub explanation: Vec<String>,
}

/// A page of a worker's transcript.
#[derive(Clone, Debug)]
pub struct LogPage {
    /// The turns, reduced.
    pub text: String,
    /// What was read and how to read more, as `read`'s meta line says it.
    pub meta: String,
    /// Turns in the transcript.
    pub total: usize,
}

/// A worktree of a repository cohort's workers use.
#[derive(Clone, Debug)]
pub struct WorktreeEntry {
    /// The repository.
    pub repo: PathBuf,
    /// The worktree.
    pub path: PathBuf,
    /// Its branch.
    pub branch: Option<String>,
    /// The worker using it.
    pub worker: Option<String>,
    /// Files with uncommitted changes.
    pub dirty_files: Option<usize>,
    /// Made by cohort (under `.worktrees/`) with no live worker.
    pub orphan: bool,
    /// Removed by this call.
    pub removed: bool,
}

/// How long a worker's change line is reused before git is asked again.
pub const CHANGES_FRESH: std::time::Duration = std::time::Duration::from_secs(5);

impl Workers {
    /// A worker's view.
    pub async fn view_worker(&self, row: &WorkerRow) -> Result<WorkerView, WorkerError> {
        let observation = self.observe(row, false).await?;
        let id = row.id.clone();
        let (pending, notes) = self
            .terminal
            .db(move |r| Ok((r.pending_messages(&id)?.len(), r.worker_notes(&id)?)))
            .await?;
        Ok(WorkerView {
            row: row.clone(),
            observation,
            pending,
            notes,
            owner_alive: alive(row.owner_pid),
        })
    }

    /// One line on what a worker changed since its base (commits, the diff's size,
    /// untracked files), for a view that refreshes often: git is asked again when the
    /// worker's state changed, else at most every [`CHANGES_FRESH`]. `None` outside a
    /// repository.
    pub async fn change_line(&self, row: &WorkerRow) -> Option<String> {
        let now = std::time::Instant::now();
        if let Some((at, since, line)) = self
            .hub
            .changes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&row.id)
        {
            // A turn that ended (or began) may have changed the files: ask again.
            if now.duration_since(*at) < CHANGES_FRESH && *since == row.state_since_ms {
                return Some(line.clone());
            }
        }
        let (dir, base) = (PathBuf::from(&row.cwd), row.base_commit.clone()?);
        row.repo.as_ref()?;
        let m = self.machine_of(row);
        let line = tokio::task::spawn_blocking(move || {
            m.exists(&dir)
                .unwrap_or(false)
                .then(|| worktree::change_line(&m, &dir, &base).ok())
                .flatten()
        })
        .await
        .ok()
        .flatten()?;
        self.hub
            .changes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(row.id.clone(), (now, row.state_since_ms, line.clone()));
        Some(line)
    }

    /// Every worker with its state.
    pub async fn list_workers(&self) -> Result<Vec<WorkerView>, WorkerError> {
        let mut out = Vec::new();
        for row in self.worker_rows().await? {
            out.push(self.view_worker(&row).await?);
        }
        Ok(out)
    }

    /// A close look at a worker.
    pub async fn examine_worker(&self, row: &WorkerRow) -> Result<Examination, WorkerError> {
        self.read_transcript_soon(row).await;
        let view = self.view_worker(row).await?;
        let (dir, base) = (PathBuf::from(&row.cwd), row.base_commit.clone());
        let (in_repo, m) = (row.repo.is_some(), self.machine_of(row));
        let (diff_stat, commits, dirty_files) = tokio::task::spawn_blocking(move || {
            if !in_repo || !m.exists(&dir).unwrap_or(false) {
                return (None, None, None);
            }
            let diff = base
                .as_deref()
                .and_then(|b| worktree::diff_stat(&m, &dir, b).ok());
            let commits = base
                .as_deref()
                .and_then(|b| worktree::commits_since(&m, &dir, b).ok());
            (diff, commits, worktree::dirty_files(&m, &dir).ok())
        })
        .await
        .unwrap_or((None, None, None));
        let turn_ended = view.observation.turn_ended_ms;
        let last_turn = match view.observation.transcript.clone() {
            Some(path) => self
                .transcript_entries(row, &path, 4 << 20)
                .await
                .ok()
                .and_then(|(entries, _)| {
                    let mut last = transcript::turns(&entries).pop()?;
                    last.ended_at(turn_ended);
                    Some(transcript::render_turn(&last))
                }),
            None => None,
        };
        let (screen_tail, attach) = match &view.observation.pane {
            Some(p) => (
                self.terminal
                    .screen(&p.id)
                    .await
                    .ok()
                    .map(|s| last_lines(&s.rows, 6)),
                Some(self.terminal.attach_text(&p.id)),
            ),
            None => (None, None),
        };
        let explanation = crate::explain::explain(&view.observation, &self.hub.settings().bounds);
        Ok(Examination {
            explanation,
            view,
            diff_stat,
            commits,
            dirty_files,
            last_turn,
            screen_tail,
            attach,
        })
    }

    /// Keeps a note on a worker.
    pub async fn annotate_worker(
        &self,
        row: &WorkerRow,
        note: &str,
        author: Option<&str>,
    ) -> Result<Vec<WorkerNote>, WorkerError> {
        check_text("note", note, NOTE_MAX, true)?;
        if note.trim().is_empty() {
            return Err(WorkerError::Invalid(
                "the note is empty: write what to remember".into(),
            ));
        }
        let (id, note, author) = (row.id.clone(), note.to_string(), author.map(str::to_string));
        Ok(self
            .terminal
            .db(move |r| {
                r.annotate_worker(&id, author.as_deref(), &note)?;
                r.worker_notes(&id)
            })
            .await?)
    }

    /// The entries of `row`'s transcript at `path` (its last `max` bytes), read
    /// where the worker runs, and the file's length.
    async fn transcript_entries(
        &self,
        row: &WorkerRow,
        path: &Path,
        max: u64,
    ) -> std::io::Result<(Vec<transcript::Entry>, u64)> {
        let kind = row.agent;
        if let Some(host) = row.spec.host.as_deref() {
            let (len, text) = crate::remote::read_tail(
                self.terminal.backend(),
                host,
                &path.to_string_lossy(),
                max,
            )
            .await
            .ok_or_else(|| std::io::Error::other(format!("it could not be read on host {host}")))?;
            return tokio::task::spawn_blocking(move || (Parser::entries_of(kind, &text), len))
                .await
                .map_err(std::io::Error::other);
        }
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || {
            let entries = Parser::read_all(kind, &path, max)?;
            let raw = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            Ok((entries, raw))
        })
        .await
        .map_err(std::io::Error::other)?
    }

    /// `turns` turns of the worker's transcript, `offset` turns back from the last,
    /// reduced: tool calls summarised, the assistant's final messages whole.
    pub async fn read_worker_logs(
        &self,
        row: &WorkerRow,
        turns: usize,
        offset: usize,
    ) -> Result<LogPage, WorkerError> {
        let seen = self.observe(row, false).await?;
        let kind = row.agent;
        let Some(path) = seen.transcript.clone() else {
            let why = match kind {
                AgentKind::Custom => "a custom agent keeps no transcript cohort can read: read its screen with read (mode \"screen\")".to_string(),
                AgentKind::Codex => "Codex writes its rollout file when the first turn starts: send a message first".into(),
                _ => "no transcript yet: the agent writes it with its first prompt".into(),
            };
            return Ok(LogPage {
                text: String::new(),
                meta: format!("[{}: {why}]", row.name),
                total: 0,
            });
        };
        let (entries, raw) = self
            .transcript_entries(row, &path, 64 << 20)
            .await
            .map_err(|source| WorkerError::Io {
                what: "could not read the transcript",
                path: path.clone(),
                source,
            })?;
        let mut all = transcript::turns(&entries);
        if let Some(last) = all.last_mut() {
            last.ended_at(seen.turn_ended_ms);
        }
        Ok(page(&row.name, &path, &all, turns.max(1), offset, raw))
    }

    /// The worktrees of `repo` (or of every repository with workers), with the worker
    /// using each; with `remove_orphans`, cohort's clean worktrees no live worker uses
    /// are removed (their branches stay).
    pub async fn list_worktrees(
        &self,
        repo: Option<&Path>,
        remove_orphans: bool,
    ) -> Result<Vec<WorktreeEntry>, WorkerError> {
        // This machine's repositories. Every worker counts as a worktree's user (a
        // "remote" host may share this file system: its worker's worktree is no
        // orphan).
        let rows = self.worker_rows().await?;
        let local = Machine::Local;
        let mut repos: Vec<PathBuf> = match repo {
            Some(r) => vec![worktree::main_checkout(&local, r).ok_or_else(|| {
                WorkerError::Invalid(format!("{} is not in a git repository", r.display()))
            })?],
            None => rows
                .iter()
                .filter(|w| w.spec.host.is_none())
                .filter_map(|w| w.repo.as_ref().map(PathBuf::from))
                .collect(),
        };
        repos.sort();
        repos.dedup();
        let mut out = Vec::new();
        for repo in repos {
            let rows = rows.clone();
            let listed =
                tokio::task::spawn_blocking(move || -> Result<Vec<WorktreeEntry>, WorkerError> {
                    let mut out = Vec::new();
                    let local = Machine::Local;
                    for w in worktree::list(&local, &repo)?
                        .into_iter()
                        .filter(|w| !w.main)
                    {
                        // A worker working in a worktree it was not given (a merge's
                        // conflict handed to it) holds it as much as its own; paths
                        // are compared resolved (a repository reached by a symlink).
                        let same = |p: &str| {
                            Path::new(p) == w.path
                                || std::fs::canonicalize(p).is_ok_and(|p| {
                                    std::fs::canonicalize(&w.path).is_ok_and(|w| w == p)
                                })
                        };
                        let worker = rows
                            .iter()
                            .find(|r| {
                                [r.worktree.as_deref(), Some(r.cwd.as_str())]
                                    .into_iter()
                                    .flatten()
                                    .any(same)
                            })
                            .map(|r| r.name.clone());
                        let ours = w.path.starts_with(repo.join(worktree::WORKTREES_DIR));
                        let dirty = if w.path.exists() {
                            worktree::dirty_files(&local, &w.path).ok()
                        } else {
                            Some(0)
                        };
                        let orphan = ours && worker.is_none();
                        let mut removed = false;
                        if orphan && remove_orphans && dirty == Some(0) {
                            removed = worktree::remove(&local, &repo, &w.path, false).is_ok();
                        }
                        out.push(WorktreeEntry {
                            repo: repo.clone(),
                            path: w.path,
                            branch: w.branch,
                            worker,
                            dirty_files: dirty,
                            orphan,
                            removed,
                        });
                    }
                    Ok(out)
                })
                .await
                .map_err(|e| WorkerError::Invalid(format!("git could not be run: {e}")))??;
            out.extend(listed);
        }
        Ok(out)
    }
}

/// A page of turns with its meta line.
fn page(
    name: &str,
    path: &Path,
    all: &[transcript::Turn],
    turns: usize,
    offset: usize,
    raw_bytes: u64,
) -> LogPage {
    let total = all.len();
    if total == 0 {
        return LogPage {
            text: String::new(),
            meta: format!("[{name}: no turns yet in {}]", path.display()),
            total,
        };
    }
    let end = total.saturating_sub(offset);
    if end == 0 {
        return LogPage {
            text: String::new(),
            meta: format!("[{name}: offset {offset} is past the first of {total} turns: use a smaller offset]"),
            total,
        };
    }
    let start = end.saturating_sub(turns);
    let text: String = all[start..end]
        .iter()
        .map(transcript::render_turn)
        .collect::<Vec<_>>()
        .join("\n");
    let shown_tokens = cohort_reducers::estimate_tokens(&text);
    let raw_tokens = (raw_bytes as usize).div_ceil(4);
    let mut meta = format!(
        "[turns {}-{} of {total}; shown {} lines, {shown_tokens}/{raw_tokens} tokens (transcript: tool calls summarised, final messages whole)",
        start + 1,
        end,
        text.lines().count(),
    );
    if start > 0 {
        meta.push_str(&format!(
            "; earlier turns: read_worker_logs offset={}",
            offset + (end - start)
        ));
    }
    meta.push_str(&format!("; file {}]", path.display()));
    LogPage { text, meta, total }
}

/// Text fit for a note: control characters (a command's escape or line break)
/// as spaces, at most 900 characters.
pub(crate) fn note_text(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(900)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::TurnOutcome;

    #[test]
    fn pages_count_turns_back_from_the_last() {
        let turns: Vec<transcript::Turn> = (1..=5)
            .map(|n| transcript::Turn {
                number: n,
                prompt: format!("p{n}"),
                outcome: Some(TurnOutcome::Answered),
                ..transcript::Turn::default()
            })
            .collect();
        let p = page("w", Path::new("/t"), &turns, 2, 0, 4000);
        assert!(p.text.contains("> p4") && p.text.contains("> p5") && !p.text.contains("> p3"));
        assert!(p.meta.starts_with("[turns 4-5 of 5;"), "{}", p.meta);
        assert!(p.meta.contains("offset=2"), "{}", p.meta);
        let back = page("w", Path::new("/t"), &turns, 2, 2, 4000);
        assert!(back.meta.starts_with("[turns 2-3 of 5;"));
        assert!(page("w", Path::new("/t"), &turns, 1, 9, 0)
            .meta
            .contains("past the first"));
    }
}
