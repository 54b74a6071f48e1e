//! `cohort hosts`: the remote hosts declared in `hosts.toml`, each asked once over
//! ssh whether it answers, which tmux it has and how long the round trip took.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use cohort_backends::tmux::remote::SshHost;

use crate::config::Config;

/// One declared host, asked: what it answered (or why not), and how long it took.
pub type Answer = (
    SshHost,
    Result<cohort_backends::tmux::remote::Probe, cohort_backends::BackendError>,
    Duration,
);

/// Asks every declared host at once. `Err`: the hosts file does not parse.
pub async fn probe_all(config: &Config) -> Result<Vec<Answer>, String> {
    let hosts = crate::hosts::load().map_err(|e| e.to_string())?;
    let control_dir = config.tmux().state_dir.join("ssh");
    let probes = hosts.into_iter().map(|mut host| {
        host.control_dir.get_or_insert_with(|| control_dir.clone());
        async move {
            let started = Instant::now();
            let probe = host.probe("tmux").await;
            (host, probe, started.elapsed())
        }
    });
    Ok(futures_util::future::join_all(probes).await)
}

/// Where the hosts are declared, for messages.
pub fn hosts_file_name() -> String {
    crate::hosts::hosts_file()
        .map(|f| f.display().to_string())
        .unwrap_or_else(|| "~/.config/cohort/hosts.toml".into())
}

/// Prints one row per declared host; fails when one cannot be reached.
pub async fn list(config: &Config) -> ExitCode {
    let answers = match probe_all(config).await {
        Ok(answers) => answers,
        Err(e) => {
            eprintln!("cohort: {e}");
            return ExitCode::FAILURE;
        }
    };
    if answers.is_empty() {
        println!(
            "no hosts declared in {}; `open` also takes any destination ssh knows (host: \"user@box\")",
            hosts_file_name()
        );
        return ExitCode::SUCCESS;
    }
    let mut rows = Vec::new();
    let mut unreachable = false;
    for (host, probe, took) in answers {
        let (state, tmux) = match probe {
            Ok(probe) => ("reachable".to_string(), probe.version_text),
            Err(e) => {
                unreachable = true;
                (format!("unreachable: {e}"), String::new())
            }
        };
        rows.push([
            host.name.clone(),
            host.destination.clone(),
            tmux,
            format!("{} ms", took.as_millis()),
            state,
        ]);
    }
    print!(
        "{}",
        super::table(["HOST", "SSH", "TMUX", "ROUND TRIP", "STATE"], &rows)
    );
    if unreachable {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
