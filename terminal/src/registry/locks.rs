//! Locks on a session's input, bound to their holder's connection and held as a lease
//! by its process: when that process is gone, the lock is gone too (it is dropped the
//! next time anyone looks), so a holder that crashed never locks a session forever.

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
            let (pid, start) = crate::holder::this();
            tx.execute(
                "INSERT INTO locks (session_id, owner, since, token, holder_pid, holder_start) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![session_id, owner, now(), token, pid, start],
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

    /// The lock on a session, if any (a lapsed one is none).
    pub fn lock_of(&self, session_id: &str) -> Result<Option<LockRecord>, RegistryError> {
        let lock = self.with(|c| {
            c.query_row(
                &format!("{SELECT_LOCKS} WHERE l.session_id = ?1"),
                [session_id],
                lock_record,
            )
            .optional()
        })?;
        Ok(lock.filter(|l| !l.lapsed()))
    }

    /// Every lock held, by session name (lapsed ones left out).
    pub fn locks(&self) -> Result<Vec<LockRecord>, RegistryError> {
        let locks: Vec<LockRecord> = self.with(|c| {
            let mut stmt = c.prepare(&format!("{SELECT_LOCKS} ORDER BY s.name"))?;
            let rows = stmt.query_map([], lock_record)?.collect();
            rows
        })?;
        Ok(locks.into_iter().filter(|l| !l.lapsed()).collect())
    }

    /// Releases every lock taken through connection `token` (the connection ended);
    /// returns the sessions they were on.
    pub fn release_connection(&self, token: &str) -> Result<Vec<String>, RegistryError> {
        self.write(|tx| {
            let mut stmt = tx
                .prepare("SELECT s.name FROM locks l JOIN sessions s ON s.id = l.session_id WHERE l.token = ?1")
                .map_err(sql(&self.path))?;
            let sessions = stmt
                .query_map([token], |r| r.get(0))
                .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
                .map_err(sql(&self.path))?;
            drop(stmt);
            tx.execute("DELETE FROM locks WHERE token = ?1", [token])
                .map_err(sql(&self.path))?;
            Ok(sessions)
        })
    }
}

/// The columns of a lock, with its session's name.
const SELECT_LOCKS: &str = "SELECT s.name, l.owner, l.since, l.token, l.holder_pid, l.holder_start FROM locks l JOIN sessions s ON s.id = l.session_id";

/// A lock from a row of [`SELECT_LOCKS`].
fn lock_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<LockRecord> {
    let pid: Option<i64> = r.get(4)?;
    Ok(LockRecord {
        session: r.get(0)?,
        owner: r.get(1)?,
        since: r.get(2)?,
        token: r.get(3)?,
        holder: pid.map(|pid| (pid, r.get(5).ok().flatten())),
    })
}

/// The lock on session `id`, read inside a transaction; a lapsed one is dropped.
fn lock_row(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    path: &Path,
) -> Result<Option<LockRecord>, RegistryError> {
    type Row = (String, i64, Option<String>, Option<i64>, Option<String>);
    let held: Option<Row> = tx
        .query_row(
            "SELECT owner, since, token, holder_pid, holder_start FROM locks WHERE session_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .optional()
        .map_err(sql(path))?;
    let Some((owner, since, token, pid, start)) = held else {
        return Ok(None);
    };
    let lock = LockRecord {
        session: session_name(tx, id, path)?,
        owner,
        since,
        token,
        holder: pid.map(|pid| (pid, start)),
    };
    if lock.lapsed() {
        tx.execute("DELETE FROM locks WHERE session_id = ?1", [id])
            .map_err(sql(path))?;
        return Ok(None);
    }
    Ok(Some(lock))
}
