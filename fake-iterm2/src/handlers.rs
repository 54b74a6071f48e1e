//! The fake's model of windows, tabs and split trees, and its request handlers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use prost::Message as _;
use tokio_tungstenite::tungstenite::Message;

use cohort_backends::iterm2::proto::client_originated_message::Submessage as Req;
use cohort_backends::iterm2::proto::server_originated_message::Submessage as Rep;
use cohort_backends::iterm2::proto::*;

use crate::session::{Feed, Launch, Session};
use crate::term::{AbsCoord, MarkEvent, PromptRecord};
use crate::{lock, Conn, State};

/// Guid of the one profile the fake has.
pub const DEFAULT_GUID: &str = "C0DE0000-0000-4000-8000-000000000001";

/// Replies to CreateTab and SplitPane are sent this much later, as iTerm2 completes
/// them asynchronously.
const LATE_REPLY: Duration = Duration::from_millis(15);

/// A split tree.
#[derive(Clone, Debug)]
pub enum Node {
    /// One session.
    Leaf(String),
    /// `vertical`: a vertical divider, children side by side.
    Split { vertical: bool, children: Vec<Node> },
}

impl Node {
    fn contains(&self, session: &str) -> bool {
        match self {
            Node::Leaf(s) => s == session,
            Node::Split { children, .. } => children.iter().any(|c| c.contains(session)),
        }
    }

    fn sessions(&self, out: &mut Vec<String>) {
        match self {
            Node::Leaf(s) => out.push(s.clone()),
            Node::Split { children, .. } => children.iter().for_each(|c| c.sessions(out)),
        }
    }

    /// Inserts `new` next to `at`, in a split of the given orientation.
    fn split(&mut self, at: &str, new: &str, vertical: bool, before: bool) -> bool {
        match self {
            Node::Leaf(s) if s == at => {
                let old = Node::Leaf(s.clone());
                let new = Node::Leaf(new.to_string());
                *self = Node::Split {
                    vertical,
                    children: if before {
                        vec![new, old]
                    } else {
                        vec![old, new]
                    },
                };
                true
            }
            Node::Leaf(_) => false,
            Node::Split {
                vertical: v,
                children,
            } => {
                let v = *v;
                for i in 0..children.len() {
                    if matches!(&children[i], Node::Leaf(s) if s == at) && v == vertical {
                        let index = if before { i } else { i + 1 };
                        children.insert(index, Node::Leaf(new.to_string()));
                        return true;
                    }
                    if children[i].split(at, new, vertical, before) {
                        return true;
                    }
                }
                false
            }
        }
    }

    /// Removes a session; `false` when the node became empty.
    fn remove(&mut self, session: &str) -> bool {
        match self {
            Node::Leaf(s) => s != session,
            Node::Split { children, .. } => {
                children.retain_mut(|c| c.remove(session));
                if children.len() == 1 {
                    let only = children.remove(0);
                    *self = only;
                }
                !matches!(self, Node::Split { children, .. } if children.is_empty())
            }
        }
    }
}

/// One tab.
#[derive(Clone, Debug)]
pub struct Tab {
    pub id: String,
    pub root: Node,
    pub active: String,
    pub vars: HashMap<String, String>,
}

/// One window.
#[derive(Clone, Debug)]
pub struct Window {
    pub id: String,
    pub number: i32,
    pub tabs: Vec<Tab>,
    pub selected: String,
    pub size: (u16, u16),
    pub vars: HashMap<String, String>,
}

/// Everything the fake shows.
#[derive(Default)]
pub struct World {
    pub windows: Vec<Window>,
    pub sessions: HashMap<String, Arc<Session>>,
    next_tab: i32,
    next_window: i32,
    pub key_window: Option<String>,
    pub app_vars: HashMap<String, String>,
}

impl World {
    pub(crate) fn tab_of(&self, session: &str) -> Option<(usize, usize)> {
        for (w, window) in self.windows.iter().enumerate() {
            for (t, tab) in window.tabs.iter().enumerate() {
                if tab.root.contains(session) {
                    return Some((w, t));
                }
            }
        }
        None
    }

    pub(crate) fn find_tab(&self, id: &str) -> Option<(usize, usize)> {
        for (w, window) in self.windows.iter().enumerate() {
            for (t, tab) in window.tabs.iter().enumerate() {
                if tab.id == id {
                    return Some((w, t));
                }
            }
        }
        None
    }

