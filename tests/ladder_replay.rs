//! The completion ladder's reference tests: sessions recorded from real tmux runs
//! (`fixtures/ladder/*.jsonl`) replayed through the ladder, which must take every
//! recorded decision again and come to the recorded verdict.
//!
//! `record_ladder_fixtures` makes them (it is ignored by default; run
//! `cargo test --test ladder_replay -- --ignored` to record them again): each
//! scenario runs through the engine on a private tmux server with its wait recorded,
//! once with the kernel's process facts and once with the `/proc` reader switched off,
//! as a host without `/proc` (macOS) gives them.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cohort::engine::completion::record::replay;
use cohort::engine::completion::{Layer, Until, WaitSpec};
use cohort::engine::{Engine, OpenOptions, SendOptions};
use support::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/ladder")
}

#[test]
fn recorded_sessions_replay_to_their_verdicts() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("fixtures/ladder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 24, "only {} recordings", files.len());
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let name = file.file_stem().unwrap().to_string_lossy();
        let replayed = replay(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let verdict = replayed
            .verdict
            .unwrap_or_else(|| panic!("{name}: the recording ends without a verdict"));
        println!(
            "{name:<32} {:>3} steps  {} {:?} {:?}",
            replayed.steps,
            if verdict.complete {
                "complete"
            } else {
                "not complete"
            },
            verdict.layer,
            verdict.exit_status
        );
    }
}

/// One scenario: what runs before, the command waited for, how, and the verdict a
/// real terminal gives.
struct Scenario {
    name: &'static str,
    setup: &'static [&'static str],
    command: &'static str,
    spec: fn() -> WaitSpec,
    mark: bool,
    /// Close the session this long after Enter.
    close_after: Option<Duration>,
    expect: (bool, Layer),
}

fn spec(timeout_ms: u64) -> WaitSpec {
    WaitSpec {
        timeout: Duration::from_millis(timeout_ms),
        ..WaitSpec::default()
    }
}

fn scenarios() -> Vec<Scenario> {
    let plain = || spec(10_000);
    vec![
        Scenario { name: "exit-0", setup: &[], command: "true", spec: plain, mark: false, close_after: None, expect: (true, Layer::Exit) },
        Scenario { name: "exit-1", setup: &[], command: "false", spec: plain, mark: false, close_after: None, expect: (true, Layer::Exit) },
        Scenario { name: "quiet-pause", setup: &[], command: "echo a; sleep 1.2; echo b", spec: plain, mark: false, close_after: None, expect: (true, Layer::Exit) },
        Scenario { name: "repl-waiting", setup: &[], command: "python3 -q", spec: plain, mark: false, close_after: None, expect: (false, Layer::Nested) },
        Scenario { name: "editor", setup: &[], command: "vi -u NONE notes.txt", spec: plain, mark: false, close_after: None, expect: (false, Layer::Nested) },
        Scenario { name: "pager", setup: &[], command: "seq 1 500 | less", spec: plain, mark: false, close_after: None, expect: (false, Layer::Nested) },
        Scenario { name: "continuation", setup: &[], command: "echo \"unclosed", spec: plain, mark: false, close_after: None, expect: (false, Layer::Nested) },
        Scenario { name: "script-at-read", setup: &[], command: "bash -c 'read -r answer; echo got $answer'", spec: plain, mark: false, close_after: None, expect: (false, Layer::Nested) },
        Scenario {
            name: "socket-read",
            setup: &[],
            command: "python3 -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); c = socket.create_connection(s.getsockname()); c.recv(1)\"",
            spec: || spec(2500),
            mark: false,
            close_after: None,
            expect: (false, Layer::Timeout),
        },
        Scenario { name: "session-closing", setup: &[], command: "sleep 30", spec: plain, mark: false, close_after: Some(Duration::from_millis(700)), expect: (false, Layer::Closed) },
        Scenario { name: "sentinel", setup: &["bash --norc --noprofile"], command: "echo inner; (exit 3)", spec: plain, mark: true, close_after: None, expect: (true, Layer::Mark) },
        Scenario {
            name: "until",
            setup: &[],
            command: "python3 -q",
            spec: || WaitSpec { until: Some(Until::new(">>> ", false).unwrap()), ..spec(10_000) },
            mark: false,
            close_after: None,
            expect: (true, Layer::Until),
        },
        Scenario { name: "timeout", setup: &[], command: "sleep 30", spec: || spec(1000), mark: false, close_after: None, expect: (false, Layer::Timeout) },
        Scenario { name: "shell-read", setup: &[], command: "read -r line", spec: plain, mark: false, close_after: None, expect: (false, Layer::Nested) },
        Scenario { name: "answer-ends-read", setup: &["read -r line"], command: "hello", spec: plain, mark: false, close_after: None, expect: (true, Layer::Exit) },
        Scenario { name: "lost-hook", setup: &["PROMPT_COMMAND="], command: "echo hooked-out", spec: plain, mark: false, close_after: None, expect: (true, Layer::Quiescence) },
    ]
}

#[tokio::test]
#[ignore = "records fixtures/ladder/ from real tmux; run with --ignored to refresh them"]
async fn record_ladder_fixtures() {
    for kernel in [true, false] {
        cohort_backends::process::set_proc_reader(kernel);
        for scenario in scenarios() {
            let name = if kernel {
                scenario.name.to_string()
            } else {
                format!("{}-noproc", scenario.name)
            };
            record(&scenario, &name, kernel).await;
        }
    }
    cohort_backends::process::set_proc_reader(true);
}

async fn record(scenario: &Scenario, name: &str, kernel: bool) {
    let server = TestServer::new();
    let backend = server.backend().await;
    let engine =
        Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket).unwrap();
    let pane = engine
        .open(OpenOptions {
            name: "rec".into(),
            cwd: Some(server.home().display().to_string()),
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    assert!(engine.wait_ready(&pane, WAIT).await, "{name}: no prompt");
    engine.wait_shell_up(&pane).await;
    for line in scenario.setup {
        let _ = engine
            .run(&pane, line, &SendOptions::default(), spec(2000), false)
            .await;
    }
    let path = fixtures().join(format!("{name}.jsonl"));
    let wait = WaitSpec {
        record: Some(path.clone()),
        ..(scenario.spec)()
    };
    let send = SendOptions {
        mark: scenario.mark.then(|| "f1xture".to_string()),
        ..SendOptions::default()
    };
    if let Some(after) = scenario.close_after {
        let (engine, pane) = (engine.clone(), pane.clone());
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let _ = engine.close(&pane).await;
        });
    }
    let out = engine
        .run(&pane, scenario.command, &send, wait, false)
        .await
        .unwrap();
    assert_eq!(
        (out.verdict.complete, out.verdict.layer),
        scenario.expect,
        "{name} (kernel facts: {kernel}): {:?} {}",
        out.verdict,
        out.output.meta
    );
    // The recording replays to the same verdict.
    let replayed =
        replay(&std::fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(replayed.verdict.map(|v| v.layer), Some(out.verdict.layer));
    println!(
        "recorded {name}: {:?} in {} steps",
        out.verdict.layer, replayed.steps
    );
}
