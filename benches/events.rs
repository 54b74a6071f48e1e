//! Latency of the event path against polling, measured in the same run.
//!
//! For each sample a command is typed into a bash pane, the clock starts when Enter
//! is sent, and stops when
//! - the command's output arrives as an output event (event path),
//! - its exit status arrives as a prompt-mark event (event path),
//! - a `tmux capture-pane` poll every 50 ms first shows the output (the baseline,
//!   as polling tools do it: a CLI call per poll).
//!
//! Prints medians, p90s and the ratio; asserts nothing.

// The bench measures the backend's event path itself, below the terminal's input type.
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use cohort_backends::tmux::config::{Socket, TmuxConfig};
use cohort_backends::tmux::TmuxBackend;
use cohort_backends::{
    BackendEvent, EventStream, Key, PaneId, PromptMark, SpawnOptions, TerminalBackend,
};

const SAMPLES: usize = 30;
const POLL: Duration = Duration::from_millis(50);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
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
    let socket = format!("cohort-bench-{}", std::process::id());
    let _guard = KillServer(socket.clone());
    let state = std::env::temp_dir().join(&socket);
    let mut config = TmuxConfig::new(&state);
    config.socket = Socket::Name(socket.clone());
    config.shell = Some("/bin/bash".into());
    let backend = TmuxBackend::connect(config).await.expect("tmux");
    let mut events = backend.subscribe();
    let pane = backend
        .spawn(SpawnOptions {
            name: "bench".into(),
            ..Default::default()
        })
        .await
        .expect("spawn");
    wait_prompt(&mut events, &pane.id).await;

    let mut output_ms = Vec::new();
    let mut exit_ms = Vec::new();
    for i in 0..SAMPLES {
        let marker = format!("E{}X", 1000 + i * 7);
        backend
            .send_text(&pane.id, &format!("echo E$((1000+{i}*7))X"))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        drain(&mut events);
        let start = Instant::now();
        backend.send_keys(&pane.id, &[Key::ENTER]).await.unwrap();
        let mut seen = Vec::new();
        let mut got_output = false;
        loop {
            match tokio::time::timeout(Duration::from_secs(10), events.recv()).await {
                Ok(Some(BackendEvent::Output { pane: p, bytes })) if p == pane.id => {
                    seen.extend_from_slice(&bytes);
                    if !got_output && contains(&seen, format!("{marker}\r\n").as_bytes()) {
                        output_ms.push(ms(start.elapsed()));
                        got_output = true;
                    }
                }
                Ok(Some(BackendEvent::Prompt {
                    pane: p,
                    mark: PromptMark::CommandFinished { .. },
                    ..
                })) if p == pane.id => {
                    exit_ms.push(ms(start.elapsed()));
                    break;
                }
                Ok(Some(_)) => {}
                _ => panic!("no completion event"),
            }
        }
    }

    let mut poll_ms = Vec::new();
    for i in 0..SAMPLES {
        let marker = format!("P{}X", 1000 + i * 7);
        backend
            .send_text(&pane.id, &format!("clear; echo P$((1000+{i}*7))X"))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Polls run on their own schedule, like a poller that does not know when Enter comes.
        let phase = Duration::from_millis((i as u64 * 17) % 50);
        tokio::time::sleep(phase).await;
        let start = Instant::now();
        backend.send_keys(&pane.id, &[Key::ENTER]).await.unwrap();
        let mut next = start + POLL - phase.min(POLL);
        loop {
            tokio::time::sleep_until(next.into()).await;
            let out = tokio::process::Command::new("tmux")
                .args(["-L", &socket, "capture-pane", "-p", "-t", pane.id.as_str()])
                .output()
                .await
                .unwrap();
            if String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l == marker)
            {
                poll_ms.push(ms(start.elapsed()));
                break;
            }
            next += POLL;
        }
        wait_exit(&mut events, &pane.id).await;
    }

    println!(
        "Enter → event latency through the tmux backend ({SAMPLES} samples each, {})",
        backend.version().1
    );
    println!("{:<34} {:>9} {:>9}", "path", "median", "p90");
    report("event: output arrives", &mut output_ms);
    report("event: exit status arrives", &mut exit_ms);
    report("polling capture-pane every 50 ms", &mut poll_ms);
    let ratio = median(&mut poll_ms) / median(&mut output_ms);
    println!("event path is {ratio:.0}× faster than 50 ms polling (median vs median)");
    let _ = std::fs::remove_dir_all(&state);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(v: &mut [f64]) -> f64 {
    percentile(v, 0.5)
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let idx = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[idx]
}

fn report(name: &str, v: &mut [f64]) {
    println!(
        "{name:<34} {:>7.2}ms {:>7.2}ms",
        median(v),
        percentile(v, 0.9)
    );
}

fn contains(h: &[u8], n: &[u8]) -> bool {
    h.windows(n.len()).any(|w| w == n)
}

fn drain(events: &mut EventStream) {
    while events.try_recv().is_ok() {}
}

async fn wait_prompt(events: &mut EventStream, pane: &PaneId) {
    loop {
        match events.recv().await {
            Some(BackendEvent::Prompt {
                pane: p,
                mark: PromptMark::PromptStart,
                ..
            }) if &p == pane => return,
            Some(_) => {}
            None => panic!("events ended"),
        }
    }
}

async fn wait_exit(events: &mut EventStream, pane: &PaneId) {
    loop {
        match events.recv().await {
            Some(BackendEvent::Prompt {
                pane: p,
                mark: PromptMark::CommandFinished { .. },
                ..
            }) if &p == pane => return,
            Some(_) => {}
            None => panic!("events ended"),
        }
    }
}
