//! Recordings: a session's output written as it happens to an asciicast v2 file
//! (the format `asciinema play` replays), size-bounded like the journals.
//!
//! A recording starts with the screen as it is (drawn with its colours), then follows
//! the pane's journal through the engine's event stream: every output event becomes
//! an `"o"` event with the time since the start. With input marks on, each command
//! the shell starts adds a marker (`"m"`) carrying the text cohort typed, which
//! players show as chapters. It ends when asked, when the session closes or its
//! program exits, or when it reaches its size limit (a last marker says so).
//!
//! The format: <https://docs.asciinema.org/manual/asciicast/v2/> — a JSON header
//! line, then one JSON array per line: `[seconds, code, data]`.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use cohort_backends::{PaneId, PromptMark};
use serde::Serialize;
use tokio::sync::{broadcast, watch};

use crate::{events::EngineEvent, runtime::Runtimes, Terminal, TerminalError};

/// The size a recording may reach unless told otherwise (64 MiB).
pub const DEFAULT_RECORDING_CAP: u64 = 64 << 20;

/// How to record.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// Where to write (default: `<state dir>/recordings/<session>-<unix time>.cast`).
    pub path: Option<PathBuf>,
    /// Add a marker at each command the shell starts, with the text typed.
    pub input_marks: bool,
    /// Stop once the file reaches this many bytes.
    pub max_bytes: u64,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            path: None,
            input_marks: false,
            max_bytes: DEFAULT_RECORDING_CAP,
        }
    }
}

/// A recording, running or ended.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct RecordingInfo {
    /// The session's name.
    pub session: String,
    /// Its pane.
    pub pane: PaneId,
    /// The asciicast file.
    pub path: PathBuf,
    /// Bytes written so far.
    pub bytes: u64,
    /// Whether it is still recording.
    pub recording: bool,
    /// Why it ended, once it has.
    pub ended: Option<String>,
}

/// A running recording: how to stop it and what it has done.
struct Active {
    stop: Arc<watch::Sender<bool>>,
    info: Arc<Mutex<RecordingInfo>>,
    /// Turns true once the file is complete.
    done: watch::Receiver<bool>,
}

/// Every recording this process runs.
#[derive(Default)]
pub struct Recordings {
    dir: PathBuf,
    active: Mutex<HashMap<PaneId, Active>>,
}

