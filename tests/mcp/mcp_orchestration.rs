//! The orchestration tools through a real rmcp client: playbooks, wait_for with
//! progress, watchers, notify and agent_status, subscriptions, and a server
//! restricted to a role (in-process and as the `cohort mcp --role` child).

use std::sync::{Arc, Mutex};

use crate::support::*;
use cohort::engine::slot::EngineSlot;
use cohort::engine::Engine;
use cohort::mcp::{CohortServer, Toolset};
use cohort_terminal::events::EngineEvent;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ProgressNotificationParam,
    ResourceUpdatedNotificationParam, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};

/// A client that keeps the progress messages and resource updates it hears; with
/// `tasks`, it declares the tasks extension.
#[derive(Clone, Default)]
struct Client {
    progress: Arc<Mutex<Vec<String>>>,
    updated: Arc<Mutex<Vec<String>>>,
    heard: Arc<tokio::sync::Notify>,
    tasks: bool,
}

impl ClientHandler for Client {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities = if self.tasks {
            rmcp::model::ClientCapabilities::builder()
                .enable_tasks()
                .build()
        } else {
            Default::default()
        };
        rmcp::model::ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("orchestration-test", "1"),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(message) = params.message {
            self.progress.lock().unwrap().push(message);
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.updated.lock().unwrap().push(params.uri);
        self.heard.notify_waiters();
    }
}

struct Harness {
    client: RunningService<RoleClient, Client>,
    handler: Client,
    engine: Engine,
    _server: TestServer,
}

async fn harness(role: Option<&str>) -> Harness {
    let role = role.map(|r| cohort_orchestration::roles::Role::builtin(r).unwrap());
    harness_as(role, None).await
}

/// A harness whose server has `role` and serves `agent`.
async fn harness_as(
    role: Option<cohort_orchestration::roles::Role>,
    agent: Option<&str>,
) -> Harness {
    harness_with(role, agent, Client::default()).await
}

/// A harness whose client declares the tasks extension.
async fn harness_taking_tasks() -> Harness {
    let handler = Client {
        tasks: true,
        ..Client::default()
    };
    harness_with(None, None, handler).await
}

/// A harness whose client is `handler`.
async fn harness_with(
    role: Option<cohort_orchestration::roles::Role>,
    agent: Option<&str>,
    handler: Client,
) -> Harness {
    let server = TestServer::new();
    let backend = server.backend().await;
    let engine =
        Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket).unwrap();
    let mcp = CohortServer::with_role(EngineSlot::ready(engine.clone()), &Toolset::ALL, role)
        .serving_agent(agent.map(str::to_string));
    let (a, b) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = mcp.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    let client = handler.clone().serve(b).await.expect("initialize");
    Harness {
        client,
        handler,
        engine,
        _server: server,
    }
}

fn params(name: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().cloned().unwrap_or_default())
}

