//! Targets: which session a caller means by a session name, persistent id, agent
//! name or pane id, and, for calls that reach many sessions, by a team or a tag
//! (`tag:frontend`: every session tagged so); either may also be a path through the
//! team tree (`team/agent`, `org/web`, see [`crate::hierarchy`]).

use cohort_backends::PaneInfo;

use crate::{
    hierarchy::{self, PathTarget},
    Terminal, TerminalError,
};

/// A target as given to a many-target call, and its session or why it names none.
pub type ExpandedTarget = (String, Result<PaneInfo, TerminalError>);

/// The prefix of a target naming every session with a tag: `tag:frontend`.
pub const TAG_PREFIX: &str = "tag:";

/// What happened at one target of a many-session call.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// The target as resolved (an agent's or a session's name).
    pub target: String,
    /// The session it reached (empty when it names none).
    pub session: String,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// The message sent (broadcast) or the text read (reads).
    pub text: Option<String>,
    /// The read's meta line, or which cascade level chose the message.
    pub meta: Option<String>,
}

impl Delivery {
    /// A target that failed: `error` says why.
    pub fn failed(target: &str, session: String, error: impl ToString) -> Delivery {
        Delivery {
            target: target.to_string(),
            session,
            error: Some(error.to_string()),
            text: None,
            meta: None,
        }
    }
}

/// The pane `target` names, trying in order: pane id, persistent id, session name,
/// agent name, then a session named with its host (`build-box:api`).
pub fn resolve_target<'a>(panes: &'a [PaneInfo], target: &str) -> Option<&'a PaneInfo> {
    let target = target.trim();
    if target.is_empty() {
        return None;
    }
    panes
        .iter()
        .find(|p| p.id.as_str() == target)
        .or_else(|| {
            panes
                .iter()
                .find(|p| p.identity.as_ref().is_some_and(|i| i.id == target))
        })
        .or_else(|| {
            panes
                .iter()
                .find(|p| p.identity.as_ref().is_some_and(|i| i.name == target))
        })
        .or_else(|| {
            panes
                .iter()
                .find(|p| p.identity.as_ref().and_then(|i| i.agent.as_deref()) == Some(target))
        })
        .or_else(|| {
            // A session named with its host: `build-box:api`.
            let (host, name) = target.split_once(':')?;
            panes.iter().find(|p| {
                cohort_backends::hosts::split(p.id.as_str()).0 == Some(host)
                    && p.identity.as_ref().is_some_and(|i| i.name == name)
            })
        })
}

/// What exists, for "no such session" messages.
pub fn describe_targets(panes: &[PaneInfo]) -> String {
    let names: Vec<String> = panes
        .iter()
        .map(|p| {
            let name = p
                .identity
                .as_ref()
                .map(|i| i.name.clone())
                .unwrap_or_else(|| p.window_name.clone());
            match cohort_backends::hosts::split(p.id.as_str()).0 {
                Some(host) => format!("{host}:{name}"),
                None => name,
            }
        })
        .collect();
    if names.is_empty() {
        return "there are no sessions yet: open one first".into();
    }
    let shown = names.len().min(TARGETS_LISTED);
    let mut text = format!("existing sessions: {}", names[..shown].join(", "));
    if names.len() > shown {
        text.push_str(&format!(
            ", and {} more (`list` shows every session)",
            names.len() - shown
        ));
    }
    text
}

/// How many session names an "unknown target" error lists.
const TARGETS_LISTED: usize = 20;

/// What an unknown target's error says exists: the listing for the first unknown
/// target of a call, a pointer to it for the rest, so a call naming many unknown
/// targets does not repeat the listing for each.
fn known_for_unknown(panes: &[PaneInfo], listed: &mut bool) -> String {
    if std::mem::replace(listed, true) {
        "the sessions are listed at the first unknown target".into()
    } else {
        describe_targets(panes)
    }
}

impl Terminal {
    /// Finds a session by name, persistent id, agent name or pane id.
    pub async fn resolve(&self, target: &str) -> Result<PaneInfo, TerminalError> {
        let panes = self.list().await?;
        if let Some(found) = resolve_target(&panes, target) {
            return Ok(found.clone());
        }
        // An agent known to the registry (possibly registered by another process).
        if let Some(agent) = self
            .agents()
            .await?
            .into_iter()
            .find(|a| !target.trim().is_empty() && a.name == target.trim())
        {
            if let Some(found) = agent
                .session
                .as_deref()
                .and_then(|s| resolve_target(&panes, s))
            {
                return Ok(found.clone());
            }
        }
        if hierarchy::is_path(target) {
            return self.resolve_path(target, &panes).await;
        }
        // A session on a remote host out of reach is not listed: say why, in the
        // words of the connection that failed, rather than that it does not exist.
        let name = target.trim().to_string();
        let server = self.server_key.clone();
        let kept = self
            .db(move |r| {
                Ok(r.sessions()?
                    .into_iter()
                    .find(|s| s.server == server && s.name == name))
            })
            .await?;
        if let Some(record) = kept {
            if cohort_backends::hosts::split(&record.pane).0.is_some() {
                let pane = cohort_backends::PaneId(record.pane);
                match self.backend.pane_state(&pane).await {
                    Err(e) => return Err(TerminalError::Backend(e)),
                    // Its host answers again: it is listed now.
                    Ok(_) => {
                        let panes = self.list().await?;
                        if let Some(found) = resolve_target(&panes, target) {
                            return Ok(found.clone());
                        }
                    }
                }
            }
        }
        if let Some(refusal) = self.not_adopted(target).await {
            return Err(refusal);
        }
        Err(TerminalError::UnknownTarget {
            target: crate::names::shown(target),
            known: describe_targets(&panes),
        })
    }

