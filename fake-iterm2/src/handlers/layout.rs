//! Windows, tabs and panes: CreateTab, SplitPane, SetTabLayout, Close, Activate and
//! Focus, and what a new session runs.

use std::collections::HashMap;
use std::sync::Arc;

use cohort_backends::iterm2::proto::server_originated_message::Submessage as Rep;
use cohort_backends::iterm2::proto::*;

use crate::expr::{missing_substitutions, split_command};
use crate::session::{Launch, Session};
use crate::variables::{evaluate, Scope};
use crate::world::{Node, Tab, Window, World};
use crate::{lock, State};

use super::notification;
use super::notify::{layout_changed, new_session_notice, terminated};

/// What a new session runs, from its profile properties, prepared as iTerm2 does:
/// a custom command (or the deprecated `command`) is an interpolated string,
/// evaluated with side effects allowed, whose failure falls back to the login
/// shell; then its `$$NAME$$` placeholders must all be known (through the API
/// nobody can be asked: `None`, the launch fails), and iTerm2 splits it into the
/// program and its arguments itself. The working directory is interpolated too.
pub(crate) fn launch(
    state: &State,
    props: &[ProfileProperty],
    deprecated: Option<String>,
    size: (u16, u16),
) -> Option<Launch> {
    let mut profile: HashMap<String, String> = HashMap::new();
    for p in props {
        if let (Some(k), Some(v)) = (&p.key, &p.json_value) {
            profile.insert(k.clone(), v.clone());
        }
    }
    let text = |key: &str| {
        profile
            .get(key)
            .and_then(|v| serde_json::from_str::<String>(v).ok())
    };
    let login_shell = || {
        let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
        vec![shell, "-l".to_string()]
    };
    let custom = if text("Custom Command").as_deref() == Some("Yes") {
        text("Command")
    } else {
        None
    }
    .or(deprecated);
    let command = match custom {
        Some(format) => match evaluate(state, &Scope::App, &format, true) {
            Ok(command) if !command.trim().is_empty() => Some(command),
            _ => None,
        },
        None => state.options.default_command.clone(),
    };
    let argv = match command {
        Some(command) => {
            if !missing_substitutions(&command).is_empty() {
                return None;
            }
            split_command(&command.replace("$$$$", "$$"))
        }
        None => login_shell(),
    };
    let cwd = if text("Custom Directory").as_deref() == Some("Yes") {
        let format = text("Working Directory").unwrap_or_default();
        let cwd = evaluate(state, &Scope::App, &format, false).ok()?;
        if !missing_substitutions(&cwd).is_empty() {
            return None;
        }
        Some(cwd.replace("$$$$", "$$"))
    } else {
        None
    };
    Some(Launch {
        argv: if argv.is_empty() { login_shell() } else { argv },
        cwd,
        cols: size.0,
        rows: size.1,
        profile,
    })
}

/// Opens the window iTerm2 shows when it starts: one tab running the default command.
pub(crate) fn open_first_window(state: &Arc<State>) -> std::io::Result<()> {
    match create_tab(state, CreateTabRequest::default()) {
        Some(Rep::CreateTabResponse(r)) if r.status() == create_tab_response::Status::Ok => Ok(()),
        _ => Err(std::io::Error::other(
            "the fake iTerm2 could not start its first window's program",
        )),
    }
}

/// The properties a new session takes from the profile named `name`: none beyond
/// its own for Default (or no name), a dynamic profile's, or `None` when there is
/// no such profile.
fn profile_properties(state: &State, name: Option<&str>) -> Option<Vec<ProfileProperty>> {
    match name {
        None | Some("Default") => Some(Vec::new()),
        Some(name) => {
            let props = crate::dynamic::named(state.options.dynamic_profiles.as_deref(), name)?;
            Some(
                props
                    .into_iter()
                    .filter(|(k, _)| k != "Name" && k != "Guid")
                    .map(|(k, v)| ProfileProperty {
                        key: Some(k),
                        json_value: Some(v),
                    })
                    .collect(),
            )
        }
    }
}

