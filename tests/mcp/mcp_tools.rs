//! The MCP tools in-process: a real rmcp client talks to the server over a duplex
//! pipe; the server drives a real tmux on a private socket.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use cohort::engine::Engine;
use cohort::mcp::{CohortServer, Toolset};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, GetPromptRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};

#[derive(Clone, Default)]
struct Client {
    progress: Arc<AtomicUsize>,
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

struct Harness {
    client: RunningService<RoleClient, Client>,
    progress: Arc<AtomicUsize>,
    _server: TestServer,
}

async fn harness(toolsets: &[Toolset]) -> Harness {
    let server = TestServer::new();
    let backend = server.backend().await;
    let engine =
        Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket).unwrap();
    let (a, b) = tokio::io::duplex(1 << 20);
    let mcp = CohortServer::with_toolsets(engine, toolsets);
    tokio::spawn(async move {
        if let Ok(running) = mcp.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    let handler = Client::default();
    let progress = handler.progress.clone();
    let client = handler.serve(b).await.expect("initialize");
    Harness {
        client,
        progress,
        _server: server,
    }
}

fn params(name: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().cloned().unwrap_or_default())
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
        r.content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Polls `read` (mode new for `caller`-less reads) until `pred` holds.
    async fn screen_until(&self, target: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let v = self
                .ok("read", json!({"target": target, "mode": "screen"}))
                .await;
            let text = v["output"].as_str().unwrap_or_default().to_string();
            if pred(&text) {
                return text;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{target}: never matched; screen:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The default tool list is read on every turn of every session: it stays within its
/// budget, and each toolset's cost is printed (the README's reference shows the same).
#[test]
fn the_default_tool_list_stays_within_its_budget() {
    let default: Vec<_> = Toolset::DEFAULT
        .into_iter()
        .flat_map(cohort::mcp::toolset_tools)
        .collect();
    let (read, whole) = cohort::mcp::list_tokens(&default);
    for set in Toolset::ALL {
        let tools = cohort::mcp::toolset_tools(set);
        let (r, w) = cohort::mcp::list_tokens(&tools);
        eprintln!(
            "toolset {}: {} tools, ~{r} tokens read, ~{w} whole",
            set.name(),
            tools.len()
        );
    }
    assert!(
        read <= Toolset::DEFAULT_BUDGET_TOKENS,
        "the default tools cost ~{read} tokens (~{whole} with output schemas), over the \
         budget of {}: tighten descriptions or move tools to another toolset",
        Toolset::DEFAULT_BUDGET_TOKENS
    );
    assert!(default.iter().any(|t| t.name == "run"));
}

/// What a host hands its model is plain text: a run's output as the terminal showed
/// it, then the meta line; the typed result is beside it.
#[tokio::test]
async fn replies_read_as_plain_text_with_the_typed_result_beside() {
    let h = harness(&[Toolset::Core]).await;
    h.ok("open", json!({"name": "plain"})).await;
    let r = h
        .call(
            "run",
            json!({"target": "plain", "command": r#"printf 'a "quoted" word\n\tand a tab\n'"#}),
        )
        .await;
    let text = r.content[0].as_text().expect("text").text.clone();
    let v = r.structured_content.expect("structured content");
    assert_eq!(v["output"], "a \"quoted\" word\n\tand a tab", "{v}");
    let meta = v["meta"].as_str().unwrap();
    assert_eq!(text, format!("a \"quoted\" word\n\tand a tab\n{meta}"));
    // Nothing hidden and complete: the meta line is short.
    assert!(
        meta.starts_with("[lines ") && meta.contains("complete (exit 0") && !meta.contains("shown"),
        "{meta}"
    );
    assert!(meta.len() < 70, "{meta}");
}

#[tokio::test]
async fn toolsets_choose_the_tools_and_every_tool_is_described() {
    let h = harness(&[Toolset::Core]).await;
    let names: Vec<String> = h
        .client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(
        names.contains(&"run".to_string()) && !names.contains(&"broadcast".to_string()),
        "{names:?}"
    );
    let h = harness(&Toolset::ALL).await;
    let tools = h.client.list_all_tools().await.unwrap();
    assert_eq!(
        tools.len(),
        55,
        "{:?}",
        tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>()
    );
    for tool in &tools {
        assert!(
            tool.output_schema.is_some(),
            "{} has no output schema",
            tool.name
        );
        assert!(
            tool.annotations.is_some(),
            "{} has no annotations",
            tool.name
        );
        assert!(
            tool.description.as_deref().is_some_and(|d| d.len() > 30),
            "{} is not described",
            tool.name
        );
        let schemas = format!("{:?} {:?}", tool.input_schema, tool.output_schema);
        assert!(
            !schemas.contains("\"uint"),
            "{}: non-standard format in {schemas}",
            tool.name
        );
    }
    assert_eq!(
        Toolset::parse_list("core,team").unwrap(),
        vec![Toolset::Core, Toolset::Team]
    );
    assert!(Toolset::parse_list("core,teams")
        .unwrap_err()
        .contains("unknown toolset"));
}

#[tokio::test]
async fn teams_broadcast_with_a_cascade_and_many_at_once() {
    let h = harness(&Toolset::ALL).await;
    for s in ["a", "b", "c"] {
        h.ok("open", json!({"name": s})).await;
    }
    h.ok("create_team", json!({"name": "org"})).await;
    h.ok("create_team", json!({"name": "web", "parent": "org"}))
        .await;
    h.ok("create_team", json!({"name": "ops", "parent": "org"}))
        .await;
    h.ok(
        "register_agent",
        json!({"name": "alice", "session": "a", "teams": ["web"], "role": "builder"}),
    )
    .await;
    h.ok(
        "register_agent",
        json!({"name": "bob", "session": "b", "teams": ["web"]}),
    )
    .await;
    h.ok(
        "register_agent",
        json!({"name": "carol", "session": "c", "teams": ["ops"]}),
    )
    .await;
    h.ok(
        "register_agent",
        json!({"name": "dave", "session": "c", "teams": ["ops"]}),
    )
    .await;
    // Session and agent names are both targets: neither may take the other's name.
    let clash = h
        .error("register_agent", json!({"name": "a", "session": "b"}))
        .await;
    assert!(
        clash.contains("is taken") && clash.contains("session \"a\""),
        "{clash}"
    );
    let clash = h.error("open", json!({"name": "alice"})).await;
    assert!(clash.contains("an agent of that name"), "{clash}");
    let teams = h.ok("list_teams", json!({})).await;
    let web = teams["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "web")
        .unwrap()
        .clone();
    assert_eq!(web["members"], json!(["alice", "bob"]));
    assert_eq!(web["parent"], "org");

    let sent = h
        .ok(
            "broadcast",
            json!({"message": "echo to-all", "teams": {"web": "echo to-web"}, "agents": {"alice": "echo to-alice"}}),
        )
        .await;
    let by_agent = |name: &str| {
        sent["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["target"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        (
            by_agent("alice")["text"].clone(),
            by_agent("alice")["meta"].clone()
        ),
        (json!("echo to-alice"), json!("agent"))
    );
    assert_eq!(by_agent("bob")["meta"], "team");
    assert_eq!(by_agent("carol")["meta"], "broadcast");
    // dave shares carol's session: the same message is typed there once, and dave is
    // answered for.
    let dave = by_agent("dave");
    assert_eq!((&dave["ok"], &dave["session"]), (&json!(true), &json!("c")));
    assert!(
        dave["meta"].as_str().unwrap().contains("sent once"),
        "{dave}"
    );
    h.screen_until("alice", |s| s.lines().any(|l| l == "to-alice"))
        .await;
    h.screen_until("bob", |s| s.lines().any(|l| l == "to-web"))
        .await;
    h.screen_until("carol", |s| s.lines().any(|l| l == "to-all"))
        .await;

    // A session named several ways is written once.
    let wrote = h
        .ok(
            "write_many",
            json!({"targets": ["a", "alice", "web", "c"], "text": "echo many-$((2*21))"}),
        )
        .await;
    let sessions: Vec<&str> = wrote["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["session"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, ["a", "b", "c"]);
    for s in ["a", "b", "c"] {
        h.screen_until(s, |t| t.lines().any(|l| l == "many-42"))
            .await;
    }
    let read = h
        .ok(
            "read_many",
            json!({"targets": ["org"], "filter": "^many-", "limit": 5}),
        )
        .await;
    let results = read["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "org reaches web and ops: {read}");
    for r in results {
        assert_eq!(r["text"], "many-42", "{r}");
    }
    assert!(h
        .error("read_many", json!({"targets": ["a"], "filter": "("}))
        .await
        .contains("not a usable regex"));
    assert!(h
        .error("write_many", json!({"targets": ["nobody"], "text": "x"}))
        .await
        .contains("no session named"));
    // One mistyped name among good ones fails alone.
    let wrote = h
        .ok(
            "write_many",
            json!({"targets": ["a", "nobody"], "text": "echo still-$((40+3))"}),
        )
        .await;
    let results = wrote["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{wrote}");
    assert_eq!(
        (&results[0]["session"], &results[0]["ok"]),
        (&json!("a"), &json!(true))
    );
    assert_eq!(results[1]["ok"], false, "{wrote}");
    assert!(
        results[1]["error"]
            .as_str()
            .unwrap()
            .contains("no session named"),
        "{wrote}"
    );
    h.screen_until("a", |t| t.lines().any(|l| l == "still-43"))
        .await;
    let read = h
        .ok(
            "read_many",
            json!({"targets": ["nobody", "a"], "mode": "tail", "limit": 3}),
        )
        .await;
    let results = read["results"].as_array().unwrap();
    assert_eq!(
        (&results[0]["ok"], &results[1]["ok"]),
        (&json!(false), &json!(true)),
        "{read}"
    );

    h.ok("assign_team", json!({"agent": "carol", "team": "web"}))
        .await;
    h.ok("remove_agent", json!({"name": "carol"})).await;
    let agents = h.ok("list_agents", json!({})).await;
    assert_eq!(agents["agents"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn a_lock_refuses_a_second_owner() {
    let h = harness(&Toolset::ALL).await;
    h.ok("open", json!({"name": "shared"})).await;
    h.ok("lock", json!({"target": "shared", "owner": "alice"}))
        .await;
    let refused = h
        .error("lock", json!({"target": "shared", "owner": "bob"}))
        .await;
    assert!(refused.contains("locked by \"alice\""), "{refused}");
    let refused = h
        .error(
            "send",
            json!({"target": "shared", "text": "echo bob", "owner": "bob"}),
        )
        .await;
    assert!(
        refused.contains("locked by \"alice\"") && refused.contains("request_access"),
        "{refused}"
    );
    h.error("run", json!({"target": "shared", "command": "true"}))
        .await;
    h.error(
        "key",
        json!({"target": "shared", "keys": ["C-c"], "owner": "bob"}),
    )
    .await;
    h.ok(
        "run",
        json!({"target": "shared", "command": "true", "owner": "alice"}),
    )
    .await;
    let asked = h
        .ok(
            "request_access",
            json!({"target": "shared", "requester": "bob", "reason": "deploy"}),
        )
        .await;
    assert_eq!(asked["holder"]["owner"], "alice");
    assert!(h
        .error("lock", json!({"target": "shared", "owner": " "}))
        .await
        .contains("invalid owner name \" \": it is empty"));
    // The holder reads the request, once.
    let note = h.ok("notifications", json!({"owner": "alice"})).await;
    let notes = note["notifications"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{note}");
    assert_eq!(notes[0]["from"], "bob");
    assert!(
        notes[0]["message"].as_str().unwrap().contains("deploy"),
        "{note}"
    );
    let again = h.ok("notifications", json!({"owner": "alice"})).await;
    assert_eq!(again["notifications"], json!([]), "{again}");
    let all = h
        .ok("notifications", json!({"owner": "alice", "all": true}))
        .await;
    assert_eq!(all["notifications"].as_array().unwrap().len(), 1);
    // The session is locked, not by the requester; the message says since when, for
    // people.
    assert_eq!(
        (&asked["locked"], &asked["yours"]),
        (&json!(true), &json!(false))
    );
    let message = asked["message"].as_str().unwrap();
    assert!(message.contains("s ago"), "{message}");
    assert!(h
        .error("unlock", json!({"target": "shared", "owner": "bob"}))
        .await
        .contains("held by \"alice\""));
    h.ok("unlock", json!({"target": "shared", "owner": "alice"}))
        .await;
    h.ok(
        "send",
        json!({"target": "shared", "text": "echo free", "owner": "bob"}),
    )
    .await;
    let tagged = h
        .ok(
            "tag",
            json!({"target": "shared", "add": ["deploy", "prod"], "remove": ["prod"]}),
        )
        .await;
    assert_eq!(tagged["tags"], json!(["deploy"]));
    let status = h.ok("status", json!({"target": "shared"})).await;
    assert_eq!(status["session"]["tags"], json!(["deploy"]));
    assert_eq!(status["session"]["locked_by"], Value::Null);
}

#[tokio::test]
async fn tags_are_listed_and_tag_targets_reach_every_tagged_session() {
    let h = harness(&Toolset::ALL).await;
    for name in ["web-1", "web-2", "db"] {
        h.ok("open", json!({"name": name})).await;
    }
    for name in ["web-1", "web-2"] {
        h.ok("tag", json!({"target": name, "add": ["frontend"]}))
            .await;
    }
    let listed = h.ok("list", json!({})).await;
    let tags_of = |name: &str| {
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["tags"]
            .clone()
    };
    assert_eq!(tags_of("web-1"), json!(["frontend"]), "{listed}");
    assert_eq!(tags_of("db"), Value::Null, "{listed}");
    let wrote = h
        .ok(
            "write_many",
            json!({"targets": ["tag:frontend"], "text": "echo tagged"}),
        )
        .await;
    let mut reached: Vec<&str> = wrote["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["session"].as_str().unwrap())
        .collect();
    reached.sort();
    assert_eq!(reached, ["web-1", "web-2"], "{wrote}");
    let none = h
        .error(
            "write_many",
            json!({"targets": ["tag:backend"], "text": "echo nobody"}),
        )
        .await;
    assert!(none.contains("no open session has the tag"), "{none}");
    let e = h.error("open", json!({"name": "tag:x"})).await;
    assert!(e.contains("reserved"), "{e}");
}

#[tokio::test]
async fn layouts_split_and_appearance() {
    let h = harness(&Toolset::ALL).await;
    let made = h
        .ok(
            "create_layout",
            json!({"name": "squad", "layout": "quad", "panes": [
                {"name": "lead", "agent": "ann", "team": "core"},
                {"name": "w1", "agent": "ben", "team": "core"},
                {"name": "w2"},
                {"name": "w3", "command": "sh -c 'echo ready; exec sleep 60'"}
            ]}),
        )
        .await;
    let names: Vec<&str> = made["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lead", "w1", "w2", "w3"]);
    // The shells are up when the layout is answered: they run the configured shell (bash
    // on test servers), not the `sh` wrapper that starts it.
    for s in &made["sessions"].as_array().unwrap()[..3] {
        assert_eq!(s["command"], "bash", "{s}");
    }
    let agents = h.ok("list_agents", json!({})).await;
    assert_eq!(agents["agents"].as_array().unwrap().len(), 2);
    h.screen_until("w3", |s| s.contains("ready")).await;
    let split = h
        .ok(
            "split",
            json!({"target": "w2", "name": "w2b", "direction": "vertical", "percent": 30}),
        )
        .await;
    assert_eq!(split["session"]["name"], "w2b");
    assert!(h
        .error("create_layout", json!({"name": "x", "layout": "hexagon"}))
        .await
        .contains("unknown layout"));
    assert!(h
        .error(
            "create_layout",
            json!({"name": "x", "layout": "quad", "panes": [{"name": "lead"}]})
        )
        .await
        .contains("already exists"));
    // tmux shows a badge on the pane's border.
    h.ok("set_appearance", json!({"target": "lead", "badge": "LEAD"}))
        .await;
    assert!(h
        .error(
            "set_appearance",
            json!({"target": "lead", "tab_color": "red"})
        )
        .await
        .contains("#rrggbb"));
    h.ok(
        "set_appearance",
        json!({"target": "lead", "title": "the lead"}),
    )
    .await;
    h.ok("focus", json!({"target": "w1"})).await;
}

#[tokio::test]
async fn resources_and_prompts() {
    let h = harness(&Toolset::ALL).await;
    h.ok("open", json!({"name": "res"})).await;
    h.ok(
        "run",
        json!({"target": "res", "command": "echo resource-text"}),
    )
    .await;
    let listed = h.client.list_all_resources().await.unwrap();
    let uris: Vec<String> = listed.iter().map(|r| r.uri.clone()).collect();
    for uri in [
        "terminal://sessions",
        "agents://all",
        "teams://all",
        "terminal://res/screen",
        "terminal://res/output",
    ] {
        assert!(
            uris.contains(&uri.to_string()),
            "{uri} missing from {uris:?}"
        );
    }
    let read = |uri: &str| ReadResourceRequestParams::new(uri.to_string());
    let sessions = h
        .client
        .read_resource(read("terminal://sessions"))
        .await
        .unwrap();
    assert!(format!("{sessions:?}").contains("\\\"res\\\""));
    // JSON resources say so when read, as they do when listed.
    assert!(
        format!("{sessions:?}").contains("application/json"),
        "{sessions:?}"
    );
    let output = h
        .client
        .read_resource(read("terminal://res/output"))
        .await
        .unwrap();
    assert!(format!("{output:?}").contains("resource-text"));
    assert!(h
        .client
        .read_resource(read("terminal://ghost/screen"))
        .await
        .is_err());
    let prompts = h.client.list_all_prompts().await.unwrap();
    assert_eq!(prompts.len(), 3);
    h.ok("create_team", json!({"name": "crew"})).await;
    let mut args = serde_json::Map::new();
    args.insert("team".into(), json!("crew"));
    let prompt = h
        .client
        .get_prompt(GetPromptRequestParams::new("monitor_team").with_arguments(args))
        .await
        .unwrap();
    assert!(format!("{prompt:?}").contains("read_many"));
}

#[tokio::test]
async fn long_runs_report_progress_and_cancelling_leaves_the_pane_alone() {
    let h = harness(&Toolset::ALL).await;
    h.ok("open", json!({"name": "slow"})).await;
    let out = h
        .ok(
            "run",
            json!({"target": "slow", "command": "sleep 2.5; echo slept"}),
        )
        .await;
    assert_eq!(out["verdict"]["layer"], "exit");
    assert!(
        h.progress.load(Ordering::SeqCst) >= 2,
        "progress notifications: {}",
        h.progress.load(Ordering::SeqCst)
    );

    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params(
        "run",
        json!({"target": "slow", "command": "sleep 30"}),
    )));
    let handle = h
        .client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let status = h.ok("status", json!({"target": "slow"})).await;
        if status["session"]["foreground"] == "sleep" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "sleep never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.cancel(Some("changed my mind".into())).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The command was not interrupted: the pane is as it was.
    let status = h.ok("status", json!({"target": "slow"})).await;
    assert_eq!(status["session"]["foreground"], "sleep");
    h.ok("key", json!({"target": "slow", "keys": ["C-c"]}))
        .await;
}

/// A small deterministic generator for argument fuzzing.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn value(&mut self, depth: u32) -> Value {
        match self.next() % if depth > 2 { 7 } else { 9 } {
            0 => Value::Null,
            1 => json!(self.next().is_multiple_of(2)),
            2 => json!(self.next() as i64),
            3 => json!(-(self.next() as i64 % 1000)),
            4 => json!(1.5e300),
            5 => json!(
                ["é", "日本", "\u{0}", "\u{1b}[201~", "%9999", "../../etc"]
                    [self.next() as usize % 6]
            ),
            6 => json!("x".repeat((self.next() % 5000) as usize)),
            7 => Value::Array(
                (0..self.next() % 4)
                    .map(|_| self.value(depth + 1))
                    .collect(),
            ),
            _ => Value::Object(
                (0..self.next() % 4)
                    .map(|i| (format!("k{i}"), self.value(depth + 1)))
                    .collect(),
            ),
        }
    }
}

#[tokio::test]
async fn argument_decoding_never_breaks_the_server() {
    let h = harness(&Toolset::ALL).await;
    let tools = h.client.list_all_tools().await.unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut calls = 0;
    for tool in &tools {
        // Tools that create sessions are left out so no fuzzed text reaches a shell.
        if ["open", "create_layout", "split"].contains(&tool.name.as_ref()) {
            continue;
        }
        let props: Vec<String> = tool
            .input_schema
            .get("properties")
            .and_then(|p| p.as_object())
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        for _ in 0..12 {
            let mut args = serde_json::Map::new();
            for p in &props {
                if !rng.next().is_multiple_of(3) {
                    args.insert(p.clone(), rng.value(0));
                }
            }
            if rng.next().is_multiple_of(5) {
                args.insert("unexpected".into(), rng.value(0));
            }
            let result = h
                .client
                .call_tool(
                    CallToolRequestParams::new(tool.name.clone()).with_arguments(args.clone()),
                )
                .await;
            match result {
                Ok(r) => assert!(
                    r.is_error == Some(true) || r.structured_content.is_some(),
                    "{}: {r:?}",
                    tool.name
                ),
                Err(e) => panic!(
                    "{} {:?}: protocol error {e}",
                    tool.name,
                    Value::Object(args)
                ),
            }
            calls += 1;
        }
    }
    assert!(calls > 200);
    // Still answering.
    h.ok("list", json!({})).await;
}

#[tokio::test]
async fn a_misspelled_argument_is_named_not_ignored() {
    let h = harness(&Toolset::ALL).await;
    // `text` where broadcast takes `message`: refused with both names, so the caller
    // is not left wondering why nothing was sent.
    let e = h.error("broadcast", json!({"text": "hello"})).await;
    assert!(
        e.contains("unknown field `text`") && e.contains("message"),
        "{e}"
    );
    let e = h
        .error(
            "create_layout",
            json!({"name": "w", "panes": [{"nmae": "a"}]}),
        )
        .await;
    assert!(e.contains("unknown field `nmae`"), "{e}");
}

#[tokio::test]
async fn read_waits_for_what_send_started_and_for_a_run_that_timed_out() {
    let h = harness(&Toolset::ALL).await;
    h.ok("open", json!({"name": "later"})).await;

    // send starts something long; read with wait is how to learn it ended.
    h.ok(
        "send",
        json!({"target": "later", "text": "sleep 0.5; echo done-$((6*7)); false"}),
    )
    .await;
    let out = h
        .ok(
            "read",
            json!({"target": "later", "wait": true, "timeout_ms": 10000}),
        )
        .await;
    assert_eq!(out["verdict"]["complete"], true, "{out}");
    assert_eq!(out["verdict"]["layer"], "exit");
    assert_eq!(out["verdict"]["exit_status"], 1);
    assert!(out["output"].as_str().unwrap().contains("done-42"), "{out}");

    // run gives up at its timeout; read with wait picks the same command up.
    let out = h
        .ok(
            "run",
            json!({"target": "later", "command": "sleep 1; echo finally", "timeout_ms": 100}),
        )
        .await;
    assert_eq!(out["verdict"]["layer"], "timeout");
    let out = h
        .ok(
            "read",
            json!({"target": "later", "wait": true, "until": "finally"}),
        )
        .await;
    assert_eq!(out["verdict"]["complete"], true, "{out}");
    assert!(out["output"].as_str().unwrap().contains("finally"), "{out}");
    assert!(out["meta"].as_str().unwrap().contains("complete"), "{out}");

    // What a run returned is not new to the next read: after a run and a run that
    // timed out, read picks up only the rest.
    h.ok("open", json!({"name": "fresh"})).await;
    h.ok(
        "run",
        json!({"target": "fresh", "command": "echo early-output"}),
    )
    .await;
    h.ok(
        "run",
        json!({"target": "fresh", "command": "sleep 0.5; echo late-output", "timeout_ms": 100}),
    )
    .await;
    let out = h
        .ok(
            "read",
            json!({"target": "fresh", "wait": true, "until": "late-output"}),
        )
        .await;
    let text = out["output"].as_str().unwrap();
    assert!(
        text.contains("late-output") && !text.contains("early-output"),
        "{out}"
    );

    // The screen, too, carries the verdict with its hint.
    h.ok("send", json!({"target": "later", "text": "sleep 5"}))
        .await;
    let out = h
        .ok(
            "read",
            json!({"target": "later", "mode": "screen", "wait": true, "timeout_ms": 200}),
        )
        .await;
    assert_eq!(out["verdict"]["layer"], "timeout", "{out}");
    let meta = out["meta"].as_str().unwrap();
    assert!(
        meta.starts_with("[screen ") && meta.contains("still running"),
        "{meta}"
    );
    h.ok("key", json!({"target": "later", "keys": ["C-c"]}))
        .await;

    // Waiting settings without wait are a mistake worth naming.
    let e = h
        .error("read", json!({"target": "later", "until": "x"}))
        .await;
    assert!(e.contains("wait: true"), "{e}");
    // Without wait, read answers at once and carries no verdict.
    let out = h.ok("read", json!({"target": "later"})).await;
    assert!(out.get("verdict").is_none(), "{out}");
}

#[tokio::test]
async fn a_command_that_ends_at_once_is_reported_by_open() {
    let h = harness(&Toolset::ALL).await;
    let opened = h
        .ok(
            "open",
            json!({"name": "typo", "command": "/no/such/binary --serve"}),
        )
        .await;
    let notice = opened["notice"].as_str().unwrap_or_default();
    assert!(
        notice.contains("ended at once with status 127") && notice.contains("not found"),
        "{opened}"
    );
    assert_eq!(opened["session"]["exited"], true, "{opened}");

    // A command that keeps running is answered without a notice.
    let opened = h
        .ok("open", json!({"name": "server", "command": "sleep 30"}))
        .await;
    assert!(opened.get("notice").is_none(), "{opened}");
    assert_eq!(opened["session"]["exited"], false, "{opened}");
}

/// A person's own window beside cohort's sessions is listed only when asked for,
/// refused as a target (nothing is typed into it) with the way to adopt it, and a
/// session like any other once adopted.
#[tokio::test]
async fn a_persons_window_is_used_only_once_adopted() {
    let h = harness(&Toolset::ALL).await;
    h.ok("open", json!({"name": "mine"})).await;
    let pane = h._server.persons_window("notes");
    let pane = pane.as_str();
    let listed = h.ok("list", json!({})).await;
    let sessions = listed["sessions"].as_array().unwrap();
    assert!(!sessions.iter().any(|s| s["pane"] == pane), "{listed}");
    assert!(
        sessions.iter().all(|s| s.get("owned").is_none()),
        "{listed}"
    );
    let all = h.ok("list", json!({"all": true})).await;
    let theirs = all["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["pane"] == pane)
        .unwrap_or_else(|| panic!("{pane} not listed with all: {all}"))
        .clone();
    assert_eq!(theirs["owned"], false, "{all}");
    assert_eq!(theirs["name"], "notes", "{all}");

    for (tool, args) in [
        (
            "send",
            json!({"target": pane, "text": "echo typed-$((20+3))"}),
        ),
        (
            "run",
            json!({"target": "notes", "command": "echo typed-$((20+3))"}),
        ),
        ("key", json!({"target": pane, "keys": ["C-c"]})),
        ("read", json!({"target": "notes"})),
        ("close", json!({"target": pane})),
    ] {
        let e = h.error(tool, args).await;
        assert!(
            e.contains("not one of cohort's sessions") && e.contains("adopt"),
            "{tool}: {e}"
        );
    }
    // Nothing reached the person's shell.
    let shown = std::process::Command::new("tmux")
        .args(["-L", &h._server.socket, "capture-pane", "-p", "-t", pane])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&shown.stdout).contains("typed-23"),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );

    let adopted = h.ok("adopt", json!({"pane": "notes"})).await;
    assert_eq!(adopted["session"]["name"], "notes", "{adopted}");
    assert_eq!(adopted["session"]["pane"], pane, "{adopted}");
    let run = h
        .ok(
            "run",
            json!({"target": "notes", "command": "echo adopted-$((6*7)); (exit 3)", "mark": true}),
        )
        .await;
    assert_eq!(run["verdict"]["exit_status"], 3, "{run}");
    assert!(
        run["output"].as_str().unwrap().contains("adopted-42"),
        "{run}"
    );
    let listed = h.ok("list", json!({})).await;
    assert!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["pane"] == pane),
        "{listed}"
    );
}

#[tokio::test]
async fn sessions_grouped_for_broadcast_take_each_others_keys() {
    let h = harness(&Toolset::ALL).await;
    h.ok(
        "create_layout",
        json!({"name": "hosts", "layout": "horizontal", "panes": [{"name": "web1"}, {"name": "web2"}]}),
    )
    .await;
    h.ok("open", json!({"name": "db"})).await;
    let none = h.ok("broadcast_input", json!({})).await;
    assert_eq!(none["groups"], json!([]), "{none}");
    let e = h
        .error("broadcast_input", json!({"targets": ["web1", "db"]}))
        .await;
    assert!(
        e.contains("different windows") && e.contains("split"),
        "{e}"
    );
    let grouped = h
        .ok("broadcast_input", json!({"targets": ["web1", "web2"]}))
        .await;
    assert_eq!(
        grouped["groups"][0]["sessions"],
        json!(["web1", "web2"]),
        "{grouped}"
    );
    assert!(
        grouped["note"].as_str().unwrap().contains("alone"),
        "{grouped}"
    );
    let status = h.ok("status", json!({"target": "web2"})).await;
    assert_eq!(
        status["session"]["broadcast_group"],
        json!(["web1", "web2"]),
        "{status}"
    );

    let sent = h
        .ok(
            "send",
            json!({"target": "web1", "text": "echo to-all-$((7*6))"}),
        )
        .await;
    assert_eq!(sent["also"], json!(["web2"]), "{sent}");
    h.screen_until("web2", |s| s.contains("to-all-42")).await;
    let alone = h
        .ok(
            "send",
            json!({"target": "web1", "text": "echo only-here-$((2*2))", "alone": true}),
        )
        .await;
    assert!(alone.get("also").is_none(), "{alone}");
    h.screen_until("web1", |s| s.contains("only-here-4")).await;
    // Once web2 has run something after, its screen shows all it was sent.
    h.ok(
        "run",
        json!({"target": "web2", "command": "echo web2-settled"}),
    )
    .await;
    let web2 = h.screen_until("web2", |s| s.contains("web2-settled")).await;
    assert!(!web2.contains("only-here-4"), "{web2}");
    let pressed = h
        .ok("key", json!({"target": "web2", "keys": ["C-l"]}))
        .await;
    assert_eq!(pressed["also"], json!(["web1"]), "{pressed}");

    let off = h
        .ok("broadcast_input", json!({"targets": ["web1"], "off": true}))
        .await;
    assert_eq!(off["groups"], json!([]), "{off}");
    let sent = h
        .ok("send", json!({"target": "web1", "text": "echo after"}))
        .await;
    assert!(sent.get("also").is_none(), "{sent}");
    let e = h.error("broadcast_input", json!({"off": true})).await;
    assert!(e.contains("targets"), "{e}");
}

#[tokio::test]
async fn a_hidden_session_is_listed_hidden_and_still_runs() {
    let h = harness(&Toolset::ALL).await;
    h.ok("open", json!({"name": "quiet"})).await;
    let e = h.error("hide", json!({"targets": []})).await;
    assert!(e.contains("targets"), "{e}");
    let hidden = h.ok("hide", json!({"targets": ["quiet"]})).await;
    assert_eq!(hidden["sessions"][0]["hidden"], true, "{hidden}");
    let listed = h.ok("list", json!({})).await;
    let row = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "quiet")
        .unwrap_or_else(|| panic!("a hidden session is still listed: {listed}"))
        .clone();
    assert_eq!(row["hidden"], true, "{listed}");
    let run = h
        .ok(
            "run",
            json!({"target": "quiet", "command": "echo unseen-$((4*5))"}),
        )
        .await;
    assert!(
        run["output"].as_str().unwrap().contains("unseen-20"),
        "{run}"
    );
    let shown = h
        .ok("hide", json!({"targets": ["quiet"], "show": true}))
        .await;
    assert!(shown["sessions"][0].get("hidden").is_none(), "{shown}");
    let e = h.error("hide", json!({"targets": ["nobody"]})).await;
    assert!(e.contains("nobody"), "{e}");
}

#[tokio::test]
async fn a_teams_variables_reach_its_new_panes() {
    let h = harness(&Toolset::ALL).await;
    let made = h
        .ok(
            "create_team",
            json!({"name": "ops", "env": {"REGION": "eu-west", "TIER": "2"}}),
        )
        .await;
    assert_eq!(made["teams"][0]["env"]["REGION"], "eu-west", "{made}");
    assert!(made["teams"][0]["colour"].as_str().is_some(), "{made}");
    let e = h
        .error(
            "create_team",
            json!({"name": "ops", "env": {"COHORT_SESSION": "x"}}),
        )
        .await;
    assert!(e.contains("COHORT_SESSION"), "{e}");
    h.ok(
        "create_layout",
        json!({"name": "opsdesk", "layout": "single", "panes": [{"name": "ops-1", "agent": "opsbot", "team": "ops"}]}),
    )
    .await;
    let run = h
        .ok(
            "run",
            json!({"target": "ops-1", "command": "echo \"$REGION/$TIER\""}),
        )
        .await;
    assert!(
        run["output"].as_str().unwrap().contains("eu-west/2"),
        "{run}"
    );
    let listed = h.ok("list_teams", json!({})).await;
    let ops = listed["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ops")
        .unwrap()
        .clone();
    assert_eq!(
        ops["env"],
        json!({"REGION": "eu-west", "TIER": "2"}),
        "{listed}"
    );
    assert_eq!(ops["alerts"], false, "{listed}");
    let loud = h
        .ok("create_team", json!({"name": "ops", "alerts": true}))
        .await;
    assert_eq!(loud["teams"][0]["alerts"], true, "{loud}");
    // Variables given before stay when only alerts change.
    assert_eq!(loud["teams"][0]["env"]["REGION"], "eu-west", "{loud}");
}

#[tokio::test]
async fn an_arrangement_is_saved_listed_restored_and_deleted() {
    let h = harness(&Toolset::ALL).await;
    h.ok(
        "create_layout",
        json!({"name": "bench", "layout": "horizontal", "panes": [{"name": "left"}, {"name": "right"}]}),
    )
    .await;
    let e = h
        .error("arrange", json!({"action": "save", "name": "b1"}))
        .await;
    assert!(e.contains("targets"), "{e}");
    let saved = h
        .ok(
            "arrange",
            json!({"action": "save", "name": "b1", "targets": ["left"]}),
        )
        .await;
    assert_eq!(
        saved["arrangements"][0]["windows"][0]["sessions"],
        json!(["left", "right"]),
        "{saved}"
    );
    let e = h
        .error("arrange", json!({"action": "restore", "name": "b1"}))
        .await;
    assert!(e.contains("close them first"), "{e}");
    for name in ["left", "right"] {
        h.ok("close", json!({"target": name})).await;
    }
    let restored = h
        .ok("arrange", json!({"action": "restore", "name": "b1"}))
        .await;
    let opened: Vec<&str> = restored["opened"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(opened, ["left", "right"], "{restored}");
    let listed = h.ok("arrange", json!({})).await;
    assert_eq!(listed["arrangements"][0]["name"], "b1", "{listed}");
    h.ok("arrange", json!({"action": "delete", "name": "b1"}))
        .await;
    let e = h
        .error("arrange", json!({"action": "restore", "name": "b1"}))
        .await;
    assert!(e.contains("no arrangement"), "{e}");
}
