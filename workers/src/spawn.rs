//! Spawning workers: names and colours, a worktree per worker (untracked files
//! copied in, a setup script run), the agent's hooks wired to cohort, the panes
//! (one window tiled, a window each, splits of a session, or the caller's tree), the
//! agent's input seen taking keys, and the first prompt submitted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cohort_backends::{Appearance, PaneInfo, SplitDirection};
use futures_util::future::join_all;

pub(crate) use crate::hooks::{
    claude_settings, claude_settings_with, codex_notify, place_codex_hooks,
};
use crate::machine::Machine;
use crate::registry::WorkerTables;
use crate::state::WorkerState;
use crate::Workers;
use crate::{
    agent::{launch_line, AgentKind, LaunchSpec, LaunchWiring},
    error::WorkerError,
    events::{hook_key_path, now_ms, worker_dir, HOOK_KEY_ENV},
    observe::{agent_env, claude_transcript},
    registry::WorkerRow,
    submit::Submitted,
    theme, worktree,
};
use cohort_terminal::seal::SealKey;
use cohort_terminal::{
    colours,
    layout::{Child, Direction, SplitTree},
    names::{self, NameKind},
    LayoutPane, OpenOptions,
};

/// One worker to start.
#[derive(Clone, Debug, Default)]
pub struct WorkerSpec {
    /// Its name (default: a themed one).
    pub name: Option<String>,
    /// How its agent is launched.
    pub launch: LaunchSpec,
    /// The first prompt.
    pub prompt: Option<String>,
    /// A repository (a worktree of it is made) or a directory (default: cohort's own).
    pub project: Option<String>,
    /// Give it a worktree of its own (default: when `project` is in a repository).
    pub worktree: Option<bool>,
    /// Its branch (default: the spawn's branch pattern).
    pub branch: Option<String>,
    /// What the branch starts from (default: `HEAD`).
    pub base: Option<String>,
    /// More untracked files to copy in (gitignore patterns), besides `.worktreeinclude`.
    pub include: Vec<String>,
    /// A shell command run in the worktree before the agent starts.
    pub setup: Option<String>,
    /// Team.
    pub team: Option<String>,
    /// Role (free text).
    pub role: Option<String>,
}

/// Where the workers' panes go.
#[derive(Clone, Debug, Default)]
pub enum SpawnLayout {
    /// All in one new window, tiled (default).
    #[default]
    Tiled,
    /// A window each.
    Windows,
    /// Splits of an existing session.
    Split {
        /// The session to split.
        target: String,
        /// Which way.
        direction: SplitDirection,
    },
    /// The caller's split tree in a new window (leaf `i` is worker `i`).
    Tree(SplitTree),
}

/// A spawn of one or more workers.
#[derive(Clone, Debug)]
pub struct SpawnRequest {
    /// The workers.
    pub workers: Vec<WorkerSpec>,
    /// Their panes.
    pub layout: SpawnLayout,
    /// The new window's name (default: the team's, else `workers`).
    pub window: Option<String>,
    /// The theme names are picked from.
    pub names: Option<String>,
    /// Branch names: `{name}` and `{team}` are replaced.
    pub branch_pattern: String,
    /// Answer a "trust this folder" dialog at start with yes.
    pub trust_workspace: bool,
}

impl Default for SpawnRequest {
    fn default() -> Self {
        SpawnRequest {
            workers: Vec::new(),
            layout: SpawnLayout::default(),
            window: None,
            names: None,
            branch_pattern: "cohort/{name}".into(),
            trust_workspace: true,
        }
    }
}

/// A started worker (or why it did not start).
#[derive(Clone, Debug)]
pub struct Spawned {
    /// Its name.
    pub name: String,
    /// Its row, as it is after the spawn.
    pub row: Option<WorkerRow>,
    /// Its pane.
    pub pane: Option<PaneInfo>,
    /// Untracked files copied into its worktree.
    pub copied: Vec<String>,
    /// The end of the setup script's output.
    pub setup_tail: Option<String>,
    /// The first prompt's submission.
    pub prompt: Option<Submitted>,
    /// What went wrong, when something did.
    pub error: Option<String>,
    /// Its agent came up and took keys (whatever became of its first prompt).
    pub up: bool,
}

/// The most workers one spawn starts.
pub const SPAWN_MAX: usize = 16;

/// How long a setup script may run.
const SETUP_LIMIT: Duration = Duration::from_secs(600);

/// Polls of its start signal after which a worker's pane gives up: 100 fast ones
/// (two seconds, in which the panes of a spawn usually all open), then five a
/// second for two minutes.
const GATE_POLLS: u32 = 100 + 5 * 120;

/// The status a worker's pane exits with when its start signal never came.
pub const GATE_GAVE_UP: i32 = 75;

