//! Saved arrangements and the commands sessions were opened with, in the registry.

use rusqlite::{params, OptionalExtension};

use super::*;

impl Registry {
    /// Keeps the command the session `id` was opened with.
    pub fn set_session_command(&self, id: &str, command: &str) -> Result<(), RegistryError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO session_commands (session_id, command) VALUES (?1, ?2)
                 ON CONFLICT(session_id) DO UPDATE SET command = excluded.command",
                params![id, command],
            )
            .map_err(sql(&self.path))?;
            Ok(())
        })
    }

    /// The command the session `id` was opened with, when it was not a shell.
    pub fn session_command(&self, id: &str) -> Result<Option<String>, RegistryError> {
        self.with(|conn| {
            conn.query_row(
                "SELECT command FROM session_commands WHERE session_id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()
        })
    }

    /// Saves (or replaces) the arrangement `name`, as JSON.
    pub fn save_arrangement(&self, name: &str, body: &str) -> Result<(), RegistryError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO arrangements (name, body, saved) VALUES (?1, ?2, ?3)
                 ON CONFLICT(name) DO UPDATE SET body = excluded.body, saved = excluded.saved",
                params![name, body, now()],
            )
            .map_err(sql(&self.path))?;
            Ok(())
        })
    }

    /// The arrangement `name`, as saved.
    pub fn arrangement(&self, name: &str) -> Result<Option<String>, RegistryError> {
        self.with(|conn| {
            conn.query_row(
                "SELECT body FROM arrangements WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
        })
    }

    /// Every arrangement's name and body, by name.
    pub fn arrangements(&self) -> Result<Vec<(String, String)>, RegistryError> {
        self.with(|conn| {
            let mut stmt = conn.prepare("SELECT name, body FROM arrangements ORDER BY name")?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<Vec<(String, String)>, _>>();
            rows
        })
    }

    /// Deletes the arrangement `name`; false when there was none.
    pub fn delete_arrangement(&self, name: &str) -> Result<bool, RegistryError> {
        self.write(|tx| {
            Ok(tx
                .execute("DELETE FROM arrangements WHERE name = ?1", [name])
                .map_err(sql(&self.path))?
                > 0)
        })
    }
}
