//! Screens cohort's rules were not written against: Claude Code drawn inline in a
//! pane it does not fill, with one rule, in a box; answered dialogs and an
//! interrupted spinner left on screen; a composer that ignores Enter for a while
//! after it is drawn. Each worker must come up, be read right through a turn, an
//! approval, a question and an interrupt, and never be called `stuck` or stay
//! `needs_approval` after the agent moved on.

use std::time::Duration;

use crate::{agents::answer, terminals::Which, workers::Manager};
use serde_json::{json, Value};

/// Each look, with leftovers on screen; Codex leaves its dialogs behind too.
const LOOKS: [(&str, &str, &str); 4] = [
    ("inline", "claude", "inline"),
    ("one-rule", "claude", "inline,one-rule"),
    ("boxed", "claude", "box"),
    ("codex", "codex", ""),
];

fn names() -> Vec<&'static str> {
    LOOKS.iter().map(|(name, _, _)| *name).collect()
}

async fn say(m: &Manager, text: &str) -> Value {
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": names(), "message": text, "wait_mode": "all", "timeout": 60}),
        )
        .await;
    for x in r["results"].as_array().unwrap() {
        assert_eq!(x["status"], "submitted", "{:?} {text}: {x}", m.which);
    }
    r
}

async fn states(m: &Manager) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for name in names() {
        let w = m.ok("examine_worker", json!({"session_id": name})).await;
        out.push((name.to_string(), w["state"].as_str().unwrap().to_string()));
    }
    out
}

async fn all_idle_and_staying(m: &Manager, after: &str) {
    for name in names() {
        m.worker_until(name, after, |w| w["state"] == "idle").await;
    }
    // Past the bound where reports and screen may disagree: still idle.
    tokio::time::sleep(Duration::from_millis(5_500)).await;
    for (name, state) in states(m).await {
        assert_eq!(state, "idle", "{:?} {name} after {after}", m.which);
    }
}

async fn other_looks(which: Which) {
    let m = Manager::new(which).await;
    let repo = m.agents.repo("looks");
    let specs: Vec<Value> = LOOKS
        .iter()
        .map(|(name, agent, look)| {
            json!({"name": name, "agent": agent, "project_path": repo.display().to_string(),
                   "env": m.agents.env_json(&[("FAKE_AGENT_LOOK", look), ("FAKE_AGENT_LEAVE_BEHIND", "1")])})
        })
        .collect();
    let spawned = m.ok("spawn_workers", json!({"workers": specs})).await;
    for w in spawned["workers"].as_array().unwrap() {
        assert!(w["error"].is_null(), "{which:?}: {w}");
        assert_eq!(w["state"], "ready", "{which:?}: {w}");
    }

    // A turn longer than the bound where signals may disagree: never `stuck`.
    let r = say(&m, "[[work 7000]] a long turn").await;
    assert_eq!(r["wait"]["timed_out"], false, "{which:?}: {r}");
    assert_eq!(r["wait"]["stuck"], json!([]), "{which:?}: {r}");
    assert_eq!(r["wait"]["all_idle"], true, "{which:?}: {r}");

    // An approval answered on screen; the dialog's text stays above the composer.
    say(&m, "[[approval]] make a file").await;
    for name in names() {
        m.worker_until(name, "asking", |w| w["state"] == "needs_approval")
            .await;
        m.ok("key", json!({"target": name, "keys": ["1"]})).await;
    }
    all_idle_and_staying(&m, "the approval").await;

    // A question answered on screen, left there too.
    say(&m, "[[ask]] which file").await;
    for name in names() {
        m.worker_until(name, "asking", |w| w["state"] == "needs_approval")
            .await;
        m.ok("key", json!({"target": name, "keys": ["Enter"]}))
            .await;
    }
    all_idle_and_staying(&m, "the question").await;

    // An interrupt that leaves the spinner line behind.
    m.ok(
        "message_workers",
        json!({"session_ids": names(), "message": "[[work 30000]] stop me"}),
    )
    .await;
    for name in names() {
        m.worker_until(name, "working", |w| w["state"] == "busy")
            .await;
        m.ok("key", json!({"target": name, "keys": ["Escape"]}))
            .await;
    }
    all_idle_and_staying(&m, "the interrupt").await;

    // And they still take prompts, whole.
    say(&m, "after all that").await;
    for name in names() {
        let logs = m
            .ok("read_worker_logs", json!({"session_id": name, "pages": 5}))
            .await;
        let text = logs["output"].as_str().unwrap();
        assert!(
            text.contains(&answer("after all that")),
            "{which:?} {name}: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_looks_on_tmux() {
    other_looks(Which::Tmux).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_looks_on_iterm2() {
    other_looks(Which::Iterm2).await;
}

/// A fresh TUI that draws its composer but ignores Enter for 12 s (longer than the quick presses last): the prompt
/// given at spawn goes in once, whole, after Enter starts to work; the presses
/// before it are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_composer_deaf_to_enter_gets_its_prompt_once_it_listens() {
    let m = Manager::new(Which::Tmux).await;
    let repo = m.agents.repo("deaf");
    let prompt = "first task\nwith two lines";
    let spawned = m
        .ok(
            "spawn_workers",
            json!({"workers": [{"name": "deaf", "agent": "claude", "project_path": repo,
                   "prompt": prompt,
                   "env": m.agents.env_json(&[("FAKE_AGENT_ENTER_DEAF_MS", "12000")])}]}),
        )
        .await;
    let w = &spawned["workers"][0];
    assert!(w["error"].is_null(), "{w}");
    let submitted = w["prompt"].as_str().unwrap_or_default();
    let enters: u32 = submitted
        .split(", ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(enters > 1, "Enter cannot have worked at once: {w}");
    m.worker_until("deaf", "idle after its prompt", |w| w["state"] == "idle")
        .await;
    let logs = m
        .ok(
            "read_worker_logs",
            json!({"session_id": "deaf", "pages": 5}),
        )
        .await;
    let text = logs["output"].as_str().unwrap();
    assert!(text.contains(&answer(prompt)), "{text}");
    assert_eq!(text.matches("Done: received").count(), 1, "{text}");
    eprintln!("an Enter-deaf composer (12 s) took the prompt after {enters} presses");
}
