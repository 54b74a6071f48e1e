//! One WebSocket connection to iTerm2's API server.
//!
//! - **Transport.** The unix socket `~/Library/Application Support/iTerm2/private/socket`
//!   (or `$IT2_SUITE` instead of `iTerm2`) when it exists, else the legacy TCP port
//!   `localhost:1912`; or an explicit [`Endpoint`].
//! - **Handshake.** `GET /` with subprotocol `api.iterm2.com`, origin `ws://localhost/`,
//!   `x-iterm2-library-version: rust <version>`, `x-iterm2-disable-auth-ui`, and the
//!   cookie and key when known. The server's `X-iTerm2-Protocol-Version` is kept for
//!   feature gates.
//! - **Credentials.** From a [`CredentialSource`]: by default `ITERM2_COOKIE` /
//!   `ITERM2_KEY`, else AppleScript (`osascript`). A 401 fetches fresh credentials
//!   once more and retries; cookies are single-use, so every connection asks anew.
//! - **Framing.** One protobuf message per binary frame. Request ids start at 1;
//!   replies are matched by id whatever their order; anything whose submessage is a
//!   notification goes to the notification channel (notifications carry no id).
//!   An error submessage or a reply without a submessage is an error.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use prost::Message as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

use super::proto::{
    client_originated_message, server_originated_message, ClientOriginatedMessage, Notification,
    ServerOriginatedMessage,
};
use crate::error::{BackendError, Result};

/// The legacy TCP port older iTerm2 builds listen on.
pub const LEGACY_PORT: u16 = 1912;

/// How long one request may take before it is abandoned.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Where iTerm2's API server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A unix domain socket (current iTerm2).
    Unix(PathBuf),
    /// `host:port` over TCP (iTerm2 before 3.3.12).
    Tcp(String),
}

impl Endpoint {
    /// The unix socket iTerm2 uses: `$HOME/Library/Application Support/<suite>/private/socket`,
    /// with `<suite>` from `$IT2_SUITE` (default `iTerm2`).
    pub fn default_socket() -> PathBuf {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        let suite = std::env::var("IT2_SUITE")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "iTerm2".to_string());
        home.join("Library/Application Support")
            .join(suite)
            .join("private/socket")
    }

    /// The socket when it exists, else the legacy TCP port (as the official client picks).
    pub fn discover() -> Endpoint {
        let socket = Self::default_socket();
        if socket.exists() {
            Endpoint::Unix(socket)
        } else {
            Endpoint::Tcp(format!("localhost:{LEGACY_PORT}"))
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "unix socket {}", path.display()),
            Endpoint::Tcp(addr) => write!(f, "ws://{addr}"),
        }
    }
}

/// A cookie (and key) that authorises one connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    /// `x-iterm2-cookie`.
    pub cookie: Option<String>,
    /// `x-iterm2-key`.
    pub key: Option<String>,
}

/// A function returning fresh credentials; `fresh` is true on the retry after a 401.
pub type CredentialFn = Arc<dyn Fn(bool) -> Option<Credentials> + Send + Sync>;

/// Where credentials come from.
#[derive(Clone)]
pub enum CredentialSource {
    /// `ITERM2_COOKIE` / `ITERM2_KEY`, else (and on a retry) AppleScript.
    Default,
    /// No cookie (for servers with "allow all apps to connect").
    None,
    /// A custom provider (tests, or a cookie handed over by a launcher).
    Custom(CredentialFn),
}

impl std::fmt::Debug for CredentialSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialSource::Default => f.write_str("Default"),
            CredentialSource::None => f.write_str("None"),
            CredentialSource::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

impl CredentialSource {
    fn get(&self, app_name: &str, fresh: bool) -> Option<Credentials> {
        match self {
            CredentialSource::None => None,
            CredentialSource::Custom(f) => f(fresh),
            CredentialSource::Default => {
                if !fresh {
                    if let Ok(cookie) = std::env::var("ITERM2_COOKIE") {
                        if !cookie.is_empty() {
                            return Some(Credentials {
                                cookie: Some(cookie),
                                key: std::env::var("ITERM2_KEY").ok().filter(|k| !k.is_empty()),
                            });
                        }
                    }
                }
                applescript_credentials(app_name)
            }
        }
    }
}

/// Asks iTerm2 for a cookie and key through AppleScript (`osascript`).
pub fn applescript_credentials(app_name: &str) -> Option<Credentials> {
    let name = app_name.replace(['"', '\\'], "");
    let output = std::process::Command::new("osascript")
        .arg("-e")
        .arg(format!(
            "tell application \"iTerm2\" to request cookie and key for app named \"{name}\""
        ))
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    parse_cookie_and_key(&String::from_utf8_lossy(&output.stdout))
}

