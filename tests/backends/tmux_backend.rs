//! The tmux backend against a real tmux server on a private socket per test.

// These tests drive the backend itself, below the terminal's input type.
#![allow(clippy::disallowed_methods)]

use std::time::Duration;

use crate::support::*;
use cohort_backends::{
    BackendError, BackendEvent, Identity, Key, LineRange, PaneId, SpawnOptions, SplitDirection,
    SplitOptions, SplitSize, TerminalBackend,
};

fn shell(name: &str) -> SpawnOptions {
    SpawnOptions {
        name: name.into(),
        ..Default::default()
    }
}

async fn ready_shell(
    backend: &impl TerminalBackend,
    events: &mut cohort_backends::EventStream,
    name: &str,
) -> PaneId {
    let pane = backend.spawn(shell(name)).await.expect("spawn");
    wait_prompt(events, &pane.id).await;
    pane.id
}

async fn run(backend: &impl TerminalBackend, pane: &PaneId, command: &str) {
    backend.send_text(pane, command).await.expect("send text");
    backend
        .send_keys(pane, &[Key::ENTER])
        .await
        .expect("send enter");
}

#[tokio::test]
async fn exit_status_arrives_as_an_event() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    let pane = ready_shell(&backend, &mut events, "exit-status").await;

    run(&backend, &pane, "false").await;
    assert_eq!(wait_exit(&mut events, &pane).await, Some(1));
    run(&backend, &pane, "true").await;
    assert_eq!(wait_exit(&mut events, &pane).await, Some(0));
    run(&backend, &pane, "sh -c 'exit 7'").await;
    assert_eq!(wait_exit(&mut events, &pane).await, Some(7));
}

#[tokio::test]
async fn an_empty_line_reports_no_exit_status() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    let pane = ready_shell(&backend, &mut events, "empty-line").await;

    backend.send_keys(&pane, &[Key::ENTER]).await.unwrap();
    // The next prompt comes without a D mark: the next D must belong to `false`.
    wait_prompt(&mut events, &pane).await;
    run(&backend, &pane, "false").await;
    assert_eq!(wait_exit(&mut events, &pane).await, Some(1));
}

#[tokio::test]
async fn cjk_and_emoji_round_trip_byte_exact() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    let pane = ready_shell(&backend, &mut events, "unicode").await;

    let text = "héllo 世界 🎉 日本語テキスト ✓";
    run(
        &backend,
        &pane,
        &format!("printf '[%s]\\n' '{text}' | od -An -tx1 | tr -d ' \\n'; echo"),
    )
    .await;
    let expected_hex: String = format!("[{text}]\n")
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    let out = collect_output_until(&mut events, &pane, |out| {
        contains(out, expected_hex.as_bytes())
    })
    .await;
    assert!(contains(&out, expected_hex.as_bytes()));

    // And straight through the output stream, as raw bytes.
    run(&backend, &pane, &format!("echo '<{text}>'")).await;
    let wanted = format!("<{text}>\r\n");
    let out =
        collect_output_until(&mut events, &pane, |out| contains(out, wanted.as_bytes())).await;
    assert!(contains(&out, wanted.as_bytes()));
}

#[tokio::test]
async fn a_100kb_multiline_paste_arrives_intact_and_runs_only_on_enter() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    let pane = ready_shell(&backend, &mut events, "paste").await;
    let target = server.state_dir().join("pasted.txt");

    let mut body = String::new();
    let mut i = 0;
    while body.len() < 100 * 1024 {
        body.push_str(&format!(
            "line {i:05} — ünïcödé, quotes ' \" $HOME `x` \\ tab\there\n"
        ));
        i += 1;
    }
    let script = format!(
        "cat > '{}' <<'COHORT_EOF'\n{body}COHORT_EOF",
        target.display()
    );
    backend.paste(&pane, &script).await.expect("paste");

    // Nothing runs until Enter: the shell draws the whole paste (its last line
    // arrives), goes back to reading its terminal, and no command starts or ends.
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !contains(&seen, b"COHORT_EOF") {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("the paste was drawn")
            .expect("event stream");
        match event {
            BackendEvent::Output { pane: p, bytes } if p == pane => seen.extend_from_slice(&bytes),
            BackendEvent::Prompt { pane: p, mark, .. } if p == pane => {
                panic!("the paste ran before Enter: {mark:?}")
            }
            _ => {}
        }
    }
    wait_reading(&backend, &pane).await;
    while let Ok(event) = events.try_recv() {
        if let BackendEvent::Prompt { pane: p, mark, .. } = event {
            assert_ne!(p, pane, "the paste ran before Enter: {mark:?}");
        }
    }
    assert!(!target.exists(), "the paste ran before Enter");

    backend.send_keys(&pane, &[Key::ENTER]).await.unwrap();
    assert_eq!(wait_exit(&mut events, &pane).await, Some(0));
    let written = std::fs::read_to_string(&target).expect("file written");
    assert_eq!(written.len(), body.len());
    assert!(written == body, "pasted text changed on the way");
}

