//! Shell integration for every supported shell: the user's own rc files still load,
//! each command's exit status arrives as a prompt mark, and nothing visible is printed.

mod support;

use std::path::{Path, PathBuf};

use cohort_backends::tmux::TmuxBackend;
use cohort_backends::{Key, SpawnOptions, TerminalBackend};
use support::*;

fn find(shell: &str) -> Option<PathBuf> {
    ["/bin", "/usr/bin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(shell))
        .find(|p| p.exists())
}

/// Runs the scenario for `shell`; returns false (with a notice) when it is not installed.
async fn check_shell(shell: &str, write_user_rc: impl FnOnce(&Path)) -> bool {
    let Some(path) = find(shell) else {
        // CI installs every shell and sets this, so a missing shell fails there.
        assert!(
            std::env::var("COHORT_REQUIRE_ALL_SHELLS").as_deref() != Ok("1"),
            "{shell} is not installed but COHORT_REQUIRE_ALL_SHELLS=1"
        );
        eprintln!("NOTICE: {shell} is not installed; its integration was not tested here (CI installs it)");
        return false;
    };
    isolate_home();
    let server = TestServer::new();
    let home = server.state_dir().join("home");
    std::fs::create_dir_all(&home).unwrap();
    write_user_rc(&home);
    let mut config = server.config();
    config.shell = Some(path.clone());
    let backend = TmuxBackend::connect(config).await.unwrap();
    let mut events = backend.subscribe();
    let mut env = vec![("HOME".to_string(), home.to_string_lossy().into_owned())];
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
            ..Default::default()
        })
        .await
        .unwrap();
    wait_prompt(&mut events, &pane.id).await;

    backend
        .send_text(&pane.id, "echo rc=$COHORT_TEST_USER_RC")
        .await
        .unwrap();
    backend.send_keys(&pane.id, &[Key::ENTER]).await.unwrap();
    let expected = format!("rc={shell}\r\n");
    collect_output_until(&mut events, &pane.id, |o| contains(o, expected.as_bytes())).await;
    assert_eq!(
        wait_exit(&mut events, &pane.id).await,
        Some(0),
        "{shell}: echo"
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

    let screen = backend.read_screen(&pane.id).await.unwrap();
    let text = screen.rows.join("\n");
    assert!(
        !text.contains("133;") && !text.contains("cohort"),
        "{shell}: visible integration output:\n{text}"
    );
    true
}

#[tokio::test]
async fn bash_integration() {
    let tested = check_shell("bash", |home| {
        std::fs::write(
            home.join(".bashrc"),
            "export COHORT_TEST_USER_RC=bash\nPS1='b$ '\n",
        )
        .unwrap();
    })
    .await;
    assert!(tested, "bash is required");
}

#[tokio::test]
async fn zsh_integration() {
    check_shell("zsh", |home| {
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
    check_shell("fish", |home| {
        let dir = home.join(".config/fish");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.fish"),
            "set -gx COHORT_TEST_USER_RC fish\nset -g fish_greeting\n",
        )
        .unwrap();
    })
    .await;
}

#[tokio::test]
async fn sh_fallback_integration() {
    check_shell("dash", |home| {
        // The fallback has no rc file of its own convention; it honours $ENV, which a
        // user sets in their profile. Tests point it at a file in HOME.
        std::fs::write(home.join(".shrc"), "export COHORT_TEST_USER_RC=dash\n").unwrap();
    })
    .await;
}
