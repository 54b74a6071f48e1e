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

use crate::agent::{AgentKind, LaunchSpec};
use crate::state::WorkerState;

use cohort_terminal::registry::{now, sql, Registry, RegistryError};

/// The worker tables, applied on every open after the numbered migrations.
pub const WORKER_SCHEMA: &str = "
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
    /// Which agent CLI.
    pub agent: AgentKind,
    /// How it was launched, enough to launch it again (kept as JSON).
    pub spec: LaunchSpec,
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
    pub state: WorkerState,
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

/// Where a held message is on its way to its worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeldStatus {
    /// Waiting until the worker is idle.
    #[default]
    Held,
    /// Taken by a process that is submitting it.
    Sending,
    /// Submitted.
    Sent,
    /// Submitting it failed; the message's error says why.
    Failed,
}

impl HeldStatus {
    /// The name stored in the registry and used in results.
    pub fn name(self) -> &'static str {
        match self {
            HeldStatus::Held => "held",
            HeldStatus::Sending => "sending",
            HeldStatus::Sent => "sent",
            HeldStatus::Failed => "failed",
        }
    }

    /// The status named `name` (an unknown name reads as failed: it is not delivered).
    pub fn parse(name: &str) -> HeldStatus {
        [HeldStatus::Held, HeldStatus::Sending, HeldStatus::Sent]
            .into_iter()
            .find(|s| s.name() == name)
            .unwrap_or(HeldStatus::Failed)
    }
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
    /// Where it is on its way.
    pub status: HeldStatus,
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
        agent: AgentKind::parse(&r.get::<_, String>(4)?).unwrap_or(AgentKind::Custom),
        // A spec this cohort cannot read (written by another version) launches as
        // the plain CLI of its kind.
        spec: serde_json::from_str(&r.get::<_, String>(5)?).unwrap_or_default(),
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
        state: WorkerState::parse(&r.get::<_, String>(24)?).unwrap_or_default(),
        reason: r.get(25)?,
        state_since_ms: r.get(26)?,
        setup_log: r.get(27)?,
    })
}

/// A launch spec as the registry keeps it.
fn spec_json(spec: &LaunchSpec) -> String {
    serde_json::to_string(spec).expect("a launch spec serialises")
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
        status: HeldStatus::parse(&r.get::<_, String>(5)?),
        sent_ms: r.get(6)?,
        error: r.get(7)?,
    })
}

/// The workers' tables in the shared registry: workers, the notes on them, the messages
/// held for them.
pub trait WorkerTables {
    /// Records a new worker; refused when its name is taken by another worker.
    fn insert_worker(&self, w: &WorkerRow) -> Result<(), RegistryError>;

    /// Every worker, oldest first.
    fn workers(&self) -> Result<Vec<WorkerRow>, RegistryError>;

    /// The worker named `name` (or with that id).
    fn worker(&self, name_or_id: &str) -> Result<Option<WorkerRow>, RegistryError>;

    /// Changes a worker's fields with `update` (read, changed, written in one
    /// transaction); returns the row as written, or `None` when there is no such worker.
    fn update_worker(
        &self,
        id: &str,
        update: impl FnMut(&mut WorkerRow),
    ) -> Result<Option<WorkerRow>, RegistryError>;

    /// Forgets a worker, with its notes and messages; false when there was none.
    fn remove_worker(&self, id: &str) -> Result<bool, RegistryError>;

    /// Adds a note to a worker.
    fn annotate_worker(
        &self,
        id: &str,
        author: Option<&str>,
        note: &str,
    ) -> Result<(), RegistryError>;

    /// A worker's notes, oldest first.
    fn worker_notes(&self, id: &str) -> Result<Vec<WorkerNote>, RegistryError>;

    /// Holds a message for a worker; returns its id.
    fn hold_message(&self, id: &str, text: &str, command: bool) -> Result<i64, RegistryError>;

    /// The oldest held message of a worker, taken for delivery by `taker` (so another
    /// process does not deliver it too); `None` when nothing is held.
    fn take_held_message(
        &self,
        id: &str,
        taker: &str,
    ) -> Result<Option<HeldMessage>, RegistryError>;

    /// Records how a message's delivery ended: sent at `sent_ms`, or failed with `error`.
    fn finish_message(
        &self,
        message: i64,
        sent_ms: Option<i64>,
        error: Option<&str>,
    ) -> Result<(), RegistryError>;

    /// Puts messages a process took but never finished (it died) back to `held`.
    fn requeue_messages(&self, id: &str) -> Result<usize, RegistryError>;

