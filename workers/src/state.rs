//! A worker's state as a pure decision over its signals.
//!
//! [`assess`] weighs what it is shown ([`Observed`]): the agent's own reports (its
//! hooks, its notifications, its transcript: [`Report`]s), the screen (one
//! [`ScreenClass`] and since when), and process facts. It reads no clock, no file
//! and no terminal, so every case (a turn interrupted without its `Stop` hook, hooks
//! disabled by policy, an approval dialog with no hook, a crash) is a unit test.
//!
//! Trust goes in layers, most trustworthy first:
//! 1. process facts that end everything (the agent exited, or said it ended);
//! 2. the agent's reports, latest first;
//! 3. the screen, for agents without reports and as a cross-check: a dialog on the
//!    screen always wins (the agent waits, whatever was reported), and reports and
//!    screen that disagree for longer than [`Bounds::disagree_ms`] make the worker
//!    `stuck`, with both reasons;
//! 4. quiescence (output flowing or not) for programs cohort cannot read.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::screen::ScreenClass;

/// A worker's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    /// Launched; its input is not taking keys yet.
    #[default]
    Spawning,
    /// Up and waiting for its first prompt.
    Ready,
    /// Working on a turn.
    Busy,
    /// Its turn ended; waiting for the next prompt.
    Idle,
    /// Waiting for someone to answer a dialog (a permission, a question).
    NeedsApproval,
    /// Its signals contradict each other, or nothing moved for too long.
    Stuck,
    /// The agent is gone.
    Exited,
}

impl WorkerState {
    /// The name used in results.
    pub fn name(self) -> &'static str {
        match self {
            WorkerState::Spawning => "spawning",
            WorkerState::Ready => "ready",
            WorkerState::Busy => "busy",
            WorkerState::Idle => "idle",
            WorkerState::NeedsApproval => "needs_approval",
            WorkerState::Stuck => "stuck",
            WorkerState::Exited => "exited",
        }
    }

    /// The state named `name`.
    pub fn parse(name: &str) -> Option<WorkerState> {
        [
            WorkerState::Spawning,
            WorkerState::Ready,
            WorkerState::Busy,
            WorkerState::Idle,
            WorkerState::NeedsApproval,
            WorkerState::Stuck,
            WorkerState::Exited,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    /// Whether the worker is done for now: nothing it does will change this state
    /// without someone acting (everything but `spawning` and `busy`).
    pub fn settled(self) -> bool {
        !matches!(self, WorkerState::Spawning | WorkerState::Busy)
    }

    /// Whether a prompt can be submitted now.
    pub fn takes_prompts(self) -> bool {
        matches!(self, WorkerState::Ready | WorkerState::Idle)
    }
}

impl fmt::Display for WorkerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which kind of signal decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// The agent's hooks.
    Hook,
    /// The agent's notify program (Codex).
    Notify,
    /// The agent's transcript.
    Transcript,
    /// The rendered screen.
    Screen,
    /// The process: exited, or what runs in the pane.
    Process,
    /// Output flowing or quiet.
    Quiescence,
    /// cohort's own launch.
    Launch,
}

impl Signal {
    /// The name used in results.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Hook => "hook",
            Signal::Notify => "notify",
            Signal::Transcript => "transcript",
            Signal::Screen => "screen",
            Signal::Process => "process",
            Signal::Quiescence => "quiescence",
            Signal::Launch => "launch",
        }
    }
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    /// With an answer.
    Answered,
    /// With an API error (rate limit, overload…); no `Stop` hook fires.
    ApiError(String),
    /// Interrupted (Esc, Ctrl-C, a refused approval); no `Stop` hook fires.
    Interrupted,
}

/// What the agent reported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    /// The session started (or resumed).
    SessionStart,
    /// A prompt was submitted: a turn began.
    TurnStart,
    /// Work within a turn (a tool call started or finished).
    Activity {
        /// The tool, when known.
        tool: Option<String>,
    },
    /// It waits for permission to run a tool.
    Approval {
        /// The tool, when known.
        tool: Option<String>,
    },
    /// It asks the user a question.
    Question,
    /// The turn ended.
    TurnEnd {
        /// How.
        outcome: TurnOutcome,
        /// Background tasks still running when it ended.
        background: usize,
    },
    /// The session ended.
    SessionEnd {
        /// Why (`prompt_input_exit`, `logout`…).
        reason: String,
    },
}

