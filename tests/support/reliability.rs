//! Harness of the reliability suite: `cohort mcp` and `cohort serve --http` as child
//! processes driven through rmcp's clients, every call bounded in time and sorted into
//! what came back (a result, a tool error, a protocol error, nothing, or a dead server),
//! plus the figures the suite prints (resident memory, latency percentiles).
//!
//! Included by path (`#[path = "support/reliability.rs"] mod reliability;`) next to
//! `mod support;`, whose [`TestServer`] gives each test its private tmux socket.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use crate::support::deadline::{Lines, STARTUP};
use crate::support::{bash_path, TestServer};

/// How long any single call may take before the suite calls it a hang. Generous: a
/// hang is a request that is never answered, not a slow one.
pub const CALL_BOUND: Duration = Duration::from_secs(45);

/// A number from the environment (for bigger local runs), or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A client connected to one cohort server (the service keeps it running).
pub type Service = RunningService<RoleClient, ()>;

/// What calls go through: a connected client's handle (cheap to clone).
pub type Client = rmcp::service::Peer<RoleClient>;

/// `cohort mcp` as a child process with its client; the child's stderr goes to a log
/// file in the test's state directory (shown when a check fails).
pub struct McpChild {
    /// The connected client.
    pub client: Service,
    /// The server's process id.
    pub pid: u32,
    /// Where its stderr goes.
    pub log: PathBuf,
}

impl Drop for McpChild {
    fn drop(&mut self) {
        // At once, not from a task on a runtime that is shutting down: a server left
        // running past its test would start a new tmux server on the test's socket.
        // SAFETY: kill(2) on the child this harness started.
        unsafe { libc::kill(self.pid as i32, libc::SIGKILL) };
    }
}

/// Starts `cohort mcp` (every toolset) on `server`'s tmux socket and state directory.
/// `shape` adjusts the command before the socket and state directory are set.
pub async fn mcp_child(
    server: &TestServer,
    label: &str,
    shape: impl FnOnce(&mut tokio::process::Command),
) -> McpChild {
    mcp_child_in(server, server.state_dir(), label, shape).await
}

/// [`mcp_child`] with its own state directory.
pub async fn mcp_child_in(
    server: &TestServer,
    state_dir: &Path,
    label: &str,
    shape: impl FnOnce(&mut tokio::process::Command),
) -> McpChild {
    let log = log_path(server, label);
    let stderr = std::fs::File::create(&log).expect("server log file");
    let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_cohort")).configure(|c| {
        c.env("SHELL", bash_path())
            .env("HOME", server.home())
            .env("COHORT_LOG", "warn");
        shape(c);
        c.args(["mcp", "--toolsets", "all"])
            .env("COHORT_TMUX_SOCKET", &server.socket)
            .env("COHORT_STATE_DIR", state_dir)
            .env_remove("TMUX");
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::from(stderr))
        .spawn()
        .expect("spawn cohort mcp");
    let pid = transport.id().expect("the child's pid");
    let client = ().serve(transport).await.expect("initialize");
    McpChild { client, pid, log }
}

fn log_path(server: &TestServer, label: &str) -> PathBuf {
    // Inside the server's temporary directory, so nothing is left behind (a test that
    // deletes the state directory loses its logs with it).
    let dir = server.state_dir().join("logs");
    std::fs::create_dir_all(&dir).expect("log dir");
    dir.join(format!("{label}.stderr"))
}

