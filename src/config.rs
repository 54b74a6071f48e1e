//! Resolved configuration: where state lives, which tmux server to use.
//!
//! Sources, strongest first: command-line flags, environment (`COHORT_TMUX_SOCKET`,
//! `COHORT_STATE_DIR`, `COHORT_TMUX`, `COHORT_JOURNAL_CAP_MB`, `COHORT_KEEP_TMUX_SERVER`,
//! `COHORT_STUCK_AFTER`; the webhook's `COHORT_WEBHOOK_*` are read by
//! `cohort_orchestration::webhook`, `COHORT_DESKTOP_*` by
//! `cohort_orchestration::desktop` and `COHORT_SCREENS_FILE` by
//! `cohort_workers::screen_rules`), defaults.

use std::path::PathBuf;

use cohort_backends::iterm2::conn::Endpoint;
use cohort_backends::iterm2::{AutoChoice, Iterm2Config};
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
    /// Which backend: tmux (default), iterm2, or auto.
    pub backend: AutoChoice,
    /// iTerm2's API socket, when not the default one.
    pub iterm2_socket: Option<PathBuf>,
    /// Bytes of each pane's output kept on disk; older output is dropped, and reads
    /// say so.
    pub journal_disk_cap: u64,
    /// Keep cohort's tmux server running when its last session closes.
    pub keep_tmux_server: bool,
    /// How long a worker reported working may show no sign of life (no output, no
    /// hook, no transcript entry) before it is `stuck`; the default when unset.
    pub stuck_after: Option<std::time::Duration>,
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
        let backend = std::env::var("COHORT_BACKEND")
            .ok()
            .and_then(|b| b.parse().ok())
            .unwrap_or(AutoChoice::Tmux);
        let iterm2_socket = std::env::var_os("COHORT_ITERM2_SOCKET")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let journal_disk_cap = std::env::var("COHORT_JOURNAL_CAP_MB")
            .ok()
            .and_then(|mb| mb.trim().parse::<u64>().ok())
            .map_or(cohort_terminal::journal::DEFAULT_DISK_CAP, |mb| mb << 20);
        let keep_tmux_server = std::env::var("COHORT_KEEP_TMUX_SERVER")
            .is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"));
        let stuck_after = std::env::var("COHORT_STUCK_AFTER").ok().and_then(|v| {
            let secs = v.trim().parse::<u64>().ok().filter(|s| *s > 0);
            if secs.is_none() {
                tracing::warn!(target: "cohort::config", "COHORT_STUCK_AFTER={v:?} ignored: give whole seconds, more than 0");
            }
            secs.map(std::time::Duration::from_secs)
        });
        Config {
            state_dir,
            tmux_program,
            tmux_socket,
            backend,
            iterm2_socket,
            journal_disk_cap,
            keep_tmux_server,
            stuck_after,
        }
    }

    /// The iTerm2 backend's configuration.
    pub fn iterm2(&self) -> Iterm2Config {
        let mut config = Iterm2Config::new(self.state_dir.join("iterm2"));
        if let Some(socket) = &self.iterm2_socket {
            config.connect.endpoint = Some(Endpoint::Unix(socket.clone()));
        }
        // Where the teams' profiles go: iTerm2's own folder on a Mac, or the one
        // named here (empty: none, each pane of a team coloured as it opens).
        if let Some(folder) = std::env::var_os("COHORT_ITERM2_DYNAMIC_PROFILES") {
            config.dynamic_profiles = (!folder.is_empty()).then(|| folder.into());
        }
        config
    }

    /// The tmux backend's configuration.
    pub fn tmux(&self) -> TmuxConfig {
        let mut config = TmuxConfig::new(self.state_dir.join("tmux"));
        config.program = cohort_backends::tmux::cli::locate(&self.tmux_program);
        config.socket = self.tmux_socket.clone();
        config.keep_server = self.keep_tmux_server;
        config
    }
}
