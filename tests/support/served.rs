//! A `cohort serve` (or any cohort server command) child process on a test tmux
//! server, killed and reaped on drop, with the addresses it announced.

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::Instant;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::RoleClient;
use serde_json::Value;

use crate::support::deadline::{Lines, STARTUP};
use crate::support::{answered, bash_path, TestServer};

/// A running cohort server.
pub struct Served {
    pub child: Child,
    /// What it announced: each `cohort: … at ADDRESS` line's address, in order.
    pub addresses: Vec<String>,
}

impl Served {
    /// The announced address that starts with `prefix` (`http://`, …).
    pub fn address(&self, containing: &str) -> String {
        self.addresses
            .iter()
            .find(|a| a.contains(containing))
            .cloned()
            .unwrap_or_else(|| panic!("no address with {containing:?} in {:?}", self.addresses))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cohort ARGS` on `server` and waits until it has announced `announces`
/// addresses (`cohort: … at ADDRESS` lines on stderr).
pub fn start(server: &TestServer, args: &[&str], announces: usize, env: &[(&str, &str)]) -> Served {
    let child = Command::new(env!("CARGO_BIN_EXE_cohort"))
        .args(args)
        .env("COHORT_TMUX_SOCKET", &server.socket)
        .env("COHORT_STATE_DIR", server.state_dir())
        .env("SHELL", bash_path())
        .env("HOME", server.home())
        .env_remove("COHORT_HTTP_TOKEN")
        .env_remove("TMUX")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Owned from here on: dropped (killed and reaped) even if a check below fails.
    let mut served = Served {
        child,
        addresses: Vec::new(),
    };
    let stderr = served.child.stderr.take().expect("stderr is piped");
    let mut lines = Lines::read(stderr, &format!("cohort {}", args.join(" ")), None);
    let deadline = Instant::now() + STARTUP;
    while served.addresses.len() < announces {
        let what = format!(
            "address {} of {announces} (`cohort: … at ADDRESS`)",
            served.addresses.len() + 1
        );
        let address = lines
            .until(&what, deadline, |line| {
                line.trim()
                    .strip_prefix("cohort: ")
                    .and_then(|l| l.rsplit_once(" at "))
                    .map(|(_, address)| address.to_string())
            })
            .unwrap_or_else(|why| panic!("{why}"));
        served.addresses.push(address);
    }
    served
}

/// `cohort serve --http 127.0.0.1:0 --toolsets all EXTRA…`, and the MCP address it serves.
pub fn serve_http(server: &TestServer, extra: &[&str]) -> (Served, String) {
    let mut args = vec!["serve", "--http", "127.0.0.1:0", "--toolsets", "all"];
    args.extend_from_slice(extra);
    // MCP's address, then the dashboard's.
    let served = start(server, &args, 2, &[]);
    let url = served.address("/mcp");
    (served, url)
}

/// Calls `tool` with `args` and returns its structured result; fails on a tool error
/// and on no answer within [`CALL_LIMIT`](crate::support::CALL_LIMIT).
pub async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> Value {
    let call = client.call_tool(
        CallToolRequestParams::new(tool.to_string())
            .with_arguments(args.as_object().expect("arguments are an object").clone()),
    );
    let result = answered(&format!("{tool} {args}"), call)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    result.structured_content.unwrap_or_default()
}
