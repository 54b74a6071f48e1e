//! The engine over a real tmux server: sessions, reads, the completion ladder and its
//! verdicts, shell integration, recorded ladder replays and orchestration.
//!
//! One test binary per area keeps a build small: each binary links the whole engine.

#[path = "../support/mod.rs"]
mod support;

mod architecture;
mod engine;
mod ladder_replay;
mod orchestration;
mod shell_integration;
mod verdicts;