/// The worker's hook key, made on its first launch and kept for its relaunches.
pub(crate) fn hook_key(state_dir: &Path, worker_id: &str) -> Result<SealKey, WorkerError> {
    let path = hook_key_path(state_dir, worker_id);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| WorkerError::Io {
            what: "could not create",
            path: dir.to_path_buf(),
            source,
        })?;
    }
    SealKey::load_or_create(&path).map_err(|e| {
        WorkerError::Invalid(format!(
            "the worker's hook key could not be made: {e} (check that the state directory is writable)"
        ))
    })
}

/// The pane's command: wait for the start signal at `gate`, then `launch`; after
/// `polls` polls without it (the server that spawned the worker is gone), say so
/// and exit with [`GATE_GAVE_UP`] rather than wait for ever.
fn gated_launch(gate: &str, launch: &str, polls: u32) -> String {
    let gate = cohort_backends::tmux::quote::sh(gate);
    let why = cohort_backends::tmux::quote::sh(
        "cohort: this worker's start signal never came (the cohort server that spawned \
         it stopped), so its agent was not started. Close this pane, or spawn the worker again.",
    );
    format!(
        "__cohort_polls=0; until [ -e {gate} ]; do \
         __cohort_polls=$((__cohort_polls+1)); \
         if [ \"$__cohort_polls\" -gt {polls} ]; then printf '%s\\n' {why} >&2; exit {GATE_GAVE_UP}; fi; \
         if [ \"$__cohort_polls\" -le 100 ]; then sleep 0.02; else sleep 0.2; fi; \
         done; {launch}"
    )
}

/// A name as a path and branch component.
pub fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-').to_string();
    if s.is_empty() {
        "worker".into()
    } else {
        s
    }
}

/// A tiled tree for `n` panes: rows of nearly equal length.
pub fn tiled(n: usize) -> SplitTree {
    let leaf = |pane| Child {
        tree: SplitTree::Pane { pane },
        size: None,
    };
    if n <= 1 {
        return SplitTree::Pane { pane: 0 };
    }
    if n <= 3 {
        return SplitTree::Split {
            split: Direction::Horizontal,
            children: (0..n).map(leaf).collect(),
        };
    }
    let rows = (n as f64).sqrt().ceil() as usize;
    let mut next = 0;
    let children = (0..rows)
        .map(|r| {
            let count = n / rows + usize::from(r < n % rows);
            let row = SplitTree::Split {
                split: Direction::Horizontal,
                children: (next..next + count).map(leaf).collect(),
            };
            next += count;
            Child {
                tree: if count == 1 {
                    SplitTree::Pane { pane: next - 1 }
                } else {
                    row
                },
                size: None,
            }
        })
        .collect();
    SplitTree::Split {
        split: Direction::Vertical,
        children,
    }
}

/// A worker ready to get its pane.
struct Planned {
    row: WorkerRow,
    /// Its place on a remote host, when it runs on one.
    far: Option<crate::remote::FarWorker>,
    spec: WorkerSpec,
    command: String,
    env: Vec<(String, String)>,
    copied: Vec<String>,
    setup_tail: Option<String>,
}

impl Workers {
    /// Starts the workers of `request`. Each worker succeeds or fails on its own;
    /// the call fails only when nothing could be started.
    pub async fn spawn_workers(&self, request: SpawnRequest) -> Result<Vec<Spawned>, WorkerError> {
        let count = request.workers.len();
        if count == 0 || count > SPAWN_MAX {
            return Err(WorkerError::Invalid(format!(
                "{count} workers asked for: spawn 1 to {SPAWN_MAX} at a time"
            )));
        }
        // A spawn cut short by a dead server holds names this one may ask for.
        self.sweep_half_spawned().await?;
        let names = self.spawn_names(&request).await?;
        let colours = self.spawn_colours(&request).await?;
        // Worktrees and setup run one after another: git locks its worktree list.
        let mut planned: Vec<Result<Planned, (String, WorkerError)>> = Vec::new();
        for (i, spec) in request.workers.iter().enumerate() {
            let name = names[i].clone();
            let plan = self
                .plan_worker(&request, spec, &name, colours[i].clone())
                .await;
            planned.push(plan.map_err(|e| (name, e)));
        }
        let ok: Vec<&Planned> = planned.iter().filter_map(|p| p.as_ref().ok()).collect();
        let panes = self.open_worker_panes(&request, &ok).await;
        for p in &ok {
            let _ = std::fs::write(worker_dir(&self.hub.state_dir, &p.row.id).join("go"), b"");
        }
        let shut = self.open_far_gates(&ok).await;
        let mut started = Vec::new();
        let mut failures: Vec<Spawned> = Vec::new();
        let mut pane_results = panes.into_iter();
        for plan in planned {
            match plan {
                Err((name, e)) => failures.push(failed(&name, e)),
                Ok(p) => match pane_results.next() {
                    Some(Ok(pane))
                        if p.far.as_ref().is_some_and(|f| shut.contains_key(&f.host)) =>
                    {
                        let why = shut[&p.far.as_ref().expect("far").host].clone();
                        let _ = self.terminal.close(&pane.id).await;
                        self.abandon(&p.row).await;
                        failures.push(failed(&p.row.name, WorkerError::Invalid(why)));
                    }
                    Some(Ok(pane)) => started.push((p, pane)),
                    other => {
                        let e = match other {
                            Some(Err(e)) => e,
                            _ => WorkerError::Invalid("no pane was made for it".into()),
                        };
                        self.abandon(&p.row).await;
                        failures.push(failed(&p.row.name, e));
                    }
                },
            }
        }
        let trust = request.trust_workspace;
        let finishing = started
            .into_iter()
            .map(|(p, pane)| async move { self.finish_spawn(p, pane, trust).await });
        let mut out: Vec<Spawned> = join_all(finishing).await;
        out.extend(failures);
        if out.iter().all(|s| s.row.is_none()) {
            let why: Vec<String> = out.iter().filter_map(|s| s.error.clone()).collect();
            return Err(WorkerError::Invalid(format!(
                "no worker started: {}",
                why.join("; ")
            )));
        }
        Ok(out)
    }

