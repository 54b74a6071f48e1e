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
        /// Its number in the order agents' states were published on this process's
        /// bus, set when published (0 before). Not sent outside the process.
        #[serde(default, skip_serializing)]
        seq: u64,
    },
}

impl EngineEvent {
    /// An agent's state, to publish.
    pub fn agent_state(
        agent: impl Into<String>,
        state: impl Into<String>,
        reason: impl Into<String>,
    ) -> EngineEvent {
        EngineEvent::AgentState {
            agent: agent.into(),
            state: state.into(),
            reason: reason.into(),
            seq: 0,
        }
    }

    /// Whether `other` is the same event, whatever number a bus gave it (an agent's
    /// state is numbered when published).
    pub fn same_as(&self, other: &EngineEvent) -> bool {
        match (self, other) {
            (
                EngineEvent::AgentState {
                    agent,
                    state,
                    reason,
                    ..
                },
                EngineEvent::AgentState {
                    agent: a,
                    state: s,
                    reason: r,
                    ..
                },
            ) => (agent, state, reason) == (a, s, r),
            _ => self == other,
        }
    }

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
    /// Published by this process (not received from another through the relay).
    pub here: bool,
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
    /// is numbered and kept as it is sent, so the numbers follow the stream's order
    /// and a follower that reads the state after the event finds it there.
    pub fn publish(&self, event: EngineEvent) {
        self.publish_from(event, true);
    }

    /// Publishes an event another process published (received through the relay).
    pub fn publish_received(&self, event: EngineEvent) {
        self.publish_from(event, false);
    }

    fn publish_from(&self, mut event: EngineEvent, here: bool) {
        let EngineEvent::AgentState {
            agent,
            state,
            reason,
            seq,
        } = &mut event
        else {
            let _ = self.sender.send(event);
            return;
        };
        let mut states = self.states();
        states.published += 1;
        *seq = states.published;
        let since = match states.last.get(agent.as_str()) {
            Some(last) if last.state == *state => last.since,
            _ => crate::registry::now(),
        };
        let seen = AgentStateSeen {
            state: state.clone(),
            reason: reason.clone(),
            since,
            seq: *seq,
            here,
        };
        states.last.insert(agent.clone(), seen);
        let _ = self.sender.send(event);
    }

    /// The last state published of `agent`, if any was.
    pub fn agent_state(&self, agent: &str) -> Option<AgentStateSeen> {
        self.states().last.get(agent).cloned()
    }

    /// The last state published of every agent, oldest first.
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

    /// Follows the stream from now on, with the follower's place in agents' states
    /// (see [`StatesFollowed`]), taken together: no state falls between them.
    pub fn subscribe_states(&self) -> (broadcast::Receiver<EngineEvent>, StatesFollowed) {
        let states = self.states();
        let events = self.sender.subscribe();
        let place = StatesFollowed {
            taken: states.published,
        };
        (events, place)
    }
}

/// Where a follower of the stream stands in agents' states, so that it takes in
/// each once and in order, also when it lags: after a lag it takes the last state of
/// each agent published since the last it took ([`StatesFollowed::missed`]), then
/// skips the older states the stream still holds for it ([`StatesFollowed::fresh`]).
/// The states between two of an agent's, lost in the lag, stay lost; the one that
/// holds now does not.
#[derive(Clone, Copy, Debug)]
pub struct StatesFollowed {
    /// The number of the last state taken in.
    taken: u64,
}

impl StatesFollowed {
    /// Whether `event`, just received, is new to the follower: anything but an
    /// agent's state taken in already after a lag.
    pub fn fresh(&mut self, event: &EngineEvent) -> bool {
        match event {
            EngineEvent::AgentState { seq, .. } if *seq != 0 => {
                let fresh = *seq > self.taken;
                self.taken = self.taken.max(*seq);
                fresh
            }
            _ => true,
        }
    }

    /// After a lag: the last state of each agent published since the last taken in
    /// (with whether this process published it), oldest first; they count as taken.
    pub fn missed(&mut self, bus: &EventBus) -> Vec<(EngineEvent, bool)> {
        let missed: Vec<_> = bus
            .agent_states()
            .into_iter()
            .filter(|(_, seen)| seen.seq > self.taken)
            .collect();
        if let Some((_, last)) = missed.last() {
            self.taken = last.seq;
        }
        missed
            .into_iter()
            .map(|(agent, seen)| {
                let here = seen.here;
                let event = EngineEvent::AgentState {
                    agent,
                    state: seen.state,
                    reason: seen.reason,
                    seq: seen.seq,
                };
                (event, here)
            })
            .collect()
    }
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
        EngineEvent::agent_state(agent, state, reason)
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

    /// The agents' states `follower` takes in from `events` (following `bus`), as
    /// `agent:state`, until the stream is empty.
    fn take_in(
        bus: &EventBus,
        events: &mut broadcast::Receiver<EngineEvent>,
        follower: &mut StatesFollowed,
    ) -> Vec<String> {
        let mut taken = Vec::new();
        let mut note = |event: &EngineEvent| {
            if let EngineEvent::AgentState { agent, state, .. } = event {
                taken.push(format!("{agent}:{state}"));
            }
        };
        loop {
            match events.try_recv() {
                Ok(event) if follower.fresh(&event) => note(&event),
                Ok(_) => {}
                Err(broadcast::error::TryRecvError::Lagged(_)) => {
                    for (event, _) in follower.missed(bus) {
                        note(&event);
                    }
                }
                Err(_) => return taken,
            }
        }
    }

    #[test]
    fn a_follower_that_lagged_takes_each_state_once_and_in_order() {
        let bus = EventBus::default();
        let (mut events, mut follower) = bus.subscribe_states();
        let flood = |n: u64| {
            for at in 0..n {
                bus.publish(EngineEvent::Output {
                    pane: PaneId::new("%1"),
                    from: at,
                    to: at + 1,
                });
            }
        };
        bus.publish(state("w1", "busy", "turn 1"));
        assert_eq!(take_in(&bus, &mut events, &mut follower), ["w1:busy"]);
        // Lost in the lag: w1 asks, then works again; w2 asks. Still held by the
        // stream after it: w1 asks again, then w2 is idle.
        bus.publish(state("w1", "needs_approval", "rm"));
        bus.publish(state("w1", "busy", "turn 1"));
        bus.publish(state("w2", "needs_approval", "push"));
        flood(BACKLOG as u64);
        bus.publish(state("w1", "needs_approval", "rm again"));
        bus.publish(state("w2", "idle", "done"));
        // Taken in once each, the state each holds now: not the older ones the stream
        // still held after the lag, not a second time from the stream.
        assert_eq!(
            take_in(&bus, &mut events, &mut follower),
            ["w1:needs_approval", "w2:idle"]
        );
        // Then on as usual.
        bus.publish(state("w2", "busy", "turn 2"));
        assert_eq!(take_in(&bus, &mut events, &mut follower), ["w2:busy"]);
    }
}
