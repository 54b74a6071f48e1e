//! Running a playbook: the layout, the steps (each target waited for as the step
//! says), the cascade, the reads; stopping at the first failure unless told not
//! to; cancellable at any point.

use std::time::{Duration, Instant};

use cohort_backends::PaneInfo;
use futures_util::future::join_all;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::{Item, Playbook, PlaybookReport, Progress, Step, StepReport, StepWait, TargetResult};
use crate::Orchestrator;
use crate::{many::ManyRead, waits::IDLE_STATES};
use cohort_terminal::{
    completion::{Until, WaitSpec},
    events::{EngineEvent, EventBus},
    sessions::session_name,
    Caller, SendOptions, TerminalError,
};

/// Lines of a command's output a result keeps (its end).
const OUTPUT_LINES: usize = 40;

/// Who is running the playbook, and how its steps type.
#[derive(Clone, Debug)]
pub struct Runner {
    /// How its steps send (the tripwire's `force`, raw text).
    pub send: SendOptions,
    /// Who runs it: the owner a locked session must see, the connection its locks
    /// are bound to and whose "new output" cursor moves past what a run returned.
    pub caller: Caller,
}

impl Runner {
    /// A runner for `caller` that sends as a call does by default (no `force`, text
    /// sanitised).
    pub fn new(caller: Caller) -> Runner {
        Runner {
            send: SendOptions::default(),
            caller,
        }
    }
}

/// The last `OUTPUT_LINES` lines of `text`, saying how many went before.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= OUTPUT_LINES {
        return text.to_string();
    }
    format!(
        "[{} earlier lines not shown; read the session for them]\n{}",
        lines.len() - OUTPUT_LINES,
        lines[lines.len() - OUTPUT_LINES..].join("\n")
    )
}

/// How long a session that took a cascade's message stays quiet before it is read.
const CASCADE_QUIET: Duration = Duration::from_millis(150);
/// The longest a playbook waits for its cascade's messages to land.
const CASCADE_LANDING: Duration = Duration::from_secs(3);

impl Orchestrator {
    /// Runs `book`. `progress` hears each step start and end; `cancel` ends it at
    /// once (what was typed keeps running).
    pub async fn run_playbook(
        &self,
        book: &Playbook,
        runner: &Runner,
        cancel: &CancellationToken,
        mut progress: impl FnMut(Progress),
    ) -> PlaybookReport {
        let total = book.steps.len();
        let mut report = PlaybookReport {
            name: book.name.clone(),
            ok: true,
            ..Default::default()
        };
        if let Some(layout) = &book.layout {
            progress(Progress {
                done: 0,
                total,
                message: format!("opening the layout {:?}", layout.window),
            });
            match self.open_layout(layout).await {
                Ok(opened) => report.opened = opened,
                Err(e) => {
                    report.ok = false;
                    report.error = Some(format!("the layout: {e}"));
                    report.stopped_at = Some("the layout".into());
                }
            }
        }
        for (i, step) in book.steps.iter().enumerate() {
            let label = step.label(i);
            if report.stopped_at.is_some() || report.cancelled {
                report.steps.push(StepReport {
                    label,
                    ran: false,
                    ok: false,
                    results: Vec::new(),
                    elapsed_ms: 0,
                });
                continue;
            }
            progress(Progress {
                done: i,
                total,
                message: format!("{label}: running"),
            });
            let started = Instant::now();
            let results = tokio::select! {
                r = self.run_step(step, runner) => Some(r),
                _ = cancel.cancelled() => None,
            };
            let Some(results) = results else {
                report.cancelled = true;
                report.ok = false;
                report.stopped_at = Some(label.clone());
                report.steps.push(StepReport {
                    label,
                    ran: true,
                    ok: false,
                    results: Vec::new(),
                    elapsed_ms: started.elapsed().as_millis() as u64,
                });
                continue;
            };
            let ok = results.iter().all(|r| r.ok);
            let failed = results.iter().filter(|r| !r.ok).count();
            progress(Progress {
                done: i + 1,
                total,
                message: if ok {
                    format!("{label}: ok")
                } else {
                    format!("{label}: {failed} of {} targets failed", results.len())
                },
            });
            if !ok && !step.continue_on_error {
                report.ok = false;
                if book.stop_on_error {
                    report.stopped_at = Some(label.clone());
                }
            }
            report.steps.push(StepReport {
                label,
                ran: true,
                ok,
                results,
                elapsed_ms: started.elapsed().as_millis() as u64,
            });
        }
        let go_on = report.stopped_at.is_none() && !report.cancelled;
        if book.cascade.is_some() && !go_on {
            report.cascade_skipped = Some(match &report.stopped_at {
                Some(step) => format!("not sent: the playbook stopped at {step}, which failed"),
                None => "not sent: the playbook was cancelled".into(),
            });
        }
        if let (Some(c), true) = (&book.cascade, go_on) {
            match self
                .broadcast(
                    c.message.as_deref(),
                    &c.teams,
                    &c.agents,
                    &runner.send,
                    &runner.caller,
                )
                .await
            {
                Ok(sent) => {
                    if sent.iter().any(|d| d.error.is_some()) {
                        report.ok = false;
                    }
                    // The messages land before anything reads those sessions: a read
                    // right after would see them half typed.
                    let landed = sent.iter().filter(|d| d.error.is_none()).map(|d| async {
                        if let Ok(pane) = self.terminal.resolve(&d.session).await {
                            self.terminal
                                .settle(&pane.id, CASCADE_QUIET, CASCADE_LANDING)
                                .await;
                        }
                    });
                    join_all(landed).await;
                    report.cascade = sent;
                }
                Err(e) => {
                    report.ok = false;
                    report.error = Some(format!("the cascade: {e}"));
                }
            }
        }
        if let (Some(reads), false) = (&book.reads, report.cancelled) {
            let how = match reads.mode.as_deref() {
                Some("tail") => ManyRead::Tail,
                Some("screen") => ManyRead::Screen,
                _ => ManyRead::New,
            };
            let filter = reads
                .filter
                .as_deref()
                .and_then(|f| cohort_terminal::pattern::compile("filter", f).ok());
            match self
                .read_many(
                    &reads.targets,
                    how,
                    &runner.caller,
                    reads.limit.unwrap_or(40).clamp(1, 10_000),
                    filter.as_ref(),
                )
                .await
            {
                Ok(read) => report.reads = read,
                Err(e) => {
                    report.ok = false;
                    report.error = Some(format!("the reads: {e}"));
                }
            }
        }
        report
    }

