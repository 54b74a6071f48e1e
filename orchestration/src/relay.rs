//! Events between cohort processes: what one process publishes that the others
//! cannot see for themselves.
//!
//! Every cohort process on a terminal server sees that server's own events (output,
//! prompt marks, exits) from its backend. What a process decides by itself (a
//! notification, an agent's state, a lock, a session it opened) reaches the others
//! through the relay: each engine binds a datagram socket in `<state>/relay/`, and
//! whatever it publishes of those kinds is sent to every other socket there, where
//! the receiving engine publishes it on its own stream. Received events are never
//! sent on again, so nothing loops; a socket whose process is gone is removed the
//! first time a send finds it dead. Nothing polls: a follower in another process
//! (`cohort events --follow`, a waiting tool) learns of an event the moment it is
//! sent.
//!
//! Any process of the user could send a datagram to those sockets, and a forged
//! agent state could fire a watcher that types a command. So every datagram carries
//! a tag, HMAC-SHA256 under the key the cohort processes of a state directory share
//! (`relay/relay.key`, readable by its owner only; see `cohort_terminal::seal`), and
//! a datagram whose tag does not verify is dropped.

use crate::registry::OrchestrationTables;
use cohort_terminal::{
    events::{EngineEvent, EventBus},
    ids::short_id,
    registry::Registry,
    seal::SealKey,
};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::net::UnixDatagram;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

/// The largest datagram sent (events are small: a notification is at most 4096
/// characters).
const DATAGRAM_MAX: usize = 64 << 10;

/// Received events not yet seen coming back on the local stream.
const INJECTED_MAX: usize = 1024;

/// What travels between processes.
#[derive(Debug, Serialize, Deserialize)]
struct Message {
    /// The sending socket's file name (a process ignores its own).
    origin: String,
    /// The event.
    event: EngineEvent,
}

/// Whether `event` is one a process decides alone (and so must be relayed); the
/// rest every process sees from the terminal server itself.
pub fn relayed(event: &EngineEvent) -> bool {
    matches!(
        event,
        EngineEvent::Notification { .. }
            | EngineEvent::AgentState { .. }
            | EngineEvent::LockChanged { .. }
            | EngineEvent::RecordingChanged { .. }
            | EngineEvent::AppearanceChanged { .. }
            | EngineEvent::SessionOpened { .. }
            | EngineEvent::SessionClosed { .. }
    )
}

/// The length of a datagram's tag (hex), before the newline and the message.
const TAG_LEN: usize = 64;

/// One engine's end of the relay.
#[derive(Debug)]
pub struct Relay {
    dir: PathBuf,
    own: String,
    /// The key every cohort process of this state directory tags its datagrams with.
    key: SealKey,
    /// Events received from others and published locally, in order: the forwarder
    /// skips them when they come round on the local stream.
    injected: Mutex<VecDeque<EngineEvent>>,
}

impl Relay {
    /// Binds this engine's socket under `state_dir/relay` and starts receiving and
    /// forwarding until `stop`. Local agent states are also recorded in `registry`
    /// (the fallback every process reads). `None` when the socket cannot be bound
    /// (the engine works alone then; the reason is logged).
    pub fn start(
        state_dir: &Path,
        bus: &EventBus,
        registry: Arc<Registry>,
        stop: CancellationToken,
    ) -> Option<Arc<Relay>> {
        let dir = state_dir.join("relay");
        let _ = std::fs::create_dir_all(&dir);
        let key = match SealKey::load_or_create(&dir.join("relay.key")) {
            Ok(key) => key,
            Err(e) => {
                tracing::warn!(target: "cohort::relay", "events from other cohort processes will not arrive here: {e}");
                return None;
            }
        };
        let own = format!("{}-{}.sock", std::process::id(), short_id(8));
        let path = dir.join(&own);
        let socket = match UnixDatagram::bind(&path) {
            Ok(socket) => socket,
            Err(e) => {
                tracing::warn!(target: "cohort::relay", "events from other cohort processes will not arrive here: cannot bind {}: {e}", path.display());
                return None;
            }
        };
        let relay = Arc::new(Relay {
            dir,
            own,
            key,
            injected: Mutex::new(VecDeque::new()),
        });
        tokio::spawn(receive(
            relay.clone(),
            socket,
            path,
            bus.clone(),
            stop.clone(),
        ));
        let history = crate::history::History::new(state_dir);
        tokio::spawn(forward(relay.clone(), bus.clone(), registry, history, stop));
        Some(relay)
    }

