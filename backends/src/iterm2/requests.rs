//! One function per iTerm2 request the backend makes, and what the replies mean.
//!
//! Each turns a reply into cohort's terms: the status a request failed with becomes
//! a [`BackendError`] that says what happened ([`BackendError::PaneGone`] for a
//! session iTerm2 no longer knows), and a reply of the wrong kind is a protocol
//! error. Also here: the argument checks requests share (session ids, colours).

use std::collections::HashSet;

use crate::error::{BackendError, Result};
use crate::types::PaneId;

use super::conn::{Connection, PendingReply};
use super::proto::client_originated_message::Submessage as Req;
use super::proto::server_originated_message::Submessage as Rep;
use super::proto::{self, *};
use super::Iterm2Backend;

impl Iterm2Backend {
    pub(super) async fn invoke(&self, receiver: &str, invocation: String) -> Result<()> {
        let reply = self
            .call(Req::InvokeFunctionRequest(InvokeFunctionRequest {
                context: Some(invoke_function_request::Context::Method(
                    invoke_function_request::Method {
                        receiver: Some(receiver.to_string()),
                    },
                )),
                invocation: Some(invocation),
                timeout: Some(-1.0),
            }))
            .await?;
        match reply {
            Rep::InvokeFunctionResponse(r) => match r.disposition {
                Some(invoke_function_response::Disposition::Success(_)) => Ok(()),
                Some(invoke_function_response::Disposition::Error(e)) => {
                    Err(BackendError::Protocol(format!(
                        "iTerm2 could not run {}: {}",
                        "the function",
                        e.error_reason.unwrap_or_default()
                    )))
                }
                None => Err(BackendError::Protocol(
                    "iTerm2 answered InvokeFunction without a result".into(),
                )),
            },
            other => Err(unexpected("InvokeFunction", &other)),
        }
    }

    pub(super) async fn set_profile(
        &self,
        pane: &PaneId,
        assignments: Vec<(String, String)>,
    ) -> Result<()> {
        let reply = self
            .call(Req::SetProfilePropertyRequest(SetProfilePropertyRequest {
                target: Some(set_profile_property_request::Target::Session(
                    pane.0.clone(),
                )),
                key: None,
                json_value: None,
                assignments: assignments
                    .into_iter()
                    .map(|(k, v)| set_profile_property_request::Assignment {
                        key: Some(k),
                        json_value: Some(v),
                    })
                    .collect(),
            }))
            .await?;
        match reply {
            Rep::SetProfilePropertyResponse(r) => match r.status() {
                set_profile_property_response::Status::Ok => Ok(()),
                set_profile_property_response::Status::SessionNotFound => {
                    Err(BackendError::PaneGone(pane.clone()))
                }
                other => Err(BackendError::Protocol(format!(
                    "iTerm2 refused the profile change: {other:?}"
                ))),
            },
            other => Err(unexpected("SetProfileProperty", &other)),
        }
    }
}

/// The cursor of a screen read (`screen_contents_only`), counted from the screen's
/// top row: iTerm2 gives it as an absolute line.
pub(super) fn cursor_on_screen(buffer: &GetBufferResponse) -> crate::types::Cursor {
    let top = buffer
        .windowed_coord_range
        .and_then(|w| w.coord_range)
        .and_then(|c| c.start)
        .and_then(|c| c.y)
        .unwrap_or(0);
    let cursor = buffer.cursor.unwrap_or_default();
    crate::types::Cursor {
        x: cursor.x.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
        y: (cursor.y.unwrap_or(0) - top).clamp(0, u16::MAX as i64) as u16,
    }
}

/// Every window, tab and split tree (ListSessions).
pub(super) async fn list_sessions(conn: &Connection) -> Result<ListSessionsResponse> {
    match conn
        .call(Req::ListSessionsRequest(ListSessionsRequest {}))
        .await?
    {
        Rep::ListSessionsResponse(r) => Ok(r),
        other => Err(unexpected("ListSessions", &other)),
    }
}

/// A tab's title from the reply to a `title` variable request; empty when the tab
/// has none or went away.
pub(super) fn tab_title(tab: &str, reply: Rep) -> String {
    parse_variables(&PaneId::new(tab), 1, reply)
        .ok()
        .and_then(|mut v| v.remove(0))
        .unwrap_or_default()
}

