//! The async control-mode client: one `tmux -C` child over pipes.
//!
//! Commands are written one per line under a writer lock; each registers a reply
//! slot in a FIFO before its line is written, and the reader task fills slots in
//! order as `%begin … %end` blocks marked as ours come back. Commands can be
//! pipelined: replies arrive in the order the commands were written.
//!
//! The reader task drains stdout continuously (tmux blocks a pane's program when
//! nobody reads) and hands every notification to the owner's handler, in order, on
//! the reader task itself. A command can carry a marker: the handler receives it
//! the moment its reply is read, between the notifications tmux sent before the
//! command ran and those after (see [`ControlClient::pipeline_marked`]). When the
//! stream ends (`%exit`, the server died, the child
//! was killed) every waiting command fails with [`BackendError::Disconnected`] and
//! the handler receives [`ControlEvent::Closed`].
//!
//! A client is never killed before tmux has answered its attach: tmux up to 3.5
//! crashes, taking every session with it, when a control client goes while it is
//! still being identified (seen here with tmux 3.3a: a few hundred clients killed
//! within milliseconds of starting bring the server down). A client closed before
//! then is killed once it has attached, or after ten seconds.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::oneshot;

use crate::error::{BackendError, Result};

use super::parse::{Event, Notification, Parser, Reply};

/// What the reader task reports to the connection's owner.
#[derive(Debug)]
pub enum ControlEvent {
    /// A notification, in stream order.
    Notification(Notification),
    /// The command carrying this marker ran (tmux answered it without an error):
    /// every notification tmux sent before it ran came before this event, every later
    /// one comes after.
    Marker(u64),
    /// The stream ended; no more events follow.
    Closed {
        /// `%exit`'s reason, or what else ended it.
        reason: String,
        /// tmux ended it (`%exit`: the server exited, or detached the client); `false`
        /// when the stream broke under it (the client was killed, a link was cut).
        by_server: bool,
    },
}

/// Receives the reader task's events. Runs on the reader task: keep it quick.
pub type EventHandler = Box<dyn FnMut(ControlEvent) + Send>;

#[derive(Default)]
struct Pending {
    slots: VecDeque<Slot>,
    closed: Option<String>,
}

/// A command waiting for its reply.
struct Slot {
    reply: oneshot::Sender<Reply>,
    /// Handed to the event handler when the reply is read.
    marker: Option<u64>,
    /// An `if-shell` with both branches: when tmux accepts it, the branch it runs is
    /// answered in a block of its own, flagged as ours, right after this one (tmux
    /// inserts the branch after the command that queued it, before anything written
    /// later). That block goes here, not to the next command.
    branch: Option<oneshot::Sender<Reply>>,
}

/// A live control-mode connection.
pub struct ControlClient {
    writer: tokio::sync::Mutex<ChildStdin>,
    pending: Arc<Mutex<Pending>>,
    child: Mutex<Option<Child>>,
    reader: tokio::task::JoinHandle<()>,
    peer: Option<Peer>,
    /// Becomes true once tmux answered the attach (or the stream ended): from then on
    /// the client may be killed.
    attached: tokio::sync::watch::Receiver<bool>,
    /// Set when the connection was dropped: whatever the reader still reads (a client
    /// dropped while attaching, until it is killed) goes to no one.
    discarding: Arc<std::sync::atomic::AtomicBool>,
}

/// How long a client closed before tmux answered its attach is given to attach
/// before it is killed anyway (see the module's overview).
const ATTACH_GRACE: Duration = Duration::from_secs(10);

/// The far end of a connection that crosses a network (tmux on a remote host over
/// ssh): named in errors, and a connection to it that stops answering is closed,
/// since the link under it is likelier lost than its tmux slow.
#[derive(Clone, Debug)]
pub struct Peer {
    /// The host's name in cohort.
    pub host: String,
    /// Its SSH destination.
    pub destination: String,
    /// Set when a command went unanswered and the connection was closed for it.
    pub went_silent: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for ControlClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlClient").finish_non_exhaustive()
    }
}

const BACKEND: &str = "tmux";

/// The most output of one pane held to be joined with the next before it is handed on.
const HELD_OUTPUT_MAX: usize = 256 << 10;

