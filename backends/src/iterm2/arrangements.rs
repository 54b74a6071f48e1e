//! iTerm2's own saved arrangements (Window › Restore Window Arrangement): a window
//! of cohort's saved under a name there too, so that a person can open it again
//! from iTerm2's menu, without cohort. cohort's windows are iTerm2 tabs, and
//! SavedArrangement keeps whole iTerm2 windows, one per name (SAVE with the
//! window's id): the windows holding an arrangement's tabs are saved, their other
//! tabs with them. LIST answers every name iTerm2 holds (iTerm2 3.4 and later).
//! iTerm2 has no request to delete one: its Arrangements settings do. The first
//! arrangement iTerm2 keeps becomes its default one.

use crate::error::{BackendError, Result};
use crate::types::WindowId;

use super::proto::client_originated_message::Submessage as Req;
use super::proto::server_originated_message::Submessage as Rep;
use super::proto::*;
use super::requests::{list_sessions, unexpected};
use super::Iterm2Backend;

impl Iterm2Backend {
    /// Saves the iTerm2 windows holding the tabs `tabs` as iTerm2's arrangements:
    /// the first as `name`, the next as `name (2)`, and so on, each replacing one
    /// of its name. iTerm2 keeps whole windows, so a window's other tabs are in
    /// its arrangement too. Answers the names saved.
    pub(super) async fn save_window_arrangements(
        &self,
        tabs: &[WindowId],
        name: &str,
    ) -> Result<Vec<String>> {
        if name.trim().is_empty() {
            return Err(BackendError::InvalidArgument(
                "an arrangement needs a name".into(),
            ));
        }
        let conn = self.conn().await?;
        let layout = list_sessions(&conn).await?;
        let mut windows: Vec<String> = Vec::new();
        for tab in tabs {
            let window = layout
                .windows
                .iter()
                .find(|w| w.tabs.iter().any(|t| t.tab_id.as_deref() == Some(&tab.0)))
                .and_then(|w| w.window_id.clone())
                .ok_or_else(|| {
                    BackendError::InvalidArgument(format!(
                        "iTerm2 has no tab {tab}: it was closed; list windows and try again"
                    ))
                })?;
            if !windows.contains(&window) {
                windows.push(window);
            }
        }
        let mut saved = Vec::new();
        for (i, window) in windows.iter().enumerate() {
            let named = match i {
                0 => name.to_string(),
                i => format!("{name} ({})", i + 1),
            };
            self.save_window(window, &named).await?;
            saved.push(named);
        }
        Ok(saved)
    }

    /// Saves the iTerm2 window `window` as the arrangement `name`.
    async fn save_window(&self, window: &str, name: &str) -> Result<()> {
        // An empty window id would save every window, the person's too.
        if window.is_empty() {
            return Err(BackendError::Protocol(
                "iTerm2 listed a window without an id".into(),
            ));
        }
        let reply = self
            .call(Req::SavedArrangementRequest(SavedArrangementRequest {
                name: Some(name.to_string()),
                action: Some(saved_arrangement_request::Action::Save as i32),
                window_id: Some(window.to_string()),
            }))
            .await?;
        match reply {
            Rep::SavedArrangementResponse(r) => match r.status() {
                saved_arrangement_response::Status::Ok => Ok(()),
                saved_arrangement_response::Status::WindowNotFound => {
                    Err(BackendError::InvalidArgument(format!(
                        "iTerm2 window {window} closed while it was being saved: try again"
                    )))
                }
                other => Err(BackendError::Protocol(format!(
                    "iTerm2 refused to save window {window} as the arrangement {name:?}: {other:?}"
                ))),
            },
            other => Err(unexpected("SavedArrangement", &other)),
        }
    }

    /// Every arrangement iTerm2 holds, by name.
    pub(super) async fn arrangement_names(&self) -> Result<Vec<String>> {
        // LIST came with protocol 1.6 (iTerm2 3.4); an older iTerm2 would read the
        // request as a RESTORE.
        if !self.conn().await?.at_least(1, 6) {
            return Err(BackendError::Unsupported {
                backend: "iterm2",
                what: "list its saved arrangements before iTerm2 3.4",
            });
        }
        let reply = self
            .call(Req::SavedArrangementRequest(SavedArrangementRequest {
                name: None,
                action: Some(saved_arrangement_request::Action::List as i32),
                window_id: None,
            }))
            .await?;
        match reply {
            Rep::SavedArrangementResponse(r) => match r.status() {
                saved_arrangement_response::Status::Ok => Ok(r.names),
                other => Err(BackendError::Protocol(format!(
                    "iTerm2 refused to list its arrangements: {other:?}"
                ))),
            },
            other => Err(unexpected("SavedArrangement", &other)),
        }
    }
}
