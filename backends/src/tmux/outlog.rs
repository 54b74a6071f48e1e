//! Each pane's output stream, carried across a lost connection to a remote server.
//!
//! A connection over SSH can break while the far side's tmux and its panes live on,
//! printing. So tmux itself appends every remote pane's output to a log on the far
//! side (`pipe-pane`, the same bytes control mode sends), and this side counts the
//! bytes it received since that log began. When a connection opens again, the panes'
//! output is held back; each pane's log is switched to a new file by a command that
//! carries a marker (see [`super::control::ControlEvent::Marker`]), which divides the
//! new connection's bytes into those still in the old file and those in the new one.
//! The old file is read from the count on: its size, less the bytes before the switch,
//! ends exactly what was printed while no connection was there. Those bytes go through
//! the pane's splitter before the held ones, as if they had arrived in time: a command
//! that ended meanwhile gets its prompt mark, and so its real exit status.
//!
//! A pane's splitter lives here, not in one connection's router, so a mark cut in two
//! by the break still reads as one. Anything that cannot be read back (no log yet, a
//! file gone, sizes that do not add up) is reported as lost output
//! ([`BackendEvent::OutputLost`]) for that pane alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::event::{BackendEvent, EventSink, PromptMark};
use crate::stream::{OutputSplitter, Piece};
use crate::types::PaneId;

use super::quote;

/// A log is switched to a new file past this size: the far side keeps at most about
/// this much per pane.
pub(super) const ROTATE_BYTES: u64 = 32 << 20;

/// Name of the reading script under cohort's directory on the host.
pub(super) const SCRIPT_NAME: &str = "outlog.sh";

/// The directory of the logs, under cohort's directory on the host.
pub(super) const LOG_DIR: &str = "logs";

/// Prints, for each `OFFSET FILE` pair of its arguments, the file's size on a line,
/// then its bytes from OFFSET to that size, and deletes it; `-` when it is gone. It
/// waits (up to 2 s) for the writer to finish first: the pipe's command touches
/// `FILE.done` once the last byte is in. Logs whose writer finished more than ten
/// minutes ago and that nobody read back are deleted on the way out.
pub(super) const SCRIPT: &str = r#"# cohort: reads back pane output logged while a connection was away.
while [ "$#" -ge 2 ]; do
  off=$1; f=$2; shift 2
  i=0
  while [ ! -e "$f.done" ] && [ "$i" -lt 40 ]; do sleep 0.05; i=$((i + 1)); done
  if [ -f "$f" ]; then
    size=$(wc -c < "$f" | tr -d ' ')
    printf '%s\n' "$size"
    if [ "$size" -gt "$off" ]; then
      tail -c +"$((off + 1))" "$f" | head -c "$((size - off))"
    fi
    rm -f "$f" "$f.done"
  else
    printf -- '-\n'
  fi
done
dir=$(dirname "$0")/logs
find "$dir" -name '*.done' -mmin +10 2>/dev/null | while IFS= read -r done; do
  rm -f "${done%.done}" "$done"
done
exit 0
"#;

/// A shell command printing, for each file, `1` when its writer has finished (the
/// pipe was closed: the pane ended, or another `pipe-pane` replaced it) and `0`
/// while it still writes.
pub(super) fn closed_check(files: &[String]) -> String {
    let mut line = String::from("for f in");
    for file in files {
        line.push(' ');
        line.push_str(&quote::sh(file));
    }
    line.push_str("; do if [ -e \"$f.done\" ]; then echo 1; else echo 0; fi; done");
    line
}

/// The `pipe-pane` command that logs a pane's output to `file`.
pub(super) fn pipe_command(pane: &PaneId, file: &str) -> String {
    let file = quote::sh(file);
    let shell = format!("cat >> {file}; : > {file}.done");
    // tmux expands the command as a format before running it.
    format!(
        "pipe-pane -t {pane} {}",
        quote::arg(&quote::format_literal(&shell))
    )
}

