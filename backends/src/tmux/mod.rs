//! The tmux backend: cohort's own tmux server, driven through control mode.
//!
//! - **Server.** cohort runs its own server (`-L cohort` unless configured) started
//!   with its own config ([`config::TmuxConfig::conf_text`]), so the user's
//!   `~/.tmux.conf` cannot change behaviour. Every cohort window lives in one tmux
//!   session (`cohort`), whose first window (`_cohort`) only keeps the server up.
//! - **Events.** One `tmux -C` client per backend attaches to that session; every
//!   pane's raw output arrives as `%output` within a millisecond, is shaped per pane
//!   ([`crate::stream::OutputSplitter`]) and fanned out as [`BackendEvent`]s. Prompt
//!   marks come from the same stream. A `refresh-client -B` subscription reports
//!   foreground-process changes and dead panes. Nothing polls `capture-pane`.
//! - **Several processes.** Any number of cohort processes can attach to the same
//!   server at once; each sees every window of the session.
//! - **Reconnect.** When the control client goes away (`%exit`, server restart) the
//!   next call reconnects, starting the server again if needed. A remote server's
//!   link that breaks is opened again at once, with backoff, and what its panes
//!   printed meanwhile is read back from their logs over there (`outlog.rs`).

mod appearance;
mod backend;
mod broadcast;
pub mod cli;
pub mod config;
pub mod control;
mod exit_watch;
mod hidden;
mod outlog;
pub mod parse;
pub mod quote;
pub mod remote;
mod router;
mod rows;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;

use crate::backend::TerminalBackend;
use crate::error::{BackendError, Result};
use crate::event::{BackendEvent, EventSink, EventStream};
use crate::keys::{Guarded, Key, Keystrokes};
use crate::layout::parse_tmux_layout;
use crate::link::{Got, Link};
use crate::shell::{command_with_exit_mark, user_shell, ShellIntegration};
use crate::types::{
    Appearance, AttachHint, BackendKind, Capabilities, Cursor, Identity, LineRange, Lines, PaneId,
    PaneInfo, PaneState, Screen, Size, SpawnOptions, SplitDirection, SplitOptions, SplitSize,
    WindowId, WindowInfo,
};

use self::cli::Version;
use self::config::TmuxConfig;
use self::control::{ControlClient, ControlEvent};
use self::outlog::Streams;
use self::parse::Notification;
use self::router::EventRouter;
use self::rows::{pane_format, parse_pane_row, PANE_FIELDS};

/// Name of the window that keeps cohort's tmux session alive.
pub const LOBBY_WINDOW: &str = "_cohort";

/// Field separator in formatted replies (ASCII unit separator: never in names).
const SEP: char = '\u{1f}';

/// Text chunk size for `send-keys` and `set-buffer`: well under the line lengths
/// tmux is known to drop in control mode.
const CHUNK_BYTES: usize = 2048;

/// Name of cohort's state subscription.
const SUBSCRIPTION: &str = "cohort-state";