/// One report, with when it happened (Unix ms) and where it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// Unix milliseconds.
    pub at_ms: i64,
    /// What.
    pub kind: ReportKind,
    /// From where.
    pub source: Signal,
}

/// What the screen shows, and since when it has shown it (Unix ms).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScreenView {
    /// The screen in one word.
    pub class: ScreenClass,
    /// Since when.
    pub since_ms: i64,
}

/// Facts about the process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessFacts {
    /// The pane's program ended (or the pane is gone).
    pub dead: bool,
    /// Its exit status, when known.
    pub exit_status: Option<i32>,
    /// When it was first seen gone (Unix ms).
    pub dead_since_ms: Option<i64>,
    /// Something other than the agent runs in the foreground (it quit to a shell).
    pub replaced_by: Option<String>,
    /// When the pane last printed (Unix ms).
    pub last_output_ms: Option<i64>,
    /// The last line the program printed, once it is gone (its last words: why it
    /// quit, when it says).
    pub last_words: Option<String>,
}

/// The bounds the decision uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// How long reports and screen may disagree before the worker is `stuck` (ms).
    pub disagree_ms: i64,
    /// How long a busy worker may show no activity at all before it is `stuck` (ms).
    pub stall_ms: i64,
    /// Quiet time after which a program cohort cannot read counts as idle (ms).
    pub quiet_ms: i64,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            disagree_ms: 5_000,
            stall_ms: 20 * 60_000,
            quiet_ms: 2_000,
        }
    }
}

/// Everything [`assess`] looks at.
#[derive(Clone, Debug)]
pub struct Observed<'a> {
    /// Now (Unix ms).
    pub now_ms: i64,
    /// When the agent was launched (Unix ms).
    pub launched_ms: i64,
    /// The agent's input was seen taking keys.
    pub input_ready: bool,
    /// The agent's reports since launch, oldest first.
    pub reports: &'a [Report],
    /// The screen, when it could be read and the CLI's screen is known.
    pub screen: Option<ScreenView>,
    /// Process facts.
    pub process: ProcessFacts,
    /// When cohort last submitted a prompt (Unix ms).
    pub prompted_ms: Option<i64>,
    /// The screen shows messages queued in the agent (sent while it worked): its
    /// next turn starts as soon as this one ends.
    pub queued: bool,
    /// The bounds.
    pub bounds: Bounds,
}

/// The decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assessment {
    /// The state.
    pub state: WorkerState,
    /// Why, in words.
    pub reason: String,
    /// Which signal decided.
    pub signal: Signal,
    /// Since when (Unix ms).
    pub since_ms: i64,
    /// Decide again after this many ms even if nothing changes (a bound runs out).
    pub recheck_ms: Option<i64>,
}

/// What the reports say, folded.
#[derive(Clone, Debug)]
struct Reported {
    state: WorkerState,
    reason: String,
    source: Signal,
    since_ms: i64,
    last_activity_ms: i64,
}