    /// Opens a playbook's layout (team panes show their team's colour); every shell
    /// comes up before the steps type. Returns the sessions' names.
    async fn open_layout(&self, layout: &super::LayoutSpec) -> Result<Vec<String>, TerminalError> {
        let tree = layout.tree().map_err(TerminalError::InvalidArgument)?;
        let panes = self
            .terminal
            .create_layout(&layout.window, &tree, &layout.panes)
            .await?;
        let ups = panes.iter().enumerate().map(|(i, pane)| async move {
            let spec = layout.panes.get(i);
            if spec.is_none_or(|p| p.command.is_none()) {
                self.terminal.wait_shell_up(&pane.id).await;
            }
        });
        join_all(ups).await;
        Ok(panes.iter().map(session_name).collect())
    }

    /// Runs one step: every item in every target it reaches, all at once or in
    /// turn (stopping at the first failure unless the step goes on after errors).
    pub async fn run_step(&self, step: &Step, runner: &Runner) -> Vec<TargetResult> {
        let mut jobs: Vec<(&Item, String, Result<PaneInfo, TerminalError>)> = Vec::new();
        for item in &step.items {
            match self.terminal.expand_targets(&item.targets).await {
                Ok(expanded) => jobs.extend(
                    expanded
                        .into_iter()
                        .map(|(label, pane)| (item, label, pane)),
                ),
                Err(e) => jobs.push((item, item.targets.join(", "), Err(e))),
            }
        }
        if step.parallel {
            return join_all(
                jobs.into_iter()
                    .map(|(item, label, pane)| self.run_one(step, item, label, pane, runner)),
            )
            .await;
        }
        let mut results = Vec::new();
        let mut jobs = jobs.into_iter();
        for (item, label, pane) in jobs.by_ref() {
            let result = self.run_one(step, item, label, pane, runner).await;
            let failed = !result.ok;
            results.push(result);
            if failed && !step.continue_on_error {
                break;
            }
        }
        for (_, label, _) in jobs {
            results.push(TargetResult {
                target: label,
                session: String::new(),
                ok: false,
                verdict: None,
                summary: "not run: an earlier target of this step failed".into(),
                output: None,
            });
        }
        results
    }

