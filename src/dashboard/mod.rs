//! The live dashboard: one web page showing every session and agent grouped by
//! team, a live preview of each pane's screen with its colours, each agent's state
//! and why, the last command and its verdict, locks and unread notifications.
//! Clicking a pane opens it large with the `cohort attach` line to copy.
//!
//! Served by `cohort dashboard` and at `/dashboard/` of `cohort serve --http`, behind
//! the same guards as HTTP MCP ([`crate::guard`]): loopback by default, a token off
//! loopback, browser origins checked. Updates are pushed to the page as server-sent
//! events driven by the engine's event stream ([`hub`]); the page never polls. It is
//! read-only unless started with the flag that lets it type (`--allow-input`), and
//! then it types through the engine's send path, so locks and the tripwire hold,
//! and answers workers' permission requests as `approve_workers` does (the keys
//! of the worker's own dialog, checked on its screen, noted as the dashboard's).
//! The page and its script are part of the binary; nothing is fetched from elsewhere.
//!
//! Input is taken only from the dashboard's own page: the request's `Origin` must be
//! exactly the dashboard's (scheme, host and port: another page on loopback is another
//! origin) or one the operator allowed, and it must carry the page key that only the
//! page's own HTML holds (a page elsewhere cannot read it). The pages may not be
//! framed (`frame-ancestors 'none'`), send no referrer, and a token given in the
//! address is moved into a cookie and out of the address at once.

pub mod ansi;
pub mod hub;
pub mod view;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream::Stream;
use serde::Deserialize;

use self::hub::{Hub, Message};
use crate::{
    engine::slot::EngineSlot,
    guard::{Guard, Pass, TOKEN_COOKIE},
};
use cohort_terminal::{Caller, SendOptions};

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");
const ICON: &str = include_str!("assets/favicon.svg");

/// How the dashboard is served.
#[derive(Clone, Debug, Default)]
pub struct DashboardOptions {
    /// Token required on every request (required off loopback).
    pub token: Option<String>,
    /// Browser origins allowed besides loopback pages and the dashboard's own.
    pub allowed_origins: Vec<String>,
    /// Whether it listens on loopback.
    pub loopback: bool,
    /// Whether the page may type into sessions.
    pub input: bool,
}

struct Dashboard {
    engine: EngineSlot,
    hub: tokio::sync::OnceCell<Arc<Hub>>,
    input: bool,
    /// The key the page's HTML carries and its input requests send back.
    page_key: String,
    /// Origins besides the dashboard's own that may type.
    allowed_origins: Vec<String>,
}

/// The header the page's input requests carry its page key in.
const PAGE_KEY_HEADER: &str = "x-cohort-page";

impl Dashboard {
    async fn hub(&self) -> Result<&Arc<Hub>, Response> {
        let engine = self
            .engine
            .get()
            .await
            .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e).into_response())?;
        Ok(self
            .hub
            .get_or_init(|| async { Hub::start(engine.clone(), self.input) })
            .await)
    }
}

/// The dashboard's routes, under `/dashboard/`, behind their guard.
pub fn router(engine: EngineSlot, options: DashboardOptions) -> axum::Router {
    let state = Arc::new(Dashboard {
        engine,
        hub: tokio::sync::OnceCell::new(),
        input: options.input,
        page_key: uuid::Uuid::new_v4().simple().to_string(),
        allowed_origins: options.allowed_origins.clone(),
    });
    let guard = Guard {
        token: options.token.filter(|t| !t.is_empty()),
        allowed_origins: options.allowed_origins,
        browser: true,
        loopback: options.loopback,
    };
    axum::Router::new()
        .route(
            "/dashboard",
            get(|| async { axum::response::Redirect::permanent("/dashboard/") }),
        )
        .route(
            "/dashboard/",
            get(|State(dash): State<Arc<Dashboard>>| async move { index(&dash) }),
        )
        .route(
            "/dashboard/app.js",
            get(|| asset("text/javascript; charset=utf-8", SCRIPT)),
        )
        .route(
            "/dashboard/app.css",
            get(|| asset("text/css; charset=utf-8", STYLE)),
        )
        .route(
            "/dashboard/favicon.svg",
            get(|| asset("image/svg+xml", ICON)),
        )
        // Browsers ask the root for an icon whatever the page names.
        .route("/favicon.ico", get(|| asset("image/svg+xml", ICON)))
        .route("/dashboard/api/view", get(view_now))
        .route("/dashboard/events", get(events))
        .route("/dashboard/api/send", post(send))
        .route("/dashboard/api/keys", post(keys))
        .route("/dashboard/api/approve", post(approve))
        .with_state(state)
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let checked = guard.check(req.headers(), req.uri().query());
                async move {
                    let mut response = match checked {
                        Ok(Pass::Query) => {
                            // Keep the token for the page's own requests (the event
                            // stream cannot send a header), and take it out of the
                            // address: a page load goes to the same page without it.
                            let token = token_in(req.uri().query());
                            let mut response = if req.method() == axum::http::Method::GET {
                                axum::response::Redirect::to(req.uri().path()).into_response()
                            } else {
                                next.run(req).await
                            };
                            if let Ok(cookie) =
                                format!("{TOKEN_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict")
                                    .parse()
                            {
                                response.headers_mut().insert(header::SET_COOKIE, cookie);
                            }
                            response
                        }
                        Ok(_) => next.run(req).await,
                        Err(refusal) => *refusal,
                    };
                    let headers = response.headers_mut();
                    headers.insert(
                        header::X_FRAME_OPTIONS,
                        header::HeaderValue::from_static("DENY"),
                    );
                    headers.insert(
                        header::REFERRER_POLICY,
                        header::HeaderValue::from_static("no-referrer"),
                    );
                    response
                }
            },
        ))
}