fn fold(reports: &[Report]) -> Option<Reported> {
    let mut out: Option<Reported> = None;
    for r in reports {
        let set = |state, reason: String| Reported {
            state,
            reason,
            source: r.source,
            since_ms: r.at_ms,
            last_activity_ms: r.at_ms,
        };
        out = Some(match &r.kind {
            ReportKind::SessionStart => match out {
                Some(prev) => Reported {
                    last_activity_ms: r.at_ms,
                    ..prev
                },
                None => set(WorkerState::Ready, "the session started".into()),
            },
            ReportKind::TurnStart => match out {
                // One turn start seen through two signals (hook and transcript).
                Some(prev) if prev.state == WorkerState::Busy => Reported {
                    last_activity_ms: r.at_ms,
                    ..prev
                },
                _ => set(WorkerState::Busy, "a turn started".into()),
            },
            ReportKind::Activity { tool } => match out {
                Some(prev) if prev.state == WorkerState::Busy => Reported {
                    last_activity_ms: r.at_ms,
                    ..prev
                },
                Some(prev) if prev.state == WorkerState::NeedsApproval => {
                    set(WorkerState::Busy, "the approval was answered".into())
                }
                _ => set(
                    WorkerState::Busy,
                    match tool {
                        Some(t) => format!("working ({t})"),
                        None => "working".into(),
                    },
                ),
            },
            ReportKind::Approval { tool } => set(
                WorkerState::NeedsApproval,
                match tool {
                    Some(t) => format!("asks permission to run {t}"),
                    None => "asks permission to run a tool".into(),
                },
            ),
            ReportKind::Question => set(WorkerState::NeedsApproval, "asks a question".into()),
            ReportKind::TurnEnd {
                outcome,
                background,
            } => {
                let mut reason = match outcome {
                    TurnOutcome::Answered => "the turn ended".to_string(),
                    TurnOutcome::ApiError(e) => format!("the turn ended with an API error ({e})"),
                    TurnOutcome::Interrupted => "the turn was interrupted".to_string(),
                };
                if *background > 0 {
                    reason.push_str(&format!("; {background} background task(s) still running"));
                }
                match out {
                    // The same end seen twice (in the transcript and by a hook): it
                    // ended at the first sight; the hook's words are the clearer.
                    Some(prev) if prev.state == WorkerState::Idle => {
                        let hook_now =
                            r.source != Signal::Transcript && prev.source == Signal::Transcript;
                        Reported {
                            last_activity_ms: r.at_ms,
                            reason: if hook_now { reason } else { prev.reason },
                            source: if hook_now { r.source } else { prev.source },
                            ..prev
                        }
                    }
                    _ => set(WorkerState::Idle, reason),
                }
            }
            ReportKind::SessionEnd { .. } => match out {
                Some(prev) => prev,
                None => set(WorkerState::Ready, "the session ended".into()),
            },
        });
    }
    out
}

fn exit_reason(process: &ProcessFacts, ended: Option<&str>) -> String {
    let mut status = match process.exit_status {
        Some(s) if s > 128 => format!("killed by signal {} (status {s})", s - 128),
        Some(s) => format!("exited with status {s}"),
        None => "exited".into(),
    };
    let failed = process.exit_status.is_some_and(|s| s != 0);
    if let Some(words) = process.last_words.as_deref().filter(|_| failed) {
        status.push_str(&format!(": \"{words}\""));
        if needs_a_person(words) {
            status.push_str(
                "; it cannot reach its service or is not signed in: a person must fix the \
                 network or the sign-in, then adopt_worker starts it again",
            );
        }
    }
    match ended {
        Some(reason) => format!("the session ended ({reason}); {status}"),
        None => status,
    }
}

/// Whether an agent's last words say that it could not reach its service or is not
/// signed in: nothing a manager can fix by messages or restarts alone.
fn needs_a_person(words: &str) -> bool {
    let words = words.to_lowercase();
    [
        "unable to connect",
        "could not connect",
        "connection refused",
        "connection error",
        "network",
        "enotfound",
        "econnrefused",
        "etimedout",
        "timed out",
        "not logged in",
        "log in",
        "login",
        "sign in",
        "signed in",
        "authenticat",
        "unauthorized",
        "api key",
        "credit balance",
        "401",
        "403",
    ]
    .iter()
    .any(|sign| words.contains(sign))
}

/// A span of time in words: seconds up to two minutes, then minutes.
fn span(ms: i64) -> String {
    if ms < 120_000 {
        format!("{} s", ms / 1000)
    } else {
        format!("{} min", ms / 60_000)
    }
}

