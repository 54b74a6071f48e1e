//! Agent-CLI workers: their states on both backends, prompts, recovery, the manager,
//! orchestration, and the real CLIs where installed.
//!
//! One test binary per area keeps a build small: each binary links the whole engine.

#[path = "../support/agents.rs"]
mod agents;
#[path = "../support/browser.rs"]
mod browser;
#[path = "../support/iterm2.rs"]
mod iterm2_support;
#[path = "../support/ssh.rs"]
mod ssh_support;
#[path = "../support/mod.rs"]
mod support;
#[path = "../support/terminals.rs"]
mod terminals;
#[path = "../support/workers.rs"]
mod workers;

mod workers_dashboard;
mod workers_grpc;
mod workers_manager;
mod workers_merge;
mod workers_orchestration;
mod workers_prompts;
mod workers_real_cli;
mod workers_recovery;
mod workers_remote;
mod workers_screens;
mod workers_states;
