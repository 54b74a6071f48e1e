//! Broadcast domains: GetBroadcastDomains (answered as iTerm2 answers it: the
//! focused session's domain per window) and SetBroadcastDomains, checked as
//! iTerm2 checks them (every session known, no session in two domains, a domain's
//! sessions in one window), and the broadcast-change notification after a change.
//! SendText without `suppress_broadcast` reaches the target's whole domain
//! ([`broadcast_to`]).

use std::collections::HashSet;

use cohort_backends::iterm2::proto::*;

use crate::{lock, State};

use super::notification;

/// As iTerm2 answers (`enumerateBroadcastDomains`): one domain per window, the one
/// holding the window's focused session, empty when that session is in none.
pub(crate) fn get_domains(state: &State) -> GetBroadcastDomainsResponse {
    let world = lock(&state.world);
    let focused_domains = world
        .windows
        .iter()
        .map(|w| {
            let focused = w
                .tabs
                .iter()
                .find(|t| t.id == w.selected)
                .map(|t| t.active.clone())
                .unwrap_or_default();
            world
                .broadcast
                .iter()
                .find(|d| d.contains(&focused))
                .cloned()
                .unwrap_or_default()
        })
        .collect::<Vec<_>>();
    GetBroadcastDomainsResponse {
        broadcast_domains: domains(&focused_domains),
    }
}

pub(crate) fn set_domains(
    state: &State,
    r: SetBroadcastDomainsRequest,
) -> SetBroadcastDomainsResponse {
    use set_broadcast_domains_response::Status;
    let status = {
        let mut world = lock(&state.world);
        let mut seen = HashSet::new();
        let mut status = Status::Ok;
        'check: for domain in &r.broadcast_domains {
            let mut window = None;
            for id in &domain.session_ids {
                let Some((w, _)) = world.tab_of(id) else {
                    status = Status::SessionNotFound;
                    break 'check;
                };
                if !seen.insert(id.clone()) {
                    status = Status::BroadcastDomainsNotDisjoint;
                    break 'check;
                }
                if *window.get_or_insert(w) != w {
                    status = Status::SessionsNotInSameWindow;
                    break 'check;
                }
            }
        }
        if status == Status::Ok {
            world.broadcast = r
                .broadcast_domains
                .into_iter()
                .map(|d| d.session_ids)
                .filter(|d| !d.is_empty())
                .collect();
        }
        status
    };
    if status == set_broadcast_domains_response::Status::Ok {
        changed(state);
    }
    SetBroadcastDomainsResponse {
        status: Some(status as i32),
    }
}

/// The sessions typed text reaches when sent to `session` without suppressing
/// broadcast: its domain, or itself alone.
pub(crate) fn broadcast_to(state: &State, session: &str) -> Vec<String> {
    lock(&state.world)
        .broadcast
        .iter()
        .find(|d| d.iter().any(|s| s == session))
        .cloned()
        .unwrap_or_else(|| vec![session.to_string()])
}

/// Tells the subscribers the domains now.
pub(crate) fn changed(state: &State) {
    let now = domains(&lock(&state.world).broadcast);
    state.notify(
        NotificationType::NotifyOnBroadcastChange as i32,
        None,
        None,
        Notification {
            broadcast_domains_changed: Some(BroadcastDomainsChangedNotification {
                broadcast_domains: now,
            }),
            ..notification()
        },
    );
}

fn domains(list: &[Vec<String>]) -> Vec<BroadcastDomain> {
    list.iter()
        .map(|ids| BroadcastDomain {
            session_ids: ids.clone(),
        })
        .collect()
}