/// Decides the worker's state from what is observed.
pub fn assess(o: &Observed<'_>) -> Assessment {
    let decided = |state, reason: String, signal, since_ms| Assessment {
        state,
        reason,
        signal,
        since_ms,
        recheck_ms: None,
    };
    let session_end = o.reports.iter().rev().find_map(|r| match &r.kind {
        ReportKind::SessionEnd { reason } => Some((r.at_ms, reason.as_str(), r.source)),
        _ => None,
    });
    // 1. The agent is gone.
    if o.process.dead {
        let since = o
            .process
            .dead_since_ms
            .or(session_end.map(|s| s.0))
            .unwrap_or(o.now_ms);
        return decided(
            WorkerState::Exited,
            exit_reason(&o.process, session_end.map(|s| s.1)),
            Signal::Process,
            since,
        );
    }
    if let Some(other) = &o.process.replaced_by {
        return decided(
            WorkerState::Exited,
            format!("the agent is no longer running; {other} runs in its pane"),
            Signal::Process,
            o.process.dead_since_ms.unwrap_or(o.now_ms),
        );
    }
    // A reported end while the agent's process still runs is not an exit: `/clear`
    // ends one session and starts the next in the same process, and a report can be
    // forged by any program that runs `cohort hook`. Only the process going (above)
    // ends the worker; the report then says why.
    let mut screen = o.screen.as_ref();
    // A dialog on the screen means the agent waits, unless the agent reported a
    // turn beginning or ending after the dialog was drawn: then the dialog was
    // answered and its text stayed behind.
    if let Some(ScreenView {
        class: ScreenClass::Waiting(_),
        since_ms,
    }) = screen
    {
        let moved_on = o.reports.iter().any(|r| {
            r.at_ms > *since_ms
                && matches!(r.kind, ReportKind::TurnStart | ReportKind::TurnEnd { .. })
        });
        if moved_on {
            screen = None;
        }
    }
    if let Some(ScreenView {
        class: ScreenClass::Waiting(dialog),
        since_ms,
    }) = screen
    {
        let reported = fold(o.reports).filter(|r| r.state == WorkerState::NeedsApproval);
        return match reported {
            Some(r) => decided(WorkerState::NeedsApproval, r.reason, r.source, r.since_ms),
            None => decided(
                WorkerState::NeedsApproval,
                format!("the screen shows {}", dialog.describe()),
                Signal::Screen,
                *since_ms,
            ),
        };
    }
    let reported = fold(o.reports);
    if !o.input_ready
        && reported
            .as_ref()
            .is_none_or(|r| r.state == WorkerState::Ready)
    {
        return decided(
            WorkerState::Spawning,
            "waiting for the agent's input to take keys".into(),
            Signal::Launch,
            o.launched_ms,
        );
    }
    let decided = match reported {
        Some(r) => cross_check(o, screen, r),
        None => screen_only(o),
    };
    if o.queued && matches!(decided.state, WorkerState::Idle | WorkerState::Ready) {
        return Assessment {
            state: WorkerState::Busy,
            reason: "a message queued in the agent starts next".into(),
            signal: Signal::Screen,
            since_ms: decided.since_ms,
            recheck_ms: None,
        };
    }
    decided
}

