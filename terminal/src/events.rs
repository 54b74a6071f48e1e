//! What happens in cohort, as a stream anyone inside the process can follow: output
//! arriving in a pane, commands starting and ending (by the pane's own shell's marks),
//! sessions opening and closing, programs exiting, notifications left, locks taken and
//! released, and whatever else a part of the engine publishes (a worker's state).
//!
//! Watchers, blocking waits, the event feed of the command line and a dashboard all
//! follow [`Terminal::events`] instead of polling. Events carry positions, not bytes: a
//! follower reads the output it wants from the pane's journal. The stream is a
//! broadcast with a bounded backlog: a follower that falls behind is told how many
//! events it missed (and can look at the panes again), the engine never waits for it.
//!
//! Output from every pane shares the stream, so a flood of it can push an agent's
//! change of state out of a slow follower's backlog. The bus therefore also keeps the
//! last state of every agent it carried, numbered in the order published
//! ([`EventBus::agent_state`]): a follower that lagged looks there instead of losing
//! the change.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cohort_backends::PaneId;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::Terminal;

/// Events kept for followers that have not read them yet. The channel allocates them
/// all at once (about 120 bytes each, a megabyte in all), and output from every pane
/// shares it: `seq 1 200000` alone is some 1,200 events (one per `%output` line of
/// tmux). Some followers skip what they missed when they lag (a playbook waiting for
/// an agent's idle state, the relay to other processes), so the backlog stays deep.
const BACKLOG: usize = 8192;

/// Something that happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EngineEvent {
    /// Output arrived: the pane's journal grew from `from` to `to`.
    Output {
        /// The pane.
        pane: PaneId,
        /// Journal offset before.
        from: u64,
        /// Journal offset after.
        to: u64,
    },
    /// The pane's shell started a command (its own, signed mark).
    CommandStarted {
        /// The pane.
        pane: PaneId,
        /// Journal offset of the start.
        offset: u64,
    },
    /// The pane's shell reported a command's end.
    CommandEnded {
        /// The pane.
        pane: PaneId,
        /// Its exit status, when reported.
        exit_status: Option<i32>,
        /// Journal offset of the end.
        offset: u64,
    },
    /// The pane's program exited.
    PaneExited {
        /// The pane.
        pane: PaneId,
        /// Its exit status, when known.
        exit_status: Option<i32>,
    },
    /// A session was opened.
    SessionOpened {
        /// Its name.
        session: String,
        /// Its pane.
        pane: PaneId,
    },
    /// A session was closed by cohort.
    SessionClosed {
        /// Its name.
        session: String,
        /// Its pane.
        pane: PaneId,
    },
    /// A notification was left for someone.
    Notification {
        /// Who it is for.
        to: String,
        /// Who left it.
        from: String,
        /// Its kind (`access_request`, …).
        kind: String,
        /// The message.
        message: String,
    },
    /// A session's lock was taken (`holder`) or released (`None`).
    LockChanged {
        /// The session's name.
        session: String,
        /// Who holds it now.
        holder: Option<String>,
    },
    /// A session's recording started (`path`, the file it goes to) or ended (`None`).
    RecordingChanged {
        /// The session's name.
        session: String,
        /// Its pane.
        pane: PaneId,
        /// The file, while it records.
        path: Option<String>,
    },
    /// What a human sees of a session changed (`set_appearance`: its title, badge or
    /// colours).
    AppearanceChanged {
        /// The session's name.
        session: String,
        /// Its pane.
        pane: PaneId,
    },
    /// A program in the pane signalled, with its pane's secret (see
    /// [`crate::signals`]).
    Signal {
        /// The pane.
        pane: PaneId,
        /// What it said (control characters removed, at most
        /// [`crate::signals::PAYLOAD_MAX`] bytes).
        payload: String,
    },
    /// A pane came to the front: a human chose it, or a client selected it.
    Focused {
        /// The pane.
        pane: PaneId,
    },
    /// A window's layout changed (a split, a resize, a pane closed), or a window
    /// was added or closed.
    LayoutChanged {
        /// The window.
        window: String,
    },
    /// A pane cohort did not open appeared (a person opened it; it is no session
    /// until adopted, see [`crate::ownership`]).
    OutsidePaneOpened {
        /// The pane.
        pane: PaneId,
        /// Its window's name.
        window: String,
    },
    /// A pane cohort did not open went away.
    OutsidePaneClosed {
        /// The pane.
        pane: PaneId,
        /// Its window's name.
        window: String,
    },
    /// An agent's state changed (published by the part that tracks agents).
    AgentState {
        /// The agent.
        agent: String,
        /// Its state (`idle`, `busy`, `needs_approval`, …).
        state: String,
        /// Why, in words.
        reason: String,
    },
}

impl EngineEvent {
    /// The pane the event is about, if any.
    pub fn pane(&self) -> Option<&PaneId> {
        match self {
            EngineEvent::Output { pane, .. }
            | EngineEvent::CommandStarted { pane, .. }
            | EngineEvent::CommandEnded { pane, .. }
            | EngineEvent::PaneExited { pane, .. }
            | EngineEvent::SessionOpened { pane, .. }
            | EngineEvent::SessionClosed { pane, .. }
            | EngineEvent::RecordingChanged { pane, .. }
            | EngineEvent::Signal { pane, .. }
            | EngineEvent::Focused { pane }
            | EngineEvent::OutsidePaneOpened { pane, .. }
            | EngineEvent::OutsidePaneClosed { pane, .. }
            | EngineEvent::AppearanceChanged { pane, .. } => Some(pane),
            _ => None,
        }
    }
}

