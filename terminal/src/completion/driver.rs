//! The ladder's driver: it shows the [`Ladder`] the live pane, gathers the facts it
//! asks for, and sleeps on the pane's changes and the times it names. There is no
//! polling interval: between steps it waits for output, a prompt mark, an exit or a
//! foreground change, or for the moment the ladder asked to look again.

use std::time::{Duration, Instant};

use cohort_backends::{PaneId, TerminalBackend};

use super::facts::gather;
use super::ladder::{Decision, Ladder, PaneView};
use super::record::Recorder;
use super::{Started, Verdict, WaitSpec};
use crate::runtime::{MarkAt, PaneData, PaneRuntime};

/// A pane's live data as the ladder reads it, with the time Enter was pressed.
struct Live<'a> {
    data: &'a mut PaneData,
    at: Instant,
}

impl PaneView for Live<'_> {
    fn len(&self) -> u64 {
        self.data.journal.len()
    }

    fn read(&mut self, start: u64, end: u64) -> Option<Vec<u8>> {
        self.data.journal.read(start, end).ok()
    }

    fn marks(&self) -> &[MarkAt] {
        &self.data.marks
    }

    fn announces_start(&self) -> bool {
        self.data.announces_start
    }

    fn exited(&self) -> Option<Option<i32>> {
        self.data.exited
    }

    fn quiet_since(&self) -> Duration {
        whole_micros(self.data.last_output.saturating_duration_since(self.at))
    }

    fn interrupted(&self, enter_offset: u64) -> bool {
        self.data
            .commands
            .iter()
            .rev()
            .find(|c| c.offset == enter_offset)
            .is_some_and(|c| c.interrupted)
    }
}

/// `d` to whole microseconds: the ladder is shown times as a recording keeps them, so
/// a replay decides to the same microsecond.
fn whole_micros(d: Duration) -> Duration {
    Duration::from_micros(d.as_micros() as u64)
}

/// Waits for the command started at `started` to complete, per the ladder.
pub async fn wait(
    runtime: &PaneRuntime,
    backend: &dyn TerminalBackend,
    pane: &PaneId,
    started: &Started,
    spec: &WaitSpec,
) -> Verdict {
    use tracing::Instrument;
    let span = cohort_backends::otel_span!(
        "wait",
        pane = %pane,
        layer = tracing::field::Empty,
        verdict = tracing::field::Empty,
        exit_status = tracing::field::Empty,
    );
    let verdict = climb(runtime, backend, pane, started, spec)
        .instrument(span.clone())
        .await;
    span.record("layer", verdict.layer.as_str());
    span.record(
        "verdict",
        verdict_word(verdict.complete, verdict.exit_status),
    );
    if let Some(status) = verdict.exit_status {
        span.record("exit_status", status);
    }
    verdict
}

/// A verdict in one word, as spans carry it: `ok`, `failed` (a non-zero exit
/// status) or `incomplete`.
pub fn verdict_word(complete: bool, exit_status: Option<i32>) -> &'static str {
    match (complete, exit_status) {
        (false, _) => "incomplete",
        (true, Some(status)) if status != 0 => "failed",
        (true, _) => "ok",
    }
}

/// [`wait`]'s work: climbs the ladder until it decides.
async fn climb(
    runtime: &PaneRuntime,
    backend: &dyn TerminalBackend,
    pane: &PaneId,
    started: &Started,
    spec: &WaitSpec,
) -> Verdict {
    let mut ladder = Ladder::new(started.clone(), spec.clone());
    let mut recorder = recorder(runtime, started, spec, pane);
    let mut changes = runtime.watch();
    let mut facts = None;
    let mut changed = false;
    loop {
        changes.borrow_and_update();
        let now = whole_micros(started.at.elapsed());
        let decision = {
            let mut data = runtime.lock();
            let mut view = Live {
                data: &mut data,
                at: started.at,
            };
            let decision = ladder.step(&mut view, now, facts.clone());
            if let Some(r) = &mut recorder {
                if let Err(e) = r.step(&mut view, now, changed, facts.as_ref(), &decision) {
                    tracing::warn!(target: "cohort::engine", path = %r.path().display(), "the ladder's recording stopped: {e}");
                    recorder = None;
                }
            }
            decision
        };
        facts = None;
        changed = false;
        match decision {
            Decision::Verdict(outcome) => {
                return Verdict {
                    complete: outcome.complete,
                    layer: outcome.layer,
                    exit_status: outcome.exit_status,
                    elapsed: started.at.elapsed(),
                    hint: outcome.hint,
                    output: outcome.output,
                }
            }
            Decision::Probe(need) => {
                // Any pane event (the D mark, more output) preempts the question.
                tokio::select! {
                    biased;
                    _ = changes.changed() => {
                        ladder.changed();
                        changed = true;
                    }
                    gathered = gather(backend, pane, need) => facts = Some(gathered),
                }
            }
            Decision::Sleep(until) => {
                tokio::select! {
                    _ = changes.changed() => {
                        ladder.changed();
                        changed = true;
                    }
                    _ = tokio::time::sleep_until((started.at + until).into()) => {}
                }
            }
        }
    }
}

/// A recorder for this wait when `spec` names a file, or `COHORT_RECORD_LADDER` a
/// directory (a recording per wait, named by time and pane).
fn recorder(
    runtime: &PaneRuntime,
    started: &Started,
    spec: &WaitSpec,
    pane: &PaneId,
) -> Option<Recorder> {
    let path = spec.record.clone().or_else(|| {
        let dir = std::env::var_os("COHORT_RECORD_LADDER").filter(|d| !d.is_empty())?;
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        Some(std::path::PathBuf::from(dir).join(format!(
            "{stamp}-{}.jsonl",
            pane.as_str().trim_start_matches('%')
        )))
    })?;
    let mut data = runtime.lock();
    let view = Live {
        data: &mut data,
        at: started.at,
    };
    let about = format!("`{}` in pane {pane}", started.typed);
    match Recorder::start(&path, started, spec, &view, &about) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!(target: "cohort::engine", path = %path.display(), "cannot record the ladder: {e}");
            None
        }
    }
}
