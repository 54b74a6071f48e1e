//! The *orchestration* toolset: playbook, wait_for, watch, unwatch, list_watches,
//! notify, agent_status. Thin: each tool checks its arguments and calls the engine.

use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::reply::Json;
use super::team::{Ack, TargetOutcome};
use super::types::*;
use super::CohortServer;
use cohort_orchestration::{
    playbook::{run::Runner, Playbook, PlaybookReport, Progress},
    waits::{wait_timeout, Condition, Met, Quorum},
    watch::{Action, Trigger, WatchEvent, WatchInfo, WatchSpec},
};
use cohort_terminal::SendOptions;

/// `playbook` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaybookArgs {
    /// The playbook: {steps: [{name, targets, command|message, wait, until, timeout_ms, continue_on_error, parallel}], layout?, cascade?, reads?, stop_on_error?}.
    #[serde(default)]
    pub playbook: Option<serde_json::Value>,
    /// Or a TOML/JSON playbook file to run (a regular file of at most 1 MiB).
    #[serde(default)]
    pub path: Option<String>,
    /// Who is typing (your agent name), checked against locks.
    #[serde(default)]
    pub owner: Option<String>,
}

/// One target's result in a step.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct StepTargetOut {
    /// The target as resolved.
    pub target: String,
    /// Its session.
    pub session: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// What happened.
    pub summary: String,
    /// The completion verdict, for commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<VerdictOut>,
    /// The command's output (its end), reduced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// One step's result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct StepOut {
    /// The step (`step 2 ("build")`).
    pub step: String,
    /// Ran, or skipped.
    pub ran: bool,
    /// Every target succeeded.
    pub ok: bool,
    /// Milliseconds.
    pub elapsed_ms: u64,
    /// Per target.
    pub results: Vec<StepTargetOut>,
}

/// `playbook` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PlaybookResult {
    /// Its name.
    pub name: Option<String>,
    /// Everything succeeded.
    pub ok: bool,
    /// One line.
    pub summary: String,
    /// Sessions the layout opened.
    pub opened: Vec<String>,
    /// Per step.
    pub steps: Vec<StepOut>,
    /// Where it stopped.
    pub stopped_at: Option<String>,
    /// It was cancelled.
    pub cancelled: bool,
    /// What the cascade sent.
    pub cascade: Vec<TargetOutcome>,
    /// Why the cascade was not sent, when the playbook has one and it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cascade_skipped: Option<String>,
    /// What the reads found.
    pub reads: Vec<TargetOutcome>,
    /// Why the layout, cascade or reads failed.
    pub error: Option<String>,
}

impl From<PlaybookReport> for PlaybookResult {
    fn from(r: PlaybookReport) -> Self {
        let summary = r.summary();
        PlaybookResult {
            name: r.name,
            ok: r.ok,
            summary,
            opened: r.opened,
            steps: r
                .steps
                .into_iter()
                .map(|s| StepOut {
                    step: s.label,
                    ran: s.ran,
                    ok: s.ok,
                    elapsed_ms: s.elapsed_ms,
                    results: s
                        .results
                        .into_iter()
                        .map(|t| StepTargetOut {
                            target: t.target,
                            session: t.session,
                            ok: t.ok,
                            summary: t.summary,
                            verdict: t.verdict.as_ref().map(VerdictOut::from),
                            output: t.output,
                        })
                        .collect(),
                })
                .collect(),
            stopped_at: r.stopped_at,
            cancelled: r.cancelled,
            cascade: r.cascade.into_iter().map(TargetOutcome::from).collect(),
            cascade_skipped: r.cascade_skipped,
            reads: r.reads.into_iter().map(TargetOutcome::from).collect(),
            error: r.error,
        }
    }
}

