//! Shared test harness: a private tmux server per test, killed on drop (also when
//! the test panics), and helpers to wait for events.

#![allow(dead_code)]

pub mod deadline;
pub mod link;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use cohort_backends::tmux::config::{Socket, TmuxConfig};
use cohort_backends::tmux::TmuxBackend;
use cohort_backends::{BackendEvent, EventStream, PaneId, PromptMark};

/// One scenario run on every backend: `parity!(start, name, body)` makes a module
/// `name` with the tests `tmux`, `iterm2` and `ssh` (tmux on a remote host), each
/// handing `start(which).await` (a test context on that backend) to `body`, an async
/// function of it.
///
/// `parity!(local, start, name, body)` leaves out `ssh`: for scenarios whose far side
/// would need more than the test host gives (agent workers call back through a local
/// socket, which a real remote host cannot reach yet).
#[allow(unused_macros)]
macro_rules! parity {
    (@local $start:expr, $body:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn tmux() {
            ($body)(($start)(crate::terminals::Which::Tmux).await).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn iterm2() {
            ($body)(($start)(crate::terminals::Which::Iterm2).await).await;
        }
    };
    (local, $start:expr, $name:ident, $body:expr) => {
        mod $name {
            use super::*;

            parity!(@local $start, $body);
        }
    };
    ($start:expr, $name:ident, $body:expr) => {
        mod $name {
            use super::*;

            parity!(@local $start, $body);

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn ssh() {
                if crate::ssh_support::available() {
                    ($body)(($start)(crate::terminals::Which::Ssh).await).await;
                }
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use parity;

/// The identity cohort stamps on a session's pane, for a pane a test spawns through
/// the backend directly: without one, the pane is not one of cohort's sessions.
pub fn stamped(name: &str) -> Option<cohort_backends::Identity> {
    Some(cohort_backends::Identity {
        id: uuid::Uuid::new_v4().to_string(),
        name: name.into(),
        agent: None,
        team: None,
        key: None,
        anchor: None,
        announces_start: false,
    })
}

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
        // Tests use bash with an empty home (no user rc files), so results do not
        // depend on the machine.
        config.shell = Some(PathBuf::from(bash_path()));
        config.server_env = vec![("HOME".into(), self.home().display().to_string())];
        config
    }

    /// An empty home directory for the server's shells, removed with the server.
    pub fn home(&self) -> PathBuf {
        let home = self.state.path().join("home");
        std::fs::create_dir_all(&home).expect("test home");
        home
    }

    pub async fn backend(&self) -> TmuxBackend {
        TmuxBackend::connect(self.config())
            .await
            .expect("connect to tmux")
    }

    pub fn state_dir(&self) -> &Path {
        self.state.path()
    }

    /// A window a person made in cohort's session from outside cohort (as from an
    /// attached client), named `name` and running bash: its pane.
    pub fn persons_window(&self, name: &str) -> cohort_backends::PaneId {
        let made = std::process::Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args([
                "new-window",
                "-d",
                "-n",
                name,
                "-P",
                "-F",
                "#{pane_id}",
                "-t",
            ])
            .arg(format!("={}", self.config().session))
            .arg(bash_path())
            .env_remove("TMUX")
            .output()
            .expect("run tmux new-window");
        assert!(made.status.success(), "tmux new-window failed: {made:?}");
        cohort_backends::PaneId(String::from_utf8_lossy(&made.stdout).trim().to_string())
    }
}

impl Drop for TestServer {
    /// Kills the server, waits for it and its panes' programs to be gone (a shell
    /// writing its history on the way out would otherwise recreate files in the
    /// state directory after it was removed), and removes its socket, which tmux
    /// leaves behind: a test run leaves nothing.
    fn drop(&mut self) {
        // Bounded: a stopped or wedged server must not turn a failing test into a
        // hung one while it unwinds.
        let tmux = |args: &[&str]| {
            deadline::output_within(
                std::process::Command::new("tmux")
                    .arg("-L")
                    .arg(&self.socket)
                    .args(args)
                    .env_remove("TMUX")
                    .stderr(std::process::Stdio::null()),
                Duration::from_secs(5),
            )
            .unwrap_or_default()
        };
        let pids: Vec<u32> = tmux(&["list-panes", "-a", "-F", "#{pane_pid}"])
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        tmux(&["kill-server"]);
        // A pane's program is done once it is gone or a zombie (the server, which
        // lingers a second after kill-server, reaps it).
        let running = |pid: &u32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    stat.rsplit_once(") ")
                        .map(|(_, rest)| !rest.starts_with('Z'))
                })
                .unwrap_or(false)
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        while pids.iter().any(running) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let dir = std::env::var_os("TMUX_TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        let _ = std::fs::remove_file(dir.join(format!("tmux-{uid}")).join(&self.socket));
    }
}

pub fn bash_path() -> &'static str {
    if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/usr/bin/bash"
    }
}

