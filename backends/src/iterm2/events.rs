//! Events: the notifications of one connection turned into [`BackendEvent`]s.
//!
//! One task per connection handles notifications in order. Screen updates are
//! coalesced per batch and become [`BackendEvent::Output`]: the text of the
//! session's lines read with GetBuffer by absolute line number, from where the pane
//! last reported to the cursor, never past a prompt mark whose notification has not
//! been handled yet. A prompt notification is placed exactly: the text up to the
//! mark's position (asked with GetPrompt by id), then the mark, signed when the
//! shell's signature announced it (see `super::marks`).

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::error::{BackendError, Result};
use crate::event::{BackendEvent, MarkParams, PromptMark};
use crate::pad::Anchor;
use crate::types::{Identity, PaneId, WindowId};

use super::conn::{ConnEvent, Connection};
use super::layout::sessions_of;
use super::marks::{self, Armed};
use super::proto::client_originated_message::Submessage as Req;
use super::proto::server_originated_message::Submessage as Rep;
use super::proto::{self, *};
use super::requests::{get_buffer, get_prompt, lines_between, unexpected};
use super::{lock, Inner};

/// Lines read per GetBuffer when catching up with output.
pub(super) const TRAILING_LINES: i32 = 400;

/// The session variable naming the foreground job.
const JOB_NAME: &str = "jobName";

/// Per-session output position and prompt bookkeeping.
#[derive(Clone, Debug, Default)]
pub(super) struct Track {
    /// First absolute line not yet fully reported.
    next_line: i64,
    /// Cells of `next_line` already reported.
    col: i32,
    /// The prompt whose notifications were handled last.
    prompt_id: Option<String>,
    seen_start: bool,
    seen_end: bool,
    /// Exit status of the last finished command; `None` again once the next
    /// command starts.
    pub(super) last_status: Option<i32>,
    /// The text reported last did not end a line (a partial line, or a row that
    /// wraps into the next).
    line_open: bool,
    /// What the session's shell signs its marks with, when known.
    pub(super) signer: Signer,
    /// The shell's signature for the mark it is about to print.
    armed: Option<Armed>,
}

/// What a session's shell signs its marks with, as this backend follows it (the
/// engine checks the marks it is given on its own; this one decides which exit status
/// a session that ended reports).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum Signer {
    /// Not known: a session followed without an identity. Every mark counts.
    #[default]
    Unknown,
    /// A per-pane key (panes made before one-time tokens).
    Key(String),
    /// One-time tokens down the chain from `anchor` (see [`crate::pad`]).
    Chain {
        anchor: Anchor,
        /// The anchor was read back from the session, not drawn here.
        adopted: bool,
    },
    /// Marks are not signed: every mark counts.
    Unsigned,
}

impl Signer {
    /// What `identity` says the shell signs with; `made_here`: its anchor is the one
    /// this process drew.
    pub(super) fn of(identity: &Identity, made_here: bool) -> Signer {
        match (&identity.anchor, &identity.key) {
            (Some(anchor), _) => Signer::Chain {
                // A stamp that is not an anchor verifies nothing.
                anchor: anchor.parse().unwrap_or_else(|_| Anchor::spent()),
                adopted: !made_here,
            },
            (None, Some(key)) => Signer::Key(key.clone()),
            (None, None) => Signer::Unsigned,
        }
    }

    /// Whether a mark with `params` is the shell's own; a token that verifies is spent.
    fn owns(&mut self, params: &MarkParams) -> bool {
        match (self, &params.key) {
            (Signer::Unknown | Signer::Unsigned, _) => true,
            (Signer::Key(key), Some(signed)) => key == signed,
            (Signer::Chain { anchor, adopted }, Some(token)) => anchor.verify_next(token, adopted),
            (Signer::Key(_) | Signer::Chain { .. }, None) => false,
        }
    }
}

impl Track {
    /// A pane followed from this position on (an adopted pane: what is on its
    /// screen already was never cohort's to report).
    pub(super) fn from(line: i64, col: i32) -> Track {
        Track {
            next_line: line,
            col,
            ..Default::default()
        }
    }
}