    pub(crate) fn active_session(&self) -> Option<String> {
        let window = self
            .key_window
            .as_ref()
            .and_then(|k| self.windows.iter().find(|w| &w.id == k))
            .or_else(|| self.windows.first())?;
        let tab = window.tabs.iter().find(|t| t.id == window.selected)?;
        Some(tab.active.clone())
    }

    /// Resolves `"active"` and checks the id.
    pub(crate) fn session(&self, id: &str) -> Option<Arc<Session>> {
        let id = if id == "active" {
            self.active_session()?
        } else {
            id.to_string()
        };
        self.sessions.get(&id).cloned()
    }

    pub(crate) fn remove_session(&mut self, id: &str) -> Option<Arc<Session>> {
        let session = self.sessions.remove(id)?;
        if let Some((w, t)) = self.tab_of(id) {
            let tab = &mut self.windows[w].tabs[t];
            if tab.root.remove(id) {
                if tab.active == id {
                    let mut all = Vec::new();
                    tab.root.sessions(&mut all);
                    tab.active = all.first().cloned().unwrap_or_default();
                }
            } else {
                let tab_id = tab.id.clone();
                let window = &mut self.windows[w];
                window.tabs.remove(t);
                if window.selected == tab_id {
                    window.selected = window
                        .tabs
                        .first()
                        .map(|t| t.id.clone())
                        .unwrap_or_default();
                }
                if window.tabs.is_empty() {
                    let gone = self.windows.remove(w);
                    if self.key_window.as_deref() == Some(gone.id.as_str()) {
                        self.key_window = self.windows.first().map(|w| w.id.clone());
                    }
                }
            }
        }
        Some(session)
    }

    fn summary(&self, id: &str) -> SessionSummary {
        let (cols, rows, title) = match self.sessions.get(id) {
            Some(s) => {
                let (c, r) = s.size();
                (c, r, lock(&s.name).clone())
            }
            None => (0, 0, String::new()),
        };
        SessionSummary {
            unique_identifier: Some(id.to_string()),
            frame: Some(Frame {
                origin: Some(Point {
                    x: Some(0),
                    y: Some(0),
                }),
                size: Some(Size {
                    width: Some(cols as i32 * 7),
                    height: Some(rows as i32 * 15),
                }),
            }),
            grid_size: Some(Size {
                width: Some(cols as i32),
                height: Some(rows as i32),
            }),
            title: Some(title),
        }
    }

    fn tree(&self, node: &Node) -> SplitTreeNode {
        use split_tree_node::{split_tree_link::Child, SplitTreeLink};
        match node {
            // The root is always a node, even for a single session.
            Node::Leaf(id) => SplitTreeNode {
                vertical: Some(false),
                links: vec![SplitTreeLink {
                    child: Some(Child::Session(self.summary(id))),
                }],
            },
            Node::Split { vertical, children } => SplitTreeNode {
                vertical: Some(*vertical),
                links: children
                    .iter()
                    .map(|c| SplitTreeLink {
                        child: Some(match c {
                            Node::Leaf(id) => Child::Session(self.summary(id)),
                            split => Child::Node(self.tree(split)),
                        }),
                    })
                    .collect(),
            },
        }
    }

    /// The ListSessions answer.
    pub fn list(&self) -> ListSessionsResponse {
        ListSessionsResponse {
            windows: self
                .windows
                .iter()
                .filter(|w| !w.tabs.is_empty())
                .map(|w| list_sessions_response::Window {
                    tabs: w
                        .tabs
                        .iter()
                        .map(|t| list_sessions_response::Tab {
                            tab_id: Some(t.id.clone()),
                            root: Some(self.tree(&t.root)),
                            // Always set; "-1" when the tab is not a tmux tab.
                            tmux_window_id: Some("-1".into()),
                            tmux_connection_id: None,
                            minimized_sessions: Vec::new(),
                        })
                        .collect(),
                    window_id: Some(w.id.clone()),
                    frame: Some(Frame {
                        origin: Some(Point {
                            x: Some(0),
                            y: Some(0),
                        }),
                        size: Some(Size {
                            width: Some(w.size.0 as i32 * 7),
                            height: Some(w.size.1 as i32 * 15),
                        }),
                    }),
                    number: Some(w.number),
                })
                .collect(),
            buried_sessions: Vec::new(),
        }
    }
}

