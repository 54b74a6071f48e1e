//! Events a backend reports, and the fan-out that delivers them to every subscriber.
//!
//! Events are delivered in the order they happened for each pane: the output bytes
//! that precede a prompt mark always arrive before the mark. Subscribers get an
//! unbounded queue each, so a slow subscriber costs memory, never lost output.

use std::sync::Mutex;

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::types::{PaneId, WindowId};

/// A shell-integration prompt mark (OSC 133).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptMark {
    /// `A`: the prompt is about to be drawn; the shell is idle.
    PromptStart,
    /// `B`: the prompt is drawn; typed input follows.
    InputStart,
    /// `C`: the command was accepted and its output follows.
    CommandStart,
    /// `D`: the command finished, with its exit status when the shell reported one.
    CommandFinished {
        /// Exit status.
        exit_status: Option<i32>,
    },
}

impl PromptMark {
    /// For `D`, the exit status it reported (`Some(None)` when none was); `None` for
    /// the other marks.
    pub fn finished(&self) -> Option<Option<i32>> {
        match self {
            PromptMark::CommandFinished { exit_status } => Some(*exit_status),
            _ => None,
        }
    }
}

/// What a prompt mark carried besides its kind.
///
/// cohort's shell integration signs every mark it sends
/// (`ESC ] 133 ; D ; 0 ; cohort=<token> BEL`) with a one-time token the shell keeps in
/// an unexported variable (see [`crate::pad`]; on iTerm2, with the pane's key): a
/// program that prints a mark (`printf '\033]133;D;0\007'`, `cat` of a recorded
/// terminal log, a remote host's own shell integration) cannot sign it, so its marks
/// can be told from the shell's. A mark the shell sends on its way out (its
/// exit trap) says so, and what is typed after it would be lost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MarkParams {
    /// The `cohort=<token>` signature, when the mark has one.
    pub key: Option<String>,
    /// Sent as the shell exits.
    pub exiting: bool,
}

/// Something that happened in a terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendEvent {
    /// Bytes the program wrote, raw (escape sequences included). Each chunk ends on
    /// a UTF-8 character boundary when the stream is valid UTF-8.
    Output {
        /// Pane.
        pane: PaneId,
        /// The bytes.
        bytes: Bytes,
    },
    /// A prompt mark, placed right after the output bytes that preceded it.
    Prompt {
        /// Pane.
        pane: PaneId,
        /// The mark.
        mark: PromptMark,
        /// Its signature, and whether the shell sent it on its way out.
        params: MarkParams,
    },
    /// The foreground process changed (for example from `bash` to `sleep` and back).
    /// tmux samples this at most once a second.
    ForegroundChanged {
        /// Pane.
        pane: PaneId,
        /// New foreground command name.
        command: String,
    },
    /// The pane's process exited; the pane stays (dead) until closed.
    PaneExited {
        /// Pane.
        pane: PaneId,
        /// Exit status when known.
        exit_status: Option<i32>,
    },
    /// The pane entered or left copy mode.
    ModeChanged {
        /// Pane.
        pane: PaneId,
    },
    /// Output of this pane was discarded by the terminal (flow control); re-read the
    /// screen to resynchronise.
    OutputLost {
        /// Pane.
        pane: PaneId,
    },
    /// A window's layout changed (split, resize, pane closed).
    LayoutChanged {
        /// Window.
        window: WindowId,
    },
    /// A window was closed.
    WindowClosed {
        /// Window.
        window: WindowId,
    },
    /// The connection to the terminal program was lost; output may be missing until
    /// [`BackendEvent::Reconnected`].
    Disconnected {
        /// Why.
        reason: String,
    },
    /// The connection was re-established (to the same terminal server).
    Reconnected,
    /// A barrier: every event the terminal sent before the [`TerminalBackend::sync`]
    /// call that returned `token` was emitted before this one.
    ///
    /// [`TerminalBackend::sync`]: crate::TerminalBackend::sync
    Synced {
        /// The token `sync` returned.
        token: u64,
    },
    /// The connection was re-established to a *new* terminal server (tmux was killed
    /// and started again): every pane of the old one is gone, and new panes may reuse
    /// their ids. Whatever a subscriber kept per pane belongs to the old server.
    ServerRestarted,
}

impl BackendEvent {
    /// The pane this event is about, if it is about one.
    pub fn pane(&self) -> Option<&PaneId> {
        match self {
            BackendEvent::Output { pane, .. }
            | BackendEvent::Prompt { pane, .. }
            | BackendEvent::ForegroundChanged { pane, .. }
            | BackendEvent::PaneExited { pane, .. }
            | BackendEvent::ModeChanged { pane }
            | BackendEvent::OutputLost { pane } => Some(pane),
            _ => None,
        }
    }
}

/// A subscription: events from the moment it was taken.
pub type EventStream = mpsc::UnboundedReceiver<BackendEvent>;

/// Fan-out of events to subscribers; dropped subscribers are forgotten on the next event.
#[derive(Debug, Default)]
pub struct EventHub {
    subscribers: Mutex<Vec<mpsc::UnboundedSender<BackendEvent>>>,
    /// The last [`BackendEvent::Synced`] token handed out.
    synced: std::sync::atomic::AtomicU64,
}

impl EventHub {
    /// A new hub with no subscribers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a subscription.
    pub fn subscribe(&self) -> EventStream {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().push(tx);
        rx
    }

    /// Delivers an event to every live subscriber.
    pub fn emit(&self, event: BackendEvent) {
        let mut subscribers = self.lock();
        subscribers.retain(|tx| tx.send(event.clone()).is_ok());
    }

    /// Emits a [`BackendEvent::Synced`] barrier with a new token, and returns it.
    pub fn synced(&self) -> u64 {
        let token = self
            .synced
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        self.emit(BackendEvent::Synced { token });
        token
    }

    /// Number of live subscribers (as of the last event).
    pub fn subscriber_count(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<mpsc::UnboundedSender<BackendEvent>>> {
        // A poisoned lock only means another thread panicked while pushing; the
        // vector itself is always consistent.
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner())
    }
}