/// What subscribing found.
pub(super) struct Subscribed {
    /// iTerm2 reports the signatures of cohort's marks.
    pub signed: bool,
    /// This connection holds cohort's status-bar component.
    pub component: bool,
}

/// Subscribes to everything the backend reports, and asks for cohort's status-bar
/// component.
pub(super) async fn subscribe_all(conn: &Connection) -> Result<Subscribed> {
    let app_level = [
        NotificationType::NotifyOnNewSession,
        NotificationType::NotifyOnTerminateSession,
        NotificationType::NotifyOnLayoutChange,
        NotificationType::NotifyOnFocusChange,
    ];
    let mut pending = Vec::new();
    for kind in app_level {
        pending.push(conn.send(subscription(kind, None))?);
    }
    pending.push(conn.send(subscription(NotificationType::NotifyOnScreenUpdate, None))?);
    let modes = if conn.at_least(1, 1) {
        vec![
            PromptMonitorMode::Prompt as i32,
            PromptMonitorMode::CommandStart as i32,
            PromptMonitorMode::CommandEnd as i32,
        ]
    } else {
        Vec::new()
    };
    pending.push(conn.send(subscription(
        NotificationType::NotifyOnPrompt,
        (!modes.is_empty()).then_some(notification_request::Arguments::PromptMonitorRequest(
            PromptMonitorRequest { modes },
        )),
    ))?);
    // Programs' custom control sequences, for Signal. Without them the backend
    // still works: nothing in a pane can signal.
    let custom = conn.send(subscription(
        NotificationType::NotifyOnCustomEscapeSequence,
        None,
    ))?;
    // The foreground job of every session, for ForegroundChanged. iTerm2 polls the
    // process tree, so the change shows a moment after it happens.
    let job_monitor = conn.send(variable_monitor(JOB_NAME))?;
    // The signatures of cohort's marks.
    let mark_monitor = conn.send(variable_monitor(marks::VARIABLE))?;
    // cohort's status-bar component, answered in `run_events`.
    let component = conn.send(status_bar_component())?;
    for reply in pending {
        match reply.wait().await? {
            Rep::NotificationResponse(r) => match r.status() {
                notification_response::Status::Ok
                | notification_response::Status::AlreadySubscribed => {}
                other => {
                    return Err(BackendError::Protocol(format!(
                        "iTerm2 refused a notification subscription: {other:?}"
                    )))
                }
            },
            other => return Err(unexpected("NotificationRequest", &other)),
        }
    }
    let signals = matches!(
        custom.wait().await?,
        Rep::NotificationResponse(r) if matches!(
            r.status(),
            notification_response::Status::Ok | notification_response::Status::AlreadySubscribed
        )
    );
    if !signals {
        tracing::warn!(target: "cohort::iterm2", "iTerm2 refused to report custom control sequences: programs in panes cannot signal");
    }
    // Without it the backend still works: foreground changes are then only seen in
    // pane_state.
    if !monitoring(job_monitor.wait().await) {
        tracing::debug!(target: "cohort::iterm2", "iTerm2 refused to monitor jobName");
    }
    // Another cohort process may hold it: this one asks again now and then (see
    // `run_events`), and takes it over when that process is gone.
    let component = registered(component.wait().await);
    if !component {
        tracing::debug!(target: "cohort::iterm2", "cohort's status-bar component is another process's, or iTerm2 did not take it; the team line is in user.cohortStatus");
    }
    // Without it every mark is taken as it comes, a program's as the shell's.
    let signed = monitoring(mark_monitor.wait().await);
    if !signed {
        tracing::warn!(target: "cohort::iterm2", "iTerm2 refused to monitor user.cohortMark: prompt marks cannot be told from marks programs print");
    }
    Ok(Subscribed { signed, component })
}

/// The name of cohort's status-bar component's function.
pub(super) const STATUS_FUNCTION: &str = "cohort_team_status";

