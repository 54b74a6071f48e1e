//! Marks a program prints are never taken for the shell's: a forged `D`, a `cat` of
//! a terminal log, a nested shell's own integration; and a shell that exited
//! refuses typing. Run on both backends like the rest of the engine parity suite.

use super::*;
use crate::support::parity;

/// A forged `D` mid-command is not the shell's: unsigned, or announced in iTerm2's
/// `cohortMark` user variable with a key that is not the pane's.
async fn ladder_forged_mark(ctx: Ctx) {
    let pane = ctx.shell("forged").await;
    let forged = "printf 'x\\033]133;D;0\\007\\033]133;A\\007$ \\033]133;B\\007'; \
                  printf '\\033]1337;SetUserVar=cohortMark=%s\\007\\033]133;D;0\\007' \"$(printf 'D;cohort=forged' | base64)\"; \
                  sleep 1; echo after-the-forged-marks; (exit 3)";
    let out = ctx.run(&pane, forged, spec(15_000)).await;
    assert_eq!(
        decided(&out),
        (true, Layer::Exit, Some(3)),
        "on {:?}: {:?}",
        ctx.which,
        out.verdict
    );
    assert!(
        out.output.text.contains("after-the-forged-marks"),
        "on {:?}: {:?}",
        ctx.which,
        out.output.text
    );
}
parity!(EngineOn::start, ladder_forged_mark_, ladder_forged_mark);

/// A `cat` of a recorded terminal log full of marks does not end the command.
async fn ladder_cat_of_marks(ctx: Ctx) {
    let pane = ctx.shell("log").await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.log");
    let mut recorded = Vec::new();
    for i in 0..50 {
        recorded.extend_from_slice(
            format!(
                "\x1b]133;A\x07$ \x1b]133;B\x07cmd{i}\r\n\x1b]133;C\x07out{i}\r\n\x1b]133;D;{}\x07",
                i % 3
            )
            .as_bytes(),
        );
    }
    std::fs::write(&log, recorded).unwrap();
    let command = format!(
        "cat {}; sleep 1; echo after-the-log; (exit 6)",
        log.display()
    );
    let out = ctx.run(&pane, &command, spec(15_000)).await;
    assert_eq!(
        decided(&out),
        (true, Layer::Exit, Some(6)),
        "on {:?}: {:?}",
        ctx.which,
        out.verdict
    );
    assert!(
        out.output.text.contains("after-the-log"),
        "on {:?}: {:?}",
        ctx.which,
        out.output.text
    );
}
parity!(EngineOn::start, ladder_cat_of_marks_, ladder_cat_of_marks);

/// Runs `commands` in `pane` while its raw output is logged (as a user's terminal log
/// would keep it), and returns a copy of that log: the shell's own signed marks, one
/// `D` at least per command, ready to be replayed into the pane.
async fn signed_marks_log(ctx: &Ctx, pane: &PaneId, commands: &[&str]) -> std::path::PathBuf {
    let log = ctx.terminal.start_raw_log(pane).await;
    for command in commands {
        ctx.run(pane, command, spec(10_000)).await;
    }
    // A copy: `cat` of the live log would read its own output back forever.
    let snapshot = log.with_extension("snapshot");
    ctx.run(
        pane,
        &format!("cp '{}' '{}'", log.display(), snapshot.display()),
        spec(10_000),
    )
    .await;
    let raw = std::fs::read(&snapshot).unwrap();
    assert!(
        String::from_utf8_lossy(&raw).matches("133;D").count() >= commands.len(),
        "on {:?}: the log holds no marks to replay: {:?}",
        ctx.which,
        String::from_utf8_lossy(&raw)
    );
    snapshot
}

/// The shell's own signed marks, replayed from a raw log of the pane (a user's
/// terminal log, a recording made outside cohort), do not end a command: each token
/// verifies once. Fails where a replayed signature still verifies (a per-pane key).
async fn ladder_replayed_marks(ctx: Ctx) {
    let pane = ctx.shell("replay").await;
    let snapshot = signed_marks_log(&ctx, &pane, &["echo one", "false", "echo three"]).await;
    let command = format!(
        "cat '{}'; sleep 1; echo after-the-replay; (exit 3)",
        snapshot.display()
    );
    let out = ctx.run(&pane, &command, spec(15_000)).await;
    assert_eq!(
        decided(&out),
        (true, Layer::Exit, Some(3)),
        "on {:?}: {:?}",
        ctx.which,
        out.verdict
    );
    assert!(
        out.output.text.contains("after-the-replay"),
        "on {:?}: {:?}",
        ctx.which,
        out.output.text
    );
}
parity!(
    EngineOn::start,
    ladder_replayed_marks_,
    ladder_replayed_marks
);

