//! The two terminal programs the parity suites run against: tmux (a private server)
//! and iTerm2 (cohort's fake, in-process), behind one type that keeps the server
//! alive and hands out backends on it.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use cohort_backends::TerminalBackend;

use crate::{iterm2_support::FakeIterm2, support::TestServer};

/// Which terminal program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Tmux,
    Iterm2,
    /// tmux on a remote host, over a real OpenSSH server on loopback.
    Ssh,
}

/// A running terminal program for one test.
pub enum Terminal {
    Tmux(TestServer),
    Iterm2(FakeIterm2),
    Ssh(TestServer, crate::ssh_support::SshServer),
}

impl Terminal {
    pub async fn start(which: Which) -> Terminal {
        match which {
            Which::Tmux => Terminal::Tmux(TestServer::new()),
            Which::Iterm2 => Terminal::Iterm2(FakeIterm2::new().await),
            Which::Ssh => Terminal::Ssh(
                TestServer::new(),
                crate::ssh_support::SshServer::start().expect("sshd for the remote host"),
            ),
        }
    }

    pub fn which(&self) -> Which {
        match self {
            Terminal::Tmux(_) => Which::Tmux,
            Terminal::Iterm2(_) => Which::Iterm2,
            Terminal::Ssh(..) => Which::Ssh,
        }
    }

    /// A new, independent backend on this terminal (a second cohort process sees the
    /// same panes).
    pub async fn backend(&self) -> Arc<dyn TerminalBackend> {
        match self {
            Terminal::Tmux(server) => Arc::new(server.backend().await),
            Terminal::Iterm2(fake) => Arc::new(fake.backend().await),
            Terminal::Ssh(server, ssh) => {
                let mut config = server.config();
                config.host = Some(ssh.host("remote"));
                Arc::new(
                    cohort_backends::tmux::TmuxBackend::connect(config)
                        .await
                        .expect("connect to tmux over ssh"),
                )
            }
        }
    }

    /// Starts logging the raw output of `pane`, escape sequences and all, as a user's
    /// terminal log would (tmux `pipe-pane`; iTerm2's raw session log); returns the
    /// log's path.
    pub async fn start_raw_log(&self, pane: &cohort_backends::PaneId) -> PathBuf {
        match self {
            // tmux keeps one pipe per pane, and a remote pane's is cohort's own log
            // of it (raw, as a user's would be): that file is the raw log.
            Terminal::Ssh(_, ssh) => {
                let logs = ssh.home().join(".local/state/cohort");
                let prefix = format!("{}-", pane.as_str().trim_start_matches('%'));
                let is_log = |path: &PathBuf| {
                    path.parent().is_some_and(|p| p.ends_with("logs"))
                        && path
                            .file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(&prefix) && !n.ends_with(".done"))
                };
                // The log starts a moment after the pane's first output.
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                loop {
                    if let Some(path) = walk_files(&logs).into_iter().find(is_log) {
                        break path;
                    }
                    assert!(
                        std::time::Instant::now() < deadline,
                        "no log of {pane} under {}",
                        logs.display()
                    );
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
            Terminal::Tmux(server) => {
                let log = server
                    .state_dir()
                    .join(format!("raw-{}.log", pane.as_str().trim_start_matches('%')));
                let piped = std::process::Command::new("tmux")
                    .arg("-L")
                    .arg(&server.socket)
                    .args(["pipe-pane", "-o", "-t", pane.as_str()])
                    .arg(format!("cat >> '{}'", log.display()))
                    .env_remove("TMUX")
                    .status()
                    .expect("run tmux pipe-pane");
                assert!(piped.success(), "tmux pipe-pane failed");
                log
            }
            Terminal::Iterm2(fake) => fake.raw_log(pane.as_str()),
        }
    }

    /// A pane a person opened beside cohort's sessions, running a shell: on tmux a window made in cohort's session from outside cohort
    /// (as from an attached client); on iTerm2 the window iTerm2 opens when it
    /// starts.
    pub fn persons_pane(&self) -> cohort_backends::PaneId {
        match self {
            Terminal::Tmux(server) => server.persons_window("notes"),
            Terminal::Iterm2(fake) => {
                let ids = fake.server.session_ids();
                let first = ids.first().expect("the fake iTerm2's first window");
                cohort_backends::PaneId(first.clone())
            }
            Terminal::Ssh(..) => panic!("a person's pane on the remote host is not made here"),
        }
    }

    /// The status line cohort set on `pane`, as the terminal holds it: tmux's
    /// `@cohort_status` pane option, iTerm2's `user.cohortStatus` variable.
    pub fn status_line(&self, pane: &cohort_backends::PaneId) -> Option<String> {
        match self {
            Terminal::Tmux(server) => {
                let out = std::process::Command::new("tmux")
                    .arg("-L")
                    .arg(&server.socket)
                    .args([
                        "show-options",
                        "-p",
                        "-v",
                        "-t",
                        pane.as_str(),
                        "@cohort_status",
                    ])
                    .env_remove("TMUX")
                    .output()
                    .expect("run tmux show-options");
                let value = String::from_utf8_lossy(&out.stdout).trim_end().to_string();
                (!value.is_empty()).then_some(value)
            }
            Terminal::Iterm2(fake) => fake
                .server
                .session_variable(pane.as_str(), "user.cohortStatus")
                .and_then(|json| serde_json::from_str::<Option<String>>(&json).ok().flatten()),
            Terminal::Ssh(..) => panic!("read the status line on the remote host's tmux"),
        }
    }

    /// Types `line` and Enter into `pane` as a person at the keyboard would (tmux:
    /// `send-keys` from outside, which takes the path of a typed key; iTerm2: the
    /// fake's keyboard).
    pub fn type_as_person(&self, pane: &cohort_backends::PaneId, line: &str) {
        match self {
            Terminal::Tmux(server) => {
                let typed = std::process::Command::new("tmux")
                    .arg("-L")
                    .arg(&server.socket)
                    .args(["send-keys", "-t", pane.as_str(), "-l", "--", line])
                    .env_remove("TMUX")
                    .status()
                    .expect("run tmux send-keys");
                assert!(typed.success(), "tmux send-keys failed");
                let entered = std::process::Command::new("tmux")
                    .arg("-L")
                    .arg(&server.socket)
                    .args(["send-keys", "-t", pane.as_str(), "Enter"])
                    .env_remove("TMUX")
                    .status()
                    .expect("run tmux send-keys");
                assert!(entered.success(), "tmux send-keys failed");
            }
            Terminal::Iterm2(fake) => fake
                .server
                .type_as_person(pane.as_str(), &format!("{line}\r")),
            Terminal::Ssh(..) => panic!("type on the remote host's tmux"),
        }
    }

    /// Where an engine on this terminal keeps its state, and the key naming the server.
    pub fn engine_home(&self) -> (PathBuf, String) {
        match self {
            Terminal::Tmux(server) | Terminal::Ssh(server, _) => {
                (server.state_dir().to_path_buf(), server.socket.clone())
            }
            Terminal::Iterm2(fake) => {
                let state = fake.dir.path().join("engine");
                std::fs::create_dir_all(&state).expect("engine state dir");
                (state, format!("iterm2 {}", fake.socket().display()))
            }
        }
    }
}

/// An engine over one terminal program, with the program kept alive as long as it.
pub struct EngineOn {
    pub which: Which,
    pub engine: cohort::engine::Engine,
    pub terminal: Terminal,
}

impl EngineOn {
    /// Another cohort process's engine on the same terminal and state directory.
    pub async fn second_engine(&self) -> cohort::engine::Engine {
        let (state, key) = self.terminal.engine_home();
        cohort::engine::Engine::with_backend(
            as_served(self.terminal.backend().await, &state),
            &state,
            &key,
        )
        .unwrap_or_else(|e| panic!("a second engine over {:?}: {e}", self.which))
    }