/// Registers cohort's status-bar component: a person adds "cohort team" to a
/// profile's status bar, and iTerm2 shows there the session's `user.cohortStatus`
/// (the team line cohort sets from its events), calling the function again when
/// that variable changes. Nothing is polled.
fn status_bar_component() -> Req {
    use rpc_registration_request::{
        status_bar_component_attributes::Format, RoleSpecificAttributes, RpcArgument,
        RpcArgumentSignature, StatusBarComponentAttributes,
    };
    let argument = |name: &str| RpcArgumentSignature {
        name: Some(name.into()),
    };
    Req::NotificationRequest(NotificationRequest {
        session: None,
        subscribe: Some(true),
        notification_type: Some(NotificationType::NotifyOnServerOriginatedRpc as i32),
        arguments: Some(notification_request::Arguments::RpcRegistrationRequest(
            RpcRegistrationRequest {
                name: Some(STATUS_FUNCTION.into()),
                arguments: vec![argument("knobs"), argument("status")],
                defaults: vec![RpcArgument {
                    name: Some("status".into()),
                    // `?`: iTerm2 calls the function also for a session whose
                    // variable is unset (no team), instead of showing an error.
                    path: Some("user.cohortStatus?".into()),
                }],
                timeout: Some(5.0),
                role: Some(rpc_registration_request::Role::StatusBarComponent as i32),
                display_name: None,
                role_specific_attributes: Some(
                    RoleSpecificAttributes::StatusBarComponentAttributes(
                        StatusBarComponentAttributes {
                            short_description: Some("cohort team".into()),
                            detailed_description: Some(
                                "The state of this session's cohort team: its agents working, waiting, needing approval.".into(),
                            ),
                            knobs: Vec::new(),
                            exemplar: Some("web ● 2 working · 1 needs approval".into()),
                            update_cadence: None,
                            unique_identifier: Some("dev.cohort.team-status".into()),
                            icons: Vec::new(),
                            format: Some(Format::PlainText as i32),
                        },
                    ),
                ),
            },
        )),
    })
}

/// Whether the reply to the component's registration says this connection has it.
pub(super) fn registered(reply: Result<Rep>) -> bool {
    matches!(reply, Ok(Rep::NotificationResponse(r)) if matches!(
        r.status(),
        notification_response::Status::Ok | notification_response::Status::AlreadySubscribed
    ))
}

/// Asks iTerm2 for the component again while another process holds it; true once
/// this connection has it.
async fn claim_component(conn: &Connection) -> bool {
    match conn.send(status_bar_component()) {
        Ok(pending) => registered(pending.wait().await),
        Err(_) => false,
    }
}

/// Answers iTerm2's call of cohort's status-bar component with the team line it
/// was given (an empty text when the session has none).
fn answer_rpc(conn: &Connection, call: ServerOriginatedRpcNotification) {
    let Some(rpc) = call.rpc else { return };
    let result = if rpc.name.as_deref() == Some(STATUS_FUNCTION) {
        let line = rpc
            .arguments
            .iter()
            .find(|a| a.name.as_deref() == Some("status"))
            .and_then(|a| serde_json::from_str::<Option<String>>(a.json_value.as_deref()?).ok())
            .flatten()
            .unwrap_or_default();
        server_originated_rpc_result_request::Result::JsonValue(
            serde_json::Value::String(line).to_string(),
        )
    } else {
        server_originated_rpc_result_request::Result::JsonException(
            serde_json::json!({"reason": "cohort has no such function"}).to_string(),
        )
    };
    let sent = conn.send(Req::ServerOriginatedRpcResultRequest(
        ServerOriginatedRpcResultRequest {
            request_id: call.request_id,
            result: Some(result),
        },
    ));
    if let Err(e) = sent {
        tracing::debug!(target: "cohort::iterm2", error = %e, "the status-bar component's answer was not sent");
    }
}

/// A VariableMonitor on the session variable `name` of every session, current and
/// future.
fn variable_monitor(name: &str) -> Req {
    Req::NotificationRequest(NotificationRequest {
        session: None,
        subscribe: Some(true),
        notification_type: Some(NotificationType::NotifyOnVariableChange as i32),
        arguments: Some(notification_request::Arguments::VariableMonitorRequest(
            VariableMonitorRequest {
                name: Some(name.into()),
                scope: Some(VariableScope::Session as i32),
                identifier: Some("all".into()),
            },
        )),
    })
}

