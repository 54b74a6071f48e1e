//! Messages to workers, and waiting for them.
//!
//! A message to a worker that is busy (or waiting for an approval, or has a human's
//! draft in its composer) is held in the registry and delivered by a background task
//! as soon as the worker is idle — never typed over its work — unless it is sent
//! with [`When::Now`], when the agent queues it itself. Waits ([`Workers::wait_workers`])
//! wake on the agents' hooks (through the wake socket), on their panes' output, and
//! when a bound of the state machine runs out; they never poll on a fixed interval.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::future::{join_all, select_all};

use crate::registry::WorkerTables;
use crate::Workers;
use crate::{
    error::WorkerError,
    events::now_ms,
    observe::Observation,
    registry::{HeldStatus, WorkerRow},
    state::WorkerState,
    submit::Submitted,
};

/// When a message goes in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum When {
    /// When the worker is idle: held until then (the default).
    #[default]
    Idle,
    /// At once, even while it works (the agent queues it).
    Now,
}

/// What to wait for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WaitMode {
    /// Nothing: return at once.
    #[default]
    None,
    /// Until one worker is done.
    Any,
    /// Until every worker is done.
    All,
}

impl WaitMode {
    /// `none`, `any` or `all`.
    pub fn parse(text: &str) -> Result<WaitMode, String> {
        match text.trim() {
            "" | "none" => Ok(WaitMode::None),
            "any" => Ok(WaitMode::Any),
            "all" => Ok(WaitMode::All),
            other => Err(format!("unknown wait mode {other:?}: use none, any or all")),
        }
    }
}

/// What became of one message sent to a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageStatus {
    /// Submitted to the agent now.
    Submitted,
    /// Held until the worker is idle.
    Held,
    /// Neither: the outcome's note says why.
    Failed,
}

impl MessageStatus {
    /// The name used in results.
    pub fn name(self) -> &'static str {
        match self {
            MessageStatus::Submitted => "submitted",
            MessageStatus::Held => "held",
            MessageStatus::Failed => "failed",
        }
    }
}

/// What became of one message.
#[derive(Clone, Debug)]
pub struct MessageOutcome {
    /// The worker.
    pub worker: String,
    /// What became of it.
    pub status: MessageStatus,
    /// The submission, when it went in.
    pub submitted: Option<Submitted>,
    /// The held message's id, when it waits.
    pub held: Option<i64>,
    /// Why it failed, or why it was held.
    pub note: Option<String>,
}

/// What a wait is for, per worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Done when settled.
    Settled,
    /// Done when the turn a prompt submitted at this time (Unix ms) began has ended.
    Prompt(i64),
    /// Done when this held message was delivered and its turn ended.
    Held(i64),
}

/// One worker at the end of a wait.
#[derive(Clone, Debug)]
pub struct WaitEntry {
    /// The worker.
    pub name: String,
    /// Its state as last observed.
    pub observation: Observation,
    /// Whether it got where the wait wanted it.
    pub done: bool,
    /// Messages still held for it.
    pub pending: usize,
}

/// The outcome of a wait.
#[derive(Clone, Debug)]
pub struct WaitReport {
    /// Each worker.
    pub workers: Vec<WaitEntry>,
    /// The timeout ran out first.
    pub timed_out: bool,
    /// How long it waited (ms).
    pub waited_ms: i64,
}

/// The rest between looks prompted by output alone (a busy TUI redraws all the time).
const OUTPUT_REST: Duration = Duration::from_millis(250);

impl Workers {
    /// Sends `text` to each worker of `targets` (a text per worker): submitted now when
    /// the worker takes prompts (or `when` is `Now`), else held until it is idle.
    pub async fn message_workers(
        &self,
        targets: Vec<(WorkerRow, String)>,
        when: When,
        command: bool,
    ) -> Vec<MessageOutcome> {
        let sends = targets
            .into_iter()
            .map(|(row, text)| async move { self.message_one(row, text, when, command).await });
        join_all(sends).await
    }

