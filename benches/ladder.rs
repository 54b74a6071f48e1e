//! How long after a command ends does each completion layer say so?
//!
//! Each sample runs `sleep 0.2; date +%s.%N`: the printed time is when the command
//! ended. The lag is the wall-clock time of the verdict minus that. Measured in the
//! same run:
//! - the exit layer (cohort's shell integration, OSC 133 `D`),
//! - the quiescence layer (a shell without integration; includes the quiet window),
//! - a baseline poller that runs `tmux capture-pane` every 250 ms until the prompt is
//!   back (how polling tools decide),
//! - and the end-to-end time of `run("echo x")`.
//!
//! Then the round trips to tmux each `run`, `send` and `key` makes (the floor is one
//! for the keys; the output comes as an event).
//!
//! Prints medians, p90s, ratios and counts; asserts nothing.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cohort::engine::Engine;
use cohort_backends::tmux::config::{Socket, TmuxConfig};
use cohort_backends::tmux::{control::round_trips, TmuxBackend};
use cohort_terminal::{
    completion::{Layer, WaitSpec},
    read::{ReadOptions, ReadWhat},
    OpenOptions, SendOptions,
};

const SAMPLES: usize = 20;

struct KillServer(String);
impl Drop for KillServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .status();
    }
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run());
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The `date +%s.%N` value in the command's output.
fn ended_at(text: &str) -> f64 {
    let plain = String::from_utf8_lossy(&strip_ansi_escapes::strip(text)).into_owned();
    plain
        .lines()
        .filter_map(|l| {
            l.rsplit('\r')
                .find(|p| !p.trim().is_empty())
                .and_then(|p| p.trim().parse::<f64>().ok())
        })
        .rfind(|t| *t > 1.0e9)
        .unwrap_or_else(|| panic!("no end time in {text:?}"))
}