/// Round trips to tmux over control mode in this process: each write of one or more
/// command lines that waits for their answers counts once.
static ROUND_TRIPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Round trips to tmux this process made so far (every control connection, every
/// backend): what a benchmark reads around one operation to count its round trips.
pub fn round_trips() -> u64 {
    ROUND_TRIPS.load(std::sync::atomic::Ordering::Relaxed)
}

/// How long a command waits for tmux to take it and answer. tmux answers in
/// milliseconds; this only ends the wait on a server that is stopped or wedged.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(15);

/// Longest command text kept in error messages.
const MAX_CMD_IN_ERROR: usize = 120;

impl ControlClient {
    /// Starts `command` (a prepared `tmux … -C …` invocation) and waits until tmux has
    /// answered the attach, so the first command's reply cannot be confused with it.
    pub async fn start(
        command: tokio::process::Command,
        handler: EventHandler,
    ) -> Result<ControlClient> {
        Self::start_with(command, handler, None).await
    }

    /// [`Self::start`] for a connection to `peer` across a network.
    pub async fn start_remote(
        command: tokio::process::Command,
        handler: EventHandler,
        peer: Peer,
    ) -> Result<ControlClient> {
        Self::start_with(command, handler, Some(peer)).await
    }

    async fn start_with(
        mut command: tokio::process::Command,
        mut handler: EventHandler,
        peer: Option<Peer>,
    ) -> Result<ControlClient> {
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| BackendError::io("starting the tmux control client", e))?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");

        let stderr_text = Arc::new(Mutex::new(String::new()));
        {
            let stderr_text = stderr_text.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let _ = stderr.read_to_end(&mut buf).await;
                let text = String::from_utf8_lossy(&buf).trim().to_string();
                if !text.is_empty() {
                    tracing::debug!(target: "cohort::tmux", stderr = %text, "tmux control client stderr");
                }
                *stderr_text.lock().unwrap_or_else(|e| e.into_inner()) = text;
            });
        }

        let pending = Arc::new(Mutex::new(Pending::default()));
        let (ready_tx, ready_rx) = oneshot::channel::<()>();
        let (attached_tx, attached) = tokio::sync::watch::channel(false);
        let discarding = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let pending = pending.clone();
            let discarding = discarding.clone();
            let mut handler = move |event: ControlEvent| {
                if !discarding.load(std::sync::atomic::Ordering::Relaxed) {
                    handler(event);
                }
            };
            tokio::spawn(async move {
                let mut ready_tx = Some(ready_tx);
                // A pipe holds 64 KiB: no read returns more.
                let mut reader = BufReader::with_capacity(64 * 1024, stdout);
                let mut parser = Parser::new();
                let mut line = Vec::with_capacity(4096);
                let mut exit_reason: Option<String> = None;
                // A pane's output read in one go is handed on as one notification
                // (see `Notification::join`): held while the lines read with it
                // are parsed, never while waiting for more (a line read only in
                // part is waited for).
                let mut held: Option<Notification> = None;
                loop {
                    if held.as_ref().is_some_and(|h| {
                        !reader.buffer().contains(&b'\n') || h.output_len() >= HELD_OUTPUT_MAX
                    }) {
                        handler(ControlEvent::Notification(held.take().expect("held")));
                    }
                    line.clear();
                    match reader.read_until(b'\n', &mut line).await {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e) => {
                            exit_reason
                                .get_or_insert_with(|| format!("reading from tmux failed: {e}"));
                            break;
                        }
                    }
                    if line.last() == Some(&b'\n') {
                        line.pop();
                    }
                    let event = match parser.feed_line(&line) {
                        None => continue,
                        Some(Event::Notification(n)) if n.output_len() > 0 => {
                            held = Some(match held.take() {
                                None => n,
                                Some(mut h) => match h.join(n) {
                                    None => h,
                                    Some(n) => {
                                        handler(ControlEvent::Notification(h));
                                        n
                                    }
                                },
                            });
                            continue;
                        }
                        Some(event) => event,
                    };
                    // Anything else comes after the output before it.
                    if let Some(h) = held.take() {
                        handler(ControlEvent::Notification(h));
                    }
                    match event {
                        Event::Reply(reply) => {
                            if let Some(tx) = ready_tx.take() {
                                // The first block answers the attach itself.
                                let _ = tx.send(());
                                let _ = attached_tx.send(true);
                                if !reply.ours {
                                    continue;
                                }
                            }
                            if reply.ours {
                                let slot = lock(&pending).slots.pop_front();
                                match slot {
                                    Some(slot) => {
                                        // A command tmux refused changed nothing.
                                        if let Some(marker) = slot.marker.filter(|_| reply.ok) {
                                            handler(ControlEvent::Marker(marker));
                                        }
                                        if let Some(branch) = slot.branch.filter(|_| reply.ok) {
                                            lock(&pending).slots.push_front(Slot {
                                                reply: branch,
                                                marker: None,
                                                branch: None,
                                            });
                                        }
                                        let _ = slot.reply.send(reply);
                                    }
                                    None => tracing::warn!(
                                        target: "cohort::tmux",
                                        number = reply.number,
                                        "reply with no command waiting for it"
                                    ),
                                }
                            }
                        }
                        Event::Notification(Notification::Exit { reason }) => {
                            exit_reason = Some(
                                reason.unwrap_or_else(|| "tmux detached the control client".into()),
                            );
                        }
                        Event::Notification(n) => handler(ControlEvent::Notification(n)),
                    }
                }
                if let Some(h) = held.take() {
                    handler(ControlEvent::Notification(h));
                }
                let by_server = exit_reason.is_some();
                let reason = exit_reason.unwrap_or_else(|| "the tmux control client exited".into());
                {
                    let mut p = lock(&pending);
                    // A reason given when the connection was closed on purpose (the
                    // host that stopped answering) stays: it says more.
                    p.closed.get_or_insert_with(|| reason.clone());
                    p.slots.clear(); // dropping the senders fails every waiting command
                }
                let _ = attached_tx.send(true);
                handler(ControlEvent::Closed { reason, by_server });
            })
        };

        let client = ControlClient {
            writer: tokio::sync::Mutex::new(stdin),
            pending,
            child: Mutex::new(Some(child)),
            reader,
            peer,
            attached,
            discarding,
        };
        match tokio::time::timeout(Duration::from_secs(10), ready_rx).await {
            Ok(Ok(())) => Ok(client),
            Ok(Err(_)) => {
                // The reader ended before any reply: tmux refused to start or attach.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let stderr = stderr_text
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                Err(BackendError::Disconnected {
                    backend: BACKEND,
                    reason: if stderr.is_empty() {
                        "tmux exited before the control client attached".into()
                    } else {
                        format!("tmux exited before the control client attached: {stderr}")
                    },
                })
            }
            Err(_) => Err(client.unanswered("attach", Duration::from_secs(10))),
        }
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        lock(&self.pending).closed.is_some()
    }

    /// Runs one command and returns its reply; `%error` replies become
    /// [`BackendError::Tmux`].
    pub async fn command(&self, line: &str) -> Result<Reply> {
        let mut replies = self.pipeline(&[line]).await?;
        replies.pop().expect("one reply per command")
    }

    /// Runs an `if-shell -F` line that names both branches (`if-shell -F COND THEN
    /// ELSE`) and returns the reply of the branch that ran: tmux answers such a line
    /// twice, once for the `if-shell` and once for its branch. An `if-shell` through
    /// any other method is refused, since its second answer would be taken as the next
    /// command's and every reply after it would go to the wrong command.
    pub async fn if_shell(&self, line: &str) -> Result<Reply> {
        let (mut replies, branch) = self
            .try_branching(&[line])
            .await
            .map_err(Failure::into_error)?;
        replies.pop().expect("one reply per command")?;
        branch
    }

    /// Runs `lines`, one of which is an `if-shell -F COND THEN ELSE` (see
    /// [`Self::if_shell`]), in one round trip: each line's reply, and the reply of the
    /// branch that ran (an error when the `if-shell` itself failed). A lost connection
    /// says whether the lines left (see [`Failure`]).
    pub async fn try_branching<S: AsRef<str>>(
        &self,
        lines: &[S],
    ) -> std::result::Result<(Vec<Result<Reply>>, Result<Reply>), Failure> {
        let Some(at) = lines.iter().position(|l| queues_commands(l.as_ref())) else {
            return Err(Failure::Sent(BackendError::InvalidArgument(
                "internal: no if-shell among the lines".into(),
            )));
        };
        let line = lines[at].as_ref();
        let (tx, rx) = oneshot::channel();
        let deadline = tokio::time::Instant::now() + COMMAND_TIMEOUT;
        let replies = self.write_and_wait(lines, &[], Some(tx)).await?;
        if let Err(e) = &replies[at] {
            let failed = Err(BackendError::Tmux {
                cmd: shorten(line),
                message: e.to_string(),
            });
            return Ok((replies, failed));
        }
        let reply = match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(reply)) if reply.ok => Ok(reply),
            Ok(Ok(reply)) => Err(BackendError::Tmux {
                cmd: shorten(line),
                message: reply.text(),
            }),
            Ok(Err(_)) => Err(disconnected(
                lock(&self.pending)
                    .closed
                    .as_deref()
                    .unwrap_or("tmux went away"),
            )),
            Err(_) => return Err(Failure::Sent(self.unanswered(line, COMMAND_TIMEOUT))),
        };
        Ok((replies, reply))
    }

    /// Writes several commands back to back and waits for all replies, in order.
    /// The outer error is a lost connection; each inner result is that command's.
    pub async fn pipeline<S: AsRef<str>>(&self, lines: &[S]) -> Result<Vec<Result<Reply>>> {
        self.try_pipeline(lines).await.map_err(Failure::into_error)
    }

    /// [`Self::pipeline`], saying whether a lost connection lost the lines before they
    /// left ([`Failure::Unsent`]: safe to send on a new connection) or after (they may
    /// have run).
    pub async fn try_pipeline<S: AsRef<str>>(
        &self,
        lines: &[S],
    ) -> std::result::Result<Vec<Result<Reply>>, Failure> {
        self.try_pipeline_marked(lines, &[]).await
    }

    /// [`Self::pipeline`], each line with the marker at its index in `markers` (none
    /// past its end): the event handler receives [`ControlEvent::Marker`] when that
    /// line's reply is read, so it knows which notifications came before the command
    /// ran and which after.
    pub async fn pipeline_marked<S: AsRef<str>>(
        &self,
        lines: &[S],
        markers: &[Option<u64>],
    ) -> Result<Vec<Result<Reply>>> {
        self.try_pipeline_marked(lines, markers)
            .await
            .map_err(Failure::into_error)
    }

    async fn try_pipeline_marked<S: AsRef<str>>(
        &self,
        lines: &[S],
        markers: &[Option<u64>],
    ) -> std::result::Result<Vec<Result<Reply>>, Failure> {
        use tracing::Instrument;
        let span = crate::otel_span!(
            "tmux command",
            backend = "tmux",
            command = %command_names(lines),
            otel.status_code = tracing::field::Empty,
        );
        let replies = self
            .write_and_wait(lines, markers, None)
            .instrument(span.clone())
            .await;
        if !matches!(&replies, Ok(r) if r.iter().all(Result::is_ok)) {
            span.record("otel.status_code", "ERROR");
        }
        replies
    }

    /// [`Self::pipeline`]'s work: writes the lines, then waits for their replies.
    ///
    /// A tmux that does not answer (stopped, or wedged) is reported within
    /// [`COMMAND_TIMEOUT`] instead of holding the caller for ever. A reply that comes
    /// later still takes its place in the queue, so the replies that follow stay
    /// matched to their commands; a write that cannot finish ends the connection,
    /// since a half-written line would run as part of the next command.
    ///
    /// `branch` takes the second answer of an `if-shell` (see [`Self::if_shell`]): the
    /// one line among `lines` that queues commands. tmux runs a branch right after its
    /// `if-shell`, before the lines written after it, so its answer comes next.
    async fn write_and_wait<S: AsRef<str>>(
        &self,
        lines: &[S],
        markers: &[Option<u64>],
        mut branch: Option<oneshot::Sender<Reply>>,
    ) -> std::result::Result<Vec<Result<Reply>>, Failure> {
        ROUND_TRIPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::trace!(target: "cohort::tmux", commands = %command_names(lines), "round trip");
        let deadline = tokio::time::Instant::now() + COMMAND_TIMEOUT;
        let unanswered = |lines: &[S]| {
            self.unanswered(lines.first().map_or("", |l| l.as_ref()), COMMAND_TIMEOUT)
        };
        let queueing = lines.iter().filter(|l| queues_commands(l.as_ref())).count();
        if queueing != usize::from(branch.is_some()) {
            return Err(Failure::Unsent(BackendError::InvalidArgument(format!(
                "internal: `{}` holds {queueing} line(s) answered twice; send one, with `if_shell`",
                shorten(lines.first().map_or("", |l| l.as_ref()))
            ))));
        }
        let mut receivers = Vec::with_capacity(lines.len());
        {
            let mut writer = tokio::time::timeout_at(deadline, self.writer.lock())
                .await
                .map_err(|_| Failure::Sent(unanswered(lines)))?;
            let mut buf = Vec::new();
            for line in lines {
                let line = line.as_ref();
                if line.is_empty() || line.contains('\n') {
                    // An empty line would detach the client; a newline would split the command.
                    return Err(Failure::Sent(BackendError::InvalidArgument(format!(
                        "internal: tmux command line must be one non-empty line: {:?}",
                        shorten(line)
                    ))));
                }
                buf.extend_from_slice(line.as_bytes());
                buf.push(b'\n');
            }
            {
                let mut pending = lock(&self.pending);
                if let Some(reason) = &pending.closed {
                    return Err(Failure::Unsent(disconnected(reason)));
                }
                for (index, line) in lines.iter().enumerate() {
                    let (tx, rx) = oneshot::channel();
                    pending.slots.push_back(Slot {
                        reply: tx,
                        marker: markers.get(index).copied().flatten(),
                        branch: if queues_commands(line.as_ref()) {
                            branch.take()
                        } else {
                            None
                        },
                    });
                    receivers.push(rx);
                }
            }
            let written = tokio::time::timeout_at(deadline, async {
                writer.write_all(&buf).await?;
                writer.flush().await
            })
            .await;
            let Ok(written) = written else {
                self.shutdown();
                return Err(Failure::Sent(unanswered(lines)));
            };
            if let Err(e) = written {
                // Nothing reads the pipe any more: the lines never reached tmux. The
                // connection is over from now on (the reader will see EOF and fail the
                // slots registered).
                let reason = format!("writing to tmux failed: {e}");
                lock(&self.pending)
                    .closed
                    .get_or_insert_with(|| reason.clone());
                return Err(Failure::Unsent(BackendError::Disconnected {
                    backend: BACKEND,
                    reason,
                }));
            }
        }
        let mut out = Vec::with_capacity(receivers.len());
        for (rx, line) in receivers.into_iter().zip(lines) {
            let reply = tokio::time::timeout_at(deadline, rx)
                .await
                .map_err(|_| Failure::Sent(unanswered(std::slice::from_ref(line))))?
                .map_err(|_| {
                    let reason = lock(&self.pending)
                        .closed
                        .clone()
                        .unwrap_or_else(|| "tmux went away".into());
                    Failure::Sent(disconnected(&reason))
                })?;
            out.push(if reply.ok {
                Ok(reply)
            } else {
                Err(BackendError::Tmux {
                    cmd: shorten(line.as_ref()),
                    message: reply.text(),
                })
            });
        }
        Ok(out)
    }

    /// The error for `line` left unanswered for `waited`. A connection across a
    /// network is closed with it: when the link is lost, every later command would wait
    /// as long again until ssh's keepalives gave up, where a new connection fails at
    /// once with ssh's words, and comes back (reading back what was missed) as soon as
    /// the host answers.
    fn unanswered(&self, line: &str, waited: Duration) -> BackendError {
        let after_ms = waited.as_millis() as u64;
        match &self.peer {
            None => BackendError::Timeout {
                what: format!(
                    "tmux to answer `{}`: is the tmux server stopped or overloaded?",
                    shorten(line)
                ),
                after_ms,
            },
            Some(peer) => {
                tracing::warn!(target: "cohort::tmux", host = %peer.host, after_ms, "the host stopped answering: closing its connection");
                peer.went_silent
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                let reason = format!("host {} stopped answering", peer.host);
                lock(&self.pending).closed.get_or_insert(reason);
                self.shutdown();
                BackendError::HostSilent {
                    host: peer.host.clone(),
                    destination: peer.destination.clone(),
                    cmd: shorten(line),
                    after_ms,
                }
            }
        }
    }

    /// Ends the connection: the child is killed (once it has attached, see the
    /// module's overview) and the reader stops.
    pub fn shutdown(&self) {
        let Some(mut child) = self.child.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        let mut attached = self.attached.clone();
        if *attached.borrow() {
            let _ = child.start_kill();
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _ = tokio::time::timeout(ATTACH_GRACE, attached.wait_for(|a| *a)).await;
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                });
            }
            Err(_) => {
                let _ = child.start_kill();
            }
        }
    }
}

