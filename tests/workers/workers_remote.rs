//! Workers on a remote host: a fake Claude Code spawned through the MCP tools on a
//! host behind a real OpenSSH server, in a worktree made there from the repository
//! there, its hooks reaching cohort through that host's tmux (nothing of cohort
//! installed there but what cohort writes itself), its turns ending waits without
//! polling, its changes examined there, and nothing of it left on the host once
//! closed.

use std::sync::Arc;

use cohort::engine::Engine;
use cohort::mcp::{CohortServer, Toolset};
use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::agents::{answer, demo_repo, git, Agents};
use crate::ssh_support::SshServer;
use crate::support::TestServer;
use crate::workers::names;

/// An engine over this machine's tmux and the ssh server's host, declared as `far`.
async fn engine_with_far(local: &TestServer, ssh: &SshServer) -> Engine {
    let backend = Arc::new(cohort_backends::hosts::Hosts::new(
        Arc::new(local.backend().await),
        cohort_backends::tmux::config::TmuxConfig::new(local.state_dir().join("remote-template")),
        vec![ssh.host("far")],
    ));
    let engine = Engine::with_backend(backend, local.state_dir(), &local.socket).expect("engine");
    engine
        .workers
        .configure_workers(|s| s.program = Some(env!("CARGO_BIN_EXE_cohort").into()));
    engine
}

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    name: &'static str,
    args: Value,
) -> rmcp::model::CallToolResult {
    let what = format!("{name} {args}");
    crate::support::answered(
        &what,
        client.call_tool(
            CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone()),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("{what}: {e}"))
}

async fn ok(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    name: &'static str,
    args: Value,
) -> Value {
    let r = call(client, name, args.clone()).await;
    assert_ne!(r.is_error, Some(true), "{name} {args}: {r:?}");
    r.structured_content.unwrap_or(Value::Null)
}

