//! A fake iTerm2 API server with real terminals behind it.
//!
//! It speaks iTerm2's scripting protocol (WebSocket + protobuf, subprotocol
//! `api.iterm2.com`) on a unix socket or TCP port, so iTerm2 clients — cohort's
//! iTerm2 backend, the official Python `iterm2` package — can be tested on any Unix:
//!
//! - **Handshake checks** as iTerm2 makes them: request line and path, `upgrade`,
//!   `connection` and `sec-websocket-protocol` compared as whole values, `origin`
//!   host `localhost`, `host`, WebSocket version ≥ 13, `x-iterm2-library-version`
//!   (400 when missing or malformed, 406 for Python libraries older than 0.24), the
//!   peer's uid on the unix socket, and the cookie: without a cookie it issued, a
//!   client gets 401 (the key only names a connection, as in iTerm2). Cookies are
//!   single-use unless issued as reusable; [`Auth::AllowAll`] is iTerm2's "allow
//!   all apps to connect". The reply carries `X-iTerm2-Protocol-Version` (1.17 by
//!   default).
//! - **Framing**: binary frames only, the request id echoed in every reply (0
//!   included), notifications without an id, an `error` reply for requests it does
//!   not know, an empty reply for GetBuffer with a bad line range.
//! - **Sessions** are real: every tab and split runs its program in a PTY, and a VT
//!   emulator keeps screen, scrollback and cursor. Like iTerm2 the fake starts with
//!   one window. OSC 133 marks become prompt notifications (PROMPT at `B`,
//!   COMMAND_START at `C`, COMMAND_END at `D`); creating, splitting and closing emit
//!   new-session, terminate-session and layout-change notifications; screen updates
//!   are coalesced; VariableMonitor subscriptions hear of every change of a watched
//!   variable (the foreground job included). `OSC 1337 ; SetUserVar` sets a
//!   session's `user.*` variable as iTerm2 does, and its monitors hear of it in order
//!   with the prompt notifications of the same output.
//! - **Evaluation** as in iTerm2: session names, tab titles and badges are
//!   interpolated strings (`\(…)` expressions, backslash escapes), invocations are
//!   expressions, and a profile's command is interpolated, checked for `$$…$$`
//!   substitutions and split into words by iTerm2's rules before it is run without
//!   a shell. Function calls that evaluation makes are logged
//!   ([`FakeServer::function_calls`]), so a client that forgets to escape shows.
//! - **Quirks** kept: `tmux_window_id` is `"-1"` on every tab, `CreateTabResponse.tab_id`
//!   is an int32, `grid_size` through GetProperty is one less than the real size,
//!   replies to CreateTab and SplitPane come late (after later requests' replies).
//!
//! It runs on its own as the `cohort-fake-iterm2` program (see `src/main.rs`), and
//! in-process in tests:
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use cohort_fake_iterm2::{FakeOptions, FakeServer};
//! let server = FakeServer::start(std::path::Path::new("/tmp/fake-iterm2.sock"), FakeOptions::default()).await?;
//! let cookie = server.issue_cookie(); // hand it to the client as ITERM2_COOKIE
//! # let _ = cookie; Ok(()) }
//! ```

pub mod dynamic;
mod expr;
mod handlers;
mod handshake;
mod pty;
mod rpc;
mod session;
pub mod term;
pub mod uservar;
mod variables;
mod world;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::{SinkExt, StreamExt};
use prost::Message as _;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;

use cohort_backends::iterm2::proto::{
    server_originated_message, ClientOriginatedMessage, Notification, ServerOriginatedMessage,
};

pub use session::Session;

/// Who may connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// A cookie the server issued is required (iTerm2's default with the approval
    /// dialog disabled: anything else gets 401).
    Cookies,
    /// Anyone may connect ("allow all apps to connect").
    AllowAll,
}

