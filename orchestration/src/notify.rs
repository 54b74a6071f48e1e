//! Notifications: the queue agents read, what leaves messages in it, and the
//! one-line status of every agent.
//!
//! A notification is for one reader (an agent, a lock's owner) or for everyone
//! ([`EVERYONE`]); each reader is handed what is new to it once, and can wait for
//! the next one. Besides what agents leave for each other ([`Orchestrator::notify`]) and
//! access requests, the notifier leaves one for every command that ends with a
//! non-zero status, every session whose program exits, and every agent that becomes
//! idle, needs approval, is stuck or exits; watchers leave one per hit. The queue is
//! kept in the registry within a bound (see [`crate::registry::NOTIFICATIONS_KEPT`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::registry::OrchestrationTables;
use crate::registry::{NotificationRecord, EVERYONE};
use crate::Orchestrator;
use cohort_backends::PaneId;
use cohort_terminal::registry::LockRecord;
use cohort_terminal::{
    events::EngineEvent,
    names::{self, NameKind, NOTE_MAX},
    TerminalError,
};

/// The answer to a request for access.
#[derive(Clone, Debug)]
pub struct AccessAnswer {
    /// The session's name.
    pub session: String,
    /// Who holds the lock; `None` when the session is not locked (go ahead).
    pub holder: Option<LockRecord>,
}

/// Agent states that make a notification when an agent enters them.
pub const NOTABLE_STATES: &[&str] = &["idle", "needs_approval", "stuck", "exited"];

/// How often workers' states and budgets are looked at between their hooks.
const BUDGET_LOOK: std::time::Duration = std::time::Duration::from_secs(5);

/// Notifications waiting for the webhook at most.
const POSTS_QUEUED: usize = 64;

/// A notification to post: kind, from, to, message.
type Post = (String, String, String, String);

/// At most one team alert per pane in this long.
const ALERT_GAP: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a burst of hook events is let finish before the workers are looked at.
const HOOK_BURST: std::time::Duration = std::time::Duration::from_millis(50);

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
    match (cohort_terminal::registry::now() - since).max(0) {
        s if s < 120 => format!("{s} s ago"),
        s if s < 2 * 3600 => format!("{} min ago", s / 60),
        s if s < 2 * 86_400 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}