/// Waits until the workers' hooks of `local`'s state directory recorded `event` at
/// least `count` times: what the agent's hooks on the host said reached cohort.
async fn hooks_reported(local: &TestServer, event: &str, count: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let needle = format!("\"event\":\"{event}\"");
    loop {
        let seen: usize = std::fs::read_dir(local.state_dir().join("workers"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("events.jsonl")).ok())
            .map(|text| text.matches(&needle).count())
            .sum();
        if seen >= count {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{seen} {event} hook events recorded, {count} awaited"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Every path under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

/// A remote host on a real sshd, declared as `far` to an engine on this machine's
/// tmux, and a manager's MCP client of that engine.
struct Far {
    ssh: SshServer,
    local: TestServer,
    engine: Engine,
    client: rmcp::service::RunningService<rmcp::RoleClient, ()>,
}

impl Far {
    /// `None` (with the reason said) on a machine without OpenSSH's server.
    async fn start() -> Option<Far> {
        let ssh = SshServer::start()?;
        let local = TestServer::new();
        let engine = engine_with_far(&local, &ssh).await;
        let client = client_of(&engine).await;
        Some(Far {
            ssh,
            local,
            engine,
            client,
        })
    }
}

/// An MCP client talking to `engine` in-process.
async fn client_of(engine: &Engine) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let (a, b) = tokio::io::duplex(1 << 20);
    let server = CohortServer::with_toolsets(engine.clone(), &Toolset::ALL);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(a).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(b).await.expect("initialize")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_worker_on_a_remote_host_reports_through_its_notify_program_and_hooks() {
    let Some(Far {
        ssh,
        local,
        engine: _engine,
        client,
    }) = Far::start().await
    else {
        return;
    };
    let agents = Agents::new();
    std::fs::create_dir_all(ssh.home().join("scratch")).unwrap();
    let spawned = ok(
        &client,
        "spawn_workers",
        json!({"host": "far", "workers": [{"name": "Cody", "agent": "codex",
            "project_path": "~/scratch", "env": agents.env_json(&[]),
            "setup": "echo ran > setup-ran.txt; echo set up there",
            "prompt": "first task"}]}),
    )
    .await;
    assert_eq!(spawned["workers"][0]["host"], "far", "{spawned}");
    // Its setup script ran on the host, in its directory there.
    assert!(ssh.home().join("scratch/setup-ran.txt").is_file());
    assert_eq!(spawned["workers"][0]["setup"], "set up there", "{spawned}");
    let first = ok(&client, "wait_idle_workers", json!({"timeout": 30})).await;
    assert_eq!(names(&first["idle"]), vec!["Cody".to_string()], "{first}");
    let second = "second task [[work 300]]";
    let sent = ok(
        &client,
        "message_workers",
        json!({"session_ids": ["Cody"], "message": second, "wait_mode": "all", "timeout": 30}),
    )
    .await;
    assert_eq!(sent["wait"]["all_idle"], true, "{sent}");
    let x = ok(&client, "examine_worker", json!({"session_id": "Cody"})).await;
    hooks_reported(&local, "Stop", 2).await;
    hooks_reported(&local, "notify", 2).await;
    assert!(
        ["hook", "transcript"].contains(&x["signal"].as_str().unwrap_or("")),
        "{x}"
    );
    assert!(format!("{x}").contains(&answer(second)), "{x}");
    // Its hooks file, written there by cohort, goes with nothing else of the user's.
    assert!(ssh.home().join("scratch/.codex/hooks.json").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_on_a_remote_host_reports_its_turns_through_its_hooks() {
    let Some(Far {
        ssh,
        local,
        engine,
        client,
    }) = Far::start().await
    else {
        return;
    };
    let agents = Agents::new();
    // The project is a repository of the far side's (in its own home here), with an
    // untracked file its `.worktreeinclude` names.
    let project = demo_repo(&ssh.home().join("project"));
    std::fs::write(project.join(".env.local"), "LOCAL=1\n").unwrap();
    let worktree = project.join(".worktrees/remo");

    let spawned = ok(
        &client,
        "spawn_workers",
        json!({"host": "far", "workers": [{"name": "Remo", "agent": "claude",
            "project_path": "project", "env": agents.env_json(&[]),
            "prompt": "first task"}]}),
    )
    .await;
    let worker = &spawned["workers"][0];
    assert_eq!(worker["host"], "far", "{spawned}");
    assert_eq!(worker["branch"], "cohort/remo", "{spawned}");
    for included in [".env", ".env.local"] {
        assert!(
            worktree.join(included).is_file(),
            "the worktree on the host, with the included {included}: {spawned}"
        );
    }
    assert!(
        worker["pane"]
            .as_str()
            .is_none_or(|p| p.starts_with("far:")),
        "{spawned}"
    );

    // The first turn ends; the agent said so through its Stop hook on the host.
    let first = ok(&client, "wait_idle_workers", json!({"timeout": 30})).await;
    assert_eq!(names(&first["idle"]), vec!["Remo".to_string()], "{first}");
    let listed = ok(&client, "list_workers", json!({"verbose": true})).await;
    let remo = &listed["workers"][0];
    assert_eq!(remo["host"], "far", "{listed}");
    hooks_reported(&local, "Stop", 1).await;
    assert!(
        ["hook", "transcript"].contains(&remo["signal"].as_str().unwrap_or("")),
        "{listed}"
    );
    assert_eq!(remo["worktree"].as_str(), worktree.to_str(), "{listed}");

    // A second turn: the wait ends on its Stop hook, with the agent's last words.
    let second = "second task [[work 400]]";
    let sent = ok(
        &client,
        "message_workers",
        json!({"session_ids": ["Remo"], "message": second, "wait_mode": "all", "timeout": 30}),
    )
    .await;
    assert_eq!(sent["results"][0]["status"], "submitted", "{sent}");
    assert_eq!(sent["wait"]["all_idle"], true, "{sent}");
    std::fs::write(worktree.join("notes.txt"), "x\n").unwrap();
    let x = ok(&client, "examine_worker", json!({"session_id": "Remo"})).await;
    assert_eq!(x["state"], "idle", "{x}");
    hooks_reported(&local, "Stop", 2).await;
    assert!(
        ["hook", "transcript"].contains(&x["signal"].as_str().unwrap_or("")),
        "{x}"
    );
    assert!(
        x["diff_stat"].as_str().unwrap().contains("1 untracked"),
        "git on the host: {x}"
    );
    assert_eq!(x["dirty_files"], 1, "{x}");
    // Its transcript, read on the host: the last turn whole, what it spent.
    assert!(
        x["last_turn"]
            .as_str()
            .unwrap_or("")
            .contains(&answer(second)),
        "{x}"
    );
    assert_eq!(x["usage"]["model"], "claude-opus-4-8", "{x}");
    let logs = ok(
        &client,
        "read_worker_logs",
        json!({"session_id": "Remo", "pages": 2}),
    )
    .await;
    assert!(format!("{logs}").contains(&answer("first task")), "{logs}");
    assert!(
        format!("{x}").contains(&answer(second)),
        "the last message of the turn comes from its Stop hook: {x}"
    );

    // Its work, committed on its branch there, is merged there: a new branch made
    // in a scratch worktree on the host, the check run there.
    git(&worktree, &["add", "notes.txt"]);
    git(&worktree, &["commit", "-q", "-m", "notes"]);
    let merged = ok(
        &client,
        "merge_workers",
        json!({"session_ids": ["Remo"], "branch": "cohort/merged", "check": "test -f notes.txt && echo checked there"}),
    )
    .await;
    assert_eq!(merged["complete"], true, "{merged}");
    assert_eq!(merged["steps"][0]["outcome"], "merged", "{merged}");
    assert!(
        git(&project, &["log", "--oneline", "cohort/merged"]).contains("Merge worker Remo"),
        "the merge is on the host's repository"
    );
    let failed = ok(
        &client,
        "merge_workers",
        json!({"session_ids": ["Remo"], "branch": "cohort/failed", "check": "echo failing there; exit 4"}),
    )
    .await;
    assert_eq!(failed["steps"][0]["outcome"], "check_failed", "{failed}");
    assert!(format!("{failed}").contains("failing there"), "{failed}");

    // Its approval policy answers a permission request through the hook there.
    let set = ok(
        &client,
        "approve_workers",
        json!({"session_ids": ["Remo"], "policy": {"allow": ["Bash(touch *)"]}, "by": "lead"}),
    )
    .await;
    assert_eq!(set["policy_set"], json!(["Remo"]), "{set}");
    let r = ok(
        &client,
        "message_workers",
        json!({"session_ids": ["Remo"], "message": "[[approval]] make a file", "wait_mode": "all", "timeout": 30}),
    )
    .await;
    assert_eq!(r["wait"]["needs_approval"], json!([]), "{r}");
    assert_eq!(r["wait"]["all_idle"], true, "{r}");
    assert!(worktree.join("approved.txt").is_file(), "not allowed: {r}");
    // The decision is recorded in the request's place, and nothing waits on the host.
    hooks_reported(&local, "PolicyDecision", 1).await;
    let far_dir = ssh.home().join(".local/state/cohort/workers");
    let leftovers: Vec<_> = walk(&far_dir)
        .into_iter()
        .filter(|p| {
            p.to_string_lossy().contains(".reply") || p.to_string_lossy().contains(".claim")
        })
        .collect();
    assert!(leftovers.is_empty(), "left on the host: {leftovers:?}");
    std::fs::remove_file(worktree.join("approved.txt")).unwrap();

    // Its pane dies (the host rebooted under it): adopting it restarts it there, in
    // its worktree, its session resumed from its transcript on the host.
    let pane = remo["pane"].as_str().expect("its pane").to_string();
    engine
        .terminal
        .backend()
        .close(&cohort_backends::PaneId::new(pane))
        .await
        .expect("close its pane");
    let adopted = ok(&client, "adopt_worker", json!({"session_id": "Remo"})).await;
    assert_eq!(adopted["restarted"], true, "{adopted}");
    assert_eq!(adopted["host"], "far", "{adopted}");
    assert!(
        adopted["pane"]
            .as_str()
            .is_some_and(|p| p.starts_with("far:")),
        "{adopted}"
    );
    let third = "third task";
    let sent = ok(
        &client,
        "message_workers",
        json!({"session_ids": ["Remo"], "message": third, "wait_mode": "all", "timeout": 30}),
    )
    .await;
    assert_eq!(sent["wait"]["all_idle"], true, "{sent}");
    let logs = ok(
        &client,
        "read_worker_logs",
        json!({"session_id": "Remo", "pages": 5}),
    )
    .await;
    let logs = format!("{logs}");
    assert!(
        logs.contains(&answer("first task")) && logs.contains(&answer(third)),
        "the session resumed: {logs}"
    );

    // Closed: its pane, its worktree (with the uncommitted file: forced), and its
    // directory on the host with its settings. Its branch stays.
    let far_workers = ssh.home().join(".local/state/cohort/workers");
    assert_eq!(
        std::fs::read_dir(&far_workers)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().is_dir())
            .count(),
        1,
        "one worker's directory on the host"
    );
    ok(
        &client,
        "close_workers",
        json!({"session_ids": ["Remo"], "force": true, "remove_worktree": true}),
    )
    .await;
    let left: Vec<_> = std::fs::read_dir(&far_workers)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left on the host: {left:?}");
    assert!(!worktree.exists(), "the worktree on the host was removed");
    assert!(git(&project, &["branch", "--list", "cohort/remo"]).contains("cohort/remo"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_workers_refuse_what_the_host_cannot_give_and_say_why() {
    let Some(Far {
        ssh: _ssh,
        local: _local,
        engine: _engine,
        client,
    }) = Far::start().await
    else {
        return;
    };
    for (worker, says) in [
        (
            json!({"agent": "claude", "project_path": "no/such/dir"}),
            "is not a directory on far",
        ),
        (
            json!({"agent": "claude", "project_path": ".", "use_worktree": true}),
            "is not in a git repository",
        ),
        (
            json!({"agent": "claude", "project_path": ".", "setup": "echo broken there; exit 3"}),
            "broken there",
        ),
        (
            json!({"agent": "claude", "project_path": "-x"}),
            "is not a directory on far",
        ),
    ] {
        let r = call(
            &client,
            "spawn_workers",
            json!({"host": "far", "workers": [worker]}),
        )
        .await;
        assert_eq!(r.is_error, Some(true), "{r:?}");
        assert!(format!("{r:?}").contains(says), "{says}: {r:?}");
    }
}
