//! Floods: watchers on output that matches thousands of times a second, and a watcher
//! whose own action sets it off. The server must stay answering, keep its memory,
//! threads and descriptors bounded, count every hit and stop the loop. Prints the
//! figures (`-- --nocapture`).
//!
//! Also: thousands of HTTP MCP sessions opened and never deleted.
//!
//! The flood's length is `COHORT_FLOOD_SECONDS` (default 5) rounds of 10,000 lines;
//! the number of sessions `COHORT_FLOOD_SESSIONS` (default 2,000).

use std::time::{Duration, Instant};

use crate::{reliability::*, support::*};
use cohort_orchestration::watch::pace::{BURST, INTERVAL, LOOP_LIMIT};
use serde_json::{json, Value};

/// A server process's resident memory (KiB), threads and open descriptors.
#[derive(Clone, Copy, Debug, Default)]
struct Usage {
    rss_kib: u64,
    threads: u64,
    fds: u64,
}

impl Usage {
    fn of(pid: u32) -> Usage {
        let threads = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Threads:"))
                    .and_then(|v| v.trim().parse().ok())
            })
            .unwrap_or(0);
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| d.count() as u64)
            .unwrap_or(0);
        Usage {
            rss_kib: memory_kib(pid).map_or(0, |(rss, _)| rss),
            threads,
            fds,
        }
    }

    fn max(self, other: Usage) -> Usage {
        Usage {
            rss_kib: self.rss_kib.max(other.rss_kib),
            threads: self.threads.max(other.threads),
            fds: self.fds.max(other.fds),
        }
    }
}

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RSS {:.1} MiB, {} threads, {} descriptors",
            self.rss_kib as f64 / 1024.0,
            self.threads,
            self.fds
        )
    }
}

/// Adds a watcher through the `watch` tool; its id.
async fn add_watch(client: &Client, args: Value) -> String {
    let watch = call(client, "watch", args).await.ok("watch");
    watch["watches"][0]["id"]
        .as_str()
        .expect("an id")
        .to_string()
}

