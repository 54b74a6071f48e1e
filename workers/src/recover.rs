//! Finding workers again after a crash, or from another cohort process, and taking
//! them over; restarting a worker whose pane died, in its worktree, with its session.
//!
//! A worker is known three ways: its registry row, the identity stamped on its pane,
//! and a manifest in its state directory (`worker.json`, a copy of the row, for when
//! the registry itself was lost). Agent CLIs a human started in a pane of cohort's
//! terminal are found too, by their process name, and can be adopted as workers
//! (without hooks: their transcript and screen tell their state).

use std::path::{Path, PathBuf};

use cohort_backends::PaneInfo;

use crate::registry::WorkerTables;
use crate::state::WorkerState;
use crate::Workers;
use crate::{
    agent::{launch_line, AgentKind, LaunchSpec, LaunchWiring},
    error::WorkerError,
    events::{now_ms, worker_dir, HOOK_KEY_ENV},
    hub::alive,
    machine::PathTest,
    observe::{agent_env, claude_config_dir, find_rollout, Observation},
    registry::WorkerRow,
    theme,
};
use cohort_terminal::{ownership::AdoptOptions, OpenOptions};

/// How a found worker stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Managed by this process.
    Managed,
    /// Managed by another cohort process that runs.
    ManagedElsewhere,
    /// Its managing process is gone: adopt it.
    Orphaned,
    /// Known only from its manifest (the registry lost it): adopt it.
    Unregistered,
    /// An agent CLI started by hand, not a worker: adopt it to make it one.
    Unmanaged,
}

impl Standing {
    /// The name used in results.
    pub fn name(self) -> &'static str {
        match self {
            Standing::Managed => "managed",
            Standing::ManagedElsewhere => "managed_elsewhere",
            Standing::Orphaned => "orphaned",
            Standing::Unregistered => "unregistered",
            Standing::Unmanaged => "unmanaged",
        }
    }
}

/// A worker (or agent CLI) found.
#[derive(Clone, Debug)]
pub struct Found {
    /// The worker's name, or the pane's session name.
    pub name: String,
    /// How it stands.
    pub standing: Standing,
    /// Which CLI.
    pub agent: String,
    /// Its row (a worker), or what cohort would record (an agent CLI).
    pub row: Option<WorkerRow>,
    /// Its pane, when it has one.
    pub pane: Option<PaneInfo>,
    /// The pid of the process managing it.
    pub owner_pid: Option<i64>,
    /// Its working directory.
    pub cwd: Option<String>,
    /// Its transcript, when found.
    pub transcript: Option<String>,
}

/// What an adoption did.
#[derive(Clone, Debug)]
pub struct Adopted {
    /// The worker as it is now.
    pub row: WorkerRow,
    /// Its state.
    pub observation: Observation,
    /// Its agent was started again (its pane had died).
    pub restarted: bool,
    /// Why its agent had exited, when it had: the status and its last words (say, that
    /// it could not reach its service), so a restart is not taken for a recovery.
    pub had_exited: Option<String>,
    /// Messages the dead manager was delivering, queued again.
    pub requeued: usize,
    /// Messages still held for it.
    pub pending: usize,
}

fn manifest_path(state_dir: &Path, id: &str) -> PathBuf {
    worker_dir(state_dir, id).join("worker.json")
}

/// The manifests under the state directory.
fn manifests(state_dir: &Path) -> Vec<WorkerRow> {
    let Ok(entries) = std::fs::read_dir(state_dir.join("workers")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("worker.json")).ok())
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect()
}

/// The newest Claude Code transcript of a project directory.
fn newest_claude_transcript(config: &Path, cwd: &Path) -> Option<PathBuf> {
    let dir = config
        .join("projects")
        .join(crate::agent::claude_project_dir(cwd));
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max_by_key(|(m, _)| *m)
        .map(|(_, p)| p)
}

impl Workers {
    /// Writes the worker's manifest (a copy of its row) into its state directory.
    pub(crate) async fn save_manifest(&self, row: &WorkerRow) {
        let path = manifest_path(&self.hub.state_dir, &row.id);
        let text = serde_json::to_string_pretty(row).unwrap_or_default();
        let _ = tokio::task::spawn_blocking(move || {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(path, text)
        })
        .await;
    }

