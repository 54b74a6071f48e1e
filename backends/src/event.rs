//! Events a backend reports, and the fan-out that delivers them to every subscriber.
//!
//! Events are delivered in the order they happened for each pane: the output bytes
//! that precede a prompt mark always arrive before the mark. Subscribers get an
//! unbounded queue each, so a slow subscriber costs memory, never lost output.

use std::sync::{Arc, Mutex};

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
    /// A program in the pane sent a custom control sequence (`OSC 1337 ;
    /// Custom=id=<identity>:<payload>`, iTerm2's form; found in the output stream
    /// where the terminal does not report it itself). The identity is as claimed:
    /// whoever acts on it checks it.
    Signal {
        /// Pane.
        pane: PaneId,
        /// The `id` the sequence carried.
        identity: String,
        /// What it says.
        payload: String,
    },
    /// A pane (or a window) came to the front: a human chose it, or a client
    /// selected it. `pane` when the terminal names it; else `window`'s active pane.
    Focused {
        /// The window, when named.
        window: Option<WindowId>,
        /// The pane, when named.
        pane: Option<PaneId>,
    },
    /// A window's layout changed (split, resize, pane closed), or a window was added.
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
    /// [`BackendEvent::Reconnected`]. (A remote tmux server sends neither: it reads
    /// back what its panes printed meanwhile, and reports
    /// [`BackendEvent::OutputLost`] for a pane where it could not.)
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
            | BackendEvent::Signal { pane, .. }
            | BackendEvent::OutputLost { pane } => Some(pane),
            _ => None,
        }
    }
}

impl BackendEvent {
    /// The event as the layers above know it when it comes from `host`'s server: its
    /// pane and window ids carry the host's name (`far:%3`, see [`crate::hosts`]).
    pub fn on_host(self, host: &str) -> BackendEvent {
        let qualify = |id: &str| crate::hosts::qualify(Some(host), id);
        let pane = |p: PaneId| PaneId(qualify(&p.0));
        let window = |w: WindowId| WindowId(qualify(&w.0));
        match self {
            BackendEvent::Output { pane: p, bytes } => BackendEvent::Output {
                pane: pane(p),
                bytes,
            },
            BackendEvent::Prompt {
                pane: p,
                mark,
                params,
            } => BackendEvent::Prompt {
                pane: pane(p),
                mark,
                params,
            },
            BackendEvent::ForegroundChanged { pane: p, command } => {
                BackendEvent::ForegroundChanged {
                    pane: pane(p),
                    command,
                }
            }
            BackendEvent::PaneExited {
                pane: p,
                exit_status,
            } => BackendEvent::PaneExited {
                pane: pane(p),
                exit_status,
            },
            BackendEvent::ModeChanged { pane: p } => BackendEvent::ModeChanged { pane: pane(p) },
            BackendEvent::OutputLost { pane: p } => BackendEvent::OutputLost { pane: pane(p) },
            BackendEvent::Signal {
                pane: p,
                identity,
                payload,
            } => BackendEvent::Signal {
                pane: pane(p),
                identity,
                payload,
            },
            BackendEvent::LayoutChanged { window: w } => {
                BackendEvent::LayoutChanged { window: window(w) }
            }
            BackendEvent::WindowClosed { window: w } => {
                BackendEvent::WindowClosed { window: window(w) }
            }
            BackendEvent::Focused { window: w, pane: p } => BackendEvent::Focused {
                window: w.map(window),
                pane: p.map(pane),
            },
            other => other,
        }
    }
}

/// Where one terminal server's events go: a hub of its own, or the hub of the
/// backend it sits beside, with its ids qualified by its host's name. Events are
/// emitted on the task that reads them from the server, so an answer to a command
/// never overtakes the events the server sent before it, whichever hub they go to.
#[derive(Debug)]
pub struct EventSink {
    hub: Arc<EventHub>,
    host: Option<String>,
}

impl EventSink {
    /// A new hub of its own.
    pub fn new() -> Self {
        EventSink {
            hub: Arc::new(EventHub::new()),
            host: None,
        }
    }

    /// Into `hub`, as the server of `host`.
    pub fn on_host(hub: Arc<EventHub>, host: &str) -> Self {
        EventSink {
            hub,
            host: Some(host.to_string()),
        }
    }

    /// The hub the events go to.
    pub fn hub(&self) -> &Arc<EventHub> {
        &self.hub
    }

    /// Delivers `event`, its ids qualified. A remote server started again is not
    /// passed on: its old panes read as gone when asked, and the event would make the
    /// layers above forget every server's panes.
    pub fn emit(&self, event: BackendEvent) {
        match &self.host {
            None => self.hub.emit(event),
            Some(host) if matches!(event, BackendEvent::ServerRestarted) => {
                tracing::warn!(target: "cohort::hosts", host, "the tmux server on the remote host was started again: its old panes are gone");
            }
            Some(host) => self.hub.emit(event.on_host(host)),
        }
    }

    /// A barrier with a new token of the hub's (see [`EventHub::synced`]).
    pub fn synced(&self) -> u64 {
        self.hub.synced()
    }

    /// A new barrier token, for a [`BackendEvent::Synced`] emitted later, by whoever
    /// knows when the events before it are out (see [`EventHub::sync_token`]).
    pub fn sync_token(&self) -> u64 {
        self.hub.sync_token()
    }

    /// A subscription to the hub.
    pub fn subscribe(&self) -> EventStream {
        self.hub.subscribe()
    }
}

impl Default for EventSink {
    fn default() -> Self {
        Self::new()
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
        let token = self.sync_token();
        self.emit(BackendEvent::Synced { token });
        token
    }

    /// A new barrier token, not emitted: the caller emits
    /// [`BackendEvent::Synced`] with it once every event before the barrier is out.
    pub fn sync_token(&self) -> u64 {
        self.synced
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1
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
