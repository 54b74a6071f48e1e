//! Watchers: real-time monitoring with callbacks.
//!
//! A watcher follows a target (a session, an agent, a team, a path) for a pattern
//! in its new output (`ERROR|Traceback`, a `GET /` in a server's log) or for an
//! event (a command ended, one failed, the session's program exited, the agent needs
//! approval, is idle, stuck or exited). Each hit leaves a notification with the line
//! and the lines before it, and can act: type text into another target (the server
//! logs a request, the client pane gets a command), run a playbook step, or change
//! an appearance.
//!
//! Watchers live in the registry. The server that made one runs it; when that
//! server is gone, the next server to start takes it over, so watchers survive a
//! restart. A running watcher follows the event stream: a line is matched the
//! moment its output arrives (see the `watch` benchmark), nothing polls.
//!
//! Hits are paced ([`pace`]): one action at a time per watcher, a bounded queue
//! and rate, floods folded into counted notifications, and a watcher that keeps
//! setting itself off through its own action is stopped.

pub mod pace;

use cohort_terminal::{
    colours::AppearanceChange,
    completion::Until,
    events::EngineEvent,
    ids::short_id,
    lines::{Line, LineFeed},
    names::{self, NameKind},
    Caller, SendOptions, TerminalError,
};
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use cohort_backends::{Appearance, PaneId};
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast::error::RecvError, mpsc};

use pace::{Next, Pace};

use crate::registry::OrchestrationTables;
use crate::Orchestrator;
use crate::{
    hub::holder_alive,
    playbook::{run::Runner, Step},
    registry::EVERYONE,
};

/// Context lines a hit carries at most.
pub const CONTEXT_MAX: usize = 20;

/// What sets a watcher off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Trigger {
    /// Text (or a regex) in a line of new output.
    Pattern {
        /// The text or regex.
        pattern: String,
        /// `pattern` is a regular expression.
        #[serde(default)]
        regex: bool,
        /// The echo of typed input counts too (by default only what programs print
        /// does; see [`cohort_terminal::echo`]).
        #[serde(default)]
        input: bool,
    },
    /// Something happening there.
    Event {
        /// Which.
        event: WatchEvent,
    },
}

/// Events a watcher can wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchEvent {
    /// A command ended (any status).
    CommandEnded,
    /// A command ended with a non-zero status.
    CommandFailed,
    /// The session's program exited.
    SessionExited,
    /// The agent needs approval.
    NeedsApproval,
    /// The agent became idle.
    AgentIdle,
    /// The agent is stuck.
    AgentStuck,
    /// The agent exited.
    AgentExited,
    /// A program in the session signalled with its pane's secret
    /// (`OSC 1337 ; Custom=id=$COHORT_SIGNAL_ID:<payload>`); the hit says the payload.
    Signal,
}

impl WatchEvent {
    /// The agent state it stands for, if it is one.
    fn agent_state(self) -> Option<&'static str> {
        match self {
            WatchEvent::NeedsApproval => Some("needs_approval"),
            WatchEvent::AgentIdle => Some("idle"),
            WatchEvent::AgentStuck => Some("stuck"),
            WatchEvent::AgentExited => Some("exited"),
            _ => None,
        }
    }
}

/// What a hit does besides leaving a notification.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    /// Type text into a target.
    Send {
        /// Session, agent or path.
        target: String,
        /// The text, typed literally (the tripwire applies).
        text: String,
        /// Press Enter after it.
        #[serde(default = "yes")]
        enter: bool,
    },
    /// Run a playbook step.
    Step {
        /// The step.
        step: Step,
    },
    /// Change the appearance of targets.
    Appearance {
        /// Sessions, agents, teams or paths.
        targets: Vec<String>,
        /// The change.
        look: Appearance,
    },
    /// Raise the hit before the people watching its session: a notification in
    /// their terminal and a message in sight (`TerminalBackend::alert`).
    Alert {},
}

fn yes() -> bool {
    true
}

fn everyone() -> String {
    EVERYONE.to_string()
}

fn three() -> usize {
    3
}