fn text_of(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Harness {
    async fn call(&self, name: &str, args: Value) -> CallToolResult {
        let what = format!("{name} {args}");
        crate::support::answered(&what, self.client.call_tool(params(name, args)))
            .await
            .unwrap_or_else(|e| panic!("{name}: protocol error {e}"))
    }

    async fn ok(&self, name: &str, args: Value) -> Value {
        let r = self.call(name, args.clone()).await;
        assert_ne!(r.is_error, Some(true), "{name} {args}: {r:?}");
        r.structured_content.unwrap_or(Value::Null)
    }

    async fn error(&self, name: &str, args: Value) -> String {
        let r = self.call(name, args.clone()).await;
        assert_eq!(r.is_error, Some(true), "{name} {args} should fail: {r:?}");
        text_of(&r)
    }

    async fn open(&self, name: &str) {
        self.ok("open", json!({"name": name})).await;
    }
}

fn fixture(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/playbooks")
        .join(name)
        .display()
        .to_string()
}

#[tokio::test]
async fn a_playbook_file_runs_through_the_tool_with_per_step_results() {
    let h = harness(None).await;
    let out = h
        .ok("playbook", json!({"path": fixture("two-teams.toml")}))
        .await;
    assert_eq!(out["ok"], false, "{out:#}");
    assert_eq!(out["opened"].as_array().map(Vec::len), Some(4), "{out:#}");
    let steps = out["steps"].as_array().unwrap();
    let shape: Vec<(bool, bool, usize)> = steps
        .iter()
        .map(|s| {
            (
                s["ran"].as_bool().unwrap(),
                s["ok"].as_bool().unwrap(),
                s["results"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![(true, true, 4), (true, false, 3), (false, false, 0)],
        "{out:#}"
    );
    let db = &steps[1]["results"][2];
    assert_eq!(db["session"], "db");
    assert_eq!(db["verdict"]["exit_status"], 1, "{db:#}");
    assert!(
        out["stopped_at"].as_str().unwrap().contains("test"),
        "{out:#}"
    );
    assert!(
        out["summary"]
            .as_str()
            .unwrap()
            .starts_with("failed: 1 of 3"),
        "{out:#}"
    );
    // What a model reads: the report as text (the second run finds the layout's
    // sessions there already, and says so).
    let again = h
        .call("playbook", json!({"path": fixture("two-teams.toml")}))
        .await;
    let text = text_of(&again);
    assert!(text.starts_with("playbook \"two teams\": FAILED"), "{text}");
    assert!(text.contains("error: the layout"), "{text}");
}

#[tokio::test]
async fn a_bad_playbook_is_refused_naming_the_step_and_field() {
    let h = harness(None).await;
    let e = h
        .error(
            "playbook",
            json!({"playbook": {"steps": [
                {"name": "ok", "targets": ["x"], "command": "true"},
                {"name": "typo", "targets": ["x"], "comand": "true"},
            ]}}),
        )
        .await;
    assert!(e.contains("step 2") && e.contains("comand"), "{e}");
    let e = h
        .error(
            "playbook",
            json!({"playbook": {"steps": [{"targets": ["x"], "command": "true", "timeout_ms": "soon"}]}}),
        )
        .await;
    assert!(e.contains("step 1") && e.contains("timeout_ms"), "{e}");
}

#[tokio::test]
async fn wait_for_blocks_until_the_pattern_and_reports_progress() {
    let h = harness(None).await;
    h.open("srv").await;
    h.open("other").await;
    h.ok(
        "send",
        json!({"target": "srv", "text": "sleep 1; printf 'ready on %s\\n' 8080"}),
    )
    .await;
    let out = h
        .ok(
            "wait_for",
            json!({"targets": ["srv", "other"], "condition": "pattern", "pattern": r"ready on \d+", "regex": true, "timeout_ms": 15000}),
        )
        .await;
    assert_eq!(out["done"], true, "{out:#}");
    assert_eq!(out["results"][0]["line"], "ready on 8080", "{out:#}");
    assert_eq!(out["results"][1]["met"], false, "{out:#}");
    let progress = h.handler.progress.lock().unwrap().clone();
    assert!(
        progress.iter().any(|m| m.contains("srv met")),
        "a progress message per target met: {progress:?}"
    );
    let e = h
        .error("wait_for", json!({"targets": ["srv"], "condition": "soon"}))
        .await;
    assert!(e.contains("idle, exit, pattern or quiet"), "{e}");
}

/// Polls the task `id` until it ends; its last state.
async fn task_end(h: &Harness, id: &str) -> rmcp::model::DetailedTask {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let got = h
            .client
            .peer()
            .get_task(rmcp::model::GetTaskParams::new(id.to_string()))
            .await
            .expect("tasks/get");
        if got.task.status().is_terminal() {
            return got.task;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "task {id} never ended"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_client_that_takes_tasks_gets_long_waits_as_tasks_to_poll_and_cancel() {
    use rmcp::model::{CallToolResponse, TaskPayload, TaskStatus};

    let h = harness_taking_tasks().await;
    h.open("srv").await;
    // A short call is answered as always.
    let listed = h
        .client
        .call_tool_once(params("list", json!({})))
        .await
        .unwrap();
    assert!(
        matches!(listed, CallToolResponse::Complete(_)),
        "{listed:?}"
    );

    h.ok(
        "send",
        json!({"target": "srv", "text": "sleep 1; echo ready-$((6*7))"}),
    )
    .await;
    let wait = json!({"targets": ["srv"], "condition": "pattern", "pattern": "ready-42", "timeout_ms": 20000});
    let created = match h.client.call_tool_once(params("wait_for", wait)).await {
        Ok(CallToolResponse::Task(created)) => created,
        other => panic!("wait_for should start a task: {other:?}"),
    };
    let ended = task_end(&h, &created.task.task_id).await;
    let TaskPayload::Completed { result } = ended.payload else {
        panic!("the wait should complete: {ended:?}");
    };
    let result: CallToolResult = serde_json::from_value(Value::Object(result)).unwrap();
    let out = result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("{result:?}"));
    assert_eq!(out["done"], true, "{out:#}");
    assert_eq!(out["results"][0]["line"], "ready-42", "{out:#}");

    // A wait that would run for minutes stops when its task is cancelled.
    let forever = json!({"targets": ["srv"], "condition": "pattern", "pattern": "never-printed", "timeout_ms": 600000});
    let created = match h.client.call_tool_once(params("wait_for", forever)).await {
        Ok(CallToolResponse::Task(created)) => created,
        other => panic!("wait_for should start a task: {other:?}"),
    };
    h.client
        .peer()
        .cancel_task(rmcp::model::CancelTaskParams::new(
            created.task.task_id.clone(),
        ))
        .await
        .expect("tasks/cancel");
    let ended = task_end(&h, &created.task.task_id).await;
    assert_eq!(ended.status(), TaskStatus::Cancelled, "{ended:?}");
    // An unknown task is a clear error, not a hang.
    let unknown = h
        .client
        .peer()
        .get_task(rmcp::model::GetTaskParams::new("no-such-task".to_string()))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
}

#[tokio::test]
async fn a_client_that_goes_takes_its_tasks_and_its_locks_with_it() {
    use rmcp::model::CallToolResponse;

    let h = harness_taking_tasks().await;
    h.open("held").await;
    h.ok("lock", json!({"target": "held", "owner": "alice"}))
        .await;
    let forever = json!({"targets": ["held"], "condition": "pattern", "pattern": "never-printed", "timeout_ms": 600000});
    match h.client.call_tool_once(params("wait_for", forever)).await {
        Ok(CallToolResponse::Task(_)) => {}
        other => panic!("wait_for should start a task: {other:?}"),
    }
    let Harness {
        client,
        engine,
        _server,
        ..
    } = h;
    client.cancel().await.unwrap();
    // Another client on the same engine gets the lock once the first one's end has
    // run: its running task must not keep the connection.
    let other = CohortServer::new(engine.clone());
    let (a, b) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = other.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    let bob = ().serve(b).await.expect("initialize");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let took = bob
            .call_tool(params("lock", json!({"target": "held", "owner": "bob"})))
            .await
            .unwrap();
        if took.is_error != Some(true) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the lock outlived the client that took it: {took:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    bob.cancel().await.unwrap();
}

#[tokio::test]
async fn watchers_are_listed_fire_notifications_and_go() {
    let h = harness(None).await;
    h.open("app").await;
    let out = h
        .ok(
            "watch",
            json!({"target": "app", "pattern": "Traceback|ERROR", "regex": true, "notify": "lead"}),
        )
        .await;
    let id = out["watches"][0]["id"].as_str().unwrap().to_string();
    let listed = h.ok("list_watches", json!({})).await;
    assert_eq!(listed["watches"][0]["id"], id.as_str());
    assert_eq!(listed["watches"][0]["here"], true, "{listed:#}");
    h.ok(
        "send",
        json!({"target": "app", "text": "printf 'E%s: disk full\\n' RROR"}),
    )
    .await;
    let notes = h
        .ok("notifications", json!({"owner": "lead", "wait": true}))
        .await;
    let text = notes.to_string();
    assert!(text.contains("ERROR: disk full"), "{notes:#}");
    h.ok("unwatch", json!({"id": id})).await;
    assert_eq!(h.ok("list_watches", json!({})).await["watches"], json!([]));
    let e = h
        .error(
            "watch",
            json!({"target": "app", "pattern": "x", "event": "command_ended"}),
        )
        .await;
    assert!(e.contains("one of them"), "{e}");
}

#[tokio::test]
async fn notify_and_agent_status_give_one_line_per_agent() {
    let h = harness(None).await;
    h.open("s1").await;
    h.ok(
        "register_agent",
        json!({"name": "ada", "session": "s1", "teams": ["core"]}),
    )
    .await;
    h.engine
        .terminal
        .publish(EngineEvent::agent_state("ada", "idle", "turn ended"));
    h.ok(
        "notify",
        json!({"from": "lead", "to": "core", "message": "pull main"}),
    )
    .await;
    let status = h.ok("agent_status", json!({})).await;
    let line = status["lines"][0].as_str().unwrap();
    assert!(line.starts_with("ada (core) idle"), "{status:#}");
    assert!(
        status["agents"][0]["unread"].as_i64() >= Some(1),
        "{status:#}"
    );
    let notes = h.ok("notifications", json!({"owner": "ada"})).await;
    assert!(notes.to_string().contains("pull main"), "{notes:#}");
}

/// `resources/subscribe` (the protocol versions most hosts speak).
#[allow(deprecated)]
#[tokio::test]
async fn subscribed_clients_hear_of_output_and_state_changes() {
    let h = harness(None).await;
    h.open("sub").await;
    let client = &h.client;
    let subscribe = |uri: &'static str| async move {
        client
            .subscribe(SubscribeRequestParams::new(uri))
            .await
            .unwrap_or_else(|e| panic!("subscribe {uri}: {e}"));
    };
    subscribe("terminal://sub/output").await;
    let heard = |uri: &'static str| {
        let h = &h;
        async move {
            let deadline = tokio::time::Instant::now() + WAIT;
            loop {
                let notified = h.handler.heard.notified();
                if h.handler.updated.lock().unwrap().iter().any(|u| u == uri) {
                    return;
                }
                tokio::time::timeout_at(deadline, notified)
                    .await
                    .unwrap_or_else(|_| {
                        panic!(
                            "no update for {uri}: {:?}",
                            h.handler.updated.lock().unwrap()
                        )
                    });
            }
        }
    };
    h.ok("send", json!({"target": "sub", "text": "echo hello"}))
        .await;
    heard("terminal://sub/output").await;
    // A command's end changes the status too: subscribe once it is over, so only
    // the state change below can update it.
    let ended = h
        .ok("wait_for", json!({"targets": ["sub"], "condition": "exit"}))
        .await;
    assert_eq!(ended["results"][0]["exit_status"], 0, "{ended:#}");
    subscribe("agents://status").await;
    h.handler.updated.lock().unwrap().clear();
    h.engine.terminal.publish(EngineEvent::agent_state(
        "zed",
        "stuck",
        "no output for 10 min",
    ));
    heard("agents://status").await;
}

#[tokio::test]
async fn a_readonly_server_lists_read_tools_only_and_refuses_run() {
    let h = harness(Some("readonly")).await;
    let names: Vec<String> = h
        .client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for read in [
        "list",
        "read",
        "status",
        "wait_for",
        "agent_status",
        "list_watches",
    ] {
        assert!(names.iter().any(|n| n == read), "{read} missing: {names:?}");
    }
    for write in [
        "run",
        "send",
        "open",
        "close",
        "playbook",
        "broadcast",
        "watch",
    ] {
        assert!(
            !names.iter().any(|n| n == write),
            "{write} listed: {names:?}"
        );
    }
    let e = h
        .error("run", json!({"target": "x", "command": "true"}))
        .await;
    assert!(e.contains("readonly") && e.contains("run"), "{e}");
}

#[tokio::test]
async fn a_restricted_server_reads_sends_and_removes_only_as_its_agent() {
    use cohort_orchestration::roles::Role;
    let h = harness_as(Role::builtin("monitor"), Some("ada")).await;
    h.engine
        .terminal
        .open(cohort_terminal::OpenOptions::named("s"))
        .await
        .unwrap();
    let orchestrator = &h.engine.orchestrator;
    orchestrator
        .notify("lead", "bob", "info", "for bob only")
        .await
        .unwrap();
    // Another agent's notifications are not this server's to read (or mark read).
    let e = h.error("notifications", json!({"owner": "bob"})).await;
    assert!(e.contains("\"ada\""), "{e}");
    let bob = orchestrator
        .notifications_for("bob", false, None)
        .await
        .unwrap();
    assert_eq!(bob.len(), 1, "bob's note is still unread: {bob:?}");
    h.ok("notifications", json!({"owner": "ada"})).await;
    // It speaks as its agent only.
    let e = h
        .error(
            "notify",
            json!({"from": "bob", "to": "lead", "message": "forged"}),
        )
        .await;
    assert!(e.contains("sender"), "{e}");
    h.ok(
        "notify",
        json!({"from": "ada", "to": "lead", "message": "hi"}),
    )
    .await;
    // It removes the watchers its agent made, not another's.
    let theirs = orchestrator
        .add_watch(cohort_orchestration::watch::WatchSpec {
            id: String::new(),
            target: "s".into(),
            trigger: cohort_orchestration::watch::Trigger::Pattern {
                pattern: "x".into(),
                regex: false,
                input: false,
            },
            action: None,
            notify: "bob".into(),
            context: 0,
            once: false,
            owner: Some("bob".into()),
        })
        .await
        .unwrap();
    let e = h.error("unwatch", json!({"id": theirs.id})).await;
    assert!(e.contains("made by bob"), "{e}");
    let mine = h
        .ok(
            "watch",
            json!({"target": "s", "pattern": "y", "owner": "bob"}),
        )
        .await;
    let mine = mine["watches"][0]["id"].as_str().unwrap().to_string();
    let listed = orchestrator.watches().await.unwrap();
    let made = listed.iter().find(|w| w.spec.id == mine).unwrap();
    assert_eq!(
        made.spec.owner.as_deref(),
        Some("ada"),
        "bound to its agent"
    );
    h.ok("unwatch", json!({"id": mine})).await;

    // A role with no agent has no name to read anyone's notifications as.
    let h = harness_as(Role::builtin("readonly"), None).await;
    let e = h.error("notifications", json!({"owner": "bob"})).await;
    assert!(e.contains("--agent"), "{e}");
}

#[tokio::test]
async fn tools_need_the_permission_their_effect_needs() {
    use cohort_orchestration::roles::{Permission, Role};
    // Everything but destructive choices: closing workers is one.
    let role = Role {
        name: "planner".into(),
        description: String::new(),
        permissions: [Permission::Read, Permission::Orchestrate]
            .into_iter()
            .collect(),
        tools: Default::default(),
        deny: Default::default(),
        destructive: false,
    };
    let h = harness_as(Some(role), Some("plan")).await;
    let e = h.error("close_workers", json!({"workers": ["w1"]})).await;
    assert!(e.contains("\"close\" permission"), "{e}");
    let names: Vec<String> = h
        .client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(!names.iter().any(|n| n == "close_workers"), "{names:?}");
    assert!(names.iter().any(|n| n == "list_workers"), "{names:?}");
}

#[tokio::test]
async fn a_role_without_destructive_choices_refuses_force() {
    let h = harness(Some("tester")).await;
    h.engine
        .terminal
        .open(cohort_terminal::OpenOptions::named("t"))
        .await
        .unwrap();
    let e = h
        .error(
            "send",
            json!({"target": "t", "text": "rm -rf /tmp/x", "force": true}),
        )
        .await;
    assert!(e.contains("force"), "{e}");
    let e = h.error("close", json!({"target": "t"})).await;
    assert!(e.contains("tester"), "{e}");
}

#[tokio::test]
async fn cohort_mcp_with_the_readonly_role_is_restricted_for_a_real_client() {
    let server = TestServer::new();
    let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_cohort"));
    let cmd = {
        use rmcp::transport::ConfigureCommandExt;
        cmd.configure(|c| {
            c.args(["mcp", "--role", "readonly"])
                .env("COHORT_TMUX_SOCKET", &server.socket)
                .env("COHORT_STATE_DIR", server.state_dir())
                .env("SHELL", bash_path())
                .env("HOME", server.home())
                .env_remove("TMUX");
        })
    };
    let client =
        ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap())
            .await
            .expect("initialize");
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.iter().any(|n| n == "read"), "{names:?}");
    assert!(!names.iter().any(|n| n == "run"), "{names:?}");
    let r = client
        .call_tool(params("run", json!({"target": "x", "command": "true"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(text_of(&r).contains("readonly"), "{r:?}");
    let _ = client.cancel().await;
}

#[tokio::test]
async fn the_orchestration_prompt_plans_for_every_agent_asked_for() {
    let h = harness(None).await;
    let prompt = |agents: &str| {
        let mut args = serde_json::Map::new();
        args.insert("task".into(), json!("port the parser"));
        args.insert("agents".into(), json!(agents));
        rmcp::model::GetPromptRequestParams::new("orchestrate_agents").with_arguments(args)
    };
    let got = h.client.get_prompt(prompt("20")).await.unwrap();
    let text = format!("{:?}", got.messages);
    assert!(text.contains("20 agents"), "{text}");
    assert!(text.contains("2 windows"), "{text}");
    let refused = h.client.get_prompt(prompt("many")).await;
    assert!(
        format!("{refused:?}").contains("not a number from 1 to"),
        "{refused:?}"
    );
    let mut args = serde_json::Map::new();
    args.insert("goal".into(), json!("release 1.2"));
    let got = h
        .client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("run_playbook").with_arguments(args))
        .await
        .unwrap();
    assert!(format!("{:?}", got.messages).contains("release 1.2"));
}

#[tokio::test]
async fn broadcast_takes_messages_addressed_by_hierarchy() {
    let h = harness(None).await;
    for s in ["s-alice", "s-bob", "s-carol"] {
        h.open(s).await;
    }
    h.ok("create_team", json!({"name": "org"})).await;
    h.ok("create_team", json!({"name": "web", "parent": "org"}))
        .await;
    for (agent, team) in [("alice", "web"), ("bob", "web"), ("carol", "org")] {
        h.ok(
            "register_agent",
            json!({"name": agent, "session": format!("s-{agent}"), "teams": [team]}),
        )
        .await;
    }
    let out = h
        .ok(
            "broadcast",
            json!({"enter": false, "messages": [
                {"target": "org", "message": "# everyone"},
                {"target": "org/web", "message": "# web only"},
                {"target": "web/alice", "message": "# just alice"},
            ]}),
        )
        .await;
    let got: Vec<(String, String)> = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["target"].as_str().unwrap().to_string(),
                r["text"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let expect = |agent: &str, text: &str| (agent.to_string(), text.to_string());
    for pair in [
        expect("alice", "# just alice"),
        expect("bob", "# web only"),
        expect("carol", "# everyone"),
    ] {
        assert!(got.contains(&pair), "{pair:?} not in {got:?}");
    }
    let e = h
        .error(
            "broadcast",
            json!({"messages": [{"target": "web/carol", "message": "x"}]}),
        )
        .await;
    assert!(e.contains("neither an agent of team \"web\""), "{e}");
}

#[tokio::test]
async fn cohort_mcp_for_an_agent_serves_the_role_it_was_registered_with() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let engine =
        Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket).unwrap();
    let pane = engine
        .terminal
        .open(cohort_terminal::OpenOptions::named("mon"))
        .await
        .unwrap();
    engine
        .terminal
        .register_agent("watcher", &pane, Some("monitor"), &[])
        .await
        .unwrap();
    let roles = server.state_dir().join("roles.toml");
    std::fs::write(
        &roles,
        "[roles.auditor]\nbase = \"readonly\"\ntools = [\"run\"]\n",
    )
    .unwrap();
    let serve = |args: Vec<String>| {
        let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_cohort"));
        use rmcp::transport::ConfigureCommandExt;
        let cmd = cmd.configure(|c| {
            c.arg("mcp")
                .args(&args)
                .env("COHORT_TMUX_SOCKET", &server.socket)
                .env("COHORT_STATE_DIR", server.state_dir())
                .env("SHELL", bash_path())
                .env("HOME", server.home())
                .env_remove("TMUX");
        });
        async move {
            ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap())
                .await
                .expect("initialize")
        }
    };
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name.to_string()).collect()
    };
    let client = serve(vec!["--agent".into(), "watcher".into()]).await;
    let listed = names(client.list_all_tools().await.unwrap());
    assert!(listed.iter().any(|n| n == "read"), "{listed:?}");
    assert!(!listed.iter().any(|n| n == "run"), "{listed:?}");
    let _ = client.cancel().await;
    // A custom role from a roles file: readonly, plus run.
    let client = serve(vec![
        "--role".into(),
        "auditor".into(),
        "--roles".into(),
        roles.display().to_string(),
    ])
    .await;
    let listed = names(client.list_all_tools().await.unwrap());
    assert!(listed.iter().any(|n| n == "run"), "{listed:?}");
    assert!(!listed.iter().any(|n| n == "send"), "{listed:?}");
    let _ = client.cancel().await;
}

/// `subscriptions/listen` (the 2026-07-28 protocol): one stream for the URIs named.
#[tokio::test]
async fn a_listening_client_hears_of_notifications_for_it() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let engine =
        Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket).unwrap();
    let mcp = CohortServer::with_role(EngineSlot::ready(engine.clone()), &Toolset::ALL, None);
    let (a, b) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = mcp.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    use rmcp::service::ClientServiceExt;
    let client = ()
        .serve_with_lifecycle(
            b,
            rmcp::ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("initialize");
    let mut subscription = client
        .listen(
            rmcp::model::SubscriptionFilter::builder()
                .resource_subscription("notifications://lead")
                .build(),
        )
        .await
        .expect("listen");
    assert_eq!(
        subscription.acknowledged().resource_subscriptions,
        Some(vec!["notifications://lead".to_string()])
    );
    engine
        .orchestrator
        .notify("ops", "lead", "info", "deploy finished")
        .await
        .unwrap();
    let notification = tokio::time::timeout(WAIT, subscription.next())
        .await
        .expect("no update arrived")
        .unwrap()
        .expect("the stream ended");
    let rmcp::model::ServerNotification::ResourceUpdatedNotification(updated) = notification else {
        panic!("not a resource update: {notification:?}");
    };
    assert_eq!(updated.params.uri, "notifications://lead");
}
