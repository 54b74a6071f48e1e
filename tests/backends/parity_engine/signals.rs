//! Signals: a program in a session tells cohort something with iTerm2's custom
//! control sequence and its pane's secret (`$COHORT_SIGNAL_ID`); the same on tmux
//! (found in the output stream) and on iTerm2 (its custom-escape notification).
//! A sequence with another secret (another pane's, a guess) is dropped, and the
//! secret is in no read. Run on both backends like the rest of the engine parity
//! suite.

use super::*;
use crate::support::parity;
use cohort_terminal::events::EngineEvent;

/// The payloads of the signals published for `pane` until `last` is among them (or
/// the deadline).
async fn signals_until(
    events: &mut tokio::sync::broadcast::Receiver<EngineEvent>,
    pane: &PaneId,
    last: &str,
) -> Vec<String> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !seen.iter().any(|s| s == last) {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(EngineEvent::Signal { pane: p, payload })) if &p == pane => seen.push(payload),
            Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
            Ok(Err(e)) => panic!("the bus closed: {e}"),
            Err(_) => panic!("no signal {last:?} from {pane}; seen {seen:?}"),
        }
    }
    seen
}

async fn programs_signal_with_their_panes_secret(ctx: Ctx) {
    // Another cohort process, started before the sessions open: it learns their
    // sessions when they first signal.
    let second = ctx.second_engine().await;
    let mut seconds = second.terminal.events();
    let pane = ctx.shell("signaller").await;
    let other = ctx.shell("bystander").await;
    let mut events = ctx.engine.terminal.events();
    // Each pane has its own secret, in its environment (written to a file, so no
    // output holds it).
    let dir = tempfile::tempdir().unwrap();
    let secret_of = |pane: PaneId| {
        let ctx = &ctx;
        let file = dir.path().join(pane.as_str().replace(['%', '/'], "_"));
        async move {
            let command = format!("printf %s \"$COHORT_SIGNAL_ID\" > '{}'", file.display());
            let out = ctx.run(&pane, &command, spec(10_000)).await;
            assert!(out.verdict.complete, "{:?}", out.verdict);
            std::fs::read_to_string(&file).unwrap()
        }
    };
    let mine = secret_of(pane.clone()).await;
    let theirs = secret_of(other.clone()).await;
    assert_eq!(mine.len(), 64, "on {:?}: {mine:?}", ctx.which);
    assert_ne!(mine, theirs);

    // The pane's own secret, the other pane's, a guess, none: only the first counts,
    // and the signals come in the order written, split writes and all.
    let script = format!(
        "printf '\\033]1337;Custom=id=%s:%s\\007' \"$COHORT_SIGNAL_ID\" 'build done: 3 warnings'; \
         printf '\\033]1337;Custom=id={theirs}:forged by another pane\\007'; \
         printf '\\033]1337;Custom=id=0000:guessed\\007'; \
         printf '\\033]1337;Custom=forged without id\\007'; \
         printf '\\033]1337;Cus'; sleep 0.2; printf 'tom=id=%s:split write\\007' \"$COHORT_SIGNAL_ID\"; \
         printf '\\033]1337;Custom=id=%s:last\\033\\\\' \"$COHORT_SIGNAL_ID\"; echo printed-after"
    );
    let out = ctx.run(&pane, &script, spec(15_000)).await;
    assert!(
        out.verdict.complete,
        "on {:?}: {:?}",
        ctx.which, out.verdict
    );
    let seen = signals_until(&mut events, &pane, "last").await;
    assert_eq!(
        seen,
        ["build done: 3 warnings", "split write", "last"],
        "on {:?}",
        ctx.which
    );
    assert_eq!(
        signals_until(&mut seconds, &pane, "last").await,
        seen,
        "another process on {:?}",
        ctx.which
    );
    // The secret is in no read of the output, raw or reduced.
    for what in [ReadWhat::All, ReadWhat::Tail(50)] {
        for raw in [false, true] {
            let read = ctx
                .engine
                .terminal
                .read(
                    &pane,
                    &ReadOptions {
                        what: what.clone(),
                        raw,
                        ..ReadOptions::default()
                    },
                )
                .await;
            assert!(
                !read.text.contains(&mine),
                "the secret in a {what:?} read on {:?}: {}",
                ctx.which,
                read.text
            );
        }
    }
    assert!(
        out.output.text.contains("printed-after"),
        "{:?}",
        out.output.text
    );
    assert!(!out.output.text.contains(&mine), "{:?}", out.output.text);
}
parity!(
    local,
    EngineOn::start,
    programs_signal_with_their_panes_secret_,
    programs_signal_with_their_panes_secret
);
