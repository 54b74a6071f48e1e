//! MCP over streamable HTTP, with the guards a network service needs (see
//! [`crate::guard`]): a bearer token (required off loopback), browser origins
//! refused unless allowed, and rmcp's own allow-list of loopback host names on
//! loopback. Clients that are not browsers send no `Origin` and pass. The same
//! server also carries the dashboard at `/dashboard/` (see [`crate::dashboard`]).

use std::net::SocketAddr;

use axum::response::IntoResponse;

use super::sessions::{CappedSessions, SESSIONS_MAX, SESSION_GONE};
use super::{CohortServer, Toolset};
use crate::{engine::slot::EngineSlot, guard::Guard};

/// How to serve HTTP.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Bearer token required on every request.
    pub token: Option<String>,
    /// Browser origins allowed besides loopback pages (`https://app.example.com`).
    pub allowed_origins: Vec<String>,
    /// Whether the dashboard's page may type into sessions.
    pub dashboard_input: bool,
    /// MCP sessions alive at once; past it, the least recently used is closed.
    pub max_sessions: usize,
    /// The role every session is restricted to.
    pub role: Option<cohort_orchestration::roles::Role>,
    /// The agent every session serves (see [`CohortServer::serving_agent`]).
    pub agent: Option<String>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            token: None,
            allowed_origins: Vec::new(),
            dashboard_input: false,
            max_sessions: SESSIONS_MAX,
            role: None,
            agent: None,
        }
    }
}

/// The HTTP application: MCP at `/mcp` behind its guard, the dashboard at
/// `/dashboard/` behind its own. Refused without a token off loopback.
pub fn http_app(
    engine: EngineSlot,
    toolsets: &[Toolset],
    addr: SocketAddr,
    options: HttpOptions,
    ct: tokio_util::sync::CancellationToken,
) -> Result<axum::Router, Box<dyn std::error::Error + Send + Sync>> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let token = options.token.filter(|t| !t.is_empty());
    crate::guard::require_token(addr, token.as_deref())?;
    let toolsets = toolsets.to_vec();
    let mut http_config = StreamableHttpServerConfig::default().with_cancellation_token(ct);
    if !addr.ip().is_loopback() {
        // The token is the protection; the default allow-list only admits loopback names.
        http_config = http_config.disable_allowed_hosts();
    }
    // Tools and schemas are built once; each session gets its own connection.
    let template = CohortServer::with_role(engine.clone(), &toolsets, options.role)
        .serving_agent(options.agent);
    let service = StreamableHttpService::new(
        move || Ok(template.for_new_connection()),
        std::sync::Arc::new(CappedSessions::new(options.max_sessions)),
        http_config,
    );
    let guard = Guard {
        token: token.clone(),
        allowed_origins: options.allowed_origins.clone(),
        browser: false,
        loopback: addr.ip().is_loopback(),
    };
    let mcp = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let checked = guard.check(req.headers(), None);
                let named_a_session = req.headers().contains_key("mcp-session-id");
                async move {
                    match checked {
                        Ok(_) => {
                            let response = next.run(req).await;
                            if named_a_session
                                && response.status() == axum::http::StatusCode::NOT_FOUND
                            {
                                return (axum::http::StatusCode::NOT_FOUND, SESSION_GONE)
                                    .into_response();
                            }
                            response
                        }
                        Err(refusal) => *refusal,
                    }
                }
            },
        ));
    let dashboard = crate::dashboard::router(
        engine,
        crate::dashboard::DashboardOptions {
            token,
            allowed_origins: options.allowed_origins,
            loopback: addr.ip().is_loopback(),
            input: options.dashboard_input,
        },
    );
    Ok(mcp.merge(dashboard))
}