pub const WAIT: Duration = Duration::from_secs(15);

/// The longest a tool call may go unanswered: above every tool timeout the tests use.
pub const CALL_LIMIT: Duration = Duration::from_secs(90);

/// `work`'s result, or a failure naming `what` when it is not done within
/// [`CALL_LIMIT`]: a server that stops answering fails the test that asked.
pub async fn answered<T>(what: &str, work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(CALL_LIMIT, work)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {CALL_LIMIT:?}"))
}

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
/// What a person does to type into every pane of a window at once: `pane`'s window
/// split, and its panes synchronised (tmux's `synchronize-panes`). Answers the new
/// pane.
pub async fn synchronised_neighbour(backend: &TmuxBackend, pane: &PaneId) -> String {
    let other = backend
        .raw_command(&format!("split-window -d -P -F '#{{pane_id}}' -t {pane}"))
        .await
        .unwrap()
        .remove(0);
    backend
        .raw_command(&format!("set-option -w -t {pane} synchronize-panes on"))
        .await
        .unwrap();
    other
}

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
/// Waits for the pane's program to end; the exit status its event carries.
pub async fn wait_pane_exit(events: &mut EventStream, pane: &PaneId) -> Option<i32> {
    wait_for(events, pane, "the pane's exit", |e| match e {
        BackendEvent::PaneExited { exit_status, .. } => Some(*exit_status),
        _ => None,
    })
    .await
}

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

/// Checks that every prompt mark waiting in `marks` for `pane` carries a token of
/// `chain` in order, each once: the next one, or up to `window` links further (marks
/// the terminal does not report take tokens too). Returns how many marks there were;
/// `who` names the shell in failures.
pub fn marks_follow_chain(
    marks: &mut EventStream,
    pane: &PaneId,
    chain: &cohort_backends::pad::MarkChain,
    window: u32,
    who: &str,
) -> usize {
    let mut anchor = chain.anchor();
    let mut seen = 0;
    while let Ok(event) = marks.try_recv() {
        let BackendEvent::Prompt {
            pane: p,
            mark,
            params,
        } = event
        else {
            continue;
        };
        if &p != pane {
            continue;
        }
        let token = params.key.clone().unwrap_or_default();
        assert!(
            anchor.verify(&token, window),
            "{who}: mark {seen} ({mark:?}) carries {token:?}, not the next token"
        );
        seen += 1;
    }
    seen
}

/// The spans made on this thread (the `otel` feature), kept in memory from
/// [`record_spans`] until this drops; tests that read them run on the current thread's
/// runtime, so every span of the engine is made here.
#[cfg(feature = "otel")]
pub struct RecordedSpans {
    exporter: opentelemetry_sdk::trace::InMemorySpanExporter,
    provider: opentelemetry_sdk::trace::SdkTracerProvider,
    _subscriber: tracing::subscriber::DefaultGuard,
}

/// Starts keeping the spans made on this thread.
#[cfg(feature = "otel")]
pub fn record_spans() -> RecordedSpans {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let exporter = opentelemetry_sdk::trace::InMemorySpanExporter::default();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(cohort::telemetry::otel::layer(&provider))
        .set_default();
    RecordedSpans {
        exporter,
        provider,
        _subscriber: subscriber,
    }
}

#[cfg(feature = "otel")]
impl RecordedSpans {
    /// The spans ended so far.
    pub fn finished(&self) -> Vec<opentelemetry_sdk::trace::SpanData> {
        self.provider.force_flush().unwrap();
        self.exporter.get_finished_spans().unwrap()
    }
}

/// A span's attributes as strings.
#[cfg(feature = "otel")]
pub fn attributes(
    span: &opentelemetry_sdk::trace::SpanData,
) -> std::collections::HashMap<String, String> {
    span.attributes
        .iter()
        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect()
}
