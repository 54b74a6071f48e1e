//! The backend parity suite: one set of scenarios, run through the
//! [`TerminalBackend`] trait against tmux (a private server per test) and iTerm2
//! (cohort's fake iTerm2 server, started in-process per test). Every scenario passes
//! on both, or is skipped by a capability the backend declares, with the reason
//! printed.

// These tests drive the backends themselves, below the terminal's input type.
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::time::Duration;

use crate::support::parity;
use crate::{
    support::*,
    terminals::{Terminal, Which},
};
use cohort_backends::{
    Appearance, BackendError, BackendEvent, EventStream, Identity, Key, LayoutNode, LineRange,
    PaneId, SpawnOptions, SplitDirection, SplitOptions, TerminalBackend,
};

/// One backend under test, with the terminal program it drives.
struct Ctx {
    which: Which,
    backend: Arc<dyn TerminalBackend>,
    events: EventStream,
    terminal: Terminal,
}

impl Ctx {
    async fn new(which: Which) -> Ctx {
        let terminal = Terminal::start(which).await;
        let backend = terminal.backend().await;
        let events = backend.subscribe();
        Ctx {
            which,
            backend,
            events,
            terminal,
        }
    }

    /// A second, independent backend on the same terminal program (a cohort restart).
    async fn restart(&self) -> Arc<dyn TerminalBackend> {
        self.terminal.backend().await
    }

    async fn shell(&mut self, name: &str) -> PaneId {
        let pane = self
            .backend
            .spawn(SpawnOptions {
                name: name.into(),
                ..Default::default()
            })
            .await
            .expect("spawn");
        wait_prompt(&mut self.events, &pane.id).await;
        pane.id
    }

    async fn run(&self, pane: &PaneId, command: &str) {
        self.backend
            .send_text(pane, command)
            .await
            .expect("send text");
        self.backend
            .send_keys(pane, &[Key::ENTER])
            .await
            .expect("press Enter");
    }

    /// Runs `command` and returns its output text (escape sequences removed) and status.
    async fn run_collect(&mut self, pane: &PaneId, command: &str) -> (String, Option<i32>) {
        self.run(pane, command).await;
        let mut out = Vec::new();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let event = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "timed out waiting for {command:?}; output so far: {:?}",
                        String::from_utf8_lossy(&out)
                    )
                })
                .expect("event stream");
            match event {
                BackendEvent::Output { pane: p, bytes } if &p == pane => {
                    out.extend_from_slice(&bytes)
                }
                BackendEvent::Prompt {
                    pane: p,
                    mark: cohort_backends::PromptMark::CommandFinished { exit_status },
                    ..
                } if &p == pane => {
                    let text =
                        String::from_utf8_lossy(&strip_ansi_escapes::strip(&out)).into_owned();
                    return (text, exit_status);
                }
                _ => {}
            }
        }
    }
}

/// Prints why a scenario does not apply to this backend.
fn skip(ctx: &Ctx, reason: &str) {
    eprintln!("skipped on {:?}: {reason}", ctx.which);
}

async fn open_and_exit_statuses(mut ctx: Ctx) {
    let pane = ctx.shell("statuses").await;
    for (command, status) in [("false", 1), ("true", 0), ("sh -c 'exit 7'", 7)] {
        ctx.run(&pane, command).await;
        assert_eq!(
            wait_exit(&mut ctx.events, &pane).await,
            Some(status),
            "{command}"
        );
    }
}
parity!(Ctx::new, open_and_exit_statuses_, open_and_exit_statuses);

async fn send_and_output(mut ctx: Ctx) {
    let pane = ctx.shell("send").await;
    let (out, status) = ctx.run_collect(&pane, "echo out-$((6*7))").await;
    assert_eq!(status, Some(0));
    assert!(out.contains("out-42"), "{out:?}");
    // The output before the mark belongs to the command: the next command's output
    // does not leak into this one.
    let (out, _) = ctx.run_collect(&pane, "echo second-$((1+1))").await;
    assert!(
        out.contains("second-2") && !out.contains("out-42\r\nout"),
        "{out:?}"
    );
}
parity!(Ctx::new, send_and_output_, send_and_output);

