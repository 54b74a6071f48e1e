//! The terminal backends: tmux and the fake iTerm2 driven through one trait, the parity
//! suites that prove them equal (backend calls, engine verdicts, orchestration), and
//! the recorded control-mode transcripts.
//!
//! One test binary per area keeps a build small: each binary links the whole engine.

#[path = "../support/iterm2.rs"]
mod iterm2_support;
#[path = "../support/ssh.rs"]
mod ssh_support;
#[path = "../support/mod.rs"]
mod support;
#[path = "../support/terminals.rs"]
mod terminals;

mod control_transcripts;
mod iterm2_backend;
mod iterm2_marks;
mod parity;
mod parity_engine;
mod parity_orchestration;
mod remote;
mod tmux_backend;
