//! Broadcast input on iTerm2: its broadcast domains, with cohort's groups also kept
//! in each member's `user.cohortBroadcast` variable.
//!
//! iTerm2 reports one domain per window (the one holding the window's focused
//! session), and SetBroadcastDomains replaces them all. So cohort reads its groups
//! from the variables, and when it changes them it sends its groups together with
//! the domains iTerm2 reports that hold none of cohort's sessions (a person's own
//! broadcasting, as far as iTerm2 tells it). cohort's own typing never broadcasts:
//! every SendText suppresses it.

use std::collections::HashMap;

use crate::error::{BackendError, Result};
use crate::types::PaneId;

use super::layout::sessions_of;
use super::proto::client_originated_message::Submessage as Req;
use super::proto::server_originated_message::Submessage as Rep;
use super::proto::*;
use super::requests::{check_session_id, list_sessions, parse_variables, unexpected, variable_get};
use super::Iterm2Backend;

/// The session variable naming a session's broadcast group.
const GROUP_VARIABLE: &str = "user.cohortBroadcast";

impl Iterm2Backend {
    /// Every session's group mark, in the order iTerm2 lists the sessions.
    async fn marks(&self) -> Result<Vec<(PaneId, Option<String>)>> {
        let conn = self.conn().await?;
        let layout = list_sessions(&conn).await?;
        let mut ids = Vec::new();
        for window in &layout.windows {
            for tab in &window.tabs {
                let mut sessions = Vec::new();
                if let Some(root) = &tab.root {
                    sessions_of(root, &mut sessions);
                }
                ids.extend(sessions.into_iter().filter_map(|s| s.unique_identifier));
            }
        }
        ids.extend(
            layout
                .buried_sessions
                .into_iter()
                .filter_map(|s| s.unique_identifier),
        );
        let mut pending = Vec::new();
        for id in ids {
            let asked = conn.send(variable_get(
                variable_request::Scope::SessionId(id.clone()),
                &[GROUP_VARIABLE],
            ))?;
            pending.push((PaneId(id), asked));
        }
        let mut marks = Vec::new();
        for (pane, asked) in pending {
            match parse_variables(&pane, 1, asked.wait().await?) {
                Ok(mut values) => marks.push((pane, values.remove(0).filter(|v| !v.is_empty()))),
                // Closed meanwhile: in no group.
                Err(BackendError::PaneGone(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(marks)
    }

    /// Whether `pane` carries a group mark: one variable read, where listing the
    /// groups reads every session's.
    pub(super) async fn in_group(&self, pane: &PaneId) -> Result<bool> {
        check_session_id(pane)?;
        match self.variables(pane, &[GROUP_VARIABLE]).await {
            Ok(mark) => Ok(mark.into_iter().flatten().any(|m| !m.is_empty())),
            // Closed meanwhile: in no group, as a listing would say.
            Err(BackendError::PaneGone(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// cohort's groups, from the marks.
    pub(super) async fn groups(&self) -> Result<Vec<Vec<PaneId>>> {
        let mut groups: Vec<(String, Vec<PaneId>)> = Vec::new();
        for (pane, mark) in self.marks().await? {
            let Some(mark) = mark else { continue };
            match groups.iter_mut().find(|(g, _)| *g == mark) {
                Some((_, panes)) => panes.push(pane),
                None => groups.push((mark, vec![pane])),
            }
        }
        Ok(groups.into_iter().map(|(_, panes)| panes).collect())
    }

    /// Makes `groups` cohort's groups: the domains first (iTerm2 checks them), then
    /// the marks.
    pub(super) async fn set_groups(&self, groups: &[Vec<PaneId>]) -> Result<()> {
        for pane in groups.iter().flatten() {
            check_session_id(pane)?;
        }
        let marks = self.marks().await?;
        let ours = |id: &str| {
            groups.iter().flatten().any(|p| p.as_str() == id)
                || marks.iter().any(|(p, m)| m.is_some() && p.as_str() == id)
        };
        let mut domains: Vec<BroadcastDomain> = groups
            .iter()
            .map(|g| BroadcastDomain {
                session_ids: g.iter().map(|p| p.0.clone()).collect(),
            })
            .collect();
        let reported = match self
            .call(Req::GetBroadcastDomainsRequest(
                GetBroadcastDomainsRequest {},
            ))
            .await?
        {
            Rep::GetBroadcastDomainsResponse(r) => r.broadcast_domains,
            other => return Err(unexpected("GetBroadcastDomains", &other)),
        };
        domains.extend(
            reported
                .into_iter()
                .filter(|d| d.session_ids.len() > 1 && !d.session_ids.iter().any(|s| ours(s))),
        );
        let reply = self
            .call(Req::SetBroadcastDomainsRequest(
                SetBroadcastDomainsRequest {
                    broadcast_domains: domains,
                },
            ))
            .await?;
        use set_broadcast_domains_response::Status;
        match reply {
            Rep::SetBroadcastDomainsResponse(r) => match r.status() {
                Status::Ok => {}
                Status::SessionNotFound => {
                    return Err(BackendError::InvalidArgument(
                        "a session of the broadcast groups is gone: list sessions and group those that exist".into(),
                    ))
                }
                Status::BroadcastDomainsNotDisjoint => {
                    return Err(BackendError::InvalidArgument(
                        "a session is in two broadcast groups: a session's typing goes to one group".into(),
                    ))
                }
                Status::SessionsNotInSameWindow => {
                    return Err(BackendError::InvalidArgument(
                        "the sessions of a broadcast group are in different windows: iTerm2 broadcasts typing only among the sessions of one window; put them in one window first (split or create_layout)".into(),
                    ))
                }
            },
            other => return Err(unexpected("SetBroadcastDomains", &other)),
        }
        let mut wanted: HashMap<&str, String> = HashMap::new();
        for group in groups {
            // Named after its first session, unique while that session lives.
            let name = format!("g{}", group[0].as_str());
            for pane in group {
                wanted.insert(pane.as_str(), name.clone());
            }
        }
        for (pane, mark) in &marks {
            let now = wanted.remove(pane.as_str());
            if now.as_ref() != mark.as_ref() {
                let value = match now {
                    Some(name) => serde_json::Value::String(name).to_string(),
                    None => "null".to_string(),
                };
                self.set_variables(pane, &[(GROUP_VARIABLE, value)]).await?;
            }
        }
        for (pane, name) in wanted {
            let value = serde_json::Value::String(name).to_string();
            self.set_variables(&PaneId(pane.to_string()), &[(GROUP_VARIABLE, value)])
                .await?;
        }
        Ok(())
    }
}
