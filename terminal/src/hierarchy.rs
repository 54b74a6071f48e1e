//! Selection by hierarchy: targets written as paths through the team tree.
//!
//! `web/alice` is the agent alice in team web (or one of web's sub-teams);
//! `org/web` is team web under org (any depth below it); `org/web/alice` is alice
//! there; `web/*` is every agent of web. A path is only read as a path when no
//! session, agent or team has that exact name (names may contain `/`).

use std::collections::BTreeSet;

use crate::registry::{AgentRecord, TeamRecord};
use crate::team::team_agents;

/// What a path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathTarget {
    /// A team: its agents and those of its sub-teams.
    Team(String),
    /// One agent, found in the team the path went through.
    Agent {
        /// The agent.
        agent: String,
        /// The team it was found in.
        team: String,
    },
}

impl PathTarget {
    /// The agents the path reaches.
    pub fn agents(&self, teams: &[TeamRecord]) -> BTreeSet<String> {
        match self {
            PathTarget::Team(team) => team_agents(team, teams),
            PathTarget::Agent { agent, .. } => BTreeSet::from([agent.clone()]),
        }
    }
}

/// Whether `target` is written as a path.
pub fn is_path(target: &str) -> bool {
    target.contains('/')
}

/// Whether team `inner` is `outer` or below it.
fn within(inner: &str, outer: &str, teams: &[TeamRecord]) -> bool {
    let mut current = Some(inner.to_string());
    let mut seen = BTreeSet::new();
    while let Some(team) = current {
        if team == outer {
            return true;
        }
        if !seen.insert(team.clone()) {
            return false;
        }
        current = teams
            .iter()
            .find(|t| t.name == team)
            .and_then(|t| t.parent.clone());
    }
    false
}

/// Reads `path` against the teams and agents that exist; the error says which part
/// named nothing and what is there instead.
pub fn resolve_path(
    path: &str,
    teams: &[TeamRecord],
    agents: &[AgentRecord],
) -> Result<PathTarget, String> {
    let parts: Vec<&str> = path.split('/').map(str::trim).collect();
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
        return Err(format!(
            "target {path:?} is not a usable path: write team/agent, parent/team or team/* (no empty parts)"
        ));
    }
    let first = parts[0];
    if !teams.iter().any(|t| t.name == first) {
        return Err(format!(
            "target {path:?}: no team named {first:?} (teams: {})",
            list_names(teams.iter().map(|t| t.name.as_str()))
        ));
    }
    let mut team = first.to_string();
    for (i, part) in parts.iter().enumerate().skip(1) {
        let last = i + 1 == parts.len();
        if last && *part == "*" {
            return Ok(PathTarget::Team(team));
        }
        if last {
            let members = team_agents(&team, teams);
            if members.contains(*part) && agents.iter().any(|a| a.name == *part) {
                return Ok(PathTarget::Agent {
                    agent: part.to_string(),
                    team,
                });
            }
        }
        if teams.iter().any(|t| t.name == *part) && within(part, &team, teams) && *part != team {
            team = part.to_string();
            continue;
        }
        let below: Vec<&str> = teams
            .iter()
            .filter(|t| t.name != team && within(&t.name, &team, teams))
            .map(|t| t.name.as_str())
            .collect();
        let members = team_agents(&team, teams);
        return Err(if last {
            format!(
                "target {path:?}: {part:?} is neither an agent of team {team:?} nor a team below it (agents: {}; teams below: {})",
                list_names(members.iter().map(String::as_str)),
                list_names(below.into_iter())
            )
        } else {
            format!(
                "target {path:?}: no team {part:?} below {team:?} (teams below: {})",
                list_names(below.into_iter())
            )
        });
    }
    Ok(PathTarget::Team(team))
}

/// Names for a message ("none" when there are none).
pub fn list_names<'a>(list: impl Iterator<Item = &'a str>) -> String {
    let list: Vec<&str> = list.collect();
    if list.is_empty() {
        "none".into()
    } else {
        list.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(name: &str, parent: Option<&str>, members: &[&str]) -> TeamRecord {
        TeamRecord {
            name: name.into(),
            parent: parent.map(String::from),
            members: members.iter().map(|m| m.to_string()).collect(),
        }
    }

    fn agent(name: &str) -> AgentRecord {
        AgentRecord {
            name: name.into(),
            session: Some(format!("s-{name}")),
            role: None,
            teams: vec![],
        }
    }

    #[test]
    fn paths_name_agents_and_teams_through_the_tree() {
        let teams = vec![
            team("org", None, &[]),
            team("web", Some("org"), &["alice", "bob"]),
            team("ui", Some("web"), &["dora"]),
            team("ops", Some("org"), &["carol"]),
        ];
        let agents: Vec<AgentRecord> = ["alice", "bob", "carol", "dora"]
            .iter()
            .map(|a| agent(a))
            .collect();
        let agent_in = |a: &str, t: &str| PathTarget::Agent {
            agent: a.into(),
            team: t.into(),
        };
        assert_eq!(
            resolve_path("web/alice", &teams, &agents),
            Ok(agent_in("alice", "web"))
        );
        assert_eq!(
            resolve_path("org/web", &teams, &agents),
            Ok(PathTarget::Team("web".into()))
        );
        // Any depth below, and agents of sub-teams.
        assert_eq!(
            resolve_path("org/ui", &teams, &agents),
            Ok(PathTarget::Team("ui".into()))
        );
        assert_eq!(
            resolve_path("org/web/dora", &teams, &agents),
            Ok(agent_in("dora", "web"))
        );
        assert_eq!(
            resolve_path("web/*", &teams, &agents)
                .unwrap()
                .agents(&teams)
                .len(),
            3
        );
        let wrong = resolve_path("web/carol", &teams, &agents).unwrap_err();
        assert!(
            wrong.contains("neither an agent of team \"web\"")
                && wrong.contains("alice, bob, dora"),
            "{wrong}"
        );
        let wrong = resolve_path("ops/web", &teams, &agents).unwrap_err();
        assert!(wrong.contains("\"web\""), "{wrong}");
        assert!(resolve_path("nope/alice", &teams, &agents)
            .unwrap_err()
            .contains("no team named \"nope\""));
        assert!(resolve_path("web//alice", &teams, &agents)
            .unwrap_err()
            .contains("no empty parts"));
    }
}