/// The properties a new session starts with: its profile's, then what the request
/// sets, which wins; `None` when there is no such profile.
fn with_profile(
    state: &State,
    name: Option<&str>,
    custom: &[ProfileProperty],
) -> Option<Vec<ProfileProperty>> {
    let mut props = profile_properties(state, name)?;
    props.extend(custom.iter().cloned());
    Some(props)
}

pub(crate) fn create_tab(state: &Arc<State>, r: CreateTabRequest) -> Option<Rep> {
    use create_tab_response::Status;
    let fail = |s: Status| {
        Some(Rep::CreateTabResponse(CreateTabResponse {
            status: Some(s as i32),
            ..Default::default()
        }))
    };
    let mut r = r;
    let Some(props) = with_profile(
        state,
        r.profile_name.as_deref(),
        &r.custom_profile_properties,
    ) else {
        return fail(Status::InvalidProfileName);
    };
    r.custom_profile_properties = props;
    let existing = match &r.window_id {
        Some(id) => {
            let world = lock(&state.world);
            match world.windows.iter().find(|w| &w.id == id) {
                Some(w) => {
                    if r.tab_index.is_some_and(|i| i as usize > w.tabs.len()) {
                        return fail(Status::InvalidTabIndex);
                    }
                    Some((w.id.clone(), w.size))
                }
                None => return fail(Status::InvalidWindowId),
            }
        }
        None => None,
    };
    let number = |key: &str| {
        r.custom_profile_properties
            .iter()
            .find(|p| p.key.as_deref() == Some(key))
            .and_then(|p| p.json_value.as_deref())
            .and_then(|v| v.parse::<u16>().ok())
            .filter(|n| (2..=10_000).contains(n))
    };
    let size = match &existing {
        Some((_, size)) => *size,
        None => (
            number("Columns").unwrap_or(state.options.default_size.0),
            number("Rows").unwrap_or(state.options.default_size.1),
        ),
    };
    // iTerm2 still honours the deprecated `command` when no profile command is given.
    #[allow(deprecated)]
    let command = r.command.clone();
    let Some(launch) = launch(state, &r.custom_profile_properties, command, size) else {
        return fail(Status::MissingSubstitution);
    };
    let Ok((session, rx)) = Session::spawn(state, launch) else {
        return fail(Status::MissingSubstitution);
    };
    let (window_id, tab_id) = {
        let mut world = lock(&state.world);
        world.next_tab += 1;
        let tab_id = world.next_tab;
        let tab = Tab {
            id: tab_id.to_string(),
            root: Node::Leaf(session.id.clone()),
            active: session.id.clone(),
            vars: HashMap::new(),
        };
        let window_id = match existing {
            Some((id, _)) => {
                let select = r.select_tab.unwrap_or(true);
                let index = r.tab_index.map(|i| i as usize);
                if let Some(w) = world.windows.iter_mut().find(|w| w.id == id) {
                    let at = index.unwrap_or(w.tabs.len()).min(w.tabs.len());
                    w.tabs.insert(at, tab);
                    if select {
                        w.selected = tab_id.to_string();
                    }
                }
                id
            }
            None => {
                world.next_window += 1;
                let number = world.next_window;
                let id = format!("pty-{}", uuid::Uuid::new_v4().to_string().to_uppercase());
                world.windows.push(Window {
                    id: id.clone(),
                    number,
                    tabs: vec![tab],
                    selected: tab_id.to_string(),
                    size,
                    vars: HashMap::new(),
                });
                if world.key_window.is_none() {
                    world.key_window = Some(id.clone());
                }
                id
            }
        };
        world.sessions.insert(session.id.clone(), session.clone());
        (window_id, tab_id)
    };
    new_session_notice(state, &session.id);
    layout_changed(state);
    // Monitors of all sessions take the new one's values before its program's output
    // can change them, as iTerm2 links them to a session as it is made.
    crate::variables::check(state);
    session.run(state, rx);
    Some(Rep::CreateTabResponse(CreateTabResponse {
        status: Some(Status::Ok as i32),
        window_id: Some(window_id),
        tab_id: Some(tab_id),
        session_id: Some(session.id.clone()),
    }))
}

