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
//!   next call reconnects, starting the server again if needed.

mod appearance;
pub mod cli;
pub mod config;
pub mod control;
mod exit_watch;
pub mod parse;
pub mod quote;
mod router;
mod rows;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use bytes::Bytes;

use crate::backend::TerminalBackend;
use crate::error::{BackendError, Result};
use crate::event::{BackendEvent, EventHub, EventStream, PromptMark};
use crate::keys::Key;
use crate::layout::parse_tmux_layout;
use crate::link::{Got, Link};
use crate::shell::{command_with_exit_mark, user_shell, ShellIntegration};
use crate::stream::{OutputSplitter, Piece};
use crate::types::{
    Appearance, AttachHint, BackendKind, Capabilities, Cursor, Identity, LineRange, Lines, PaneId,
    PaneInfo, PaneState, Screen, Size, SpawnOptions, SplitDirection, SplitOptions, SplitSize,
    WindowId, WindowInfo,
};

use self::cli::Version;
use self::config::TmuxConfig;
use self::control::{ControlClient, ControlEvent};
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
    hub: Arc<EventHub>,
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
        let (version, version_text) = cli::check_version(&config.program).await?;
        std::fs::create_dir_all(&config.state_dir)
            .map_err(|e| BackendError::io(format!("creating {}", config.state_dir.display()), e))?;
        let shells = ShellIntegration::install(&config.shell_dir())?;
        let shell = config.shell.clone().unwrap_or_else(user_shell);
        let shell_command = shells.shell_command(&shell);
        let conf = config.conf_text(&shell_command, config::pick_terminal());
        write_if_changed(&config.conf_path(), &conf)?;
        let backend = TmuxBackend {
            inner: Arc::new(Inner {
                config,
                version,
                version_text,
                shell,
                shell_command,
                hub: Arc::new(EventHub::new()),
                link: Link::new(),
                paste_counter: Default::default(),
                exits_reported: Default::default(),
                watched: Default::default(),
                last_marks: Default::default(),
                instance: Default::default(),
            }),
        };
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
        let instance = client
            .command("display-message -p '#{pid} #{start_time}'")
            .await
            .map(|reply| reply.text().trim().to_string())
            .ok();
        let previous = std::mem::replace(&mut *lock(&self.inner.instance), instance.clone());
        let restarted = previous.is_some() && instance.is_some() && previous != instance;
        if restarted {
            lock(&self.inner.exits_reported).clear();
            lock(&self.inner.watched).clear();
            lock(&self.inner.last_marks).clear();
            tracing::info!(target: "cohort::tmux", "the tmux server was started again: panes of the old one are gone");
            self.inner.hub.emit(BackendEvent::ServerRestarted);
        } else if got == Got::Reopened {
            self.inner.hub.emit(BackendEvent::Reconnected);
        }
        Ok(client)
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
        let mut command = cli::command(&config.program, &config.socket);
        command.envs(config.server_env.iter().map(|(k, v)| (k, v)));
        command.arg("-f").arg(config.conf_path()).args([
            "-C",
            "new-session",
            "-A",
            "-s",
            &config.session,
            "-n",
            LOBBY_WINDOW,
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
            "printf '%s\\n' 'cohort: this window keeps the tmux server up; agents work in the other windows.'; exec sleep 2147483647",
        ]);
        let weak_slot: Arc<std::sync::OnceLock<Weak<ControlClient>>> = Arc::default();
        let handler = EventRouter {
            hub: self.inner.hub.clone(),
            splitters: HashMap::new(),
            pane_state: HashMap::new(),
            client: weak_slot.clone(),
            exits_reported: self.inner.exits_reported.clone(),
            last_marks: self.inner.last_marks.clone(),
        };
        let client = Arc::new(ControlClient::start(command, handler.into_handler()).await?);
        let _ = weak_slot.set(Arc::downgrade(&client));
        // The options are applied one command per line, not with source-file: tmux
        // answers every command inside a sourced file with a reply block of its own,
        // which would shift the pairing of replies to commands.
        let conf = std::fs::read_to_string(config.conf_path()).map_err(|e| {
            BackendError::io(format!("reading {}", config.conf_path().display()), e)
        })?;
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
        self.client().await?.command(line).await
    }

    /// Runs a command aimed at `pane`, turning "can't find pane" into [`BackendError::PaneGone`].
    async fn pane_cmd(&self, pane: &PaneId, line: &str) -> Result<parse::Reply> {
        check_pane_id(pane)?;
        self.cmd(line).await.map_err(|e| pane_error(pane, e))
    }

    async fn pane_pipeline(&self, pane: &PaneId, lines: &[String]) -> Result<Vec<parse::Reply>> {
        check_pane_id(pane)?;
        let results = self.client().await?.pipeline(lines).await?;
        results
            .into_iter()
            .map(|r| r.map_err(|e| pane_error(pane, e)))
            .collect()
    }

    /// `display-message` for `pane` with the given format fields. tmux answers for the
    /// current pane when the target is missing, so the reply's pane id is checked.
    async fn display(&self, pane: &PaneId, fields: &[&str]) -> Result<Vec<String>> {
        let client = self.client().await?;
        self.display_on(&client, pane, fields).await
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
        let fields = self.display(pane, &PANE_FIELDS[1..]).await?;
        let row = format!("{pane}{SEP}{}", fields.join(&SEP.to_string()));
        let (info, pid) = parse_pane_row(&row)
            .ok_or_else(|| BackendError::Protocol(format!("unexpected pane row {row:?}")))?;
        if let (false, Some(pid)) = (info.dead, pid) {
            self.watch_exit(&info.id, pid);
        }
        Ok(info)
    }

    /// Reports `pane`'s exit as soon as process `pid` ends (see [`exit_watch`]).
    fn watch_exit(&self, pane: &PaneId, pid: u32) {
        if !lock(&self.inner.watched).insert(pane.0.clone()) {
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

    fn spawn_args(&self, options: &SpawnOptions) -> Result<String> {
        self.ensure_files()?;
        let mut args = String::new();
        if let Some(cwd) = &options.cwd {
            let path = Path::new(cwd);
            if !path.is_dir() {
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
        args.push(' ');
        args.push_str(&quote::arg(&command));
        Ok(args)
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
            if message.contains("can't find pane") || message.contains("can't find window") =>
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

#[async_trait]
impl TerminalBackend for TmuxBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Tmux
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            splits: true,
            raw_output_stream: true,
            prompt_marks: true,
            titles: true,
            badges: true,
            tab_colors: true,
            background_colors: true,
            cursor_colors: true,
            focus: true,
            foreground_process: true,
            signed_marks: true,
            split_sizes: true,
        }
    }

    fn attach_hint(&self, pane: &PaneId) -> AttachHint {
        let config = &self.inner.config;
        let mut argv: Vec<String> = vec![config.program.to_string_lossy().into_owned()];
        argv.extend(config.socket.args());
        // A grouped session per viewer: each human picks windows independently, the
        // agents' window sizes stay fixed (window-size manual), and the viewer session
        // disappears when the human detaches.
        argv.extend(
            [
                "new-session",
                "-t",
                &format!("={}", config.session),
                ";",
                "set-option",
                "destroy-unattached",
                "on",
                ";",
                "select-window",
                "-t",
                pane.as_str(),
                ";",
                "select-pane",
                "-t",
                pane.as_str(),
            ]
            .map(String::from),
        );
        let command_line = argv
            .iter()
            .map(|a| {
                if a == ";" {
                    "\\;".to_string()
                } else {
                    quote::sh(a)
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        AttachHint {
            description: format!("run `{command_line}` in a terminal; detach with C-b d"),
            argv,
            command_line,
        }
    }

    async fn spawn(&self, options: SpawnOptions) -> Result<PaneInfo> {
        if options.name.trim().is_empty() {
            return Err(BackendError::InvalidArgument(
                "a window needs a name".into(),
            ));
        }
        let args = self.spawn_args(&options)?;
        let line = format!(
            "new-window -d -P -F {} -t {} -n {}{args}",
            quote::single("#{pane_id}"),
            self.window_target(),
            quote::arg(&quote::format_literal(&options.name)),
        );
        let Size { cols, rows } = options.size.unwrap_or(self.inner.config.default_size);
        if !(2..=10_000).contains(&cols) || !(2..=10_000).contains(&rows) {
            return Err(BackendError::InvalidArgument(format!(
                "window size {cols}x{rows} is out of range: use 2 to 10000 columns and rows"
            )));
        }
        let reply = self.cmd(&line).await?;
        let pane = PaneId(reply.text().trim().to_string());
        check_pane_id(&pane)?;
        // Pins the window's size (window-size manual for this window only).
        self.pane_cmd(
            &pane,
            &format!("resize-window -t {pane} -x {cols} -y {rows}"),
        )
        .await?;
        if let Some(identity) = &options.identity {
            self.stamp_identity(&pane, identity).await?;
        }
        self.pane_info(&pane).await
    }

    async fn split(&self, pane: &PaneId, options: SplitOptions) -> Result<PaneInfo> {
        check_pane_id(pane)?;
        let direction = match options.direction {
            SplitDirection::Horizontal => "-h",
            SplitDirection::Vertical => "-v",
        };
        let size = match options.size {
            None => String::new(),
            Some(SplitSize::Percent(p)) if (1..=99).contains(&p) => format!(" -l {p}%"),
            Some(SplitSize::Percent(p)) => {
                return Err(BackendError::InvalidArgument(format!(
                    "split size {p}% is out of range: use 1 to 99"
                )))
            }
            Some(SplitSize::Cells(0)) => {
                return Err(BackendError::InvalidArgument(
                    "split size 0 cells: use at least 1".into(),
                ))
            }
            Some(SplitSize::Cells(n)) => format!(" -l {n}"),
        };
        let args = self.spawn_args(&options.spawn)?;
        let line = format!(
            "split-window -d {direction}{size} -P -F {} -t {pane}{args}",
            quote::single("#{pane_id}")
        );
        let reply = self.pane_cmd(pane, &line).await?;
        let new_pane = PaneId(reply.text().trim().to_string());
        check_pane_id(&new_pane)?;
        if let Some(identity) = &options.spawn.identity {
            self.stamp_identity(&new_pane, identity).await?;
        }
        self.pane_info(&new_pane).await
    }

    async fn close(&self, pane: &PaneId) -> Result<()> {
        self.pane_cmd(pane, &format!("kill-pane -t {pane}"))
            .await
            .map(|_| ())
    }

    async fn list_panes(&self) -> Result<Vec<PaneInfo>> {
        let line = format!(
            "list-panes -s -t {} -F {}",
            quote::single(&format!("={}", self.inner.config.session)),
            quote::arg(&pane_format())
        );
        let reply = self.cmd(&line).await?;
        let mut panes = Vec::new();
        for line in &reply.lines {
            let Some((info, pid)) = parse_pane_row(&String::from_utf8_lossy(line)) else {
                continue;
            };
            if info.window_name == LOBBY_WINDOW {
                continue;
            }
            if let (false, Some(pid)) = (info.dead, pid) {
                self.watch_exit(&info.id, pid);
            }
            panes.push(info);
        }
        Ok(panes)
    }

    async fn list_windows(&self) -> Result<Vec<WindowInfo>> {
        let format = ["#{window_id}", "#{window_name}", "#{window_layout}"].join(&SEP.to_string());
        let line = format!(
            "list-windows -t {} -F {}",
            quote::single(&format!("={}", self.inner.config.session)),
            quote::arg(&format)
        );
        let reply = self.cmd(&line).await?;
        let mut windows = Vec::new();
        for line in &reply.lines {
            let line = String::from_utf8_lossy(line);
            let fields: Vec<&str> = line.split(SEP).collect();
            if fields.len() != 3 || fields[1] == LOBBY_WINDOW {
                continue;
            }
            windows.push(WindowInfo {
                id: WindowId(fields[0].to_string()),
                name: fields[1].to_string(),
                layout: parse_tmux_layout(fields[2])?,
            });
        }
        Ok(windows)
    }

    async fn send_text(&self, pane: &PaneId, text: &str) -> Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        let lines: Vec<String> = chunks(text, CHUNK_BYTES)
            .into_iter()
            .map(|chunk| {
                if quote::is_plain(chunk) {
                    // `--`: text that starts with `-` is text, not flags.
                    format!("send-keys -t {pane} -l -- {}", quote::single(chunk))
                } else {
                    // Control characters go in as exact bytes.
                    let hex: Vec<String> = chunk.bytes().map(|b| format!("{b:02x}")).collect();
                    format!("send-keys -t {pane} -H {}", hex.join(" "))
                }
            })
            .collect();
        self.pane_pipeline(pane, &lines).await.map(|_| ())
    }

    async fn send_keys(&self, pane: &PaneId, keys: &[Key]) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = keys.iter().map(|k| quote::single(&k.tmux_name())).collect();
        self.pane_cmd(pane, &format!("send-keys -t {pane} {}", names.join(" ")))
            .await
            .map(|_| ())
    }

    async fn paste(&self, pane: &PaneId, text: &str) -> Result<()> {
        check_pane_id(pane)?;
        if text.is_empty() {
            return Ok(());
        }
        let n = self
            .inner
            .paste_counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let buffer = format!("cohort-{}-{n}", std::process::id());
        let mut lines: Vec<String> = chunks(text, CHUNK_BYTES)
            .into_iter()
            .enumerate()
            .map(|(i, chunk)| {
                let append = if i == 0 { "" } else { " -a" };
                format!("set-buffer{append} -b {buffer} -- {}", quote::arg(chunk))
            })
            .collect();
        lines.push(format!(
            "list-buffers -F {}",
            quote::single("#{buffer_name} #{buffer_size}")
        ));
        let replies = self.pane_pipeline(pane, &lines).await?;
        let listing = replies.last().map(|r| r.text()).unwrap_or_default();
        let size = listing
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{buffer} ")))
            .and_then(|s| s.trim().parse::<usize>().ok());
        if size != Some(text.len()) {
            let _ = self.cmd(&format!("delete-buffer -b {buffer}")).await;
            return Err(BackendError::InputLost {
                pane: pane.clone(),
                detail: format!(
                    "the paste buffer holds {} bytes, expected {}; nothing was pasted",
                    size.map_or("no".to_string(), |s| s.to_string()),
                    text.len()
                ),
            });
        }
        self.pane_cmd(pane, &format!("paste-buffer -p -d -b {buffer} -t {pane}"))
            .await
            .map(|_| ())
    }

    async fn read_lines(&self, pane: &PaneId, range: LineRange) -> Result<Lines> {
        let info = self
            .display(pane, &["#{history_size}", "#{pane_height}"])
            .await?;
        let history: u64 = info[0].parse().unwrap_or(0);
        let height: u64 = info[1].parse().unwrap_or(0);
        let total = history + height;
        let start = range.start.min(total);
        let end = range.end.min(total);
        if start >= end {
            return Ok(Lines {
                first: start,
                lines: Vec::new(),
                total,
            });
        }
        // tmux counts the top of the screen as line 0 and history as negative.
        let from = start as i64 - history as i64;
        let to = end as i64 - 1 - history as i64;
        let reply = self
            .pane_cmd(
                pane,
                &format!("capture-pane -p -t {pane} -S {from} -E {to}"),
            )
            .await?;
        Ok(Lines {
            first: start,
            lines: reply
                .lines
                .iter()
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect(),
            total,
        })
    }

    async fn read_screen(&self, pane: &PaneId) -> Result<Screen> {
        self.capture_screen(pane, false).await
    }

    async fn read_screen_styled(&self, pane: &PaneId) -> Result<Screen> {
        self.capture_screen(pane, true).await
    }

    fn subscribe(&self) -> EventStream {
        self.inner.hub.subscribe()
    }

    async fn pane_state(&self, pane: &PaneId) -> Result<PaneState> {
        let f = self
            .display(
                pane,
                &[
                    "#{pane_current_command}",
                    "#{pane_pid}",
                    "#{pane_dead}",
                    "#{pane_dead_status}",
                    "#{cursor_x}",
                    "#{cursor_y}",
                    "#{pane_width}",
                    "#{pane_height}",
                    "#{alternate_on}",
                    "#{pane_in_mode}",
                    "#{history_size}",
                    "#{pane_current_path}",
                    "#{pane_title}",
                    "#{pane_dead_signal}",
                    "#{pane_tty}",
                ],
            )
            .await?;
        let num = |s: &str| s.parse::<u16>().unwrap_or(0);
        let dead = f[2] == "1";
        let shell_pid = f[1].parse::<u32>().ok().filter(|p| *p > 0);
        let foreground = if dead {
            None
        } else {
            shell_pid.and_then(crate::process::foreground_pid)
        };
        Ok(PaneState {
            foreground_command: f[0].clone(),
            foreground_pid: foreground,
            shell_pid,
            shell_command: shell_pid
                .and_then(crate::process::process_name)
                .unwrap_or_default(),
            dead,
            exit_status: if dead {
                f[3].parse::<i32>()
                    .ok()
                    .or(f[13].parse::<i32>().ok().map(|s| 128 + s))
                    .or_else(|| lock(&self.inner.last_marks).get(pane.as_str()).copied())
            } else {
                None
            },
            cursor: Cursor {
                x: num(&f[4]),
                y: num(&f[5]),
            },
            size: Size {
                cols: num(&f[6]),
                rows: num(&f[7]),
            },
            alternate_screen: f[8] == "1",
            copy_mode: f[9] == "1",
            bracketed_paste: None,
            history_lines: f[10].parse().unwrap_or(0),
            cwd: (!f[11].is_empty()).then(|| f[11].clone()),
            title: f[12].clone(),
            tty: (!f[14].is_empty()).then(|| f[14].clone()),
        })
    }

    async fn stamp_identity(&self, pane: &PaneId, identity: &Identity) -> Result<()> {
        let set = |key: &str, value: &Option<String>| match value {
            Some(v) => format!("set-option -p -t {pane} @cohort_{key} {}", quote::arg(v)),
            None => format!("set-option -p -u -t {pane} @cohort_{key}"),
        };
        let lines = [
            set("id", &Some(identity.id.clone())),
            set("name", &Some(identity.name.clone())),
            set("agent", &identity.agent),
            set("team", &identity.team),
            set("key", &identity.key),
        ];
        self.pane_pipeline(pane, &lines).await.map(|_| ())
    }

    async fn set_title(&self, pane: &PaneId, title: &str) -> Result<()> {
        self.pane_cmd(
            pane,
            &format!(
                "select-pane -t {pane} -T {}",
                quote::arg(&quote::format_literal(title))
            ),
        )
        .await
        .map(|_| ())
    }

    async fn cancel_copy_mode(&self, pane: &PaneId) -> Result<()> {
        let in_mode = self.display(pane, &["#{pane_in_mode}"]).await?.remove(0);
        if in_mode.trim() == "1" {
            self.pane_cmd(pane, &format!("send-keys -t {pane} -X cancel"))
                .await?;
        }
        Ok(())
    }

    async fn set_appearance(&self, pane: &PaneId, look: &Appearance) -> Result<()> {
        check_pane_id(pane)?;
        let lines = appearance::commands(pane, look).map_err(BackendError::InvalidArgument)?;
        if !lines.is_empty() {
            self.pane_pipeline(pane, &lines).await?;
        }
        if let Some(title) = &look.title {
            self.set_title(pane, title).await?;
        }
        Ok(())
    }

    async fn appearance(&self, pane: &PaneId) -> Result<Appearance> {
        let values = self.display(pane, &appearance::READ_FIELDS).await?;
        Ok(appearance::parse(&values))
    }

    async fn focus(&self, pane: &PaneId) -> Result<()> {
        self.pane_pipeline(
            pane,
            &[
                format!("select-window -t {pane}"),
                format!("select-pane -t {pane}"),
            ],
        )
        .await
        .map(|_| ())
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
            "%3", "@2", "w", "t", "80", "24", "1", "bash", "0", "uuid", "name", "", "team", "42",
            "",
        ]
        .join("\u{1f}");
        let (info, pid) = parse_pane_row(&row).unwrap();
        assert_eq!(pid, Some(42));
        assert_eq!(info.id, PaneId::new("%3"));
        let identity = info.identity.unwrap();
        assert_eq!(identity.agent, None);
        assert_eq!(identity.team.as_deref(), Some("team"));
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
