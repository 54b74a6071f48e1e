//! The MCP server: cohort's tools over rmcp.
//!
//! Thin by design: each tool validates its arguments, resolves the target, calls
//! the [`Engine`], and formats the answer. Failures the model should see and act on
//! (unknown session, bad key name, pane gone) come back as tool results with
//! `isError: true` and a message that says what to do next; protocol errors are
//! kept for protocol faults.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, Json, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use cohort_backends::{Key, PaneInfo};

use crate::config::Config;
use crate::engine::completion::{Until, WaitSpec};
use crate::engine::read::{ReadOptions, ReadWhat};
use crate::engine::{Engine, EngineError, OpenOptions, SendOptions};

/// The MCP server; one per connection, sharing one engine.
#[derive(Clone)]
pub struct CohortServer {
    engine: Engine,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for CohortServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CohortServer")
            .field("engine", &self.engine)
            .finish()
    }
}

/// Serves MCP on stdin/stdout until the client goes away.
pub async fn serve_stdio(config: &Config) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let engine = Engine::start(config).await?;
    let service = CohortServer::new(engine)
        .serve(rmcp::transport::stdio())
        .await?;
    service.waiting().await?;
    Ok(())
}

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
}

impl From<&PaneInfo> for SessionSummary {
    fn from(p: &PaneInfo) -> Self {
        SessionSummary {
            name: p
                .identity
                .as_ref()
                .map(|i| i.name.clone())
                .unwrap_or_else(|| p.window_name.clone()),
            id: p.identity.as_ref().map(|i| i.id.clone()),
            pane: p.id.to_string(),
            command: p.command.clone(),
            exited: p.dead,
            agent: p.identity.as_ref().and_then(|i| i.agent.clone()),
        }
    }
}

/// `list` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ListResult {
    /// Every session.
    pub sessions: Vec<SessionSummary>,
}

/// `open` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OpenArgs {
    /// Unique session name, e.g. "build" or "api-server".
    pub name: String,
    /// Working directory (default: cohort's own).
    #[serde(default)]
    pub cwd: Option<String>,
    /// A command to run instead of an interactive shell (e.g. "python3 -q").
    #[serde(default)]
    pub command: Option<String>,
}

/// `open` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct OpenResult {
    /// The new session.
    pub session: SessionSummary,
    /// The command a human runs to watch or take over.
    pub attach: String,
}

/// A target-only argument.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TargetArgs {
    /// Session name, persistent id, agent name or pane id.
    pub target: String,
}

/// `send` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
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
}

/// `run` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
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
}

/// The completion verdict.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct VerdictOut {
    /// Whether the command finished.
    pub complete: bool,
    /// Which layer decided: exit, mark, until, quiescence, nested, timeout.
    pub layer: String,
    /// Exit status, when known.
    pub exit_status: Option<i32>,
    /// Milliseconds from Enter to the verdict.
    pub elapsed_ms: u64,
    /// What to do next, when not complete.
    pub hint: Option<String>,
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

/// `read` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// Session name, persistent id, agent name or pane id.
    pub target: String,
    /// What to read: "new" (output since your last read, the default), "screen" (what a human sees now;
    /// for full-screen programs), "tail", "lines" or "all".
    #[serde(default)]
    pub mode: Option<String>,
    /// For mode "lines": 1-based inclusive range such as "21-1180" (as the meta line prints it).
    #[serde(default)]
    pub lines: Option<String>,
    /// For mode "tail": how many lines (default 50).
    #[serde(default)]
    pub tail: Option<u64>,
    /// Return the output unreduced (escape payloads are still removed).
    #[serde(default)]
    pub raw: bool,
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
}

fn yes() -> bool {
    true
}

/// `key` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct KeyArgs {
    /// Session name, persistent id, agent name or pane id.
    pub target: String,
    /// Keys in order, e.g. ["C-c"] or ["Up", "Enter"]. Names: Enter, Escape, Tab, BSpace,
    /// Up, Down, Left, Right, Home, End, PPage, NPage, F1–F12, and C-x, M-x, S-x for
    /// Ctrl, Alt and Shift combinations. Text is not a key: use send for text.
    pub keys: Vec<String>,
}

/// Acknowledgement with the session it concerned.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Done {
    /// Session name.
    pub session: String,
    /// Pane id.
    pub pane: String,
}

