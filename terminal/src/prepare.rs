//! Reducing a run's output while it arrives.
//!
//! A `run` waits for its command on the ladder, then reduces the output. For a big
//! output most of that reduction is work on each line alone, which need not wait: beside
//! the wait, [`Preparer`] hands the output's lines to the reducers'
//! [`Prepared`] as they reach the journal, in pieces cut
//! after a newline (where sanitizing the pieces is sanitizing the whole), on a thread
//! of its own at the lowest priority there is (Linux's `SCHED_IDLE`: tmux and the
//! reading of its output come first; on two cores, taking their time moved the verdict
//! later by more than the reduction it saved). When the verdict comes, that thread
//! stops after the 64 KiB in hand (or is left behind after 20 ms), the read takes the
//! rest and finishes; the reply is the one the whole reduction gives.
//!
//! Small outputs are not touched: nothing starts before 64 KiB of output.
//! The command's output starts at its shell's `C` mark; a shell that does not announce
//! its commands, a range the ladder ends elsewhere, output the journal no longer holds,
//! or output the reducers would not take whole (too big, binary) leave the reduction to
//! the read as before.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cohort_backends::PromptMark;
use cohort_reducers::Prepared;
use tokio::sync::oneshot;

use crate::runtime::PaneRuntime;
use crate::sanitize::{line_cut, sanitize_output};

/// Output gathered before a piece is prepared: smaller outputs are reduced at the end
/// in a few milliseconds, without a thread.
const PIECE: u64 = 64 << 10;

/// Output with no place to cut it this long (one endless line, a string escape that
/// never ends) is left to the read.
const NO_CUT_MAX: usize = 1 << 20;

/// The most output the thread prepares between two looks at whether the verdict is in.
const BITE: usize = 64 << 10;

/// The longest a verdict waits for the thread to finish the bite in hand (it runs at
/// the lowest priority); past it, the read reduces the whole output itself.
const FINISH_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// The least time between two looks at the pane.
const PACE: std::time::Duration = std::time::Duration::from_millis(10);

/// A command's output prepared from `start` (its `C` mark) up to `upto`.
#[derive(Debug)]
pub struct Progress {
    /// Journal offset the output starts at.
    pub start: u64,
    /// Journal offset up to which it was handed over (right after a newline).
    pub upto: u64,
    /// The lines so far.
    pub prepared: Prepared,
}

/// Prepares a running command's output beside its wait; stopped when dropped.
pub struct Preparer {
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Option<Progress>>,
}

impl Preparer {
    /// Starts preparing the output of the command whose Enter was journal offset
    /// `enter`.
    pub fn start(runtime: Arc<PaneRuntime>, enter: u64) -> Preparer {
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(prepare(runtime, enter, stopped));
        Preparer {
            stop: Some(stop),
            task,
        }
    }

    /// Stops, and what was prepared (once a piece in hand is done).
    pub async fn finish(mut self) -> Option<Progress> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.ok().flatten()
    }
}

impl Drop for Preparer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The preparing task: at each change of the pane (at most every [`PACE`]), the
/// output since the last piece when there is enough of it, cut after a newline and
/// handed to the [`Side`] thread.
async fn prepare(
    runtime: Arc<PaneRuntime>,
    enter: u64,
    mut stopped: oneshot::Receiver<()>,
) -> Option<Progress> {
    let mut changes = runtime.watch();
    let mut side: Option<Side> = None;
    // Where the output starts, and how far it was handed over.
    let mut handed: Option<(u64, u64)> = None;
    // The journal's length at which to look again.
    let mut next_look = 0;
    loop {
        tokio::select! {
            biased;
            _ = &mut stopped => break,
            changed = changes.changed() => if changed.is_err() { break },
        }
        // Output arrives in thousands of small notifications; this is work on the
        // side, not the verdict.
        tokio::select! {
            biased;
            _ = &mut stopped => break,
            _ = tokio::time::sleep(PACE) => {}
        }
        if side.as_ref().is_some_and(Side::gave_up) {
            return None;
        }
        // While the thread is still busy with earlier pieces, the next one waits in
        // the journal and grows: read only once it can be handed over.
        if side.as_ref().is_some_and(Side::piece_waiting) {
            continue;
        }
        let (start, from, mut bytes) = {
            let mut data = runtime.lock();
            let (start, from) = match handed {
                Some(handed) => handed,
                None => match data
                    .marks
                    .iter()
                    .find(|m| m.offset > enter && m.mark == PromptMark::CommandStart)
                {
                    Some(c) => (c.offset, c.offset),
                    None => continue,
                },
            };
            // The output ends at the command's `D` mark: what follows is the prompt.
            let end = data
                .marks
                .iter()
                .find(|m| m.offset >= start && m.mark.finished().is_some())
                .map_or(data.journal.len(), |d| d.offset);
            if end < from.max(next_look) + PIECE {
                continue;
            }
            if end - start > Prepared::MAX_LEN as u64 || from < data.journal.floor() {
                // Reduced as head and tail from the journal, or dropped from it
                // before it was prepared (the read says so).
                return None;
            }
            match data.journal.read(from, end) {
                Ok(bytes) => (start, from, bytes),
                Err(_) => return None,
            }
        };
        next_look = from + bytes.len() as u64;
        let cut = line_cut(&bytes);
        if cut == 0 {
            if bytes.len() >= NO_CUT_MAX {
                // One endless line, or a string escape never ended: nothing to cut.
                return None;
            }
            continue;
        }
        bytes.truncate(cut);
        if side.is_none() {
            side = Some(Side::start(start)?);
        }
        let upto = from + cut as u64;
        if side.as_ref()?.hand(bytes, upto) {
            handed = Some((start, upto));
        }
    }
    side?.finish().await
}