/// One log file's read-back, as [`SCRIPT`] printed it: its size, and its bytes from
/// the offset asked on.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ReadBack {
    /// The file: its whole size, and its bytes from the offset on.
    Read { size: u64, tail: Vec<u8> },
    /// No such file.
    Gone,
}

/// Parses [`SCRIPT`]'s output for `offsets` (the offset asked for each file, in order).
pub(super) fn parse_read_back(mut out: &[u8], offsets: &[u64]) -> Option<Vec<ReadBack>> {
    let mut backs = Vec::with_capacity(offsets.len());
    for &offset in offsets {
        let end = out.iter().position(|&b| b == b'\n')?;
        let head = std::str::from_utf8(&out[..end]).ok()?;
        out = &out[end + 1..];
        if head == "-" {
            backs.push(ReadBack::Gone);
            continue;
        }
        let size: u64 = head.parse().ok()?;
        let len = usize::try_from(size.saturating_sub(offset)).ok()?;
        if out.len() < len {
            return None;
        }
        backs.push(ReadBack::Read {
            size,
            tail: out[..len].to_vec(),
        });
        out = &out[len..];
    }
    Some(backs)
}

/// Every pane's stream of one server, shared by its connections one after another.
pub(super) struct Streams {
    hub: Arc<EventSink>,
    /// Last exit status each pane reported through a `D` mark (see the backend's
    /// `last_marks`).
    last_marks: Arc<Mutex<HashMap<String, i32>>>,
    /// Whether panes are logged on the far side (remote servers only).
    logged: bool,
    panes: HashMap<String, PaneStream>,
    /// Log switches asked for and not yet answered: pane and new file, by marker.
    switches: HashMap<u64, (String, String)>,
    next_marker: u64,
}

#[derive(Default)]
struct PaneStream {
    splitter: OutputSplitter,
    /// The log this side's count runs in.
    log: Option<Log>,
    /// A switch of the log was asked for.
    switching: bool,
    /// Output held back until what the log kept is read back.
    hold: Option<Hold>,
    /// Someone else's `pipe-pane` replaced the log (tmux keeps one pipe per pane):
    /// it is theirs now, and no log of cohort's replaces it.
    foreign: bool,
}

#[derive(Clone, Debug)]
struct Log {
    file: String,
    /// Bytes of `file` that this side received.
    received: u64,
}

struct Hold {
    /// The log to read back from.
    old: Log,
    /// Bytes of the new connection that came before the switch: the old file's tail.
    before_switch: u64,
    held: Vec<u8>,
    /// The pane's exit, reported after what it printed.
    exited: Option<BackendEvent>,
}

/// What a pane's output asks of the backend.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Want {
    /// Nothing.
    Nothing,
    /// A log: the pane has none yet, or its file is full.
    Log,
}

/// A log read back for one pane, or why not.
pub(super) enum Caught {
    /// What the pane printed while no connection was there.
    Missed(Vec<u8>),
    /// Not known: output may be missing here.
    Lost(&'static str),
}

impl Streams {
    pub(super) fn new(
        hub: Arc<EventSink>,
        last_marks: Arc<Mutex<HashMap<String, i32>>>,
        logged: bool,
    ) -> Self {
        Streams {
            hub,
            last_marks,
            logged,
            panes: HashMap::new(),
            switches: HashMap::new(),
            next_marker: 1,
        }
    }

    /// Takes bytes `pane` printed; emits them unless they are held.
    pub(super) fn output(&mut self, pane: &str, data: &[u8]) -> Want {
        if !self.panes.contains_key(pane) {
            self.panes.insert(pane.to_string(), PaneStream::default());
        }
        let Some(stream) = self.panes.get_mut(pane) else {
            return Want::Nothing;
        };
        let len = data.len() as u64;
        if let Some(hold) = &mut stream.hold {
            hold.held.extend_from_slice(data);
            match &mut stream.log {
                Some(log) => log.received += len,
                None => hold.before_switch += len,
            }
            return Want::Nothing;
        }
        if let Some(log) = &mut stream.log {
            log.received += len;
        }
        let want = self.logged
            && !stream.switching
            && !stream.foreign
            && stream
                .log
                .as_ref()
                .is_none_or(|log| log.received >= ROTATE_BYTES);
        if want {
            stream.switching = true;
        }
        let mut pieces = Vec::new();
        stream.splitter.push(data, &mut pieces);
        emit_pieces(&self.hub, &self.last_marks, pane, pieces);
        if want {
            Want::Log
        } else {
            Want::Nothing
        }
    }

