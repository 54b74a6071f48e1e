//! Load: many MCP clients at once, each running commands with unique markers in its
//! sessions; every reply is checked for its own marker (lost output), for anyone
//! else's (cross-talk) and for its verdict (complete, exit 0, decided by the exit
//! layer). Prints the counts and the latency percentiles (`-- --nocapture`).
//!
//! Sizes are small by default so the suite stays quick on two cores; raise them for a
//! local run: `COHORT_LOAD_CLIENTS=8 COHORT_LOAD_SESSIONS=4 COHORT_LOAD_COMMANDS=50
//! cargo test --test reliability reliability_load -- --nocapture`.

use std::time::{Duration, Instant};

use crate::{reliability::*, support::*};
use futures_util::future::join_all;
use serde_json::json;

/// Clients (processes, or HTTP clients of one server).
fn clients() -> usize {
    env_usize("COHORT_LOAD_CLIENTS", 4)
}

/// Sessions per client.
fn sessions() -> usize {
    env_usize("COHORT_LOAD_SESSIONS", 3)
}

/// Commands per session.
fn commands() -> usize {
    env_usize("COHORT_LOAD_COMMANDS", 20)
}

/// Servers sharing sessions in the shared variant.
fn shared_servers() -> usize {
    env_usize("COHORT_LOAD_SHARED_SERVERS", 3)
}

fn new_marker() -> String {
    format!("mk{}", uuid::Uuid::new_v4().simple())
}

/// What the runs came back with.
#[derive(Default)]
struct Tally {
    runs: usize,
    lost: usize,
    cross_talk: usize,
    wrong_verdicts: usize,
    errors: usize,
    latencies: Vec<Duration>,
    examples: Vec<String>,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.runs += other.runs;
        self.lost += other.lost;
        self.cross_talk += other.cross_talk;
        self.wrong_verdicts += other.wrong_verdicts;
        self.errors += other.errors;
        self.latencies.extend(other.latencies);
        self.examples.extend(other.examples);
        self.examples.truncate(6);
    }

    fn note(&mut self, what: String) {
        if self.examples.len() < 5 {
            self.examples.push(what);
        }
    }

    /// Prints the figures under `title`.
    fn print(&mut self, title: &str, wall: Duration) {
        let p50 = percentile(&mut self.latencies, 50.0);
        let p99 = percentile(&mut self.latencies, 99.0);
        let max = self.latencies.last().copied().unwrap_or_default();
        eprintln!(
            "{title}: {} runs in {wall:.1?}; lost {}, cross-talk {}, wrong verdicts {}, errors {}; latency p50 {p50:.1?}, p99 {p99:.1?}, max {max:.1?}",
            self.runs, self.lost, self.cross_talk, self.wrong_verdicts, self.errors
        );
        for e in &self.examples {
            eprintln!("  e.g. {e}");
        }
    }

    fn assert_clean(&self, title: &str) {
        assert!(
            self.lost == 0 && self.cross_talk == 0 && self.wrong_verdicts == 0 && self.errors == 0,
            "{title}: lost {}, cross-talk {}, wrong verdicts {}, errors {} of {} runs; e.g. {:#?}",
            self.lost,
            self.cross_talk,
            self.wrong_verdicts,
            self.errors,
            self.runs,
            self.examples
        );
    }
}

/// Runs `k` commands one after another in `session`, checking each reply.
async fn drive(client: Client, session: String, k: usize) -> Tally {
    let markers = regex::Regex::new("mk[0-9a-f]{32}").expect("marker pattern");
    let mut tally = Tally::default();
    for _ in 0..k {
        let marker = new_marker();
        let started = Instant::now();
        let out = call(
            &client,
            "run",
            json!({"target": session, "command": format!("echo {marker}")}),
        )
        .await;
        tally.latencies.push(started.elapsed());
        tally.runs += 1;
        let result = match out {
            Outcome::Ok(v) => v,
            other => {
                tally.errors += 1;
                tally.note(format!("{session}: {}", other.short()));
                continue;
            }
        };
        let output = result["output"].as_str().unwrap_or_default();
        let verdict = &result["verdict"];
        if !output.lines().any(|l| l.trim() == marker) {
            tally.lost += 1;
            tally.note(format!("{session}: lost {marker}: {result}"));
        }
        if markers.find_iter(output).any(|m| m.as_str() != marker) {
            tally.cross_talk += 1;
            tally.note(format!(
                "{session}: cross-talk in the reply to {marker}: {output:?}"
            ));
        }
        if verdict["complete"] != true || verdict["exit_status"] != 0 || verdict["layer"] != "exit"
        {
            tally.wrong_verdicts += 1;
            tally.note(format!("{session}: verdict {verdict} for {marker}"));
        }
    }
    tally
}