    /// Types `item` into one target and waits for it as the step says.
    async fn run_one(
        &self,
        step: &Step,
        item: &Item,
        label: String,
        pane: Result<PaneInfo, TerminalError>,
        runner: &Runner,
    ) -> TargetResult {
        let failed = |session: String, why: String| TargetResult {
            target: label.clone(),
            session,
            ok: false,
            verdict: None,
            summary: why,
            output: None,
        };
        let pane = match pane {
            Ok(pane) => pane,
            Err(e) => return failed(String::new(), e.to_string()),
        };
        let session = session_name(&pane);
        let text = item.text();
        match step.wait_of(item) {
            StepWait::Exit => {
                let until = match step.until.as_deref().map(|u| Until::new(u, step.regex)) {
                    Some(Ok(until)) => Some(until),
                    Some(Err(e)) => return failed(session, e),
                    None => None,
                };
                let spec = WaitSpec {
                    timeout: step.timeout(),
                    until,
                    ..WaitSpec::default()
                };
                match self
                    .terminal
                    .run(&pane.id, text, &runner.send, spec, false, &runner.caller)
                    .await
                {
                    Ok(out) => {
                        let v = &out.verdict;
                        let ok = v.complete && v.exit_status.is_none_or(|s| s == 0);
                        TargetResult {
                            target: label,
                            session,
                            ok,
                            summary: v.describe(),
                            verdict: Some(out.verdict),
                            output: Some(tail(&out.output.text)),
                        }
                    }
                    Err(e) => failed(session, e.to_string()),
                }
            }
            StepWait::None => match self
                .terminal
                .send(&pane.id, text, &runner.send, &runner.caller)
                .await
            {
                Ok(_) => TargetResult {
                    target: label,
                    session,
                    ok: true,
                    verdict: None,
                    summary: "sent".into(),
                    output: None,
                },
                Err(e) => failed(session, e.to_string()),
            },
            StepWait::Idle => {
                let agent = self.agent_in(&pane).await;
                let Some(agent) = agent else {
                    // No agent there: the shell's prompt coming back is its idle.
                    return match self
                        .terminal
                        .send(&pane.id, text, &runner.send, &runner.caller)
                        .await
                    {
                        Ok(_) => match self
                            .terminal
                            .wait(
                                &pane.id,
                                WaitSpec {
                                    timeout: step.timeout(),
                                    ..WaitSpec::default()
                                },
                            )
                            .await
                        {
                            Ok(v) => TargetResult {
                                target: label,
                                session,
                                ok: v.complete && v.exit_status.is_none_or(|s| s == 0),
                                summary: format!("no agent here; {}", v.describe()),
                                verdict: Some(v),
                                output: None,
                            },
                            Err(e) => failed(session, e.to_string()),
                        },
                        Err(e) => failed(session, e.to_string()),
                    };
                };
                // Follow the stream first: the agent's next idle is after this send.
                let mut events = self.terminal.events();
                let published = self.terminal.bus().states_published();
                if let Err(e) = self
                    .terminal
                    .send(&pane.id, text, &runner.send, &runner.caller)
                    .await
                {
                    return failed(session, e.to_string());
                }
                let bus = self.terminal.bus();
                match idle_again(&mut events, bus, published, &agent, step.timeout()).await {
                    Some(reason) => TargetResult {
                        target: label,
                        session,
                        ok: true,
                        verdict: None,
                        summary: format!("{agent} idle again: {reason}"),
                        output: None,
                    },
                    None => failed(
                        session,
                        format!(
                            "{agent} was not idle again within {} ms",
                            step.timeout().as_millis()
                        ),
                    ),
                }
            }
        }
    }

    /// The agent working in `pane`, if any.
    pub async fn agent_in(&self, pane: &PaneInfo) -> Option<String> {
        if let Some(agent) = pane.identity.as_ref().and_then(|i| i.agent.clone()) {
            return Some(agent);
        }
        let session = session_name(pane);
        self.terminal
            .agents()
            .await
            .ok()?
            .into_iter()
            .find(|a| a.session.as_deref() == Some(session.as_str()))
            .map(|a| a.name)
    }
}

/// Waits for `agent`'s next idle state on `events`, published on `bus` after its
/// count of published states was `published`; its reason, or `None` on timeout.
async fn idle_again(
    events: &mut tokio::sync::broadcast::Receiver<EngineEvent>,
    bus: &EventBus,
    published: u64,
    agent: &str,
    timeout: Duration,
) -> Option<String> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Err(_) | Ok(Err(RecvError::Closed)) => return None,
            Ok(Ok(EngineEvent::AgentState {
                agent: a,
                state,
                reason,
                ..
            })) if a == agent && IDLE_STATES.contains(&state.as_str()) => {
                return Some(format!("{state}: {reason}"))
            }
            // Events were missed (output flooded the stream): the agent's last state
            // says whether it went idle since.
            Ok(Err(RecvError::Lagged(_))) => {
                if let Some(seen) = bus.agent_state(agent).filter(|seen| {
                    seen.seq > published && IDLE_STATES.contains(&seen.state.as_str())
                }) {
                    return Some(format!("{}: {}", seen.state, seen.reason));
                }
            }
            Ok(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cohort_backends::PaneId;

    /// Publishes more output than a follower's backlog holds.
    fn flood(bus: &EventBus) {
        for at in 0..10_000 {
            bus.publish(EngineEvent::Output {
                pane: PaneId::new("%1"),
                from: at,
                to: at + 1,
            });
        }
    }

    #[tokio::test]
    async fn an_idle_state_pushed_out_of_the_backlog_still_ends_the_wait() {
        let bus = EventBus::default();
        let mut events = bus.subscribe();
        let published = bus.states_published();
        bus.publish(EngineEvent::agent_state("w1", "idle", "the turn ended"));
        flood(&bus);
        let waited = idle_again(&mut events, &bus, published, "w1", Duration::from_secs(5)).await;
        assert_eq!(waited.as_deref(), Some("idle: the turn ended"));
        // An idle state from before the wait began does not end it.
        let mut events = bus.subscribe();
        let published = bus.states_published();
        flood(&bus);
        let waited = idle_again(
            &mut events,
            &bus,
            published,
            "w1",
            Duration::from_millis(200),
        )
        .await;
        assert_eq!(waited, None);
    }
}