#[tokio::test]
async fn long_text_is_typed_whole() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    let pane = ready_shell(&backend, &mut events, "long-text").await;
    let target = server.state_dir().join("typed.txt");

    let word: String = (0..20_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    wait_reading(&backend, &pane).await;
    run(
        &backend,
        &pane,
        &format!("printf %s {word} > '{}'", target.display()),
    )
    .await;
    assert_eq!(wait_exit(&mut events, &pane).await, Some(0));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), word);
}

#[tokio::test]
async fn ctrl_c_interrupts_and_the_shell_is_back() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    let pane = ready_shell(&backend, &mut events, "ctrl-c").await;

    run(&backend, &pane, "sleep 30").await;
    wait_for(&mut events, &pane, "the command to start", |e| match e {
        BackendEvent::Prompt {
            mark: cohort_backends::PromptMark::CommandStart,
            ..
        } => Some(()),
        _ => None,
    })
    .await;
    // Ctrl-C only reaches `sleep` once it is the terminal's foreground process.
    let deadline = tokio::time::Instant::now() + WAIT;
    while backend.pane_state(&pane).await.unwrap().foreground_command != "sleep" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "sleep never became the foreground process"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    backend
        .send_keys(&pane, &["C-c".parse().unwrap()])
        .await
        .unwrap();
    assert_eq!(wait_exit(&mut events, &pane).await, Some(130));
    wait_prompt(&mut events, &pane).await;
    let state = backend.pane_state(&pane).await.unwrap();
    assert!(
        state.at_shell(),
        "shell not back in the foreground: {state:?}"
    );
    assert_eq!(state.foreground_command, "bash");
}

#[tokio::test]
async fn an_exiting_process_reports_its_status() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    let pane = backend
        .spawn(SpawnOptions {
            name: "one-shot".into(),
            command: Some("echo bye; sleep 0.3; exit 3".into()),
            ..Default::default()
        })
        .await
        .unwrap();

    assert_eq!(wait_exit(&mut events, &pane.id).await, Some(3));
    let status = wait_for(&mut events, &pane.id, "the pane to exit", |e| match e {
        BackendEvent::PaneExited { exit_status, .. } => Some(*exit_status),
        _ => None,
    })
    .await;
    assert_eq!(status, Some(3));
    let state = backend.pane_state(&pane.id).await.unwrap();
    assert!(state.dead);
    assert_eq!(state.exit_status, Some(3));

    // A shell that exits is reported the same way.
    let shell_pane = ready_shell(&backend, &mut events, "exiting-shell").await;
    run(&backend, &shell_pane, "exit 5").await;
    let status = wait_for(&mut events, &shell_pane, "the shell to exit", |e| match e {
        BackendEvent::PaneExited { exit_status, .. } => Some(*exit_status),
        _ => None,
    })
    .await;
    assert_eq!(status, Some(5));
}

#[tokio::test]
async fn two_connections_drive_the_same_server_at_once() {
    let server = TestServer::new();
    let first = server.backend().await;
    let second = server.backend().await;
    let mut first_events = first.subscribe();
    let mut second_events = second.subscribe();

    let a = ready_shell(&first, &mut first_events, "from-first").await;
    let b = ready_shell(&second, &mut second_events, "from-second").await;

    // Each drives the other's pane and sees the result on its own event stream.
    let (r1, r2) = tokio::join!(
        run(&first, &b, "echo one-$((40+2))"),
        run(&second, &a, "echo two-$((40+3))")
    );
    let _ = (r1, r2);
    collect_output_until(&mut first_events, &b, |o| contains(o, b"one-42\r\n")).await;
    collect_output_until(&mut second_events, &a, |o| contains(o, b"two-43\r\n")).await;

    let names = |panes: Vec<cohort_backends::PaneInfo>| {
        let mut n: Vec<String> = panes.into_iter().map(|p| p.window_name).collect();
        n.sort();
        n
    };
    assert_eq!(
        names(first.list_panes().await.unwrap()),
        ["from-first", "from-second"]
    );
    assert_eq!(
        names(second.list_panes().await.unwrap()),
        ["from-first", "from-second"]
    );
}

