//! Arrangements: windows saved under a name (split trees with sizes; each pane's
//! name, agent, team, directory and the command it was opened with) and opened
//! again by another process after the sessions were closed, as they were. Run on
//! both backends like the rest of the engine parity suite.

use super::*;
use crate::support::parity;
use cohort_terminal::LayoutPane;

async fn a_saved_arrangement_opens_again_as_it_was(ctx: Ctx) {
    let terminal = &ctx.engine.terminal;
    terminal.create_team("crew", None).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap().display().to_string();
    // One pane above a third of the height, two below at a quarter and the rest.
    use cohort_terminal::layout::{Child, Direction};
    let leaf = |pane: usize, size: Option<u8>| Child {
        tree: SplitTree::Pane { pane },
        size,
    };
    let tree = SplitTree::Split {
        split: Direction::Vertical,
        children: vec![
            leaf(0, Some(30)),
            Child {
                tree: SplitTree::Split {
                    split: Direction::Horizontal,
                    children: vec![leaf(1, Some(25)), leaf(2, None)],
                },
                size: None,
            },
        ],
    };
    let panes = vec![
        LayoutPane {
            name: Some("lead".into()),
            agent: Some("ann".into()),
            team: Some("crew".into()),
            cwd: Some(cwd.clone()),
            ..LayoutPane::default()
        },
        LayoutPane {
            name: Some("tests".into()),
            ..LayoutPane::default()
        },
        LayoutPane {
            name: Some("server".into()),
            command: Some("sh -c 'echo serving; exec sleep 600'".into()),
            ..LayoutPane::default()
        },
    ];
    let laid = terminal
        .create_layout_up("desk", &tree, &panes)
        .await
        .unwrap();
    let ids: Vec<PaneId> = laid.panes.iter().map(|p| p.id.clone()).collect();
    let before = window_of(&ctx, &ids[0]).await;

    // Refused, each saying why: nothing to save, a name that is no name, a name
    // ending as a second window's copy is told apart.
    for (name, target, says) in [
        ("desk-1", "nobody", "nobody"),
        ("bad name\n", "lead", "control characters"),
        ("desk (2)", "lead", "ends as"),
    ] {
        let refused = terminal
            .save_arrangement(name, &[target.into()])
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains(says), "{name:?}: {refused}");
    }
    let saved = terminal
        .save_arrangement("desk-1", &["crew".into(), "tests".into()])
        .await
        .unwrap_or_else(|e| panic!("save on {:?}: {e}", ctx.which));
    assert!(saved.notices.is_empty(), "{:?}", saved.notices);
    let saved = saved.arrangement;
    assert_eq!(saved.windows.len(), 1, "{saved:?}");
    let window = &saved.windows[0];
    let names: Vec<&str> = window.panes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["lead", "tests", "server"], "on {:?}", ctx.which);
    assert_eq!(window.panes[0].agent.as_deref(), Some("ann"));
    assert_eq!(
        window.panes[0].cwd.as_deref(),
        Some(cwd.as_str()),
        "on {:?}",
        ctx.which
    );
    assert!(window.panes[2]
        .command
        .as_deref()
        .is_some_and(|c| c.contains("serving")));
    // Where the terminal keeps arrangements of its own (iTerm2), the window is
    // saved there too, for a person to restore from its menu.
    let native = terminal.native_arrangements().await.unwrap();
    if ctx.backend().capabilities().native_arrangements {
        assert_eq!(saved.native, ["cohort desk-1"], "on {:?}", ctx.which);
        assert!(
            native.is_some_and(|n| n.iter().any(|n| n == "cohort desk-1")),
            "on {:?}",
            ctx.which
        );
    } else {
        assert!(
            saved.native.is_empty() && native.is_none(),
            "on {:?}",
            ctx.which
        );
    }
    // A remote host's window is no terminal's here to keep: left out, the local
    // ones kept.
    let far = cohort_backends::WindowId("far:@3".into());
    let kept = ctx
        .backend()
        .save_native_arrangement(std::slice::from_ref(&far), "cohort far-only")
        .await
        .unwrap();
    assert!(kept.is_empty(), "on {:?}: {kept:?}", ctx.which);
    if ctx.backend().capabilities().native_arrangements {
        let kept = ctx
            .backend()
            .save_native_arrangement(&[before.id.clone(), far], "cohort mixed")
            .await
            .unwrap();
        assert_eq!(kept, ["cohort mixed"], "on {:?}", ctx.which);
    }
    // Open sessions stand in the way of a restore.
    let refused = terminal.restore_arrangement("desk-1").await.unwrap_err();
    assert!(
        refused.to_string().contains("close them first"),
        "{refused}"
    );

    for id in &ids {
        terminal.close(id).await.unwrap();
    }
    // Another process (as after a restart) opens it again.
    let second = ctx.second_engine().await;
    let listed = second.terminal.arrangements().await.unwrap();
    assert!(listed.iter().any(|a| a.name == "desk-1"), "{listed:?}");
    assert!(
        listed.iter().all(|a| a.native == saved.native),
        "{listed:?}"
    );
    let opened = second
        .terminal
        .restore_arrangement("desk-1")
        .await
        .unwrap_or_else(|e| panic!("restore on {:?}: {e}", ctx.which));
    let panes = &opened[0].panes;
    let names: Vec<String> = panes
        .iter()
        .map(|p| p.identity.as_ref().unwrap().name.clone())
        .collect();
    assert_eq!(names, ["lead", "tests", "server"], "on {:?}", ctx.which);
    assert_eq!(
        panes[0].identity.as_ref().unwrap().agent.as_deref(),
        Some("ann")
    );
    assert_eq!(
        panes[0].identity.as_ref().unwrap().team.as_deref(),
        Some("crew")
    );
    let after = window_of(&ctx, &panes[0].id).await;
    assert_eq!(after.layout.panes().len(), 3, "on {:?}", ctx.which);
    // The same shape in the same shares: the top pane's height, the bottom left's
    // width, each within a cell or two of what was saved (and far from even).
    let shares = |layout: &LayoutNode| match layout {
        LayoutNode::Split { children, .. } => match &children[1] {
            LayoutNode::Split {
                children: below, ..
            } => (children[0].rect().rows as i32, below[0].rect().cols as i32),
            other => panic!("not a split below: {other:?}"),
        },
        other => panic!("not a split: {other:?}"),
    };
    let (top, left) = shares(&before.layout);
    let (top2, left2) = shares(&after.layout);
    assert!(
        (top - top2).abs() <= 2 && (left - left2).abs() <= 2,
        "on {:?}: {before:?} vs {after:?}",
        ctx.which
    );
    let whole = before.layout.rect();
    assert!(top * 100 / (whole.rows as i32) < 40, "{before:?}");
    assert!(left * 100 / (whole.cols as i32) < 35, "{before:?}");
    // Each pane where it was, running what it was opened with.
    let lead = panes[0].id.clone();
    assert!(second.terminal.wait_ready(&lead, WAIT).await);
    let out = second
        .terminal
        .run(
            &lead,
            "pwd",
            &SendOptions::default(),
            spec(10_000),
            false,
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .unwrap();
    assert!(
        out.output.text.contains(&cwd),
        "on {:?}: {:?}",
        ctx.which,
        out.output.text
    );
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let rows = ctx.backend().read_screen(&panes[2].id).await.unwrap().rows;
        if rows.iter().any(|r| r.contains("serving")) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{rows:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(terminal.delete_arrangement("desk-1").await.unwrap());
    assert!(!terminal.delete_arrangement("desk-1").await.unwrap());
}
parity!(
    local,
    EngineOn::start,
    a_saved_arrangement_opens_again_as_it_was_,
    a_saved_arrangement_opens_again_as_it_was
);
