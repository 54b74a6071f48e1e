//! The completion ladder's reference tests: sessions recorded from real tmux runs
//! (`fixtures/ladder/*.jsonl`) replayed through the ladder, which must take every
//! recorded decision again and come to the recorded verdict.
//!
//! `record_ladder_fixtures` makes them (it is ignored by default; run
//! `cargo test --test engine ladder_replay -- --ignored` to record them again, with
//! `COHORT_RECORD_ONLY=<part of a name>` to record some): each
//! scenario runs through the engine on a private tmux server with its wait recorded,
//! once with the kernel's process facts and once with the `/proc` reader switched off,
//! as a host without `/proc` (macOS) gives them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use cohort::engine::completion::record::replay;
use cohort::engine::completion::{Layer, Until, WaitSpec};
use cohort::engine::{Engine, OpenOptions, SendOptions};

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
    assert!(files.len() >= 60, "only {} recordings", files.len());
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
/// real terminal gives, with and without the kernel's process facts.
struct Scenario {
    name: &'static str,
    setup: &'static [&'static str],
    command: &'static str,
    spec: fn() -> WaitSpec,
    mark: bool,
    /// Close the session this long after Enter.
    close_after: Option<Duration>,
    expect: (bool, Layer),
    /// The verdict without `/proc`, when it differs: the facts every POSIX system has
    /// cannot tell some waits apart, and then a quiet command is still running.
    expect_noproc: Option<(bool, Layer)>,
}

impl Scenario {
    fn new(name: &'static str, command: &'static str, expect: (bool, Layer)) -> Scenario {
        Scenario {
            name,
            setup: &[],
            command,
            spec: || spec(10_000),
            mark: false,
            close_after: None,
            expect,
            expect_noproc: None,
        }
    }

    fn after(self, setup: &'static [&'static str]) -> Scenario {
        Scenario { setup, ..self }
    }

    fn waiting(self, spec: fn() -> WaitSpec) -> Scenario {
        Scenario { spec, ..self }
    }

    fn marked(self) -> Scenario {
        Scenario { mark: true, ..self }
    }

    fn closed_after(self, after: Duration) -> Scenario {
        Scenario {
            close_after: Some(after),
            ..self
        }
    }

    fn without_proc(self, expect: (bool, Layer)) -> Scenario {
        Scenario {
            expect_noproc: Some(expect),
            ..self
        }
    }
}

fn spec(timeout_ms: u64) -> WaitSpec {
    WaitSpec {
        timeout: Duration::from_millis(timeout_ms),
        ..WaitSpec::default()
    }
}

fn until_prompt() -> WaitSpec {
    WaitSpec {
        until: Some(Until::new(">>> ", false).unwrap()),
        ..spec(10_000)
    }
}

fn scenarios() -> Vec<Scenario> {
    const DONE: (bool, Layer) = (true, Layer::Exit);
    const NESTED: (bool, Layer) = (false, Layer::Nested);
    const TIMEOUT: (bool, Layer) = (false, Layer::Timeout);
    const QUIET: (bool, Layer) = (true, Layer::Quiescence);
    let short = || spec(2500);
    vec![
        Scenario::new("exit-0", "true", DONE),
        Scenario::new("exit-1", "false", DONE),
        Scenario::new("quiet-pause", "echo a; sleep 1.2; echo b", DONE),
        Scenario::new("repl-waiting", "python3 -q", NESTED),
        Scenario::new("editor", "vi -u NONE notes.txt", NESTED),
        Scenario::new("pager", "seq 1 500 | less", NESTED),
        Scenario::new("continuation", "echo \"unclosed", NESTED),
        Scenario::new("script-at-read", "bash -c 'read -r answer; echo got $answer'", NESTED)
            .waiting(short)
            .without_proc(TIMEOUT),
        Scenario::new(
            "socket-read",
            "python3 -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); c = socket.create_connection(s.getsockname()); c.recv(1)\"",
            TIMEOUT,
        )
        .waiting(short),
        Scenario::new("quiet-program", "python3 -c 'import time; time.sleep(30)'", TIMEOUT)
            .waiting(short),
        Scenario::new("session-closing", "sleep 30", (false, Layer::Closed))
            .closed_after(Duration::from_millis(700)),
        Scenario::new("sentinel", "echo inner; (exit 3)", (true, Layer::Mark))
            .after(&["bash --norc --noprofile"])
            .marked(),
        Scenario::new("sentinel-integrated", "echo marked; (exit 3)", (true, Layer::Mark)).marked(),
        Scenario::new("until", "python3 -q", (true, Layer::Until)).waiting(until_prompt),
        Scenario::new("repl-block", "def answer():\n    return 42\n\n", (true, Layer::Until))
            .after(&["python3 -q"])
            .waiting(until_prompt),
        Scenario::new("timeout", "sleep 30", TIMEOUT).waiting(|| spec(1000)),
        Scenario::new("shell-read", "read -r line", NESTED)
            .waiting(short)
            .without_proc(TIMEOUT),
        Scenario::new("shell-read-key", "read -n1 -p 'Continue? [y/n] ' yn", NESTED),
        Scenario::new("shell-read-char", "read -N1 key", NESTED),
        Scenario::new("shell-read-keys", "read -n3 keys", NESTED),
        Scenario::new("shell-read-key-timed", "read -t 5 -n1 key", NESTED),
        Scenario::new("shell-read-line-editor", "read -e -p 'Path: ' path", NESTED),
        Scenario::new("answer-ends-read", "hello", DONE).after(&["read -r line"]),
        Scenario::new("lost-hook", "echo hooked-out", QUIET).after(&["PROMPT_COMMAND="]),
        Scenario::new("hook-replaced", "PROMPT_COMMAND='echo hook'", QUIET),
        Scenario::new("hook-prepended", "(exit 4)", DONE)
            .after(&["PROMPT_COMMAND=\"history -a; ${PROMPT_COMMAND}\""]),
        Scenario::new("exec-shell", "exec sh", QUIET),
        Scenario::new("refused-history", "echo hi!'", QUIET).after(&["true"]),
        Scenario::new("refused-syntax", "echo )", DONE).after(&["true"]),
        Scenario::new("full-screen", "top -d 30", NESTED),
    ]
}

#[tokio::test]
#[ignore = "records fixtures/ladder/ from real tmux; run with --ignored to refresh them"]
async fn record_ladder_fixtures() {
    // `COHORT_RECORD_ONLY=shell-read` records only the scenarios whose names hold it.
    let only = std::env::var("COHORT_RECORD_ONLY").unwrap_or_default();
    for kernel in [true, false] {
        cohort_backends::process::set_proc_reader(kernel);
        for scenario in scenarios().into_iter().filter(|s| s.name.contains(&only)) {
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
    let expect = match scenario.expect_noproc {
        Some(expect) if !kernel => expect,
        _ => scenario.expect,
    };
    assert_eq!(
        (out.verdict.complete, out.verdict.layer),
        expect,
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
