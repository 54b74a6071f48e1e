//! cohort's tmux server on another machine, reached with the user's own OpenSSH.
//!
//! tmux control mode speaks the same bytes over `ssh -T HOST tmux -C …` as over a
//! local pipe, so a remote host is a transport, not another backend. What differs is
//! everything that touched the local machine:
//!
//! - **Files.** The tmux config, the shell integration and each new shell's pad of
//!   one-time tokens are written on the far side, in a private directory under the
//!   remote user's state home, through ssh's standard input (never on a command line,
//!   where `ps` would show them).
//! - **Processes.** Pane pids and terminals name the far side's processes: nothing
//!   local (`/proc`, a pidfd, a tty) is asked about them. The completion ladder gets
//!   what tmux itself reports (the foreground command, dead panes and their status)
//!   and answers the rest by quiescence, as it does on systems without `/proc`.
//! - **ssh.** The user's ssh with the user's configuration: aliases, agents, jump
//!   hosts and known hosts are theirs. cohort adds `BatchMode` (it never asks for a
//!   password, so a host needing one fails at once with ssh's words), keepalives, and
//!   a connection shared between its calls in a private directory. Nothing weakens
//!   host-key checking: a changed key is refused as ssh refuses it.
//!
//! Nothing but tmux (3.2 or newer) and a POSIX shell is needed on the far side.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::error::{BackendError, Result};

use super::cli::{parse_version, Version, MIN_VERSION};
use super::quote;

/// How long one ssh call may take, connecting included, before it is given up.
pub const SSH_TIMEOUT: Duration = Duration::from_secs(20);

/// The longest path a Unix socket can have, less room for ssh's temporary suffix.
const SOCKET_PATH_MAX: usize = 90;

/// A machine reached over SSH.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SshHost {
    /// The name cohort knows the host by (`build-box`): what targets and listings
    /// show.
    pub name: String,
    /// The destination as the user's ssh understands it: `user@host`, an alias from
    /// `~/.ssh/config`, `ssh://user@host:port`.
    pub destination: String,
    /// Options given to ssh before the destination (`-F FILE`, `-p PORT`, `-J HOP`).
    pub ssh_args: Vec<String>,
    /// The ssh program.
    pub program: PathBuf,
    /// A local private directory for the shared connection's socket; `None` leaves
    /// connection sharing to the user's configuration.
    pub control_dir: Option<PathBuf>,
}

/// What the far side is, as one ssh call found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// cohort's directory there (absolute).
    pub state_dir: String,
    /// The remote user's login shell.
    pub shell: String,
    /// tmux's version there.
    pub version: Version,
    /// What `tmux -V` printed there.
    pub version_text: String,
}

impl SshHost {
    /// A host named `name` at `destination`, checked: a destination that ssh would
    /// read as an option, or one with spaces or control characters, is refused.
    pub fn new(name: &str, destination: &str) -> Result<SshHost> {
        check_name(name)?;
        let bad = destination.is_empty()
            || destination.starts_with('-')
            || destination
                .chars()
                .any(|c| c.is_whitespace() || c.is_control());
        if bad {
            return Err(BackendError::InvalidArgument(format!(
                "host {name:?}: {destination:?} is not an SSH destination: give `user@host`, a host name or an alias from ~/.ssh/config"
            )));
        }
        Ok(SshHost {
            name: name.to_string(),
            destination: destination.to_string(),
            ssh_args: Vec::new(),
            program: PathBuf::from("ssh"),
            control_dir: None,
        })
    }