    /// Names for the request's workers: the given ones checked, the rest picked.
    async fn spawn_names(&self, request: &SpawnRequest) -> Result<Vec<String>, WorkerError> {
        let mut taken: Vec<String> = self
            .worker_rows()
            .await?
            .into_iter()
            .map(|w| w.name)
            .collect();
        for pane in self.terminal.list().await? {
            if let Some(i) = pane.identity {
                taken.push(i.name);
                taken.extend(i.agent);
            }
        }
        taken.extend(self.terminal.agents().await?.into_iter().map(|a| a.name));
        let given: Vec<String> = request
            .workers
            .iter()
            .filter_map(|w| w.name.clone())
            .collect();
        for name in &given {
            names::check(NameKind::Agent, name)?;
            if taken.iter().any(|t| t == name) {
                return Err(WorkerError::Invalid(format!(
                    "the name {name:?} is taken by a worker, session or agent: pick another (or leave name out for a themed one)"
                )));
            }
            if given.iter().filter(|g| *g == name).count() > 1 {
                return Err(WorkerError::Invalid(format!(
                    "two workers are named {name:?}"
                )));
            }
        }
        taken.extend(given);
        let missing = request.workers.iter().filter(|w| w.name.is_none()).count();
        let mut picked = theme::pick_names(request.names.as_deref(), missing, &taken)
            .map_err(WorkerError::Invalid)?
            .into_iter();
        Ok(request
            .workers
            .iter()
            .map(|w| {
                w.name
                    .clone()
                    .or_else(|| picked.next())
                    .unwrap_or_else(|| "worker".into())
            })
            .collect())
    }

    /// A colour per worker: its team's (the team colour every pane of the team
    /// shows, see [`cohort_terminal::colours`]), or its own; new hues fill the widest
    /// gaps.
    async fn spawn_colours(&self, request: &SpawnRequest) -> Result<Vec<String>, WorkerError> {
        let rows = self.worker_rows().await?;
        let mut used: Vec<f64> = rows
            .iter()
            .filter_map(|w| w.colour.as_deref().and_then(theme::colour_hue))
            .collect();
        let mut out = Vec::new();
        for w in &request.workers {
            if let Some(team) = &w.team {
                let colour = self
                    .terminal
                    .team_colour(team)
                    .await
                    .map_err(|e| WorkerError::Invalid(e.to_string()))?;
                used.push(colour.hue);
                out.push(colour.hex);
                continue;
            }
            let hue = colours::next_hue(&used);
            used.push(hue);
            out.push(colours::hue_hex(hue));
        }
        Ok(out)
    }