    /// Registers a switch of `pane`'s log to `file`: the marker for its command.
    pub(super) fn begin_switch(&mut self, pane: &str, file: String) -> u64 {
        let marker = self.next_marker;
        self.next_marker += 1;
        self.panes.entry(pane.to_string()).or_default().switching = true;
        self.switches.insert(marker, (pane.to_string(), file));
        marker
    }

    /// The switch with `marker` took effect: every byte after this point is in its
    /// file. Returns the file the pane's log left, when it was not held for reading.
    pub(super) fn switched(&mut self, marker: u64) -> Option<String> {
        let (pane, file) = self.switches.remove(&marker)?;
        let stream = self.panes.entry(pane).or_default();
        stream.switching = false;
        let new = Log { file, received: 0 };
        match &stream.hold {
            Some(_) => {
                stream.log = Some(new);
                None
            }
            None => stream.log.replace(new).map(|old| old.file),
        }
    }

    /// The switch with `marker` failed (the pane is gone).
    pub(super) fn switch_failed(&mut self, marker: u64) {
        if let Some((pane, _)) = self.switches.remove(&marker) {
            if let Some(stream) = self.panes.get_mut(&pane) {
                stream.switching = false;
            }
        }
    }

    /// A new connection starts: holds back every logged pane's output until its log
    /// is read back. Returns those panes with their file and the offset to read from.
    pub(super) fn hold_logged(&mut self) {
        if !self.logged {
            return;
        }
        for (pane, stream) in &mut self.panes {
            if stream.log.is_none() && stream.hold.is_none() {
                // Nothing to read back from (no log yet, or someone else's pipe):
                // whatever it printed while no connection was there is lost.
                self.hub.emit(BackendEvent::OutputLost {
                    pane: PaneId(pane.clone()),
                });
                continue;
            }
            if let Some(hold) = &mut stream.hold {
                // Held by an attempt that failed before its read-back: what it held
                // is in the old file too, after the count.
                hold.held.clear();
                hold.before_switch = 0;
                continue;
            }
            if let Some(old) = stream.log.take() {
                stream.switching = true;
                stream.hold = Some(Hold {
                    old,
                    before_switch: 0,
                    held: Vec::new(),
                    exited: None,
                });
            }
        }
    }

    /// What to make of `pane`'s old log, read back as `back`: the bytes missed, or
    /// why they cannot be known.
    pub(super) fn judge(&self, pane: &str, back: &ReadBack) -> Caught {
        let Some(hold) = self.panes.get(pane).and_then(|s| s.hold.as_ref()) else {
            return Caught::Lost("the pane was not held");
        };
        let ReadBack::Read { size, tail } = back else {
            return Caught::Lost("its log on the host was gone");
        };
        // The old file holds what arrived before the break, what was printed while
        // away, and what the new connection brought before the switch.
        let missed = size
            .checked_sub(hold.old.received)
            .and_then(|rest| rest.checked_sub(hold.before_switch));
        let Some(missed) = missed.map(|m| m as usize).filter(|m| *m <= tail.len()) else {
            return Caught::Lost("its log on the host was shorter than what arrived");
        };
        // The file ends with what the new connection brought before the switch; when
        // it does not (tmux drops what its pipe had not written when the pipe is
        // replaced under load), the end of what was missed is not known either.
        let before = hold.before_switch as usize;
        if tail[missed..] != hold.held[..before.min(hold.held.len())] {
            return Caught::Lost("its log on the host did not end as the connection began");
        }
        Caught::Missed(tail[..missed].to_vec())
    }