/// How the fake behaves.
#[derive(Clone, Debug)]
pub struct FakeOptions {
    /// Who may connect; a cookie is required by default, as in iTerm2.
    pub auth: Auth,
    /// The `X-iTerm2-Protocol-Version` header.
    pub protocol_version: String,
    /// `(cols, rows)` of new windows.
    pub default_size: (u16, u16),
    /// Scrollback lines kept per session.
    pub scrollback: usize,
    /// The program a tab runs when its profile has no custom command; `$SHELL` when `None`.
    pub default_command: Option<String>,
    /// Environment every session's program gets on top of the server's own (tests give
    /// the shells an empty `HOME`).
    pub env: Vec<(String, String)>,
    /// Whether the fake starts with one window (one tab, one session running the
    /// default command), as iTerm2 does when it launches.
    pub initial_window: bool,
    /// Cookies accepted any number of times from the start (iTerm2's reusable cookies).
    pub reusable_cookies: Vec<String>,
    /// Where each session's raw output is logged, escape sequences and all, as
    /// `<session id>.log` (iTerm2's Session ▸ Log ▸ Log Raw Data); no log when `None`.
    pub raw_log_dir: Option<PathBuf>,
    /// The DynamicProfiles folder whose profiles the fake has besides Default
    /// (see [`dynamic`]); none when `None`.
    pub dynamic_profiles: Option<PathBuf>,
}

impl Default for FakeOptions {
    fn default() -> Self {
        FakeOptions {
            auth: Auth::Cookies,
            protocol_version: "1.17".to_string(),
            default_size: (80, 24),
            scrollback: 10_000,
            default_command: None,
            env: Vec::new(),
            initial_window: true,
            reusable_cookies: Vec::new(),
            raw_log_dir: None,
            dynamic_profiles: None,
        }
    }
}

/// A running fake server; dropping it stops listening and closes its sessions.
pub struct FakeServer {
    state: Arc<State>,
    endpoint: String,
    task: tokio::task::JoinHandle<()>,
    poller: tokio::task::JoinHandle<()>,
    socket: Option<PathBuf>,
}

