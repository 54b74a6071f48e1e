//! `cohort serve`: MCP over streamable HTTP, with the dashboard beside it, on one
//! engine, until interrupted.

use std::net::SocketAddr;

use clap::Args;

use crate::config::Config;
use crate::mcp::{EngineSlot, HttpOptions, Toolset};

/// Where HTTP listens when `--http` is not given.
const DEFAULT_HTTP: &str = "127.0.0.1:8790";

/// `cohort serve` arguments.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve MCP over HTTP here (path /mcp; the dashboard at /dashboard/); loopback
    /// unless a token is given (default 127.0.0.1:8790).
    #[arg(long, value_name = "ADDR:PORT")]
    pub http: Option<SocketAddr>,
    /// Bearer token required on every request (required off loopback).
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
    /// Toolsets to offer: core, layout, team, workers (comma-separated), or all. The
    /// default, core, is what a single agent needs, in a short tool list.
    #[arg(
        long,
        env = "COHORT_TOOLSETS",
        default_value = "core",
        value_name = "LIST"
    )]
    pub toolsets: String,
}

/// Serves what the arguments ask for until Ctrl-C.
pub async fn run(config: &Config, args: ServeArgs) -> Result<(), String> {
    let toolsets = Toolset::parse_list(&args.toolsets)?;
    let addr = match args.http {
        Some(addr) => addr,
        None => DEFAULT_HTTP.parse().map_err(|e| format!("{e}"))?,
    };
    let token = args.token.filter(|t| !t.is_empty());
    let engine = EngineSlot::starting(config.clone());
    let ct = tokio_util::sync::CancellationToken::new();
    let options = HttpOptions {
        token,
        allowed_origins: args.allow_origin,
        dashboard_input: args.dashboard_input,
    };
    let app = crate::mcp::http_app(engine, &toolsets, addr, options, ct.child_token())
        .map_err(|e| e.to_string())?;
    let listener = bind(addr).await?;
    let at = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!("cohort: serving MCP at http://{at}/mcp");
    eprintln!("cohort: dashboard at http://{at}/dashboard/");
    let stop = ct.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { ct.cancelled().await })
        .await
        .map_err(|e| format!("serving HTTP: {e}"))
}

/// Binds `addr`, saying what went wrong in words.
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))
}