    /// Cleans up after spawns whose cohort process died before the agents were
    /// started: a worker still `spawning`, whose start signal was never given and
    /// whose managing process is gone, never ran its agent, and nobody was told its
    /// name. Its pane (waiting at the gate, or already given up) is closed, its
    /// worktree removed when it holds no commit, its row, agent and state directory
    /// deleted, so the name is free again. Returns the names cleaned up.
    pub async fn sweep_half_spawned(&self) -> Result<Vec<String>, WorkerError> {
        let rows = self.worker_rows().await?;
        let own = i64::from(std::process::id());
        let half: Vec<WorkerRow> = rows
            .into_iter()
            .filter(|row| {
                row.state == WorkerState::Spawning
                    && row.owner_tag != self.hub.tag
                    && !(alive(row.owner_pid) && row.owner_pid != own)
                    && !worker_dir(&self.hub.state_dir, &row.id).join("go").exists()
            })
            .collect();
        if half.is_empty() {
            return Ok(Vec::new());
        }
        let panes = self.terminal.list().await?;
        let mut cleaned = Vec::new();
        for row in half {
            let pane = panes.iter().find(|p| {
                p.identity.as_ref().is_some_and(|i| {
                    (!row.session_id.is_empty() && i.id == row.session_id)
                        || i.name == row.name
                        || i.agent.as_deref() == Some(row.name.as_str())
                })
            });
            if let Some(pane) = pane {
                let _ = self.terminal.close(&pane.id).await;
            }
            if let (Some(repo), Some(path), true) = (&row.repo, &row.worktree, row.worktree_owned) {
                let (repo, path, base) = (
                    PathBuf::from(repo),
                    PathBuf::from(path),
                    row.base_commit.clone(),
                );
                let m = self.machine_of(&row);
                let removed = tokio::task::spawn_blocking(move || {
                    // The agent never ran: what is there came from cohort (copied
                    // files, the setup script). A commit would be someone's work.
                    let untouched = base.as_deref().is_some_and(|b| {
                        crate::worktree::commits_since(&m, &path, b).ok() == Some(0)
                    });
                    crate::worktree::remove(&m, &repo, &path, untouched)
                })
                .await;
                if !matches!(removed, Ok(Ok(()))) {
                    tracing::warn!(target: "cohort::workers", worker = %row.name, "a half-spawned worker's worktree was kept: {removed:?}");
                }
            }
            self.forget_worker(&row).await?;
            tracing::info!(target: "cohort::workers", worker = %row.name, "cleaned up a worker whose spawn was cut short (its cohort process stopped before the agent started)");
            cleaned.push(row.name);
        }
        self.hub.poke();
        Ok(cleaned)
    }

    /// Workers and agent CLIs found in the registry, on panes and on disk.
    pub async fn discover_workers(&self) -> Result<Vec<Found>, WorkerError> {
        self.sweep_half_spawned().await?;
        // Agent CLIs in panes cohort did not open are found too: adopting one is
        // the explicit step that makes its pane a session.
        let panes = self.terminal.list_all().await?;
        let rows = self.worker_rows().await?;
        let mut found = Vec::new();
        let mut known: Vec<WorkerRow> = rows.clone();
        let on_disk = {
            let dir = self.hub.state_dir.clone();
            tokio::task::spawn_blocking(move || manifests(&dir))
                .await
                .unwrap_or_default()
        };
        for m in on_disk {
            if !rows.iter().any(|r| r.id == m.id) {
                found.push(self.found(&m, &panes, Standing::Unregistered));
                known.push(m);
            }
        }
        for row in &rows {
            let standing = if row.owner_tag == self.hub.tag {
                Standing::Managed
            } else if alive(row.owner_pid) && row.owner_pid != i64::from(std::process::id()) {
                Standing::ManagedElsewhere
            } else {
                Standing::Orphaned
            };
            found.push(self.found(row, &panes, standing));
        }
        for pane in &panes {
            let Some(kind) = AgentKind::of_program(&pane.command) else {
                continue;
            };
            let is_worker = pane
                .identity
                .as_ref()
                .is_some_and(|i| known.iter().any(|w| w.session_id == i.id));
            if is_worker || pane.dead {
                continue;
            }
            let state = self.terminal.backend().pane_state(&pane.id).await.ok();
            let cwd = state.as_ref().and_then(|s| s.cwd.clone());
            // A remote pane's pids and paths are its host's, not this machine's.
            let remote = cohort_backends::hosts::split(pane.id.as_str()).0.is_some();
            let transcript = match (&cwd, kind) {
                (Some(cwd), AgentKind::Claude) if !remote => {
                    let env = agent_env(
                        state.as_ref().and_then(|s| s.foreground_pid),
                        &LaunchSpec::default(),
                    );
                    newest_claude_transcript(&claude_config_dir(&env), Path::new(cwd))
                }
                _ => None,
            };
            found.push(Found {
                name: pane
                    .identity
                    .as_ref()
                    .map(|i| i.name.clone())
                    .unwrap_or_else(|| pane.window_name.clone()),
                standing: Standing::Unmanaged,
                agent: kind.name().into(),
                row: None,
                pane: Some(pane.clone()),
                owner_pid: None,
                cwd,
                transcript: transcript.map(|p| p.to_string_lossy().into_owned()),
            });
        }
        Ok(found)
    }