/// `wait_for` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitForArgs {
    /// Sessions, agents, teams or paths (team/agent).
    pub targets: Vec<String>,
    /// idle | exit | pattern | quiet.
    pub condition: String,
    /// For pattern: the text (or regex) to see in new output.
    #[serde(default)]
    pub pattern: Option<String>,
    /// pattern is a regex.
    #[serde(default)]
    pub regex: bool,
    /// Match the pattern in the echo of typed command lines too (default: only in
    /// what programs print, so a typed `echo ERROR` does not match ERROR).
    #[serde(default)]
    pub input: bool,
    /// For quiet: milliseconds without output (default 1000).
    #[serde(default)]
    pub quiet_ms: Option<u64>,
    /// any (default) or all targets.
    #[serde(default)]
    pub mode: Option<String>,
    /// Give up after this many ms (default 60000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// One target's answer.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MetOut {
    /// The target as resolved.
    pub target: String,
    /// Its session.
    pub session: String,
    /// It met the condition.
    pub met: bool,
    /// What it met, or why not.
    pub what: String,
    /// The matching line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    /// The exit status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    /// Milliseconds into the wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<u64>,
}

impl From<Met> for MetOut {
    fn from(m: Met) -> Self {
        MetOut {
            target: m.target,
            session: m.session,
            met: m.met,
            what: m.what,
            line: m.line,
            exit_status: m.exit_status,
            after_ms: m.after_ms,
        }
    }
}

/// `wait_for` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct WaitForResult {
    /// The condition held (for any or all, as asked).
    pub done: bool,
    /// Milliseconds waited.
    pub elapsed_ms: u64,
    /// Per target.
    pub results: Vec<MetOut>,
}

/// `watch` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchArgs {
    /// Session, agent, team or path to watch.
    pub target: String,
    /// Fire on lines with this text (or regex), e.g. "ERROR|Traceback".
    #[serde(default)]
    pub pattern: Option<String>,
    /// pattern is a regex.
    #[serde(default)]
    pub regex: bool,
    /// Match the pattern in the echo of typed command lines too (default: only in
    /// what programs print, so a typed `echo ERROR` does not match ERROR).
    #[serde(default)]
    pub input: bool,
    /// Or fire on: command_ended, command_failed, session_exited, needs_approval, agent_idle, agent_stuck, agent_exited, signal (a program printed `\e]1337;Custom=id=$COHORT_SIGNAL_ID:<text>\a`).
    #[serde(default)]
    pub event: Option<String>,
    /// Action: type this text into `send_to` on each hit.
    #[serde(default)]
    pub send_text: Option<String>,
    /// Where send_text goes.
    #[serde(default)]
    pub send_to: Option<String>,
    /// Action: run this playbook step ({targets, command, ...}).
    #[serde(default)]
    pub step: Option<serde_json::Value>,
    /// Action: set this appearance ({targets, title, badge, tab_color, background, cursor_color}).
    #[serde(default)]
    pub appearance: Option<WatchAppearance>,
    /// Action: raise each hit before the people watching the session (a desktop
    /// notification in their terminal, a message and a bell on tmux; iTerm2 asks for
    /// attention).
    #[serde(default)]
    pub alert: bool,
    /// Who gets the notification (default "*": everyone).
    #[serde(default)]
    pub notify: Option<String>,
    /// Lines before the hit to include (default 3, at most 20).
    #[serde(default)]
    pub context: Option<usize>,
    /// Fire once, then remove the watcher.
    #[serde(default)]
    pub once: bool,
    /// Your agent name (actions type as it).
    #[serde(default)]
    pub owner: Option<String>,
}

/// An appearance action.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchAppearance {
    /// Sessions, agents, teams.
    pub targets: Vec<String>,
    /// Title.
    #[serde(default)]
    pub title: Option<String>,
    /// Badge.
    #[serde(default)]
    pub badge: Option<String>,
    /// Tab colour #rrggbb.
    #[serde(default)]
    pub tab_color: Option<String>,
    /// Background #rrggbb.
    #[serde(default)]
    pub background: Option<String>,
    /// Cursor colour #rrggbb.
    #[serde(default)]
    pub cursor_color: Option<String>,
}

/// A watcher as shown.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct WatchOut {
    /// Its id (for unwatch).
    pub id: String,
    /// What it watches.
    pub target: String,
    /// Its trigger, in words.
    pub trigger: String,
    /// Its action, in words.
    pub action: Option<String>,
    /// Who gets its notifications.
    pub notify: String,
    /// Times it fired.
    pub hits: i64,
    /// Process running it.
    pub holder_pid: i64,
    /// This server runs it.
    pub here: bool,
}

