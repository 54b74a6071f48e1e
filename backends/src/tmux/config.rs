//! Where cohort's tmux server lives and how it is configured.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::types::Size;

/// Which tmux server socket to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Socket {
    /// `-L NAME`: a named socket in tmux's socket directory.
    Name(String),
    /// `-S PATH`: a full socket path.
    Path(PathBuf),
}

impl Socket {
    /// A name for the server in paths: the socket's name, or its file's.
    pub fn label(&self) -> String {
        let name = match self {
            Socket::Name(name) => name.clone(),
            Socket::Path(path) => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "socket".into()),
        };
        name.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }

    /// The tmux arguments that select this socket.
    pub fn args(&self) -> [String; 2] {
        match self {
            Socket::Name(name) => ["-L".into(), name.clone()],
            Socket::Path(path) => ["-S".into(), path.to_string_lossy().into_owned()],
        }
    }
}

impl Default for Socket {
    fn default() -> Self {
        Socket::Name("cohort".into())
    }
}

impl FromStr for Socket {
    type Err = String;

    /// A value with a `/` is a path (`-S`), anything else a name (`-L`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Err(
                "the tmux socket name is empty: give a name such as `cohort` or a full path".into(),
            );
        }
        Ok(if s.contains('/') {
            Socket::Path(PathBuf::from(s))
        } else {
            Socket::Name(s.to_string())
        })
    }
}

impl std::fmt::Display for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Socket::Name(n) => write!(f, "-L {n}"),
            Socket::Path(p) => write!(f, "-S {}", p.display()),
        }
    }
}

/// Configuration of the tmux backend.
#[derive(Clone, Debug)]
pub struct TmuxConfig {
    /// The tmux executable.
    pub program: PathBuf,
    /// The server socket.
    pub socket: Socket,
    /// The tmux session that holds every cohort window.
    pub session: String,
    /// Where cohort writes its tmux config and shell integration.
    pub state_dir: PathBuf,
    /// Size of new windows.
    pub default_size: Size,
    /// Scrollback lines tmux keeps per pane ([`DEFAULT_HISTORY_LIMIT`] unless set):
    /// what a human scrolls back through, and what a process that starts later takes
    /// in. cohort's own journal keeps everything a pane printed while it ran.
    pub history_limit: u32,
    /// Flow control: tmux pauses a pane whose output is this many seconds behind.
    pub pause_after_secs: u32,
    /// Keep the tmux server running when cohort's last session closes; by default it
    /// exits with it (the next session starts it again).
    pub keep_server: bool,
    /// Shell for new panes; the user's login shell when `None`.
    pub shell: Option<PathBuf>,
    /// Environment set for the tmux server when cohort starts it (and so for every
    /// pane's shell), on top of cohort's own; e.g. `HOME` for a clean test home.
    pub server_env: Vec<(String, String)>,
    /// The machine the server runs on: this one when `None`, else a host reached over
    /// SSH ([`super::remote`]), whose `tmux` (on its `PATH`) is used instead of
    /// `program`.
    pub host: Option<super::remote::SshHost>,
    /// How long a line typed under a guard (see `send_input_guarded`) may take to
    /// reach tmux, in seconds on tmux's own clock: one that comes later (a link that
    /// went silent delivers what it held when it comes back, a server that stalled
    /// runs its queue) is refused there, never typed after its call was given up.
    /// Less than a command's wait for its answer.
    pub line_expiry_s: i64,
}

/// Scrollback lines per pane. tmux spends about 300 bytes on each line of history at
/// cohort's width (a line takes at least a quarter of the width in cells), so a pane
/// that printed a long build holds about 3 MiB at this limit; at 100 000 lines it
/// held 30 MiB, ten times the whole server of a tmux with its default limit.
pub const DEFAULT_HISTORY_LIMIT: u32 = 10_000;

impl TmuxConfig {
    /// Defaults with the given state directory.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        TmuxConfig {
            program: PathBuf::from("tmux"),
            socket: Socket::default(),
            session: "cohort".into(),
            state_dir: state_dir.into(),
            default_size: Size {
                cols: 200,
                rows: 50,
            },
            history_limit: DEFAULT_HISTORY_LIMIT,
            pause_after_secs: 30,
            keep_server: false,
            shell: None,
            server_env: Vec::new(),
            host: None,
            line_expiry_s: 10,
        }
    }

    /// Path of the generated tmux config file.
    pub fn conf_path(&self) -> PathBuf {
        self.state_dir.join("tmux.conf")
    }

    /// Directory of the shell integration files.
    pub fn shell_dir(&self) -> PathBuf {
        self.state_dir.join("shell")
    }

    /// Where the pads of new panes' shells wait to be read (see [`crate::pad`]).
    pub fn pad_dir(&self) -> PathBuf {
        self.state_dir.join("pads")
    }

    /// The generated tmux config. Written next to the state so a human can read what
    /// cohort sets; applied at server start (`-f`) and again on every connect.
    pub fn conf_text(&self, default_command: &str, terminal: &str) -> String {
        let Size { cols, rows } = self.default_size;
        format!(
            "# cohort's own tmux configuration (generated; the user's ~/.tmux.conf is not read).\n\
             # New windows start at this size; cohort then pins each one with\n\
             # resize-window (window-size manual for that window only: set globally, it\n\
             # crashes tmux 3.3a when a control client creates a window), so a human\n\
             # attaching from a smaller terminal does not reflow an agent's panes.\n\
             set -g default-size {cols}x{rows}\n\
             set -g history-limit {history}\n\
             # Dead panes stay, so their exit status can be read.\n\
             set -g remain-on-exit on\n\
             set -g escape-time 0\n\
             set -g automatic-rename off\n\
             set -g allow-rename off\n\
             set -g set-clipboard off\n\
             set -g focus-events off\n\
             set -g mouse on\n\
             set -g default-shell /bin/sh\n\
             set -g default-command {default_command}\n\
             set -g default-terminal {terminal}\n\
             set -g status-left '[cohort] '\n\
             set -g status-left-length 20\n\
             # The state of the active pane's team (`@cohort_status`), then its name.\n\
             set -g status-right-length 100\n\
             set -g status-right '#{{?#{{@cohort_status}},#{{@cohort_status}} | ,}}#{{?#{{@cohort_name}},#{{@cohort_name}} ,}}#{{pane_current_command}} '\n",
            history = self.history_limit,
            default_command = super::quote::single(default_command),
            terminal = super::quote::single(terminal),
        )
    }
}

/// The `TERM` for panes: `tmux-256color` when its terminfo entry exists, else
/// `screen-256color`.
pub fn pick_terminal() -> &'static str {
    let dirs = [
        "/usr/share/terminfo",
        "/lib/terminfo",
        "/etc/terminfo",
        "/usr/lib/terminfo",
        "/opt/homebrew/share/terminfo",
    ];
    let has = |dir: &str| {
        Path::new(dir).join("t/tmux-256color").exists()
            || Path::new(dir).join("74/tmux-256color").exists()
    };
    if dirs.iter().any(|d| has(d)) {
        "tmux-256color"
    } else {
        "screen-256color"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_from_str() {
        assert_eq!(
            "cohort".parse::<Socket>().unwrap(),
            Socket::Name("cohort".into())
        );
        assert_eq!(
            "/tmp/x.sock".parse::<Socket>().unwrap(),
            Socket::Path("/tmp/x.sock".into())
        );
        assert!("".parse::<Socket>().is_err());
    }
}
