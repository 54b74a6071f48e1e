//! Many sessions at once: the same text to many, reads of many, and the broadcast
//! cascade (see [`crate::cascade`]).
//!
//! Each target is answered on its own, in the order given, so one mistyped name
//! does not stop the others; a session reached twice (a team and one of its agents)
//! is written once.

use std::collections::BTreeMap;

use futures_util::future::join_all;
use regex::Regex;

use crate::cascade::cascade;
use crate::Orchestrator;
use cohort_terminal::{
    filtered::FilteredWhat,
    names::{check_opt, NameKind},
    read::{ReadOptions, ReadWhat},
    sessions::session_name,
    targets::ExpandedTarget,
    Caller, Delivery, SendOptions, TerminalError,
};

/// How [`Orchestrator::read_many`] reads each session.
#[derive(Clone, Debug)]
pub enum ManyRead {
    /// What is new since `caller`'s last read.
    New,
    /// The last lines.
    Tail,
    /// The rendered screen.
    Screen,
}

impl Orchestrator {
    /// The targets, expanded, unless none names a session: then the first reason is
    /// the call's error.
    async fn expand_somewhere(
        &self,
        targets: &[String],
    ) -> Result<Vec<ExpandedTarget>, TerminalError> {
        if targets.is_empty() {
            return Err(TerminalError::InvalidArgument(
                "no targets: name sessions, agents or teams".into(),
            ));
        }
        let expanded = self.terminal.expand_targets(targets).await?;
        if expanded.iter().all(|(_, pane)| pane.is_err()) {
            if let Some((_, Err(first))) = expanded.into_iter().next() {
                return Err(first);
            }
            return Err(TerminalError::InvalidArgument("no targets".into()));
        }
        Ok(expanded)
    }

    /// Types `text` into every session the targets reach, in parallel.
    pub async fn write_many(
        &self,
        targets: &[String],
        text: &str,
        options: &SendOptions,
        caller: &Caller,
    ) -> Result<Vec<Delivery>, TerminalError> {
        check_opt(NameKind::Owner, caller.owner.as_deref())?;
        let targets = self.expand_somewhere(targets).await?;
        let sends = targets.into_iter().map(|(label, pane)| {
            let (engine, options, text, caller) = (
                self.clone(),
                options.clone(),
                text.to_string(),
                caller.clone(),
            );
            async move {
                let pane = match pane {
                    Ok(pane) => pane,
                    Err(e) => return Delivery::failed(&label, String::new(), e),
                };
                let result = engine
                    .terminal
                    .send(&pane.id, &text, &options, &caller)
                    .await;
                Delivery {
                    target: label,
                    session: session_name(&pane),
                    error: result.err().map(|e| e.to_string()),
                    text: None,
                    meta: None,
                }
            }
        });
        Ok(join_all(sends).await)
    }

    /// Reads every session the targets reach, in parallel: at most `limit` lines each,
    /// only those matching `filter` when given.
    pub async fn read_many(
        &self,
        targets: &[String],
        how: ManyRead,
        caller: &Caller,
        limit: usize,
        filter: Option<&Regex>,
    ) -> Result<Vec<Delivery>, TerminalError> {
        let targets = self.expand_somewhere(targets).await?;
        let reads = targets.into_iter().map(|(label, pane)| {
            let (engine, how, caller, filter) = (
                self.clone(),
                how.clone(),
                caller.connection.clone(),
                filter.cloned(),
            );
            async move {
                let pane = match pane {
                    Ok(pane) => pane,
                    Err(e) => return Delivery::failed(&label, String::new(), e),
                };
                // A filter over output looks at what programs printed, with a cursor
                // of its own (see `cohort_terminal::filtered`).
                if let (Some(re), ManyRead::New | ManyRead::Tail) = (&filter, &how) {
                    let what = match how {
                        ManyRead::Tail => FilteredWhat::Tail,
                        _ => FilteredWhat::New,
                    };
                    let read = engine
                        .terminal
                        .read_filtered(&pane.id, what, &caller, re, limit)
                        .await;
                    return Delivery {
                        target: label,
                        session: session_name(&pane),
                        error: None,
                        text: Some(read.text()),
                        meta: Some(read.meta(re, what)),
                    };
                }
                let read = match how {
                    ManyRead::Screen => engine.terminal.screen(&pane.id).await.map(|s| {
                        (
                            s.rows.join("\n").trim_end().to_string(),
                            format!("[screen {}x{}]", s.size.cols, s.size.rows),
                        )
                    }),
                    ManyRead::New | ManyRead::Tail => {
                        let what = match how {
                            ManyRead::Tail => ReadWhat::Tail(limit as u64),
                            _ => ReadWhat::New,
                        };
                        let out = engine
                            .terminal
                            .read(
                                &pane.id,
                                &ReadOptions {
                                    what,
                                    caller,
                                    raw: false,
                                    max_lines: Some(limit),
                                },
                            )
                            .await;
                        Ok((out.text, out.meta))
                    }
                };
                let (text, meta) = match read {
                    Ok(read) => read,
                    Err(e) => return Delivery::failed(&label, session_name(&pane), e),
                };
                let (text, meta) = match &filter {
                    Some(re) => {
                        let kept: Vec<&str> = text.lines().filter(|l| re.is_match(l)).collect();
                        let meta = format!("{meta} [filter kept {} line(s)]", kept.len());
                        (
                            kept.into_iter().take(limit).collect::<Vec<_>>().join("\n"),
                            meta,
                        )
                    }
                    None => (
                        text.lines().take(limit).collect::<Vec<_>>().join("\n"),
                        meta,
                    ),
                };
                Delivery {
                    target: label,
                    session: session_name(&pane),
                    error: None,
                    text: Some(text),
                    meta: Some(meta),
                }
            }
        });
        Ok(join_all(reads).await)
    }

