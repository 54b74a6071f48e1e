//! The engine: sessions by name, the send path, the output journal, the completion
//! ladder and reduced reads.
//!
//! A *session* is a named terminal (a tmux window with its pane). Its identity (a
//! persistent UUID and its name) is stamped on the pane, so any cohort process finds
//! it by name, id or pane id. Everything below runs on backend events: output goes
//! to each pane's [`journal`], prompt marks drive the [`completion`] ladder.

pub mod completion;
pub mod input;
pub mod journal;
pub mod layout;
pub mod orchestrate;
pub mod read;
pub mod registry;
pub mod runtime;
pub mod safety;
mod target;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cohort_backends::{
    BackendError, Identity, Key, PaneId, PaneInfo, Screen, SpawnOptions, TerminalBackend,
};
use serde::Serialize;

use crate::config::Config;

use self::completion::{mark_suffix, Started, Verdict, WaitSpec};
use self::read::{ReadOptions, ReadOutput, ReadWhat};
use self::registry::{LockRecord, Registry, RegistryError, SessionRecord};
use self::runtime::Runtimes;
use self::safety::Refusal;

pub use target::{describe_targets, resolve_target};

/// Errors the engine reports; each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// No session matches the target.
    #[error("no session named {target:?}; {known}")]
    UnknownTarget {
        /// The target as given.
        target: String,
        /// What exists, phrased for the user.
        known: String,
    },
    /// The name is taken.
    #[error("the name {name:?} is taken: {by}; session and agent names are both targets, so pick another name (or close that session first)")]
    NameTaken {
        /// The name as given.
        name: String,
        /// What holds it.
        by: String,
    },
    /// The name is not usable.
    #[error("invalid session name {name:?}: {why}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The tripwire refused the command.
    #[error("{0}")]
    Refused(Refusal),
    /// Another process holds the pane's input.
    #[error("could not type into {pane}: {reason}; try again in a moment")]
    Busy {
        /// The pane.
        pane: PaneId,
        /// Why.
        reason: String,
    },
    /// An argument is unusable.
    #[error("{0}")]
    InvalidArgument(String),
    /// The registry failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The session's program exited: nothing reads what would be typed.
    #[error("the program in {pane} has exited{}: read its output, or close the session and open a new one", .status.map(|s| format!(" with status {s}")).unwrap_or_default())]
    Exited {
        /// The pane.
        pane: PaneId,
        /// Its exit status, when known.
        status: Option<i32>,
    },
    /// Someone else holds the session's lock.
    #[error("session {:?} is locked by {:?}: ask for it with request_access, or wait for unlock", .0.session, .0.owner)]
    Locked(LockRecord),
}

/// Lines of scrollback a starting process takes in per pane (see
/// [`Engine::take_in_histories`]).
pub const HISTORY_TAKEN: u64 = 20_000;

/// A target as given to a many-target call, and its session or why it names none.
pub type ExpandedTarget = (String, Result<PaneInfo, EngineError>);

/// How to open a session.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Unique name.
    pub name: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// Command to run instead of an interactive shell.
    pub command: Option<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Agent working in the session (stamped on the pane, registered).
    pub agent: Option<String>,
    /// Team of that agent.
    pub team: Option<String>,
    /// Window/tab name when it differs from the session name.
    pub window: Option<String>,
}

/// One pane of a layout.
#[derive(Clone, Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayoutPane {
    /// Session name (default: the layout's name and the pane's number).
    #[serde(default)]
    pub name: Option<String>,
    /// Agent working there.
    #[serde(default)]
    pub agent: Option<String>,
    /// Team of that agent.
    #[serde(default)]
    pub team: Option<String>,
    /// Command instead of a shell.
    #[serde(default)]
    pub command: Option<String>,
    /// Working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
}

impl OpenOptions {
    /// A shell session with this name.
    pub fn named(name: impl Into<String>) -> Self {
        OpenOptions {
            name: name.into(),
            ..Default::default()
        }
    }
}

/// How to send text.
#[derive(Clone, Debug)]
pub struct SendOptions {
    /// Press Enter after the text.
    pub enter: bool,
    /// Send the text exactly as given (no sanitising).
    pub raw: bool,
    /// Pass the tripwire.
    pub force: bool,
    /// Append the exit-status sentinel (the mark layer) with this nonce.
    pub mark: Option<String>,
    /// Who is typing (an agent name); a locked session accepts only its holder.
    pub owner: Option<String>,
}

impl Default for SendOptions {
    fn default() -> Self {
        SendOptions {
            enter: true,
            raw: false,
            force: false,
            mark: None,
            owner: None,
        }
    }
}

