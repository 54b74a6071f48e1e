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
use crate::engine::{Engine, EngineError, OpenOptions};

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
}

fn yes() -> bool {
    true
}

/// `key` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct KeyArgs {
    /// Session name, persistent id, agent name or pane id.
    pub target: String,
    /// Keys in order, e.g. ["C-c"], ["Escape", ":q!", "Enter"] is not valid (text is
    /// not a key); names: Enter, Escape, Tab, BSpace, Up, Down, Left, Right, Home,
    /// End, PPage, NPage, F1–F12, C-x, M-x, S-x.
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
        self.engine
            .send(&pane.id, &args.text, args.enter)
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
        description = "Read a session's visible screen (what a human would see now).",
        annotations(
            title = "Read the screen",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn read(
        &self,
        Parameters(args): Parameters<TargetArgs>,
    ) -> Result<Json<ScreenResult>, String> {
        let pane = self.engine.resolve(&args.target).await.map_err(err)?;
        let screen = self.engine.screen(&pane.id).await.map_err(err)?;
        let mut rows = screen.rows;
        while rows.last().is_some_and(|r| r.trim().is_empty()) {
            rows.pop();
        }
        Ok(Json(ScreenResult {
            session: name_of(&pane),
            screen: rows.join("\n"),
            cursor: [screen.cursor.y, screen.cursor.x],
            alternate_screen: screen.alternate,
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