#[tokio::test]
async fn a_pane_is_found_again_by_its_stamped_identity() {
    let server = TestServer::new();
    let identity = Identity {
        id: "6f1c9a52-0000-4000-8000-000000000001".into(),
        name: "builder".into(),
        agent: Some("alice".into()),
        team: Some("backend".into()),
        key: None,
        anchor: None,
        announces_start: false,
    };
    let pane = {
        let backend = server.backend().await;
        let pane = backend
            .spawn(SpawnOptions {
                name: "builder".into(),
                identity: Some(identity.clone()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(pane.identity.as_ref(), Some(&identity));
        pane.id
        // The first connection is dropped here, like a cohort process that exits.
    };
    let later = server.backend().await;
    let found = later.list_panes().await.unwrap();
    let again = found
        .iter()
        .find(|p| p.identity.as_ref() == Some(&identity))
        .expect("found by identity");
    assert_eq!(again.id, pane);
}

#[tokio::test]
async fn splits_layouts_and_close() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let left = backend.spawn(shell("split")).await.unwrap();
    let right = backend
        .split(
            &left.id,
            SplitOptions {
                direction: SplitDirection::Horizontal,
                size: Some(SplitSize::Percent(30)),
                spawn: shell("ignored"),
            },
        )
        .await
        .unwrap();
    let below = backend
        .split(
            &right.id,
            SplitOptions {
                direction: SplitDirection::Vertical,
                size: None,
                spawn: shell("ignored"),
            },
        )
        .await
        .unwrap();
    let windows = backend.list_windows().await.unwrap();
    assert_eq!(windows.len(), 1);
    let panes: Vec<PaneId> = windows[0].layout.panes().into_iter().cloned().collect();
    assert_eq!(
        panes,
        vec![left.id.clone(), right.id.clone(), below.id.clone()]
    );
    assert!(
        right.size.cols < left.size.cols,
        "30% split: {right:?} vs {left:?}"
    );

    backend.close(&below.id).await.unwrap();
    let err = backend.close(&below.id).await.unwrap_err();
    assert!(matches!(err, BackendError::PaneGone(_)), "{err}");
    assert_eq!(backend.list_panes().await.unwrap().len(), 2);
}

#[tokio::test]
async fn lines_and_screen_are_readable() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    let pane = ready_shell(&backend, &mut events, "read").await;

    run(&backend, &pane, "seq 1 300").await;
    assert_eq!(wait_exit(&mut events, &pane).await, Some(0));
    let state = backend.pane_state(&pane).await.unwrap();
    assert!(state.history_lines > 200, "{state:?}");
    let all = backend
        .read_lines(
            &pane,
            LineRange {
                start: 0,
                end: u64::MAX,
            },
        )
        .await
        .unwrap();
    let numbers: Vec<&String> = all
        .lines
        .iter()
        .filter(|l| l.chars().all(|c| c.is_ascii_digit()) && !l.is_empty())
        .collect();
    assert_eq!(numbers.first().map(|s| s.as_str()), Some("1"));
    assert_eq!(numbers.last().map(|s| s.as_str()), Some("300"));
    let some = backend
        .read_lines(&pane, LineRange { start: 5, end: 8 })
        .await
        .unwrap();
    assert_eq!(some.first, 5);
    assert_eq!(some.lines.len(), 3);

    let screen = backend.read_screen(&pane).await.unwrap();
    assert_eq!(screen.rows.len(), screen.size.rows as usize);
    assert!(!screen.alternate);
    assert!(screen.rows.iter().any(|r| r == "300"));
}

#[tokio::test]
async fn bad_input_gets_clear_errors() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let gone = PaneId::new("%9999");
    assert!(matches!(
        backend.send_text(&gone, "x").await,
        Err(BackendError::PaneGone(_))
    ));
    assert!(matches!(
        backend.pane_state(&gone).await,
        Err(BackendError::PaneGone(_))
    ));
    assert!(matches!(
        backend
            .send_text(&PaneId::new("%1; kill-server"), "x")
            .await,
        Err(BackendError::InvalidArgument(_))
    ));
    let err = backend
        .spawn(SpawnOptions {
            name: "x".into(),
            cwd: Some("/definitely/not/here".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    // The connection is still fine afterwards.
    assert!(backend.list_panes().await.is_ok());
}

#[tokio::test]
async fn reconnects_after_the_server_goes_away() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    backend.spawn(shell("before")).await.unwrap();
    std::process::Command::new("tmux")
        .args(["-L", &server.socket, "kill-server"])
        .status()
        .unwrap();
    // The event stream says so…
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("disconnect event")
        {
            Some(BackendEvent::Disconnected { .. }) => break,
            Some(_) => continue,
            None => panic!("stream ended"),
        }
    }
    // …and the next call starts a fresh server and works, saying the server is a new
    // one (so the engine keeps nothing of the old panes, whose ids the new ones reuse).
    let pane = backend.spawn(shell("after")).await.expect("reconnected");
    let mut restarted = false;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("prompt after reconnecting")
        {
            Some(BackendEvent::ServerRestarted) => restarted = true,
            Some(BackendEvent::Prompt { pane: p, .. }) if p == pane.id => break,
            Some(_) => continue,
            None => panic!("stream ended"),
        }
    }
    assert!(
        restarted,
        "no ServerRestarted event before the new pane's prompt"
    );
}