    /// The worker's directory, worktree, setup, hooks and row.
    async fn plan_worker(
        &self,
        request: &SpawnRequest,
        spec: &WorkerSpec,
        name: &str,
        colour: String,
    ) -> Result<Planned, WorkerError> {
        names::check_opt(NameKind::Team, spec.team.as_deref())?;
        names::check_opt(NameKind::Role, spec.role.as_deref())?;
        if spec.launch.agent == AgentKind::Custom && spec.launch.command.is_none() {
            return Err(WorkerError::Invalid(format!(
                "{name}: a custom agent needs its command line: pass command"
            )));
        }
        let id = uuid::Uuid::new_v4().to_string();
        let (prepared, far) = match spec.launch.host.as_deref() {
            Some(host) => {
                let (prepared, far) = self
                    .prepare_far_directory(request, spec, name, host, &id)
                    .await?;
                (prepared, Some(far))
            }
            None => (
                self.prepare_local_directory(request, spec, name, &id)
                    .await?,
                None,
            ),
        };
        let made = prepared
            .made
            .as_ref()
            .map(|m| (m.path.clone(), prepared.repo.clone()));
        let planned = self
            .wire_worker(spec, name, colour, &id, prepared, far.clone())
            .await;
        if planned.is_err() {
            // Nothing of a worker that will not start stays behind.
            let m = Machine::of(self.terminal.backend(), spec.launch.host.as_deref());
            if let Some((path, Some(repo))) = made {
                let _ =
                    tokio::task::spawn_blocking(move || worktree::remove(&m, &repo, &path, true))
                        .await;
            }
            if let Some(far) = &far {
                crate::remote::forget(self.terminal.backend(), &far.host, &id).await;
            }
        }
        planned
    }

    /// The worker's hooks, launch line, environment and row, in the directory
    /// prepared for it.
    async fn wire_worker(
        &self,
        spec: &WorkerSpec,
        name: &str,
        colour: String,
        id: &str,
        prepared: Prepared,
        far: Option<crate::remote::FarWorker>,
    ) -> Result<Planned, WorkerError> {
        let (id, state_dir) = (id.to_string(), self.hub.state_dir.clone());
        let mut wiring = LaunchWiring::default();
        let mut agent_session = None;
        let io = |what, path: &Path| {
            let path = path.to_path_buf();
            move |source| WorkerError::Io { what, path, source }
        };
        std::fs::create_dir_all(worker_dir(&state_dir, &id))
            .map_err(io("could not create", &worker_dir(&state_dir, &id)))?;
        if spec.launch.agent == AgentKind::Claude {
            let session = uuid::Uuid::new_v4().to_string();
            wiring.session_id = Some(session.clone());
            agent_session = Some(session);
        }
        self.wire_hooks(
            spec.launch.agent,
            &id,
            &prepared.cwd,
            far.as_ref(),
            &mut wiring,
        )
        .await?;
        // The agent starts once its pane has its final size (the gate file appears when
        // every pane of the spawn is made): a TUI drawn at one width and then squeezed
        // by the next split leaves a torn first frame.
        let gate = match &far {
            Some(far) => far.gate(),
            None => worker_dir(&state_dir, &id)
                .join("go")
                .to_string_lossy()
                .into_owned(),
        };
        let command = gated_launch(
            &gate,
            &launch_line(&spec.launch, &wiring).map_err(WorkerError::Invalid)?,
            GATE_POLLS,
        );
        let mut env: Vec<(String, String)> = spec
            .launch
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push(("COHORT_WORKER_ID".into(), id.clone()));
        env.push(("COHORT_WORKER".into(), name.to_string()));
        env.push((HOOK_KEY_ENV.into(), hook_key(&state_dir, &id)?.to_hex()));
        let row = WorkerRow {
            id: id.clone(),
            name: name.to_string(),
            server: self.terminal.server_key().to_string(),
            agent: spec.launch.agent,
            spec: spec.launch.clone(),
            cwd: prepared.cwd.to_string_lossy().into_owned(),
            repo: prepared.repo.map(|p| p.to_string_lossy().into_owned()),
            worktree: prepared
                .made
                .as_ref()
                .map(|m| m.path.to_string_lossy().into_owned()),
            branch: prepared
                .made
                .as_ref()
                .map(|m| m.branch.clone())
                .or(prepared.branch),
            base_commit: prepared.made.as_ref().map(|m| m.base_commit.clone()),
            worktree_owned: prepared.made.is_some(),
            agent_session,
            team: spec.team.clone(),
            role: spec.role.clone(),
            colour: Some(colour),
            hooks: spec.launch.agent.reports(),
            owner_pid: i64::from(std::process::id()),
            owner_tag: self.hub.tag.clone(),
            launched_ms: now_ms(),
            state: WorkerState::Spawning,
            reason: "launching".into(),
            state_since_ms: now_ms(),
            setup_log: prepared.setup_log.map(|p| p.to_string_lossy().into_owned()),
            ..WorkerRow::default()
        };
        let inserted = row.clone();
        self.terminal
            .db(move |r| r.insert_worker(&inserted))
            .await?;
        Ok(Planned {
            far,
            copied: prepared.made.map(|m| m.copied).unwrap_or_default(),
            setup_tail: prepared.setup_tail,
            row,
            spec: spec.clone(),
            command,
            env,
        })
    }

