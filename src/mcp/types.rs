//! Shared argument and result types of the tools, and small helpers.

use cohort_terminal::{
    request::{ReadAnswer, ReadRequest, RunAnswer, RunRequest, WaitArgs},
    sessions::session_name,
    TerminalError,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use cohort_backends::PaneInfo;

/// One session as listed.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SessionSummary {
    /// Session name.
    pub name: String,
    /// Persistent id.
    pub id: Option<String>,
    /// Backend pane id (`%3`).
    pub pane: String,
    /// Foreground command.
    pub command: String,
    /// Whether the session's process has exited.
    pub exited: bool,
    /// Agent owning the session, if any.
    pub agent: Option<String>,
    /// Its tags (`tag:NAME` targets every session with one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The remote host it runs on; absent for this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// False for a pane cohort neither opened nor adopted (listed with `all`): it
    /// is not a session, and nothing reads or types into it until `adopt` makes it
    /// one. Absent for sessions.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub owned: bool,
    /// Hidden from the person's view (`hide`): still running, read and typed into as
    /// any session. Absent when shown.
    #[serde(default, skip_serializing_if = "is_false")]
    pub hidden: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_true(b: &bool) -> bool {
    *b
}

impl From<&PaneInfo> for SessionSummary {
    fn from(p: &PaneInfo) -> Self {
        SessionSummary {
            host: cohort_backends::hosts::split(p.id.as_str())
                .0
                .map(str::to_string),
            name: session_name(p),
            id: p.identity.as_ref().map(|i| i.id.clone()),
            pane: p.id.to_string(),
            command: p.command.clone(),
            exited: p.dead,
            agent: p.identity.as_ref().and_then(|i| i.agent.clone()),
            tags: Vec::new(),
            owned: p.identity.is_some(),
            hidden: p.hidden,
        }
    }
}

/// `list` arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Also list the panes cohort neither opened nor adopted (a person's own
    /// windows and tabs), marked `owned: false` (default false).
    #[serde(default)]
    pub all: bool,
}

/// `adopt` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdoptPaneArgs {
    /// The pane's id (`%7`, an iTerm2 session id) or its window/tab name, as
    /// `list` with all: true shows it.
    pub pane: String,
    /// Its session name (default: its window name when free, else `pane-<number>`).
    #[serde(default)]
    pub name: Option<String>,
    /// The agent working there, registered with the session.
    #[serde(default)]
    pub agent: Option<String>,
    /// That agent's team.
    #[serde(default)]
    pub team: Option<String>,
}

/// `list` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ListResult {
    /// Every session.
    pub sessions: Vec<SessionSummary>,
}

/// `open` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenArgs {
    /// Unique session name, e.g. "build" or "api-server".
    pub name: String,
    /// Working directory (default: cohort's own).
    #[serde(default)]
    pub cwd: Option<String>,
    /// A command to run instead of an interactive shell (e.g. "python3 -q").
    #[serde(default)]
    pub command: Option<String>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Record the session from its start to an asciicast file (see the record tool).
    #[serde(default)]
    pub record: bool,
    /// Open it on a remote host, over SSH: a host from cohort's hosts.toml, or any
    /// destination `ssh` takes (an alias from ~/.ssh/config, user@host). The far side
    /// needs tmux 3.2 or newer and no password prompt (an agent or a key).
    #[serde(default)]
    pub host: Option<String>,
}

/// `open` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct OpenResult {
    /// The new session.
    pub session: SessionSummary,
    /// The command a human runs to watch or take over.
    pub attach: String,
    /// Set when the new shell was not ready (no prompt yet), or the command given
    /// ended at once: why, and what that means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// The asciicast file the session is recorded to, when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<String>,
}

/// No arguments (anything given is refused, not ignored).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// A target-only argument.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetArgs {
    /// Session name, persistent id, agent name or pane id.
    pub target: String,
}

/// `send` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendArgs {
    /// Session name, persistent id, agent name or pane id.
    pub target: String,
    /// Text typed literally (multi-line text is pasted as one bracketed paste).
    pub text: String,
    /// Press Enter afterwards (default true).
    #[serde(default = "yes")]
    pub enter: bool,
    /// Type the text exactly as given: no removal of escape sequences (default false).
    #[serde(default)]
    pub raw: bool,
    /// Pass cohort's tripwire for destructive commands (default false).
    #[serde(default)]
    pub force: bool,
    /// Who is typing (your agent name); a locked session accepts input only from its holder.
    #[serde(default)]
    pub owner: Option<String>,
    /// Type into this session only, when it is in a broadcast group (default false:
    /// the group's other sessions get the same text).
    #[serde(default)]
    pub alone: bool,
}

