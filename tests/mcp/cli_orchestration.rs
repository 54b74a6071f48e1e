//! The orchestration command lines as separate processes: `cohort playbook run FILE`
//! and `cohort events --follow`, on a private tmux server.

use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::support::*;
use cohort::engine::Engine;
use cohort_terminal::{OpenOptions, SendOptions};
use tokio::io::{AsyncBufReadExt, BufReader};

fn cohort(server: &TestServer) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cohort"));
    cmd.env("COHORT_TMUX_SOCKET", &server.socket)
        .env("COHORT_STATE_DIR", server.state_dir())
        .env("SHELL", bash_path())
        .env("HOME", server.home())
        .env_remove("TMUX");
    cmd
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/playbooks")
        .join(name)
}

/// An engine on `server` with a session `name` whose shell reads its terminal.
async fn engine_with_session(
    server: &TestServer,
    name: &str,
) -> (Engine, cohort_backends::PaneInfo) {
    let backend = server.backend().await;
    let engine =
        Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket).unwrap();
    let pane = engine
        .terminal
        .open(OpenOptions::named(name))
        .await
        .unwrap();
    assert!(engine.terminal.wait_ready(&pane.id, WAIT).await);
    engine.terminal.wait_reading(&pane.id, WAIT).await;
    (engine, pane)
}

/// `cohort events` with `args`, started and ready (its first line on stderr, which
/// it returns).
async fn follow_events(server: &TestServer, args: &[&str]) -> (tokio::process::Child, String) {
    let mut follower = tokio::process::Command::from(cohort(server));
    follower
        .arg("events")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = follower.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let ready = tokio::time::timeout(WAIT, stderr.next_line())
        .await
        .expect("the follower never started")
        .unwrap()
        .unwrap_or_default();
    (child, ready)
}

#[test]
fn a_playbook_file_runs_from_the_command_line() {
    let server = TestServer::new();
    let out = cohort(&server)
        .args(["playbook", "run"])
        .arg(fixture("two-teams.toml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with(
            "playbook \"two teams\": FAILED: 1 of 3 steps ok, stopped at step 2 (\"test\")"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("opened: api, db, web, docs"), "{stdout}");
    assert!(stdout.contains("step 3 (\"ship\"): skipped"), "{stdout}");
    assert!(stdout.contains("db: failed"), "{stdout}");
    assert!(
        stdout.contains("      | fail"),
        "the failure's output: {stdout}"
    );
    // Progress per step on stderr.
    assert!(
        stderr.contains("[1/3] step 1 (\"prepare\"): ok"),
        "{stderr}"
    );

    let json = cohort(&server)
        .args(["playbook", "run", "--json"])
        .arg(fixture("two-teams.toml"))
        .output()
        .unwrap();
    // The sessions exist now: the layout is refused, the report says so.
    let report: serde_json::Value = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&json.stdout)));
    assert_eq!(report["ok"], false);
    assert!(
        report["error"]
            .as_str()
            .unwrap_or_default()
            .contains("the layout"),
        "{report:#}"
    );
}

#[test]
fn a_bad_playbook_file_is_refused_naming_step_and_field() {
    let server = TestServer::new();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "[[steps]]\ntargets = [\"a\"]\ncommand = \"true\"\n\n[[steps]]\nname = \"deploy\"\ntargets = [\"a\"]\ncommand = \"true\"\nwait = \"forever\"\n",
    )
    .unwrap();
    let out = cohort(&server)
        .args(["playbook", "run"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("step 2 (\"deploy\")"), "{stderr}");
    assert!(stderr.contains("wait"), "{stderr}");
    let checked = cohort(&server)
        .args(["playbook", "run", "--check"])
        .arg(fixture("two-teams.toml"))
        .output()
        .unwrap();
    assert!(checked.status.success());
    assert!(String::from_utf8_lossy(&checked.stdout).contains("3 steps"));
}

#[tokio::test]
async fn events_follow_prints_each_event_once_in_order() {
    let server = TestServer::new();
    let (engine, pane) = engine_with_session(&server, "feed").await;
    let (mut child, ready) = follow_events(&server, &["--follow", "feed"]).await;
    assert!(ready.contains("following events of feed"), "{ready}");
    for status in [1, 3, 0] {
        engine
            .terminal
            .send(
                &pane.id,
                &format!("sh -c 'exit {status}'"),
                &SendOptions::default(),
                &cohort_terminal::Caller::new("test"),
            )
            .await
            .unwrap();
        engine
            .orchestrator
            .wait_for(
                &["feed".to_string()],
                &cohort_orchestration::waits::Condition::Exit,
                cohort_orchestration::waits::Quorum::All,
                WAIT,
                |_, _, _| {},
            )
            .await
            .unwrap();
    }
    // From this process to the follower: through the relay.
    engine
        .orchestrator
        .notify("tester", "feed", "info", "feed is done")
        .await
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut lines = Vec::new();
    while lines.len() < 4 {
        let line = tokio::time::timeout(WAIT, stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("no more events; so far: {lines:#?}"))
            .unwrap()
            .expect("the follower ended");
        lines.push(line);
    }
    let bodies: Vec<&str> = lines
        .iter()
        .map(|l| l.split_once(' ').map_or(l.as_str(), |(_, b)| b))
        .collect();
    // The terminal's own events arrive in order; the notification comes over the
    // relay, a different path, so only its presence (once) is certain.
    let ends: Vec<&str> = bodies
        .iter()
        .copied()
        .filter(|b| b.starts_with("command_ended"))
        .collect();
    assert_eq!(
        ends,
        vec![
            "command_ended session=feed exit=1",
            "command_ended session=feed exit=3",
            "command_ended session=feed exit=0",
        ],
        "{lines:#?}"
    );
    assert!(
        bodies.contains(&"notification kind=info from=tester to=feed: feed is done"),
        "{lines:#?}"
    );
    let _ = child.kill().await;
}