    /// An ssh command that runs `remote` (a POSIX shell command line) on the host.
    /// `-T`: no terminal on the far side; control mode is a pipe.
    pub fn command(&self, remote: &str) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args([
            "-T",
            "-o",
            "BatchMode=yes",
            "-o",
            "ServerAliveInterval=10",
            "-o",
            "ServerAliveCountMax=3",
            "-o",
            "ConnectTimeout=10",
        ]);
        if let Some(socket) = self.control_socket() {
            cmd.arg("-o")
                .arg("ControlMaster=auto")
                .arg("-o")
                .arg(format!("ControlPath={}", socket.display()))
                .arg("-o")
                .arg("ControlPersist=60");
        }
        cmd.args(&self.ssh_args)
            .arg("--")
            .arg(&self.destination)
            .arg(remote);
        cmd.env_remove("TMUX").env_remove("TMUX_PANE");
        cmd
    }

    /// The shared connection's socket (ssh expands `%C`), when cohort shares one.
    /// ssh refuses a control socket whose path is too long for a Unix socket; then
    /// every call opens its own connection, which works, only slower.
    fn control_socket(&self) -> Option<PathBuf> {
        let dir = self.control_dir.as_ref()?;
        let socket = dir.join("%C");
        (socket.as_os_str().len() <= SOCKET_PATH_MAX && crate::pad::create_private_dir(dir).is_ok())
            .then_some(socket)
    }

    /// Ends cohort's shared connection to the host (`ssh -O exit`), so the next call
    /// connects afresh: a connection whose link went silent would otherwise take every
    /// new call into its silence until ssh's keepalives ended it. The user's own shared
    /// connections are theirs and left alone.
    pub async fn end_shared_connection(&self) {
        let Some(socket) = self.control_socket() else {
            return;
        };
        let mut cmd = Command::new(&self.program);
        cmd.arg("-o")
            .arg(format!("ControlPath={}", socket.display()))
            .args(&self.ssh_args)
            .args(["-O", "exit", "--"])
            .arg(&self.destination)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let ended = tokio::time::timeout(Duration::from_secs(5), cmd.status()).await;
        tracing::debug!(target: "cohort::tmux", host = %self.name, ?ended, "ended the shared connection");
    }

    /// Runs `remote` on the host with `input` on its standard input; its output on
    /// success, an error naming the host and what ssh or the command said otherwise.
    pub async fn run(&self, remote: &str, input: &[u8]) -> Result<String> {
        let out = self.run_bytes(remote, input).await?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// [`SshHost::run`], its output as the bytes the command wrote.
    pub async fn run_bytes(&self, remote: &str, input: &[u8]) -> Result<Vec<u8>> {
        self.run_within(remote, input, SSH_TIMEOUT).await
    }

    /// [`SshHost::run_bytes`], given `limit` to end in (a command that works long:
    /// git on a big repository).
    pub async fn run_within(&self, remote: &str, input: &[u8], limit: Duration) -> Result<Vec<u8>> {
        let mut child = self
            .command(remote)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                BackendError::io(
                    format!("starting {} for host {}", self.program.display(), self.name),
                    e,
                )
            })?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let input = input.to_vec();
        let feed = tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        });
        let output = tokio::time::timeout(limit, child.wait_with_output())
            .await
            .map_err(|_| self.unreachable(&format!("no answer within {} s", limit.as_secs())))?
            .map_err(|e| BackendError::io(format!("running ssh for host {}", self.name), e))?;
        let _ = feed.await;
        if output.status.success() {
            return Ok(output.stdout);
        }
        let said = String::from_utf8_lossy(&output.stderr).trim().to_string();
        // ssh exits 255 for its own failures (connection, authentication, host key).
        if output.status.code() == Some(255) {
            Err(self.unreachable(&said))
        } else {
            Err(BackendError::Remote {
                host: self.name.clone(),
                message: if said.is_empty() {
                    format!("the remote command failed ({})", output.status)
                } else {
                    said
                },
            })
        }
    }

    /// The error for a host ssh could not reach, with ssh's own words.
    pub fn unreachable(&self, said: &str) -> BackendError {
        BackendError::HostUnreachable {
            host: self.name.clone(),
            destination: self.destination.clone(),
            message: if said.is_empty() {
                "ssh failed without saying why".into()
            } else {
                said.lines().take(6).collect::<Vec<_>>().join("; ")
            },
        }
    }

    /// Finds cohort's directory, the login shell and tmux on the host.
    pub async fn probe(&self, tmux: &str) -> Result<Probe> {
        let script = format!(
            "d=\"${{XDG_STATE_HOME:-$HOME/.local/state}}/cohort\"; \
             printf '%s\\n' \"$d\" \"${{SHELL:-/bin/sh}}\"; \
             {tmux} -V 2>&1 || echo 'tmux-missing'",
            tmux = quote::sh(tmux)
        );
        let out = self.run(&script, b"").await?;
        let mut lines = out.lines();
        let (Some(state_dir), Some(shell), Some(version_text)) =
            (lines.next(), lines.next(), lines.next())
        else {
            return Err(BackendError::Remote {
                host: self.name.clone(),
                message: format!("unexpected answer to cohort's probe: {out:?}"),
            });
        };
        let version = parse_version(version_text).ok_or_else(|| {
            BackendError::TmuxUnavailable(format!(
                "host {}: tmux was not found there ({version_text:?}); cohort needs tmux {MIN_VERSION} or newer on the far side: install it with the host's package manager",
                self.name
            ))
        })?;
        if version < MIN_VERSION {
            return Err(BackendError::TmuxUnavailable(format!(
                "host {}: {version_text} is too old; cohort needs tmux {MIN_VERSION} or newer there",
                self.name
            )));
        }
        if !state_dir.starts_with('/') {
            return Err(BackendError::Remote {
                host: self.name.clone(),
                message: format!(
                    "the remote state directory {state_dir:?} is not absolute: is HOME set there?"
                ),
            });
        }
        Ok(Probe {
            state_dir: state_dir.to_string(),
            shell: shell.to_string(),
            version,
            version_text: version_text.to_string(),
        })
    }

    /// Writes `files` (paths under `dir`, and their text) on the host in one call,
    /// each whole or not at all, in directories only the remote user can read.
    pub async fn write_files(&self, dir: &str, files: &[(String, String)]) -> Result<()> {
        let mut script = String::from("set -e\numask 077\n");
        script.push_str(&format!("mkdir -p {}\n", quote::sh(dir)));
        for (name, text) in files {
            let path = format!("{dir}/{name}");
            let parent = path.rsplit_once('/').map_or(dir, |(p, _)| p);
            let end = heredoc_end(text);
            script.push_str(&format!(
                "mkdir -p {parent}\ncat > {tmp} <<'{end}'\n{text}{nl}{end}\nmv -f {tmp} {path}\n",
                parent = quote::sh(parent),
                tmp = quote::sh(&format!("{path}.tmp$$")),
                path = quote::sh(&path),
                // A here-document ends at a line of its own: text without a final
                // newline gets one, which the shells read past as whitespace.
                nl = if text.ends_with('\n') { "" } else { "\n" },
            ));
        }
        self.run("sh -s", script.as_bytes()).await.map(|_| ())
    }

    /// Writes one file of `text` under `dir` that only the remote user can read, from
    /// standard input: its content never appears on a command line.
    pub async fn write_private(&self, dir: &str, name: &str, text: &str) -> Result<String> {
        let path = format!("{dir}/{name}");
        let remote = format!(
            "umask 077 && mkdir -p {dir} && cat > {path}",
            dir = quote::sh(dir),
            path = quote::sh(&path)
        );
        self.run(&remote, text.as_bytes()).await?;
        Ok(path)
    }

    /// Deletes `path` on the host, if it is there.
    pub async fn remove(&self, path: &str) -> Result<()> {
        self.run(&format!("rm -f {}", quote::sh(path)), b"")
            .await
            .map(|_| ())
    }
}

