//! The engine-level parity suite: the completion ladder (every verdict with its exit
//! status; marks a program prints never taken for the shell's, in `marks`), every
//! layout preset and a nested tree with sizes, and reduced reads, run
//! through [`Engine`] against tmux (a private server per test) and iTerm2 (cohort's
//! fake iTerm2 server, started in-process per test). Every scenario passes on both,
//! or is gated by a capability the backend declares, with the reason printed.

use std::sync::Arc;
use std::time::Duration;

use crate::support::parity;
use crate::{support::*, terminals::EngineOn};
use cohort_backends::{LayoutNode, PaneId, SplitDirection, TerminalBackend, WindowInfo};
use cohort_terminal::{
    completion::{Layer, Until, WaitSpec},
    layout::SplitTree,
    read::{ReadOptions, ReadWhat},
    OpenOptions, RunOutput, SendOptions,
};

/// One engine under test, with the terminal program it drives.
type Ctx = EngineOn;

impl Ctx {
    fn backend(&self) -> &Arc<dyn TerminalBackend> {
        self.engine.terminal.backend()
    }

    /// A session running `command` instead of cohort's shell.
    async fn open_command(&self, name: &str, command: &str) -> PaneId {
        self.engine
            .terminal
            .open(OpenOptions {
                name: name.into(),
                command: Some(command.into()),
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("open {command:?} on {:?}: {e}", self.which))
            .id
    }

    /// A shell session at its first prompt.
    async fn shell(&self, name: &str) -> PaneId {
        let pane = self
            .engine
            .terminal
            .open(OpenOptions::named(name))
            .await
            .expect("open");
        assert!(
            self.engine.terminal.wait_ready(&pane.id, WAIT).await,
            "no prompt on {:?}",
            self.which
        );
        pane.id
    }

    async fn run(&self, pane: &PaneId, command: &str, spec: WaitSpec) -> RunOutput {
        self.run_with(pane, command, &SendOptions::default(), spec)
            .await
    }

    async fn run_with(
        &self,
        pane: &PaneId,
        command: &str,
        send: &SendOptions,
        spec: WaitSpec,
    ) -> RunOutput {
        self.engine
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
            .unwrap_or_else(|e| panic!("{command} on {:?}: {e}", self.which))
    }
}

/// Prints why a scenario, or part of one, does not apply to this backend.
fn skip(ctx: &Ctx, reason: &str) {
    eprintln!("skipped on {:?}: {reason}", ctx.which);
}

fn spec(timeout_ms: u64) -> WaitSpec {
    WaitSpec {
        timeout: Duration::from_millis(timeout_ms),
        ..WaitSpec::default()
    }
}

fn until(pattern: &str, timeout_ms: u64) -> WaitSpec {
    WaitSpec {
        until: Some(Until::new(pattern, false).unwrap()),
        ..spec(timeout_ms)
    }
}

/// The verdict's decisive fields, for one-line assertions.
fn decided(out: &RunOutput) -> (bool, Layer, Option<i32>) {
    (
        out.verdict.complete,
        out.verdict.layer,
        out.verdict.exit_status,
    )
}

// ---------------------------------------------------------------------------
// The completion ladder
// ---------------------------------------------------------------------------

async fn ladder_exit(ctx: Ctx) {
    let pane = ctx.shell("exit-layer").await;
    for (command, status) in [("false", 1), ("true", 0), ("sh -c 'exit 7'", 7)] {
        let out = ctx.run(&pane, command, spec(10_000)).await;
        assert_eq!(
            decided(&out),
            (true, Layer::Exit, Some(status)),
            "{command} on {:?}: {:?}",
            ctx.which,
            out.verdict
        );
    }
    // The output is the command's, without the echo of what was typed.
    let out = ctx.run(&pane, "echo $((6*7))-done", spec(10_000)).await;
    assert_eq!(decided(&out), (true, Layer::Exit, Some(0)));
    assert_eq!(
        out.output.text.trim(),
        "42-done",
        "meta: {}",
        out.output.meta
    );
    assert!(
        out.output.meta.contains("complete (exit 0, exit layer"),
        "{}",
        out.output.meta
    );
}
parity!(EngineOn::start, ladder_exit_, ladder_exit);

async fn ladder_exit_full_row(ctx: Ctx) {
    // A command line that exactly fills its row: the terminal wraps it softly into
    // the row its output starts on.
    let pane = ctx.shell("full-row").await;
    let screen = ctx.engine.terminal.screen(&pane).await.unwrap();
    let prompt = screen
        .rows
        .iter()
        .rev()
        .find(|r| !r.is_empty())
        .map(|r| r.chars().count() + 1)
        .unwrap_or(2);
    let cols = screen.size.cols as usize;
    let base = "echo full-row-";
    let pad = cols - prompt - base.len();
    let command = format!("{base}{}", "x".repeat(pad));
    let out = ctx.run(&pane, &command, spec(10_000)).await;
    assert_eq!(
        decided(&out),
        (true, Layer::Exit, Some(0)),
        "{:?} ({})",
        out.verdict,
        out.output.meta
    );
    assert_eq!(out.output.text.trim(), &command[5..], "{}", out.output.meta);
}
parity!(EngineOn::start, ladder_exit_full_row_, ladder_exit_full_row);

async fn ladder_dead_pane(ctx: Ctx) {
    let pane = ctx.open_command("one-shot", "sleep 0.5; exit 4").await;
    let verdict = ctx.engine.terminal.wait(&pane, spec(10_000)).await.unwrap();
    assert_eq!(
        (verdict.complete, verdict.layer, verdict.exit_status),
        (true, Layer::Exit, Some(4)),
        "{verdict:?}"
    );
}
parity!(EngineOn::start, ladder_dead_pane_, ladder_dead_pane);

async fn ladder_mark(ctx: Ctx) {
    let pane = ctx.shell("nested-shell").await;
    let out = ctx
        .run(&pane, "bash --norc --noprofile", spec(10_000))
        .await;
    assert!(
        out.verdict.complete,
        "a nested shell at its prompt: {:?}",
        out.verdict
    );
    let send = SendOptions {
        mark: Some("p4r1ty".into()),
        ..SendOptions::default()
    };
    for (command, status) in [("sh -c 'exit 7'", 7), ("false", 1), ("true", 0)] {
        let out = ctx.run_with(&pane, command, &send, spec(10_000)).await;
        assert_eq!(
            decided(&out),
            (true, Layer::Mark, Some(status)),
            "{command}: {:?}",
            out.verdict
        );
    }
    let out = ctx
        .run_with(&pane, "echo inner-$((2*3))", &send, spec(10_000))
        .await;
    assert_eq!(decided(&out), (true, Layer::Mark, Some(0)));
    // The sentinel is cohort's, not the command's output.
    assert_eq!(out.output.text.trim(), "inner-6", "{:?}", out.output.text);
    // A marked command that outlives its run: waiting again looks for its sentinel.
    let later = SendOptions {
        mark: Some("l8ter".into()),
        ..SendOptions::default()
    };
    let out = ctx
        .run_with(&pane, "sleep 0.5; (exit 6)", &later, spec(100))
        .await;
    assert_eq!(out.verdict.layer, Layer::Timeout, "{:?}", out.verdict);
    let verdict = ctx.engine.terminal.wait(&pane, spec(10_000)).await.unwrap();
    assert_eq!(
        (verdict.layer, verdict.exit_status),
        (Layer::Mark, Some(6)),
        "{verdict:?}"
    );
}
parity!(EngineOn::start, ladder_mark_, ladder_mark);

async fn ladder_until(ctx: Ctx) {
    let pane = ctx.shell("repl-until").await;
    let out = ctx.run(&pane, "python3 -q", until(">>> ", 10_000)).await;
    assert_eq!(
        decided(&out),
        (true, Layer::Until, None),
        "{:?}",
        out.verdict
    );
    let out = ctx.run(&pane, "print(6*7)", until(">>> ", 10_000)).await;
    assert_eq!(
        decided(&out),
        (true, Layer::Until, None),
        "{:?}",
        out.verdict
    );
    assert!(out.output.text.contains("42"), "{}", out.output.text);
    // The echo of the typed text never satisfies `until`.
    let out = ctx
        .run(&pane, "x = 'NOT_PRINTED_'", until("NOT_PRINTED_", 1500))
        .await;
    assert_eq!(
        decided(&out),
        (false, Layer::Timeout, None),
        "{:?}",
        out.verdict
    );
    // Leaving the REPL brings the shell back (the shell's mark for `python3` has no
    // start after this Enter, so quiescence decides), and its exit layer with it.
    let out = ctx.run(&pane, "exit()", spec(10_000)).await;
    assert!(out.verdict.complete, "{:?}", out.verdict);
    let out = ctx.run(&pane, "sh -c 'exit 7'", spec(10_000)).await;
    assert_eq!(
        decided(&out),
        (true, Layer::Exit, Some(7)),
        "{:?}",
        out.verdict
    );
}
parity!(EngineOn::start, ladder_until_, ladder_until);

async fn ladder_nested(ctx: Ctx) {
    let pane = ctx.shell("repl-nested").await;
    let out = ctx.run(&pane, "python3 -q", spec(10_000)).await;
    assert_eq!(
        decided(&out),
        (false, Layer::Nested, None),
        "{:?}",
        out.verdict
    );
    let hint = out.verdict.hint.as_deref().unwrap_or_default();
    assert!(hint.contains("until"), "{hint}");
    assert!(hint.contains("python3"), "{hint}");
    // Still nested a command later: a REPL never finishes by itself.
    let out = ctx.run(&pane, "1 + 1", spec(10_000)).await;
    assert_eq!(decided(&out), (false, Layer::Nested, None));
}
parity!(EngineOn::start, ladder_nested_, ladder_nested);

async fn ladder_input_to_a_running_command(ctx: Ctx) {
    let pane = ctx.shell("answers").await;
    // The shell's own `read` waits for input: nested, never done.
    let out = ctx.run(&pane, "read -p 'name? ' who", spec(10_000)).await;
    assert_eq!(
        decided(&out),
        (false, Layer::Nested, None),
        "{:?}",
        out.verdict
    );
    // The answer ends it, with read's status.
    let out = ctx.run(&pane, "alice", spec(10_000)).await;
    assert_eq!(
        decided(&out),
        (true, Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );
    // exit(3) to a REPL ends it, with the REPL's status.
    let out = ctx.run(&pane, "python3 -q", until(">>> ", 10_000)).await;
    assert_eq!(out.verdict.layer, Layer::Until, "{:?}", out.verdict);
    let out = ctx.run(&pane, "exit(3)", spec(10_000)).await;
    assert_eq!(
        decided(&out),
        (true, Layer::Exit, Some(3)),
        "{:?}",
        out.verdict
    );
    let out = ctx.run(&pane, "echo $who", spec(10_000)).await;
    assert_eq!(out.output.text.trim(), "alice");
}
parity!(
    EngineOn::start,
    ladder_input_to_a_running_command_,
    ladder_input_to_a_running_command
);

async fn ladder_pager(ctx: Ctx) {
    let pane = ctx.shell("pager").await;
    // Sessions open with pagers off...
    let out = ctx.run(&pane, "echo $PAGER", spec(10_000)).await;
    assert_eq!(out.output.text.trim(), "cat");
    // ...and a pager run anyway is named, never taken for the shell.
    let out = ctx.run(&pane, "seq 1 500 | less", spec(10_000)).await;
    assert_eq!(
        decided(&out),
        (false, Layer::Nested, None),
        "{:?}",
        out.verdict
    );
    let hint = out.verdict.hint.as_deref().unwrap_or_default();
    assert!(hint.contains("`less`, a pager"), "{hint}");
}
parity!(EngineOn::start, ladder_pager_, ladder_pager);

async fn ladder_quiescence(ctx: Ctx) {
    // A shell without cohort's integration: only the quiescence layer can decide.
    let pane = ctx
        .open_command("plain", "exec bash --norc --noprofile -i")
        .await;
    ctx.engine.terminal.wait_reading(&pane, WAIT).await;
    let out = ctx
        .run(&pane, "echo a; sleep 1; echo b", spec(20_000))
        .await;
    assert_eq!(
        decided(&out),
        (true, Layer::Quiescence, None),
        "{:?}",
        out.verdict
    );
    assert!(
        out.verdict.elapsed >= Duration::from_secs(1),
        "called complete while quiet mid-output: {:?}",
        out.verdict
    );
    let lines: Vec<&str> = out.output.text.lines().map(str::trim).collect();
    assert!(
        lines.contains(&"a") && lines.contains(&"b"),
        "{:?} ({})",
        out.output.text,
        out.output.meta
    );
}
parity!(EngineOn::start, ladder_quiescence_, ladder_quiescence);

async fn ladder_timeout(ctx: Ctx) {
    let pane = ctx.shell("timeout").await;
    let out = ctx.run(&pane, "sleep 30", spec(1000)).await;
    assert_eq!(
        decided(&out),
        (false, Layer::Timeout, None),
        "{:?}",
        out.verdict
    );
    assert!(out.verdict.elapsed >= Duration::from_millis(1000));
    assert!(out.verdict.hint.is_some());
    ctx.engine
        .terminal
        .keys(
            &pane,
            &["C-c".parse().unwrap()],
            &cohort_terminal::Caller::new("test"),
            false,
        )
        .await
        .unwrap();
    let verdict = ctx.engine.terminal.wait(&pane, spec(10_000)).await.unwrap();
    assert_eq!(
        (verdict.complete, verdict.layer, verdict.exit_status),
        (true, Layer::Exit, Some(130)),
        "{verdict:?}"
    );
}
parity!(EngineOn::start, ladder_timeout_, ladder_timeout);

mod arrangements;
mod broadcast;
mod hidden;
mod marks;
mod monitors;
mod ownership;
mod profiles;
mod signals;

// ---------------------------------------------------------------------------
// Layouts
// ---------------------------------------------------------------------------

/// The window holding `pane`, as the backend reports it.
async fn window_of(ctx: &Ctx, pane: &PaneId) -> WindowInfo {
    let windows = ctx.backend().list_windows().await.expect("list windows");
    windows
        .into_iter()
        .find(|w| w.layout.panes().contains(&pane))
        .unwrap_or_else(|| panic!("no window holds {pane}"))
}

/// Checks that `node` has the shape of `tree`: the same splits in the same directions,
/// and leaf `i` is `panes[i]`.
fn check_shape(node: &LayoutNode, tree: &SplitTree, panes: &[PaneId]) {
    match (tree, node) {
        (SplitTree::Pane { pane }, LayoutNode::Pane { id, .. }) => {
            assert_eq!(id, &panes[*pane], "leaf {pane}");
        }
        (
            SplitTree::Split { split, children },
            LayoutNode::Split {
                direction,
                children: got,
                ..
            },
        ) => {
            assert_eq!(
                *direction,
                SplitDirection::from(*split),
                "direction of {node:?}"
            );
            assert_eq!(got.len(), children.len(), "children of {node:?}");
            for (child, got) in children.iter().zip(got) {
                check_shape(got, &child.tree, panes);
            }
        }
        _ => panic!("expected {tree:?}, found {node:?}"),
    }
}

/// Creates `tree` in a window of its own and checks the backend's split tree against
/// it; returns the window's layout and the panes in leaf order.
async fn layout(ctx: &Ctx, window: &str, tree: &SplitTree) -> (LayoutNode, Vec<PaneId>) {
    let created = ctx
        .engine
        .terminal
        .create_layout(window, tree, &[])
        .await
        .unwrap_or_else(|e| panic!("layout {window} on {:?}: {e}", ctx.which));
    let panes: Vec<PaneId> = created.iter().map(|p| p.id.clone()).collect();
    assert_eq!(panes.len(), tree.leaves(), "{window}");
    let info = window_of(ctx, &panes[0]).await;
    assert_eq!(
        info.layout.panes().len(),
        panes.len(),
        "{window}: the window holds exactly the layout's panes: {:?}",
        info.layout
    );
    check_shape(&info.layout, tree, &panes);
    // Every pane is a working session.
    for pane in &panes {
        assert!(
            ctx.engine.terminal.wait_ready(pane, WAIT).await,
            "{window}: no prompt in {pane}"
        );
    }
    let last = panes.last().unwrap();
    let out = ctx.run(last, "echo in-layout-$((3*3))", spec(10_000)).await;
    assert_eq!(
        decided(&out),
        (true, Layer::Exit, Some(0)),
        "{window}: {:?}\n{:?}",
        out.output.text,
        ctx.engine
            .terminal
            .read(
                last,
                &ReadOptions {
                    what: ReadWhat::All,
                    raw: true,
                    ..Default::default()
                }
            )
            .await
            .text
    );
    assert!(out.output.text.contains("in-layout-9"), "{window}");
    (info.layout, panes)
}

/// Checks that the children of every split share it evenly (within `slack` cells).
fn check_even(node: &LayoutNode, slack: u16) {
    if let LayoutNode::Split {
        direction,
        children,
        ..
    } = node
    {
        let extent = |c: &LayoutNode| match direction {
            SplitDirection::Horizontal => c.rect().cols,
            SplitDirection::Vertical => c.rect().rows,
        };
        let min = children.iter().map(extent).min().unwrap_or(0);
        let max = children.iter().map(extent).max().unwrap_or(0);
        assert!(max - min <= slack, "uneven split: {node:?}");
        children.iter().for_each(|c| check_even(c, slack));
    }
}

async fn preset(ctx: Ctx, name: &str, rows: Option<u16>, cols: Option<u16>) {
    let tree = SplitTree::preset(name, rows, cols).expect("preset");
    let (root, _) = layout(&ctx, name, &tree).await;
    if ctx.backend().capabilities().split_sizes {
        check_even(&root, 2);
    } else {
        skip(&ctx, "even shares: the backend declares no split sizes");
    }
}

parity!(EngineOn::start, layout_single, |ctx| preset(
    ctx, "single", None, None
));
parity!(EngineOn::start, layout_horizontal, |ctx| preset(
    ctx,
    "horizontal",
    None,
    None
));
parity!(EngineOn::start, layout_vertical, |ctx| preset(
    ctx, "vertical", None, None
));
parity!(EngineOn::start, layout_quad, |ctx| preset(
    ctx, "quad", None, None
));
parity!(EngineOn::start, layout_triple_vertical, |ctx| preset(
    ctx,
    "triple_vertical",
    None,
    None
));
parity!(EngineOn::start, layout_triple_bottom, |ctx| preset(
    ctx,
    "triple_bottom",
    None,
    None
));
parity!(EngineOn::start, layout_grid_2x3, |ctx| preset(
    ctx,
    "grid",
    Some(2),
    Some(3)
));

/// The share of `node` in its parent, in percent, along the parent's direction.
fn share(node: &LayoutNode, parent: &LayoutNode, direction: SplitDirection) -> f64 {
    let (part, whole) = match direction {
        SplitDirection::Horizontal => (node.rect().cols, parent.rect().cols),
        SplitDirection::Vertical => (node.rect().rows, parent.rect().rows),
    };
    part as f64 * 100.0 / whole as f64
}

async fn layout_tree_with_sizes(ctx: Ctx) {
    // A 30 % column on the left; on the right a 70 % pane above two side by side.
    let tree: SplitTree = serde_json::from_str(
        r#"{"split":"horizontal","children":[
            {"pane":0,"size":30},
            {"split":"vertical","children":[
                {"pane":1,"size":70},
                {"split":"horizontal","children":[{"pane":2},{"pane":3}]}
            ]}
        ]}"#,
    )
    .unwrap();
    let (root, _) = layout(&ctx, "sized", &tree).await;
    if !ctx.backend().capabilities().split_sizes {
        return skip(
            &ctx,
            "split sizes: the backend declares none (iTerm2's SplitPane request has no size; \
             new panes take half of the pane split), so the tree's shape is checked and its sizes are not",
        );
    }
    let LayoutNode::Split {
        children: columns, ..
    } = &root
    else {
        panic!("{root:?}")
    };
    let left = share(&columns[0], &root, SplitDirection::Horizontal);
    assert!(
        (left - 30.0).abs() <= 3.0,
        "left column {left:.1} %: {root:?}"
    );
    let LayoutNode::Split { children: rows, .. } = &columns[1] else {
        panic!("{root:?}")
    };
    let top = share(&rows[0], &columns[1], SplitDirection::Vertical);
    assert!((top - 70.0).abs() <= 5.0, "top pane {top:.1} %: {root:?}");
    let LayoutNode::Split { children: pair, .. } = &rows[1] else {
        panic!("{root:?}")
    };
    let a = pair[0].rect().cols as i32;
    let b = pair[1].rect().cols as i32;
    assert!((a - b).abs() <= 1, "an even pair: {a} and {b} columns");
}
parity!(
    EngineOn::start,
    layout_tree_with_sizes_,
    layout_tree_with_sizes
);