/// Lines and keys typed under a guard (see `send_input_guarded`) that went in, in
/// this process: what a test reads around a call to tell the path it took.
static GUARDED_TYPED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Lines and keys this process typed under a guard, without asking the pane first
/// ([`TerminalBackend::send_input_guarded`]), every backend.
pub fn guarded_typed() -> u64 {
    GUARDED_TYPED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts one typed under a guard.
fn typed_under_guard() -> Guarded {
    GUARDED_TYPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Guarded::Typed
}

/// The pane option naming the buffer of the last line typed under a guard (see
/// `send_input_guarded`): with the buffer gone, that line went in.
const LINE_MARK: &str = "@cohort_line";

/// This machine's clock, in milliseconds since the Unix epoch.
fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl TmuxBackend {
    /// tmux's clock now (the host's, for another machine), in seconds.
    fn tmux_now(&self) -> i64 {
        unix_ms() / 1000
            + self
                .inner
                .clock_offset
                .load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// When a guarded line sent now, with `expiry_s` seconds to go in, can no longer go
/// in, on this machine's steady clock: a second's margin each for the two clocks'
/// whole seconds.
fn expiry_instant(expiry_s: i64) -> std::time::Instant {
    std::time::Instant::now() + std::time::Duration::from_secs(expiry_s.max(0) as u64 + 2)
}

/// The pane option that reads as tmux's clock in a guard (`#{T:…}` of `%s`): the
/// host's, for a server on another machine.
const CLOCK: &str = "@cohort_clock";

/// The tmux backend; see the module docs.
#[derive(Clone)]
pub struct TmuxBackend {
    inner: Arc<Inner>,
}

struct Inner {
    config: TmuxConfig,
    version: Version,
    version_text: String,
    shell: PathBuf,
    shell_command: String,
    hub: Arc<EventSink>,
    link: Link<ControlClient>,
    paste_counter: std::sync::atomic::AtomicU64,
    /// Panes whose exit was already reported (by the watcher or tmux's subscription).
    exits_reported: Arc<Mutex<HashSet<String>>>,
    /// Panes whose process is being watched.
    watched: Mutex<HashSet<String>>,
    /// Last exit status each pane reported through a `D` mark; stands in when tmux
    /// loses a dead pane's status (seen with 3.3a, about 1 in 30 under load).
    last_marks: Arc<Mutex<HashMap<String, i32>>>,
    /// The tmux server this backend last attached to (its pid and start time): pane
    /// ids are only unique within one server.
    instance: Mutex<Option<String>>,
    /// tmux's clock (the host's, for another machine) less this machine's, in
    /// seconds, measured on every new connection: deadlines tmux checks are on it.
    clock_offset: std::sync::atomic::AtomicI64,
    /// Buffers of guarded lines given up after their expiry, deleted once tmux
    /// answers again (they hold the lines' text).
    stale_lines: Mutex<Vec<String>>,
    /// The far side, when the server runs on another machine.
    remote: Option<Remote>,
    /// Every pane's output stream, across connections.
    streams: Arc<Mutex<Streams>>,
    /// Requests to the keeper of the far side's logs (remote servers only).
    logs: Option<tokio::sync::mpsc::UnboundedSender<LogRequest>>,
}

/// What the keeper of a remote server's logs is asked to do (see [`keep_logs`]).
#[derive(Debug)]
enum LogRequest {
    /// Start (or renew) this pane's log.
    Start(PaneId),
    /// Delete this log file, and its `.done` flag, on the host.
    Delete(String),
    /// The link broke: connect again.
    Reconnect,
}

/// A server on another machine: the host and cohort's directory there.
struct Remote {
    host: remote::SshHost,
    /// cohort's directory for this server on the host (absolute).
    dir: String,
    /// The tmux config, as written there.
    conf: String,
    /// Whether the last connection was closed for going unanswered (see
    /// [`control::Peer`]).
    went_silent: Arc<std::sync::atomic::AtomicBool>,
}

/// Longest wait between attempts to reach a remote server again.
const RECONNECT_MAX_DELAY: std::time::Duration = std::time::Duration::from_secs(10);

impl Remote {
    fn pad_dir(&self) -> String {
        format!("{}/pads", self.dir)
    }

    fn conf_path(&self) -> String {
        format!("{}/tmux.conf", self.dir)
    }

    /// Writes the tmux config and the shell integration on the host (again: they may
    /// have gone with a reboot or a cleaned home).
    async fn install(&self) -> Result<()> {
        let mut files: Vec<(String, String)> = ShellIntegration::files()
            .into_iter()
            .map(|(name, text)| (format!("shell/{name}"), text))
            .collect();
        files.push(("tmux.conf".into(), self.conf.clone()));
        files.push((
            crate::remote_procs::SCRIPT_NAME.into(),
            crate::remote_procs::SCRIPT.into(),
        ));
        files.push((outlog::SCRIPT_NAME.into(), outlog::SCRIPT.into()));
        files.push((
            format!("{}/README", outlog::LOG_DIR),
            "Output of cohort's panes, kept while a connection to them is away.\n".into(),
        ));
        self.host.write_files(&self.dir, &files).await
    }

    /// A new file for `pane`'s log.
    fn log_file(&self, pane: &PaneId) -> Result<String> {
        Ok(format!(
            "{}/{}/{}-{}",
            self.dir,
            outlog::LOG_DIR,
            pane.as_str().trim_start_matches('%'),
            crate::pad::pad_name()?
        ))
    }
}

impl std::fmt::Debug for TmuxBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TmuxBackend")
            .field("socket", &self.inner.config.socket)
            .field("session", &self.inner.config.session)
            .finish_non_exhaustive()
    }
}

impl TmuxBackend {
    /// Checks tmux, writes cohort's tmux config and shell integration under the state
    /// directory, and connects (starting the server if it is not running).
    pub async fn connect(config: TmuxConfig) -> Result<TmuxBackend> {
        TmuxBackend::connect_into(config, EventSink::new()).await
    }

    /// [`TmuxBackend::connect`], its events going to `events` (the hub of the backend
    /// it sits beside, for a remote host's server; see [`crate::hosts`]).
    pub async fn connect_into(config: TmuxConfig, events: EventSink) -> Result<TmuxBackend> {
        let (version, version_text, shell, shell_command, remote) = match &config.host {
            None => {
                let (version, version_text) = cli::check_version(&config.program).await?;
                std::fs::create_dir_all(&config.state_dir).map_err(|e| {
                    BackendError::io(format!("creating {}", config.state_dir.display()), e)
                })?;
                let shells = ShellIntegration::install(&config.shell_dir())?;
                let shell = config.shell.clone().unwrap_or_else(user_shell);
                let shell_command = shells.shell_command(&shell);
                let conf = config.conf_text(&shell_command, config::pick_terminal());
                write_if_changed(&config.conf_path(), &conf)?;
                (version, version_text, shell, shell_command, None)
            }
            Some(host) => {
                let probe = host.probe("tmux").await?;
                let dir = format!("{}/{}", probe.state_dir, config.socket.label());
                let shell = config
                    .shell
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(&probe.shell));
                let shell_command =
                    crate::shell::launch_command(&shell, Path::new(&format!("{dir}/shell")));
                // The far side's terminal type is not known from here: tmux's own.
                let conf = config.conf_text(&shell_command, "tmux-256color");
                let remote = Remote {
                    host: host.clone(),
                    dir,
                    conf,
                    went_silent: Arc::default(),
                };
                remote.install().await?;
                (
                    probe.version,
                    probe.version_text,
                    shell,
                    shell_command,
                    Some(remote),
                )
            }
        };
        let hub = Arc::new(events);
        let last_marks: Arc<Mutex<HashMap<String, i32>>> = Default::default();
        let streams = Streams::new(hub.clone(), last_marks.clone(), remote.is_some());
        let (logs, requests) = match remote {
            Some(_) => {
                let (logs, requests) = tokio::sync::mpsc::unbounded_channel();
                (Some(logs), Some(requests))
            }
            None => (None, None),
        };
        let backend = TmuxBackend {
            inner: Arc::new(Inner {
                config,
                version,
                version_text,
                shell,
                shell_command,
                hub,
                link: Link::new(),
                paste_counter: Default::default(),
                exits_reported: Default::default(),
                watched: Default::default(),
                last_marks,
                instance: Default::default(),
                clock_offset: Default::default(),
                stale_lines: Default::default(),
                remote,
                streams: Arc::new(Mutex::new(streams)),
                logs,
            }),
        };
        if let Some(requests) = requests {
            tokio::spawn(keep_logs(Arc::downgrade(&backend.inner), requests));
        }
        backend.client().await?;
        Ok(backend)
    }

    /// The configuration in use.
    pub fn config(&self) -> &TmuxConfig {
        &self.inner.config
    }

    /// The tmux version found, as `tmux -V` printed it.
    pub fn version(&self) -> (Version, &str) {
        (self.inner.version, &self.inner.version_text)
    }

    /// The shell new panes run.
    pub fn shell(&self) -> &Path {
        &self.inner.shell
    }

    /// The command line new panes run (the user's shell with cohort's integration).
    pub fn shell_command(&self) -> &str {
        &self.inner.shell_command
    }

    /// Runs a raw tmux command over the control connection (for diagnostics).
    pub async fn raw_command(&self, line: &str) -> Result<Vec<String>> {
        let reply = self.client().await?.command(line).await?;
        Ok(reply
            .lines
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect())
    }

    /// Ends this backend's control connection (the server and its panes stay).
    pub fn disconnect(&self) {
        if let Some(client) = self.inner.link.take() {
            client.shutdown();
        }
    }

    /// The live control connection, reconnecting when it was lost. A connection to a
    /// new server (the old one was killed) starts with nothing kept from the old
    /// one's panes, whose ids the new server reuses.
    async fn client(&self) -> Result<Arc<ControlClient>> {
        let (client, got) = self.inner.link.get(|| self.open_connection()).await?;
        if got == Got::Live {
            return Ok(client);
        }
        // The server's identity, and its clock read between two of this machine's.
        let asked = unix_ms();
        let answer = client
            .command("display-message -p '#{pid} #{start_time} %s'")
            .await
            .map(|reply| reply.text().trim().to_string())
            .ok();
        let midway = (asked + unix_ms()) / 2;
        let (instance, clock) = match answer.as_deref().and_then(|a| a.rsplit_once(' ')) {
            Some((instance, clock)) => (Some(instance.to_string()), clock.parse::<i64>().ok()),
            None => (answer.clone(), None),
        };
        if let Some(clock) = clock {
            self.inner
                .clock_offset
                .store(clock - midway / 1000, std::sync::atomic::Ordering::Relaxed);
        }
        let stale = std::mem::take(&mut *lock(&self.inner.stale_lines));
        if !stale.is_empty() {
            let lines: Vec<String> = stale
                .iter()
                .map(|buffer| format!("delete-buffer -b {buffer}"))
                .collect();
            // Each is gone already if its line went in meanwhile: errors are expected.
            let _ = client.pipeline(&lines).await;
        }
        let previous = std::mem::replace(&mut *lock(&self.inner.instance), instance.clone());
        let restarted = previous.is_some() && instance.is_some() && previous != instance;
        if restarted {
            lock(&self.inner.exits_reported).clear();
            lock(&self.inner.watched).clear();
            lock(&self.inner.last_marks).clear();
            lock(&self.inner.streams).server_restarted();
            tracing::info!(target: "cohort::tmux", "the tmux server was started again: panes of the old one are gone");
            self.inner.hub.emit(BackendEvent::ServerRestarted);
        } else {
            self.catch_up(&client).await;
            if got == Got::Reopened && self.inner.remote.is_none() {
                self.inner.hub.emit(BackendEvent::Reconnected);
            }
        }
        Ok(client)
    }

    /// Reads back what the held panes printed while no connection was there (see
    /// [`outlog`]), and lets their output flow again.
    async fn catch_up(&self, client: &Arc<ControlClient>) {
        if self.inner.remote.is_none() || lock(&self.inner.streams).held_logs().is_empty() {
            return;
        }
        // On a task of its own: the call that happened to reconnect may be given up
        // (a timeout, a cancelled request), and the panes must not stay held.
        let (backend, client) = (self.clone(), client.clone());
        let _ = tokio::spawn(async move { backend.read_back(&client).await }).await;
    }

    /// [`TmuxBackend::catch_up`]'s work, on `client`'s connection.
    async fn read_back(&self, client: &ControlClient) {
        let Some(remote) = &self.inner.remote else {
            return;
        };
        let mut held = lock(&self.inner.streams).held_logs();
        // A log someone else's pipe replaced is theirs: it is not switched back.
        let files: Vec<String> = held.iter().map(|(_, file, _)| file.clone()).collect();
        if let Some(closed) = self.closed_logs(remote, &files).await {
            let mut streams = lock(&self.inner.streams);
            let mut index = 0;
            held.retain(|(pane, _, _)| {
                let keep = !closed[index];
                index += 1;
                if !keep {
                    streams.release(pane, outlog::Caught::Lost("its log was closed"));
                    streams.give_up(pane);
                }
                keep
            });
        }
        // Each pane's log moves to a new file; the marker says which of the new
        // connection's bytes are still in the old one.
        let mut lines = Vec::with_capacity(held.len());
        let mut markers = Vec::with_capacity(held.len());
        let mut switched_at = Vec::with_capacity(held.len()); // index into `lines`
        for (pane, _, _) in &held {
            match self.log_switch(remote, &PaneId(pane.clone())) {
                Some((line, marker)) => {
                    switched_at.push(Some(lines.len()));
                    lines.push(line);
                    markers.push(Some(marker));
                }
                None => switched_at.push(None),
            }
        }
        let switched: Vec<bool> = match client.pipeline_marked(&lines, &markers).await {
            Ok(replies) => {
                for (reply, marker) in replies.iter().zip(&markers) {
                    if reply.is_err() {
                        lock(&self.inner.streams).switch_failed(marker.unwrap_or_default());
                    }
                }
                switched_at
                    .iter()
                    .map(|at| at.is_some_and(|at| replies[at].is_ok()))
                    .collect()
            }
            Err(e) => {
                // Broken again: its end released the panes. Still open (tmux did not
                // answer in time): nothing is known, and the panes go on as lost.
                if !client.is_closed() {
                    tracing::warn!(target: "cohort::tmux", error = %e, "the panes' logs could not be switched");
                    let mut streams = lock(&self.inner.streams);
                    for (pane, _, _) in &held {
                        streams
                            .release(pane, outlog::Caught::Lost("its log could not be switched"));
                    }
                }
                return;
            }
        };
        let mut line = format!(
            "sh {}",
            quote::sh(&format!("{}/{}", remote.dir, outlog::SCRIPT_NAME))
        );
        for (_, file, offset) in &held {
            line.push_str(&format!(" {offset} {}", quote::sh(file)));
        }
        let offsets: Vec<u64> = held.iter().map(|(_, _, offset)| *offset).collect();
        let backs = match remote.host.run_bytes(&line, b"").await {
            Ok(out) => outlog::parse_read_back(&out, &offsets),
            Err(e) => {
                tracing::warn!(target: "cohort::tmux", error = %e, "the panes' logs could not be read back");
                None
            }
        };
        let mut gone = Vec::new();
        {
            let mut streams = lock(&self.inner.streams);
            // The connection broke meanwhile: its end released these holds, and any
            // held now belong to a newer connection, which reads its own back.
            if client.is_closed() {
                return;
            }
            for (index, (pane, _, _)) in held.iter().enumerate() {
                let caught = match &backs {
                    // Still logging to the old file (or to none): its end is not known.
                    _ if !switched[index] => outlog::Caught::Lost("its log was not switched"),
                    Some(backs) => streams.judge(pane, &backs[index]),
                    None => outlog::Caught::Lost("the host did not give its log back"),
                };
                gone.extend(streams.release(pane, caught));
            }
        }
        for file in gone {
            self.ask(LogRequest::Delete(file));
        }
    }

    fn ask(&self, request: LogRequest) {
        if let Some(logs) = &self.inner.logs {
            let _ = logs.send(request);
        }
    }

    /// Which of `files` (logs on the host) were closed by their pipe's end: one ssh
    /// call; `None` when the host could not say.
    async fn closed_logs(&self, remote: &Remote, files: &[String]) -> Option<Vec<bool>> {
        let out = remote
            .host
            .run(&outlog::closed_check(files), b"")
            .await
            .ok()?;
        let closed: Vec<bool> = out.lines().map(|line| line.trim() == "1").collect();
        (closed.len() == files.len()).then_some(closed)
    }

    /// Starts (or renews) `pane`'s log on the far side, over the live connection.
    async fn start_log(&self, pane: &PaneId) {
        let (Some(remote), Some(client)) = (&self.inner.remote, self.inner.link.live()) else {
            lock(&self.inner.streams).not_switching(pane.as_str());
            return;
        };
        // Renewing a full log: not when the pipe is someone else's now.
        let current = lock(&self.inner.streams).log_file(pane.as_str());
        if let Some(current) = current {
            if self.closed_logs(remote, &[current]).await != Some(vec![false]) {
                lock(&self.inner.streams).give_up(pane.as_str());
                return;
            }
        }
        let Some((line, marker)) = self.log_switch(remote, pane) else {
            lock(&self.inner.streams).not_switching(pane.as_str());
            return;
        };
        let started = client.pipeline_marked(&[line], &[Some(marker)]).await;
        if !matches!(&started, Ok(replies) if replies.iter().all(Result::is_ok)) {
            lock(&self.inner.streams).switch_failed(marker);
        }
    }

    /// Readies a switch of `pane`'s log to a new file: the `pipe-pane` line to send,
    /// and the marker to send it with. `None` when no file name could be drawn.
    fn log_switch(&self, remote: &Remote, pane: &PaneId) -> Option<(String, u64)> {
        let file = remote.log_file(pane).ok()?;
        let line = outlog::pipe_command(pane, &file);
        let marker = lock(&self.inner.streams).begin_switch(pane.as_str(), file);
        Some((line, marker))
    }

    /// Attaches, retrying briefly: right after a server exits, a new client can still
    /// reach the exiting server and be turned away.
    async fn open_connection(&self) -> Result<Arc<ControlClient>> {
        let mut delay = std::time::Duration::from_millis(20);
        let mut attempt = 0;
        loop {
            match self.attach_once().await {
                Err(BackendError::Disconnected { reason, .. }) if attempt < 6 => {
                    tracing::debug!(target: "cohort::tmux", %reason, attempt, "attach refused; retrying");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    async fn attach_once(&self) -> Result<Arc<ControlClient>> {
        self.ensure_files()?;
        let config = &self.inner.config;
        let Size { cols, rows } = config.default_size;
        let (cols, rows) = (cols.to_string(), rows.to_string());
        let attach = [
            "-C",
            "new-session",
            "-A",
            "-s",
            &config.session,
            "-n",
            LOBBY_WINDOW,
            "-x",
            &cols,
            "-y",
            &rows,
            "printf '%s\\n' 'cohort: this window keeps the tmux server up; agents work in the other windows.'; exec sleep 2147483647",
        ];
        let command = match &self.inner.remote {
            None => {
                let mut command = cli::command(&config.program, &config.socket);
                command.envs(config.server_env.iter().map(|(k, v)| (k, v)));
                command.arg("-f").arg(config.conf_path()).args(attach);
                command
            }
            Some(remote) => {
                if remote
                    .went_silent
                    .swap(false, std::sync::atomic::Ordering::Relaxed)
                {
                    remote.host.end_shared_connection().await;
                }
                remote.install().await?;
                let mut line = String::from("exec env -u TMUX -u TMUX_PANE");
                for (key, value) in &config.server_env {
                    line.push(' ');
                    line.push_str(&quote::sh(&format!("{key}={value}")));
                }
                line.push_str(" tmux -u");
                for arg in config
                    .socket
                    .args()
                    .iter()
                    .map(String::as_str)
                    .chain(["-f", &remote.conf_path()])
                    .chain(attach)
                {
                    line.push(' ');
                    line.push_str(&quote::sh(arg));
                }
                remote.host.command(&line)
            }
        };
        let weak_slot: Arc<std::sync::OnceLock<Weak<ControlClient>>> = Arc::default();
        // What the panes print on this connection waits until their logs are read
        // back (see `catch_up`).
        lock(&self.inner.streams).hold_logged();
        let handler = EventRouter {
            hub: self.inner.hub.clone(),
            streams: self.inner.streams.clone(),
            logs: self.inner.logs.clone(),
            pane_state: HashMap::new(),
            client: weak_slot.clone(),
            exits_reported: self.inner.exits_reported.clone(),
            last_marks: self.inner.last_marks.clone(),
        };
        let client = match &self.inner.remote {
            Some(remote) => {
                let peer = control::Peer {
                    host: remote.host.name.clone(),
                    destination: remote.host.destination.clone(),
                    went_silent: remote.went_silent.clone(),
                };
                ControlClient::start_remote(command, handler.into_handler(), peer).await?
            }
            None => ControlClient::start(command, handler.into_handler()).await?,
        };
        let client = Arc::new(client);
        let _ = weak_slot.set(Arc::downgrade(&client));
        // The options are applied one command per line, not with source-file: tmux
        // answers every command inside a sourced file with a reply block of its own,
        // which would shift the pairing of replies to commands.
        let conf = match &self.inner.remote {
            Some(remote) => remote.conf.clone(),
            None => std::fs::read_to_string(config.conf_path()).map_err(|e| {
                BackendError::io(format!("reading {}", config.conf_path().display()), e)
            })?,
        };
        let mut setup: Vec<String> = conf
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect();
        setup.extend([
            format!("refresh-client -f pause-after={}", config.pause_after_secs),
            format!(
                "refresh-client -B {}",
                quote::single(&format!(
                    "{SUBSCRIPTION}:%*:#{{pane_dead}}|#{{pane_dead_status}}|#{{pane_dead_signal}}|#{{pane_current_command}}"
                ))
            ),
        ]);
        for result in client.pipeline(&setup).await? {
            result?;
        }
        tracing::debug!(target: "cohort::tmux", socket = %config.socket, session = %config.session, "control client attached");
        Ok(client)
    }

    async fn cmd(&self, line: &str) -> Result<parse::Reply> {
        let mut replies = self.send_lines(&[line]).await?;
        replies.pop().expect("one reply per command")
    }

    /// Sends `lines` over the connection; when it turns out to have gone before they
    /// left (a cut link, a client that died), once more over a new one: the server
    /// and its panes live on, and nothing of them ran.
    async fn send_lines<S: AsRef<str>>(&self, lines: &[S]) -> Result<Vec<Result<parse::Reply>>> {
        match self.client().await?.try_pipeline(lines).await {
            Ok(replies) => Ok(replies),
            Err(control::Failure::Unsent(e)) => {
                tracing::debug!(target: "cohort::tmux", error = %e, "the connection was gone before the command left: sending it on a new one");
                self.client().await?.pipeline(lines).await
            }
            Err(control::Failure::Sent(e)) => Err(e),
        }
    }

    /// Deletes the buffer of a line that was not pasted.
    async fn forget_line(&self, buffer: &str) {
        if let Err(e) = self.cmd(&format!("delete-buffer -b {buffer}")).await {
            tracing::debug!(target: "cohort::tmux", error = %e, buffer, "could not delete a line's buffer");
        }
    }

    /// Whether the line in `buffer`, typed under a guard into `pane` on a connection
    /// that broke before tmux's answer came, went in, asked on a new connection: the
    /// pane was marked with the buffer's name (so the lines ran) and the buffer is
    /// gone (so it was pasted). One that did not is deleted: it never will be.
    async fn line_went_in(&self, pane: &PaneId, buffer: &str) -> Result<Guarded> {
        let lines = [
            format!(
                "display-message -p -t {pane} {}",
                quote::single(&format!("#{{{LINE_MARK}}}"))
            ),
            format!("list-buffers -F {}", quote::single("#{buffer_name}")),
        ];
        let replies = self.pane_pipeline(pane, &lines).await?;
        let marked = replies[0].text().trim() == buffer;
        let left = replies[1].text().lines().any(|l| l.trim() == buffer);
        if left {
            self.forget_line(buffer).await;
        }
        Ok(if marked && !left {
            typed_under_guard()
        } else {
            Guarded::Refused
        })
    }

    /// Runs a command aimed at `pane`, turning "can't find pane" into [`BackendError::PaneGone`].
    async fn pane_cmd(&self, pane: &PaneId, line: &str) -> Result<parse::Reply> {
        check_pane_id(pane)?;
        self.cmd(line).await.map_err(|e| pane_error(pane, e))
    }

    async fn pane_pipeline(&self, pane: &PaneId, lines: &[String]) -> Result<Vec<parse::Reply>> {
        check_pane_id(pane)?;
        let results = self.send_lines(lines).await?;
        results
            .into_iter()
            .map(|r| r.map_err(|e| pane_error(pane, e)))
            .collect()
    }

    /// `display-message` for `pane` with the given format fields. tmux answers for the
    /// current pane when the target is missing, so the reply's pane id is checked.
    async fn display(&self, pane: &PaneId, fields: &[&str]) -> Result<Vec<String>> {
        let client = self.client().await?;
        match self.display_on(&client, pane, fields).await {
            // It only reads: asking again on a new connection is always safe.
            Err(BackendError::Disconnected { .. }) if client.is_closed() => {
                let client = self.client().await?;
                self.display_on(&client, pane, fields).await
            }
            other => other,
        }
    }

    /// [`TmuxBackend::display`] over `client`, without reconnecting.
    async fn display_on(
        &self,
        client: &ControlClient,
        pane: &PaneId,
        fields: &[&str],
    ) -> Result<Vec<String>> {
        check_pane_id(pane)?;
        let mut format = String::from("#{pane_id}");
        for field in fields {
            format.push(SEP);
            format.push_str(field);
        }
        let line = format!("display-message -p -t {pane} {}", quote::arg(&format));
        let text = client
            .command(&line)
            .await
            .map_err(|e| pane_error(pane, e))?
            .text();
        let mut values: Vec<String> = text.split(SEP).map(str::to_string).collect();
        if values.first().map(String::as_str) != Some(pane.as_str()) {
            return Err(BackendError::PaneGone(pane.clone()));
        }
        if values.len() != fields.len() + 1 {
            return Err(BackendError::Protocol(format!(
                "unexpected reply {text:?} for pane {pane}"
            )));
        }
        values.remove(0);
        Ok(values)
    }

    fn window_target(&self) -> String {
        quote::single(&format!("={}:", self.inner.config.session))
    }

    async fn pane_info(&self, pane: &PaneId) -> Result<PaneInfo> {
        let row = |fields: Vec<String>| format!("{pane}{SEP}{}", fields.join(&SEP.to_string()));
        let mut row = row(self.display(pane, &PANE_FIELDS[1..]).await?);
        let missed = parse_pane_row(&row).is_some_and(|(i, _)| i.dead && i.exit_status.is_none());
        if missed && self.nudge_reaping().await {
            row = format!(
                "{pane}{SEP}{}",
                self.display(pane, &PANE_FIELDS[1..])
                    .await?
                    .join(&SEP.to_string())
            );
        }
        let (info, pid) = parse_pane_row(&row)
            .ok_or_else(|| BackendError::Protocol(format!("unexpected pane row {row:?}")))?;
        if let (false, Some(pid)) = (info.dead, pid) {
            self.watch_exit(&info.id, pid);
        }
        Ok(info)
    }

    /// Reports `pane`'s exit as soon as process `pid` ends (see [`exit_watch`]).
    fn watch_exit(&self, pane: &PaneId, pid: u32) {
        // A remote pid names a process over there: tmux's subscription reports it.
        if self.inner.remote.is_some() || !lock(&self.inner.watched).insert(pane.0.clone()) {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        let pane = pane.clone();
        tokio::spawn(async move {
            if exit_watch::process_exit(pid).await.is_err() {
                return; // tmux's subscription remains the source
            }
            // tmux records the status once it has reaped the process: moments later.
            for attempt in 0..100u64 {
                let Some(inner) = weak.upgrade() else { return };
                let backend = TmuxBackend { inner };
                // Only over the connection that is open: a pane whose server was
                // killed must not start a new server to ask about it.
                let Some(client) = backend.inner.link.live() else {
                    return;
                };
                match backend
                    .display_on(
                        &client,
                        &pane,
                        &["#{pane_dead}", "#{pane_dead_status}", "#{pane_dead_signal}"],
                    )
                    .await
                {
                    Ok(f) if f[0] == "1" => {
                        if f[1].is_empty() && f[2].is_empty() && attempt == 3 {
                            // Still no status: tmux may have missed the exit.
                            backend.nudge_reaping().await;
                        }
                        let status = f[1]
                            .parse::<i32>()
                            .ok()
                            .or(f[2].parse::<i32>().ok().map(|s| 128 + s))
                            .or_else(|| {
                                lock(&backend.inner.last_marks).get(pane.as_str()).copied()
                            });
                        if status.is_some() || attempt >= 20 {
                            if first_report(&backend.inner.exits_reported, pane.as_str()) {
                                backend.inner.hub.emit(BackendEvent::PaneExited {
                                    pane: pane.clone(),
                                    exit_status: status,
                                });
                            }
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => return, // closed, or the connection is gone
                }
                drop(backend);
                tokio::time::sleep(std::time::Duration::from_millis(5 + attempt * 5)).await;
            }
        });
    }

    /// Writes the shell integration and tmux config again when they are gone (the
    /// state directory was deleted under a running server): a new shell would start
    /// without its prompt marks, and every wait on it would time out blaming the
    /// user's startup files.
    fn ensure_files(&self) -> Result<()> {
        if self.inner.remote.is_some() {
            return Ok(()); // installed on the host at every attach
        }
        let config = &self.inner.config;
        let rc = config.shell_dir().join("bashrc");
        if !rc.exists() {
            tracing::warn!(target: "cohort::tmux", dir = %config.shell_dir().display(), "the shell integration files were gone; writing them again");
            ShellIntegration::install(&config.shell_dir())?;
        }
        if !config.conf_path().exists() {
            let conf = config.conf_text(&self.inner.shell_command, config::pick_terminal());
            std::fs::create_dir_all(&config.state_dir).map_err(|e| {
                BackendError::io(format!("creating {}", config.state_dir.display()), e)
            })?;
            write_if_changed(&config.conf_path(), &conf)?;
        }
        Ok(())
    }

    /// The arguments of `new-window`/`split-window` for `options`, and the pad file
    /// written for the new shell (to delete when the pane is not made).
    async fn spawn_args(&self, options: &SpawnOptions) -> Result<(String, Option<Pad>)> {
        self.ensure_files()?;
        let mut args = String::new();
        if let Some(cwd) = &options.cwd {
            // A remote directory is the far side's to check: tmux starts the shell in
            // the remote home when it is missing there.
            let path = Path::new(cwd);
            if self.inner.remote.is_none() && !path.is_dir() {
                return Err(BackendError::InvalidArgument(format!(
                    "working directory {:?} does not exist or is not a directory",
                    cwd.chars().take(200).collect::<String>()
                )));
            }
            args.push_str(&format!(" -c {}", quote::arg(&quote::format_literal(cwd))));
        }
        for (key, value) in &options.env {
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                return Err(BackendError::InvalidArgument(format!(
                    "environment variable name {key:?} is not valid: use a non-empty name without '='"
                )));
            }
            args.push_str(&format!(" -e {}", quote::arg(&format!("{key}={value}"))));
        }
        let command = match &options.command {
            Some(command) if command.trim().is_empty() => {
                return Err(BackendError::InvalidArgument("the command is empty".into()))
            }
            Some(command) => command_with_exit_mark(command),
            None => self.inner.shell_command.clone(),
        };
        let pad = match &options.marks {
            Some(marks) => {
                // The shell reads its tokens from this file and deletes it before
                // anything else runs; the environment holds only the path (see
                // `crate::pad`).
                let form = crate::pad::TokenForm::Decimal;
                let pad = match &self.inner.remote {
                    None => Pad::Local(marks.write_pad(&self.inner.config.pad_dir(), form)?),
                    Some(remote) => {
                        let name = crate::pad::pad_name()?;
                        let text = marks.pad_text(form);
                        Pad::Remote(
                            remote
                                .host
                                .write_private(&remote.pad_dir(), &name, &text)
                                .await?,
                        )
                    }
                };
                let entry = format!("{}={}", crate::pad::PAD_ENV, pad.path());
                args.push_str(&format!(" -e {}", quote::arg(&entry)));
                Some(pad)
            }
            None => None,
        };
        args.push(' ');
        args.push_str(&quote::arg(&command));
        Ok((args, pad))
    }

    /// Deletes the pad written for a pane that was not made: no shell will read it.
    async fn forget_pad(&self, pad: Option<Pad>) {
        match (pad, &self.inner.remote) {
            (Some(Pad::Local(path)), _) => {
                let _ = std::fs::remove_file(path);
            }
            (Some(Pad::Remote(path)), Some(remote)) => {
                let _ = remote.host.remove(&path).await;
            }
            _ => {}
        }
    }

    /// A snapshot of `pane`'s processes on the far side (see [`crate::remote_procs`]):
    /// one ssh call; `None` for a local server.
    async fn remote_snapshot(
        &self,
        pane: &PaneId,
    ) -> Result<Option<crate::remote_procs::ProcSnapshot>> {
        check_pane_id(pane)?;
        let Some(remote) = &self.inner.remote else {
            return Ok(None);
        };
        let mut line = format!(
            "sh {} {}",
            quote::sh(&format!(
                "{}/{}",
                remote.dir,
                crate::remote_procs::SCRIPT_NAME
            )),
            quote::sh(pane.as_str())
        );
        for arg in self.inner.config.socket.args() {
            line.push(' ');
            line.push_str(&quote::sh(&arg));
        }
        let text = remote.host.run(&line, b"").await?;
        Ok(crate::remote_procs::ProcSnapshot::parse(&text))
    }

    /// Ends cohort's session, and with it the server, when nothing of cohort's is left
    /// in it: the session holds only the lobby window. tmux itself decides, in one command, so a session another
    /// process opens at the same moment is never taken down with it.
    async fn stop_server_if_unused(&self) {
        let condition = format!(
            "#{{&&:#{{==:#{{session_windows}},1}},#{{==:#{{window_name}},{LOBBY_WINDOW}}}}}"
        );
        let target = self.window_target();
        let unused = format!("display-message -p -t {target} {}", quote::arg(&condition));
        match self.cmd(&unused).await {
            Ok(reply) if reply.text().trim() == "1" => {}
            Ok(_) => return,
            Err(e) => {
                tracing::debug!(target: "cohort::tmux", error = %e, "could not ask whether the server is still used");
                return;
            }
        }
        let Some(client) = self.inner.link.live() else {
            return;
        };
        // Asked again inside tmux, in the command that ends it. The session goes, not
        // the server: tmux exits once it has no session left, and stays for a human
        // still attached to a view of their own.
        let session = quote::single(&format!("={}", self.inner.config.session));
        let line = format!(
            "if-shell -F -t {target} {} {} {}",
            quote::single(&condition),
            quote::arg(&format!("kill-session -t {session}")),
            quote::arg("display-message -p still-used")
        );
        match client.if_shell(&line).await {
            Ok(reply) if reply.text().trim() == "still-used" => return,
            Ok(_) => {}
            Err(_) => {
                if !client.is_closed() {
                    return; // refused, or tmux is slow: leave it be
                }
            }
        }
        // Until the connection has seen the server go, a call made now would be sent
        // to it and lost: wait for that (a moment; bounded, in case another process
        // opened a session in between and the server stays).
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
        while !client.is_closed() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// Whether the server runs on another machine.
    pub fn is_remote(&self) -> bool {
        self.inner.remote.is_some()
    }
}

/// Keeps a remote server's logs: starts and renews them, deletes the files of panes
/// that ended, and connects again when the link broke, with backoff, for as long as
/// the backend lives and a pane has a log to read back.
async fn keep_logs(
    inner: Weak<Inner>,
    mut requests: tokio::sync::mpsc::UnboundedReceiver<LogRequest>,
) {
    while let Some(request) = requests.recv().await {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let backend = TmuxBackend { inner: strong };
        match request {
            LogRequest::Start(pane) => backend.start_log(&pane).await,
            LogRequest::Delete(file) => {
                if let Some(remote) = &backend.inner.remote {
                    let line = format!(
                        "rm -f {} {}",
                        quote::sh(&file),
                        quote::sh(&format!("{file}.done"))
                    );
                    if let Err(e) = remote.host.run(&line, b"").await {
                        tracing::debug!(target: "cohort::tmux", error = %e, file, "a log was not deleted");
                    }
                }
            }
            LogRequest::Reconnect => {
                drop(backend);
                reconnect(&inner).await;
            }
        }
    }
}

/// Connects to a remote server again after its link broke, waiting longer between
/// attempts up to [`RECONNECT_MAX_DELAY`].
async fn reconnect(inner: &Weak<Inner>) {
    let mut delay = std::time::Duration::from_millis(50);
    loop {
        tokio::time::sleep(delay).await;
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let backend = TmuxBackend { inner: strong };
        if backend.inner.link.live().is_some() || !lock(&backend.inner.streams).has_logs() {
            return; // a call connected already, or nothing waits to be read back
        }
        match backend.client().await {
            Ok(_) => return,
            Err(e) => {
                tracing::info!(target: "cohort::tmux", error = %e, retry_in = ?delay, "the remote server is not reachable yet");
            }
        }
        delay = (delay * 2).min(RECONNECT_MAX_DELAY);
    }
}

/// A new shell's pad of one-time tokens, where it was written.
enum Pad {
    /// On this machine.
    Local(PathBuf),
    /// On the remote host.
    Remote(String),
}

impl Pad {
    fn path(&self) -> String {
        match self {
            Pad::Local(path) => path.to_string_lossy().into_owned(),
            Pad::Remote(path) => path.clone(),
        }
    }
}

fn write_if_changed(path: &Path, content: &str) -> Result<()> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(content) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, content)
        .map_err(|e| BackendError::io(format!("writing {}", tmp.display()), e))?;
    std::fs::rename(&tmp, path)
        .map_err(|e| BackendError::io(format!("writing {}", path.display()), e))
}

fn check_pane_id(pane: &PaneId) -> Result<()> {
    let id = pane.as_str();
    if id.len() > 1 && id.starts_with('%') && id[1..].bytes().all(|b| b.is_ascii_digit()) {
        Ok(())
    } else {
        Err(BackendError::InvalidArgument(format!(
            "{id:?} is not a tmux pane id: tmux pane ids look like %12"
        )))
    }
}

fn pane_error(pane: &PaneId, error: BackendError) -> BackendError {
    match error {
        BackendError::Tmux { message, .. }
            if message.contains("can't find pane")
                || message.contains("can't find window")
                || message.contains("no such pane") =>
        {
            BackendError::PaneGone(pane.clone())
        }
        other => other,
    }
}

/// Records that `pane`'s exit is being reported; `false` when it already was.
fn first_report(reported: &Mutex<HashSet<String>>, pane: &str) -> bool {
    lock(reported).insert(pane.to_string())
}

/// Locks a mutex, ignoring poisoning (the guarded maps stay consistent).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Splits text into chunks of at most `max` bytes on character boundaries.
fn chunks(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = rest.len().min(max);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (head, tail) = rest.split_at(end);
        out.push(head);
        rest = tail;
    }
    out
}

impl TmuxBackend {
    /// The screen, plain or (`styled`) with its SGR sequences (`capture-pane -e`).
    async fn capture_screen(&self, pane: &PaneId, styled: bool) -> Result<Screen> {
        let replies = self
            .pane_pipeline(
                pane,
                &[
                    format!(
                        "display-message -p -t {pane} {}",
                        quote::single("#{pane_id} #{cursor_x} #{cursor_y} #{pane_width} #{pane_height} #{alternate_on}")
                    ),
                    format!("capture-pane -p{} -t {pane}", if styled { " -e" } else { "" }),
                ],
            )
            .await?;
        let info = replies[0].text();
        let mut words = info.split_whitespace();
        if words.next() != Some(pane.as_str()) {
            return Err(BackendError::PaneGone(pane.clone()));
        }
        let f: Vec<u16> = words.map(|s| s.parse().unwrap_or(0)).collect();
        if f.len() != 5 {
            return Err(BackendError::Protocol(format!(
                "unexpected screen info {info:?}"
            )));
        }
        Ok(Screen {
            rows: replies[1]
                .lines
                .iter()
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect(),
            cursor: Cursor { x: f[0], y: f[1] },
            size: Size {
                cols: f[2],
                rows: f[3],
            },
            alternate: f[4] == 1,
        })
    }
}

/// Where cohort keeps state when nothing else is configured:
/// `$XDG_STATE_HOME/cohort`, else `~/.local/state/cohort` (Linux) or
/// `~/Library/Application Support/cohort` (macOS).
pub fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("cohort");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    if cfg!(target_os = "macos") {
        home.join("Library/Application Support/cohort")
    } else {
        home.join(".local/state/cohort")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_respect_char_boundaries() {
        let text = "aé日🎉".repeat(100);
        for max in [1usize, 2, 3, 5, 7, 64] {
            let parts = chunks(&text, max.max(4));
            assert_eq!(parts.concat(), text);
            assert!(parts.iter().all(|p| p.len() <= max.max(4)));
        }
    }

    #[test]
    fn pane_rows_parse() {
        let row = [
            "%3",
            "@2",
            "w",
            "t",
            "80",
            "24",
            "1",
            "bash",
            "0",
            "uuid",
            "name",
            "",
            "team",
            "42",
            "",
            "5:8192",
            "1",
            "make test",
            "",
            "",
            "",
            "1",
        ]
        .join("\u{1f}");
        let (info, pid) = parse_pane_row(&row).unwrap();
        assert_eq!(pid, Some(42));
        assert_eq!(info.id, PaneId::new("%3"));
        let identity = info.identity.unwrap();
        assert_eq!(identity.agent, None);
        assert_eq!(identity.team.as_deref(), Some("team"));
        assert_eq!(identity.key, None);
        assert_eq!(identity.anchor.as_deref(), Some("5:8192"));
        assert!(identity.announces_start);
        // Alive, the pane's command is its foreground program's.
        assert_eq!(info.command, "bash");
        assert_eq!(info.exit_status, None);
        // Dead, it is the command as given, with its status.
        let dead = row.replacen(
            "\u{1f}bash\u{1f}0\u{1f}",
            "\u{1f}__cohort_tok=;\u{1f}1\u{1f}",
            1,
        );
        let dead = dead.replacen("make test\u{1f}\u{1f}", "make test\u{1f}2\u{1f}", 1);
        let (dead, _) = parse_pane_row(&dead).unwrap();
        assert_eq!(dead.command, "make test");
        assert_eq!(dead.exit_status, Some(2));
        assert!(info.hidden);
        assert!(parse_pane_row("%3").is_none());
    }

    #[test]
    fn pane_ids_are_checked() {
        assert!(check_pane_id(&PaneId::new("%12")).is_ok());
        for bad in ["12", "%", "%1;kill-server", "%1 -t %2", ""] {
            assert!(check_pane_id(&PaneId::new(bad)).is_err(), "{bad}");
        }
    }
}
