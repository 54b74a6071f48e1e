//! The registry's orchestration tables: watchers and who runs them, the last state
//! of every agent, the last command end of every session, team colours, roles, and
//! each reader's place in the shared notification queue (with the queue's bound).
//!
//! The tables are created with `CREATE TABLE IF NOT EXISTS` after the numbered
//! migrations, so a registry written by an older cohort simply gains them.

use rusqlite::{params, OptionalExtension};

use cohort_terminal::registry::{now, sql, Registry, RegistryError};
use serde::{Deserialize, Serialize};

/// The orchestration tables (idempotent; the notification queue's table keeps the
/// shape it had when it was the registry's first version).
pub const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS notifications (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        created INTEGER NOT NULL,
        source TEXT NOT NULL,
        target TEXT NOT NULL,
        kind TEXT NOT NULL,
        message TEXT NOT NULL,
        delivered INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE IF NOT EXISTS orch_watches (
        id TEXT PRIMARY KEY,
        spec TEXT NOT NULL,
        holder_pid INTEGER NOT NULL,
        holder_start TEXT,
        created INTEGER NOT NULL,
        hits INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE IF NOT EXISTS orch_agent_states (
        agent TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        reason TEXT NOT NULL,
        since INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS orch_command_ends (
        session_id TEXT PRIMARY KEY,
        exit_status INTEGER,
        at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS orch_team_colours (
        team TEXT PRIMARY KEY,
        hue REAL NOT NULL
    );
    CREATE TABLE IF NOT EXISTS orch_roles (
        name TEXT PRIMARY KEY,
        spec TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS orch_notification_reads (
        reader TEXT PRIMARY KEY,
        last_id INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS orch_notifications_by_target ON notifications (target, id);
";

/// A notification for an agent or a human.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationRecord {
    /// Id.
    pub id: i64,
    /// Unix seconds.
    pub created: i64,
    /// Who sent it.
    pub source: String,
    /// Who it is for (agent, team or session name).
    pub target: String,
    /// Kind: "access_request", "info"…
    pub kind: String,
    /// The message.
    pub message: String,
}

/// Who a notification for everyone is addressed to.
pub const EVERYONE: &str = "*";

/// Notifications kept at most; the oldest go first.
pub const NOTIFICATIONS_KEPT: i64 = 2000;

/// Notifications older than this many seconds are dropped (a week).
pub const NOTIFICATION_AGE_MAX: i64 = 7 * 86_400;

/// A watcher as stored: its spec (JSON) and the process running it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchRow {
    /// Id.
    pub id: String,
    /// The spec, as JSON.
    pub spec: String,
    /// The process that runs it.
    pub holder_pid: i64,
    /// That process's start time (tells a reused pid from the holder).
    pub holder_start: Option<String>,
    /// Unix seconds.
    pub created: i64,
    /// Times it fired.
    pub hits: i64,
}

/// An agent's last known state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentStateRow {
    /// The agent.
    pub agent: String,
    /// Its state.
    pub state: String,
    /// Why.
    pub reason: String,
    /// Unix seconds since it holds.
    pub since: i64,
}

/// A session's last command end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandEndRow {
    /// The session's persistent id.
    pub session_id: String,
    /// Its exit status, when reported.
    pub exit_status: Option<i32>,
    /// Unix seconds.
    pub at: i64,
}

/// The orchestration's tables in the shared registry: notifications, watchers, agents'
/// states, command ends, roles and readers' places in the notification queue.
pub trait OrchestrationTables {
    // ----- notifications -----
    /// Leaves a notification.
    fn notify(
        &self,
        source: &str,
        target: &str,
        kind: &str,
        message: &str,
    ) -> Result<i64, RegistryError>;

    /// Notifications not yet handed out, for anyone, oldest first (they stay pending).
    fn pending_notifications(&self) -> Result<Vec<NotificationRecord>, RegistryError>;

    // ----- watchers -----
    /// Stores a watcher run by the process `pid` (started at `start`).
    fn add_watch(
        &self,
        id: &str,
        spec: &str,
        pid: i64,
        start: Option<&str>,
    ) -> Result<(), RegistryError>;

    /// Every watcher, oldest first.
    fn watches(&self) -> Result<Vec<WatchRow>, RegistryError>;

    /// Removes a watcher; false when there was none.
    fn remove_watch(&self, id: &str) -> Result<bool, RegistryError>;

    /// Takes over every watcher whose holder is gone (`alive` says which holders
    /// still run) for the process `pid`; returns the watchers `pid` holds now.
    fn claim_watches(
        &self,
        pid: i64,
        start: Option<&str>,
        alive: impl Fn(i64, Option<&str>) -> bool,
    ) -> Result<Vec<WatchRow>, RegistryError>;

    /// Counts `hits` hits of a watcher; false when the watcher is gone (removed by
    /// another process).
    fn count_watch_hits(&self, id: &str, hits: u64) -> Result<bool, RegistryError>;

    // ----- agent states and command ends -----
    /// Records an agent's state.
    fn set_agent_state(&self, agent: &str, state: &str, reason: &str) -> Result<(), RegistryError>;

    /// Every agent's last recorded state.
    fn agent_states(&self) -> Result<Vec<AgentStateRow>, RegistryError>;

    /// Records the end of the last command in session `id`.
    fn set_command_end(&self, id: &str, exit_status: Option<i32>) -> Result<(), RegistryError>;

    /// Every session's last command end.
    fn command_ends(&self) -> Result<Vec<CommandEndRow>, RegistryError>;

    // ----- roles -----
    /// Stores (or replaces) a custom role's spec (JSON).
    fn put_role(&self, name: &str, spec: &str) -> Result<(), RegistryError>;

    /// Every custom role: name and spec (JSON).
    fn roles(&self) -> Result<Vec<(String, String)>, RegistryError>;

    // ----- the notification queue -----
    /// Leaves a notification and keeps the queue within its bound (the newest
    /// [`NOTIFICATIONS_KEPT`], none older than [`NOTIFICATION_AGE_MAX`]).
    fn notify_bounded(
        &self,
        source: &str,
        target: &str,
        kind: &str,
        message: &str,
    ) -> Result<NotificationRecord, RegistryError>;

    /// What `reader` has not been handed yet, oldest first: those left for it, and
    /// those for everyone past its place in the queue. They count as handed out from
    /// now on.
    fn take_for(&self, reader: &str) -> Result<Vec<NotificationRecord>, RegistryError>;

    /// Every notification kept for `reader` or for everyone, oldest first.
    fn notifications_for(&self, reader: &str) -> Result<Vec<NotificationRecord>, RegistryError>;

    /// How many notifications `reader` has not been handed yet.
    fn unread_for(&self, reader: &str) -> Result<i64, RegistryError>;
}

impl OrchestrationTables for Registry {
    fn notify(
        &self,
        source: &str,
        target: &str,
        kind: &str,
        message: &str,
    ) -> Result<i64, RegistryError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO notifications (created, source, target, kind, message) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![now(), source, target, kind, message],
            )
            .map_err(sql(self.path()))?;
            Ok(tx.last_insert_rowid())
        })
    }

    fn pending_notifications(&self) -> Result<Vec<NotificationRecord>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare(&format!(
                "{NOTIFICATION_COLUMNS} WHERE delivered = 0 ORDER BY id"
            ))?;
            let rows = stmt.query_map([], notification_row)?.collect();
            rows
        })
    }

    fn add_watch(
        &self,
        id: &str,
        spec: &str,
        pid: i64,
        start: Option<&str>,
    ) -> Result<(), RegistryError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO orch_watches (id, spec, holder_pid, holder_start, created) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, spec, pid, start, now()],
            )
            .map_err(sql(self.path()))?;
            Ok(())
        })
    }

    fn watches(&self) -> Result<Vec<WatchRow>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare(
                "SELECT id, spec, holder_pid, holder_start, created, hits FROM orch_watches ORDER BY created, id",
            )?;
            let rows = stmt.query_map([], watch_row)?.collect();
            rows
        })
    }

    fn remove_watch(&self, id: &str) -> Result<bool, RegistryError> {
        self.write(|tx| {
            Ok(tx
                .execute("DELETE FROM orch_watches WHERE id = ?1", [id])
                .map_err(sql(self.path()))?
                > 0)
        })
    }

    fn claim_watches(
        &self,
        pid: i64,
        start: Option<&str>,
        alive: impl Fn(i64, Option<&str>) -> bool,
    ) -> Result<Vec<WatchRow>, RegistryError> {
        self.write(|tx| {
            let rows: Vec<WatchRow> = {
                let mut stmt = tx
                    .prepare("SELECT id, spec, holder_pid, holder_start, created, hits FROM orch_watches ORDER BY created, id")
                    .map_err(sql(self.path()))?;
                let rows = stmt
                    .query_map([], watch_row)
                    .map_err(sql(self.path()))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(sql(self.path()))?;
                rows
            };
            let mut mine = Vec::new();
            for mut row in rows {
                let ours = row.holder_pid == pid && row.holder_start.as_deref() == start;
                if !ours && alive(row.holder_pid, row.holder_start.as_deref()) {
                    continue;
                }
                if !ours {
                    tx.execute(
                        "UPDATE orch_watches SET holder_pid = ?2, holder_start = ?3 WHERE id = ?1",
                        params![row.id, pid, start],
                    )
                    .map_err(sql(self.path()))?;
                    row.holder_pid = pid;
                    row.holder_start = start.map(str::to_string);
                }
                mine.push(row);
            }
            Ok(mine)
        })
    }

    fn count_watch_hits(&self, id: &str, hits: u64) -> Result<bool, RegistryError> {
        let hits = i64::try_from(hits).unwrap_or(i64::MAX);
        self.write(|tx| {
            Ok(tx
                .execute(
                    "UPDATE orch_watches SET hits = hits + ?2 WHERE id = ?1",
                    params![id, hits],
                )
                .map_err(sql(self.path()))?
                > 0)
        })
    }

    fn set_agent_state(&self, agent: &str, state: &str, reason: &str) -> Result<(), RegistryError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO orch_agent_states (agent, state, reason, since) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(agent) DO UPDATE SET reason = excluded.reason,
                     since = CASE WHEN orch_agent_states.state = excluded.state THEN orch_agent_states.since ELSE excluded.since END,
                     state = excluded.state",
                params![agent, state, reason, now()],
            )
            .map_err(sql(self.path()))?;
            Ok(())
        })
    }

    fn agent_states(&self) -> Result<Vec<AgentStateRow>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare(
                "SELECT agent, state, reason, since FROM orch_agent_states ORDER BY agent",
            )?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(AgentStateRow {
                        agent: r.get(0)?,
                        state: r.get(1)?,
                        reason: r.get(2)?,
                        since: r.get(3)?,
                    })
                })?
                .collect();
            rows
        })
    }

    fn set_command_end(&self, id: &str, exit_status: Option<i32>) -> Result<(), RegistryError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO orch_command_ends (session_id, exit_status, at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(session_id) DO UPDATE SET exit_status = excluded.exit_status, at = excluded.at",
                params![id, exit_status, now()],
            )
            .map_err(sql(self.path()))?;
            Ok(())
        })
    }

    fn command_ends(&self) -> Result<Vec<CommandEndRow>, RegistryError> {
        self.with(|c| {
            let mut stmt =
                c.prepare("SELECT session_id, exit_status, at FROM orch_command_ends")?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(CommandEndRow {
                        session_id: r.get(0)?,
                        exit_status: r.get(1)?,
                        at: r.get(2)?,
                    })
                })?
                .collect();
            rows
        })
    }

    fn put_role(&self, name: &str, spec: &str) -> Result<(), RegistryError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO orch_roles (name, spec) VALUES (?1, ?2)
                 ON CONFLICT(name) DO UPDATE SET spec = excluded.spec",
                params![name, spec],
            )
            .map_err(sql(self.path()))?;
            Ok(())
        })
    }

    fn roles(&self) -> Result<Vec<(String, String)>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare("SELECT name, spec FROM orch_roles ORDER BY name")?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect();
            rows
        })
    }

    fn notify_bounded(
        &self,
        source: &str,
        target: &str,
        kind: &str,
        message: &str,
    ) -> Result<NotificationRecord, RegistryError> {
        self.write(|tx| {
            let created = now();
            tx.execute(
                "INSERT INTO notifications (created, source, target, kind, message) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![created, source, target, kind, message],
            )
            .map_err(sql(self.path()))?;
            let id = tx.last_insert_rowid();
            tx.execute(
                "DELETE FROM notifications WHERE id <= ?1 - ?2 OR created < ?3",
                params![id, NOTIFICATIONS_KEPT, created - NOTIFICATION_AGE_MAX],
            )
            .map_err(sql(self.path()))?;
            Ok(NotificationRecord {
                id,
                created,
                source: source.into(),
                target: target.into(),
                kind: kind.into(),
                message: message.into(),
            })
        })
    }

    fn take_for(&self, reader: &str) -> Result<Vec<NotificationRecord>, RegistryError> {
        self.write(|tx| {
            let last: i64 = tx
                .query_row(
                    "SELECT last_id FROM orch_notification_reads WHERE reader = ?1",
                    [reader],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql(self.path()))?
                .unwrap_or(0);
            let rows: Vec<NotificationRecord> = {
                let mut stmt = tx
                    .prepare(&format!(
                        "{NOTIFICATION_COLUMNS} WHERE (target = ?1 AND delivered = 0) OR (target = ?2 AND id > ?3) ORDER BY id"
                    ))
                    .map_err(sql(self.path()))?;
                let rows = stmt
                    .query_map(params![reader, EVERYONE, last], notification_row)
                    .map_err(sql(self.path()))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(sql(self.path()))?;
                rows
            };
            tx.execute(
                "UPDATE notifications SET delivered = 1 WHERE target = ?1 AND delivered = 0",
                [reader],
            )
            .map_err(sql(self.path()))?;
            let newest: i64 = tx
                .query_row("SELECT COALESCE(MAX(id), 0) FROM notifications", [], |r| {
                    r.get(0)
                })
                .map_err(sql(self.path()))?;
            tx.execute(
                "INSERT INTO orch_notification_reads (reader, last_id) VALUES (?1, ?2)
                 ON CONFLICT(reader) DO UPDATE SET last_id = MAX(last_id, excluded.last_id)",
                params![reader, newest.max(last)],
            )
            .map_err(sql(self.path()))?;
            Ok(rows)
        })
    }

    fn notifications_for(&self, reader: &str) -> Result<Vec<NotificationRecord>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare(&format!(
                "{NOTIFICATION_COLUMNS} WHERE target = ?1 OR target = ?2 ORDER BY id"
            ))?;
            let rows = stmt
                .query_map(params![reader, EVERYONE], notification_row)?
                .collect();
            rows
        })
    }

    fn unread_for(&self, reader: &str) -> Result<i64, RegistryError> {
        self.with(|c| {
            let last: i64 = c
                .query_row(
                    "SELECT last_id FROM orch_notification_reads WHERE reader = ?1",
                    [reader],
                    |r| r.get(0),
                )
                .optional()?
                .unwrap_or(0);
            c.query_row(
                "SELECT COUNT(*) FROM notifications WHERE (target = ?1 AND delivered = 0) OR (target = ?2 AND id > ?3)",
                params![reader, EVERYONE, last],
                |r| r.get(0),
            )
        })
    }
}

