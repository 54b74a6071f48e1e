//! The registry's worker tables: each worker (an agent CLI cohort launched or
//! adopted), the manager's notes on it, and the messages held for it until it is idle.
//!
//! The tables are created with `CREATE TABLE IF NOT EXISTS` on every open
//! ([`WORKER_SCHEMA`]), after the numbered migrations, so they come and go with this
//! feature without a schema version of their own. A worker's row outlives its pane
//! (the pane dies with a reboot; the row is what a restart resumes from) and is
//! removed only when the worker is closed.

use rusqlite::{params, OptionalExtension, Row};
use serde::{Deserialize, Serialize};

use super::{now, sql, Registry, RegistryError};

/// The worker tables, applied on every open after the numbered migrations.
pub(crate) const WORKER_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS workers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL DEFAULT '',
    server TEXT NOT NULL,
    agent TEXT NOT NULL,
    spec TEXT NOT NULL,
    cwd TEXT NOT NULL,
    repo TEXT,
    worktree TEXT,
    branch TEXT,
    base_commit TEXT,
    worktree_owned INTEGER NOT NULL DEFAULT 0,
    agent_session TEXT,
    transcript TEXT,
    team TEXT,
    role TEXT,
    colour TEXT,
    hooks INTEGER NOT NULL DEFAULT 0,
    owner_pid INTEGER NOT NULL DEFAULT 0,
    owner_tag TEXT NOT NULL DEFAULT '',
    created INTEGER NOT NULL,
    launched_ms INTEGER NOT NULL DEFAULT 0,
    input_ready INTEGER NOT NULL DEFAULT 0,
    last_prompt_ms INTEGER,
    state TEXT NOT NULL DEFAULT 'spawning',
    reason TEXT NOT NULL DEFAULT '',
    state_since_ms INTEGER NOT NULL DEFAULT 0,
    setup_log TEXT
);
CREATE TABLE IF NOT EXISTS worker_notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    worker_id TEXT NOT NULL REFERENCES workers(id) ON DELETE CASCADE,
    created INTEGER NOT NULL,
    author TEXT,
    note TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS worker_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    worker_id TEXT NOT NULL REFERENCES workers(id) ON DELETE CASCADE,
    created INTEGER NOT NULL,
    text TEXT NOT NULL,
    command INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'held',
    taken_by TEXT,
    sent_ms INTEGER,
    error TEXT
);
CREATE INDEX IF NOT EXISTS worker_messages_pending ON worker_messages (worker_id, status);
";

/// One worker as the registry keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerRow {
    /// Persistent id (a UUID); names the worker's state directory.
    pub id: String,
    /// Unique human name (also its session's and agent's name).
    pub name: String,
    /// Persistent id of its cohort session (stamped on the pane).
    pub session_id: String,
    /// The terminal server its pane lives on.
    pub server: String,
    /// Which agent CLI: `claude`, `codex`, `gemini`, `aider`, `custom`.
    pub agent: String,
    /// How it was launched (JSON), enough to launch it again.
    pub spec: String,
    /// Its working directory.
    pub cwd: String,
    /// The repository its worktree belongs to.
    pub repo: Option<String>,
    /// Its git worktree, when it has one of its own.
    pub worktree: Option<String>,
    /// The worktree's branch.
    pub branch: Option<String>,
    /// The commit the branch started from (for `git diff --stat`).
    pub base_commit: Option<String>,
    /// Whether cohort created the worktree (and may remove it).
    pub worktree_owned: bool,
    /// The agent's own session id (Claude's `--session-id`, Codex's thread id).
    pub agent_session: Option<String>,
    /// The agent's transcript file, once known.
    pub transcript: Option<String>,
    /// Team.
    pub team: Option<String>,
    /// Role (free text).
    pub role: Option<String>,
    /// Colour as `#rrggbb`.
    pub colour: Option<String>,
    /// Whether hooks report to cohort.
    pub hooks: bool,
    /// Pid of the cohort process that manages it.
    pub owner_pid: i64,
    /// Which instance of that process (pids are reused).
    pub owner_tag: String,
    /// Unix seconds.
    pub created: i64,
    /// When the agent was last launched (Unix ms).
    pub launched_ms: i64,
    /// Whether the agent's input was seen taking keys.
    pub input_ready: bool,
    /// When cohort last submitted a prompt (Unix ms).
    pub last_prompt_ms: Option<i64>,
    /// Last assessed state.
    pub state: String,
    /// Why.
    pub reason: String,
    /// Since when (Unix ms).
    pub state_since_ms: i64,
    /// The setup script's output, when one ran.
    pub setup_log: Option<String>,
}