/// A server that adopts a pane from one that left takes no token the first saw spent:
/// a replay started under the first is not taken by the second.
async fn adopted_pane_takes_no_spent_token(ctx: Ctx) {
    let pane = ctx.shell("adopted").await;
    let snapshot = signed_marks_log(&ctx, &pane, &["echo one", "false"]).await;
    let replay = format!(
        "sleep 2; cat '{}'; sleep 1; echo after-the-replay; (exit 3)",
        snapshot.display()
    );
    let EngineOn {
        which,
        engine: first,
        terminal,
    } = ctx;
    first
        .terminal
        .send(
            &pane,
            &replay,
            &SendOptions::default(),
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .unwrap();
    // The command has started, its mark seen and stamped, when the first server goes.
    tokio::time::sleep(Duration::from_millis(700)).await;
    drop(first);

    let (state, key) = terminal.engine_home();
    let second = cohort::engine::Engine::with_backend(terminal.backend().await, &state, &key)
        .expect("a second engine");
    second.terminal.adopt().await.unwrap();
    let verdict = second.terminal.wait(&pane, spec(15_000)).await.unwrap();
    assert_eq!(
        (verdict.layer, verdict.exit_status),
        (Layer::Exit, Some(3)),
        "on {which:?}: a replayed mark ended the command: {verdict:?}"
    );
}
parity!(
    EngineOn::start,
    adopted_pane_takes_no_spent_token_,
    adopted_pane_takes_no_spent_token
);

/// A nested shell with an OSC 133 integration of its own: its marks are unsigned,
/// so its commands are decided by `mark: true`.
async fn ladder_nested_integration(ctx: Ctx) {
    let pane = ctx.shell("nested").await;
    ctx.run(&pane, "bash --norc --noprofile", spec(10_000))
        .await;
    ctx.run(
        &pane,
        "PROMPT_COMMAND='printf \"\\033]133;D;$?\\007\\033]133;A\\007\"'; PS0='\\033]133;C\\007'; PS1='$ \\[\\033]133;B\\007\\]'",
        spec(10_000),
    )
    .await;
    let marked = SendOptions {
        mark: Some("n3st".into()),
        ..SendOptions::default()
    };
    let out = ctx
        .run_with(
            &pane,
            "sleep 1; echo nested-done; (exit 5)",
            &marked,
            spec(15_000),
        )
        .await;
    assert_eq!(
        decided(&out),
        (true, Layer::Mark, Some(5)),
        "on {:?}: {:?}",
        ctx.which,
        out.verdict
    );
    assert!(
        out.output.text.contains("nested-done"),
        "on {:?}: {:?}",
        ctx.which,
        out.output.text
    );
}
parity!(
    EngineOn::start,
    ladder_nested_integration_,
    ladder_nested_integration
);

/// Typing into a shell that exited is refused, with its status, on every backend.
async fn exited_shell_refuses_typing(ctx: Ctx) {
    let pane = ctx.shell("exits").await;
    let out = ctx.run(&pane, "exit 7", spec(10_000)).await;
    assert_eq!(
        decided(&out),
        (true, Layer::Exit, Some(7)),
        "on {:?}: {:?}",
        ctx.which,
        out.verdict
    );
    let refused = ctx
        .engine
        .terminal
        .run(
            &pane,
            "echo hi",
            &SendOptions::default(),
            spec(10_000),
            false,
            &cohort_terminal::Caller::new("test"),
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(cohort_terminal::TerminalError::Exited {
                status: Some(7),
                ..
            })
        ),
        "on {:?}: {refused:?}",
        ctx.which
    );
}
parity!(
    EngineOn::start,
    exited_shell_refuses_typing_,
    exited_shell_refuses_typing
);