    /// Wires the agent's hooks to cohort for a launch of worker `id` in `cwd`:
    /// Claude Code's settings file, Codex's `notify` program and project hooks. On a
    /// remote host (`far`) they run cohort's hook script there.
    pub(crate) async fn wire_hooks(
        &self,
        kind: AgentKind,
        id: &str,
        cwd: &Path,
        far: Option<&crate::remote::FarWorker>,
        wiring: &mut LaunchWiring,
    ) -> Result<(), WorkerError> {
        let program = self.hub.program();
        let state_dir = self.hub.state_dir.clone();
        match (kind, far) {
            (AgentKind::Claude, Some(far)) => {
                let settings = claude_settings_with(|e| far.hook_command(e));
                let text = serde_json::to_string_pretty(&settings).unwrap_or_default();
                let backend = self.terminal.backend();
                wiring.settings =
                    Some(crate::remote::write(backend, far, "settings.json", &text).await?);
            }
            (AgentKind::Claude, None) => {
                let dir = worker_dir(&state_dir, id);
                let file = dir.join("settings.json");
                let text = serde_json::to_string_pretty(&claude_settings(&program, &state_dir, id))
                    .unwrap_or_default();
                std::fs::create_dir_all(&dir)
                    .and_then(|_| std::fs::write(&file, text))
                    .map_err(|source| WorkerError::Io {
                        what: "could not write",
                        path: file.clone(),
                        source,
                    })?;
                wiring.settings = Some(file.to_string_lossy().into_owned());
            }
            (AgentKind::Codex, Some(far)) => {
                // Codex runs `notify` with the event's JSON as its last argument.
                wiring.notify = Some(vec![
                    "sh".into(),
                    format!("{}/hook.sh", far.dir),
                    "notify".into(),
                ]);
                let hooks = crate::hooks::codex_hooks_with(|e| far.hook_command(e));
                let (m, cwd) = (self.machine_of_host(Some(&far.host)), cwd.to_path_buf());
                wiring.bypass_hook_trust = tokio::task::spawn_blocking(move || {
                    crate::hooks::place_codex_hooks_on(&m, &cwd, &hooks)
                })
                .await
                .unwrap_or(false);
            }
            (AgentKind::Codex, None) => {
                wiring.notify = Some(codex_notify(&program, &state_dir, id));
                wiring.bypass_hook_trust = place_codex_hooks(cwd, &program, &state_dir);
            }
            _ => {}
        }
        Ok(())
    }

    /// The worker's directory on this machine: the project given (or cohort's own),
    /// with a worktree made and its setup run when it gets one.
    async fn prepare_local_directory(
        &self,
        request: &SpawnRequest,
        spec: &WorkerSpec,
        name: &str,
        id: &str,
    ) -> Result<Prepared, WorkerError> {
        let state_dir = self.hub.state_dir.clone();
        let dir = match &spec.project {
            Some(p) => PathBuf::from(p),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        };
        let dir = std::fs::canonicalize(&dir).map_err(|_| {
            WorkerError::Invalid(format!(
                "{name}: the project path {} does not exist: give a repository or directory",
                dir.display()
            ))
        })?;
        if !dir.is_dir() {
            return Err(WorkerError::Invalid(format!(
                "{name}: {} is not a directory",
                dir.display()
            )));
        }
        let (spec_owned, name_owned, pattern) = (
            spec.clone(),
            name.to_string(),
            request.branch_pattern.clone(),
        );
        let setup_log = worker_dir(&state_dir, id).join("setup.log");
        tokio::task::spawn_blocking(move || {
            prepare_directory(
                &spec_owned,
                &name_owned,
                &pattern,
                &Machine::Local,
                &dir,
                &setup_log,
            )
        })
        .await
        .map_err(|e| WorkerError::Invalid(format!("the worktree could not be made: {e}")))?
    }