/// The watch notifications `owner` has had from watcher `id`.
async fn notes_from(client: &Client, owner: &str, id: &str) -> Vec<String> {
    let notes = call(
        client,
        "notifications",
        json!({"owner": owner, "all": true}),
    )
    .await
    .ok("notifications");
    notes["notifications"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|n| n["from"] == format!("watch {id}").as_str())
                .filter_map(|n| n["message"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Hits a notification stands for: itself and the `+N more hits` folded into it.
fn hits_in(message: &str) -> u64 {
    let folded = message
        .lines()
        .find_map(|l| l.strip_prefix('+'))
        .and_then(|rest| rest.split_once(" more hits"))
        .and_then(|(n, _)| n.parse::<u64>().ok())
        .unwrap_or(0);
    1 + folded
}

/// The watcher `id` as `list_watches` shows it (Null once it is gone).
async fn listed_watch(client: &Client, id: &str) -> Value {
    let listed = call(client, "list_watches", json!({}))
        .await
        .ok("list_watches");
    listed["watches"]
        .as_array()
        .and_then(|all| all.iter().find(|w| w["id"] == id).cloned())
        .unwrap_or(Value::Null)
}

/// Polls the watcher until `done` holds for it, or `bound` passes; the last view.
async fn watch_until(
    client: &Client,
    id: &str,
    bound: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + bound;
    loop {
        let watch = listed_watch(client, id).await;
        if done(&watch) || Instant::now() >= deadline {
            return watch;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_under_a_flood_stays_bounded_and_counts_every_hit() {
    let rounds = env_usize("COHORT_FLOOD_SECONDS", 5);
    let lines = rounds as u64 * 10_000;
    let server = TestServer::new();
    let mcp = mcp_child(&server, "flood", |_| {}).await;
    let client = mcp.client.peer().clone();
    for name in ["flood", "sink"] {
        call(&client, "open", json!({"name": name}))
            .await
            .ok("open");
    }
    run_ok(&client, "sink", "true").await;
    let id = add_watch(
        &client,
        json!({"target": "flood", "pattern": "HIT", "notify": "lead",
               "send_to": "sink", "send_text": ": acted"}),
    )
    .await;
    let before = Usage::of(mcp.pid);

    // While it floods, the server answers `list`, and its usage is sampled.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (client, stop, pid) = (client.clone(), stop.clone(), mcp.pid);
        tokio::spawn(async move {
            let mut peak = Usage::of(pid);
            let mut latencies = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let asked = Instant::now();
                call(&client, "list", json!({}))
                    .await
                    .ok("list during the flood");
                latencies.push(asked.elapsed());
                peak = peak.max(Usage::of(pid));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (peak, latencies)
        })
    };
    let started = Instant::now();
    let ran = call_within(
        &client,
        "run",
        json!({"target": "flood", "timeout_ms": 300_000,
               "command": format!("for i in $(seq {rounds}); do seq -f 'HIT %g' 10000; sleep 1; done")}),
        Duration::from_secs(320),
    )
    .await
    .ok("the flood");
    let flooded = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (peak, mut latencies) = sampler.await.expect("the sampler");
    assert_eq!(ran["verdict"]["complete"], true, "{ran}");

    // Every hit is counted: the queue drains within a few intervals.
    let counted = watch_until(&client, &id, Duration::from_secs(60), |w| {
        w["hits"].as_u64() == Some(lines)
    })
    .await;
    let drained = started.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = Usage::of(mcp.pid);
    let notes = notes_from(&client, "lead", &id).await;
    let noted: u64 = notes.iter().map(|m| hits_in(m)).sum();
    let acted = notes
        .iter()
        .filter(|m| m.contains("action: typed into sink"))
        .count();
    let p50 = percentile(&mut latencies, 50.0);
    let max = latencies.last().copied().unwrap_or_default();
    eprintln!(
        "watcher flood: {lines} matching lines in {flooded:.1?} (all counted after {drained:.1?}); \
         {} notifications ({acted} actions) stand for {noted} hits",
        notes.len()
    );
    eprintln!(
        "  list during the flood: {} calls, p50 {p50:.1?}, max {max:.1?}",
        latencies.len()
    );
    eprintln!("  before: {before}");
    eprintln!("  peak:   {peak}");
    eprintln!("  after:  {after}");

    assert_eq!(
        counted["hits"].as_u64(),
        Some(lines),
        "hits counted: {counted}"
    );
    assert_eq!(noted, lines, "the notifications account for every hit");
    let allowed = u64::from(BURST) + drained.as_secs() / INTERVAL.as_secs() + 2;
    assert!(
        (notes.len() as u64) <= allowed,
        "{} notifications for a {drained:?} flood; at most {allowed}",
        notes.len()
    );
    assert_eq!(acted, notes.len(), "one action per notification: {notes:?}");
    // Bounds that a task, thread or descriptor per hit would break at once.
    assert!(
        peak.threads <= before.threads + 32,
        "threads grew from {before} to {peak}"
    );
    assert!(
        after.fds <= before.fds + 8,
        "descriptors grew from {before} to {after}"
    );
    assert!(
        after.rss_kib <= before.rss_kib + 64 * 1024,
        "memory grew from {before} to {after}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_sets_itself_off_is_stopped() {
    let server = TestServer::new();
    let mcp = mcp_child(&server, "self-loop", |_| {}).await;
    let client = mcp.client.peer().clone();
    call(&client, "open", json!({"name": "echoes"}))
        .await
        .ok("open");
    run_ok(&client, "echoes", "true").await;
    // Each hit types a command whose output matches again.
    let id = add_watch(
        &client,
        json!({"target": "echoes", "pattern": "PING", "notify": "lead",
               "send_to": "echoes", "send_text": "echo PING"}),
    )
    .await;
    call(
        &client,
        "send",
        json!({"target": "echoes", "text": "echo PING"}),
    )
    .await
    .ok("the first PING");

    let gone = watch_until(&client, &id, Duration::from_secs(60), Value::is_null).await;
    assert!(gone.is_null(), "the looping watcher is still there: {gone}");
    let notes = notes_from(&client, "lead", &id).await;
    let acted = notes
        .iter()
        .filter(|m| m.contains("action: typed into echoes"))
        .count();
    let stopped: Vec<&String> = notes.iter().filter(|m| m.contains("stopped")).collect();
    eprintln!("self-triggering watcher: {acted} actions, then {stopped:?}");
    assert_eq!(stopped.len(), 1, "{notes:#?}");
    assert!(stopped[0].contains("a loop"), "{}", stopped[0]);
    assert_eq!(acted as u32, LOOP_LIMIT, "{notes:#?}");
    // It stays stopped: the pane goes quiet.
    let quiet = call(
        &client,
        "wait_for",
        json!({"targets": ["echoes"], "condition": "quiet", "quiet_ms": 500, "timeout_ms": 20000}),
    )
    .await;
    eprintln!("after the stop: {}", quiet.short());
}

/// One HTTP request to `addr` (host:port), answered in full: the status line, the
/// headers and the body (an event stream the server ends once it has answered).
fn http_post(addr: &str, session: Option<&str>, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(WAIT)).expect("a read timeout");
    let session = session.map_or(String::new(), |id| {
        format!("Mcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-06-18\r\n")
    });
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{session}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// The session id an `initialize` answer gave.
fn session_of(response: &str) -> Option<String> {
    response.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_string())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_http_sessions_never_deleted_keep_the_server_bounded() {
    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"0"}}}"#;
    const PING: &str = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let count = env_usize("COHORT_FLOOD_SESSIONS", 2_000);
    let server = TestServer::new();
    let http = http_server(&server, "sessions");
    let addr = http
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    // The server is warm (its engine started, one client served) before the count.
    let client = http_client(&http.url).await;
    call(client.peer(), "list", json!({})).await.ok("list");
    let before = Usage::of(http.pid);

    let started = Instant::now();
    let mut first = None;
    let mut last = None;
    let mut peak = before;
    for n in 0..count {
        let addr = addr.clone();
        let answer = tokio::task::spawn_blocking(move || http_post(&addr, None, INITIALIZE))
            .await
            .expect("the request");
        let id = session_of(&answer)
            .unwrap_or_else(|| panic!("initialize {n} got no session: {answer}"));
        first.get_or_insert(id.clone());
        last = Some(id);
        if n % 100 == 0 {
            peak = peak.max(Usage::of(http.pid));
        }
    }
    let opened = started.elapsed();
    let after = Usage::of(http.pid);
    let peak = peak.max(after);
    // The server still answers its first client, and the newest session.
    let asked = Instant::now();
    call(client.peer(), "list", json!({}))
        .await
        .ok("list after the sessions");
    let answered = asked.elapsed();
    let (first, last) = (first.expect("a first"), last.expect("a last"));
    let (a, f) = (addr.clone(), first.clone());
    let gone = tokio::task::spawn_blocking(move || http_post(&a, Some(&f), PING))
        .await
        .expect("ping the first");
    let (a, l) = (addr.clone(), last.clone());
    let alive = tokio::task::spawn_blocking(move || http_post(&a, Some(&l), PING))
        .await
        .expect("ping the last");
    eprintln!("{count} HTTP sessions opened in {opened:.1?}, none deleted; list then answered in {answered:.1?}");
    eprintln!("  before: {before}");
    eprintln!("  peak:   {peak}");
    eprintln!("  after:  {after}");

    assert!(
        alive.starts_with("HTTP/1.1 200"),
        "the newest session: {alive}"
    );
    assert!(
        gone.starts_with("HTTP/1.1 404"),
        "the first session: {gone}"
    );
    assert!(
        gone.contains("initialize request"),
        "a closed session's client is told what to do: {gone}"
    );
    // A megabyte per session would be two gigabytes here.
    assert!(
        after.rss_kib <= before.rss_kib + 256 * 1024,
        "memory grew from {before} to {after}"
    );
    assert!(
        after.fds <= before.fds + 16,
        "descriptors grew from {before} to {after}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_bounded_and_closed() {
    use std::io::Read;
    let server = TestServer::new();
    let http = http_server_with(&server, "idle", &["--idle-timeout", "2"]);
    let addr = http
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let client = http_client(&http.url).await;
    call(client.peer(), "list", json!({})).await.ok("list");
    let before = Usage::of(http.pid);

    // 300 connections that never send a byte: past the ceiling (256) they are closed
    // at once, and the rest once idle.
    let opened = Instant::now();
    let mut idle: Vec<std::net::TcpStream> = (0..300)
        .map(|_| std::net::TcpStream::connect(&addr).expect("connect"))
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let peak = Usage::of(http.pid);
    let closed_at_once = idle
        .iter_mut()
        .map(|s| {
            s.set_nonblocking(true).unwrap();
            let mut b = [0u8; 1];
            matches!(s.read(&mut b), Ok(0))
        })
        .filter(|closed| *closed)
        .count();
    let still_open = |s: &mut std::net::TcpStream| {
        let mut b = [0u8; 1];
        matches!(s.read(&mut b), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock)
    };
    let all_closed = {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let open = idle.iter_mut().map(still_open).filter(|open| *open).count();
            if open == 0 {
                break Some(opened.elapsed());
            }
            if Instant::now() > deadline {
                break None;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let asked = Instant::now();
    call(client.peer(), "list", json!({}))
        .await
        .ok("list after the idle connections");
    let answered = asked.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = Usage::of(http.pid);
    eprintln!(
        "300 idle connections: {closed_at_once} closed at once, all closed after {all_closed:?}; list then answered in {answered:.1?}"
    );
    eprintln!("  before: {before}");
    eprintln!("  peak:   {peak}");
    eprintln!("  after:  {after}");
    assert!(
        closed_at_once >= 300 - 256,
        "{closed_at_once} closed at once"
    );
    assert!(all_closed.is_some(), "idle connections stayed open");
    assert!(
        peak.fds <= before.fds + 256 + 8,
        "descriptors grew from {before} to {peak}"
    );
    assert!(
        after.fds <= before.fds + 8,
        "descriptors grew from {before} to {after}"
    );
    drop(idle);
}
