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
//! The same again on a host behind a slower link: a relay that delays every byte by
//! 25 ms each way (the tests' [`Link`](support::link::Link); `tc qdisc … netem` needs a
//! kernel module not every machine has), beside that link's own round trip, measured
//! with a TCP echo through the same relay.
//!
//! Then a worker on each: a fake Claude Code whose turn ends (the answer's timestamp in
//! its transcript) and `wait_workers` returning, on this machine (its hooks through
//! `cohort hook` and the wake socket) and on the remote host (its hooks' notes through
//! the host's tmux, the event fetched in one round trip), also behind the slow link.
//!
//! The target is the link's round trip plus the local figure, with no polling: keys
//! and events go over the control connection that stays open. Prints medians and
//! p90s; asserts nothing.
//! Needs `/usr/sbin/sshd` (Debian's openssh-server); without it, says so and stops.

#[path = "support/agents.rs"]
mod agents;
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
    // The slow host is another server (its own home and tmux): two hosts of one
    // account share its tmux server, and what one says would reach the other's
    // connection too.
    let slow_ssh = ssh_support::SshServer::start().expect("sshd");
    let server = support::TestServer::new();
    let local = Arc::new(server.backend().await);
    let delay = Duration::from_millis(25);
    let slow_link = support::link::Link::start(slow_ssh.port, delay).await;
    let backend: Arc<dyn TerminalBackend> = Arc::new(cohort_backends::hosts::Hosts::new(
        local,
        server.config(),
        vec![ssh.host("far"), slow_ssh.host_through(&slow_link, "slow")],
    ));
    let engine = Engine::with_backend(backend, server.state_dir(), &server.socket).unwrap();

    let (local_echo, local_verdict) = measure(&engine, "here", None).await;
    let (remote_echo, remote_verdict) = measure(&engine, "there", Some("far")).await;
    let (slow_echo, slow_verdict) = measure(&engine, "slow", Some("slow")).await;
    let slow_rtt = echo_round_trips(delay).await;

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
        ("link round trip, 25 ms each way (TCP echo)", slow_rtt),
        ("echo round trip, remote behind that link", slow_echo),
        ("verdict after the command ended, behind it", slow_verdict),
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
    println!(
        "  behind the slow link: echo = {:.2} link round trips + {:.1} ms; verdict = {:.2} one-way delays + {:.1} ms",
        medians[6] / medians[5],
        medians[6] - medians[5],
        medians[7] / (medians[5] / 2.0),
        medians[7] - medians[5] / 2.0,
    );

    engine
        .workers
        .configure_workers(|s| s.program = Some(env!("CARGO_BIN_EXE_cohort").into()));
    let agents_dir = tempfile::tempdir().unwrap();
    let turns = [
        ("here", None),
        ("there", Some("far")),
        ("slow", Some("slow")),
    ];
    println!("turn end (the answer in the agent's transcript) -> wait_workers returns, a fake Claude Code worker, {TURNS} turns each: median / p90 ms");
    let mut turn_medians = Vec::new();
    for (name, host) in turns {
        let samples = turn_ends(&engine, agents_dir.path(), name, host).await;
        let (median, p90) = median_p90(samples);
        turn_medians.push(median);
        let place = host.map_or("this machine".to_string(), |h| format!("host {h}"));
        println!("  worker on {place:<38} {median:>7.1} / {p90:>7.1}");
    }
    println!(
        "  remote - local: {:.1} ms; behind the slow link - local: {:.2} link round trips",
        turn_medians[1] - turn_medians[0],
        (turn_medians[2] - turn_medians[0]) / medians[5],
    );
}

/// Turns measured per worker.
const TURNS: usize = 10;

/// How long after each of a worker's turns ended (its answer's time in its
/// transcript) `wait_workers` returned, for a fake Claude Code spawned on `host`.
async fn turn_ends(
    engine: &Engine,
    dir: &std::path::Path,
    name: &str,
    host: Option<&str>,
) -> Vec<f64> {
    use cohort_workers::messages::{After, WaitMode};
    use cohort_workers::spawn::{SpawnLayout, SpawnRequest, WorkerSpec};
    use cohort_workers::{AgentKind, LaunchSpec};
    let bin = dir.join("bin");
    let home = dir.join("home");
    let work = dir.join(format!("work-{name}"));
    for d in [&bin, &home, &work] {
        std::fs::create_dir_all(d).unwrap();
    }
    let env = agents::agent_env(&bin, &home);
    let spawned = engine
        .workers
        .spawn_workers(SpawnRequest {
            workers: vec![WorkerSpec {
                name: Some(format!("bench-{name}")),
                launch: LaunchSpec {
                    agent: AgentKind::Claude,
                    env,
                    host: host.map(str::to_string),
                    ..LaunchSpec::default()
                },
                project: Some(work.display().to_string()),
                worktree: Some(false),
                ..WorkerSpec::default()
            }],
            layout: SpawnLayout::Windows,
            ..SpawnRequest::default()
        })
        .await
        .expect("spawn");
    let row = spawned[0].row.clone().expect("started");
    let mut out = Vec::new();
    for i in 0..TURNS {
        let prompt = format!("[[work 200]] turn {i}");
        let expected = cohort_fake_agent::script::answer(&prompt);
        let sent = engine
            .workers
            .submit_prompt(&row, &prompt, false, false)
            .await
            .expect("submit");
        let after = std::collections::HashMap::from([(row.id.clone(), After::Prompt(sent.at_ms))]);
        let waited = engine
            .workers
            .wait_workers(
                std::slice::from_ref(&row),
                WaitMode::All,
                Duration::from_secs(30),
                &after,
                &|_| {},
            )
            .await
            .expect("wait");
        let returned = cohort_workers::events::now_ms();
        assert!(!waited.timed_out, "{name}: turn {i} timed out");
        // The transcript is a file of this machine here (the host is this machine).
        let seen = engine.workers.observe(&row, false).await.expect("observe");
        let transcript = seen.transcript.expect("a transcript");
        let mut ended = None;
        for _ in 0..100 {
            ended = agents::answer_time(&transcript, &expected);
            if ended.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        out.push((returned - ended.expect("the answer in the transcript")) as f64);
    }
    let _ = engine.workers.close_workers(&[row], true, false).await;
    out
}

/// Round trips (ms) of a few bytes through a relay with `delay` each way to a TCP
/// echo server: the link's own round trip.
async fn echo_round_trips(delay: Duration) -> Vec<f64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 64];
        while let Ok(n) = socket.read(&mut buf).await {
            if n == 0 || socket.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    });
    let link = support::link::Link::start(port, delay).await;
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", link.port))
        .await
        .unwrap();
    stream.set_nodelay(true).unwrap();
    let mut samples = Vec::new();
    let mut buf = [0u8; 4];
    for _ in 0..SAMPLES {
        let start = Instant::now();
        stream.write_all(b"ping").await.unwrap();
        stream.read_exact(&mut buf).await.unwrap();
        samples.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    samples
}
