//! The *core* toolset: open, send, read, run, key, close, list, status.

use cohort_terminal::{
    input::parse_keys,
    request::{ReadRequest, RunRequest},
    sessions::session_name,
    OpenOptions, SendOptions,
};
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};

use super::reply::Json;

use super::types::*;
use super::CohortServer;

#[tool_router(router = core_router, vis = "pub(crate)")]
impl CohortServer {
    #[tool(
        description = "List cohort's terminal sessions: name, persistent id, pane, foreground command, whether it exited. Only panes cohort opened or that were adopted are sessions; all=true also lists the others (a person's own windows), marked owned: false.",
        annotations(
            title = "List sessions",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list(
        &self,
        Parameters(args): Parameters<ListArgs>,
    ) -> Result<Json<ListResult>, String> {
        let engine = self.engine().await?;
        let panes = match args.all {
            true => engine.terminal.list_all().await,
            false => engine.terminal.list().await,
        }
        .map_err(err)?;
        let mut tags = engine.terminal.tags().await.map_err(err)?;
        Ok(Json(ListResult {
            sessions: panes
                .iter()
                .map(|pane| {
                    let mut session = SessionSummary::from(pane);
                    if let Some(id) = &session.id {
                        session.tags = tags.remove(id).unwrap_or_default();
                    }
                    session
                })
                .collect(),
        }))
    }

    #[tool(
        description = "Open a persistent terminal session running your shell (or a command). It stays open across calls: logins, REPLs and servers keep running. Returns once the shell shows its first prompt (at most about 10 s; a notice says when its startup files took longer), or, with a command, after a moment (a notice says when the command ended at once, with its status), with the command a human uses to watch it.",
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
        let engine = self.engine().await?;
        let options = OpenOptions {
            name: args.name,
            cwd: args.cwd,
            command: args.command,
            env: args.env.into_iter().collect(),
            host: args.host,
            ..Default::default()
        };
        let opened = engine
            .terminal
            .open_up(options, args.record)
            .await
            .map_err(err)?;
        Ok(Json(OpenResult::new(engine, opened)))
    }

