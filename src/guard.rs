//! The checks a request passes before it reaches anything served over HTTP (MCP,
//! the dashboard), so every such service guards alike.
//!
//! - **Bearer token**: required on every request when one is configured, and a token
//!   is required to listen anywhere but loopback. Browsers cannot add a header to a
//!   page load or an event stream, so a browser service also takes the token from
//!   the `token` query parameter once and from the cookie it then sets.
//! - **Origin**: browsers send an `Origin` header with cross-site requests. A web page
//!   the user happens to visit must not drive the user's terminals, so a request that
//!   carries an `Origin` is refused unless that origin is a loopback page, one the
//!   operator allowed (`--allow-origin`), or (for a browser service) the service's
//!   own page.
//! - **Host**: on loopback, a browser service admits only loopback host names, so a
//!   page reached through DNS rebinding (another name resolving to 127.0.0.1) is
//!   refused. (rmcp's own allow-list does this for MCP.)

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;

/// The cookie a browser service keeps its token in.
pub const TOKEN_COOKIE: &str = "cohort_token";

/// How a request passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// No token is configured.
    Open,
    /// With the token in a header or the cookie.
    Token,
    /// With the token in the query: a browser service sets the cookie in its answer.
    Query,
}

/// The checks (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Guard {
    /// Bearer token required on every request.
    pub token: Option<String>,
    /// Browser origins allowed besides loopback pages.
    pub allowed_origins: Vec<String>,
    /// A service for browsers: its own pages may call it, the token may come in the
    /// query or the cookie, and on loopback only loopback host names are admitted.
    pub browser: bool,
    /// Whether it listens on loopback.
    pub loopback: bool,
}

impl Guard {
    /// How the request passes, or the response refusing it.
    pub fn check(
        &self,
        headers: &HeaderMap,
        query: Option<&str>,
    ) -> Result<Pass, Box<axum::response::Response>> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        if self.browser && self.loopback && !host.is_empty() && !loopback_host(host) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                format!(
                    "host {host:?} refused: cohort listens on loopback; open it as http://127.0.0.1 or http://localhost"
                ),
            ));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("(not text)");
            let own = self.browser && !host.is_empty() && same_origin(origin, host);
            if !own && !origin_allowed(origin, &self.allowed_origins) {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    format!(
                        "cross-origin request refused: a page at {origin} may not drive cohort's terminals; \
                         start cohort with --allow-origin {origin} if you trust it"
                    ),
                ));
            }
        }
        let Some(token) = self.token.as_deref() else {
            return Ok(Pass::Open);
        };
        let matches = |given: &str| constant_time_eq(given.as_bytes(), token.as_bytes());
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if bearer_matches(authorization, token) {
            return Ok(Pass::Token);
        }
        if self.browser {
            let cookie = headers
                .get_all(header::COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(';'))
                .filter_map(|pair| pair.trim().split_once('='))
                .any(|(name, value)| name == TOKEN_COOKIE && matches(value));
            if cookie {
                return Ok(Pass::Token);
            }
            let queried = query
                .unwrap_or_default()
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .any(|(name, value)| name == "token" && matches(&percent_decode(value)));
            if queried {
                return Ok(Pass::Query);
            }
        }
        Err(Box::new(
            (
                StatusCode::UNAUTHORIZED,
                [
                    (header::WWW_AUTHENTICATE, "Bearer"),
                    (header::CONNECTION, "close"),
                ],
                if self.browser {
                    "missing or wrong token: open the page with ?token=YOUR_TOKEN once"
                } else {
                    "missing or wrong bearer token"
                },
            )
                .into_response(),
        ))
    }
}

/// Refuses to listen on `addr` off loopback without a token: anyone who can reach
/// the port could otherwise drive the user's terminals.
pub fn require_token(addr: std::net::SocketAddr, token: Option<&str>) -> Result<(), String> {
    if addr.ip().is_loopback() || token.is_some_and(|t| !t.is_empty()) {
        return Ok(());
    }
    Err(format!(
        "refusing to serve on {addr} without a bearer token: pass --token (or COHORT_HTTP_TOKEN), or bind to 127.0.0.1"
    ))
}

