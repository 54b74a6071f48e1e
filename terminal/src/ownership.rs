//! Whose panes these are. A terminal holds more than cohort's sessions: the window a
//! person was working in when iTerm2 connected, a pane they split off in an attached
//! tmux client. cohort lists, reads and types into only the panes it opened or that
//! were adopted explicitly, each carrying a stamped identity; the others are listed
//! when asked ([`Terminal::list_all`]), named in the error of a call that targets
//! one, and become sessions only through [`Terminal::adopt_pane`], which stamps them
//! and records them in the registry like any session opened here.

use cohort_backends::{Identity, PaneInfo};

use crate::{
    names::{self, NameKind},
    registry::SessionRecord,
    resolve_target,
    sessions::learn_mark_key,
    Terminal, TerminalError,
};

/// What a pane becomes when it is adopted.
#[derive(Clone, Debug, Default)]
pub struct AdoptOptions {
    /// Its session name; the pane's window name when that is a valid free name,
    /// else `pane-<number>`, when `None`.
    pub name: Option<String>,
    /// The agent working there, registered with the session.
    pub agent: Option<String>,
    /// That agent's team.
    pub team: Option<String>,
}

/// The panes cohort does not own that `target` names: by pane id, or by their
/// window/tab name (several panes may share one).
pub fn unowned_matches<'a>(panes: &'a [PaneInfo], target: &str) -> Vec<&'a PaneInfo> {
    let target = target.trim();
    let by_id: Vec<&PaneInfo> = panes
        .iter()
        .filter(|p| p.identity.is_none() && p.id.as_str() == target)
        .collect();
    if !by_id.is_empty() {
        return by_id;
    }
    panes
        .iter()
        .filter(|p| p.identity.is_none() && !target.is_empty() && p.window_name == target)
        .collect()
}

impl Terminal {
    /// Whether `pane` is known here as one of cohort's sessions (listed or opened by
    /// this process): for what shows panes as output comes, without a listing per
    /// update (the dashboard's screens).
    pub fn is_known_session(&self, pane: &cohort_backends::PaneId) -> bool {
        self.runtimes
            .existing(pane)
            .is_some_and(|rt| rt.lock().session_id.is_some())
    }

    /// Every session, when the terminal's server runs and this process is connected
    /// to it; `None` otherwise: for what draws on sessions from events and must not
    /// start a server by looking (cohort's tmux server ends with its last session).
    pub async fn list_if_running(&self) -> Result<Option<Vec<PaneInfo>>, TerminalError> {
        let Some(mut panes) = self.backend.list_panes_if_running().await? else {
            return Ok(None);
        };
        panes.retain(|p| p.identity.is_some());
        Ok(Some(panes))
    }

