//! Saved window arrangements (SavedArrangement): SAVE keeps a window (every window
//! without an id) under a name, replacing one of that name; RESTORE opens it again
//! as new windows, or as tabs of the window named; LIST answers the names in order.
//! A saved session is its split tree and the profile it started with; restored, it
//! starts that profile's program again, as iTerm2 does. Buried sessions are in no
//! window and are not saved.

use std::collections::HashMap;
use std::sync::Arc;

use cohort_backends::iterm2::proto::server_originated_message::Submessage as Rep;
use cohort_backends::iterm2::proto::*;

use crate::world::Node;
use crate::{lock, State};

use super::layout::{create_tab, split_pane};

/// A saved window.
#[derive(Clone, Debug)]
pub struct SavedWindow {
    size: (u16, u16),
    tabs: Vec<Node>,
    /// Each saved session's profile properties, by its id in `tabs`.
    profiles: HashMap<String, Vec<ProfileProperty>>,
}

pub(crate) fn saved_arrangement(
    state: &Arc<State>,
    r: SavedArrangementRequest,
) -> SavedArrangementResponse {
    use saved_arrangement_request::Action;
    use saved_arrangement_response::Status;
    let answer = |status: Status, names: Vec<String>| SavedArrangementResponse {
        status: Some(status as i32),
        names,
    };
    let window_id = r.window_id.clone().filter(|w| !w.is_empty());
    match Action::try_from(r.action.unwrap_or(0)) {
        Ok(Action::List) => {
            let names = lock(&state.world).arrangements.keys().cloned().collect();
            answer(Status::Ok, names)
        }
        Ok(Action::Save) => {
            let mut world = lock(&state.world);
            if window_id
                .as_ref()
                .is_some_and(|id| !world.windows.iter().any(|w| &w.id == id))
            {
                return answer(Status::WindowNotFound, Vec::new());
            }
            let saved: Vec<SavedWindow> = world
                .windows
                .iter()
                .filter(|w| window_id.as_ref().is_none_or(|id| &w.id == id))
                .map(|w| {
                    let mut ids = Vec::new();
                    w.tabs.iter().for_each(|t| t.root.sessions(&mut ids));
                    SavedWindow {
                        size: w.size,
                        tabs: w.tabs.iter().map(|t| t.root.clone()).collect(),
                        profiles: ids
                            .into_iter()
                            .map(|id| {
                                let props = world
                                    .sessions
                                    .get(&id)
                                    .map(|s| started_with(&lock(&s.profile)))
                                    .unwrap_or_default();
                                (id, props)
                            })
                            .collect(),
                    }
                })
                .collect();
            // iTerm2 keeps nothing when there was no window to save.
            if !saved.is_empty() {
                world
                    .arrangements
                    .insert(r.name.clone().unwrap_or_default(), saved);
            }
            answer(Status::Ok, Vec::new())
        }
        Ok(Action::Restore) => {
            let saved = {
                let world = lock(&state.world);
                if window_id
                    .as_ref()
                    .is_some_and(|id| !world.windows.iter().any(|w| &w.id == id))
                {
                    return answer(Status::WindowNotFound, Vec::new());
                }
                match world.arrangements.get(r.name.as_deref().unwrap_or("")) {
                    Some(saved) => saved.clone(),
                    None => return answer(Status::ArrangementNotFound, Vec::new()),
                }
            };
            for window in &saved {
                restore_window(state, window, window_id.clone());
            }
            answer(Status::Ok, Vec::new())
        }
        Err(_) => answer(Status::RequestMalformed, Vec::new()),
    }
}

/// The properties a session's program started from; sizes are the window's.
fn started_with(profile: &HashMap<String, String>) -> Vec<ProfileProperty> {
    let mut props: Vec<ProfileProperty> = profile
        .iter()
        .filter(|(k, _)| *k != "Columns" && *k != "Rows")
        .map(|(k, v)| ProfileProperty {
            key: Some(k.clone()),
            json_value: Some(v.clone()),
        })
        .collect();
    props.sort_by(|a, b| a.key.cmp(&b.key));
    props
}

/// Opens a saved window's tabs in `into`, else in a new window of its size.
fn restore_window(state: &Arc<State>, saved: &SavedWindow, into: Option<String>) {
    let mut window = into;
    for root in &saved.tabs {
        let first = first_leaf(root);
        let mut props = saved.profiles.get(first).cloned().unwrap_or_default();
        if window.is_none() {
            props.push(number("Columns", saved.size.0));
            props.push(number("Rows", saved.size.1));
        }
        let created = create_tab(
            state,
            CreateTabRequest {
                window_id: window.clone(),
                custom_profile_properties: props,
                ..Default::default()
            },
        );
        let Some(Rep::CreateTabResponse(created)) = created else {
            continue;
        };
        let (Some(session), Some(id)) = (created.session_id, created.window_id) else {
            continue;
        };
        window = Some(id);
        grow(state, root, &session, &saved.profiles);
    }
}

/// Splits `anchor` (a session standing for `node`'s first leaf) until the tab
/// holds `node`'s shape: each child split off the one before it, then each grown
/// from its own first session.
fn grow(
    state: &Arc<State>,
    node: &Node,
    anchor: &str,
    profiles: &HashMap<String, Vec<ProfileProperty>>,
) {
    let Node::Split { vertical, children } = node else {
        return;
    };
    let mut anchors = vec![anchor.to_string()];
    for child in &children[1..] {
        let before = anchors.last().cloned().unwrap_or_default();
        let split = split_pane(
            state,
            SplitPaneRequest {
                session: Some(before),
                split_direction: Some(if *vertical {
                    split_pane_request::SplitDirection::Vertical as i32
                } else {
                    split_pane_request::SplitDirection::Horizontal as i32
                }),
                before: Some(false),
                custom_profile_properties: profiles
                    .get(first_leaf(child))
                    .cloned()
                    .unwrap_or_default(),
                ..Default::default()
            },
        );
        match split {
            Some(Rep::SplitPaneResponse(r)) if !r.session_id.is_empty() => {
                anchors.push(r.session_id[0].clone())
            }
            // Too small to split further: the rest of this split is left out.
            _ => break,
        }
    }
    for (child, anchor) in children.iter().zip(&anchors) {
        grow(state, child, anchor, profiles);
    }
}

fn first_leaf(node: &Node) -> &str {
    match node {
        Node::Leaf(id) => id,
        Node::Split { children, .. } => children.first().map(first_leaf).unwrap_or(""),
    }
}

fn number(key: &str, n: u16) -> ProfileProperty {
    ProfileProperty {
        key: Some(key.into()),
        json_value: Some(n.to_string()),
    }
}