/// The reports against the screen (and the stall bound).
///
/// The newer signal wins: a screen that has shown the same thing since before the
/// agent's last report is not evidence against it (a spinner line left behind by an
/// interrupt, an idle-looking frame while a turn is reported). Only a screen that
/// changed after the last report, and stayed so for [`Bounds::disagree_ms`], makes
/// the worker `stuck`; an idle-looking screen that keeps printing has not stayed.
fn cross_check(o: &Observed<'_>, screen: Option<&ScreenView>, r: Reported) -> Assessment {
    let last_output = o.process.last_output_ms.unwrap_or(0);
    // A live busy line is redrawn (its clock ticks); one left behind is not.
    let printing = o.now_ms - last_output < o.bounds.quiet_ms;
    let settled_report = matches!(r.state, WorkerState::Idle | WorkerState::Ready);
    if let Some(s) = screen.filter(|s| s.class == ScreenClass::Busy) {
        if settled_report && printing && last_output > r.last_activity_ms + o.bounds.quiet_ms {
            // It kept working after its report said it stopped (a hook that sent it
            // on, a turn the report missed): the newer, live signal wins.
            return Assessment {
                state: WorkerState::Busy,
                reason: format!(
                    "the screen shows it working and still drawing, after its {} said {} ({})",
                    r.source.name(),
                    r.state,
                    r.reason
                ),
                signal: Signal::Screen,
                since_ms: s.since_ms.max(r.last_activity_ms),
                recheck_ms: Some(o.bounds.quiet_ms),
            };
        }
    }
    let screen_says = screen
        .filter(|s| s.since_ms > r.last_activity_ms)
        .and_then(|s| match s.class {
            // Only a busy line still drawn is evidence: one an interrupt left
            // behind stays as it was.
            ScreenClass::Busy if printing => Some((WorkerState::Busy, s.since_ms)),
            // A frame that looks idle while output still flows (a spinner cohort
            // does not recognise) is idle only from the last output on.
            ScreenClass::Idle => Some((WorkerState::Idle, s.since_ms.max(last_output))),
            _ => None,
        });
    let reported_busy = r.state == WorkerState::Busy;
    let disagreement = match screen_says {
        Some((WorkerState::Idle, since)) if reported_busy => {
            Some((since, "the screen shows an idle prompt"))
        }
        Some((WorkerState::Busy, since)) if settled_report => {
            Some((since, "the screen shows it working"))
        }
        Some((WorkerState::Idle, since)) if r.state == WorkerState::NeedsApproval => {
            Some((since, "the screen shows an idle prompt and no dialog"))
        }
        Some((WorkerState::Busy, since)) if r.state == WorkerState::NeedsApproval => {
            Some((since, "the screen shows it working and no dialog"))
        }
        _ => None,
    };
    if let Some((since, screen_reason)) = disagreement {
        let lasted = o.now_ms - since;
        if lasted >= o.bounds.disagree_ms {
            return Assessment {
                state: WorkerState::Stuck,
                reason: format!(
                    "its {} says {} ({}) but {screen_reason}, for {} s",
                    r.source.name(),
                    r.state,
                    r.reason,
                    lasted / 1000
                ),
                signal: Signal::Screen,
                since_ms: since + o.bounds.disagree_ms,
                recheck_ms: None,
            };
        }
        return Assessment {
            state: r.state,
            reason: r.reason,
            signal: r.source,
            since_ms: r.since_ms,
            recheck_ms: Some(o.bounds.disagree_ms - lasted),
        };
    }
    if reported_busy {
        let active = r.last_activity_ms.max(last_output);
        let still = o.now_ms - active;
        if still >= o.bounds.stall_ms {
            return Assessment {
                state: WorkerState::Stuck,
                reason: format!(
                    "busy since its {} said so ({}), and nothing happened for {}: no output, no hook, no transcript entry (hung, or waiting on something cohort cannot see)",
                    r.source.name(),
                    r.reason,
                    span(still)
                ),
                signal: Signal::Quiescence,
                since_ms: active + o.bounds.stall_ms,
                recheck_ms: None,
            };
        }
        return Assessment {
            state: WorkerState::Busy,
            reason: r.reason,
            signal: r.source,
            since_ms: r.since_ms,
            recheck_ms: Some(o.bounds.stall_ms - still),
        };
    }
    let mut state = r.state;
    let mut reason = r.reason;
    if state == WorkerState::Ready && o.prompted_ms.is_some_and(|p| p >= r.since_ms) {
        // Prompted, and not a word since: the prompt's turn has not shown yet.
        state = WorkerState::Busy;
        reason = "a prompt was submitted".into();
    }
    Assessment {
        state,
        reason,
        signal: r.source,
        since_ms: r.since_ms,
        recheck_ms: None,
    }
}

