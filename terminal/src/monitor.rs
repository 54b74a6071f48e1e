//! Monitors: what happens in the terminal that cohort did not do, as events on the
//! bus. A pane comes to the front ([`EngineEvent::Focused`]); a window's layout
//! changes ([`EngineEvent::LayoutChanged`]); a person opens or closes a pane beside
//! cohort's sessions ([`EngineEvent::OutsidePaneOpened`],
//! [`EngineEvent::OutsidePaneClosed`]).
//!
//! Nothing polls: a layout change (a window added, split or closed) has the panes
//! listed a moment after the first change ([`SETTLE`]), over the connection there
//! is (looking never starts a terminal server), and the listing is compared with the
//! last one. A new pane without cohort's stamp is said only if it still has none
//! [`GRACE`] later: cohort stamps its own new panes right after the terminal makes
//! them, so only one stamped later than that could be taken for someone else's.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use cohort_backends::{PaneId, TerminalBackend, WindowId};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::events::EngineEvent;
use crate::runtime::Runtimes;

/// How long a burst of layout changes is let end before the panes are listed.
pub const SETTLE: Duration = Duration::from_millis(150);

/// How long a new pane may stay without a stamp before it is taken for a person's:
/// cohort stamps its own new panes right after the terminal makes them, a remote
/// host's over ssh a round trip later.
pub const GRACE: Duration = Duration::from_millis(2000);

/// What the runtimes ask the monitor to look at.
#[derive(Debug)]
pub enum Look {
    /// The panes may have changed: list them.
    Panes,
    /// `window` came to the front: say which pane is its active one.
    FocusOf(WindowId),
    /// The terminal server was replaced: nothing known holds.
    Restarted,
}

/// What the monitor knows of a pane: whether it carries cohort's stamp, and its
/// window's name.
#[derive(Clone, Debug)]
struct Seen {
    owned: bool,
    window: String,
}

/// Starts the monitor of `backend`'s panes, publishing on `runtimes`' bus; it ends
/// when either is gone.
pub fn start(runtimes: &Arc<Runtimes>, backend: &Arc<dyn TerminalBackend>) {
    let (sender, mut looks) = mpsc::unbounded_channel::<Look>();
    runtimes.set_monitor(sender);
    let runtimes = Arc::downgrade(runtimes);
    let backend: Weak<dyn TerminalBackend> = Arc::downgrade(backend);
    tokio::spawn(async move {
        let mut known: Option<HashMap<PaneId, Seen>> = None;
        let mut waiting: HashMap<PaneId, Instant> = HashMap::new();
        // The first listing, at once, is where changes are counted from.
        let mut list_at: Option<Instant> = Some(Instant::now());
        loop {
            let next = match (list_at, waiting.values().min()) {
                (Some(a), Some(b)) => Some(a.min(*b)),
                (a, b) => a.or(b.copied()),
            };
            let timer = async {
                match next {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                look = looks.recv() => match look {
                    None => return,
                    Some(Look::Panes) => {
                        list_at.get_or_insert_with(|| Instant::now() + SETTLE);
                    }
                    Some(Look::Restarted) => {
                        known = None;
                        waiting.clear();
                        list_at.get_or_insert_with(|| Instant::now() + SETTLE);
                    }
                    Some(Look::FocusOf(window)) => {
                        let Some(backend) = backend.upgrade() else { return };
                        let panes = backend.list_panes_if_running().await.ok().flatten().unwrap_or_default();
                        drop(backend);
                        let Some(runtimes) = runtimes.upgrade() else { return };
                        if let Some(pane) = panes.iter().find(|p| p.window == window && p.active) {
                            runtimes.bus().publish(EngineEvent::Focused { pane: pane.id.clone() });
                        }
                    }
                },
                _ = timer => {
                    list_at = None;
                    let Some(backend) = backend.upgrade() else { return };
                    // Over the connection there is: looking never starts a server.
                    let panes = match backend.list_panes_if_running().await {
                        Ok(Some(panes)) => panes,
                        // Not connected (yet, or again): nothing is known of the panes.
                        Ok(None) => continue,
                        // A listing that failed is tried again a moment later.
                        Err(_) => {
                            list_at = Some(Instant::now() + GRACE);
                            continue;
                        }
                    };
                    drop(backend);
                    let Some(runtimes) = runtimes.upgrade() else { return };
                    let now = Instant::now();
                    let listed: HashMap<PaneId, Seen> = panes
                        .iter()
                        .map(|p| (p.id.clone(), Seen { owned: p.identity.is_some(), window: p.window_name.clone() }))
                        .collect();
                    let Some(before) = known.as_mut() else {
                        // The first listing is where things start from.
                        known = Some(listed);
                        continue;
                    };
                    for (pane, seen) in &listed {
                        match before.get(pane) {
                            Some(_) => {}
                            None if seen.owned => {
                                waiting.remove(pane);
                                before.insert(pane.clone(), seen.clone());
                            }
                            None => match waiting.get(pane) {
                                None => {
                                    waiting.insert(pane.clone(), now + GRACE);
                                }
                                Some(until) if *until <= now => {
                                    waiting.remove(pane);
                                    before.insert(pane.clone(), seen.clone());
                                    runtimes.bus().publish(EngineEvent::OutsidePaneOpened {
                                        pane: pane.clone(),
                                        window: seen.window.clone(),
                                    });
                                }
                                Some(_) => {}
                            },
                        }
                        // A pane adopted since: cohort's now.
                        if let Some(kept) = before.get_mut(pane) {
                            kept.owned = seen.owned;
                        }
                    }
                    waiting.retain(|pane, _| listed.contains_key(pane));
                    let gone: Vec<PaneId> = before.keys().filter(|p| !listed.contains_key(*p)).cloned().collect();
                    for pane in gone {
                        if let Some(seen) = before.remove(&pane) {
                            if !seen.owned {
                                runtimes.bus().publish(EngineEvent::OutsidePaneClosed { pane, window: seen.window });
                            }
                        }
                    }
                }
            }
        }
    });
}
