//! The iTerm2 backend: iTerm2's own WebSocket + protobuf API (macOS).
//!
//! - **Connection** ([`conn`]): the unix socket by default, the legacy TCP port as a
//!   fallback, the exact handshake headers iTerm2 checks, cookies from the
//!   environment or AppleScript with one fresh-cookie retry on 401, the server's
//!   protocol version kept for feature gates, request ids from 1 with replies
//!   matched by id, notifications routed by their case.
//! - **Messages** ([`proto`]): generated at build time from cohort's schema of the
//!   iTerm2 API subset it uses, wire-compatible with iTerm2.
//! - **Panes.** cohort opens tabs in one iTerm2 window of its own (a new window when
//!   that one is gone). Each runs the user's shell with cohort's shell integration
//!   plus the `B` mark iTerm2 needs to report prompts ([`shell`]). Identity is stamped
//!   in `user.cohort_*` session variables, which [`TerminalBackend::list_panes`] reads
//!   back, so panes are found again after a restart.
//! - **Events.** Subscriptions: new/terminated session, layout change, screen update
//!   and prompt (PROMPT, COMMAND_START, COMMAND_END; protocol ≥ 1.1) for every
//!   session. Notifications are handled in order on one task per connection; screen
//!   updates are coalesced per batch.
//! - **Output.** iTerm2 has no raw byte stream, so [`Capabilities::raw_output_stream`]
//!   is false. [`BackendEvent::Output`] carries the *text* of the session's lines, read
//!   with GetBuffer by absolute line number (iTerm2 counts every line ever scrolled):
//!   each pane remembers the last line and column it reported and reports only what
//!   follows, as text with `\r\n` at hard line ends (soft-wrapped rows are joined).
//!   A line rewritten in place after it was reported is not reported again.
//! - **Prompt marks.** Each prompt notification is placed exactly: the backend asks
//!   for the prompt's ranges (GetPrompt by id), reports the text up to the mark's
//!   position, then the mark, so the output before a mark always precedes it (as on
//!   tmux). PROMPT → [`PromptMark::PromptStart`], COMMAND_START →
//!   [`PromptMark::CommandStart`], COMMAND_END → [`PromptMark::CommandFinished`] with
//!   the exit status. A screen update never reports text past a mark whose
//!   notification has not been handled yet.
//! - **State.** Foreground job from the `jobName` / `jobPid` session variables (iTerm2
//!   polls the process tree), the shell from `pid`.
//! - **Input.** SendText writes bytes as typed: Enter is `\r`, keys are their xterm
//!   bytes ([`Key::to_bytes`]); a paste is wrapped in bracketed-paste codes with line
//!   ends as `\r`, as a terminal pastes (iTerm2 cannot tell whether the program asked
//!   for bracketed paste).
//! - **Appearance.** Badge, tab colour and background through SetProfileProperty
//!   (the session's own copy of its profile), titles through InvokeFunction
//!   (`iterm2.set_name` for the pane, `iterm2.set_title` for the tab), focus through
//!   Activate.

pub mod conn;
pub mod proto;
pub mod shell;

mod auto;

pub use auto::{connect_auto, inside_iterm2, AutoChoice};

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::backend::TerminalBackend;
use crate::error::{BackendError, Result};
use crate::event::{BackendEvent, EventHub, EventStream, PromptMark};
use crate::keys::Key;
use crate::layout::{LayoutNode, Rect};
use crate::link::{Got, Link};
use crate::shell::{command_with_exit_mark, user_shell};
use crate::tmux::quote;
use crate::types::{
    Appearance, AttachHint, BackendKind, Capabilities, Cursor, Identity, LineRange, Lines, PaneId,
    PaneInfo, PaneState, Screen, Size, SpawnOptions, SplitDirection, SplitOptions, SplitSize,
    WindowId, WindowInfo,
};

use self::conn::{ConnEvent, ConnectOptions, Connection};
use self::proto::client_originated_message::Submessage as Req;
use self::proto::server_originated_message::Submessage as Rep;
use self::proto::*;

/// Lines read per GetBuffer when catching up with output.
const TRAILING_LINES: i32 = 400;

/// Session variables holding cohort's identity.
const ID_VARS: [&str; 4] = [
    "user.cohort_id",
    "user.cohort_name",
    "user.cohort_agent",
    "user.cohort_team",
];

/// How to reach iTerm2 and start panes.
#[derive(Clone, Debug)]
pub struct Iterm2Config {
    /// Endpoint and credentials.
    pub connect: ConnectOptions,
    /// Where cohort writes its shell integration files.
    pub state_dir: PathBuf,
    /// The shell new panes run; `$SHELL` when `None`.
    pub shell: Option<PathBuf>,
    /// Size of cohort's window when it opens one.
    pub default_size: Size,
}

impl Iterm2Config {
    /// Defaults: discovered endpoint, credentials from the environment or AppleScript.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        Iterm2Config {
            connect: ConnectOptions::default(),
            state_dir: state_dir.into(),
            shell: None,
            default_size: Size {
                cols: 200,
                rows: 50,
            },
        }
    }
}

/// The iTerm2 backend; see the module docs.
#[derive(Clone)]
pub struct Iterm2Backend {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Iterm2Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iterm2Backend")
            .field("endpoint", &self.inner.config.connect.endpoint)
            .finish_non_exhaustive()
    }
}

struct Inner {
    config: Iterm2Config,
    shell_command: String,
    hub: Arc<EventHub>,
    link: Link<Connection>,
    tracks: Arc<Mutex<HashMap<String, Track>>>,
    /// The window cohort opens tabs in.
    window: Mutex<Option<String>>,
}

/// Per-session output position and prompt bookkeeping.
#[derive(Clone, Debug, Default)]
struct Track {
    /// First absolute line not yet fully reported.
    next_line: i64,
    /// Cells of `next_line` already reported.
    col: i32,
    /// The prompt whose notifications were handled last.
    prompt_id: Option<String>,
    seen_start: bool,
    seen_end: bool,
    /// Exit status of the last finished command.
    last_status: Option<i32>,
    /// The text reported last did not end a line (a partial line, or a row that
    /// wraps into the next).
    line_open: bool,
}

