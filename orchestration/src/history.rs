//! What happened lately, kept on disk: the events `cohort events` prints without
//! `--follow`, for hosts and people that look back instead of following.
//!
//! Each cohort process appends the events it publishes to `<state>/events.jsonl`, one
//! JSON line each (`{"at_ms", "pid", "event"}`), in one `write` on a file opened for
//! appending, so lines of several processes never mix. What a process decides alone
//! (notifications, agent states, locks, sessions opened and closed) is written by that
//! process only, not by the ones it is relayed to. What every process sees from the
//! terminal server itself (a command ending, a session's program exiting) is written by
//! each of them and told apart on reading: the same event about the same pane within a
//! second, from another process, is one event.
//!
//! The file is kept small: past [`ROTATE_AT`] it becomes `events.jsonl.1` (replacing the
//! one before), so the history holds the last few thousand events.

use std::io::Write;
use std::path::{Path, PathBuf};

use cohort_terminal::events::EngineEvent;
use serde::{Deserialize, Serialize};

/// The size past which the log is rotated.
pub const ROTATE_AT: u64 = 1 << 20;

/// Two copies of one terminal event, written by two processes, are this close.
const SAME_EVENT_MS: u64 = 1000;

/// One event as the history keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    /// When it was published, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The process that published it.
    pub pid: u32,
    /// The event.
    pub event: EngineEvent,
}

/// The history file of a state directory.
#[derive(Clone, Debug)]
pub struct History {
    path: PathBuf,
}

impl History {
    /// The history kept under `state_dir`.
    pub fn new(state_dir: &Path) -> History {
        History {
            path: state_dir.join("events.jsonl"),
        }
    }

    /// Whether `event` is worth keeping: everything but output arriving and commands
    /// starting, which are many and which the journal holds.
    pub fn keeps(event: &EngineEvent) -> bool {
        !matches!(
            event,
            EngineEvent::Output { .. } | EngineEvent::CommandStarted { .. }
        )
    }

    /// Appends `event`, published now by this process. A failure is logged: the history
    /// is a convenience, never a reason to stop.
    pub fn record(&self, event: &EngineEvent) {
        let entry = Entry {
            at_ms: now_ms(),
            pid: std::process::id(),
            event: event.clone(),
        };
        let Ok(mut line) = serde_json::to_vec(&entry) else {
            return;
        };
        line.push(b'\n');
        if let Err(e) = self.append(&line) {
            tracing::debug!(target: "cohort::history", path = %self.path.display(), error = %e, "event not kept in the history");
        }
    }

    fn append(&self, line: &[u8]) -> std::io::Result<()> {
        if std::fs::metadata(&self.path).is_ok_and(|m| m.len() > ROTATE_AT) {
            // Another process may rotate at the same moment: one of the renames wins,
            // and each line still lands whole in one file or the other.
            let _ = std::fs::rename(&self.path, self.path.with_extension("jsonl.1"));
        }
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(&self.path)?.write_all(line)
    }

    /// The last `limit` events, oldest first, each once.
    pub fn recent(&self, limit: usize) -> Vec<Entry> {
        let mut entries = Vec::new();
        for path in [self.path.with_extension("jsonl.1"), self.path.clone()] {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            // A line cut short (a process killed mid-write) is skipped.
            entries.extend(
                text.lines()
                    .filter_map(|line| serde_json::from_str::<Entry>(line).ok()),
            );
        }
        entries.sort_by_key(|e| e.at_ms);
        let mut kept: Vec<Entry> = Vec::with_capacity(entries.len());
        for entry in entries {
            let copy = kept.iter().rev().take(64).any(|k| {
                k.pid != entry.pid
                    && entry.at_ms.saturating_sub(k.at_ms) <= SAME_EVENT_MS
                    && k.event == entry.event
            });
            if !copy {
                kept.push(entry);
            }
        }
        let skip = kept.len().saturating_sub(limit);
        kept.split_off(skip)
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cohort_backends::PaneId;

    fn ended(pane: &str, status: i32) -> EngineEvent {
        EngineEvent::CommandEnded {
            pane: PaneId(pane.into()),
            exit_status: Some(status),
            offset: 10,
        }
    }

    #[test]
    fn recent_events_come_back_in_order_each_once() {
        let dir = tempfile::tempdir().unwrap();
        let history = History::new(dir.path());
        history.record(&ended("%1", 0));
        history.record(&ended("%1", 3));
        // The same terminal event, as a second process wrote it.
        let mut line = serde_json::to_vec(&Entry {
            at_ms: now_ms(),
            pid: 1,
            event: ended("%1", 3),
        })
        .unwrap();
        line.push(b'\n');
        history.append(&line).unwrap();
        history.append(b"{\"at_ms\": 1, \"pid\"").unwrap();
        let recent = history.recent(10);
        let statuses: Vec<_> = recent
            .iter()
            .map(|e| match &e.event {
                EngineEvent::CommandEnded { exit_status, .. } => *exit_status,
                _ => None,
            })
            .collect();
        assert_eq!(statuses, [Some(0), Some(3)]);
        assert_eq!(history.recent(1).len(), 1);
    }

    #[test]
    fn the_log_rotates_and_keeps_the_last_file() {
        let dir = tempfile::tempdir().unwrap();
        let history = History::new(dir.path());
        std::fs::write(
            dir.path().join("events.jsonl"),
            vec![b' '; ROTATE_AT as usize + 1],
        )
        .unwrap();
        history.record(&ended("%2", 1));
        assert!(dir.path().join("events.jsonl.1").exists());
        assert_eq!(history.recent(5).len(), 1);
    }
}
