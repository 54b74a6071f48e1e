//! The facts the ladder asks for when output alone cannot tell: the pane's state and
//! what the kernel says of its foreground process.
//!
//! [`gather`] asks the backend and the kernel; the [`Facts`] it returns are plain data,
//! so a recorded session replays them through the ladder unchanged (see
//! [`super::record`]). Where the kernel cannot tell (no `/proc`, another user's
//! process), a fact is `None`, never a guess.

use cohort_backends::{process, BackendError, PaneId, TerminalBackend};
use serde::{Deserialize, Serialize};

use super::hints::SHELLS;

/// Which facts a step of the ladder needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    /// The pane's state and its foreground process.
    Foreground,
    /// Those, and whether the screen shows a continuation prompt at the cursor.
    ForegroundAndScreen,
}

/// What the pane and the kernel said at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Facts {
    /// The pane is gone (its session was closed).
    pub pane_gone: bool,
    /// Its program exited.
    pub dead: bool,
    /// With which status, when known.
    pub exit_status: Option<i32>,
    /// The pane's own shell is the foreground process.
    pub at_shell: bool,
    /// The pane's shell program.
    pub shell_command: String,
    /// The foreground program, as the terminal names it.
    pub foreground_command: String,
    /// The foreground process group.
    pub foreground_pid: Option<u32>,
    /// A full-screen program is showing.
    pub alternate_screen: bool,
    /// Whether the kernel's process facts can be read here at all (`/proc`).
    pub kernel: bool,
    /// The foreground group leader's name, from the kernel.
    pub leader_name: Option<String>,
    /// The leader is a shell running a script (not an interactive one).
    pub leader_runs_script: Option<bool>,
    /// The leader waits for terminal input.
    pub leader_waiting: Option<bool>,
    /// The leader's terminal is in line (canonical) mode.
    pub leader_line_mode: Option<bool>,
    /// The kernel echoes what is typed on the leader's terminal (see
    /// [`cohort_backends::process::TtyMode`]).
    #[serde(default)]
    pub leader_echo: Option<bool>,
    /// A member of the foreground group (not a shell) waiting for terminal input.
    pub member_waiting: Option<String>,
    /// The leader's command line (to tell a shell that replaced itself, `exec bash`).
    pub leader_args: Option<String>,
    /// The text before the cursor on its row (asked only with
    /// [`Need::ForegroundAndScreen`]): a continuation prompt, a program's prompt.
    pub cursor_line: Option<String>,
    /// Bytes typed into the terminal that no program has read yet (complete lines in
    /// line mode): text typed ahead of the shell, still waiting for it.
    #[serde(default)]
    pub input_pending: Option<usize>,
}

impl Facts {
    /// Whether the foreground process group is a shell: the pane's own, or one started
    /// inside it. The group's leader is asked by its pid, not by the name the terminal
    /// reports: when a pipeline's first command (`seq 1 500 | less`) has exited, its
    /// group still holds the terminal, and tmux names the pane's shell instead.
    pub fn foreground_is_shell(&self) -> bool {
        if self.at_shell {
            return true;
        }
        match self.foreground_pid {
            // A leader that is gone leaves a pipeline still running. A shell running a
            // script (`bash install.sh`) is a program like any other: at its `read` it
            // waits for an answer, not for the next command.
            Some(_) => {
                self.leader_name
                    .as_deref()
                    .is_some_and(|name| SHELLS.contains(&name))
                    && self.leader_runs_script != Some(true)
            }
            None => SHELLS.contains(&self.foreground_command.as_str()),
        }
    }

    /// A shell in the foreground that, where the platform tells, waits for input: a
    /// wrapper `sh` running its own builtins is not "back".
    pub fn shell_reading(&self) -> bool {
        self.foreground_is_shell() && self.leader_waiting != Some(false)
    }

    /// A shell in the foreground that reads the terminal, but not with its line
    /// editor: a builtin inside a command (`read -n1`, `read line`, `select`) waits
    /// for an answer. A shell at its prompt edits the line itself, with the kernel's
    /// line mode and echo off; keys read with echo on, or a line read in line mode by
    /// a shell that has a line editor (bash, zsh, fish), are a question. (`read -s
    /// -n1` sets the same mode as the editor and cannot be told from it.)
    pub fn shell_builtin_reading(&self) -> bool {
        let (Some(line), Some(echo)) = (self.leader_line_mode, self.leader_echo) else {
            return false;
        };
        let shell = self.leader_name.as_deref().unwrap_or(&self.shell_command);
        let edits_its_line = matches!(shell.trim_start_matches('-'), "bash" | "zsh" | "fish");
        self.shell_reading() && ((!line && echo) || (line && edits_its_line))
    }

    /// Whether the screen shows a continuation prompt at the cursor (`None`: the
    /// screen was not read).
    pub fn continuation_prompt(&self) -> Option<bool> {
        self.cursor_line
            .as_deref()
            .map(super::hints::is_continuation_prompt)
    }
}

