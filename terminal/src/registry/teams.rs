//! Agents and teams in the registry: a team tree without cycles, agents and their
//! memberships.

use rusqlite::{params, OptionalExtension};

use super::*;

impl Registry {
    /// Creates a team (idempotent; updates the parent). Refuses cycles.
    pub fn create_team(&self, name: &str, parent: Option<&str>) -> Result<(), RegistryError> {
        self.write(|tx| {
            if let Some(parent) = parent {
                let exists: bool = tx
                    .query_row("SELECT 1 FROM teams WHERE name = ?1", [parent], |_| {
                        Ok(true)
                    })
                    .optional()
                    .map_err(sql(&self.path))?
                    .unwrap_or(false);
                if !exists {
                    return Err(RegistryError::NotFound(format!(
                        "no team named {parent:?}: create the parent team first"
                    )));
                }
                // Walk up from the parent: meeting `name` would make a cycle.
                let mut cur = Some(parent.to_string());
                while let Some(t) = cur {
                    if t == name {
                        return Err(RegistryError::Conflict(format!(
                            "team {name:?} cannot be inside itself"
                        )));
                    }
                    cur = tx
                        .query_row("SELECT parent FROM teams WHERE name = ?1", [&t], |r| {
                            r.get::<_, Option<String>>(0)
                        })
                        .optional()
                        .map_err(sql(&self.path))?
                        .flatten();
                }
            }
            tx.execute(
                "INSERT INTO teams (name, parent, created) VALUES (?1, ?2, ?3)
                 ON CONFLICT(name) DO UPDATE SET parent = excluded.parent",
                params![name, parent, now()],
            )
            .map_err(sql(&self.path))?;
            Ok(())
        })
    }

    /// Removes a team (members stay, without it; child teams lose their parent).
    pub fn remove_team(&self, name: &str) -> Result<bool, RegistryError> {
        self.write(|tx| {
            Ok(tx
                .execute("DELETE FROM teams WHERE name = ?1", [name])
                .map_err(sql(&self.path))?
                > 0)
        })
    }