/// Whether `server`'s tmux answers.
fn server_up(server: &TestServer) -> bool {
    std::process::Command::new("tmux")
        .args(["-L", &server.socket, "has-session"])
        .env_remove("TMUX")
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success()
}

#[tokio::test]
async fn the_server_exits_with_the_last_session_unless_asked_to_stay() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let one = backend.spawn(shell("one")).await.unwrap();
    let two = backend.spawn(shell("two")).await.unwrap();
    backend.close(&one.id).await.unwrap();
    assert!(server_up(&server), "a session is still open");
    backend.close(&two.id).await.unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while server_up(&server) {
        assert!(
            std::time::Instant::now() < deadline,
            "the server outlived its last session"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The next session starts it again.
    let again = backend.spawn(shell("again")).await.expect("a new server");
    assert!(server_up(&server));

    // Asked to stay, it stays.
    let mut config = server.config();
    config.keep_server = true;
    let keeping = cohort_backends::tmux::TmuxBackend::connect(config)
        .await
        .unwrap();
    keeping.close(&again.id).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(server_up(&server), "kept as asked");
}

/// tmux answers an `if-shell` twice (its own block, then its branch's): the control
/// client takes both, and the replies after it stay with their commands; an `if-shell`
/// sent as an ordinary command is refused before it can shift them.
#[tokio::test]
async fn an_if_shell_answer_never_goes_to_the_next_command() {
    use cohort_backends::tmux::control::ControlClient;
    let server = TestServer::new();
    let status = std::process::Command::new("tmux")
        .args(["-L", &server.socket, "new-session", "-d", "-s", "probe"])
        .env_remove("TMUX")
        .status()
        .unwrap();
    assert!(status.success());
    let mut command = tokio::process::Command::new("tmux");
    command
        .args(["-L", &server.socket, "-C", "attach", "-t", "probe"])
        .env_remove("TMUX");
    let client = ControlClient::start(command, Box::new(|_| {}))
        .await
        .unwrap();
    let text = |reply: cohort_backends::tmux::parse::Reply| reply.text().trim().to_string();
    for (condition, branch) in [("1", "yes"), ("0", "no")] {
        let line =
            format!("if-shell -F {condition} 'display-message -p yes' 'display-message -p no'");
        assert_eq!(text(client.if_shell(&line).await.unwrap()), branch);
        let after = client.command("display-message -p after").await.unwrap();
        assert_eq!(
            text(after),
            "after",
            "the branch's answer went to the next command"
        );
    }
    // Refused by tmux (a branch it cannot parse): no branch runs, nothing is left to
    // shift.
    let refused = "if-shell -F 1 'no-such-command' 'display-message -p no'";
    assert!(client.if_shell(refused).await.is_err());
    let after = client.command("display-message -p next").await.unwrap();
    assert_eq!(text(after), "next");
    // A branch that fails when it runs is the call's error.
    let failing = "if-shell -F 1 'kill-session -t =no-such-session' 'display-message -p no'";
    assert!(client.if_shell(failing).await.is_err());
    let err = client
        .command("if-shell -F 1 'display-message -p yes'")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("if_shell"), "{err}");
    let after = client.command("display-message -p still").await.unwrap();
    assert_eq!(text(after), "still");
}

