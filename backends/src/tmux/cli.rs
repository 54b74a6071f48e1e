//! One-shot tmux invocations: the version check and server-level commands that run
//! before (or without) a control-mode connection.
//!
//! These run tmux as a child process with argv (no shell, no quoting) and never sit
//! on the hot path.

use std::path::Path;
use std::process::Stdio;

use tokio::process::Command;

use crate::error::{BackendError, Result};

use super::config::Socket;

/// The oldest tmux cohort supports: control-mode flow control (`pause-after`) and
/// `refresh-client -B` subscriptions arrived in 3.2.
pub const MIN_VERSION: Version = Version { major: 3, minor: 2 };

/// A tmux version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Parses `tmux -V` output: `tmux 3.3a`, `tmux next-3.5`, `tmux 3.2-rc2`, `tmux master`.
pub fn parse_version(output: &str) -> Option<Version> {
    let word = output.split_whitespace().nth(1)?;
    if word == "master" {
        return Some(Version {
            major: 99,
            minor: 0,
        });
    }
    let word = word
        .trim_start_matches("next-")
        .trim_start_matches("openbsd-");
    let (major, rest) = word.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some(Version {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
    })
}

/// How to install tmux, for error messages.
pub fn install_hint() -> &'static str {
    if cfg!(target_os = "macos") {
        "install it with `brew install tmux`"
    } else {
        "install it with your package manager, e.g. `sudo apt-get install tmux` or `sudo dnf install tmux`"
    }
}

/// Finds tmux and checks its version; the error says how to fix it.
pub async fn check_version(program: &Path) -> Result<(Version, String)> {
    let output = Command::new(program)
        .arg("-V")
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| {
            BackendError::TmuxUnavailable(format!(
                "tmux was not found ({}: {e}); cohort needs tmux {MIN_VERSION} or newer: {}",
                program.display(),
                install_hint()
            ))
        })?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let version = parse_version(&text).ok_or_else(|| {
        BackendError::TmuxUnavailable(format!(
            "could not read the tmux version from {text:?}; cohort needs tmux {MIN_VERSION} or newer: {}",
            install_hint()
        ))
    })?;
    if version < MIN_VERSION {
        return Err(BackendError::TmuxUnavailable(format!(
            "{text} is too old; cohort needs tmux {MIN_VERSION} or newer (control-mode flow control and subscriptions): {}",
            install_hint()
        )));
    }
    Ok((version, text))
}

/// A tmux command for `socket`, with the environment cleaned so it never mistakes
/// itself for a nested client.
///
/// `-u` declares the client UTF-8 capable whatever the locale says. Without it, a
/// cohort started with no `LANG` (agent hosts and CI often start servers with a bare
/// environment) gets every non-ASCII character and control byte in replies turned
/// into `_`: the field separator in formatted replies included.
pub fn command(program: &Path, socket: &Socket) -> Command {
    let mut cmd = Command::new(program);
    cmd.arg("-u").args(socket.args());
    cmd.env_remove("TMUX").env_remove("TMUX_PANE");
    cmd.stdin(Stdio::null());
    cmd
}

/// Runs one tmux command; its stdout on success, tmux's message on failure.
pub async fn run(program: &Path, socket: &Socket, args: &[&str]) -> Result<String> {
    let output = command(program, socket)
        .args(args)
        .output()
        .await
        .map_err(|e| BackendError::io(format!("running {}", program.display()), e))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(BackendError::Tmux {
            cmd: args.join(" "),
            message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}

/// Whether a tmux server answers on `socket`.
pub async fn server_running(program: &Path, socket: &Socket) -> bool {
    run(program, socket, &["list-sessions"]).await.is_ok()
}

/// Kills the server on `socket` (used by tests and `cohort doctor`).
pub async fn kill_server(program: &Path, socket: &Socket) -> Result<()> {
    run(program, socket, &["kill-server"]).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(
            parse_version("tmux 3.3a"),
            Some(Version { major: 3, minor: 3 })
        );
        assert_eq!(
            parse_version("tmux next-3.5"),
            Some(Version { major: 3, minor: 5 })
        );
        assert_eq!(
            parse_version("tmux 3.2-rc2"),
            Some(Version { major: 3, minor: 2 })
        );
        assert_eq!(
            parse_version("tmux 2.9a"),
            Some(Version { major: 2, minor: 9 })
        );
        assert!(parse_version("tmux 2.9a").unwrap() < MIN_VERSION);
        assert!(parse_version("tmux master").unwrap() >= MIN_VERSION);
        assert_eq!(parse_version("garbage"), None);
    }
}