    /// Every team with its members.
    pub fn teams(&self) -> Result<Vec<TeamRecord>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare("SELECT name, parent FROM teams ORDER BY name")?;
            let teams = stmt
                .query_map([], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut members =
                c.prepare("SELECT agent FROM agent_teams WHERE team = ?1 ORDER BY agent")?;
            teams
                .into_iter()
                .map(|(name, parent)| {
                    let m = members
                        .query_map([&name], |r| r.get(0))?
                        .collect::<rusqlite::Result<Vec<String>>>()?;
                    Ok(TeamRecord {
                        name,
                        parent,
                        members: m,
                    })
                })
                .collect()
        })
    }

    /// Registers (or updates) an agent working in `session_id`, in `teams` (created
    /// as needed).
    pub fn register_agent(
        &self,
        name: &str,
        session_id: Option<&str>,
        role: Option<&str>,
        teams: &[String],
    ) -> Result<(), RegistryError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO agents (name, session_id, role, created) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(name) DO UPDATE SET session_id = COALESCE(excluded.session_id, agents.session_id),
                     role = COALESCE(excluded.role, agents.role)",
                params![name, session_id, role, now()],
            )
            .map_err(sql(&self.path))?;
            for team in teams {
                tx.execute("INSERT OR IGNORE INTO teams (name, parent, created) VALUES (?1, NULL, ?2)", params![team, now()])
                    .map_err(sql(&self.path))?;
                tx.execute("INSERT OR IGNORE INTO agent_teams (agent, team) VALUES (?1, ?2)", params![name, team])
                    .map_err(sql(&self.path))?;
            }
            Ok(())
        })
    }

    /// Puts an agent in a team, or takes it out.
    pub fn assign_team(&self, agent: &str, team: &str, member: bool) -> Result<(), RegistryError> {
        self.write(|tx| {
            let known = |table: &str, name: &str| -> Result<bool, RegistryError> {
                Ok(tx
                    .query_row(
                        &format!("SELECT 1 FROM {table} WHERE name = ?1"),
                        [name],
                        |_| Ok(true),
                    )
                    .optional()
                    .map_err(sql(&self.path))?
                    .unwrap_or(false))
            };
            if !known("agents", agent)? {
                return Err(RegistryError::NotFound(format!(
                    "no agent named {agent:?}: register it first"
                )));
            }
            if !known("teams", team)? {
                return Err(RegistryError::NotFound(format!(
                    "no team named {team:?}: create it first"
                )));
            }
            let sql_text = if member {
                "INSERT OR IGNORE INTO agent_teams (agent, team) VALUES (?1, ?2)"
            } else {
                "DELETE FROM agent_teams WHERE agent = ?1 AND team = ?2"
            };
            tx.execute(sql_text, params![agent, team])
                .map_err(sql(&self.path))?;
            Ok(())
        })
    }

    /// Removes an agent.
    pub fn remove_agent(&self, name: &str) -> Result<bool, RegistryError> {
        self.write(|tx| {
            Ok(tx
                .execute("DELETE FROM agents WHERE name = ?1", [name])
                .map_err(sql(&self.path))?
                > 0)
        })
    }

    /// Every agent with its session name and teams.
    pub fn agents(&self) -> Result<Vec<AgentRecord>, RegistryError> {
        self.with(|c| {
            let mut stmt = c.prepare(
                "SELECT a.name, s.name, a.role FROM agents a LEFT JOIN sessions s ON s.id = a.session_id ORDER BY a.name",
            )?;
            let agents = stmt
                .query_map([], |r| {
                    Ok(AgentRecord {
                        name: r.get(0)?,
                        session: r.get(1)?,
                        role: r.get(2)?,
                        teams: Vec::new(),
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut teams = c.prepare("SELECT team FROM agent_teams WHERE agent = ?1 ORDER BY team")?;
            agents
                .into_iter()
                .map(|mut a| {
                    a.teams = teams.query_map([&a.name], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?;
                    Ok(a)
                })
                .collect()
        })
    }

    // ----- team colours and environments -----

    /// Refuses, inside a write, a team that does not exist.
    fn team_must_exist(
        &self,
        tx: &rusqlite::Transaction<'_>,
        team: &str,
    ) -> Result<(), RegistryError> {
        let exists = tx
            .query_row("SELECT 1 FROM teams WHERE name = ?1", [team], |_| Ok(()))
            .optional()
            .map_err(sql(&self.path))?
            .is_some();
        if exists {
            Ok(())
        } else {
            Err(RegistryError::NotFound(format!(
                "no team named {team:?}: create it first (list_teams shows what exists)"
            )))
        }
    }

    /// Replaces `team`'s environment variables; the team must exist.
    pub fn set_team_env(&self, team: &str, env: &[(String, String)]) -> Result<(), RegistryError> {
        self.write(|tx| {
            self.team_must_exist(tx, team)?;
            tx.execute("DELETE FROM team_env WHERE team = ?1", [team])
                .map_err(sql(&self.path))?;
            for (name, value) in env {
                tx.execute(
                    "INSERT INTO team_env (team, name, value) VALUES (?1, ?2, ?3)",
                    params![team, name, value],
                )
                .map_err(sql(&self.path))?;
            }
            Ok(())
        })
    }

    /// Turns `team`'s alerts on or off; the team must exist.
    pub fn set_team_alerts(&self, team: &str, on: bool) -> Result<(), RegistryError> {
        self.write(|tx| {
            self.team_must_exist(tx, team)?;
            let statement = if on {
                "INSERT OR IGNORE INTO team_alerts (team) VALUES (?1)"
            } else {
                "DELETE FROM team_alerts WHERE team = ?1"
            };
            tx.execute(statement, [team]).map_err(sql(&self.path))?;
            Ok(())
        })
    }

    /// Whether `team` raises alerts.
    pub fn team_alerts(&self, team: &str) -> Result<bool, RegistryError> {
        self.with(|conn| {
            conn.query_row("SELECT 1 FROM team_alerts WHERE team = ?1", [team], |_| {
                Ok(())
            })
            .optional()
            .map(|found| found.is_some())
        })
    }

    /// The teams that raise alerts.
    pub fn alerting_teams(&self) -> Result<Vec<String>, RegistryError> {
        self.with(|conn| {
            let mut stmt = conn.prepare("SELECT team FROM team_alerts ORDER BY team")?;
            let rows = stmt
                .query_map([], |r| r.get(0))?
                .collect::<Result<Vec<String>, _>>();
            rows
        })
    }

    /// `team`'s environment variables, by name.
    pub fn team_env(&self, team: &str) -> Result<Vec<(String, String)>, RegistryError> {
        self.with(|conn| {
            let mut stmt =
                conn.prepare("SELECT name, value FROM team_env WHERE team = ?1 ORDER BY name")?;
            let rows = stmt
                .query_map([team], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<Vec<(String, String)>, _>>();
            rows
        })
    }

    /// The hue of `team`'s colour: the one it has, or a new one from `next` (given
    /// every hue taken), kept from now on.
    pub fn team_hue(&self, team: &str, next: impl Fn(&[f64]) -> f64) -> Result<f64, RegistryError> {
        self.write(|tx| {
            let known: Option<f64> = tx
                .query_row(
                    "SELECT hue FROM orch_team_colours WHERE team = ?1",
                    [team],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql(&self.path))?;
            if let Some(hue) = known {
                return Ok(hue);
            }
            let taken: Vec<f64> = {
                let mut stmt = tx
                    .prepare("SELECT hue FROM orch_team_colours")
                    .map_err(sql(&self.path))?;
                let taken = stmt
                    .query_map([], |r| r.get(0))
                    .map_err(sql(&self.path))?
                    .collect::<Result<Vec<f64>, _>>()
                    .map_err(sql(&self.path))?;
                taken
            };
            let hue = next(&taken);
            tx.execute(
                "INSERT INTO orch_team_colours (team, hue) VALUES (?1, ?2)",
                params![team, hue],
            )
            .map_err(sql(&self.path))?;
            Ok(hue)
        })
    }
}
