//! Team profiles: what every new pane of a team starts with — its colour and its
//! environment variables — and whether the team's notifications are raised as
//! alerts.
//!
//! The variables are kept in the registry and given to each pane of the team as it
//! starts, on every backend (a variable the caller gives for the pane wins). Where
//! the terminal keeps profiles of its own ([`cohort_backends::Capabilities::team_profiles`]:
//! iTerm2's Dynamic Profiles), every team also has one there with its colour and
//! badge, rewritten when the teams change (a profile carries no variables), and a
//! new pane of the team starts from it; elsewhere the colour is shown on the pane as it joins.

use cohort_backends::{team_profile_name, TeamProfile};

use crate::names::{self, NameKind};
use crate::{Terminal, TerminalError};

/// At most this many variables per team.
const MAX_VARIABLES: usize = 64;

/// At most this many bytes per value.
const MAX_VALUE: usize = 4096;

/// At most this many bytes per name.
const MAX_NAME: usize = 128;

/// Variables the terminal and the shell launch set for every pane.
const TERMINALS_OWN: &[&str] = &["TERM", "TMUX", "TMUX_PANE", "SHELL", "TERM_SESSION_ID"];

impl Terminal {
    /// Replaces `team`'s environment variables. Names are a shell's (`[A-Za-z_]`
    /// then `[A-Za-z0-9_]`), not cohort's own `COHORT_…`; values hold no NUL.
    pub async fn set_team_env(
        &self,
        team: &str,
        env: &[(String, String)],
    ) -> Result<(), TerminalError> {
        names::check(NameKind::Team, team)?;
        check_env(env)?;
        let (name, env_owned) = (team.to_string(), env.to_vec());
        self.db(move |r| r.set_team_env(&name, &env_owned)).await?;
        Ok(())
    }

    /// Turns `team`'s alerts on or off: what needs a person about one of its
    /// sessions (an agent needing approval, stuck or exited, a budget reached, an
    /// approval timed out) is raised before the people watching that session.
    pub async fn set_team_alerts(&self, team: &str, on: bool) -> Result<(), TerminalError> {
        names::check(NameKind::Team, team)?;
        let name = team.to_string();
        self.db(move |r| r.set_team_alerts(&name, on)).await
    }

    /// Whether `team` raises alerts.
    pub async fn team_alerts(&self, team: &str) -> Result<bool, TerminalError> {
        let name = team.to_string();
        self.db(move |r| r.team_alerts(&name)).await
    }

    /// The teams that raise alerts, in one look.
    pub async fn alerting_teams(&self) -> Result<Vec<String>, TerminalError> {
        self.db(|r| r.alerting_teams()).await
    }

    /// `team`'s environment variables, by name.
    pub async fn team_env(&self, team: &str) -> Result<Vec<(String, String)>, TerminalError> {
        let name = team.to_string();
        self.db(move |r| r.team_env(&name)).await
    }

    /// Writes every team's profile where the terminal keeps them. A failure (the
    /// terminal did not load them in time) is logged once, and this process writes
    /// none after it: the teams' panes are coloured as they open instead, without
    /// waiting for the terminal again.
    pub(crate) async fn write_team_profiles(&self) {
        use std::sync::atomic::Ordering;
        if !self.backend.capabilities().team_profiles || self.profiles_failed.load(Ordering::SeqCst)
        {
            return;
        }
        // One write at a time: the file is replaced whole.
        let _writing = self.profiles_writing.lock().await;
        let written = async {
            let mut profiles = Vec::new();
            for team in self.teams().await? {
                let colour = self.team_colour(&team.name).await?;
                profiles.push(TeamProfile {
                    name: team_profile_name(&team.name),
                    colour: colour.hex,
                    team: team.name,
                });
            }
            self.backend.set_team_profiles(&profiles).await?;
            Ok::<_, TerminalError>(profiles)
        }
        .await;
        let mut profiled = self
            .profiled_teams
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match written {
            Ok(profiles) => *profiled = profiles.into_iter().map(|p| p.team).collect(),
            Err(e) => {
                profiled.clear();
                self.profiles_failed.store(true, Ordering::SeqCst);
                tracing::warn!(target: "cohort::colours", "the teams' profiles were not written, and will not be by this process: {e}");
            }
        }
    }

    /// What a new pane of `team` starts with: the team's variables, and the
    /// terminal's profile of the team when it keeps one.
    pub(crate) async fn team_start(
        &self,
        team: &str,
    ) -> Result<(Vec<(String, String)>, Option<String>), TerminalError> {
        let env = self.team_env(team).await?;
        if !self.backend.capabilities().team_profiles {
            return Ok((env, None));
        }
        let known = |t: &Terminal| {
            t.profiled_teams
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(team)
        };
        // Written once by this process (another may have written them before);
        // a failed write is not tried again at every pane.
        if !known(self)
            && !self
                .profiles_tried
                .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            self.write_team_profiles().await;
        }
        Ok((env, known(self).then(|| team_profile_name(team))))
    }
}

/// Refuses variables a shell could not take, or that would pass for cohort's or
/// the terminal's own.
pub fn check_env(env: &[(String, String)]) -> Result<(), TerminalError> {
    if env.len() > MAX_VARIABLES {
        return Err(TerminalError::InvalidArgument(format!(
            "{} variables: a team has at most {MAX_VARIABLES}",
            env.len()
        )));
    }
    for (name, value) in env {
        let mut chars = name.chars();
        let valid = name.len() <= MAX_NAME
            && chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(TerminalError::InvalidArgument(format!(
                "{:?} is not a variable name: use letters, digits and _, not starting with a digit, at most {MAX_NAME} bytes",
                crate::names::shown(name)
            )));
        }
        if name.starts_with("COHORT_") {
            return Err(TerminalError::InvalidArgument(format!(
                "{name} is cohort's own: cohort sets the COHORT_ variables of each session"
            )));
        }
        if TERMINALS_OWN.contains(&name.as_str()) || name.starts_with("ITERM_") {
            return Err(TerminalError::InvalidArgument(format!(
                "{name} is the terminal's own: tmux and iTerm2 set it for each pane"
            )));
        }
        if value.contains('\0') || value.len() > MAX_VALUE {
            return Err(TerminalError::InvalidArgument(format!(
                "the value of {name} holds a NUL byte or is over {MAX_VALUE} bytes"
            )));
        }
    }
    Ok(())
}