/// The token as given in the query (already checked), for the cookie.
fn token_in(query: Option<&str>) -> String {
    query
        .unwrap_or_default()
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == "token")
        .map(|(_, v)| v.chars().filter(|c| !c.is_control() && *c != ';').collect())
        .unwrap_or_default()
}

/// The page, carrying its page key.
fn index(dash: &Dashboard) -> Response {
    let page = INDEX.replacen(
        "<meta charset=\"utf-8\">",
        &format!(
            "<meta charset=\"utf-8\">\n<meta name=\"cohort-page\" content=\"{}\">",
            dash.page_key
        ),
        1,
    );
    page_response("text/html; charset=utf-8", page)
}

async fn asset(kind: &'static str, body: &'static str) -> Response {
    page_response(kind, body)
}

/// A page or asset, with the policies that keep it from being framed or loading
/// anything from elsewhere.
fn page_response(kind: &'static str, body: impl IntoResponse) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
            ),
        ],
        body,
    )
        .into_response()
}

/// Why a request to type is not from the dashboard's own page, if it is not.
fn not_from_the_page(dash: &Dashboard, headers: &axum::http::HeaderMap) -> Option<String> {
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let (origin, host) = (text(header::ORIGIN), text(header::HOST));
    let own = format!("http://{host}");
    let origin_ok = !origin.is_empty()
        && !host.is_empty()
        && (origin.eq_ignore_ascii_case(&own)
            || dash
                .allowed_origins
                .iter()
                .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(&origin)));
    if !origin_ok {
        let shown: String = origin.chars().take(100).collect();
        let from = if shown.is_empty() {
            "a request without an Origin".to_string()
        } else {
            format!("a request from {shown}")
        };
        return Some(format!(
            "{from} may not type: input is taken only from the dashboard's own page ({own})"
        ));
    }
    let key = headers
        .get(PAGE_KEY_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !crate::guard::constant_time_eq(key.as_bytes(), dash.page_key.as_bytes()) {
        return Some(
            "input needs the page key of the dashboard's page: reload the page and type again"
                .to_string(),
        );
    }
    None
}

async fn view_now(State(dash): State<Arc<Dashboard>>) -> Response {
    let hub = match dash.hub().await {
        Ok(hub) => hub,
        Err(refusal) => return refusal,
    };
    match hub.view().await {
        Some(view) => json(StatusCode::OK, view.data.to_string()),
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the view could not be built",
        )
            .into_response(),
    }
}

fn json(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The page's feed: everything now, then what changes (see [`hub`]).
async fn events(State(dash): State<Arc<Dashboard>>) -> Response {
    let hub = match dash.hub().await {
        Ok(hub) => hub.clone(),
        Err(refusal) => return refusal,
    };
    // Follow first, then look: nothing that happens in between is missed.
    let receiver = hub.subscribe();
    let queue: VecDeque<Message> = hub.snapshot().await.into();
    Sse::new(feed(hub, receiver, queue))
        .keep_alive(KeepAlive::default())
        .into_response()
}

fn feed(
    hub: Arc<Hub>,
    receiver: tokio::sync::broadcast::Receiver<Message>,
    queue: VecDeque<Message>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(
        (hub, receiver, queue),
        |(hub, mut receiver, mut queue)| async move {
            loop {
                if let Some(message) = queue.pop_front() {
                    let event = Event::default().event(message.event).data(&*message.data);
                    return Some((Ok(event), (hub, receiver, queue)));
                }
                match receiver.recv().await {
                    Ok(message) => queue.push_back(message),
                    // The page fell behind: send it everything again.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        queue = hub.snapshot().await.into();
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                }
            }
        },
    )
}

/// What the page types.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SendBody {
    pane: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    enter: bool,
    #[serde(default)]
    keys: Vec<String>,
}

async fn send(
    State(dash): State<Arc<Dashboard>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    typed(dash, &headers, body, false).await
}

async fn keys(
    State(dash): State<Arc<Dashboard>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    typed(dash, &headers, body, true).await
}