impl Iterm2Backend {
    /// Writes the shell integration and connects to iTerm2.
    pub async fn connect(config: Iterm2Config) -> Result<Iterm2Backend> {
        std::fs::create_dir_all(&config.state_dir)
            .map_err(|e| BackendError::io(format!("creating {}", config.state_dir.display()), e))?;
        let shell = config.shell.clone().unwrap_or_else(user_shell);
        let shell_command = shell::install(&config.state_dir, &shell)?;
        let backend = Iterm2Backend {
            inner: Arc::new(Inner {
                config,
                shell_command,
                hub: Arc::new(EventHub::new()),
                link: Link::new(),
                tracks: Arc::default(),
                window: Mutex::new(None),
            }),
        };
        backend.conn().await?;
        Ok(backend)
    }

    /// The protocol version iTerm2 announced.
    pub async fn protocol_version(&self) -> Result<(u32, u32)> {
        Ok(self.conn().await?.protocol_version())
    }

    /// Ends the connection (the sessions stay in iTerm2); the next call reconnects.
    pub fn disconnect(&self) {
        if let Some(conn) = self.inner.link.take() {
            conn.close();
        }
    }

    /// The command line new panes run.
    pub fn shell_command(&self) -> &str {
        &self.inner.shell_command
    }

    async fn conn(&self) -> Result<Arc<Connection>> {
        let open = || async {
            let (tx, rx) = mpsc::unbounded_channel();
            let conn = Arc::new(Connection::connect(&self.inner.config.connect, tx).await?);
            subscribe_all(&conn).await?;
            tokio::spawn(run_events(Arc::downgrade(&self.inner), conn.clone(), rx));
            Ok::<_, BackendError>(conn)
        };
        let (conn, got) = self.inner.link.get(open).await?;
        if got == Got::Reopened {
            self.inner.hub.emit(BackendEvent::Reconnected);
        }
        Ok(conn)
    }

    async fn call(&self, request: Req) -> Result<Rep> {
        self.conn().await?.call(request).await
    }

    /// Starts following a session's output from its current cursor (adopted panes).
    async fn adopt(&self, session: &str) -> Result<()> {
        if lock(&self.inner.tracks).contains_key(session) {
            return Ok(());
        }
        let conn = self.conn().await?;
        let buffer = get_buffer(&conn, session, screen_only()).await?;
        let cursor = buffer.cursor.unwrap_or_default();
        lock(&self.inner.tracks)
            .entry(session.to_string())
            .or_insert(Track {
                next_line: cursor.y.unwrap_or(0),
                col: cursor.x.unwrap_or(0),
                ..Default::default()
            });
        Ok(())
    }

    /// The `/bin/sh` command line a new session runs, with env and the command.
    fn command_line(&self, options: &SpawnOptions) -> Result<String> {
        let mut line = String::new();
        if !options.env.is_empty() {
            line.push_str("/usr/bin/env");
            for (key, value) in &options.env {
                if key.is_empty() || key.contains('=') || key.contains('\0') {
                    return Err(BackendError::InvalidArgument(format!(
                        "environment variable name {key:?} is not valid: use a non-empty name without '='"
                    )));
                }
                line.push(' ');
                line.push_str(&quote::sh(&format!("{key}={value}")));
            }
            line.push(' ');
        }
        let command = match &options.command {
            Some(command) if command.trim().is_empty() => {
                return Err(BackendError::InvalidArgument("the command is empty".into()))
            }
            Some(command) => command_with_exit_mark(command),
            None => self.inner.shell_command.clone(),
        };
        line.push_str("/bin/sh -c ");
        line.push_str(&quote::sh(&command));
        Ok(line)
    }

    fn profile_properties(&self, options: &SpawnOptions) -> Result<Vec<ProfileProperty>> {
        let json = |v: serde_json::Value| v.to_string();
        let mut props = vec![
            property("Custom Command", json("Yes".into())),
            property("Command", json(self.command_line(options)?.into())),
        ];
        if let Some(cwd) = &options.cwd {
            if !std::path::Path::new(cwd).is_dir() {
                return Err(BackendError::InvalidArgument(format!(
                    "working directory {cwd:?} does not exist or is not a directory"
                )));
            }
            props.push(property("Custom Directory", json("Yes".into())));
            props.push(property("Working Directory", json(cwd.as_str().into())));
        }
        Ok(props)
    }

    /// Gives `new`, just split off `old`, its requested share of the two panes' space
    /// with a SetTabLayout request: the tab's tree as listed, with only these two
    /// sessions' grid sizes changed (their sum stays, as iTerm2 requires).
    async fn size_split(
        &self,
        old: &PaneId,
        new: &PaneId,
        direction: SplitDirection,
        size: SplitSize,
    ) -> Result<()> {
        let listed = match self
            .call(Req::ListSessionsRequest(ListSessionsRequest {}))
            .await?
        {
            Rep::ListSessionsResponse(r) => r,
            other => return Err(unexpected("ListSessions", &other)),
        };
        let vertical_divider = direction == SplitDirection::Horizontal;
        let tab = listed
            .windows
            .iter()
            .flat_map(|w| &w.tabs)
            .find(|t| {
                t.root.as_ref().is_some_and(|r| {
                    let mut all = Vec::new();
                    sessions_of(r, &mut all);
                    all.iter()
                        .any(|s| s.unique_identifier.as_deref() == Some(new.as_str()))
                })
            })
            .ok_or_else(|| BackendError::PaneGone(new.clone()))?;
        let mut root = layout_request(tab.root.as_ref().expect("found by its root"));
        if !resize_pair(
            &mut root,
            old.as_str(),
            new.as_str(),
            vertical_divider,
            size,
        ) {
            return Err(BackendError::Protocol(format!(
                "{new} is not next to {old} in a {} split",
                if vertical_divider {
                    "side-by-side"
                } else {
                    "stacked"
                }
            )));
        }
        let reply = self
            .call(Req::SetTabLayoutRequest(SetTabLayoutRequest {
                root: Some(root),
                tab_id: tab.tab_id.clone(),
            }))
            .await?;
        match reply {
            Rep::SetTabLayoutResponse(r) => match r.status() {
                set_tab_layout_response::Status::Ok => Ok(()),
                other => Err(BackendError::Protocol(format!(
                    "iTerm2 did not resize the split: {other:?}"
                ))),
            },
            other => Err(unexpected("SetTabLayout", &other)),
        }
    }