#[test]
fn the_readme_shows_the_playbook_that_is_tested() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let fixture = std::fs::read_to_string(fixture("two-teams.toml")).unwrap();
    let body: String = fixture
        .lines()
        .skip_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let shown = format!("```toml\n# fixtures/playbooks/two-teams.toml\n{body}```");
    assert!(
        readme.contains(&shown),
        "README.md's playbook example differs from fixtures/playbooks/two-teams.toml"
    );
}

#[tokio::test]
async fn events_as_json_name_the_session() {
    let server = TestServer::new();
    let (engine, pane) = engine_with_session(&server, "named-feed").await;
    let (mut child, _) = follow_events(&server, &["--follow", "--json", "named-feed"]).await;
    engine
        .terminal
        .send(
            &pane.id,
            "sh -c 'exit 2'",
            &SendOptions::default(),
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(WAIT, stdout.next_line())
        .await
        .expect("no event")
        .unwrap()
        .expect("the follower ended");
    let event: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(event["event"], "command_ended", "{line}");
    assert_eq!(event["session"], "named-feed", "{line}");
    assert_eq!(event["pane"], pane.id.as_str(), "{line}");
}

/// A datagram sent to another cohort process's relay socket by anything but a
/// cohort of the same state directory (no tag, or a tag under another key) is
/// dropped: the forged notification never reaches the follower, the real one does.
#[tokio::test]
async fn a_datagram_forged_into_the_relay_is_dropped() {
    let server = TestServer::new();
    let (engine, _pane) = engine_with_session(&server, "relayed").await;
    let (mut child, _) = follow_events(&server, &["--follow", "relayed"]).await;
    let forged = |message: &str| {
        let event = cohort_terminal::events::EngineEvent::Notification {
            to: "relayed".into(),
            from: "forger".into(),
            kind: "info".into(),
            message: message.into(),
        };
        serde_json::to_vec(&serde_json::json!({"origin": "forger.sock", "event": event})).unwrap()
    };
    let stranger = cohort_terminal::seal::SealKey::generate().unwrap();
    let socket = std::os::unix::net::UnixDatagram::unbound().unwrap();
    let relay_dir = server.state_dir().join("relay");
    let mut sent = 0;
    for entry in std::fs::read_dir(&relay_dir).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "sock") {
            socket.send_to(&forged("untagged forgery"), &path).unwrap();
            let body = forged("forgery under another key");
            let mut tagged = stranger.tag(&body).into_bytes();
            tagged.push(b'\n');
            tagged.extend(body);
            socket.send_to(&tagged, &path).unwrap();
            sent += 1;
        }
    }
    assert!(
        sent >= 2,
        "the engine and the follower each bind a relay socket"
    );
    engine
        .orchestrator
        .notify("tester", "relayed", "info", "the real one")
        .await
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut lines = Vec::new();
    while !lines.iter().any(|l: &String| l.contains("the real one")) {
        let line = tokio::time::timeout(WAIT, stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("the real notification never came: {lines:#?}"))
            .unwrap()
            .expect("the follower ended");
        lines.push(line);
    }
    assert!(
        !lines.iter().any(|l| l.contains("forg")),
        "a forged datagram was taken: {lines:#?}"
    );
    let _ = child.kill().await;
}

/// `cohort events` without `--follow` prints what happened lately, from the history
/// every cohort process keeps: a command's end and a notification published by another
/// process before the command was run, named by session, each once.
#[tokio::test]
async fn events_without_follow_print_the_recent_ones() {
    let server = TestServer::new();
    let (engine, pane) = engine_with_session(&server, "looked-back").await;
    engine
        .terminal
        .run(
            &pane.id,
            "sh -c 'exit 4'",
            &SendOptions::default(),
            cohort_terminal::completion::WaitSpec::default(),
            false,
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .unwrap();
    engine
        .orchestrator
        .notify("tester", "looked-back", "info", "done looking")
        .await
        .unwrap();
    // The history is written as events are published, a moment after the call.
    let deadline = std::time::Instant::now() + WAIT;
    let text = loop {
        let out = cohort(&server)
            .args(["events", "looked-back"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if text.contains("done looking") || std::time::Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let ends: Vec<&str> = text
        .lines()
        .filter(|l| l.ends_with("command_ended session=looked-back exit=4"))
        .collect();
    assert_eq!(ends.len(), 1, "{text}");
    assert!(
        text.lines()
            .any(|l| l.ends_with("notification kind=info from=tester to=looked-back: done looking")),
        "{text}"
    );
    // As JSON, with the time each happened.
    let out = cohort(&server)
        .args(["events", "--json", "-n", "1", "looked-back"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let event: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(event["event"], "notification", "{text}");
    assert!(event["at_ms"].as_u64().is_some(), "{text}");
}