    async fn message_one(
        &self,
        row: WorkerRow,
        text: String,
        when: When,
        command: bool,
    ) -> MessageOutcome {
        let mut out = MessageOutcome {
            worker: row.name.clone(),
            status: MessageStatus::Failed,
            submitted: None,
            held: None,
            note: None,
        };
        if let Err(e) = crate::submit::prepare(&text, command) {
            out.note = Some(e);
            return out;
        }
        let pending = {
            let id = row.id.clone();
            self.terminal
                .db(move |r| r.pending_messages(&id))
                .await
                .map(|p| p.len())
                .unwrap_or(0)
        };
        if when == When::Idle {
            let seen = match self.observe(&row, true).await {
                Ok(s) => s,
                Err(e) => {
                    out.note = Some(e.to_string());
                    return out;
                }
            };
            let state = seen.assessment.state;
            if state == WorkerState::Exited {
                out.note = Some(format!(
                    "its agent is not running ({})",
                    seen.assessment.reason
                ));
                return out;
            }
            let draft = seen.screen.as_ref().and_then(|s| s.draft()).is_some();
            if !state.takes_prompts() || draft || pending > 0 {
                let why = if draft {
                    "a draft is in its composer".to_string()
                } else if pending > 0 {
                    format!("{pending} earlier message(s) go first")
                } else {
                    format!("it is {state} ({})", seen.assessment.reason)
                };
                return self.hold(row, &text, command, why).await;
            }
        }
        match self
            .submit_prompt(&row, &text, command, when == When::Now)
            .await
        {
            Ok(s) => {
                out.status = MessageStatus::Submitted;
                out.note = s.warning.clone();
                out.submitted = Some(s);
            }
            // It got busy, or a draft appeared, between the look and the paste.
            Err(WorkerError::Draft { .. }) if when == When::Idle => {
                return self
                    .hold(row, &text, command, "a draft is in its composer".into())
                    .await
            }
            Err(e) => out.note = Some(e.to_string()),
        }
        out
    }

    async fn hold(&self, row: WorkerRow, text: &str, command: bool, why: String) -> MessageOutcome {
        let (id, t) = (row.id.clone(), text.to_string());
        match self
            .terminal
            .db(move |r| r.hold_message(&id, &t, command))
            .await
        {
            Ok(held) => {
                self.ensure_delivery(&row.id);
                MessageOutcome {
                    worker: row.name,
                    status: MessageStatus::Held,
                    submitted: None,
                    held: Some(held),
                    note: Some(format!("held until it is idle: {why}")),
                }
            }
            Err(e) => MessageOutcome {
                worker: row.name,
                status: MessageStatus::Failed,
                submitted: None,
                held: None,
                note: Some(e.to_string()),
            },
        }
    }

