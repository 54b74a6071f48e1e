//! Orchestration over workers: `wait_for idle` and `agent_status` follow a worker's
//! state as the workers decide it, on tmux and the fake iTerm2, with fake agent CLIs.

use crate::{terminals::Which, workers::Manager};
use serde_json::json;

async fn idle_after_a_turn(which: Which) {
    let m = Manager::new(which).await;
    let repo = m.agents.repo("orch");
    let spawned = m
        .ok(
            "spawn_workers",
            json!({"workers": [{"name": "wren", "agent": "claude",
                   "project_path": repo.display().to_string(), "env": m.agents.env_json(&[])}]}),
        )
        .await;
    assert!(
        spawned["workers"][0]["error"].is_null(),
        "{which:?}: {spawned}"
    );
    let sent = m
        .ok(
            "message_workers",
            json!({"session_ids": ["wren"], "message": "say hello", "wait_mode": "none"}),
        )
        .await;
    assert_eq!(
        sent["results"][0]["status"], "submitted",
        "{which:?}: {sent}"
    );
    let waited = m
        .ok(
            "wait_for",
            json!({"targets": ["wren"], "condition": "idle", "timeout_ms": 60000}),
        )
        .await;
    assert_eq!(waited["done"], true, "{which:?}: {waited}");
    let what = waited["results"][0]["what"].as_str().unwrap_or_default();
    assert!(what.starts_with("idle: "), "{which:?}: {waited}");
    // The worker's own view agrees, and the status line shows it.
    let examined = m.ok("examine_worker", json!({"session_id": "wren"})).await;
    assert_eq!(examined["state"], "idle", "{which:?}: {examined}");
    let status = m.ok("agent_status", json!({})).await;
    let line = status["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .find(|l| l.starts_with("wren"))
        .unwrap_or_else(|| panic!("{which:?}: no line for wren: {status}"))
        .to_string();
    assert!(line.contains(" idle"), "{which:?}: {line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_idle_follows_a_worker_on_tmux() {
    idle_after_a_turn(Which::Tmux).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_idle_follows_a_worker_on_iterm2() {
    idle_after_a_turn(Which::Iterm2).await;
}