    /// A message by id.
    fn message(&self, message: i64) -> Result<Option<HeldMessage>, RegistryError>;

    /// A worker's messages still waiting (held or being sent), oldest first.
    fn pending_messages(&self, id: &str) -> Result<Vec<HeldMessage>, RegistryError>;
}

impl WorkerTables for Registry {
    fn insert_worker(&self, w: &WorkerRow) -> Result<(), RegistryError> {
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
                    w.agent.name(),
                    spec_json(&w.spec),
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
                    w.state.name(),
                    w.reason,
                    w.state_since_ms,
                    w.setup_log,
                ],
            )
            .map_err(sql(self.path()))?;
            Ok(())
        })
    }

    fn workers(&self) -> Result<Vec<WorkerRow>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare(&format!("{WORKER_COLUMNS} ORDER BY created, name"))?;
            let rows = stmt.query_map([], worker_row)?.collect();
            rows
        })
    }

    fn worker(&self, name_or_id: &str) -> Result<Option<WorkerRow>, RegistryError> {
        self.with(|c| {
            c.query_row(
                &format!("{WORKER_COLUMNS} WHERE name = ?1 OR id = ?1 LIMIT 1"),
                [name_or_id],
                worker_row,
            )
            .optional()
        })
    }

    fn update_worker(
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
                    row.agent.name(),
                    spec_json(&row.spec),
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
                    row.state.name(),
                    row.reason,
                    row.state_since_ms,
                    row.setup_log,
                ],
            )
            .map_err(sql(self.path()))?;
            Ok(Some(row))
        })
    }

    fn remove_worker(&self, id: &str) -> Result<bool, RegistryError> {
        self.write(|tx| {
            Ok(tx
                .execute("DELETE FROM workers WHERE id = ?1", [id])
                .map_err(sql(self.path()))?
                > 0)
        })
    }

    fn annotate_worker(
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

    fn worker_notes(&self, id: &str) -> Result<Vec<WorkerNote>, RegistryError> {
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

    fn hold_message(&self, id: &str, text: &str, command: bool) -> Result<i64, RegistryError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO worker_messages (worker_id, created, text, command) VALUES (?1, ?2, ?3, ?4)",
                params![id, now(), text, command],
            )
            .map_err(sql(self.path()))?;
            Ok(tx.last_insert_rowid())
        })
    }

    fn take_held_message(
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
                m.status = HeldStatus::Sending;
                m
            }))
        })
    }

    fn finish_message(
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

    fn requeue_messages(&self, id: &str) -> Result<usize, RegistryError> {
        self.write(|tx| {
            tx.execute(
                "UPDATE worker_messages SET status = 'held', taken_by = NULL
                 WHERE worker_id = ?1 AND status = 'sending'",
                [id],
            )
            .map_err(sql(self.path()))
        })
    }

    fn message(&self, message: i64) -> Result<Option<HeldMessage>, RegistryError> {
        self.with(|c| {
            c.query_row(
                &format!("{MESSAGE_COLUMNS} WHERE id = ?1"),
                [message],
                message_row,
            )
            .optional()
        })
    }

    fn pending_messages(&self, id: &str) -> Result<Vec<HeldMessage>, RegistryError> {
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
            agent: AgentKind::Claude,
            spec: LaunchSpec::default(),
            cwd: "/w".into(),
            state: WorkerState::Spawning,
            ..WorkerRow::default()
        }
    }

    /// A registry with the worker tables, as `Workers::new` makes it.
    fn open(path: &std::path::Path) -> Registry {
        let registry = Registry::open(path).unwrap();
        registry.add_schema(WORKER_SCHEMA).unwrap();
        registry
    }

    #[test]
    fn workers_are_kept_updated_and_named_once() {
        let dir = tempfile::tempdir().unwrap();
        let r = open(&dir.path().join("r.db"));
        r.insert_worker(&row("a", "Groucho")).unwrap();
        assert!(r.insert_worker(&row("b", "Groucho")).is_err());
        let updated = r
            .update_worker("a", |w| {
                w.state = WorkerState::Idle;
                w.transcript = Some("/t.jsonl".into());
            })
            .unwrap()
            .unwrap();
        assert_eq!(updated.state, WorkerState::Idle);
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
        let (one, two) = (open(&path), open(&path));
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
        assert_eq!(
            one.message(first).unwrap().unwrap().status,
            HeldStatus::Sent
        );
        assert_eq!(one.pending_messages("a").unwrap().len(), 1);
    }
}