    /// The message of a datagram whose tag verifies.
    fn opened<'a>(&self, datagram: &'a [u8]) -> Option<&'a [u8]> {
        if datagram.len() <= TAG_LEN || datagram[TAG_LEN] != b'\n' {
            return None;
        }
        let (tag, body) = (&datagram[..TAG_LEN], &datagram[TAG_LEN + 1..]);
        let tag = std::str::from_utf8(tag).ok()?;
        self.key.verify(body, tag).then_some(body)
    }

    /// Notes an event received from another process, just before it is published.
    fn injected(&self, event: &EngineEvent) {
        let mut queue = self.injected.lock().unwrap_or_else(|e| e.into_inner());
        queue.push_back(event.clone());
        while queue.len() > INJECTED_MAX {
            queue.pop_front();
        }
    }

    /// Whether `event`, seen on the local stream, is one received from elsewhere
    /// (then forgotten: it is seen once).
    fn was_injected(&self, event: &EngineEvent) -> bool {
        let mut queue = self.injected.lock().unwrap_or_else(|e| e.into_inner());
        match queue.iter().position(|e| e.same_as(event)) {
            Some(at) => {
                queue.drain(..=at);
                true
            }
            None => false,
        }
    }

    /// Sends `event` to every other process's socket.
    async fn send(&self, event: EngineEvent) {
        let message = Message {
            origin: self.own.clone(),
            event,
        };
        let Ok(body) = serde_json::to_vec(&message) else {
            return;
        };
        let mut bytes = self.key.tag(&body).into_bytes();
        bytes.push(b'\n');
        bytes.extend_from_slice(&body);
        if bytes.len() > DATAGRAM_MAX {
            tracing::debug!(target: "cohort::relay", "an event of {} bytes was not relayed", bytes.len());
            return;
        }
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let Ok(sender) = UnixDatagram::unbound() else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_string_lossy() == self.own || !name.to_string_lossy().ends_with(".sock") {
                continue;
            }
            let path = entry.path();
            if let Err(e) = sender.send_to(&bytes, &path).await {
                use std::io::ErrorKind::{ConnectionRefused, NotFound};
                if matches!(e.kind(), ConnectionRefused | NotFound) {
                    // Its process is gone.
                    let _ = std::fs::remove_file(&path);
                } else {
                    tracing::debug!(target: "cohort::relay", "an event was not relayed to {}: {e}", path.display());
                }
            }
        }
    }
}

/// Publishes what other processes send, until `stop`; then removes the socket.
async fn receive(
    relay: Arc<Relay>,
    socket: UnixDatagram,
    path: PathBuf,
    bus: EventBus,
    stop: CancellationToken,
) {
    let mut buffer = vec![0u8; DATAGRAM_MAX];
    loop {
        let received = tokio::select! {
            _ = stop.cancelled() => break,
            r = socket.recv(&mut buffer) => r,
        };
        let Ok(n) = received else { continue };
        let Some(body) = relay.opened(&buffer[..n]) else {
            tracing::warn!(target: "cohort::relay", "a datagram without the relay's tag was dropped (sent by a process that is not a cohort of this state directory)");
            continue;
        };
        match serde_json::from_slice::<Message>(body) {
            Ok(message) if message.origin != relay.own && relayed(&message.event) => {
                relay.injected(&message.event);
                bus.publish_received(message.event);
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(target: "cohort::relay", "an unreadable datagram was ignored: {e}")
            }
        }
    }
    let _ = std::fs::remove_file(path);
}

/// Sends what this process publishes of the relayed kinds to the others, until
/// `stop`; records local agent states in the registry, and what this process
/// publishes in the history (not what it received from the others: they keep it).
async fn forward(
    relay: Arc<Relay>,
    bus: EventBus,
    registry: Arc<Registry>,
    history: crate::history::History,
    stop: CancellationToken,
) {
    let (mut events, mut states) = bus.subscribe_states();
    loop {
        let event = tokio::select! {
            _ = stop.cancelled() => return,
            e = events.recv() => e,
        };
        let event = match event {
            Ok(event) => event,
            Err(RecvError::Lagged(n)) => {
                tracing::debug!(target: "cohort::relay", "the relay fell {n} events behind");
                // Agents' states among them are not lost: the state each agent of
                // this process holds now, if it changed meanwhile, is recorded and
                // sent (those received from other processes are theirs to send).
                for (event, here) in states.missed(&bus) {
                    if here {
                        forward_one(&relay, &registry, &history, event).await;
                    }
                }
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        // Received from elsewhere (noted as such, also when it is skipped next), or
        // a state already taken in after a lag, which the stream still held.
        let received = relayed(&event) && relay.was_injected(&event);
        if !states.fresh(&event) || received {
            continue;
        }
        forward_one(&relay, &registry, &history, event).await;
    }
}

/// Keeps in the history and relays (recording an agent's state in the registry) one
/// event this process published.
async fn forward_one(
    relay: &Relay,
    registry: &Arc<Registry>,
    history: &crate::history::History,
    event: EngineEvent,
) {
    if crate::history::History::keeps(&event) {
        history.record(&event);
    }
    if !relayed(&event) {
        return;
    }
    if let EngineEvent::AgentState {
        agent,
        state,
        reason,
        ..
    } = &event
    {
        record_state(registry, agent.clone(), state.clone(), reason.clone()).await;
    }
    relay.send(event).await;
}

/// Records `agent`'s state in the registry, where a process that starts later (or
/// missed it) finds it.
async fn record_state(registry: &Arc<Registry>, agent: String, state: String, reason: String) {
    let registry = registry.clone();
    let _ = tokio::task::spawn_blocking(move || {
        if let Err(e) = registry.set_agent_state(&agent, &state, &reason) {
            tracing::warn!(target: "cohort::relay", "agent {agent}'s state was not recorded: {e}");
        }
    })
    .await;
}