    fn found(&self, row: &WorkerRow, panes: &[PaneInfo], standing: Standing) -> Found {
        Found {
            name: row.name.clone(),
            standing,
            agent: row.agent.name().to_string(),
            row: Some(row.clone()),
            pane: panes
                .iter()
                .find(|p| p.identity.as_ref().is_some_and(|i| i.id == row.session_id))
                .cloned(),
            owner_pid: Some(row.owner_pid),
            cwd: Some(row.cwd.clone()),
            transcript: row.transcript.clone(),
        }
    }

    /// Takes over a worker (by name or id), or makes the agent CLI running in a pane
    /// (by pane id or session name) a worker. A worker whose pane died is started
    /// again in its directory with its session when `restart`. Another live
    /// process's worker is taken only with `force`.
    pub async fn adopt_worker(
        &self,
        target: &str,
        name: Option<&str>,
        restart: bool,
        force: bool,
    ) -> Result<Adopted, WorkerError> {
        self.sweep_half_spawned().await?;
        let rows = self.worker_rows().await?;
        let row = match rows.iter().find(|w| w.name == target || w.id == target) {
            Some(row) => row.clone(),
            None => {
                let on_disk = {
                    let dir = self.hub.state_dir.clone();
                    tokio::task::spawn_blocking(move || manifests(&dir))
                        .await
                        .unwrap_or_default()
                };
                match on_disk
                    .into_iter()
                    .find(|w| w.name == target || w.id == target)
                {
                    Some(m) => {
                        let inserted = m.clone();
                        self.terminal
                            .db(move |r| r.insert_worker(&inserted))
                            .await?;
                        m
                    }
                    None => match self.worker_row(target).await {
                        Ok(row) => row,
                        Err(_) => return self.adopt_pane(target, name).await,
                    },
                }
            }
        };
        if alive(row.owner_pid)
            && row.owner_tag != self.hub.tag
            && row.owner_pid != i64::from(std::process::id())
            && !force
        {
            return Err(WorkerError::Invalid(format!(
                "{} is managed by the cohort process {} that still runs: pass force: true to take it over",
                row.name, row.owner_pid
            )));
        }
        let (id, pid, tag) = (
            row.id.clone(),
            i64::from(std::process::id()),
            self.hub.tag.clone(),
        );
        let (row, requeued) = self
            .terminal
            .db(move |r| {
                let requeued = r.requeue_messages(&id)?;
                let row = r.update_worker(&id, |w| {
                    w.owner_pid = pid;
                    w.owner_tag = tag.clone();
                })?;
                Ok((row, requeued))
            })
            .await?;
        let row = row.ok_or_else(|| {
            WorkerError::Invalid(format!("{target} vanished while being adopted"))
        })?;
        self.hub.forget(&row.id);
        let mut observation = self.observe(&row, true).await?;
        let mut row = row;
        let mut restarted = false;
        let mut had_exited = None;
        if observation.pane.is_none() || observation.assessment.state.name() == "exited" {
            had_exited = Some(match observation.pane {
                None => "its pane is gone".to_string(),
                Some(_) => observation.assessment.reason.clone(),
            });
            if restart {
                row = self.relaunch(&row).await?;
                restarted = true;
                observation = self.observe(&row, true).await?;
            }
        } else if !row.input_ready {
            row = self.await_ready(&row, true).await.unwrap_or(row);
        }
        let pending = {
            let id = row.id.clone();
            self.terminal
                .db(move |r| r.pending_messages(&id))
                .await?
                .len()
        };
        if pending > 0 {
            self.ensure_delivery(&row.id);
        }
        self.save_manifest(&row).await;
        Ok(Adopted {
            row,
            observation,
            restarted,
            had_exited,
            requeued,
            pending,
        })
    }

