//! tmux on a remote host over SSH, where it differs from a local server: what is
//! installed on the far side and how, a host key that changed, a host that cannot be
//! reached. The scenarios both transports share run in the parity suites (their `ssh`
//! tests).

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use cohort_backends::tmux::TmuxBackend;
use cohort_backends::{BackendError, SpawnOptions, TerminalBackend};

use crate::ssh_support::{self, SshServer};
use crate::support::TestServer;

/// A local tmux test server configured to live on `ssh`'s host.
fn remote_config(
    server: &TestServer,
    ssh: &SshServer,
) -> cohort_backends::tmux::config::TmuxConfig {
    let mut config = server.config();
    config.host = Some(ssh.host("far"));
    config
}

#[tokio::test]
async fn the_far_side_gets_cohorts_files_privately_and_no_pad_is_left() {
    if !ssh_support::available() {
        return;
    }
    let ssh = SshServer::start().unwrap();
    let server = TestServer::new();
    let backend = TmuxBackend::connect(remote_config(&server, &ssh))
        .await
        .expect("connect over ssh");
    assert!(backend.is_remote());
    assert!(!backend.capabilities().foreground_process);
    let pane = backend
        .spawn(SpawnOptions {
            name: "files".into(),
            marks: Some(cohort_backends::pad::MarkChain::new(64).unwrap()),
            ..Default::default()
        })
        .await
        .unwrap();
    let dir = ssh.home().join(".local/state/cohort").join(&server.socket);
    for file in [
        "tmux.conf",
        "shell/bashrc",
        "shell/zsh/.zshenv",
        "shell/shrc",
    ] {
        let path = dir.join(file);
        let mode = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{} on the far side: {e}", path.display()))
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{} is readable by others", path.display());
    }
    // Nothing of cohort's is written on this machine's state for a remote server.
    assert!(!server.state_dir().join("shell").exists());
    // The shell read its pad and deleted it.
    let pads = dir.join("pads");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<_> = std::fs::read_dir(&pads)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "pads left on the far side: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let hint = backend.attach_hint(&pane.id);
    assert_eq!(hint.argv[0], "ssh", "{hint:?}");
    assert!(hint.argv.contains(&"-t".to_string()), "{hint:?}");
    assert!(hint.command_line.contains("cohort-test-host"), "{hint:?}");
}

#[tokio::test]
async fn a_host_key_that_changed_is_refused_with_the_host_named() {
    if !ssh_support::available() {
        return;
    }
    let ssh = SshServer::start().unwrap();
    let server = TestServer::new();
    let mut config = server.config();
    config.host = Some(ssh.host_with_another_key("far"));
    let err = TmuxBackend::connect(config).await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, BackendError::HostUnreachable { .. }),
        "{err:?}"
    );
    assert!(text.contains("host far"), "{text}");
    assert!(
        text.contains("Host key verification failed")
            || text.contains("HOST IDENTIFICATION HAS CHANGED"),
        "ssh's own words are kept: {text}"
    );
}

#[tokio::test]
async fn a_host_nobody_answers_on_fails_at_once_with_what_ssh_said() {
    if !ssh_support::available() {
        return;
    }
    let mut ssh = SshServer::start().unwrap();
    let server = TestServer::new();
    let config = remote_config(&server, &ssh);
    ssh.stop(); // its port answers nothing now
    let started = Instant::now();
    let err = TmuxBackend::connect(config).await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, BackendError::HostUnreachable { .. }),
        "{err:?}"
    );
    assert!(text.contains("Connection refused"), "{text}");
    assert!(
        text.contains("without a password prompt"),
        "says what to check: {text}"
    );
    eprintln!("refused after {:?}", started.elapsed());
}

/// Cuts every connection of `ssh`'s server, leaving it up to connect again.
fn cut_the_link(ssh: &SshServer) {
    assert!(ssh.cut(), "no connection to cut");
}

