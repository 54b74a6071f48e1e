//! Notifications the fake sends (layout, new and terminated sessions, screen
//! updates, prompts, custom control sequences) and the subscriptions that ask for
//! them.

use std::sync::Arc;

use cohort_backends::iterm2::proto::*;

use crate::session::Session;
use crate::term::MarkEvent;
use crate::{lock, Conn, State};

use super::notification;
use super::screen::prompt_response;

pub(crate) fn layout_changed(state: &State) {
    let list = lock(&state.world).list();
    state.notify(
        NotificationType::NotifyOnLayoutChange as i32,
        None,
        None,
        Notification {
            layout_changed_notification: Some(LayoutChangedNotification {
                list_sessions_response: Some(list),
            }),
            ..notification()
        },
    );
}

pub(crate) fn new_session_notice(state: &State, id: &str) {
    state.notify(
        NotificationType::NotifyOnNewSession as i32,
        None,
        None,
        Notification {
            new_session_notification: Some(NewSessionNotification {
                session_id: Some(id.to_string()),
            }),
            ..notification()
        },
    );
}

/// The program of a session ended. As in iTerm2 (`PTYSession.brokenPipe`): a
/// terminate-session notification at once; then the session closes if its profile
/// says "Close Sessions On End" (iTerm2's stock profile does), or else stays with
/// " Session Ended " under its output, refusing input, until it is closed.
pub(crate) fn session_ended(state: &Arc<State>, session: &Arc<Session>) {
    session.mark_exited();
    terminate_notice(state, &session.id);
    if session.closes_on_end() {
        let removed = lock(&state.world).remove_session(&session.id);
        if let Some(s) = removed {
            s.kill();
            layout_changed(state);
        }
    } else {
        session.append_banner(" Session Ended ");
        screen_updated(state, &session.id);
    }
}

/// A session was closed: terminate-session, then the new layout.
pub(crate) fn terminated(state: &State, id: &str) {
    terminate_notice(state, id);
    layout_changed(state);
}

fn terminate_notice(state: &State, id: &str) {
    state.notify(
        NotificationType::NotifyOnTerminateSession as i32,
        None,
        None,
        Notification {
            terminate_session_notification: Some(TerminateSessionNotification {
                session_id: Some(id.to_string()),
            }),
            ..notification()
        },
    );
}

/// A screen changed (already coalesced per frame). A buried session has no view,
/// and iTerm2 sends its updates from the view: none for it (`PTYSession.bury`).
pub(crate) fn screen_updated(state: &State, id: &str) {
    if lock(&state.world).buried.iter().any(|b| b == id) {
        return;
    }
    state.notify(
        NotificationType::NotifyOnScreenUpdate as i32,
        Some(id),
        None,
        Notification {
            screen_update_notification: Some(ScreenUpdateNotification {
                session: Some(id.to_string()),
            }),
            ..notification()
        },
    );
}

/// A program wrote a custom control sequence (`OSC 1337 ; Custom=id=…:…`), sent to
/// the subscribers of the session (or of all sessions) as iTerm2 sends it.
pub(crate) fn custom_sequence(state: &State, session: &str, identity: String, payload: String) {
    state.notify(
        NotificationType::NotifyOnCustomEscapeSequence as i32,
        Some(session),
        None,
        Notification {
            custom_escape_sequence_notification: Some(CustomEscapeSequenceNotification {
                session: Some(session.to_string()),
                sender_identity: Some(identity),
                payload: Some(payload),
            }),
            ..notification()
        },
    );
}

/// An OSC 133 mark was seen.
pub(crate) fn prompt_event(state: &State, session: &Session, event: MarkEvent) {
    let (mode, id, ev) = match event {
        MarkEvent::Prompt(id) => {
            let prompt = {
                let mut term = lock(&session.term);
                let cursor = term.cursor();
                term.prompt(Some(&id))
                    .map(|p| prompt_response(p, cursor, session))
            };
            (
                PromptMonitorMode::Prompt,
                id,
                prompt_notification::Event::Prompt(PromptNotificationPrompt {
                    placeholder: None,
                    prompt,
                }),
            )
        }
        MarkEvent::CommandStart(id, command) => (
            PromptMonitorMode::CommandStart,
            id,
            prompt_notification::Event::CommandStart(PromptNotificationCommandStart {
                command: Some(command),
            }),
        ),
        MarkEvent::CommandEnd(id, status) => (
            PromptMonitorMode::CommandEnd,
            id,
            prompt_notification::Event::CommandEnd(PromptNotificationCommandEnd {
                status: Some(status),
            }),
        ),
    };
    state.notify(
        NotificationType::NotifyOnPrompt as i32,
        Some(&session.id),
        Some(mode as i32),
        Notification {
            prompt_notification: Some(PromptNotification {
                session: Some(session.id.clone()),
                event: Some(ev),
                unique_prompt_id: Some(id),
            }),
            ..notification()
        },
    );
}

pub(crate) fn subscribe(
    state: &State,
    conn: &Arc<Conn>,
    r: NotificationRequest,
) -> NotificationResponse {
    use notification_response::Status;
    let status = |s: Status| NotificationResponse {
        status: Some(s as i32),
    };
    let Some(subscribe) = r.subscribe else {
        return status(Status::RequestMalformed);
    };
    let Some(kind) = r.notification_type else {
        return status(Status::RequestMalformed);
    };
    if kind == NotificationType::NotifyOnVariableChange as i32 {
        let monitor = match &r.arguments {
            Some(notification_request::Arguments::VariableMonitorRequest(v)) => Some(v),
            _ => None,
        };
        return status(crate::variables::subscribe(
            state,
            conn,
            Some(subscribe),
            monitor,
        ));
    }
    if kind == NotificationType::NotifyOnServerOriginatedRpc as i32 {
        return match (subscribe, r.arguments) {
            (true, Some(notification_request::Arguments::RpcRegistrationRequest(request))) => {
                status(crate::rpc::register(state, conn, request))
            }
            (false, Some(notification_request::Arguments::RpcRegistrationRequest(request))) => {
                status(crate::rpc::unregister(state, conn, &request))
            }
            _ => status(Status::RequestMalformed),
        };
    }
    let session_level = matches!(kind, 1 | 2 | 3 | 5 | 14);
    let key_session = if session_level {
        let session = r.session.clone().unwrap_or_else(|| "all".into());
        if session != "all" {
            match lock(&state.world).session(&session) {
                Some(s) => s.id.clone(),
                None => return status(Status::SessionNotFound),
            }
        } else {
            session
        }
    } else {
        String::new()
    };
    let modes = match r.arguments {
        Some(notification_request::Arguments::PromptMonitorRequest(p)) => p.modes,
        _ => Vec::new(),
    };
    let mut subs = lock(&conn.subs);
    let key = (kind, key_session);
    if subscribe {
        if subs.contains_key(&key) {
            return status(Status::AlreadySubscribed);
        }
        subs.insert(key, modes);
    } else if subs.remove(&key).is_none() {
        return status(Status::NotSubscribed);
    }
    status(Status::Ok)
}