/// Matches a SetTabLayout tree against the tab's tree and collects the sizes asked
/// for each session; returns the extent `(cols, rows)` of `node` with those sizes, or
/// the status to answer.
pub(crate) fn requested_extent(
    world: &World,
    node: &Node,
    asked: &SplitTreeNode,
    sizes: &mut Vec<(String, (u16, u16))>,
) -> Result<(u16, u16), set_tab_layout_response::Status> {
    use set_tab_layout_response::Status;
    use split_tree_node::split_tree_link::Child;
    let (vertical, children): (bool, Vec<&Node>) = match node {
        // A tab with one session is a node with one link.
        Node::Leaf(_) => (false, vec![node]),
        Node::Split { vertical, children } => (*vertical, children.iter().collect()),
    };
    if asked.vertical.unwrap_or(false) != vertical || asked.links.len() != children.len() {
        return Err(Status::WrongTree);
    }
    let mut extents = Vec::new();
    for (child, link) in children.into_iter().zip(&asked.links) {
        let extent = match (child, &link.child) {
            (Node::Leaf(id), Some(Child::Session(s)))
                if s.unique_identifier.as_deref() == Some(id.as_str()) =>
            {
                let current = world.sessions.get(id).map(|s| s.size()).unwrap_or((0, 0));
                let size = s.grid_size.unwrap_or_default();
                let dim = |v: Option<i32>, current: u16| match v {
                    None => Ok(current),
                    Some(v) if (2..=10_000).contains(&v) => Ok(v as u16),
                    Some(_) => Err(Status::InvalidSize),
                };
                let extent = (dim(size.width, current.0)?, dim(size.height, current.1)?);
                sizes.push((id.clone(), extent));
                extent
            }
            (split @ Node::Split { .. }, Some(Child::Node(n))) => {
                requested_extent(world, split, n, sizes)?
            }
            _ => return Err(Status::WrongTree),
        };
        extents.push(extent);
    }
    // Along the divider the children add up (one cell per divider); across it they
    // must all be the same.
    let along = |e: &(u16, u16)| if vertical { e.0 } else { e.1 };
    let across = |e: &(u16, u16)| if vertical { e.1 } else { e.0 };
    if extents.iter().any(|e| across(e) != across(&extents[0])) {
        return Err(Status::InvalidSize);
    }
    let sum = extents.iter().map(|e| along(e) as u32 + 1).sum::<u32>() - 1;
    let sum = sum.min(u16::MAX as u32) as u16;
    Ok(if vertical {
        (sum, across(&extents[0]))
    } else {
        (across(&extents[0]), sum)
    })
}

/// Resizes a tab's sessions: only grid sizes may change, and they must add up to
/// the tab's current size.
pub(crate) fn set_tab_layout(state: &State, r: SetTabLayoutRequest) -> SetTabLayoutResponse {
    use set_tab_layout_response::Status;
    let answer = |s: Status| SetTabLayoutResponse {
        status: Some(s as i32),
    };
    let resized = {
        let world = lock(&state.world);
        let Some((w, t)) = world.find_tab(r.tab_id.as_deref().unwrap_or("")) else {
            return answer(Status::BadTabId);
        };
        let Some(root) = &r.root else {
            return answer(Status::WrongTree);
        };
        let node = &world.windows[w].tabs[t].root;
        let mut current = Vec::new();
        let mut asked = Vec::new();
        let now = requested_extent(&world, node, &world.tree(node), &mut current);
        let wanted = match requested_extent(&world, node, root, &mut asked) {
            Ok(e) => e,
            Err(s) => return answer(s),
        };
        if now != Ok(wanted) {
            return answer(Status::InvalidSize);
        }
        asked
            .into_iter()
            .filter_map(|(id, size)| {
                let session = world.sessions.get(&id)?.clone();
                (session.size() != size).then_some((session, size))
            })
            .collect::<Vec<_>>()
    };
    if !resized.is_empty() {
        for (session, (cols, rows)) in resized {
            session.resize(cols, rows);
        }
        layout_changed(state);
    }
    answer(Status::Ok)
}