/// What a send did.
#[derive(Clone, Debug)]
pub struct Sent {
    /// Where the command's output starts (when Enter was pressed).
    pub started: Option<Started>,
    /// Bytes typed.
    pub bytes: usize,
    /// Whether it went in as a bracketed paste.
    pub pasted: bool,
}

/// A `run`'s result: the verdict and the command's output.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// Is it done, and who says so.
    pub verdict: Verdict,
    /// The output, reduced, with its meta line (the verdict appended).
    pub output: ReadOutput,
}

/// Summary of engine memory, for diagnostics.
#[derive(Clone, Debug, Serialize)]
pub struct EngineStats {
    /// Journal bytes held in memory across panes.
    pub journal_memory: usize,
}

/// The engine; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    backend: Arc<dyn TerminalBackend>,
    runtimes: Arc<Runtimes>,
    lock_dir: PathBuf,
    server_key: String,
    journal_dir: PathBuf,
    rules: Option<Arc<cohort_reducers::UserRules>>,
    registry: Arc<Registry>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("backend", &self.backend.kind())
            .finish()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // The last clone removes this process's journal directory.
        if Arc::strong_count(&self.runtimes) == 1 {
            let _ = std::fs::remove_dir_all(&self.journal_dir);
        }
    }
}

/// A pager waits for a key no agent will press (`git log` would sit at `:` until the
/// timeout, and the next command would be typed into it), so sessions cohort opens send
/// output straight through. `open`'s `env` sets any of these back.
const PAGERS_OFF: &[(&str, &str)] = &[
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("SYSTEMD_PAGER", "cat"),
    ("GH_PAGER", "cat"),
    ("AWS_PAGER", ""),
];

