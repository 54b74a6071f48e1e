//! The iTerm2 backend: iTerm2's own WebSocket + protobuf API (macOS).
//!
//! - **Connection** ([`conn`]): the unix socket by default, the legacy TCP port as a
//!   fallback, the exact handshake headers iTerm2 checks, cookies from the
//!   environment or AppleScript with one fresh-cookie retry on 401, the server's
//!   protocol version kept for feature gates, request ids from 1 with replies
//!   matched by id, notifications routed by their case.
//! - **Messages** ([`proto`]): generated at build time from cohort's schema of the
//!   iTerm2 API subset it uses, wire-compatible with iTerm2.
//! - **Files.** [`conn`] the connection, `events` notifications into events,
//!   `requests` the requests and their replies, `layout` split trees and sizes,
//!   `launch` how a session starts, [`literal`] strings iTerm2 must not evaluate,
//!   `marks` which marks are the shell's, `backend` the trait implementation.
//! - **Panes.** cohort opens tabs in one iTerm2 window of its own (a new window when
//!   that one is gone). Each runs the user's shell with cohort's shell integration
//!   plus the `B` mark iTerm2 needs to report prompts ([`shell`]). Identity (the
//!   mark key included) is stamped in `user.cohort_*` session variables, which
//!   [`TerminalBackend::list_panes`] reads back, so panes are found again after a
//!   restart.
//! - **Events.** Subscriptions: new/terminated session, layout change, screen update
//!   and prompt (PROMPT, COMMAND_START, COMMAND_END; protocol ≥ 1.1) for every
//!   session, and the `jobName` and `user.cohortMark` variables of every session.
//!   Notifications are handled in order on one task per connection; screen updates
//!   are coalesced per batch.
//! - **Output.** iTerm2 has no raw byte stream, so [`Capabilities::raw_output_stream`](crate::Capabilities::raw_output_stream)
//!   is false. [`BackendEvent::Output`] carries the *text* of the session's lines, read
//!   with GetBuffer by absolute line number (iTerm2 counts every line ever scrolled):
//!   each pane remembers the last line and column it reported and reports only what
//!   follows, as text with `\r\n` at hard line ends (soft-wrapped rows are joined).
//!   A line rewritten in place after it was reported is not reported again.
//! - **Prompt marks.** Each prompt notification is placed exactly: the backend asks
//!   for the prompt's ranges (GetPrompt by id), reports the text up to the mark's
//!   position, then the mark, so the output before a mark always precedes it (as on
//!   tmux). PROMPT → [`PromptMark::PromptStart`](crate::PromptMark::PromptStart), COMMAND_START →
//!   [`PromptMark::CommandStart`](crate::PromptMark::CommandStart), COMMAND_END → [`PromptMark::CommandFinished`](crate::PromptMark::CommandFinished) with
//!   the exit status. A screen update never reports text past a mark whose
//!   notification has not been handled yet.
//! - **Signed marks.** iTerm2 reports marks without their parameters, so cohort's
//!   integration also reports each of its marks through the user variable
//!   `cohortMark`, signed with the pane's key, right before the mark: a prompt
//!   notification that such a signature announced is reported with the signature's
//!   [`MarkParams`](crate::MarkParams), every other one unsigned (a mark a program
//!   printed); see `marks`. Only the shell's own `D` gives a dead pane its status.
//! - **State.** Foreground job from the `jobName` / `jobPid` session variables (iTerm2
//!   polls the process tree; a VariableMonitor on `jobName` makes its changes
//!   [`BackendEvent::ForegroundChanged`] events), the shell from `pid`, the alternate
//!   screen from `showingAlternateScreen`. cohort's sessions stay when their program
//!   ends (profile "Close Sessions On End" off, as tmux's `remain-on-exit`): iTerm2
//!   announces the end (terminate-session, [`BackendEvent::PaneExited`]) and from
//!   then on refuses input to the session, which is how a pane is known to be dead,
//!   also by a cohort process that did not see it end. Its exit status is the `D`
//!   mark of its last command, when no command started after it. There is no copy
//!   mode to report: iTerm2's copy mode takes keys typed at the keyboard, never text
//!   sent through the API.
//! - **Input.** SendText writes bytes as typed: Enter is `\r`, keys are their xterm
//!   bytes ([`Key::to_bytes`](crate::Key::to_bytes)); a paste is wrapped in bracketed-paste codes with line
//!   ends as `\r`, as a terminal pastes (iTerm2 cannot tell whether the program asked
//!   for bracketed paste).
//! - **Appearance.** Badge, tab colour and background through SetProfileProperty
//!   (the session's own copy of its profile), titles through InvokeFunction
//!   (`iterm2.set_name` for the pane, `iterm2.set_title` for the tab), focus through
//!   Activate.
//! - **Arrangements.** A window cohort saves is also kept as iTerm2's own saved
//!   arrangement (SavedArrangement), for a person to restore from iTerm2's menu;
//!   see `arrangements`.