fn notification() -> Notification {
    Notification::default()
}

fn reply(conn: &Conn, id: i64, submessage: Option<Rep>) {
    let message = ServerOriginatedMessage {
        id: Some(id),
        submessage,
    };
    let _ = conn
        .out
        .send(Message::Binary(message.encode_to_vec().into()));
}

fn layout_changed(state: &State) {
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

fn new_session_notice(state: &State, id: &str) {
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

/// The program of a session ended: the session closes.
pub(crate) fn session_ended(state: &Arc<State>, id: &str) {
    let removed = lock(&state.world).remove_session(id);
    if let Some(session) = removed {
        session.kill();
        terminated(state, id);
    }
}

fn terminated(state: &State, id: &str) {
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
    layout_changed(state);
}

/// A screen changed (already coalesced per frame).
pub(crate) fn screen_updated(state: &State, id: &str) {
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

fn coord(c: AbsCoord) -> Coord {
    Coord {
        x: Some(c.x),
        y: Some(c.y),
    }
}

fn range(start: AbsCoord, end: AbsCoord) -> CoordRange {
    CoordRange {
        start: Some(coord(start)),
        end: Some(coord(end)),
    }
}

fn prompt_response(p: &PromptRecord, cursor: AbsCoord, session: &Session) -> GetPromptResponse {
    let prompt_end = p.prompt_end.unwrap_or(cursor);
    let state = if p.exit_status.is_some() {
        get_prompt_response::State::Finished
    } else if p.output_start.is_some() {
        get_prompt_response::State::Running
    } else {
        get_prompt_response::State::Editing
    };
    GetPromptResponse {
        status: Some(0),
        prompt_range: Some(range(p.prompt_start, prompt_end)),
        command_range: Some(range(prompt_end, p.output_start.unwrap_or(cursor))),
        output_range: Some(range(
            p.output_start.unwrap_or(cursor),
            p.output_end.unwrap_or(cursor),
        )),
        working_directory: session.cwd(),
        command: p.command.clone(),
        prompt_state: Some(state as i32),
        exit_status: p.exit_status.map(|s| s as u32),
        unique_prompt_id: Some(p.id.clone()),
    }
}

/// Handles one request and sends its reply.
pub(crate) async fn handle(state: &Arc<State>, conn: &Arc<Conn>, request: ClientOriginatedMessage) {
    // iTerm2 copies the id into the reply, 0 included.
    let id = request.id.unwrap_or(0);
    let Some(submessage) = request.submessage else {
        reply(
            conn,
            id,
            Some(Rep::Error(
                "Invalid request. Upgrade iTerm2 to a newer version.".into(),
            )),
        );
        return;
    };
    if let Req::TransactionRequest(t) = &submessage {
        let mut held = conn.transaction.lock().await;
        let status = match (t.begin.unwrap_or(false), held.is_some()) {
            (true, true) => transaction_response::Status::AlreadyInTransaction,
            (true, false) => {
                *held = Some(state.main_loop.clone().lock_owned().await);
                transaction_response::Status::Ok
            }
            (false, true) => {
                held.take();
                transaction_response::Status::Ok
            }
            (false, false) => transaction_response::Status::NoTransaction,
        };
        reply(
            conn,
            id,
            Some(Rep::TransactionResponse(TransactionResponse {
                status: Some(status as i32),
            })),
        );
        return;
    }
    // Outside a transaction of its own, a request waits for the main loop.
    let in_transaction = conn.transaction.lock().await.is_some();
    let _main = if in_transaction {
        None
    } else {
        Some(state.main_loop.clone().lock_owned().await)
    };
    match submessage {
        Req::CreateTabRequest(r) => {
            let answer = create_tab(state, r);
            late_reply(conn, id, answer);
        }
        Req::SplitPaneRequest(r) => {
            let answer = split_pane(state, r);
            late_reply(conn, id, answer);
        }
        other => {
            let answer = handle_now(state, conn, other);
            reply(conn, id, answer);
        }
    }
    // A request may have changed variables someone watches.
    crate::variables::check(state);
}

fn late_reply(conn: &Arc<Conn>, id: i64, answer: Option<Rep>) {
    let conn = conn.clone();
    tokio::spawn(async move {
        tokio::time::sleep(LATE_REPLY).await;
        reply(&conn, id, answer);
    });
}

fn handle_now(state: &Arc<State>, conn: &Conn, request: Req) -> Option<Rep> {
    Some(match request {
        Req::ListSessionsRequest(_) => Rep::ListSessionsResponse(lock(&state.world).list()),
        Req::NotificationRequest(r) => Rep::NotificationResponse(subscribe(state, conn, r)),
        Req::FocusRequest(_) => Rep::FocusResponse(focus(state)),
        Req::GetBroadcastDomainsRequest(_) => {
            Rep::GetBroadcastDomainsResponse(GetBroadcastDomainsResponse::default())
        }
        Req::SendTextRequest(r) => Rep::SendTextResponse(send_text(state, r)),
        Req::GetBufferRequest(r) => return get_buffer(state, r).map(Rep::GetBufferResponse),
        Req::GetPromptRequest(r) => Rep::GetPromptResponse(get_prompt(state, r)),
        Req::ListPromptsRequest(r) => Rep::ListPromptsResponse(list_prompts(state, r)),
        Req::VariableRequest(r) => Rep::VariableResponse(crate::variables::handle(state, r)),
        Req::SetProfilePropertyRequest(r) => Rep::SetProfilePropertyResponse(set_profile(state, r)),
        Req::GetProfilePropertyRequest(r) => Rep::GetProfilePropertyResponse(get_profile(state, r)),
        Req::ListProfilesRequest(_) => Rep::ListProfilesResponse(ListProfilesResponse {
            profiles: vec![list_profiles_response::Profile {
                properties: default_profile()
                    .into_iter()
                    .map(|(k, v)| ProfileProperty {
                        key: Some(k),
                        json_value: Some(v),
                    })
                    .collect(),
            }],
        }),
        Req::ActivateRequest(r) => Rep::ActivateResponse(activate(state, r)),
        Req::InjectRequest(r) => Rep::InjectResponse(inject(state, r)),
        Req::CloseRequest(r) => Rep::CloseResponse(close(state, r)),
        Req::InvokeFunctionRequest(r) => Rep::InvokeFunctionResponse(invoke(state, r)),
        Req::GetPropertyRequest(r) => Rep::GetPropertyResponse(get_property(state, r)),
        Req::SetPropertyRequest(r) => Rep::SetPropertyResponse(set_property(state, r)),
        Req::RestartSessionRequest(r) => {
            let known = r
                .session_id
                .as_deref()
                .is_some_and(|s| lock(&state.world).session(s).is_some());
            Rep::RestartSessionResponse(RestartSessionResponse {
                status: Some(if known {
                    restart_session_response::Status::SessionNotRestartable as i32
                } else {
                    restart_session_response::Status::SessionNotFound as i32
                }),
            })
        }
        Req::SetTabLayoutRequest(r) => Rep::SetTabLayoutResponse(set_tab_layout(state, r)),
        Req::TransactionRequest(_) | Req::CreateTabRequest(_) | Req::SplitPaneRequest(_) => {
            return None
        }
    })
}

fn subscribe(state: &State, conn: &Conn, r: NotificationRequest) -> NotificationResponse {
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

fn focus(state: &State) -> FocusResponse {
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

fn targets(state: &State, id: &str) -> Vec<Arc<Session>> {
    let world = lock(&state.world);
    if id == "all" {
        world.sessions.values().cloned().collect()
    } else {
        world.session(id).into_iter().collect()
    }
}

fn send_text(state: &State, r: SendTextRequest) -> SendTextResponse {
    let sessions = targets(state, r.session.as_deref().unwrap_or(""));
    let text = r.text.unwrap_or_default();
    let mut ok = !sessions.is_empty();
    for s in sessions {
        if s.is_closed() || s.write(text.as_bytes()).is_err() {
            ok = false;
        }
    }
    SendTextResponse {
        status: Some(if ok {
            send_text_response::Status::Ok as i32
        } else {
            send_text_response::Status::SessionNotFound as i32
        }),
    }
}

fn get_buffer(state: &State, r: GetBufferRequest) -> Option<GetBufferResponse> {
    let Some(session) = lock(&state.world).session(r.session.as_deref().unwrap_or("")) else {
        return Some(GetBufferResponse {
            status: Some(get_buffer_response::Status::SessionNotFound as i32),
            ..Default::default()
        });
    };
    let mut term = lock(&session.term);
    let line_range = r.line_range.unwrap_or_default();
    let first_screen = term.first_screen_line();
    let end_line = term.end_line();
    let (start, end) = if let Some(w) = line_range.windowed_coord_range {
        let c = w.coord_range?;
        let (s, e) = (c.start?, c.end?);
        let (y0, y1) = (s.y.unwrap_or(0), e.y.unwrap_or(0));
        if y1 < y0 || y0 < 0 {
            return None;
        }
        (y0, if e.x.unwrap_or(0) > 0 { y1 + 1 } else { y1 })
    } else {
        // Exactly one of the two must be present; otherwise the reply is empty.
        match (line_range.screen_contents_only, line_range.trailing_lines) {
            (Some(_), None) => (first_screen, end_line),
            (None, Some(n)) => {
                let n = (n.max(0) as i64).min(1_000_000);
                (end_line - n, end_line)
            }
            _ => return None,
        }
    };
    let (first, lines) = term.lines(start, end);
    let cursor = term.cursor();
    let count = lines.len() as i64;
    Some(GetBufferResponse {
        status: Some(0),
        contents: lines
            .into_iter()
            .map(|l| LineContents {
                text: Some(l.text),
                code_points_per_cell: l
                    .cells
                    .into_iter()
                    .map(|(points, repeats)| CodePointsPerCell {
                        num_code_points: Some(points),
                        repeats: Some(repeats),
                    })
                    .collect(),
                continuation: Some(if l.soft_wrap {
                    line_contents::Continuation::ContinuationSoftEol as i32
                } else {
                    line_contents::Continuation::ContinuationHardEol as i32
                }),
            })
            .collect(),
        cursor: Some(coord(cursor)),
        windowed_coord_range: Some(WindowedCoordRange {
            coord_range: Some(CoordRange {
                start: Some(Coord {
                    x: Some(0),
                    y: Some(first),
                }),
                end: Some(Coord {
                    x: Some(0),
                    y: Some(first + count),
                }),
            }),
            columns: None,
        }),
        // The deprecated `range` and `num_lines_above_screen` are not filled.
        ..Default::default()
    })
}

fn get_prompt(state: &State, r: GetPromptRequest) -> GetPromptResponse {
    let Some(session) = lock(&state.world).session(r.session.as_deref().unwrap_or("")) else {
        return GetPromptResponse {
            status: Some(get_prompt_response::Status::SessionNotFound as i32),
            ..Default::default()
        };
    };
    let mut term = lock(&session.term);
    let cursor = term.cursor();
    match term.prompt(r.unique_prompt_id.as_deref()) {
        Some(p) => prompt_response(p, cursor, &session),
        None => GetPromptResponse {
            status: Some(get_prompt_response::Status::PromptUnavailable as i32),
            ..Default::default()
        },
    }
}

fn list_prompts(state: &State, r: ListPromptsRequest) -> ListPromptsResponse {
    let Some(session) = lock(&state.world).session(r.session.as_deref().unwrap_or("")) else {
        return ListPromptsResponse {
            status: Some(list_prompts_response::Status::SessionNotFound as i32),
            unique_prompt_id: Vec::new(),
        };
    };
    let ids = lock(&session.term).prompt_ids();
    let from = r
        .first_unique_id
        .as_ref()
        .and_then(|f| ids.iter().position(|i| i == f))
        .unwrap_or(0);
    let to = r
        .last_unique_id
        .as_ref()
        .and_then(|l| ids.iter().position(|i| i == l))
        .map(|i| i + 1)
        .unwrap_or(ids.len());
    ListPromptsResponse {
        status: Some(0),
        unique_prompt_id: ids.get(from..to.max(from)).unwrap_or_default().to_vec(),
    }
}

fn default_profile() -> Vec<(String, String)> {
    [
        ("Name", "\"Default\""),
        ("Guid", &format!("\"{DEFAULT_GUID}\"")),
        ("Badge Text", "\"\""),
        ("Use Tab Color", "false"),
        ("Columns", "80"),
        ("Rows", "24"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn set_profile(state: &State, r: SetProfilePropertyRequest) -> SetProfilePropertyResponse {
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
        let mut profile = lock(&s.profile);
        for (k, v) in &assignments {
            if k == "Name" {
                if let Ok(name) = serde_json::from_str::<String>(v) {
                    *lock(&s.name) = name;
                }
            }
            profile.insert(k.clone(), v.clone());
        }
    }
    status(Status::Ok)
}

fn get_profile(state: &State, r: GetProfilePropertyRequest) -> GetProfilePropertyResponse {
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

fn activate(state: &State, r: ActivateRequest) -> ActivateResponse {
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

fn inject(state: &State, r: InjectRequest) -> InjectResponse {
    let data = r.data.unwrap_or_default();
    let mut statuses = Vec::new();
    for id in &r.session_id {
        let sessions = targets(state, id);
        let ok = !sessions.is_empty();
        for s in sessions {
            let _ = s.feed.send(Feed::Output(data.clone()));
        }
        statuses.push(if ok {
            inject_response::Status::Ok as i32
        } else {
            inject_response::Status::SessionNotFound as i32
        });
    }
    InjectResponse { status: statuses }
}

fn close(state: &State, r: CloseRequest) -> CloseResponse {
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

/// Parses `name(arg: json, …)`.
fn parse_invocation(text: &str) -> Option<(String, HashMap<String, serde_json::Value>)> {
    let open = text.find('(')?;
    let name = text[..open].trim().to_string();
    let mut rest = text[open + 1..].trim_start();
    let mut args = HashMap::new();
    loop {
        if let Some(after) = rest.strip_prefix(')') {
            return after.trim().is_empty().then_some((name, args));
        }
        let colon = rest.find(':')?;
        let key = rest[..colon].trim().to_string();
        rest = rest[colon + 1..].trim_start();
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<serde_json::Value>();
        let value = stream.next()?.ok()?;
        let used = stream.byte_offset();
        args.insert(key, value);
        rest = rest[used..].trim_start();
        rest = rest.strip_prefix(',').map(str::trim_start).unwrap_or(rest);
    }
}

fn invoke(state: &State, r: InvokeFunctionRequest) -> InvokeFunctionResponse {
    use invoke_function_response::{Disposition, Error, Status, Success};
    let fail = |status: Status, reason: String| InvokeFunctionResponse {
        disposition: Some(Disposition::Error(Error {
            status: Some(status as i32),
            error_reason: Some(reason),
        })),
    };
    let Some((name, args)) = r.invocation.as_deref().and_then(parse_invocation) else {
        return fail(
            Status::RequestMalformed,
            "could not parse the invocation".into(),
        );
    };
    let receiver = match r.context {
        Some(invoke_function_request::Context::Method(m)) => m.receiver.unwrap_or_default(),
        Some(invoke_function_request::Context::Session(s)) => s.session_id.unwrap_or_default(),
        Some(invoke_function_request::Context::Tab(t)) => t.tab_id.unwrap_or_default(),
        Some(invoke_function_request::Context::Window(w)) => w.window_id.unwrap_or_default(),
        Some(invoke_function_request::Context::App(_)) | None => String::new(),
    };
    let text = |key: &str| args.get(key).and_then(|v| v.as_str()).map(str::to_string);
    let mut world = lock(&state.world);
    match name.as_str() {
        "iterm2.set_title" => {
            let Some(title) = text("title") else {
                return fail(Status::RequestMalformed, "set_title needs a title".into());
            };
            if let Some((w, t)) = world.find_tab(&receiver) {
                world.windows[w].tabs[t]
                    .vars
                    .insert("title".into(), serde_json::Value::String(title).to_string());
            } else if let Some(window) = world.windows.iter_mut().find(|w| w.id == receiver) {
                window
                    .vars
                    .insert("title".into(), serde_json::Value::String(title).to_string());
            } else {
                return fail(Status::InvalidId, format!("no tab or window {receiver}"));
            }
        }
        "iterm2.set_name" => {
            let Some(new_name) = text("name") else {
                return fail(Status::RequestMalformed, "set_name needs a name".into());
            };
            let Some(session) = world.session(&receiver) else {
                return fail(Status::InvalidId, format!("no session {receiver}"));
            };
            *lock(&session.name) = new_name;
        }
        other => return fail(Status::Failed, format!("no function named {other}")),
    }
    drop(world);
    InvokeFunctionResponse {
        disposition: Some(Disposition::Success(Success {
            json_result: Some("null".into()),
        })),
    }
}

fn get_property(state: &State, r: GetPropertyRequest) -> GetPropertyResponse {
    use get_property_response::Status;
    let answer = |status: Status, json: Option<String>| GetPropertyResponse {
        status: Some(status as i32),
        json_value: json,
    };
    let name = r.name.unwrap_or_default();
    match r.identifier {
        Some(get_property_request::Identifier::SessionId(id)) => {
            let Some(session) = lock(&state.world).session(&id) else {
                return answer(Status::InvalidTarget, None);
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
                "buried" => answer(Status::Ok, Some("false".into())),
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

fn set_property(state: &State, r: SetPropertyRequest) -> SetPropertyResponse {
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

/// What a new session runs, from its profile properties.
fn launch(
    state: &State,
    props: &[ProfileProperty],
    deprecated: Option<String>,
    size: (u16, u16),
) -> Launch {
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
    let command = if text("Custom Command").as_deref() == Some("Yes") {
        text("Command")
    } else {
        None
    }
    .or(deprecated)
    .or_else(|| state.options.default_command.clone())
    .unwrap_or_else(|| {
        let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
        format!("exec {shell} -l")
    });
    let cwd = if text("Custom Directory").as_deref() == Some("Yes") {
        text("Working Directory")
    } else {
        None
    };
    Launch {
        command,
        cwd,
        cols: size.0,
        rows: size.1,
        profile,
    }
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

fn create_tab(state: &Arc<State>, r: CreateTabRequest) -> Option<Rep> {
    use create_tab_response::Status;
    let fail = |s: Status| {
        Some(Rep::CreateTabResponse(CreateTabResponse {
            status: Some(s as i32),
            ..Default::default()
        }))
    };
    if r.profile_name.as_deref().is_some_and(|p| p != "Default") {
        return fail(Status::InvalidProfileName);
    }
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
    let launch = launch(state, &r.custom_profile_properties, command, size);
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
fn requested_extent(
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
fn set_tab_layout(state: &State, r: SetTabLayoutRequest) -> SetTabLayoutResponse {
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

fn split_pane(state: &Arc<State>, r: SplitPaneRequest) -> Option<Rep> {
    use split_pane_response::Status;
    let fail = |s: Status| {
        Some(Rep::SplitPaneResponse(SplitPaneResponse {
            status: Some(s as i32),
            session_id: Vec::new(),
        }))
    };
    if r.profile_name.as_deref().is_some_and(|p| p != "Default") {
        return fail(Status::InvalidProfileName);
    }
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
    let launch = launch(state, &r.custom_profile_properties, None, new_size);
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
    session.run(state, rx);
    Some(Rep::SplitPaneResponse(SplitPaneResponse {
        status: Some(Status::Ok as i32),
        session_id: vec![session.id.clone()],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invocations_parse() {
        let (name, args) = parse_invocation(r#"iterm2.set_title(title: "a \"b\", c")"#).unwrap();
        assert_eq!(name, "iterm2.set_title");
        assert_eq!(args["title"], "a \"b\", c");
        let (_, args) = parse_invocation("f(x: 1, y: [2, 3])").unwrap();
        assert_eq!(args["y"], serde_json::json!([2, 3]));
        assert!(parse_invocation("f(x 1)").is_none());
    }

    #[test]
    fn trees_split_and_collapse() {
        let mut root = Node::Leaf("a".into());
        assert!(root.split("a", "b", true, false));
        assert!(root.split("b", "c", true, false));
        assert!(root.split("a", "d", false, false));
        let mut all = Vec::new();
        root.sessions(&mut all);
        assert_eq!(all, ["a", "d", "b", "c"]);
        assert!(root.remove("d"));
        assert!(root.remove("b"));
        assert!(root.remove("c"));
        assert!(matches!(root, Node::Leaf(ref s) if s == "a"));
        assert!(!root.remove("a"));
    }
}