impl Engine {
    /// Starts the engine on the tmux backend.
    pub async fn start(config: &Config) -> Result<Engine, EngineError> {
        let backend =
            cohort_backends::iterm2::connect_auto(config.backend, config.tmux(), config.iterm2())
                .await?;
        let key = match backend.kind() {
            cohort_backends::BackendKind::Tmux => config.tmux_socket.to_string(),
            cohort_backends::BackendKind::Iterm2 => format!(
                "iterm2 {}",
                config
                    .iterm2_socket
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "default".into())
            ),
        };
        let mut engine = Engine::with_backend(backend, &config.state_dir, &key)?;
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        match crate::rules::load(&cwd) {
            Ok(rules) => engine.rules = rules.map(Arc::new),
            Err(e) => {
                tracing::warn!(target: "cohort::engine", "user reducer rules not loaded: {e}")
            }
        }
        if let Some(message) = engine.registry.recovered() {
            tracing::error!(target: "cohort::engine", "{message}");
        }
        engine.adopt().await?;
        Ok(engine)
    }

    /// Starts each pane's journal with the last [`HISTORY_TAKEN`] lines of scrollback it
    /// had before this process, so a process that starts later (a worker's next to its
    /// manager's, or one restarted after a crash) reads what came before it. The MCP
    /// server does this before it answers its first tool call; a pane that printed
    /// meanwhile keeps its live output instead.
    pub async fn take_in_histories(&self) {
        let Ok(panes) = self.backend.list_panes().await else {
            return;
        };
        for pane in panes {
            let taken = async {
                let state = self.backend.pane_state(&pane.id).await?;
                let total = state.history_lines + u64::from(state.size.rows);
                let range = cohort_backends::LineRange {
                    start: total.saturating_sub(HISTORY_TAKEN),
                    end: total,
                };
                self.backend.read_lines(&pane.id, range).await
            };
            match taken.await {
                Ok(lines) => self.runtimes.take_in_history(&pane.id, &lines.lines),
                Err(e) => {
                    tracing::debug!(target: "cohort::engine", pane = %pane.id, error = %e, "scrollback not taken in")
                }
            }
        }
    }

    /// Uses these user-defined reducer rules for reads.
    pub fn set_rules(&mut self, rules: Option<cohort_reducers::UserRules>) {
        self.rules = rules.map(Arc::new);
    }

    /// An engine over any backend. `state_dir` holds journals and locks; `server_key`
    /// names the terminal server (locks are per server and pane).
    pub fn with_backend(
        backend: Arc<dyn TerminalBackend>,
        state_dir: &std::path::Path,
        server_key: &str,
    ) -> Result<Engine, EngineError> {
        let registry = Arc::new(Registry::open(&state_dir.join("registry.db"))?);
        let journal_root = state_dir.join("journal");
        remove_stale_journals(&journal_root);
        let journal_dir = journal_root.join(std::process::id().to_string());
        let runtimes = Arc::new(Runtimes::new(journal_dir.clone()));
        tokio::spawn(runtime::dispatch(runtimes.clone(), backend.subscribe()));
        Ok(Engine {
            backend,
            runtimes,
            lock_dir: state_dir.join("locks"),
            server_key: server_key.to_string(),
            journal_dir,
            rules: None,
            registry,
        })
    }

    /// The shared registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The terminal server this engine drives (its registry key).
    pub fn server_key(&self) -> &str {
        &self.server_key
    }

    /// Brings the registry in line with the panes that exist: panes carrying a stamped
    /// identity the registry lost are re-adopted (with their agent and team); sessions
    /// of this server whose pane is gone are dropped.
    pub async fn adopt(&self) -> Result<Vec<PaneInfo>, EngineError> {
        let panes = self.backend.list_panes().await?;
        let known = self.registry.sessions()?;
        for pane in &panes {
            let Some(identity) = &pane.identity else {
                continue;
            };
            let record = known.iter().find(|s| s.id == identity.id);
            if record.is_some_and(|r| r.pane == pane.id.as_str() && r.server == self.server_key) {
                continue;
            }
            self.registry.upsert_session(&SessionRecord {
                id: identity.id.clone(),
                name: identity.name.clone(),
                backend: self.backend.kind().name().into(),
                server: self.server_key.clone(),
                pane: pane.id.to_string(),
                cwd: None,
                created: record.map(|r| r.created).unwrap_or_else(unix_now),
                last_command: None,
                tags: Vec::new(),
            })?;
            if let Some(agent) = &identity.agent {
                let teams: Vec<String> = identity.team.iter().cloned().collect();
                self.registry
                    .register_agent(agent, Some(&identity.id), None, &teams)?;
            }
            tracing::info!(target: "cohort::engine", session = %identity.name, pane = %pane.id, "re-adopted a session from its stamped identity");
        }
        for record in known.iter().filter(|r| r.server == self.server_key) {
            let alive = panes
                .iter()
                .any(|p| p.identity.as_ref().is_some_and(|i| i.id == record.id));
            // A name another process claimed a moment ago, whose pane is on its way.
            let being_opened = record.pane.is_empty() && unix_now() - record.created < 60;
            if !alive && !being_opened {
                self.registry.remove_session(&record.id)?;
            }
        }
        Ok(panes)
    }

    /// Refuses when `pane`'s session is locked by someone other than `owner`.
    fn check_lock(&self, pane: &PaneId, owner: Option<&str>) -> Result<(), EngineError> {
        let Some(session) = self.session_record(pane)? else {
            return Ok(());
        };
        match self.registry.lock_of(&session.id)? {
            Some(lock) if Some(lock.owner.as_str()) != owner => Err(EngineError::Locked(lock)),
            _ => Ok(()),
        }
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn TerminalBackend> {
        &self.backend
    }

    /// Memory figures.
    pub fn stats(&self) -> EngineStats {
        EngineStats {
            journal_memory: self.runtimes.memory_used(),
        }
    }

    /// Every session (pane) cohort manages.
    pub async fn list(&self) -> Result<Vec<PaneInfo>, EngineError> {
        Ok(self.backend.list_panes().await?)
    }

    /// Finds a session by name, persistent id, agent name or pane id.
    pub async fn resolve(&self, target: &str) -> Result<PaneInfo, EngineError> {
        let panes = self.list().await?;
        if let Some(found) = resolve_target(&panes, target) {
            return Ok(found.clone());
        }
        // An agent known to the registry (possibly registered by another process).
        if let Some(agent) = self
            .registry
            .agents()?
            .into_iter()
            .find(|a| a.name == target.trim())
        {
            if let Some(found) = agent
                .session
                .as_deref()
                .and_then(|s| resolve_target(&panes, s))
            {
                return Ok(found.clone());
            }
        }
        Err(EngineError::UnknownTarget {
            target: target.to_string(),
            known: describe_targets(&panes),
        })
    }

    /// Opens a new session.
    pub async fn open(&self, options: OpenOptions) -> Result<PaneInfo, EngineError> {
        validate_name(&options.name)?;
        let panes = self.list().await?;
        self.name_free(&panes, &options.name)?;
        self.create(None, options, &panes).await
    }

    /// Refuses a name for a new session that already names a session or an agent, so
    /// that every target keeps meaning one thing.
    fn name_free(&self, panes: &[PaneInfo], name: &str) -> Result<(), EngineError> {
        let taken = |by: String| {
            Err(EngineError::NameTaken {
                name: name.to_string(),
                by,
            })
        };
        if let Some(pane) = resolve_target(panes, name) {
            return taken(match &pane.identity {
                Some(i) if i.name == name => "a session of that name already exists".into(),
                Some(i) => format!("an agent of that name works in session {:?}", i.name),
                None => format!("pane {} goes by it", pane.id),
            });
        }
        if let Some(agent) = self.registry.agents()?.iter().find(|a| a.name == name) {
            return taken(match &agent.session {
                Some(_) => "an agent of that name is registered".into(),
                None => "an agent of that name is registered (without a session)".into(),
            });
        }
        Ok(())
    }

    /// Splits `parent`, opening a new session in the new pane.
    pub async fn split(
        &self,
        parent: &PaneId,
        direction: cohort_backends::SplitDirection,
        size: Option<cohort_backends::SplitSize>,
        options: OpenOptions,
    ) -> Result<PaneInfo, EngineError> {
        validate_name(&options.name)?;
        let panes = self.list().await?;
        self.name_free(&panes, &options.name)?;
        self.create(Some((parent, direction, size)), options, &panes)
            .await
    }

    /// Makes the session: claims its name, spawns (or splits) its pane, records it.
    /// `live` are the panes that exist, as the caller listed them to check the name.
    async fn create(
        &self,
        split: Option<(
            &PaneId,
            cohort_backends::SplitDirection,
            Option<cohort_backends::SplitSize>,
        )>,
        options: OpenOptions,
        live: &[PaneInfo],
    ) -> Result<PaneInfo, EngineError> {
        let identity = Identity {
            id: uuid::Uuid::new_v4().to_string(),
            name: options.name.clone(),
            agent: options.agent.clone(),
            team: options.team.clone(),
        };
        // Pagers off unless the caller set them.
        let mut env: Vec<(String, String)> = PAGERS_OFF
            .iter()
            .filter(|(key, _)| !options.env.iter().any(|(k, _)| k == key))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        env.extend(options.env);
        env.push(("COHORT_SESSION".into(), options.name.clone()));
        env.push(("COHORT_SESSION_ID".into(), identity.id.clone()));
        if let Some(agent) = &options.agent {
            env.push(("COHORT_AGENT".into(), agent.clone()));
        }
        // Claim the name across processes before the pane exists.
        let live: Vec<String> = live.iter().map(|p| p.id.to_string()).collect();
        if !self
            .registry
            .claim_name(&identity.id, &options.name, &self.server_key, &live)?
        {
            return Err(EngineError::NameTaken {
                name: options.name,
                by: "another session of that name is open or being opened".into(),
            });
        }
        let cwd = options.cwd.clone();
        let spawn = SpawnOptions {
            name: options
                .window
                .clone()
                .unwrap_or_else(|| options.name.clone()),
            cwd: options.cwd,
            env,
            command: options.command,
            size: None,
            identity: Some(identity.clone()),
        };
        let made = match split {
            None => self.backend.spawn(spawn).await,
            Some((parent, direction, size)) => {
                self.backend
                    .split(
                        parent,
                        cohort_backends::SplitOptions {
                            direction,
                            size,
                            spawn,
                        },
                    )
                    .await
            }
        };
        let pane = match made {
            Ok(pane) => pane,
            Err(e) => {
                let _ = self.registry.remove_session(&identity.id);
                return Err(e.into());
            }
        };
        self.runtimes.get(&pane.id);
        self.registry.upsert_session(&SessionRecord {
            id: identity.id.clone(),
            name: options.name,
            backend: self.backend.kind().name().into(),
            server: self.server_key.clone(),
            pane: pane.id.to_string(),
            cwd,
            created: unix_now(),
            last_command: None,
            tags: Vec::new(),
        })?;
        if let Some(agent) = &identity.agent {
            let teams: Vec<String> = identity.team.iter().cloned().collect();
            self.registry
                .register_agent(agent, Some(&identity.id), None, &teams)?;
            let title = agent_title(identity.team.as_deref(), agent);
            self.backend.set_title(&pane.id, &title).await?;
        }
        Ok(pane)
    }

    /// Opens several sessions in one window, arranged by `tree` (see [`layout`]).
    pub async fn create_layout(
        &self,
        window: &str,
        tree: &layout::SplitTree,
        panes: &[LayoutPane],
    ) -> Result<Vec<PaneInfo>, EngineError> {
        let count = tree.validate().map_err(EngineError::InvalidArgument)?;
        if panes.len() > count {
            return Err(EngineError::InvalidArgument(format!(
                "{} panes described for a layout of {count}: describe at most {count}",
                panes.len()
            )));
        }
        let options: Vec<OpenOptions> = (0..count)
            .map(|i| {
                let spec = panes.get(i).cloned().unwrap_or_default();
                OpenOptions {
                    name: spec.name.unwrap_or_else(|| format!("{window}-{}", i + 1)),
                    cwd: spec.cwd,
                    command: spec.command,
                    env: spec.env.into_iter().collect(),
                    agent: spec.agent,
                    team: spec.team,
                    window: Some(window.to_string()),
                }
            })
            .collect();
        let existing = self.list().await?;
        for (i, o) in options.iter().enumerate() {
            validate_name(&o.name)?;
            self.name_free(&existing, &o.name)?;
            if options[..i].iter().any(|p| p.name == o.name) {
                return Err(EngineError::NameTaken {
                    name: o.name.clone(),
                    by: "the layout names two panes so".into(),
                });
            }
        }
        let mut created: Vec<Option<PaneInfo>> = vec![None; count];
        for step in layout::plan(tree) {
            match step {
                layout::Step::First { pane } => {
                    created[pane] =
                        Some(self.create(None, options[pane].clone(), &existing).await?);
                }
                layout::Step::Split {
                    from,
                    pane,
                    direction,
                    size,
                } => {
                    let parent = created[from]
                        .as_ref()
                        .map(|p| p.id.clone())
                        .ok_or_else(|| {
                            EngineError::InvalidArgument(
                                "the layout plan split a pane before creating it".into(),
                            )
                        })?;
                    created[pane] = Some(
                        self.create(
                            Some((&parent, direction, Some(size))),
                            options[pane].clone(),
                            &existing,
                        )
                        .await?,
                    );
                }
            }
        }
        Ok(created.into_iter().flatten().collect())
    }

    /// Registers `agent` as working in the session of `pane`, in `teams`; stamps the
    /// pane and titles it `Team :: Agent`.
    pub async fn register_agent(
        &self,
        agent: &str,
        pane: &PaneInfo,
        role: Option<&str>,
        teams: &[String],
    ) -> Result<(), EngineError> {
        validate_name(agent)?;
        // An agent named like another session would make that name mean two things.
        if let Some(other) = self
            .list()
            .await?
            .iter()
            .find(|p| p.id != pane.id && p.identity.as_ref().is_some_and(|i| i.name == agent))
        {
            return Err(EngineError::NameTaken {
                name: agent.to_string(),
                by: format!("session {agent:?} ({}) has it", other.id),
            });
        }
        let Some(mut identity) = pane.identity.clone() else {
            return Err(EngineError::InvalidArgument(format!(
                "pane {} is not a cohort session: open it with cohort first",
                pane.id
            )));
        };
        self.registry
            .register_agent(agent, Some(&identity.id), role, teams)?;
        identity.agent = Some(agent.to_string());
        if let Some(team) = teams.first() {
            identity.team = Some(team.clone());
        }
        self.backend.stamp_identity(&pane.id, &identity).await?;
        let title = agent_title(identity.team.as_deref(), agent);
        self.backend.set_title(&pane.id, &title).await?;
        Ok(())
    }

    /// Resolves many targets (session names, ids, agents, teams) to their sessions,
    /// each session once; a target that names none is answered with why, in its place,
    /// so one mistyped name does not stop the others.
    pub async fn expand_targets(
        &self,
        targets: &[String],
    ) -> Result<Vec<ExpandedTarget>, EngineError> {
        let panes = self.list().await?;
        let agents = self.registry.agents()?;
        let teams = self.registry.teams()?;
        let mut out: Vec<ExpandedTarget> = Vec::new();
        let push = |label: String, pane: &PaneInfo, out: &mut Vec<ExpandedTarget>| {
            if !out
                .iter()
                .any(|(_, p)| p.as_ref().is_ok_and(|p| p.id == pane.id))
            {
                out.push((label, Ok(pane.clone())));
            }
        };
        for target in targets {
            if let Some(pane) = resolve_target(&panes, target) {
                push(target.clone(), pane, &mut out);
                continue;
            }
            if let Some(agent) = agents.iter().find(|a| &a.name == target) {
                match agent
                    .session
                    .as_deref()
                    .and_then(|s| resolve_target(&panes, s))
                {
                    Some(pane) => push(target.clone(), pane, &mut out),
                    None => out.push((
                        target.clone(),
                        Err(EngineError::InvalidArgument(format!(
                            "agent {target:?} has no open session"
                        ))),
                    )),
                }
                continue;
            }
            if teams.iter().any(|t| &t.name == target) {
                for name in orchestrate::team_agents(target, &teams) {
                    let session = agents
                        .iter()
                        .find(|a| a.name == name)
                        .and_then(|a| a.session.clone());
                    if let Some(pane) = session.as_deref().and_then(|s| resolve_target(&panes, s)) {
                        push(name.clone(), pane, &mut out);
                    }
                }
                continue;
            }
            out.push((
                target.clone(),
                Err(EngineError::UnknownTarget {
                    target: target.clone(),
                    known: describe_targets(&panes),
                }),
            ));
        }
        Ok(out)
    }

    /// Lets a new shell come up before anyone types into it: its first prompt (at
    /// most 10 s) and its line editor reading (at most 2 s more). Typing earlier
    /// risks the kernel's 4 KiB line buffer. Returns a notice for the caller when the
    /// prompt never came: slow startup files, whose end the typed text will wait for.
    pub async fn wait_shell_up(&self, pane: &PaneId) -> Option<String> {
        const PROMPT_LIMIT: Duration = Duration::from_secs(10);
        if !self.wait_ready(pane, PROMPT_LIMIT).await {
            return Some(format!(
                "the shell showed no prompt within {} s: its startup files (~/.bashrc, \
                 ~/.zshrc, ...) are still running; what you type runs when they finish",
                PROMPT_LIMIT.as_secs()
            ));
        }
        self.wait_reading(pane, Duration::from_secs(2)).await;
        None
    }

    /// For a session opened with a command: a notice when the command ended at once
    /// (a missing program, a bad flag), with its status and last line, once the pane
    /// closed. Waits at most a moment for that; a command still running gets `None`.
    pub async fn command_ended_at_once(&self, pane: &PaneId) -> Option<String> {
        const AT_ONCE: Duration = Duration::from_millis(300);
        let runtime = self.runtimes.get(pane);
        let mut changes = runtime.watch();
        let mut deadline = Instant::now() + AT_ONCE;
        let mut ended = false;
        loop {
            changes.borrow_and_update();
            {
                let mut data = runtime.lock();
                let status = data.marks.iter().find_map(|m| m.mark.finished());
                if !ended && status.is_some() {
                    // The pane closes a moment after the status: wait for that too.
                    ended = true;
                    deadline = Instant::now() + AT_ONCE;
                }
                if let Some(exited) = data
                    .exited
                    .or(status.filter(|_| Instant::now() >= deadline))
                {
                    let len = data.journal.len();
                    let tail = data
                        .journal
                        .read(len.saturating_sub(4096), len)
                        .unwrap_or_default();
                    let text = completion::plain_text(&tail);
                    let last = text
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("");
                    let last: String = last.trim().chars().take(200).collect();
                    return Some(format!(
                        "the command ended at once{}{}: read its output, or open the session again with a corrected command",
                        exited.map(|s| format!(" with status {s}")).unwrap_or_default(),
                        if last.is_empty() { String::new() } else { format!(" ({last})") }
                    ));
                }
            }
            tokio::select! {
                r = changes.changed() => if r.is_err() { return None },
                _ = tokio::time::sleep_until(deadline.into()) => if !ended { return None },
            }
        }
    }

    /// Waits until a new shell session shows its first prompt (or `timeout`).
    pub async fn wait_ready(&self, pane: &PaneId, timeout: Duration) -> bool {
        let runtime = self.runtimes.get(pane);
        let deadline = Instant::now() + timeout;
        let mut changes = runtime.watch();
        loop {
            changes.borrow_and_update();
            {
                let data = runtime.lock();
                if data
                    .marks
                    .iter()
                    .any(|m| m.mark == cohort_backends::PromptMark::PromptStart)
                    || data.exited.is_some()
                {
                    return true;
                }
            }
            tokio::select! {
                r = changes.changed() => if r.is_err() { return false },
                _ = tokio::time::sleep_until(deadline.into()) => return false,
            }
        }
    }

    /// Waits (at most `limit`) until the pane's foreground process is reading its
    /// terminal; returns at once where the platform cannot tell.
    pub async fn wait_reading(&self, pane: &PaneId, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut pause = Duration::from_millis(2);
        loop {
            let reading = match self.backend.pane_state(pane).await {
                Ok(state) if !state.dead => state
                    .foreground_pid
                    .and_then(cohort_backends::waiting_for_input),
                _ => return,
            };
            if reading != Some(false) || Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }

    /// Types `text` and presses Enter.
    pub async fn type_line(&self, pane: &PaneId, text: &str) -> Result<Sent, EngineError> {
        self.send(pane, text, &SendOptions::default()).await
    }

    /// The send path: tripwire, sanitising, the per-pane lock, copy mode, text or
    /// bracketed paste, settle, Enter.
    pub async fn send(
        &self,
        pane: &PaneId,
        text: &str,
        options: &SendOptions,
    ) -> Result<Sent, EngineError> {
        self.type_text(pane, text, options, false).await
    }

    /// [`Engine::send`]; with `fresh_line`, a shell at its prompt first has its input
    /// line emptied (C-u), so a command is not appended to keys typed before it.
    async fn type_text(
        &self,
        pane: &PaneId,
        text: &str,
        options: &SendOptions,
        fresh_line: bool,
    ) -> Result<Sent, EngineError> {
        self.check_lock(pane, options.owner.as_deref())?;
        let mut text = if options.raw {
            text.to_string()
        } else {
            safety::sanitize_input(text)
        };
        if options.enter && !options.force {
            safety::check_command(&text).map_err(EngineError::Refused)?;
        }
        if let Some(nonce) = &options.mark {
            if text.contains('\n') {
                return Err(EngineError::InvalidArgument(
                    "mark works with single-line commands: send the lines one at a time, or use until".into(),
                ));
            }
            text.push_str(&mark_suffix(nonce));
        }
        let (_lock, state) = self.input_turn(pane).await?;
        let runtime = self.runtimes.get(pane);
        if fresh_line && state.at_shell() && !runtime.lock().command_running() {
            self.backend
                .send_keys(pane, &["C-u".parse().expect("a known key")])
                .await?;
        }
        if text.len() > 1024 {
            // Text typed before the program reads the terminal sits in the kernel's line
            // buffer, which keeps 4095 characters and drops the rest.
            self.wait_reading(pane, Duration::from_secs(3)).await;
        }
        // Lines go as one paste, and so does a tab: typed, it would ask the shell to
        // complete a word, and a different command would run.
        let pasted = text.contains(['\n', '\t']);
        let before_typing = runtime.lock().journal.len();
        if pasted {
            // With Enter to follow, a final newline would be a second Enter; without,
            // the text goes as it is.
            let text = if options.enter {
                text.trim_end_matches('\n')
            } else {
                text.as_str()
            };
            self.backend.paste(pane, text).await?;
        } else if !text.is_empty() {
            self.backend.send_text(pane, &text).await?;
        }
        let mut started = None;
        if options.enter {
            if !state.at_shell() || pasted {
                // A program drawing what was typed (a REPL, a TUI, a paste) must
                // finish before Enter, or a TUI takes Enter as a newline in its input.
                // Agent TUIs and full-screen programs redraw in frames, so they get a
                // longer quiet window than line-mode programs.
                let heavy =
                    state.alternate_screen || input::is_agent_tui(&state.foreground_command);
                let quiet = if heavy {
                    Duration::from_millis(100)
                } else {
                    Duration::from_millis(15)
                };
                input::settle_after_echo(
                    &runtime,
                    before_typing,
                    quiet,
                    Duration::from_millis(1500),
                )
                .await;
            }
            let command = runtime.record_command(&text, state.foreground_pid, options.mark.clone());
            let at = Instant::now();
            self.backend.send_keys(pane, &[Key::ENTER]).await?;
            started = Some(Started::after(&command, at));
            // Bookkeeping after Enter, so it never delays the keystroke.
            if let Some(session) = self.session_record(pane)? {
                let _ = self.registry.set_last_command(&session.id, &text);
            }
        }
        Ok(Sent {
            started,
            bytes: text.len(),
            pasted,
        })
    }

    /// Runs a command: send, wait on the completion ladder, read its output reduced.
    pub async fn run(
        &self,
        pane: &PaneId,
        command: &str,
        send: &SendOptions,
        spec: WaitSpec,
        raw: bool,
    ) -> Result<RunOutput, EngineError> {
        let mut send = send.clone();
        send.enter = true;
        let mut spec = spec;
        if send.mark.is_some() {
            spec.mark = send.mark.clone();
        }
        let runtime = self.runtimes.get(pane);
        let _turn = runtime.run_turn().await;
        let sent = self.type_text(pane, command, &send, true).await?;
        let started = sent.started.expect("enter was pressed");
        let verdict =
            completion::wait(&runtime, self.backend.as_ref(), pane, &started, &spec).await;
        let mut output = {
            let mut data = runtime.lock();
            let options = ReadOptions {
                what: ReadWhat::Bytes(verdict.output.clone()),
                raw,
                ..ReadOptions::default()
            };
            read::read(&mut data, &options, self.rules.as_deref())
        };
        append_verdict(&mut output.meta, &verdict);
        Ok(RunOutput { verdict, output })
    }

    /// Waits on the ladder for the command last typed into `pane` (from its Enter).
    pub async fn wait(&self, pane: &PaneId, spec: WaitSpec) -> Result<Verdict, EngineError> {
        let runtime = self.runtimes.get(pane);
        let started = Started::latest(&runtime.lock(), Instant::now());
        // A command typed with a mark answers with its sentinel: wait for it again.
        let mut spec = spec;
        if spec.mark.is_none() {
            spec.mark = started.mark.clone();
        }
        Ok(completion::wait(&runtime, self.backend.as_ref(), pane, &started, &spec).await)
    }

    /// Moves `caller`'s cursor for new output past `upto` (a journal offset): what a
    /// `run` returned is not new to the caller that ran it.
    pub fn mark_read(&self, pane: &PaneId, caller: &str, upto: u64) {
        let runtime = self.runtimes.get(pane);
        let mut data = runtime.lock();
        let upto = upto.min(data.journal.len());
        let cursor = data.cursors.entry(caller.to_string()).or_insert(0);
        *cursor = (*cursor).max(upto);
    }

    /// Reads output from the journal.
    pub fn read(&self, pane: &PaneId, options: &ReadOptions) -> ReadOutput {
        let runtime = self.runtimes.get(pane);
        let mut data = runtime.lock();
        read::read(&mut data, options, self.rules.as_deref())
    }

    /// Presses named keys.
    pub async fn keys(&self, pane: &PaneId, keys: &[Key]) -> Result<(), EngineError> {
        self.keys_as(pane, keys, None).await
    }

    /// Presses named keys on behalf of `owner` (checked against the session's lock).
    pub async fn keys_as(
        &self,
        pane: &PaneId,
        keys: &[Key],
        owner: Option<&str>,
    ) -> Result<(), EngineError> {
        self.check_lock(pane, owner)?;
        let (_lock, _) = self.input_turn(pane).await?;
        Ok(self.backend.send_keys(pane, keys).await?)
    }

    /// The pane's input, held against every other cohort process until the guard drops,
    /// with the pane's state: refused when its program exited, out of copy mode.
    async fn input_turn(
        &self,
        pane: &PaneId,
    ) -> Result<(input::SendLock, cohort_backends::PaneState), EngineError> {
        let path = input::lock_path(&self.lock_dir, &self.server_key, pane.as_str());
        let lock = input::lock(path, Duration::from_secs(10))
            .await
            .map_err(|e| EngineError::Busy {
                pane: pane.clone(),
                reason: e.to_string(),
            })?;
        let state = self.backend.pane_state(pane).await?;
        if state.dead {
            return Err(EngineError::Exited {
                pane: pane.clone(),
                status: state.exit_status,
            });
        }
        self.backend.cancel_copy_mode(pane).await?;
        Ok((lock, state))
    }

    /// The rendered screen.
    pub async fn screen(&self, pane: &PaneId) -> Result<Screen, EngineError> {
        Ok(self.backend.read_screen(pane).await?)
    }

    /// Closes a session.
    pub async fn close(&self, pane: &PaneId) -> Result<(), EngineError> {
        self.backend.close(pane).await?;
        self.runtimes.remove(pane);
        if let Some(session) = self.session_record(pane)? {
            self.registry.remove_session(&session.id)?;
        }
        Ok(())
    }

    /// The registry record of the session in `pane`.
    pub fn session_record(&self, pane: &PaneId) -> Result<Option<SessionRecord>, EngineError> {
        Ok(self
            .registry
            .session_for_pane(&self.server_key, pane.as_str())?)
    }
}

/// Appends the verdict, and its hint, inside a bracketed meta line.
pub fn append_verdict(meta: &mut String, verdict: &Verdict) {
    if meta.ends_with(']') {
        meta.pop();
    }
    meta.push_str("; ");
    meta.push_str(&verdict.describe());
    if let Some(hint) = &verdict.hint {
        meta.push_str(": ");
        meta.push_str(hint);
    }
    meta.push(']');
}

/// A pane's title from the hierarchy: `Team :: Agent`, or the agent alone.
fn agent_title(team: Option<&str>, agent: &str) -> String {
    match team {
        Some(team) => format!("{team} :: {agent}"),
        None => agent.to_string(),
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Removes journal directories of cohort processes that no longer run.
fn remove_stale_journals(root: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Session names: 1–64 characters, no control characters, not starting with `_` or
/// `%` (reserved for cohort and for pane ids).
pub fn validate_name(name: &str) -> Result<(), EngineError> {
    let invalid = |why| EngineError::InvalidName {
        name: name.to_string(),
        why,
    };
    if name.trim().is_empty() {
        return Err(invalid("it is empty"));
    }
    if name.chars().count() > 64 {
        return Err(invalid("it is longer than 64 characters"));
    }
    if name.chars().any(char::is_control) {
        return Err(invalid("it contains control characters"));
    }
    if name.starts_with('_') || name.starts_with('%') {
        return Err(invalid("names starting with '_' or '%' are reserved"));
    }
    if name != name.trim() {
        return Err(invalid("it starts or ends with spaces"));
    }
    Ok(())
}