mod appearance;
mod arrangements;
mod backend;
mod broadcast;
pub mod conn;
mod events;
mod launch;
mod layout;
pub mod literal;
mod marks;
mod profiles;
pub mod proto;
mod requests;
pub mod shell;

mod auto;

pub use auto::{connect_auto, inside_iterm2, AutoChoice};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::backend::TerminalBackend;
use crate::error::{BackendError, Result};
use crate::event::{BackendEvent, EventHub};
use crate::link::{Got, Link};
use crate::shell::user_shell;
use crate::types::{Identity, PaneId, PaneInfo, Size};

use self::conn::{ConnectOptions, Connection};
use self::events::{run_events, subscribe_all, Signer, Track};
use self::proto::client_originated_message::Submessage as Req;
use self::proto::server_originated_message::Submessage as Rep;
use self::proto::variable_request;
use self::requests::{get_buffer, parse_variables, screen_only, variable_get};

/// Session variables holding cohort's identity, in the order of [`identity_values`].
const ID_VARS: [&str; 7] = [
    "user.cohort_id",
    "user.cohort_name",
    "user.cohort_agent",
    "user.cohort_team",
    "user.cohort_key",
    "user.cohort_anchor",
    "user.cohort_announces",
];

/// The session variable holding the public anchor of the shell's mark tokens.
const ANCHOR_VAR: &str = ID_VARS[5];
/// The session variable saying the shell announces command starts.
const ANNOUNCES_VAR: &str = ID_VARS[6];

/// The values of [`ID_VARS`] for `identity`.
fn identity_values(identity: &Identity) -> [Option<String>; 7] {
    [
        Some(identity.id.clone()),
        Some(identity.name.clone()),
        identity.agent.clone(),
        identity.team.clone(),
        identity.key.clone(),
        identity.anchor.clone(),
        identity.announces_start.then(|| "1".to_string()),
    ]
}

/// The identity read back from the values of [`ID_VARS`]; `None` without an id.
fn identity_from(vars: &[Option<String>]) -> Option<Identity> {
    let value = |i: usize| vars.get(i).cloned().flatten().filter(|s| !s.is_empty());
    value(0).map(|id| Identity {
        id,
        name: value(1).unwrap_or_default(),
        agent: value(2),
        team: value(3),
        key: value(4),
        anchor: value(5),
        announces_start: value(6).is_some(),
    })
}

/// How to reach iTerm2 and start panes.
#[derive(Clone, Debug)]
pub struct Iterm2Config {
    /// Endpoint and credentials.
    pub connect: ConnectOptions,
    /// Where cohort writes its shell integration files.
    pub state_dir: PathBuf,
    /// The shell new panes run; `$SHELL` when `None`.
    pub shell: Option<PathBuf>,
    /// Size of cohort's window when it opens one.
    pub default_size: Size,
    /// iTerm2's DynamicProfiles folder, where cohort keeps its teams' profiles;
    /// `None` keeps none (each pane of a team is coloured as it opens).
    pub dynamic_profiles: Option<PathBuf>,
}

impl Iterm2Config {
    /// Where the pads of one-time tokens for new shells are written (see
    /// [`crate::pad`]); each is deleted by the shell that reads it.
    pub fn pad_dir(&self) -> PathBuf {
        self.state_dir.join("pads")
    }

