//! Smoke tests with the real agent CLIs, where they are installed (`npm install -g
//! @anthropic-ai/claude-code @openai/codex`): cohort starts each as a worker in its
//! own worktree with the command line it builds (session id, per-launch settings,
//! hooks, notify), and the CLI must come up and draw its first screen rather than
//! reject that command line. Without an account or a network the first screen is a
//! sign-in page or a connection error (the CLI may then exit, and cohort must say
//! so), so nothing further is asked. Skipped, with a notice, when a CLI is not on
//! the PATH.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::{terminals::Which, workers::Manager};
use serde_json::{json, Value};

/// The program on the PATH, if any.
fn on_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// The worker's screen, as examine_worker shows it.
async fn screen(m: &Manager, name: &str) -> (Value, String) {
    let seen = m.ok("examine_worker", json!({"session_id": name})).await;
    let text = seen["screen"].as_str().unwrap_or("").to_string();
    (seen, text)
}

async fn first_screen(program: &str) {
    if on_path(program).is_none() {
        eprintln!("skipped: {program} is not installed");
        return;
    }
    let m = Manager::new(Which::Tmux).await;
    // A sign-in page never takes prompts: do not wait a minute for it.
    m.engine
        .workers
        .configure_workers(|s| s.ready_timeout = Duration::from_secs(15));
    let repo = m.agents.repo(program);
    let home = m.agents.home();
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    // The real CLI, not the fakes: the test's own PATH, a private home.
    let env = json!({
        "PATH": std::env::var("PATH").unwrap_or_default(),
        "HOME": home.display().to_string(),
        "CODEX_HOME": home.join(".codex").display().to_string(),
    });
    let name = format!("first-{program}");
    let spawned = m
        .call(
            "spawn_workers",
            json!({"workers": [{"name": name, "agent": program, "project_path": repo, "env": env}]}),
        )
        .await;
    // Not signed in here: the worker is not up, and the call says why.
    if spawned.is_error == Some(true) {
        let text = format!("{:?}", spawned.content);
        assert!(
            text.contains("sign-in") || text.contains("exited") || text.contains("status"),
            "{program}: spawn failed without saying why: {text}"
        );
    }
    let w = m.ok("examine_worker", json!({"session_id": name})).await;
    assert!(
        w["worktree"]
            .as_str()
            .is_some_and(|p| p != repo.to_str().unwrap()),
        "{program}: no worktree of its own: {w}"
    );
    // The first screen: some text from the CLI, and no complaint about its
    // arguments. A CLI that exits (no network here) must be reported exited, why.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut first: Option<Instant> = None;
    loop {
        let (seen, text) = screen(&m, &name).await;
        let lower = text.to_lowercase();
        for refusal in [
            "unknown option",
            "unexpected argument",
            "unrecognized",
            "usage:",
        ] {
            assert!(
                !lower.contains(refusal),
                "{program} refused cohort's command line: {seen}"
            );
        }
        if seen["state"] == "exited" {
            assert!(
                seen["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("status")),
                "{program}: an exit without its status: {seen}"
            );
        }
        if text.contains("Sign in") || text.contains("login method") {
            // A sign-in page is no prompt: the worker waits for a human.
            assert_eq!(
                seen["state"], "needs_approval",
                "{program}'s sign-in page taken for something else: {seen}"
            );
            assert!(
                seen["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("sign-in")),
                "{program}: the reason does not say it needs signing in: {seen}"
            );
        }
        // examine_worker joins the screen's last rows with " | ". Once it drew,
        // watch a while longer: some CLIs show a composer before their sign-in page.
        let drawn = text.split(" | ").filter(|l| !l.trim().is_empty()).count() >= 2;
        if drawn && first.is_none() {
            first = Some(Instant::now());
        }
        if first.is_some_and(|t| t.elapsed() > Duration::from_secs(12))
            || seen["state"] == "exited" && drawn
        {
            eprintln!(
                "{program}: {} ({}), screen:\n{text}",
                seen["state"], seen["reason"]
            );
            break;
        }
        assert!(
            first.is_some() || Instant::now() < deadline,
            "{program} drew no screen in 30 s: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let closed = m
        .ok(
            "close_workers",
            json!({"session_ids": [name], "force": true, "remove_worktree": true}),
        )
        .await;
    assert!(
        closed["results"][0]["error"].is_null(),
        "{program}: closing failed: {closed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_draws_its_first_screen() {
    first_screen("claude").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_draws_its_first_screen() {
    first_screen("codex").await;
}