/// Opens `names` through `client`.
async fn open_all(client: &Client, names: &[String]) {
    for name in names {
        call(client, "open", json!({"name": name}))
            .await
            .ok(&format!("open {name}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_stdio_servers_lose_nothing_and_never_cross_talk() {
    let server = TestServer::new();
    let (n, m, k) = (clients(), sessions(), commands());
    let mut children = Vec::new();
    for i in 0..n {
        children.push(mcp_child(&server, &format!("load-{i}"), |_| {}).await);
    }
    let mut work = Vec::new();
    for (i, child) in children.iter().enumerate() {
        let names: Vec<String> = (0..m).map(|j| format!("p{i}-s{j}")).collect();
        open_all(child.client.peer(), &names).await;
        for name in names {
            work.push(drive(child.client.peer().clone(), name, k));
        }
    }
    let started = Instant::now();
    let mut tally = Tally::default();
    for t in join_all(work).await {
        tally.add(t);
    }
    let title = format!("{n} cohort mcp processes × {m} sessions × {k} commands");
    tally.print(&title, started.elapsed());
    for child in &children {
        if let Some((rss, peak)) = memory_kib(child.pid) {
            eprintln!("  server {}: RSS {rss} KiB, peak {peak} KiB", child.pid);
        }
    }
    tally.assert_clean(&title);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_http_clients_of_one_server_lose_nothing_and_never_cross_talk() {
    let server = TestServer::new();
    let served = http_server(&server, "load-http");
    let (n, m, k) = (clients(), sessions(), commands());
    let mut connected = Vec::new();
    for _ in 0..n {
        connected.push(http_client(&served.url).await);
    }
    let mut work = Vec::new();
    for (i, client) in connected.iter().enumerate() {
        let names: Vec<String> = (0..m).map(|j| format!("h{i}-s{j}")).collect();
        open_all(client.peer(), &names).await;
        for name in names {
            work.push(drive(client.peer().clone(), name, k));
        }
    }
    let started = Instant::now();
    let mut tally = Tally::default();
    for t in join_all(work).await {
        tally.add(t);
    }
    let title = format!("{n} HTTP clients of one server × {m} sessions × {k} commands");
    tally.print(&title, started.elapsed());
    if let Some((rss, peak)) = memory_kib(served.pid) {
        eprintln!("  server: RSS {rss} KiB, peak {peak} KiB");
    }
    tally.assert_clean(&title);
}

/// Several servers (a manager's and its workers') run commands in the same sessions
/// at once: each run must still get its own output and exit status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_sharing_sessions_keep_each_runs_output_apart() {
    let server = TestServer::new();
    let (n, m, k) = (shared_servers(), sessions(), commands() / 2);
    let mut children = Vec::new();
    for i in 0..n {
        children.push(mcp_child(&server, &format!("shared-{i}"), |_| {}).await);
    }
    let names: Vec<String> = (0..m).map(|j| format!("shared-s{j}")).collect();
    open_all(children[0].client.peer(), &names).await;
    let mut work = Vec::new();
    for child in &children {
        for name in &names {
            work.push(drive(child.client.peer().clone(), name.clone(), k));
        }
    }
    let started = Instant::now();
    let mut tally = Tally::default();
    for t in join_all(work).await {
        tally.add(t);
    }
    let title = format!("{n} servers sharing {m} sessions × {k} commands each");
    tally.print(&title, started.elapsed());
    tally.assert_clean(&title);
}
