//! The MCP server: cohort's tools, resources and prompts over rmcp.
//!
//! Thin by design: each tool validates its arguments, resolves targets, calls the
//! [`Engine`], and formats the answer. Failures the model should see and act on
//! (unknown session, bad key name, locked session, tripwire) come back as tool
//! results with `isError: true` and a message that says what to do next; protocol
//! errors are kept for protocol faults.
//!
//! Tools come in toolsets so a host can keep its tool list short
//! (`--toolsets core,team`):
//!
//! - *core* (`core`, `record`): open, send, read, run, key, close, list, status,
//!   record;
//! - *layout* (`layout`): create_layout, split, focus, set_appearance;
//! - *team* (`team`): agents, teams, write_many, read_many, broadcast, locks, tags;
//! - *workers* (`workers`): agent CLIs as workers in their own worktrees;
//! - *orchestration* (`orchestration`): playbook, wait_for, watch, unwatch,
//!   list_watches, notify, agent_status.
//!
//! A server started with a role ([`roles`]) lists only the tools the role allows
//! and refuses the others with a clear answer. Resources can be subscribed to
//! (`push`).

mod core;
mod http;
mod layout;
mod orchestration;
mod push;
mod record;
mod reply;
mod reports;
mod resources;
pub mod roles;
mod sessions;
mod spans;
mod tasks;
mod team;
pub mod transport;
mod types;
mod workers;

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool_handler, ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};

use crate::{
    config::Config,
    engine::{slot::EngineSlot, Engine},
};

pub use http::{http_app, HttpOptions};
pub use orchestration::PlaybookResult;
pub use sessions::SESSIONS_MAX;
pub use types::*;

/// A group of tools a host can enable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Toolset {
    /// open, send, read, run, key, close, list, status, record.
    Core,
    /// create_layout, split, focus, set_appearance, adopt.
    Layout,
    /// Agents, teams, write_many, read_many, broadcast, locks, tags.
    Team,
    /// Agent CLIs as workers: spawn, message, wait, logs, close, adopt, worktrees.
    Workers,
    /// Playbooks, waits, watchers, notify, agent status.
    Orchestration,
}

impl Toolset {
    /// Every toolset, in order.
    pub const ALL: [Toolset; 5] = [
        Toolset::Core,
        Toolset::Layout,
        Toolset::Team,
        Toolset::Workers,
        Toolset::Orchestration,
    ];

    /// What a host that names no toolsets gets: what a single agent needs.
    pub const DEFAULT: [Toolset; 1] = [Toolset::Core];

    /// The most the default tool list may cost a model, in tokens of names,
    /// descriptions and input schemas: it is read on every turn of every session.
    pub const DEFAULT_BUDGET_TOKENS: usize = 4000;

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Toolset::Core => "core",
            Toolset::Layout => "layout",
            Toolset::Team => "team",
            Toolset::Workers => "workers",
            Toolset::Orchestration => "orchestration",
        }
    }

    /// One line for documentation.
    pub fn describe(self) -> &'static str {
        match self {
            Toolset::Core => {
                "persistent sessions: open, run, send, read, key, close, list, status, record"
            }
            Toolset::Layout => {
                "windows of several panes: create_layout, split, focus, set_appearance, adopt, broadcast_input, hide, arrange"
            }
            Toolset::Team => {
                "agents and teams: register, message many at once, broadcast, locks, tags"
            }
            Toolset::Workers => {
                "agent CLIs as workers in their own worktrees: spawn, message, wait, logs, close, adopt"
            }
            Toolset::Orchestration => {
                "workflows and monitoring: playbook, wait_for, watch, unwatch, list_watches, notify, agent_status"
            }
        }
    }

    /// Parses `core,team` (or `all`).
    pub fn parse_list(list: &str) -> Result<Vec<Toolset>, String> {
        let mut out = Vec::new();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if name == "all" {
                return Ok(Toolset::ALL.to_vec());
            }
            let set = Toolset::ALL
                .into_iter()
                .find(|t| t.name() == name)
                .ok_or_else(|| {
                    format!("unknown toolset {name:?}: choose from core, layout, team, workers, orchestration (or all)")
                })?;
            if !out.contains(&set) {
                out.push(set);
            }
        }
        if out.is_empty() {
            return Err("no toolsets given: use e.g. --toolsets core,team (or all)".into());
        }
        out.sort();
        Ok(out)
    }
}

