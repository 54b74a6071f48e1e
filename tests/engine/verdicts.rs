//! Verdicts from honest use that once came out wrong, each against a real shell in
//! real tmux: keys read by the shell itself, prompt hooks users extend, lines the
//! shell refuses, the sentinel in integrated shells, REPL blocks, and the hints.
//! The ladder's decisions for each are also recorded in `fixtures/ladder/` (see
//! `ladder_replay.rs`).

use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use cohort::engine::Engine;
use cohort_backends::{Key, PaneId, PaneState};
use cohort_terminal::{
    completion::{Layer, Until, WaitSpec},
    OpenOptions, RunOutput, SendOptions,
};

async fn shell_session(server: &TestServer) -> (Engine, PaneId) {
    let backend = server.backend().await;
    let engine =
        Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket).unwrap();
    let pane = engine
        .terminal
        .open(OpenOptions::named("verdicts"))
        .await
        .unwrap()
        .id;
    assert!(engine.terminal.wait_ready(&pane, WAIT).await, "no prompt");
    engine.terminal.wait_shell_up(&pane).await;
    (engine, pane)
}

fn spec(timeout_ms: u64) -> WaitSpec {
    WaitSpec {
        timeout: Duration::from_millis(timeout_ms),
        ..WaitSpec::default()
    }
}

fn until(text: &str) -> WaitSpec {
    WaitSpec {
        until: Some(Until::new(text, false).unwrap()),
        ..spec(10_000)
    }
}

async fn run_with(
    engine: &Engine,
    pane: &PaneId,
    command: &str,
    send: &SendOptions,
    spec: WaitSpec,
) -> RunOutput {
    engine
        .terminal
        .run(
            pane,
            command,
            send,
            spec,
            false,
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .unwrap_or_else(|e| panic!("{command}: {e}"))
}

async fn run(engine: &Engine, pane: &PaneId, command: &str, spec: WaitSpec) -> RunOutput {
    run_with(engine, pane, command, &SendOptions::default(), spec).await
}

fn verdict(out: &RunOutput) -> (bool, Layer, Option<i32>) {
    (
        out.verdict.complete,
        out.verdict.layer,
        out.verdict.exit_status,
    )
}

#[tokio::test]
async fn keys_the_shell_reads_itself_are_questions_not_ends() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;
    for command in [
        "read -n1 -p 'Continue? [y/n] ' yn",
        "read -N1 key",
        "read -n3 keys",
        "read -t 5 -n1 key",
        "read -e -p 'Path: ' path",
    ] {
        let out = run(&engine, &pane, command, spec(10_000)).await;
        assert_eq!(
            (out.verdict.complete, out.verdict.layer),
            (false, Layer::Nested),
            "{command}: {:?}",
            out.verdict
        );
        let hint = out.verdict.hint.clone().unwrap_or_default();
        assert!(hint.contains("answer it with send"), "{command}: {hint}");
        // Stop it, and be back at the prompt for the next one.
        engine
            .terminal
            .keys(
                &pane,
                &["C-c".parse::<Key>().unwrap()],
                &cohort_terminal::Caller::new("test"),
                false,
            )
            .await
            .unwrap();
        let out = run(&engine, &pane, "true", spec(10_000)).await;
        assert_eq!(
            verdict(&out),
            (true, Layer::Exit, Some(0)),
            "after {command}: {:?}",
            out.output.text
        );
    }
}

#[tokio::test]
async fn statuses_survive_what_users_add_to_the_prompt_hook() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;
    for hook in [
        r#"PROMPT_COMMAND="history -a; ${PROMPT_COMMAND}""#,
        r#"PROMPT_COMMAND="${PROMPT_COMMAND}; (exit 9)""#,
        r#"PROMPT_COMMAND="(exit 8); ${PROMPT_COMMAND}""#,
    ] {
        run(&engine, &pane, hook, spec(10_000)).await;
        let out = run(&engine, &pane, "(exit 4)", spec(10_000)).await;
        assert_eq!(verdict(&out), (true, Layer::Exit, Some(4)), "after {hook}");
        let out = run(&engine, &pane, "true", spec(10_000)).await;
        assert_eq!(verdict(&out), (true, Layer::Exit, Some(0)), "after {hook}");
    }
}