/// A watcher.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WatchSpec {
    /// Its id (given when it is made).
    #[serde(default)]
    pub id: String,
    /// What it watches: a session, agent, team or path.
    pub target: String,
    /// What sets it off.
    pub trigger: Trigger,
    /// What a hit does besides the notification.
    #[serde(default)]
    pub action: Option<Action>,
    /// Who the notification is for (`*`: everyone).
    #[serde(default = "everyone")]
    pub notify: String,
    /// Lines before the hit that the notification carries.
    #[serde(default = "three")]
    pub context: usize,
    /// Fire once, then go.
    #[serde(default)]
    pub once: bool,
    /// Who made it (types as this owner when it acts).
    #[serde(default)]
    pub owner: Option<String>,
}

/// A watcher as listed.
#[derive(Clone, Debug)]
pub struct WatchInfo {
    /// The watcher.
    pub spec: WatchSpec,
    /// The process running it.
    pub holder_pid: i64,
    /// This engine runs it.
    pub here: bool,
    /// Times it fired.
    pub hits: i64,
    /// Unix seconds.
    pub created: i64,
}

/// A watcher being run.
struct Active {
    spec: WatchSpec,
    until: Option<Until>,
    panes: HashSet<PaneId>,
    agents: HashSet<String>,
    /// Per pane, the start of a line already reported while it was being written.
    reported: HashMap<PaneId, u64>,
    done: bool,
}

impl Active {
    /// Whether the echo of typed input counts for its pattern.
    fn input(&self) -> bool {
        matches!(self.spec.trigger, Trigger::Pattern { input: true, .. })
    }
}

/// One pane's followed output.
struct Feed {
    lines: LineFeed,
    recent: VecDeque<String>,
}

/// One hit.
#[derive(Debug)]
struct Hit {
    session: String,
    /// The pane it came from (none for an agent's state).
    pane: Option<PaneId>,
    line: Option<String>,
    context: Vec<String>,
    what: String,
}

/// A watcher's pace, with the spec its firings act on (kept after a `once` watcher
/// leaves the active set, so its one hit still fires).
struct Paced {
    spec: WatchSpec,
    pace: Pace<Hit, PaneId>,
}

/// A firing's end, reported to the watch loop: the watcher and the panes its action
/// typed into.
type Finished = (String, Vec<PaneId>);

/// Reports a firing's end when dropped, so that even a firing whose task dies frees
/// its watcher's pace.
struct FiringDone {
    id: String,
    typed_into: Vec<PaneId>,
    report: mpsc::UnboundedSender<Finished>,
}

impl Drop for FiringDone {
    fn drop(&mut self) {
        let _ = self.report.send((
            std::mem::take(&mut self.id),
            std::mem::take(&mut self.typed_into),
        ));
    }
}

impl Orchestrator {
    /// Makes a watcher (checked first: its target, pattern and action must be
    /// usable); this engine runs it when it runs watchers, else the next server to
    /// start does. Returns it with its id.
    pub async fn add_watch(&self, mut spec: WatchSpec) -> Result<WatchSpec, TerminalError> {
        names::check(NameKind::Owner, &spec.notify)?;
        names::check_opt(NameKind::Owner, spec.owner.as_deref())?;
        if spec.context > CONTEXT_MAX {
            return Err(TerminalError::InvalidArgument(format!(
                "context {} is too many lines: at most {CONTEXT_MAX}",
                spec.context
            )));
        }
        if let Trigger::Pattern { pattern, regex, .. } = &spec.trigger {
            Until::new(pattern, *regex)
                .map_err(|e| TerminalError::InvalidArgument(e.replace("`until`", "`pattern`")))?;
        }
        let reached = self
            .terminal
            .expand_targets(std::slice::from_ref(&spec.target))
            .await?;
        if let Some((_, Err(e))) = reached.iter().find(|(_, p)| p.is_err()) {
            return Err(TerminalError::InvalidArgument(format!(
                "the watched target {:?}: {e}",
                names::shown(&spec.target)
            )));
        }
        let watched_from: Vec<(PaneId, u64)> = reached
            .iter()
            .filter_map(|(_, p)| p.as_ref().ok())
            .map(|p| {
                (
                    p.id.clone(),
                    self.terminal.pane_runtime(&p.id).lock().journal.len(),
                )
            })
            .collect();
        match &spec.action {
            Some(Action::Send { target, text, .. }) => {
                self.terminal.resolve(target).await?;
                names::check_text("text", text, cohort_terminal::input::TEXT_MAX, true)?;
            }
            Some(Action::Appearance { targets, look }) => {
                if targets.is_empty() || *look == Appearance::default() {
                    return Err(TerminalError::InvalidArgument(
                        "an appearance action needs targets and something to change".into(),
                    ));
                }
            }
            Some(Action::Step { .. }) | Some(Action::Alert {}) | None => {}
        }
        spec.id = format!("w-{}", short_id(8));
        let json = serde_json::to_string(&spec)
            .map_err(|e| TerminalError::Internal(format!("a watcher could not be stored: {e}")))?;
        let (pid, instance) = self.hub.holder();
        let id = spec.id.clone();
        self.terminal
            .db(move |r| r.add_watch(&id, &json, pid, Some(&instance)))
            .await?;
        {
            let mut from = self
                .hub
                .watch_from
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            for (pane, at) in watched_from {
                let at = from.get(&pane).map_or(at, |&earlier| earlier.min(at));
                from.insert(pane, at);
            }
        }
        self.hub.watch_changes.notify_one();
        Ok(spec)
    }

