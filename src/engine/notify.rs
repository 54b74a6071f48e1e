//! Notifications: the queue agents read, what leaves messages in it, and the
//! one-line status of every agent.
//!
//! A notification is for one reader (an agent, a lock's owner) or for everyone
//! ([`EVERYONE`]); each reader is handed what is new to it once, and can wait for
//! the next one. Besides what agents leave for each other ([`Engine::notify`]) and
//! access requests, the notifier leaves one for every command that ends with a
//! non-zero status, every session whose program exits, and every agent that becomes
//! idle, needs approval, is stuck or exits; watchers leave one per hit. The queue is
//! kept in the registry within a bound (see [`super::registry::NOTIFICATIONS_KEPT`]).

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::events::EngineEvent;
use super::hub::unix_now;
use super::names::{self, NameKind, NOTE_MAX};
use super::registry::{NotificationRecord, EVERYONE};
use super::{Engine, EngineError};

/// Agent states that make a notification when an agent enters them.
pub const NOTABLE_STATES: &[&str] = &["idle", "needs_approval", "stuck", "exited"];

/// One agent's status, for a one-line summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentStatus {
    /// The agent.
    pub agent: String,
    /// Its teams.
    pub teams: Vec<String>,
    /// Its session, if open.
    pub session: Option<String>,
    /// Its state (`unknown` when nothing reported one).
    pub state: String,
    /// Why.
    pub reason: String,
    /// Unix seconds since the state holds.
    pub since: Option<i64>,
    /// The last command typed in its session through cohort.
    pub last_command: Option<String>,
    /// The exit status of the last command that ended there.
    pub last_exit: Option<i32>,
    /// Notifications it has not been handed.
    pub unread: i64,
}

impl AgentStatus {
    /// `alice (web) idle since 2 min ago: turn ended; last: cargo test → exit 1; 2 unread`.
    pub fn line(&self) -> String {
        let teams = if self.teams.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.teams.join(", "))
        };
        let since = self
            .since
            .map(|s| format!(" since {}", ago(s)))
            .unwrap_or_default();
        let reason = if self.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", self.reason)
        };
        let last = match (&self.last_command, self.last_exit) {
            (Some(c), Some(s)) => format!("; last: {} → exit {s}", short(c)),
            (Some(c), None) => format!("; last: {}", short(c)),
            (None, Some(s)) => format!("; last exit {s}"),
            (None, None) => String::new(),
        };
        let session = match &self.session {
            Some(_) => String::new(),
            None => "; no open session".into(),
        };
        format!(
            "{}{teams} {}{since}{reason}{last}{session}; {} unread",
            self.agent, self.state, self.unread
        )
    }
}

/// A command line shortened for one line.
fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > 60 {
        format!("{}…", line.chars().take(60).collect::<String>())
    } else {
        line.to_string()
    }
}

