//! The engine's error type: each variant says what went wrong and what to do next.

use cohort_backends::{BackendError, PaneId};

use crate::{
    registry::{LockRecord, RegistryError},
    tripwire::Refusal,
};

/// Errors the engine reports; each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// No session matches the target.
    #[error("no session named {target:?}; {known}")]
    UnknownTarget {
        /// The target as given.
        target: String,
        /// What exists, phrased for the user.
        known: String,
    },
    /// The target is a pane cohort neither opened nor adopted (a person's own).
    #[error("pane {pane} (window {window:?}) is not one of cohort's sessions: cohort did not open it and nobody adopted it, so cohort neither reads nor types into it; if it should, adopt it first (the `adopt` tool, in the layout toolset: `cohort mcp --toolsets core,layout`; or `cohort adopt {}`)", .pane.as_str())]
    NotAdopted {
        /// The pane.
        pane: PaneId,
        /// Its window/tab name.
        window: String,
    },
    /// The name is taken.
    #[error("the name {name:?} is taken: {by}; session and agent names are both targets, so pick another name (or close that session first)")]
    NameTaken {
        /// The name as given.
        name: String,
        /// What holds it.
        by: String,
    },
    /// A name is not usable.
    #[error("invalid {kind} name {name:?}: {why}")]
    InvalidName {
        /// What the name names: session, agent, team, …
        kind: &'static str,
        /// The name as given (its start, when long).
        name: String,
        /// What is wrong with it, and what to do.
        why: String,
    },
    /// The tripwire refused the command.
    #[error("{0}")]
    Refused(Refusal),
    /// Another process holds the pane's input.
    #[error("could not type into {pane}: {reason}; try again in a moment")]
    Busy {
        /// The pane.
        pane: PaneId,
        /// Why.
        reason: String,
    },
    /// An argument is unusable.
    #[error("{0}")]
    InvalidArgument(String),
    /// The registry failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The session's program exited: nothing reads what would be typed.
    #[error("the program in {pane} has exited{}: read its output, or close the session and open a new one", .status.map(|s| format!(" with status {s}")).unwrap_or_default())]
    Exited {
        /// The pane.
        pane: PaneId,
        /// Its exit status, when known.
        status: Option<i32>,
    },
    /// Something inside cohort failed that is not the caller's doing.
    #[error("{0}")]
    Internal(String),
    /// Someone else holds the session's lock.
    #[error("session {:?} is locked by {:?} (for {}; the lock ends when its holder unlocks it or its connection ends): ask for it with request_access, or wait for unlock", .0.session, .0.owner, .0.held_for())]
    Locked(LockRecord),
}
