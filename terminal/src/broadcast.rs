//! Broadcast input: sessions grouped so that what a person types into one reaches
//! every other, and what cohort is asked to type into one does too unless the
//! caller keeps it to that session.
//!
//! The terminal holds the groups (iTerm2's broadcast domains, tmux's synchronised
//! panes), so every cohort process and the person's own terminal see the same ones;
//! this module reads them, changes them (one process at a time, under a lock file,
//! keeping groups it was not asked about, a person's own included), and names the
//! peers of a session for the typing tools. Each group lies in one window (a tmux
//! window, an iTerm2 tab): tmux broadcasts a person's keys only there, and cohort
//! holds iTerm2 to the same rule.

use std::time::Duration;

use cohort_backends::{BackendError, PaneId, PaneInfo};
use serde::Serialize;

use crate::sessions::session_name;
use crate::{input, Terminal, TerminalError};

/// How long a change waits for another process's change to the groups.
const CHANGE_WAIT: Duration = Duration::from_secs(10);

/// One broadcast group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BroadcastGroup {
    /// Its members by name: the session's, or the pane id of a pane that is not
    /// cohort's.
    pub sessions: Vec<String>,
    /// Their pane ids, in the same order.
    pub panes: Vec<PaneId>,
    /// Whether each is a cohort session (cohort types into no other pane).
    #[serde(skip)]
    pub owned: Vec<bool>,
}

/// Where input typed into a grouped session went besides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Echoed {
    /// The other members it reached, by name.
    pub reached: Vec<String>,
    /// The members it did not reach, each with why.
    pub missed: Vec<String>,
}

impl Terminal {
    /// The broadcast groups now, a backend without them having none.
    pub async fn broadcast_groups(&self) -> Result<Vec<BroadcastGroup>, TerminalError> {
        if !self.backend.capabilities().broadcast_input {
            return Ok(Vec::new());
        }
        let groups = self.backend.broadcast_groups().await?;
        if groups.is_empty() {
            return Ok(Vec::new());
        }
        let panes = self.list_all().await?;
        Ok(self
            .kept(groups, &panes)
            .into_iter()
            .map(|g| named(g, &panes))
            .collect())
    }

    /// The groups as they still work: a member closed or moved to another window
    /// since is left out of its group, a group left with one member ends, and on a
    /// terminal where groups cannot share a window the first group there keeps it.
    fn kept(&self, groups: Vec<Vec<PaneId>>, panes: &[PaneInfo]) -> Vec<Vec<PaneId>> {
        let share = self.backend.capabilities().broadcast_groups_share_windows;
        let mut kept: Vec<(cohort_backends::WindowId, Vec<PaneId>)> = Vec::new();
        for group in groups {
            let mut parts: Vec<(cohort_backends::WindowId, Vec<PaneId>)> = Vec::new();
            for id in group {
                // A hidden member is in no window a person types into.
                let Some(pane) = panes.iter().find(|p| p.id == id && !p.hidden) else {
                    continue;
                };
                match parts.iter_mut().find(|(w, _)| *w == pane.window) {
                    Some((_, members)) => members.push(id),
                    None => parts.push((pane.window.clone(), vec![id])),
                }
            }
            // Split across windows, the part with the most members stays the group.
            parts.sort_by_key(|(_, members)| std::cmp::Reverse(members.len()));
            if let Some((window, members)) = parts.into_iter().next() {
                if members.len() > 1 && (share || !kept.iter().any(|(w, _)| *w == window)) {
                    kept.push((window, members));
                }
            }
        }
        kept.into_iter().map(|(_, members)| members).collect()
    }

    /// Puts `members` (two or more) in one new group, taking them out of any other;
    /// with `join` false, takes them out of their groups (a group left with one
    /// member ends). Returns the groups after.
    pub async fn group_input(
        &self,
        members: &[PaneId],
        join: bool,
        caller: &input::Caller,
    ) -> Result<Vec<BroadcastGroup>, TerminalError> {
        if !self.backend.capabilities().broadcast_input {
            return Err(BackendError::Unsupported {
                backend: self.backend.kind().name(),
                what: "broadcast input",
            }
            .into());
        }
        let mut wanted: Vec<PaneId> = Vec::new();
        for pane in members {
            if !wanted.contains(pane) {
                wanted.push(pane.clone());
            }
        }
        if join && wanted.len() < 2 {
            return Err(TerminalError::InvalidArgument(
                "a broadcast group needs two sessions or more: name every session of the group"
                    .into(),
            ));
        }
        // Where a session's typing goes is its lock holder's to change.
        crate::names::check_opt(crate::names::NameKind::Owner, caller.owner.as_deref())?;
        for pane in &wanted {
            self.check_lock(pane, caller).await?;
        }
        if join {
            // One rule on every terminal: a person's typing is broadcast within a
            // window (a tmux window, an iTerm2 tab) and nowhere else.
            let panes = self.list_all().await?;
            let window_of = |id: &PaneId| panes.iter().find(|p| &p.id == id);
            let mut windows = Vec::new();
            for id in &wanted {
                let pane = window_of(id).ok_or_else(|| BackendError::PaneGone(id.clone()))?;
                if !windows.contains(&pane.window) {
                    windows.push(pane.window.clone());
                }
            }
            if windows.len() > 1 {
                let names: Vec<String> = wanted
                    .iter()
                    .filter_map(window_of)
                    .map(|p| format!("{} in {}", session_name(p), p.window))
                    .collect();
                return Err(TerminalError::InvalidArgument(format!(
                    "the sessions are in different windows ({}): a broadcast group lies in one window; open them side by side with split or create_layout",
                    names.join(", ")
                )));
            }
        }
        let path = input::lock_path(&self.lock_dir, &self.server_key, "broadcast-groups");
        let _changing = input::lock_or(
            path,
            CHANGE_WAIT,
            "another cohort process is changing the broadcast groups; try again",
        )
        .await
        .map_err(|e| TerminalError::InvalidArgument(e.to_string()))?;
        let panes = self.list_all().await?;
        let mut groups = self.kept(self.backend.broadcast_groups().await?, &panes);
        for group in &mut groups {
            group.retain(|p| !wanted.contains(p));
        }
        groups.retain(|g| g.len() > 1);
        if join {
            groups.push(wanted);
        }
        self.backend.set_broadcast_groups(&groups).await?;
        self.broadcast_groups().await
    }