    /// [`Orchestrator::broadcast`] with messages also addressed through the team tree
    /// (`addressed`: a team, an agent, or a path such as `org/web` or `web/alice`,
    /// with its message). A team or agent given a message both ways is refused.
    pub async fn broadcast_addressed(
        &self,
        message: Option<&str>,
        team_messages: &BTreeMap<String, String>,
        agent_messages: &BTreeMap<String, String>,
        addressed: &[(String, String)],
        options: &SendOptions,
        caller: &Caller,
    ) -> Result<Vec<Delivery>, TerminalError> {
        let (mut teams, mut agents) = (team_messages.clone(), agent_messages.clone());
        if !addressed.is_empty() {
            let (by_team, by_agent) = crate::cascade::sort_messages(
                addressed,
                &self.terminal.teams().await?,
                &self.terminal.agents().await?,
            )
            .map_err(TerminalError::InvalidArgument)?;
            for (map, more, what) in [
                (&mut teams, by_team, "team"),
                (&mut agents, by_agent, "agent"),
            ] {
                for (name, message) in more {
                    if map.insert(name.clone(), message).is_some() {
                        return Err(TerminalError::InvalidArgument(format!(
                            "two messages for {what} {name:?}: in {what}s and in messages; give one"
                        )));
                    }
                }
            }
        }
        self.broadcast(message, &teams, &agents, options, caller)
            .await
    }

    /// Sends messages to registered agents with the cascade: an agent's own message
    /// beats its team's (the nearest team up the hierarchy), which beats `message`.
    /// Every agent gets at most one message; a session shared by several agents gets
    /// the same message once.
    pub async fn broadcast(
        &self,
        message: Option<&str>,
        team_messages: &BTreeMap<String, String>,
        agent_messages: &BTreeMap<String, String>,
        options: &SendOptions,
        caller: &Caller,
    ) -> Result<Vec<Delivery>, TerminalError> {
        check_opt(NameKind::Owner, caller.owner.as_deref())?;
        if message.is_none() && team_messages.is_empty() && agent_messages.is_empty() {
            return Err(TerminalError::InvalidArgument(
                "nothing to send: give message, teams or agents".into(),
            ));
        }
        let agents = self.terminal.agents().await?;
        let teams = self.terminal.teams().await?;
        if let Some(name) = agent_messages
            .keys()
            .find(|n| !agents.iter().any(|a| &a.name == *n))
        {
            return Err(TerminalError::InvalidArgument(format!(
                "no agent named {name:?}: register it first (list_agents shows who exists)"
            )));
        }
        if let Some(name) = team_messages
            .keys()
            .find(|n| !teams.iter().any(|t| &t.name == *n))
        {
            return Err(TerminalError::InvalidArgument(format!(
                "no team named {name:?}: create it first (list_teams shows what exists)"
            )));
        }
        let chosen = cascade(&agents, &teams, message, team_messages, agent_messages);
        let panes = self.terminal.list().await?;
        let mut seen = std::collections::BTreeSet::new();
        let mut jobs = Vec::new();
        let mut results = Vec::new();
        for (agent, (message, level)) in chosen {
            let session = agents
                .iter()
                .find(|a| a.name == agent)
                .and_then(|a| a.session.clone());
            let Some(pane) = session
                .as_deref()
                .and_then(|s| cohort_terminal::resolve_target(&panes, s))
                .cloned()
            else {
                results.push(Delivery {
                    target: agent,
                    session: session.unwrap_or_default(),
                    error: Some("the agent has no open session".into()),
                    text: Some(message),
                    meta: Some(level.into()),
                });
                continue;
            };
            if !seen.insert((pane.id.clone(), message.clone())) {
                // The same message to the same session goes once; the agent is still
                // answered for.
                results.push(Delivery {
                    target: agent,
                    session: session_name(&pane),
                    error: None,
                    text: Some(message),
                    meta: Some(format!(
                        "{level}; its session already got this message from another agent's entry: sent once"
                    )),
                });
                continue;
            }
            let (engine, options, caller) = (self.clone(), options.clone(), caller.clone());
            jobs.push(async move {
                let result = engine
                    .terminal
                    .send(&pane.id, &message, &options, &caller)
                    .await;
                Delivery {
                    target: agent,
                    session: session_name(&pane),
                    error: result.err().map(|e| e.to_string()),
                    text: Some(message),
                    meta: Some(level.into()),
                }
            });
        }
        results.extend(join_all(jobs).await);
        Ok(results)
    }
}