    /// The worker's directory on a remote host: the project given there, with a
    /// worktree made there when it is in a repository (as locally), and cohort's
    /// directory for the worker beside the hook script.
    async fn prepare_far_directory(
        &self,
        request: &SpawnRequest,
        spec: &WorkerSpec,
        name: &str,
        host: &str,
        id: &str,
    ) -> Result<(Prepared, crate::remote::FarWorker), WorkerError> {
        let project = spec.project.clone().unwrap_or_else(|| ".".into());
        // `~/x` as a shell would read it; any other path as it is (no CDPATH).
        let relative = project.strip_prefix("~/").unwrap_or(&project);
        let backend = self.terminal.backend();
        let checked = backend
            .run_on_host(
                host,
                &format!(
                    "cd \"$HOME\" 2>/dev/null; CDPATH= cd -P -- {} >/dev/null 2>&1 && pwd -P",
                    cohort_backends::tmux::quote::sh(if relative.is_empty() {
                        "."
                    } else {
                        relative
                    })
                ),
                b"",
                crate::remote::QUICK,
            )
            .await;
        let dir = match checked {
            Ok(out) => {
                let text = String::from_utf8_lossy(&out);
                let text = text.trim_end_matches('\n');
                if !text.starts_with('/') || text.contains('\n') {
                    return Err(WorkerError::Invalid(format!(
                        "{name}: host {host} named the project's directory as {text:?}, not one \
                         absolute path: give an absolute project_path"
                    )));
                }
                PathBuf::from(text)
            }
            Err(cohort_backends::BackendError::Remote { .. }) => {
                return Err(WorkerError::Invalid(format!(
                    "{name}: the project path {project} is not a directory on {host}: give a \
                     directory there (relative paths start at the home directory)"
                )))
            }
            Err(e) => return Err(WorkerError::Invalid(format!("{name}: host {host}: {e}"))),
        };
        let far = crate::remote::prepare(backend, host, id, None).await?;
        self.hear_hosts();
        let m = Machine::of(backend, Some(host));
        let (spec, name, pattern) = (
            spec.clone(),
            name.to_string(),
            request.branch_pattern.clone(),
        );
        let setup_log = PathBuf::from(format!("{}/setup.log", far.own));
        let prepared = tokio::task::spawn_blocking(move || {
            prepare_directory(&spec, &name, &pattern, &m, &dir, &setup_log)
        })
        .await
        .map_err(|e| WorkerError::Invalid(format!("the worktree could not be made: {e}")))?;
        match prepared {
            Ok(prepared) => Ok((prepared, far)),
            Err(e) => {
                crate::remote::forget(backend, host, id).await;
                Err(e)
            }
        }
    }

    /// Gives the start signal to the planned workers on remote hosts, one call per
    /// host; the hosts where it could not be given, with why (their workers never
    /// start).
    async fn open_far_gates(
        &self,
        planned: &[&Planned],
    ) -> std::collections::HashMap<String, String> {
        let mut by_host: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        for far in planned.iter().filter_map(|p| p.far.as_ref()) {
            by_host.entry(&far.host).or_default().push(far.gate());
        }
        let mut shut = std::collections::HashMap::new();
        for (host, gates) in by_host {
            if let Err(e) = crate::remote::open_gates(self.terminal.backend(), host, &gates).await {
                shut.insert(host.to_string(), e.to_string());
            }
        }
        shut
    }

    /// Opens the panes of the planned workers, in order.
    async fn open_worker_panes(
        &self,
        request: &SpawnRequest,
        planned: &[&Planned],
    ) -> Vec<Result<PaneInfo, WorkerError>> {
        let options = |p: &Planned| OpenOptions {
            name: p.row.name.clone(),
            cwd: Some(p.row.cwd.clone()),
            command: Some(p.command.clone()),
            env: p.env.clone(),
            agent: Some(p.row.name.clone()),
            team: p.spec.team.clone(),
            window: None,
            host: p.row.spec.host.clone(),
        };
        if planned.is_empty() {
            return Vec::new();
        }
        let window = request
            .window
            .clone()
            .or_else(|| planned.iter().find_map(|p| p.spec.team.clone()))
            .unwrap_or_else(|| "workers".into());
        // Layouts are laid out on this machine's terminal: workers on a remote host
        // get a window each there.
        let remote = planned.iter().any(|p| p.far.is_some());
        let tree = match &request.layout {
            _ if remote => None,
            SpawnLayout::Tiled => Some(tiled(planned.len())),
            SpawnLayout::Tree(tree) => Some(tree.clone()),
            _ => None,
        };
        if let Some(tree) = tree {
            let panes: Vec<LayoutPane> = planned
                .iter()
                .map(|p| {
                    let o = options(p);
                    LayoutPane {
                        name: Some(o.name),
                        agent: o.agent,
                        team: o.team,
                        command: o.command,
                        cwd: o.cwd,
                        env: o.env.into_iter().collect(),
                    }
                })
                .collect();
            return match self.terminal.create_layout(&window, &tree, &panes).await {
                Ok(made) => made.into_iter().map(Ok).collect(),
                Err(e) => {
                    let message = e.to_string();
                    planned
                        .iter()
                        .map(|_| Err(WorkerError::Invalid(message.clone())))
                        .collect()
                }
            };
        }
        let mut out = Vec::new();
        let mut parent: Option<PaneInfo> = None;
        for (i, p) in planned.iter().enumerate() {
            let made = match &request.layout {
                SpawnLayout::Split { target, direction } if !remote => {
                    let from = match &parent {
                        Some(pane) => Ok(pane.clone()),
                        None => self.terminal.resolve(target).await,
                    };
                    let dir = if i % 2 == 0 {
                        *direction
                    } else {
                        flip(*direction)
                    };
                    match from {
                        Ok(from) => self.terminal.split(&from.id, dir, None, options(p)).await,
                        Err(e) => Err(e),
                    }
                }
                _ => self.terminal.open(options(p)).await,
            };
            if let Ok(pane) = &made {
                parent = Some(pane.clone());
            }
            out.push(made.map_err(WorkerError::from));
        }
        out
    }