const NOTIFICATION_COLUMNS: &str =
    "SELECT id, created, source, target, kind, message FROM notifications";

/// A row of [`NOTIFICATION_COLUMNS`].
fn notification_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<NotificationRecord> {
    Ok(NotificationRecord {
        id: r.get(0)?,
        created: r.get(1)?,
        source: r.get(2)?,
        target: r.get(3)?,
        kind: r.get(4)?,
        message: r.get(5)?,
    })
}

fn watch_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<WatchRow> {
    Ok(WatchRow {
        id: r.get(0)?,
        spec: r.get(1)?,
        holder_pid: r.get(2)?,
        holder_start: r.get(3)?,
        created: r.get(4)?,
        hits: r.get(5)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> (tempfile::TempDir, Registry) {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::open(&dir.path().join("registry.db")).unwrap();
        registry.add_schema(SCHEMA).unwrap();
        (dir, registry)
    }

    #[test]
    fn watchers_of_a_gone_holder_are_claimed_and_a_live_holder_keeps_its_own() {
        let (_dir, r) = registry();
        r.add_watch("w1", "{}", 100, Some("a")).unwrap();
        r.add_watch("w2", "{}", 200, Some("b")).unwrap();
        // 100 is gone, 200 runs.
        let mine = r
            .claim_watches(300, Some("c"), |pid, _| pid == 200)
            .unwrap();
        assert_eq!(
            mine.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
            ["w1"]
        );
        // A pid reused by another process is not the holder.
        let mine = r
            .claim_watches(200, Some("other"), |pid, start| {
                pid == 300 && start == Some("c")
            })
            .unwrap();
        assert_eq!(
            mine.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
            ["w2"]
        );
        assert!(r.remove_watch("w1").unwrap());
        assert!(!r.remove_watch("w1").unwrap());
    }

    #[test]
    fn the_shared_queue_hands_each_reader_its_own_unread_once() {
        let (_dir, r) = registry();
        r.notify_bounded("x", EVERYONE, "info", "for all").unwrap();
        r.notify_bounded("x", "ann", "info", "for ann").unwrap();
        assert_eq!(r.unread_for("ann").unwrap(), 2);
        assert_eq!(r.unread_for("bob").unwrap(), 1);
        let ann: Vec<String> = r
            .take_for("ann")
            .unwrap()
            .into_iter()
            .map(|n| n.message)
            .collect();
        assert_eq!(ann, ["for all", "for ann"]);
        assert!(r.take_for("ann").unwrap().is_empty());
        assert_eq!(r.take_for("bob").unwrap().len(), 1);
        assert_eq!(r.notifications_for("ann").unwrap().len(), 2);
    }

    #[test]
    fn the_queue_keeps_its_bound() {
        let (_dir, r) = registry();
        for i in 0..NOTIFICATIONS_KEPT + 25 {
            r.notify_bounded("x", EVERYONE, "info", &format!("n{i}"))
                .unwrap();
        }
        let kept = r.notifications_for("anyone").unwrap();
        assert_eq!(kept.len() as i64, NOTIFICATIONS_KEPT);
        assert_eq!(kept[0].message, "n25");
    }

    #[test]
    fn a_team_keeps_its_hue_and_agent_states_keep_their_since() {
        let (_dir, r) = registry();
        let first = r.team_hue("web", |_| 180.0).unwrap();
        assert_eq!(first, 180.0);
        assert_eq!(r.team_hue("web", |_| 0.0).unwrap(), 180.0);
        let second = r.team_hue("ops", |taken| taken[0] - 180.0).unwrap();
        assert_eq!(second, 0.0);
        r.set_agent_state("a", "busy", "turn began").unwrap();
        let since = r.agent_states().unwrap()[0].since;
        r.set_agent_state("a", "busy", "still").unwrap();
        let row = &r.agent_states().unwrap()[0];
        assert_eq!((row.since, row.reason.as_str()), (since, "still"));
    }
}