/// Whether a subscription's reply says it is in place.
fn monitoring(reply: Result<Rep>) -> bool {
    matches!(reply, Ok(Rep::NotificationResponse(r)) if matches!(
        r.status(),
        notification_response::Status::Ok | notification_response::Status::AlreadySubscribed
    ))
}

pub(super) fn subscription(
    kind: NotificationType,
    arguments: Option<notification_request::Arguments>,
) -> Req {
    Req::NotificationRequest(NotificationRequest {
        session: Some("all".into()),
        subscribe: Some(true),
        notification_type: Some(kind as i32),
        arguments,
    })
}

/// Every this many buried-screen ticks (10 s), a connection without cohort's
/// status-bar component asks for it again.
const CLAIM_EVERY: u32 = 40;

/// How often the screens of buried sessions are read: iTerm2 tells nothing of them.
const BURIED_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// Handles one connection's notifications in order until it closes; `claimed`:
/// the connection already holds cohort's status-bar component.
pub(super) async fn run_events(
    inner: Weak<Inner>,
    conn: Arc<Connection>,
    mut rx: mpsc::UnboundedReceiver<ConnEvent>,
    claimed: bool,
) {
    let prompt_modes = conn.at_least(1, 1);
    let mut known_tabs: HashSet<String> = HashSet::new();
    let mut buried_poll = tokio::time::interval(BURIED_POLL);
    buried_poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // Whether this connection answers the status-bar component; asked again every
    // CLAIM_EVERY ticks until it does (the process holding it may end).
    // (iTerm2 answers a second registration as a duplicate even to its holder.)
    let claimed = Arc::new(std::sync::atomic::AtomicBool::new(claimed));
    let mut ticks: u32 = 0;
    loop {
        let first = tokio::select! {
            event = rx.recv() => match event {
                Some(event) => event,
                None => return,
            },
            _ = buried_poll.tick() => {
                ticks = ticks.wrapping_add(1);
                if ticks % CLAIM_EVERY == 1 && !claimed.load(std::sync::atomic::Ordering::SeqCst) {
                    let (conn, claimed) = (conn.clone(), claimed.clone());
                    tokio::spawn(async move {
                        if claim_component(&conn).await {
                            claimed.store(true, std::sync::atomic::Ordering::SeqCst);
                        }
                    });
                }
                let Some(inner) = inner.upgrade() else { return };
                let buried: Vec<String> = lock(&inner.buried).iter().cloned().collect();
                for session in buried {
                    if lock(&inner.tracks).contains_key(&session) {
                        sync_screen(&inner, &conn, &session, prompt_modes).await;
                    }
                }
                continue;
            }
        };
        let mut batch = vec![first];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
        }
        let Some(inner) = inner.upgrade() else { return };
        let mut dirty: Vec<String> = Vec::new();
        let mark_dirty = |s: &str, dirty: &mut Vec<String>| {
            if !dirty.iter().any(|d| d == s) {
                dirty.push(s.to_string());
            }
        };
        let mut batch = batch.into_iter();
        while let Some(event) = batch.next() {
            let notification = match event {
                ConnEvent::Closed(reason) => {
                    inner.hub.emit(BackendEvent::Disconnected { reason });
                    // Barriers still queued are answered: nothing more comes before
                    // them, and their callers wait for them.
                    let queued = batch.chain(std::iter::from_fn(|| rx.try_recv().ok()));
                    for event in queued {
                        if let ConnEvent::Barrier { token, .. } = event {
                            inner.hub.emit(BackendEvent::Synced { token });
                        }
                    }
                    return;
                }
                ConnEvent::Barrier { token, session } => {
                    // What the notifications before it changed on screen is read
                    // first, and the session's text up to now (iTerm2 may not have
                    // notified its latest update yet): the barrier comes after it.
                    mark_dirty(&session, &mut dirty);
                    for session in std::mem::take(&mut dirty) {
                        if lock(&inner.tracks).contains_key(&session) {
                            sync_screen(&inner, &conn, &session, prompt_modes).await;
                        }
                    }
                    inner.hub.emit(BackendEvent::Synced { token });
                    continue;
                }
                ConnEvent::Notification(n) => *n,
            };
            if let Some(n) = notification.new_session_notification {
                if let Some(id) = n.session_id {
                    lock(&inner.tracks).entry(id).or_default();
                }
            }
            if let Some(n) = notification.screen_update_notification {
                if let Some(session) = n.session {
                    mark_dirty(&session, &mut dirty);
                }
            }
            if let Some(n) = notification.prompt_notification {
                let Some(session) = n.session.clone() else {
                    continue;
                };
                if !lock(&inner.tracks).contains_key(&session) {
                    continue;
                }
                // Earlier screen updates of this session first, then the mark.
                if dirty.iter().any(|d| d == &session) {
                    dirty.retain(|d| d != &session);
                    sync_screen(&inner, &conn, &session, prompt_modes).await;
                }
                handle_prompt(&inner, &conn, &session, n).await;
                mark_dirty(&session, &mut dirty);
            }
            if let Some(n) = notification.focus_changed_notification {
                // The active session of its tab: the pane in front.
                if let Some(focus_changed_notification::Event::Session(session)) = n.event {
                    inner.hub.emit(BackendEvent::Focused {
                        window: None,
                        pane: Some(PaneId(session)),
                    });
                }
            }
            if let Some(n) = notification.custom_escape_sequence_notification {
                if let (Some(session), Some(identity)) = (n.session, n.sender_identity) {
                    if lock(&inner.tracks).contains_key(&session) {
                        // The output before it first, as in the stream it came in.
                        if dirty.iter().any(|d| d == &session) {
                            dirty.retain(|d| d != &session);
                            sync_screen(&inner, &conn, &session, prompt_modes).await;
                        }
                        inner.hub.emit(BackendEvent::Signal {
                            pane: PaneId(session),
                            identity,
                            payload: n.payload.unwrap_or_default(),
                        });
                    }
                }
            }
            if let Some(n) = notification.variable_changed_notification {
                match (n.name.as_deref(), n.identifier) {
                    (Some(JOB_NAME), Some(session))
                        if lock(&inner.tracks).contains_key(&session) =>
                    {
                        let command = n
                            .json_new_value
                            .and_then(|v| serde_json::from_str::<String>(&v).ok())
                            .unwrap_or_default();
                        inner.hub.emit(BackendEvent::ForegroundChanged {
                            pane: PaneId(session),
                            command,
                        });
                    }
                    // Handled in order with the prompt notifications: the mark it
                    // signs comes next (see `marks`).
                    (Some(marks::VARIABLE), Some(session)) => {
                        if let Some(track) = lock(&inner.tracks).get_mut(&session) {
                            track.armed = marks::armed(n.json_new_value.as_deref());
                        }
                    }
                    _ => {}
                }
            }
            if let Some(n) = notification.terminate_session_notification {
                if let Some(session) = n.session_id {
                    dirty.retain(|d| d != &session);
                    let track = lock(&inner.tracks).remove(&session);
                    if let Some(track) = track {
                        lock(&inner.exits).insert(session.clone(), track.last_status);
                        inner.hub.emit(BackendEvent::PaneExited {
                            pane: PaneId(session),
                            exit_status: track.last_status,
                        });
                    }
                }
            }
            if let Some(call) = notification.server_originated_rpc_notification {
                answer_rpc(&conn, call);
            }
            if let Some(n) = notification.layout_changed_notification {
                let layout = n.list_sessions_response.unwrap_or_default();
                let mut now = HashSet::new();
                let mut sessions = Vec::new();
                for window in &layout.windows {
                    for tab in &window.tabs {
                        if let Some(id) = &tab.tab_id {
                            now.insert(id.clone());
                        }
                        if let Some(root) = &tab.root {
                            sessions_of(root, &mut sessions);
                        }
                    }
                }
                // Buried sessions are in no tab, and still there.
                *lock(&inner.buried) = layout
                    .buried_sessions
                    .iter()
                    .filter_map(|s| s.unique_identifier.clone())
                    .collect();
                sessions.extend(layout.buried_sessions.iter().cloned());
                // A closed session's exit is no longer anyone's to ask about.
                lock(&inner.exits).retain(|id, _| {
                    sessions
                        .iter()
                        .any(|s| s.unique_identifier.as_deref() == Some(id.as_str()))
                });
                for gone in known_tabs.difference(&now) {
                    inner.hub.emit(BackendEvent::WindowClosed {
                        window: WindowId(gone.clone()),
                    });
                }
                for tab in &now {
                    inner.hub.emit(BackendEvent::LayoutChanged {
                        window: WindowId(tab.clone()),
                    });
                }
                known_tabs = now;
            }
        }
        for session in dirty {
            if lock(&inner.tracks).contains_key(&session) {
                sync_screen(&inner, &conn, &session, prompt_modes).await;
            }
        }
    }
}

