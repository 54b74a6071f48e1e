//! Running a conformance script with an official Python client.
//!
//! The interpreter is `$COHORT_PYTHON` or `python3`. When it cannot import the
//! client's packages the check is skipped with a message, unless
//! `COHORT_REQUIRE_CONFORMANCE=1`, which makes that a failure (CI sets it).

#![allow(dead_code)]

use std::process::Command;
use std::time::Duration;

/// The interpreter: `$COHORT_PYTHON` or `python3`.
pub fn program() -> String {
    std::env::var("COHORT_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// The interpreter to run the check with, or `None` (after saying why) when it lacks
/// `imports` and the check may be skipped. `requirements` is the file to install from.
pub fn interpreter(imports: &str, requirements: &str) -> Option<String> {
    let python = program();
    let has_packages = Command::new(&python)
        .args(["-c", &format!("import {imports}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if has_packages {
        return Some(python);
    }
    let message = format!("{python} cannot import {imports}: pip install -r {requirements}");
    let required = std::env::var("COHORT_REQUIRE_CONFORMANCE").is_ok_and(|v| v == "1");
    assert!(!required, "{message}");
    eprintln!("skipped: {message}");
    None
}

/// Runs the prepared check, prints what it printed, and fails the test unless it
/// passed within `limit`.
pub async fn run(mut check: tokio::process::Command, limit: Duration) {
    // Killed when the limit passes (or the test fails), not left running.
    check.kill_on_drop(true);
    let what = format!("{:?}", check.as_std());
    let output = tokio::time::timeout(limit, check.output())
        .await
        .unwrap_or_else(|_| panic!("the conformance check {what} did not finish within {limit:?}"))
        .unwrap_or_else(|e| panic!("the conformance check {what} could not run: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "conformance check failed:\n{stdout}\n{stderr}"
    );
}

/// The official MCP Python SDK's conformance check (`conformance/mcp/check.py`)
/// against the `cohort` binary `binary`, on `server`'s tmux socket and state directory;
/// `path` replaces PATH when given. Skipped (see [`interpreter`]) without the SDK.
pub async fn mcp_sdk_check(
    server: &crate::support::TestServer,
    binary: &std::path::Path,
    path: Option<&str>,
) {
    let Some(python) = interpreter("mcp, jsonschema", "conformance/mcp/requirements.txt") else {
        return;
    };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/mcp/check.py");
    let mut check = tokio::process::Command::new(&python);
    check
        .arg(&script)
        .arg(binary)
        .env("COHORT_TMUX_SOCKET", &server.socket)
        .env("COHORT_STATE_DIR", server.state_dir())
        .env("SHELL", crate::support::bash_path())
        .env("HOME", server.home())
        .env_remove("TMUX");
    if let Some(path) = path {
        check.env("PATH", path);
    }
    run(check, Duration::from_secs(150)).await;
}