    /// [`Terminal::expand_targets`] for calls that act on every target or on none (a
    /// batch of appearance changes, a wait): a target that reaches no open session
    /// refuses the whole call, naming each such target and why.
    pub async fn expand_targets_or_refuse(
        &self,
        targets: &[String],
    ) -> Result<Vec<(String, PaneInfo)>, TerminalError> {
        let expanded = self.expand_targets(targets).await?;
        let unknown: Vec<String> = expanded
            .iter()
            .filter_map(|(label, pane)| pane.as_ref().err().map(|e| format!("{label:?}: {e}")))
            .collect();
        if !unknown.is_empty() {
            return Err(TerminalError::InvalidArgument(format!(
                "nothing was done: {}",
                unknown.join("; ")
            )));
        }
        Ok(expanded
            .into_iter()
            .filter_map(|(label, pane)| pane.ok().map(|p| (label, p)))
            .collect())
    }

    /// Resolves many targets (session names, ids, agents, teams) to their sessions,
    /// each session once; a target that names none is answered with why, in its place,
    /// so one mistyped name does not stop the others.
    pub async fn expand_targets(
        &self,
        targets: &[String],
    ) -> Result<Vec<ExpandedTarget>, TerminalError> {
        let panes = self.list().await?;
        let agents = self.agents().await?;
        let teams = self.teams().await?;
        let mut out: Vec<ExpandedTarget> = Vec::new();
        let mut listed = false;
        let mut records = None;
        let push = |label: String, pane: &PaneInfo, out: &mut Vec<ExpandedTarget>| {
            if !out
                .iter()
                .any(|(_, p)| p.as_ref().is_ok_and(|p| p.id == pane.id))
            {
                out.push((label, Ok(pane.clone())));
            }
        };
        for target in targets {
            if let Some(tag) = target.strip_prefix(TAG_PREFIX) {
                let records = match &records {
                    Some(records) => records,
                    None => records.insert(self.db(|r| r.sessions()).await?),
                };
                let mut reached = false;
                for record in records.iter().filter(|s| s.tags.iter().any(|t| t == tag)) {
                    if let Some(pane) = resolve_target(&panes, &record.name) {
                        push(record.name.clone(), pane, &mut out);
                        reached = true;
                    }
                }
                if !reached {
                    out.push((
                        target.clone(),
                        Err(TerminalError::InvalidArgument(format!(
                            "no open session has the tag {:?} (`tag` adds one; `list` shows them)",
                            crate::names::shown(tag)
                        ))),
                    ));
                }
                continue;
            }
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
                        Err(TerminalError::InvalidArgument(format!(
                            "agent {target:?} has no open session"
                        ))),
                    )),
                }
                continue;
            }
            let team = match teams.iter().any(|t| &t.name == target) {
                true => Some(PathTarget::Team(target.clone())),
                false if hierarchy::is_path(target) => {
                    match hierarchy::resolve_path(target, &teams, &agents) {
                        Ok(found) => Some(found),
                        Err(why) => {
                            out.push((target.clone(), Err(TerminalError::InvalidArgument(why))));
                            continue;
                        }
                    }
                }
                false => None,
            };
            if let Some(found) = team {
                if let PathTarget::Agent { agent, .. } = &found {
                    let session = agents
                        .iter()
                        .find(|a| &a.name == agent)
                        .and_then(|a| a.session.clone());
                    match session.as_deref().and_then(|s| resolve_target(&panes, s)) {
                        Some(pane) => push(target.clone(), pane, &mut out),
                        None => out.push((
                            target.clone(),
                            Err(TerminalError::InvalidArgument(format!(
                                "agent {agent:?} has no open session"
                            ))),
                        )),
                    }
                    continue;
                }
                for name in found.agents(&teams) {
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
            let why = match self.not_adopted(target).await {
                Some(refusal) => refusal,
                None => TerminalError::UnknownTarget {
                    target: crate::names::shown(target),
                    known: known_for_unknown(&panes, &mut listed),
                },
            };
            out.push((target.clone(), Err(why)));
        }
        Ok(out)
    }

    /// The one session a path (`team/agent`) names.
    async fn resolve_path(
        &self,
        target: &str,
        panes: &[PaneInfo],
    ) -> Result<PaneInfo, TerminalError> {
        let teams = self.teams().await?;
        let agents = self.agents().await?;
        let found = hierarchy::resolve_path(target.trim(), &teams, &agents)
            .map_err(TerminalError::InvalidArgument)?;
        let reached = found.agents(&teams);
        let sessions: Vec<&PaneInfo> = reached
            .iter()
            .filter_map(|name| agents.iter().find(|a| &a.name == name))
            .filter_map(|a| a.session.as_deref())
            .filter_map(|s| resolve_target(panes, s))
            .collect();
        match (sessions.as_slice(), &found) {
            ([one], _) => Ok((*one).clone()),
            ([], PathTarget::Agent { agent, .. }) => Err(TerminalError::InvalidArgument(format!(
                "agent {agent:?} has no open session"
            ))),
            (many, _) => Err(TerminalError::InvalidArgument(format!(
                "target {:?} names a team reaching {} sessions; this call takes one: name one agent ({}/<agent>), or use a tool that takes many targets",
                crate::names::shown(target),
                many.len(),
                crate::names::shown(target)
            ))),
        }
    }
}