/// The MCP server; one per connection, sharing one engine.
#[derive(Clone)]
pub struct CohortServer {
    engine: EngineSlot,
    toolsets: Arc<Vec<Toolset>>,
    tool_router: ToolRouter<Self>,
    /// This connection (a stdio server, an HTTP session): its own cursor for "new
    /// output", and the token its locks are bound to.
    connection: Arc<str>,
    /// The role the server enforces, if started with one.
    role: Option<Arc<cohort_orchestration::roles::Role>>,
    /// Tools the role does not allow (not listed).
    hidden: Arc<Vec<String>>,
    /// The agent a restricted server serves: the owner of its locks and watchers,
    /// the sender of its notifications and the only reader of its own.
    agent: Option<Arc<str>>,
    /// This connection's resource subscriptions.
    subscriptions: Arc<push::Subscriptions>,
    /// This connection's long calls run as tasks (see [`tasks`]).
    tasks: rmcp::task_manager::TaskManager,
    /// Releases this connection's locks when its last handle goes.
    /// `None` in the copy a task runs with, which must not keep the connection.
    _end: Option<Arc<ConnectionEnd>>,
}

/// The end of a connection (the last handle of its server dropped: an HTTP session
/// closed or expired, a stdio server stopping): the locks it took are released, so
/// a client that went away never holds a session, and the long calls it left running
/// as tasks are stopped (a task holds no handle that keeps the connection). A process
/// that dies without getting here loses its locks too: they are leases of its process.
struct ConnectionEnd {
    connection: Arc<str>,
    engine: EngineSlot,
    tasks: rmcp::task_manager::TaskManager,
}

impl Drop for ConnectionEnd {
    fn drop(&mut self) {
        self.tasks.shutdown();
        let (Some(engine), Ok(runtime)) =
            (self.engine.started(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let connection = self.connection.to_string();
        runtime.spawn(async move {
            if let Err(e) = engine.terminal.release_connection(&connection).await {
                tracing::warn!(target: "cohort::mcp", "the locks of connection {connection} were not released: {e}");
            }
        });
    }
}

impl std::fmt::Debug for CohortServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CohortServer")
            .field("toolsets", &self.toolsets)
            .finish_non_exhaustive()
    }
}

impl CohortServer {
    /// A server over `engine` with every toolset.
    pub fn new(engine: Engine) -> Self {
        Self::with_toolsets(engine, &Toolset::ALL)
    }

    /// A server offering only `toolsets`.
    pub fn with_toolsets(engine: Engine, toolsets: &[Toolset]) -> Self {
        Self::with_slot(EngineSlot::ready(engine), toolsets)
    }

    /// A server over an engine that may still be starting.
    pub fn with_slot(engine: EngineSlot, toolsets: &[Toolset]) -> Self {
        Self::with_role(engine, toolsets, None)
    }

    /// A server for a new connection, sharing this one's engine, tools and role: its
    /// own cursor, locks and subscriptions, and the tool router (names, schemas) not
    /// built again.
    pub fn for_new_connection(&self) -> Self {
        let connection: Arc<str> = format!("mcp-{}", uuid::Uuid::new_v4().simple()).into();
        let tasks = rmcp::task_manager::TaskManager::new();
        CohortServer {
            _end: Some(Arc::new(ConnectionEnd {
                connection: connection.clone(),
                engine: self.engine.clone(),
                tasks: tasks.clone(),
            })),
            connection,
            subscriptions: Default::default(),
            tasks,
            ..self.clone()
        }
    }

    /// A server that enforces `role`: it lists only the tools the role allows and
    /// refuses the rest (see [`roles`]).
    pub fn with_role(
        engine: EngineSlot,
        toolsets: &[Toolset],
        role: Option<cohort_orchestration::roles::Role>,
    ) -> Self {
        let mut router = ToolRouter::new();
        for set in toolsets {
            router.merge(set_router(*set));
        }
        portable_schemas(&mut router);
        let role = role.map(Arc::new);
        let hidden = match &role {
            Some(role) => {
                let hidden = roles::hidden(&router, role);
                roles::restrict(&mut router, role);
                hidden
            }
            None => Vec::new(),
        };
        let connection: Arc<str> = format!("mcp-{}", uuid::Uuid::new_v4().simple()).into();
        let tasks = rmcp::task_manager::TaskManager::new();
        CohortServer {
            _end: Some(Arc::new(ConnectionEnd {
                connection: connection.clone(),
                engine: engine.clone(),
                tasks: tasks.clone(),
            })),
            engine,
            toolsets: Arc::new(toolsets.to_vec()),
            tool_router: router,
            connection,
            role,
            hidden: Arc::new(hidden),
            agent: None,
            subscriptions: Default::default(),
            tasks,
        }
    }