#[tokio::test]
async fn a_line_the_shell_refuses_is_over_with_its_message() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;
    // The shell's first command shows that it announces starts.
    run(&engine, &pane, "true", spec(10_000)).await;
    for (line, message) in [("echo hi!'", "event not found"), ("echo )", "syntax error")] {
        let out = run(&engine, &pane, line, spec(10_000)).await;
        // A failed history expansion is refused while the line is read (no mark at
        // all), a syntax error once it is (the prompt comes back without a start).
        assert!(
            out.verdict.complete
                && matches!(out.verdict.layer, Layer::Exit | Layer::Quiescence)
                && out.verdict.exit_status.is_none(),
            "{line}: {:?}",
            out.verdict
        );
        assert!(
            out.output.text.contains(message),
            "{line}: {:?}",
            out.output.text
        );
        let hint = out.verdict.hint.clone().unwrap_or_default();
        assert!(hint.contains("ran nothing"), "{line}: {hint}");
    }
    // Nothing is left behind: the next command is the next command.
    let out = run(&engine, &pane, "echo next", spec(10_000)).await;
    assert_eq!(verdict(&out), (true, Layer::Exit, Some(0)));
    assert_eq!(out.output.text.trim(), "next");
}

/// A line the shell read (refused with a syntax error, or left open at its
/// continuation prompt) and a C-c after it: waiting again on it never says the
/// interrupt dropped it before it was read.
#[tokio::test]
async fn a_line_the_shell_read_is_never_said_dropped_by_a_later_interrupt() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;
    run(&engine, &pane, "true", spec(10_000)).await;
    let caller = cohort_terminal::Caller::new("test");
    let interrupt = ["C-c".parse::<Key>().unwrap()];
    for line in ["echo )", "echo \"unclosed"] {
        let out = run(&engine, &pane, line, spec(3_000)).await;
        assert!(
            !out.verdict
                .hint
                .clone()
                .unwrap_or_default()
                .contains("interrupt"),
            "{line}: {:?}",
            out.verdict
        );
        engine
            .terminal
            .keys(&pane, &interrupt, &caller, false)
            .await
            .unwrap();
        let again = engine.terminal.wait(&pane, spec(3_000)).await.unwrap();
        let hint = again.hint.clone().unwrap_or_default();
        assert!(!hint.contains("dropped"), "{line}, waited again: {again:?}");
    }
}

#[tokio::test]
async fn the_sentinel_never_shows_in_the_output() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;
    let send = SendOptions {
        mark: Some("t3st".into()),
        ..SendOptions::default()
    };
    let out = run_with(&engine, &pane, "echo marked; (exit 3)", &send, spec(10_000)).await;
    assert!(out.verdict.complete, "{:?}", out.verdict);
    assert_eq!(out.verdict.exit_status, Some(3));
    assert_eq!(out.output.text.trim(), "marked", "{:?}", out.output.text);
}

#[tokio::test]
async fn a_block_typed_into_a_repl_closes_on_its_empty_line() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;
    let out = run(&engine, &pane, "python3 -q", until(">>> ")).await;
    assert_eq!(out.verdict.layer, Layer::Until, "{:?}", out.verdict);

    let out = run(
        &engine,
        &pane,
        "def answer():\n    return 41 + 1\n\n",
        until(">>> "),
    )
    .await;
    assert_eq!(
        (out.verdict.complete, out.verdict.layer),
        (true, Layer::Until),
        "the block stayed open: {:?} {:?}",
        out.verdict,
        out.output.text
    );
    let out = run(&engine, &pane, "answer()", until(">>> ")).await;
    assert!(out.output.text.contains("42"), "{:?}", out.output.text);
    assert!(!out.output.text.contains("Error"), "{:?}", out.output.text);
}

#[tokio::test]
async fn a_block_typed_into_a_repl_answers_with_everything_it_printed() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;
    let out = run(&engine, &pane, "python3 -q", until(">>> ")).await;
    assert_eq!(out.verdict.layer, Layer::Until, "{:?}", out.verdict);

    // The REPL runs each line as it comes: the traceback of the second line is
    // printed before the last line is typed, and is part of the answer.
    let out = run(
        &engine,
        &pane,
        "x = 1\nraise KeyError('mid')\ny = 2\nprint('after', y)",
        until(">>> "),
    )
    .await;
    let text = &out.output.text;
    assert!(out.verdict.complete, "{:?} {text:?}", out.verdict);
    for printed in ["KeyError: 'mid'", "Traceback", "after 2"] {
        assert!(text.contains(printed), "{printed:?} lost: {text:?}");
    }
    let order = |needle: &str| text.find(needle).unwrap_or(usize::MAX);
    assert!(order("KeyError: 'mid'") < order("after 2"), "{text:?}");

    // A loop's own output, and a block that ends on its indented line with a single
    // newline: submitted with the empty line Python needs to close it.
    let out = run(
        &engine,
        &pane,
        "for i in range(3):\n    print('loop', i)\n",
        until(">>> "),
    )
    .await;
    let text = &out.output.text;
    assert_eq!(
        (out.verdict.complete, out.verdict.layer),
        (true, Layer::Until),
        "the block stayed open: {:?} {text:?}",
        out.verdict
    );
    for i in 0..3 {
        assert!(text.contains(&format!("loop {i}")), "{text:?}");
    }

    // An IndentationError between lines is kept too.
    let out = run(
        &engine,
        &pane,
        "z = 3\n  w = 4\nprint('z is', z)",
        until(">>> "),
    )
    .await;
    let text = &out.output.text;
    assert!(text.contains("IndentationError"), "{text:?}");
    assert!(text.contains("z is 3"), "{text:?}");
}

