//! Hidden sessions: a session hidden from the person's view (iTerm2 buries it; tmux
//! gives it a window of its own left out of the status line) keeps running, is read,
//! typed into and waited on, and is listed as hidden; shown again, it is listed as
//! before, with everything it printed meanwhile. Run on both backends like the rest
//! of the engine parity suite.

use super::*;
use crate::support::parity;
use cohort_terminal::Caller;

async fn a_hidden_session_runs_on_and_comes_back(ctx: Ctx) {
    let tree = SplitTree::preset("horizontal", None, None).unwrap();
    let (_, panes) = layout(&ctx, "crew", &tree).await;
    let (worker, beside) = (panes[0].clone(), panes[1].clone());
    let terminal = &ctx.engine.terminal;
    let caller = Caller::new("test");
    assert!(
        terminal.wait_ready(&worker, WAIT).await,
        "on {:?}",
        ctx.which
    );
    let before = window_of(&ctx, &beside).await;

    // Hidden while a command runs: the command goes on, and its end is seen.
    let out = ctx
        .run(&worker, "sleep 0.5; echo done-$((6*7))", spec(200))
        .await;
    assert!(
        !out.verdict.complete,
        "on {:?}: {:?}",
        ctx.which, out.verdict
    );
    let hidden = terminal.set_hidden(&worker, true, &caller).await.unwrap();
    assert!(hidden.hidden, "on {:?}: {hidden:?}", ctx.which);
    let listed = terminal.list().await.unwrap();
    let row = listed
        .iter()
        .find(|p| p.id == worker)
        .expect("still listed");
    assert!(row.hidden, "on {:?}", ctx.which);
    assert!(!listed.iter().find(|p| p.id == beside).unwrap().hidden);
    // The window it shared goes on without it.
    let after = window_of(&ctx, &beside).await;
    assert_eq!(after.id, before.id, "on {:?}", ctx.which);
    assert!(
        !after.layout.panes().contains(&&worker),
        "on {:?}: {after:?}",
        ctx.which
    );

    let verdict = terminal.wait(&worker, spec(10_000)).await.unwrap();
    assert_eq!(
        (verdict.complete, verdict.exit_status),
        (true, Some(0)),
        "on {:?}: {verdict:?}",
        ctx.which
    );
    let out = ctx
        .run(&worker, "echo while-hidden-$((2+3))", spec(10_000))
        .await;
    assert_eq!(
        decided(&out).2,
        Some(0),
        "on {:?}: {:?}",
        ctx.which,
        out.verdict
    );
    assert!(
        out.output.text.contains("while-hidden-5"),
        "{:?}",
        out.output.text
    );

    // Another process sees it hidden.
    let second = ctx.second_engine().await;
    let seen = second.terminal.list().await.unwrap();
    assert!(
        seen.iter().find(|p| p.id == worker).unwrap().hidden,
        "on {:?}",
        ctx.which
    );

    // Shown again: listed as any session, back beside the pane it left, history
    // whole.
    let shown = terminal.set_hidden(&worker, false, &caller).await.unwrap();
    assert!(!shown.hidden, "on {:?}: {shown:?}", ctx.which);
    let window = window_of(&ctx, &worker).await;
    assert_eq!(
        window.id,
        window_of(&ctx, &beside).await.id,
        "on {:?}",
        ctx.which
    );
    let all = terminal
        .read(
            &worker,
            &ReadOptions {
                what: ReadWhat::All,
                raw: true,
                ..Default::default()
            },
        )
        .await;
    assert!(
        all.text.contains("done-42") && all.text.contains("while-hidden-5"),
        "{:?}",
        all.text
    );
    // Showing a shown session changes nothing.
    let again = terminal.set_hidden(&worker, false, &caller).await.unwrap();
    assert!(!again.hidden);

    // A session alone in its window is hidden whole, and comes back.
    let alone = ctx.shell("loner").await;
    assert!(
        terminal
            .set_hidden(&alone, true, &caller)
            .await
            .unwrap()
            .hidden
    );
    let out = ctx.run(&alone, "echo alone-$((3*3))", spec(10_000)).await;
    assert!(
        out.output.text.contains("alone-9"),
        "on {:?}: {:?}",
        ctx.which,
        out.output.text
    );
    assert!(
        !terminal
            .set_hidden(&alone, false, &caller)
            .await
            .unwrap()
            .hidden
    );
    assert!(terminal
        .list()
        .await
        .unwrap()
        .iter()
        .any(|p| p.id == alone && !p.hidden));
}
parity!(
    local,
    EngineOn::start,
    a_hidden_session_runs_on_and_comes_back_,
    a_hidden_session_runs_on_and_comes_back
);
