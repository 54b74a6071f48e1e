//! The Claude Code flavour in a real pty under tmux: submission, pastes, hooks,
//! transcript, approval, API error, interrupt, queue, exit and resume.

mod support;

use cohort_fake_agent::script::digest;
use serde_json::Value;
use support::{read_json_lines, Agent};

const SESSION: &str = "11111111-2222-3333-4444-555555555555";

fn claude(args: &[&str]) -> Agent {
    let mut all = vec!["--session-id", SESSION];
    all.extend_from_slice(args);
    let agent = Agent::start("claude", &all, &[]);
    agent.wait_ready();
    agent
}

fn transcript(agent: &Agent) -> std::path::PathBuf {
    let project = agent.project();
    let dir: String = project
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    agent
        .claude_dir()
        .join("projects")
        .join(dir)
        .join(format!("{SESSION}.jsonl"))
}

fn answer_of(stop: &Value) -> String {
    stop["last_assistant_message"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_typed_prompt_runs_a_turn_with_hooks_and_transcript() {
    let agent = claude(&[]);
    let start = agent.wait_events("SessionStart", 1);
    assert_eq!(start[0]["source"], "startup");
    assert!(
        !transcript(&agent).exists(),
        "the transcript appears with the first prompt"
    );
    agent.submit("hello there");
    let submit = agent.wait_events("UserPromptSubmit", 1);
    let stop = agent.wait_events("Stop", 1);
    let path = transcript(&agent);
    for event in [&submit[0], &stop[0]] {
        assert_eq!(event["session_id"], SESSION);
        assert_eq!(event["transcript_path"], path.to_string_lossy().as_ref());
        assert_eq!(event["cwd"], agent.project().to_string_lossy().as_ref());
        assert_eq!(event["prompt_id"], submit[0]["prompt_id"]);
    }
    assert_eq!(submit[0]["prompt"], "hello there");
    assert_eq!(
        answer_of(&stop[0]),
        format!("Done: {}.", digest("hello there"))
    );
    assert_eq!(stop[0]["background_tasks"], serde_json::json!([]));
    // Claude Code writes the stop-hook summary after the hook ran: wait for it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let lines = loop {
        let lines = read_json_lines(&path);
        let summarised = lines
            .iter()
            .any(|l| l["type"] == "system" && l["subtype"] == "stop_hook_summary");
        if summarised || std::time::Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(lines
        .iter()
        .any(|l| l["type"] == "user" && l["message"]["content"] == "hello there"));
    assert!(lines.iter().any(|l| l["type"] == "assistant"
        && l["message"]["content"][0]["text"] == stop[0]["last_assistant_message"]));
    assert!(lines
        .iter()
        .any(|l| l["type"] == "system" && l["subtype"] == "stop_hook_summary"));
    agent.wait_for("✻ Worked for");
}

#[test]
fn enter_in_the_same_write_as_the_paste_end_is_a_newline() {
    let agent = claude(&[]);
    agent.raw(b"\x1b[200~first line\x1b[201~\r");
    let screen = agent.wait_for("first line");
    assert!(
        agent.events("UserPromptSubmit").is_empty(),
        "submitted:\n{screen}"
    );
    // The composer now holds "first line\n"; a later Enter submits it.
    agent.type_text("second");
    agent.wait_for("second");
    agent.keys(&["Enter"]);
    let submit = agent.wait_events("UserPromptSubmit", 1);
    assert_eq!(submit[0]["prompt"], "first line\nsecond");
}

#[test]
fn enter_after_a_paste_submits_the_whole_paste() {
    let agent = claude(&[]);
    agent.paste("one\ntwo");
    agent.wait_for("two");
    agent.keys(&["Enter"]);
    let submit = agent.wait_events("UserPromptSubmit", 1);
    assert_eq!(submit[0]["prompt"], "one\ntwo");
}

#[test]
fn a_long_paste_collapses_and_arrives_byte_exact() {
    let agent = claude(&[]);
    let text: String = (0..200)
        .map(|i| format!("line {i:03} of a long prompt with some text in it\n"))
        .collect();
    let text = text.trim_end().to_string();
    agent.paste(&text);
    agent.wait_for("[Pasted text #1 +199 lines]");
    agent.keys(&["Enter"]);
    let stop = agent.wait_events("Stop", 1);
    assert_eq!(answer_of(&stop[0]), format!("Done: {}.", digest(&text)));
    assert_eq!(agent.events("UserPromptSubmit")[0]["prompt"], text.as_str());
    let screen = agent.screen();
    assert!(
        !screen.contains("[Pasted text"),
        "placeholder left:\n{screen}"
    );
}

#[test]
fn keys_before_the_input_handler_is_mounted_are_dropped() {
    let agent = Agent::start("claude", &[], &[("FAKE_AGENT_READY_MS", "4000")]);
    agent.wait_ready();
    agent.type_text("early");
    // Probe until a key is taken: the handler is mounted then.
    agent.wait_screen("the input handler", |s| {
        if s.contains("❯ z") {
            return true;
        }
        agent.type_text("z");
        std::thread::sleep(std::time::Duration::from_millis(100));
        false
    });
    let screen = agent.screen();
    assert!(!screen.contains("early"), "early keys were kept:\n{screen}");
}

#[test]
fn approval_dialog_fires_permission_request_and_answers() {
    let agent = claude(&[]);
    agent.submit("please [[approval]]");
    agent.wait_for("Do you want to proceed?");
    let request = agent.wait_events("PermissionRequest", 1);
    assert_eq!(request[0]["tool_name"], "Bash");
    assert_eq!(request[0]["tool_input"]["command"], "touch approved.txt");
    assert!(agent.events("Stop").is_empty());
    assert!(!agent.screen().contains("esc to interrupt"));
    agent.keys(&["1"]);
    agent.wait_events("Stop", 1);
    assert!(agent.project().join("approved.txt").exists());
}

#[test]
fn refusing_approval_interrupts_without_stop() {
    let agent = claude(&[]);
    agent.submit("please [[approval]]");
    agent.wait_for("Do you want to proceed?");
    agent.keys(&["Escape"]);
    agent.wait_for("Interrupted · What should Claude do instead?");
    agent.submit("next");
    let stops = agent.wait_events("Stop", 1);
    assert_eq!(stops.len(), 1, "only the second turn stops");
    assert!(!agent.project().join("approved.txt").exists());
}

#[test]
fn api_error_fires_stop_failure_and_no_stop() {
    let agent = claude(&[]);
    agent.submit("fail [[api-error]]");
    let failure = agent.wait_events("StopFailure", 1);
    assert_eq!(failure[0]["error"], "server_error");
    agent.wait_for("API Error: 500");
    // A later turn proves the loop went on; still only that turn has a Stop.
    agent.submit("again");
    agent.wait_events("Stop", 1);
    assert_eq!(agent.events("Stop").len(), 1);
    let lines = read_json_lines(&transcript(&agent));
    assert!(lines.iter().any(|l| l["isApiErrorMessage"] == true));
}

#[test]
fn interrupt_leaves_no_stop_and_sends_the_queued_message() {
    let agent = claude(&[]);
    agent.submit("long [[work 600000]]");
    agent.wait_for("esc to interrupt");
    agent.submit("queued one");
    agent.wait_for("Press up to edit queued messages");
    agent.keys(&["Escape"]);
    agent.wait_for("Interrupted · What should Claude do instead?");
    let submits = agent.wait_events("UserPromptSubmit", 2);
    assert_eq!(submits[1]["prompt"], "queued one");
    let stops = agent.wait_events("Stop", 1);
    assert_eq!(
        answer_of(&stops[0]),
        format!("Done: {}.", digest("queued one"))
    );
    let lines = read_json_lines(&transcript(&agent));
    assert!(lines
        .iter()
        .any(|l| l["message"]["content"][0]["text"] == "[Request interrupted by user]"));
    assert!(lines.iter().any(|l| l["promptSource"] == "queued"));
}

#[test]
fn background_work_shows_in_stop() {
    let agent = claude(&[]);
    agent.submit("bg [[background]]");
    let stop = agent.wait_events("Stop", 1);
    assert!(stop[0]["background_tasks"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));
}

#[test]
fn a_crash_kills_the_process_without_hooks() {
    let agent = claude(&[]);
    agent.submit("boom [[crash]]");
    agent.wait_for("EXIT=137");
    assert!(agent.events("Stop").is_empty() && agent.events("SessionEnd").is_empty());
}

#[test]
fn no_hooks_turns_fire_nothing() {
    let agent = claude(&[]);
    agent.submit("quiet [[no-hooks]]");
    agent.wait_for("✻ Worked for");
    assert!(agent.events("UserPromptSubmit").is_empty() && agent.events("Stop").is_empty());
}

#[test]
fn exit_fires_session_end_and_resume_continues_the_transcript() {
    let agent = claude(&[]);
    agent.submit("remember me");
    agent.wait_events("Stop", 1);
    agent.submit("/exit");
    agent.wait_for("claude --resume");
    let end = agent.wait_events("SessionEnd", 1);
    assert_eq!(end[0]["reason"], "prompt_input_exit");
    agent.wait_for("EXIT=0");
    let before = read_json_lines(&transcript(&agent)).len();

    // Same home and project: resume the session in a new pane.
    let home = agent.dir.path().join("home");
    let bin = agent.dir.path().join("bin").join("claude");
    let settings = agent.dir.path().join("settings.json");
    let command = format!(
        "cd {} && env HOME={} FAKE_AGENT_READY_MS=0 {} --settings {} --resume {SESSION}",
        agent.project().display(),
        home.display(),
        bin.display(),
        settings.display()
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
    agent.wait_for(&format!("● Done: {}.", digest("remember me")));
    let starts = agent.wait_events("SessionStart", 2);
    assert_eq!(starts[1]["source"], "resume");
    agent.submit("and more");
    agent.wait_events("Stop", 2);
    assert!(read_json_lines(&transcript(&agent)).len() > before);
}

#[test]
fn ctrl_d_twice_exits() {
    let agent = claude(&[]);
    agent.keys(&["C-d"]);
    agent.wait_for("Press Ctrl-D again to exit");
    agent.keys(&["C-d"]);
    agent.wait_for("EXIT=0");
    agent.wait_events("SessionEnd", 1);
}

#[test]
fn unknown_options_are_refused_like_the_real_cli() {
    let agent = Agent::start("claude", &["--bogus"], &[]);
    let screen = agent.wait_for("EXIT=1");
    assert!(
        screen.contains("error: unknown option '--bogus'"),
        "{screen}"
    );
}

#[test]
fn closing_the_terminal_fires_session_end() {
    let agent = claude(&[]);
    std::process::Command::new("tmux")
        .args(["-L", &agent.socket, "kill-pane", "-t", "0"])
        .status()
        .expect("kill-pane");
    let end = agent.wait_events("SessionEnd", 1);
    assert_eq!(end[0]["reason"], "other");
}

#[test]
fn a_question_fires_elicitation_and_waits_for_the_answer() {
    let agent = claude(&[]);
    agent.submit("which one [[ask]]");
    agent.wait_for("Which file should I change?");
    let asked = agent.wait_events("Elicitation", 1);
    assert_eq!(asked[0]["message"], "Which file should I change?");
    assert!(agent.events("Stop").is_empty());
    agent.keys(&["2"]);
    let result = agent.wait_events("ElicitationResult", 1);
    assert_eq!(result[0]["action"], "accept");
    assert_eq!(result[0]["content"]["file"], "src/lib.rs");
    agent.wait_events("Stop", 1);
}