impl std::fmt::Debug for Recordings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recordings")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Recordings {
    /// Recordings written under `dir` by default.
    pub fn new(dir: PathBuf) -> Self {
        Recordings {
            dir,
            active: Mutex::new(HashMap::new()),
        }
    }

    fn active(&self) -> std::sync::MutexGuard<'_, HashMap<PaneId, Active>> {
        self.active.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Terminal {
    /// Starts recording the session in `pane` (see the module docs). Recording a
    /// session that is being recorded is refused, with the file it goes to.
    pub async fn record(
        &self,
        pane: &PaneId,
        options: RecordOptions,
    ) -> Result<RecordingInfo, TerminalError> {
        let session = self.session_of(pane).await?;
        if let Some(active) = self.recordings.active().get(pane) {
            let info = active.info.lock().unwrap_or_else(|e| e.into_inner());
            if info.recording {
                return Err(TerminalError::InvalidArgument(format!(
                    "session {:?} is already being recorded to {}: stop that recording first",
                    session.name,
                    info.path.display()
                )));
            }
        }
        if options.max_bytes < 4096 {
            return Err(TerminalError::InvalidArgument(format!(
                "a recording limit of {} bytes leaves no room: give at least 1 MiB",
                options.max_bytes
            )));
        }
        let path = match &options.path {
            Some(path) => path.clone(),
            None => self.recordings.dir.join(format!(
                "{}-{}.cast",
                session.name,
                unix_now_millis() / 1000
            )),
        };
        // Follow the stream before looking at the screen, so nothing printed between
        // the two is missed.
        let events = self.events();
        let start = self.journal_end(pane);
        let screen = self.screen_styled(pane).await?;
        let file = open_new(&path)?;
        let header = Header {
            version: 2,
            width: screen.size.cols,
            height: screen.size.rows,
            timestamp: unix_now_millis() / 1000,
            title: &session.name,
            env: HeaderEnv {
                term: "xterm-256color",
                shell: std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into()),
            },
        };
        let info = Arc::new(Mutex::new(RecordingInfo {
            session: session.name.clone(),
            pane: pane.clone(),
            path: path.clone(),
            bytes: 0,
            recording: true,
            ended: None,
        }));
        let mut writer = CastWriter {
            file: std::io::BufWriter::new(file),
            bytes: 0,
            max: options.max_bytes,
            started: Instant::now(),
            pending: Vec::new(),
            info: info.clone(),
        };
        let header = serde_json::to_string(&header).map_err(|e| {
            TerminalError::Internal(format!("could not write a recording's header: {e}"))
        })?;
        writer.line(&header).map_err(|e| io_error(&path, e))?;
        writer
            .event("o", &first_frame(&screen))
            .map_err(|e| io_error(&path, e))?;
        writer.flush().map_err(|e| io_error(&path, e))?;
        let (stop, stopped) = watch::channel(false);
        let (finished, done) = watch::channel(false);
        let follower = Follower {
            runtimes: Arc::downgrade(&self.runtimes),
            pane: pane.clone(),
            position: start,
            input_marks: options.input_marks,
        };
        // Every process, and every page, learns that the session is being recorded,
        // and when it no longer is.
        let shown = path.display().to_string();
        let _ = self.backend.stamp_recording(pane, Some(&shown)).await;
        let bus = self.runtimes.bus().clone();
        let recorded = pane.clone();
        let changed = move |path: Option<String>| EngineEvent::RecordingChanged {
            session: session.name.clone(),
            pane: recorded.clone(),
            path,
        };
        bus.publish(changed(Some(shown)));
        let (backend, recorded) = (self.backend.clone(), pane.clone());
        tokio::spawn(async move {
            let why = follower.run(events, stopped, &mut writer).await;
            writer.finish(&why);
            let _ = backend.stamp_recording(&recorded, None).await;
            bus.publish(changed(None));
            let _ = finished.send(true);
        });
        let snapshot = info.lock().unwrap_or_else(|e| e.into_inner()).clone();
        self.recordings.active().insert(
            pane.clone(),
            Active {
                stop: Arc::new(stop),
                info,
                done,
            },
        );
        Ok(snapshot)
    }

    /// Stops the recording of the session in `pane` and waits until its file is
    /// complete; `None` when it was not being recorded.
    pub async fn stop_recording(
        &self,
        pane: &PaneId,
    ) -> Result<Option<RecordingInfo>, TerminalError> {
        let Some((stop, info, mut done)) = self
            .recordings
            .active()
            .get(pane)
            .map(|a| (a.stop.clone(), a.info.clone(), a.done.clone()))
        else {
            return Ok(None);
        };
        let _ = stop.send(true);
        let _ = done.wait_for(|d| *d).await;
        self.recordings.active().remove(pane);
        let info = info.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Ok(Some(info))
    }

    /// The recording of the session in `pane`, running or ended, if there is one.
    pub fn recording(&self, pane: &PaneId) -> Option<RecordingInfo> {
        self.recordings
            .active()
            .get(pane)
            .map(|a| a.info.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// Waits until the recording of the session in `pane` ends (its session closed,
    /// its program exited, its size limit, or a stop); `None` when there is none.
    pub async fn recording_ended(&self, pane: &PaneId) -> Option<RecordingInfo> {
        let (info, mut done) = self
            .recordings
            .active()
            .get(pane)
            .map(|a| (a.info.clone(), a.done.clone()))?;
        let _ = done.wait_for(|d| *d).await;
        let info = info.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Some(info)
    }
}

/// The asciicast v2 header line.
#[derive(Serialize)]
struct Header<'a> {
    version: u8,
    width: u16,
    height: u16,
    timestamp: u64,
    title: &'a str,
    env: HeaderEnv,
}

#[derive(Serialize)]
struct HeaderEnv {
    #[serde(rename = "TERM")]
    term: &'static str,
    #[serde(rename = "SHELL")]
    shell: String,
}

/// The screen as a terminal would draw it from a blank one: clear, the rows with
/// their styles, the cursor where it is.
fn first_frame(screen: &cohort_backends::Screen) -> String {
    let mut frame = String::from("\x1b[0m\x1b[H\x1b[2J");
    frame.push_str(&screen.rows.join("\x1b[0m\r\n"));
    frame.push_str(&format!(
        "\x1b[0m\x1b[{};{}H",
        screen.cursor.y + 1,
        screen.cursor.x + 1
    ));
    frame
}

/// Writes events, keeping count of the bytes and stopping at the limit.
struct CastWriter {
    file: std::io::BufWriter<std::fs::File>,
    bytes: u64,
    max: u64,
    started: Instant,
    /// Bytes of a character split across two outputs, kept for the next.
    pending: Vec<u8>,
    info: Arc<Mutex<RecordingInfo>>,
}