    /// The same server, serving `agent`: with a role, every name a caller gives for
    /// itself (a lock's owner, a notification's sender or reader, a watcher's
    /// owner) is bound to it, and any other name is refused.
    pub fn serving_agent(mut self, agent: Option<String>) -> Self {
        self.agent = agent.map(Arc::from);
        self
    }

    /// The name a caller acts as, given `given` for `what`. A server without a role
    /// takes the caller's word. A restricted server binds it: to the agent it serves
    /// (a different name is refused), and with no agent to none at all, since a role
    /// that could name anyone could read anyone's messages.
    fn own_name(&self, given: &str, what: &str) -> Result<String, String> {
        self.restriction().own_name(given, what)
    }

    /// The role and agent this server serves.
    fn restriction(&self) -> crate::restriction::Restriction {
        crate::restriction::Restriction {
            role: self.role.clone(),
            agent: self.agent.clone(),
        }
    }

    /// The tools offered (those the role allows), with their schemas.
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        let mut tools = self.tool_router.list_all();
        tools.retain(|t| !self.hidden.iter().any(|h| h == t.name.as_ref()));
        tools
    }

    /// The engine, once started.
    async fn engine(&self) -> Result<&Engine, String> {
        self.engine.get().await
    }

    /// This connection's name: the cursor its reads of new output move, and the token
    /// its locks are bound to.
    fn connection(&self) -> &str {
        &self.connection
    }

    /// This connection as the terminal's caller, acting as `owner`; a restricted
    /// server serving an agent always acts as that agent.
    fn caller(&self, owner: Option<String>) -> cohort_terminal::Caller {
        cohort_terminal::Caller::new(self.connection()).as_owner(self.restriction().owner(owner))
    }
}

/// A tool's error result with its text bounded ([`crate::bounded`]): an error never
/// hands a caller's huge value back to it.
fn bound_error_result(response: rmcp::model::CallToolResponse) -> rmcp::model::CallToolResponse {
    let rmcp::model::CallToolResponse::Complete(mut result) = response else {
        return response;
    };
    if result.is_error == Some(true) {
        for block in &mut result.content {
            if let rmcp::model::ContentBlock::Text(content) = block {
                if let std::borrow::Cow::Owned(text) = crate::bounded::error_text(&content.text) {
                    content.text = text;
                }
            }
        }
    }
    rmcp::model::CallToolResponse::Complete(result)
}

/// A protocol error (arguments that do not fit the tool's schema, mostly) with its
/// message bounded.
fn bound_error(mut error: McpError) -> McpError {
    if let std::borrow::Cow::Owned(text) = crate::bounded::error_text(&error.message) {
        error.message = text.into();
    }
    error
}

/// The router of one toolset.
fn set_router(set: Toolset) -> ToolRouter<CohortServer> {
    match set {
        Toolset::Core => CohortServer::core_router() + CohortServer::record_router(),
        Toolset::Layout => CohortServer::layout_router(),
        Toolset::Team => CohortServer::team_router(),
        Toolset::Workers => CohortServer::workers_router(),
        Toolset::Orchestration => CohortServer::orchestration_router(),
    }
}