    /// Defaults: discovered endpoint, credentials from the environment or AppleScript.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        Iterm2Config {
            connect: ConnectOptions::default(),
            state_dir: state_dir.into(),
            shell: None,
            default_size: Size {
                cols: 200,
                rows: 50,
            },
            dynamic_profiles: default_dynamic_profiles(),
        }
    }
}

/// iTerm2's own DynamicProfiles folder, on a Mac with a home directory.
fn default_dynamic_profiles() -> Option<PathBuf> {
    if !cfg!(target_os = "macos") {
        return None;
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(PathBuf::from(home).join("Library/Application Support/iTerm2/DynamicProfiles"))
}

/// The iTerm2 backend; see the module docs.
#[derive(Clone)]
pub struct Iterm2Backend {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Iterm2Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iterm2Backend")
            .field("endpoint", &self.inner.config.connect.endpoint)
            .finish_non_exhaustive()
    }
}

struct Inner {
    config: Iterm2Config,
    shell_command: String,
    hub: Arc<EventHub>,
    link: Link<Connection>,
    tracks: Arc<Mutex<HashMap<String, Track>>>,
    /// Sessions whose program ended, with its exit status when known (iTerm2
    /// keeps cohort's sessions after that, as tmux keeps dead panes).
    exits: Mutex<HashMap<String, Option<i32>>>,
    /// The window cohort opens tabs in.
    window: Mutex<Option<String>>,
    /// iTerm2 agreed to report the `user.cohortMark` signatures of every session.
    signed_marks: AtomicBool,
    /// Buried sessions: iTerm2 sends no screen updates for them (a buried session
    /// has no view), so their screens are read on a timer (see `events`).
    buried: Mutex<std::collections::HashSet<String>>,
}

impl Iterm2Backend {
    /// Writes the shell integration and connects to iTerm2.
    pub async fn connect(config: Iterm2Config) -> Result<Iterm2Backend> {
        std::fs::create_dir_all(&config.state_dir)
            .map_err(|e| BackendError::io(format!("creating {}", config.state_dir.display()), e))?;
        let shell = config.shell.clone().unwrap_or_else(user_shell);
        let shell_command = shell::install(&config.state_dir, &shell)?;
        let backend = Iterm2Backend {
            inner: Arc::new(Inner {
                config,
                shell_command,
                hub: Arc::new(EventHub::new()),
                link: Link::new(),
                tracks: Arc::default(),
                exits: Mutex::default(),
                window: Mutex::new(None),
                signed_marks: AtomicBool::new(false),
                buried: Mutex::default(),
            }),
        };
        backend.conn().await?;
        Ok(backend)
    }

    /// The protocol version iTerm2 announced.
    pub async fn protocol_version(&self) -> Result<(u32, u32)> {
        Ok(self.conn().await?.protocol_version())
    }

    /// Ends the connection (the sessions stay in iTerm2); the next call reconnects.
    pub fn disconnect(&self) {
        if let Some(conn) = self.inner.link.take() {
            conn.close();
        }
    }

    /// The command line new panes run.
    pub fn shell_command(&self) -> &str {
        &self.inner.shell_command
    }

    async fn conn(&self) -> Result<Arc<Connection>> {
        let open = || async {
            let (tx, rx) = mpsc::unbounded_channel();
            let conn = Arc::new(Connection::connect(&self.inner.config.connect, tx).await?);
            let subscribed = subscribe_all(&conn).await?;
            self.inner
                .signed_marks
                .store(subscribed.signed, Ordering::Relaxed);
            tokio::spawn(run_events(
                Arc::downgrade(&self.inner),
                conn.clone(),
                rx,
                subscribed.component,
            ));
            Ok::<_, BackendError>(conn)
        };
        let (conn, got) = self.inner.link.get(open).await?;
        if got == Got::Reopened {
            self.inner.hub.emit(BackendEvent::Reconnected);
        }
        Ok(conn)
    }

    async fn call(&self, request: Req) -> Result<Rep> {
        use tracing::Instrument;
        let span = crate::otel_span!(
            "iterm2 request",
            backend = "iterm2",
            command = request_name(&request),
            otel.status_code = tracing::field::Empty,
        );
        let reply = async { self.conn().await?.call(request).await }
            .instrument(span.clone())
            .await;
        if reply.is_err() {
            span.record("otel.status_code", "ERROR");
        }
        reply
    }