/// Places one prompt notification: the text before the mark, then the mark.
pub(super) async fn handle_prompt(
    inner: &Inner,
    conn: &Connection,
    session: &str,
    n: PromptNotification,
) {
    let id = n.unique_prompt_id.clone();
    let (mark, position) = match n.event {
        Some(prompt_notification::Event::Prompt(p)) => {
            let start = p
                .prompt
                .as_ref()
                .and_then(|r| r.prompt_range)
                .and_then(|r| r.start);
            (PromptMark::PromptStart, start)
        }
        Some(prompt_notification::Event::CommandStart(_)) => {
            let pos = match get_prompt(conn, session, id.as_deref()).await {
                Ok(Some(r)) => r.output_range.and_then(|r| r.start),
                _ => None,
            };
            (PromptMark::CommandStart, pos)
        }
        Some(prompt_notification::Event::CommandEnd(end)) => {
            let pos = match get_prompt(conn, session, id.as_deref()).await {
                Ok(Some(r)) => r.output_range.and_then(|r| r.end),
                _ => None,
            };
            (
                PromptMark::CommandFinished {
                    exit_status: end.status,
                },
                pos,
            )
        }
        None => return,
    };
    if let Some(pos) = position {
        if let Err(e) = sync_output(inner, conn, session, Limit::Mark(pos)).await {
            tracing::debug!(target: "cohort::iterm2", session, error = %e, "could not read output before a mark");
        }
    }
    let params = {
        let mut tracks = lock(&inner.tracks);
        let Some(track) = tracks.get_mut(session) else {
            return;
        };
        // A command line that exactly fills its last row leaves that row soft-wrapped
        // into the row its output starts on: the Enter that ended it is the line end,
        // and it comes before the command's output, as in the program's byte stream.
        let at_row_start = position.is_some_and(|p| p.x.unwrap_or(0) == 0);
        if mark == PromptMark::CommandStart && at_row_start && track.line_open {
            track.line_open = false;
            inner.hub.emit(BackendEvent::Output {
                pane: PaneId(session.to_string()),
                bytes: Bytes::from_static(b"\r\n"),
            });
        }
        if track.prompt_id != id {
            track.prompt_id = id;
            track.seen_start = false;
            track.seen_end = false;
        }
        let params = marks::take(&mut track.armed, &mark);
        // Only the shell's own marks say what its commands did.
        let own = track.signer.owns(&params);
        match mark {
            PromptMark::CommandStart => {
                track.seen_start = true;
                if own {
                    track.last_status = None;
                }
            }
            PromptMark::CommandFinished { exit_status } => {
                track.seen_end = true;
                if own {
                    track.last_status = exit_status;
                }
            }
            _ => {}
        }
        params
    };
    inner.hub.emit(BackendEvent::Prompt {
        pane: PaneId(session.to_string()),
        mark,
        params,
    });
}