    /// Makes the agent CLI running in the pane `target` a worker.
    async fn adopt_pane(&self, target: &str, name: Option<&str>) -> Result<Adopted, WorkerError> {
        let pane = self.terminal.resolve_any(target).await?;
        let kind = AgentKind::of_program(&pane.command).ok_or_else(|| {
            WorkerError::Invalid(format!(
                "no worker is named {target:?}, and no agent CLI runs in that pane ({} runs there): discover_workers lists what can be adopted",
                pane.command
            ))
        })?;
        let state = self.terminal.backend().pane_state(&pane.id).await?;
        let cwd = state.cwd.clone().unwrap_or_else(|| ".".into());
        // A picked name must be free as a worker's, a session's and an agent's.
        let mut taken: Vec<String> = self
            .worker_rows()
            .await?
            .into_iter()
            .map(|w| w.name)
            .collect();
        taken.extend(
            self.terminal
                .list()
                .await?
                .into_iter()
                .filter_map(|p| p.identity.map(|i| i.name)),
        );
        taken.extend(self.terminal.agents().await?.into_iter().map(|a| a.name));
        let name = match (name, &pane.identity) {
            (Some(n), _) => n.to_string(),
            (None, Some(i)) => i.name.clone(),
            (None, None) => theme::pick_names(None, 1, &taken)
                .map_err(WorkerError::Invalid)?
                .remove(0),
        };
        cohort_terminal::names::check(cohort_terminal::names::NameKind::Agent, &name)?;
        // A pane without cohort's stamp is adopted, so it is found again.
        let identity = match pane.identity.clone() {
            Some(i) => i,
            None => self
                .terminal
                .adopt_pane(
                    pane.id.as_str(),
                    AdoptOptions {
                        name: Some(name.clone()),
                        agent: Some(name.clone()),
                        team: None,
                    },
                )
                .await?
                .identity
                .ok_or_else(|| WorkerError::Invalid(format!("{} was not stamped", pane.id)))?,
        };
        let in_shell = state.shell_pid != state.foreground_pid;
        let host = cohort_backends::hosts::split(pane.id.as_str())
            .0
            .map(str::to_string);
        let spec = LaunchSpec {
            agent: kind,
            in_shell,
            host: host.clone(),
            ..LaunchSpec::default()
        };
        let env = match host {
            Some(_) => Default::default(),
            None => agent_env(state.foreground_pid, &spec),
        };
        let (transcript, agent_session) = match kind {
            // A remote agent's files and pids are its host's.
            _ if host.is_some() => (None, None),
            AgentKind::Claude => {
                let t = newest_claude_transcript(&claude_config_dir(&env), Path::new(&cwd));
                let s = t
                    .as_ref()
                    .and_then(|p| p.file_stem())
                    .map(|s| s.to_string_lossy().into_owned());
                (t, s)
            }
            AgentKind::Codex => match find_rollout(&env, &cwd, 0, &[]) {
                Some((p, id)) => (Some(p), Some(id)),
                None => (None, None),
            },
            _ => (None, None),
        };
        let machine = self.machine_of_host(host.as_deref());
        let cwd_path = PathBuf::from(&cwd);
        let (repo, branch) = tokio::task::spawn_blocking(move || {
            (
                crate::worktree::main_checkout(&machine, &cwd_path),
                crate::worktree::current_branch(&machine, &cwd_path),
            )
        })
        .await
        .unwrap_or((None, None));
        let row = WorkerRow {
            id: uuid::Uuid::new_v4().to_string(),
            name: name.clone(),
            session_id: identity.id.clone(),
            server: self.terminal.server_key().to_string(),
            agent: kind,
            spec,
            branch,
            worktree: repo
                .as_ref()
                .filter(|r| r.as_path() != Path::new(&cwd))
                .map(|_| cwd.clone()),
            repo: repo.map(|r| r.to_string_lossy().into_owned()),
            cwd,
            agent_session,
            transcript: transcript.map(|p| p.to_string_lossy().into_owned()),
            owner_pid: i64::from(std::process::id()),
            owner_tag: self.hub.tag.clone(),
            input_ready: true,
            state: WorkerState::Idle,
            ..WorkerRow::default()
        };
        let inserted = row.clone();
        let (agent, session, team) = (name.clone(), identity.id.clone(), identity.team.clone());
        self.terminal
            .db(move |r| {
                r.insert_worker(&inserted)?;
                r.register_agent(
                    &agent,
                    Some(&session),
                    None,
                    &team.into_iter().collect::<Vec<_>>(),
                )
            })
            .await?;
        let observation = self.observe(&row, true).await?;
        self.save_manifest(&row).await;
        Ok(Adopted {
            row,
            observation,
            restarted: false,
            had_exited: None,
            requeued: 0,
            pending: 0,
        })
    }