#[tokio::test]
async fn hints_name_what_is_in_the_foreground() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;

    // A REPL's prompt is offered to `until`...
    let out = run(&engine, &pane, "python3 -q", spec(10_000)).await;
    assert_eq!(
        (out.verdict.complete, out.verdict.layer),
        (false, Layer::Nested)
    );
    let hint = out.verdict.hint.clone().unwrap_or_default();
    assert!(hint.contains(r#"until: ">>> ""#), "{hint}");
    run(&engine, &pane, "exit()", spec(10_000)).await;

    // ...a full-screen program's is not a REPL's.
    let out = run(&engine, &pane, "top -d 30", spec(10_000)).await;
    assert_eq!(
        (out.verdict.complete, out.verdict.layer),
        (false, Layer::Nested)
    );
    let hint = out.verdict.hint.clone().unwrap_or_default();
    assert!(!hint.contains(">>>"), "{hint}");
    assert!(hint.contains("mode: screen"), "{hint}");
    engine
        .terminal
        .keys(
            &pane,
            &["q".parse::<Key>().unwrap()],
            &cohort_terminal::Caller::new("test"),
            false,
        )
        .await
        .unwrap();
    let out = run(&engine, &pane, "true", spec(10_000)).await;
    assert!(out.verdict.complete, "{:?}", out.verdict);

    // A shell that replaced itself is back at a prompt of its own, not reading input
    // inside a command.
    let out = run(&engine, &pane, "exec sh", spec(10_000)).await;
    assert_eq!(
        (out.verdict.complete, out.verdict.layer),
        (true, Layer::Quiescence),
        "{:?}",
        out.verdict
    );
    let hint = out.verdict.hint.clone().unwrap_or_default();
    assert!(hint.contains("no longer reports"), "{hint}");
    let out = run(&engine, &pane, "echo from-sh", spec(10_000)).await;
    assert!(out.verdict.complete, "{:?}", out.verdict);
    assert!(out.output.text.contains("from-sh"), "{:?}", out.output.text);
}

#[tokio::test]
async fn a_shell_without_marks_reading_inside_a_command_is_waiting_not_done() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;
    // A shell without the integration: no marks, only what the kernel tells.
    let out = run(&engine, &pane, "exec bash --norc", spec(10_000)).await;
    assert!(out.verdict.complete, "{:?}", out.verdict);
    let key = |k: &'static str| {
        let engine = &engine;
        let pane = &pane;
        async move {
            engine
                .terminal
                .keys(
                    pane,
                    &[k.parse().unwrap()],
                    &cohort_terminal::Caller::new("test"),
                    false,
                )
                .await
                .unwrap();
        }
    };

    // `read -n1` reads a key with the kernel's echo on; bash's own prompt edits its
    // line with echo off. And `read` of a line is line mode, which bash's prompt never is.
    for (command, answer) in [
        ("read -n1 k; echo got-$k", "y"),
        ("read line; echo got-$line", "y"),
    ] {
        let out = run(&engine, &pane, command, spec(10_000)).await;
        assert_eq!(
            (out.verdict.complete, out.verdict.layer),
            (false, Layer::Nested),
            "{command}: {:?}",
            out.verdict
        );
        let hint = out.verdict.hint.clone().unwrap_or_default();
        assert!(hint.contains("waiting for input"), "{command}: {hint}");
        key(answer).await;
        if command.starts_with("read line") {
            key("Enter").await;
        }
        let out = run(&engine, &pane, "echo next-$((1+1))", spec(10_000)).await;
        assert!(out.verdict.complete, "{command}: {:?}", out.verdict);
        assert!(out.output.text.contains("next-2"), "{:?}", out.output.text);
    }
}