    /// Why `target`, which names no session, cannot be used: it names a pane cohort
    /// neither opened nor adopted. `None` when it names no such pane either.
    pub async fn not_adopted(&self, target: &str) -> Option<TerminalError> {
        let panes = self.list_all().await.ok()?;
        match unowned_matches(&panes, target).as_slice() {
            [] => None,
            [one] => Some(TerminalError::NotAdopted {
                pane: one.id.clone(),
                window: one.window_name.clone(),
            }),
            many => Some(TerminalError::InvalidArgument(format!(
                "{} panes cohort did not open go by the window name {:?} ({}); none is one of \
                 cohort's sessions, so cohort neither reads nor types into them: adopt one by its \
                 pane id first (the `adopt` tool, in the layout toolset)",
                many.len(),
                names::shown(target),
                many.iter()
                    .map(|p| p.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// The pane `target` names, a session or not: for a call that adopts what it
    /// finds (a worker taken over from a pane running an agent CLI). Every other
    /// call takes sessions only ([`Terminal::resolve`]).
    pub async fn resolve_any(&self, target: &str) -> Result<PaneInfo, TerminalError> {
        let refused = match self.resolve(target).await {
            Ok(pane) => return Ok(pane),
            Err(e @ TerminalError::NotAdopted { .. }) => e,
            Err(e) => return Err(e),
        };
        let all = self.list_all().await?;
        match unowned_matches(&all, target).as_slice() {
            [one] => Ok((*one).clone()),
            _ => Err(refused),
        }
    }

    /// Makes a pane cohort did not open one of its sessions: stamps an identity on
    /// it (a new persistent id, the name, agent and team), records it in the
    /// registry and, with an agent, registers the agent there. From then on it is
    /// listed, read and typed into like any session, by every cohort process. Its
    /// shell was not started by cohort, so its prompt marks (if it prints any) are
    /// unsigned, and a command's end is told by a sentinel or by quiescence.
    ///
    /// `target` is the pane's id or its window/tab name, as `list` with every pane
    /// shows it. A pane that already is a session is answered as it is when no
    /// other name is asked for.
    pub async fn adopt_pane(
        &self,
        target: &str,
        options: AdoptOptions,
    ) -> Result<PaneInfo, TerminalError> {
        names::check_opt(NameKind::Session, options.name.as_deref())?;
        names::check_opt(NameKind::Agent, options.agent.as_deref())?;
        names::check_opt(NameKind::Team, options.team.as_deref())?;
        let all = self.list_all().await?;
        let owned: Vec<PaneInfo> = all
            .iter()
            .filter(|p| p.identity.is_some())
            .cloned()
            .collect();
        if let Some(session) = resolve_target(&owned, target) {
            let name = crate::sessions::session_name(session);
            return match &options.name {
                Some(asked) if *asked != name => Err(TerminalError::InvalidArgument(format!(
                    "{} is already cohort's session {name:?}: it keeps that name (target it by it)",
                    session.id
                ))),
                _ => Ok(session.clone()),
            };
        }
        let pane = match unowned_matches(&all, target).as_slice() {
            [one] => (*one).clone(),
            [] => {
                return Err(TerminalError::UnknownTarget {
                    target: names::shown(target),
                    known: describe_unowned(&all),
                })
            }
            many => {
                let ids: Vec<&str> = many.iter().map(|p| p.id.as_str()).collect();
                return Err(TerminalError::InvalidArgument(format!(
                    "{} panes go by the window name {:?} ({}): adopt one by its pane id",
                    many.len(),
                    names::shown(target),
                    ids.join(", ")
                )));
            }
        };
        if pane.dead {
            return Err(TerminalError::Exited {
                pane: pane.id.clone(),
                status: pane.exit_status,
            });
        }
        let name = match options.name {
            Some(name) => {
                self.name_free(&owned, &name).await?;
                name
            }
            None => self.default_name(&owned, &pane).await?,
        };
        if let Some(agent) = &options.agent {
            if agent != &name {
                self.name_free(&owned, agent).await?;
            }
        }
        let state = self.backend.pane_state(&pane.id).await?;
        let identity = Identity {
            id: uuid::Uuid::new_v4().to_string(),
            name: name.clone(),
            agent: options.agent.clone(),
            team: options.team.clone(),
            // Its shell was started without a key: whatever marks it prints are
            // unsigned.
            key: None,
            anchor: None,
            announces_start: false,
        };
        // Claim the name across processes before the pane carries it, as `open`
        // does: two adoptions (or an adoption and an open) never share a name.
        let live: Vec<String> = owned
            .iter()
            .filter_map(|p| p.identity.as_ref().map(|i| i.id.clone()))
            .collect();
        if !self.claim(&identity.id, &name, live).await? {
            return Err(TerminalError::NameTaken {
                name,
                by: "another session of that name is open or being opened".into(),
            });
        }
        if let Err(e) = self.backend.stamp_identity(&pane.id, &identity).await {
            let id = identity.id.clone();
            let _ = self.db(move |r| r.remove_session(&id)).await;
            return Err(e.into());
        }
        let record = SessionRecord {
            id: identity.id.clone(),
            name: name.clone(),
            backend: self.backend.kind().name().into(),
            server: self.server_key.clone(),
            pane: pane.id.to_string(),
            cwd: state.cwd.clone(),
            created: crate::registry::now(),
            last_command: None,
            tags: Vec::new(),
        };
        let registered = identity.clone();
        self.db(move |r| {
            r.upsert_session(&record)?;
            if let Some(agent) = &registered.agent {
                let teams: Vec<String> = registered.team.iter().cloned().collect();
                r.register_agent(agent, Some(&registered.id), None, &teams)?;
            }
            Ok(())
        })
        .await?;
        learn_mark_key(&self.runtimes.get(&pane.id), Some(&identity), false);
        self.bus.publish(crate::events::EngineEvent::SessionOpened {
            session: name.clone(),
            pane: pane.id.clone(),
        });
        tracing::info!(target: "cohort::engine", session = %name, pane = %pane.id, "adopted a pane cohort did not open");
        Ok(PaneInfo {
            identity: Some(identity),
            ..pane
        })
    }

    /// The name an adopted pane gets when none is asked for: its window name when
    /// that is a valid name nothing else goes by, else `pane-<number>`.
    async fn default_name(
        &self,
        owned: &[PaneInfo],
        pane: &PaneInfo,
    ) -> Result<String, TerminalError> {
        let window = pane.window_name.trim();
        if names::check(NameKind::Session, window).is_ok()
            && self.name_free(owned, window).await.is_ok()
        {
            return Ok(window.to_string());
        }
        let number: String = pane
            .id
            .as_str()
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(16)
            .collect();
        let name = format!("pane-{number}");
        self.name_free(owned, &name).await?;
        Ok(name)
    }
}

/// The panes that could be adopted, for an error naming none of them.
fn describe_unowned(panes: &[PaneInfo]) -> String {
    let unowned: Vec<String> = panes
        .iter()
        .filter(|p| p.identity.is_none())
        .take(20)
        .map(|p| format!("{} ({:?})", p.id, p.window_name))
        .collect();
    if unowned.is_empty() {
        return "every pane is already one of cohort's sessions (`list` shows them)".into();
    }
    format!(
        "panes cohort could adopt: {} (`list` with all: true shows them)",
        unowned.join(", ")
    )
}
