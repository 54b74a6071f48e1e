//! Locks on a session's input, bound to their holder's connection, and the
//! notifications agents and humans leave each other.

use rusqlite::{params, OptionalExtension};

use super::sessions::session_name;
use super::*;

impl Registry {
    /// Takes the lock on a session for `owner`, bound to `token` (the caller's
    /// connection); returns the holder when someone else has it.
    pub fn lock(
        &self,
        session_id: &str,
        owner: &str,
        token: Option<&str>,
    ) -> Result<Option<LockRecord>, RegistryError> {
        self.write(|tx| {
            if let Some(held) = lock_row(tx, session_id, &self.path)? {
                return Ok((!held.held_by(owner, token)).then_some(held));
            }
            tx.execute(
                "INSERT INTO locks (session_id, owner, since, token) VALUES (?1, ?2, ?3, ?4)",
                params![session_id, owner, now(), token],
            )
            .map_err(sql(&self.path))?;
            Ok(None)
        })
    }

    /// Releases a lock held by `owner` on `token`'s connection (or anyone's, with
    /// `force`). Returns whether a lock was released.
    pub fn unlock(
        &self,
        session_id: &str,
        owner: &str,
        token: Option<&str>,
        force: bool,
    ) -> Result<bool, RegistryError> {
        self.write(|tx| match lock_row(tx, session_id, &self.path)? {
            None => Ok(false),
            Some(held) if held.held_by(owner, token) || force => {
                tx.execute("DELETE FROM locks WHERE session_id = ?1", [session_id])
                    .map_err(sql(&self.path))?;
                Ok(true)
            }
            Some(held) if held.owner == owner => Err(RegistryError::NotHolder(format!(
                "the lock was taken as {owner:?} by another connection: only that one releases it; pass force: true to break it"
            ))),
            Some(held) => Err(RegistryError::NotHolder(format!(
                "the lock is held by {:?}, not {owner:?}: ask them with request_access, or pass force: true",
                held.owner
            ))),
        })
    }

    /// The lock on a session, if any.
    pub fn lock_of(&self, session_id: &str) -> Result<Option<LockRecord>, RegistryError> {
        self.with(|c| {
            c.query_row(
                "SELECT s.name, l.owner, l.since, l.token FROM locks l JOIN sessions s ON s.id = l.session_id WHERE l.session_id = ?1",
                [session_id],
                |r| {
                    Ok(LockRecord {
                        session: r.get(0)?,
                        owner: r.get(1)?,
                        since: r.get(2)?,
                        token: r.get(3)?,
                    })
                },
            )
            .optional()
        })
    }

    /// Every lock held, by session name.
    pub fn locks(&self) -> Result<Vec<LockRecord>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare(
                "SELECT s.name, l.owner, l.since, l.token FROM locks l JOIN sessions s ON s.id = l.session_id ORDER BY s.name",
            )?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(LockRecord {
                        session: r.get(0)?,
                        owner: r.get(1)?,
                        since: r.get(2)?,
                        token: r.get(3)?,
                    })
                })?
                .collect();
            rows
        })
    }

    /// Leaves a notification.
    pub fn notify(
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
            .map_err(sql(&self.path))?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// Notifications not yet handed out, for anyone, oldest first (they stay pending).
    pub fn pending_notifications(&self) -> Result<Vec<NotificationRecord>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare(&format!(
                "{NOTIFICATION_COLUMNS} WHERE delivered = 0 ORDER BY id"
            ))?;
            let rows = stmt.query_map([], notification_row)?.collect();
            rows
        })
    }
}

/// The lock on session `id`, read inside a transaction.
fn lock_row(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    path: &Path,
) -> Result<Option<LockRecord>, RegistryError> {
    let held: Option<(String, i64, Option<String>)> = tx
        .query_row(
            "SELECT owner, since, token FROM locks WHERE session_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .map_err(sql(path))?;
    held.map(|(owner, since, token)| {
        Ok(LockRecord {
            session: session_name(tx, id, path)?,
            owner,
            since,
            token,
        })
    })
    .transpose()
}

pub(super) const NOTIFICATION_COLUMNS: &str =
    "SELECT id, created, source, target, kind, message FROM notifications";

/// A row of [`NOTIFICATION_COLUMNS`].
pub(super) fn notification_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<NotificationRecord> {
    Ok(NotificationRecord {
        id: r.get(0)?,
        created: r.get(1)?,
        source: r.get(2)?,
        target: r.get(3)?,
        kind: r.get(4)?,
        message: r.get(5)?,
    })
}
