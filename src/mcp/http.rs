//! MCP over streamable HTTP, with the guards a network service needs.
//!
//! - **Bearer token**: required on every request when one is configured, and a token
//!   is required to listen anywhere but loopback.
//! - **Origin**: browsers send an `Origin` header with every cross-site request. A web
//!   page the user happens to visit (or one reached through DNS rebinding) must not
//!   drive the user's terminals, so a request that carries an `Origin` is refused
//!   unless that origin is a loopback page or one the operator allowed
//!   (`--allow-origin`). Clients that are not browsers send no `Origin` and pass.
//! - **Host**: rmcp's own allow-list admits only loopback host names on loopback.

use std::net::SocketAddr;

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;

use super::{CohortServer, EngineSlot, Toolset};
use crate::config::Config;

/// How to serve HTTP.
#[derive(Clone, Debug, Default)]
pub struct HttpOptions {
    /// Bearer token required on every request.
    pub token: Option<String>,
    /// Browser origins allowed besides loopback pages (`https://app.example.com`).
    pub allowed_origins: Vec<String>,
}

/// Serves MCP over streamable HTTP at `addr` (path `/mcp`) until interrupted.
/// Binding anywhere but loopback requires a bearer token, checked on every request.
pub async fn serve_http(
    config: &Config,
    toolsets: &[Toolset],
    addr: SocketAddr,
    options: HttpOptions,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let token = options.token.filter(|t| !t.is_empty());
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(format!(
            "refusing to serve on {addr} without a bearer token: pass --token (or COHORT_HTTP_TOKEN), or bind to 127.0.0.1"
        )
        .into());
    }
    let engine = EngineSlot::starting(config.clone());
    let toolsets = toolsets.to_vec();
    let ct = tokio_util::sync::CancellationToken::new();
    let mut http_config =
        StreamableHttpServerConfig::default().with_cancellation_token(ct.child_token());
    if !addr.ip().is_loopback() {
        // The token is the protection; the default allow-list only admits loopback names.
        http_config = http_config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(CohortServer::with_slot(engine.clone(), &toolsets)),
        LocalSessionManager::default().into(),
        http_config,
    );
    let guard = Guard {
        token,
        allowed_origins: options.allowed_origins,
    };
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let refusal = guard.check(&req);
                async move {
                    match refusal {
                        None => next.run(req).await,
                        Some(refusal) => refusal,
                    }
                }
            },
        ));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!(
        "cohort: serving MCP at http://{}/mcp",
        listener.local_addr()?
    );
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            ct.cancel();
        })
        .await?;
    Ok(())
}

/// The checks every request passes before it reaches MCP.
#[derive(Clone, Debug)]
struct Guard {
    token: Option<String>,
    allowed_origins: Vec<String>,
}

impl Guard {
    /// The response refusing `req`, or `None` when it may go on.
    fn check(&self, req: &axum::extract::Request) -> Option<axum::response::Response> {
        let headers = req.headers();
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("(not text)");
            if !origin_allowed(origin, &self.allowed_origins) {
                return Some(
                    (
                        StatusCode::FORBIDDEN,
                        format!(
                            "cross-origin request refused: a page at {origin} may not drive cohort's terminals; \
                             start cohort with --allow-origin {origin} if you trust it"
                        ),
                    )
                        .into_response(),
                );
            }
        }
        let token = self.token.as_ref()?;
        // The scheme name is case-insensitive (RFC 7235); the token is not.
        let ok = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .is_some_and(|(scheme, given)| {
                scheme.eq_ignore_ascii_case("bearer")
                    && constant_time_eq(given.as_bytes(), token.as_bytes())
            });
        (!ok).then(|| {
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "missing or wrong bearer token",
            )
                .into_response()
        })
    }
}

/// Whether a browser page at `origin` may call: a loopback page (`http://localhost:…`,
/// `http://127.0.0.1:…`, `http://[::1]:…`), or one of `allowed` (compared without
/// regard to case). `null` (a sandboxed or file page) never is.
fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed
        .iter()
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    if !matches!(scheme, "http" | "https") {
        return false;
    }
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        rest.split(':').next().unwrap_or_default()
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
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
}
