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

/// Where package managers put tmux, for a cohort started with a bare `PATH`: a desktop
/// app on macOS starts its MCP servers with `/usr/bin:/bin:/usr/sbin:/sbin`, which
/// misses Homebrew and MacPorts.
pub const USUAL_DIRS: [&str; 6] = [
    "/opt/homebrew/bin",
    "/usr/local/bin",
    "/opt/local/bin",
    "/home/linuxbrew/.linuxbrew/bin",
    "/snap/bin",
    "/usr/bin",
];

/// The tmux to run: `program` itself when it is a path or found on `PATH`, else the
/// first executable of that name in [`USUAL_DIRS`], else `program` unchanged (running it
/// then fails with the install hint).
pub fn locate(program: &Path) -> std::path::PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    locate_in(program, &path, &USUAL_DIRS)
}

fn locate_in(program: &Path, path: &std::ffi::OsStr, usual: &[&str]) -> std::path::PathBuf {
    if program.components().count() != 1 {
        return program.to_path_buf();
    }
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if std::env::split_paths(path).any(|dir| executable(&dir.join(program))) {
        return program.to_path_buf();
    }
    usual
        .iter()
        .map(|dir| Path::new(dir).join(program))
        .find(|p| executable(p))
        .unwrap_or_else(|| program.to_path_buf())
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
                "tmux was not found ({}: {e}; also looked in {}); cohort needs tmux {MIN_VERSION} or newer: {}, or name it with COHORT_TMUX=/path/to/tmux",
                program.display(),
                USUAL_DIRS.join(", "),
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
///
/// cohort's own settings and secrets (`COHORT_*`: the state directory, a worker's
/// hook key, a role; `ITERM2_COOKIE`) are left out too: the tmux server started by
/// this command hands its environment to every pane's shell, and a client's command
/// hands its own to the session it makes. What a pane needs from cohort it gets
/// explicitly (`new-window -e`).
pub fn command(program: &Path, socket: &Socket) -> Command {
    let mut cmd = Command::new(program);
    cmd.arg("-u").args(socket.args());
    cmd.env_remove("TMUX").env_remove("TMUX_PANE");
    for (name, _) in std::env::vars_os() {
        if kept_from_panes(&name.to_string_lossy()) {
            cmd.env_remove(&name);
        }
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// Whether the environment variable `name` is cohort's own, never passed to panes.
fn kept_from_panes(name: &str) -> bool {
    name.starts_with("COHORT_") || name == "ITERM2_COOKIE" || name == "ITERM2_KEY"
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
    fn tmux_is_looked_for_on_path_then_in_the_usual_places() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (on_path, usual, empty) = (
            dir.path().join("on-path"),
            dir.path().join("usual"),
            dir.path().join("empty"),
        );
        for d in [&on_path, &usual, &empty] {
            std::fs::create_dir_all(d).unwrap();
        }
        let place = |d: &Path, mode: u32| {
            let p = d.join("tmux");
            std::fs::write(&p, "").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        place(&usual, 0o755);
        let usual_s = usual.to_str().unwrap();
        let tmux = Path::new("tmux");
        // Not on PATH: the usual place.
        assert_eq!(
            locate_in(tmux, empty.as_os_str(), &[usual_s]),
            usual.join("tmux")
        );
        // On PATH: left to PATH.
        place(&on_path, 0o755);
        assert_eq!(locate_in(tmux, on_path.as_os_str(), &[usual_s]), tmux);
        // A file that cannot run does not count.
        place(&on_path, 0o644);
        assert_eq!(
            locate_in(tmux, on_path.as_os_str(), &[usual_s]),
            usual.join("tmux")
        );
        // Nowhere: unchanged, so running it fails with the install hint.
        assert_eq!(locate_in(tmux, empty.as_os_str(), &[]), tmux);
        // A path is taken as given.
        let given = Path::new("/nowhere/tmux");
        assert_eq!(locate_in(given, on_path.as_os_str(), &[usual_s]), given);
    }

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