    /// Starts a worker's agent again in a new pane, in its directory, continuing its
    /// session where its CLI can.
    pub async fn relaunch(&self, row: &WorkerRow) -> Result<WorkerRow, WorkerError> {
        let spec = row.spec.clone();
        let kind = spec.agent;
        // Its directory and transcript, where it runs (a remote host's, there).
        let machine = self.machine_of(row);
        let (cwd, transcript) = (PathBuf::from(&row.cwd), row.transcript.clone());
        // Asked together: one round trip to a remote host.
        let found = tokio::task::spawn_blocking(move || {
            let mut checks = vec![(PathTest::Dir, cwd.as_path())];
            if let Some(t) = &transcript {
                checks.push((PathTest::Exists, Path::new(t)));
            }
            machine.test_all(&checks)
        })
        .await
        .map_err(|e| WorkerError::Invalid(format!("{} could not be looked at: {e}", row.name)))??;
        let (cwd_there, transcript_there) = (found[0], found.get(1).copied());
        if !cwd_there {
            return Err(WorkerError::Invalid(format!(
                "{}'s directory {} is gone: it cannot be restarted there (close it, and spawn a new worker)",
                row.name, row.cwd
            )));
        }
        let far = match spec.host.as_deref() {
            // Its directory there again (with the hook script), as a spawn makes it.
            Some(host) => {
                // Its rules said there again (the directory may be new); a worker
                // without rules leaves the mark as it is.
                let rules = crate::policy::load(&self.hub.state_dir, &row.id)
                    .is_some_and(|p| p.has_rules());
                let far = crate::remote::prepare(
                    self.terminal.backend(),
                    host,
                    &row.id,
                    rules.then_some(true),
                )
                .await?;
                self.hear_hosts();
                Some(far)
            }
            None => None,
        };
        let mut wiring = LaunchWiring::default();
        let mut agent_session = row.agent_session.clone();
        let resumable = kind.resumes() && transcript_there == Some(true);
        match kind {
            AgentKind::Claude if resumable => wiring.resume = agent_session.clone(),
            AgentKind::Claude => {
                let fresh = uuid::Uuid::new_v4().to_string();
                wiring.session_id = Some(fresh.clone());
                agent_session = Some(fresh);
            }
            AgentKind::Codex if resumable => wiring.resume = agent_session.clone(),
            AgentKind::Aider if resumable => wiring.resume = Some(String::new()),
            _ => {}
        }
        self.wire_hooks(
            kind,
            &row.id,
            Path::new(&row.cwd),
            far.as_ref(),
            &mut wiring,
        )
        .await?;
        let command = launch_line(&spec, &wiring).map_err(WorkerError::Invalid)?;
        if let Some(old) = self.worker_pane(row).await? {
            let _ = self.terminal.close(&old.id).await;
        }
        let _ = self.terminal.remove_agent(&row.name).await;
        let mut env: Vec<(String, String)> = spec
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push(("COHORT_WORKER_ID".into(), row.id.clone()));
        env.push(("COHORT_WORKER".into(), row.name.clone()));
        env.push((
            HOOK_KEY_ENV.into(),
            crate::spawn::hook_key(&self.hub.state_dir, &row.id)?.to_hex(),
        ));
        let pane = self
            .terminal
            .open(OpenOptions {
                name: row.name.clone(),
                cwd: Some(row.cwd.clone()),
                command: Some(command),
                env,
                agent: Some(row.name.clone()),
                team: row.team.clone(),
                window: None,
                host: spec.host.clone(),
            })
            .await?;
        let session_id = pane
            .identity
            .as_ref()
            .map(|i| i.id.clone())
            .unwrap_or_default();
        let (id, launched) = (row.id.clone(), now_ms());
        let transcript = if resumable {
            row.transcript.clone()
        } else {
            None
        };
        let updated = self
            .terminal
            .db(move |r| {
                r.update_worker(&id, |w| {
                    w.session_id = session_id.clone();
                    w.launched_ms = launched;
                    w.input_ready = false;
                    w.agent_session = agent_session.clone();
                    w.transcript = transcript.clone();
                    w.state = WorkerState::Spawning;
                    w.reason = "restarted".into();
                })
            })
            .await?
            .ok_or_else(|| {
                WorkerError::Invalid(format!("{} vanished while restarting", row.name))
            })?;
        self.hub.forget(&row.id);
        let ready = self.await_ready(&updated, true).await?;
        self.save_manifest(&ready).await;
        Ok(ready)
    }
}
