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

/// The sending side of the stream.
#[derive(Clone, Debug)]
pub struct EventBus {
    sender: broadcast::Sender<EngineEvent>,
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus {
            sender: broadcast::channel(BACKLOG).0,
        }
    }
}

impl EventBus {
    /// Publishes `event` to every follower (none listening is fine).
    pub fn publish(&self, event: EngineEvent) {
        let _ = self.sender.send(event);
    }

    /// Follows the stream from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<EngineEvent> {
        self.sender.subscribe()
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