/// Sends the question whether a session's program has ended. It asks without side
/// effects: an empty SendText writes nothing (iTerm2 returns before writing an empty
/// string), yet iTerm2 answers it SESSION_NOT_FOUND for a session that exited while
/// its other requests still work. Read the answer with [`exited`].
pub(super) fn ask_exited(conn: &Connection, session: &str) -> Result<PendingReply> {
    conn.send(Req::SendTextRequest(SendTextRequest {
        session: Some(session.to_string()),
        text: Some(String::new()),
        suppress_broadcast: Some(true),
    }))
}

/// The answer to [`ask_exited`]: whether the session's program has ended.
pub(super) fn exited(reply: Rep) -> Result<bool> {
    match reply {
        Rep::SendTextResponse(r) => Ok(r.status() == send_text_response::Status::SessionNotFound),
        other => Err(unexpected("SendText", &other)),
    }
}

/// Line counts of a session: lost off the top, on screen, and scrollback.
pub(super) struct LineCounts {
    pub(super) overflow: i64,
    pub(super) grid: i64,
    pub(super) history: i64,
}

/// A session's line counts (GetProperty `number_of_lines`).
pub(super) async fn line_counts(conn: &Connection, pane: &PaneId) -> Result<LineCounts> {
    let reply = conn
        .call(Req::GetPropertyRequest(GetPropertyRequest {
            identifier: Some(get_property_request::Identifier::SessionId(pane.0.clone())),
            name: Some("number_of_lines".into()),
        }))
        .await?;
    match reply {
        Rep::GetPropertyResponse(r) => {
            if r.status() != get_property_response::Status::Ok {
                return Err(BackendError::PaneGone(pane.clone()));
            }
            let v: serde_json::Value =
                serde_json::from_str(r.json_value.as_deref().unwrap_or("{}"))
                    .map_err(|e| BackendError::Protocol(format!("number_of_lines: {e}")))?;
            let n = |k: &str| v.get(k).and_then(|x| x.as_i64()).unwrap_or(0);
            Ok(LineCounts {
                overflow: n("overflow"),
                grid: n("grid"),
                history: n("history"),
            })
        }
        other => Err(unexpected("GetProperty", &other)),
    }
}