impl From<WatchInfo> for WatchOut {
    fn from(w: WatchInfo) -> Self {
        let trigger = match &w.spec.trigger {
            Trigger::Pattern {
                pattern,
                regex,
                input,
            } => format!(
                "{} {pattern:?}{}",
                if *regex { "regex" } else { "text" },
                if *input { " (input too)" } else { "" }
            ),
            Trigger::Event { event } => serde_json::to_value(event)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
        };
        let action = w.spec.action.as_ref().map(|a| match a {
            Action::Send { target, text, .. } => format!("send {text:?} to {target}"),
            Action::Step { step } => format!("run {}", step.label(0)),
            Action::Appearance { targets, .. } => {
                format!("set the appearance of {}", targets.join(", "))
            }
            Action::Alert {} => "alert the people watching".to_string(),
        });
        WatchOut {
            id: w.spec.id,
            target: w.spec.target,
            trigger,
            action,
            notify: w.spec.notify,
            hits: w.hits,
            holder_pid: w.holder_pid,
            here: w.here,
        }
    }
}

/// `list_watches` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct WatchesResult {
    /// Every watcher.
    pub watches: Vec<WatchOut>,
}

/// `unwatch` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnwatchArgs {
    /// The watcher's id.
    pub id: String,
}

/// `notify` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotifyArgs {
    /// Who it is for: an agent, a team (each member) or "*".
    pub to: String,
    /// The message.
    pub message: String,
    /// Who it is from (your agent name).
    pub from: String,
    /// Its kind (default "info").
    #[serde(default)]
    pub kind: Option<String>,
}

/// One agent's status.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AgentStatusOut {
    /// The agent.
    pub agent: String,
    /// Its teams.
    pub teams: Vec<String>,
    /// Its state.
    pub state: String,
    /// Why.
    pub reason: String,
    /// Unix seconds since.
    pub since: Option<i64>,
    /// Last command there.
    pub last_command: Option<String>,
    /// Its exit status.
    pub last_exit: Option<i32>,
    /// Notifications not handed out.
    pub unread: i64,
}

/// `agent_status` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AgentStatusResult {
    /// One line per agent.
    pub lines: Vec<String>,
    /// The same, as fields.
    pub agents: Vec<AgentStatusOut>,
}

/// A progress update: done, total, message.
pub(super) type Update = (f64, Option<f64>, String);

/// Sends progress notifications for `messages` while `work` runs (and every
/// second, which keeps a long call alive), and gives up when the client cancels.
/// Updates sent before `work` ended still go out after it.
pub(super) async fn with_updates<T>(
    work: impl std::future::Future<Output = T>,
    mut messages: tokio::sync::mpsc::UnboundedReceiver<Update>,
    ctx: &RequestContext<RoleServer>,
    cancelled: &str,
) -> Result<T, String> {
    let token = ctx.meta.get_progress_token();
    let send = |update: Update| {
        let token = token.clone();
        async move {
            let Some(token) = token else { return };
            let mut param = ProgressNotificationParam::new(token, update.0).with_message(update.2);
            if let Some(total) = update.1 {
                param = param.with_total(total);
            }
            let _ = ctx.peer.notify_progress(param).await;
        }
    };
    let start = tokio::time::Instant::now();
    let mut ticker =
        tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    let mut last: Update = (0.0, None, String::from("waiting"));
    let mut open = true;
    tokio::pin!(work);
    loop {
        let update = tokio::select! {
            out = &mut work => {
                while let Ok(update) = messages.try_recv() {
                    send(update).await;
                }
                return Ok(out);
            }
            _ = ctx.ct.cancelled() => return Err(cancelled.to_string()),
            m = messages.recv(), if open => match m {
                Some(m) => { last = m.clone(); m }
                None => { open = false; continue }
            },
            _ = ticker.tick() => (last.0, last.1, format!("{} ({:.0} s)", last.2, start.elapsed().as_secs_f64())),
        };
        send(update).await;
    }
}