/// The last state an agent was published in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentStateSeen {
    /// The state: spawning, ready, busy, idle, needs_approval, stuck, exited.
    pub state: String,
    /// Why, in words.
    pub reason: String,
    /// Unix seconds since the agent holds this state (a state published again keeps
    /// its start).
    pub since: i64,
    /// Its number in the order agents' states were published on this bus (see
    /// [`EventBus::states_published`]).
    pub seq: u64,
}

/// The last state of every agent, and how many states were published.
#[derive(Debug, Default)]
struct AgentStates {
    published: u64,
    last: HashMap<String, AgentStateSeen>,
}

/// The sending side of the stream.
#[derive(Clone, Debug)]
pub struct EventBus {
    sender: broadcast::Sender<EngineEvent>,
    states: Arc<Mutex<AgentStates>>,
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus {
            sender: broadcast::channel(BACKLOG).0,
            states: Arc::default(),
        }
    }
}

impl EventBus {
    /// Publishes `event` to every follower (none listening is fine). An agent's state
    /// is kept first, so a follower that reads it after the event finds it there.
    pub fn publish(&self, event: EngineEvent) {
        if let EngineEvent::AgentState {
            agent,
            state,
            reason,
        } = &event
        {
            let mut states = self.states();
            states.published += 1;
            let seq = states.published;
            let since = match states.last.get(agent) {
                Some(last) if last.state == *state => last.since,
                _ => unix_now(),
            };
            states.last.insert(
                agent.clone(),
                AgentStateSeen {
                    state: state.clone(),
                    reason: reason.clone(),
                    since,
                    seq,
                },
            );
        }
        let _ = self.sender.send(event);
    }

    /// The last state published of `agent`, if any was.
    pub fn agent_state(&self, agent: &str) -> Option<AgentStateSeen> {
        self.states().last.get(agent).cloned()
    }

    /// The last state published of every agent.
    pub fn agent_states(&self) -> Vec<(String, AgentStateSeen)> {
        let states = self.states();
        let mut all: Vec<_> = states
            .last
            .iter()
            .map(|(agent, seen)| (agent.clone(), seen.clone()))
            .collect();
        all.sort_by_key(|(_, seen)| seen.seq);
        all
    }

    /// How many agents' states were published so far: a state whose
    /// [`AgentStateSeen::seq`] is above what this said at some moment was published
    /// after it.
    pub fn states_published(&self) -> u64 {
        self.states().published
    }

    fn states(&self) -> std::sync::MutexGuard<'_, AgentStates> {
        self.states.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Follows the stream from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<EngineEvent> {
        self.sender.subscribe()
    }
}

/// Unix seconds now.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Terminal {
    /// Follows what happens from now on (see [`EngineEvent`]).
    pub fn events(&self) -> broadcast::Receiver<EngineEvent> {
        self.bus.subscribe()
    }

    /// The bus itself, for parts that publish and follow from tasks of their own.
    pub fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// Publishes an event on the engine's stream (for parts that track more than the
    /// engine itself does, such as agents' states).
    pub fn publish(&self, event: EngineEvent) {
        self.bus.publish(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(agent: &str, state: &str, reason: &str) -> EngineEvent {
        EngineEvent::AgentState {
            agent: agent.into(),
            state: state.into(),
            reason: reason.into(),
        }
    }

    #[test]
    fn the_bus_keeps_each_agents_last_state_numbered_in_order() {
        let bus = EventBus::default();
        let mut events = bus.subscribe();
        bus.publish(state("w1", "busy", "turn 1"));
        bus.publish(state("w2", "idle", "turn ended"));
        let before = bus.states_published();
        bus.publish(state("w1", "idle", "turn ended"));
        // A flood of output pushes them out of the follower's backlog.
        for at in 0..BACKLOG as u64 + 10 {
            bus.publish(EngineEvent::Output {
                pane: PaneId::new("%1"),
                from: at,
                to: at + 1,
            });
        }
        assert!(matches!(
            events.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(_))
        ));
        let w1 = bus.agent_state("w1").unwrap();
        assert_eq!(
            (w1.state.as_str(), w1.reason.as_str()),
            ("idle", "turn ended")
        );
        assert!(w1.seq > before);
        assert!(bus.agent_state("w2").unwrap().seq <= before);
        let order: Vec<String> = bus.agent_states().into_iter().map(|(a, _)| a).collect();
        assert_eq!(order, ["w2", "w1"]);
        assert_eq!(bus.agent_state("w3"), None);
        // The same state again keeps when it began.
        let since = w1.since;
        bus.publish(state("w1", "idle", "still"));
        let again = bus.agent_state("w1").unwrap();
        assert_eq!((again.since, again.reason.as_str()), (since, "still"));
        assert_eq!(again.seq, bus.states_published());
    }
}
