//! How fast a watcher acts on a line, against polling, measured in the same run.
//!
//! A "server" pane prints a request line (`GET /…`); the watcher on it types a
//! command into a "client" pane. For each sample the clock starts when the line's
//! bytes arrive from tmux and stops when the client's first bytes after it arrive
//! (the action typed there, echoed by the client's shell), both seen on the
//! backend's own event stream. The baseline does the same job the way polling
//! tools do: every 500 ms it reads the server's screen and, when the line is there,
//! types the same command into the client.
//!
//! Prints medians, p90s and the ratio; asserts nothing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cohort::engine::Engine;
use cohort_backends::tmux::config::{Socket, TmuxConfig};
use cohort_backends::tmux::TmuxBackend;
use cohort_backends::{BackendEvent, EventStream, Key, PaneId, TerminalBackend};
use cohort_orchestration::watch::{Action, Trigger, WatchSpec};
use cohort_terminal::{OpenOptions, SendOptions};

const WATCH_SAMPLES: usize = 20;
const POLL_SAMPLES: usize = 10;
const POLL: Duration = Duration::from_millis(500);
const LIMIT: Duration = Duration::from_secs(10);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run());
}

struct KillServer(String);
impl Drop for KillServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .status();
    }
}

async fn run() {
    let socket = format!("cohort-bench-watch-{}", std::process::id());
    let _guard = KillServer(socket.clone());
    let state = std::env::temp_dir().join(&socket);
    let mut config = TmuxConfig::new(&state);
    config.socket = Socket::Name(socket.clone());
    config.shell = Some("/bin/bash".into());
    let backend = Arc::new(TmuxBackend::connect(config).await.expect("tmux"));
    let version = backend.version().1;
    let engine = Engine::with_backend(backend.clone(), &state, &socket).expect("engine");
    let server = open(&engine, "server").await;
    let client = open(&engine, "client").await;
    let mut events = backend.subscribe();

    // The event path: a watcher.
    engine.orchestrator.start_orchestration();
    let watch = engine
        .orchestrator
        .add_watch(WatchSpec {
            id: String::new(),
            target: "server".into(),
            trigger: Trigger::Pattern {
                pattern: "GET /".into(),
                regex: false,
                input: false,
            },
            action: Some(Action::Send {
                target: "client".into(),
                text: ": served".into(),
                enter: true,
            }),
            notify: "bench".into(),
            context: 0,
            once: false,
            owner: None,
        })
        .await
        .expect("watch");
    let mut watch_ms = Vec::new();
    for i in 0..WATCH_SAMPLES {
        let line = format!("GET /{}", 100 + i);
        watch_ms.push(sample(&engine, &mut events, &server, &client, i, &line).await);
        settle(&engine, &client).await;
    }
    engine
        .orchestrator
        .remove_watch(&watch.id)
        .await
        .expect("unwatch");

    // The baseline: a poller every 500 ms, out of phase with the requests.
    let mut poll_ms = Vec::new();
    for i in 0..POLL_SAMPLES {
        let line = format!("GET /{}", 500 + i);
        let poller = {
            let (engine, server, client, line) =
                (engine.clone(), server.clone(), client.clone(), line.clone());
            let phase = Duration::from_millis((i as u64 * 173) % 500);
            tokio::spawn(async move {
                tokio::time::sleep(phase).await;
                loop {
                    let screen = engine.terminal.screen(&server).await.expect("screen");
                    if screen.rows.iter().any(|l| l.trim_end() == line) {
                        engine
                            .terminal
                            .send(
                                &client,
                                ": served",
                                &SendOptions::default(),
                                &cohort_terminal::Caller::new("test"),
                            )
                            .await
                            .expect("send");
                        return;
                    }
                    tokio::time::sleep(POLL).await;
                }
            })
        };
        poll_ms.push(sample(&engine, &mut events, &server, &client, i, &line).await);
        poller.await.expect("poller");
        settle(&engine, &client).await;
    }

    println!("line → action latency through the tmux backend ({version})");
    println!("{:<36} {:>9} {:>9}", "path", "median", "p90");
    report(&format!("watcher ({WATCH_SAMPLES} samples)"), &mut watch_ms);
    report(
        &format!("polling every 500 ms ({POLL_SAMPLES} samples)"),
        &mut poll_ms,
    );
    let ratio = median(&mut poll_ms) / median(&mut watch_ms);
    println!("the watcher acts {ratio:.0}× sooner than 500 ms polling (median vs median)");
    engine.orchestrator.stop_orchestration();
    let _ = std::fs::remove_dir_all(&state);
}

async fn open(engine: &Engine, name: &str) -> PaneId {
    let pane = engine
        .terminal
        .open(OpenOptions::named(name))
        .await
        .expect("open");
    assert!(
        engine.terminal.wait_ready(&pane.id, LIMIT).await,
        "no prompt"
    );
    engine.terminal.wait_reading(&pane.id, LIMIT).await;
    pane.id
}

/// Waits until `pane`'s shell reads its terminal again.
async fn settle(engine: &Engine, pane: &PaneId) {
    tokio::time::sleep(Duration::from_millis(50)).await;
    engine.terminal.wait_reading(pane, LIMIT).await;
}

/// One request line printed in the server; milliseconds from its arrival to the
/// client's next bytes.
async fn sample(
    engine: &Engine,
    events: &mut EventStream,
    server: &PaneId,
    client: &PaneId,
    i: usize,
    line: &str,
) -> f64 {
    // Typed so that the command line itself does not hold the request line.
    let command = format!(
        "printf '%s /%s\\n' GET {}",
        line.trim_start_matches("GET /")
    );
    engine
        .terminal
        .send(
            server,
            &command,
            &SendOptions {
                enter: false,
                ..SendOptions::default()
            },
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .expect("type");
    tokio::time::sleep(Duration::from_millis(20)).await;
    while events.try_recv().is_ok() {}
    engine
        .terminal
        .keys(
            server,
            &[Key::ENTER],
            &cohort_terminal::Caller::new("test"),
            false,
        )
        .await
        .expect("enter");
    let deadline = tokio::time::Instant::now() + LIMIT;
    let mut seen = Vec::new();
    let mut line_at: Option<Instant> = None;
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| panic!("sample {i}: nothing arrived"))
            .expect("event stream");
        let BackendEvent::Output { pane, bytes } = event else {
            continue;
        };
        if &pane == server && line_at.is_none() {
            seen.extend_from_slice(&bytes);
            if String::from_utf8_lossy(&seen).contains(&format!("{line}\r\n")) {
                line_at = Some(Instant::now());
            }
        } else if &pane == client {
            if let Some(at) = line_at {
                return at.elapsed().as_secs_f64() * 1000.0;
            }
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    percentile(v, 0.5)
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let idx = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[idx]
}

fn report(name: &str, v: &mut [f64]) {
    println!(
        "{name:<36} {:>7.2}ms {:>7.2}ms",
        median(v),
        percentile(v, 0.9)
    );
}
