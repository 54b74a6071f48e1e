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