impl crate::link::Closable for ControlClient {
    fn is_closed(&self) -> bool {
        ControlClient::is_closed(self)
    }
}

impl Drop for ControlClient {
    fn drop(&mut self) {
        // A client still attaching keeps its reader, which tells when it has; the
        // reader ends with the client.
        let attached = *self.attached.borrow();
        // No one follows this connection now, not even its end.
        self.discarding
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.shutdown();
        if attached {
            self.reader.abort();
        }
    }
}

fn lock(pending: &Mutex<Pending>) -> std::sync::MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(|e| e.into_inner())
}

/// How a pipeline failed on its connection.
#[derive(Debug)]
pub enum Failure {
    /// Before its lines left: nothing of it ran, so it can go on a new connection.
    Unsent(BackendError),
    /// After they left, or for another reason: it may have run.
    Sent(BackendError),
}

impl Failure {
    /// The error, whichever way it failed.
    pub fn into_error(self) -> BackendError {
        match self {
            Failure::Unsent(e) | Failure::Sent(e) => e,
        }
    }
}

fn disconnected(reason: &str) -> BackendError {
    BackendError::Disconnected {
        backend: BACKEND,
        reason: reason.to_string(),
    }
}

/// Whether tmux answers `line` with more than one block: a command that queues
/// other commands (`if-shell`, `if`) has them answered in blocks of their own.
fn queues_commands(line: &str) -> bool {
    matches!(line.split_whitespace().next(), Some("if-shell" | "if"))
}

