//! The official iTerm2 Python client (`iterm2` from PyPI) against cohort's fake iTerm2
//! server: `conformance/iterm2/check.py` drives the fake through the client's public
//! API.
//!
//! The Python interpreter is `$COHORT_PYTHON` or `python3`. When it lacks the
//! `iterm2` package the check is skipped with a message, unless
//! `COHORT_REQUIRE_CONFORMANCE=1`, which makes that a failure (CI sets it).

use std::path::Path;
use std::process::Command;

use cohort_fake_iterm2::{Auth, FakeOptions, FakeServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_client_accepts_the_fake() {
    let python = std::env::var("COHORT_PYTHON").unwrap_or_else(|_| "python3".into());
    let required = std::env::var("COHORT_REQUIRE_CONFORMANCE").is_ok_and(|v| v == "1");
    let has_client = Command::new(&python)
        .args(["-c", "import iterm2"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_client {
        let message = format!(
            "{python} cannot import the iterm2 package: pip install -r conformance/iterm2/requirements.txt"
        );
        assert!(!required, "{message}");
        eprintln!("skipped: {message}");
        return;
    }
    let home = tempfile::Builder::new()
        .prefix("cohort-conformance-")
        .tempdir()
        .expect("temp dir");
    let socket = home
        .path()
        .join("Library/Application Support/iTerm2/private/socket");
    let server = FakeServer::start(
        &socket,
        FakeOptions {
            auth: Auth::Cookies,
            ..FakeOptions::default()
        },
    )
    .await
    .expect("start the fake");
    let cookies: Vec<String> = (0..4).map(|_| server.issue_cookie()).collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/iterm2/check.py");
    let python_run = tokio::process::Command::new(&python)
        .arg(&script)
        .env("HOME", home.path())
        .env("COHORT_FAKE_COOKIES", cookies.join(" "))
        .env_remove("ITERM2_COOKIE")
        .env_remove("ITERM2_KEY")
        .env_remove("IT2_SUITE")
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(120), python_run)
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