    /// Records the pane, colours it, waits for the agent, submits the first prompt.
    async fn finish_spawn(&self, p: Planned, pane: PaneInfo, trust: bool) -> Spawned {
        let name = p.row.name.clone();
        let mut out = Spawned {
            name: name.clone(),
            row: None,
            pane: Some(pane.clone()),
            copied: p.copied.clone(),
            setup_tail: p.setup_tail.clone(),
            prompt: None,
            error: None,
            up: false,
        };
        let session_id = pane
            .identity
            .as_ref()
            .map(|i| i.id.clone())
            .unwrap_or_default();
        // The transcript's place depends on the agent's own environment.
        let state = self.terminal.backend().pane_state(&pane.id).await.ok();
        let env = agent_env(state.as_ref().and_then(|s| s.shell_pid), &p.spec.launch);
        // A remote agent's transcript is on its host: not read from here (yet).
        let transcript = match (&p.row.agent_session, p.spec.launch.agent) {
            _ if p.far.is_some() => None,
            (Some(id), AgentKind::Claude) => Some(
                claude_transcript(&env, Path::new(&p.row.cwd), id)
                    .to_string_lossy()
                    .into_owned(),
            ),
            _ => None,
        };
        let (id, sid) = (p.row.id.clone(), session_id.clone());
        let row = self
            .terminal
            .db(move |r| {
                r.update_worker(&id, |w| {
                    w.session_id = sid.clone();
                    w.transcript = transcript.clone();
                })
            })
            .await
            .ok()
            .flatten()
            .unwrap_or(p.row.clone());
        self.colour_pane(&pane, row.colour.as_deref(), &name).await;
        let row = match self.await_ready(&row, trust).await {
            Ok(row) => row,
            Err(e) => {
                out.error = Some(e.to_string());
                out.row = self
                    .terminal
                    .db({
                        let id = row.id.clone();
                        move |r| r.worker(&id)
                    })
                    .await
                    .ok()
                    .flatten();
                return out;
            }
        };
        out.up = true;
        if let Some(prompt) = p.spec.prompt.as_deref().filter(|t| !t.trim().is_empty()) {
            match self.submit_prompt(&row, prompt, false, false).await {
                Ok(s) => out.prompt = Some(s),
                Err(e) => out.error = Some(e.to_string()),
            }
        }
        let id = row.id.clone();
        out.row = self
            .terminal
            .db(move |r| r.worker(&id))
            .await
            .ok()
            .flatten();
        out
    }

    /// The worker's colour where the terminal shows one (iTerm2's tab colour,
    /// tmux's pane border and window status), and its name as a badge.
    async fn colour_pane(&self, pane: &PaneInfo, colour: Option<&str>, name: &str) {
        let caps = self.terminal.capabilities();
        let look = Appearance {
            tab_color: colour.filter(|_| caps.tab_colors).map(str::to_string),
            badge: caps.badges.then(|| name.to_string()),
            ..Appearance::default()
        };
        if look.tab_color.is_some() || look.badge.is_some() {
            if let Err(e) = self.terminal.set_appearance(&pane.id, &look).await {
                tracing::debug!(target: "cohort::workers", pane = %pane.id, "no colour: {e}");
            }
        }
    }

    /// Forgets a worker that never got a pane, and the worktree made for it.
    async fn abandon(&self, row: &WorkerRow) {
        let id = row.id.clone();
        let _ = self.terminal.db(move |r| r.remove_worker(&id)).await;
        if let (Some(repo), Some(path), true) = (&row.repo, &row.worktree, row.worktree_owned) {
            let (repo, path) = (PathBuf::from(repo), PathBuf::from(path));
            let m = self.machine_of(row);
            let _ = tokio::task::spawn_blocking(move || worktree::remove(&m, &repo, &path, false))
                .await;
        }
        if let Some(host) = row.spec.host.as_deref() {
            crate::remote::forget(self.terminal.backend(), host, &row.id).await;
        }
    }
}

fn flip(d: SplitDirection) -> SplitDirection {
    match d {
        SplitDirection::Horizontal => SplitDirection::Vertical,
        SplitDirection::Vertical => SplitDirection::Horizontal,
    }
}

fn failed(name: &str, e: WorkerError) -> Spawned {
    Spawned {
        name: name.to_string(),
        row: None,
        pane: None,
        copied: Vec::new(),
        setup_tail: None,
        prompt: None,
        error: Some(e.to_string()),
        up: false,
    }
}

