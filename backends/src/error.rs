//! The typed error every backend call returns.
//!
//! Each variant carries enough context to act on: which pane, which tmux command,
//! what the other side said. Callers (the engine, the MCP layer) turn these into
//! messages that tell the user what to do next.

use crate::types::PaneId;

/// Everything that can go wrong at the backend boundary.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The pane does not exist (any more).
    #[error(
        "pane {0} is gone: it was closed or its window was killed; list panes to see what exists"
    )]
    PaneGone(PaneId),

    /// tmux answered a command with an error.
    #[error("tmux refused `{cmd}`: {message}")]
    Tmux {
        /// The command as sent (long arguments shortened).
        cmd: String,
        /// What tmux said.
        message: String,
    },

    /// tmux is missing or too old.
    #[error("{0}")]
    TmuxUnavailable(String),

    /// The connection to the terminal program was lost and could not be re-established.
    #[error("connection to {backend} lost: {reason}")]
    Disconnected {
        /// Which backend.
        backend: &'static str,
        /// Why, as far as we know.
        reason: String,
    },

    /// The other side spoke something we did not understand.
    #[error("protocol error: {0}")]
    Protocol(String),

    /// An operation took longer than allowed.
    #[error("timed out after {after_ms} ms waiting for {what}")]
    Timeout {
        /// What we waited for.
        what: String,
        /// How long we waited.
        after_ms: u64,
    },

    /// The backend cannot do this; see [`crate::Capabilities`].
    #[error("the {backend} backend cannot {what}")]
    Unsupported {
        /// Which backend.
        backend: &'static str,
        /// What was asked, phrased as a verb phrase ("set a badge").
        what: &'static str,
    },

    /// A key name that is not in the known list.
    #[error("unknown key {name:?}: use names like Enter, Escape, Tab, BSpace, Up, F1, C-c, M-x, S-Up (see the key reference)")]
    InvalidKey {
        /// The name as given.
        name: String,
    },

    /// An argument was out of range or malformed.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// Input that was sent did not arrive whole.
    #[error("input to pane {pane} did not arrive intact: {detail}")]
    InputLost {
        /// The pane typed into.
        pane: PaneId,
        /// What was checked and what was found.
        detail: String,
    },

    /// ssh could not reach a remote host (network, authentication, host key).
    #[error("host {host} ({destination}) cannot be reached: ssh said: {message}; check that `ssh {destination}` works without a password prompt (an agent or a key), then try again")]
    HostUnreachable {
        /// The host's name in cohort.
        host: String,
        /// Its SSH destination.
        destination: String,
        /// What ssh said.
        message: String,
    },

    /// A remote host's connection stopped answering: a silent network (a lost route,
    /// a cable cut) or a stuck tmux there. The connection is closed; the next call
    /// connects again.
    #[error("host {host} ({destination}) did not answer for {} s while tmux's answer to `{cmd}` was awaited: the network to it may be down or its tmux stuck; cohort closed the connection and connects again on the next call (what was already sent still runs there if the link comes back); check that `ssh {destination}` answers", after_ms / 1000)]
    HostSilent {
        /// The host's name in cohort.
        host: String,
        /// Its SSH destination.
        destination: String,
        /// The command whose answer did not come.
        cmd: String,
        /// How long it was awaited.
        after_ms: u64,
    },

    /// A command cohort ran on a remote host failed.
    #[error("on host {host}: {message}")]
    Remote {
        /// The host's name in cohort.
        host: String,
        /// What the command said.
        message: String,
    },

    /// Local I/O failed (spawning tmux, writing the shell integration files…).
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl BackendError {
    /// Wraps an I/O error with what we were doing when it happened.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        BackendError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Shorthand for results at the backend boundary.
pub type Result<T, E = BackendError> = std::result::Result<T, E>;
