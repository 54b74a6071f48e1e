//! Agents and teams: who works in which session, in which teams.
//!
//! An agent name is a target like a session name, so it may not take a session's
//! name; a team stands for its agents and those of its sub-teams. Registering an
//! agent stamps it on its pane (another process, or this one after a restart, finds
//! it there) and titles the pane `Team :: Agent`.

use std::collections::BTreeSet;

use cohort_backends::PaneInfo;

use crate::{
    names::{self, NameKind},
    registry::{AgentRecord, TeamRecord},
    Terminal, TerminalError,
};

impl Terminal {
    /// Registers `agent` as working in the session of `pane`, in `teams` (created as
    /// needed); stamps the pane and titles it `Team :: Agent`. Returns the agent's
    /// record.
    pub async fn register_agent(
        &self,
        agent: &str,
        pane: &PaneInfo,
        role: Option<&str>,
        teams: &[String],
    ) -> Result<AgentRecord, TerminalError> {
        names::check(NameKind::Agent, agent)?;
        names::check_opt(NameKind::Role, role)?;
        for team in teams {
            names::check(NameKind::Team, team)?;
        }
        // An agent named like another session would make that name mean two things.
        if let Some(other) = self
            .list()
            .await?
            .iter()
            .find(|p| p.id != pane.id && p.identity.as_ref().is_some_and(|i| i.name == agent))
        {
            return Err(TerminalError::NameTaken {
                name: agent.to_string(),
                by: format!("session {agent:?} ({}) has it", other.id),
            });
        }
        let Some(mut identity) = pane.identity.clone() else {
            return Err(TerminalError::InvalidArgument(format!(
                "pane {} is not a cohort session: open it with cohort first",
                pane.id
            )));
        };
        let (name, session, role_owned, teams_owned) = (
            agent.to_string(),
            identity.id.clone(),
            role.map(str::to_string),
            teams.to_vec(),
        );
        self.db(move |r| {
            r.register_agent(&name, Some(&session), role_owned.as_deref(), &teams_owned)
        })
        .await?;
        identity.agent = Some(agent.to_string());
        if let Some(team) = teams.first() {
            identity.team = Some(team.clone());
        }
        self.backend.stamp_identity(&pane.id, &identity).await?;
        let title = agent_title(identity.team.as_deref(), agent);
        self.backend.set_title(&pane.id, &title).await?;
        if let Some(team) = &identity.team {
            self.show_team_on_join(&pane.id, team).await;
        }
        self.agent(agent).await?.ok_or_else(|| {
            TerminalError::Internal(format!("agent {agent:?} vanished right after registering"))
        })
    }

    /// Every registered agent.
    pub async fn agents(&self) -> Result<Vec<AgentRecord>, TerminalError> {
        self.db(|r| r.agents()).await
    }

    /// The agent named `name`, if registered.
    pub async fn agent(&self, name: &str) -> Result<Option<AgentRecord>, TerminalError> {
        let name = name.to_string();
        Ok(self
            .db(|r| r.agents())
            .await?
            .into_iter()
            .find(|a| a.name == name))
    }

    /// Forgets an agent (its session stays); false when there was none.
    pub async fn remove_agent(&self, name: &str) -> Result<bool, TerminalError> {
        names::check(NameKind::Agent, name)?;
        let name = name.to_string();
        self.db(move |r| r.remove_agent(&name)).await
    }

    /// Creates a team (or moves it under `parent`), returning it.
    pub async fn create_team(
        &self,
        name: &str,
        parent: Option<&str>,
    ) -> Result<TeamRecord, TerminalError> {
        names::check(NameKind::Team, name)?;
        names::check_opt(NameKind::Team, parent)?;
        let (team, parent) = (name.to_string(), parent.map(str::to_string));
        self.db(move |r| r.create_team(&team, parent.as_deref()))
            .await?;
        let created = self.team(name).await?.ok_or_else(|| {
            TerminalError::Internal(format!("team {name:?} vanished right after creating it"))
        })?;
        self.write_team_profiles().await;
        Ok(created)
    }

    /// Every team with its members.
    pub async fn teams(&self) -> Result<Vec<TeamRecord>, TerminalError> {
        self.db(|r| r.teams()).await
    }

    /// The team named `name`, if it exists.
    pub async fn team(&self, name: &str) -> Result<Option<TeamRecord>, TerminalError> {
        let name = name.to_string();
        Ok(self.teams().await?.into_iter().find(|t| t.name == name))
    }

    /// The agents of `team` and its sub-teams; an error when there is no such team.
    pub async fn team_members(&self, team: &str) -> Result<BTreeSet<String>, TerminalError> {
        let teams = self.teams().await?;
        if !teams.iter().any(|t| t.name == team) {
            return Err(TerminalError::InvalidArgument(format!(
                "no team named {team:?}: create it first (list_teams shows what exists)"
            )));
        }
        Ok(team_agents(team, &teams))
    }

    /// Removes a team (its agents stay, without it; sub-teams lose their parent);
    /// false when there was none.
    pub async fn remove_team(&self, name: &str) -> Result<bool, TerminalError> {
        names::check(NameKind::Team, name)?;
        let name = name.to_string();
        let removed = self.db(move |r| r.remove_team(&name)).await?;
        if removed {
            self.write_team_profiles().await;
        }
        Ok(removed)
    }

    /// Puts `agent` in `team` (`member`), or takes it out; returns the agent.
    pub async fn assign_team(
        &self,
        agent: &str,
        team: &str,
        member: bool,
    ) -> Result<AgentRecord, TerminalError> {
        names::check(NameKind::Agent, agent)?;
        names::check(NameKind::Team, team)?;
        let (a, t) = (agent.to_string(), team.to_string());
        self.db(move |r| r.assign_team(&a, &t, member)).await?;
        self.agent(agent)
            .await?
            .ok_or_else(|| TerminalError::Internal(format!("agent {agent:?} vanished")))
    }
}

/// The agents of `team` and its sub-teams (each once), from the team tree `teams`.
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

/// A pane's title from the hierarchy: `Team :: Agent`, or the agent alone.
pub(crate) fn agent_title(team: Option<&str>, agent: &str) -> String {
    match team {
        Some(team) => format!("{team} :: {agent}"),
        None => agent.to_string(),
    }
}