/// Checks a host's name: what targets and listings show, so letters, digits, `-`,
/// `_` and `.`, not too long.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with(['-', '.']);
    if ok {
        Ok(())
    } else {
        Err(BackendError::InvalidArgument(format!(
            "{:?} is not a host name cohort can use: up to 64 letters, digits, '-', '_' or '.', starting with a letter or digit",
            name.chars().take(80).collect::<String>()
        )))
    }
}

/// A here-document terminator that is no line of `text`.
fn heredoc_end(text: &str) -> String {
    let mut end = String::from("COHORT_END");
    while text.lines().any(|l| l == end) {
        end.push('_');
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_ssh_would_read_as_options_are_refused() {
        assert!(SshHost::new("box", "user@box").is_ok());
        assert!(SshHost::new("box", "ssh://user@box:2222").is_ok());
        for bad in ["-oProxyCommand=touch /tmp/x", "", "a b", "box\n-x"] {
            let err = SshHost::new("box", bad).unwrap_err().to_string();
            assert!(err.contains("not an SSH destination"), "{bad:?}: {err}");
        }
        for bad in ["", "-x", ".hidden", "a:b", "a b", "a/b", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_command_line_keeps_the_destination_after_the_options() {
        let mut host = SshHost::new("box", "user@box").unwrap();
        host.ssh_args = vec!["-F".into(), "/tmp/cfg".into()];
        let cmd = host.command("tmux -V");
        let args: Vec<String> = cmd
            .as_std()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let dash = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(&args[dash + 1..], ["user@box", "tmux -V"]);
        assert!(args[..dash].contains(&"BatchMode=yes".to_string()));
        assert!(!args.iter().any(|a| a.contains("StrictHostKeyChecking")));
    }

    #[test]
    fn a_heredoc_ends_on_no_line_of_its_text() {
        assert_eq!(heredoc_end("a\nb"), "COHORT_END");
        assert_eq!(heredoc_end("COHORT_END\nCOHORT_END_"), "COHORT_END__");
    }
}