/// Serves MCP on stdin/stdout until the client goes away; with a role, only what
/// the role allows.
pub async fn serve_stdio(
    config: &Config,
    toolsets: &[Toolset],
    role: Option<cohort_orchestration::roles::Role>,
    agent: Option<String>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let engine = EngineSlot::starting(config.clone());
    let (stdin, stdout) = rmcp::transport::stdio();
    let service = CohortServer::with_role(engine, toolsets, role)
        .serving_agent(agent)
        .serve(transport::LineTransport::new(stdin, stdout))
        .await?;
    service.waiting().await?;
    Ok(())
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CohortServer {
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        use tracing::Instrument;
        let span = spans::start(&request);
        spans::continue_trace(&span, &request, &context.meta);
        if !span.is_disabled() {
            if let Ok(engine) = self.engine().await {
                spans::identify(&span, engine, &request)
                    .instrument(span.clone())
                    .await;
            }
        }
        if tasks::client_takes_tasks(&context) && tasks::runs_long(&request) {
            return Ok(tasks::start(self, request, context, span));
        }
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        let outcome = self.tool_router.call(call).instrument(span.clone()).await;
        spans::record(&span, &outcome);
        outcome.map(bound_error_result).map_err(bound_error)
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        Ok(rmcp::model::GetTaskResult::new(
            self.tasks.get_task(&request.task_id)?,
        ))
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_tasks()
                .build(),
        )
        .with_server_info(
            rmcp::model::Implementation::new("cohort", env!("CARGO_PKG_VERSION"))
                .with_title("cohort: terminals for AI agents"),
        )
        .with_instructions(
            "cohort gives you persistent terminal sessions. `open` a session once, then `run` commands in it: each \
             call returns the output (reduced to save tokens, with a meta line saying what was hidden and how to read \
             it) and a verdict saying whether the command finished, with its exit status. For REPLs pass `until` (the \
             prompt); for ssh or docker exec shells pass `mark: true`. `read` returns what is new; `key` sends keys \
             such as C-c. Sessions survive between calls, and a human can attach to watch or take over.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, McpError> {
        let cache_hints = context
            .protocol_version()
            .is_some_and(|version| version >= rmcp::model::ProtocolVersion::V_2026_07_28);
        Ok(rmcp::model::ListToolsResult {
            result_type: Some(rmcp::model::ResultType::COMPLETE),
            tools: self.tools(),
            meta: None,
            next_cursor: None,
            ttl_ms: cache_hints.then_some(0),
            cache_scope: cache_hints.then_some(rmcp::model::CacheScope::Public),
        })
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let engine = self
            .engine()
            .await
            .map_err(|e| McpError::internal_error(e, None))?;
        push::subscribe(engine, &self.subscriptions, &request.uri, context.peer).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscriptions.remove(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        let mut accepted = rmcp::model::SubscriptionFilter::new();
        accepted.resource_subscriptions = requested.resource_subscriptions.clone();
        Some(accepted)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        let engine = self
            .engine()
            .await
            .map_err(|e| McpError::internal_error(e, None))?;
        push::listen(engine, context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let engine = self
            .engine()
            .await
            .map_err(|e| McpError::internal_error(e, None))?;
        resources::list(engine).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let engine = self
            .engine()
            .await
            .map_err(|e| McpError::internal_error(e, None))?;
        resources::read(engine, &request.uri).await.map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(resources::prompts())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let engine = self
            .engine()
            .await
            .map_err(|e| McpError::internal_error(e, None))?;
        resources::prompt(engine, &request).await.map(Into::into)
    }
}

/// Formats JSON Schema validators know (plus OpenAPI's numeric ones). schemars also
/// writes `uint16`, `uint` and the like for unsigned integers, which validators such
/// as ajv warn about; those are dropped (the `minimum: 0` next to them stays).
const KNOWN_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
    "int32",
    "int64",
    "float",
    "double",
];

fn strip_unknown_formats(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if map
                .get("format")
                .and_then(|f| f.as_str())
                .is_some_and(|f| !KNOWN_FORMATS.contains(&f))
            {
                map.remove("format");
            }
            map.values_mut().for_each(strip_unknown_formats);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_unknown_formats),
        _ => {}
    }
}

/// Makes every tool's schemas portable (see [`KNOWN_FORMATS`]).
fn portable_schemas(router: &mut ToolRouter<CohortServer>) {
    let fix = |schema: &Arc<rmcp::model::JsonObject>| {
        let mut value = serde_json::Value::Object((**schema).clone());
        strip_unknown_formats(&mut value);
        match value {
            serde_json::Value::Object(map) => Arc::new(map),
            _ => schema.clone(),
        }
    };
    for route in router.map.values_mut() {
        route.attr.input_schema = fix(&route.attr.input_schema);
        if let Some(output) = &route.attr.output_schema {
            route.attr.output_schema = Some(fix(output));
        }
    }
}