/// Splits AppleScript's `"<cookie> <key>"` answer.
pub fn parse_cookie_and_key(text: &str) -> Option<Credentials> {
    let mut words = text.split_whitespace();
    let cookie = words.next()?.to_string();
    Some(Credentials {
        cookie: Some(cookie),
        key: words.next().map(str::to_string),
    })
}

/// How to reach and authenticate with iTerm2.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// Where to connect; discovered when `None`.
    pub endpoint: Option<Endpoint>,
    /// Where cookies come from.
    pub credentials: CredentialSource,
    /// Name shown in iTerm2's script console (`x-iterm2-advisory-name`).
    pub app_name: String,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            endpoint: None,
            credentials: CredentialSource::Default,
            app_name: "cohort".to_string(),
        }
    }
}

/// What the connection delivers besides replies.
#[derive(Debug)]
pub enum ConnEvent {
    /// A notification (no id).
    Notification(Box<Notification>),
    /// The connection ended.
    Closed(String),
    /// A barrier ([`Connection::barrier`]): every notification that came before it
    /// is handled first, and the session's screen is read up to now.
    Barrier {
        /// The token to emit.
        token: u64,
        /// The session whose text must be out before it.
        session: String,
    },
}

type Pending =
    Arc<Mutex<HashMap<i64, oneshot::Sender<Result<server_originated_message::Submessage>>>>>;

/// A live API connection; see the module docs.
pub struct Connection {
    out: mpsc::UnboundedSender<Message>,
    pending: Pending,
    next_id: AtomicI64,
    closed: Arc<AtomicBool>,
    version: (u32, u32),
    endpoint: Endpoint,
    /// Where notifications go, for barriers behind them.
    events: mpsc::UnboundedSender<ConnEvent>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("endpoint", &self.endpoint)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// A reply that is on its way.
pub struct PendingReply {
    id: i64,
    rx: oneshot::Receiver<Result<server_originated_message::Submessage>>,
    pending: Pending,
}

impl PendingReply {
    /// Waits for the reply.
    pub async fn wait(self) -> Result<server_originated_message::Submessage> {
        match tokio::time::timeout(REQUEST_TIMEOUT, self.rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err(BackendError::Disconnected {
                backend: "iterm2",
                reason: "the connection closed before the reply arrived".into(),
            }),
            Err(_) => {
                lock(&self.pending).remove(&self.id);
                Err(BackendError::Timeout {
                    what: format!("iTerm2's reply to request {}", self.id),
                    after_ms: REQUEST_TIMEOUT.as_millis() as u64,
                })
            }
        }
    }
}

impl Connection {
    /// Connects and authenticates; notifications go to `events`.
    pub async fn connect(
        options: &ConnectOptions,
        events: mpsc::UnboundedSender<ConnEvent>,
    ) -> Result<Connection> {
        let endpoint = options.endpoint.clone().unwrap_or_else(Endpoint::discover);
        let credentials = options.credentials.get(&options.app_name, false);
        match Self::connect_once(&endpoint, options, credentials, events.clone()).await {
            Err(HandshakeError::Unauthorized) => {
                let fresh = options.credentials.get(&options.app_name, true);
                if fresh.is_none() {
                    return Err(unauthorized(&endpoint));
                }
                match Self::connect_once(&endpoint, options, fresh, events).await {
                    Err(HandshakeError::Unauthorized) => Err(unauthorized(&endpoint)),
                    Err(HandshakeError::Other(e)) => Err(e),
                    Ok(c) => Ok(c),
                }
            }
            Err(HandshakeError::Other(e)) => Err(e),
            Ok(c) => Ok(c),
        }
    }