/// The active session of every tab, from a FocusResponse; `None` when the reply
/// is not one.
pub(super) fn active_sessions(reply: Rep) -> Option<HashSet<String>> {
    use focus_changed_notification::Event;
    match reply {
        Rep::FocusResponse(r) => Some(
            r.notifications
                .into_iter()
                .filter_map(|n| match n.event {
                    Some(Event::Session(id)) => Some(id),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    }
}

pub(super) fn property(key: &str, json_value: String) -> ProfileProperty {
    ProfileProperty {
        key: Some(key.to_string()),
        json_value: Some(json_value),
    }
}

pub(super) fn screen_only() -> proto::LineRange {
    proto::LineRange {
        screen_contents_only: Some(true),
        trailing_lines: None,
        windowed_coord_range: None,
    }
}

pub(super) fn lines_between(start: i64, end: i64) -> proto::LineRange {
    proto::LineRange {
        screen_contents_only: None,
        trailing_lines: None,
        windowed_coord_range: Some(WindowedCoordRange {
            coord_range: Some(CoordRange {
                start: Some(Coord {
                    x: Some(0),
                    y: Some(start),
                }),
                end: Some(Coord {
                    x: Some(0),
                    y: Some(end),
                }),
            }),
            columns: None,
        }),
    }
}

pub(super) fn variable_get(scope: variable_request::Scope, names: &[&str]) -> Req {
    Req::VariableRequest(VariableRequest {
        scope: Some(scope),
        set: Vec::new(),
        get: names.iter().map(|n| n.to_string()).collect(),
    })
}

/// Turns a VariableResponse into JSON-decoded string values (`None` when unset).
pub(super) fn parse_variables(pane: &PaneId, n: usize, reply: Rep) -> Result<Vec<Option<String>>> {
    match reply {
        Rep::VariableResponse(r) => {
            match r.status() {
                variable_response::Status::Ok => {}
                variable_response::Status::SessionNotFound
                | variable_response::Status::TabNotFound => {
                    return Err(BackendError::PaneGone(pane.clone()))
                }
                other => {
                    return Err(BackendError::Protocol(format!(
                        "iTerm2 refused the variable request: {other:?}"
                    )))
                }
            }
            let mut out: Vec<Option<String>> = r
                .values
                .iter()
                .map(|v| match serde_json::from_str::<serde_json::Value>(v) {
                    Ok(serde_json::Value::Null) | Err(_) => None,
                    Ok(serde_json::Value::String(s)) => Some(s),
                    Ok(other) => Some(other.to_string()),
                })
                .collect();
            out.resize(n, None);
            Ok(out)
        }
        other => Err(unexpected("Variable", &other)),
    }
}

pub(super) fn unexpected(what: &str, reply: &Rep) -> BackendError {
    let kind = format!("{reply:?}");
    let kind = kind.split('(').next().unwrap_or("?").to_string();
    BackendError::Protocol(format!("iTerm2 answered {what} with {kind}"))
}

pub(super) async fn get_buffer(
    conn: &Connection,
    session: &str,
    range: proto::LineRange,
) -> Result<GetBufferResponse> {
    let reply = conn
        .call(Req::GetBufferRequest(GetBufferRequest {
            session: Some(session.to_string()),
            line_range: Some(range),
            include_styles: Some(false),
        }))
        .await?;
    match reply {
        Rep::GetBufferResponse(r) => match r.status() {
            get_buffer_response::Status::Ok => Ok(r),
            get_buffer_response::Status::SessionNotFound => {
                Err(BackendError::PaneGone(PaneId::new(session)))
            }
            other => Err(BackendError::Protocol(format!(
                "iTerm2 refused to read session {session}: {other:?}"
            ))),
        },
        other => Err(unexpected("GetBuffer", &other)),
    }
}

pub(super) async fn get_prompt(
    conn: &Connection,
    session: &str,
    id: Option<&str>,
) -> Result<Option<GetPromptResponse>> {
    let reply = conn
        .call(Req::GetPromptRequest(GetPromptRequest {
            session: Some(session.to_string()),
            unique_prompt_id: id.map(str::to_string),
        }))
        .await?;
    match reply {
        Rep::GetPromptResponse(r) => match r.status() {
            get_prompt_response::Status::Ok => Ok(Some(r)),
            get_prompt_response::Status::SessionNotFound => {
                Err(BackendError::PaneGone(PaneId::new(session)))
            }
            _ => Ok(None),
        },
        other => Err(unexpected("GetPrompt", &other)),
    }
}

/// `#rrggbb` → iTerm2's colour dictionary (JSON).
pub(super) fn color_json(color: &str) -> Result<String> {
    let hex = color.strip_prefix('#').unwrap_or(color);
    let bad = || BackendError::InvalidArgument(format!("colour {color:?} is not #rrggbb"));
    if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let c = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| bad());
    let (r, g, b) = (c(0)?, c(2)?, c(4)?);
    Ok(serde_json::json!({
        "Red Component": r as f64 / 255.0,
        "Green Component": g as f64 / 255.0,
        "Blue Component": b as f64 / 255.0,
        "Alpha Component": 1.0,
        "Color Space": "sRGB",
    })
    .to_string())
}

pub(super) fn check_session_id(pane: &PaneId) -> Result<()> {
    let id = pane.as_str();
    if !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b':')
        && id != "all"
        && id != "active"
    {
        Ok(())
    } else {
        Err(BackendError::InvalidArgument(format!(
            "{id:?} is not an iTerm2 session id: they look like 8D1C8B0E-…"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_become_dictionaries() {
        let v: serde_json::Value = serde_json::from_str(&color_json("#ff0080").unwrap()).unwrap();
        assert_eq!(v["Red Component"], 1.0);
        assert!(color_json("red").is_err());
    }

    #[test]
    fn session_ids_are_checked() {
        assert!(check_session_id(&PaneId::new("8D1C8B0E-1A2B-4C3D-9E8F-0123456789AB")).is_ok());
        for bad in ["", "all", "active", "a b", "x\"y"] {
            assert!(check_session_id(&PaneId::new(bad)).is_err(), "{bad}");
        }
    }
}
