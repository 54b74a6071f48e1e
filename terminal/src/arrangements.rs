//! Arrangements: the windows of some sessions (their split trees with sizes, and
//! each pane's name, agent, team, working directory and the command it was opened
//! with) saved under a name in the registry, and opened again from it later — by
//! this process or another, after the sessions were closed or the machine
//! restarted. The record is cohort's own, read from the terminal's layout, so both
//! backends save and restore alike. A hidden session is in no window a person sees,
//! and is not saved.
//!
//! Where the terminal keeps arrangements of its own
//! ([`Capabilities::native_arrangements`](cohort_backends::Capabilities), iTerm2), the
//! windows are saved there too as `cohort NAME`, for a person to restore from the
//! terminal's menu without cohort; cohort's own restore reads its record, which
//! keeps what the terminal's does not (identities, agents, commands).

use std::collections::BTreeSet;

use cohort_backends::{LayoutNode, PaneInfo, SplitDirection, WindowId};
use serde::{Deserialize, Serialize};

use crate::layout::{Child, Direction, SplitTree};
use crate::names::{self, NameKind};
use crate::ready::LaidOut;
use crate::sessions::LayoutPane;
use crate::{Terminal, TerminalError};

/// A saved arrangement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arrangement {
    /// Its name.
    pub name: String,
    /// Its windows, in the order they were saved.
    pub windows: Vec<ArrangedWindow>,
    /// The names the terminal keeps it under as its own arrangement (iTerm2's
    /// Window › Restore Window Arrangement); empty elsewhere.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub native: Vec<String>,
}

/// The name the terminal's own copy of the arrangement `name` goes by (its
/// second and later windows' copies add ` (2)`, ` (3)`…).
pub fn native_name(name: &str) -> String {
    format!("cohort {name}")
}

/// What a save did: the arrangement saved, and what did not go as asked.
#[derive(Clone, Debug)]
pub struct Saved {
    /// The arrangement as saved.
    pub arrangement: Arrangement,
    /// The terminal's own copy failed or left an older copy behind.
    pub notices: Vec<String>,
}

/// Whether `name` ends as the copies of a second window are told apart, ` (N)`.
fn ends_numbered(name: &str) -> bool {
    name.strip_suffix(')')
        .and_then(|rest| rest.rsplit_once(" ("))
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// One window of an arrangement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArrangedWindow {
    /// The window's name.
    pub name: String,
    /// Its split tree; leaf `i` is `panes[i]`.
    pub tree: SplitTree,
    /// Its panes in reading order.
    pub panes: Vec<ArrangedPane>,
}

/// One pane of an arranged window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArrangedPane {
    /// Session name.
    pub name: String,
    /// Its agent.
    pub agent: Option<String>,
    /// That agent's team.
    pub team: Option<String>,
    /// The directory its program was in.
    pub cwd: Option<String>,
    /// The command it was opened with; a shell when `None`.
    pub command: Option<String>,
}

