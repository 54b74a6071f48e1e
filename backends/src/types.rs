//! Plain data exchanged across the [`crate::TerminalBackend`] boundary.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A backend's own pane identifier: `%12` for tmux, a session UUID for iTerm2.
///
/// Opaque to everything above the backend; stable for the pane's lifetime.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PaneId(pub String);

impl PaneId {
    /// Wraps a backend pane id.
    pub fn new(id: impl Into<String>) -> Self {
        PaneId(id.into())
    }

    /// The id as the backend spells it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PaneId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A backend's window (tmux) or tab (iTerm2) identifier.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WindowId(pub String);

impl fmt::Display for WindowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which backend implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// tmux, driven through control mode.
    Tmux,
    /// iTerm2, driven through its WebSocket + protobuf API.
    Iterm2,
}

impl BackendKind {
    /// Lower-case name, as used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Tmux => "tmux",
            BackendKind::Iterm2 => "iterm2",
        }
    }
}

/// What a backend can do beyond the required primitives.
///
/// Code above the backend checks these instead of calling and catching
/// "not supported" errors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Panes can be split.
    pub splits: bool,
    /// Output arrives as the program's raw byte stream ([`crate::BackendEvent::Output`]).
    pub raw_output_stream: bool,
    /// Shell prompt marks (OSC 133) arrive as events with exit status.
    pub prompt_marks: bool,
    /// Pane titles can be set.
    pub titles: bool,
    /// A badge (large translucent label) can be shown.
    pub badges: bool,
    /// Tab colour can be set.
    pub tab_colors: bool,
    /// Background colour can be set.
    pub background_colors: bool,
    /// Cursor colour can be set.
    #[serde(default)]
    pub cursor_colors: bool,
    /// A pane can be brought to the front.
    pub focus: bool,
    /// The foreground process and its pid are known.
    pub foreground_process: bool,
    /// Prompt marks carry the signature of the pane's own shell integration
    /// ([`crate::MarkParams::key`]), so marks a program prints can be told from them.
    #[serde(default)]
    pub signed_marks: bool,
    /// The pane's shell signs each mark with a one-time token ([`crate::pad`]) handed to
    /// it through [`SpawnOptions::marks`], rather than with a key in its environment.
    #[serde(default)]
    pub one_time_marks: bool,
    /// A split honours [`SplitOptions::size`]; without it the new pane takes the
    /// terminal's default share and the size is ignored.
    #[serde(default)]
    pub split_sizes: bool,
    /// Panes can be grouped so that what a person types into one reaches the
    /// others ([`crate::TerminalBackend::set_broadcast_groups`]).
    #[serde(default)]
    pub broadcast_input: bool,
    /// Two broadcast groups can share a window. tmux cannot: its
    /// `synchronize-panes` joins every synchronised pane of a window.
    #[serde(default)]
    pub broadcast_groups_share_windows: bool,
    /// A pane can be hidden and shown again while it runs
    /// ([`crate::TerminalBackend::set_hidden`]).
    #[serde(default)]
    pub hide_panes: bool,
    /// Each team has a profile of the terminal's own that its new panes start with
    /// ([`crate::TerminalBackend::set_team_profiles`]); elsewhere a team's colour and
    /// variables are given to each pane as it opens.
    #[serde(default)]
    pub team_profiles: bool,
    /// A window can also be saved as the terminal's own arrangement, which a person
    /// restores from the terminal's menu without cohort (iTerm2's Window › Restore
    /// Window Arrangement; [`crate::TerminalBackend::save_native_arrangement`]).
    #[serde(default)]
    pub native_arrangements: bool,
}

/// A team's profile: what every new pane of the team starts with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamProfile {
    /// The team.
    pub team: String,
    /// The profile's name in the terminal ([`team_profile_name`]).
    pub name: String,
    /// The team's colour, `#rrggbb`.
    pub colour: String,
}

/// The name of `team`'s profile in the terminal.
pub fn team_profile_name(team: &str) -> String {
    format!("cohort team {team}")
}

/// A size in character cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Size {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

/// A cursor position, zero-based from the top-left of the visible screen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// Column.
    pub x: u16,
    /// Row.
    pub y: u16,
}

