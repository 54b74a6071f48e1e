//! Marks signed with one-time tokens on iTerm2, for every shell: each `B`, `C` and `D`
//! the shell prints is reported with the next token of its chain, once; no token is
//! left in a file or the environment; nothing shows on screen; and the exit status of
//! a shell or a one-shot command comes from its own signed mark.

// These tests drive the backend itself, below the terminal's input type.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use crate::{iterm2_support::FakeIterm2, support::*};
use cohort_backends::pad::{MarkChain, SHELL_PAD_LEN};
use cohort_backends::{BackendEvent, EventStream, PaneId, SpawnOptions, TerminalBackend};

fn find(shell: &str) -> Option<PathBuf> {
    ["/bin", "/usr/bin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(shell))
        .find(|p| p.exists())
}

/// Types `line` and Enter, and waits for the command's finished mark (and the
/// prompt after it, where the shell marks its prompts for iTerm2: fish does not).
async fn run_line(
    backend: &dyn TerminalBackend,
    events: &mut EventStream,
    pane: &PaneId,
    line: &str,
    prompts: bool,
) -> Option<i32> {
    backend.send_text(pane, &format!("{line}\r")).await.unwrap();
    let status = wait_exit(events, pane).await;
    if prompts {
        wait_prompt(events, pane).await;
    }
    status
}

/// The scenario for `shell`; false (with a notice) when it is not installed here.
async fn check_shell(shell: &str) -> bool {
    let Some(path) = find(shell) else {
        assert!(
            std::env::var("COHORT_REQUIRE_ALL_SHELLS").as_deref() != Ok("1"),
            "{shell} is not installed but COHORT_REQUIRE_ALL_SHELLS=1"
        );
        eprintln!("NOTICE: {shell} is not installed; its iTerm2 integration was not tested here");
        return false;
    };
    let fake = FakeIterm2::new().await;
    let mut config = fake.config();
    config.shell = Some(path);
    let pads = config.pad_dir();
    let backend = cohort_backends::iterm2::Iterm2Backend::connect(config)
        .await
        .expect("connect to the fake iTerm2");
    let mut events = backend.subscribe();
    let mut marks = backend.subscribe();
    let chain = MarkChain::new(SHELL_PAD_LEN).unwrap();
    let pane = backend
        .spawn(SpawnOptions {
            name: shell.into(),
            marks: Some(chain.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    // fish marks no prompt for iTerm2 (its prompt is known from its commands).
    let prompts = shell != "fish";
    if prompts {
        wait_prompt(&mut events, &pane.id).await;
    }
    assert_eq!(
        run_line(&backend, &mut events, &pane.id, "echo one", prompts).await,
        Some(0),
        "{shell}: echo"
    );
    assert_eq!(
        std::fs::read_dir(&pads).map(|d| d.count()).unwrap_or(0),
        0,
        "{shell}: the pad file is left in {}",
        pads.display()
    );
    assert_eq!(
        run_line(&backend, &mut events, &pane.id, "false", prompts).await,
        Some(1),
        "{shell}: false"
    );
    assert_eq!(
        run_line(&backend, &mut events, &pane.id, "sh -c 'exit 42'", prompts).await,
        Some(42),
        "{shell}: exit 42"
    );
    assert_eq!(
        run_line(
            &backend,
            &mut events,
            &pane.id,
            "env | grep -c COHORT_MARK",
            prompts
        )
        .await,
        Some(1),
        "{shell}: a COHORT_MARK variable is in the environment"
    );
    let screen = backend.read_screen(&pane.id).await.unwrap();
    let text = screen.rows.join("\n");
    assert!(
        !text.contains("133;") && !text.contains("cohort") && !text.contains("1337"),
        "{shell}: visible integration output:\n{text}"
    );

    // Every mark reported carries a token of the chain, in order, each once. The `A`
    // marks iTerm2 does not report take a token of their own, so a reported token may
    // be two links down from the one before. The hub hands each event to its
    // subscribers one after the other: the last `D`, already taken from `events`, may
    // not be in `marks` yet. A barrier emitted through the hub (under the lock it
    // delivers under) comes after that delivery has finished.
    backend.event_hub().synced();
    let seen = marks_follow_chain(&mut marks, &pane.id, &chain, 2, shell);
    assert!(seen >= 8, "{shell}: only {seen} signed marks");

    // The shell's own exit mark gives the session's status.
    backend.send_text(&pane.id, "exit 7\r").await.unwrap();
    assert_eq!(
        wait_dead(&backend, &mut events, &pane.id).await,
        Some(7),
        "{shell}: the exit status"
    );
    true
}

/// Waits for the session's program to end (its exit event); the exit status the
/// backend then gives for it.
async fn wait_dead(
    backend: &dyn TerminalBackend,
    events: &mut EventStream,
    pane: &PaneId,
) -> Option<i32> {
    wait_pane_exit(events, pane).await;
    let state = backend.pane_state(pane).await.unwrap();
    assert!(state.dead, "{state:?}");
    state.exit_status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_signs_with_one_time_tokens() {
    assert!(check_shell("bash").await, "bash is required");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zsh_signs_with_one_time_tokens() {
    check_shell("zsh").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fish_signs_with_one_time_tokens() {
    check_shell("fish").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sh_signs_with_one_time_tokens() {
    check_shell("dash").await;
}

/// A one-shot command's wrapper signs its exit with the one token of its pad.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_command_signs_its_exit() {
    let fake = FakeIterm2::new().await;
    let backend = fake.backend().await;
    let mut marks = backend.subscribe();
    let mut events = backend.subscribe();
    let chain = MarkChain::new(1).unwrap();
    let pane = backend
        .spawn(SpawnOptions {
            name: "once".into(),
            command: Some("echo from-command; exit 3".into()),
            marks: Some(chain.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(wait_dead(&backend, &mut events, &pane.id).await, Some(3));
    let mut anchor = chain.anchor();
    let mut exits = 0;
    while let Ok(event) = marks.try_recv() {
        if let BackendEvent::Prompt {
            pane: p, params, ..
        } = event
        {
            if p == pane.id && params.exiting {
                assert!(anchor.verify(params.key.as_deref().unwrap_or(""), 1));
                exits += 1;
            }
        }
    }
    assert_eq!(exits, 1);
}