/// Room kept under the limit for the last marker.
const CLOSING_ROOM: u64 = 512;

impl CastWriter {
    fn line(&mut self, line: &str) -> std::io::Result<()> {
        self.file.write_all(line.as_bytes())?;
        self.file.write_all(b"\n")?;
        self.bytes += line.len() as u64 + 1;
        Ok(())
    }

    /// Writes one event; `Ok(false)` when it would pass the limit (nothing written).
    fn event(&mut self, code: &str, data: &str) -> std::io::Result<bool> {
        let seconds = self.started.elapsed().as_secs_f64();
        let line = serde_json::to_string(&(Seconds(seconds), code, data))
            .map_err(std::io::Error::other)?;
        if self.bytes + line.len() as u64 + 1 + CLOSING_ROOM > self.max {
            return Ok(false);
        }
        self.line(&line)?;
        Ok(true)
    }

    /// Writes output bytes as text, carrying a split character to the next call;
    /// `Ok(false)` at the limit.
    fn output(&mut self, bytes: &[u8]) -> std::io::Result<bool> {
        self.pending.extend_from_slice(bytes);
        let text = take_text(&mut self.pending);
        if text.is_empty() {
            return Ok(true);
        }
        self.event("o", &text)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        self.info.lock().unwrap_or_else(|e| e.into_inner()).bytes = self.bytes;
        Ok(())
    }

    /// Ends the recording with a marker saying why, when that is not the caller's
    /// own stop.
    fn finish(&mut self, why: &str) {
        if why != STOPPED {
            let line = serde_json::to_string(&(
                Seconds(self.started.elapsed().as_secs_f64()),
                "m",
                format!("recording ended: {why}"),
            ));
            if let Ok(line) = line {
                let _ = self.line(&line);
            }
        }
        let _ = self.flush();
        let mut info = self.info.lock().unwrap_or_else(|e| e.into_inner());
        info.bytes = self.bytes;
        info.recording = false;
        info.ended = Some(why.to_string());
    }
}

/// Seconds with microsecond precision, as asciinema writes them.
struct Seconds(f64);

impl Serialize for Seconds {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64((self.0 * 1e6).round() / 1e6)
    }
}

/// Why a recording ended when its owner stopped it.
const STOPPED: &str = "stopped";

/// Follows one pane's output into a recording.
struct Follower {
    runtimes: Weak<Runtimes>,
    pane: PaneId,
    position: u64,
    input_marks: bool,
}

impl Follower {
    /// Records until stopped or the pane is gone; returns why it ended.
    async fn run(
        mut self,
        mut events: broadcast::Receiver<EngineEvent>,
        mut stopped: watch::Receiver<bool>,
        writer: &mut CastWriter,
    ) -> String {
        loop {
            let event = tokio::select! {
                event = events.recv() => event,
                _ = stopped.changed() => {
                    // What the pane printed before the stop belongs in the file.
                    let _ = self.catch_up(u64::MAX, writer);
                    return STOPPED.into();
                }
            };
            let outcome = match event {
                Ok(event) if event.pane() != Some(&self.pane) => continue,
                Ok(EngineEvent::Output { to, .. }) => self.catch_up(to, writer),
                // Fallen behind: whatever was missed is in the journal.
                Err(broadcast::error::RecvError::Lagged(_)) => self.catch_up(u64::MAX, writer),
                Ok(EngineEvent::CommandStarted { offset, .. }) if self.input_marks => {
                    let label = self
                        .command_label(offset)
                        .unwrap_or_else(|| "command".into());
                    writer.event("m", &label).map(|ok| ok.then_some(()))
                }
                Ok(EngineEvent::PaneExited { exit_status, .. }) => {
                    let _ = self.catch_up(u64::MAX, writer);
                    return match exit_status {
                        Some(status) => {
                            format!("the session's program exited with status {status}")
                        }
                        None => "the session's program exited".into(),
                    };
                }
                Ok(EngineEvent::SessionClosed { .. }) => {
                    let _ = self.catch_up(u64::MAX, writer);
                    return "the session was closed".into();
                }
                Ok(_) => Ok(Some(())),
                Err(broadcast::error::RecvError::Closed) => {
                    return "the engine stopped".into();
                }
            };
            match outcome {
                Ok(Some(())) => {}
                Ok(None) => return format!("it reached its size limit of {} bytes", writer.max),
                Err(e) => return format!("writing it failed: {e}"),
            }
            if events.is_empty() {
                if let Err(e) = writer.flush() {
                    return format!("writing it failed: {e}");
                }
            }
        }
    }

