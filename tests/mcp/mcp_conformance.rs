//! The official MCP Python SDK (`mcp` from PyPI) drives the real `cohort mcp` binary
//! over stdio: `conformance/mcp/check.py`. Skipped, with a message, where the SDK is
//! not installed (see `support/python.rs`).

use crate::{python, support::*};
use std::path::Path;
use std::time::Duration;

#[tokio::test]
async fn the_official_python_sdk_drives_cohort() {
    let Some(python) = python::interpreter("mcp, jsonschema", "conformance/mcp/requirements.txt")
    else {
        return;
    };
    let server = TestServer::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/mcp/check.py");
    let mut check = tokio::process::Command::new(&python);
    check
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_cohort"))
        .env("COHORT_TMUX_SOCKET", &server.socket)
        .env("COHORT_STATE_DIR", server.state_dir())
        .env("SHELL", bash_path())
        .env("HOME", server.home())
        .env_remove("TMUX");
    python::run(check, Duration::from_secs(150)).await;
}