async fn run() {
    let socket = format!("cohort-bench-ladder-{}", std::process::id());
    let _guard = KillServer(socket.clone());
    let state = std::env::temp_dir().join(&socket);
    let mut config = TmuxConfig::new(state.join("tmux"));
    config.socket = Socket::Name(socket.clone());
    config.shell = Some("/bin/bash".into());
    let backend = TmuxBackend::connect(config).await.expect("tmux");
    let engine = Engine::with_backend(Arc::new(backend), &state, &socket).unwrap();

    let shell = engine
        .terminal
        .open(OpenOptions::named("integrated"))
        .await
        .unwrap()
        .id;
    assert!(
        engine
            .terminal
            .wait_ready(&shell, Duration::from_secs(10))
            .await
    );
    let plain = engine
        .terminal
        .open(OpenOptions {
            name: "plain".into(),
            command: Some("exec bash --norc --noprofile -i".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let command = "sleep 0.2; date +%s.%N";
    let spec = WaitSpec {
        timeout: Duration::from_secs(20),
        ..WaitSpec::default()
    };

    let mut exit_lag = Vec::new();
    for _ in 0..SAMPLES {
        let out = engine
            .terminal
            .run(
                &shell,
                command,
                &SendOptions::default(),
                spec.clone(),
                true,
                &cohort_terminal::Caller::new("test"),
            )
            .await
            .unwrap();
        let seen = now_secs();
        assert_eq!(out.verdict.layer, Layer::Exit);
        exit_lag.push((seen - ended_at(&out.output.text)) * 1000.0);
    }

    let mut quiet_lag = Vec::new();
    for _ in 0..SAMPLES {
        let out = engine
            .terminal
            .run(
                &plain,
                command,
                &SendOptions::default(),
                spec.clone(),
                true,
                &cohort_terminal::Caller::new("test"),
            )
            .await
            .unwrap();
        let seen = now_secs();
        assert_eq!(out.verdict.layer, Layer::Quiescence, "{:?}", out.verdict);
        quiet_lag.push((seen - ended_at(&out.output.text)) * 1000.0);
    }

    // Baseline: poll capture-pane every 250 ms until the prompt is back after the output.
    // The poller runs on its own clock: its first poll falls anywhere in the interval.
    let mut poll_lag = Vec::new();
    for i in 0..SAMPLES {
        engine.terminal.type_line(&shell, "clear").await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        engine
            .terminal
            .send(
                &shell,
                command,
                &SendOptions::default(),
                &cohort_terminal::Caller::new("test"),
            )
            .await
            .unwrap();
        let phase = Duration::from_millis((i as u64 * 37) % 250);
        tokio::time::sleep(phase).await;
        let seen = loop {
            let out = tokio::process::Command::new("tmux")
                .args(["-L", &socket, "capture-pane", "-p", "-t", shell.as_str()])
                .output()
                .await
                .unwrap();
            let screen = String::from_utf8_lossy(&out.stdout).to_string();
            let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
            let done = lines.len() >= 2
                && lines[lines.len() - 2].trim().parse::<f64>().is_ok()
                && lines[lines.len() - 1].trim_end().ends_with(['$', '#']);
            if done {
                break (
                    now_secs(),
                    lines[lines.len() - 2].trim().parse::<f64>().unwrap(),
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        poll_lag.push((seen.0 - seen.1) * 1000.0);
        engine.terminal.wait(&shell, spec.clone()).await.unwrap();
    }

    let mut echo = Vec::new();
    let mut echo_trips = Vec::new();
    for _ in 0..SAMPLES {
        let start = Instant::now();
        let trips = round_trips();
        let out = engine
            .terminal
            .run(
                &shell,
                "echo x",
                &SendOptions::default(),
                spec.clone(),
                false,
                &cohort_terminal::Caller::new("test"),
            )
            .await
            .unwrap();
        echo.push(start.elapsed().as_secs_f64() * 1000.0);
        echo_trips.push((round_trips() - trips) as f64);
        assert_eq!(out.output.text.trim(), "x");
    }
    let caller = cohort_terminal::Caller::new("test");
    let mut send_trips = Vec::new();
    let mut key_trips = Vec::new();
    for _ in 0..SAMPLES {
        let trips = round_trips();
        engine
            .terminal
            .send(&shell, "true", &SendOptions::default(), &caller)
            .await
            .unwrap();
        send_trips.push((round_trips() - trips) as f64);
        engine.terminal.wait(&shell, spec.clone()).await.unwrap();
        let trips = round_trips();
        engine
            .terminal
            .keys(&shell, &["C-l".parse().unwrap()], &caller, false)
            .await
            .unwrap();
        key_trips.push((round_trips() - trips) as f64);
    }
    let _ = engine
        .terminal
        .read(
            &shell,
            &ReadOptions {
                what: ReadWhat::Tail(1),
                ..Default::default()
            },
        )
        .await;

    println!("Completion: time from the command's end to the verdict ({SAMPLES} samples each)");
    println!("{:<44} {:>10} {:>10}", "layer", "median", "p90");
    report("exit layer (OSC 133 D)", &mut exit_lag);
    report("quiescence layer (500 ms quiet window)", &mut quiet_lag);
    report("baseline: capture-pane polling every 250 ms", &mut poll_lag);
    report("run(\"echo x\") end to end", &mut echo);
    println!(
        "exit layer is {:.0}x ahead of 250 ms polling (median vs median)",
        median(&mut poll_lag) / median(&mut exit_lag).max(0.001)
    );
    println!("Round trips to tmux per call (median, p90 of {SAMPLES})");
    for (name, v) in [
        ("run(\"echo x\")", &mut echo_trips),
        ("send(\"true\")", &mut send_trips),
        ("key(C-l)", &mut key_trips),
    ] {
        println!(
            "{name:<44} {:>10.0} {:>10.0}",
            median(v),
            percentile(v, 0.9)
        );
    }
    println!(
        "journal memory in use: {} KiB",
        engine.terminal.stats().journal_memory / 1024
    );
    drop(engine);
    let _ = std::fs::remove_dir_all(&state);
}

fn median(v: &mut [f64]) -> f64 {
    percentile(v, 0.5)
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn report(name: &str, v: &mut [f64]) {
    println!(
        "{name:<44} {:>8.2}ms {:>8.2}ms",
        median(v),
        percentile(v, 0.9)
    );
}
