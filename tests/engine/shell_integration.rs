//! Shell integration for every supported shell: the user's own startup files still
//! load (profile files too: panes start as login shells), each command's exit status
//! arrives as a prompt mark, and nothing visible is printed.

// Some of these tests type through the backend itself, to see what the shell
// integration does with no engine above it.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use crate::support::*;
use cohort_backends::pad::MarkChain;
use cohort_backends::tmux::TmuxBackend;
use cohort_backends::{Key, SpawnOptions, TerminalBackend};

fn find(shell: &str) -> Option<PathBuf> {
    ["/bin", "/usr/bin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(shell))
        .find(|p| p.exists())
}

/// Runs the scenario for `shell`; returns false (with a notice) when it is not installed.
/// `write_user_files` writes the user's startup files into the home directory; the
/// shell must then report `COHORT_TEST_USER_RC=<shell>` and `COHORT_TEST_PROFILE=<profile>`,
/// and find both `from-profile` (in `~/pbin`, which the startup files add to PATH, often
/// after resetting it as Debian's /etc/profile does) and `from-start` (in a directory
/// only the PATH the pane started with has).
async fn check_shell(shell: &str, profile: &str, write_user_files: impl FnOnce(&Path)) -> bool {
    let Some(path) = find(shell) else {
        // CI installs every shell and sets this, so a missing shell fails there.
        assert!(
            std::env::var("COHORT_REQUIRE_ALL_SHELLS").as_deref() != Ok("1"),
            "{shell} is not installed but COHORT_REQUIRE_ALL_SHELLS=1"
        );
        eprintln!("NOTICE: {shell} is not installed; its integration was not tested here (CI installs it)");
        return false;
    };
    let server = TestServer::new();
    let home = server.state_dir().join("home");
    std::fs::create_dir_all(&home).unwrap();
    write_user_files(&home);
    let start_bin = server.state_dir().join("start-bin");
    write_script(&start_bin.join("from-start"), "echo start-ok");
    write_script(&home.join("pbin/from-profile"), "echo profile-ok");
    let mut config = server.config();
    config.shell = Some(path.clone());
    let backend = TmuxBackend::connect(config).await.unwrap();
    let mut events = backend.subscribe();
    let mut marks = backend.subscribe();
    let chain = MarkChain::new(64).unwrap();
    let search_path = format!(
        "{}:{}",
        start_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut env = vec![
        ("HOME".to_string(), home.to_string_lossy().into_owned()),
        ("PATH".to_string(), search_path),
    ];
    if home.join(".shrc").exists() {
        env.push((
            "ENV".into(),
            home.join(".shrc").to_string_lossy().into_owned(),
        ));
    }
    let pane = backend
        .spawn(SpawnOptions {
            name: shell.into(),
            env,
            marks: Some(chain.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    wait_prompt(&mut events, &pane.id).await;
    let pads = server.state_dir().join("pads");
    assert_eq!(
        std::fs::read_dir(&pads).map(|d| d.count()).unwrap_or(0),
        0,
        "{shell}: the pad file is left in {}",
        pads.display()
    );

    backend
        .send_text(
            &pane.id,
            "echo rc=$COHORT_TEST_USER_RC profile=$COHORT_TEST_PROFILE",
        )
        .await
        .unwrap();
    backend.send_keys(&pane.id, &[Key::ENTER]).await.unwrap();
    let expected = format!("rc={shell} profile={profile}\r\n");
    collect_output_until(&mut events, &pane.id, |o| contains(o, expected.as_bytes())).await;
    assert_eq!(
        wait_exit(&mut events, &pane.id).await,
        Some(0),
        "{shell}: echo"
    );

    // SHELL names the shell the pane runs.
    backend
        .send_text(&pane.id, "echo \"shell=$SHELL\"")
        .await
        .unwrap();
    backend.send_keys(&pane.id, &[Key::ENTER]).await.unwrap();
    let expected = format!("shell={}\r\n", path.display());
    collect_output_until(&mut events, &pane.id, |o| contains(o, expected.as_bytes())).await;
    assert_eq!(
        wait_exit(&mut events, &pane.id).await,
        Some(0),
        "{shell}: SHELL"
    );

    backend
        .send_text(&pane.id, "from-start && from-profile")
        .await
        .unwrap();
    backend.send_keys(&pane.id, &[Key::ENTER]).await.unwrap();
    collect_output_until(&mut events, &pane.id, |o| {
        contains(o, b"start-ok\r\nprofile-ok\r\n")
    })
    .await;
    assert_eq!(
        wait_exit(&mut events, &pane.id).await,
        Some(0),
        "{shell}: PATH"
    );

    backend.send_text(&pane.id, "false").await.unwrap();
    backend.send_keys(&pane.id, &[Key::ENTER]).await.unwrap();
    assert_eq!(
        wait_exit(&mut events, &pane.id).await,
        Some(1),
        "{shell}: false"
    );

    backend
        .send_text(&pane.id, "sh -c 'exit 42'")
        .await
        .unwrap();
    backend.send_keys(&pane.id, &[Key::ENTER]).await.unwrap();
    assert_eq!(
        wait_exit(&mut events, &pane.id).await,
        Some(42),
        "{shell}: exit 42"
    );
    wait_prompt(&mut events, &pane.id).await;

    // Nothing of the pad reaches a program the shell runs.
    backend
        .send_text(&pane.id, "env | grep -c COHORT_MARK")
        .await
        .unwrap();
    backend.send_keys(&pane.id, &[Key::ENTER]).await.unwrap();
    assert_eq!(
        wait_exit(&mut events, &pane.id).await,
        Some(1),
        "{shell}: a COHORT_MARK variable is in the environment"
    );
    wait_prompt(&mut events, &pane.id).await;

    let screen = backend.read_screen(&pane.id).await.unwrap();
    let text = screen.rows.join("\n");
    assert!(
        !text.contains("133;") && !text.contains("cohort"),
        "{shell}: visible integration output:\n{text}"
    );

    // Every mark the shell printed carries the next token of its chain, once.
    let seen = marks_follow_chain(&mut marks, &pane.id, &chain, 1, shell);
    assert!(seen >= 12, "{shell}: only {seen} marks");
    true
}

fn write_script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A profile that resets PATH the way Debian's /etc/profile does, then adds `~/pbin`.
const RESET_PATH: &str = "PATH=/usr/bin:/bin:$HOME/pbin; export PATH\n";

#[tokio::test]
async fn bash_integration() {
    let tested = check_shell("bash", "bash", |home| {
        std::fs::write(
            home.join(".bash_profile"),
            format!("export COHORT_TEST_PROFILE=bash\n{RESET_PATH}. ~/.bashrc\n"),
        )
        .unwrap();
        std::fs::write(
            home.join(".bashrc"),
            "export COHORT_TEST_USER_RC=bash\nPS1='b$ '\n",
        )
        .unwrap();
    })
    .await;
    assert!(tested, "bash is required");
}

/// A user with a `~/.bashrc` and no profile file at all still gets their rc.
#[tokio::test]
async fn bash_with_only_a_bashrc() {
    let tested = check_shell("bash", "", |home| {
        std::fs::write(
            home.join(".bashrc"),
            format!("export COHORT_TEST_USER_RC=bash\n{RESET_PATH}"),
        )
        .unwrap();
    })
    .await;
    assert!(tested, "bash is required");
}

#[tokio::test]
async fn zsh_integration() {
    check_shell("zsh", "zsh", |home| {
        std::fs::write(
            home.join(".zprofile"),
            format!("export COHORT_TEST_PROFILE=zsh\n{RESET_PATH}"),
        )
        .unwrap();
        std::fs::write(
            home.join(".zshrc"),
            "export COHORT_TEST_USER_RC=zsh\nPS1='z%% '\n",
        )
        .unwrap();
    })
    .await;
}

#[tokio::test]
async fn fish_integration() {
    check_shell("fish", "fish", |home| {
        let dir = home.join(".config/fish");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.fish"),
            "set -gx COHORT_TEST_USER_RC fish\nset -g fish_greeting\n\
             status is-login; and set -gx COHORT_TEST_PROFILE fish\n\
             set -gx PATH $PATH $HOME/pbin\n",
        )
        .unwrap();
    })
    .await;
}

#[tokio::test]
async fn sh_fallback_integration() {
    check_shell("dash", "dash", |home| {
        // POSIX sh reads the file named by $ENV; here the environment names it.
        std::fs::write(home.join(".shrc"), "export COHORT_TEST_USER_RC=dash\n").unwrap();
        std::fs::write(
            home.join(".profile"),
            format!("export COHORT_TEST_PROFILE=dash\n{RESET_PATH}"),
        )
        .unwrap();
    })
    .await;
}

/// The usual sh setup names the ENV file in `~/.profile`, which runs after cohort set
/// `ENV` to its own wrapper: the user's file must still load, and the marks still come.
#[tokio::test]
async fn sh_with_env_named_in_the_profile() {
    check_shell("dash", "dash", |home| {
        std::fs::write(home.join(".env.sh"), "export COHORT_TEST_USER_RC=dash\n").unwrap();
        std::fs::write(
            home.join(".profile"),
            format!("export COHORT_TEST_PROFILE=dash\n{RESET_PATH}ENV=$HOME/.env.sh; export ENV\n"),
        )
        .unwrap();
    })
    .await;
}

/// `run` empties the shell's input line before typing, silently: no bell a human
/// attached to the session would hear (readline rings it for C-u on an empty line),
/// and keys left on the line do not reach the command.
async fn check_no_bell(shell: &str) {
    let Some(path) = find(shell) else {
        assert!(
            std::env::var("COHORT_REQUIRE_ALL_SHELLS").as_deref() != Ok("1"),
            "{shell} is not installed but COHORT_REQUIRE_ALL_SHELLS=1"
        );
        eprintln!("NOTICE: {shell} is not installed; its line clearing was not tested here");
        return;
    };
    let server = TestServer::new();
    let mut config = server.config();
    config.shell = Some(path);
    let backend = std::sync::Arc::new(TmuxBackend::connect(config).await.unwrap());
    let mut events = backend.subscribe();
    let engine =
        cohort::engine::Engine::with_backend(backend, server.state_dir(), &server.socket).unwrap();
    let pane = engine
        .terminal
        .open(cohort_terminal::OpenOptions::named("bell"))
        .await
        .unwrap();
    assert!(
        engine.terminal.wait_ready(&pane.id, WAIT).await,
        "{shell}: no prompt"
    );
    engine.terminal.wait_shell_up(&pane.id).await;
    let spec = cohort_terminal::completion::WaitSpec {
        timeout: std::time::Duration::from_secs(10),
        ..Default::default()
    };
    let options = cohort_terminal::SendOptions::default();
    for _ in 0..3 {
        let out = engine
            .terminal
            .run(
                &pane.id,
                "true",
                &options,
                spec.clone(),
                false,
                &cohort_terminal::Caller::new("test"),
            )
            .await
            .unwrap();
        assert!(out.verdict.complete, "{shell}: {}", out.output.meta);
    }
    // Keys left on the line are dropped, not prefixed to the command.
    engine
        .terminal
        .send(
            &pane.id,
            "junk",
            &cohort_terminal::SendOptions {
                enter: false,
                ..Default::default()
            },
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .unwrap();
    let out = engine
        .terminal
        .run(
            &pane.id,
            "printf 'clean-%s\\n' ok",
            &options,
            spec,
            false,
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .unwrap();
    assert!(
        out.output.text.trim().ends_with("clean-ok") && !out.output.text.contains("junk"),
        "{shell}: {:?}",
        out.output.text
    );
    // Every byte the pane wrote so far: BEL only as the end of an OSC sequence.
    let mut bytes = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let cohort_backends::BackendEvent::Output { bytes: b, .. } = event {
            bytes.extend_from_slice(&b);
        }
    }
    let osc = regex::bytes::Regex::new(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)").unwrap();
    let rest = osc.replace_all(&bytes, &b""[..]);
    assert!(
        !rest.contains(&0x07),
        "{shell} rang the bell: {:?}",
        String::from_utf8_lossy(&bytes)
    );
}

#[tokio::test]
async fn clearing_the_line_rings_no_bell_in_bash() {
    check_no_bell("bash").await;
}

#[tokio::test]
async fn clearing_the_line_rings_no_bell_in_zsh() {
    check_no_bell("zsh").await;
}

#[tokio::test]
async fn clearing_the_line_rings_no_bell_in_fish() {
    check_no_bell("fish").await;
}

#[tokio::test]
async fn clearing_the_line_rings_no_bell_in_sh() {
    check_no_bell("dash").await;
}