/// A manager's note on a worker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerNote {
    /// Unix seconds.
    pub created: i64,
    /// Who wrote it.
    pub author: Option<String>,
    /// The note.
    pub note: String,
}

/// A message waiting for its worker to be idle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldMessage {
    /// Id (delivery order).
    pub id: i64,
    /// The worker.
    pub worker_id: String,
    /// Unix seconds.
    pub created: i64,
    /// The text.
    pub text: String,
    /// Whether a leading `/` or `!` is meant as the CLI's command.
    pub command: bool,
    /// `held`, `sending`, `sent`, `failed`.
    pub status: String,
    /// When it was submitted (Unix ms).
    pub sent_ms: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
}

const WORKER_COLUMNS: &str =
    "SELECT id, name, session_id, server, agent, spec, cwd, repo, worktree, branch,
    base_commit, worktree_owned, agent_session, transcript, team, role, colour, hooks, owner_pid,
    owner_tag, created, launched_ms, input_ready, last_prompt_ms, state, reason, state_since_ms,
    setup_log FROM workers";

fn worker_row(r: &Row<'_>) -> rusqlite::Result<WorkerRow> {
    Ok(WorkerRow {
        id: r.get(0)?,
        name: r.get(1)?,
        session_id: r.get(2)?,
        server: r.get(3)?,
        agent: r.get(4)?,
        spec: r.get(5)?,
        cwd: r.get(6)?,
        repo: r.get(7)?,
        worktree: r.get(8)?,
        branch: r.get(9)?,
        base_commit: r.get(10)?,
        worktree_owned: r.get(11)?,
        agent_session: r.get(12)?,
        transcript: r.get(13)?,
        team: r.get(14)?,
        role: r.get(15)?,
        colour: r.get(16)?,
        hooks: r.get(17)?,
        owner_pid: r.get(18)?,
        owner_tag: r.get(19)?,
        created: r.get(20)?,
        launched_ms: r.get(21)?,
        input_ready: r.get(22)?,
        last_prompt_ms: r.get(23)?,
        state: r.get(24)?,
        reason: r.get(25)?,
        state_since_ms: r.get(26)?,
        setup_log: r.get(27)?,
    })
}

const MESSAGE_COLUMNS: &str =
    "SELECT id, worker_id, created, text, command, status, sent_ms, error FROM worker_messages";

fn message_row(r: &Row<'_>) -> rusqlite::Result<HeldMessage> {
    Ok(HeldMessage {
        id: r.get(0)?,
        worker_id: r.get(1)?,
        created: r.get(2)?,
        text: r.get(3)?,
        command: r.get(4)?,
        status: r.get(5)?,
        sent_ms: r.get(6)?,
        error: r.get(7)?,
    })
}