/// `run` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// Session name, persistent id, agent name or pane id.
    pub target: String,
    /// The command line to run.
    pub command: String,
    /// Give up waiting after this many milliseconds (default 30000); the command keeps running.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Complete when this text appears in the output (e.g. a REPL prompt ">>> ").
    #[serde(default)]
    pub until: Option<String>,
    /// Treat `until` as a regular expression (default false: literal text).
    #[serde(default)]
    pub regex: bool,
    /// Append an exit-status sentinel, for nested shells (ssh, docker exec) whose prompt cohort cannot see.
    /// The sentinel is POSIX shell syntax (bash, zsh, sh, ksh); fish rejects it.
    #[serde(default)]
    pub mark: bool,
    /// Milliseconds without output before checking whether the shell is back (default 500).
    #[serde(default)]
    pub quiet_ms: Option<u64>,
    /// Return the output unreduced (escape payloads are still removed).
    #[serde(default)]
    pub raw: bool,
    /// Pass cohort's tripwire for destructive commands (default false).
    #[serde(default)]
    pub force: bool,
    /// Who is typing (your agent name); a locked session accepts input only from its holder.
    #[serde(default)]
    pub owner: Option<String>,
}

/// The completion verdict.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct VerdictOut {
    /// Whether the command finished.
    pub complete: bool,
    /// Which layer decided: exit, mark, until, quiescence, nested, timeout, closed.
    pub layer: String,
    /// Exit status, when known.
    pub exit_status: Option<i32>,
    /// Milliseconds from Enter to the verdict.
    pub elapsed_ms: u64,
    /// What to do next, when not complete.
    pub hint: Option<String>,
}

impl From<&cohort_terminal::completion::Verdict> for VerdictOut {
    fn from(v: &cohort_terminal::completion::Verdict) -> Self {
        VerdictOut {
            complete: v.complete,
            layer: v.layer.as_str().to_string(),
            exit_status: v.exit_status,
            elapsed_ms: v.elapsed.as_millis() as u64,
            hint: v.hint.clone(),
        }
    }
}

/// `run` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RunResult {
    /// Session name.
    pub session: String,
    /// The command's output, reduced (see meta).
    pub output: String,
    /// Lines and tokens shown vs raw, what was hidden and how to read it, the verdict.
    pub meta: String,
    /// Is it done, and who says so.
    pub verdict: VerdictOut,
}

impl From<RunArgs> for RunRequest {
    fn from(args: RunArgs) -> RunRequest {
        RunRequest {
            target: args.target,
            command: args.command,
            wait: WaitArgs {
                until: args.until,
                regex: args.regex,
                timeout_ms: args.timeout_ms,
                quiet_ms: args.quiet_ms,
            },
            force: args.force,
            mark: args.mark,
            raw: args.raw,
        }
    }
}

impl From<RunAnswer> for RunResult {
    fn from(answer: RunAnswer) -> RunResult {
        RunResult {
            session: answer.session,
            output: answer.output.text,
            meta: answer.output.meta,
            verdict: VerdictOut::from(&answer.verdict),
        }
    }
}

/// `read` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// Session name, persistent id, agent name or pane id.
    pub target: String,
    /// What to read: "new" (output since your last read, the default), "screen" (what a human sees now;
    /// for full-screen programs), "tail", "lines" or "all".
    #[serde(default)]
    pub mode: Option<String>,
    /// For mode "lines": 1-based inclusive range such as "21-1180" (as the meta line prints it);
    /// shown exactly, nothing folded or clipped, at most 500 lines a read.
    #[serde(default)]
    pub lines: Option<String>,
    /// For mode "tail": how many lines (default 50).
    #[serde(default)]
    pub tail: Option<u64>,
    /// Return the output unreduced (escape payloads are still removed).
    #[serde(default)]
    pub raw: bool,
    /// First wait until the command last typed (by run or send) is done, on the same
    /// ladder as run: after a run that timed out, or a send that started something long.
    #[serde(default)]
    pub wait: bool,
    /// With wait: give up after this many milliseconds (default 30000); the command keeps
    /// running.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// With wait: done when this text appears in the output after the command's echo.
    #[serde(default)]
    pub until: Option<String>,
    /// With wait: treat `until` as a regular expression.
    #[serde(default)]
    pub regex: bool,
    /// With wait: milliseconds without output before checking whether the shell is back
    /// (default 500).
    #[serde(default)]
    pub quiet_ms: Option<u64>,
}

/// `read` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ReadResult {
    /// Session name.
    pub session: String,
    /// The text read.
    pub output: String,
    /// What was read, shown vs raw, what was hidden and how to get it.
    pub meta: String,
    /// With wait: whether the command is done, and who decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<VerdictOut>,
}

impl TryFrom<ReadArgs> for ReadRequest {
    type Error = String;

