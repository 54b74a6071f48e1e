//! The Codex flavour in a real pty under tmux: hook trust, rollout, hooks and
//! notify, typed bursts, approval, interrupt, exit and resume.

mod support;

use cohort_fake_agent::script::digest;
use support::{read_json_lines, Agent};

/// Starts codex trusting its hooks on the command line, as an orchestrator would.
fn codex(args: &[&str]) -> Agent {
    let mut all = vec!["--dangerously-bypass-hook-trust"];
    all.extend_from_slice(args);
    let agent = Agent::start("codex", &all, &[]);
    agent.wait_ready();
    agent
}

fn rollouts(agent: &Agent) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&agent.codex_home().join("sessions"), &mut out);
    out
}

#[test]
fn new_hooks_wait_for_trust_before_the_first_turn() {
    let agent = Agent::start("codex", &["first prompt"], &[]);
    agent.wait_for("Hooks need review");
    assert!(agent.events("UserPromptSubmit").is_empty());
    agent.keys(&["2"]);
    let submit = agent.wait_events("UserPromptSubmit", 1);
    assert_eq!(submit[0]["prompt"], "first prompt");
    let config = std::fs::read_to_string(agent.codex_home().join("config.toml")).unwrap();
    assert!(config.contains("trusted_hash"));
}

