//! State for people and diagnostics: the server's, a session's, how a human
//! attaches; and what a human sees: titles, badges, colours, focus.

use cohort_backends::{Appearance, AttachHint, BackendKind, Capabilities, PaneId, PaneState};

use crate::{
    names::{self, LABEL_MAX},
    registry::{LockRecord, SessionRecord},
    Terminal, TerminalError,
};

/// The server's state.
#[derive(Clone, Debug)]
pub struct ServerStatus {
    /// The backend in use.
    pub backend: BackendKind,
    /// What it can do.
    pub capabilities: Capabilities,
    /// Where the registry lives.
    pub registry: std::path::PathBuf,
    /// Set when the registry had to be recovered, or cannot be used now.
    pub registry_warning: Option<String>,
    /// Sessions open.
    pub sessions: usize,
    /// Journal bytes held in memory.
    pub journal_memory: usize,
}

/// A session's state.
#[derive(Clone, Debug)]
pub struct SessionStatus {
    /// Live state from the terminal.
    pub state: PaneState,
    /// Its registry record.
    pub record: Option<SessionRecord>,
    /// Its lock, if held.
    pub lock: Option<LockRecord>,
}

impl Terminal {
    /// The server's state.
    pub async fn status(&self) -> Result<ServerStatus, TerminalError> {
        let locked = self.db(|r| Ok(r.lock_holder())).await?;
        let warning = match (self.registry.recovered(), locked) {
            (Some(recovered), Some(locked)) => Some(format!("{locked}; {recovered}")),
            (one, other) => one.or(other),
        };
        Ok(ServerStatus {
            backend: self.backend.kind(),
            capabilities: self.backend.capabilities(),
            registry: self.registry.path().to_path_buf(),
            registry_warning: warning,
            sessions: self.list().await?.len(),
            journal_memory: self.stats().journal_memory,
        })
    }

    /// The state of the session in `pane`.
    pub async fn session_status(&self, pane: &PaneId) -> Result<SessionStatus, TerminalError> {
        let state = self.backend.pane_state(pane).await?;
        let record = self.session_record(pane).await?;
        let lock = match &record {
            Some(r) => {
                let id = r.id.clone();
                self.db(move |db| db.lock_of(&id)).await?
            }
            None => None,
        };
        Ok(SessionStatus {
            state,
            record,
            lock,
        })
    }

    /// How a human gets to `pane`.
    pub fn attach_hint(&self, pane: &PaneId) -> AttachHint {
        self.backend.attach_hint(pane)
    }

    /// The command a human runs to watch `pane`, or what to do where it is not a
    /// command.
    pub fn attach_text(&self, pane: &PaneId) -> String {
        let hint = self.attach_hint(pane);
        if hint.command_line.is_empty() {
            hint.description
        } else {
            hint.command_line
        }
    }

    /// What the backend can do.
    pub fn capabilities(&self) -> Capabilities {
        self.backend.capabilities()
    }

    /// Sets what a human sees of `pane`. What the backend cannot show is refused
    /// before anything changes.
    pub async fn set_appearance(
        &self,
        pane: &PaneId,
        appearance: &Appearance,
    ) -> Result<(), TerminalError> {
        if let Some(title) = &appearance.title {
            names::check_text("title", title, LABEL_MAX, false)?;
        }
        if let Some(badge) = &appearance.badge {
            names::check_text("badge", badge, LABEL_MAX, false)?;
        }
        for (what, colour) in [
            ("tab_color", &appearance.tab_color),
            ("background", &appearance.background),
        ] {
            if let Some(c) = colour.as_deref().filter(|c| !is_colour(c)) {
                return Err(TerminalError::InvalidArgument(format!(
                    "{what} {c:?} is not a colour: use #rrggbb, e.g. #1e90ff"
                )));
            }
        }
        let caps = self.backend.capabilities();
        let kind = self.backend.kind().name();
        for (asked, able, what) in [
            (appearance.badge.is_some(), caps.badges, "badges"),
            (
                appearance.tab_color.is_some(),
                caps.tab_colors,
                "tab colours",
            ),
            (
                appearance.background.is_some(),
                caps.background_colors,
                "background colours",
            ),
            (appearance.title.is_some(), caps.titles, "titles"),
        ] {
            if asked && !able {
                return Err(TerminalError::InvalidArgument(format!(
                    "the {kind} backend cannot show {what}; nothing was changed (titles work everywhere; use the iTerm2 backend for {what})"
                )));
            }
        }
        self.backend.set_appearance(pane, appearance).await?;
        // Nothing in the terminal's output says so: pages and other processes learn
        // it from here.
        let session = match self.session_record(pane).await {
            Ok(Some(record)) => record.name,
            _ => pane.to_string(),
        };
        self.publish(crate::events::EngineEvent::AppearanceChanged {
            session,
            pane: pane.clone(),
        });
        Ok(())
    }

    /// Brings `pane` to the front for a human.
    pub async fn focus(&self, pane: &PaneId) -> Result<(), TerminalError> {
        Ok(self.backend.focus(pane).await?)
    }
}

/// `#rrggbb`.
fn is_colour(text: &str) -> bool {
    text.len() == 7 && text.starts_with('#') && text[1..].chars().all(|c| c.is_ascii_hexdigit())
}
