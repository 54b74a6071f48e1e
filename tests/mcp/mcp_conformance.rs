//! The official MCP Python SDK (`mcp` from PyPI) drives the real `cohort mcp` binary
//! over stdio: `conformance/mcp/check.py`. Skipped, with a message, where the SDK is
//! not installed (see `support/python.rs`).

use crate::{python, support::*};
use std::path::Path;

#[tokio::test]
async fn the_official_python_sdk_drives_cohort() {
    let server = TestServer::new();
    python::mcp_sdk_check(&server, Path::new(env!("CARGO_BIN_EXE_cohort")), None).await;
}