impl Workers {
    /// The last `n` non-blank rows of `pane`'s screen, joined with ` | ` (empty
    /// when the screen cannot be read): what errors and listings quote of it.
    pub(crate) async fn screen_tail(&self, pane: &cohort_backends::PaneId, n: usize) -> String {
        self.terminal
            .screen(pane)
            .await
            .map(|s| last_lines(&s.rows, n))
            .unwrap_or_default()
    }
}

/// The last `n` non-blank rows, joined with ` | `.
pub(crate) fn last_lines(rows: &[String], n: usize) -> String {
    let kept: Vec<&str> = rows
        .iter()
        .map(|r| r.trim())
        .filter(|r| !r.is_empty())
        .collect();
    kept[kept.len().saturating_sub(n)..].join(" | ")
}

/// Where a worker works, made ready.
struct Prepared {
    cwd: PathBuf,
    repo: Option<PathBuf>,
    made: Option<worktree::Made>,
    branch: Option<String>,
    setup_tail: Option<String>,
    setup_log: Option<PathBuf>,
}

/// Makes the worker's worktree (when it gets one) and runs its setup script.
fn prepare_directory(
    spec: &WorkerSpec,
    name: &str,
    pattern: &str,
    m: &Machine,
    dir: &Path,
    setup_log: &Path,
) -> Result<Prepared, WorkerError> {
    let repo = worktree::main_checkout(m, dir);
    let use_worktree = spec.worktree.unwrap_or(repo.is_some());
    let mut out = Prepared {
        cwd: dir.to_path_buf(),
        branch: worktree::current_branch(m, dir),
        repo: repo.clone(),
        made: None,
        setup_tail: None,
        setup_log: None,
    };
    if use_worktree {
        let Some(repo) = repo else {
            return Err(WorkerError::Invalid(format!(
                "{name}: {} is not in a git repository, so it cannot have a worktree: pass worktree: false to share the directory",
                dir.display()
            )));
        };
        let branch = spec.branch.clone().unwrap_or_else(|| {
            pattern.replace("{name}", &slug(name)).replace(
                "{team}",
                &spec
                    .team
                    .as_deref()
                    .map(slug)
                    .unwrap_or_else(|| "team".into()),
            )
        });
        let made = worktree::create(
            m,
            &repo,
            &slug(name),
            &branch,
            spec.base.as_deref(),
            &spec.include,
        )?;
        out.cwd = made.path.clone();
        out.branch = Some(made.branch.clone());
        out.made = Some(made);
    }
    if let Some(script) = spec.setup.as_deref().filter(|s| !s.trim().is_empty()) {
        let log = setup_log.to_path_buf();
        match worktree::run_setup(m, &out.cwd, script, &log, SETUP_LIMIT) {
            Ok(tail) => {
                out.setup_tail = Some(tail);
                out.setup_log = Some(log);
            }
            Err(e) => {
                if let (Some(made), Some(repo)) = (&out.made, &out.repo) {
                    let _ = worktree::remove(m, repo, &made.path, true);
                }
                return Err(e);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_pane_whose_start_signal_never_comes_gives_up_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let gate = dir.path().join("go");
        let run = |polls| {
            std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(super::gated_launch(
                    &gate.to_string_lossy(),
                    "echo launched",
                    polls,
                ))
                .output()
                .unwrap()
        };
        let out = run(3);
        assert_eq!(out.status.code(), Some(super::GATE_GAVE_UP));
        assert!(out.stdout.is_empty(), "{out:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("start signal never came"), "{said}");
        std::fs::write(&gate, b"").unwrap();
        let out = run(3);
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "launched\n");
    }

    use super::*;

    #[test]
    fn tiled_layouts_have_exactly_one_pane_per_worker() {
        for n in 1..=SPAWN_MAX {
            let tree = tiled(n);
            assert_eq!(tree.validate(), Ok(n), "{n}: {tree:?}");
        }
        assert_eq!(slug("Groucho-2"), "groucho-2");
        assert_eq!(slug("  "), "worker");
    }

    #[test]
    fn claude_settings_call_cohort_hook_for_each_event() {
        let v = claude_settings(Path::new("/bin/co hort"), Path::new("/state"), "w1");
        let stop = v["hooks"]["Stop"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        assert_eq!(
            stop,
            "'/bin/co hort' --state-dir /state hook --worker w1 Stop"
        );
        assert!(v["hooks"]["PermissionRequest"].is_array());
        let codex = crate::hooks::codex_hooks(Path::new("/bin/cohort"), Path::new("/s"));
        assert_eq!(
            codex["hooks"]["Stop"][0]["hooks"][0]["command"],
            "/bin/cohort --state-dir /s hook Stop"
        );
    }
}
