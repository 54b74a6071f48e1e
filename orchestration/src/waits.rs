//! Blocking waits on many targets: until an agent is idle, the command running
//! there ends, a pattern appears in new output, or output stops; for any target or
//! for all of them.
//!
//! Everything is decided on the event stream (the terminal's `events`): output events
//! feed the pattern and quiet checks, prompt marks and exits the command checks,
//! agent-state events the idle check. The only timers are the caller's timeout and
//! the end of each quiet window; nothing polls.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use cohort_backends::PaneId;
use tokio::sync::broadcast::error::RecvError;

use crate::Orchestrator;
use cohort_terminal::{
    completion::Until, events::EngineEvent, lines::LineFeed, runtime::PaneData,
    sessions::session_name, TerminalError,
};

/// Agent states that count as idle (waiting for input).
pub const IDLE_STATES: &[&str] = &["idle", "ready"];

/// What to wait for.
#[derive(Clone, Debug)]
pub enum Condition {
    /// The agent working there is idle (for a session without an agent, or whose
    /// agent never reported a state: its shell is at its prompt, nothing running).
    Idle,
    /// The command running there ends (met at once when nothing runs).
    Exit,
    /// This text or regex appears in output that arrives from now on (with `input`,
    /// in the echo of typed input too; see [`cohort_terminal::echo`]).
    Pattern {
        /// The text or regex.
        until: Until,
        /// Whether typed input's echo counts.
        input: bool,
    },
    /// No output for this long.
    Quiet(Duration),
}

impl Condition {
    /// The condition a caller named: `idle`, `exit`, `pattern` (with `pattern`, a
    /// regular expression with `regex`, matched in output only unless `input`) or
    /// `quiet` (for `quiet_ms`, 1000 when not given). A pattern given with another
    /// condition is refused.
    pub fn parse(
        name: &str,
        pattern: Option<&str>,
        regex: bool,
        input: bool,
        quiet_ms: Option<u64>,
    ) -> Result<Condition, TerminalError> {
        let invalid = TerminalError::InvalidArgument;
        let condition = match name {
            "idle" => Condition::Idle,
            "exit" => Condition::Exit,
            "pattern" => {
                let pattern = pattern.ok_or_else(|| {
                    invalid("condition pattern needs `pattern`: the text to wait for".into())
                })?;
                Condition::Pattern {
                    until: Until::new(pattern, regex)
                        .map_err(|e| invalid(e.replace("`until`", "`pattern`")))?,
                    input,
                }
            }
            "quiet" => Condition::Quiet(Duration::from_millis(
                quiet_ms.unwrap_or(1000).clamp(10, 3_600_000),
            )),
            other => {
                return Err(invalid(format!(
                    "unknown condition {other:?}: use idle, exit, pattern or quiet"
                )))
            }
        };
        if pattern.is_some() && !matches!(condition, Condition::Pattern { .. }) {
            return Err(invalid("`pattern` goes with condition \"pattern\"".into()));
        }
        Ok(condition)
    }

    /// The condition's name.
    pub fn name(&self) -> &'static str {
        match self {
            Condition::Idle => "idle",
            Condition::Exit => "exit",
            Condition::Pattern { .. } => "pattern",
            Condition::Quiet(_) => "quiet",
        }
    }
}

/// How many targets must meet the condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quorum {
    /// The first one ends the wait.
    Any,
    /// Every one must.
    All,
}

impl Quorum {
    /// The quorum a caller named: `any` (when none) or `all`.
    pub fn parse(mode: Option<&str>) -> Result<Quorum, TerminalError> {
        match mode.unwrap_or("any") {
            "any" => Ok(Quorum::Any),
            "all" => Ok(Quorum::All),
            other => Err(TerminalError::InvalidArgument(format!(
                "unknown mode {other:?}: use any or all"
            ))),
        }
    }
}

/// A wait's time limit from a caller's milliseconds (a minute when not given, a day
/// at most).
pub fn wait_timeout(timeout_ms: Option<u64>) -> Duration {
    Duration::from_millis(timeout_ms.unwrap_or(60_000).clamp(1, 24 * 3_600_000))
}

/// One target's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Met {
    /// The target as resolved (agent or session name).
    pub target: String,
    /// Its session.
    pub session: String,
    /// Whether it met the condition.
    pub met: bool,
    /// What it met, in words ("idle: turn ended", "exit 1", "pattern", "quiet for 500 ms"),
    /// or why not.
    pub what: String,
    /// The matching line (pattern).
    pub line: Option<String>,
    /// The command's exit status (exit).
    pub exit_status: Option<i32>,
    /// Milliseconds from the start of the wait to meeting it.
    pub after_ms: Option<u64>,
}

/// The answer to a wait.
#[derive(Clone, Debug)]
pub struct WaitOutcome {
    /// Whether the wait's quorum was met.
    pub done: bool,
    /// Per target, in the order given.
    pub results: Vec<Met>,
    /// How long it took.
    pub elapsed: Duration,
}