/// A barrier in the event stream comes after everything the pane printed before it,
/// as a second process sees the pane: once its token is seen, so is the output the
/// terminal had when `sync` was called (what the input lease relies on when another
/// process typed last).
async fn sync_barrier_follows_the_output_before_it(mut ctx: Ctx) {
    // A pane of cohort's (with its identity): the one another process follows.
    let pane = ctx
        .backend
        .spawn(SpawnOptions {
            name: "barrier".into(),
            identity: Some(cohort_backends::Identity {
                id: "barrier-session".into(),
                name: "barrier".into(),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .expect("spawn")
        .id;
    wait_prompt(&mut ctx.events, &pane).await;
    let other = ctx.restart().await;
    let mut seen = other.subscribe();
    // The other process's view starts now: it lists the panes, as a process that
    // starts does, and follows them from here.
    other.list_panes().await.expect("list panes");
    ctx.run(&pane, "printf 'sync-%s\\n' probe").await;
    // As soon as the typist sees the output, the other process asks for a barrier.
    let mut typist_saw = Vec::new();
    while !contains(&strip_ansi_escapes::strip(&typist_saw), b"sync-probe") {
        match tokio::time::timeout(WAIT, ctx.events.recv())
            .await
            .expect("the typist never saw the output")
            .expect("event stream open")
        {
            BackendEvent::Output { pane: p, bytes } if p == pane => {
                typist_saw.extend_from_slice(&bytes)
            }
            _ => {}
        }
    }
    let token = other.sync(&pane).await.expect("sync");
    let mut output = Vec::new();
    loop {
        let event = tokio::time::timeout(WAIT, seen.recv())
            .await
            .expect("the barrier never came")
            .expect("event stream open");
        match event {
            BackendEvent::Output { pane: p, bytes } if p == pane => {
                output.extend_from_slice(&bytes)
            }
            BackendEvent::Synced { token: t } if t == token => break,
            _ => {}
        }
    }
    let text = String::from_utf8_lossy(&strip_ansi_escapes::strip(&output)).into_owned();
    assert!(
        text.contains("sync-probe"),
        "on {:?}, output before the barrier: {text:?}",
        ctx.which
    );
}
parity!(
    Ctx::new,
    sync_barrier_follows_the_output_before_it_,
    sync_barrier_follows_the_output_before_it
);

async fn keys_interrupt(mut ctx: Ctx) {
    let pane = ctx.shell("keys").await;
    ctx.run(&pane, "sleep 30").await;
    // The foreground process is reported while it runs (by name at least: a remote
    // host's pids are not this machine's).
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let state = ctx.backend.pane_state(&pane).await.expect("pane state");
        if state.foreground_command == "sleep" && !state.at_shell() {
            break;
        }
        if !ctx.backend.capabilities().foreground_process && state.foreground_command.is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "foreground never became sleep: {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ctrl_c: Key = "C-c".parse().unwrap();
    ctx.backend.send_keys(&pane, &[ctrl_c]).await.expect("C-c");
    assert_eq!(wait_exit(&mut ctx.events, &pane).await, Some(130));
    let (out, status) = ctx.run_collect(&pane, "echo after-$((2*2))").await;
    assert_eq!(status, Some(0));
    assert!(out.contains("after-4"), "{out:?}");
}
parity!(Ctx::new, keys_interrupt_, keys_interrupt);

async fn paste(mut ctx: Ctx) {
    let pane = ctx.shell("paste").await;
    ctx.backend
        .paste(&pane, "echo pasted-$((2+3))")
        .await
        .expect("paste");
    ctx.backend.send_keys(&pane, &[Key::ENTER]).await.unwrap();
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !contains(&out, b"pasted-5") {
        match tokio::time::timeout_at(deadline, ctx.events.recv()).await {
            Ok(Some(BackendEvent::Output { pane: p, bytes })) if p == pane => {
                out.extend_from_slice(&bytes)
            }
            Ok(Some(_)) => {}
            _ => panic!("paste never ran: {:?}", String::from_utf8_lossy(&out)),
        }
    }
}
parity!(Ctx::new, paste_, paste);

async fn read_lines_and_screen(mut ctx: Ctx) {
    let pane = ctx.shell("read").await;
    let (_, status) = ctx.run_collect(&pane, "printf 'L%s\\n' 1 2 3").await;
    assert_eq!(status, Some(0));
    let screen = ctx.backend.read_screen(&pane).await.expect("screen");
    for l in ["L1", "L2", "L3"] {
        assert!(
            screen.rows.iter().any(|r| r == l),
            "{l} not on screen {:?}",
            screen.rows
        );
    }
    assert!(screen.size.rows > 0 && screen.size.cols > 0);
    assert_eq!(screen.rows.len(), screen.size.rows as usize);
    let lines = ctx
        .backend
        .read_lines(
            &pane,
            LineRange {
                start: 0,
                end: u64::MAX,
            },
        )
        .await
        .expect("lines");
    assert_eq!(lines.first, 0);
    assert!(lines.total >= lines.lines.len() as u64);
    let at = lines
        .lines
        .iter()
        .position(|l| l == "L1")
        .expect("L1 in lines");
    assert_eq!(&lines.lines[at..at + 3], ["L1", "L2", "L3"]);
    // A range reads just that range.
    let one = ctx
        .backend
        .read_lines(
            &pane,
            LineRange {
                start: at as u64 + 1,
                end: at as u64 + 2,
            },
        )
        .await
        .unwrap();
    assert_eq!(one.lines, ["L2"]);
}
parity!(Ctx::new, read_lines_and_screen_, read_lines_and_screen);

async fn splits_and_layouts(mut ctx: Ctx) {
    if !ctx.backend.capabilities().splits {
        return skip(&ctx, "the backend cannot split panes");
    }
    let first = ctx.shell("splits").await;
    let right = ctx
        .backend
        .split(
            &first,
            SplitOptions {
                direction: SplitDirection::Horizontal,
                size: None,
                spawn: SpawnOptions::default(),
            },
        )
        .await
        .expect("split side by side");
    wait_prompt(&mut ctx.events, &right.id).await;
    let below = ctx
        .backend
        .split(
            &right.id,
            SplitOptions {
                direction: SplitDirection::Vertical,
                size: None,
                spawn: SpawnOptions::default(),
            },
        )
        .await
        .expect("split stacked");
    wait_prompt(&mut ctx.events, &below.id).await;
    let windows = ctx.backend.list_windows().await.expect("windows");
    let window = windows
        .iter()
        .find(|w| w.layout.panes().contains(&&first))
        .expect("the window with the panes");
    assert_eq!(window.layout.panes(), vec![&first, &right.id, &below.id]);
    match &window.layout {
        LayoutNode::Split {
            direction: SplitDirection::Horizontal,
            children,
            ..
        } => {
            assert!(
                matches!(
                    &children[1],
                    LayoutNode::Split {
                        direction: SplitDirection::Vertical,
                        ..
                    }
                ),
                "{:?}",
                window.layout
            );
        }
        other => panic!("unexpected layout {other:?}"),
    }
    let (out, status) = ctx.run_collect(&below.id, "echo in-split-$((3*3))").await;
    assert_eq!(status, Some(0));
    assert!(out.contains("in-split-9"));
}
parity!(Ctx::new, splits_and_layouts_, splits_and_layouts);

async fn titles_and_appearance(mut ctx: Ctx) {
    let pane = ctx.shell("looks").await;
    let caps = ctx.backend.capabilities();
    if caps.titles {
        ctx.backend
            .set_title(&pane, "parity title")
            .await
            .expect("title");
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let panes = ctx.backend.list_panes().await.unwrap();
            let info = panes.iter().find(|p| p.id == pane).expect("pane listed");
            if info.title == "parity title" {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "title never showed: {info:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    } else {
        skip(&ctx, "titles: the backend declares no titles");
    }
    let look = Appearance {
        title: None,
        badge: Some("agent-1".into()),
        tab_color: Some("#ff8800".into()),
        background: Some("#101010".into()),
        ..Appearance::default()
    };
    let result = ctx.backend.set_appearance(&pane, &look).await;
    if caps.badges && caps.tab_colors && caps.background_colors {
        result.expect("appearance");
    } else {
        skip(
            &ctx,
            "badge, tab colour and background are not declared capabilities",
        );
        assert!(
            matches!(result, Err(BackendError::Unsupported { .. })),
            "{result:?}"
        );
    }
    if caps.focus {
        ctx.backend.focus(&pane).await.expect("focus");
    } else {
        skip(&ctx, "focus is not a declared capability");
    }
}
parity!(Ctx::new, titles_and_appearance_, titles_and_appearance);

async fn close(mut ctx: Ctx) {
    let keep = ctx.shell("keep").await;
    let gone = ctx.shell("gone").await;
    ctx.backend.close(&gone).await.expect("close");
    let panes = ctx.backend.list_panes().await.unwrap();
    assert!(panes.iter().any(|p| p.id == keep));
    assert!(!panes.iter().any(|p| p.id == gone));
    let again = ctx.backend.close(&gone).await;
    assert!(matches!(again, Err(BackendError::PaneGone(_))), "{again:?}");
    let send = ctx.backend.send_text(&gone, "x").await;
    assert!(send.is_err());
}
parity!(Ctx::new, close_, close);

async fn unicode(mut ctx: Ctx) {
    let pane = ctx.shell("unicode").await;
    let text = "héllo 世界 🎉 ✓";
    let (out, status) = ctx
        .run_collect(&pane, &format!("printf '%s-ok\\n' '{text}'"))
        .await;
    assert_eq!(status, Some(0));
    assert!(out.contains(&format!("{text}-ok")), "{out:?}");
    let screen = ctx.backend.read_screen(&pane).await.unwrap();
    assert!(
        screen.rows.iter().any(|r| r == &format!("{text}-ok")),
        "{:?}",
        screen.rows
    );
}
parity!(Ctx::new, unicode_, unicode);

async fn large_output(mut ctx: Ctx) {
    let pane = ctx.shell("large").await;
    let (out, status) = ctx.run_collect(&pane, "seq 1 3000").await;
    assert_eq!(status, Some(0));
    let numbers: Vec<u32> = out
        .lines()
        .filter_map(|l| l.trim_end_matches('\r').trim().parse().ok())
        .collect();
    assert_eq!(numbers, (1..=3000).collect::<Vec<u32>>());
}
parity!(Ctx::new, large_output_, large_output);

async fn identity_after_restart(mut ctx: Ctx) {
    let identity = Identity {
        id: "5f0c9a4e-parity".into(),
        name: "worker".into(),
        agent: Some("claude".into()),
        team: None,
        key: None,
        anchor: None,
        announces_start: false,
    };
    let pane = ctx
        .backend
        .spawn(SpawnOptions {
            name: "identity".into(),
            identity: Some(identity.clone()),
            ..Default::default()
        })
        .await
        .expect("spawn");
    wait_prompt(&mut ctx.events, &pane.id).await;
    let other = ctx.restart().await;
    let mut events = other.subscribe();
    let panes = other.list_panes().await.expect("list after restart");
    let found = panes
        .iter()
        .find(|p| p.identity.as_ref() == Some(&identity))
        .expect("the stamped pane is found again");
    assert_eq!(found.id, pane.id);
    // The new process can drive it and sees its events.
    other.send_text(&found.id, "false").await.unwrap();
    other.send_keys(&found.id, &[Key::ENTER]).await.unwrap();
    assert_eq!(wait_exit(&mut events, &found.id).await, Some(1));
}
parity!(Ctx::new, identity_after_restart_, identity_after_restart);

async fn command_panes(mut ctx: Ctx) {
    let pane = ctx
        .backend
        .spawn(SpawnOptions {
            name: "command".into(),
            command: Some("echo from-command; exit 3".into()),
            ..Default::default()
        })
        .await
        .expect("spawn a command");
    assert_eq!(wait_exit(&mut ctx.events, &pane.id).await, Some(3));
    let status = wait_for(&mut ctx.events, &pane.id, "the pane's exit", |e| match e {
        BackendEvent::PaneExited { exit_status, .. } => Some(*exit_status),
        _ => None,
    })
    .await;
    assert_eq!(status, Some(3));
    // The pane stays, dead, with its status, until it is closed.
    let state = ctx
        .backend
        .pane_state(&pane.id)
        .await
        .expect("dead pane state");
    assert!(state.dead, "{state:?}");
    assert_eq!(state.exit_status, Some(3));
}
parity!(Ctx::new, command_panes_, command_panes);

/// Waits until the pane's state satisfies `ok`; panics with the last state after
/// [`WAIT`]. The terminal learns of some changes by polling (iTerm2's job variables).
async fn state_until(
    ctx: &Ctx,
    pane: &PaneId,
    what: &str,
    ok: impl Fn(&cohort_backends::PaneState) -> bool,
) -> cohort_backends::PaneState {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let state = ctx.backend.pane_state(pane).await.expect("pane state");
        if ok(&state) {
            return state;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "on {:?}, never {what}: {state:?}",
            ctx.which
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The state a backend reports is the terminal's: the alternate screen as a program
/// enters and leaves it, and a shell that exited is dead with its status.
async fn pane_state_is_real(mut ctx: Ctx) {
    let pane = ctx.shell("state").await;
    let state = ctx.backend.pane_state(&pane).await.expect("pane state");
    assert!(!state.dead && !state.alternate_screen, "{state:?}");
    ctx.run(
        &pane,
        "printf '\\033[?1049h'; read x; printf '\\033[?1049l'",
    )
    .await;
    state_until(&ctx, &pane, "on the alternate screen", |s| {
        s.alternate_screen
    })
    .await;
    ctx.backend
        .send_keys(&pane, &[Key::ENTER])
        .await
        .expect("press Enter");
    assert_eq!(wait_exit(&mut ctx.events, &pane).await, Some(0));
    state_until(&ctx, &pane, "back on the main screen", |s| {
        !s.alternate_screen
    })
    .await;
    ctx.run(&pane, "exit 7").await;
    let state = state_until(&ctx, &pane, "dead", |s| s.dead).await;
    assert_eq!(state.exit_status, Some(7), "{state:?}");
}
parity!(Ctx::new, pane_state_is_real_, pane_state_is_real);