/// Cuts the link and keeps the host unreachable for `down`: sshd takes connections
/// made meanwhile and does not answer them, as a network that is away.
async fn cut_the_link_for(ssh: &SshServer, down: Duration) {
    ssh.stop_answering();
    cut_the_link(ssh);
    tokio::time::sleep(down).await;
    ssh.answer_again();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_link_is_cut_the_next_call_reconnects_to_the_same_panes() {
    use cohort_terminal::completion::{Layer, WaitSpec};
    use cohort_terminal::{Caller, OpenOptions, SendOptions};

    if !ssh_support::available() {
        return;
    }
    let ctx = crate::terminals::EngineOn::start(crate::terminals::Which::Ssh).await;
    let crate::terminals::Terminal::Ssh(_, ssh) = &ctx.terminal else {
        unreachable!()
    };
    let terminal = &ctx.engine.terminal;
    let pane = terminal.open(OpenOptions::named("cut")).await.unwrap().id;
    assert!(terminal.wait_ready(&pane, Duration::from_secs(20)).await);
    let caller = Caller::new("test");
    let spec = |ms| WaitSpec {
        timeout: Duration::from_millis(ms),
        ..WaitSpec::default()
    };
    let send = SendOptions::default();
    let run =
        |command: &'static str| terminal.run(&pane, command, &send, spec(20_000), false, &caller);
    let before = run("export KEPT=$((6*7))").await.unwrap();
    assert_eq!(before.verdict.exit_status, Some(0), "{:?}", before.verdict);
    cut_the_link(ssh);
    // The far side's shell lived on: what it holds is still there, and commands get
    // their real exit status again.
    let after = run("echo kept-$KEPT; (exit 4)").await.unwrap();
    assert_eq!(
        (after.verdict.layer, after.verdict.exit_status),
        (Layer::Exit, Some(4)),
        "{:?}",
        after.verdict
    );
    assert!(
        after.output.text.contains("kept-42"),
        "{:?}",
        after.output.text
    );
}

/// An engine on a remote host with one shell ready, and the way to its sshd.
async fn remote_shell(name: &str) -> (crate::terminals::EngineOn, cohort_backends::PaneId) {
    let ctx = crate::terminals::EngineOn::start(crate::terminals::Which::Ssh).await;
    let pane = ctx
        .engine
        .terminal
        .open(cohort_terminal::OpenOptions::named(name))
        .await
        .unwrap()
        .id;
    assert!(
        ctx.engine
            .terminal
            .wait_ready(&pane, Duration::from_secs(20))
            .await
    );
    (ctx, pane)
}

fn ssh_of(ctx: &crate::terminals::EngineOn) -> &SshServer {
    let crate::terminals::Terminal::Ssh(_, ssh) = &ctx.terminal else {
        unreachable!()
    };
    ssh
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_the_link_broke_under_ends_with_the_real_status_and_output() {
    if !ssh_support::available() {
        return;
    }
    let (ctx, pane) = remote_shell("midwait").await;
    // Down from before the command ends until after.
    let cut = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cut_the_link_for(ssh_of(&ctx), Duration::from_secs(3)).await;
    };
    // The command ended while no connection was there: its output and its status
    // were read back from the far side, not guessed.
    ends_with_its_status_through(&ctx, &pane, cut).await;
}

/// Runs a command that prints `late-42` after 1.5 s and exits 5, with `fault` done to
/// the link meanwhile: its verdict is still the exit status, with the output.
async fn ends_with_its_status_through(
    ctx: &crate::terminals::EngineOn,
    pane: &cohort_backends::PaneId,
    fault: impl std::future::Future<Output = ()>,
) {
    use cohort_terminal::completion::{Layer, WaitSpec};
    use cohort_terminal::{Caller, SendOptions};

    let spec = WaitSpec {
        timeout: Duration::from_secs(30),
        ..WaitSpec::default()
    };
    let (send, caller) = (SendOptions::default(), Caller::new("test"));
    let command = "sleep 1.5; echo late-$((6*7)); (exit 5)";
    let run = ctx
        .engine
        .terminal
        .run(pane, command, &send, spec, false, &caller);
    let (out, ()) = tokio::join!(run, fault);
    let out = out.unwrap();
    assert_eq!(
        (out.verdict.layer, out.verdict.exit_status),
        (Layer::Exit, Some(5)),
        "{:?}",
        out.verdict
    );
    assert!(out.output.text.contains("late-42"), "{:?}", out.output.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_pane_printed_while_the_link_was_down_is_read_back_whole() {
    use cohort_terminal::read::{ReadOptions, ReadWhat};
    use cohort_terminal::{Caller, SendOptions};

    if !ssh_support::available() {
        return;
    }
    let (ctx, pane) = remote_shell("away").await;
    let terminal = &ctx.engine.terminal;
    let reader = ReadOptions {
        caller: "test".into(),
        ..Default::default()
    };
    terminal.read(&pane, &reader).await; // everything before is read
    terminal
        .send(
            &pane,
            "sleep 1; seq 1 3000 | sed 's/^/away-/'; echo finished-$((6*7))",
            &SendOptions::default(),
            &Caller::new("test"),
        )
        .await
        .unwrap();
    // Down while all of it is printed.
    cut_the_link_for(ssh_of(&ctx), Duration::from_secs(3)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut text = String::new();
    let mut meta = String::new();
    while Instant::now() < deadline && !text.contains("finished-42") {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let all = ReadOptions {
            what: ReadWhat::All,
            raw: true,
            max_lines: Some(100_000),
            ..Default::default()
        };
        let read = terminal.read(&pane, &all).await;
        text = read.text;
        meta = read.meta;
    }
    assert!(
        text.contains("finished-42"),
        "never read back: {text:?} ({meta})"
    );
    for n in 1..=3000 {
        let line = format!("away-{n}\r\n");
        assert!(text.contains(&line), "{line:?} missing: {meta}");
    }
    assert!(!meta.contains("lost"), "said output was lost: {meta}");
}

/// An engine on a remote host behind a link with `delay` each way, one shell ready.
async fn shell_over_link(
    name: &str,
    delay: Duration,
) -> (
    crate::terminals::EngineOn,
    crate::support::link::Link,
    cohort_backends::PaneId,
) {
    let (ctx, link) = crate::terminals::EngineOn::over_link(delay).await;
    let terminal = &ctx.engine.terminal;
    let pane = terminal
        .open(cohort_terminal::OpenOptions::named(name))
        .await
        .unwrap()
        .id;
    assert!(terminal.wait_ready(&pane, Duration::from_secs(20)).await);
    (ctx, link, pane)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_the_link_went_silent_under_ends_with_the_real_status_and_output() {
    if !ssh_support::available() {
        return;
    }
    let (ctx, link, pane) = shell_over_link("silent", Duration::ZERO).await;
    // Silent from before the command ends until after: nothing crosses, nothing is
    // closed, as when a route is lost and comes back.
    let silence = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        link.silence();
        tokio::time::sleep(Duration::from_secs(4)).await;
        link.restore();
    };
    ends_with_its_status_through(&ctx, &pane, silence).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_while_the_link_is_silent_is_refused_naming_the_host() {
    use cohort_terminal::completion::{Layer, WaitSpec};
    use cohort_terminal::{Caller, SendOptions};

    if !ssh_support::available() {
        return;
    }
    let (ctx, link, pane) = shell_over_link("unanswered", Duration::ZERO).await;
    let terminal = &ctx.engine.terminal;
    let spec = WaitSpec {
        timeout: Duration::from_secs(60),
        ..WaitSpec::default()
    };
    let (send, caller) = (SendOptions::default(), Caller::new("test"));
    let run =
        |command: &'static str| terminal.run(&pane, command, &send, spec.clone(), false, &caller);
    let before = run("export KEPT=$((6*7))").await.unwrap();
    assert_eq!(before.verdict.exit_status, Some(0), "{:?}", before.verdict);
    link.silence();
    let started = Instant::now();
    let during = run("echo during-$KEPT").await;
    let waited = started.elapsed();
    // Refused, naming the host and what to check, not held until ssh's keepalives
    // give up.
    let err = during.unwrap_err().to_string();
    assert!(
        err.contains("host remote (cohort-test-host) did not answer"),
        "{err}"
    );
    assert!(err.contains("ssh cohort-test-host"), "{err}");
    eprintln!("refused after {waited:?}: {err}");
    // While the link stays silent, the next call tries a new connection and is
    // refused with what ssh said.
    let again = run("echo again").await.unwrap_err().to_string();
    assert!(again.contains("host remote"), "{again}");
    eprintln!("then: {again}");
    link.restore();
    // The link is back: the same shell, its state kept, real exit statuses.
    let after = run("echo after-$KEPT; (exit 4)").await.unwrap();
    assert_eq!(
        (after.verdict.layer, after.verdict.exit_status),
        (Layer::Exit, Some(4)),
        "{:?}",
        after.verdict
    );
    assert!(
        after.output.text.contains("after-42"),
        "{:?}",
        after.output.text
    );
    // The refused call typed nothing: no line of it arrives late, when the link is
    // back, to run after it was given up.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let all = cohort_terminal::read::ReadOptions {
        what: cohort_terminal::read::ReadWhat::All,
        raw: true,
        ..Default::default()
    };
    let text = terminal.read(&pane, &all).await.text;
    assert!(!text.contains("during-42"), "{text}");
}