/// No reports: the screen decides, or quiescence where the screen says nothing.
fn screen_only(o: &Observed<'_>) -> Assessment {
    let rested = if o.prompted_ms.is_some() {
        WorkerState::Idle
    } else {
        WorkerState::Ready
    };
    match o.screen.as_ref().map(|s| (&s.class, s.since_ms)) {
        Some((ScreenClass::Busy, since)) => Assessment {
            state: WorkerState::Busy,
            reason: "the screen shows it working".into(),
            signal: Signal::Screen,
            since_ms: since,
            recheck_ms: None,
        },
        Some((ScreenClass::Idle, since)) => Assessment {
            state: rested,
            reason: "the screen shows its prompt and nothing running".into(),
            signal: Signal::Screen,
            since_ms: since.max(o.prompted_ms.unwrap_or(0)),
            recheck_ms: None,
        },
        _ => {
            let last = o.process.last_output_ms.unwrap_or(o.launched_ms);
            let quiet = o.now_ms - last;
            if quiet < o.bounds.quiet_ms {
                Assessment {
                    state: WorkerState::Busy,
                    reason: "its output is still flowing".into(),
                    signal: Signal::Quiescence,
                    since_ms: last,
                    recheck_ms: Some(o.bounds.quiet_ms - quiet),
                }
            } else {
                Assessment {
                    state: rested,
                    reason: format!("no output for {} s", quiet / 1000),
                    signal: Signal::Quiescence,
                    since_ms: last + o.bounds.quiet_ms,
                    recheck_ms: None,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::Dialog;

    fn report(at_ms: i64, kind: ReportKind, source: Signal) -> Report {
        Report {
            at_ms,
            kind,
            source,
        }
    }

    fn observed(reports: &[Report], screen: Option<(ScreenClass, i64)>, now: i64) -> Observed<'_> {
        Observed {
            now_ms: now,
            launched_ms: 0,
            input_ready: true,
            reports,
            screen: screen.map(|(class, since_ms)| ScreenView { class, since_ms }),
            process: ProcessFacts::default(),
            prompted_ms: None,
            queued: false,
            bounds: Bounds::default(),
        }
    }

    fn turn(start: i64) -> Vec<Report> {
        vec![
            report(0, ReportKind::SessionStart, Signal::Hook),
            report(start, ReportKind::TurnStart, Signal::Hook),
            report(start + 1, ReportKind::TurnStart, Signal::Transcript),
            report(
                start + 10,
                ReportKind::Activity {
                    tool: Some("Bash".into()),
                },
                Signal::Hook,
            ),
        ]
    }

    #[test]
    fn a_normal_turn_is_busy_then_idle_by_its_hooks() {
        let mut r = turn(100);
        let busy = assess(&observed(&r, Some((ScreenClass::Busy, 120)), 200));
        assert_eq!(
            (busy.state, busy.signal, busy.since_ms),
            (WorkerState::Busy, Signal::Hook, 100)
        );
        r.push(report(
            300,
            ReportKind::TurnEnd {
                outcome: TurnOutcome::Answered,
                background: 0,
            },
            Signal::Hook,
        ));
        // The screen still shows the spinner it showed before the hook: the newer
        // signal wins, now and later.
        for now in [310, 60_000] {
            let idle = assess(&observed(&r, Some((ScreenClass::Busy, 120)), now));
            assert_eq!((idle.state, idle.signal), (WorkerState::Idle, Signal::Hook));
            assert_eq!(idle.reason, "the turn ended");
        }
        // A spinner first seen after the turn's end but not drawn any more (left
        // behind) is no evidence; one still drawn well after the end is work.
        let mut o = observed(&r, Some((ScreenClass::Busy, 400)), 5_000);
        o.process.last_output_ms = Some(1_000);
        assert_eq!(assess(&o).state, WorkerState::Idle);
        o.process.last_output_ms = Some(4_900);
        let busy = assess(&o);
        assert_eq!(
            (busy.state, busy.signal),
            (WorkerState::Busy, Signal::Screen),
            "{busy:?}"
        );
        // A message queued in the agent: the next turn starts right after.
        let mut o = observed(&r, Some((ScreenClass::Busy, 120)), 310);
        o.queued = true;
        assert_eq!(assess(&o).state, WorkerState::Busy);
    }

    #[test]
    fn approval_by_hook_or_by_screen_alone() {
        let mut r = turn(100);
        r.push(report(
            200,
            ReportKind::Approval {
                tool: Some("Bash".into()),
            },
            Signal::Hook,
        ));
        let a = assess(&observed(&r, Some((ScreenClass::Busy, 120)), 210));
        assert_eq!(
            (a.state, a.signal),
            (WorkerState::NeedsApproval, Signal::Hook)
        );
        assert!(a.reason.contains("Bash"));
        // No hook at all (hooks off), the dialog is on the screen.
        let r = turn(100);
        let dialog = ScreenClass::Waiting(Dialog::Approval("Do you want to proceed?".into()));
        let a = assess(&observed(&r, Some((dialog, 250)), 260));
        assert_eq!(
            (a.state, a.signal, a.since_ms),
            (WorkerState::NeedsApproval, Signal::Screen, 250)
        );
        // Approved: a tool ran after it.
        let mut r = turn(100);
        r.push(report(
            200,
            ReportKind::Approval { tool: None },
            Signal::Hook,
        ));
        r.push(report(
            300,
            ReportKind::Activity { tool: None },
            Signal::Hook,
        ));
        assert_eq!(assess(&observed(&r, None, 310)).state, WorkerState::Busy);
    }

    #[test]
    fn an_api_error_without_stop_and_an_interrupt_end_the_turn() {
        let mut r = turn(100);
        r.push(report(
            200,
            ReportKind::TurnEnd {
                outcome: TurnOutcome::ApiError("server_error".into()),
                background: 0,
            },
            Signal::Hook,
        ));
        let a = assess(&observed(&r, Some((ScreenClass::Idle, 205)), 210));
        assert_eq!(a.state, WorkerState::Idle);
        assert!(
            a.reason.contains("API error (server_error)"),
            "{}",
            a.reason
        );
        let mut r = turn(100);
        r.push(report(
            200,
            ReportKind::TurnEnd {
                outcome: TurnOutcome::Interrupted,
                background: 0,
            },
            Signal::Transcript,
        ));
        let a = assess(&observed(&r, Some((ScreenClass::Idle, 205)), 210));
        assert_eq!((a.state, a.signal), (WorkerState::Idle, Signal::Transcript));
        assert_eq!(a.reason, "the turn was interrupted");
    }

    #[test]
    fn busy_by_report_and_idle_on_screen_becomes_stuck_after_the_bound() {
        let r = turn(100);
        let within = assess(&observed(&r, Some((ScreenClass::Idle, 1_000)), 3_000));
        assert_eq!(within.state, WorkerState::Busy);
        assert_eq!(within.recheck_ms, Some(3_000));
        let after = assess(&observed(&r, Some((ScreenClass::Idle, 1_000)), 6_000));
        assert_eq!(after.state, WorkerState::Stuck);
        assert!(
            after.reason.contains("hook says busy") && after.reason.contains("idle prompt"),
            "{}",
            after.reason
        );
        // Never busy forever: no screen, no output, the stall bound.
        let stalled = assess(&observed(&r, None, 100 + Bounds::default().stall_ms + 10));
        assert_eq!(stalled.state, WorkerState::Stuck);
    }

    /// A dialog answered on screen whose text stays: the turn's end reported after
    /// it was drawn wins; a dialog drawn after the last report still waits.
    #[test]
    fn a_dialog_left_on_screen_yields_to_a_newer_turn_report() {
        let dialog = || ScreenClass::Waiting(Dialog::Approval("Do you want to proceed?".into()));
        let mut r = turn(100);
        r.push(report(
            200,
            ReportKind::Approval { tool: None },
            Signal::Hook,
        ));
        let waiting = assess(&observed(&r, Some((dialog(), 210)), 220));
        assert_eq!(waiting.state, WorkerState::NeedsApproval);
        r.push(report(
            300,
            ReportKind::Activity { tool: None },
            Signal::Hook,
        ));
        r.push(report(
            400,
            ReportKind::TurnEnd {
                outcome: TurnOutcome::Answered,
                background: 0,
            },
            Signal::Hook,
        ));
        for now in [410, 600_000] {
            let a = assess(&observed(&r, Some((dialog(), 210)), now));
            assert_eq!(
                (a.state, a.signal),
                (WorkerState::Idle, Signal::Hook),
                "{a:?}"
            );
        }
        // The next turn asks again: its dialog is newer than every report.
        r.push(report(500, ReportKind::TurnStart, Signal::Hook));
        let a = assess(&observed(&r, Some((dialog(), 700)), 710));
        assert_eq!(
            (a.state, a.signal),
            (WorkerState::NeedsApproval, Signal::Screen)
        );
    }

    /// An interrupt leaves the spinner line behind: the transcript's interrupt,
    /// newer than that frame, makes the worker idle for good.
    #[test]
    fn a_spinner_left_behind_by_an_interrupt_is_not_work() {
        let mut r = turn(100);
        r.push(report(
            900,
            ReportKind::TurnEnd {
                outcome: TurnOutcome::Interrupted,
                background: 0,
            },
            Signal::Transcript,
        ));
        for now in [910, 30_000] {
            let a = assess(&observed(&r, Some((ScreenClass::Busy, 150)), now));
            assert_eq!(a.state, WorkerState::Idle, "{a:?}");
            assert_eq!(a.reason, "the turn was interrupted");
        }
    }

    /// A turn reported after the screen last changed, and a screen that looks idle
    /// while it still prints (a spinner not recognised), are not `stuck`.
    #[test]
    fn an_idle_looking_frame_older_than_the_turn_or_still_printing_is_not_stuck() {
        let r = turn(1_000);
        let a = assess(&observed(&r, Some((ScreenClass::Idle, 500)), 60_000));
        assert_eq!(
            (a.state, a.signal),
            (WorkerState::Busy, Signal::Hook),
            "{a:?}"
        );
        let mut o = observed(&r, Some((ScreenClass::Idle, 2_000)), 60_000);
        o.process.last_output_ms = Some(59_900);
        assert_eq!(assess(&o).state, WorkerState::Busy);
        // Quiet for longer than the bound: the disagreement stands.
        o.process.last_output_ms = Some(50_000);
        assert_eq!(assess(&o).state, WorkerState::Stuck);
    }

    /// An agent that quits because it cannot reach its service says so in its last
    /// words, and the reason passes that on with what to do; a clean exit does not.
    #[test]
    fn an_exit_says_why_in_the_agents_last_words() {
        let r = turn(100);
        let mut o = observed(&r, None, 500);
        o.process = ProcessFacts {
            dead: true,
            exit_status: Some(1),
            last_words: Some("Unable to connect to Anthropic services".into()),
            ..ProcessFacts::default()
        };
        let a = assess(&o);
        assert_eq!(a.state, WorkerState::Exited);
        assert!(
            a.reason
                .contains("\"Unable to connect to Anthropic services\"")
                && a.reason
                    .contains("a person must fix the network or the sign-in"),
            "{}",
            a.reason
        );
        o.process.last_words = Some("Error: something odd".into());
        let a = assess(&o);
        assert!(
            a.reason.contains("something odd") && !a.reason.contains("a person"),
            "{}",
            a.reason
        );
        o.process.exit_status = Some(0);
        o.process.last_words = Some("Goodbye".into());
        assert_eq!(assess(&o).reason, "exited with status 0");
    }

    #[test]
    fn a_crash_and_a_clean_exit() {
        let r = turn(100);
        let mut o = observed(&r, Some((ScreenClass::Busy, 120)), 500);
        o.process = ProcessFacts {
            dead: true,
            exit_status: Some(137),
            dead_since_ms: Some(450),
            ..ProcessFacts::default()
        };
        let a = assess(&o);
        assert_eq!(
            (a.state, a.signal, a.since_ms),
            (WorkerState::Exited, Signal::Process, 450)
        );
        assert!(a.reason.contains("signal 9"), "{}", a.reason);
        let mut r = turn(100);
        r.push(report(
            600,
            ReportKind::SessionEnd {
                reason: "prompt_input_exit".into(),
            },
            Signal::Hook,
        ));
        // Reported while the process still runs: not an exit (a `/clear`, or a
        // report any program could have made).
        let a = assess(&observed(&r, None, 610));
        assert_ne!(a.state, WorkerState::Exited, "{a:?}");
        // With the process gone, the report's words say why.
        let mut o = observed(&r, None, 700);
        o.process = ProcessFacts {
            dead: true,
            exit_status: Some(0),
            dead_since_ms: Some(650),
            ..ProcessFacts::default()
        };
        let a = assess(&o);
        assert_eq!((a.state, a.signal), (WorkerState::Exited, Signal::Process));
        assert!(a.reason.contains("prompt_input_exit"), "{}", a.reason);
    }

    #[test]
    fn without_reports_the_screen_then_quiescence_decide() {
        let none: Vec<Report> = Vec::new();
        let mut o = observed(&none, Some((ScreenClass::Idle, 50)), 100);
        assert_eq!(assess(&o).state, WorkerState::Ready);
        o.prompted_ms = Some(60);
        assert_eq!(assess(&o).state, WorkerState::Idle);
        o.screen = Some(ScreenView {
            class: ScreenClass::Busy,
            since_ms: 70,
        });
        assert_eq!(assess(&o).state, WorkerState::Busy);
        o.screen = None;
        o.process.last_output_ms = Some(90);
        let flowing = assess(&o);
        assert_eq!(
            (flowing.state, flowing.signal),
            (WorkerState::Busy, Signal::Quiescence)
        );
        o.now_ms = 90 + Bounds::default().quiet_ms;
        assert_eq!(assess(&o).state, WorkerState::Idle);
        o.input_ready = false;
        assert_eq!(assess(&o).state, WorkerState::Spawning);
    }

    #[test]
    fn a_prompt_submitted_before_any_turn_report_reads_busy() {
        let r = vec![report(0, ReportKind::SessionStart, Signal::Hook)];
        let mut o = observed(&r, None, 100);
        o.prompted_ms = Some(50);
        assert_eq!(assess(&o).state, WorkerState::Busy);
    }
}
