//! Kill cohort mid-run: a `cohort mcp` process spawns workers, leaves one busy and a
//! message held for another, and is killed (SIGKILL); two workers' panes die too, as
//! after a reboot. A new `cohort mcp` process finds every worker with
//! `discover_workers` and takes each over with `adopt_worker`: the live ones with
//! their state, transcript and worktree (the held message is delivered), the dead
//! ones restarted in their worktrees with their sessions resumed. On tmux and on the
//! fake iTerm2.

use std::process::Stdio;
use std::time::Duration;

use crate::{
    agents::{answer, Agents},
    terminals::{Terminal, Which},
};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

/// A `cohort mcp` process on the test's terminal.
struct Cohort {
    child: tokio::process::Child,
    client: RunningService<RoleClient, ()>,
    which: Which,
}

impl Cohort {
    async fn start(terminal: &Terminal) -> Cohort {
        let (state, _) = terminal.engine_home();
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_cohort"));
        cmd.args(["mcp", "--toolsets", "core,workers"])
            .env("COHORT_STATE_DIR", &state)
            .env_remove("TMUX")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        match terminal {
            Terminal::Tmux(server) => {
                cmd.env("COHORT_BACKEND", "tmux")
                    .env("COHORT_TMUX_SOCKET", &server.socket);
            }
            Terminal::Iterm2(fake) => {
                cmd.env("COHORT_BACKEND", "iterm2")
                    .env("COHORT_ITERM2_SOCKET", fake.socket())
                    .env("ITERM2_COOKIE", fake.server.issue_reusable_cookie());
            }
            Terminal::Ssh(..) => unreachable!("the recovery scenarios run on local terminals"),
        }
        let mut child = cmd.spawn().expect("cohort mcp");
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        let client = ().serve((stdout, stdin)).await.expect("initialize");
        Cohort {
            child,
            client,
            which: terminal.which(),
        }
    }

    async fn ok(&self, name: &str, args: Value) -> Value {
        let r = self
            .client
            .call_tool(
                CallToolRequestParams::new(name.to_string())
                    .with_arguments(args.as_object().cloned().unwrap()),
            )
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_ne!(
            r.is_error,
            Some(true),
            "{:?}: {name} {args}: {r:?}",
            self.which
        );
        r.structured_content.unwrap_or(Value::Null)
    }