/// Whether an `Authorization` value is `Bearer TOKEN` with `token`, compared in
/// constant time. The scheme name is case-insensitive (RFC 7235); the token is not.
pub fn bearer_matches(authorization: Option<&str>, token: &str) -> bool {
    authorization
        .and_then(|v| v.split_once(' '))
        .is_some_and(|(scheme, given)| {
            scheme.eq_ignore_ascii_case("bearer")
                && constant_time_eq(given.as_bytes(), token.as_bytes())
        })
}

/// A refusal; the connection is closed after it, so a client without the right to
/// call holds no connection open.
fn refuse(status: StatusCode, message: String) -> Box<axum::response::Response> {
    Box::new((status, [(header::CONNECTION, "close")], message).into_response())
}

/// Whether a browser page at `origin` may call: a loopback page (`http://localhost:…`,
/// `http://127.0.0.1:…`, `http://[::1]:…`), or one of `allowed` (compared without
/// regard to case). `null` (a sandboxed or file page) never is.
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed
        .iter()
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https") && loopback_host(rest)
}

/// Whether `origin` is the page of the service reached as `host`.
fn same_origin(origin: &str, host: &str) -> bool {
    origin.split_once("://").is_some_and(|(scheme, rest)| {
        matches!(scheme, "http" | "https") && rest.eq_ignore_ascii_case(host)
    })
}

/// Whether `host` (`name[:port]`, `[v6][:port]`) names loopback.
fn loopback_host(host: &str) -> bool {
    let name = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        host.split(':').next().unwrap_or_default()
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `%XX` escapes decoded (a token given in a URL).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Compares without stopping at the first difference.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_pages_and_allowed_origins_pass() {
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1:8790",
            "https://[::1]:8443",
            "http://LOCALHOST",
        ] {
            assert!(origin_allowed(ok, &[]), "{ok}");
        }
        for bad in [
            "https://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "null",
            "file://",
            "",
        ] {
            assert!(!origin_allowed(bad, &[]), "{bad}");
        }
        let allowed = vec!["https://app.example.com/".to_string()];
        assert!(origin_allowed("https://app.example.com", &allowed));
        assert!(!origin_allowed("https://app.example.com.evil", &allowed));
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    #[test]
    fn a_browser_service_takes_its_token_from_the_query_or_the_cookie() {
        let guard = Guard {
            token: Some("s e/cret".into()),
            browser: true,
            ..Guard::default()
        };
        let host = [("host", "10.0.0.5:8791")];
        assert!(guard.check(&headers(&host), None).is_err());
        assert_eq!(
            guard
                .check(&headers(&host), Some("x=1&token=s+e%2Fcret"))
                .ok(),
            Some(Pass::Query)
        );
        let cookie = [
            ("host", "10.0.0.5:8791"),
            ("cookie", "a=b; cohort_token=s e/cret"),
        ];
        assert_eq!(guard.check(&headers(&cookie), None).ok(), Some(Pass::Token));
        let bearer = [("authorization", "bearer s e/cret")];
        assert_eq!(guard.check(&headers(&bearer), None).ok(), Some(Pass::Token));
        // Its own page may post to it; another may not.
        let own = [
            ("host", "10.0.0.5:8791"),
            ("origin", "http://10.0.0.5:8791"),
            ("cookie", "cohort_token=s e/cret"),
        ];
        assert!(guard.check(&headers(&own), None).is_ok());
        let other = [
            ("host", "10.0.0.5:8791"),
            ("origin", "http://evil.example"),
            ("cookie", "cohort_token=s e/cret"),
        ];
        assert!(guard.check(&headers(&other), None).is_err());
    }

    #[test]
    fn on_loopback_a_browser_service_refuses_other_host_names() {
        let guard = Guard {
            browser: true,
            loopback: true,
            ..Guard::default()
        };
        assert!(guard
            .check(&headers(&[("host", "127.0.0.1:8791")]), None)
            .is_ok());
        assert!(guard
            .check(&headers(&[("host", "localhost:8791")]), None)
            .is_ok());
        // DNS rebinding: the attacker's name, its own origin.
        let rebound = [
            ("host", "evil.example:8791"),
            ("origin", "http://evil.example:8791"),
        ];
        assert!(guard.check(&headers(&rebound), None).is_err());
        // A service that is not for browsers ignores the query.
        let api = Guard {
            token: Some("t".into()),
            ..Guard::default()
        };
        assert!(api.check(&HeaderMap::new(), Some("token=t")).is_err());
    }
}
