//! What a remote host costs: the same session work on this machine's tmux and on a
//! remote host's over SSH (a real sshd on loopback, as the tests use), against the
//! round trip of the link itself measured in the same run.
//!
//! - **ssh exec**: `ssh HOST true` over the shared connection: what each call that
//!   is not on the open control connection costs (a new shell's pad, a snapshot of a
//!   pane's processes), a process started here and a session opened there;
//! - **echo**: `run("echo x")` end to end, on each;
//! - **verdict**: how long after `sleep 0.2; date +%s.%N` ended its exit verdict came.
//!
//! The target is the link's round trip plus the local figure, with no polling: keys
//! and events go over the control connection that stays open. The link
//! here is loopback; a slower one (`tc qdisc … netem delay`) adds its round trip to
//! each remote figure and nothing else. Prints medians and p90s; asserts nothing.
//! Needs `/usr/sbin/sshd` (Debian's openssh-server); without it, says so and stops.

#[path = "../tests/support/ssh.rs"]
mod ssh_support;
#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cohort::engine::Engine;
use cohort_backends::TerminalBackend;
use cohort_terminal::completion::{Layer, WaitSpec};
use cohort_terminal::{Caller, OpenOptions, SendOptions};

const SAMPLES: usize = 20;

fn main() {
    if !ssh_support::available() {
        return;
    }
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

/// The `date +%s.%N` value in a command's output.
fn ended_at(text: &str) -> f64 {
    text.lines()
        .filter_map(|l| l.trim().parse::<f64>().ok())
        .rfind(|t| *t > 1.0e9)
        .unwrap_or_else(|| panic!("no end time in {text:?}"))
}

fn median_p90(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[v.len() / 2], v[(v.len() * 9) / 10])
}

/// Echo round trips and verdict lags (ms) on `engine`'s session `name` (on `host`).
async fn measure(engine: &Engine, name: &str, host: Option<&str>) -> (Vec<f64>, Vec<f64>) {
    let pane = engine
        .terminal
        .open(OpenOptions {
            name: name.into(),
            host: host.map(str::to_string),
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    assert!(
        engine
            .terminal
            .wait_ready(&pane, Duration::from_secs(20))
            .await
    );
    let caller = Caller::new("bench");
    let spec = WaitSpec {
        timeout: Duration::from_secs(20),
        ..WaitSpec::default()
    };
    let send = SendOptions::default();
    let mut echo = Vec::new();
    for _ in 0..SAMPLES {
        let start = Instant::now();
        let out = engine
            .terminal
            .run(&pane, "echo x", &send, spec.clone(), false, &caller)
            .await
            .unwrap();
        echo.push(start.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(out.verdict.exit_status, Some(0), "{:?}", out.verdict);
    }
    let mut verdict = Vec::new();
    for _ in 0..SAMPLES {
        let out = engine
            .terminal
            .run(
                &pane,
                "sleep 0.2; date +%s.%N",
                &send,
                spec.clone(),
                true,
                &caller,
            )
            .await
            .unwrap();
        let seen = now_secs();
        assert_eq!(out.verdict.layer, Layer::Exit, "{:?}", out.verdict);
        let text =
            String::from_utf8_lossy(&strip_ansi_escapes::strip(&out.output.text)).into_owned();
        verdict.push((seen - ended_at(&text)) * 1000.0);
    }
    (echo, verdict)
}

async fn run() {
    let ssh = ssh_support::SshServer::start().expect("sshd");
    let server = support::TestServer::new();
    let local = Arc::new(server.backend().await);
    let backend: Arc<dyn TerminalBackend> = Arc::new(cohort_backends::hosts::Hosts::new(
        local,
        server.config(),
        vec![ssh.host("far")],
    ));
    let engine = Engine::with_backend(backend, server.state_dir(), &server.socket).unwrap();

    let (local_echo, local_verdict) = measure(&engine, "here", None).await;
    let (remote_echo, remote_verdict) = measure(&engine, "there", Some("far")).await;

    // The link's own round trip, over the connection the host shares.
    let host = ssh.host("far");
    let mut link = Vec::new();
    for _ in 0..SAMPLES {
        let start = Instant::now();
        host.run("true", b"").await.unwrap();
        link.push(start.elapsed().as_secs_f64() * 1000.0);
    }

    println!("remote host over ssh (loopback), {SAMPLES} samples each: median / p90 ms");
    let rows = [
        ("ssh exec: ssh HOST true (shared connection)", link),
        ("echo round trip, local", local_echo),
        ("echo round trip, remote", remote_echo),
        ("verdict after the command ended, local", local_verdict),
        ("verdict after the command ended, remote", remote_verdict),
    ];
    let mut medians = Vec::new();
    for (name, samples) in rows {
        let (median, p90) = median_p90(samples);
        medians.push(median);
        println!("  {name:<44} {median:>7.1} / {p90:>7.1}");
    }
    println!(
        "  remote echo - local echo: {:.1} ms (the control connection's round trip over ssh)",
        medians[2] - medians[1]
    );
    println!(
        "  remote verdict - local verdict: {:.1} ms",
        medians[4] - medians[3]
    );
}