    #[tool(
        description = "Type text into a session, then press Enter unless enter=false. Text is typed literally; multi-line text is pasted whole and runs only on Enter. A session in a broadcast group passes it to the group unless alone=true.",
        annotations(
            title = "Send text",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn send(&self, Parameters(args): Parameters<SendArgs>) -> Result<Json<Done>, String> {
        let engine = self.engine().await?;
        let pane = engine.terminal.resolve(&args.target).await.map_err(err)?;
        let options = SendOptions {
            enter: args.enter,
            raw: args.raw,
            force: args.force,
            mark: None,
        };
        let caller = self.caller(args.owner.clone());
        let echoed = engine
            .terminal
            .send_with_group(&pane.id, &args.text, &options, &caller, args.alone)
            .await
            .map_err(err)?;
        Ok(Json(Done::echoed(&pane, echoed)))
    }

    #[tool(
        description = "Press keys in a session, e.g. [\"C-c\"] to interrupt, [\"Up\", \"Enter\"], [\"Escape\"]. Unknown key names are refused, never typed as text. A session in a broadcast group passes them to the group unless alone=true.",
        annotations(
            title = "Press keys",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn key(&self, Parameters(args): Parameters<KeyArgs>) -> Result<Json<Done>, String> {
        let engine = self.engine().await?;
        let keys = parse_keys(&args.keys).map_err(err)?;
        let pane = engine.terminal.resolve(&args.target).await.map_err(err)?;
        let caller = self.caller(args.owner.clone());
        let echoed = engine
            .terminal
            .keys_with_group(&pane.id, &keys, &caller, args.alone)
            .await
            .map_err(err)?;
        Ok(Json(Done::echoed(&pane, echoed)))
    }

    #[tool(
        description = "Run a command in a session and wait until it is done: returns its output (reduced to save tokens, with a meta line saying what was hidden and how to read it) and a verdict: complete or not, the exit status, and which layer decided (exit, mark, until, quiescence, nested, timeout, or closed when the session went away). For a REPL or any program that keeps running, pass until (its prompt); for ssh or docker exec shells, pass mark: true.",
        annotations(
            title = "Run a command",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn run(
        &self,
        Parameters(args): Parameters<RunArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<RunResult>, String> {
        let engine = self.engine().await?;
        let caller = self.caller(args.owner.clone());
        let request = RunRequest::from(args);
        let answer = with_progress(engine.terminal.run_request(&request, &caller), &ctx)
            .await?
            .map_err(err)?;
        Ok(Json(RunResult::from(answer)))
    }

    #[tool(
        description = "Read a session's output: by default what is new since your last read (reduced, with a meta line saying what was hidden and the lines= read that returns it); mode \"screen\" for what a human sees now (full-screen programs), \"tail\", \"lines\" (e.g. lines: \"21-1180\") or \"all\". With wait: true it first waits until the command last typed is done (after a run that timed out, or a send that started something long), with the same verdict as run.",
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
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<ReadResult>, String> {
        let engine = self.engine().await?;
        let request = ReadRequest::try_from(args)?;
        let answer = with_progress(
            engine.terminal.read_request(&request, &self.caller(None)),
            &ctx,
        )
        .await?
        .map_err(err)?;
        Ok(Json(ReadResult::from(answer)))
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
        let engine = self.engine().await?;
        let pane = engine.terminal.resolve(&args.target).await.map_err(err)?;
        engine.terminal.close(&pane.id).await.map_err(err)?;
        Ok(Json(Done::from(&pane)))
    }

    #[tool(
        description = "Health and state: without a target, the backend, its capabilities, the registry and the enabled toolsets; with a target, that session's live state (foreground program, exited or not, exit status, cursor, size, full-screen program, copy mode), its registry record and its lock.",
        annotations(
            title = "Status",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn status(
        &self,
        Parameters(args): Parameters<StatusArgs>,
    ) -> Result<Json<StatusResult>, String> {
        let engine = self.engine().await?;
        let server = engine.terminal.status().await.map_err(err)?;
        let mut result = StatusResult {
            backend: server.backend.name().to_string(),
            capabilities: serde_json::to_value(server.capabilities).unwrap_or_default(),
            registry: server.registry.display().to_string(),
            registry_warning: server.registry_warning,
            toolsets: self.toolsets.iter().map(|t| t.name().to_string()).collect(),
            sessions: server.sessions,
            journal_memory_kib: (server.journal_memory / 1024) as u64,
            session: None,
        };
        if let Some(target) = &args.target {
            let pane = engine.terminal.resolve(target).await.map_err(err)?;
            let cohort_terminal::status::SessionStatus {
                state,
                record,
                lock,
            } = engine
                .terminal
                .session_status(&pane.id)
                .await
                .map_err(err)?;
            result.session = Some(SessionStatus {
                name: session_name(&pane),
                pane: pane.id.to_string(),
                foreground: state.foreground_command.clone(),
                at_shell: state.at_shell(),
                exited: state.dead,
                exit_status: state.exit_status,
                cursor: [state.cursor.y, state.cursor.x],
                size: [state.size.cols, state.size.rows],
                full_screen: state.alternate_screen,
                copy_mode: state.copy_mode,
                cwd: state.cwd.clone(),
                last_command: record.as_ref().and_then(|r| r.last_command.clone()),
                tags: record.map(|r| r.tags).unwrap_or_default(),
                locked_by: lock.map(|l| l.owner),
                attach: engine.terminal.attach_text(&pane.id),
                host: cohort_backends::hosts::split(pane.id.as_str())
                    .0
                    .map(str::to_string),
                broadcast_group: engine
                    .terminal
                    .broadcast_group_of(&pane.id)
                    .await
                    .map_err(err)?
                    .map(|g| g.sessions)
                    .unwrap_or_default(),
            });
        }
        Ok(Json(result))
    }
}

/// Runs `work`, sending a progress notification every second while it waits (when
/// the client asked for progress), and giving up promptly when the client cancels.
/// Cancelling leaves the session as it was: the command keeps running.
pub(crate) async fn with_progress<T>(
    work: impl std::future::Future<Output = T>,
    ctx: &RequestContext<RoleServer>,
) -> Result<T, String> {
    with_progress_as(
        work,
        ctx,
        |secs| format!("waiting for the command: {secs:.0} s"),
        "cancelled by the client; the command keeps running in the session: read it or run again later",
    )
    .await
}

/// [`with_progress`] with its own words: `message` says where the wait stands
/// (given the seconds waited), `cancelled` what a cancelled call leaves behind.
pub(crate) async fn with_progress_as<T>(
    work: impl std::future::Future<Output = T>,
    ctx: &RequestContext<RoleServer>,
    message: impl Fn(f64) -> String,
    cancelled: &str,
) -> Result<T, String> {
    let token = ctx.meta.get_progress_token();
    let start = tokio::time::Instant::now();
    let mut ticker =
        tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    tokio::pin!(work);
    loop {
        tokio::select! {
            out = &mut work => return Ok(out),
            _ = ctx.ct.cancelled() => return Err(cancelled.to_string()),
            _ = ticker.tick() => {
                if let Some(token) = &token {
                    let secs = start.elapsed().as_secs_f64();
                    let _ = ctx
                        .peer
                        .notify_progress(
                            ProgressNotificationParam::new(token.clone(), secs.floor())
                                .with_message(message(secs)),
                        )
                        .await;
                }
            }
        }
    }
}
