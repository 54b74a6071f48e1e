//! A manager for the workers tests: cohort's MCP server in-process over tmux or the
//! fake iTerm2 (an engine whose agents' hooks run the real `cohort` binary), a real
//! rmcp client that counts progress notifications, and fake agents to run.

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cohort::engine::Engine;
use cohort::mcp::{CohortServer, Toolset};
use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;

use crate::{
    agents::Agents,
    terminals::{Terminal, Which},
};

/// Counts the progress notifications the server sends.
#[derive(Clone, Default)]
pub struct Client {
    pub progress: Arc<AtomicUsize>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.fetch_add(1, Ordering::SeqCst);
    }
}

/// An engine on a terminal, ready to run workers.
pub fn engine_for(
    terminal: &Terminal,
    backend: Arc<dyn cohort_backends::TerminalBackend>,
) -> Engine {
    let (state, key) = terminal.engine_home();
    let engine = Engine::with_backend(backend, &state, &key).expect("engine");
    engine
        .workers
        .configure_workers(|s| s.program = Some(env!("CARGO_BIN_EXE_cohort").into()));
    engine
}

/// A manager talking MCP to cohort.
pub struct Manager {
    pub which: Which,
    pub client: RunningService<RoleClient, Client>,
    pub progress: Arc<AtomicUsize>,
    pub engine: Engine,
    pub agents: Agents,
    pub terminal: Terminal,
}

impl Manager {
    pub async fn new(which: Which) -> Manager {
        let terminal = Terminal::start(which).await;
        let engine = engine_for(&terminal, terminal.backend().await);
        let (a, b) = tokio::io::duplex(1 << 20);
        let server = CohortServer::with_toolsets(engine.clone(), &Toolset::ALL);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(a).await {
                let _ = running.waiting().await;
            }
        });
        let handler = Client::default();
        let progress = handler.progress.clone();
        let client = handler.serve(b).await.expect("initialize");
        Manager {
            which,
            client,
            progress,
            engine,
            agents: Agents::new(),
            terminal,
        }
    }

    pub async fn call(&self, name: &str, args: Value) -> CallToolResult {
        let what = format!("{name} {args}");
        let call = self.client.call_tool(
            CallToolRequestParams::new(name.to_string())
                .with_arguments(args.as_object().cloned().unwrap_or_default()),
        );
        crate::support::answered(&what, call)
            .await
            .unwrap_or_else(|e| panic!("{name}: protocol error {e}"))
    }

    /// A call that must succeed; its structured result.
    pub async fn ok(&self, name: &str, args: Value) -> Value {
        let r = self.call(name, args.clone()).await;
        assert_ne!(
            r.is_error,
            Some(true),
            "{:?}: {name} {args}: {r:?}",
            self.which
        );
        r.structured_content.unwrap_or(Value::Null)
    }

    /// A call that must fail; its message.
    pub async fn error(&self, name: &str, args: Value) -> String {
        let r = self.call(name, args.clone()).await;
        assert_eq!(
            r.is_error,
            Some(true),
            "{:?}: {name} {args} should fail: {r:?}",
            self.which
        );
        r.content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Spawns the Claude Code worker `name` (the fake CLI) in a new repository
    /// `repo`, in `team` when given, and checks that it came up ready; answers
    /// `spawn_workers`' result.
    pub async fn spawn_claude(&self, name: &str, repo: &str, team: Option<&str>) -> Value {
        let repo = self.agents.repo(repo);
        let mut worker = serde_json::json!({"name": name, "agent": "claude",
            "project_path": repo.display().to_string(), "env": self.agents.env_json(&[])});
        if let Some(team) = team {
            worker["team"] = team.into();
        }
        let spawned = self
            .ok("spawn_workers", serde_json::json!({"workers": [worker]}))
            .await;
        assert_eq!(spawned["workers"][0]["state"], "ready", "{spawned}");
        spawned
    }

    /// Has the worker `name` ask for permission to run `touch approved.txt`.
    pub async fn ask_for_approval(&self, name: &str) {
        self.ok(
            "message_workers",
            serde_json::json!({"session_ids": [name], "message": "[[approval]] make a file"}),
        )
        .await;
    }

    /// Polls `list_workers` (verbose) until `pred` holds for `name`'s entry.
    pub async fn worker_until(
        &self,
        name: &str,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let list = self
                .ok("list_workers", serde_json::json!({"verbose": true}))
                .await;
            let w = list["workers"]
                .as_array()
                .and_then(|ws| ws.iter().find(|w| w["name"] == name).cloned())
                .unwrap_or(Value::Null);
            if pred(&w) {
                return w;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{:?}: {name} never {what}: {w}",
                self.which
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Names of `result[key]` (a list of strings), sorted.
pub fn names(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}
