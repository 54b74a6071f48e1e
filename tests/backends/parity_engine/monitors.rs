//! Monitors: a pane opened beside cohort's sessions by someone else, and its
//! closing, are events; so are a pane coming to the front and a window's layout
//! changing. cohort's own sessions opening are not "outside". Run on both backends
//! like the rest of the engine parity suite.

use super::*;
use crate::support::parity;
use cohort_terminal::events::EngineEvent;

/// Events until one `wanted` picks (or the deadline); the ones before it too.
async fn until_event(
    events: &mut tokio::sync::broadcast::Receiver<EngineEvent>,
    what: &str,
    wanted: impl Fn(&EngineEvent) -> bool,
) -> Vec<EngineEvent> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(event)) => {
                let found = wanted(&event);
                seen.push(event);
                if found {
                    return seen;
                }
            }
            Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
            Ok(Err(e)) => panic!("the bus closed: {e}"),
            Err(_) => panic!("no {what}; seen {seen:?}"),
        }
    }
}

async fn panes_opened_and_closed_outside_cohort_and_focus_are_events(ctx: Ctx) {
    let mut events = ctx.engine.terminal.events();
    let ours = ctx.shell("ours").await;
    let other = ctx.shell("other").await;
    // Someone else's program on the same terminal opens a pane without cohort's
    // stamp.
    let outsider = ctx.terminal.backend().await;
    let theirs = outsider
        .spawn(cohort_backends::SpawnOptions {
            name: "notes".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let seen = until_event(
        &mut events,
        "outside_pane_opened",
        |e| matches!(e, EngineEvent::OutsidePaneOpened { pane, .. } if *pane == theirs.id),
    )
    .await;
    assert!(
        seen.iter()
            .any(|e| matches!(e, EngineEvent::LayoutChanged { .. })),
        "no layout change on {:?}: {seen:?}",
        ctx.which
    );
    // cohort's own sessions were never taken for someone else's.
    for own in [&ours, &other] {
        assert!(
            !seen
                .iter()
                .any(|e| matches!(e, EngineEvent::OutsidePaneOpened { pane, .. } if pane == own)),
            "{own} taken for an outside pane on {:?}: {seen:?}",
            ctx.which
        );
    }
    // A pane comes to the front.
    ctx.backend().focus(&ours).await.unwrap();
    until_event(
        &mut events,
        "focus",
        |e| matches!(e, EngineEvent::Focused { pane } if *pane == ours),
    )
    .await;
    // And the outside pane goes.
    outsider.close(&theirs.id).await.unwrap();
    until_event(
        &mut events,
        "outside_pane_closed",
        |e| matches!(e, EngineEvent::OutsidePaneClosed { pane, .. } if *pane == theirs.id),
    )
    .await;
}
parity!(
    local,
    EngineOn::start,
    panes_opened_and_closed_outside_cohort_and_focus_are_events_,
    panes_opened_and_closed_outside_cohort_and_focus_are_events
);