/// A command shortened for error messages, on a character boundary.
pub fn shorten(line: &str) -> String {
    if line.len() <= MAX_CMD_IN_ERROR {
        return line.to_string();
    }
    let mut end = MAX_CMD_IN_ERROR;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &line[..end], line.len())
}

/// The commands' names (`send-keys; capture-pane`), for a span and the trace log.
fn command_names<S: AsRef<str>>(lines: &[S]) -> String {
    let names: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.as_ref().split_whitespace().next())
        .collect();
    names.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether process `pid` is running (not gone, not a zombie).
    fn running(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                let (_, rest) = stat.rsplit_once(") ")?;
                rest.chars().next()
            })
            .is_some_and(|state| state != 'Z' && state != 'X')
    }

    #[tokio::test]
    async fn a_client_closed_while_attaching_is_killed_once_attached() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        // A stand-in for `tmux -C` whose attach is answered after 300 ms.
        let mut command = tokio::process::Command::new("sh");
        command.arg("-c").arg(format!(
            "echo $$ > {}; sleep 0.3; printf '%%begin 1 1 0\\n%%end 1 1 0\\n'; exec sleep 30",
            pid_file.display()
        ));
        let given_up = tokio::time::timeout(
            Duration::from_millis(100),
            ControlClient::start(command, Box::new(|_| {})),
        )
        .await;
        assert!(given_up.is_err(), "attached before it was answered");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let pid: u32 = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                break pid;
            }
            assert!(tokio::time::Instant::now() < deadline, "it never started");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(running(pid), "killed while still attaching");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while running(pid) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "still running long after it attached"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
