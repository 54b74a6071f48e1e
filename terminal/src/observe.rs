//! What watchers see of a pane without disturbing anyone: its screen with colours,
//! raw journal bytes by position, the last command cohort typed and the last verdict
//! its shell reported. Nothing here moves a caller's read cursor or takes a lock a
//! writer needs for long; the dashboard and recordings are built on it.

use cohort_backends::{PaneId, Screen};

use crate::{registry::SessionRecord, Terminal, TerminalError};

/// What a pane's shell last said about its commands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LastCommand {
    /// The text cohort last typed before Enter, if it typed any.
    pub typed: Option<String>,
    /// Whether the shell announced a command's start and not yet its end.
    pub running: bool,
    /// The exit status of the last command the shell reported finished: `Some(None)`
    /// when it finished without a status, `None` when none finished yet.
    pub exit: Option<Option<i32>>,
    /// Set when the pane's program exited, with its status when known.
    pub exited: Option<Option<i32>>,
}

impl Terminal {
    /// The rendered screen with its colours and attributes as SGR sequences (see
    /// [`cohort_backends::TerminalBackend::read_screen_styled`]).
    pub async fn screen_styled(&self, pane: &PaneId) -> Result<Screen, TerminalError> {
        Ok(self.backend.read_screen_styled(pane).await?)
    }

    /// Where the pane's journal ends now (the offset the next output starts at).
    pub fn journal_end(&self, pane: &PaneId) -> u64 {
        self.runtimes.get(pane).lock().journal.len()
    }

    /// The pane's raw output between two journal offsets (clamped to what exists);
    /// an error when part of it was dropped (see the journal's disk cap).
    pub fn journal_bytes(&self, pane: &PaneId, from: u64, to: u64) -> std::io::Result<Vec<u8>> {
        self.runtimes.get(pane).lock().journal.read(from, to)
    }

    /// The last command typed into the pane and the last verdict its shell gave.
    pub fn last_command(&self, pane: &PaneId) -> LastCommand {
        let runtime = self.runtimes.get(pane);
        let data = runtime.lock();
        LastCommand {
            typed: data
                .commands
                .iter()
                .rev()
                .find(|c| !c.continues)
                .map(|c| c.text.clone()),
            running: data.command_running(),
            exit: data.marks.iter().rev().find_map(|m| m.mark.finished()),
            exited: data.exited,
        }
    }

    /// The registry's records of this terminal server's sessions.
    pub async fn registry_sessions(&self) -> Result<Vec<SessionRecord>, TerminalError> {
        let server = self.server_key.clone();
        let mut sessions = self.db(|r| r.sessions()).await?;
        sessions.retain(|s| s.server == server);
        Ok(sessions)
    }
}
