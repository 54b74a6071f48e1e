//! `cohort serve`: MCP over streamable HTTP with the dashboard beside it, and the
//! gRPC API, on one engine, until interrupted. HTTP is served unless only `--grpc`
//! is given.

use std::net::SocketAddr;

use clap::Args;

use crate::{
    config::Config,
    connections::{Connections, CONNECTIONS_MAX},
    engine::slot::EngineSlot,
    mcp::{HttpOptions, Toolset},
};

/// Where HTTP listens when `--http` is not given.
const DEFAULT_HTTP: &str = "127.0.0.1:8790";

/// `cohort serve` arguments.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve MCP over HTTP here (path /mcp; the dashboard at /dashboard/); loopback
    /// unless a token is given (default 127.0.0.1:8790).
    #[arg(long, value_name = "ADDR:PORT")]
    pub http: Option<SocketAddr>,
    /// Serve the gRPC API here (proto/cohort.proto); loopback unless a token is given.
    /// Alone it serves gRPC only; with --http, both on one engine.
    #[arg(long, value_name = "ADDR:PORT")]
    pub grpc: Option<SocketAddr>,
    /// Bearer token required on every request, HTTP and gRPC (required off loopback).
    #[arg(
        long,
        env = "COHORT_HTTP_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// A browser origin allowed to call (e.g. https://app.example.com; repeatable).
    /// Requests from other web pages are refused; loopback pages are allowed.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Let the dashboard's page type into sessions (it is read-only without).
    #[arg(long)]
    pub dashboard_input: bool,
    /// MCP sessions alive at once over HTTP; past it, the least recently used is
    /// closed (its client gets a 404 saying to initialize again).
    #[arg(long, value_name = "N", default_value_t = crate::mcp::SESSIONS_MAX)]
    pub max_sessions: usize,
    /// Toolsets to offer: core, layout, team, workers, orchestration
    /// (comma-separated), or all. The default, core, is what a single agent needs, in
    /// a short tool list.
    #[arg(
        long,
        env = "COHORT_TOOLSETS",
        default_value = "core",
        value_name = "LIST"
    )]
    pub toolsets: String,
    /// Serve this registered agent (HTTP and gRPC): only what its role allows, and
    /// every name it acts as bound to it.
    #[arg(long, value_name = "NAME", conflicts_with = "role")]
    pub agent: Option<String>,
    /// Serve HTTP and gRPC with this role: readonly, monitor, tester, builder, devops,
    /// orchestrator, or a custom one.
    #[arg(long, value_name = "ROLE")]
    pub role: Option<String>,
    /// Custom roles (TOML), loaded into the registry.
    #[arg(long, value_name = "FILE")]
    pub roles: Option<std::path::PathBuf>,
    /// Close a connection after this many seconds without a byte either way (event
    /// streams and long calls send keep-alives, so they stay).
    #[arg(long, value_name = "SECONDS", default_value_t = crate::connections::IDLE.as_secs())]
    pub idle_timeout: u64,
}

/// Serves what the arguments ask for until Ctrl-C.
pub async fn run(config: &Config, args: ServeArgs) -> Result<(), String> {
    let toolsets = Toolset::parse_list(&args.toolsets)?;
    let token = args.token.filter(|t| !t.is_empty());
    let http = match (args.http, args.grpc) {
        (Some(addr), _) => Some(addr),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_HTTP.parse().map_err(|e| format!("{e}"))?),
    };
    // Refused before anything starts listening.
    for addr in http.iter().chain(args.grpc.iter()) {
        crate::guard::require_token(*addr, token.as_deref())?;
    }
    let role = super::server_role(
        config,
        args.agent.as_deref(),
        args.role.as_deref(),
        args.roles.as_deref(),
    )?;
    if let Some(role) = &role {
        // The page types through the send path; a role that may not type would have
        // a back door there.
        let types = role.allows("send", cohort_orchestration::roles::Permission::Type);
        if args.dashboard_input && !types {
            return Err(format!(
                "--dashboard-input lets the page type, which the role {:?} does not allow: \
                 leave it out, or serve with a role that may type",
                role.name
            ));
        }
    }
    let restriction = crate::restriction::Restriction::new(role.clone(), args.agent.clone());
    let idle = std::time::Duration::from_secs(args.idle_timeout.max(1));
    let engine = EngineSlot::starting(config.clone());
    let ct = tokio_util::sync::CancellationToken::new();
    let stop = ct.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    let http = async {
        let Some(addr) = http else {
            return Ok(());
        };
        let options = HttpOptions {
            token: token.clone(),
            allowed_origins: args.allow_origin,
            dashboard_input: args.dashboard_input,
            max_sessions: args.max_sessions,
            role,
            agent: args.agent,
        };
        let app = crate::mcp::http_app(engine.clone(), &toolsets, addr, options, ct.child_token())
            .map_err(|e| e.to_string())?;
        let listener = bind(addr).await?;
        let at = listener.local_addr().map_err(|e| e.to_string())?;
        eprintln!("cohort: serving MCP at http://{at}/mcp");
        eprintln!("cohort: dashboard at http://{at}/dashboard/");
        let stop = ct.clone();
        let listener = Connections::new(listener, CONNECTIONS_MAX, idle);
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
            .map_err(|e| format!("serving HTTP: {e}"))
    };
    let grpc = async {
        let Some(addr) = args.grpc else {
            return Ok(());
        };
        let listener = bind(addr).await?;
        let at = listener.local_addr().map_err(|e| e.to_string())?;
        eprintln!("cohort: serving gRPC (proto/cohort.proto) at {at}");
        let stop = ct.clone();
        let listener = Connections::new(listener, CONNECTIONS_MAX, idle);
        crate::grpc::serve(
            engine.clone(),
            listener,
            token.clone(),
            restriction.clone(),
            async move { stop.cancelled().await },
        )
        .await
    };
    // One failing ends both: a half-started server is not what was asked for.
    tokio::try_join!(http, grpc).map(|_| ())
}

/// Binds `addr`, saying what went wrong in words.
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))
}