/// Identity cohort stamps on a pane so a later process can find it again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// Persistent id (a UUID).
    pub id: String,
    /// The pane's cohort name.
    pub name: String,
    /// Agent that owns the pane, if any.
    pub agent: Option<String>,
    /// Team of that agent, if any.
    pub team: Option<String>,
    /// The key the pane's shell integration signs its prompt marks with (see
    /// [`crate::MarkParams`]); `None` for panes made before marks were signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The public anchor of the one-time tokens the pane's shell signs its marks with
    /// (see [`crate::pad`]), as `<token>:<left>`; `None` for panes whose marks are
    /// signed with a key or not at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<String>,
    /// The pane's shell announces each command's start (`C` marks), as a server saw:
    /// one that adopts the pane knows it before it sees a `C` itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub announces_start: bool,
}

/// `message` as an alert shows it: one line without control characters, at most
/// 200 characters.
pub fn alert_text(message: &str) -> String {
    let line: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// The bytes that raise `text` (see [`alert_text`]) as a terminal's own
/// notification: OSC 9, then a bell.
pub fn alert_sequence(text: &str) -> Vec<u8> {
    format!("\x1b]9;{text}\x07\x07").into_bytes()
}

/// Environment variables whose values are secrets (a pane's signal secret, a
/// worker's hook key): a backend never puts them on a command line another process
/// could read, or in a setting the terminal keeps.
pub const SECRET_ENV: &[&str] = &["COHORT_SIGNAL_ID", "COHORT_HOOK_KEY"];

/// How a new window/tab is started.
#[derive(Clone, Debug, Default)]
pub struct SpawnOptions {
    /// Name of the window/tab (the cohort session name).
    pub name: String,
    /// Working directory; the backend's default when `None`.
    pub cwd: Option<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// A command to run instead of an interactive shell. It runs through `/bin/sh -c`,
    /// and its exit status is reported as a prompt mark and as the pane's exit status.
    pub command: Option<String>,
    /// Size in cells; the backend's default when `None`.
    pub size: Option<Size>,
    /// Identity to stamp on the new pane.
    pub identity: Option<Identity>,
    /// The one-time tokens the new pane's shell signs its marks with, when the backend
    /// hands them over ([`Capabilities::one_time_marks`]); the identity carries their
    /// anchor.
    pub marks: Option<crate::pad::MarkChain>,
    /// The remote host to open it on (a name from the configuration, or an SSH
    /// destination); this machine when `None`. Only a backend that routes between
    /// hosts ([`crate::hosts::Hosts`]) takes it.
    pub host: Option<String>,
    /// The terminal profile to start from (a team's, see
    /// [`crate::TerminalBackend::set_team_profiles`]); the default profile when
    /// `None` or when the terminal does not have it.
    pub profile: Option<String>,
}

/// Which way a split goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitDirection {
    /// Side by side: the new pane is to the right.
    Horizontal,
    /// Stacked: the new pane is below.
    Vertical,
}

/// How big the new pane of a split is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SplitSize {
    /// A share of the split pane, 1–99.
    Percent(u8),
    /// A number of cells (columns or rows, by direction).
    Cells(u16),
}

/// How a pane is split.
#[derive(Clone, Debug)]
pub struct SplitOptions {
    /// Direction of the split.
    pub direction: SplitDirection,
    /// Size of the new pane; half when `None`.
    pub size: Option<SplitSize>,
    /// How the new pane starts (its `size` is ignored).
    pub spawn: SpawnOptions,
}

/// One pane as listed by the backend.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneInfo {
    /// Backend pane id.
    pub id: PaneId,
    /// Window/tab holding it.
    pub window: WindowId,
    /// Window/tab name.
    pub window_name: String,
    /// Pane title as the program set it.
    pub title: String,
    /// Size in cells.
    pub size: Size,
    /// Whether it is the active pane of its window.
    pub active: bool,
    /// Foreground command name.
    pub command: String,
    /// Whether the pane's process has exited.
    pub dead: bool,
    /// Its exit status, when it has exited and the backend knows it.
    #[serde(default)]
    pub exit_status: Option<i32>,
    /// The file a cohort process records it to, while one does.
    #[serde(default)]
    pub recording: Option<String>,
    /// Identity stamped on the pane, when it carries one.
    pub identity: Option<Identity>,
    /// Hidden from the person's view ([`crate::TerminalBackend::set_hidden`]).
    #[serde(default)]
    pub hidden: bool,
}

