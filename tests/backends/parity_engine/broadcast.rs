//! Broadcast input: sessions grouped in one window take each other's typing — a
//! person's keys through the terminal itself (tmux's synchronised panes, iTerm2's
//! broadcast domains), cohort's `send` and `key` through the group's other
//! sessions — while a `run` and anything typed with `alone` reach one session only.
//! Run on both backends like the rest of the engine parity suite.

use super::*;
use crate::support::parity;
use cohort_terminal::{Caller, TerminalError};

/// Waits until `pane`'s screen shows `text`.
async fn shows(ctx: &Ctx, pane: &PaneId, text: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let screen = ctx.backend().read_screen(pane).await.expect("read screen");
        if screen.rows.iter().any(|r| r.contains(text)) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{text:?} never showed in {pane} on {:?}: {:?}",
            ctx.which,
            screen.rows
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether `pane`'s screen shows `text`, once a command run there after has ended
/// (so anything typed into it before has been taken in).
async fn took(ctx: &Ctx, pane: &PaneId, text: &str) -> bool {
    let out = ctx.run(pane, "echo settled-$((40+2))", spec(10_000)).await;
    assert!(
        out.verdict.complete,
        "on {:?}: {:?}",
        ctx.which, out.verdict
    );
    let screen = ctx.backend().read_screen(pane).await.expect("read screen");
    screen.rows.iter().any(|r| r.contains(text))
}

async fn grouped_sessions_take_each_others_typing(ctx: Ctx) {
    let tree = SplitTree::preset("quad", None, None).unwrap();
    let (_, panes) = layout(&ctx, "fan", &tree).await;
    let (left, right) = (panes[0].clone(), panes[1].clone());
    let outside = ctx.shell("elsewhere").await;
    let terminal = &ctx.engine.terminal;
    let caller = Caller::new("test");
    for pane in &panes {
        assert!(terminal.wait_ready(pane, WAIT).await, "on {:?}", ctx.which);
    }

    // A group lies in one window, on every terminal.
    let refused = terminal
        .group_input(&[left.clone(), outside.clone()], true, &caller)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, TerminalError::InvalidArgument(ref m) if m.contains("different windows")),
        "on {:?}: {refused}",
        ctx.which
    );
    assert!(terminal.broadcast_groups().await.unwrap().is_empty());
    let refused = terminal
        .group_input(std::slice::from_ref(&left), true, &caller)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("two sessions"), "{refused}");

    let groups = terminal
        .group_input(&[left.clone(), right.clone()], true, &caller)
        .await
        .unwrap_or_else(|e| panic!("group on {:?}: {e}", ctx.which));
    assert_eq!(groups.len(), 1, "on {:?}: {groups:?}", ctx.which);
    assert_eq!(
        groups[0].panes,
        [left.clone(), right.clone()],
        "on {:?}",
        ctx.which
    );
    // A second group in the window: iTerm2 keeps them apart; tmux cannot, and says so.
    let second_group = terminal
        .group_input(&[panes[2].clone(), panes[3].clone()], true, &caller)
        .await;
    if ctx.backend().capabilities().broadcast_groups_share_windows {
        assert_eq!(second_group.unwrap().len(), 2, "on {:?}", ctx.which);
        let left_alone = terminal
            .group_input(&[panes[2].clone(), panes[3].clone()], false, &caller)
            .await
            .unwrap();
        assert_eq!(left_alone.len(), 1, "on {:?}: {left_alone:?}", ctx.which);
    } else {
        let refused = second_group.unwrap_err();
        assert!(
            refused.to_string().contains("one group"),
            "on {:?}: {refused}",
            ctx.which
        );
        assert_eq!(terminal.broadcast_groups().await.unwrap().len(), 1);
    }
    // Another process sees the group.
    let second = ctx.second_engine().await;
    let seen = second.terminal.broadcast_group_of(&right).await.unwrap();
    assert_eq!(
        seen.map(|g| g.panes),
        Some(vec![left.clone(), right.clone()])
    );

    // A person's typing reaches the group, and only the group.
    ctx.terminal
        .type_as_person(&left, "echo typed-by-person-$((6*7))");
    shows(&ctx, &left, "typed-by-person-42").await;
    shows(&ctx, &right, "typed-by-person-42").await;
    assert!(
        !took(&ctx, &outside, "typed-by-person-42").await,
        "on {:?}",
        ctx.which
    );

    // A run is typed into its own session only.
    let out = ctx
        .run(&left, "echo run-alone-$((2+3))", spec(10_000))
        .await;
    assert_eq!(
        decided(&out).2,
        Some(0),
        "on {:?}: {:?}",
        ctx.which,
        out.verdict
    );
    assert!(
        out.output.text.contains("run-alone-5"),
        "{:?}",
        out.output.text
    );
    assert!(
        !took(&ctx, &right, "run-alone-5").await,
        "a run reached the group on {:?}",
        ctx.which
    );

    // Another process's run is typed into its own session only too.
    let out = second
        .terminal
        .run(
            &right,
            "echo second-run-$((3+4))",
            &SendOptions::default(),
            spec(10_000),
            false,
            &caller,
        )
        .await
        .unwrap();
    assert!(
        out.verdict.complete,
        "on {:?}: {:?}",
        ctx.which, out.verdict
    );
    assert!(
        !took(&ctx, &left, "second-run-7").await,
        "on {:?}",
        ctx.which
    );

    // What cohort types into a member reaches the others through their own turns.
    let options = SendOptions::default();
    terminal
        .send(&left, "echo sent-to-group-$((3*3))", &options, &caller)
        .await
        .unwrap();
    let echoed = terminal
        .echo_to_group(&left, |peer| {
            let (options, caller) = (&options, &caller);
            async move {
                terminal
                    .send(&peer, "echo sent-to-group-$((3*3))", options, caller)
                    .await
                    .map(|_| ())
            }
        })
        .await;
    assert_eq!(echoed.reached.len(), 1, "on {:?}: {echoed:?}", ctx.which);
    assert!(echoed.missed.is_empty(), "{echoed:?}");
    shows(&ctx, &left, "sent-to-group-9").await;
    shows(&ctx, &right, "sent-to-group-9").await;
    // Typed once into each: the terminal itself did not pass cohort's keys on.
    assert!(took(&ctx, &right, "sent-to-group-9").await);
    let screen = ctx.backend().read_screen(&right).await.unwrap();
    let outputs = screen
        .rows
        .iter()
        .filter(|r| r.trim() == "sent-to-group-9")
        .count();
    assert_eq!(outputs, 1, "on {:?}: {:?}", ctx.which, screen.rows);

    // Out of the group, typing stays where it is typed.
    let groups = terminal
        .group_input(std::slice::from_ref(&right), false, &caller)
        .await
        .unwrap();
    assert!(groups.is_empty(), "on {:?}: {groups:?}", ctx.which);
    assert!(terminal.broadcast_group_of(&left).await.unwrap().is_none());
    ctx.terminal
        .type_as_person(&left, "echo after-ungrouping-$((5*5))");
    shows(&ctx, &left, "after-ungrouping-25").await;
    assert!(
        !took(&ctx, &right, "after-ungrouping-25").await,
        "on {:?}",
        ctx.which
    );
}
parity!(
    local,
    EngineOn::start,
    grouped_sessions_take_each_others_typing_,
    grouped_sessions_take_each_others_typing
);