impl FakeServer {
    /// Listens on a unix socket at `socket` (its directory is created with mode 0700).
    pub async fn start(socket: &Path, options: FakeOptions) -> std::io::Result<FakeServer> {
        if let Some(dir) = socket.parent() {
            std::fs::create_dir_all(dir)?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
            }
        }
        let _ = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket)?;
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600));
        }
        let state = State::new(options)?;
        let accept_state = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let peer_ok = stream
                    .peer_cred()
                    .map(|c| c.uid() == unsafe { libc::geteuid() })
                    .unwrap_or(false);
                let state = accept_state.clone();
                tokio::spawn(async move { serve_connection(state, stream, peer_ok).await });
            }
        });
        Ok(FakeServer {
            poller: State::poll(&state),
            state,
            endpoint: socket.display().to_string(),
            task,
            socket: Some(socket.to_path_buf()),
        })
    }

    /// Listens on TCP (iTerm2's legacy transport), e.g. `127.0.0.1:0`.
    pub async fn start_tcp(addr: &str, options: FakeOptions) -> std::io::Result<FakeServer> {
        let listener = TcpListener::bind(addr).await?;
        let endpoint = listener.local_addr()?.to_string();
        let state = State::new(options)?;
        let accept_state = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = accept_state.clone();
                tokio::spawn(async move { serve_connection(state, stream, true).await });
            }
        });
        Ok(FakeServer {
            poller: State::poll(&state),
            state,
            endpoint,
            task,
            socket: None,
        })
    }

    /// Where it listens: the socket path, or `host:port`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Issues a single-use cookie.
    pub fn issue_cookie(&self) -> String {
        self.state.issue_cookie(false)
    }

    /// Issues a cookie accepted any number of times.
    pub fn issue_reusable_cookie(&self) -> String {
        self.state.issue_cookie(true)
    }

    /// Accepts a cookie chosen by the caller (reusable or single-use).
    pub fn accept_cookie(&self, cookie: &str, reusable: bool) {
        lock(&self.state.cookies).insert(cookie.to_string(), reusable);
    }

    /// A handle that issues cookies for this server (for credential callbacks).
    pub fn cookie_jar(&self) -> CookieJar {
        CookieJar {
            state: self.state.clone(),
        }
    }

    /// Ids of the live sessions.
    pub fn session_ids(&self) -> Vec<String> {
        let world = lock(&self.state.world);
        world.sessions.keys().cloned().collect()
    }

    /// Every function call that evaluating a client's strings made, as written: in
    /// iTerm2 these run (with side effects in a profile's command). A client that
    /// passes names and titles literally never causes one.
    pub fn function_calls(&self) -> Vec<String> {
        lock(&self.state.calls).clone()
    }

    /// What the sessions' output asked of the user, in order: each session's posted
    /// notifications (`OSC 9`, with their text) and requests for attention (`None`).
    pub fn alerts(&self) -> Vec<(String, Option<String>)> {
        lock(&self.state.alerts).clone()
    }

    /// Types `text` into `session` as a person at the keyboard would: with broadcast
    /// input on, every session of its domain gets it.
    pub fn type_as_person(&self, session: &str, text: &str) {
        for id in handlers::broadcast_to(&self.state, session) {
            let target = lock(&self.state.world).session(&id);
            if let Some(s) = target {
                let _ = s.write(text.as_bytes());
            }
        }
    }

    /// What a status-bar component a client registered shows for `session`, as
    /// iTerm2 asks it when it draws the session's status bar; `None` when no
    /// component is registered or none answers.
    pub async fn status_bar_text(&self, session: &str) -> Option<String> {
        rpc::status_bar_text(&self.state, session).await
    }

    /// A session variable as iTerm2 holds it (its JSON value), for tests that check
    /// what a client set.
    pub fn session_variable(&self, session: &str, name: &str) -> Option<String> {
        let session = lock(&self.state.world).session(session)?;
        let value = lock(&session.vars).get(name).cloned();
        value
    }

    /// A profile property of a session as iTerm2 keeps it (its JSON value): what a
    /// client asked the session to run is its "Command".
    pub fn profile_property(&self, session: &str, key: &str) -> Option<String> {
        let session = lock(&self.state.world).session(session)?;
        let value = lock(&session.profile).get(key).cloned();
        value
    }

    /// Drops every client connection (sessions stay), as when iTerm2 restarts its API server.
    pub fn drop_connections(&self) {
        let conns: Vec<Arc<Conn>> = lock(&self.state.conns).drain().map(|(_, c)| c).collect();
        for conn in conns {
            let _ = conn.out.send(Message::Close(None));
        }
    }

    /// Cuts every client connection without a WebSocket close, wherever it is (also
    /// in the middle of a request), as when iTerm2 quits or crashes. Sessions stay.
    pub fn cut_connections(&self) {
        let conns: Vec<Arc<Conn>> = lock(&self.state.conns).values().cloned().collect();
        // Every connection is severed before any is dropped: dropping one releases
        // a transaction it held, and a request waiting on another connection must
        // not be answered in the moment before that one is dropped too.
        for conn in &conns {
            conn.severed.store(true, Ordering::SeqCst);
        }
        for conn in conns {
            conn.cut.notify_one();
        }
    }

    /// How many requests that `matches` accepts were received and not handled yet, on
    /// every connection: a request counted here was sent before any cut that follows.
    pub fn requests_received(&self, matches: impl Fn(&ClientOriginatedMessage) -> bool) -> usize {
        let conns: Vec<Arc<Conn>> = lock(&self.state.conns).values().cloned().collect();
        conns
            .iter()
            .map(|c| lock(&c.received).iter().filter(|r| matches(r)).count())
            .sum()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
        self.poller.abort();
        lock(&self.state.conns).clear();
        let sessions: Vec<Arc<Session>> = lock(&self.state.world)
            .sessions
            .drain()
            .map(|(_, s)| s)
            .collect();
        for s in sessions {
            s.kill();
        }
        if let Some(socket) = &self.socket {
            let _ = std::fs::remove_file(socket);
        }
    }
}

/// Issues cookies for a running [`FakeServer`].
#[derive(Clone)]
pub struct CookieJar {
    state: Arc<State>,
}

impl CookieJar {
    /// Issues a single-use cookie.
    pub fn issue(&self) -> String {
        self.state.issue_cookie(false)
    }
}

impl std::fmt::Debug for CookieJar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CookieJar")
    }
}