    /// Removes a watcher; false when there was none.
    pub async fn remove_watch(&self, id: &str) -> Result<bool, TerminalError> {
        // An id no watcher could have is refused, not echoed back (it may be megabytes).
        if id.len() > 64 || id.chars().any(char::is_control) {
            return Err(TerminalError::InvalidArgument(format!(
                "{} is not a watcher id: ids look like w-1a2b3c4d (list_watches shows them)",
                cohort_terminal::names::shown(id)
            )));
        }
        let id = id.to_string();
        let removed = self.terminal.db(move |r| r.remove_watch(&id)).await?;
        self.hub.watch_changes.notify_one();
        Ok(removed)
    }

    /// Every watcher, oldest first.
    pub async fn watches(&self) -> Result<Vec<WatchInfo>, TerminalError> {
        let (pid, instance) = self.hub.holder();
        let running = self.hub.running_watchers();
        let rows = self.terminal.db(|r| r.watches()).await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let spec: WatchSpec = serde_json::from_str(&row.spec).ok()?;
                Some(WatchInfo {
                    spec,
                    here: running
                        && row.holder_pid == pid
                        && row.holder_start.as_deref() == Some(instance.as_str()),
                    holder_pid: row.holder_pid,
                    hits: row.hits,
                    created: row.created,
                })
            })
            .collect())
    }

    /// The watchers this engine holds (taking over those whose holder is gone).
    async fn claim_watches(&self) -> Result<Vec<WatchSpec>, TerminalError> {
        let (pid, instance) = self.hub.holder();
        let rows = self
            .terminal
            .db(move |r| r.claim_watches(pid, Some(&instance), holder_alive))
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| match serde_json::from_str(&row.spec) {
                Ok(spec) => Some(spec),
                Err(e) => {
                    tracing::warn!(target: "cohort::watch", "watcher {} is unreadable and is skipped: {e}", row.id);
                    None
                }
            })
            .collect())
    }

    /// Which panes and agents a watcher's target reaches now.
    async fn reach(&self, target: &str) -> (HashSet<PaneId>, HashSet<String>) {
        let mut panes = HashSet::new();
        let mut agents = HashSet::new();
        let Ok(expanded) = self.terminal.expand_targets(&[target.to_string()]).await else {
            return (panes, agents);
        };
        for (_, pane) in expanded
            .into_iter()
            .filter_map(|(l, p)| p.ok().map(|p| (l, p)))
        {
            if let Some(agent) = self.agent_in(&pane).await {
                agents.insert(agent);
            }
            panes.insert(pane.id);
        }
        (panes, agents)
    }

    /// Runs the watchers this engine holds until the hub stops.
    pub(crate) async fn run_held_watches(&self) -> Result<(), TerminalError> {
        let stop = self.hub.stopped();
        let bus = self.terminal.bus();
        let (mut events, mut states) = bus.subscribe_states();
        // Agents' states missed in a lag, taken in before the stream goes on.
        let mut missed: VecDeque<EngineEvent> = VecDeque::new();
        let mut active: HashMap<String, Active> = HashMap::new();
        let mut feeds: HashMap<PaneId, Feed> = HashMap::new();
        let mut paces: HashMap<String, Paced> = HashMap::new();
        let (report, mut finished) = mpsc::unbounded_channel::<Finished>();
        self.reload(&mut active, &mut feeds).await?;
        loop {
            let due = paces.values().filter_map(|p| p.pace.due()).min();
            let replayed = !missed.is_empty();
            let event = if let Some(event) = missed.pop_front() {
                Ok(event)
            } else {
                tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                _ = self.hub.watch_changes.notified() => {
                    self.reload(&mut active, &mut feeds).await?;
                    paces.retain(|id, p| active.contains_key(id) || p.spec.once || p.pace.firing());
                    continue;
                }
                Some((id, typed_into)) = finished.recv() => {
                    if let Some(paced) = paces.get_mut(&id) {
                        paced.pace.finished(typed_into, Instant::now());
                    }
                    self.release(&id, &mut paces, &mut active, &report).await;
                    continue;
                }
                _ = sleep_until(due) => {
                    let ids: Vec<String> = paces.keys().cloned().collect();
                    for id in ids {
                        self.release(&id, &mut paces, &mut active, &report).await;
                    }
                    continue;
                }
                e = events.recv() => e,
                }
            };
            let event = match event {
                Ok(event) => event,
                Err(RecvError::Lagged(n)) => {
                    tracing::debug!(target: "cohort::watch", "watchers fell {n} events behind; output is caught up from the journal");
                    // The state each agent holds now, if it changed meanwhile, is
                    // taken in.
                    missed.extend(states.missed(bus).into_iter().map(|(event, _)| event));
                    continue;
                }
                Err(RecvError::Closed) => return Ok(()),
            };
            // A state already taken in after a lag, which the stream still held.
            if !replayed && !states.fresh(&event) {
                continue;
            }
            let hits = self.hits(&event, &mut active, &mut feeds).await;
            let now = Instant::now();
            let mut offered: Vec<String> = Vec::new();
            for (id, hit) in hits {
                let Some(watch) = active.get_mut(&id) else {
                    continue;
                };
                if watch.spec.once {
                    watch.done = true;
                }
                let pane = hit.pane.clone();
                paces
                    .entry(id.clone())
                    .or_insert_with(|| Paced {
                        spec: watch.spec.clone(),
                        pace: Pace::new(now),
                    })
                    .pace
                    .offer(hit, pane, now);
                if !offered.contains(&id) {
                    offered.push(id);
                }
            }
            for id in offered {
                self.release(&id, &mut paces, &mut active, &report).await;
            }
            active.retain(|_, w| !w.done);
            if matches!(
                event,
                EngineEvent::SessionOpened { .. } | EngineEvent::SessionClosed { .. }
            ) {
                // Teams reach new sessions (and lose closed ones).
                for watch in active.values_mut() {
                    let (panes, agents) = self.reach(&watch.spec.target).await;
                    for pane in &panes {
                        self.follow(pane, &mut feeds);
                    }
                    watch.panes = panes;
                    watch.agents = agents;
                }
            }
        }
    }

    /// Fires watcher `id`'s next hit if its pace allows, or stops a watcher that
    /// keeps setting itself off.
    async fn release(
        &self,
        id: &str,
        paces: &mut HashMap<String, Paced>,
        active: &mut HashMap<String, Active>,
        report: &mpsc::UnboundedSender<Finished>,
    ) {
        let Some(paced) = paces.get_mut(id) else {
            return;
        };
        match paced.pace.next(Instant::now()) {
            Next::Wait => {
                let gone =
                    !active.contains_key(id) && !paced.pace.firing() && paced.pace.waiting() == 0;
                if gone {
                    paces.remove(id);
                }
            }
            Next::Fire { hit, folded } => {
                let (engine, spec) = (self.clone(), paced.spec.clone());
                let done = FiringDone {
                    id: id.to_string(),
                    typed_into: Vec::new(),
                    report: report.clone(),
                };
                tokio::spawn(async move { engine.fire(spec, hit, folded, done).await });
            }
            Next::Stop { in_a_row, dropped } => {
                let spec = paced.spec.clone();
                paces.remove(id);
                active.remove(id);
                self.stop_looping(&spec, in_a_row, dropped).await;
            }
        }
    }

    /// Removes a watcher whose own action kept setting it off, and says so.
    async fn stop_looping(&self, spec: &WatchSpec, in_a_row: u32, dropped: u64) {
        let action = match &spec.action {
            Some(Action::Send { target, .. }) => format!("typing into {target}"),
            Some(Action::Step { step }) => format!("running {}", step.label(0)),
            Some(Action::Appearance { .. }) | Some(Action::Alert {}) | None => "its action".into(),
        };
        let dropped = match dropped {
            1 => "1 hit was".to_string(),
            n => format!("{n} hits were"),
        };
        let message = format!(
            "watch {id} on {target}: stopped: {action} set it off again {in_a_row} times in a row, \
             a loop; {dropped} not acted on. Change its pattern or its action \
             (a pattern the action's own output does not print) and add it again.",
            id = spec.id,
            target = names::shown(&spec.target),
        );
        tracing::warn!(target: "cohort::watch", "{message}");
        if let Err(e) = self.remove_watch(&spec.id).await {
            tracing::warn!(target: "cohort::watch", "watch {}: it could not be removed: {e}", spec.id);
        }
        let from = format!("watch {}", spec.id);
        if let Err(e) = self.leave(&from, &spec.notify, "watch", &message).await {
            tracing::warn!(target: "cohort::watch", "watch {}: the notification was not left: {e}", spec.id);
        }
    }

    /// Starts following `pane`'s output for pattern watchers.
    /// Starts following `pane`'s output for pattern watchers: from where a watcher
    /// added here found it, else from now.
    fn follow(&self, pane: &PaneId, feeds: &mut HashMap<PaneId, Feed>) {
        let added_at = self
            .hub
            .watch_from
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(pane);
        feeds.entry(pane.clone()).or_insert_with(|| Feed {
            lines: match added_at {
                Some(at) => LineFeed::at(at),
                None => LineFeed::from_now(&self.terminal.pane_runtime(pane)),
            },
            recent: VecDeque::new(),
        });
    }

    /// Loads the watchers this engine holds (keeping those it runs).
    async fn reload(
        &self,
        active: &mut HashMap<String, Active>,
        feeds: &mut HashMap<PaneId, Feed>,
    ) -> Result<(), TerminalError> {
        let held = self.claim_watches().await?;
        let ids: HashSet<String> = held.iter().map(|s| s.id.clone()).collect();
        active.retain(|id, _| ids.contains(id));
        for spec in held {
            if active.contains_key(&spec.id) {
                continue;
            }
            let until = match &spec.trigger {
                Trigger::Pattern { pattern, regex, .. } => Until::new(pattern, *regex).ok(),
                Trigger::Event { .. } => None,
            };
            let (panes, agents) = self.reach(&spec.target).await;
            if until.is_some() {
                for pane in &panes {
                    self.follow(pane, feeds);
                }
            }
            active.insert(
                spec.id.clone(),
                Active {
                    spec,
                    until,
                    panes,
                    agents,
                    reported: HashMap::new(),
                    done: false,
                },
            );
        }
        Ok(())
    }

    /// The hits one event makes: (watcher id, hit).
    async fn hits(
        &self,
        event: &EngineEvent,
        active: &mut HashMap<String, Active>,
        feeds: &mut HashMap<PaneId, Feed>,
    ) -> Vec<(String, Hit)> {
        let mut out = Vec::new();
        let session_of = |pane: &PaneId| {
            let pane = pane.clone();
            async move {
                self.terminal
                    .session_record(&pane)
                    .await
                    .ok()
                    .flatten()
                    .map_or_else(|| pane.to_string(), |s| s.name)
            }
        };
        match event {
            EngineEvent::Output { pane, .. } => {
                let watching: Vec<&mut Active> = active
                    .values_mut()
                    .filter(|w| !w.done && w.until.is_some() && w.panes.contains(pane))
                    .collect();
                if watching.is_empty() {
                    return out;
                }
                let Some(feed) = feeds.get_mut(pane) else {
                    return out;
                };
                let (lines, partial) = feed.lines.feed(&self.terminal.pane_runtime(pane));
                let mut found: Vec<(String, Line, Vec<String>)> = Vec::new();
                let mut watching = watching;
                for line in &lines {
                    let context: Vec<String> = feed.recent.iter().cloned().collect();
                    for w in watching.iter_mut() {
                        if w.reported.get(pane) == Some(&line.start) {
                            w.reported.remove(pane);
                            continue;
                        }
                        if w.until
                            .as_ref()
                            .is_some_and(|u| u.find(line.matched(w.input())))
                        {
                            let keep = context.len().saturating_sub(w.spec.context);
                            found.push((w.spec.id.clone(), line.clone(), context[keep..].to_vec()));
                        }
                    }
                    feed.recent.push_back(line.text.clone());
                    while feed.recent.len() > CONTEXT_MAX {
                        feed.recent.pop_front();
                    }
                }
                if let Some(partial) = partial {
                    for w in watching.iter_mut() {
                        if w.reported.get(pane) != Some(&partial.start)
                            && w.until
                                .as_ref()
                                .is_some_and(|u| u.find(partial.matched(w.input())))
                        {
                            w.reported.insert(pane.clone(), partial.start);
                            let context: Vec<String> = feed.recent.iter().cloned().collect();
                            let keep = context.len().saturating_sub(w.spec.context);
                            found.push((
                                w.spec.id.clone(),
                                partial.clone(),
                                context[keep..].to_vec(),
                            ));
                        }
                    }
                }
                if !found.is_empty() {
                    let session = session_of(pane).await;
                    for (id, line, context) in found {
                        let once_done = active.get(&id).is_some_and(|w| w.spec.once)
                            && out.iter().any(|(i, _): &(String, Hit)| *i == id);
                        if once_done {
                            continue;
                        }
                        out.push((
                            id,
                            Hit {
                                session: session.clone(),
                                pane: Some(pane.clone()),
                                line: Some(line.text),
                                context,
                                what: "pattern".into(),
                            },
                        ));
                    }
                }
            }
            EngineEvent::CommandEnded {
                pane,
                exit_status,
                offset,
            } => {
                let failed = exit_status.is_some_and(|s| s != 0);
                let mut what_and_lines: Option<(String, Vec<String>)> = None;
                for w in active.values().filter(|w| w.panes.contains(pane)) {
                    let hit = matches!(
                        w.spec.trigger,
                        Trigger::Event {
                            event: WatchEvent::CommandEnded
                        }
                    ) || (failed
                        && matches!(
                            w.spec.trigger,
                            Trigger::Event {
                                event: WatchEvent::CommandFailed
                            }
                        ));
                    if hit {
                        if what_and_lines.is_none() {
                            what_and_lines =
                                Some(self.command_end(pane, *exit_status, *offset).await);
                        }
                        let (what, lines) = what_and_lines.clone().unwrap_or_default();
                        let mut hit = self.event_hit(pane, &what).await;
                        let keep = lines.len().saturating_sub(w.spec.context);
                        hit.context = lines[keep..].to_vec();
                        out.push((w.spec.id.clone(), hit));
                    }
                }
            }
            EngineEvent::PaneExited { pane, exit_status } => {
                let what = match exit_status {
                    Some(s) => format!("its program exited with status {s}"),
                    None => "its program exited".into(),
                };
                for w in active.values().filter(|w| w.panes.contains(pane)) {
                    if w.spec.trigger
                        == (Trigger::Event {
                            event: WatchEvent::SessionExited,
                        })
                    {
                        out.push((w.spec.id.clone(), self.event_hit(pane, &what).await));
                    }
                }
            }
            EngineEvent::Signal { pane, payload } => {
                let what = format!("signalled: {payload}");
                for w in active.values().filter(|w| w.panes.contains(pane)) {
                    if w.spec.trigger
                        == (Trigger::Event {
                            event: WatchEvent::Signal,
                        })
                    {
                        out.push((w.spec.id.clone(), self.event_hit(pane, &what).await));
                    }
                }
            }
            EngineEvent::AgentState {
                agent,
                state,
                reason,
                ..
            } => {
                for w in active.values().filter(|w| w.agents.contains(agent)) {
                    let Trigger::Event { event } = &w.spec.trigger else {
                        continue;
                    };
                    if event.agent_state() == Some(state.as_str()) {
                        out.push((
                            w.spec.id.clone(),
                            Hit {
                                session: agent.clone(),
                                pane: None,
                                line: None,
                                context: Vec::new(),
                                what: format!("{agent} is {state}: {reason}"),
                            },
                        ));
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// What a command's end in `pane` at journal `offset` says: the command (when
    /// cohort typed it) with its status, and the last lines it printed (at most
    /// [`CONTEXT_MAX`]).
    async fn command_end(
        &self,
        pane: &PaneId,
        exit_status: Option<i32>,
        offset: u64,
    ) -> (String, Vec<String>) {
        // The command typed here before this end (recorded before its Enter), else the
        // last one the registry knows (typed by another process).
        let typed_here = {
            let runtime = self.terminal.pane_runtime(pane);
            let data = runtime.lock();
            data.commands
                .iter()
                .rev()
                .find(|c| c.offset < offset)
                .map(|c| c.text.clone())
        };
        let command = match typed_here {
            Some(text) => Some(text),
            None => self
                .terminal
                .session_record(pane)
                .await
                .ok()
                .flatten()
                .and_then(|s| s.last_command),
        }
        .map(|c| {
            let first: String = c
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect();
            first
        });
        let what = match (command, exit_status) {
            (Some(c), Some(s)) => format!("`{c}` ended with status {s}"),
            (Some(c), None) => format!("`{c}` ended"),
            (None, Some(s)) => format!("a command ended with status {s}"),
            (None, None) => "a command ended".into(),
        };
        let options = cohort_terminal::read::ReadOptions {
            what: cohort_terminal::read::ReadWhat::Bytes(offset.saturating_sub(16 << 10)..offset),
            raw: true,
            ..cohort_terminal::read::ReadOptions::default()
        };
        let read = self.terminal.read(pane, &options).await;
        let lines: Vec<String> = read
            .text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
        let keep = lines.len().saturating_sub(CONTEXT_MAX);
        (what, lines[keep..].to_vec())
    }

    /// A hit for an event in `pane`.
    async fn event_hit(&self, pane: &PaneId, what: &str) -> Hit {
        let session = self
            .terminal
            .session_record(pane)
            .await
            .ok()
            .flatten()
            .map_or_else(|| pane.to_string(), |s| s.name);
        Hit {
            session,
            pane: Some(pane.clone()),
            line: None,
            context: Vec::new(),
            what: what.to_string(),
        }
    }

    /// Acts on a hit, then leaves one notification for it and the `folded` hits after
    /// it, and counts them all; `done` reports the end to the watch loop.
    async fn fire(&self, spec: WatchSpec, hit: Hit, folded: u64, mut done: FiringDone) {
        let acted = match &spec.action {
            None => None,
            Some(action) => Some(self.act(&spec, action, &hit).await),
        };
        let mut message = format!("watch {} on {}: ", spec.id, hit.session);
        match &hit.line {
            Some(line) => message.push_str(line),
            None => message.push_str(&hit.what),
        }
        if folded > 0 {
            let lines = if hit.line.is_some() {
                " (their lines are in the session's output)"
            } else {
                ""
            };
            message.push_str(&format!(
                "\n+{folded} more hits after it, counted here rather than notified one by one{lines}"
            ));
        }
        if !hit.context.is_empty() {
            message.push_str("\nbefore it:\n");
            message.push_str(&hit.context.join("\n"));
        }
        match acted {
            Some(Ok((said, typed_into))) => {
                message.push_str(&format!("\naction: {said}"));
                done.typed_into = typed_into;
            }
            Some(Err(e)) => message.push_str(&format!("\naction failed: {e}")),
            None => {}
        }
        let message: String = message
            .chars()
            .take(cohort_terminal::names::NOTE_MAX)
            .collect();
        // Counted before the notification is left, so whoever reads the notification
        // sees the hit in the watcher's count.
        let id = spec.id.clone();
        let hits = 1 + folded;
        let counted = self
            .terminal
            .db(move |r| r.count_watch_hits(&id, hits))
            .await;
        let from = format!("watch {}", spec.id);
        if let Err(e) = self.leave(&from, &spec.notify, "watch", &message).await {
            tracing::warn!(target: "cohort::watch", "watch {}: the notification was not left: {e}", spec.id);
        }
        match counted {
            Ok(true) if spec.once => {
                let _ = self.remove_watch(&spec.id).await;
            }
            Ok(true) => {}
            // Removed by another process: this engine lets it go.
            Ok(false) => self.hub.watch_changes.notify_one(),
            Err(e) => {
                tracing::warn!(target: "cohort::watch", "watch {}: its hit was not counted: {e}", spec.id)
            }
        }
        drop(done);
    }

    /// Carries out a watcher's action: what it did, in words, and the panes it typed
    /// into.
    async fn act(
        &self,
        spec: &WatchSpec,
        action: &Action,
        hit: &Hit,
    ) -> Result<(String, Vec<PaneId>), TerminalError> {
        let send = SendOptions::default();
        let caller = Caller::new(format!("watch-{}", spec.id)).as_owner(spec.owner.clone());
        match action {
            Action::Send {
                target,
                text,
                enter,
            } => {
                let pane = self.terminal.resolve(target).await?;
                let options = SendOptions {
                    enter: *enter,
                    ..send
                };
                self.terminal
                    .send(&pane.id, text, &options, &caller)
                    .await?;
                Ok((format!("typed into {target}"), vec![pane.id]))
            }
            Action::Step { step } => {
                let runner = Runner { send, caller };
                let results = self.run_step(step, &runner).await;
                let mut typed_into = Vec::new();
                for item in &step.items {
                    if let Ok(reached) = self.terminal.expand_targets(&item.targets).await {
                        typed_into.extend(
                            reached
                                .into_iter()
                                .filter_map(|(_, p)| p.ok())
                                .map(|p| p.id),
                        );
                    }
                }
                let failed: Vec<String> = results
                    .iter()
                    .filter(|r| !r.ok)
                    .map(|r| format!("{}: {}", r.target, r.summary))
                    .collect();
                if failed.is_empty() {
                    Ok((
                        format!("ran {} ({} targets ok)", step.label(0), results.len()),
                        typed_into,
                    ))
                } else {
                    Err(TerminalError::InvalidArgument(format!(
                        "{} failed: {}",
                        step.label(0),
                        failed.join("; ")
                    )))
                }
            }
            Action::Alert {} => {
                let pane = match &hit.pane {
                    Some(pane) => pane.clone(),
                    // An agent's state: its session.
                    None => self.terminal.resolve(&hit.session).await?.id,
                };
                let said = hit.line.as_deref().unwrap_or(&hit.what);
                self.terminal
                    .backend()
                    .alert(&pane, &format!("{}: {said}", hit.session))
                    .await?;
                Ok((
                    format!("alerted the people watching {}", hit.session),
                    Vec::new(),
                ))
            }
            Action::Appearance { targets, look } => {
                let change = AppearanceChange {
                    look: look.clone(),
                    ..AppearanceChange::default()
                };
                let done = self.terminal.set_appearance_many(targets, &change).await?;
                match done.iter().find_map(|d| d.error.clone()) {
                    Some(e) => Err(TerminalError::InvalidArgument(e)),
                    None => Ok((
                        format!("appearance set on {} sessions", done.len()),
                        Vec::new(),
                    )),
                }
            }
        }
    }
}

/// Sleeps until `due`, or for ever when nothing is due.
async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
