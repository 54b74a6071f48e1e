//! cohort as its users reach it: the MCP tools through rmcp's client over stdio and
//! HTTP, the gRPC API through its generated client, the CLI, the dashboard in a real
//! browser, recordings, the README's promises, and the conformance checks run with the
//! official Python clients (MCP SDK, iTerm2 library, grpcio).
//!
//! One test binary per area keeps a build small: each binary links the whole engine.

#[path = "../support/browser.rs"]
mod browser;
#[path = "../support/python.rs"]
mod python;
#[path = "../support/served.rs"]
mod served;
#[path = "../support/ssh.rs"]
mod ssh_support;
#[path = "../support/mod.rs"]
mod support;

mod cli_and_mcp;
mod cli_orchestration;
mod dashboard;
mod grpc;
mod http;
mod iterm2_conformance;
mod mcp_conformance;
mod mcp_orchestration;
mod mcp_tools;
mod packaging;
mod readme;
mod record;
mod remote_hosts;