/// `read` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ScreenResult {
    /// Session name.
    pub session: String,
    /// The visible screen, one line per row, trailing blank rows dropped.
    pub screen: String,
    /// Cursor row and column.
    pub cursor: [u16; 2],
    /// Whether a full-screen program (alternate screen) is showing.
    pub alternate_screen: bool,
}

fn name_of(p: &PaneInfo) -> String {
    p.identity
        .as_ref()
        .map(|i| i.name.clone())
        .unwrap_or_else(|| p.window_name.clone())
}

fn err(e: EngineError) -> String {
    e.to_string()
}

/// Parses "21-1180" or "7" (1-based, inclusive) into a 0-based half-open range.
fn parse_lines(spec: Option<&str>) -> Result<std::ops::Range<u64>, String> {
    let bad = || {
        "lines must look like \"21-1180\" or \"7\" (1-based, inclusive), as the meta line prints them".to_string()
    };
    let spec = spec.ok_or_else(bad)?.trim();
    let (a, b) = match spec.split_once('-') {
        Some((a, b)) => (
            a.trim().parse::<u64>().map_err(|_| bad())?,
            b.trim().parse::<u64>().map_err(|_| bad())?,
        ),
        None => {
            let n = spec.parse::<u64>().map_err(|_| bad())?;
            (n, n)
        }
    };
    if a == 0 || b < a {
        return Err(bad());
    }
    Ok(a - 1..b)
}

