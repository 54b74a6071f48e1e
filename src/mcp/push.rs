//! Push for hosts that take it: resources for agents' states and the notification
//! queue, and updates sent to clients subscribed to resources.
//!
//! Subscriptions come two ways: `resources/subscribe` (protocols up to
//! 2025-11-25) adds a URI to the connection's set, and `subscriptions/listen`
//! (2026-07-28) holds a stream open for the URIs it names. Either way one task
//! follows the engine's event stream and sends `notifications/resources/updated`
//! when something a URI shows changed: new output or a command's end for a
//! session's output and screen, an agent's state for `agents://status`, a
//! notification for a reader's queue. Updates for one URI are sent at most every
//! [`COALESCE`], the last change always arriving.
//!
//! Many hosts drop these updates today; the blocking `wait_for` and
//! `notifications` with `wait` are the paths that always work.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cohort_backends::PaneId;
use rmcp::model::{ReadResourceResult, ResourceContents};
use rmcp::ErrorData as McpError;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use crate::engine::Engine;
use cohort_orchestration::registry::EVERYONE;
use cohort_terminal::events::EngineEvent;

/// The shortest time between two updates of one URI.
pub const COALESCE: Duration = Duration::from_millis(50);

/// What a subscribed URI shows.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Interest {
    /// A session's output or screen.
    Pane(PaneId),
    /// Every session.
    Sessions,
    /// Agents' states.
    AgentStatus,
    /// One reader's notifications.
    Queue(String),
}

/// A connection's subscriptions.
#[derive(Debug, Default)]
pub struct Subscriptions {
    uris: Mutex<HashMap<String, Interest>>,
    started: std::sync::OnceLock<()>,
}

impl Subscriptions {
    fn snapshot(&self) -> Vec<(String, Interest)> {
        self.uris
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(u, i)| (u.clone(), i.clone()))
            .collect()
    }

    /// Forgets `uri`.
    pub fn remove(&self, uri: &str) {
        self.uris
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(uri);
    }
}

/// What `uri` shows, or why it cannot be subscribed to.
async fn interest(engine: &Engine, uri: &str) -> Result<Interest, McpError> {
    match uri {
        "terminal://sessions" => return Ok(Interest::Sessions),
        "agents://status" => return Ok(Interest::AgentStatus),
        _ => {}
    }
    if let Some(owner) = uri.strip_prefix("notifications://") {
        return Ok(Interest::Queue(
            super::resources::decode_segment(owner).unwrap_or_default(),
        ));
    }
    let not = || {
        McpError::invalid_params(
            format!("{uri:?} cannot be subscribed to: subscribe to terminal://<name>/output, terminal://<name>/screen, terminal://sessions, agents://status or notifications://<owner>"),
            None,
        )
    };
    let rest = uri.strip_prefix("terminal://").ok_or_else(not)?;
    let (segment, kind) = rest.rsplit_once('/').ok_or_else(not)?;
    if kind != "output" && kind != "screen" {
        return Err(not());
    }
    let name = super::resources::decode_segment(segment).ok_or_else(not)?;
    let pane = engine
        .terminal
        .resolve(&name)
        .await
        .map_err(|e| McpError::resource_not_found(e.to_string(), None))?;
    Ok(Interest::Pane(pane.id))
}

/// Which subscribed URIs `event` changes.
fn touched(event: &EngineEvent, uris: &[(String, Interest)]) -> Vec<String> {
    uris.iter()
        .filter(|(_, interest)| match (interest, event) {
            (Interest::Pane(p), e) => e.pane() == Some(p),
            (
                Interest::Sessions,
                EngineEvent::SessionOpened { .. }
                | EngineEvent::SessionClosed { .. }
                | EngineEvent::PaneExited { .. },
            ) => true,
            (
                Interest::AgentStatus,
                EngineEvent::AgentState { .. } | EngineEvent::CommandEnded { .. },
            ) => true,
            (Interest::Queue(owner), EngineEvent::Notification { to, .. }) => {
                to == owner || to == EVERYONE
            }
            _ => false,
        })
        .map(|(uri, _)| uri.clone())
        .collect()
}