/// Reports new text after a screen update, unless a mark is still unhandled.
pub(super) async fn sync_screen(
    inner: &Inner,
    conn: &Connection,
    session: &str,
    prompt_modes: bool,
) {
    if let Err(e) = sync_output(inner, conn, session, Limit::Cursor { prompt_modes }).await {
        tracing::debug!(target: "cohort::iterm2", session, error = %e, "could not read output");
    }
}

#[derive(Clone, Copy)]
pub(super) enum Limit {
    /// Up to a mark's position.
    Mark(Coord),
    /// Up to the cursor, but not past a mark whose notification is still on its way.
    Cursor { prompt_modes: bool },
}

pub(super) async fn sync_output(
    inner: &Inner,
    conn: &Connection,
    session: &str,
    limit: Limit,
) -> Result<()> {
    let Some(from) = lock(&inner.tracks).get(session).map(|t| t.next_line) else {
        return Ok(());
    };
    let mut buffer = get_buffer(
        conn,
        session,
        proto::LineRange {
            screen_contents_only: None,
            trailing_lines: Some(TRAILING_LINES),
            windowed_coord_range: None,
        },
    )
    .await?;
    let mut first = buffer
        .windowed_coord_range
        .and_then(|w| w.coord_range)
        .and_then(|c| c.start)
        .and_then(|c| c.y)
        .unwrap_or(from);
    let cursor = buffer.cursor.unwrap_or_default();
    if let Limit::Cursor { prompt_modes } = limit {
        // Everything in `buffer` was parsed before this question is answered, so a
        // mark inside it is visible here.
        if let Some(p) = get_prompt(conn, session, None).await? {
            let tracks = lock(&inner.tracks);
            let Some(track) = tracks.get(session) else {
                return Ok(());
            };
            let state = p.prompt_state();
            let unhandled = p.unique_prompt_id != track.prompt_id
                || (prompt_modes
                    && ((state == get_prompt_response::State::Running && !track.seen_start)
                        || (state == get_prompt_response::State::Finished && !track.seen_end)));
            if unhandled {
                return Ok(());
            }
        }
    }
    if first > from {
        // Catch up with lines that scrolled past the trailing window.
        match get_buffer(conn, session, lines_between(from, first)).await {
            Ok(gap) if gap.contents.len() as i64 == first - from => {
                let mut contents = gap.contents;
                contents.append(&mut buffer.contents);
                buffer.contents = contents;
                first = from;
            }
            _ => {
                inner.hub.emit(BackendEvent::OutputLost {
                    pane: PaneId(session.to_string()),
                });
                if let Some(t) = lock(&inner.tracks).get_mut(session) {
                    t.next_line = first;
                    t.col = 0;
                }
            }
        }
    }
    let (limit_y, limit_x) = match limit {
        Limit::Mark(c) => (c.y.unwrap_or(0), c.x.unwrap_or(0)),
        Limit::Cursor { .. } => (cursor.y.unwrap_or(0), cursor.x.unwrap_or(0)),
    };
    let text = {
        let mut tracks = lock(&inner.tracks);
        let Some(track) = tracks.get_mut(session) else {
            return Ok(());
        };
        take_text(track, first, &buffer.contents, limit_y, limit_x)
    };
    if !text.is_empty() {
        inner.hub.emit(BackendEvent::Output {
            pane: PaneId(session.to_string()),
            bytes: Bytes::from(text),
        });
    }
    Ok(())
}

