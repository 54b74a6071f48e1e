//! Hidden sessions: out of the person's sight (iTerm2 buries them; tmux gives each
//! a window of its own left out of the status line), still running, read, typed
//! into and waited on as any session; `list` says which are hidden.

use cohort_backends::{PaneId, PaneInfo};

use crate::{input, Terminal, TerminalError};

impl Terminal {
    /// Hides `pane` (`hidden`) or shows it again; returns it as listed after. Where
    /// a session's windows go is its lock holder's to change.
    pub async fn set_hidden(
        &self,
        pane: &PaneId,
        hidden: bool,
        caller: &input::Caller,
    ) -> Result<PaneInfo, TerminalError> {
        crate::names::check_opt(crate::names::NameKind::Owner, caller.owner.as_deref())?;
        self.check_lock(pane, caller).await?;
        self.backend.set_hidden(pane, hidden).await?;
        self.list()
            .await?
            .into_iter()
            .find(|p| &p.id == pane)
            .ok_or_else(|| cohort_backends::BackendError::PaneGone(pane.clone()).into())
    }
}
