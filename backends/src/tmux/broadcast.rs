//! Broadcast input on tmux: a group's panes carry `synchronize-panes` (a pane option
//! since tmux 3.2), so what a person types into one reaches the others of its window,
//! and the `@cohort_broadcast` pane option naming their group, so every cohort
//! process sees the same groups.
//!
//! tmux sends a key to every synchronised pane of the window, `send-keys` included;
//! so cohort's typing into any pane turns the pane's option off around its keys and
//! then gives it back ([`TmuxBackend::type_alone`]): the pane-level value is
//! dropped, so a window-level one a person set applies again, and a member of a
//! cohort group, found by its mark in the same pipeline, is synchronised again.
//! Nothing is remembered between calls, so what any process knows of the groups
//! does not matter: what cohort types reaches the pane it names and no other.

use super::*;

/// The pane option naming a pane's broadcast group.
const GROUP_OPTION: &str = "@cohort_broadcast";

/// One pane as the broadcast code lists it.
struct Member {
    pane: PaneId,
    window: String,
    group: Option<String>,
}

impl TmuxBackend {
    /// Every pane of cohort's tmux session with its window and group.
    async fn members(&self) -> Result<Vec<Member>> {
        let format = [
            "#{pane_id}",
            "#{window_id}",
            &format!("#{{{GROUP_OPTION}}}"),
        ]
        .join(&SEP.to_string());
        let line = format!(
            "list-panes -s -t {} -F {}",
            quote::single(&format!("={}", self.inner.config.session)),
            quote::arg(&format)
        );
        let reply = self.cmd(&line).await?;
        let members: Vec<Member> = reply
            .lines
            .iter()
            .filter_map(|l| {
                let l = String::from_utf8_lossy(l);
                let mut f = l.split(SEP);
                let pane = PaneId(f.next()?.to_string());
                let window = f.next()?.to_string();
                let group = f.next().filter(|g| !g.is_empty()).map(str::to_string);
                Some(Member {
                    pane,
                    window,
                    group,
                })
            })
            .collect();
        Ok(members)
    }

    /// The groups, from the panes' marks.
    pub(super) async fn groups(&self) -> Result<Vec<Vec<PaneId>>> {
        let mut groups: Vec<(String, Vec<PaneId>)> = Vec::new();
        for member in self.members().await? {
            let Some(group) = member.group else { continue };
            match groups.iter_mut().find(|(g, _)| *g == group) {
                Some((_, panes)) => panes.push(member.pane),
                None => groups.push((group, vec![member.pane])),
            }
        }
        Ok(groups.into_iter().map(|(_, panes)| panes).collect())
    }

    /// Makes `groups` the groups: checked whole first, then set in one pipeline.
    pub(super) async fn set_groups(&self, groups: &[Vec<PaneId>]) -> Result<()> {
        let members = self.members().await?;
        let window_of = |pane: &PaneId| {
            members
                .iter()
                .find(|m| &m.pane == pane)
                .map(|m| m.window.clone())
        };
        let mut windows_taken: Vec<String> = Vec::new();
        let mut grouped: HashSet<&PaneId> = HashSet::new();
        for group in groups {
            if group.len() < 2 {
                return Err(BackendError::InvalidArgument(
                    "a broadcast group needs two panes or more".into(),
                ));
            }
            let mut window = None;
            for pane in group {
                check_pane_id(pane)?;
                let Some(here) = window_of(pane) else {
                    return Err(BackendError::PaneGone(pane.clone()));
                };
                if !grouped.insert(pane) {
                    return Err(BackendError::InvalidArgument(format!(
                        "pane {pane} is in two broadcast groups: a pane's typing goes to one group"
                    )));
                }
                match &window {
                    None => window = Some(here),
                    Some(w) if *w == here => {}
                    Some(_) => {
                        return Err(BackendError::InvalidArgument(format!(
                            "the panes {} are in different windows: tmux broadcasts typing only among the panes of one window; put them in one window first (layout)",
                            names(group)
                        )))
                    }
                }
            }
            let window = window.expect("a group has panes");
            if windows_taken.contains(&window) {
                return Err(BackendError::InvalidArgument(format!(
                    "two broadcast groups in window {window}: tmux sends typing to every synchronised pane of a window, so a window holds one group; move one group to a window of its own"
                )));
            }
            windows_taken.push(window);
        }
        let mut lines = Vec::new();
        for member in &members {
            if member.group.is_some() && !grouped.contains(&member.pane) {
                let pane = &member.pane;
                lines.push(format!("set -p -t {pane} -u {GROUP_OPTION}"));
                // Back to what the window says (a person's own `setw`).
                lines.push(format!("set -p -t {pane} -u synchronize-panes"));
            }
        }
        for group in groups {
            // The group is named after its first pane, unique while the pane lives;
            // never "0", which a tmux condition reads as false.
            let name = format!("g{}", group[0].as_str().trim_start_matches('%'));
            for pane in group {
                lines.push(format!("set -p -t {pane} {GROUP_OPTION} {name}"));
                lines.push(format!("set -p -t {pane} synchronize-panes on"));
            }
        }
        if !lines.is_empty() {
            for reply in self.send_lines(&lines).await? {
                reply?;
            }
        }
        Ok(())
    }
}

impl TmuxBackend {
    /// Sends `lines`, which type into `pane`, so that they reach it alone: the pane's
    /// `synchronize-panes` is off while they run, then its own value is dropped (the
    /// window's applies again), all in one pipeline; a member of a cohort group,
    /// which the pipeline's first line finds, has it set on again after.
    pub(super) async fn type_alone(&self, pane: &PaneId, lines: Vec<String>) -> Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut all = Vec::with_capacity(lines.len() + 3);
        all.push(format!(
            "display -p -t {pane} {}",
            quote::single(&format!("#{{{GROUP_OPTION}}}"))
        ));
        all.push(format!("set -p -t {pane} synchronize-panes off"));
        all.extend(lines);
        all.push(format!("set -p -t {pane} -u synchronize-panes"));
        let replies = self.pane_pipeline(pane, &all).await?;
        let grouped = replies.first().is_some_and(|r| !r.text().trim().is_empty());
        if grouped {
            self.pane_cmd(pane, &format!("set -p -t {pane} synchronize-panes on"))
                .await?;
        }
        Ok(())
    }
}

/// The panes of `group`, for a message.
fn names(group: &[PaneId]) -> String {
    group
        .iter()
        .map(PaneId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}
