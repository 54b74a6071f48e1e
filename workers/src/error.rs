//! What can go wrong with workers; each error says what to do next.

use std::path::PathBuf;

use cohort_terminal::{registry::RegistryError, TerminalError};

/// Errors of the worker operations.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The terminal (its sessions, input, registry, names) failed.
    #[error(transparent)]
    Terminal(#[from] TerminalError),
    /// No worker has that name.
    #[error("no worker named {name:?}; {known}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// What exists.
        known: String,
    },
    /// An argument is unusable.
    #[error("{0}")]
    Invalid(String),
    /// A git command failed.
    #[error("git {command} failed in {dir}: {message}")]
    Git {
        /// The subcommand and its arguments.
        command: String,
        /// Where it ran.
        dir: PathBuf,
        /// What git said.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// The worktree's setup script failed; the worker was not started.
    #[error("the setup script failed in {worktree} ({status}); its output is in {log}:\n{tail}")]
    Setup {
        /// The worktree.
        worktree: PathBuf,
        /// How it ended.
        status: String,
        /// The full log.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
    /// The agent did not come up.
    #[error("{worker}'s agent did not come up: {why}")]
    NotReady {
        /// The worker.
        worker: String,
        /// What was seen.
        why: String,
    },
    /// A prompt could not be submitted.
    #[error("the prompt to {worker} was not submitted: {why}")]
    NotSubmitted {
        /// The worker.
        worker: String,
        /// What was seen.
        why: String,
    },
    /// Someone else's text is in the composer.
    #[error("{worker}'s composer holds a draft someone typed ({draft:?}); it is not overwritten: send with when: \"idle\" to wait until it is submitted or cleared")]
    Draft {
        /// The worker.
        worker: String,
        /// The start of the draft.
        draft: String,
    },
    /// The worktree has work that would be lost.
    #[error("the worktree {path} has uncommitted work ({files} file(s)); it was kept: commit it, or pass force: true to remove it anyway (the branch is kept either way)")]
    Dirty {
        /// The worktree.
        path: PathBuf,
        /// How many files differ.
        files: usize,
    },
}

impl From<RegistryError> for WorkerError {
    fn from(e: RegistryError) -> Self {
        WorkerError::Terminal(TerminalError::Registry(e))
    }
}

impl From<cohort_backends::BackendError> for WorkerError {
    fn from(e: cohort_backends::BackendError) -> Self {
        WorkerError::Terminal(TerminalError::Backend(e))
    }
}