impl Terminal {
    /// Saves the windows holding the sessions `targets` name (names, ids, agents,
    /// teams, tags) as the arrangement `name`, replacing one saved before.
    /// Every pane of those windows must be a cohort session. The terminal's own
    /// copy is a convenience for a person: when it fails, cohort's record is
    /// saved all the same and the notices say what went wrong.
    pub async fn save_arrangement(
        &self,
        name: &str,
        targets: &[String],
    ) -> Result<Saved, TerminalError> {
        names::check(NameKind::Arrangement, name)?;
        if ends_numbered(name) {
            return Err(TerminalError::InvalidArgument(format!(
                "the arrangement name {name:?} ends as the terminal's copies of a second window are told apart (\" (2)\"): drop the number in brackets or write it another way"
            )));
        }
        let chosen = self.expand_targets_or_refuse(targets).await?;
        let mut wanted: Vec<WindowId> = Vec::new();
        for (_, pane) in &chosen {
            if !wanted.contains(&pane.window) {
                wanted.push(pane.window.clone());
            }
        }
        let windows = self.backend.list_windows().await?;
        let panes = self.list_all().await?;
        let mut arranged = Vec::new();
        let mut saved_windows = Vec::new();
        for id in wanted {
            let window = windows.iter().find(|w| w.id == id).ok_or_else(|| {
                TerminalError::InvalidArgument(format!(
                    "window {id} is gone (a hidden session has no window to save): list sessions and try again"
                ))
            })?;
            let order: Vec<&PaneInfo> = window
                .layout
                .panes()
                .into_iter()
                .map(|p| {
                    panes.iter().find(|info| &info.id == p).ok_or_else(|| {
                        TerminalError::InvalidArgument(format!("pane {p} of window {id} is gone"))
                    })
                })
                .collect::<Result<_, _>>()?;
            // A hidden session is out of the person's windows: not part of one.
            let order: Vec<&PaneInfo> = order.into_iter().filter(|p| !p.hidden).collect();
            if order.is_empty() {
                continue;
            }
            let mut arranged_panes = Vec::new();
            for pane in &order {
                let Some(identity) = &pane.identity else {
                    return Err(TerminalError::InvalidArgument(format!(
                        "window {:?} holds pane {}, which is not a cohort session: adopt it first, or move it out of the window",
                        window.name, pane.id
                    )));
                };
                let state = self.backend.pane_state(&pane.id).await?;
                let id = identity.id.clone();
                let command = self.db(move |r| r.session_command(&id)).await?;
                arranged_panes.push(ArrangedPane {
                    name: identity.name.clone(),
                    agent: identity.agent.clone(),
                    team: identity.team.clone(),
                    cwd: state.cwd,
                    command,
                });
            }
            let leaves: Vec<&cohort_backends::PaneId> = order.iter().map(|p| &p.id).collect();
            let tree = tree_of(&window.layout, &leaves);
            tree.validate().map_err(|why| {
                TerminalError::InvalidArgument(format!(
                    "window {:?} cannot be saved as it is ({why})",
                    window.name
                ))
            })?;
            arranged.push(ArrangedWindow {
                name: window.name.clone(),
                tree,
                panes: arranged_panes,
            });
            saved_windows.push(id);
        }
        let mut notices = Vec::new();
        let native = if self.backend.capabilities().native_arrangements && !saved_windows.is_empty()
        {
            match self
                .backend
                .save_native_arrangement(&saved_windows, &native_name(name))
                .await
            {
                Ok(native) => native,
                Err(e) => {
                    notices.push(format!(
                        "the terminal did not keep its own copy ({e}); cohort's record is saved and restores as usual"
                    ));
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        if let Ok(before) = self.arrangement(name).await {
            let stale: Vec<&str> = before
                .native
                .iter()
                .filter(|n| !native.contains(n))
                .map(String::as_str)
                .collect();
            if !stale.is_empty() {
                notices.push(format!(
                    "the terminal still holds {} from an earlier save of {name:?}: its Arrangements settings delete it",
                    stale.join(", ")
                ));
            }
        }
        let arrangement = Arrangement {
            name: name.to_string(),
            windows: arranged,
            native,
        };
        let body = serde_json::to_string(&arrangement)
            .map_err(|e| TerminalError::Internal(format!("an arrangement as JSON: {e}")))?;
        let key = name.to_string();
        self.db(move |r| r.save_arrangement(&key, &body)).await?;
        Ok(Saved {
            arrangement,
            notices,
        })
    }

    /// Opens the arrangement `name` again: each window with its panes, sizes, names,
    /// agents, teams, directories and commands. Refused, before anything opens, when
    /// a session of it is open (close it first).
    pub async fn restore_arrangement(&self, name: &str) -> Result<Vec<LaidOut>, TerminalError> {
        let arrangement = self.arrangement(name).await?;
        let open: BTreeSet<String> = self
            .list()
            .await?
            .iter()
            .filter_map(|p| p.identity.as_ref().map(|i| i.name.clone()))
            .collect();
        let clashing: Vec<&str> = arrangement
            .windows
            .iter()
            .flat_map(|w| &w.panes)
            .map(|p| p.name.as_str())
            .filter(|n| open.contains(*n))
            .collect();
        if !clashing.is_empty() {
            return Err(TerminalError::InvalidArgument(format!(
                "the arrangement {name:?} has sessions that are open now ({}): close them first",
                clashing.join(", ")
            )));
        }
        // Everything is checked before anything opens: a window name in use now, a
        // directory gone since (its pane starts in the default one).
        let windows: BTreeSet<String> = self
            .backend
            .list_windows()
            .await?
            .into_iter()
            .map(|w| w.name)
            .collect();
        if let Some(taken) = arrangement
            .windows
            .iter()
            .find(|w| windows.contains(&w.name))
        {
            return Err(TerminalError::InvalidArgument(format!(
                "a window named {:?} is open now: close it or rename it first",
                taken.name
            )));
        }
        let mut opened = Vec::new();
        for window in &arrangement.windows {
            let panes: Vec<LayoutPane> = window
                .panes
                .iter()
                .map(|p| LayoutPane {
                    name: Some(p.name.clone()),
                    agent: p.agent.clone(),
                    team: p.team.clone(),
                    command: p.command.clone(),
                    cwd: p
                        .cwd
                        .clone()
                        .filter(|dir| std::path::Path::new(dir).is_dir()),
                    ..LayoutPane::default()
                })
                .collect();
            opened.push(
                self.create_layout_up(&window.name, &window.tree, &panes)
                    .await?,
            );
        }
        Ok(opened)
    }

    /// The arrangement `name`.
    pub async fn arrangement(&self, name: &str) -> Result<Arrangement, TerminalError> {
        names::check(NameKind::Arrangement, name)?;
        let key = name.to_string();
        let body = self.db(move |r| r.arrangement(&key)).await?.ok_or_else(|| {
            TerminalError::InvalidArgument(format!(
                "no arrangement named {name:?}: list the saved ones with arrange {{\"action\": \"list\"}}"
            ))
        })?;
        serde_json::from_str(&body).map_err(|e| {
            TerminalError::Internal(format!(
                "the saved arrangement {name:?} does not read back: {e}"
            ))
        })
    }

    /// Every saved arrangement, by name; one that does not read back is left out.
    pub async fn arrangements(&self) -> Result<Vec<Arrangement>, TerminalError> {
        let rows = self.db(|r| r.arrangements()).await?;
        Ok(rows
            .into_iter()
            .filter_map(|(_, body)| serde_json::from_str(&body).ok())
            .collect())
    }

    /// The names of the terminal's own saved arrangements (cohort's copies and the
    /// person's), or `None` where the terminal keeps none.
    pub async fn native_arrangements(&self) -> Result<Option<Vec<String>>, TerminalError> {
        if !self.backend.capabilities().native_arrangements {
            return Ok(None);
        }
        Ok(Some(self.backend.native_arrangements().await?))
    }

    /// Deletes cohort's record of the arrangement `name` (the terminal's own copy
    /// stays: iTerm2's Arrangements settings delete it); false when there was none.
    pub async fn delete_arrangement(&self, name: &str) -> Result<bool, TerminalError> {
        names::check(NameKind::Arrangement, name)?;
        let key = name.to_string();
        self.db(move |r| r.delete_arrangement(&key)).await
    }
}

/// The split tree of `node`, its leaves numbered by their place in `leaves`, each
/// child but the last with its share of its parent in percent.
fn tree_of(node: &LayoutNode, leaves: &[&cohort_backends::PaneId]) -> SplitTree {
    match node {
        LayoutNode::Pane { id, .. } => SplitTree::Pane {
            pane: leaves.iter().position(|l| *l == id).unwrap_or(0),
        },
        LayoutNode::Split {
            direction,
            rect,
            children,
        } => {
            let whole = |r: &cohort_backends::Rect| match direction {
                SplitDirection::Horizontal => r.cols,
                SplitDirection::Vertical => r.rows,
            };
            let total = whole(rect).max(1) as u32;
            let last = children.len().saturating_sub(1);
            SplitTree::Split {
                split: match direction {
                    SplitDirection::Horizontal => Direction::Horizontal,
                    SplitDirection::Vertical => Direction::Vertical,
                },
                // The last child takes what the others leave, so the shares add up.
                children: children
                    .iter()
                    .enumerate()
                    .map(|(i, c)| Child {
                        tree: tree_of(c, leaves),
                        size: (i < last)
                            .then(|| (whole(&c.rect()) as u32 * 100 / total).clamp(1, 99) as u8),
                    })
                    .collect(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ends_numbered;

    #[test]
    fn numbered_names_are_those_of_later_windows() {
        assert!(ends_numbered("desk (2)"));
        assert!(ends_numbered("desk (12)"));
        assert!(!ends_numbered("desk"));
        assert!(!ends_numbered("desk ()"));
        assert!(!ends_numbered("desk (two)"));
        assert!(!ends_numbered("desk(2)"));
        assert!(!ends_numbered("(2)"));
    }
}