/// A target being waited on.
struct Watched {
    pane: PaneId,
    agent: Option<String>,
    feed: Option<LineFeed>,
    result: Met,
    /// A command was seen running during the wait (an end met before any was is
    /// the previous command's).
    saw_running: bool,
}

/// Whether a command is running in the pane: the shell announced a start and not
/// its end, or cohort typed one to the shell that has not ended.
fn running(data: &PaneData) -> bool {
    if data.exited.is_some() {
        return false;
    }
    if data.command_running() {
        return true;
    }
    let Some(last) = data.commands.iter().rev().find(|c| !c.continues) else {
        return false;
    };
    !data
        .marks
        .iter()
        .any(|m| m.offset > last.offset && m.mark.finished().is_some())
}

/// The last exit status the pane's shell reported.
fn last_status(data: &PaneData) -> Option<i32> {
    data.exited.flatten().or_else(|| {
        data.marks
            .iter()
            .rev()
            .find_map(|m| m.mark.finished())
            .flatten()
    })
}

impl Orchestrator {
    /// Waits until `condition` holds on any or all of `targets` (sessions, agents,
    /// teams, paths), at most `timeout`. `progress` hears each target that meets it.
    pub async fn wait_for(
        &self,
        targets: &[String],
        condition: &Condition,
        quorum: Quorum,
        timeout: Duration,
        mut progress: impl FnMut(&Met, usize, usize),
    ) -> Result<WaitOutcome, TerminalError> {
        if targets.is_empty() {
            return Err(TerminalError::InvalidArgument(
                "no targets: name sessions, agents or teams".into(),
            ));
        }
        let start = Instant::now();
        // Follow the stream before looking, so nothing in between is missed.
        let mut events = self.terminal.events();
        // Workers' hooks report through a wake socket of their own.
        let idle = matches!(condition, Condition::Idle);
        let mut wakes = if idle {
            self.workers.wakes()
        } else {
            tokio::sync::watch::channel(0).1
        };
        let agents = self.terminal.agents().await?;
        let mut watched: Vec<Watched> = Vec::new();
        // Waiting on a name that reaches nothing would only ever time out: refused.
        for (label, pane) in self.terminal.expand_targets_or_refuse(targets).await? {
            let session = session_name(&pane);
            let agent = pane
                .identity
                .as_ref()
                .and_then(|i| i.agent.clone())
                .or_else(|| {
                    agents
                        .iter()
                        .find(|a| a.session.as_deref() == Some(session.as_str()))
                        .map(|a| a.name.clone())
                });
            let feed = matches!(condition, Condition::Pattern { .. })
                .then(|| LineFeed::from_now(&self.terminal.pane_runtime(&pane.id)));
            watched.push(Watched {
                pane: pane.id.clone(),
                agent,
                feed,
                saw_running: false,
                result: Met {
                    target: label,
                    session,
                    met: false,
                    what: String::new(),
                    line: None,
                    exit_status: None,
                    after_ms: None,
                },
            });
        }
        let total = watched.len();
        let deadline = start + timeout;
        let mut done_count = 0;
        let finished = |done: usize| match quorum {
            Quorum::Any => done > 0,
            Quorum::All => done == total,
        };
        // What already holds.
        for w in watched.iter_mut() {
            if let Some(what) = self.holds_now(w, condition).await? {
                done_count += 1;
                meet(w, what, start);
                progress(&w.result, done_count, total);
            }
        }
        let by_pane: HashMap<PaneId, usize> = watched
            .iter()
            .enumerate()
            .map(|(i, w)| (w.pane.clone(), i))
            .collect();
        while total > 0 && !finished(done_count) {
            let next_quiet = match condition {
                Condition::Quiet(window) => watched
                    .iter()
                    .filter(|w| !w.result.met)
                    .map(|w| self.terminal.pane_runtime(&w.pane).lock().last_output + *window)
                    .min(),
                _ => None,
            };
            let wake = next_quiet.map_or(deadline, |q| q.min(deadline));
            let event = tokio::select! {
                e = events.recv() => Some(e),
                // A hook reported: look at every target again, as after a gap.
                Ok(()) = wakes.changed(), if idle => Some(Err(RecvError::Lagged(0))),
                _ = tokio::time::sleep_until(wake.into()) => None,
            };
            let mut touched: Vec<usize> = Vec::new();
            match event {
                None if Instant::now() >= deadline => break,
                None => touched.extend(0..watched.len()),
                Some(Err(RecvError::Lagged(_))) => touched.extend(0..watched.len()),
                Some(Err(RecvError::Closed)) => break,
                Some(Ok(EngineEvent::AgentState { agent, .. })) => touched.extend(
                    watched
                        .iter()
                        .enumerate()
                        .filter(|(_, w)| w.agent.as_deref() == Some(agent.as_str()))
                        .map(|(i, _)| i),
                ),
                Some(Ok(event)) => {
                    if let Some(i) = event.pane().and_then(|p| by_pane.get(p)) {
                        touched.push(*i);
                    }
                }
            }
            for i in touched {
                let w = &mut watched[i];
                if w.result.met {
                    continue;
                }
                if let Some(what) = self.holds_now(w, condition).await? {
                    done_count += 1;
                    meet(w, what, start);
                    progress(&w.result, done_count, total);
                }
            }
        }
        let done = total > 0 && finished(done_count);
        let waited = start.elapsed();
        let timed_out = waited >= timeout;
        let results: Vec<Met> = watched
            .into_iter()
            .map(|mut w| {
                if !w.result.met {
                    // The wait ended when enough targets met it (`any`), or at its
                    // timeout: say which, with the time it really lasted.
                    w.result.what = if timed_out {
                        format!(
                            "not {} within the timeout ({} ms)",
                            condition.name(),
                            waited.as_millis()
                        )
                    } else {
                        format!(
                            "not {} yet: the wait ended after {} ms, when the others met it",
                            condition.name(),
                            waited.as_millis()
                        )
                    };
                }
                w.result
            })
            .collect();
        Ok(WaitOutcome {
            done,
            results,
            elapsed: start.elapsed(),
        })
    }