/// Shared state of one fake server.
pub(crate) struct State {
    pub options: FakeOptions,
    pub world: Mutex<world::World>,
    pub conns: Mutex<HashMap<u64, Arc<Conn>>>,
    /// iTerm2's main loop: a transaction holds it across requests.
    pub main_loop: Arc<tokio::sync::Mutex<()>>,
    cookies: Mutex<HashMap<String, bool>>,
    next_conn: AtomicU64,
    /// Every function call an evaluated string made (see [`FakeServer::function_calls`]).
    pub calls: Mutex<Vec<String>>,
    /// Every notification a session posted and request for attention (see
    /// [`FakeServer::alerts`]).
    pub alerts: Mutex<Vec<(String, Option<String>)>>,
    /// Functions clients registered for the fake to call (see [`rpc`]).
    pub rpcs: Mutex<rpc::Rpcs>,
}

impl State {
    /// A new state, with iTerm2's first window when the options ask for it.
    fn new(options: FakeOptions) -> std::io::Result<Arc<State>> {
        let initial_window = options.initial_window;
        let cookies = options
            .reusable_cookies
            .iter()
            .map(|c| (c.clone(), true))
            .collect();
        let state = Arc::new(State {
            options,
            world: Mutex::new(world::World::default()),
            conns: Mutex::new(HashMap::new()),
            main_loop: Arc::new(tokio::sync::Mutex::new(())),
            cookies: Mutex::new(cookies),
            next_conn: AtomicU64::new(1),
            calls: Mutex::new(Vec::new()),
            alerts: Mutex::new(Vec::new()),
            rpcs: Mutex::default(),
        });
        if initial_window {
            handlers::open_first_window(&state)?;
        }
        Ok(state)
    }

    /// Compares watched variables every [`variables::POLL`] (the foreground job
    /// changes without a request), until the state is dropped.
    fn poll(state: &Arc<State>) -> tokio::task::JoinHandle<()> {
        let state = Arc::downgrade(state);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(variables::POLL).await;
                let Some(state) = state.upgrade() else { return };
                variables::check(&state);
            }
        })
    }

    fn issue_cookie(&self, reusable: bool) -> String {
        let cookie = uuid::Uuid::new_v4().simple().to_string();
        lock(&self.cookies).insert(cookie.clone(), reusable);
        cookie
    }

    fn consume_cookie(&self, cookie: &str) -> bool {
        let mut cookies = lock(&self.cookies);
        match cookies.get(cookie).copied() {
            Some(true) => true,
            Some(false) => {
                cookies.remove(cookie);
                true
            }
            None => false,
        }
    }

    /// Sends a notification to every connection subscribed to it.
    pub fn notify(
        &self,
        kind: i32,
        session: Option<&str>,
        mode: Option<i32>,
        notification: Notification,
    ) {
        let conns: Vec<Arc<Conn>> = lock(&self.conns).values().cloned().collect();
        let message = ServerOriginatedMessage {
            id: None,
            submessage: Some(server_originated_message::Submessage::Notification(
                notification,
            )),
        };
        let bytes = message.encode_to_vec();
        for conn in conns {
            if conn.wants(kind, session, mode) {
                let _ = conn.out.send(Message::Binary(bytes.clone().into()));
            }
        }
    }
}

/// A subscription key: notification type and session (`""` for app-level types).
type SubKey = (i32, String);

/// One client connection.
pub(crate) struct Conn {
    pub out: mpsc::UnboundedSender<Message>,
    /// Subscriptions, with the prompt modes asked for (PROMPT only when empty).
    pub subs: Mutex<HashMap<SubKey, Vec<i32>>>,
    /// VariableMonitor subscriptions.
    pub watches: Mutex<Vec<variables::Watch>>,
    /// Drops the socket at once (see [`FakeServer::cut_connections`]).
    pub cut: tokio::sync::Notify,
    /// Cut: nothing more is written to the socket.
    pub severed: Arc<std::sync::atomic::AtomicBool>,
    /// Requests read off the socket and not handled yet, oldest first. iTerm2 reads
    /// a connection's requests as they come and queues them for its main loop, so a
    /// request is received even while one before it waits there.
    pub received: Mutex<VecDeque<ClientOriginatedMessage>>,
    /// The main-loop guard while this connection holds a transaction.
    pub transaction: tokio::sync::Mutex<Option<tokio::sync::OwnedMutexGuard<()>>>,
}