/// The tools of one toolset, with their schemas (no engine needed).
pub fn toolset_tools(set: Toolset) -> Vec<rmcp::model::Tool> {
    let mut router = set_router(set);
    portable_schemas(&mut router);
    let mut tools = router.list_all();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools
}

/// What a tool list costs a model: tokens (about four characters each) of the
/// names, descriptions and input schemas, and of the whole `tools/list` entries
/// (output schemas and annotations too, which not every host shows its model).
pub fn list_tokens(tools: &[rmcp::model::Tool]) -> (usize, usize) {
    let tokens = |chars: usize| chars.div_ceil(4);
    let read = tools
        .iter()
        .map(|t| {
            t.name.len()
                + t.description.as_deref().map_or(0, str::len)
                + serde_json::to_string(&*t.input_schema).map_or(0, |s| s.len())
        })
        .sum();
    let whole = tools
        .iter()
        .map(|t| serde_json::to_string(t).map_or(0, |s| s.len()))
        .sum();
    (tokens(read), tokens(whole))
}

/// The tool reference, as Markdown or as JSON (every tool with its schemas).
pub fn offline_reference(markdown: bool) -> String {
    if markdown {
        return tool_reference_markdown();
    }
    let all: Vec<serde_json::Value> = Toolset::ALL
        .into_iter()
        .flat_map(|set| {
            toolset_tools(set).into_iter().map(move |t| {
                let mut v = serde_json::to_value(&t).unwrap_or_default();
                v["toolset"] = serde_json::Value::String(set.name().into());
                v
            })
        })
        .collect();
    format!(
        "{}\n",
        serde_json::to_string_pretty(&all).unwrap_or_default()
    )
}

/// The tool reference in Markdown, generated from the tools' schemas.
pub fn tool_reference_markdown() -> String {
    let mut out =
        String::from("<!-- generated by `cohort tools --markdown`; do not edit by hand -->\n");
    for set in Toolset::ALL {
        let tools = toolset_tools(set);
        let (read, whole) = list_tokens(&tools);
        out.push_str(&format!(
            "\n### Toolset `{}`\n\n{}. {} tools, ~{read} tokens of names, descriptions and input \
             schemas (~{whole} with output schemas).\n",
            set.name(),
            set.describe(),
            tools.len()
        ));
        for tool in tools {
            out.push_str(&format!("\n#### `{}`\n\n", tool.name));
            if let Some(d) = &tool.description {
                out.push_str(d);
                out.push_str("\n\n");
            }
            let hints = tool.annotations.as_ref().map(|a| {
                let mut h = Vec::new();
                if a.read_only_hint == Some(true) {
                    h.push("read-only");
                }
                if a.destructive_hint == Some(true) {
                    h.push("destructive");
                }
                if a.idempotent_hint == Some(true) {
                    h.push("idempotent");
                }
                if a.open_world_hint == Some(true) {
                    h.push("open-world");
                }
                h.join(", ")
            });
            if let Some(h) = hints.filter(|h| !h.is_empty()) {
                out.push_str(&format!("*{h}*\n\n"));
            }
            let schema = serde_json::Value::Object((*tool.input_schema).clone());
            let required: Vec<String> = schema["required"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(props) = schema["properties"].as_object().filter(|p| !p.is_empty()) {
                out.push_str("| argument | type | required | description |\n|---|---|---|---|\n");
                for (name, prop) in props {
                    let ty = prop["type"]
                        .as_str()
                        .map(String::from)
                        .or_else(|| {
                            prop["type"].as_array().map(|a| {
                                a.iter()
                                    .filter_map(|v| v.as_str())
                                    .collect::<Vec<_>>()
                                    .join(" or ")
                            })
                        })
                        .unwrap_or_else(|| "object".into());
                    let desc = prop["description"]
                        .as_str()
                        .unwrap_or_default()
                        .replace('\n', " ")
                        .replace('|', "\\|");
                    let req = if required.contains(name) { "yes" } else { "" };
                    out.push_str(&format!("| `{name}` | {ty} | {req} | {desc} |\n"));
                }
                out.push('\n');
            } else {
                out.push_str("No arguments.\n\n");
            }
        }
    }
    out
}
