//! Profiles, properties and functions: Set/GetProfileProperty on a session's own copy
//! of the one profile, Get/SetProperty, and InvokeFunction (`iterm2.set_title`,
//! `iterm2.set_name`).

use std::collections::HashMap;

use cohort_backends::iterm2::proto::*;

use crate::variables::{evaluate, invocation, Scope};
use crate::{lock, State};

use super::targets;

/// Guid of the one profile the fake has.
pub const DEFAULT_GUID: &str = "C0DE0000-0000-4000-8000-000000000001";

pub(crate) fn default_profile() -> Vec<(String, String)> {
    [
        ("Name", "\"Default\""),
        ("Guid", &format!("\"{DEFAULT_GUID}\"")),
        ("Badge Text", "\"\""),
        ("Use Tab Color", "false"),
        ("Close Sessions On End", "true"),
        ("Columns", "80"),
        ("Rows", "24"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

pub(crate) fn set_profile(
    state: &State,
    r: SetProfilePropertyRequest,
) -> SetProfilePropertyResponse {
    use set_profile_property_response::Status;
    let status = |s: Status| SetProfilePropertyResponse {
        status: Some(s as i32),
    };
    let assignments: Vec<(String, String)> = match (&r.key, &r.json_value) {
        // The deprecated single pair wins when both are present.
        (Some(k), Some(v)) => vec![(k.clone(), v.clone())],
        _ => r
            .assignments
            .iter()
            .map(|a| {
                (
                    a.key.clone().unwrap_or_default(),
                    a.json_value.clone().unwrap_or_default(),
                )
            })
            .collect(),
    };
    if assignments
        .iter()
        .any(|(k, v)| k.is_empty() || serde_json::from_str::<serde_json::Value>(v).is_err())
    {
        return status(Status::RequestMalformed);
    }
    let sessions = match r.target {
        Some(set_profile_property_request::Target::Session(id)) => targets(state, &id),
        Some(set_profile_property_request::Target::GuidList(list)) => {
            if list.guids.iter().all(|g| g == DEFAULT_GUID) {
                targets(state, "all")
            } else {
                return status(Status::BadGuid);
            }
        }
        None => return status(Status::RequestMalformed),
    };
    if sessions.is_empty() {
        return status(Status::SessionNotFound);
    }
    for s in sessions {
        for (k, v) in &assignments {
            lock(&s.profile).insert(k.clone(), v.clone());
            // The name is a format: what shows is its evaluation.
            if k == "Name" {
                if let Ok(format) = serde_json::from_str::<String>(v) {
                    let shown = evaluate(state, &Scope::Session(s.clone()), &format, false);
                    *lock(&s.name) = shown.unwrap_or_default();
                }
            }
        }
    }
    status(Status::Ok)
}

pub(crate) fn get_profile(
    state: &State,
    r: GetProfilePropertyRequest,
) -> GetProfilePropertyResponse {
    let Some(session) = lock(&state.world).session(r.session.as_deref().unwrap_or("")) else {
        return GetProfilePropertyResponse {
            status: Some(get_profile_property_response::Status::SessionNotFound as i32),
            properties: Vec::new(),
        };
    };
    let mut all: HashMap<String, String> = default_profile().into_iter().collect();
    all.extend(lock(&session.profile).clone());
    let mut keys: Vec<String> = if r.keys.is_empty() {
        all.keys().cloned().collect()
    } else {
        r.keys.clone()
    };
    keys.sort();
    GetProfilePropertyResponse {
        status: Some(0),
        properties: keys
            .into_iter()
            .filter_map(|k| {
                let v = all.get(&k)?.clone();
                Some(ProfileProperty {
                    key: Some(k),
                    json_value: Some(v),
                })
            })
            .collect(),
    }
}

/// InvokeFunction, for the two functions cohort calls: `iterm2.set_title` on a tab
/// (or window) and `iterm2.set_name` on a session. As in iTerm2 the invocation is
/// an expression: its string literals are interpolated, and the title or name it
/// gives is a format again, evaluated for what shows.
pub(crate) fn invoke(state: &State, r: InvokeFunctionRequest) -> InvokeFunctionResponse {
    use invoke_function_response::{Disposition, Error, Status, Success};
    let fail = |status: Status, reason: String| InvokeFunctionResponse {
        disposition: Some(Disposition::Error(Error {
            status: Some(status as i32),
            error_reason: Some(reason),
        })),
    };
    let receiver = match r.context {
        Some(invoke_function_request::Context::Method(m)) => m.receiver.unwrap_or_default(),
        Some(invoke_function_request::Context::Session(s)) => s.session_id.unwrap_or_default(),
        Some(invoke_function_request::Context::Tab(t)) => t.tab_id.unwrap_or_default(),
        Some(invoke_function_request::Context::Window(w)) => w.window_id.unwrap_or_default(),
        Some(invoke_function_request::Context::App(_)) | None => String::new(),
    };
    let scope = {
        let world = lock(&state.world);
        if let Some(session) = world.session(&receiver) {
            Scope::Session(session)
        } else if world.find_tab(&receiver).is_some() {
            Scope::Tab(receiver.clone())
        } else if world.windows.iter().any(|w| w.id == receiver) {
            Scope::Window(receiver.clone())
        } else {
            Scope::App
        }
    };
    let (name, args) = match invocation(state, &scope, r.invocation.as_deref().unwrap_or("")) {
        Ok(parsed) => parsed,
        Err(e) => return fail(Status::RequestMalformed, e),
    };
    let shown = |key: &str| {
        let format = args.get(key)?;
        Some(evaluate(state, &scope, format, false).unwrap_or_default())
    };
    match (name.as_str(), &scope) {
        ("iterm2.set_title", Scope::Tab(id) | Scope::Window(id)) => {
            let Some(title) = shown("title") else {
                return fail(Status::RequestMalformed, "set_title needs a title".into());
            };
            let title = serde_json::Value::String(title).to_string();
            let mut world = lock(&state.world);
            if let Some((w, t)) = world.find_tab(id) {
                world.windows[w].tabs[t].vars.insert("title".into(), title);
            } else if let Some(window) = world.windows.iter_mut().find(|w| &w.id == id) {
                window.vars.insert("title".into(), title);
            }
        }
        ("iterm2.set_name", Scope::Session(session)) => {
            let Some(new_name) = shown("name") else {
                return fail(Status::RequestMalformed, "set_name needs a name".into());
            };
            if let Some(format) = args.get("name") {
                let json = serde_json::Value::String(format.clone()).to_string();
                lock(&session.profile).insert("Name".into(), json);
            }
            *lock(&session.name) = new_name;
        }
        ("iterm2.set_title" | "iterm2.set_name", _) => {
            return fail(
                Status::InvalidId,
                format!("no receiver {receiver} for {name}"),
            )
        }
        (other, _) => return fail(Status::Failed, format!("no function named {other}")),
    }
    InvokeFunctionResponse {
        disposition: Some(Disposition::Success(Success {
            json_result: Some("null".into()),
        })),
    }
}

pub(crate) fn get_property(state: &State, r: GetPropertyRequest) -> GetPropertyResponse {
    use get_property_response::Status;
    let answer = |status: Status, json: Option<String>| GetPropertyResponse {
        status: Some(status as i32),
        json_value: json,
    };
    let name = r.name.unwrap_or_default();
    match r.identifier {
        Some(get_property_request::Identifier::SessionId(id)) => {
            let (session, buried) = {
                let world = lock(&state.world);
                let Some(session) = world.session(&id) else {
                    return answer(Status::InvalidTarget, None);
                };
                let buried = world.buried.contains(&session.id);
                (session, buried)
            };
            let mut term = lock(&session.term);
            match name.as_str() {
                "number_of_lines" => {
                    let history = term.history();
                    let grid = term.size().1 as i64;
                    let overflow = term.overflow();
                    answer(
                        Status::Ok,
                        Some(
                            serde_json::json!({
                                "overflow": overflow,
                                "grid": grid,
                                "history": history,
                                "first_visible": overflow + history,
                            })
                            .to_string(),
                        ),
                    )
                }
                // One less than the real size, as iTerm2 answers.
                "grid_size" => {
                    let (cols, rows) = term.size();
                    answer(
                        Status::Ok,
                        Some(serde_json::json!({"width": cols as i64 - 1, "height": rows as i64 - 1}).to_string()),
                    )
                }
                "buried" => answer(Status::Ok, Some(buried.to_string())),
                _ => answer(Status::UnrecognizedName, None),
            }
        }
        Some(get_property_request::Identifier::WindowId(id)) => {
            let world = lock(&state.world);
            let Some(window) = world.windows.iter().find(|w| w.id == id) else {
                return answer(Status::InvalidTarget, None);
            };
            match name.as_str() {
                "fullscreen" => answer(Status::Ok, Some("false".into())),
                "frame" => answer(
                    Status::Ok,
                    Some(
                        serde_json::json!({"origin": {"x": 0, "y": 0}, "size": {"width": window.size.0 as i64 * 7, "height": window.size.1 as i64 * 15}})
                            .to_string(),
                    ),
                ),
                _ => answer(Status::UnrecognizedName, None),
            }
        }
        None => answer(Status::InvalidTarget, None),
    }
}

pub(crate) fn set_property(state: &State, r: SetPropertyRequest) -> SetPropertyResponse {
    use set_property_response::Status;
    let status = |s: Status| SetPropertyResponse {
        status: Some(s as i32),
    };
    let name = r.name.unwrap_or_default();
    let value: serde_json::Value = match serde_json::from_str(r.json_value.as_deref().unwrap_or(""))
    {
        Ok(v) => v,
        Err(_) => return status(Status::InvalidValue),
    };
    match r.identifier {
        Some(set_property_request::Identifier::SessionId(id)) => {
            let Some(session) = lock(&state.world).session(&id) else {
                return status(Status::InvalidTarget);
            };
            if name == "buried" {
                let Some(bury) = value.as_bool() else {
                    return status(Status::InvalidValue);
                };
                let changed = {
                    let mut world = lock(&state.world);
                    let buried = world.buried.contains(&session.id);
                    match (bury, buried) {
                        (true, false) => world.bury(&session.id),
                        (false, true) => world.disinter(&session.id),
                        _ => false,
                    }
                };
                if changed {
                    super::notify::layout_changed(state);
                }
                return status(Status::Ok);
            }
            if name != "grid_size" {
                return status(Status::UnrecognizedName);
            }
            let (Some(w), Some(h)) = (value["width"].as_u64(), value["height"].as_u64()) else {
                return status(Status::InvalidValue);
            };
            session.resize(w.clamp(2, 10_000) as u16, h.clamp(2, 10_000) as u16);
            status(Status::Ok)
        }
        Some(set_property_request::Identifier::WindowId(id)) => {
            if !lock(&state.world).windows.iter().any(|w| w.id == id) {
                return status(Status::InvalidTarget);
            }
            match name.as_str() {
                "frame" | "fullscreen" => status(Status::Ok),
                _ => status(Status::UnrecognizedName),
            }
        }
        None => status(Status::InvalidTarget),
    }
}
