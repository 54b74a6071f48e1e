//! `cohort hosts`: the remote hosts declared in `hosts.toml`, each asked once over
//! ssh whether it answers, which tmux it has and how long the round trip took.

use std::process::ExitCode;
use std::time::Instant;

use crate::config::Config;

/// Prints one row per declared host; fails when one cannot be reached.
pub async fn list(config: &Config) -> ExitCode {
    let hosts = match crate::hosts::load() {
        Ok(hosts) => hosts,
        Err(e) => {
            eprintln!("cohort: {e}");
            return ExitCode::FAILURE;
        }
    };
    if hosts.is_empty() {
        let file = crate::hosts::hosts_file()
            .map(|f| f.display().to_string())
            .unwrap_or_else(|| "~/.config/cohort/hosts.toml".into());
        println!("no hosts declared in {file}; `open` also takes any destination ssh knows (host: \"user@box\")");
        return ExitCode::SUCCESS;
    }
    let control_dir = config.tmux().state_dir.join("ssh");
    let probes = hosts.into_iter().map(|mut host| {
        host.control_dir.get_or_insert_with(|| control_dir.clone());
        async move {
            let started = Instant::now();
            let probe = host.probe("tmux").await;
            (host, probe, started.elapsed())
        }
    });
    let mut rows = Vec::new();
    let mut unreachable = false;
    for (host, probe, took) in futures_util::future::join_all(probes).await {
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