#[tool_router(router = orchestration_router, vis = "pub(crate)")]
impl CohortServer {
    #[tool(
        description = "Run a playbook: optional layout, then steps (commands/messages to targets, parallel or in turn, each waited for: exit, until, idle), optional cascade and reads. Stops at the first failing step unless told not to. Per-step, per-target results with verdicts; progress per step; cancellable.",
        annotations(
            title = "Run a playbook",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn playbook(
        &self,
        Parameters(args): Parameters<PlaybookArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<PlaybookResult>, String> {
        let book = Playbook::from_either(args.playbook, args.path.as_deref()).await?;
        self.refuse_destructive_playbook(&book)?;
        let engine = self.engine().await?;
        let runner = Runner {
            send: SendOptions::default(),
            caller: self.caller(args.owner.clone()),
        };
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let cancel = ctx.ct.child_token();
        let run = engine
            .orchestrator
            .run_playbook(&book, &runner, &cancel, move |p: Progress| {
                let _ = tx.send((p.done as f64, Some(p.total as f64), p.message));
            });
        let report = with_updates(run, rx, &ctx, "cancelled by the client").await?;
        Ok(Json(PlaybookResult::from(report)))
    }

    #[tool(
        description = "Block until a condition holds on targets: idle (agent state), exit (the running command ends), pattern (text/regex in new output), quiet (no output for quiet_ms); any or all; timeout. Says who met what, with the matching line.",
        annotations(
            title = "Wait for",
            read_only_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn wait_for(
        &self,
        Parameters(args): Parameters<WaitForArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<WaitForResult>, String> {
        let condition = Condition::parse(
            &args.condition,
            args.pattern.as_deref(),
            args.regex,
            args.input,
            args.quiet_ms,
        )
        .map_err(err)?;
        let quorum = Quorum::parse(args.mode.as_deref()).map_err(err)?;
        let timeout = wait_timeout(args.timeout_ms);
        let engine = self.engine().await?;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let wait = engine.orchestrator.wait_for(
            &args.targets,
            &condition,
            quorum,
            timeout,
            move |m, done, total| {
                let _ = tx.send((
                    done as f64,
                    Some(total as f64),
                    format!("{} met {}: {}", m.target, condition_name(m), m.what),
                ));
            },
        );
        let outcome = with_updates(
            wait,
            rx,
            &ctx,
            "cancelled by the client; nothing was changed",
        )
        .await?
        .map_err(err)?;
        Ok(Json(WaitForResult {
            done: outcome.done,
            elapsed_ms: outcome.elapsed.as_millis() as u64,
            results: outcome.results.into_iter().map(MetOut::from).collect(),
        }))
    }

    #[tool(
        description = "Watch a target for a pattern in new output or an event; each hit leaves a notification with the line and context, and can act: send_text to send_to, run a step, or set an appearance. Survives a server restart.",
        annotations(
            title = "Watch",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn watch(
        &self,
        Parameters(args): Parameters<WatchArgs>,
    ) -> Result<Json<WatchesResult>, String> {
        let trigger = match (args.pattern, args.event) {
            (Some(pattern), None) => Trigger::Pattern {
                pattern,
                regex: args.regex,
                input: args.input,
            },
            (None, Some(event)) => Trigger::Event {
                event: serde_json::from_value::<WatchEvent>(serde_json::Value::String(event.clone()))
                    .map_err(|_| format!("unknown event {event:?}: use command_ended, command_failed, session_exited, needs_approval, agent_idle, agent_stuck, agent_exited or signal"))?,
            },
            _ => return Err("give pattern (text in the output) or event, one of them".into()),
        };
        let mut actions = Vec::new();
        match (args.send_text, args.send_to) {
            (Some(text), Some(target)) => actions.push(Action::Send {
                target,
                text,
                enter: true,
            }),
            (None, None) => {}
            _ => return Err("send_text and send_to go together".into()),
        }
        if let Some(step) = args.step {
            let step = cohort_orchestration::playbook::spec::check_step(0, step)?;
            actions.push(Action::Step { step });
        }
        if let Some(a) = args.appearance {
            actions.push(Action::Appearance {
                targets: a.targets,
                look: cohort_backends::Appearance {
                    title: a.title,
                    badge: a.badge,
                    tab_color: a.tab_color,
                    background: a.background,
                    cursor_color: a.cursor_color,
                    ..Default::default()
                },
            });
        }
        if args.alert {
            actions.push(Action::Alert {});
        }
        if actions.len() > 1 {
            return Err("one action per watcher: send_text, step, appearance or alert".into());
        }
        self.refuse_watch_action(actions.first())?;
        let engine = self.engine().await?;
        let spec = engine
            .orchestrator
            .add_watch(WatchSpec {
                id: String::new(),
                target: args.target,
                trigger,
                action: actions.pop(),
                notify: args.notify.unwrap_or_else(|| "*".into()),
                context: args.context.unwrap_or(3),
                once: args.once,
                // A restricted server's watchers are its agent's (or no one's).
                owner: match &self.role {
                    Some(_) => self.agent.as_deref().map(str::to_string),
                    None => args.owner,
                },
            })
            .await
            .map_err(err)?;
        let id = spec.id.clone();
        let watches = engine.orchestrator.watches().await.map_err(err)?;
        Ok(Json(WatchesResult {
            watches: watches
                .into_iter()
                .filter(|w| w.spec.id == id)
                .map(WatchOut::from)
                .collect(),
        }))
    }

    #[tool(
        description = "Remove a watcher by its id (list_watches shows the ids).",
        annotations(
            title = "Unwatch",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn unwatch(
        &self,
        Parameters(args): Parameters<UnwatchArgs>,
    ) -> Result<Json<Ack>, String> {
        let engine = self.engine().await?;
        if self.role.is_some() {
            // A restricted server removes only the watchers its agent made.
            let me = self.agent.as_deref();
            let listed = engine.orchestrator.watches().await.map_err(err)?;
            if let Some(other) = listed
                .iter()
                .find(|w| w.spec.id == args.id && w.spec.owner.as_deref() != me)
            {
                return Err(format!(
                    "watcher {} was made by {}; this server removes only the watchers {} made",
                    args.id,
                    other
                        .spec
                        .owner
                        .as_deref()
                        .unwrap_or("a server serving no agent"),
                    me.unwrap_or("a server serving no agent"),
                ));
            }
        }
        let removed = engine
            .orchestrator
            .remove_watch(&args.id)
            .await
            .map_err(err)?;
        Ok(Json(Ack {
            message: if removed {
                format!("watcher {} removed", args.id)
            } else {
                format!(
                    "no watcher {}; nothing to do (list_watches shows them)",
                    args.id
                )
            },
        }))
    }

    #[tool(
        description = "List watchers: target, trigger, action, hits, which process runs them.",
        annotations(
            title = "List watchers",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_watches(
        &self,
        Parameters(_): Parameters<NoArgs>,
    ) -> Result<Json<WatchesResult>, String> {
        let engine = self.engine().await?;
        Ok(Json(WatchesResult {
            watches: engine
                .orchestrator
                .watches()
                .await
                .map_err(err)?
                .into_iter()
                .map(WatchOut::from)
                .collect(),
        }))
    }

    #[tool(
        description = "Leave a notification for an agent, a team (each member) or \"*\" (everyone); they read it with notifications.",
        annotations(
            title = "Notify",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn notify(&self, Parameters(args): Parameters<NotifyArgs>) -> Result<Json<Ack>, String> {
        let from = self.own_name(&args.from, "the sender")?;
        let engine = self.engine().await?;
        let left = engine
            .orchestrator
            .notify(
                &from,
                &args.to,
                args.kind.as_deref().unwrap_or("info"),
                &args.message,
            )
            .await
            .map_err(err)?;
        Ok(Json(Ack {
            message: format!("left {} notification(s) for {}", left.len(), args.to),
        }))
    }

    #[tool(
        description = "One line per agent: name, team, state and reason, since when, last command and its exit status, unread notifications.",
        annotations(
            title = "Agent status",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn agent_status(
        &self,
        Parameters(_): Parameters<NoArgs>,
    ) -> Result<Json<AgentStatusResult>, String> {
        let engine = self.engine().await?;
        let statuses = engine.orchestrator.agent_statuses().await.map_err(err)?;
        Ok(Json(AgentStatusResult {
            lines: statuses.iter().map(|s| s.line()).collect(),
            agents: statuses
                .into_iter()
                .map(|s| AgentStatusOut {
                    agent: s.agent,
                    teams: s.teams,
                    state: s.state,
                    reason: s.reason,
                    since: s.since,
                    last_command: s.last_command,
                    last_exit: s.last_exit,
                    unread: s.unread,
                })
                .collect(),
        }))
    }
}

/// The condition a met target met, for progress messages.
fn condition_name(m: &Met) -> &'static str {
    if m.line.is_some() {
        "the pattern"
    } else if m.exit_status.is_some() {
        "exit"
    } else {
        "the condition"
    }
}