/// How long ago Unix second `since` was: `42 s ago`, `3 min ago`, `2 h ago`.
pub fn ago(since: i64) -> String {
    match (unix_now() - since).max(0) {
        s if s < 120 => format!("{s} s ago"),
        s if s < 2 * 3600 => format!("{} min ago", s / 60),
        s if s < 2 * 86_400 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}

impl Engine {
    /// Leaves `message` from `from` for `to`: an agent or owner name, a team (each
    /// of its agents gets it), or `*` for everyone. Returns what was left.
    pub async fn notify(
        &self,
        from: &str,
        to: &str,
        kind: &str,
        message: &str,
    ) -> Result<Vec<NotificationRecord>, EngineError> {
        names::check(NameKind::Owner, from)?;
        names::check(NameKind::Owner, to)?;
        names::check(NameKind::Tag, kind)?;
        names::check_text("message", message, NOTE_MAX, true)?;
        let readers: Vec<String> = if self.team(to).await?.is_some() {
            self.team_members(to).await?.into_iter().collect()
        } else {
            vec![to.to_string()]
        };
        let mut left = Vec::new();
        for reader in readers {
            left.push(self.leave(from, &reader, kind, message).await?);
        }
        Ok(left)
    }

    /// Stores one notification and publishes it.
    pub(crate) async fn leave(
        &self,
        from: &str,
        to: &str,
        kind: &str,
        message: &str,
    ) -> Result<NotificationRecord, EngineError> {
        let (f, t, k, m) = (
            from.to_string(),
            to.to_string(),
            kind.to_string(),
            message.to_string(),
        );
        let record = self.db(move |r| r.notify_bounded(&f, &t, &k, &m)).await?;
        self.bus.publish(EngineEvent::Notification {
            to: record.target.clone(),
            from: record.source.clone(),
            kind: record.kind.clone(),
            message: record.message.clone(),
        });
        Ok(record)
    }

    /// What `reader` has not been handed yet (left for it, or for everyone), oldest
    /// first; with `all`, every notification kept for it. With `wait` and nothing
    /// new, waits up to that long for the next one.
    pub async fn notifications_for(
        &self,
        reader: &str,
        all: bool,
        wait: Option<Duration>,
    ) -> Result<Vec<NotificationRecord>, EngineError> {
        names::check(NameKind::Owner, reader)?;
        let owner = reader.to_string();
        if all {
            return self.db(move |r| r.notifications_for(&owner)).await;
        }
        // Follow the stream before looking, so nothing left in between is missed.
        let mut events = self.events();
        let take = |owner: String| self.db(move |r| r.take_for(&owner));
        let found = take(owner.clone()).await?;
        let Some(limit) = wait.filter(|_| found.is_empty()) else {
            return Ok(found);
        };
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Err(_) => return Ok(Vec::new()),
                Ok(Ok(EngineEvent::Notification { to, .. })) if to == owner || to == EVERYONE => {}
                Ok(Err(RecvError::Lagged(_))) => {}
                Ok(Err(RecvError::Closed)) => return Ok(Vec::new()),
                Ok(Ok(_)) => continue,
            }
            let found = take(owner.clone()).await?;
            if !found.is_empty() {
                return Ok(found);
            }
        }
    }

    /// Every agent's status, one entry each, by name.
    pub async fn agent_statuses(&self) -> Result<Vec<AgentStatus>, EngineError> {
        let agents = self.agents().await?;
        let sessions = self.db(|r| r.sessions()).await?;
        let ends = self.db(|r| r.command_ends()).await?;
        let mut out = Vec::new();
        for agent in agents {
            let state = self.agent_state(&agent.name).await?;
            let record = agent
                .session
                .as_ref()
                .and_then(|name| sessions.iter().find(|s| &s.name == name));
            let name = agent.name.clone();
            let unread = self.db(move |r| r.unread_for(&name)).await?;
            out.push(AgentStatus {
                teams: agent.teams.clone(),
                session: agent.session.clone(),
                state: state
                    .as_ref()
                    .map_or_else(|| "unknown".into(), |s| s.state.clone()),
                reason: state
                    .as_ref()
                    .map_or_else(|| "no state reported yet".into(), |s| s.reason.clone()),
                since: state.map(|s| s.since),
                last_command: record.and_then(|r| r.last_command.clone()),
                last_exit: record
                    .and_then(|r| ends.iter().find(|e| e.session_id == r.id))
                    .and_then(|e| e.exit_status),
                unread,
                agent: agent.name,
            });
        }
        Ok(out)
    }

    /// Turns what happens into notifications for everyone, until `stop`: commands
    /// that end with a non-zero status, programs that exit, agents entering a
    /// notable state. Runs in one process per terminal server (see [`super::hub`]).
    pub(crate) async fn notifier(&self, stop: CancellationToken) {
        let mut events = self.events();
        let mut last_state: HashMap<String, String> = HashMap::new();
        loop {
            let event = tokio::select! {
                _ = stop.cancelled() => return,
                e = events.recv() => e,
            };
            let event = match event {
                Ok(event) => event,
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(target: "cohort::notify", "the notifier fell {n} events behind; some notifications were not made");
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            if let Err(e) = self.notice(event, &mut last_state).await {
                tracing::warn!(target: "cohort::notify", "a notification was not made: {e}");
            }
        }
    }

    /// The notification (and record) one event makes, if any.
    async fn notice(
        &self,
        event: EngineEvent,
        last_state: &mut HashMap<String, String>,
    ) -> Result<(), EngineError> {
        match event {
            EngineEvent::CommandEnded {
                pane, exit_status, ..
            } => {
                let Some(session) = self.session_record(&pane).await? else {
                    return Ok(());
                };
                let id = session.id.clone();
                self.db(move |r| r.set_command_end(&id, exit_status))
                    .await?;
                if let Some(status) = exit_status.filter(|s| *s != 0) {
                    let what = session
                        .last_command
                        .as_deref()
                        .map(|c| format!("`{}`", short(c)))
                        .unwrap_or_else(|| "a command".into());
                    let from = self.speaker(&session.name).await?;
                    self.leave(
                        &from,
                        EVERYONE,
                        "command_failed",
                        &format!("{what} in {} ended with status {status}", session.name),
                    )
                    .await?;
                }
            }
            EngineEvent::PaneExited { pane, exit_status } => {
                let Some(session) = self.session_record(&pane).await? else {
                    return Ok(());
                };
                let from = self.speaker(&session.name).await?;
                let status = exit_status
                    .map(|s| format!(" with status {s}"))
                    .unwrap_or_default();
                self.leave(
                    &from,
                    EVERYONE,
                    "session_exited",
                    &format!("the program in {} exited{status}", session.name),
                )
                .await?;
            }
            EngineEvent::AgentState {
                agent,
                state,
                reason,
            } => {
                let changed =
                    last_state.insert(agent.clone(), state.clone()) != Some(state.clone());
                if changed && NOTABLE_STATES.contains(&state.as_str()) {
                    let why = if reason.is_empty() {
                        String::new()
                    } else {
                        format!(": {reason}")
                    };
                    self.leave(
                        &agent,
                        EVERYONE,
                        "agent_state",
                        &format!("{agent} is {state}{why}"),
                    )
                    .await?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Who speaks for a session: the agent working there, else the session.
    async fn speaker(&self, session: &str) -> Result<String, EngineError> {
        Ok(self
            .agents()
            .await?
            .into_iter()
            .find(|a| a.session.as_deref() == Some(session))
            .map_or_else(|| session.to_string(), |a| a.name))
    }
}
