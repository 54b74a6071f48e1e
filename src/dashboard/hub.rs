//! The dashboard's feed: follows [`Terminal::events`](cohort_terminal::Terminal::events) and pushes what changed to every
//! open page. Output in a pane makes its screen due; anything else (a command
//! starting or ending, a session opening or closing, a lock, a notification, an
//! agent's state) makes the whole view due. Each pane's screen goes out at most every
//! [`SCREEN_INTERVAL`], the view at most every [`VIEW_INTERVAL`], and nothing is
//! captured while no page is open. Nothing polls: without events, nothing happens.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use cohort_backends::PaneId;
use tokio::sync::broadcast;
use tokio::time::Instant;

use super::view::{self, AgentStates};
use crate::engine::Engine;
use cohort_terminal::events::EngineEvent;

/// The shortest time between two screens of one pane sent to the pages.
pub const SCREEN_INTERVAL: Duration = Duration::from_millis(100);
/// The shortest time between two views sent to the pages.
pub const VIEW_INTERVAL: Duration = Duration::from_millis(250);
/// How long a first change waits for others to go out with it.
const GATHER: Duration = Duration::from_millis(15);

/// One server-sent event: its name (`view` or `screen`) and JSON data.
#[derive(Clone, Debug)]
pub struct Message {
    /// The event name.
    pub event: &'static str,
    /// Its JSON.
    pub data: Arc<str>,
}

/// The feed shared by every open page.
pub struct Hub {
    engine: Engine,
    sender: broadcast::Sender<Message>,
    input: bool,
}

impl Hub {
    /// Starts following the engine's events.
    pub fn start(engine: Engine, input: bool) -> Arc<Hub> {
        let hub = Arc::new(Hub {
            engine: engine.clone(),
            sender: broadcast::channel(1024).0,
            input,
        });
        tokio::spawn(follow(Arc::downgrade(&hub), engine.terminal.events()));
        hub
    }

    /// What goes to the pages from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Message> {
        self.sender.subscribe()
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Whether the page may type.
    pub fn input(&self) -> bool {
        self.input
    }

    /// The view now, as a message.
    pub async fn view(&self) -> Option<Message> {
        // Agents' states as the engine's bus keeps them (the last of each).
        let states: AgentStates = self
            .engine
            .terminal
            .bus()
            .agent_states()
            .into_iter()
            .map(|(agent, seen)| (agent, (seen.state, seen.reason)))
            .collect();
        match view::build(&self.engine, &states, self.input).await {
            Ok(view) => message("view", &view),
            Err(e) => {
                tracing::warn!(target: "cohort::dashboard", "the view could not be built: {e}");
                None
            }
        }
    }

    /// The screen of `pane` now, as a message (`None` when the pane is gone).
    pub async fn screen(&self, pane: &PaneId) -> Option<Message> {
        let screen = view::screen(&self.engine, pane).await.ok()?;
        message("screen", &screen)
    }

    /// Everything a page needs to start: the view, then every pane's screen.
    pub async fn snapshot(&self) -> Vec<Message> {
        let mut out: Vec<Message> = self.view().await.into_iter().collect();
        let panes = self.engine.terminal.list().await.unwrap_or_default();
        for pane in panes {
            out.extend(self.screen(&pane.id).await);
        }
        out
    }

    fn send(&self, message: Option<Message>) {
        if let Some(message) = message {
            let _ = self.sender.send(message);
        }
    }
}

fn message(event: &'static str, value: &impl serde::Serialize) -> Option<Message> {
    let data = serde_json::to_string(value).ok()?;
    Some(Message {
        event,
        data: data.into(),
    })
}

/// What is due to go out, and when things last went.
#[derive(Default)]
struct Due {
    screens: HashMap<PaneId, Instant>,
    view: Option<Instant>,
    screen_sent: HashMap<PaneId, Instant>,
    view_sent: Option<Instant>,
}

impl Due {
    fn screen(&mut self, pane: PaneId, now: Instant) {
        let at = match self.screen_sent.get(&pane) {
            Some(sent) => (*sent + SCREEN_INTERVAL).max(now + GATHER),
            None => now + GATHER,
        };
        self.screens.entry(pane).or_insert(at);
    }

    fn view(&mut self, now: Instant) {
        if self.view.is_none() {
            self.view = Some(match self.view_sent {
                Some(sent) => (sent + VIEW_INTERVAL).max(now + GATHER),
                None => now + GATHER,
            });
        }
    }

    fn next(&self) -> Option<Instant> {
        self.screens.values().copied().chain(self.view).min()
    }
}

/// Follows the engine's events for as long as the hub is in use.
async fn follow(hub: Weak<Hub>, mut events: broadcast::Receiver<EngineEvent>) {
    let mut due = Due::default();
    loop {
        let next = due.next();
        let event = tokio::select! {
            event = events.recv() => Some(event),
            _ = sleep_until(next) => None,
        };
        let Some(hub) = hub.upgrade() else { return };
        let now = Instant::now();
        match event {
            Some(Ok(event)) => match &event {
                EngineEvent::Output { pane, .. } => due.screen(pane.clone(), now),
                EngineEvent::SessionClosed { pane, .. } => {
                    due.screens.remove(pane);
                    due.screen_sent.remove(pane);
                    due.view(now);
                }
                other => {
                    if let Some(pane) = other.pane() {
                        due.screen(pane.clone(), now);
                    }
                    due.view(now);
                }
            },
            Some(Err(broadcast::error::RecvError::Lagged(_))) => {
                // Missed events: look at everything again.
                for pane in hub.engine.terminal.list().await.unwrap_or_default() {
                    due.screen(pane.id, now);
                }
                due.view(now);
            }
            Some(Err(broadcast::error::RecvError::Closed)) => return,
            None => {}
        }
        let watched = hub.sender.receiver_count() > 0;
        let ready: Vec<PaneId> = due
            .screens
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(pane, _)| pane.clone())
            .collect();
        for pane in ready {
            due.screens.remove(&pane);
            if watched {
                due.screen_sent.insert(pane.clone(), now);
                hub.send(hub.screen(&pane).await);
            }
        }
        if due.view.is_some_and(|at| at <= now) {
            due.view = None;
            if watched {
                due.view_sent = Some(now);
                hub.send(hub.view().await);
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
