//! The *workers* toolset: agent CLIs as workers in panes, each in its own worktree.
//! Tool and argument names follow the most-used peer (`spawn_workers`,
//! `message_workers`, `wait_idle_workers`, `session_ids`, `wait_mode`…), so a
//! manager prompt written for it works here.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::layout::TreeArg;
use super::reply::{output_with_meta, Json, Plain};
use super::CohortServer;
use crate::engine::Engine;
use cohort_workers::{
    budget::Budget,
    events::now_ms,
    inspect::WorkerView,
    messages::{After, WaitMode, WaitReport, When},
    registry::WorkerRow,
    spawn::{SpawnLayout, SpawnRequest, WorkerSpec},
    transcript::usage::Usage,
    AgentKind, LaunchSpec, Observation, WorkerError, WorkerState,
};

mod types;

use types::*;

/// A dollar limit must be a positive amount.
fn check_usd(field: &str, usd: Option<f64>) -> Result<(), String> {
    match usd {
        Some(usd) if !(usd.is_finite() && usd > 0.0) => Err(format!(
            "{field} must be a positive amount of US dollars, such as 5 or 0.5 (null or left out: no limit in dollars)"
        )),
        _ => Ok(()),
    }
}

fn e(e: WorkerError) -> String {
    e.to_string()
}

fn seconds(timeout: Option<f64>) -> Duration {
    Duration::from_secs_f64(timeout.unwrap_or(600.0).clamp(0.0, 86_400.0))
}

/// Runs `work`, sending the latest `status` as a progress notification each second
/// (when the client asked for progress); gives up when the client cancels.
async fn with_status<T>(
    work: impl std::future::Future<Output = T>,
    status: Arc<Mutex<String>>,
    ctx: &RequestContext<RoleServer>,
) -> Result<T, String> {
    super::core::with_progress_as(
        work,
        ctx,
        |_| status.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        "cancelled by the client; the workers go on: check them with check_idle_workers",
    )
    .await
}

/// Waits on `rows` with progress.
async fn wait(
    engine: &Engine,
    rows: &[WorkerRow],
    mode: WaitMode,
    timeout: Duration,
    after: &HashMap<String, After>,
    ctx: &RequestContext<RoleServer>,
) -> Result<IdleResult, String> {
    let status = Arc::new(Mutex::new("waiting for workers".to_string()));
    let sink = status.clone();
    let progress = move |line: String| *sink.lock().unwrap_or_else(|e| e.into_inner()) = line;
    let report = with_status(
        engine
            .workers
            .wait_workers(rows, mode, timeout, after, &progress),
        status,
        ctx,
    )
    .await?
    .map_err(e)?;
    Ok(IdleResult::from_report(&report, rows))
}

