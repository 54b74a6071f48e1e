//! Sessions in the registry: names claimed once across processes, panes, last
//! commands and tags.

use rusqlite::{params, OptionalExtension};

use super::*;

impl Registry {
    /// Records a session (or updates its pane, after re-adoption).
    pub fn upsert_session(&self, s: &SessionRecord) -> Result<(), RegistryError> {
        self.write(|tx| {
            // A stale row with the same name but another id (its pane is gone) yields.
            tx.execute("DELETE FROM sessions WHERE name = ?1 AND id <> ?2", params![s.name, s.id]).map_err(sql(&self.path))?;
            tx.execute(
                "INSERT INTO sessions (id, name, backend, server, pane, cwd, created, last_command)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT(id) DO UPDATE SET name = excluded.name, backend = excluded.backend,
                     server = excluded.server, pane = excluded.pane, cwd = COALESCE(excluded.cwd, sessions.cwd)",
                params![s.id, s.name, s.backend, s.server, s.pane, s.cwd, s.created, s.last_command],
            )
            .map_err(sql(&self.path))?;
            Ok(())
        })
    }

    /// Claims `name` for a session about to be created with id `id` on `server`, before
    /// its pane exists, so that two processes opening the same name at once cannot both
    /// succeed. A row of that name whose session is among `live_sessions` (the
    /// persistent ids stamped on the panes that exist), or another claim younger than
    /// a minute, keeps the name ([`Claim::Taken`]). A row whose session is not among
    /// them may be one the caller's list is too old to show: it is only replaced when
    /// the caller names it in `replacing` after looking again ([`Claim::Suspect`]).
    /// The claim becomes the session's row with [`Registry::upsert_session`], or is
    /// dropped with [`Registry::remove_session`].
    pub fn claim_name(
        &self,
        id: &str,
        name: &str,
        server: &str,
        live_sessions: &[String],
        replacing: Option<&str>,
    ) -> Result<Claim, RegistryError> {
        self.write(|tx| {
            let holder: Option<(String, String, String, i64)> = tx
                .query_row(
                    "SELECT id, server, pane, created FROM sessions WHERE name = ?1",
                    [name],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
                .optional()
                .map_err(sql(&self.path))?;
            if let Some((other, other_server, pane, created)) = holder {
                let claimed = pane.is_empty() && now() - created < 60;
                let live = other_server == server && live_sessions.contains(&other);
                if claimed || live {
                    return Ok(Claim::Taken);
                }
                if replacing != Some(other.as_str()) {
                    return Ok(Claim::Suspect(other));
                }
                tx.execute("DELETE FROM sessions WHERE id = ?1", [&other])
                    .map_err(sql(&self.path))?;
            }
            tx.execute(
                "INSERT INTO sessions (id, name, backend, server, pane, cwd, created, last_command)
                 VALUES (?1, ?2, '', ?3, '', NULL, ?4, NULL)",
                params![id, name, server, now()],
            )
            .map_err(sql(&self.path))?;
            Ok(Claim::Claimed)
        })
    }

    /// Every session.
    pub fn sessions(&self) -> Result<Vec<SessionRecord>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare(
                "SELECT id, name, backend, server, pane, cwd, created, last_command FROM sessions ORDER BY created, name",
            )?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(SessionRecord {
                        id: r.get(0)?,
                        name: r.get(1)?,
                        backend: r.get(2)?,
                        server: r.get(3)?,
                        pane: r.get(4)?,
                        cwd: r.get(5)?,
                        created: r.get(6)?,
                        last_command: r.get(7)?,
                        tags: Vec::new(),
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut tags = c.prepare("SELECT tag FROM tags WHERE session_id = ?1 ORDER BY tag")?;
            rows.into_iter()
                .map(|mut s| {
                    s.tags = tags.query_map([&s.id], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?;
                    Ok(s)
                })
                .collect()
        })
    }

    /// The session living in `pane` on `server`, if the registry knows one.
    pub fn session_for_pane(
        &self,
        server: &str,
        pane: &str,
    ) -> Result<Option<SessionRecord>, RegistryError> {
        self.with(|c| {
            let found = c
                .query_row(
                    "SELECT id, name, backend, server, pane, cwd, created, last_command FROM sessions
                     WHERE server = ?1 AND pane = ?2",
                    params![server, pane],
                    |r| {
                        Ok(SessionRecord {
                            id: r.get(0)?,
                            name: r.get(1)?,
                            backend: r.get(2)?,
                            server: r.get(3)?,
                            pane: r.get(4)?,
                            cwd: r.get(5)?,
                            created: r.get(6)?,
                            last_command: r.get(7)?,
                            tags: Vec::new(),
                        })
                    },
                )
                .optional()?;
            let Some(mut record) = found else { return Ok(None) };
            let mut tags = c.prepare("SELECT tag FROM tags WHERE session_id = ?1 ORDER BY tag")?;
            record.tags = tags.query_map([&record.id], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(Some(record))
        })
    }

    /// Removes a session (its agents stay, without a session).
    pub fn remove_session(&self, id: &str) -> Result<(), RegistryError> {
        self.write(|tx| {
            tx.execute("DELETE FROM sessions WHERE id = ?1", [id])
                .map_err(sql(&self.path))?;
            Ok(())
        })
    }

    /// Remembers the last command run in a session.
    pub fn set_last_command(&self, id: &str, command: &str) -> Result<(), RegistryError> {
        self.write(|tx| {
            tx.execute(
                "UPDATE sessions SET last_command = ?2 WHERE id = ?1",
                params![id, command],
            )
            .map_err(sql(&self.path))?;
            Ok(())
        })
    }

    /// Adds and removes tags.
    pub fn tag(&self, id: &str, add: &[String], remove: &[String]) -> Result<(), RegistryError> {
        self.write(|tx| {
            for t in add {
                tx.execute(
                    "INSERT OR IGNORE INTO tags (session_id, tag) VALUES (?1, ?2)",
                    params![id, t],
                )
                .map_err(sql(&self.path))?;
            }
            for t in remove {
                tx.execute(
                    "DELETE FROM tags WHERE session_id = ?1 AND tag = ?2",
                    params![id, t],
                )
                .map_err(sql(&self.path))?;
            }
            Ok(())
        })
    }
}

/// The name of session `id`, read inside a transaction (its id when it has no row).
pub(super) fn session_name(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    path: &Path,
) -> Result<String, RegistryError> {
    Ok(tx
        .query_row("SELECT name FROM sessions WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql(path))?
        .unwrap_or_else(|| id.to_string()))
}