/// The thread that prepares the pieces, at the lowest priority: while a big output
/// streams in, tmux and the reading of its notifications keep the cores busy, and they
/// come first.
struct Side {
    start: u64,
    /// Where pieces go; one waits at most (taken away to say there are no more).
    pieces: Option<std::sync::mpsc::SyncSender<(Vec<u8>, u64)>>,
    flags: Arc<SideFlags>,
    done: oneshot::Receiver<(Prepared, u64)>,
}

#[derive(Default)]
struct SideFlags {
    /// The verdict is in: stop after the piece in hand (the read prepares the rest).
    hurry: AtomicBool,
    /// The reducers gave up on the output.
    gave_up: AtomicBool,
    /// A piece was handed over and the thread has not taken it yet.
    piece_waiting: AtomicBool,
}

impl Side {
    /// Starts the thread for output starting at journal offset `start`.
    fn start(start: u64) -> Option<Side> {
        let (pieces, received) = std::sync::mpsc::sync_channel::<(Vec<u8>, u64)>(1);
        let (done_tx, done) = oneshot::channel();
        let flags = Arc::new(SideFlags::default());
        let theirs = flags.clone();
        let spawned = std::thread::Builder::new()
            .name("cohort-prepare".into())
            .spawn(move || {
                lower_priority();
                let mut prepared = Prepared::new();
                let mut upto = start;
                'pieces: for (bytes, end) in received {
                    theirs.piece_waiting.store(false, Ordering::Release);
                    let from = end - bytes.len() as u64;
                    // In bites cut where the piece could be cut: a verdict waits for
                    // one bite at most.
                    let mut at = 0;
                    while at < bytes.len() {
                        if theirs.hurry.load(Ordering::Relaxed) {
                            break 'pieces;
                        }
                        let window = &bytes[at..bytes.len().min(at + BITE)];
                        let bite = match line_cut(window) {
                            0 => bytes.len() - at,
                            cut => cut,
                        };
                        prepared.push(&sanitize_output(&bytes[at..at + bite]));
                        at += bite;
                        upto = from + at as u64;
                        if prepared.given_up() {
                            theirs.gave_up.store(true, Ordering::Relaxed);
                            break 'pieces;
                        }
                    }
                }
                let _ = done_tx.send((prepared, upto));
            });
        match spawned {
            Ok(_) => Some(Side {
                start,
                pieces: Some(pieces),
                flags,
                done,
            }),
            Err(e) => {
                tracing::debug!(target: "cohort::engine", "output is reduced at the end: no thread to prepare it ({e})");
                None
            }
        }
    }

    /// Hands over the output up to journal offset `upto`; false when the thread has
    /// a piece waiting already (or is gone).
    fn hand(&self, bytes: Vec<u8>, upto: u64) -> bool {
        let Some(pieces) = &self.pieces else {
            return false;
        };
        // Said before the piece goes, so that the thread taking it says it last.
        self.flags.piece_waiting.store(true, Ordering::Release);
        match pieces.try_send((bytes, upto)) {
            Ok(()) => true,
            // The piece waiting before is still there.
            Err(std::sync::mpsc::TrySendError::Full(_)) => false,
            Err(std::sync::mpsc::TrySendError::Disconnected(_)) => {
                self.flags.piece_waiting.store(false, Ordering::Release);
                false
            }
        }
    }

    /// Whether a piece handed over waits for the thread (the next would not go).
    fn piece_waiting(&self) -> bool {
        self.flags.piece_waiting.load(Ordering::Acquire)
    }

    fn gave_up(&self) -> bool {
        self.flags.gave_up.load(Ordering::Relaxed)
    }

    /// What the thread prepared, once the bite in hand is done.
    async fn finish(mut self) -> Option<Progress> {
        self.flags.hurry.store(true, Ordering::Relaxed);
        self.pieces = None;
        let (prepared, upto) = tokio::time::timeout(FINISH_WAIT, &mut self.done)
            .await
            .ok()?
            .ok()?;
        (!prepared.given_up()).then_some(Progress {
            start: self.start,
            upto,
            prepared,
        })
    }
}

impl Drop for Side {
    /// A run that stopped waiting (cancelled, failed) stops the thread after the
    /// piece in hand.
    fn drop(&mut self) {
        self.flags.hurry.store(true, Ordering::Relaxed);
    }
}

/// Gives the calling thread the lowest priority (Linux's `SCHED_IDLE`, else the
/// highest nice value; both are the thread's own there). Left as it is elsewhere,
/// where the nice value is the whole process's.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: the parameter outlives the call; on Linux `pid = 0` and `who = 0` are
    // the calling thread.
    unsafe {
        // Some C libraries' `sched_param` has more fields: all zero.
        let param: libc::sched_param = std::mem::zeroed();
        if libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0 {
            libc::setpriority(libc::PRIO_PROCESS, 0, 19);
        }
    }
}
