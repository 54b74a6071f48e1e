//! Team messaging: expanding targets and the broadcast cascade.
//!
//! A target names a session, an agent or a team; a team stands for its agents and
//! those of its sub-teams. The cascade decides which message each agent receives
//! when a broadcast, team messages and agent messages are sent together: an agent's
//! own message beats its team's (the nearest team up the hierarchy that has one),
//! which beats the broadcast. Each agent receives exactly one message.

use std::collections::{BTreeMap, BTreeSet};

use super::registry::{AgentRecord, TeamRecord};

/// Agents in `team` and its sub-teams.
pub fn team_agents(team: &str, teams: &[TeamRecord]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut queue = vec![team.to_string()];
    let mut seen = BTreeSet::new();
    while let Some(t) = queue.pop() {
        if !seen.insert(t.clone()) {
            continue;
        }
        if let Some(record) = teams.iter().find(|r| r.name == t) {
            out.extend(record.members.iter().cloned());
        }
        queue.extend(
            teams
                .iter()
                .filter(|r| r.parent.as_deref() == Some(t.as_str()))
                .map(|r| r.name.clone()),
        );
    }
    out
}

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