impl Registry {
    /// Records a new worker; refused when its name is taken by another worker.
    pub fn insert_worker(&self, w: &WorkerRow) -> Result<(), RegistryError> {
        self.write(|tx| {
            let taken: Option<String> = tx
                .query_row("SELECT id FROM workers WHERE name = ?1", [&w.name], |r| r.get(0))
                .optional()
                .map_err(sql(self.path()))?;
            if taken.is_some_and(|id| id != w.id) {
                return Err(RegistryError::Conflict(format!(
                    "a worker named {:?} already exists: pick another name, or close that worker first",
                    w.name
                )));
            }
            tx.execute(
                "INSERT OR REPLACE INTO workers (id, name, session_id, server, agent, spec, cwd, repo,
                     worktree, branch, base_commit, worktree_owned, agent_session, transcript, team,
                     role, colour, hooks, owner_pid, owner_tag, created, launched_ms, input_ready,
                     last_prompt_ms, state, reason, state_since_ms, setup_log)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                     ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)",
                params![
                    w.id,
                    w.name,
                    w.session_id,
                    w.server,
                    w.agent,
                    w.spec,
                    w.cwd,
                    w.repo,
                    w.worktree,
                    w.branch,
                    w.base_commit,
                    w.worktree_owned,
                    w.agent_session,
                    w.transcript,
                    w.team,
                    w.role,
                    w.colour,
                    w.hooks,
                    w.owner_pid,
                    w.owner_tag,
                    if w.created == 0 { now() } else { w.created },
                    w.launched_ms,
                    w.input_ready,
                    w.last_prompt_ms,
                    w.state,
                    w.reason,
                    w.state_since_ms,
                    w.setup_log,
                ],
            )
            .map_err(sql(self.path()))?;
            Ok(())
        })
    }

    /// Every worker, oldest first.
    pub fn workers(&self) -> Result<Vec<WorkerRow>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare(&format!("{WORKER_COLUMNS} ORDER BY created, name"))?;
            let rows = stmt.query_map([], worker_row)?.collect();
            rows
        })
    }

    /// The worker named `name` (or with that id).
    pub fn worker(&self, name_or_id: &str) -> Result<Option<WorkerRow>, RegistryError> {
        self.with(|c| {
            c.query_row(
                &format!("{WORKER_COLUMNS} WHERE name = ?1 OR id = ?1 LIMIT 1"),
                [name_or_id],
                worker_row,
            )
            .optional()
        })
    }

    /// Changes a worker's fields with `update` (read, changed, written in one
    /// transaction); returns the row as written, or `None` when there is no such worker.
    pub fn update_worker(
        &self,
        id: &str,
        mut update: impl FnMut(&mut WorkerRow),
    ) -> Result<Option<WorkerRow>, RegistryError> {
        self.write(|tx| {
            let Some(mut row) = tx
                .query_row(&format!("{WORKER_COLUMNS} WHERE id = ?1"), [id], worker_row)
                .optional()
                .map_err(sql(self.path()))?
            else {
                return Ok(None);
            };
            update(&mut row);
            tx.execute(
                "UPDATE workers SET name = ?2, session_id = ?3, server = ?4, agent = ?5, spec = ?6,
                     cwd = ?7, repo = ?8, worktree = ?9, branch = ?10, base_commit = ?11,
                     worktree_owned = ?12, agent_session = ?13, transcript = ?14, team = ?15,
                     role = ?16, colour = ?17, hooks = ?18, owner_pid = ?19, owner_tag = ?20,
                     launched_ms = ?21, input_ready = ?22, last_prompt_ms = ?23, state = ?24,
                     reason = ?25, state_since_ms = ?26, setup_log = ?27
                 WHERE id = ?1",
                params![
                    row.id,
                    row.name,
                    row.session_id,
                    row.server,
                    row.agent,
                    row.spec,
                    row.cwd,
                    row.repo,
                    row.worktree,
                    row.branch,
                    row.base_commit,
                    row.worktree_owned,
                    row.agent_session,
                    row.transcript,
                    row.team,
                    row.role,
                    row.colour,
                    row.hooks,
                    row.owner_pid,
                    row.owner_tag,
                    row.launched_ms,
                    row.input_ready,
                    row.last_prompt_ms,
                    row.state,
                    row.reason,
                    row.state_since_ms,
                    row.setup_log,
                ],
            )
            .map_err(sql(self.path()))?;
            Ok(Some(row))
        })
    }

    /// Forgets a worker, with its notes and messages; false when there was none.
    pub fn remove_worker(&self, id: &str) -> Result<bool, RegistryError> {
        self.write(|tx| {
            Ok(tx
                .execute("DELETE FROM workers WHERE id = ?1", [id])
                .map_err(sql(self.path()))?
                > 0)
        })
    }

    /// Adds a note to a worker.
    pub fn annotate_worker(
        &self,
        id: &str,
        author: Option<&str>,
        note: &str,
    ) -> Result<(), RegistryError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO worker_notes (worker_id, created, author, note) VALUES (?1, ?2, ?3, ?4)",
                params![id, now(), author, note],
            )
            .map_err(sql(self.path()))?;
            Ok(())
        })
    }

    /// A worker's notes, oldest first.
    pub fn worker_notes(&self, id: &str) -> Result<Vec<WorkerNote>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare(
                "SELECT created, author, note FROM worker_notes WHERE worker_id = ?1 ORDER BY id",
            )?;
            let rows = stmt
                .query_map([id], |r| {
                    Ok(WorkerNote {
                        created: r.get(0)?,
                        author: r.get(1)?,
                        note: r.get(2)?,
                    })
                })?
                .collect();
            rows
        })
    }

    /// Holds a message for a worker; returns its id.
    pub fn hold_message(&self, id: &str, text: &str, command: bool) -> Result<i64, RegistryError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO worker_messages (worker_id, created, text, command) VALUES (?1, ?2, ?3, ?4)",
                params![id, now(), text, command],
            )
            .map_err(sql(self.path()))?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// The oldest held message of a worker, taken for delivery by `taker` (so another
    /// process does not deliver it too); `None` when nothing is held.
    pub fn take_held_message(
        &self,
        id: &str,
        taker: &str,
    ) -> Result<Option<HeldMessage>, RegistryError> {
        self.write(|tx| {
            let found = tx
                .query_row(
                    &format!(
                        "{MESSAGE_COLUMNS} WHERE worker_id = ?1 AND status = 'held' ORDER BY id LIMIT 1"
                    ),
                    [id],
                    message_row,
                )
                .optional()
                .map_err(sql(self.path()))?;
            if let Some(m) = &found {
                tx.execute(
                    "UPDATE worker_messages SET status = 'sending', taken_by = ?2 WHERE id = ?1",
                    params![m.id, taker],
                )
                .map_err(sql(self.path()))?;
            }
            Ok(found.map(|mut m| {
                m.status = "sending".into();
                m
            }))
        })
    }

    /// Records how a message's delivery ended: sent at `sent_ms`, or failed with `error`.
    pub fn finish_message(
        &self,
        message: i64,
        sent_ms: Option<i64>,
        error: Option<&str>,
    ) -> Result<(), RegistryError> {
        let status = if error.is_some() { "failed" } else { "sent" };
        self.write(|tx| {
            tx.execute(
                "UPDATE worker_messages SET status = ?2, sent_ms = ?3, error = ?4 WHERE id = ?1",
                params![message, status, sent_ms, error],
            )
            .map_err(sql(self.path()))?;
            Ok(())
        })
    }

    /// Puts messages a process took but never finished (it died) back to `held`.
    pub fn requeue_messages(&self, id: &str) -> Result<usize, RegistryError> {
        self.write(|tx| {
            tx.execute(
                "UPDATE worker_messages SET status = 'held', taken_by = NULL
                 WHERE worker_id = ?1 AND status = 'sending'",
                [id],
            )
            .map_err(sql(self.path()))
        })
    }

    /// A message by id.
    pub fn message(&self, message: i64) -> Result<Option<HeldMessage>, RegistryError> {
        self.with(|c| {
            c.query_row(
                &format!("{MESSAGE_COLUMNS} WHERE id = ?1"),
                [message],
                message_row,
            )
            .optional()
        })
    }

    /// A worker's messages still waiting (held or being sent), oldest first.
    pub fn pending_messages(&self, id: &str) -> Result<Vec<HeldMessage>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare(&format!(
                "{MESSAGE_COLUMNS} WHERE worker_id = ?1 AND status IN ('held', 'sending') ORDER BY id"
            ))?;
            let rows = stmt.query_map([id], message_row)?.collect();
            rows
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, name: &str) -> WorkerRow {
        WorkerRow {
            id: id.into(),
            name: name.into(),
            server: "-L cohort".into(),
            agent: "claude".into(),
            spec: "{}".into(),
            cwd: "/w".into(),
            state: "spawning".into(),
            ..WorkerRow::default()
        }
    }

    #[test]
    fn workers_are_kept_updated_and_named_once() {
        let dir = tempfile::tempdir().unwrap();
        let r = Registry::open(&dir.path().join("r.db")).unwrap();
        r.insert_worker(&row("a", "Groucho")).unwrap();
        assert!(r.insert_worker(&row("b", "Groucho")).is_err());
        let updated = r
            .update_worker("a", |w| {
                w.state = "idle".into();
                w.transcript = Some("/t.jsonl".into());
            })
            .unwrap()
            .unwrap();
        assert_eq!(updated.state, "idle");
        assert_eq!(
            r.worker("Groucho").unwrap().unwrap().transcript.as_deref(),
            Some("/t.jsonl")
        );
        assert_eq!(r.update_worker("zz", |_| {}).unwrap(), None);
        r.annotate_worker("a", Some("lead"), "watch the tests")
            .unwrap();
        assert_eq!(r.worker_notes("a").unwrap()[0].note, "watch the tests");
        assert!(r.remove_worker("a").unwrap());
        assert!(r.worker_notes("a").unwrap().is_empty());
    }

    #[test]
    fn held_messages_go_out_once_in_order_and_survive_a_dead_taker() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let (one, two) = (
            Registry::open(&path).unwrap(),
            Registry::open(&path).unwrap(),
        );
        one.insert_worker(&row("a", "Harpo")).unwrap();
        let first = one.hold_message("a", "first", false).unwrap();
        one.hold_message("a", "second", false).unwrap();
        let taken = one.take_held_message("a", "p1").unwrap().unwrap();
        assert_eq!((taken.id, taken.text.as_str()), (first, "first"));
        // Another process takes the next one, not the same.
        assert_eq!(
            two.take_held_message("a", "p2").unwrap().unwrap().text,
            "second"
        );
        assert_eq!(two.take_held_message("a", "p2").unwrap(), None);
        // The first taker died: its message goes back to the queue.
        assert_eq!(two.requeue_messages("a").unwrap(), 2);
        let again = two.take_held_message("a", "p2").unwrap().unwrap();
        assert_eq!(again.id, first);
        two.finish_message(again.id, Some(5), None).unwrap();
        assert_eq!(one.message(first).unwrap().unwrap().status, "sent");
        assert_eq!(one.pending_messages("a").unwrap().len(), 1);
    }
}