    /// Starts the task delivering worker `id`'s held messages, unless it runs.
    pub(crate) fn ensure_delivery(&self, id: &str) {
        let fresh = self
            .hub
            .pumps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string());
        if !fresh {
            return;
        }
        let (engine, id) = (self.clone(), id.to_string());
        tokio::spawn(async move {
            engine.deliver_held(&id).await;
            engine
                .hub
                .pumps
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            // A message held while this task was finishing gets a new one.
            let left = {
                let id = id.clone();
                engine
                    .terminal
                    .db(move |r| r.pending_messages(&id))
                    .await
                    .map(|p| p.iter().any(|m| m.status == HeldStatus::Held))
                    .unwrap_or(false)
            };
            let exists = {
                let id = id.clone();
                engine
                    .terminal
                    .db(move |r| r.worker(&id))
                    .await
                    .ok()
                    .flatten()
                    .is_some()
            };
            if left && exists {
                engine.ensure_delivery(&id);
            }
        });
    }

    /// Delivers worker `id`'s held messages one by one, each when the worker is idle.
    async fn deliver_held(&self, id: &str) {
        loop {
            let Ok(Some(row)) = ({
                let id = id.to_string();
                self.terminal.db(move |r| r.worker(&id)).await
            }) else {
                return;
            };
            let held = {
                let id = id.to_string();
                self.terminal
                    .db(move |r| r.pending_messages(&id))
                    .await
                    .unwrap_or_default()
            };
            if !held.iter().any(|m| m.status == HeldStatus::Held) {
                return;
            }
            // Wait until it takes prompts (no timeout: it is held until then).
            let seen = match self
                .wait_until(&row, |o| {
                    o.assessment.state == WorkerState::Exited
                        || (o.assessment.state.takes_prompts()
                            && o.screen.as_ref().and_then(|s| s.draft()).is_none())
                })
                .await
            {
                Ok(seen) => seen,
                Err(_) => return,
            };
            if seen.assessment.state == WorkerState::Exited {
                for m in held.iter().filter(|m| m.status == HeldStatus::Held) {
                    let (mid, why) = (
                        m.id,
                        format!("the worker exited ({})", seen.assessment.reason),
                    );
                    let _ = self
                        .terminal
                        .db(move |r| r.finish_message(mid, None, Some(&why)))
                        .await;
                }
                self.hub.poke();
                return;
            }
            let taker = self.hub.tag.clone();
            let Ok(Some(message)) = ({
                let id = id.to_string();
                self.terminal
                    .db(move |r| r.take_held_message(&id, &taker))
                    .await
            }) else {
                return;
            };
            let row = {
                let id = id.to_string();
                self.terminal
                    .db(move |r| r.worker(&id))
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or(row)
            };
            match self
                .submit_prompt(&row, &message.text, message.command, false)
                .await
            {
                Ok(s) => {
                    let _ = self
                        .terminal
                        .db(move |r| r.finish_message(message.id, Some(s.at_ms), None))
                        .await;
                }
                Err(WorkerError::Draft { .. }) | Err(WorkerError::NotSubmitted { .. })
                    if self.still_running(&row).await =>
                {
                    // It got busy (or someone started typing) first: back in the queue.
                    let id = id.to_string();
                    let _ = self.terminal.db(move |r| r.requeue_messages(&id)).await;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => {
                    let why = e.to_string();
                    let _ = self
                        .terminal
                        .db(move |r| r.finish_message(message.id, None, Some(&why)))
                        .await;
                }
            }
            self.hub.poke();
        }
    }

    async fn still_running(&self, row: &WorkerRow) -> bool {
        self.observe(row, false)
            .await
            .is_ok_and(|o| o.assessment.state != WorkerState::Exited)
    }

    /// Observes `row` until `done` holds (no limit), waking on hooks, output and bounds.
    async fn wait_until(
        &self,
        row: &WorkerRow,
        done: impl Fn(&Observation) -> bool + Sync,
    ) -> Result<Observation, WorkerError> {
        let report = self
            .wait_rows(
                std::slice::from_ref(row),
                WaitMode::All,
                None,
                &HashMap::new(),
                &|_| {},
                Some(&done),
            )
            .await?;
        report
            .workers
            .into_iter()
            .next()
            .map(|w| w.observation)
            .ok_or_else(|| WorkerError::Invalid("the worker vanished".into()))
    }

    /// Waits until one (`Any`) or every (`All`) worker is done: settled (idle, ready,
    /// needs approval, stuck, exited) and, where `after` says so, past the turn of
    /// the message sent to it. `progress` is called with a one-line status while it
    /// waits. Gives up after `timeout` with `timed_out` set.
    pub async fn wait_workers(
        &self,
        rows: &[WorkerRow],
        mode: WaitMode,
        timeout: Duration,
        after: &HashMap<String, After>,
        progress: &(dyn Fn(String) + Sync),
    ) -> Result<WaitReport, WorkerError> {
        self.wait_rows(rows, mode, Some(timeout), after, progress, None)
            .await
    }

    async fn wait_rows(
        &self,
        rows: &[WorkerRow],
        mode: WaitMode,
        timeout: Option<Duration>,
        after: &HashMap<String, After>,
        progress: &(dyn Fn(String) + Sync),
        custom: Option<&(dyn Fn(&Observation) -> bool + Sync)>,
    ) -> Result<WaitReport, WorkerError> {
        let start = now_ms();
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut wakes = self.hub.wakes();
        let mut last_progress = start;
        loop {
            wakes.borrow_and_update();
            let mut entries = Vec::new();
            let mut outputs = Vec::new();
            let mut recheck: Option<i64> = None;
            for row in rows {
                // The row again: a held message's delivery and the prompt time change it.
                let fresh = {
                    let id = row.id.clone();
                    self.terminal
                        .db(move |r| r.worker(&id))
                        .await?
                        .unwrap_or_else(|| row.clone())
                };
                let seen = self.observe(&fresh, false).await?;
                if let Some(p) = &seen.pane {
                    outputs.push(self.terminal.pane_runtime(&p.id).watch());
                }
                if let Some(r) = seen.assessment.recheck_ms {
                    recheck = Some(recheck.map_or(r, |c: i64| c.min(r)));
                }
                let (done, pending) = match custom {
                    Some(f) => (f(&seen), 0),
                    None => {
                        self.done_for(
                            &fresh,
                            &seen,
                            after.get(&row.id).copied().unwrap_or(After::Settled),
                        )
                        .await?
                    }
                };
                entries.push(WaitEntry {
                    name: fresh.name.clone(),
                    observation: seen,
                    done,
                    pending,
                });
            }
            let finished = match mode {
                WaitMode::None => true,
                WaitMode::Any => entries.iter().any(|e| e.done),
                WaitMode::All => entries.iter().all(|e| e.done),
            };
            let now = tokio::time::Instant::now();
            let timed_out = deadline.is_some_and(|d| now >= d);
            if finished || timed_out || entries.is_empty() {
                return Ok(WaitReport {
                    workers: entries,
                    timed_out: timed_out && !finished,
                    waited_ms: now_ms() - start,
                });
            }
            if now_ms() - last_progress >= 1000 {
                last_progress = now_ms();
                progress(status_line(&entries, now_ms() - start));
            }
            let mut sleep_for =
                Duration::from_millis(recheck.unwrap_or(1000).clamp(5, 1000) as u64);
            if let Some(d) = deadline {
                sleep_for = sleep_for.min(d.saturating_duration_since(now));
            }
            let output_changed = async {
                if outputs.is_empty() {
                    std::future::pending::<()>().await;
                }
                let _ = select_all(outputs.iter_mut().map(|o| Box::pin(o.changed()))).await;
                // Output alone: a short rest, so a redrawing spinner is not re-read
                // at its frame rate (a hook's wake still ends the rest).
                tokio::time::sleep(OUTPUT_REST).await;
            };
            tokio::select! {
                _ = wakes.changed() => {}
                _ = output_changed => {}
                _ = tokio::time::sleep(sleep_for) => {}
            }
        }
    }

    /// Whether a worker is where a wait wants it, and how many messages it has held.
    async fn done_for(
        &self,
        row: &WorkerRow,
        seen: &Observation,
        after: After,
    ) -> Result<(bool, usize), WorkerError> {
        let a = &seen.assessment;
        let pending = {
            let id = row.id.clone();
            self.terminal
                .db(move |r| r.pending_messages(&id))
                .await?
                .len()
        };
        if a.state == WorkerState::Exited {
            return Ok((true, pending));
        }
        let past = |at: i64| {
            a.state.settled() && (a.since_ms >= at || seen.turn_ended_ms.is_some_and(|t| t >= at))
        };
        let done = match after {
            After::Settled => a.state.settled() && pending == 0,
            After::Prompt(at) => past(at),
            After::Held(message) => match self.terminal.db(move |r| r.message(message)).await? {
                Some(m) if m.status == HeldStatus::Failed => true,
                Some(m) => m.sent_ms.is_some_and(past),
                None => a.state.settled(),
            },
        };
        Ok((done, pending))
    }
}

/// `2/4 done: Groucho idle, Harpo busy (working (Bash))`.
fn status_line(entries: &[WaitEntry], waited_ms: i64) -> String {
    let done = entries.iter().filter(|e| e.done).count();
    let parts: Vec<String> = entries
        .iter()
        .map(|e| format!("{} {}", e.name, e.observation.assessment.state))
        .collect();
    format!(
        "{done}/{} done after {} s: {}",
        entries.len(),
        waited_ms / 1000,
        parts.join(", ")
    )
}