    fn kill(&mut self) {
        let pid = self.child.id().expect("running") as i32;
        // SAFETY: SIGKILL to the child this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

async fn killed_mid_run(which: Which) {
    let terminal = Terminal::start(which).await;
    // Start the terminal server before either cohort process.
    let backend = terminal.backend().await;
    let agents = Agents::new();
    let repo = agents.repo("crash");
    let spec = |name: &str, agent: &str| {
        json!({"name": name, "agent": agent, "project_path": repo.display().to_string(),
               "prompt": format!("first task for {name}"), "team": "crew", "env": agents.env_json(&[])})
    };
    let mut first = Cohort::start(&terminal).await;
    let spawned = first
        .ok(
            "spawn_workers",
            json!({"workers": [spec("busy", "claude"), spec("holder", "codex"), spec("lost", "claude"), spec("gone", "codex")]}),
        )
        .await;
    for w in spawned["workers"].as_array().unwrap() {
        assert!(w["error"].is_null(), "{which:?}: {w}");
    }
    let all = ["busy", "holder", "lost", "gone"];
    first.ok("wait_idle_workers", json!({"timeout": 60})).await;
    first
        .ok(
            "message_workers",
            json!({"session_ids": ["busy"], "message": "[[work 3000]] a long job"}),
        )
        .await;
    first
        .ok(
            "message_workers",
            json!({"session_ids": ["holder"], "message": "[[work 3000]] another long job"}),
        )
        .await;
    let held = first
        .ok(
            "message_workers",
            json!({"session_ids": ["holder"], "message": "held for later"}),
        )
        .await;
    assert_eq!(held["results"][0]["status"], "held", "{held}");
    let before = first.ok("list_workers", json!({"verbose": true})).await;
    let panes: Vec<(String, String)> = before["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["name"].as_str().unwrap().to_string(),
                w["pane"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let transcripts: Vec<(String, Value)> = before["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["name"].as_str().unwrap().to_string(),
                w["transcript"].clone(),
            )
        })
        .collect();

    // The crash: cohort dies mid-run, and two panes die with the machine.
    first.kill();
    let _ = first.child.wait().await;
    for (name, pane) in &panes {
        if name == "lost" || name == "gone" {
            backend
                .close(&cohort_backends::PaneId::new(pane.clone()))
                .await
                .expect("close pane");
        }
    }

    let second = Cohort::start(&terminal).await;
    let found = second.ok("discover_workers", json!({})).await;
    let found = found["workers"].as_array().unwrap().clone();
    for name in all {
        let f = found
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("{which:?}: {name} not found: {found:?}"));
        assert_eq!(f["standing"], "orphaned", "{which:?}: {f}");
        assert_eq!(
            f["pane"].is_null(),
            name == "lost" || name == "gone",
            "{which:?}: {f}"
        );
    }
    for name in all {
        let adopted = second.ok("adopt_worker", json!({"session_id": name})).await;
        assert_eq!(adopted["name"], name);
        assert_eq!(
            adopted["restarted"],
            name == "lost" || name == "gone",
            "{which:?}: {adopted}"
        );
        // A restart says what the agent had exited with.
        assert_eq!(
            adopted["had_exited"].as_str(),
            (name == "lost" || name == "gone").then_some("its pane is gone"),
            "{which:?}: {adopted}"
        );
        let worktree = std::path::PathBuf::from(adopted["worktree"].as_str().unwrap());
        assert!(worktree.join(".env").exists(), "{which:?}: {adopted}");
        let transcript = &transcripts.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!(
            &adopted["transcript"], transcript,
            "{which:?}: the same transcript, resumed: {adopted}"
        );
        if name == "busy" {
            assert_eq!(adopted["state"], "busy", "{which:?}: {adopted}");
        }
    }
    // Every worker settles, and the message the dead process held is delivered.
    let done = second.ok("wait_idle_workers", json!({"timeout": 60})).await;
    assert_eq!(done["all_idle"], true, "{which:?}: {done}");
    let logs = second
        .ok(
            "read_worker_logs",
            json!({"session_id": "holder", "pages": 3}),
        )
        .await;
    let text = logs["output"].as_str().unwrap();
    assert!(
        text.contains(&answer("held for later")),
        "{which:?}: {text}"
    );
    let logs = second
        .ok("read_worker_logs", json!({"session_id": "busy"}))
        .await;
    assert!(
        logs["output"]
            .as_str()
            .unwrap()
            .contains(&answer("[[work 3000]] a long job")),
        "{which:?}: {logs}"
    );
    // The restarted workers continue their sessions: their earlier turns are there.
    second
        .ok("message_workers", json!({"session_ids": ["lost", "gone"], "message": "after the restart", "wait_mode": "all", "timeout": 60}))
        .await;
    for name in ["lost", "gone"] {
        let logs = second
            .ok("read_worker_logs", json!({"session_id": name, "pages": 5}))
            .await;
        let text = logs["output"].as_str().unwrap();
        assert!(
            text.contains(&answer(&format!("first task for {name}"))),
            "{which:?} {name}: {text}"
        );
        assert!(
            text.contains(&answer("after the restart")),
            "{which:?} {name}: {text}"
        );
    }
    let closed = second
        .ok(
            "close_workers",
            json!({"session_ids": all, "remove_worktree": true}),
        )
        .await;
    for c in closed["results"].as_array().unwrap() {
        assert_eq!(c["worktree_removed"], true, "{which:?}: {c}");
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_run_on_tmux() {
    killed_mid_run(Which::Tmux).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_run_on_iterm2() {
    killed_mid_run(Which::Iterm2).await;
}

/// Starts `spawn_workers` for two claude workers in `repo` through `cohort`, in the
/// background, the second with a setup script that runs for `setup_secs`; returns
/// once that script has started (the first worker is planned, no pane is open yet).
async fn spawn_two_second_slow(
    cohort: &Cohort,
    agents: &Agents,
    repo: &std::path::Path,
    names: [&str; 2],
    setup_secs: u32,
) -> tokio::task::JoinHandle<Result<rmcp::model::CallToolResult, rmcp::ServiceError>> {
    let started = repo.join("setup-started");
    let setup = format!("touch {}; sleep {setup_secs}", started.display());
    let spec = |name: &str, setup: Option<&str>| {
        json!({"name": name, "agent": "claude", "project_path": repo.display().to_string(),
               "setup": setup, "env": agents.env_json(&[])})
    };
    let args = json!({"workers": [spec(names[0], None), spec(names[1], Some(&setup))]});
    let peer = cohort.client.peer().clone();
    let spawn = tokio::spawn(async move {
        peer.call_tool(
            CallToolRequestParams::new("spawn_workers")
                .with_arguments(args.as_object().cloned().unwrap()),
        )
        .await
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the second worker's setup never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    spawn
}

/// A spawn prepares every worker (worktree, setup) before it opens their panes: a
/// worker looked at in between (here while the second worker's setup runs) is still
/// spawning, not exited for want of a pane, and comes up when the spawn ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_waiting_for_its_pane_is_spawning_not_exited() {
    let terminal = Terminal::start(Which::Tmux).await;
    let _backend = terminal.backend().await;
    let agents = Agents::new();
    let repo = agents.repo("waiting");
    let cohort = Cohort::start(&terminal).await;
    let spawn = spawn_two_second_slow(&cohort, &agents, &repo, ["first", "second"], 2).await;
    let listed = cohort.ok("list_workers", json!({})).await;
    let first = listed["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "first")
        .cloned()
        .unwrap_or_else(|| panic!("the first worker is not listed: {listed}"));
    assert_eq!(first["state"], "spawning", "{listed}");
    let spawned = spawn.await.unwrap().expect("spawn_workers answers");
    let spawned = spawned.structured_content.unwrap();
    for worker in spawned["workers"].as_array().unwrap() {
        assert_eq!(worker["state"], "ready", "{spawned}");
    }
}

/// A server killed in the middle of `spawn_workers` (here while the second worker's
/// setup script runs) leaves a worker that never started: the next server cleans it
/// up, so its name can be spawned again and no worktree of its is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spawn_cut_short_is_cleaned_up_by_the_next_server() {
    let terminal = Terminal::start(Which::Tmux).await;
    let _backend = terminal.backend().await;
    let agents = Agents::new();
    let repo = agents.repo("cut-short");
    let spec = |name: &str| {
        json!({"name": name, "agent": "claude", "project_path": repo.display().to_string(),
               "env": agents.env_json(&[])})
    };
    let mut first = Cohort::start(&terminal).await;
    let spawn = spawn_two_second_slow(&first, &agents, &repo, ["early", "late"], 30).await;
    first.kill();
    let _ = first.child.wait().await;
    spawn.abort();
    let worktree = repo.join(".worktrees").join("early");
    assert!(worktree.exists(), "the first worker's worktree was made");

    let second = Cohort::start(&terminal).await;
    let found = second.ok("discover_workers", json!({})).await;
    assert!(
        !found["workers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"] == "early"),
        "the half-spawned worker is still listed: {found}"
    );
    assert!(!worktree.exists(), "its worktree was left behind");
    let again = second
        .ok("spawn_workers", json!({"workers": [spec("early")]}))
        .await;
    assert_eq!(again["workers"][0]["state"], "ready", "{again}");
}