pub(crate) fn split_pane(state: &Arc<State>, r: SplitPaneRequest) -> Option<Rep> {
    use split_pane_response::Status;
    let fail = |s: Status| {
        Some(Rep::SplitPaneResponse(SplitPaneResponse {
            status: Some(s as i32),
            session_id: Vec::new(),
        }))
    };
    let mut r = r;
    let Some(props) = with_profile(
        state,
        r.profile_name.as_deref(),
        &r.custom_profile_properties,
    ) else {
        return fail(Status::InvalidProfileName);
    };
    r.custom_profile_properties = props;
    if r.custom_profile_properties.iter().any(|p| {
        serde_json::from_str::<serde_json::Value>(p.json_value.as_deref().unwrap_or("")).is_err()
    }) {
        return fail(Status::MalformedCustomProfileProperty);
    }
    let Some(target) = lock(&state.world).session(r.session.as_deref().unwrap_or("")) else {
        return fail(Status::SessionNotFound);
    };
    // VERTICAL (0, the default) is a vertical divider: panes side by side.
    let vertical =
        r.split_direction.unwrap_or(0) == split_pane_request::SplitDirection::Vertical as i32;
    let (cols, rows) = target.size();
    let (old_size, new_size) = if vertical {
        let new = (cols.saturating_sub(1)) / 2;
        ((cols.saturating_sub(1) - new, rows), (new, rows))
    } else {
        let new = (rows.saturating_sub(1)) / 2;
        ((cols, rows.saturating_sub(1) - new), (cols, new))
    };
    if new_size.0 < 2 || new_size.1 < 2 || old_size.0 < 2 || old_size.1 < 2 {
        return fail(Status::CannotSplit);
    }
    let Some(launch) = launch(state, &r.custom_profile_properties, None, new_size) else {
        return fail(Status::CannotSplit);
    };
    let Ok((session, rx)) = Session::spawn(state, launch) else {
        return fail(Status::CannotSplit);
    };
    target.resize(old_size.0, old_size.1);
    {
        let mut world = lock(&state.world);
        if let Some((w, t)) = world.tab_of(&target.id) {
            world.windows[w].tabs[t].root.split(
                &target.id,
                &session.id,
                vertical,
                r.before.unwrap_or(false),
            );
        }
        world.sessions.insert(session.id.clone(), session.clone());
    }
    new_session_notice(state, &session.id);
    layout_changed(state);
    // Monitors of all sessions take the new one's values before its program's output
    // can change them, as iTerm2 links them to a session as it is made.
    crate::variables::check(state);
    session.run(state, rx);
    Some(Rep::SplitPaneResponse(SplitPaneResponse {
        status: Some(Status::Ok as i32),
        session_id: vec![session.id.clone()],
    }))
}

pub(crate) fn close(state: &State, r: CloseRequest) -> CloseResponse {
    let mut statuses = Vec::new();
    let groups: Vec<Vec<String>> = {
        let world = lock(&state.world);
        match r.target {
            Some(close_request::Target::Sessions(s)) => s
                .session_ids
                .iter()
                .map(|id| {
                    world
                        .session(id)
                        .map(|s| vec![s.id.clone()])
                        .unwrap_or_default()
                })
                .collect(),
            Some(close_request::Target::Tabs(t)) => t
                .tab_ids
                .iter()
                .map(|id| {
                    world
                        .find_tab(id)
                        .map(|(w, t)| {
                            let mut all = Vec::new();
                            world.windows[w].tabs[t].root.sessions(&mut all);
                            all
                        })
                        .unwrap_or_default()
                })
                .collect(),
            Some(close_request::Target::Windows(w)) => w
                .window_ids
                .iter()
                .map(|id| {
                    let mut all = Vec::new();
                    if let Some(window) = world.windows.iter().find(|w| &w.id == id) {
                        for tab in &window.tabs {
                            tab.root.sessions(&mut all);
                        }
                    }
                    all
                })
                .collect(),
            None => Vec::new(),
        }
    };
    for group in groups {
        if group.is_empty() {
            statuses.push(close_response::Status::NotFound as i32);
            continue;
        }
        for id in group {
            let removed = lock(&state.world).remove_session(&id);
            if let Some(s) = removed {
                s.kill();
                terminated(state, &id);
            }
        }
        statuses.push(close_response::Status::Ok as i32);
    }
    CloseResponse { statuses }
}

