//! The broadcast cascade: which message each agent receives.
//!
//! A target names a session, an agent or a team; a team stands for its agents and
//! those of its sub-teams. The cascade decides which message each agent receives
//! when a broadcast, team messages and agent messages are sent together: an agent's
//! own message beats its team's (the nearest team up the hierarchy that has one),
//! which beats the broadcast. Each agent receives exactly one message.

use std::collections::BTreeMap;

use cohort_terminal::{
    hierarchy::{is_path, list_names as names, resolve_path, PathTarget},
    registry::{AgentRecord, TeamRecord},
};

/// Teams an agent belongs to, nearest first, then their ancestors.
fn team_chain(agent: &AgentRecord, teams: &[TeamRecord]) -> Vec<String> {
    let mut chain = Vec::new();
    for team in &agent.teams {
        let mut cur = Some(team.clone());
        while let Some(t) = cur {
            if chain.contains(&t) {
                break;
            }
            cur = teams
                .iter()
                .find(|r| r.name == t)
                .and_then(|r| r.parent.clone());
            chain.push(t);
        }
    }
    chain
}

/// Which message each agent gets. `agents_msgs` and `team_msgs` map names to
/// messages; `broadcast` goes to every agent without a closer one.
pub fn cascade(
    agents: &[AgentRecord],
    teams: &[TeamRecord],
    broadcast: Option<&str>,
    team_msgs: &BTreeMap<String, String>,
    agent_msgs: &BTreeMap<String, String>,
) -> BTreeMap<String, (String, &'static str)> {
    let mut out = BTreeMap::new();
    for agent in agents {
        if let Some(m) = agent_msgs.get(&agent.name) {
            out.insert(agent.name.clone(), (m.clone(), "agent"));
            continue;
        }
        if let Some(m) = team_chain(agent, teams)
            .iter()
            .find_map(|t| team_msgs.get(t))
        {
            out.insert(agent.name.clone(), (m.clone(), "team"));
            continue;
        }
        if let Some(m) = broadcast {
            out.insert(agent.name.clone(), (m.to_string(), "broadcast"));
        }
    }
    out
}

/// Messages by team or agent name.
pub type Messages = BTreeMap<String, String>;

/// Team and agent messages for the broadcast cascade, from messages addressed by
/// hierarchy (`team`, `org/web`, `web/alice`, `alice`): a team or a path to one adds
/// a team message, an agent or a path to one an agent message. Two messages for the
/// same team or agent are refused.
pub fn sort_messages(
    messages: &[(String, String)],
    teams: &[TeamRecord],
    agents: &[AgentRecord],
) -> Result<(Messages, Messages), String> {
    let mut by_team = BTreeMap::new();
    let mut by_agent = BTreeMap::new();
    for (target, message) in messages {
        let target = target.trim();
        let found = if teams.iter().any(|t| t.name == target) {
            PathTarget::Team(target.to_string())
        } else if agents.iter().any(|a| a.name == target) {
            PathTarget::Agent {
                agent: target.to_string(),
                team: String::new(),
            }
        } else if is_path(target) {
            resolve_path(target, teams, agents)?
        } else {
            return Err(format!(
                "message target {target:?} is no team, agent or team path (teams: {}; agents: {})",
                names(teams.iter().map(|t| t.name.as_str())),
                names(agents.iter().map(|a| a.name.as_str()))
            ));
        };
        let (map, name) = match found {
            PathTarget::Team(team) => (&mut by_team, team),
            PathTarget::Agent { agent, .. } => (&mut by_agent, agent),
        };
        if map.insert(name.clone(), message.clone()).is_some() {
            return Err(format!(
                "two messages for {name:?} (from target {target:?}): give each team or agent one"
            ));
        }
    }
    Ok((by_team, by_agent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cohort_terminal::team::team_agents;

    fn agent(name: &str, teams: &[&str]) -> AgentRecord {
        AgentRecord {
            name: name.into(),
            session: Some(format!("s-{name}")),
            role: None,
            teams: teams.iter().map(|t| t.to_string()).collect(),
        }
    }

    fn team(name: &str, parent: Option<&str>, members: &[&str]) -> TeamRecord {
        TeamRecord {
            name: name.into(),
            parent: parent.map(String::from),
            members: members.iter().map(|m| m.to_string()).collect(),
        }
    }

    #[test]
    fn own_beats_team_beats_broadcast() {
        let agents = vec![
            agent("a", &["web"]),
            agent("b", &["web"]),
            agent("c", &["ops"]),
            agent("d", &["ui"]),
        ];
        let teams = vec![
            team("org", None, &[]),
            team("web", Some("org"), &["a", "b"]),
            team("ui", Some("web"), &["d"]),
            team("ops", Some("org"), &["c"]),
        ];
        let team_msgs = BTreeMap::from([("web".to_string(), "web msg".to_string())]);
        let agent_msgs = BTreeMap::from([("a".to_string(), "for a".to_string())]);
        let out = cascade(&agents, &teams, Some("all"), &team_msgs, &agent_msgs);
        assert_eq!(out["a"], ("for a".to_string(), "agent"));
        assert_eq!(out["b"], ("web msg".to_string(), "team"));
        assert_eq!(
            out["d"],
            ("web msg".to_string(), "team"),
            "a sub-team inherits its parent's message"
        );
        assert_eq!(out["c"], ("all".to_string(), "broadcast"));
        assert_eq!(out.len(), 4, "one message per agent");
        assert_eq!(
            team_agents("org", &teams),
            ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect()
        );
    }

    #[test]
    fn hierarchical_messages_become_team_and_agent_messages() {
        let teams = vec![
            team("org", None, &[]),
            team("web", Some("org"), &["alice", "bob"]),
        ];
        let agents: Vec<AgentRecord> = ["alice", "bob"]
            .iter()
            .map(|a| agent(a, &["web"]))
            .collect();
        let messages = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(t, m)| (t.to_string(), m.to_string()))
                .collect()
        };
        let (by_team, by_agent) = sort_messages(
            &messages(&[
                ("org", "all"),
                ("org/web", "web"),
                ("web/alice", "you"),
                ("bob", "b"),
            ]),
            &teams,
            &agents,
        )
        .unwrap();
        assert_eq!(by_team.get("org").map(String::as_str), Some("all"));
        assert_eq!(by_team.get("web").map(String::as_str), Some("web"));
        assert_eq!(by_agent.get("alice").map(String::as_str), Some("you"));
        assert_eq!(by_agent.get("bob").map(String::as_str), Some("b"));
        let twice = sort_messages(
            &messages(&[("web", "a"), ("org/web", "b")]),
            &teams,
            &agents,
        );
        assert!(twice.unwrap_err().contains("two messages for \"web\""));
        let unknown = sort_messages(&messages(&[("nobody", "x")]), &teams, &agents);
        assert!(unknown.unwrap_err().contains("no team, agent or team path"));
    }
}
