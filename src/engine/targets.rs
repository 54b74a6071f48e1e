//! Resolving a user's target (session name, persistent id, agent name or pane id)
//! to a pane.

use cohort_backends::PaneInfo;

/// The pane `target` names, trying in order: pane id, persistent id, session name,
/// agent name, window name.
pub fn resolve_target<'a>(panes: &'a [PaneInfo], target: &str) -> Option<&'a PaneInfo> {
    let target = target.trim();
    panes
        .iter()
        .find(|p| p.id.as_str() == target)
        .or_else(|| {
            panes
                .iter()
                .find(|p| p.identity.as_ref().is_some_and(|i| i.id == target))
        })
        .or_else(|| {
            panes
                .iter()
                .find(|p| p.identity.as_ref().is_some_and(|i| i.name == target))
        })
        .or_else(|| {
            panes
                .iter()
                .find(|p| p.identity.as_ref().and_then(|i| i.agent.as_deref()) == Some(target))
        })
        .or_else(|| {
            panes
                .iter()
                .find(|p| p.identity.is_none() && p.window_name == target)
        })
}

/// What exists, for "no such session" messages.
pub fn describe_targets(panes: &[PaneInfo]) -> String {
    let names: Vec<String> = panes
        .iter()
        .map(|p| {
            p.identity
                .as_ref()
                .map(|i| i.name.clone())
                .unwrap_or_else(|| p.window_name.clone())
        })
        .collect();
    if names.is_empty() {
        "there are no sessions yet: open one first".into()
    } else {
        format!("existing sessions: {}", names.join(", "))
    }
}