#[tool_router]
impl CohortServer {
    /// A server over `engine`.
    pub fn new(engine: Engine) -> Self {
        CohortServer {
            engine,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "List cohort's terminal sessions: name, persistent id, pane, foreground command, whether it exited.",
        annotations(
            title = "List sessions",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list(&self) -> Result<Json<ListResult>, String> {
        let panes = self.engine.list().await.map_err(err)?;
        Ok(Json(ListResult {
            sessions: panes.iter().map(SessionSummary::from).collect(),
        }))
    }

    #[tool(
        description = "Open a persistent terminal session running your shell (or a command). It stays open across calls: logins, REPLs and servers keep running. Returns the command a human uses to watch it.",
        annotations(
            title = "Open a session",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn open(
        &self,
        Parameters(args): Parameters<OpenArgs>,
    ) -> Result<Json<OpenResult>, String> {
        let pane = self
            .engine
            .open(OpenOptions {
                name: args.name,
                cwd: args.cwd,
                command: args.command,
                env: Vec::new(),
            })
            .await
            .map_err(err)?;
        let attach = self.engine.backend().attach_hint(&pane.id).command_line;
        Ok(Json(OpenResult {
            session: SessionSummary::from(&pane),
            attach,
        }))
    }

    #[tool(
        description = "Type text into a session, then press Enter unless enter=false. Text is typed literally; multi-line text is pasted whole and runs only on Enter.",
        annotations(
            title = "Send text",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn send(&self, Parameters(args): Parameters<SendArgs>) -> Result<Json<Done>, String> {
        let pane = self.engine.resolve(&args.target).await.map_err(err)?;
        let options = SendOptions {
            enter: args.enter,
            raw: args.raw,
            force: args.force,
            mark: None,
            owner: None,
        };
        self.engine
            .send(&pane.id, &args.text, &options)
            .await
            .map_err(err)?;
        Ok(Json(Done {
            session: name_of(&pane),
            pane: pane.id.to_string(),
        }))
    }

    #[tool(
        description = "Press keys in a session, e.g. [\"C-c\"] to interrupt, [\"Up\", \"Enter\"], [\"Escape\"]. Unknown key names are refused, never typed as text.",
        annotations(
            title = "Press keys",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn key(&self, Parameters(args): Parameters<KeyArgs>) -> Result<Json<Done>, String> {
        if args.keys.is_empty() {
            return Err("no keys given: pass e.g. [\"Enter\"] or [\"C-c\"]".into());
        }
        let keys = args
            .keys
            .iter()
            .map(|k| k.parse::<Key>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let pane = self.engine.resolve(&args.target).await.map_err(err)?;
        self.engine.keys(&pane.id, &keys).await.map_err(err)?;
        Ok(Json(Done {
            session: name_of(&pane),
            pane: pane.id.to_string(),
        }))
    }

    #[tool(
        description = "Run a command in a session and wait until it is done: returns its output (reduced to save tokens, with a meta line saying what was hidden and how to read it) and a verdict: complete or not, the exit status, and which layer decided (exit, mark, until, quiescence, nested, timeout). For a REPL or any program that keeps running, pass until (its prompt); for ssh or docker exec shells, pass mark: true.",
        annotations(
            title = "Run a command",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn run(&self, Parameters(args): Parameters<RunArgs>) -> Result<Json<RunResult>, String> {
        let pane = self.engine.resolve(&args.target).await.map_err(err)?;
        let until = args
            .until
            .as_deref()
            .map(|u| Until::new(u, args.regex))
            .transpose()?;
        let mut spec = WaitSpec {
            until,
            ..WaitSpec::default()
        };
        if let Some(ms) = args.timeout_ms {
            spec.timeout = std::time::Duration::from_millis(ms.clamp(1, 24 * 3600 * 1000));
        }
        if let Some(ms) = args.quiet_ms {
            spec.quiet = std::time::Duration::from_millis(ms.clamp(10, 600_000));
        }
        let send = SendOptions {
            enter: true,
            raw: false,
            force: args.force,
            mark: args
                .mark
                .then(|| uuid::Uuid::new_v4().simple().to_string()[..12].to_string()),
            owner: None,
        };
        let out = self
            .engine
            .run(&pane.id, &args.command, &send, spec, args.raw)
            .await
            .map_err(err)?;
        Ok(Json(RunResult {
            session: name_of(&pane),
            output: out.output.text,
            meta: out.output.meta,
            verdict: VerdictOut {
                complete: out.verdict.complete,
                layer: out.verdict.layer.as_str().to_string(),
                exit_status: out.verdict.exit_status,
                elapsed_ms: out.verdict.elapsed.as_millis() as u64,
                hint: out.verdict.hint,
            },
        }))
    }

    #[tool(
        description = "Read a session's output: by default what is new since your last read (reduced, with a meta line saying what was hidden and the lines= read that returns it); mode \"screen\" for what a human sees now (full-screen programs), \"tail\", \"lines\" (e.g. lines: \"21-1180\") or \"all\".",
        annotations(
            title = "Read output",
            read_only_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn read(
        &self,
        Parameters(args): Parameters<ReadArgs>,
    ) -> Result<Json<ReadResult>, String> {
        let pane = self.engine.resolve(&args.target).await.map_err(err)?;
        let mode = args.mode.as_deref().unwrap_or("new");
        let what = match mode {
            "screen" => {
                let screen = self.engine.screen(&pane.id).await.map_err(err)?;
                let mut rows = screen.rows;
                while rows.last().is_some_and(|r| r.trim().is_empty()) {
                    rows.pop();
                }
                let meta = format!(
                    "[screen {}x{}, cursor row {} col {}{}]",
                    screen.size.cols,
                    screen.size.rows,
                    screen.cursor.y + 1,
                    screen.cursor.x + 1,
                    if screen.alternate {
                        ", full-screen program"
                    } else {
                        ""
                    }
                );
                return Ok(Json(ReadResult {
                    session: name_of(&pane),
                    output: rows.join("\n"),
                    meta,
                }));
            }
            "new" => ReadWhat::New,
            "all" => ReadWhat::All,
            "tail" => ReadWhat::Tail(args.tail.unwrap_or(50).max(1)),
            "lines" => ReadWhat::Lines(parse_lines(args.lines.as_deref())?),
            other => {
                return Err(format!(
                "unknown mode {other:?}: use \"new\", \"screen\", \"tail\", \"lines\" or \"all\""
            ))
            }
        };
        let out = self.engine.read(
            &pane.id,
            &ReadOptions {
                what,
                caller: "mcp".into(),
                raw: args.raw,
                max_lines: None,
            },
        );
        Ok(Json(ReadResult {
            session: name_of(&pane),
            output: out.text,
            meta: out.meta,
        }))
    }

    #[tool(
        description = "Close a session: its processes are ended and its pane removed.",
        annotations(
            title = "Close a session",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn close(&self, Parameters(args): Parameters<TargetArgs>) -> Result<Json<Done>, String> {
        let pane = self.engine.resolve(&args.target).await.map_err(err)?;
        self.engine.close(&pane.id).await.map_err(err)?;
        Ok(Json(Done {
            session: name_of(&pane),
            pane: pane.id.to_string(),
        }))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CohortServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "cohort gives you persistent terminal sessions. `open` a session once, then `send` commands to it and \
             `read` its screen; `key` sends keys such as C-c. Sessions survive between calls and a human can attach.",
        )
    }
}