    /// An engine on a remote host reached over a [`Link`](crate::support::link::Link)
    /// with `delay` each way, and the link.
    pub async fn over_link(delay: std::time::Duration) -> (EngineOn, crate::support::link::Link) {
        let terminal = Terminal::start(Which::Ssh).await;
        let Terminal::Ssh(server, ssh) = &terminal else {
            unreachable!()
        };
        let link = crate::support::link::Link::start(ssh.port, delay).await;
        let mut config = server.config();
        config.host = Some(ssh.host_through(&link, "remote"));
        let backend = cohort_backends::tmux::TmuxBackend::connect(config)
            .await
            .expect("connect to tmux over ssh and the link");
        let (state, key) = terminal.engine_home();
        let engine = cohort::engine::Engine::with_backend(
            as_served(Arc::new(backend), &state),
            &state,
            &key,
        )
        .expect("engine over the link");
        let ctx = EngineOn {
            which: Which::Ssh,
            engine,
            terminal,
        };
        (ctx, link)
    }

    /// Starts `which` and an engine over it, with a state directory of its own.
    pub async fn start(which: Which) -> EngineOn {
        let terminal = Terminal::start(which).await;
        let (state, key) = terminal.engine_home();
        let engine = cohort::engine::Engine::with_backend(
            as_served(terminal.backend().await, &state),
            &state,
            &key,
        )
        .unwrap_or_else(|e| panic!("engine over {which:?}: {e}"));
        EngineOn {
            which,
            engine,
            terminal,
        }
    }
}

/// `backend` as the server drives it: inside the backend of every host (no remote
/// host declared), so each call takes the path it takes in `cohort mcp`.
fn as_served(
    backend: Arc<dyn TerminalBackend>,
    state: &std::path::Path,
) -> Arc<dyn TerminalBackend> {
    Arc::new(cohort_backends::hosts::Hosts::new(
        backend,
        cohort_backends::tmux::config::TmuxConfig::new(state.join("remote-template")),
        Vec::new(),
    ))
}

/// Every file under `dir`, recursively.
fn walk_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk_files(&path));
        } else {
            files.push(path);
        }
    }
    files
}