/// The layout of one window/tab.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowInfo {
    /// Window/tab id.
    pub id: WindowId,
    /// Window/tab name.
    pub name: String,
    /// The split tree.
    pub layout: crate::layout::LayoutNode,
}

/// Live state of a pane.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneState {
    /// Foreground process name (the shell when idle).
    pub foreground_command: String,
    /// Foreground process (group) id, when the platform tells.
    pub foreground_pid: Option<u32>,
    /// Pid of the pane's first process (the shell).
    pub shell_pid: Option<u32>,
    /// Name of the pane's first process.
    pub shell_command: String,
    /// Whether the pane's process has exited.
    pub dead: bool,
    /// Its exit status, when dead and known.
    pub exit_status: Option<i32>,
    /// Cursor position.
    pub cursor: Cursor,
    /// Size in cells.
    pub size: Size,
    /// Whether the program switched to the alternate screen (a TUI).
    pub alternate_screen: bool,
    /// Whether the pane is in copy mode (typed keys would go to the mode, not the program).
    pub copy_mode: bool,
    /// Whether the program asked for bracketed paste, when the backend can tell.
    pub bracketed_paste: Option<bool>,
    /// Title.
    pub title: String,
    /// Current directory of the foreground process, when known.
    pub cwd: Option<String>,
    /// Lines of scrollback retained above the screen.
    pub history_lines: u64,
    /// The pane's terminal device (`/dev/pts/3`), when the backend tells: where the
    /// foreground process group and the terminal's mode can be asked on any POSIX
    /// system.
    #[serde(default)]
    pub tty: Option<String>,
}

impl PaneState {
    /// Whether the foreground process is the pane's own shell (nothing running in it).
    pub fn at_shell(&self) -> bool {
        !self.dead && self.foreground_pid.is_some() && self.foreground_pid == self.shell_pid
            || (!self.dead
                && self.foreground_pid.is_none()
                && self.foreground_command == self.shell_command)
    }
}

/// A range of lines by absolute position.
///
/// Position 0 is the oldest retained scrollback line; the visible screen follows the
/// scrollback. `end` is exclusive and clamped to what exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineRange {
    /// First line.
    pub start: u64,
    /// One past the last line.
    pub end: u64,
}

/// Lines read by absolute position.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lines {
    /// Absolute position of `lines[0]`.
    pub first: u64,
    /// The lines, trailing spaces trimmed, without escape sequences.
    pub lines: Vec<String>,
    /// How many lines exist in all (scrollback + screen).
    pub total: u64,
}

/// The rendered screen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Screen {
    /// One string per row, trailing spaces trimmed.
    pub rows: Vec<String>,
    /// Cursor position.
    pub cursor: Cursor,
    /// Screen size.
    pub size: Size,
    /// Whether this is the alternate screen.
    pub alternate: bool,
}

/// Visual decoration of a pane (capability-gated).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Appearance {
    /// Pane/tab title.
    pub title: Option<String>,
    /// Badge text.
    pub badge: Option<String>,
    /// Tab colour as `#rrggbb`.
    pub tab_color: Option<String>,
    /// Background colour as `#rrggbb`.
    pub background: Option<String>,
    /// Cursor colour as `#rrggbb`.
    #[serde(default)]
    pub cursor_color: Option<String>,
    /// Make the pane the active one of its window or tab (without raising it).
    #[serde(default)]
    pub active: bool,
    /// First undo the badge and colours cohort set (back to the terminal's own).
    #[serde(default)]
    pub reset: bool,
}

/// How a human gets to a pane.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachHint {
    /// Program and arguments to run in a terminal, when attaching is a command.
    pub argv: Vec<String>,
    /// The same, as one line a human can paste (shell-quoted).
    pub command_line: String,
    /// Plain-language description ("attach with …", "switch to the iTerm2 tab named …").
    pub description: String,
}