impl Conn {
    fn wants(&self, kind: i32, session: Option<&str>, mode: Option<i32>) -> bool {
        let subs = lock(&self.subs);
        let check = |key: &SubKey| match subs.get(key) {
            None => false,
            Some(modes) => match mode {
                None => true,
                Some(m) if modes.is_empty() => m == 1,
                Some(m) => modes.contains(&m),
            },
        };
        match session {
            None => check(&(kind, String::new())),
            Some(s) => check(&(kind, s.to_string())) || check(&(kind, "all".to_string())),
        }
    }
}

async fn serve_connection<S>(state: Arc<State>, stream: S, peer_ok: bool)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let version = state.options.protocol_version.clone();
    let check_state = state.clone();
    // The callback's signature is tungstenite's.
    #[allow(clippy::result_large_err)]
    let callback =
        move |request: &Request, mut response: Response| -> Result<Response, ErrorResponse> {
            match handshake::check(&check_state, request, peer_ok) {
                Ok(()) => {
                    let h = response.headers_mut();
                    h.insert(
                        "sec-websocket-protocol",
                        HeaderValue::from_static("api.iterm2.com"),
                    );
                    if let Ok(v) = HeaderValue::from_str(&version) {
                        h.insert("x-iterm2-protocol-version", v);
                    }
                    Ok(response)
                }
                Err((status, text)) => {
                    let mut reject = ErrorResponse::new(Some(text.to_string()));
                    *reject.status_mut() = status;
                    Err(reject)
                }
            }
        };
    let Ok(ws) = tokio_tungstenite::accept_hdr_async(stream, callback).await else {
        return;
    };
    let (mut sink, mut source) = ws.split();
    let (out, mut out_rx) = mpsc::unbounded_channel::<Message>();
    let id = state.next_conn.fetch_add(1, Ordering::Relaxed);
    let severed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let conn = Arc::new(Conn {
        out,
        subs: Mutex::new(HashMap::new()),
        watches: Mutex::new(Vec::new()),
        transaction: tokio::sync::Mutex::new(None),
        cut: tokio::sync::Notify::new(),
        severed: severed.clone(),
        received: Mutex::new(VecDeque::new()),
    });
    lock(&state.conns).insert(id, conn.clone());
    let writer = tokio::spawn(async move {
        while let Some(message) = out_rx.recv().await {
            if severed.load(Ordering::SeqCst) || sink.send(message).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    // Requests are read as they arrive and handled one at a time, in order; the
    // handling ends when the socket closes and what was read before is handled.
    let (queue, mut queued) = mpsc::unbounded_channel::<ClientOriginatedMessage>();
    let read = {
        let conn = conn.clone();
        async move {
            while let Some(frame) = source.next().await {
                let data = match frame {
                    Ok(Message::Binary(data)) => data,
                    Ok(Message::Close(_)) | Err(_) => break,
                    // Text frames and anything else are dropped, as iTerm2 does.
                    Ok(_) => continue,
                };
                let Ok(request) = ClientOriginatedMessage::decode(data.as_ref()) else {
                    continue;
                };
                lock(&conn.received).push_back(request.clone());
                if queue.send(request).is_err() {
                    break;
                }
            }
        }
    };
    let handle = async {
        while let Some(request) = queued.recv().await {
            handlers::handle(&state, &conn, request).await;
            // Handled in the order received: the oldest is this one.
            lock(&conn.received).pop_front();
            if !lock(&state.conns).contains_key(&id) {
                break;
            }
        }
    };
    let serve = async {
        tokio::pin!(read);
        tokio::select! {
            _ = handle => {}
            // Reading ends first; the handling goes on with what it read.
            _ = async { (&mut read).await; std::future::pending::<()>().await } => {}
        }
    };
    // A cut drops the socket wherever serving is, even inside a request.
    tokio::select! {
        _ = serve => {}
        _ = conn.cut.notified() => {}
    }
    lock(&state.conns).remove(&id);
    // Releases a transaction left open.
    conn.transaction.lock().await.take();
    drop(conn);
    writer.abort();
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