/// The text from the track's position up to `(limit_x, limit_y)`, advancing the track.
pub(super) fn take_text(
    track: &mut Track,
    first: i64,
    lines: &[LineContents],
    limit_y: i64,
    limit_x: i32,
) -> String {
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let y = first + i as i64;
        if y < track.next_line {
            continue;
        }
        if y > limit_y {
            break;
        }
        let text = line.text.as_deref().unwrap_or("");
        let start = cell_to_byte(line, track.col);
        if y < limit_y {
            out.push_str(&text[start.min(text.len())..]);
            if line.continuation() != line_contents::Continuation::ContinuationSoftEol {
                out.push_str("\r\n");
                track.line_open = false;
            } else {
                track.line_open = true;
            }
            track.next_line = y + 1;
            track.col = 0;
        } else {
            let end = cell_to_byte(line, limit_x);
            if end > start {
                out.push_str(&text[start..end]);
                track.col = cells_in(line, end).max(track.col);
                track.line_open = true;
            }
            break;
        }
    }
    out
}

/// Byte offset in the line's text where cell `x` starts (clamped to the text).
pub(super) fn cell_to_byte(line: &LineContents, x: i32) -> usize {
    let text = line.text.as_deref().unwrap_or("");
    if x <= 0 {
        return 0;
    }
    let code_points = if line.code_points_per_cell.is_empty() {
        x as usize
    } else {
        let mut cells = 0i64;
        let mut points = 0i64;
        'runs: for run in &line.code_points_per_cell {
            for _ in 0..run.repeats.unwrap_or(0).max(0) {
                if cells >= x as i64 {
                    break 'runs;
                }
                cells += 1;
                points += run.num_code_points().max(0) as i64;
            }
        }
        points as usize
    };
    text.char_indices()
        .nth(code_points)
        .map(|(i, _)| i)
        .unwrap_or(text.len())
}

