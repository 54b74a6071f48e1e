//! Resolved configuration: where state lives, which tmux server to use.
//!
//! Sources, strongest first: command-line flags, environment (`COHORT_TMUX_SOCKET`,
//! `COHORT_STATE_DIR`, `COHORT_TMUX`), defaults.

use std::path::PathBuf;

use cohort_backends::tmux::config::{Socket, TmuxConfig};

/// cohort's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Directory for cohort's state (tmux config, shell integration, journals).
    pub state_dir: PathBuf,
    /// tmux executable.
    pub tmux_program: PathBuf,
    /// tmux server socket.
    pub tmux_socket: Socket,
}

impl Config {
    /// Defaults overridden by the environment.
    pub fn from_env() -> Self {
        let state_dir = std::env::var_os("COHORT_STATE_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(cohort_backends::tmux::default_state_dir);
        let tmux_program = std::env::var_os("COHORT_TMUX")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("tmux"));
        let tmux_socket = std::env::var("COHORT_TMUX_SOCKET")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_default();
        Config {
            state_dir,
            tmux_program,
            tmux_socket,
        }
    }

    /// The tmux backend's configuration.
    pub fn tmux(&self) -> TmuxConfig {
        let mut config = TmuxConfig::new(self.state_dir.join("tmux"));
        config.program = self.tmux_program.clone();
        config.socket = self.tmux_socket.clone();
        config
    }
}
