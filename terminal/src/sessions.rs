//! Sessions: opening (alone, split off another, or a whole layout), adopting the
//! panes another process or an earlier run left, waiting for a new shell to come up,
//! and closing.

use std::time::{Duration, Instant};

use cohort_backends::pad::MarkChain;
use cohort_backends::{Identity, PaneId, PaneInfo, SpawnOptions};

use crate::{
    completion, layout,
    names::{self, NameKind},
    registry::SessionRecord,
    resolve_target,
    team::agent_title,
    Terminal, TerminalError,
};

/// Lines of scrollback a starting process takes in per pane (see
/// [`Terminal::take_in_histories`]): as many as cohort's tmux keeps by default.
pub const HISTORY_TAKEN: u64 = cohort_backends::tmux::config::DEFAULT_HISTORY_LIMIT as u64;

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
    /// The remote host to open it on (a configured name or an SSH destination); this
    /// machine when `None`.
    pub host: Option<String>,
}

/// One pane of a layout.
#[derive(Clone, Debug, Default, serde::Deserialize)]
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

impl Terminal {
    /// Starts each pane's journal with the last [`HISTORY_TAKEN`] lines of scrollback it
    /// had before this process, so a process that starts later (a worker's next to its
    /// manager's, or one restarted after a crash) reads what came before it. The MCP
    /// server does this before it answers its first tool call; a pane that printed
    /// meanwhile keeps its live output instead.
    pub async fn take_in_histories(&self) {
        let Ok(panes) = self.backend.list_panes().await else {
            return;
        };
        // A person's own panes are not read: only cohort's sessions are taken in.
        for pane in panes.into_iter().filter(|p| p.identity.is_some()) {
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

    /// Brings the registry in line with the panes that exist: panes carrying a stamped
    /// identity the registry lost are re-adopted (with their agent and team); sessions
    /// of this server whose pane is gone are dropped.
    pub async fn adopt(&self) -> Result<Vec<PaneInfo>, TerminalError> {
        let known = self.db(|r| r.sessions()).await?;
        // Sessions on remote hosts: each host reached (at once) before the listing,
        // so its panes are in it; one out of reach keeps its sessions.
        let mut reached: std::collections::HashMap<String, bool> = Default::default();
        {
            let mut firsts: Vec<(String, PaneId)> = Vec::new();
            for record in known.iter().filter(|r| r.server == self.server_key) {
                if let (Some(host), _) = cohort_backends::hosts::split(&record.pane) {
                    if !firsts.iter().any(|(h, _)| h == host) {
                        firsts.push((host.to_string(), PaneId(record.pane.clone())));
                    }
                }
            }
            let answers = futures_util::future::join_all(
                firsts.iter().map(|(_, pane)| self.backend.reach(pane)),
            )
            .await;
            for ((host, _), answer) in firsts.into_iter().zip(answers) {
                reached.insert(host, answer);
            }
        }
        let listed_here = |pane: &str| match cohort_backends::hosts::split(pane) {
            (Some(host), _) => reached.get(host).copied().unwrap_or(true),
            (None, _) => true,
        };
        let panes = self.backend.list_panes().await?;
        for pane in &panes {
            learn_mark_key(&self.runtimes.get(&pane.id), pane.identity.as_ref(), false);
        }
        for pane in &panes {
            let Some(identity) = &pane.identity else {
                continue;
            };
            let record = known.iter().find(|s| s.id == identity.id);
            if record.is_some_and(|r| r.pane == pane.id.as_str() && r.server == self.server_key) {
                continue;
            }
            let row = SessionRecord {
                id: identity.id.clone(),
                name: identity.name.clone(),
                backend: self.backend.kind().name().into(),
                server: self.server_key.clone(),
                pane: pane.id.to_string(),
                cwd: None,
                created: record
                    .map(|r| r.created)
                    .unwrap_or_else(crate::registry::now),
                last_command: None,
                tags: Vec::new(),
            };
            let identity_owned = identity.clone();
            self.db(move |r| {
                r.upsert_session(&row)?;
                if let Some(agent) = &identity_owned.agent {
                    let teams: Vec<String> = identity_owned.team.iter().cloned().collect();
                    r.register_agent(agent, Some(&identity_owned.id), None, &teams)?;
                }
                Ok(())
            })
            .await?;
            tracing::info!(target: "cohort::engine", session = %identity.name, pane = %pane.id, "re-adopted a session from its stamped identity");
        }
        for record in known.iter().filter(|r| r.server == self.server_key) {
            let alive = panes
                .iter()
                .any(|p| p.identity.as_ref().is_some_and(|i| i.id == record.id));
            // A name another process claimed a moment ago, whose pane is on its way.
            let being_opened =
                record.pane.is_empty() && crate::registry::now() - record.created < 60;
            if !alive && !being_opened && listed_here(&record.pane) {
                let id = record.id.clone();
                self.db(move |r| r.remove_session(&id)).await?;
            }
        }
        Ok(panes)
    }

    /// Every session cohort manages: the panes it opened or that were adopted (see
    /// [`crate::ownership`]), each carrying its stamped identity. A person's own panes
    /// beside them are not sessions: [`Terminal::list_all`] lists them too.
    pub async fn list(&self) -> Result<Vec<PaneInfo>, TerminalError> {
        let mut panes = self.list_all().await?;
        panes.retain(|p| p.identity.is_some());
        Ok(panes)
    }

    /// Every pane of the terminal: cohort's sessions and the panes it neither opened
    /// nor adopted (no identity). After the terminal server was replaced by
    /// a new one (tmux killed and started again), or the registry by a fresh database
    /// (deleted or overwritten under this process), the registry is first brought in
    /// line with the panes: the old server's sessions are gone, and their rows must
    /// not pass to new panes that reuse their ids; a fresh registry learns the
    /// sessions again from the identities stamped on their panes.
    pub async fn list_all(&self) -> Result<Vec<PaneInfo>, TerminalError> {
        use std::sync::atomic::Ordering;
        let epoch = self.runtimes.restarts() + self.registry.generation();
        if self.adopted_epoch.load(Ordering::SeqCst) != epoch {
            let panes = self.adopt().await?;
            self.adopted_epoch.store(epoch, Ordering::SeqCst);
            return Ok(panes);
        }
        let panes = self.backend.list_panes().await?;
        // Panes another process made: their shells' marks are told by their keys.
        for pane in &panes {
            learn_mark_key(&self.runtimes.get(&pane.id), pane.identity.as_ref(), false);
        }
        Ok(panes)
    }

    /// Opens a new session.
    pub async fn open(&self, options: OpenOptions) -> Result<PaneInfo, TerminalError> {
        check_open_options(&options)?;
        let panes = self.list().await?;
        self.name_free(&panes, &options.name).await?;
        self.create(None, options, &panes).await
    }

    /// Refuses a name for a new session that already names a session or an agent, so
    /// that every target keeps meaning one thing.
    pub(crate) async fn name_free(
        &self,
        panes: &[PaneInfo],
        name: &str,
    ) -> Result<(), TerminalError> {
        let taken = |by: String| {
            Err(TerminalError::NameTaken {
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
        if let Some(agent) = self.agent(name).await? {
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
    ) -> Result<PaneInfo, TerminalError> {
        check_open_options(&options)?;
        let panes = self.list().await?;
        self.name_free(&panes, &options.name).await?;
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
    ) -> Result<PaneInfo, TerminalError> {
        let capabilities = self.backend.capabilities();
        // What the pane's shell signs its prompt marks with: a one-time token per mark
        // where the backend hands them over, else a key.
        let marks = match capabilities.one_time_marks {
            true => {
                // A one-shot command's wrapper signs one mark: its exit.
                let len = match options.command {
                    Some(_) => 1,
                    None => cohort_backends::pad::SHELL_PAD_LEN,
                };
                Some(MarkChain::new(len)?)
            }
            false => None,
        };
        let identity = Identity {
            id: uuid::Uuid::new_v4().to_string(),
            name: options.name.clone(),
            agent: options.agent.clone(),
            team: options.team.clone(),
            key: (capabilities.signed_marks && marks.is_none())
                .then(|| uuid::Uuid::new_v4().simple().to_string()),
            anchor: marks.as_ref().map(|m| m.anchor().to_string()),
            announces_start: false,
        };
        // Pagers off, then the team's variables, unless the caller set them.
        let (team_env, profile) = match &options.team {
            Some(team) => self.team_start(team).await?,
            None => (Vec::new(), None),
        };
        let mut env: Vec<(String, String)> = PAGERS_OFF
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain(team_env)
            .filter(|(key, _)| !options.env.iter().any(|(k, _)| k == key))
            .collect();
        env.extend(options.env);
        env.push(("COHORT_SESSION".into(), options.name.clone()));
        env.push(("COHORT_SESSION_ID".into(), identity.id.clone()));
        if let Some(key) = self.runtimes.signal_key() {
            env.push((crate::signals::SIGNAL_ENV.into(), key.secret(&identity.id)));
        }
        if let Some(agent) = &options.agent {
            env.push(("COHORT_AGENT".into(), agent.clone()));
        }
        // Claim the name across processes before the pane exists.
        let live: Vec<String> = live
            .iter()
            .filter_map(|p| p.identity.as_ref().map(|i| i.id.clone()))
            .collect();
        if !self.claim(&identity.id, &options.name, live).await? {
            return Err(TerminalError::NameTaken {
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
            command: options.command.as_deref().map(foreground_command),
            size: None,
            identity: Some(identity.clone()),
            marks,
            host: options.host.clone(),
            profile,
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
                let id = identity.id.clone();
                let _ = self.db(move |r| r.remove_session(&id)).await;
                return Err(e.into());
            }
        };
        learn_mark_key(&self.runtimes.get(&pane.id), Some(&identity), true);
        let row = SessionRecord {
            id: identity.id.clone(),
            name: options.name,
            backend: self.backend.kind().name().into(),
            server: self.server_key.clone(),
            pane: pane.id.to_string(),
            cwd,
            created: crate::registry::now(),
            last_command: None,
            tags: Vec::new(),
        };
        let stamped = identity.clone();
        let opened_with = options.command.clone();
        self.db(move |r| {
            r.upsert_session(&row)?;
            if let Some(command) = &opened_with {
                r.set_session_command(&row.id, command)?;
            }
            if let Some(agent) = &stamped.agent {
                let teams: Vec<String> = stamped.team.iter().cloned().collect();
                r.register_agent(agent, Some(&stamped.id), None, &teams)?;
            }
            Ok(())
        })
        .await?;
        self.bus.publish(crate::events::EngineEvent::SessionOpened {
            session: identity.name.clone(),
            pane: pane.id.clone(),
        });
        if let Some(agent) = &identity.agent {
            let title = agent_title(identity.team.as_deref(), agent);
            self.backend.set_title(&pane.id, &title).await?;
        }
        if let Some(team) = &identity.team {
            self.show_team_on_join(&pane.id, team).await;
        }
        Ok(pane)
    }

    /// Claims `name` for the session `id` across processes (see
    /// [`crate::registry::Registry::claim_name`]): a row the caller's list does not
    /// show is checked against a fresh list before it is replaced.
    pub(crate) async fn claim(
        &self,
        id: &str,
        name: &str,
        live: Vec<String>,
    ) -> Result<bool, TerminalError> {
        use crate::registry::Claim;
        let (id, name, server) = (id.to_string(), name.to_string(), self.server_key.clone());
        let first = {
            let (id, name, server) = (id.clone(), name.clone(), server.clone());
            self.db(move |r| r.claim_name(&id, &name, &server, &live, None))
                .await?
        };
        let suspect = match first {
            Claim::Claimed => return Ok(true),
            Claim::Taken => return Ok(false),
            Claim::Suspect(other) => other,
        };
        let fresh: Vec<String> = self
            .backend
            .list_panes()
            .await?
            .iter()
            .filter_map(|p| p.identity.as_ref().map(|i| i.id.clone()))
            .collect();
        let again = self
            .db(move |r| r.claim_name(&id, &name, &server, &fresh, Some(&suspect)))
            .await?;
        Ok(again == Claim::Claimed)
    }

    /// Opens several sessions in one window, arranged by `tree` (see [`layout`]).
    pub async fn create_layout(
        &self,
        window: &str,
        tree: &layout::SplitTree,
        panes: &[LayoutPane],
    ) -> Result<Vec<PaneInfo>, TerminalError> {
        let count = tree.validate().map_err(TerminalError::InvalidArgument)?;
        if panes.len() > count {
            return Err(TerminalError::InvalidArgument(format!(
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
                    host: None,
                }
            })
            .collect();
        let existing = self.list().await?;
        for (i, o) in options.iter().enumerate() {
            check_open_options(o)?;
            self.name_free(&existing, &o.name).await?;
            if options[..i].iter().any(|p| p.name == o.name) {
                return Err(TerminalError::NameTaken {
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
                            TerminalError::InvalidArgument(
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

    /// Closes a session.
    pub async fn close(&self, pane: &PaneId) -> Result<(), TerminalError> {
        self.backend.close(pane).await?;
        self.runtimes.remove(pane);
        if let Some(session) = self.session_record(pane).await? {
            let name = session.name.clone();
            self.db(move |r| r.remove_session(&session.id)).await?;
            self.bus.publish(crate::events::EngineEvent::SessionClosed {
                session: name,
                pane: pane.clone(),
            });
        }
        Ok(())
    }

    /// The registry record of the session in `pane`.
    pub async fn session_record(
        &self,
        pane: &PaneId,
    ) -> Result<Option<SessionRecord>, TerminalError> {
        let (server, pane) = (self.server_key.clone(), pane.to_string());
        self.db(move |r| r.session_for_pane(&server, &pane)).await
    }
}

/// Tells a pane's runtime which marks are its shell's, from the identity stamped on the
/// pane: signed with the one-time tokens of its anchor, signed with its key, or (a pane
/// made before marks were signed) all of them. `made_here`: the anchor is the one this
/// process drew for the pane, not one read back from it (see [`MarkKey::Chain`]).
pub(crate) fn learn_mark_key(
    runtime: &crate::runtime::PaneRuntime,
    identity: Option<&Identity>,
    made_here: bool,
) {
    use crate::runtime::MarkKey;
    let mut data = runtime.lock();
    if let Some(identity) = identity {
        data.session_id.get_or_insert_with(|| identity.id.clone());
    }
    if identity.is_some_and(|i| i.announces_start) {
        data.announces_start = true;
    }
    if data.mark_key != MarkKey::Unknown {
        return;
    }
    let key = match identity {
        Some(Identity {
            anchor: Some(anchor),
            ..
        }) => match anchor.parse() {
            Ok(anchor) => MarkKey::Chain {
                anchor,
                adopted: !made_here,
            },
            Err(e) => {
                // A stamp that is not ours: no mark verifies, none is taken.
                tracing::warn!(target: "cohort::engine", pane = %runtime.pane, error = %e, "the pane's mark anchor is unreadable: its marks are not taken");
                MarkKey::Chain {
                    anchor: cohort_backends::pad::Anchor::spent(),
                    adopted: false,
                }
            }
        },
        Some(Identity { key: Some(key), .. }) => MarkKey::Keyed(key.clone()),
        Some(_) => MarkKey::Unsigned,
        None => return,
    };
    data.set_mark_key(key);
}

/// A session's command as the pane runs it: a single simple command is `exec`ed, so
/// the terminal's foreground process is the program itself (`cat`), not the shell
/// that started it; anything else runs as it is.
fn foreground_command(command: &str) -> String {
    let script = cohort_reducers::command::parse(command);
    let single = script.complete
        && script.commands.len() == 1
        && script.commands[0].body.is_none()
        && script.commands[0]
            .words
            .first()
            .is_some_and(|w| !w.text.contains('=') && !SHELL_WORDS.contains(&w.text.as_str()));
    if single {
        format!("exec {command}")
    } else {
        command.to_string()
    }
}

/// Words that start a shell construct or are builtins `exec` cannot run.
const SHELL_WORDS: &[&str] = &[
    "if", "for", "while", "until", "case", "{", "(", "!", "cd", "export", "exec", "exit", "source",
    ".", "eval", "set", "unset", "alias", "read", "wait", "trap", "builtin", "command", "time",
    "function",
];

/// Checks the names an [`OpenOptions`] carries: the session's, its agent's and team's.
fn check_open_options(options: &OpenOptions) -> Result<(), TerminalError> {
    names::check(NameKind::Session, &options.name)?;
    for (key, value) in &options.env {
        names::check_env(key, value)?;
    }
    if let Some(command) = &options.command {
        names::check_text("command", command, 64 << 10, true)?;
    }
    if let Some(cwd) = &options.cwd {
        names::check_text("working directory", cwd, 4096, false)?;
    }
    names::check_opt(NameKind::Agent, options.agent.as_deref())?;
    names::check_opt(NameKind::Team, options.team.as_deref())?;
    if options.team.is_some() && options.agent.is_none() {
        return Err(TerminalError::InvalidArgument(
            "a team was given without an agent: teams are made of agents, so name the agent too"
                .into(),
        ));
    }
    Ok(())
}

/// Removes journal directories of cohort processes that no longer run.
pub(crate) fn remove_stale_journals(root: &std::path::Path) {
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

/// A pane's session name (its window's name when cohort did not open it).
pub fn session_name(pane: &PaneInfo) -> String {
    pane.identity
        .as_ref()
        .map(|i| i.name.clone())
        .unwrap_or_else(|| pane.window_name.clone())
}