/// How many cells the first `byte` bytes of the line's text cover.
pub(super) fn cells_in(line: &LineContents, byte: usize) -> i32 {
    let text = line.text.as_deref().unwrap_or("");
    let points = text[..byte.min(text.len())].chars().count() as i64;
    if line.code_points_per_cell.is_empty() {
        return points as i32;
    }
    let mut cells = 0i64;
    let mut seen = 0i64;
    'runs: for run in &line.code_points_per_cell {
        let n = run.num_code_points().max(0) as i64;
        for _ in 0..run.repeats.unwrap_or(0).max(0) {
            // A zero-width cell (the right half of a wide character) belongs to the
            // character before it.
            if n > 0 && seen + n > points {
                break 'runs;
            }
            seen += n;
            cells += 1;
        }
    }
    cells as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, soft: bool) -> LineContents {
        LineContents {
            text: Some(text.to_string()),
            code_points_per_cell: Vec::new(),
            continuation: Some(if soft { 2 } else { 1 }),
        }
    }

    #[test]
    fn text_is_taken_once_up_to_the_limit() {
        let mut t = Track::default();
        let lines = [
            line("$ echo hi", false),
            line("hi", false),
            line("$ ", false),
        ];
        assert_eq!(take_text(&mut t, 0, &lines, 2, 2), "$ echo hi\r\nhi\r\n$ ");
        assert_eq!((t.next_line, t.col), (2, 2));
        let lines = [
            line("$ ls", false),
            line("a", true),
            line("b", false),
            line("", false),
        ];
        assert_eq!(take_text(&mut t, 2, &lines, 5, 0), "ls\r\nab\r\n");
        assert_eq!((t.next_line, t.col), (5, 0));
        assert!(!t.line_open);
        // Nothing twice.
        assert_eq!(take_text(&mut t, 2, &lines, 5, 0), "");
        // A row that wraps leaves the line open, as does a partial row.
        let lines = [line("$ echo full-row", true), line("", false)];
        assert_eq!(take_text(&mut t, 5, &lines, 6, 0), "$ echo full-row");
        assert!(t.line_open);
        let lines = [line("", false), line("$ ", false)];
        assert_eq!(take_text(&mut t, 5, &lines, 6, 2), "$ ");
        assert!(t.line_open);
    }

    #[test]
    fn wide_cells_map_to_characters() {
        let l = LineContents {
            text: Some("日本x".into()),
            code_points_per_cell: vec![
                CodePointsPerCell {
                    num_code_points: Some(1),
                    repeats: Some(1),
                },
                CodePointsPerCell {
                    num_code_points: Some(0),
                    repeats: Some(1),
                },
                CodePointsPerCell {
                    num_code_points: Some(1),
                    repeats: Some(1),
                },
                CodePointsPerCell {
                    num_code_points: Some(0),
                    repeats: Some(1),
                },
                CodePointsPerCell {
                    num_code_points: Some(1),
                    repeats: Some(1),
                },
            ],
            continuation: None,
        };
        assert_eq!(cell_to_byte(&l, 2), "日".len());
        assert_eq!(cell_to_byte(&l, 4), "日本".len());
        assert_eq!(cells_in(&l, "日本".len()), 4);
    }
}