    async fn connect_once(
        endpoint: &Endpoint,
        options: &ConnectOptions,
        credentials: Option<Credentials>,
        events: mpsc::UnboundedSender<ConnEvent>,
    ) -> std::result::Result<Connection, HandshakeError> {
        let uri = match endpoint {
            Endpoint::Unix(_) => "ws://localhost/".to_string(),
            Endpoint::Tcp(addr) => {
                let port = addr.rsplit_once(':').map(|(_, p)| p).unwrap_or("1912");
                format!("ws://localhost:{port}/")
            }
        };
        let mut request = uri
            .into_client_request()
            .map_err(|e| HandshakeError::Other(BackendError::Protocol(e.to_string())))?;
        let headers = request.headers_mut();
        let mut put = |name: &'static str, value: &str| {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.insert(name, v);
            }
        };
        put("sec-websocket-protocol", "api.iterm2.com");
        put("origin", "ws://localhost/");
        put(
            "x-iterm2-library-version",
            &format!("rust {}", env!("CARGO_PKG_VERSION")),
        );
        put("x-iterm2-disable-auth-ui", "true");
        put("x-iterm2-advisory-name", &options.app_name);
        if let Some(c) = &credentials {
            if let Some(cookie) = &c.cookie {
                put("x-iterm2-cookie", cookie);
            }
            if let Some(key) = &c.key {
                put("x-iterm2-key", key);
            }
        }
        let config = WebSocketConfig::default()
            .max_message_size(None)
            .max_frame_size(None);
        let io_err = |e: std::io::Error| {
            HandshakeError::Other(BackendError::Disconnected {
                backend: "iterm2",
                reason: format!("cannot reach iTerm2 at {endpoint}: {e}"),
            })
        };
        match endpoint {
            Endpoint::Unix(path) => {
                let stream = tokio::net::UnixStream::connect(path)
                    .await
                    .map_err(io_err)?;
                Self::handshake(request, stream, config, endpoint, events).await
            }
            Endpoint::Tcp(addr) => {
                let stream = tokio::net::TcpStream::connect(addr.as_str())
                    .await
                    .map_err(io_err)?;
                Self::handshake(request, stream, config, endpoint, events).await
            }
        }
    }

    async fn handshake<S>(
        request: tokio_tungstenite::tungstenite::handshake::client::Request,
        stream: S,
        config: WebSocketConfig,
        endpoint: &Endpoint,
        events: mpsc::UnboundedSender<ConnEvent>,
    ) -> std::result::Result<Connection, HandshakeError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        use tokio_tungstenite::tungstenite::Error as WsError;
        let (ws, response) = match tokio_tungstenite::client_async_with_config(
            request,
            stream,
            Some(config),
        )
        .await
        {
            Ok(ok) => ok,
            Err(WsError::Http(response)) if response.status().as_u16() == 401 => {
                return Err(HandshakeError::Unauthorized)
            }
            Err(WsError::Http(response)) => {
                let status = response.status();
                let hint = if status.as_u16() == 406 {
                    ": this client is too old for this iTerm2"
                } else {
                    ""
                };
                return Err(HandshakeError::Other(BackendError::Protocol(format!(
                    "iTerm2 at {endpoint} refused the connection with HTTP {status}{hint}"
                ))));
            }
            Err(e) => {
                return Err(HandshakeError::Other(BackendError::Disconnected {
                    backend: "iterm2",
                    reason: format!("WebSocket handshake with {endpoint} failed: {e}"),
                }))
            }
        };
        let version = response
            .headers()
            .get("x-iterm2-protocol-version")
            .and_then(|v| v.to_str().ok())
            .map(parse_version)
            .unwrap_or((0, 0));
        Ok(Self::start(ws, version, endpoint.clone(), events))
    }

    fn start<S>(
        ws: tokio_tungstenite::WebSocketStream<S>,
        version: (u32, u32),
        endpoint: Endpoint,
        events: mpsc::UnboundedSender<ConnEvent>,
    ) -> Connection
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (mut sink, mut stream) = ws.split();
        let (out, mut out_rx) = mpsc::unbounded_channel::<Message>();
        let pending: Pending = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));
        tokio::spawn(async move {
            while let Some(message) = out_rx.recv().await {
                if sink.send(message).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let reader_pending = pending.clone();
        let reader_closed = closed.clone();
        let barriers = events.clone();
        tokio::spawn(async move {
            let reason = loop {
                let frame = match stream.next().await {
                    None => break "iTerm2 closed the connection".to_string(),
                    Some(Err(e)) => break format!("connection to iTerm2 failed: {e}"),
                    Some(Ok(frame)) => frame,
                };
                let data = match frame {
                    Message::Binary(data) => data,
                    Message::Close(_) => break "iTerm2 closed the connection".to_string(),
                    // iTerm2 only sends binary frames; anything else is ignored.
                    _ => continue,
                };
                let message = match ServerOriginatedMessage::decode(data.as_ref()) {
                    Ok(m) => m,
                    Err(e) => {
                        tracing::warn!(target: "cohort::iterm2", error = %e, "undecodable message from iTerm2 ignored");
                        continue;
                    }
                };
                route(message, &reader_pending, &events);
            };
            reader_closed.store(true, Ordering::SeqCst);
            for (_, tx) in lock(&reader_pending).drain() {
                let _ = tx.send(Err(BackendError::Disconnected {
                    backend: "iterm2",
                    reason: format!(
                        "{reason}, before the reply arrived; the next call connects again"
                    ),
                }));
            }
            let _ = events.send(ConnEvent::Closed(reason));
        });
        Connection {
            out,
            pending,
            next_id: AtomicI64::new(1),
            closed,
            version,
            endpoint,
            events: barriers,
        }
    }

    /// Puts a barrier with `token` behind every notification received so far: the
    /// reader hands notifications over before it answers the request that follows
    /// them, so after a round trip the barrier comes after whatever iTerm2 sent before
    /// that answer. `false` when nothing reads the notifications any more.
    pub fn barrier(&self, token: u64, session: &str) -> bool {
        self.events
            .send(ConnEvent::Barrier {
                token,
                session: session.to_string(),
            })
            .is_ok()
    }

    /// The protocol version the server announced (`(0, 0)` when it sent none).
    pub fn protocol_version(&self) -> (u32, u32) {
        self.version
    }

    /// Whether the server announced at least `major.minor`.
    pub fn at_least(&self, major: u32, minor: u32) -> bool {
        self.version >= (major, minor)
    }

    /// Where this connection goes.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst) || self.out.is_closed()
    }

    /// Sends a request now; the reply is awaited separately, so several can be in
    /// flight at once.
    pub fn send(&self, request: client_originated_message::Submessage) -> Result<PendingReply> {
        if self.is_closed() {
            return Err(BackendError::Disconnected {
                backend: "iterm2",
                reason: "the connection is closed".into(),
            });
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let message = ClientOriginatedMessage {
            id: Some(id),
            submessage: Some(request),
        };
        if self
            .out
            .send(Message::Binary(message.encode_to_vec().into()))
            .is_err()
        {
            lock(&self.pending).remove(&id);
            return Err(BackendError::Disconnected {
                backend: "iterm2",
                reason: "the connection is closed".into(),
            });
        }
        Ok(PendingReply {
            id,
            rx,
            pending: self.pending.clone(),
        })
    }

    /// Sends a request and waits for its reply.
    pub async fn call(
        &self,
        request: client_originated_message::Submessage,
    ) -> Result<server_originated_message::Submessage> {
        self.send(request)?.wait().await
    }

    /// Closes the connection.
    pub fn close(&self) {
        let _ = self.out.send(Message::Close(None));
    }
}

/// Routes one server message: notifications by their case, replies by id.
fn route(
    message: ServerOriginatedMessage,
    pending: &Pending,
    events: &mpsc::UnboundedSender<ConnEvent>,
) {
    use server_originated_message::Submessage;
    if let Some(Submessage::Notification(notification)) = message.submessage {
        let _ = events.send(ConnEvent::Notification(Box::new(notification)));
        return;
    }
    let Some(id) = message.id else {
        tracing::debug!(target: "cohort::iterm2", "message without id or notification ignored");
        return;
    };
    let Some(tx) = lock(pending).remove(&id) else {
        tracing::debug!(target: "cohort::iterm2", id, "reply to an unknown request ignored");
        return;
    };
    let result = match message.submessage {
        Some(Submessage::Error(text)) => Err(BackendError::Protocol(format!(
            "iTerm2 answered with an error: {text}"
        ))),
        None => Err(BackendError::Protocol(
            "iTerm2 sent an empty reply (the request was not valid for that session)".into(),
        )),
        Some(other) => Ok(other),
    };
    let _ = tx.send(result);
}

enum HandshakeError {
    Unauthorized,
    Other(BackendError),
}

fn unauthorized(endpoint: &Endpoint) -> BackendError {
    BackendError::Disconnected {
        backend: "iterm2",
        reason: format!(
            "iTerm2 at {endpoint} refused the cookie (HTTP 401): enable the Python API in \
             iTerm2 › Settings › General › Magic, and allow cohort when asked, or set \
             ITERM2_COOKIE"
        ),
    }
}

/// Parses `"1.17"` into `(1, 17)`.
pub fn parse_version(text: &str) -> (u32, u32) {
    let mut parts = text.trim().split('.');
    let major = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl crate::link::Closable for Connection {
    fn is_closed(&self) -> bool {
        Connection::is_closed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("1.17"), (1, 17));
        assert_eq!(parse_version("0.69"), (0, 69));
        assert_eq!(parse_version("junk"), (0, 0));
        assert!((1, 17) >= (1, 1));
    }

    #[test]
    fn applescript_answers_split() {
        let c = parse_cookie_and_key("0123abcd 1D7B-UUID\n").unwrap();
        assert_eq!(c.cookie.as_deref(), Some("0123abcd"));
        assert_eq!(c.key.as_deref(), Some("1D7B-UUID"));
        assert!(parse_cookie_and_key("  ").is_none());
    }
}