    /// Ends `pane`'s hold: `caught`'s bytes first, then what was held back. Returns
    /// the log file to delete when the pane ended meanwhile.
    pub(super) fn release(&mut self, pane: &str, caught: Caught) -> Option<String> {
        let stream = self.panes.get_mut(pane)?;
        let hold = stream.hold.take()?;
        let mut pieces = Vec::new();
        match caught {
            Caught::Missed(bytes) => {
                if !bytes.is_empty() {
                    tracing::info!(target: "cohort::tmux", pane, bytes = bytes.len(), "read back output printed while the connection was away");
                }
                stream.splitter.push(&bytes, &mut pieces);
            }
            Caught::Lost(why) => {
                tracing::warn!(target: "cohort::tmux", pane, why, "output printed while the connection was away could not be read back");
                if let Some(bytes) = stream.splitter.flush() {
                    pieces.push(Piece::Bytes(bytes));
                }
                emit_pieces(
                    &self.hub,
                    &self.last_marks,
                    pane,
                    std::mem::take(&mut pieces),
                );
                self.hub.emit(BackendEvent::OutputLost {
                    pane: PaneId(pane.to_string()),
                });
            }
        }
        stream.splitter.push(&hold.held, &mut pieces);
        emit_pieces(&self.hub, &self.last_marks, pane, pieces);
        let exited = hold.exited?;
        let file = self.forget(pane);
        self.hub.emit(exited);
        file
    }

    /// `pane` ended (`exited` says how): reported now, or after what it printed
    /// while away when that is still to be read back. Returns its log's file, to
    /// delete.
    pub(super) fn pane_exited(&mut self, pane: &str, exited: BackendEvent) -> Option<String> {
        if let Some(hold) = self.panes.get_mut(pane).and_then(|s| s.hold.as_mut()) {
            hold.exited = Some(exited);
            return None;
        }
        let file = self.forget(pane);
        self.hub.emit(exited);
        file
    }

    /// The panes held back now, with the log to read back and the offset to read
    /// from.
    pub(super) fn held_logs(&self) -> Vec<(String, String, u64)> {
        self.panes
            .iter()
            .filter_map(|(pane, s)| {
                let old = &s.hold.as_ref()?.old;
                Some((pane.clone(), old.file.clone(), old.received))
            })
            .collect()
    }

    /// Whether any pane has a log to read back after a break.
    pub(super) fn has_logs(&self) -> bool {
        self.panes
            .values()
            .any(|s| s.log.is_some() || s.hold.is_some())
    }

    /// The log file `pane`'s count runs in, if any.
    pub(super) fn log_file(&self, pane: &str) -> Option<String> {
        Some(self.panes.get(pane)?.log.as_ref()?.file.clone())
    }

    /// `pane`'s pipe was taken by someone else: cohort leaves it to them.
    pub(super) fn give_up(&mut self, pane: &str) {
        if let Some(stream) = self.panes.get_mut(pane) {
            stream.foreign = true;
            stream.switching = false;
            stream.log = None;
        }
    }

    /// A log asked for will not come (no connection, or no name for its file).
    pub(super) fn not_switching(&mut self, pane: &str) {
        if let Some(stream) = self.panes.get_mut(pane) {
            stream.switching = false;
        }
    }

    /// The server is a new one: nothing kept belongs to its panes, which reuse the
    /// old ids.
    pub(super) fn server_restarted(&mut self) {
        self.panes.clear();
        self.switches.clear();
    }

    /// tmux dropped some of `pane`'s output for this client (flow control): the
    /// count no longer matches its log, and a mark may be cut.
    pub(super) fn output_dropped(&mut self, pane: &str) {
        if let Some(stream) = self.panes.get_mut(pane) {
            stream.splitter.reset();
            stream.log = None;
        }
    }

    /// `pane` ended: what it held back is emitted; returns its log's file, to delete.
    pub(super) fn forget(&mut self, pane: &str) -> Option<String> {
        let mut stream = self.panes.remove(pane)?;
        if let Some(bytes) = stream.splitter.flush() {
            emit_pieces(&self.hub, &self.last_marks, pane, vec![Piece::Bytes(bytes)]);
        }
        stream.log.map(|log| log.file)
    }

