//! `cohort doctor`: checks that everything cohort needs is in place, and says how
//! to fix what is not.

// The doctor checks the shell integration on a scratch pane through the backend
// itself, with no engine above it (see ARCHITECTURE.md, "Every keystroke").
#![allow(clippy::disallowed_methods)]

use std::process::ExitCode;
use std::time::{Duration, Instant};

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
    use cohort_workers::{screen_rules, transcript_rules};
    for (what, standing, line) in [
        (
            "screen words",
            screen_rules::standing(),
            screen_rules::describe as fn(&_) -> String,
        ),
        (
            "transcript rules",
            transcript_rules::standing(),
            transcript_rules::describe,
        ),
    ] {
        match &standing.error {
            Some(_) => {
                ok = false;
                println!("FAIL  {what}: {}", line(&standing));
            }
            None => println!("ok    {what}: {}", line(&standing)),
        }
    }
    let prices = cohort_workers::prices::standing();
    match (&prices.file, &prices.error) {
        (_, Some(error)) => {
            ok = false;
            println!("FAIL  price table: {error}");
        }
        (Some(file), None) => println!("ok    price table: {}", file.display()),
        (None, None) => {
            let named =
                std::env::var_os(cohort_workers::prices::FILE_ENV).filter(|v| !v.is_empty());
            match (named, cohort_workers::prices::file()) {
                (Some(_), Some(path)) => println!(
                    "warn  price table: {}={} does not exist; costs only where the agent CLI states them",
                    cohort_workers::prices::FILE_ENV,
                    path.display()
                ),
                (_, Some(path)) => println!(
                    "info  price table: none ({}); costs only where the agent CLI states them",
                    path.display()
                ),
                (_, None) => println!(
                    "info  price table: none; costs only where the agent CLI states them"
                ),
            }
        }
    }
    if let Some(named) = std::env::var_os("SHELL").filter(|s| !s.is_empty()) {
        let named = std::path::PathBuf::from(named);
        if !named.is_absolute() || !named.exists() {
            println!(
                "warn  shell: SHELL={} does not exist, so sessions run {}: set SHELL to your shell's full path",
                named.display(),
                cohort_backends::shell::user_shell().display()
            );
        }
    }
    match check_shell_integration(config).await {
        Ok((shell, startup)) => {
            println!(
                "ok    shell integration: {shell} reports exit statuses (OSC 133); first prompt after {} ms",
                startup.as_millis()
            );
            if startup > SLOW_STARTUP {
                println!(
                    "warn  shell startup: {:.1} s before the first prompt; every new session waits that long. \
                     Look for slow steps in its startup files (~/.profile, ~/.bashrc, ~/.zprofile, ~/.zshrc, ...): time `{shell} -l -i -c exit`",
                    startup.as_secs_f64()
                );
            }
        }
        Err(e) => {
            ok = false;
            println!("FAIL  shell integration: {e}");
        }
    }
    match super::remote::probe_all(config).await {
        Ok(answers) if answers.is_empty() => println!(
            "info  remote hosts: none declared ({})",
            super::remote::hosts_file_name()
        ),
        Ok(answers) => {
            for (host, probe, took) in answers {
                match probe {
                    Ok(probe) => println!(
                        "ok    host {}: {} answers, {} ({} ms)",
                        host.name,
                        host.destination,
                        probe.version_text,
                        took.as_millis()
                    ),
                    // A host away is not this machine's fault: said, not failed.
                    Err(e) => println!("warn  host {}: {e}", host.name),
                }
            }
        }
        Err(e) => {
            ok = false;
            println!("FAIL  remote hosts: {e}");
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

/// A shell that takes longer than this to show its first prompt gets a warning.
const SLOW_STARTUP: Duration = Duration::from_secs(2);

/// How long a new shell gets to show its first prompt.
const FIRST_PROMPT_LIMIT: Duration = Duration::from_secs(20);

/// Opens a throwaway pane, runs `false`, and expects exit status 1 as an event.
/// Returns the shell's name and how long it took to show its first prompt.
async fn check_shell_integration(config: &Config) -> Result<(String, Duration), String> {
    let backend = TmuxBackend::connect(config.tmux())
        .await
        .map_err(|e| e.to_string())?;
    let mut events = backend.subscribe();
    let started = Instant::now();
    let pane = backend
        .spawn(SpawnOptions {
            name: "_doctor".into(),
            ..Default::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    let shell = backend.shell().display().to_string();
    let result = async {
        let mut first_prompt: Option<Duration> = None;
        loop {
            let limit = match first_prompt {
                None => FIRST_PROMPT_LIMIT.saturating_sub(started.elapsed()),
                Some(_) => Duration::from_secs(10),
            };
            let event = tokio::time::timeout(limit, events.recv())
                .await
                .map_err(|_| match first_prompt {
                    None => format!(
                        "no prompt within {} s: the shell's startup files are still running (time `{shell} -l -i -c exit` to see how long they take), or they replace cohort's prompt hook",
                        FIRST_PROMPT_LIMIT.as_secs()
                    ),
                    Some(_) => "`false` never reported its exit status: the prompt hook was replaced after startup".to_string(),
                })?
                .ok_or("event stream ended")?;
            if event.pane() != Some(&pane.id) {
                continue;
            }
            match event {
                BackendEvent::Prompt {
                    mark: PromptMark::PromptStart,
                    ..
                } if first_prompt.is_none() => {
                    first_prompt = Some(started.elapsed());
                    backend
                        .send_text(&pane.id, "false")
                        .await
                        .map_err(|e| e.to_string())?;
                    backend
                        .send_keys(&pane.id, &[Key::ENTER])
                        .await
                        .map_err(|e| e.to_string())?;
                }
                BackendEvent::Prompt {
                    mark: PromptMark::CommandFinished { exit_status },
                    ..
                } if first_prompt.is_some() => {
                    return if exit_status == Some(1) {
                        Ok(first_prompt.unwrap_or_default())
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
    result.map(|startup| (shell, startup))
}