    /// Types into the other members of `pane`'s group what was typed into `pane`,
    /// with `type_into` (each member through its own input turn: its lock, its
    /// state, the tripwire). A member that is not a cohort session is not typed into.
    /// The input already reached `pane`, so nothing here fails the call: what did not
    /// reach a member is said in [`Echoed::missed`].
    pub async fn echo_to_group<F, Fut>(&self, pane: &PaneId, mut type_into: F) -> Echoed
    where
        F: FnMut(PaneId) -> Fut,
        Fut: std::future::Future<Output = Result<(), TerminalError>>,
    {
        let mut echoed = Echoed::default();
        let group = match self.broadcast_group_of(pane).await {
            Ok(Some(group)) => group,
            Ok(None) => return echoed,
            Err(e) => {
                echoed.missed.push(format!(
                    "its broadcast group could not be read ({e}): the input reached this session only"
                ));
                return echoed;
            }
        };
        for ((name, peer), owned) in group.sessions.iter().zip(&group.panes).zip(&group.owned) {
            if peer == pane {
                continue;
            }
            if !owned {
                echoed.missed.push(format!(
                    "{name}: not a cohort session (adopt it to type into it)"
                ));
                continue;
            }
            match type_into(peer.clone()).await {
                Ok(()) => echoed.reached.push(name.clone()),
                Err(e) => echoed.missed.push(format!("{name}: {e}")),
            }
        }
        echoed
    }

    /// Types `text` into `pane` ([`Terminal::send`]) and, unless `alone`, into the
    /// other members of its broadcast group.
    pub async fn send_with_group(
        &self,
        pane: &PaneId,
        text: &str,
        options: &input::SendOptions,
        caller: &input::Caller,
        alone: bool,
    ) -> Result<Echoed, TerminalError> {
        self.with_group(pane, alone, |into| async move {
            self.send(&into, text, options, caller).await.map(|_| ())
        })
        .await
    }

    /// Presses `keys` in `pane` ([`Terminal::keys`]) and, unless `alone`, in the
    /// other members of its broadcast group.
    pub async fn keys_with_group(
        &self,
        pane: &PaneId,
        keys: &[cohort_backends::Key],
        caller: &input::Caller,
        alone: bool,
    ) -> Result<Echoed, TerminalError> {
        self.with_group(pane, alone, |into| async move {
            self.keys(&into, keys, caller, false).await
        })
        .await
    }

    /// Types with `type_into` into `pane` (its failure is the call's) and, unless
    /// `alone`, into the other members of its group ([`Terminal::echo_to_group`]).
    async fn with_group<F, Fut>(
        &self,
        pane: &PaneId,
        alone: bool,
        mut type_into: F,
    ) -> Result<Echoed, TerminalError>
    where
        F: FnMut(PaneId) -> Fut,
        Fut: std::future::Future<Output = Result<(), TerminalError>>,
    {
        type_into(pane.clone()).await?;
        if alone {
            return Ok(Echoed::default());
        }
        Ok(self.echo_to_group(pane, type_into).await)
    }

    /// The group `pane` is in, by its members' names.
    pub async fn broadcast_group_of(
        &self,
        pane: &PaneId,
    ) -> Result<Option<BroadcastGroup>, TerminalError> {
        // Most panes are in no group: asked of the pane alone, every send and key
        // costs one look instead of a listing of every group.
        if !self.backend.capabilities().broadcast_input
            || !self.backend.in_broadcast_group(pane).await?
        {
            return Ok(None);
        }
        Ok(self
            .broadcast_groups()
            .await?
            .into_iter()
            .find(|g| g.panes.contains(pane)))
    }
}

/// `group` with its members' names.
fn named(group: Vec<PaneId>, panes: &[PaneInfo]) -> BroadcastGroup {
    let (sessions, owned) = group
        .iter()
        .map(|id| match panes.iter().find(|p| &p.id == id) {
            Some(p) if p.identity.is_some() => (session_name(p), true),
            _ => (id.to_string(), false),
        })
        .unzip();
    BroadcastGroup {
        sessions,
        panes: group,
        owned,
    }
}
