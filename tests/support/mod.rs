//! Shared test harness: a private tmux server per test, killed on drop (also when
//! the test panics), and helpers to wait for events.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use cohort_backends::tmux::config::{Socket, TmuxConfig};
use cohort_backends::tmux::TmuxBackend;
use cohort_backends::{BackendEvent, EventStream, PaneId, PromptMark};

/// A tmux server on its own socket with its own state directory.
pub struct TestServer {
    pub socket: String,
    pub state: tempfile::TempDir,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

impl TestServer {
    pub fn new() -> Self {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let socket = format!("cohort-test-{}-{n}", std::process::id());
        let state = tempfile::Builder::new()
            .prefix("cohort-test-")
            .tempdir()
            .expect("temp dir");
        TestServer { socket, state }
    }

    pub fn config(&self) -> TmuxConfig {
        let mut config = TmuxConfig::new(self.state.path());
        config.socket = Socket::Name(self.socket.clone());
        // Tests use bash with no user rc files, so results do not depend on the machine.
        config.shell = Some(PathBuf::from(bash_path()));
        config
    }

    pub async fn backend(&self) -> TmuxBackend {
        TmuxBackend::connect(self.config())
            .await
            .expect("connect to tmux")
    }

    pub fn state_dir(&self) -> &Path {
        self.state.path()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .env_remove("TMUX")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

pub fn bash_path() -> &'static str {
    if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/usr/bin/bash"
    }
}

/// Sets HOME to an empty directory for the whole test binary, so the user's rc files
/// never influence results.
pub fn isolate_home() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let home = std::env::temp_dir().join(format!("cohort-test-home-{}", std::process::id()));
        std::fs::create_dir_all(&home).unwrap();
        // SAFETY: called once, before any test spawns threads that read the environment.
        unsafe { std::env::set_var("HOME", &home) };
    });
}

pub const WAIT: Duration = Duration::from_secs(15);

/// Waits for the first event for `pane` that `pick` accepts; panics on timeout.
pub async fn wait_for<T>(
    events: &mut EventStream,
    pane: &PaneId,
    what: &str,
    mut pick: impl FnMut(&BackendEvent) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {what} on {pane}"))
            .expect("event stream ended");
        if event.pane() == Some(pane) {
            if let Some(found) = pick(&event) {
                return found;
            }
        }
    }
}

/// Waits for the next `D` prompt mark on `pane` and returns its exit status.
pub async fn wait_exit(events: &mut EventStream, pane: &PaneId) -> Option<i32> {
    wait_for(events, pane, "a command-finished mark", |e| match e {
        BackendEvent::Prompt {
            mark: PromptMark::CommandFinished { exit_status },
            ..
        } => Some(*exit_status),
        _ => None,
    })
    .await
}

/// Waits for the shell's first prompt on `pane`.
pub async fn wait_prompt(events: &mut EventStream, pane: &PaneId) {
    wait_for(events, pane, "a prompt", |e| match e {
        BackendEvent::Prompt {
            mark: PromptMark::PromptStart,
            ..
        } => Some(()),
        _ => None,
    })
    .await
}

/// Collects output bytes of `pane` until `until` matches the collected bytes.
pub async fn collect_output_until(
    events: &mut EventStream,
    pane: &PaneId,
    mut until: impl FnMut(&[u8]) -> bool,
) -> Vec<u8> {
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "timed out; output so far: {:?}",
                    String::from_utf8_lossy(&out)
                )
            })
            .expect("event stream ended");
        if let BackendEvent::Output { pane: p, bytes } = &event {
            if p == pane {
                out.extend_from_slice(bytes);
                if until(&out) {
                    return out;
                }
            }
        }
    }
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Waits until the pane's foreground process reads its terminal (a shell's line
/// editor is up): typing earlier lands in the kernel's 4095-character line buffer.
pub async fn wait_reading(backend: &impl cohort_backends::TerminalBackend, pane: &PaneId) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let state = backend.pane_state(pane).await.expect("pane state");
        let reading = state
            .foreground_pid
            .and_then(cohort_backends::waiting_for_input);
        if reading != Some(false) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the shell never read its terminal"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}