/// Text or keys from the page, through the engine's send path (locks and the
/// tripwire apply); refused unless the dashboard was started to allow it and the
/// request comes from its own page.
async fn typed(
    dash: Arc<Dashboard>,
    headers: &axum::http::HeaderMap,
    body: Bytes,
    keys: bool,
) -> Response {
    if let Some(refusal) = refuse_input(&dash, headers) {
        return refusal;
    }
    let body: SendBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!(
                    "expected {{\"pane\": \"%1\", \"text\": \"…\", \"enter\": true}} or keys: {e}"
                ),
            )
                .into_response()
        }
    };
    let hub = match dash.hub().await {
        Ok(hub) => hub,
        Err(refusal) => return refusal,
    };
    let engine = hub.engine();
    let pane = match engine.terminal.resolve(&body.pane).await {
        Ok(pane) => pane,
        Err(e) => return (StatusCode::NOT_FOUND, e.to_string()).into_response(),
    };
    // Keys typed at the dashboard come from the human watching it.
    let caller = Caller::new("dashboard");
    let done = if keys {
        let parsed: Result<Vec<cohort_backends::Key>, _> =
            body.keys.iter().map(|k| k.parse()).collect();
        match parsed {
            Ok(parsed) if !parsed.is_empty() => {
                engine
                    .terminal
                    .keys(&pane.id, &parsed, &caller, false)
                    .await
            }
            Ok(_) => return (StatusCode::BAD_REQUEST, "no keys given").into_response(),
            Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
        }
    } else {
        let options = SendOptions {
            enter: body.enter,
            ..SendOptions::default()
        };
        engine
            .terminal
            .send(&pane.id, &body.text, &options, &caller)
            .await
            .map(|_| ())
    };
    match done {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => (StatusCode::CONFLICT, e.to_string()).into_response(),
    }
}

/// A decision on a worker's permission request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApproveBody {
    worker: String,
    decision: String,
    /// The request the page showed (since when it waits): no other is answered.
    since_ms: i64,
}

/// Answers a worker's permission request from the page, as `approve_workers`
/// does: by the keys of its CLI's dialog, checked on its screen, and noted on the
/// worker as the dashboard's decision. Refused unless the dashboard was started to
/// allow input and the request comes from its own page.
async fn approve(
    State(dash): State<Arc<Dashboard>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refusal) = refuse_input(&dash, &headers) {
        return refusal;
    }
    let body: ApproveBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("expected {{\"worker\": \"name\", \"decision\": \"allow\", \"since_ms\": 1733400000000}}: {e}"),
            )
                .into_response()
        }
    };
    let decision = match cohort_workers::approve::Decision::parse(&body.decision) {
        Ok(decision) => decision,
        Err(e) => return (StatusCode::BAD_REQUEST, e).into_response(),
    };
    let hub = match dash.hub().await {
        Ok(hub) => hub,
        Err(refusal) => return refusal,
    };
    let engine = hub.engine();
    let row = match engine.workers.worker_row(&body.worker).await {
        Ok(row) => row,
        Err(e) => return (StatusCode::NOT_FOUND, e.to_string()).into_response(),
    };
    match engine
        .workers
        .answer_approval(&row, decision, "the dashboard", Some(body.since_ms))
        .await
    {
        Ok(answered) => json(
            StatusCode::OK,
            serde_json::json!({
                "worker": answered.name,
                "request": answered.request,
                "answered": answered.answered,
                "detail": answered.detail,
            })
            .to_string(),
        ),
        Err(e) => (StatusCode::CONFLICT, e.to_string()).into_response(),
    }
}

/// Why input from this request is refused: a read-only dashboard, or a request
/// that is not from the dashboard's own page.
fn refuse_input(dash: &Dashboard, headers: &axum::http::HeaderMap) -> Option<Response> {
    if !dash.input {
        return Some(
            (
                StatusCode::FORBIDDEN,
                "the dashboard is read-only: start it with --allow-input to type from the page",
            )
                .into_response(),
        );
    }
    not_from_the_page(dash, headers).map(|refusal| (StatusCode::FORBIDDEN, refusal).into_response())
}

/// Serves the dashboard alone (`cohort dashboard`) at `addr` until interrupted.
pub async fn serve(
    config: &crate::Config,
    addr: SocketAddr,
    options: DashboardOptions,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    if !addr.ip().is_loopback() && options.token.as_deref().is_none_or(str::is_empty) {
        return Err(format!(
            "refusing to serve the dashboard on {addr} without a token: pass --token (or COHORT_HTTP_TOKEN), or bind to 127.0.0.1"
        )
        .into());
    }
    let engine = EngineSlot::starting(config.clone());
    let app = axum::Router::new()
        .route(
            "/",
            get(|| async { axum::response::Redirect::temporary("/dashboard/") }),
        )
        .merge(router(engine, options));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!(
        "cohort: dashboard at http://{}/dashboard/",
        listener.local_addr()?
    );
    let listener = crate::connections::Connections::new(
        listener,
        crate::connections::CONNECTIONS_MAX,
        crate::connections::IDLE,
    );
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