/// Sends updates for `uris` (read afresh at every event) through `send` until it
/// fails or the stream ends.
async fn pump<F, Fut>(engine: Engine, uris: impl Fn() -> Vec<(String, Interest)>, send: F)
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut events = engine.terminal.events();
    let mut last: HashMap<String, Instant> = HashMap::new();
    let mut dirty: HashSet<String> = HashSet::new();
    loop {
        let flush_at = dirty
            .iter()
            .filter_map(|u| last.get(u))
            .map(|t| *t + COALESCE)
            .min();
        let event = tokio::select! {
            e = events.recv() => Some(e),
            _ = tokio::time::sleep_until(flush_at.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600))), if flush_at.is_some() => None,
        };
        let mut due: Vec<String> = Vec::new();
        match event {
            Some(Ok(event)) => {
                for uri in touched(&event, &uris()) {
                    match last.get(&uri) {
                        Some(t) if t.elapsed() < COALESCE => {
                            dirty.insert(uri);
                        }
                        _ => due.push(uri),
                    }
                }
            }
            Some(Err(RecvError::Lagged(_))) => due.extend(uris().into_iter().map(|(u, _)| u)),
            Some(Err(RecvError::Closed)) => return,
            None => {}
        }
        let now = Instant::now();
        dirty.retain(|uri| {
            let ready = last.get(uri).is_none_or(|t| now >= *t + COALESCE);
            if ready {
                due.push(uri.clone());
            }
            !ready
        });
        for uri in due {
            last.insert(uri.clone(), Instant::now());
            if !send(uri).await {
                return;
            }
        }
    }
}

/// Adds `uri` to the connection's subscriptions and makes sure its updates flow.
pub async fn subscribe(
    engine: &Engine,
    subs: &Arc<Subscriptions>,
    uri: &str,
    peer: rmcp::Peer<rmcp::RoleServer>,
) -> Result<(), McpError> {
    let interest = interest(engine, uri).await?;
    subs.uris
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(uri.to_string(), interest);
    if subs.started.set(()).is_ok() {
        let list = subs.clone();
        tokio::spawn(pump(
            engine.clone(),
            move || list.snapshot(),
            move |uri| {
                let peer = peer.clone();
                async move {
                    peer.notify_resource_updated(
                        rmcp::model::ResourceUpdatedNotificationParam::new(uri),
                    )
                    .await
                    .is_ok()
                }
            },
        ));
    }
    Ok(())
}

/// Serves one `subscriptions/listen` stream until it is cancelled.
pub async fn listen(
    engine: &Engine,
    context: rmcp::service::SubscriptionContext,
) -> Result<(), McpError> {
    let mut uris = Vec::new();
    for uri in context
        .accepted()
        .resource_subscriptions
        .clone()
        .unwrap_or_default()
    {
        uris.push((uri.clone(), interest(engine, &uri).await?));
    }
    let sink = context.sink().clone();
    tokio::select! {
        _ = context.cancelled() => {}
        _ = pump(engine.clone(), move || uris.clone(), move |uri| {
            let sink = sink.clone();
            async move { sink.notify_resource_updated(uri).await.is_ok() }
        }) => {}
    }
    Ok(())
}

/// Reads `agents://status` or `notifications://<owner>`; `None` for other URIs.
pub async fn read(engine: &Engine, uri: &str) -> Option<Result<ReadResourceResult, McpError>> {
    let internal =
        |e: cohort_terminal::TerminalError| McpError::internal_error(e.to_string(), None);
    let text = |body: String| {
        ReadResourceResult::new(vec![
            ResourceContents::text(body, uri.to_string()).with_mime_type("text/plain")
        ])
    };
    if uri == "agents://status" {
        return Some(
            engine
                .orchestrator
                .agent_statuses()
                .await
                .map_err(internal)
                .map(|all| {
                    let lines: Vec<String> = all.iter().map(|s| s.line()).collect();
                    text(if lines.is_empty() {
                        "no agents registered".into()
                    } else {
                        lines.join("\n")
                    })
                }),
        );
    }
    let owner = uri.strip_prefix("notifications://")?;
    let owner = super::resources::decode_segment(owner).unwrap_or_default();
    Some(
        engine
            .orchestrator
            .notifications_for(&owner, true, None)
            .await
            .map_err(internal)
            .map(|all| {
                let keep = all.len().saturating_sub(50);
                let lines: Vec<String> = all[keep..]
                    .iter()
                    .map(|n| {
                        format!(
                            "#{} {} from {} ({}): {}",
                            n.id,
                            cohort_orchestration::notify::ago(n.created),
                            n.source,
                            n.kind,
                            n.message
                        )
                    })
                    .collect();
                text(if lines.is_empty() {
                    format!("no notifications for {owner}")
                } else {
                    lines.join("\n")
                })
            }),
    )
}