/// The last `n` lines a server wrote to stderr.
pub fn log_tail(log: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// `cohort serve --http 127.0.0.1:0` on `server`; killed and reaped on drop.
pub struct HttpServer {
    child: std::process::Child,
    /// The MCP endpoint.
    pub url: String,
    /// The server's process id.
    pub pid: u32,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cohort serve --http` on a free loopback port and waits for its address.
pub fn http_server(server: &TestServer, label: &str) -> HttpServer {
    http_server_with(server, label, &[])
}

/// [`http_server`] with `extra` arguments.
pub fn http_server_with(server: &TestServer, label: &str, extra: &[&str]) -> HttpServer {
    let log = log_path(server, label);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_cohort"))
        .args(["serve", "--http", "127.0.0.1:0", "--toolsets", "all"])
        .args(extra)
        .env("COHORT_TMUX_SOCKET", &server.socket)
        .env("COHORT_STATE_DIR", server.state_dir())
        .env("SHELL", bash_path())
        .env("HOME", server.home())
        .env("COHORT_LOG", "warn")
        .env_remove("COHORT_HTTP_TOKEN")
        .env_remove("TMUX")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cohort serve");
    let pid = child.id();
    let mut served = HttpServer {
        child,
        url: String::new(),
        pid,
    };
    let stderr = served.child.stderr.take().expect("stderr");
    // Every line goes to the log, so the server never blocks on a full pipe.
    let mut lines = Lines::read(stderr, "cohort serve --http", Some(log));
    served.url = lines
        .until(
            "`cohort: serving MCP at URL`",
            Instant::now() + STARTUP,
            |line| {
                line.trim()
                    .strip_prefix("cohort: serving MCP at ")
                    .map(str::to_string)
            },
        )
        .unwrap_or_else(|why| panic!("{why}"));
    served
}

/// A client of an HTTP server.
pub async fn http_client(url: &str) -> Service {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("initialize over HTTP")
}

/// What one call came back with.
#[derive(Debug)]
pub enum Outcome {
    /// A result without isError: its structured content.
    Ok(Value),
    /// A tool result with isError, and its text.
    ToolError(String),
    /// A JSON-RPC error answering the request, and its message.
    RpcError(String),
    /// The connection broke (the server died, or closed the transport).
    Gone(String),
    /// No answer within the bound.
    Hung,
}

impl Outcome {
    /// Whether this is a clear refusal: an error that says something.
    pub fn is_clear_error(&self) -> bool {
        match self {
            Outcome::ToolError(m) | Outcome::RpcError(m) => !m.trim().is_empty(),
            _ => false,
        }
    }

    /// The structured result; panics with the outcome otherwise.
    pub fn ok(self, what: &str) -> Value {
        match self {
            Outcome::Ok(v) => v,
            other => panic!("{what}: expected a result, got {}", other.short()),
        }
    }

    /// The error text; panics with the outcome otherwise.
    pub fn error(self, what: &str) -> String {
        match self {
            Outcome::ToolError(m) | Outcome::RpcError(m) => m,
            other => panic!("{what}: expected an error, got {}", other.short()),
        }
    }

    /// One line describing the outcome, long texts clipped.
    pub fn short(&self) -> String {
        let clip = |s: &str| -> String {
            let s: String = s.chars().take(300).collect();
            s.replace('\n', "\\n")
        };
        match self {
            Outcome::Ok(v) => format!("ok {}", clip(&v.to_string())),
            Outcome::ToolError(m) => format!("tool error {}", clip(m)),
            Outcome::RpcError(m) => format!("JSON-RPC error {}", clip(m)),
            Outcome::Gone(m) => format!("connection gone ({})", clip(m)),
            Outcome::Hung => "no answer".into(),
        }
    }
}

/// Calls `tool` with `args` (any JSON object), bounded by `bound`.
pub async fn call_within(client: &Client, tool: &str, args: Value, bound: Duration) -> Outcome {
    let arguments = match args {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, not {other}"),
    };
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
    match tokio::time::timeout(bound, client.call_tool(params)).await {
        Err(_) => Outcome::Hung,
        Ok(Ok(result)) => classify(result),
        Ok(Err(rmcp::ServiceError::McpError(e))) => Outcome::RpcError(e.message.to_string()),
        Ok(Err(e)) => Outcome::Gone(e.to_string()),
    }
}

/// [`call_within`] with [`CALL_BOUND`].
pub async fn call(client: &Client, tool: &str, args: Value) -> Outcome {
    call_within(client, tool, args, CALL_BOUND).await
}

fn classify(result: CallToolResult) -> Outcome {
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join(" ");
    if result.is_error == Some(true) {
        Outcome::ToolError(text)
    } else {
        Outcome::Ok(result.structured_content.unwrap_or(Value::String(text)))
    }
}

/// A `run` that must complete: its result.
pub async fn run_ok(client: &Client, target: &str, command: &str) -> Value {
    call(
        client,
        "run",
        serde_json::json!({"target": target, "command": command}),
    )
    .await
    .ok(&format!("run {command:?} in {target}"))
}

/// Resident and peak resident memory of a process, in KiB (from /proc).
pub fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Whether a process is still running (not a zombie).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim().chars().next())
        })
        .is_some_and(|state| state != 'Z' && state != 'X')
}

/// The `p`th percentile (0–100) of `samples`, nearest rank.
pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let rank = ((p / 100.0) * samples.len() as f64).ceil().max(1.0) as usize;
    samples[rank.min(samples.len()) - 1]
}

/// Runs `tmux -L socket args…` and returns its stdout.
pub fn tmux(server: &TestServer, args: &[&str]) -> String {
    let out = std::process::Command::new("tmux")
        .args(["-L", &server.socket])
        .args(args)
        .env_remove("TMUX")
        .output()
        .expect("run tmux");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Names of the sessions `list` shows.
pub async fn listed_names(client: &Client) -> Vec<String> {
    let listed = call(client, "list", serde_json::json!({})).await.ok("list");
    listed["sessions"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|s| s["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Polls `check` until it holds or `bound` passes; returns whether it held.
pub async fn eventually(bound: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
