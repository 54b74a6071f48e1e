//! The reliability suite: hostile input, faults and load through a real MCP client,
//! with figures.
//!
//! One test binary per area keeps a build small: each binary links the whole engine.

#[path = "../support/reliability.rs"]
mod reliability;
#[path = "../support/mod.rs"]
mod support;

mod reliability_faults;
mod reliability_floods;
mod reliability_input;
mod reliability_load;