pub(crate) fn activate(state: &State, r: ActivateRequest) -> ActivateResponse {
    use activate_response::Status;
    use focus_changed_notification::{window::WindowStatus, Event, Window as FocusWindow};
    let status = |s: Status| ActivateResponse {
        status: Some(s as i32),
    };
    let mut events = Vec::new();
    {
        let mut world = lock(&state.world);
        let (w, t, session) = match &r.identifier {
            Some(activate_request::Identifier::SessionId(id)) => {
                let Some(s) = world.session(id) else {
                    return status(Status::BadIdentifier);
                };
                let Some((w, t)) = world.tab_of(&s.id) else {
                    return status(Status::BadIdentifier);
                };
                (Some(w), Some(t), Some(s.id.clone()))
            }
            Some(activate_request::Identifier::TabId(id)) => {
                if r.select_session == Some(true) {
                    return status(Status::InvalidOption);
                }
                let Some((w, t)) = world.find_tab(id) else {
                    return status(Status::BadIdentifier);
                };
                (Some(w), Some(t), None)
            }
            Some(activate_request::Identifier::WindowId(id)) => {
                if r.select_session == Some(true) || r.select_tab == Some(true) {
                    return status(Status::InvalidOption);
                }
                let Some(w) = world.windows.iter().position(|w| &w.id == id) else {
                    return status(Status::BadIdentifier);
                };
                (Some(w), None, None)
            }
            None => {
                if r.activate_app.is_some() {
                    return status(Status::Ok);
                }
                return status(Status::InvalidOption);
            }
        };
        if let (Some(w), Some(t)) = (w, t) {
            if r.select_tab == Some(true) {
                let tab_id = world.windows[w].tabs[t].id.clone();
                world.windows[w].selected = tab_id.clone();
                events.push(Event::SelectedTab(tab_id));
            }
            if let (Some(s), true) = (session, r.select_session == Some(true)) {
                world.windows[w].tabs[t].active = s.clone();
                events.push(Event::Session(s));
            }
        }
        if let (Some(w), true) = (w, r.order_window_front == Some(true)) {
            let id = world.windows[w].id.clone();
            world.key_window = Some(id.clone());
            events.push(Event::Window(FocusWindow {
                window_status: Some(WindowStatus::TerminalWindowBecameKey as i32),
                window_id: Some(id),
            }));
        }
    }
    for event in events {
        state.notify(
            NotificationType::NotifyOnFocusChange as i32,
            None,
            None,
            Notification {
                focus_changed_notification: Some(FocusChangedNotification { event: Some(event) }),
                ..notification()
            },
        );
    }
    status(Status::Ok)
}

pub(crate) fn focus(state: &State) -> FocusResponse {
    use focus_changed_notification::{window::WindowStatus, Event, Window as FocusWindow};
    let world = lock(&state.world);
    let mut notifications = vec![FocusChangedNotification {
        event: Some(Event::ApplicationActive(true)),
    }];
    let key = world
        .key_window
        .clone()
        .or_else(|| world.windows.first().map(|w| w.id.clone()));
    if let Some(key) = key {
        notifications.push(FocusChangedNotification {
            event: Some(Event::Window(FocusWindow {
                window_status: Some(WindowStatus::TerminalWindowIsCurrent as i32),
                window_id: Some(key),
            })),
        });
    }
    for window in &world.windows {
        notifications.push(FocusChangedNotification {
            event: Some(Event::SelectedTab(window.selected.clone())),
        });
        for tab in &window.tabs {
            notifications.push(FocusChangedNotification {
                event: Some(Event::Session(tab.active.clone())),
            });
        }
    }
    FocusResponse { notifications }
}