    /// Whether `condition` holds for `w` now: what was met (and the matching line or
    /// status in `w`), or `None`.
    async fn holds_now(
        &self,
        w: &mut Watched,
        condition: &Condition,
    ) -> Result<Option<String>, TerminalError> {
        let runtime = self.terminal.pane_runtime(&w.pane);
        match condition {
            Condition::Idle => {
                if let Some(state) = self.worker_state_of(w).await? {
                    return Ok(state);
                }
                let state = match &w.agent {
                    Some(agent) => self.agent_state(agent).await?,
                    None => None,
                };
                if let Some(now) = state {
                    return Ok(IDLE_STATES
                        .contains(&now.state.as_str())
                        .then(|| format!("{}: {}", now.state, now.reason)));
                }
                // No agent, or none that reported a state yet: the session is idle
                // when nothing runs there.
                let data = runtime.lock();
                Ok((!running(&data)).then(|| {
                    if data.exited.is_some() {
                        "its program exited".to_string()
                    } else {
                        "its shell is at the prompt (no agent state: nothing running)".to_string()
                    }
                }))
            }
            Condition::Exit => {
                let data = runtime.lock();
                if running(&data) {
                    w.saw_running = true;
                    return Ok(None);
                }
                let status = last_status(&data);
                w.result.exit_status = status;
                let ended = match status {
                    Some(s) => format!("exit {s}"),
                    None => "ended (no status reported)".into(),
                };
                Ok(Some(if w.saw_running {
                    ended
                } else {
                    format!("nothing was running: the previous command's {ended}, before the wait began")
                }))
            }
            Condition::Pattern { until, input } => {
                let Some(feed) = w.feed.as_mut() else {
                    return Ok(None);
                };
                let (lines, partial) = feed.feed(&runtime);
                let found = lines
                    .into_iter()
                    .chain(partial)
                    .find(|line| until.find(line.matched(*input)));
                Ok(found.map(|line| {
                    w.result.line = Some(line.text);
                    "pattern".to_string()
                }))
            }
            Condition::Quiet(window) => {
                let quiet_for = runtime.lock().last_output.elapsed();
                Ok((quiet_for >= *window)
                    .then(|| format!("quiet for {} ms", quiet_for.as_millis())))
            }
        }
    }
}

impl Orchestrator {
    /// For a target that is a worker: whether its state, decided afresh from its
    /// signals, is idle (`Some(Some(what))`), or not (`Some(None)`); `None` for a
    /// target that is no worker.
    async fn worker_state_of(&self, w: &Watched) -> Result<Option<Option<String>>, TerminalError> {
        let Some(agent) = w.agent.clone() else {
            return Ok(None);
        };
        let Some(row) = self
            .workers
            .find_worker(&agent)
            .await
            .map_err(|e| TerminalError::Internal(format!("worker {agent}: {e}")))?
        else {
            return Ok(None);
        };
        let seen = self
            .workers
            .observe(&row, false)
            .await
            .map_err(|e| TerminalError::Internal(format!("worker {}: {e}", row.name)))?;
        let a = &seen.assessment;
        Ok(Some(
            IDLE_STATES
                .contains(&a.state.name())
                .then(|| format!("{}: {}", a.state.name(), a.reason)),
        ))
    }
}

fn meet(w: &mut Watched, what: String, start: Instant) {
    w.result.met = true;
    w.result.what = what;
    w.result.after_ms = Some(start.elapsed().as_millis() as u64);
}