    /// The connection ended. Without logs everything held back is emitted and
    /// forgotten (a new connection starts afresh); with them, the counts stay for the
    /// next connection, and a read-back cut short loses that pane's output. Returns
    /// whether any pane has a log to read back.
    pub(super) fn connection_closed(&mut self) -> bool {
        self.switches.clear();
        let panes: Vec<String> = self.panes.keys().cloned().collect();
        for pane in panes {
            if !self.logged {
                self.forget(&pane);
                continue;
            }
            if self.panes[&pane].hold.is_some() {
                // A pane that ended meanwhile is forgotten; its log goes with the
                // next read-back's sweep.
                self.release(&pane, Caught::Lost("the connection broke again"));
            }
            if let Some(stream) = self.panes.get_mut(&pane) {
                stream.switching = false;
            }
        }
        self.panes.values().any(|s| s.log.is_some())
    }
}

/// Emits `pane`'s shaped pieces, noting the exit statuses its marks carried.
fn emit_pieces(
    hub: &EventSink,
    last_marks: &Mutex<HashMap<String, i32>>,
    pane: &str,
    pieces: Vec<Piece>,
) {
    for piece in pieces {
        let pane = PaneId(pane.to_string());
        hub.emit(match piece {
            Piece::Bytes(bytes) => BackendEvent::Output {
                pane,
                bytes: Bytes::from(bytes),
            },
            Piece::Mark(mark, params) => {
                if let PromptMark::CommandFinished {
                    exit_status: Some(status),
                } = mark
                {
                    last_marks
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(pane.0.clone(), status);
                }
                BackendEvent::Prompt { pane, mark, params }
            }
            Piece::Signal { identity, payload } => BackendEvent::Signal {
                pane,
                identity,
                payload,
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streams() -> (Streams, crate::event::EventStream) {
        let sink = EventSink::new();
        let events = sink.subscribe();
        (
            Streams::new(Arc::new(sink), Default::default(), true),
            events,
        )
    }

    fn drain(events: &mut crate::event::EventStream) -> (Vec<u8>, Vec<PromptMark>, bool) {
        let (mut bytes, mut marks, mut lost) = (Vec::new(), Vec::new(), false);
        while let Ok(event) = events.try_recv() {
            match event {
                BackendEvent::Output { bytes: b, .. } => bytes.extend_from_slice(&b),
                BackendEvent::Prompt { mark, .. } => marks.push(mark),
                BackendEvent::OutputLost { .. } => lost = true,
                _ => {}
            }
        }
        (bytes, marks, lost)
    }

    /// A pane logged to file `a` that received `before`, then a break, then a new
    /// connection that brought `new` before its switch.
    fn broken(before: &[u8], new: &[u8]) -> (Streams, crate::event::EventStream) {
        let (mut streams, events) = streams();
        logged(&mut streams, "a", before);
        streams.connection_closed();
        streams.hold_logged();
        streams.output("%1", new);
        (streams, events)
    }

    /// A pane logged to `file` from the start, having received `before`.
    fn logged(streams: &mut Streams, file: &str, before: &[u8]) {
        assert_eq!(streams.output("%1", b""), Want::Log);
        let marker = streams.begin_switch("%1", file.into());
        assert_eq!(streams.switched(marker), None);
        streams.output("%1", before);
    }

    #[test]
    fn what_was_printed_while_away_comes_before_what_the_new_connection_brought() {
        let (mut streams, mut events) = streams();
        logged(&mut streams, "a", b"one\n\x1b]133;D;0");
        drain(&mut events);
        assert!(streams.connection_closed());
        // The far side's file: everything, including what came after the break.
        let file = b"one\n\x1b]133;D;0\x07away\n\x1b]133;D;3\x07late\n".to_vec();
        streams.hold_logged();
        assert_eq!(streams.held_logs(), vec![("%1".into(), "a".into(), 13)]);
        // The new connection brings "late\n" before the switch and "new\n" after.
        streams.output("%1", b"late\n");
        let marker = streams.begin_switch("%1", "b".into());
        streams.switched(marker);
        streams.output("%1", b"new\n");
        assert_eq!(drain(&mut events).0, b"", "held back");
        let back = ReadBack::Read {
            size: file.len() as u64,
            tail: file[13..].to_vec(),
        };
        let caught = streams.judge("%1", &back);
        streams.release("%1", caught);
        let (bytes, marks, lost) = drain(&mut events);
        // The mark cut by the break reads whole, and the one printed away counts.
        assert_eq!(
            marks,
            vec![
                PromptMark::CommandFinished {
                    exit_status: Some(0)
                },
                PromptMark::CommandFinished {
                    exit_status: Some(3)
                }
            ]
        );
        assert_eq!(
            crate::stream::without_signatures(&bytes).as_ref(),
            b"\x1b]133;D;0\x07away\n\x1b]133;D;3\x07late\nnew\n"
        );
        assert!(!lost);
        // The count goes on in the new file.
        streams.connection_closed();
        streams.hold_logged();
        assert_eq!(streams.held_logs(), vec![("%1".into(), "b".into(), 4)]);
    }

    #[test]
    fn a_log_that_does_not_add_up_is_lost_output_not_a_guess() {
        let (mut streams, mut events) = broken(b"0123456789", b"abc");
        let short = ReadBack::Read {
            size: 11,
            tail: b"x".to_vec(),
        };
        let caught = streams.judge("%1", &short);
        assert!(matches!(caught, Caught::Lost(_)));
        streams.release("%1", caught);
        let (bytes, _, lost) = drain(&mut events);
        assert!(lost);
        assert!(bytes.ends_with(b"abc"), "what was held still comes");
        assert!(matches!(
            streams.judge("%1", &ReadBack::Gone),
            Caught::Lost(_)
        ));
    }

    #[test]
    fn a_log_cut_short_under_the_new_connections_bytes_is_lost_output() {
        let (streams, _events) = broken(b"0123", b"new");
        // The sizes add up, but the file does not end with what the new connection
        // brought before the switch: its end was dropped, and something else is there.
        let back = ReadBack::Read {
            size: 10,
            tail: b"awayXYZ"[..6].to_vec(),
        };
        assert!(matches!(streams.judge("%1", &back), Caught::Lost(_)));
        let whole = ReadBack::Read {
            size: 10,
            tail: b"awanew".to_vec(),
        };
        assert!(matches!(streams.judge("%1", &whole), Caught::Missed(m) if m == b"awa"));
    }

    #[test]
    fn panes_without_a_log_at_a_new_connection_say_their_output_was_lost() {
        let (mut streams, mut events) = streams();
        assert_eq!(streams.output("%2", b"x"), Want::Log); // its log never came
        streams.not_switching("%2");
        drain(&mut events);
        streams.connection_closed();
        streams.hold_logged();
        assert!(drain(&mut events).2, "an OutputLost for %2");
    }

    #[test]
    fn full_logs_ask_for_a_new_file_and_give_the_old_one_up() {
        let (mut streams, _events) = streams();
        logged(&mut streams, "a", b"");
        let big = vec![b'x'; ROTATE_BYTES as usize];
        assert_eq!(streams.output("%1", &big), Want::Log);
        assert_eq!(streams.output("%1", b"more"), Want::Nothing, "asked once");
        let marker = streams.begin_switch("%1", "b".into());
        assert_eq!(streams.switched(marker).as_deref(), Some("a"));
    }

    #[test]
    fn read_backs_parse_sizes_and_bytes() {
        let backs = parse_read_back(b"12\nabc-\n5\n", &[9, 0, 5]).unwrap();
        assert_eq!(
            backs,
            vec![
                ReadBack::Read {
                    size: 12,
                    tail: b"abc".to_vec()
                },
                ReadBack::Gone,
                ReadBack::Read {
                    size: 5,
                    tail: Vec::new()
                },
            ]
        );
        assert_eq!(parse_read_back(b"12\nab", &[9]), None, "cut short");
        assert_eq!(parse_read_back(b"", &[0]), None);
    }
}
