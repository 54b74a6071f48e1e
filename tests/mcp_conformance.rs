//! The official MCP Python SDK (`mcp` from PyPI) drives the real `cohort mcp` binary
//! over stdio: `conformance/mcp/check.py`.
//!
//! The Python interpreter is `$COHORT_PYTHON` or `python3`. When it lacks the `mcp`
//! or `jsonschema` package the check is skipped with a message, unless
//! `COHORT_REQUIRE_CONFORMANCE=1`, which makes that a failure (CI sets it).

mod support;

use std::path::Path;
use std::process::Command;

use support::*;

#[tokio::test]
async fn the_official_python_sdk_drives_cohort() {
    let python = std::env::var("COHORT_PYTHON").unwrap_or_else(|_| "python3".into());
    let required = std::env::var("COHORT_REQUIRE_CONFORMANCE").is_ok_and(|v| v == "1");
    let has_sdk = Command::new(&python)
        .args(["-c", "import mcp, jsonschema"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_sdk {
        let message =
            format!("{python} cannot import mcp and jsonschema: pip install -r conformance/mcp/requirements.txt");
        assert!(!required, "{message}");
        eprintln!("skipped: {message}");
        return;
    }
    isolate_home();
    let server = TestServer::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/mcp/check.py");
    let run = tokio::process::Command::new(&python)
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_cohort"))
        .env("COHORT_TMUX_SOCKET", &server.socket)
        .env("COHORT_STATE_DIR", server.state_dir())
        .env("SHELL", bash_path())
        .env_remove("TMUX")
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(180), run)
        .await
        .expect("the conformance check finished in time")
        .expect("run the conformance check");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "conformance check failed:\n{stdout}\n{stderr}"
    );
}
