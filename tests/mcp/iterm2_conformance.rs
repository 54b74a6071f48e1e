//! The official iTerm2 Python client (`iterm2` from PyPI) against cohort's fake iTerm2
//! server: `conformance/iterm2/check.py` drives the fake through the client's public
//! API. Skipped, with a message, where the client is not installed (see
//! `support/python.rs`).

use crate::python;
use std::path::Path;
use std::time::Duration;

use cohort_fake_iterm2::{Auth, FakeOptions, FakeServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_client_accepts_the_fake() {
    let Some(python) = python::interpreter("iterm2", "conformance/iterm2/requirements.txt") else {
        return;
    };
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
            env: vec![("HOME".into(), home.path().display().to_string())],
            dynamic_profiles: Some(
                home.path()
                    .join("Library/Application Support/iTerm2/DynamicProfiles"),
            ),
            ..FakeOptions::default()
        },
    )
    .await
    .expect("start the fake");
    let cookies: Vec<String> = (0..4).map(|_| server.issue_cookie()).collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/iterm2/check.py");
    let mut check = tokio::process::Command::new(&python);
    check
        .arg(&script)
        .env("HOME", home.path())
        .env("COHORT_FAKE_COOKIES", cookies.join(" "))
        .env_remove("ITERM2_COOKIE")
        .env_remove("ITERM2_KEY")
        .env_remove("IT2_SUITE");
    python::run(check, Duration::from_secs(120)).await;
}
