//! The WebSocket upgrade request checked as iTerm2 checks it (`iTermHTTPConnection`,
//! `iTermWebSocketConnection`, `iTermAPIServer`), in its order: request line and
//! path, whole-value `upgrade` / `connection` / `sec-websocket-protocol`, origin and
//! host, WebSocket version, the cookie (taken before the library version is looked
//! at), `x-iterm2-library-version`, the peer's uid, and authorisation.

use tokio_tungstenite::tungstenite::handshake::server::Request;
use tokio_tungstenite::tungstenite::http::StatusCode;

use crate::{Auth, State};

/// The handshake checks iTerm2 makes, in its order; `Err` is the HTTP rejection.
pub(crate) fn check(
    state: &State,
    request: &Request,
    peer_ok: bool,
) -> Result<(), (StatusCode, &'static str)> {
    let bad = Err((StatusCode::BAD_REQUEST, "Bad Request"));
    if request.method() != "GET" || request.uri().path() != "/" || request.uri().query().is_some() {
        return bad;
    }
    let headers = request.headers();
    if headers.len() > 99 || headers.contains_key("content-length") {
        return bad;
    }
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let whole = |name: &str, want: &str| match get(name) {
        // A missing header slips through, as in iTerm2.
        None => true,
        Some(v) => v.trim().eq_ignore_ascii_case(want),
    };
    if !whole("upgrade", "websocket")
        || !whole("connection", "upgrade")
        || !whole("sec-websocket-protocol", "api.iterm2.com")
    {
        return bad;
    }
    for name in [
        "sec-websocket-key",
        "sec-websocket-version",
        "host",
        "origin",
    ] {
        if get(name).is_none_or(|v| v.trim().is_empty()) {
            return bad;
        }
    }
    let origin = get("origin").unwrap_or_default();
    let origin_host = origin
        .split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or("")
        .split(['/', '?'])
        .next()
        .unwrap_or("");
    let origin_host = strip_port(origin_host);
    if origin_host != "localhost" {
        return bad;
    }
    let host = strip_port(get("host").unwrap_or_default());
    if !matches!(host, "localhost" | "127.0.0.1" | "[::1]") {
        return bad;
    }
    if get("sec-websocket-version")
        .and_then(|v| v.trim().parse::<u32>().ok())
        .is_none_or(|v| v < 13)
    {
        return bad;
    }
    // iTerm2 takes the cookie before it looks at the library version, so a
    // request refused for its version has used up its cookie all the same. The
    // key is no credential: it only names the connection in the script console.
    let cookie_ok = peer_ok && get("x-iterm2-cookie").is_some_and(|c| state.consume_cookie(c));
    let Some(library) = get("x-iterm2-library-version") else {
        return bad;
    };
    let parts: Vec<&str> = library.split(' ').collect();
    if parts.len() != 2 {
        return bad;
    }
    if parts[0] == "python" {
        let mut v = parts[1].split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let version = (v.next().unwrap_or(0), v.next().unwrap_or(0));
        if version < (0, 24) {
            return Err((
                StatusCode::NOT_ACCEPTABLE,
                "Unacceptable (upgrade Python library)",
            ));
        }
    }
    if !peer_ok {
        return Err((StatusCode::UNAUTHORIZED, "Unauthorized"));
    }
    if cookie_ok || state.options.auth == Auth::AllowAll {
        return Ok(());
    }
    // No approval dialog in a fake: with or without x-iterm2-disable-auth-ui, 401.
    Err((StatusCode::UNAUTHORIZED, "Unauthorized"))
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.split(':').next().unwrap_or(host)
}