    /// Follows a session cohort opened, from its start, knowing what its shell signs
    /// its marks with.
    fn track(&self, session: &str, identity: Option<&Identity>) {
        let mut tracks = lock(&self.inner.tracks);
        let track = tracks.entry(session.to_string()).or_default();
        track.signer = identity.map(|i| Signer::of(i, true)).unwrap_or_default();
    }

    /// Starts following a session's output from its current cursor (adopted panes).
    async fn adopt(&self, session: &str) -> Result<()> {
        if lock(&self.inner.tracks).contains_key(session) {
            return Ok(());
        }
        let conn = self.conn().await?;
        let buffer = get_buffer(&conn, session, screen_only()).await?;
        let cursor = buffer.cursor.unwrap_or_default();
        lock(&self.inner.tracks)
            .entry(session.to_string())
            .or_insert(Track::from(cursor.y.unwrap_or(0), cursor.x.unwrap_or(0)));
        Ok(())
    }

    async fn pane_info(&self, pane: &PaneId) -> Result<PaneInfo> {
        self.list_panes()
            .await?
            .into_iter()
            .find(|p| &p.id == pane)
            .ok_or_else(|| BackendError::PaneGone(pane.clone()))
    }

    /// The exit status of a session whose program ended, when it is known: the `D`
    /// mark of its last command, unless a command started after it (`exit 7` typed at
    /// a shell ends it without a mark).
    fn exit_status(&self, session: &str) -> Option<i32> {
        let recorded = lock(&self.inner.exits).get(session).copied();
        recorded.unwrap_or_else(|| {
            lock(&self.inner.tracks)
                .get(session)
                .and_then(|t| t.last_status)
        })
    }

    /// Reads session variables (`jobName`, `user.…`), JSON-decoded; `None` when unset.
    pub async fn variables(&self, pane: &PaneId, names: &[&str]) -> Result<Vec<Option<String>>> {
        let reply = self
            .call(variable_get(
                variable_request::Scope::SessionId(pane.0.clone()),
                names,
            ))
            .await?;
        parse_variables(pane, names.len(), reply)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The request's kind (`GetBufferRequest`), for a span.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
fn request_name(request: &Req) -> &'static str {
    match request {
        Req::GetBufferRequest(_) => "GetBufferRequest",
        Req::GetPromptRequest(_) => "GetPromptRequest",
        Req::TransactionRequest(_) => "TransactionRequest",
        Req::NotificationRequest(_) => "NotificationRequest",
        Req::SetProfilePropertyRequest(_) => "SetProfilePropertyRequest",
        Req::ListSessionsRequest(_) => "ListSessionsRequest",
        Req::SendTextRequest(_) => "SendTextRequest",
        Req::CreateTabRequest(_) => "CreateTabRequest",
        Req::SplitPaneRequest(_) => "SplitPaneRequest",
        Req::GetProfilePropertyRequest(_) => "GetProfilePropertyRequest",
        Req::SetPropertyRequest(_) => "SetPropertyRequest",
        Req::GetPropertyRequest(_) => "GetPropertyRequest",
        Req::InjectRequest(_) => "InjectRequest",
        Req::ActivateRequest(_) => "ActivateRequest",
        Req::VariableRequest(_) => "VariableRequest",
        Req::FocusRequest(_) => "FocusRequest",
        Req::ListProfilesRequest(_) => "ListProfilesRequest",
        Req::RestartSessionRequest(_) => "RestartSessionRequest",
        Req::SetTabLayoutRequest(_) => "SetTabLayoutRequest",
        Req::GetBroadcastDomainsRequest(_) => "GetBroadcastDomainsRequest",
        Req::SetBroadcastDomainsRequest(_) => "SetBroadcastDomainsRequest",
        Req::ServerOriginatedRpcResultRequest(_) => "ServerOriginatedRPCResultRequest",
        Req::CloseRequest(_) => "CloseRequest",
        Req::InvokeFunctionRequest(_) => "InvokeFunctionRequest",
        Req::ListPromptsRequest(_) => "ListPromptsRequest",
        #[allow(unreachable_patterns)]
        _ => "request",
    }
}