// ---------------------------------------------------------------------------
// Reduced reads
// ---------------------------------------------------------------------------

/// `hidden … at A-B: read lines=A-B` ranges named by a meta line (1-based, inclusive).
fn hidden_ranges(meta: &str) -> Vec<(u64, u64)> {
    meta.split("read lines=")
        .skip(1)
        .filter_map(|rest| {
            let range: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            match range.split_once('-') {
                Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                None => range.parse().ok().map(|a| (a, a)),
            }
        })
        .collect()
}

async fn reduced_read(ctx: Ctx) {
    let pane = ctx.shell("reduced").await;
    let out = ctx.run(&pane, "seq 1 5000", spec(60_000)).await;
    assert_eq!(
        decided(&out),
        (true, Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );
    let lines: Vec<&str> = out.output.text.lines().map(str::trim).collect();
    assert_eq!(lines.first(), Some(&"1"), "{:?}", out.output.text);
    assert_eq!(lines.last(), Some(&"5000"), "{:?}", out.output.text);
    assert!(lines.len() < 200, "{} lines shown", lines.len());
    let hidden = hidden_ranges(&out.output.meta);
    assert!(!hidden.is_empty(), "{}", out.output.meta);
    // The range the meta line names returns exactly what was hidden, 500 lines a read.
    let (a, b) = hidden[0];
    let mut numbers: Vec<u64> = Vec::new();
    let mut from = a - 1;
    while from < b {
        let got = ctx
            .engine
            .terminal
            .read(
                &pane,
                &ReadOptions {
                    what: ReadWhat::Lines(from..b),
                    ..Default::default()
                },
            )
            .await;
        let page: Vec<u64> = got
            .text
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        assert_eq!(page.len() as u64, (b - from).min(500), "{}", got.meta);
        numbers.extend(page);
        from += 500;
    }
    assert_eq!(numbers.len() as u64, b - a + 1);
    let shown: Vec<u64> = lines.iter().filter_map(|l| l.parse().ok()).collect();
    let first_hidden = numbers[0];
    let last_hidden = *numbers.last().unwrap();
    assert!(
        shown.contains(&(first_hidden - 1)) && shown.contains(&(last_hidden + 1)),
        "hidden {first_hidden}..={last_hidden} does not join the shown lines {shown:?}"
    );
    assert_eq!(
        numbers,
        (first_hidden..=last_hidden).collect::<Vec<_>>(),
        "the hidden lines are contiguous"
    );
}
parity!(EngineOn::start, reduced_read_, reduced_read);

/// Names, titles and directories reach the terminal as text, never as something it
/// runs or expands: tmux formats (`#(…)` runs a shell command, `#{…}` expands, `#[…]`
/// styles) in every field that reaches the terminal, read back exactly, and nothing
/// ran.
async fn names_are_never_run_or_expanded(ctx: Ctx) {
    let dir = tempfile::tempdir().unwrap();
    let canary = dir.path().join("ran");
    let run = format!("#(touch {})", canary.display());
    let payloads = [run.as_str(), "#{pane_id}", "#[fg=red]x", "a##b#", "\\(1+1)"];
    let mut expected_titles = Vec::new();
    for (i, payload) in payloads.iter().enumerate() {
        let name = format!("s{i}{payload}");
        // A working directory whose name is a format too.
        let cwd = dir.path().join(format!("d{i}{payload}"));
        std::fs::create_dir_all(&cwd).unwrap();
        let pane = ctx
            .engine
            .terminal
            .open(OpenOptions {
                name: name.clone(),
                cwd: Some(cwd.display().to_string()),
                agent: Some(format!("a{i}{payload}")),
                team: Some(format!("t{i}{payload}")),
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("open {name:?} on {:?}: {e}", ctx.which));
        assert!(ctx.engine.terminal.wait_ready(&pane.id, WAIT).await);
        let out = ctx.run(&pane.id, "pwd", spec(10_000)).await;
        assert!(
            out.output.text.contains(&cwd.display().to_string()),
            "cwd on {:?}: {:?}",
            ctx.which,
            out.output.text
        );
        let title = format!("title {payload}");
        ctx.engine
            .terminal
            .set_appearance(
                &pane.id,
                &cohort_backends::Appearance {
                    title: Some(title.clone()),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        expected_titles.push((pane.id.clone(), name, title));
    }
    // Layout names, pane names, agents and teams.
    let layout_payload = payloads[0];
    let tree = SplitTree::preset("horizontal", None, None).unwrap();
    let panes = ctx
        .engine
        .terminal
        .create_layout(
            &format!("w{layout_payload}"),
            &tree,
            &[cohort_terminal::LayoutPane {
                name: Some(format!("p{layout_payload}")),
                agent: Some(format!("la{layout_payload}")),
                team: Some(format!("lt{layout_payload}")),
                ..Default::default()
            }],
        )
        .await
        .unwrap();
    let registered = ctx
        .engine
        .terminal
        .register_agent(
            &format!("r{}", payloads[1]),
            &panes[1],
            Some("role #(x)"),
            &[format!("rt{}", payloads[2])],
        )
        .await
        .unwrap();
    assert_eq!(registered.teams, vec![format!("rt{}", payloads[2])]);

    let listed = ctx.engine.terminal.list().await.unwrap();
    for (pane, name, title) in &expected_titles {
        let info = listed.iter().find(|p| &p.id == pane).unwrap();
        let identity = info.identity.as_ref().unwrap();
        assert_eq!(&identity.name, name, "on {:?}", ctx.which);
        let state = ctx.backend().pane_state(pane).await.unwrap();
        assert_eq!(&state.title, title, "title on {:?}", ctx.which);
    }
    let window = window_of(&ctx, &panes[0].id).await;
    assert_eq!(
        window.name,
        format!("w{layout_payload}"),
        "on {:?}",
        ctx.which
    );
    let agents = ctx.engine.terminal.agents().await.unwrap();
    for expected in [format!("la{layout_payload}"), format!("r{}", payloads[1])] {
        assert!(
            agents.iter().any(|a| a.name == expected),
            "{expected:?} in {agents:?}"
        );
    }
    // A `#(…)` job would have run by the time a few more round trips are done.
    for _ in 0..5 {
        ctx.engine.terminal.list().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !canary.exists(),
        "a name ran a shell command on {:?}",
        ctx.which
    );
}
parity!(
    EngineOn::start,
    names_are_never_run_or_expanded_,
    names_are_never_run_or_expanded
);