    async fn pane_info(&self, pane: &PaneId) -> Result<PaneInfo> {
        self.list_panes()
            .await?
            .into_iter()
            .find(|p| &p.id == pane)
            .ok_or_else(|| BackendError::PaneGone(pane.clone()))
    }

    async fn invoke(&self, receiver: &str, invocation: String) -> Result<()> {
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

    async fn set_profile(&self, pane: &PaneId, assignments: Vec<(String, String)>) -> Result<()> {
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

    /// Reads session variables (`jobName`, `user.…`), JSON-decoded; `None` when unset.
    pub async fn variables(&self, pane: &PaneId, names: &[&str]) -> Result<Vec<Option<String>>> {
        let reply = self
            .call(variable_get(
                variable_request::Scope::SessionId(pane.0.clone()),
                names,
            ))
            .await?;
        parse_variables(pane, names.len(), reply)
    }

    async fn line_counts(&self, conn: &Connection, pane: &PaneId) -> Result<LineCounts> {
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
}

struct LineCounts {
    overflow: i64,
    grid: i64,
    history: i64,
}

/// The active session of every tab, from a FocusResponse; `None` when the reply
/// is not one.
fn active_sessions(reply: Rep) -> Option<HashSet<String>> {
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

fn property(key: &str, json_value: String) -> ProfileProperty {
    ProfileProperty {
        key: Some(key.to_string()),
        json_value: Some(json_value),
    }
}

fn screen_only() -> proto::LineRange {
    proto::LineRange {
        screen_contents_only: Some(true),
        trailing_lines: None,
        windowed_coord_range: None,
    }
}

fn lines_between(start: i64, end: i64) -> proto::LineRange {
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

fn variable_get(scope: variable_request::Scope, names: &[&str]) -> Req {
    Req::VariableRequest(VariableRequest {
        scope: Some(scope),
        set: Vec::new(),
        get: names.iter().map(|n| n.to_string()).collect(),
    })
}

/// Turns a VariableResponse into JSON-decoded string values (`None` when unset).
fn parse_variables(pane: &PaneId, n: usize, reply: Rep) -> Result<Vec<Option<String>>> {
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

fn unexpected(what: &str, reply: &Rep) -> BackendError {
    let kind = format!("{reply:?}");
    let kind = kind.split('(').next().unwrap_or("?").to_string();
    BackendError::Protocol(format!("iTerm2 answered {what} with {kind}"))
}

async fn get_buffer(
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

async fn get_prompt(
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

/// Subscribes to everything the backend reports.
async fn subscribe_all(conn: &Connection) -> Result<()> {
    let app_level = [
        NotificationType::NotifyOnNewSession,
        NotificationType::NotifyOnTerminateSession,
        NotificationType::NotifyOnLayoutChange,
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
    Ok(())
}

fn subscription(kind: NotificationType, arguments: Option<notification_request::Arguments>) -> Req {
    Req::NotificationRequest(NotificationRequest {
        session: Some("all".into()),
        subscribe: Some(true),
        notification_type: Some(kind as i32),
        arguments,
    })
}

/// Handles one connection's notifications in order until it closes.
async fn run_events(
    inner: Weak<Inner>,
    conn: Arc<Connection>,
    mut rx: mpsc::UnboundedReceiver<ConnEvent>,
) {
    let prompt_modes = conn.at_least(1, 1);
    let mut known_tabs: HashSet<String> = HashSet::new();
    while let Some(first) = rx.recv().await {
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
        for event in batch {
            let notification = match event {
                ConnEvent::Closed(reason) => {
                    inner.hub.emit(BackendEvent::Disconnected { reason });
                    return;
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
            if let Some(n) = notification.terminate_session_notification {
                if let Some(session) = n.session_id {
                    dirty.retain(|d| d != &session);
                    let track = lock(&inner.tracks).remove(&session);
                    if let Some(track) = track {
                        inner.hub.emit(BackendEvent::PaneExited {
                            pane: PaneId(session),
                            exit_status: track.last_status,
                        });
                    }
                }
            }
            if let Some(n) = notification.layout_changed_notification {
                let layout = n.list_sessions_response.unwrap_or_default();
                let mut now = HashSet::new();
                for window in &layout.windows {
                    for tab in &window.tabs {
                        if let Some(id) = &tab.tab_id {
                            now.insert(id.clone());
                        }
                    }
                }
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
async fn handle_prompt(inner: &Inner, conn: &Connection, session: &str, n: PromptNotification) {
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
    {
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
        match mark {
            PromptMark::CommandStart => track.seen_start = true,
            PromptMark::CommandFinished { exit_status } => {
                track.seen_end = true;
                track.last_status = exit_status;
            }
            _ => {}
        }
    }
    inner.hub.emit(BackendEvent::Prompt {
        pane: PaneId(session.to_string()),
        mark,
    });
}

/// Reports new text after a screen update, unless a mark is still unhandled.
async fn sync_screen(inner: &Inner, conn: &Connection, session: &str, prompt_modes: bool) {
    if let Err(e) = sync_output(inner, conn, session, Limit::Cursor { prompt_modes }).await {
        tracing::debug!(target: "cohort::iterm2", session, error = %e, "could not read output");
    }
}

#[derive(Clone, Copy)]
enum Limit {
    /// Up to a mark's position.
    Mark(Coord),
    /// Up to the cursor, but not past a mark whose notification is still on its way.
    Cursor { prompt_modes: bool },
}

async fn sync_output(inner: &Inner, conn: &Connection, session: &str, limit: Limit) -> Result<()> {
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
fn take_text(
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
fn cell_to_byte(line: &LineContents, x: i32) -> usize {
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
fn cells_in(line: &LineContents, byte: usize) -> i32 {
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

/// Converts iTerm2's split tree into cohort's layout, with cell rectangles.
fn layout_from(node: &SplitTreeNode, x: u16, y: u16) -> LayoutNode {
    use split_tree_node::split_tree_link::Child;
    let vertical_divider = node.vertical.unwrap_or(false);
    let mut children = Vec::new();
    let (mut cx, mut cy) = (x, y);
    for link in &node.links {
        let child = match &link.child {
            Some(Child::Session(s)) => {
                let size = s.grid_size.unwrap_or_default();
                LayoutNode::Pane {
                    id: PaneId(s.unique_identifier.clone().unwrap_or_default()),
                    rect: Rect {
                        x: cx,
                        y: cy,
                        cols: size.width.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
                        rows: size.height.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
                    },
                }
            }
            Some(Child::Node(n)) => layout_from(n, cx, cy),
            None => continue,
        };
        let r = child.rect();
        if vertical_divider {
            cx = cx.saturating_add(r.cols).saturating_add(1);
        } else {
            cy = cy.saturating_add(r.rows).saturating_add(1);
        }
        children.push(child);
    }
    if children.len() == 1 {
        return children.remove(0);
    }
    let cols = if vertical_divider {
        children
            .iter()
            .map(|c| c.rect().cols as u32 + 1)
            .sum::<u32>()
            .saturating_sub(1)
    } else {
        children
            .iter()
            .map(|c| c.rect().cols as u32)
            .max()
            .unwrap_or(0)
    };
    let rows = if vertical_divider {
        children
            .iter()
            .map(|c| c.rect().rows as u32)
            .max()
            .unwrap_or(0)
    } else {
        children
            .iter()
            .map(|c| c.rect().rows as u32 + 1)
            .sum::<u32>()
            .saturating_sub(1)
    };
    LayoutNode::Split {
        direction: if vertical_divider {
            SplitDirection::Horizontal
        } else {
            SplitDirection::Vertical
        },
        rect: Rect {
            x,
            y,
            cols: cols.min(u16::MAX as u32) as u16,
            rows: rows.min(u16::MAX as u32) as u16,
        },
        children,
    }
}

/// A tab's tree as SetTabLayout takes it: `vertical` on every node, sessions with
/// their id and grid size only.
fn layout_request(node: &SplitTreeNode) -> SplitTreeNode {
    use split_tree_node::split_tree_link::Child;
    use split_tree_node::SplitTreeLink;
    SplitTreeNode {
        vertical: Some(node.vertical.unwrap_or(false)),
        links: node
            .links
            .iter()
            .filter_map(|link| {
                let child = match link.child.as_ref()? {
                    Child::Session(s) => Child::Session(SessionSummary {
                        unique_identifier: s.unique_identifier.clone(),
                        frame: None,
                        grid_size: s.grid_size,
                        title: None,
                    }),
                    Child::Node(n) => Child::Node(layout_request(n)),
                };
                Some(SplitTreeLink { child: Some(child) })
            })
            .collect(),
    }
}

/// Finds `old` directly followed by `new` in a node of the given orientation and
/// moves cells between them so `new` has `size` (as a share of the pane `old` was
/// before the split, divider included); `false` when they are not found so.
fn resize_pair(
    node: &mut SplitTreeNode,
    old: &str,
    new: &str,
    vertical_divider: bool,
    size: SplitSize,
) -> bool {
    use split_tree_node::split_tree_link::Child;
    let session = |link: &split_tree_node::SplitTreeLink| match &link.child {
        Some(Child::Session(s)) => s.unique_identifier.clone(),
        _ => None,
    };
    if node.vertical.unwrap_or(false) == vertical_divider {
        for i in 0..node.links.len().saturating_sub(1) {
            if session(&node.links[i]).as_deref() == Some(old)
                && session(&node.links[i + 1]).as_deref() == Some(new)
            {
                let extent = |link: &split_tree_node::SplitTreeLink| match &link.child {
                    Some(Child::Session(s)) => {
                        let g = s.grid_size.unwrap_or_default();
                        if vertical_divider {
                            g.width.unwrap_or(0)
                        } else {
                            g.height.unwrap_or(0)
                        }
                    }
                    _ => 0,
                };
                let sum = extent(&node.links[i]) + extent(&node.links[i + 1]);
                if sum < 4 {
                    return false;
                }
                let wanted = match size {
                    SplitSize::Percent(p) => {
                        ((sum + 1) as f64 * f64::from(p.min(100)) / 100.0).round() as i32
                    }
                    SplitSize::Cells(c) => i32::from(c),
                };
                let new_extent = wanted.clamp(2, sum - 2);
                for (index, extent) in [(i, sum - new_extent), (i + 1, new_extent)] {
                    if let Some(Child::Session(s)) = &mut node.links[index].child {
                        let g = s.grid_size.get_or_insert_with(Default::default);
                        if vertical_divider {
                            g.width = Some(extent);
                        } else {
                            g.height = Some(extent);
                        }
                    }
                }
                return true;
            }
        }
    }
    node.links.iter_mut().any(|link| match &mut link.child {
        Some(Child::Node(n)) => resize_pair(n, old, new, vertical_divider, size),
        _ => false,
    })
}

/// Every session of a tab, in reading order, with its summary.
fn sessions_of(node: &SplitTreeNode, out: &mut Vec<SessionSummary>) {
    use split_tree_node::split_tree_link::Child;
    for link in &node.links {
        match &link.child {
            Some(Child::Session(s)) => out.push(s.clone()),
            Some(Child::Node(n)) => sessions_of(n, out),
            None => {}
        }
    }
}

/// `#rrggbb` → iTerm2's colour dictionary (JSON).
fn color_json(color: &str) -> Result<String> {
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

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn check_session_id(pane: &PaneId) -> Result<()> {
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

#[async_trait]
impl TerminalBackend for Iterm2Backend {
    fn kind(&self) -> BackendKind {
        BackendKind::Iterm2
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            splits: true,
            // Output is the screen's text read by line number, not the program's bytes.
            raw_output_stream: false,
            prompt_marks: true,
            titles: true,
            badges: true,
            tab_colors: true,
            background_colors: true,
            focus: true,
            foreground_process: true,
            arrangements: false,
            absolute_line_numbers: false,
            // SplitPane has no size; the split is sized after with SetTabLayout.
            split_sizes: true,
        }
    }

    fn attach_hint(&self, pane: &PaneId) -> AttachHint {
        AttachHint {
            argv: Vec::new(),
            command_line: String::new(),
            description: format!(
                "switch to iTerm2: the pane is session {pane} in cohort's iTerm2 window \
                 (cohort can bring it to the front)"
            ),
        }
    }

    async fn spawn(&self, options: SpawnOptions) -> Result<PaneInfo> {
        if options.name.trim().is_empty() {
            return Err(BackendError::InvalidArgument(
                "a window needs a name".into(),
            ));
        }
        let mut props = self.profile_properties(&options)?;
        let Size { cols, rows } = options.size.unwrap_or(self.inner.config.default_size);
        if !(2..=10_000).contains(&cols) || !(2..=10_000).contains(&rows) {
            return Err(BackendError::InvalidArgument(format!(
                "window size {cols}x{rows} is out of range: use 2 to 10000 columns and rows"
            )));
        }
        let window = lock(&self.inner.window).clone();
        if window.is_none() || options.size.is_some() {
            props.push(property("Columns", cols.to_string()));
            props.push(property("Rows", rows.to_string()));
        }
        let request = |window: Option<String>, props: &[ProfileProperty]| {
            Req::CreateTabRequest(CreateTabRequest {
                profile_name: None,
                window_id: window,
                tab_index: None,
                custom_profile_properties: props.to_vec(),
                select_tab: Some(false),
                ..Default::default()
            })
        };
        let target = if options.size.is_some() { None } else { window };
        let mut reply = self.call(request(target.clone(), &props)).await?;
        if let Rep::CreateTabResponse(r) = &reply {
            if target.is_some() && r.status() == create_tab_response::Status::InvalidWindowId {
                props.push(property("Columns", cols.to_string()));
                props.push(property("Rows", rows.to_string()));
                reply = self.call(request(None, &props)).await?;
            }
        }
        let created = match reply {
            Rep::CreateTabResponse(r) => match r.status() {
                create_tab_response::Status::Ok => r,
                other => {
                    return Err(BackendError::Protocol(format!(
                        "iTerm2 could not open a tab: {other:?}"
                    )))
                }
            },
            other => return Err(unexpected("CreateTab", &other)),
        };
        let session = created
            .session_id
            .clone()
            .ok_or_else(|| BackendError::Protocol("CreateTab answered no session id".into()))?;
        if options.size.is_none() {
            *lock(&self.inner.window) = created.window_id.clone();
        }
        lock(&self.inner.tracks).entry(session.clone()).or_default();
        let pane = PaneId(session);
        if let Some(tab) = created.tab_id {
            let title = serde_json::to_string(&options.name).unwrap_or_default();
            self.invoke(
                &tab.to_string(),
                format!("iterm2.set_title(title: {title})"),
            )
            .await?;
        }
        if let Some(identity) = &options.identity {
            self.stamp_identity(&pane, identity).await?;
        }
        self.pane_info(&pane).await
    }

    async fn split(&self, pane: &PaneId, options: SplitOptions) -> Result<PaneInfo> {
        check_session_id(pane)?;
        let direction = match options.direction {
            // Side by side is a vertical divider.
            SplitDirection::Horizontal => split_pane_request::SplitDirection::Vertical,
            SplitDirection::Vertical => split_pane_request::SplitDirection::Horizontal,
        };
        let props = self.profile_properties(&options.spawn)?;
        let reply = self
            .call(Req::SplitPaneRequest(SplitPaneRequest {
                session: Some(pane.0.clone()),
                split_direction: Some(direction as i32),
                before: Some(false),
                profile_name: None,
                custom_profile_properties: props,
            }))
            .await?;
        let new = match reply {
            Rep::SplitPaneResponse(r) => match r.status() {
                split_pane_response::Status::Ok => {
                    r.session_id.first().cloned().ok_or_else(|| {
                        BackendError::Protocol("SplitPane answered no session".into())
                    })?
                }
                split_pane_response::Status::SessionNotFound => {
                    return Err(BackendError::PaneGone(pane.clone()))
                }
                other => {
                    return Err(BackendError::Protocol(format!(
                        "iTerm2 could not split {pane}: {other:?}"
                    )))
                }
            },
            other => return Err(unexpected("SplitPane", &other)),
        };
        lock(&self.inner.tracks).entry(new.clone()).or_default();
        let new = PaneId(new);
        if let Some(size) = options.size {
            // SplitPane has no size: the new pane takes half, then the tab's layout is
            // set with the two panes' sizes changed.
            if let Err(e) = self.size_split(pane, &new, options.direction, size).await {
                tracing::warn!(target: "cohort::iterm2", pane = %new, error = %e, "the split keeps iTerm2's default size");
            }
        }
        if let Some(identity) = &options.spawn.identity {
            self.stamp_identity(&new, identity).await?;
        }
        self.pane_info(&new).await
    }

    async fn close(&self, pane: &PaneId) -> Result<()> {
        check_session_id(pane)?;
        let reply = self
            .call(Req::CloseRequest(CloseRequest {
                target: Some(close_request::Target::Sessions(
                    close_request::CloseSessions {
                        session_ids: vec![pane.0.clone()],
                    },
                )),
                force: Some(true),
            }))
            .await?;
        match reply {
            Rep::CloseResponse(r) => match r.statuses.first().copied() {
                Some(0) => Ok(()),
                Some(1) | None => Err(BackendError::PaneGone(pane.clone())),
                Some(other) => Err(BackendError::Protocol(format!(
                    "iTerm2 did not close {pane}: status {other}"
                ))),
            },
            other => Err(unexpected("Close", &other)),
        }
    }

    async fn list_panes(&self) -> Result<Vec<PaneInfo>> {
        let conn = self.conn().await?;
        let layout = match conn
            .call(Req::ListSessionsRequest(ListSessionsRequest {}))
            .await?
        {
            Rep::ListSessionsResponse(r) => r,
            other => return Err(unexpected("ListSessions", &other)),
        };
        // Which session is active in each tab: FocusResponse lists them.
        let focus = conn.send(Req::FocusRequest(FocusRequest {}))?;
        let mut rows = Vec::new();
        for window in &layout.windows {
            for tab in &window.tabs {
                let tab_id = tab.tab_id.clone().unwrap_or_default();
                let mut sessions = Vec::new();
                if let Some(root) = &tab.root {
                    sessions_of(root, &mut sessions);
                }
                let first = sessions.first().and_then(|s| s.unique_identifier.clone());
                let tab_vars = conn.send(variable_get(
                    variable_request::Scope::TabId(tab_id.clone()),
                    &["title"],
                ))?;
                let mut pending = Vec::new();
                for s in sessions {
                    let id = s.unique_identifier.clone().unwrap_or_default();
                    let mut names: Vec<&str> = ID_VARS.to_vec();
                    names.push("jobName");
                    let vars = conn.send(variable_get(
                        variable_request::Scope::SessionId(id.clone()),
                        &names,
                    ))?;
                    pending.push((s, vars));
                }
                rows.push((tab_id, first, tab_vars, pending));
            }
        }
        let mut panes = Vec::new();
        let mut adopt = Vec::new();
        let active_sessions = active_sessions(focus.wait().await?);
        for (tab_id, first, tab_vars, pending) in rows {
            let active = |id: &str| match &active_sessions {
                Some(active) => active.contains(id),
                None => first.as_deref() == Some(id),
            };
            let tab_pane = PaneId(tab_id.clone());
            let title = parse_variables(&tab_pane, 1, tab_vars.wait().await?)
                .ok()
                .and_then(|mut v| v.remove(0))
                .unwrap_or_default();
            for (summary, vars) in pending {
                let id = PaneId(summary.unique_identifier.clone().unwrap_or_default());
                let vars = match parse_variables(&id, 5, vars.wait().await?) {
                    Ok(v) => v,
                    Err(BackendError::PaneGone(_)) => continue,
                    Err(e) => return Err(e),
                };
                let identity = vars[0]
                    .clone()
                    .filter(|s| !s.is_empty())
                    .map(|uid| Identity {
                        id: uid,
                        name: vars[1].clone().unwrap_or_default(),
                        agent: vars[2].clone().filter(|s| !s.is_empty()),
                        team: vars[3].clone().filter(|s| !s.is_empty()),
                    });
                if identity.is_some() && !lock(&self.inner.tracks).contains_key(id.as_str()) {
                    adopt.push(id.clone());
                }
                let size = summary.grid_size.unwrap_or_default();
                panes.push(PaneInfo {
                    active: active(id.as_str()),
                    id,
                    window: WindowId(tab_id.clone()),
                    window_name: title.clone(),
                    title: summary.title.clone().unwrap_or_default(),
                    size: Size {
                        cols: size.width.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
                        rows: size.height.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
                    },
                    command: vars[4].clone().unwrap_or_default(),
                    dead: false,
                    identity,
                });
            }
        }
        for pane in adopt {
            if let Err(e) = self.adopt(pane.as_str()).await {
                tracing::debug!(target: "cohort::iterm2", pane = %pane, error = %e, "could not follow an adopted pane");
            }
        }
        Ok(panes)
    }

    async fn list_windows(&self) -> Result<Vec<WindowInfo>> {
        let conn = self.conn().await?;
        let layout = match conn
            .call(Req::ListSessionsRequest(ListSessionsRequest {}))
            .await?
        {
            Rep::ListSessionsResponse(r) => r,
            other => return Err(unexpected("ListSessions", &other)),
        };
        let mut pending = Vec::new();
        for window in &layout.windows {
            for tab in &window.tabs {
                let Some(root) = &tab.root else { continue };
                let id = tab.tab_id.clone().unwrap_or_default();
                let vars = conn.send(variable_get(
                    variable_request::Scope::TabId(id.clone()),
                    &["title"],
                ))?;
                pending.push((id, layout_from(root, 0, 0), vars));
            }
        }
        let mut windows = Vec::new();
        for (id, layout, vars) in pending {
            let name = parse_variables(&PaneId(id.clone()), 1, vars.wait().await?)
                .ok()
                .and_then(|mut v| v.remove(0))
                .unwrap_or_default();
            windows.push(WindowInfo {
                id: WindowId(id),
                name,
                layout,
            });
        }
        Ok(windows)
    }

    async fn send_text(&self, pane: &PaneId, text: &str) -> Result<()> {
        check_session_id(pane)?;
        if text.is_empty() {
            return Ok(());
        }
        let reply = self
            .call(Req::SendTextRequest(SendTextRequest {
                session: Some(pane.0.clone()),
                text: Some(text.to_string()),
                suppress_broadcast: Some(true),
            }))
            .await?;
        match reply {
            Rep::SendTextResponse(r) => match r.status() {
                send_text_response::Status::Ok => Ok(()),
                send_text_response::Status::SessionNotFound => {
                    Err(BackendError::PaneGone(pane.clone()))
                }
            },
            other => Err(unexpected("SendText", &other)),
        }
    }

    async fn send_keys(&self, pane: &PaneId, keys: &[Key]) -> Result<()> {
        let mut bytes = Vec::new();
        for key in keys {
            bytes.extend(key.to_bytes());
        }
        let text = String::from_utf8(bytes).map_err(|_| {
            BackendError::InvalidArgument("these keys do not encode as text for iTerm2".into())
        })?;
        self.send_text(pane, &text).await
    }

    async fn paste(&self, pane: &PaneId, text: &str) -> Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        let body = text.replace("\r\n", "\r").replace('\n', "\r");
        // The end code cannot appear inside the paste.
        let body = body.replace("\x1b[201~", "");
        self.send_text(pane, &format!("\x1b[200~{body}\x1b[201~"))
            .await
    }

    async fn read_lines(&self, pane: &PaneId, range: LineRange) -> Result<Lines> {
        check_session_id(pane)?;
        let conn = self.conn().await?;
        let counts = self.line_counts(&conn, pane).await?;
        let total = (counts.history + counts.grid).max(0) as u64;
        let start = range.start.min(total);
        let end = range.end.min(total);
        if start >= end {
            return Ok(Lines {
                first: start,
                lines: Vec::new(),
                total,
            });
        }
        let base = counts.overflow;
        let buffer = get_buffer(
            &conn,
            pane.as_str(),
            lines_between(base + start as i64, base + end as i64),
        )
        .await?;
        Ok(Lines {
            first: start,
            lines: buffer
                .contents
                .iter()
                .map(|l| l.text.clone().unwrap_or_default().trim_end().to_string())
                .collect(),
            total,
        })
    }

    async fn read_screen(&self, pane: &PaneId) -> Result<Screen> {
        check_session_id(pane)?;
        let conn = self.conn().await?;
        let vars = conn.send(variable_get(
            variable_request::Scope::SessionId(pane.0.clone()),
            &["columns", "rows"],
        ))?;
        let buffer = get_buffer(&conn, pane.as_str(), screen_only()).await?;
        let vars = parse_variables(pane, 2, vars.wait().await?)?;
        let num = |v: &Option<String>| v.as_deref().and_then(|s| s.parse::<u16>().ok());
        let top = buffer
            .windowed_coord_range
            .and_then(|w| w.coord_range)
            .and_then(|c| c.start)
            .and_then(|c| c.y)
            .unwrap_or(0);
        let cursor = buffer.cursor.unwrap_or_default();
        let rows: Vec<String> = buffer
            .contents
            .iter()
            .map(|l| l.text.clone().unwrap_or_default().trim_end().to_string())
            .collect();
        Ok(Screen {
            cursor: Cursor {
                x: cursor.x.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
                y: (cursor.y.unwrap_or(0) - top).clamp(0, u16::MAX as i64) as u16,
            },
            size: Size {
                cols: num(&vars[0]).unwrap_or(0),
                rows: num(&vars[1]).unwrap_or(rows.len() as u16),
            },
            rows,
            alternate: false,
        })
    }

    fn subscribe(&self) -> EventStream {
        self.inner.hub.subscribe()
    }

    async fn pane_state(&self, pane: &PaneId) -> Result<PaneState> {
        check_session_id(pane)?;
        let conn = self.conn().await?;
        let names = [
            "jobName", "jobPid", "pid", "columns", "rows", "path", "name",
        ];
        let vars = conn.send(variable_get(
            variable_request::Scope::SessionId(pane.0.clone()),
            &names,
        ))?;
        let buffer = get_buffer(&conn, pane.as_str(), screen_only()).await?;
        let counts = self.line_counts(&conn, pane).await?;
        let v = parse_variables(pane, names.len(), vars.wait().await?)?;
        let pid = |s: &Option<String>| {
            s.as_deref()
                .and_then(|p| p.parse::<u32>().ok())
                .filter(|p| *p > 0)
        };
        let job_pid = pid(&v[1]);
        let shell_pid = pid(&v[2]);
        let job = v[0].clone().unwrap_or_default();
        let shell_command = if job_pid.is_some() && job_pid == shell_pid {
            job.clone()
        } else {
            shell_pid
                .and_then(crate::process::process_name)
                .unwrap_or_default()
        };
        let top = buffer
            .windowed_coord_range
            .and_then(|w| w.coord_range)
            .and_then(|c| c.start)
            .and_then(|c| c.y)
            .unwrap_or(0);
        let cursor = buffer.cursor.unwrap_or_default();
        let num = |s: &Option<String>| {
            s.as_deref()
                .and_then(|p| p.parse::<u16>().ok())
                .unwrap_or(0)
        };
        Ok(PaneState {
            foreground_command: job,
            foreground_pid: job_pid,
            shell_pid,
            shell_command,
            dead: false,
            exit_status: None,
            cursor: Cursor {
                x: cursor.x.unwrap_or(0).clamp(0, u16::MAX as i32) as u16,
                y: (cursor.y.unwrap_or(0) - top).clamp(0, u16::MAX as i64) as u16,
            },
            size: Size {
                cols: num(&v[3]),
                rows: num(&v[4]),
            },
            alternate_screen: false,
            copy_mode: false,
            bracketed_paste: None,
            title: v[6].clone().unwrap_or_default(),
            cwd: v[5].clone().filter(|s| !s.is_empty()),
            history_lines: counts.history.max(0) as u64,
        })
    }

    async fn stamp_identity(&self, pane: &PaneId, identity: &Identity) -> Result<()> {
        check_session_id(pane)?;
        let json = |v: &Option<String>| match v {
            Some(s) => serde_json::Value::String(s.clone()).to_string(),
            None => "null".to_string(),
        };
        let values = [
            Some(identity.id.clone()),
            Some(identity.name.clone()),
            identity.agent.clone(),
            identity.team.clone(),
        ];
        let reply = self
            .call(Req::VariableRequest(VariableRequest {
                scope: Some(variable_request::Scope::SessionId(pane.0.clone())),
                set: ID_VARS
                    .iter()
                    .zip(values.iter())
                    .map(|(name, value)| variable_request::Set {
                        name: Some(name.to_string()),
                        value: Some(json(value)),
                    })
                    .collect(),
                get: Vec::new(),
            }))
            .await?;
        parse_variables(pane, 0, reply).map(|_| ())
    }

    async fn set_title(&self, pane: &PaneId, title: &str) -> Result<()> {
        check_session_id(pane)?;
        let name = serde_json::to_string(title).unwrap_or_default();
        self.invoke(pane.as_str(), format!("iterm2.set_name(name: {name})"))
            .await
    }

    async fn set_appearance(&self, pane: &PaneId, appearance: &Appearance) -> Result<()> {
        check_session_id(pane)?;
        let mut assignments = Vec::new();
        if let Some(badge) = &appearance.badge {
            assignments.push((
                "Badge Text".to_string(),
                serde_json::Value::String(badge.clone()).to_string(),
            ));
        }
        if let Some(color) = &appearance.tab_color {
            assignments.push(("Tab Color".to_string(), color_json(color)?));
            assignments.push(("Use Tab Color".to_string(), "true".to_string()));
        }
        if let Some(color) = &appearance.background {
            assignments.push(("Background Color".to_string(), color_json(color)?));
        }
        if !assignments.is_empty() {
            self.set_profile(pane, assignments).await?;
        }
        if let Some(title) = &appearance.title {
            self.set_title(pane, title).await?;
        }
        Ok(())
    }

    async fn focus(&self, pane: &PaneId) -> Result<()> {
        check_session_id(pane)?;
        let reply = self
            .call(Req::ActivateRequest(ActivateRequest {
                identifier: Some(activate_request::Identifier::SessionId(pane.0.clone())),
                order_window_front: Some(true),
                select_tab: Some(true),
                select_session: Some(true),
                activate_app: None,
            }))
            .await?;
        match reply {
            Rep::ActivateResponse(r) => match r.status() {
                activate_response::Status::Ok => Ok(()),
                activate_response::Status::BadIdentifier => {
                    Err(BackendError::PaneGone(pane.clone()))
                }
                other => Err(BackendError::Protocol(format!(
                    "iTerm2 could not focus {pane}: {other:?}"
                ))),
            },
            other => Err(unexpected("Activate", &other)),
        }
    }
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
    fn set_tab_layout_matches_the_reference_encoding() {
        use prost::Message;
        use split_tree_node::split_tree_link::Child;
        use split_tree_node::SplitTreeLink;
        // Made with the official client's schema (`api_pb2`).
        let reference = "08 09 d2 07 23 0a 1e 08 01 12 0c 0a 0a 0a 02 53 31 1a 04 08 1e 10 1e \
                         12 0c 0a 0a 0a 02 53 32 1a 04 08 45 10 1e 12 01 33";
        let reference: Vec<u8> = reference
            .split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect();
        let session = |id: &str, width: i32| SplitTreeLink {
            child: Some(Child::Session(SessionSummary {
                unique_identifier: Some(id.into()),
                frame: None,
                grid_size: Some(proto::Size {
                    width: Some(width),
                    height: Some(30),
                }),
                title: None,
            })),
        };
        let request = ClientOriginatedMessage {
            id: Some(9),
            submessage: Some(Req::SetTabLayoutRequest(SetTabLayoutRequest {
                root: Some(SplitTreeNode {
                    vertical: Some(true),
                    links: vec![session("S1", 30), session("S2", 69)],
                }),
                tab_id: Some("3".into()),
            })),
        };
        assert_eq!(request.encode_to_vec(), reference);
        let reply =
            ServerOriginatedMessage::decode(&[0x08, 0x09, 0xd2, 0x07, 0x02, 0x08, 0x03][..])
                .unwrap();
        match reply.submessage {
            Some(Rep::SetTabLayoutResponse(r)) => {
                assert_eq!(r.status(), set_tab_layout_response::Status::InvalidSize)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_split_is_sized_by_moving_cells_between_the_pair() {
        use split_tree_node::split_tree_link::Child;
        use split_tree_node::SplitTreeLink;
        let leaf = |id: &str, w: i32, h: i32| SplitTreeLink {
            child: Some(Child::Session(SessionSummary {
                unique_identifier: Some(id.into()),
                frame: None,
                grid_size: Some(proto::Size {
                    width: Some(w),
                    height: Some(h),
                }),
                title: Some("t".into()),
            })),
        };
        let listed = SplitTreeNode {
            vertical: None,
            links: vec![
                leaf("A", 100, 15),
                SplitTreeLink {
                    child: Some(Child::Node(SplitTreeNode {
                        vertical: Some(true),
                        links: vec![leaf("B", 50, 14), leaf("C", 49, 14)],
                    })),
                },
            ],
        };
        let mut tree = layout_request(&listed);
        assert_eq!(tree.vertical, Some(false));
        // C gets 30 % of the 100 columns B had before the split.
        assert!(resize_pair(
            &mut tree,
            "B",
            "C",
            true,
            SplitSize::Percent(30)
        ));
        let mut all = Vec::new();
        sessions_of(&tree, &mut all);
        let widths: Vec<_> = all
            .iter()
            .map(|s| (s.grid_size.unwrap().width.unwrap(), s.title.is_none()))
            .collect();
        assert_eq!(widths, [(100, true), (69, true), (30, true)]);
        // Not a side-by-side pair, or not next to each other: nothing to do.
        assert!(!resize_pair(
            &mut tree,
            "A",
            "B",
            true,
            SplitSize::Cells(10)
        ));
        assert!(!resize_pair(
            &mut tree,
            "C",
            "B",
            true,
            SplitSize::Cells(10)
        ));
        // Sizes never squeeze a pane below two cells.
        assert!(resize_pair(
            &mut tree,
            "B",
            "C",
            true,
            SplitSize::Cells(500)
        ));
        sessions_of(&tree, &mut all);
        let c = all
            .iter()
            .rev()
            .find(|s| s.unique_identifier.as_deref() == Some("C"));
        assert_eq!(c.unwrap().grid_size.unwrap().width, Some(97));
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