    /// The marker for the command that started at `start`: `$ TEXT` when cohort
    /// typed it in this process, else the line the terminal showed when it started
    /// (prompt and command as echoed, whoever typed it).
    fn command_label(&self, start: u64) -> Option<String> {
        let runtimes = self.runtimes.upgrade()?;
        let runtime = runtimes.get(&self.pane);
        let mut data = runtime.lock();
        // Where the line that started it began: the last prompt, or the last end.
        let prompt = data
            .marks
            .iter()
            .rev()
            .filter(|m| m.offset <= start)
            .find(|m| m.mark == PromptMark::PromptStart || m.mark.finished().is_some())
            .map_or(0, |m| m.offset);
        let typed = data
            .commands
            .iter()
            .rev()
            .find(|c| !c.continues && c.offset >= prompt && c.offset <= start)
            .map(|c| format!("$ {}", c.text.lines().next().unwrap_or_default()));
        if typed.is_some() {
            return typed;
        }
        let from = prompt
            .max(data.journal.floor())
            .max(start.saturating_sub(4096));
        let bytes = data.journal.read(from, start).ok()?;
        let plain = strip_ansi_escapes::strip(&bytes);
        let text = String::from_utf8_lossy(&plain);
        let line = text
            .split(['\r', '\n'])
            .rfind(|l| !l.trim().is_empty())?
            .trim()
            .to_string();
        Some(line)
    }

    /// Records the pane's output from where the recording is up to `to` (or the
    /// journal's end); `Ok(None)` at the size limit.
    fn catch_up(&mut self, to: u64, writer: &mut CastWriter) -> std::io::Result<Option<()>> {
        let Some(runtimes) = self.runtimes.upgrade() else {
            return Ok(Some(()));
        };
        let (bytes, end) = {
            let runtime = runtimes.get(&self.pane);
            let mut data = runtime.lock();
            let end = to.min(data.journal.len());
            let from = self.position.max(data.journal.floor());
            (data.journal.read(from, end), end)
        };
        let bytes = bytes?;
        self.position = self.position.max(end);
        if bytes.is_empty() {
            return Ok(Some(()));
        }
        Ok(writer.output(&bytes)?.then_some(()))
    }
}

/// The text at the start of `pending`, taking it out: valid UTF-8, invalid bytes as
/// U+FFFD, and a character cut short at the end left for the next output.
pub fn take_text(pending: &mut Vec<u8>) -> String {
    let mut text = String::new();
    let mut rest: &[u8] = pending;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                text.push_str(valid);
                rest = &[];
                break;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match e.error_len() {
                    Some(bad) => {
                        text.push('\u{FFFD}');
                        rest = &after[bad..];
                    }
                    None => {
                        rest = after;
                        break;
                    }
                }
            }
        }
    }
    let kept = rest.to_vec();
    *pending = kept;
    text
}

/// Creates the file (and its directory), refusing to overwrite one.
fn open_new(path: &std::path::Path) -> Result<std::fs::File, TerminalError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    }
    crate::private::file_options()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => TerminalError::InvalidArgument(format!(
                "{} exists already: choose another path (a recording never overwrites a file)",
                path.display()
            )),
            _ => io_error(path, e),
        })
}

fn io_error(path: &std::path::Path, e: std::io::Error) -> TerminalError {
    TerminalError::InvalidArgument(format!(
        "cannot write the recording {}: {e}",
        path.display()
    ))
}

fn unix_now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_characters_wait_for_their_rest_and_bad_bytes_are_replaced() {
        let mut pending = "é".as_bytes()[..1].to_vec();
        assert_eq!(take_text(&mut pending), "");
        assert_eq!(pending.len(), 1);
        pending.extend_from_slice(&"é".as_bytes()[1..]);
        pending.extend_from_slice(b"x\xffy");
        assert_eq!(take_text(&mut pending), "éx\u{FFFD}y");
        assert!(pending.is_empty());
    }

    #[test]
    fn times_are_written_to_the_microsecond() {
        let line = serde_json::to_string(&(Seconds(1.234_567_89), "o", "a\u{1b}[0m")).unwrap();
        assert_eq!(line, r#"[1.234568,"o","a\u001b[0m"]"#);
    }
}
