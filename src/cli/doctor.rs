//! `cohort doctor`: checks that everything cohort needs is in place, and says how
//! to fix what is not.

use std::process::ExitCode;
use std::time::Duration;

use cohort_backends::tmux::{cli as tmux_cli, TmuxBackend};
use cohort_backends::{BackendEvent, Key, PromptMark, SpawnOptions, TerminalBackend};

use crate::config::Config;

/// Runs every check, printing one line each; fails when any check fails.
pub async fn run(config: &Config) -> ExitCode {
    let mut ok = true;
    let tmux_config = config.tmux();
    match tmux_cli::check_version(&tmux_config.program).await {
        Ok((_, text)) => println!("ok    tmux: {text} ({})", tmux_config.program.display()),
        Err(e) => {
            println!("FAIL  tmux: {e}");
            return ExitCode::FAILURE;
        }
    }
    let running = tmux_cli::server_running(&tmux_config.program, &tmux_config.socket).await;
    println!(
        "ok    socket: tmux {} ({})",
        tmux_config.socket,
        if running {
            "server running"
        } else {
            "no server yet; cohort starts it on demand"
        }
    );
    println!("ok    state: {}", config.state_dir.display());
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    match crate::rules::load(&cwd) {
        Ok(Some(rules)) => println!(
            "ok    reducer rules: {} rule(s) from {}",
            rules.len(),
            crate::rules::rule_files(&cwd)
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Ok(None) => println!(
            "info  reducer rules: none (.cohort/reducers.toml or ~/.config/cohort/reducers.toml)"
        ),
        Err(e) => {
            ok = false;
            println!("FAIL  reducer rules: {e}");
        }
    }
    match check_shell_integration(config).await {
        Ok(shell) => println!("ok    shell integration: {shell} reports exit statuses (OSC 133)"),
        Err(e) => {
            ok = false;
            println!("FAIL  shell integration: {e}");
        }
    }
    if !running {
        // Leave things as they were: stop the server the check started.
        let _ = tmux_cli::kill_server(&tmux_config.program, &tmux_config.socket).await;
    }
    if cfg!(target_os = "macos") {
        let socket = std::env::var_os("HOME")
            .map(std::path::PathBuf::from)
            .unwrap_or_default()
            .join("Library/Application Support/iTerm2/private/socket");
        if socket.exists() {
            println!("ok    iTerm2: API socket found at {}", socket.display());
        } else {
            println!(
                "info  iTerm2: not reachable (no API socket); enable it in iTerm2 > Settings > General > Magic > Enable Python API"
            );
        }
    } else {
        println!("info  iTerm2: not macOS, skipped");
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Opens a throwaway pane, runs `false`, and expects exit status 1 as an event.
async fn check_shell_integration(config: &Config) -> Result<String, String> {
    let backend = TmuxBackend::connect(config.tmux())
        .await
        .map_err(|e| e.to_string())?;
    let mut events = backend.subscribe();
    let pane = backend
        .spawn(SpawnOptions {
            name: "_doctor".into(),
            ..Default::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    let result = async {
        let mut sent = false;
        loop {
            let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
                .await
                .map_err(|_| {
                    "no prompt mark within 10 s: the shell did not load cohort's integration"
                        .to_string()
                })?
                .ok_or("event stream ended")?;
            if event.pane() != Some(&pane.id) {
                continue;
            }
            match event {
                BackendEvent::Prompt {
                    mark: PromptMark::PromptStart,
                    ..
                } if !sent => {
                    backend
                        .send_text(&pane.id, "false")
                        .await
                        .map_err(|e| e.to_string())?;
                    backend
                        .send_keys(&pane.id, &[Key::ENTER])
                        .await
                        .map_err(|e| e.to_string())?;
                    sent = true;
                }
                BackendEvent::Prompt {
                    mark: PromptMark::CommandFinished { exit_status },
                    ..
                } if sent => {
                    return if exit_status == Some(1) {
                        Ok(())
                    } else {
                        Err(format!(
                            "`false` reported exit status {exit_status:?}, expected 1"
                        ))
                    };
                }
                _ => {}
            }
        }
    }
    .await;
    let _ = backend.close(&pane.id).await;
    result.map(|()| {
        backend
            .shell_command()
            .split_whitespace()
            .nth(1)
            .unwrap_or("shell")
            .to_string()
    })
}