#[tokio::test]
async fn a_session_running_a_program_reports_the_program() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let engine =
        Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket).unwrap();
    let pane = engine
        .terminal
        .open(OpenOptions {
            command: Some("cat".into()),
            ..OpenOptions::named("cat")
        })
        .await
        .unwrap()
        .id;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let status = engine.terminal.session_status(&pane).await.unwrap();
        if status.state.foreground_command == "cat" {
            assert!(!status.state.at_shell(), "{:?}", status.state);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the foreground is never cat: {:?}",
            status.state
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `program` holds the pane's terminal; its state then.
async fn until_foreground(engine: &Engine, pane: &PaneId, program: &str) -> PaneState {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let status = engine.terminal.session_status(pane).await.unwrap();
        if status.state.foreground_command == program {
            return status.state;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{program} never held the terminal: {:?}",
            status.state
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn press(engine: &Engine, pane: &PaneId, key: &str) {
    engine
        .terminal
        .keys(
            pane,
            &[key.parse::<Key>().unwrap()],
            &cohort_terminal::Caller::new("test"),
            false,
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn an_interrupt_the_shell_took_for_a_command_it_was_starting_is_pressed_again() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;
    // The shell ignores C-c, and its line first loops in the shell itself (which holds
    // the terminal meanwhile), then runs a program that takes SIGINT's default: a C-c
    // pressed during the loop reaches the shell only, as one pressed in the instant
    // between the shell starting a command and handing it the terminal does.
    run(&engine, &pane, "trap '' INT", spec(10_000)).await;
    engine
        .terminal
        .send(
            &pane,
            "for ((i = 0; i < 60000; i++)); do :; done; python3 -S -c 'import signal, time; \
             signal.signal(signal.SIGINT, signal.SIG_DFL); time.sleep(60)'",
            &SendOptions::default(),
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .unwrap();
    press(&engine, &pane, "C-c").await;
    let verdict = engine.terminal.wait(&pane, spec(10_000)).await.unwrap();
    assert_eq!(
        (verdict.complete, verdict.exit_status),
        (true, Some(130)),
        "the command was never interrupted: {verdict:?}"
    );
}

#[tokio::test]
async fn an_interrupt_pressed_while_the_command_held_the_terminal_is_not_pressed_again() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;
    // The command holds the terminal and reads C-c as a key (no signal); by the time
    // the press is judged the terminal sends signals again. The command had the key:
    // pressing it again would give it a second one.
    run(&engine, &pane, "stty -isig", spec(10_000)).await;
    engine
        .terminal
        .send(
            &pane,
            "sleep 60",
            &SendOptions::default(),
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .unwrap();
    let state = until_foreground(&engine, &pane, "sleep").await;
    let tty = state.tty.clone().expect("tmux names the pane's terminal");
    let signals_again = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let set = std::process::Command::new("stty")
            .args(["-F", &tty, "isig"])
            .status()
            .unwrap();
        assert!(set.success(), "stty -F {tty} isig");
    });
    press(&engine, &pane, "C-c").await;
    signals_again.await.unwrap();
    let verdict = engine.terminal.wait(&pane, spec(1_000)).await.unwrap();
    assert!(!verdict.complete, "C-c was pressed again: {verdict:?}");
}

#[tokio::test]
async fn an_interrupt_the_command_took_is_not_pressed_again() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;
    // It catches SIGINT and carries on: a second C-c would be taken twice.
    engine
        .terminal
        .send(
            &pane,
            "bash -c 'trap \"echo caught-\\$((1+1))\" INT; echo armed-$((2+3)); while :; do sleep 0.05; done'",
            &SendOptions::default(),
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .unwrap();
    // Its trap is set once it says so.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let screen = engine.terminal.screen(&pane).await.unwrap().rows.join("\n");
        if screen.contains("armed-5") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never armed: {screen}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    press(&engine, &pane, "C-c").await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let screen = engine.terminal.screen(&pane).await.unwrap().rows.join("\n");
    assert_eq!(
        screen.matches("caught-2").count(),
        1,
        "the interrupt was not taken once: {screen}"
    );
}

#[tokio::test]
async fn keys_after_an_interrupt_that_start_the_command_again_are_not_interrupted() {
    let server = TestServer::new();
    let (engine, pane) = shell_session(&server).await;
    run(&engine, &pane, "sleep 30", spec(200)).await;
    let before = until_foreground(&engine, &pane, "sleep").await;
    // Stopped, then started again from the history: the new one runs on.
    engine
        .terminal
        .keys(
            &pane,
            &["C-c", "Up", "Enter"].map(|k| k.parse::<Key>().unwrap()),
            &cohort_terminal::Caller::new("test"),
            false,
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = until_foreground(&engine, &pane, "sleep").await;
    assert_ne!(
        after.foreground_pid, before.foreground_pid,
        "the first sleep was not stopped"
    );
}
