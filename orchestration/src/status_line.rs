//! The status line a human watching sees: each session's team in a few words
//! (`web ● 2 working · 1 needs approval`), on tmux's status line and in iTerm2's
//! `user.cohortStatus` variable (see `TerminalBackend::set_status_line`).
//!
//! It is redrawn from the event bus, never polled: an agent's state, or a session
//! opened or closed, marks it stale, and it is drawn [`SETTLE`] after the first such
//! change, each pane only when its line changed (an agent put in a team shows at
//! the next change). One process
//! per terminal server draws it (the notifier's, see [`crate::hub`]).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use cohort_backends::PaneId;
use cohort_terminal::events::EngineEvent;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::registry::OrchestrationTables;
use crate::Orchestrator;

/// How long the line waits for a burst of changes to end before it is drawn.
pub const SETTLE: Duration = Duration::from_millis(150);

/// The states in the order a line names them, with the words it uses.
const ORDER: &[(&str, &str)] = &[
    ("busy", "working"),
    ("needs_approval", "needs approval"),
    ("stuck", "stuck"),
    ("idle", "idle"),
    ("ready", "ready"),
    ("spawning", "starting"),
    ("exited", "exited"),
];

/// A group's line: `label ● 2 working · 1 needs approval`; `None` when no member
/// has a known state.
pub fn line(label: &str, states: &[&str]) -> Option<String> {
    if states.is_empty() {
        return None;
    }
    let mut counts: BTreeMap<usize, (usize, String)> = BTreeMap::new();
    for state in states {
        let (rank, word) = match ORDER.iter().position(|(s, _)| s == state) {
            Some(i) => (i, ORDER[i].1.to_string()),
            None => (ORDER.len(), state.replace('_', " ")),
        };
        counts.entry(rank).or_insert((0, word)).0 += 1;
    }
    let parts: Vec<String> = counts
        .into_values()
        .map(|(n, word)| format!("{n} {word}"))
        .collect();
    Some(format!("{label} ● {}", parts.join(" · ")))
}

impl Orchestrator {
    /// Keeps every session's status line drawn until `stop`.
    pub(crate) async fn status_lines(self, stop: CancellationToken) {
        let mut events = self.terminal.events();
        // By pane and session: a new tmux server reuses pane ids for new sessions.
        let mut shown: HashMap<(PaneId, String), Option<String>> = HashMap::new();
        // When to draw: set by the first change of a burst, never pushed back, so
        // a stream of other events (a busy pane's output) cannot hold it off.
        let mut due = Some(tokio::time::Instant::now() + SETTLE);
        loop {
            let at = due;
            let wait = async move {
                match at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending::<()>().await,
                }
            };
            let stale = tokio::select! {
                _ = stop.cancelled() => return,
                _ = wait => {
                    due = None;
                    self.draw_status_lines(&mut shown).await;
                    false
                }
                event = events.recv() => match event {
                    Ok(EngineEvent::AgentState { .. })
                    | Ok(EngineEvent::SessionOpened { .. })
                    | Ok(EngineEvent::SessionClosed { .. })
                    | Err(RecvError::Lagged(_)) => true,
                    Ok(_) => false,
                    Err(RecvError::Closed) => return,
                },
            };
            if stale {
                due.get_or_insert_with(|| tokio::time::Instant::now() + SETTLE);
            }
        }
    }

    /// Draws each session's line where it changed.
    async fn draw_status_lines(&self, shown: &mut HashMap<(PaneId, String), Option<String>>) {
        // Over the connection there is: drawing never starts a terminal server (the
        // last session's close ends cohort's tmux server).
        let (Ok(Some(panes)), Ok(agents)) = (
            self.terminal.list_if_running().await,
            self.terminal.agents().await,
        ) else {
            return;
        };
        // Each agent's state as this process saw it last, else as recorded: the
        // recorded ones read once for all agents.
        let recorded = self
            .terminal
            .db(|r| r.agent_states())
            .await
            .unwrap_or_default();
        let mut state_of: HashMap<String, String> = HashMap::new();
        for agent in &agents {
            let state = match self.hub.state_of(&agent.name) {
                Some(now) => Some(now.state),
                None => recorded
                    .iter()
                    .find(|row| row.agent == agent.name)
                    .map(|row| row.state.clone()),
            };
            if let Some(state) = state {
                state_of.insert(agent.name.clone(), state);
            }
        }
        let members = |team: &str| -> Vec<&str> {
            agents
                .iter()
                .filter(|a| a.teams.iter().any(|t| t == team))
                .filter_map(|a| state_of.get(&a.name).map(String::as_str))
                .collect()
        };
        shown.retain(|(pane, session), _| {
            panes
                .iter()
                .any(|p| &p.id == pane && p.identity.as_ref().is_some_and(|i| &i.id == session))
        });
        for pane in &panes {
            let Some(identity) = &pane.identity else {
                continue;
            };
            let agent = agents.iter().find(|a| {
                identity.agent.as_deref() == Some(a.name.as_str())
                    || a.session.as_deref() == Some(identity.name.as_str())
            });
            let wanted = match agent {
                Some(agent) => match agent.teams.first() {
                    Some(team) => line(team, &members(team)),
                    None => state_of
                        .get(&agent.name)
                        .and_then(|state| line(&agent.name, &[state.as_str()])),
                },
                None => None,
            };
            let key = (pane.id.clone(), identity.id.clone());
            if shown.get(&key) == Some(&wanted) {
                continue;
            }
            match self
                .terminal
                .backend()
                .set_status_line(&pane.id, wanted.as_deref())
                .await
            {
                Ok(()) => {
                    shown.insert(key, wanted);
                }
                Err(cohort_backends::BackendError::Unsupported { .. }) => return,
                Err(e) => {
                    tracing::debug!(target: "cohort::notify", pane = %pane.id, "status line not drawn: {e}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_counts_states_in_a_fixed_order() {
        assert_eq!(
            line("web", &["idle", "busy", "needs_approval", "busy"]).as_deref(),
            Some("web ● 2 working · 1 needs approval · 1 idle")
        );
        assert_eq!(line("web", &[]), None);
        assert_eq!(
            line("solo", &["rate_limited"]).as_deref(),
            Some("solo ● 1 rate limited")
        );
    }
}