#[test]
fn the_rollout_appears_with_the_first_turn_and_hooks_carry_turn_ids() {
    let agent = codex(&[]);
    assert!(
        rollouts(&agent).is_empty(),
        "no rollout before the first turn"
    );
    assert!(
        agent.events("SessionStart").is_empty(),
        "SessionStart waits for a turn"
    );
    agent.submit("hello codex");
    let stop = agent.wait_events("Stop", 1);
    let submit = agent.events("UserPromptSubmit");
    let start = agent.events("SessionStart");
    assert_eq!(start[0]["source"], "startup");
    assert_eq!(submit[0]["turn_id"], stop[0]["turn_id"]);
    assert_eq!(
        stop[0]["last_assistant_message"],
        format!("Done: {}.", digest("hello codex"))
    );
    let files = rollouts(&agent);
    assert_eq!(files.len(), 1);
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    let id = stop[0]["session_id"].as_str().unwrap();
    assert!(
        name.starts_with("rollout-") && name.ends_with(&format!("-{id}.jsonl")),
        "{name}"
    );
    assert_eq!(
        stop[0]["transcript_path"],
        files[0].to_string_lossy().as_ref()
    );
    // Codex runs the Stop hook before it records the turn's end, as the fake does:
    // the line follows the hook.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let lines = loop {
        let lines = read_json_lines(&files[0]);
        let ended = lines
            .iter()
            .any(|l| l["payload"]["type"] == "task_complete");
        if ended || std::time::Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(lines[0]["type"], "session_meta");
    let kinds: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "event_msg")
        .filter_map(|l| l["payload"]["type"].as_str())
        .collect();
    assert!(
        kinds.contains(&"task_started") && kinds.contains(&"task_complete"),
        "{kinds:?}"
    );
    for line in &lines {
        assert!(
            line["timestamp"].is_string() && line["payload"].is_object(),
            "{line}"
        );
    }
    // notify gets one JSON argument.
    let deadline = std::time::Instant::now() + support::WAIT;
    let notes = loop {
        let notes = read_json_lines(&agent.notify_log());
        if !notes.is_empty() || std::time::Instant::now() > deadline {
            break notes;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(notes[0]["type"], "agent-turn-complete");
    assert_eq!(notes[0]["turn-id"], stop[0]["turn_id"]);
}

#[test]
fn an_enter_inside_a_typed_burst_is_a_newline() {
    let agent = codex(&[]);
    agent.raw(b"burst of typed text\rsecond");
    agent.wait_for("second");
    assert!(agent.events("UserPromptSubmit").is_empty());
    agent.keys(&["Enter"]);
    let submit = agent.wait_events("UserPromptSubmit", 1);
    assert_eq!(submit[0]["prompt"], "burst of typed text\nsecond");
}

#[test]
fn a_long_paste_collapses_and_expands() {
    let agent = codex(&[]);
    let text = "x".repeat(3000) + "\nend";
    agent.paste(&text);
    agent.wait_for("[Pasted Content 3004 chars]");
    agent.keys(&["Enter"]);
    let stop = agent.wait_events("Stop", 1);
    assert_eq!(
        stop[0]["last_assistant_message"],
        format!("Done: {}.", digest(&text))
    );
}

#[test]
fn approval_prompt_answers_with_y() {
    let agent = codex(&[]);
    agent.submit("do it [[approval]]");
    agent.wait_for("Would you like to run the following command?");
    agent.wait_for("› 1. Yes, proceed (y)");
    let request = agent.wait_events("PermissionRequest", 1);
    assert_eq!(request[0]["tool_input"]["command"], "touch approved.txt");
    agent.keys(&["y"]);
    agent.wait_events("Stop", 1);
    assert!(agent.project().join("approved.txt").exists());
}

#[test]
fn bypassing_approvals_never_asks() {
    let agent = codex(&["--dangerously-bypass-approvals-and-sandbox"]);
    agent.submit("do it [[approval]]");
    agent.wait_events("Stop", 1);
    assert!(agent.events("PermissionRequest").is_empty());
}

#[test]
fn interrupt_aborts_the_turn_without_stop() {
    let agent = codex(&[]);
    agent.submit("long [[work 600000]]");
    agent.wait_for("esc to interrupt");
    agent.keys(&["Escape"]);
    agent.wait_for("Conversation interrupted");
    assert!(agent.events("Stop").is_empty());
    let lines = read_json_lines(&rollouts(&agent)[0]);
    assert!(
        lines
            .iter()
            .any(|l| l["payload"]["type"] == "turn_aborted"
                && l["payload"]["reason"] == "interrupted")
    );
}

#[test]
fn api_error_ends_the_turn_without_stop() {
    let agent = codex(&[]);
    agent.submit("fail [[api-error]]");
    agent.wait_for("unexpected status 500");
    let lines = read_json_lines(&rollouts(&agent)[0]);
    assert!(lines.iter().any(|l| l["payload"]["type"] == "error"));
    assert!(agent.events("Stop").is_empty());
}

#[test]
fn quit_then_resume_appends_to_the_same_rollout() {
    let agent = codex(&[]);
    agent.submit("first");
    let stop = agent.wait_events("Stop", 1);
    let id = stop[0]["session_id"].as_str().unwrap().to_string();
    agent.submit("/quit");
    agent.wait_for(&format!("codex resume {id}"));
    agent.wait_for("EXIT=0");
    let before = read_json_lines(&rollouts(&agent)[0]).len();
    let command = format!(
        "cd {} && env HOME={} CODEX_HOME={} FAKE_AGENT_READY_MS=0 {} \
         --dangerously-bypass-hook-trust resume {id} 'second'",
        agent.project().display(),
        agent.dir.path().join("home").display(),
        agent.codex_home().display(),
        agent.dir.path().join("bin").join("codex").display(),
    );
    std::process::Command::new("tmux")
        .args([
            "-L",
            &agent.socket,
            "respawn-pane",
            "-k",
            "-t",
            "0",
            &command,
        ])
        .status()
        .expect("respawn");
    agent.wait_events("Stop", 2);
    assert_eq!(agent.events("SessionStart")[1]["source"], "resume");
    assert_eq!(rollouts(&agent).len(), 1);
    assert!(read_json_lines(&rollouts(&agent)[0]).len() > before);
}

#[test]
fn full_auto_is_refused_as_in_current_releases() {
    let agent = Agent::start("codex", &["--full-auto"], &[]);
    let screen = agent.wait_for("EXIT=2");
    assert!(
        screen.contains("unexpected argument '--full-auto'"),
        "{screen}"
    );
}
