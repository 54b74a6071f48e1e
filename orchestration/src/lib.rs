//! cohort's orchestration: what makes many agents in many panes work as a team.
//!
//! - [`cascade`]: which message each agent receives when a broadcast, team messages
//!   and agent messages are sent together; [`many`]: the same text to many sessions,
//!   reads of many, the broadcast;
//! - [`waits`]: blocking until a condition holds (a pattern, a command's end, an
//!   agent's state, quiet); [`watch`]: watchers that act when something happens;
//! - [`notify`]: the notification queue, access requests, each agent's one-line
//!   status; [`roles`]: which tools an agent may call;
//! - [`playbook`]: whole workflows (layout, steps, waits, reads) from one spec;
//! - [`hub`]: agents' states from the event bus, the notifier's leadership among
//!   processes, and [`relay`]: events passed between cohort processes;
//! - [`registry`]: the orchestration's tables in the shared registry;
//!   [`status_line`]: each team's state where a human watching sees it.
//!
//! Everything here follows the terminal's event bus; nothing polls. The
//! orchestration stands on the terminal ([`cohort_terminal`]) and the workers
//! ([`cohort_workers`]) through their named APIs.

pub mod cascade;
pub mod desktop;
pub mod history;
pub mod hub;
pub mod many;
pub mod notify;
pub mod playbook;
pub mod registry;
pub mod relay;
pub mod roles;
pub mod status_line;
pub mod waits;
pub mod watch;
pub mod webhook;

use std::sync::Arc;

use cohort_terminal::{Terminal, TerminalError};
use cohort_workers::Workers;

/// The orchestration over one terminal and its workers; cheap to clone.
#[derive(Clone, Debug)]
pub struct Orchestrator {
    terminal: Terminal,
    workers: Workers,
    hub: Arc<hub::Hub>,
}

impl Orchestrator {
    /// The orchestration over `workers` (and the terminal they run in): its tables
    /// are added to the registry, and it starts following agents' states and the
    /// relay to other processes.
    pub fn new(workers: Workers) -> Result<Orchestrator, TerminalError> {
        let terminal = workers.terminal().clone();
        terminal.registry().add_schema(registry::SCHEMA)?;
        let hub = Arc::new(hub::Hub::new(
            terminal.state_dir(),
            terminal.bus(),
            terminal.registry().clone(),
        ));
        Ok(Orchestrator {
            terminal,
            workers,
            hub,
        })
    }

    /// The terminal it orchestrates.
    pub fn terminal(&self) -> &Terminal {
        &self.terminal
    }

    /// The workers it orchestrates.
    pub fn workers(&self) -> &Workers {
        &self.workers
    }

    /// Shows the notifications that need a person on this machine's desktop (none:
    /// stops).
    pub fn set_desktop(&self, desktop: Option<desktop::Desktop>) {
        *self.hub.desktop.lock().unwrap_or_else(|e| e.into_inner()) = desktop;
    }

    /// Posts the notifications that need a person to `webhook` (none: stops).
    pub fn set_webhook(&self, webhook: Option<webhook::Webhook>) {
        *self.hub.webhook.lock().unwrap_or_else(|e| e.into_inner()) = webhook;
    }
}