    /// The wait settings are flat here: they apply only with `wait: true`.
    fn try_from(args: ReadArgs) -> Result<ReadRequest, String> {
        let asked_to_wait =
            args.until.is_some() || args.timeout_ms.is_some() || args.quiet_ms.is_some();
        if asked_to_wait && !args.wait {
            return Err("until, timeout_ms and quiet_ms apply to waiting: add wait: true".into());
        }
        Ok(ReadRequest {
            target: args.target,
            mode: args.mode,
            lines: args.lines,
            tail: args.tail,
            raw: args.raw,
            wait: args.wait.then_some(WaitArgs {
                until: args.until,
                regex: args.regex,
                timeout_ms: args.timeout_ms,
                quiet_ms: args.quiet_ms,
            }),
        })
    }
}

impl From<ReadAnswer> for ReadResult {
    fn from(answer: ReadAnswer) -> ReadResult {
        ReadResult {
            session: answer.session,
            output: answer.output.text,
            meta: answer.output.meta,
            verdict: answer.verdict.as_ref().map(VerdictOut::from),
        }
    }
}

pub(crate) fn yes() -> bool {
    true
}

/// `key` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyArgs {
    /// Session name, persistent id, agent name or pane id.
    pub target: String,
    /// Keys in order, e.g. ["C-c"] or ["Up", "Enter"]. Names: Enter, Escape, Tab, BSpace,
    /// Up, Down, Left, Right, Home, End, PPage, NPage, F1–F12, and C-x, M-x, S-x for
    /// Ctrl, Alt and Shift combinations. Text is not a key: use send for text.
    pub keys: Vec<String>,
    /// Who is pressing them (your agent name); a locked session accepts input only from its holder.
    #[serde(default)]
    pub owner: Option<String>,
    /// Press them in this session only, when it is in a broadcast group (default
    /// false: the group's other sessions get the same keys).
    #[serde(default)]
    pub alone: bool,
}

/// `status` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {
    /// A session to report on (name, persistent id, agent name or pane id); omit for the server.
    #[serde(default)]
    pub target: Option<String>,
}

/// One session's live state.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SessionStatus {
    /// Session name.
    pub name: String,
    /// Pane id.
    pub pane: String,
    /// Foreground program.
    pub foreground: String,
    /// Whether the shell itself is in the foreground (nothing running).
    pub at_shell: bool,
    /// Whether the session's process exited.
    pub exited: bool,
    /// Its exit status, when it exited.
    pub exit_status: Option<i32>,
    /// Cursor row and column (0-based).
    pub cursor: [u16; 2],
    /// Columns and rows.
    pub size: [u16; 2],
    /// Whether a full-screen program is showing.
    pub full_screen: bool,
    /// Whether the pane is in copy mode (cohort leaves it before typing).
    pub copy_mode: bool,
    /// Current directory of the foreground program.
    pub cwd: Option<String>,
    /// Last command cohort ran there.
    pub last_command: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Who holds the session's lock, if anyone.
    pub locked_by: Option<String>,
    /// How a human attaches.
    pub attach: String,
    /// The remote host it runs on; absent for this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The sessions of its broadcast group (itself included), when it is in one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broadcast_group: Vec<String>,
}

/// `status` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct StatusResult {
    /// Backend in use.
    pub backend: String,
    /// What the backend can do.
    pub capabilities: serde_json::Value,
    /// Registry database.
    pub registry: String,
    /// Set when the registry had to be recovered.
    pub registry_warning: Option<String>,
    /// Enabled toolsets.
    pub toolsets: Vec<String>,
    /// Number of sessions.
    pub sessions: usize,
    /// Output journal memory in use.
    pub journal_memory_kib: u64,
    /// The requested session's state.
    pub session: Option<SessionStatus>,
}

/// Acknowledgement with the session it concerned.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Done {
    /// Session name.
    pub session: String,
    /// Pane id.
    pub pane: String,
    /// The other sessions of its broadcast group that the input reached too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
    /// Sessions of its broadcast group the input did not reach, each with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missed: Vec<String>,
}

impl From<&PaneInfo> for Done {
    fn from(p: &PaneInfo) -> Self {
        Done {
            session: session_name(p),
            pane: p.id.to_string(),
            also: Vec::new(),
            missed: Vec::new(),
        }
    }
}

impl Done {
    /// The answer for input typed into `p` and echoed to its group.
    pub(crate) fn echoed(p: &PaneInfo, echoed: cohort_terminal::broadcast::Echoed) -> Self {
        Done {
            also: echoed.reached,
            missed: echoed.missed,
            ..Done::from(p)
        }
    }
}

pub(crate) fn err(e: TerminalError) -> String {
    e.to_string()
}

impl OpenResult {
    /// The answer to `open` and `split`: the session once up, how to attach, and a
    /// notice if the shell never showed its prompt.
    pub(crate) fn new(
        engine: &crate::engine::Engine,
        opened: cohort_terminal::ready::Opened,
    ) -> OpenResult {
        let pane = opened.pane;
        OpenResult {
            session: SessionSummary::from(&pane),
            attach: engine.terminal.attach_text(&pane.id),
            notice: opened.notice,
            recording: engine
                .terminal
                .recording(&pane.id)
                .map(|r| r.path.display().to_string()),
        }
    }
}