impl Orchestrator {
    /// Leaves `message` from `from` for `to`: an agent or owner name, a team (each
    /// of its agents gets it), or `*` for everyone. Returns what was left.
    pub async fn notify(
        &self,
        from: &str,
        to: &str,
        kind: &str,
        message: &str,
    ) -> Result<Vec<NotificationRecord>, TerminalError> {
        names::check(NameKind::Owner, from)?;
        names::check(NameKind::Owner, to)?;
        names::check(NameKind::Tag, kind)?;
        names::check_text("message", message, NOTE_MAX, true)?;
        let readers: Vec<String> = if self.terminal.team(to).await?.is_some() {
            self.terminal.team_members(to).await?.into_iter().collect()
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
    ) -> Result<NotificationRecord, TerminalError> {
        let (f, t, k, m) = (
            from.to_string(),
            to.to_string(),
            kind.to_string(),
            message.to_string(),
        );
        let record = self
            .terminal
            .db(move |r| r.notify_bounded(&f, &t, &k, &m))
            .await?;
        self.terminal.publish(EngineEvent::Notification {
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
    ) -> Result<Vec<NotificationRecord>, TerminalError> {
        names::check(NameKind::Owner, reader)?;
        let owner = reader.to_string();
        if all {
            return self.terminal.db(move |r| r.notifications_for(&owner)).await;
        }
        // Follow the stream before looking, so nothing left in between is missed.
        let mut events = self.terminal.events();
        let take = |owner: String| self.terminal.db(move |r| r.take_for(&owner));
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
    pub async fn agent_statuses(&self) -> Result<Vec<AgentStatus>, TerminalError> {
        let agents = self.terminal.agents().await?;
        let sessions = self.terminal.db(|r| r.sessions()).await?;
        let ends = self.terminal.db(|r| r.command_ends()).await?;
        let mut out = Vec::new();
        for agent in agents {
            let state = self.agent_state(&agent.name).await?;
            let record = agent
                .session
                .as_ref()
                .and_then(|name| sessions.iter().find(|s| &s.name == name));
            let name = agent.name.clone();
            let unread = self.terminal.db(move |r| r.unread_for(&name)).await?;
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
    /// notable state. Runs in one process per terminal server (see [`crate::hub`]).
    pub(crate) async fn notifier(&self, stop: CancellationToken) {
        let bus = self.terminal.bus();
        let (mut events, mut states) = bus.subscribe_states();
        let mut last_state: HashMap<String, String> = HashMap::new();
        // The slow work runs beside the event loop, one piece at a time, so the loop
        // never falls behind the bus: looking at workers (their states, budgets and
        // requests) and posting to the webhook.
        let looks = Arc::new(tokio::sync::Notify::new());
        tokio::spawn(self.clone().looker(looks.clone(), stop.clone()));
        let (posts, queue) = tokio::sync::mpsc::channel::<Post>(POSTS_QUEUED);
        tokio::spawn(self.clone().poster(queue, stop.clone()));
        tokio::spawn(self.clone().status_lines(stop.clone()));
        let mut dropped = 0u64;
        loop {
            let event = tokio::select! {
                _ = stop.cancelled() => return,
                e = events.recv() => e,
            };
            match &event {
                // A state change may have spent a budget or left a request waiting.
                Ok(EngineEvent::AgentState { .. }) => looks.notify_one(),
                Ok(EngineEvent::Notification {
                    to,
                    from,
                    kind,
                    message,
                }) => {
                    let post = (kind.clone(), from.clone(), to.clone(), message.clone());
                    if posts.try_send(post).is_err() {
                        dropped += 1;
                        tracing::warn!(target: "cohort::notify", "the webhook is behind: {dropped} notification(s) not posted");
                    }
                }
                _ => {}
            }
            let event = match event {
                Ok(event) => event,
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(target: "cohort::notify", "the notifier fell {n} events behind; what commands and programs did meanwhile made no notifications");
                    // Agents' states are not lost: the state each agent holds now, if
                    // it changed meanwhile, is taken in.
                    for (event, _) in states.missed(bus) {
                        looks.notify_one();
                        if let Err(e) = self.notice(event, &mut last_state).await {
                            tracing::warn!(target: "cohort::notify", "a notification was not made: {e}");
                        }
                    }
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            // A state already taken in after a lag, which the stream still held.
            if !states.fresh(&event) {
                continue;
            }
            if let Err(e) = self.notice(event, &mut last_state).await {
                tracing::warn!(target: "cohort::notify", "a notification was not made: {e}");
            }
        }
    }

    /// Looks at the workers when asked (a state change), when their hooks report
    /// (after a burst settles) and every few seconds; one look at a time, and
    /// requests that came in meanwhile make one more.
    async fn looker(self, asked: Arc<tokio::sync::Notify>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(BUDGET_LOOK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut hooks = self.workers.wakes();
        loop {
            // Everyone on a tick or a state change; after hooks, the workers whose
            // hooks reported.
            let only = tokio::select! {
                _ = stop.cancelled() => return,
                _ = tick.tick() => None,
                _ = asked.notified() => None,
                changed = hooks.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    // Hooks come in bursts: one look for the burst.
                    tokio::time::sleep(HOOK_BURST).await;
                    Some(self.workers.take_woken())
                }
            };
            hooks.borrow_and_update();
            self.look_at_workers(only.as_ref()).await;
        }
    }

    /// Posts the notifications that need a person to the webhook, one at a time and
    /// in order; a queue that fills while the receiver is down drops the newest.
    async fn poster(self, mut queue: tokio::sync::mpsc::Receiver<Post>, stop: CancellationToken) {
        // When each pane was last alerted: one alert per pane per ALERT_GAP.
        let mut alerted: HashMap<PaneId, std::time::Instant> = HashMap::new();
        loop {
            let (kind, from, to, message) = tokio::select! {
                _ = stop.cancelled() => return,
                post = queue.recv() => match post {
                    Some(post) => post,
                    None => return,
                },
            };
            let desktop = self
                .hub
                .desktop
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if let Some(desktop) = desktop.filter(|d| d.wants(&kind, &from, &message)) {
                if let Err(e) = desktop.show(&kind, &from, &message).await {
                    tracing::warn!(target: "cohort::notify", "{e}");
                }
            }
            // A watcher's hit raises its own alert when its watcher asks; a failed
            // command is a watch's to alert (one per failing grep would drown the
            // rest).
            if kind != "watch" && crate::webhook::needs_a_person(&[], &kind, &from, &message) {
                self.alert_team(&from, &message, &mut alerted).await;
            }
            let hook = self
                .hub
                .webhook
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let Some(hook) = hook.filter(|h| h.wants(&kind, &from, &message)) else {
                continue;
            };
            if let Err(e) = hook.post(&kind, &from, &to, &message).await {
                tracing::warn!(target: "cohort::notify", "{e}");
            }
        }
    }

    /// Raises `message` before the people watching the session it concerns, when
    /// that is in a team whose alerts are on: `from` is an agent (any of its
    /// teams), a session, or a team (its first member's session). At most one alert
    /// per pane every [`ALERT_GAP`].
    async fn alert_team(
        &self,
        from: &str,
        message: &str,
        alerted: &mut HashMap<PaneId, std::time::Instant>,
    ) {
        // One look, and none further while no team raises alerts.
        let Ok(loud) = self.terminal.alerting_teams().await else {
            return;
        };
        if loud.is_empty() {
            return;
        }
        let (teams_of, target) = if loud.iter().any(|t| t == from) {
            let Ok(Some(team)) = self.terminal.team(from).await else {
                return;
            };
            let Some(first) = team.members.first() else {
                return;
            };
            (vec![from.to_string()], first.clone())
        } else {
            let teams_of = match self.terminal.agent(from).await {
                Ok(Some(agent)) => agent.teams,
                _ => Vec::new(),
            };
            (teams_of, from.to_string())
        };
        let Ok(pane) = self.terminal.resolve(&target).await else {
            return;
        };
        let in_loud_team = teams_of
            .iter()
            .chain(pane.identity.as_ref().and_then(|i| i.team.as_ref()))
            .any(|t| loud.contains(t));
        if !in_loud_team {
            return;
        }
        let now = std::time::Instant::now();
        if alerted
            .get(&pane.id)
            .is_some_and(|at| now.duration_since(*at) < ALERT_GAP)
        {
            return;
        }
        alerted.insert(pane.id.clone(), now);
        if let Err(e) = self.terminal.backend().alert(&pane.id, message).await {
            tracing::debug!(target: "cohort::notify", pane = %pane.id, error = %e, "the team's alert was not raised");
        }
    }

    /// Brings every worker's state up to date (a change is published, and becomes
    /// a notification above), then looks at their budgets and requests.
    async fn look_at_workers(&self, only: Option<&std::collections::HashSet<String>>) {
        let rows: Vec<_> = self
            .workers
            .worker_rows()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|r| only.is_none_or(|ids| ids.contains(&r.id)))
            .collect();
        for row in &rows {
            let _ = self.workers.observe(row, false).await;
        }
        self.look_at_budgets(&rows).await;
    }

    /// Checks the budgets of the workers and their requests
    /// unanswered past their policy's time: a budget reached is a notification for
    /// everyone, once; a turn interrupted for it, or a request denied for lack of an
    /// answer, is said too.
    async fn look_at_budgets(&self, rows: &[cohort_workers::registry::WorkerRow]) {
        for row in rows {
            let news = self.workers.check_budget(row).await;
            let mut said = Vec::new();
            if let Some(denied) = self.workers.deny_overdue(row).await {
                said.push(("approval_timed_out", denied));
            }
            if let Some(reached) = news.reached {
                self.workers.budget_said(row, true);
                if let Err(e) = self
                    .leave(&row.name, EVERYONE, "budget_reached", &reached)
                    .await
                {
                    self.workers.budget_said(row, false);
                    tracing::warn!(target: "cohort::notify", "a budget notification was not made: {e}");
                }
            }
            if news.interrupted {
                said.push((
                    "budget_interrupt",
                    format!("{}'s turn was interrupted: its budget is spent", row.name),
                ));
            }
            for (kind, message) in said {
                if let Err(e) = self.leave(&row.name, EVERYONE, kind, &message).await {
                    tracing::warn!(target: "cohort::notify", "a budget notification was not made: {e}");
                }
            }
        }
        // Teams' budgets, over what their workers spent between them; said by the
        // team.
        for news in self.workers.check_team_budgets().await {
            if let Some(reached) = news.reached {
                self.workers.team_budget_said(&news.team, true);
                if let Err(e) = self
                    .leave(&news.team, EVERYONE, "budget_reached", &reached)
                    .await
                {
                    self.workers.team_budget_said(&news.team, false);
                    tracing::warn!(target: "cohort::notify", "a budget notification was not made: {e}");
                }
            }
            if !news.interrupted.is_empty() {
                let message = format!(
                    "team {}'s budget is spent: interrupted the turns of {}",
                    news.team,
                    news.interrupted.join(", ")
                );
                if let Err(e) = self
                    .leave(&news.team, EVERYONE, "budget_interrupt", &message)
                    .await
                {
                    tracing::warn!(target: "cohort::notify", "a budget notification was not made: {e}");
                }
            }
        }
    }

    /// The notification (and record) one event makes, if any.
    async fn notice(
        &self,
        event: EngineEvent,
        last_state: &mut HashMap<String, String>,
    ) -> Result<(), TerminalError> {
        match event {
            EngineEvent::CommandEnded {
                pane, exit_status, ..
            } => {
                let Some(session) = self.terminal.session_record(&pane).await? else {
                    return Ok(());
                };
                let id = session.id.clone();
                self.terminal
                    .db(move |r| r.set_command_end(&id, exit_status))
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
                let Some(session) = self.terminal.session_record(&pane).await? else {
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
                ..
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
    async fn speaker(&self, session: &str) -> Result<String, TerminalError> {
        Ok(self
            .terminal
            .agents()
            .await?
            .into_iter()
            .find(|a| a.session.as_deref() == Some(session))
            .map_or_else(|| session.to_string(), |a| a.name))
    }
}

impl Orchestrator {
    /// Asks the holder of the lock on `pane`'s session for access on behalf of
    /// `requester`: leaves them a notification.
    pub async fn request_access(
        &self,
        pane: &PaneId,
        requester: &str,
        reason: Option<&str>,
    ) -> Result<AccessAnswer, TerminalError> {
        names::check(NameKind::Owner, requester)?;
        if let Some(reason) = reason {
            names::check_text("reason", reason, NOTE_MAX, true)?;
        }
        let session = self.terminal.session_of(pane).await?;
        let Some(holder) = self.terminal.lock_of(pane).await? else {
            return Ok(AccessAnswer {
                session: session.name,
                holder: None,
            });
        };
        let message = format!(
            "{requester} asks for access to {}{}",
            session.name,
            reason.map(|r| format!(": {r}")).unwrap_or_default()
        );
        let (from, to, text) = (requester.to_string(), holder.owner.clone(), message.clone());
        self.terminal
            .db(move |r| r.notify(&from, &to, "access_request", &text))
            .await?;
        self.terminal.publish(EngineEvent::Notification {
            to: holder.owner.clone(),
            from: requester.to_string(),
            kind: "access_request".into(),
            message,
        });
        Ok(AccessAnswer {
            session: session.name,
            holder: Some(holder),
        })
    }

    /// Notifications left for `owner` (and for everyone): those not handed out yet
    /// (they count as handed out from now on), or with `all` every one kept. Oldest
    /// first. See [`Orchestrator::notifications_for`], which can also wait.
    pub async fn notifications(
        &self,
        owner: &str,
        all: bool,
    ) -> Result<Vec<NotificationRecord>, TerminalError> {
        self.notifications_for(owner, all, None).await
    }

    /// Every notification not yet handed out, for anyone, oldest first (nothing is
    /// marked as handed out: this is for people watching).
    pub async fn pending_notifications(&self) -> Result<Vec<NotificationRecord>, TerminalError> {
        self.terminal.db(|r| r.pending_notifications()).await
    }
}