#[tool_router(router = workers_router, vis = "pub(crate)")]
impl CohortServer {
    #[tool(
        description = "Start 1-16 agent CLI workers (claude, codex, gemini, aider, custom) in panes, each in its own git worktree and branch, and submit their first prompts. Returns each worker's name, branch, worktree and state.",
        annotations(
            title = "Spawn workers",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn spawn_workers(
        &self,
        Parameters(args): Parameters<SpawnWorkersArgs>,
    ) -> Result<Json<SpawnWorkersResult>, String> {
        let engine = self.engine().await?;
        let layout = match (args.layout.as_deref(), args.tree) {
            (_, Some(tree)) => SpawnLayout::Tree(tree.into()),
            (None | Some("tiled" | "auto" | "new"), None) => SpawnLayout::Tiled,
            (Some("windows" | "window"), None) => SpawnLayout::Windows,
            (Some("split"), None) => SpawnLayout::Split {
                target: args
                    .target
                    .clone()
                    .ok_or("layout split needs target: the session to split")?,
                direction: cohort_backends::SplitDirection::Horizontal,
            },
            (Some(other), None) => {
                return Err(format!(
                "unknown layout {other:?}: use tiled, windows, split (with target), or give tree"
            ))
            }
        };
        let mut badges = Vec::new();
        let mut budgets = Vec::new();
        let mut workers = Vec::new();
        for w in args.workers {
            let agent = AgentKind::parse(w.agent.as_deref().unwrap_or("claude"))?;
            if w.budget_tokens == Some(0) {
                return Err("budget_tokens must be above 0 (leave it out for no budget)".into());
            }
            check_usd("budget_usd", w.budget_usd)?;
            if (w.budget_tokens.is_some() || w.budget_usd.is_some()) && !agent.counts_tokens() {
                return Err(format!(
                    "a budget needs a CLI whose transcript counts its tokens (claude, codex); {} writes none cohort reads",
                    agent.name()
                ));
            }
            badges.push(w.badge.clone());
            budgets.push(Budget::of(
                w.budget_tokens,
                w.budget_usd,
                w.budget_interrupt,
            ));
            let tree = w.worktree.clone().unwrap_or_default();
            workers.push(WorkerSpec {
                name: w.name,
                launch: LaunchSpec {
                    agent,
                    command: w.command,
                    model: w.model,
                    flags: w.flags,
                    env: w.env,
                    skip_permissions: w.skip_permissions,
                    host: args.host.clone(),
                    ..LaunchSpec::default()
                },
                prompt: w.prompt,
                project: w.project_path,
                worktree: w.use_worktree.or(w.worktree.as_ref().map(|_| true)),
                branch: tree.branch,
                base: tree.base,
                include: w.include,
                setup: w.setup,
                team: w.team,
                role: w.role,
            });
        }
        let request = SpawnRequest {
            workers,
            layout,
            window: args.window,
            names: args.names,
            branch_pattern: args
                .branch_pattern
                .unwrap_or_else(|| "cohort/{name}".into()),
            ..SpawnRequest::default()
        };
        let spawned = engine.workers.spawn_workers(request).await.map_err(e)?;
        let none_up = spawned.iter().all(|s| !s.up);
        let mut results = Vec::new();
        for ((s, badge), budget) in spawned.into_iter().zip(badges).zip(budgets) {
            let mut worker = WorkerOut {
                name: s.name.clone(),
                state: "exited".into(),
                ..WorkerOut::default()
            };
            if let Some(row) = &s.row {
                if budget.is_some() {
                    if let Err(err) = engine.workers.set_budget(row, budget).await {
                        tracing::warn!(target: "cohort::mcp", "{err}");
                    }
                }
                if let Some(badge) = badge.filter(|b| !b.trim().is_empty()) {
                    let _ = engine
                        .workers
                        .annotate_worker(row, &format!("badge: {badge}"), None)
                        .await;
                }
                if let Ok(o) = engine.workers.observe(row, false).await {
                    worker = out(row, &o, true);
                }
            }
            results.push(SpawnedOut {
                worker,
                attach: s.pane.as_ref().map(|p| engine.terminal.attach_text(&p.id)),
                prompt: s
                    .prompt
                    .map(|p| format!("submitted ({}, {} Enter)", p.proof, p.enters)),
                copied: s.copied,
                setup: s.setup_tail,
                error: s.error,
            });
        }
        if !results.is_empty() && none_up {
            // Not one worker is up: that is a failure, whatever was left behind.
            let why: Vec<String> = results
                .iter()
                .map(|r| {
                    let left = if r.attach.is_some() {
                        " (its pane is left open: read its screen, or close it with close_workers)"
                    } else {
                        ""
                    };
                    format!(
                        "{}: {}{left}",
                        r.worker.name,
                        r.error.as_deref().unwrap_or_default()
                    )
                })
                .collect();
            return Err(format!("no worker came up. {}", why.join("; ")));
        }
        Ok(Json(SpawnWorkersResult { workers: results }))
    }

    #[tool(
        description = "List workers with their state and why (compact; verbose: true for everything).",
        annotations(
            title = "List workers",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_workers(
        &self,
        Parameters(args): Parameters<ListWorkersArgs>,
    ) -> Result<Json<WorkersResult>, String> {
        let wanted = match args.state.as_deref() {
            Some(name) => Some(WorkerState::parse(name).ok_or_else(|| {
                format!(
                    "unknown state {:?}: use spawning, ready, busy, idle, needs_approval, stuck or exited",
                    name.chars().take(40).collect::<String>()
                )
            })?),
            None => None,
        };
        let engine = self.engine().await?;
        let views = engine.workers.list_workers().await.map_err(e)?;
        let listed: Vec<WorkerView> = views
            .into_iter()
            .filter(|v| wanted.is_none_or(|s| v.observation.assessment.state == s))
            .collect();
        Ok(Json(WorkersResult {
            workers: listed.iter().map(|v| view_out(v, args.verbose)).collect(),
            spent_by_team: spent_by_team(&listed, |team, spent: &Usage| {
                engine.workers.team_budget_of(team, spent)
            }),
        }))
    }

    #[tool(
        description = "One worker in detail: state with reason and since when, current tool call, last activity, worktree and branch, git diff --stat against its base, its last turn, notes.",
        annotations(
            title = "Examine a worker",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn examine_worker(
        &self,
        Parameters(args): Parameters<WorkerArg>,
    ) -> Result<Json<ExamineResult>, String> {
        let engine = self.engine().await?;
        let row = engine
            .workers
            .worker_row(&args.session_id)
            .await
            .map_err(e)?;
        let x = engine.workers.examine_worker(&row).await.map_err(e)?;
        let o = &x.view.observation;
        Ok(Json(ExamineResult {
            worker: view_out(&x.view, true),
            last_activity_s: o.last_activity_ms.map(|t| ((now_ms() - t).max(0)) / 1000),
            current_tool: o.hook.tool.clone(),
            diff_stat: x.diff_stat,
            commits: x.commits,
            dirty_files: x.dirty_files,
            last_turn: x.last_turn,
            usage: o.usage.as_ref().map(UsageOut::from),
            screen: x.screen_tail,
            attach: x.attach,
            explain: x.explanation,
            budget: engine.workers.budget_line(&row).await,
        }))
    }

    #[tool(
        description = "Keep a note on a worker (shown by examine_worker and list_workers verbose).",
        annotations(
            title = "Annotate a worker",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn annotate_worker(
        &self,
        Parameters(args): Parameters<AnnotateArgs>,
    ) -> Result<Json<WorkersResult>, String> {
        let engine = self.engine().await?;
        let row = engine
            .workers
            .worker_row(&args.session_id)
            .await
            .map_err(e)?;
        engine
            .workers
            .annotate_worker(&row, &args.annotation, args.author.as_deref())
            .await
            .map_err(e)?;
        let view = engine.workers.view_worker(&row).await.map_err(e)?;
        Ok(Json(WorkersResult {
            workers: vec![view_out(&view, true)],
            spent_by_team: Vec::new(),
        }))
    }

    #[tool(
        description = "Set, change or remove a budget in tokens, dollars or both (the first reached counts), for named workers each or for a team's workers between them (tokens as their transcripts count them, dollars as the CLI states its cost or the price table prices it; claude and codex). Reaching it notifies everyone once; with interrupt, turns worked on past it are interrupted. A budget set again starts over.",
        annotations(
            title = "Budget workers",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn budget_workers(
        &self,
        Parameters(args): Parameters<BudgetArgs>,
    ) -> Result<Json<BudgetResult>, String> {
        if args.tokens == Some(0) {
            return Err("tokens must be above 0 (null, with no usd, removes the budget)".into());
        }
        check_usd("usd", args.usd)?;
        let budget = Budget::of(args.tokens, args.usd, args.interrupt);
        let engine = self.engine().await?;
        match (args.session_ids.is_empty(), &args.team) {
            (true, None) => {
                return Err("name the workers (session_ids) or a team whose workers share the budget".into())
            }
            (false, Some(_)) => {
                return Err("name the workers (session_ids) or a team, not both: a team's budget is shared by its workers, a worker's is its own".into())
            }
            _ => {}
        }
        let mut rows = Vec::new();
        for name in &args.session_ids {
            let row = engine.workers.worker_row(name).await.map_err(e)?;
            if budget.is_some() && !row.agent.counts_tokens() {
                return Err(format!(
                    "{name} is a {} worker, whose transcript counts no tokens cohort reads; budgets work for claude and codex",
                    row.agent.name()
                ));
            }
            rows.push(row);
        }
        let mut workers = Vec::new();
        for row in &rows {
            engine
                .workers
                .set_budget(row, budget.clone())
                .await
                .map_err(e)?;
            workers.push(BudgetOut {
                name: row.name.clone(),
                budget: engine.workers.budget_line(row).await,
            });
        }
        let team = match &args.team {
            Some(team) => {
                cohort_terminal::names::check(cohort_terminal::names::NameKind::Team, team)
                    .map_err(|err| err.to_string())?;
                engine
                    .workers
                    .set_team_budget(team, budget.clone())
                    .map_err(e)?;
                let all = engine.workers.worker_rows().await.map_err(e)?;
                Some(BudgetOut {
                    name: team.clone(),
                    budget: engine.workers.team_budget_line(team, &all).await,
                })
            }
            None => None,
        };
        Ok(Json(BudgetResult { workers, team }))
    }

    #[tool(
        description = "Send a message to workers (one text, or one per worker), verified as submitted; held while a worker is busy unless when: \"now\". wait_mode any/all waits until their turns end.",
        annotations(
            title = "Message workers",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn message_workers(
        &self,
        Parameters(args): Parameters<MessageArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<MessageResult>, String> {
        let engine = self.engine().await?;
        let when = match args.when.as_deref() {
            None | Some("idle") => When::Idle,
            Some("now") => When::Now,
            Some(other) => return Err(format!("unknown when {other:?}: use idle or now")),
        };
        let mode = WaitMode::parse(args.wait_mode.as_deref().unwrap_or("none"))?;
        let mut names = args.session_ids.clone();
        names.extend(
            args.messages
                .keys()
                .filter(|k| !args.session_ids.contains(k))
                .cloned(),
        );
        let rows = engine
            .workers
            .worker_rows_named(&names, false)
            .await
            .map_err(e)?;
        let mut targets = Vec::new();
        for row in &rows {
            let text = args
                .messages
                .get(&row.name)
                .or(args.message.as_ref())
                .ok_or_else(|| {
                    format!(
                        "no message for {}: give message, or messages with its name",
                        row.name
                    )
                })?;
            targets.push((row.clone(), text.clone()));
        }
        let outcomes = engine
            .workers
            .message_workers(targets, when, args.command)
            .await;
        let mut after = HashMap::new();
        for (row, o) in rows.iter().zip(&outcomes) {
            match (&o.submitted, o.held) {
                (Some(s), _) => after.insert(row.id.clone(), After::Prompt(s.at_ms)),
                (None, Some(id)) => after.insert(row.id.clone(), After::Held(id)),
                _ => None,
            };
        }
        let results = outcomes
            .into_iter()
            .map(|o| MessageOut {
                worker: o.worker,
                status: o.status.name().into(),
                proof: o.submitted.as_ref().map(|s| s.proof.to_string()),
                enters: o.submitted.as_ref().map(|s| s.enters),
                note: o.note,
            })
            .collect();
        let wait = match mode {
            WaitMode::None => None,
            _ => Some(wait(engine, &rows, mode, seconds(args.timeout), &after, &ctx).await?),
        };
        Ok(Json(MessageResult { results, wait }))
    }

    #[tool(
        description = "The current state of workers: who is idle, needs approval, is stuck, exited or busy.",
        annotations(
            title = "Check idle workers",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn check_idle_workers(
        &self,
        Parameters(args): Parameters<WorkersArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<IdleResult>, String> {
        let engine = self.engine().await?;
        let rows = engine
            .workers
            .worker_rows_named(&args.session_ids, true)
            .await
            .map_err(e)?;
        Ok(Json(
            wait(
                engine,
                &rows,
                WaitMode::None,
                Duration::ZERO,
                &HashMap::new(),
                &ctx,
            )
            .await?,
        ))
    }

    #[tool(
        description = "Wait until all (or any) workers are done: idle, needing approval, stuck or exited. Wakes on the agents' hooks within milliseconds; progress notifications while waiting.",
        annotations(
            title = "Wait for idle workers",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn wait_idle_workers(
        &self,
        Parameters(args): Parameters<WaitArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<IdleResult>, String> {
        let engine = self.engine().await?;
        let mode = match args.mode.as_deref().unwrap_or("all") {
            "none" => return Err("mode none does not wait: use check_idle_workers".into()),
            m => WaitMode::parse(m)?,
        };
        let rows = engine
            .workers
            .worker_rows_named(&args.session_ids, true)
            .await
            .map_err(e)?;
        Ok(Json(
            wait(
                engine,
                &rows,
                mode,
                seconds(args.timeout),
                &HashMap::new(),
                &ctx,
            )
            .await?,
        ))
    }

    #[tool(
        description = "A worker's own transcript (Claude JSONL, Codex rollout, Aider or Gemini log), paged by turn from the last: tool calls summarised, final answers whole.",
        annotations(
            title = "Read worker logs",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn read_worker_logs(
        &self,
        Parameters(args): Parameters<LogsArgs>,
    ) -> Result<Json<LogsResult>, String> {
        let engine = self.engine().await?;
        let row = engine
            .workers
            .worker_row(&args.session_id)
            .await
            .map_err(e)?;
        let page = engine
            .workers
            .read_worker_logs(&row, args.pages.unwrap_or(1), args.offset.unwrap_or(0))
            .await
            .map_err(e)?;
        Ok(Json(LogsResult {
            worker: row.name,
            output: page.text,
            meta: page.meta,
            turns: page.total,
        }))
    }

    #[tool(
        description = "Permission requests workers wait on (tool and input, the dialog's question, the screen), and answers to them: decision allow, allow_always or deny for the named workers, given by the keys of each CLI's dialog and checked on screen; policy sets rules their hooks answer by at once. Each decision is noted on the worker with who made it.",
        annotations(
            title = "Approve workers",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn approve_workers(
        &self,
        Parameters(args): Parameters<ApproveArgs>,
    ) -> Result<Json<ApproveResult>, String> {
        let decision = args
            .decision
            .as_deref()
            .map(cohort_workers::approve::Decision::parse)
            .transpose()?;
        if (decision.is_some() || args.policy.is_some()) && args.session_ids.is_empty() {
            return Err(
                "name the workers (session_ids): a decision or a policy is never given to every worker at once; call without decision to list what waits".into(),
            );
        }
        let policy = args.policy.map(|p| cohort_workers::policy::ApprovalPolicy {
            allow: p.allow,
            deny: p.deny,
            deny_after_s: p.deny_after_s,
        });
        if let Some(policy) = &policy {
            policy.validate()?;
        }
        cohort_terminal::names::check_opt(
            cohort_terminal::names::NameKind::Owner,
            args.by.as_deref(),
        )
        .map_err(|e| e.to_string())?;
        let by = self
            .restriction()
            .owner(args.by.clone())
            .unwrap_or_else(|| format!("connection {}", self.connection()));
        let engine = self.engine().await?;
        let rows = engine
            .workers
            .worker_rows_named(&args.session_ids, true)
            .await
            .map_err(e)?;
        let mut policy_set = Vec::new();
        if let Some(policy) = &policy {
            // Every worker must take the policy before any is given it.
            if let Some(row) = rows.iter().find(|r| r.agent == AgentKind::Custom) {
                return Err(format!(
                    "{} runs a custom program, whose dialogs' keys cohort does not know: no policy applies to it",
                    row.name
                ));
            }
            let has_rules = policy.has_rules();
            if let Some(row) = rows
                .iter()
                .find(|r| has_rules && !r.agent.answers_permission_hooks())
            {
                return Err(format!(
                    "{} runs {}, whose permission requests no hook of cohort's sees: allow and deny rules would never apply to it (deny_after_s does); answer its dialogs with decision",
                    row.name,
                    row.agent.name()
                ));
            }
            for row in &rows {
                engine
                    .workers
                    .set_approval_policy(row, policy, &by)
                    .await
                    .map_err(e)?;
                policy_set.push(row.name.clone());
            }
        }
        let done = engine
            .workers
            .approve(&rows, decision, &by, args.since_ms)
            .await
            .map_err(e)?;
        let now = cohort_workers::events::now_ms();
        let answered = done
            .answered
            .into_iter()
            .map(|a| AnsweredOut {
                worker: a.name,
                request: a.request,
                answered: a.answered,
                detail: a.detail,
            })
            .collect();
        let pending = done
            .pending
            .into_iter()
            .map(|p| PendingOut {
                worker: p.name,
                request: p.request,
                question: p.question,
                shows: p.shows,
                waiting_s: (now - p.since_ms).max(0) / 1000,
                since_ms: p.since_ms,
            })
            .collect();
        Ok(Json(ApproveResult {
            pending,
            answered,
            policy_set,
        }))
    }

    #[tool(
        description = "Merge workers' branches onto a new branch made from a target (default: the checked-out branch), in a scratch worktree: one after another (given order or smallest_first), a check command after each; the first conflict (files and hunks) or failing check stops it, and the new branch keeps what passed. With resolver, a conflict is handed to a new worker in the scratch worktree. The user's checkout is never touched; nothing is pushed.",
        annotations(
            title = "Merge workers' branches",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn merge_workers(
        &self,
        Parameters(args): Parameters<MergeArgs>,
    ) -> Result<Json<MergeResult>, String> {
        use cohort_workers::merge::{MergeOrder, MergeRequest, StepOutcome};
        let order = MergeOrder::parse(args.order.as_deref().unwrap_or("given"))?;
        if let Some(check) = &args.check {
            if let Err(refusal) = cohort_terminal::tripwire::check_command(check) {
                return Err(format!(
                    "the check command is refused by cohort's tripwire (rule {}: {}): give a check that does not destroy data",
                    refusal.rule, refusal.why
                ));
            }
        }
        let check_timeout = match args.check_timeout {
            Some(s) if !(s.is_finite() && s > 0.0) => {
                return Err("check_timeout must be a number of seconds above 0".into())
            }
            Some(s) => Duration::from_secs_f64(s.min(86_400.0)),
            None => Duration::from_secs(600),
        };
        let engine = self.engine().await?;
        let rows = engine
            .workers
            .worker_rows_named(&args.session_ids, false)
            .await
            .map_err(e)?;
        let report = engine
            .workers
            .merge_workers(
                &rows,
                &MergeRequest {
                    into: args.into,
                    branch: args.branch,
                    check: args.check.clone(),
                    check_timeout,
                    order,
                },
            )
            .await
            .map_err(e)?;
        let conflict_prompt = report.conflict_prompt(args.check.as_deref());
        let (mut resolver, mut resolver_error) = (None, None);
        if let (Some(spec), Some(prompt), Some(dir)) =
            (args.resolver, conflict_prompt.clone(), &report.worktree)
        {
            let spawn = SpawnWorkersArgs {
                workers: vec![spec.into_worker(dir.display().to_string(), prompt)],
                layout: None,
                tree: None,
                target: None,
                window: None,
                names: None,
                branch_pattern: None,
                host: report.host.clone(),
            };
            match self.spawn_workers(Parameters(spawn)).await {
                Ok(Json(mut spawned)) => resolver = spawned.workers.pop(),
                Err(why) => resolver_error = Some(why),
            }
        }
        let steps = report
            .steps
            .into_iter()
            .map(|s| {
                let mut out = MergeStepOut {
                    worker: s.worker,
                    branch: s.branch,
                    lines_changed: s.lines_changed,
                    uncommitted: s.uncommitted,
                    ..MergeStepOut::default()
                };
                out.outcome = match s.outcome {
                    StepOutcome::Merged(commit) => {
                        out.commit = Some(commit);
                        "merged"
                    }
                    StepOutcome::UpToDate => "up_to_date",
                    StepOutcome::Conflict { files, hunks } => {
                        out.conflicts = files;
                        out.hunks = Some(hunks);
                        "conflict"
                    }
                    StepOutcome::CheckFailed { status, tail } => {
                        out.check_status = status;
                        out.check_output = Some(tail);
                        "check_failed"
                    }
                    StepOutcome::Failed(why) => {
                        out.error = Some(why);
                        "failed"
                    }
                    StepOutcome::NotTried => "not_tried",
                }
                .into();
                out
            })
            .collect();
        Ok(Json(MergeResult {
            complete: report.complete,
            into: report.into,
            branch: report.branch,
            worktree: report.worktree.map(|p| p.display().to_string()),
            host: report.host,
            steps,
            resolver_prompt: resolver.as_ref().and(conflict_prompt),
            resolver,
            resolver_error,
        }))
    }

    #[tool(
        description = "What each worker changed against the commit its worktree started from: commits, diff size, untracked files, and git diff --stat.",
        annotations(
            title = "Diff workers",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn diff_workers(
        &self,
        Parameters(args): Parameters<DiffArgs>,
    ) -> Result<Json<DiffResult>, String> {
        let engine = self.engine().await?;
        let rows = engine
            .workers
            .worker_rows_named(&args.session_ids, true)
            .await
            .map_err(e)?;
        let workers = engine
            .workers
            .diff_workers(&rows)
            .await
            .into_iter()
            .map(|c| ChangesOut {
                worker: c.worker,
                branch: c.branch,
                change: c.line,
                stat: c.stat,
            })
            .collect();
        Ok(Json(DiffResult { workers }))
    }

    #[tool(
        description = "Close workers: the agent exits by its own command, then signals; worktrees are removed only with remove_worktree and only when clean unless force. Branches are kept.",
        annotations(
            title = "Close workers",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn close_workers(
        &self,
        Parameters(args): Parameters<CloseArgs>,
    ) -> Result<Json<CloseResult>, String> {
        let engine = self.engine().await?;
        let rows = engine
            .workers
            .worker_rows_named(&args.session_ids, false)
            .await
            .map_err(e)?;
        let results = engine
            .workers
            .close_workers(&rows, args.force, args.remove_worktree)
            .await
            .into_iter()
            .map(|c| ClosedOut {
                worker: c.name,
                ended: c.ended.into(),
                worktree_removed: c.worktree_removed,
                worktree: c.worktree_kept,
                branch: c.branch,
                error: c.error,
            })
            .collect();
        Ok(Json(CloseResult { results }))
    }

    #[tool(
        description = "Find workers after a crash or from another cohort process (orphaned, managed elsewhere, known only on disk) and agent CLIs running in unmanaged panes.",
        annotations(
            title = "Discover workers",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn discover_workers(
        &self,
        Parameters(_): Parameters<crate::mcp::types::NoArgs>,
    ) -> Result<Json<DiscoverResult>, String> {
        let engine = self.engine().await?;
        let found = engine.workers.discover_workers().await.map_err(e)?;
        let adoptable = found
            .iter()
            .filter(|f| !matches!(f.standing.name(), "managed" | "managed_elsewhere"))
            .count();
        let workers = found
            .into_iter()
            .map(|f| FoundOut {
                name: f.name,
                standing: f.standing.name().into(),
                agent: f.agent,
                pane: f.pane.map(|p| p.id.to_string()),
                owner_pid: f.owner_pid,
                branch: f.row.as_ref().and_then(|r| r.branch.clone()),
                cwd: f.cwd,
                transcript: f.transcript,
            })
            .collect();
        Ok(Json(DiscoverResult { workers, adoptable }))
    }

    #[tool(
        description = "Take over a worker (after a crash: restarts it with its session if its pane died) or make an agent CLI running in a pane a worker. Returns its state, transcript and worktree.",
        annotations(
            title = "Adopt a worker",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn adopt_worker(
        &self,
        Parameters(args): Parameters<AdoptArgs>,
    ) -> Result<Json<AdoptResult>, String> {
        let engine = self.engine().await?;
        let target = args
            .session_id
            .or(args.name.clone())
            .ok_or("name the worker, pane or session to adopt (discover_workers lists them)")?;
        let adopted = engine
            .workers
            .adopt_worker(&target, args.name.as_deref(), args.restart, args.force)
            .await
            .map_err(e)?;
        let mut worker = out(&adopted.row, &adopted.observation, true);
        worker.held_messages = adopted.pending;
        Ok(Json(AdoptResult {
            worker,
            restarted: adopted.restarted,
            had_exited: adopted.had_exited.clone(),
            requeued: adopted.requeued,
        }))
    }

    #[tool(
        description = "Cohort's worktrees with their worker, branch and dirty state; orphans (no live worker) flagged, and removed with remove_orphans when clean.",
        annotations(
            title = "List worktrees",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_worktrees(
        &self,
        Parameters(args): Parameters<WorktreesArgs>,
    ) -> Result<Json<WorktreesResult>, String> {
        let engine = self.engine().await?;
        let repo = args.repo_path.as_deref().map(std::path::Path::new);
        let listed = engine
            .workers
            .list_worktrees(repo, args.remove_orphans)
            .await
            .map_err(e)?;
        let worktrees = listed
            .into_iter()
            .map(|w| WorktreeOut {
                path: w.path.display().to_string(),
                branch: w.branch,
                worker: w.worker,
                dirty_files: w.dirty_files,
                orphan: w.orphan,
                removed: w.removed,
            })
            .collect();
        Ok(Json(WorktreesResult { worktrees }))
    }
}
