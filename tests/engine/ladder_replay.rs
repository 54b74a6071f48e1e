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
use cohort::engine::Engine;
use cohort_terminal::{
    completion::{record::replay, Layer, Until, WaitSpec},
    OpenOptions, SendOptions,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/ladder")
}

/// Replays one recording and checks the ladder takes each recorded decision again
/// and comes to the recorded verdict.
fn replays_to_its_verdict(name: &str) {
    let file = fixtures().join(format!("{name}.jsonl"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
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

/// One test per recording, so a failure names its fixture and the rest still run.
macro_rules! ladder_fixtures {
    ($($test:ident => $file:literal,)*) => {
        mod replay_fixture {
            $(
                #[test]
                fn $test() {
                    super::replays_to_its_verdict($file);
                }
            )*
        }

        /// Every recording in `fixtures/ladder/` has its test above.
        #[test]
        fn every_recording_has_a_test() {
            let listed = [$($file),*];
            let mut missing: Vec<String> = std::fs::read_dir(fixtures())
                .expect("fixtures/ladder")
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .filter(|name| !listed.contains(&name.as_str()))
                .collect();
            missing.sort();
            assert!(
                missing.is_empty(),
                "recordings without a test (add them to ladder_fixtures!): {missing:?}"
            );
        }
    };
}

ladder_fixtures! {
    answer_ends_read => "answer-ends-read",
    answer_ends_read_noproc => "answer-ends-read-noproc",
    continuation => "continuation",
    continuation_noproc => "continuation-noproc",
    dropped_by_interrupt => "dropped-by-interrupt",
    dropped_by_interrupt_noproc => "dropped-by-interrupt-noproc",
    editor => "editor",
    editor_noproc => "editor-noproc",
    exec_shell => "exec-shell",
    exec_shell_noproc => "exec-shell-noproc",
    exit_0 => "exit-0",
    exit_0_noproc => "exit-0-noproc",
    exit_1 => "exit-1",
    exit_1_noproc => "exit-1-noproc",
    full_screen => "full-screen",
    full_screen_noproc => "full-screen-noproc",
    hook_prepended => "hook-prepended",
    hook_prepended_noproc => "hook-prepended-noproc",
    hook_replaced => "hook-replaced",
    hook_replaced_noproc => "hook-replaced-noproc",
    lost_hook => "lost-hook",
    lost_hook_noproc => "lost-hook-noproc",
    pager => "pager",
    pager_noproc => "pager-noproc",
    quiet_pause => "quiet-pause",
    quiet_pause_noproc => "quiet-pause-noproc",
    quiet_program => "quiet-program",
    quiet_program_noproc => "quiet-program-noproc",
    refused_history => "refused-history",
    refused_history_noproc => "refused-history-noproc",
    refused_syntax => "refused-syntax",
    refused_syntax_noproc => "refused-syntax-noproc",
    repl_block => "repl-block",
    repl_block_noproc => "repl-block-noproc",
    repl_waiting => "repl-waiting",
    repl_waiting_noproc => "repl-waiting-noproc",
    script_at_read => "script-at-read",
    script_at_read_noproc => "script-at-read-noproc",
    sentinel => "sentinel",
    sentinel_integrated => "sentinel-integrated",
    sentinel_integrated_noproc => "sentinel-integrated-noproc",
    sentinel_noproc => "sentinel-noproc",
    session_closing => "session-closing",
    session_closing_noproc => "session-closing-noproc",
    shell_read => "shell-read",
    shell_read_char => "shell-read-char",
    shell_read_char_noproc => "shell-read-char-noproc",
    shell_read_key => "shell-read-key",
    shell_read_key_noproc => "shell-read-key-noproc",
    shell_read_key_timed => "shell-read-key-timed",
    shell_read_key_timed_noproc => "shell-read-key-timed-noproc",
    shell_read_keys => "shell-read-keys",
    shell_read_keys_noproc => "shell-read-keys-noproc",
    shell_read_line_editor => "shell-read-line-editor",
    shell_read_line_editor_noproc => "shell-read-line-editor-noproc",
    shell_read_noproc => "shell-read-noproc",
    socket_read => "socket-read",
    socket_read_noproc => "socket-read-noproc",
    timeout => "timeout",
    timeout_noproc => "timeout-noproc",
    until => "until",
    until_noproc => "until-noproc",
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
    /// Press C-c this long after Enter.
    interrupt_after: Option<Duration>,
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
            interrupt_after: None,
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

    fn interrupted_after(self, after: Duration) -> Scenario {
        Scenario {
            interrupt_after: Some(after),
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
        // The shell busy in its prompt hook (no child, no mark) when the line comes:
        // the C-c pressed before it read the line drops it, and nothing runs.
        Scenario::new("dropped-by-interrupt", "sleep 30", DONE)
            .after(&[
                "PROMPT_COMMAND=\"${PROMPT_COMMAND}; for ((i = 0; i < 1500000; i++)); do :; done\"",
            ])
            .interrupted_after(Duration::from_millis(100)),
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
        .terminal
        .open(OpenOptions {
            name: "rec".into(),
            cwd: Some(server.home().display().to_string()),
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    assert!(
        engine.terminal.wait_ready(&pane, WAIT).await,
        "{name}: no prompt"
    );
    engine.terminal.wait_shell_up(&pane).await;
    for line in scenario.setup {
        let _ = engine
            .terminal
            .run(
                &pane,
                line,
                &SendOptions::default(),
                spec(2000),
                false,
                &cohort_terminal::Caller::new("test"),
            )
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
    if let Some(after) = scenario.interrupt_after {
        let (engine, pane) = (engine.clone(), pane.clone());
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let interrupt = ["C-c".parse().unwrap()];
            let caller = cohort_terminal::Caller::new("test");
            let _ = engine
                .terminal
                .keys(&pane, &interrupt, &caller, false)
                .await;
        });
    }
    if let Some(after) = scenario.close_after {
        let (engine, pane) = (engine.clone(), pane.clone());
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let _ = engine.terminal.close(&pane).await;
        });
    }
    let out = engine
        .terminal
        .run(
            &pane,
            scenario.command,
            &send,
            wait,
            false,
            &cohort_terminal::Caller::new("test"),
        )
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
    if scenario.interrupt_after.is_some() {
        let hint = out.verdict.hint.clone().unwrap_or_default();
        assert!(
            hint.contains("the interrupt (C-c) reached it before it had read the line"),
            "{name}: {:?}",
            out.verdict
        );
    }
    // The recording replays to the same verdict.
    let replayed =
        replay(&std::fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(replayed.verdict.map(|v| v.layer), Some(out.verdict.layer));
    println!(
        "recorded {name}: {:?} in {} steps",
        out.verdict.layer, replayed.steps
    );
}
