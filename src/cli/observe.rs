//! `cohort dashboard` and `cohort record`: watching sessions from outside MCP.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use crate::{config::Config, engine::Engine};
use cohort_terminal::record::{RecordOptions, DEFAULT_RECORDING_CAP};

/// `cohort dashboard` arguments.
#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// Address to listen on; loopback unless a token is given.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8791")]
    pub listen: SocketAddr,
    /// Token required on every request (required off loopback); open the page once
    /// with ?token=TOKEN and the browser keeps it.
    #[arg(
        long,
        env = "COHORT_HTTP_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// A browser origin allowed to call besides the page itself (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Let the page type into sessions (it is read-only without).
    #[arg(long)]
    pub allow_input: bool,
}

/// Serves the dashboard until Ctrl-C.
pub async fn dashboard(config: &Config, args: DashboardArgs) -> Result<(), String> {
    let options = crate::dashboard::DashboardOptions {
        token: args.token,
        allowed_origins: args.allow_origin,
        loopback: args.listen.ip().is_loopback(),
        input: args.allow_input,
    };
    crate::dashboard::serve(config, args.listen, options)
        .await
        .map_err(|e| e.to_string())
}

/// `cohort record` arguments.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Session name, persistent id, agent name or pane id.
    pub name: String,
    /// The asciicast file to write (default: under the state directory).
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Mark each command the shell starts, with the text typed (players show the
    /// marks as chapters).
    #[arg(long)]
    pub input: bool,
    /// Stop when the file reaches this size.
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_RECORDING_CAP >> 20)]
    pub max_mb: u64,
}

/// Records until the session ends or Ctrl-C; prints the file's path.
pub async fn record(config: &Config, args: RecordArgs) -> Result<(), String> {
    let engine = Engine::start(config).await.map_err(|e| e.to_string())?;
    let pane = engine
        .terminal
        .resolve(&args.name)
        .await
        .map_err(|e| e.to_string())?;
    let options = RecordOptions {
        path: args.out,
        input_marks: args.input,
        max_bytes: args.max_mb.saturating_mul(1 << 20),
    };
    let started = engine
        .terminal
        .record(&pane.id, options)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!(
        "cohort: recording {} to {} (Ctrl-C to stop)",
        started.session,
        started.path.display()
    );
    let info = tokio::select! {
        ended = engine.terminal.recording_ended(&pane.id) => ended,
        _ = tokio::signal::ctrl_c() => engine.terminal.stop_recording(&pane.id).await.map_err(|e| e.to_string())?,
    };
    let info = info.unwrap_or(started);
    println!("{}", info.path.display());
    eprintln!(
        "cohort: recorded {} bytes ({}); play it with: asciinema play {}",
        info.bytes,
        info.ended.as_deref().unwrap_or("stopped"),
        info.path.display()
    );
    Ok(())
}