/// A team's pane is badged with the team and titled `Team :: agent`: its border names
/// the team once; a title that does not begin with the badge follows it.
#[tokio::test]
async fn the_border_names_a_team_once() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    let pane = ready_shell(&backend, &mut events, "bordered").await;
    let border = |pane: &PaneId| {
        let out = std::process::Command::new("tmux")
            .args(["-L", &server.socket, "display-message", "-p", "-t"])
            .arg(pane.as_str())
            .arg("#{E:pane-border-format}")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let badged = cohort_backends::Appearance {
        badge: Some("Team Leads".into()),
        tab_color: Some("#33cc99".into()),
        ..Default::default()
    };
    backend.set_appearance(&pane, &badged).await.unwrap();
    backend
        .set_title(&pane, "Team Leads :: alice")
        .await
        .unwrap();
    let shown = border(&pane);
    assert_eq!(shown.matches("Team Leads").count(), 1, "{shown}");
    assert!(shown.contains("Team Leads :: alice"), "{shown}");
    assert!(shown.contains("fg=#33cc99"), "{shown}");

    backend.set_title(&pane, "build").await.unwrap();
    let shown = border(&pane);
    assert!(shown.contains("Team Leads#[default] build"), "{shown}");

    // The window's status entry has the team's colour while its panes agree on it, and
    // none once a pane of another team shares the window.
    let status_style = || {
        let out = std::process::Command::new("tmux")
            .args(["-L", &server.socket, "show-options", "-w", "-v", "-t"])
            .arg(pane.as_str())
            .arg("window-status-style")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(status_style(), "fg=#33cc99");
    let other = backend
        .split(
            &pane,
            SplitOptions {
                direction: SplitDirection::Horizontal,
                size: None,
                spawn: shell("other-team"),
            },
        )
        .await
        .unwrap();
    let purple = cohort_backends::Appearance {
        tab_color: Some("#9933cc".into()),
        ..Default::default()
    };
    backend.set_appearance(&other.id, &purple).await.unwrap();
    assert_ne!(status_style(), "fg=#9933cc");
    assert_ne!(status_style(), "fg=#33cc99");
}

/// A line that reaches tmux after its expiry, by tmux's own clock, is refused and
/// nothing is typed: here every line is already late (`line_expiry_s` below zero),
/// as a line held by a silent link is when the link comes back.
#[tokio::test]
async fn a_guarded_line_that_arrives_late_is_refused_by_tmuxs_clock() {
    use cohort_backends::{Guarded, Keystrokes};

    let server = TestServer::new();
    let line = |text: &str| {
        vec![
            Keystrokes::Text(text.to_string()),
            Keystrokes::Keys(vec![Key::ENTER]),
        ]
    };
    let mut config = server.config();
    config.line_expiry_s = -2;
    let late = cohort_backends::tmux::TmuxBackend::connect(config)
        .await
        .expect("connect to tmux");
    let mut events = late.subscribe();
    let pane = ready_shell(&late, &mut events, "late").await;
    let shell = late.pane_state(&pane).await.unwrap().shell_command;
    let refused = late
        .send_input_guarded(&pane, Some(&shell), &line("echo typed-late"))
        .await
        .unwrap();
    assert_eq!(refused, Guarded::Late);
    // Its buffer, which holds the line, is not left behind.
    let buffers = late
        .raw_command("list-buffers -F '#{buffer_name}'")
        .await
        .unwrap();
    assert!(buffers.is_empty(), "{buffers:?}");
    drop(late);
    // On time, the same line on the same pane goes in.
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    let typed = backend
        .send_input_guarded(&pane, Some(&shell), &line("(exit 6)"))
        .await
        .unwrap();
    assert_eq!(typed, Guarded::Typed);
    assert_eq!(wait_exit(&mut events, &pane).await, Some(6));
    let text = backend
        .raw_command(&format!("capture-pane -p -S - -t {pane}"))
        .await
        .unwrap()
        .join("\n");
    assert!(
        !text.contains("typed-late"),
        "the late line was typed: {text}"
    );
}

#[tokio::test]
async fn keys_under_a_guard_go_in_only_to_the_shell_at_its_prompt() {
    use cohort_backends::{Guarded, Keystrokes};

    let server = TestServer::new();
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    let pane = ready_shell(&backend, &mut events, "guarded").await;
    let shell = backend.pane_state(&pane).await.unwrap().shell_command;
    let line = |text: &str| {
        vec![
            Keystrokes::Text(text.to_string()),
            Keystrokes::Keys(vec![Key::ENTER]),
        ]
    };

    // At its prompt: typed, and run.
    let typed = backend
        .send_input_guarded(&pane, Some(&shell), &line("(exit 3)"))
        .await
        .unwrap();
    assert_eq!(typed, Guarded::Typed);
    assert_eq!(wait_exit(&mut events, &pane).await, Some(3));

    // Another program in the foreground: refused, nothing typed.
    run(&backend, &pane, "sleep 30").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while backend.pane_state(&pane).await.unwrap().foreground_command != "sleep" {
        assert!(std::time::Instant::now() < deadline, "sleep never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = backend
        .send_input_guarded(&pane, Some(&shell), &line("echo into-sleep"))
        .await
        .unwrap();
    assert_eq!(refused, Guarded::Refused);
    // A key for whatever program holds the pane: no name to check.
    let interrupt = vec![Keystrokes::Keys(vec!["C-c".parse().unwrap()])];
    let typed = backend
        .send_input_guarded(&pane, None, &interrupt)
        .await
        .unwrap();
    assert_eq!(typed, Guarded::Typed);
    assert_eq!(
        wait_exit(&mut events, &pane).await,
        Some(130),
        "sleep's end"
    );
    // The refused line's buffer is not left behind.
    let buffers = backend
        .raw_command("list-buffers -F '#{buffer_name}'")
        .await
        .unwrap();
    assert!(buffers.is_empty(), "{buffers:?}");

    // In copy mode: refused.
    backend
        .raw_command(&format!("copy-mode -t {pane}"))
        .await
        .unwrap();
    let refused = backend
        .send_input_guarded(&pane, Some(&shell), &line("echo into-copy-mode"))
        .await
        .unwrap();
    assert_eq!(refused, Guarded::Refused);
    backend
        .raw_command(&format!("copy-mode -q -t {pane}"))
        .await
        .unwrap();
    let text = backend
        .raw_command(&format!("capture-pane -p -S - -t {pane}"))
        .await
        .unwrap()
        .join("\n");
    assert!(!text.contains("into-"), "something was typed: {text}");

    // A window whose panes a person synchronised: the line reaches this pane alone.
    let other = synchronised_neighbour(&backend, &pane).await;
    let typed = backend
        .send_input_guarded(&pane, Some(&shell), &line("(exit 9)"))
        .await
        .unwrap();
    assert_eq!(typed, Guarded::Typed);
    assert_eq!(wait_exit(&mut events, &pane).await, Some(9));
    let seen = backend
        .raw_command(&format!("capture-pane -p -t {other}"))
        .await
        .unwrap()
        .join("\n");
    assert!(!seen.contains("exit 9"), "the other pane got it: {seen}");

    // Keys whose bytes depend on the keyboard's mode, or a shell name that cannot
    // go into a format, are not typed this way.
    let arrow = vec![Keystrokes::Keys(vec!["Up".parse().unwrap()])];
    assert_eq!(
        backend
            .send_input_guarded(&pane, Some(&shell), &arrow)
            .await
            .unwrap(),
        Guarded::Unsupported
    );
    assert_eq!(
        backend
            .send_input_guarded(&pane, Some("ba}sh"), &line("true"))
            .await
            .unwrap(),
        Guarded::Unsupported
    );
    // A pane that is gone takes nothing (the state asked next says it is gone).
    let gone = backend
        .send_input_guarded(&PaneId("%999".into()), Some(&shell), &line("true"))
        .await;
    assert!(
        matches!(
            gone,
            Ok(Guarded::Refused) | Err(BackendError::PaneGone { .. })
        ),
        "{gone:?}"
    );
}
