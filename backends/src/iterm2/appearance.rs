//! What a human sees of an iTerm2 session: badge, tab, background and cursor
//! colours (properties of the session's own copy of its profile), and which session
//! of its tab is active.
//!
//! iTerm2 has no "back to the profile's own" for a session's copy, so the first time
//! cohort changes the background or the cursor colour it keeps the value it replaced
//! in a session variable (`user.cohort_saved_background`, `user.cohort_saved_cursor`);
//! a reset puts those back, hides the tab colour and empties the badge.

use std::collections::HashMap;

use crate::error::{BackendError, Result};
use crate::types::{Appearance, PaneId};

use super::literal;
use super::proto::client_originated_message::Submessage as Req;
use super::proto::server_originated_message::Submessage as Rep;
use super::proto::*;
use super::requests::{check_session_id, color_json, parse_variables, unexpected};
use super::Iterm2Backend;

/// Profile keys and the session variables that keep what cohort replaced.
const SAVED: [(&str, &str); 2] = [
    ("Background Color", "user.cohort_saved_background"),
    ("Cursor Color", "user.cohort_saved_cursor"),
];

/// iTerm2's colour dictionary (JSON) → `#rrggbb`.
fn hex_of(json: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let part = |key: &str| {
        value
            .get(key)
            .and_then(serde_json::Value::as_f64)
            .map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8)
    };
    Some(format!(
        "#{:02x}{:02x}{:02x}",
        part("Red Component")?,
        part("Green Component")?,
        part("Blue Component")?
    ))
}

impl Iterm2Backend {
    /// The session's profile values for `keys` (JSON), those it has.
    async fn profile_values(
        &self,
        pane: &PaneId,
        keys: &[&str],
    ) -> Result<HashMap<String, String>> {
        let reply = self
            .call(Req::GetProfilePropertyRequest(GetProfilePropertyRequest {
                session: Some(pane.0.clone()),
                keys: keys.iter().map(|k| k.to_string()).collect(),
            }))
            .await?;
        match reply {
            Rep::GetProfilePropertyResponse(r) => match r.status() {
                get_profile_property_response::Status::Ok => Ok(r
                    .properties
                    .into_iter()
                    .filter_map(|p| Some((p.key?, p.json_value?)))
                    .collect()),
                get_profile_property_response::Status::SessionNotFound => {
                    Err(BackendError::PaneGone(pane.clone()))
                }
                other => Err(BackendError::Protocol(format!(
                    "iTerm2 refused to read the profile: {other:?}"
                ))),
            },
            other => Err(unexpected("GetProfileProperty", &other)),
        }
    }

    /// Session variables, set (JSON values; `null` unsets).
    pub(super) async fn set_variables(
        &self,
        pane: &PaneId,
        values: &[(&str, String)],
    ) -> Result<()> {
        let reply = self
            .call(Req::VariableRequest(VariableRequest {
                scope: Some(variable_request::Scope::SessionId(pane.0.clone())),
                set: values
                    .iter()
                    .map(|(name, value)| variable_request::Set {
                        name: Some(name.to_string()),
                        value: Some(value.clone()),
                    })
                    .collect(),
                get: Vec::new(),
            }))
            .await?;
        parse_variables(pane, 0, reply).map(|_| ())
    }

    /// Applies `look` to the session (see the module's overview).
    pub(super) async fn apply_appearance(&self, pane: &PaneId, look: &Appearance) -> Result<()> {
        check_session_id(pane)?;
        let mut assignments: Vec<(String, String)> = Vec::new();
        let saved_names: Vec<&str> = SAVED.iter().map(|(_, var)| *var).collect();
        let saved = self.variables(pane, &saved_names).await?;
        let asked = [&look.background, &look.cursor_color];
        let mut to_save: Vec<(&str, String)> = Vec::new();
        if look.reset {
            assignments.push(("Badge Text".into(), "\"\"".into()));
            assignments.push(("Use Tab Color".into(), "false".into()));
            for (((key, var), value), asked) in SAVED.iter().zip(&saved).zip(asked) {
                let Some(value) = value else { continue };
                if !value.is_empty() {
                    assignments.push((key.to_string(), value.clone()));
                }
                if asked.is_none() {
                    // Back to the profile's own: nothing of cohort's is left to undo.
                    to_save.push((*var, "null".into()));
                }
            }
        }
        if let Some(badge) = &look.badge {
            assignments.push((
                "Badge Text".into(),
                // The badge is a format: encoded, it shows as written.
                serde_json::Value::String(literal::interpolated(badge)).to_string(),
            ));
        }
        if let Some(color) = &look.tab_color {
            assignments.push(("Tab Color".into(), color_json(color)?));
            assignments.push(("Use Tab Color".into(), "true".into()));
        }
        for (((key, var), was_saved), asked) in SAVED.iter().zip(&saved).zip(asked) {
            let Some(color) = asked else { continue };
            if was_saved.is_none() {
                // What it replaces, kept for a reset ("" when the profile had none).
                let before = self.profile_values(pane, &[key]).await?;
                let value = before.get(*key).cloned().unwrap_or_default();
                to_save.push((*var, serde_json::Value::String(value).to_string()));
            }
            assignments.push((key.to_string(), color_json(color)?));
        }
        if !to_save.is_empty() {
            self.set_variables(pane, &to_save).await?;
        }
        if !assignments.is_empty() {
            self.set_profile(pane, assignments).await?;
        }
        if look.active {
            let reply = self
                .call(Req::ActivateRequest(ActivateRequest {
                    identifier: Some(activate_request::Identifier::SessionId(pane.0.clone())),
                    order_window_front: Some(false),
                    select_tab: Some(true),
                    select_session: Some(true),
                    activate_app: None,
                }))
                .await?;
            match reply {
                Rep::ActivateResponse(r) => match r.status() {
                    activate_response::Status::Ok => {}
                    activate_response::Status::BadIdentifier => {
                        return Err(BackendError::PaneGone(pane.clone()))
                    }
                    other => {
                        return Err(BackendError::Protocol(format!(
                            "iTerm2 could not make {pane} active: {other:?}"
                        )))
                    }
                },
                other => return Err(unexpected("Activate", &other)),
            }
        }
        Ok(())
    }

    /// The badge and colours cohort set on the session.
    pub(super) async fn read_appearance(&self, pane: &PaneId) -> Result<Appearance> {
        check_session_id(pane)?;
        let profile = self
            .profile_values(
                pane,
                &[
                    "Tab Color",
                    "Use Tab Color",
                    "Background Color",
                    "Cursor Color",
                ],
            )
            .await?;
        let shown = self.variables(pane, &["badge"]).await?;
        let saved_names: Vec<&str> = SAVED.iter().map(|(_, var)| *var).collect();
        let saved = self.variables(pane, &saved_names).await?;
        let tab_on = profile.get("Use Tab Color").map(String::as_str) == Some("true");
        let colour = |key: &str| profile.get(key).and_then(|v| hex_of(v));
        Ok(Appearance {
            badge: shown.into_iter().next().flatten().filter(|b| !b.is_empty()),
            tab_color: colour("Tab Color").filter(|_| tab_on),
            background: colour("Background Color").filter(|_| saved[0].is_some()),
            cursor_color: colour("Cursor Color").filter(|_| saved[1].is_some()),
            ..Appearance::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_go_to_iterm2_and_back() {
        let json = color_json("#ff8800").unwrap();
        assert_eq!(hex_of(&json).as_deref(), Some("#ff8800"));
        assert_eq!(hex_of("{}"), None);
    }
}