/// Asks the backend and the kernel for what `need` names.
pub async fn gather(backend: &dyn TerminalBackend, pane: &PaneId, need: Need) -> Facts {
    let state = match backend.pane_state(pane).await {
        Ok(state) => state,
        Err(BackendError::PaneGone(_)) => {
            return Facts {
                pane_gone: true,
                ..Facts::default()
            }
        }
        // A backend that cannot answer now: nothing known, nothing decided on it.
        Err(_) => return Facts::default(),
    };
    // A pane on another machine: its kernel's facts come as one snapshot of the far
    // side, read by the same rules; its pids are the far side's.
    let snapshot = backend.process_snapshot(pane).await.ok().flatten();
    let kernel = match &snapshot {
        Some(snapshot) => Kernel::Remote(snapshot),
        None => Kernel::Local,
    };
    let mut state = state;
    if let Some(snapshot) = &snapshot {
        state.shell_pid = Some(snapshot.shell_pid());
        state.foreground_pid = process::foreground_pid_in(snapshot, snapshot.shell_pid());
        state.tty = snapshot.tty().map(|tty| tty.to_string_lossy().into_owned());
    }
    let at_shell = state.at_shell();
    let mut facts = Facts {
        pane_gone: false,
        dead: state.dead,
        exit_status: state.exit_status,
        at_shell,
        shell_command: state.shell_command.clone(),
        foreground_command: state.foreground_command.clone(),
        foreground_pid: state.foreground_pid,
        alternate_screen: state.alternate_screen,
        kernel: match kernel {
            Kernel::Local => process::proc_reader() && backend.capabilities().foreground_process,
            Kernel::Remote(_) => true,
        },
        ..Facts::default()
    };
    if let Some(pid) = state.foreground_pid {
        facts.leader_name = kernel.name(pid);
        facts.leader_runs_script = kernel.runs_a_script(pid);
        facts.leader_waiting = kernel.waiting_for_input(pid);
        // The terminal's mode, from the kernel's view of the process or, on any POSIX
        // system, from the pane's terminal device.
        let mode = kernel.terminal_mode(pid).or_else(|| {
            state
                .tty
                .as_deref()
                .and_then(|tty| kernel.tty_mode(std::path::Path::new(tty)))
        });
        facts.leader_line_mode = mode.map(|mode| mode.line);
        facts.leader_echo = mode.map(|mode| mode.echo);
        facts.leader_args = kernel.command_line(pid);
        facts.input_pending = match kernel {
            Kernel::Local => state
                .tty
                .as_deref()
                .and_then(|tty| process::tty_input_pending(std::path::Path::new(tty))),
            Kernel::Remote(_) => None,
        };
        if facts.leader_waiting != Some(true) {
            facts.member_waiting = kernel
                .members_waiting(state.shell_pid, pid)
                .into_iter()
                .map(|(_, name)| name)
                .find(|name| !SHELLS.contains(&name.as_str()));
        }
    }
    if need == Need::ForegroundAndScreen {
        facts.cursor_line = Some(match backend.read_screen(pane).await {
            Ok(screen) => {
                let row = screen
                    .rows
                    .get(usize::from(screen.cursor.y))
                    .map(String::as_str)
                    .unwrap_or_default();
                // Rows come without their trailing blanks; the prompt keeps its space.
                let x = usize::from(screen.cursor.x);
                let before: String = row.chars().take(x).collect();
                let blanks = x.saturating_sub(before.chars().count());
                before + &" ".repeat(blanks)
            }
            Err(_) => String::new(),
        });
    }
    facts
}

/// Whose kernel answers for a pane's processes: this machine's, or a snapshot of the
/// remote host's.
#[derive(Clone, Copy)]
enum Kernel<'a> {
    Local,
    Remote(&'a cohort_backends::remote_procs::ProcSnapshot),
}

impl Kernel<'_> {
    fn name(self, pid: u32) -> Option<String> {
        match self {
            Kernel::Local => process::process_name(pid),
            Kernel::Remote(s) => process::process_name_in(s, pid),
        }
    }

    fn runs_a_script(self, pid: u32) -> Option<bool> {
        match self {
            Kernel::Local => process::shell_runs_a_script(pid),
            Kernel::Remote(s) => process::shell_runs_a_script_in(s, pid),
        }
    }

    fn waiting_for_input(self, pid: u32) -> Option<bool> {
        match self {
            Kernel::Local => process::waiting_for_input(pid),
            Kernel::Remote(s) => process::waiting_for_input_in(s, pid),
        }
    }

    fn terminal_mode(self, pid: u32) -> Option<process::TtyMode> {
        match self {
            Kernel::Local => process::terminal_mode(pid),
            Kernel::Remote(s) => process::terminal_mode_in(s, pid),
        }
    }

    fn tty_mode(self, tty: &std::path::Path) -> Option<process::TtyMode> {
        match self {
            Kernel::Local => process::tty_mode(tty),
            Kernel::Remote(s) => process::Procs::tty_mode(s, tty),
        }
    }

    fn command_line(self, pid: u32) -> Option<String> {
        match self {
            Kernel::Local => process::command_line(pid),
            Kernel::Remote(s) => process::command_line_in(s, pid),
        }
    }

    fn members_waiting(self, shell_pid: Option<u32>, pgid: u32) -> Vec<(u32, String)> {
        match self {
            Kernel::Local => process::group_members_waiting(shell_pid, pgid),
            Kernel::Remote(s) => process::group_members_waiting_in(s, shell_pid, pgid),
        }
    }
}
