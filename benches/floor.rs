//! cohort against the floor, from the outside: `cohort mcp` started over stdio and
//! driven through its tools as an MCP host drives it, beside a plain `tmux` CLI
//! baseline doing the same work on a server of its own, in the same run.
//!
//! For each scenario it prints cohort's median and p90, the baseline's, and the
//! ratio:
//! - one tmux CLI round trip (`tmux display-message -p`): the unit the others are
//!   measured in;
//! - echo: `run("echo marker")` until its reply, against `send-keys` and
//!   `capture-pane` polled back to back until the marker is printed;
//! - verdict: how long after a command ends (its own `date +%s.%N`) cohort reports
//!   it done, against the same polling until the prompt is back after the date;
//! - Ctrl-C: `key C-c` on `sleep 30` until the shell is known to be back;
//! - `seq 1 200000`: until the verdict with its reduced reply (and the first line
//!   still retrievable), against polling until a marker printed after it shows;
//! - 8 sessions opened at once, each until its shell's first prompt, against 8
//!   `new-window` calls polled until each shows a prompt;
//! - memory: the server's RSS after `initialize`, and its and its tmux server's with
//!   1 and 8 sessions, then after `seq 1 200000`; a plain tmux server's with 8 windows.
//!
//! Asserts nothing; these machines are shared, so only ratios within one run mean
//! much.
//!
//! The server is `cargo bench`'s build of cohort unless `COHORT_FLOOR_BINARY` names
//! another. That build's dependencies have the features the dev-dependencies add, so
//! its symbols have other names than a `cargo build --release`'s and the release
//! symbol order (build.rs) matches little of it: its memory is that of a binary in
//! the linker's order, and the bench says how much of the order it matched. For the
//! memory users get, measure the release build:
//! `cargo build --release && cp target/release/cohort /tmp/cohort &&
//! COHORT_FLOOR_BINARY=/tmp/cohort cargo bench --bench floor`.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

const SAMPLES: usize = 10;
const SESSIONS: usize = 8;

/// A tmux server on its own socket, killed on drop.
struct Tmux(String);

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("tmux")
            .args(["-L", &self.0])
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn pid(&self) -> Option<u32> {
        self.run(&["display-message", "-p", "#{pid}"])
            .trim()
            .parse()
            .ok()
    }

    fn capture(&self, target: &str) -> String {
        self.run(&["capture-pane", "-p", "-t", target])
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .env_remove("TMUX")
            .stderr(Stdio::null())
            .status();
    }
}

/// A `cohort mcp` child and the JSON-RPC lines it answers on stdout.
struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Server {
    async fn start(binary: &str, socket: &str, state: &Path, home: &Path) -> Server {
        let mut child = tokio::process::Command::new(binary)
            .arg("mcp")
            .env("COHORT_TMUX_SOCKET", socket)
            .env("COHORT_STATE_DIR", state)
            .env("HOME", home)
            .env_remove("TMUX")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("cohort mcp starts");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut server = Server {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        let init = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "floor-bench", "version": "0"}
        });
        server.request("initialize", init).await;
        server
            .write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        server
    }

    async fn write(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Sends requests back to back, then waits for every answer; results in order.
    async fn requests(&mut self, calls: &[(&str, Value)]) -> Vec<Value> {
        let mut waiting = HashMap::new();
        for (index, (method, params)) in calls.iter().enumerate() {
            let id = self.next_id;
            self.next_id += 1;
            waiting.insert(id, index);
            let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            self.write(&message).await;
        }
        let mut results = vec![Value::Null; calls.len()];
        while !waiting.is_empty() {
            let line = self
                .lines
                .next_line()
                .await
                .unwrap()
                .expect("cohort answers");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            let Some(index) = message["id"].as_u64().and_then(|id| waiting.remove(&id)) else {
                continue; // a notification
            };
            if let Some(error) = message.get("error") {
                panic!("{}: {error}", calls[index].0);
            }
            results[index] = message["result"].clone();
        }
        results
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.requests(&[(method, params)]).await.remove(0)
    }

    /// Calls tools at once; their structured results, in order.
    async fn tools(&mut self, calls: &[(&str, Value)]) -> Vec<Value> {
        let calls: Vec<_> = calls
            .iter()
            .map(|(name, args)| ("tools/call", json!({"name": name, "arguments": args})))
            .collect();
        self.requests(&calls)
            .await
            .into_iter()
            .zip(&calls)
            .map(|(result, (_, call))| {
                assert!(
                    result["isError"] != json!(true),
                    "{call}: {}",
                    result["content"]
                );
                result["structuredContent"].clone()
            })
            .collect()
    }

    async fn tool(&mut self, name: &str, args: Value) -> Value {
        self.tools(&[(name, args)]).await.remove(0)
    }

    fn rss_mib(&self) -> Option<(f64, f64)> {
        rss_mib(self.child.id()?)
    }
}

/// A process's resident memory in MiB: all of it, and the part that is its own
/// (anonymous: heap, stacks), the rest being its program's pages mapped from the page
/// cache, shared with every process running the same binary.
fn rss_mib(pid: u32) -> Option<(f64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<f64> {
        let kib: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        Some(kib / 1024.0)
    };
    Some((field("VmRSS:")?, field("RssAnon:")?))
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// The last `date +%s.%N` value in `text`.
fn ended_at(text: &str) -> f64 {
    text.lines()
        .filter_map(|l| l.trim().parse::<f64>().ok())
        .rfind(|v| *v > 1e9)
        .expect("the command printed its end time")
}

/// Polls the baseline pane back to back until `done` says yes; the screen it saw.
fn poll(base: &Tmux, target: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let screen = base.capture(target);
        if done(&screen) || Instant::now() > deadline {
            return screen;
        }
    }
}

/// Whether a line of the screen is exactly `text` (output, not the typed command).
fn has_line(screen: &str, text: &str) -> bool {
    screen.lines().any(|l| l.trim_end() == text)
}

/// The shell's prompt is back on the last non-empty row.
fn prompt_back(screen: &str) -> bool {
    screen
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.trim_end().ends_with('$'))
}

/// How much of the symbol order a release build is linked with (build.rs) names
/// functions of `binary`: the part of its memory figures the order can explain.
fn symbol_order_matched(binary: &Path) -> String {
    if !cfg!(all(
        target_arch = "x86_64",
        target_os = "linux",
        target_env = "gnu"
    )) {
        return "no symbol order for this platform".into();
    }
    let list = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("packaging/symbol-order/x86_64-unknown-linux-gnu.txt");
    let Ok(list) = std::fs::read_to_string(&list) else {
        return "no symbol order for this machine".into();
    };
    let Ok(out) = std::process::Command::new("nm").arg(binary).output() else {
        return "symbol order not checked: nm is missing".into();
    };
    let symbols: std::collections::HashSet<&str> = std::str::from_utf8(&out.stdout)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_whitespace().last())
        .collect();
    let listed: Vec<&str> = list
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    let found = listed.iter().filter(|name| symbols.contains(*name)).count();
    format!(
        "{found} of the {} functions in the symbol order found in it",
        listed.len()
    )
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}

async fn bench() {
    let floor_binary = std::env::var("COHORT_FLOOR_BINARY").ok();
    let binary = floor_binary
        .as_deref()
        .unwrap_or(env!("CARGO_BIN_EXE_cohort"));
    println!(
        "server: {binary} ({})",
        symbol_order_matched(Path::new(binary))
    );
    let id = std::process::id();
    let state = tempfile::tempdir().unwrap();
    // cohort's shells start with an empty home, as the baseline's start without rc
    // files: what a user's own rc files cost (a `pyenv init` is 100 ms) is not
    // cohort's, and would drown what is.
    let home = state.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let cohort_tmux = Tmux(format!("floor-cohort-{id}"));
    let base = Tmux(format!("floor-base-{id}"));
    // The baseline's shell is plain bash with a `$` prompt and no rc files.
    base.run(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "base",
        "-x",
        "200",
        "-y",
        "50",
        "env -i HOME=/tmp TERM=xterm PS1='$ ' bash --norc --noprofile",
    ]);
    poll(&base, "base", prompt_back);

    let mut figures: Vec<(String, Vec<f64>, Vec<f64>)> = Vec::new();
    let mut memory: Vec<(String, Option<(f64, f64)>)> = Vec::new();

    // The unit: one tmux CLI round trip.
    let mut unit = Vec::new();
    for _ in 0..SAMPLES * 2 {
        let t = Instant::now();
        base.run(&["display-message", "-p", "x"]);
        unit.push(ms(t));
    }

    let started = Instant::now();
    let mut server = Server::start(binary, &cohort_tmux.0, state.path(), &home).await;
    let start_ms = ms(started);
    memory.push(("cohort after initialize".into(), server.rss_mib()));

    server.tool("open", json!({"name": "s0"})).await;

    // Echo.
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for i in 0..SAMPLES {
        let marker = format!("marker-{i}");
        let t = Instant::now();
        let out = server
            .tool(
                "run",
                json!({"target": "s0", "command": format!("echo {marker}")}),
            )
            .await;
        ours.push(ms(t));
        assert_eq!(out["output"].as_str().unwrap().trim(), marker);
        let t = Instant::now();
        base.run(&[
            "send-keys",
            "-t",
            "base",
            &format!("echo {marker}"),
            "Enter",
        ]);
        poll(&base, "base", |s| has_line(s, &marker));
        theirs.push(ms(t));
    }
    figures.push(("echo round trip".into(), ours, theirs));

    // Verdict: from the command's own end.
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let command = "sleep 0.2; date +%s.%N";
    for _ in 0..SAMPLES {
        let out = server
            .tool("run", json!({"target": "s0", "command": command}))
            .await;
        let seen = now_secs();
        assert_eq!(out["verdict"]["exit_status"], json!(0), "{out}");
        ours.push((seen - ended_at(out["output"].as_str().unwrap())) * 1000.0);
        base.run(&["send-keys", "-t", "base", "clear", "Enter"]);
        poll(&base, "base", |s| !s.contains("date +%s"));
        base.run(&["send-keys", "-t", "base", command, "Enter"]);
        let screen = poll(&base, "base", |s| {
            s.lines().any(|l| l.trim().parse::<f64>().is_ok()) && prompt_back(s)
        });
        let seen = now_secs();
        theirs.push((seen - ended_at(&screen)) * 1000.0);
    }
    figures.push(("verdict after the command ends".into(), ours, theirs));

    memory.push(("cohort, 1 session".into(), server.rss_mib()));
    memory.push((
        "its tmux server, 1 session".into(),
        cohort_tmux.pid().and_then(rss_mib),
    ));

    // Ctrl-C.
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        server
            .tool(
                "run",
                json!({"target": "s0", "command": "sleep 30", "timeout_ms": 100}),
            )
            .await;
        let t = Instant::now();
        server
            .tools(&[
                ("key", json!({"target": "s0", "keys": ["C-c"]})),
                (
                    "read",
                    json!({"target": "s0", "wait": true, "timeout_ms": 5000}),
                ),
            ])
            .await;
        ours.push(ms(t));
        base.run(&["send-keys", "-t", "base", "clear", "Enter"]);
        poll(&base, "base", |s| !s.contains("sleep 30"));
        base.run(&["send-keys", "-t", "base", "sleep 30", "Enter"]);
        poll(&base, "base", |s| s.contains("sleep 30"));
        std::thread::sleep(Duration::from_millis(100));
        let t = Instant::now();
        base.run(&["send-keys", "-t", "base", "C-c"]);
        poll(&base, "base", |s| s.contains("^C") && prompt_back(s));
        theirs.push(ms(t));
    }
    figures.push(("Ctrl-C until the shell is back".into(), ours, theirs));

    // Sessions opened at once.
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for round in 0..3 {
        let names: Vec<String> = (0..SESSIONS).map(|i| format!("o{round}-{i}")).collect();
        let calls: Vec<(&str, Value)> =
            names.iter().map(|n| ("open", json!({"name": n}))).collect();
        let t = Instant::now();
        server.tools(&calls).await;
        ours.push(ms(t));
        if round == 0 {
            memory.push((
                format!("cohort, {} sessions", SESSIONS + 1),
                server.rss_mib(),
            ));
            memory.push((
                format!("its tmux server, {} sessions", SESSIONS + 1),
                cohort_tmux.pid().and_then(rss_mib),
            ));
        }
        let closes: Vec<(&str, Value)> = names
            .iter()
            .map(|n| ("close", json!({"target": n})))
            .collect();
        server.tools(&closes).await;

        let t = Instant::now();
        for name in &names {
            base.run(&[
                "new-window",
                "-d",
                "-n",
                name,
                "env -i HOME=/tmp TERM=xterm PS1='$ ' bash --norc --noprofile",
            ]);
        }
        for name in &names {
            poll(&base, &format!("base:{name}"), prompt_back);
        }
        theirs.push(ms(t));
        if round == 0 {
            memory.push((
                format!("plain tmux server, {} windows", SESSIONS + 1),
                base.pid().and_then(rss_mib),
            ));
        }
        for name in &names {
            base.run(&["kill-window", "-t", &format!("base:{name}")]);
        }
    }
    figures.push((format!("{SESSIONS} sessions opened at once"), ours, theirs));

    // seq 1 200000.
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let mut first_line_kept = true;
    for i in 0..SAMPLES / 2 {
        let t = Instant::now();
        let out = server
            .tool(
                "run",
                json!({"target": "s0", "command": "seq 1 200000", "timeout_ms": 60000}),
            )
            .await;
        ours.push(ms(t));
        assert_eq!(out["verdict"]["complete"], json!(true), "{out}");
        assert!(out["output"]
            .as_str()
            .unwrap()
            .trim_end()
            .ends_with("200000"));
        let first = out["verdict"]["output_start_line"]
            .as_u64()
            .or_else(|| first_line_of(&out["meta"]));
        if let Some(first) = first {
            let read = server
                .tool(
                    "read",
                    json!({"target": "s0", "mode": "lines", "lines": format!("{first}-{}", first + 1)}),
                )
                .await;
            first_line_kept &= read["output"]
                .as_str()
                .unwrap_or("")
                .lines()
                .any(|l| l.trim() == "1");
        }
        let marker = format!("seq-done-{i}");
        let t = Instant::now();
        base.run(&[
            "send-keys",
            "-t",
            "base",
            &format!("seq 1 200000; echo {marker}"),
            "Enter",
        ]);
        poll(&base, "base", |s| has_line(s, &marker));
        theirs.push(ms(t));
    }
    figures.push(("seq 1 200000 to verdict and reply".into(), ours, theirs));
    memory.push(("cohort after seq 1 200000 ×5".into(), server.rss_mib()));
    memory.push((
        "its tmux server after seq 1 200000 ×5".into(),
        cohort_tmux.pid().and_then(rss_mib),
    ));

    let unit_median = median(&mut unit);
    println!("cohort against a plain tmux CLI baseline, from the outside ({SAMPLES} samples)");
    println!(
        "one tmux CLI round trip: median {unit_median:.2} ms, p90 {:.2} ms",
        percentile(&mut unit, 0.9)
    );
    println!("cohort start to `initialize` answered: {start_ms:.1} ms");
    println!(
        "{:<36} {:>10} {:>10} {:>10} {:>10} {:>8} {:>9}",
        "scenario", "cohort", "p90", "baseline", "p90", "ratio", "in trips"
    );
    for (name, mut ours, mut theirs) in figures {
        let (o, t) = (median(&mut ours), median(&mut theirs));
        println!(
            "{name:<36} {o:>8.1}ms {:>8.1}ms {t:>8.1}ms {:>8.1}ms {:>7.2}x {:>9.1}",
            percentile(&mut ours, 0.9),
            percentile(&mut theirs, 0.9),
            o / t,
            o / unit_median,
        );
    }
    println!("first line of seq 1 200000 still retrievable: {first_line_kept}");
    println!("{:<44} {:>12} {:>14}", "memory", "RSS", "of it its own");
    for (name, mib) in memory {
        match mib {
            Some((all, own)) => println!("{name:<44} {all:>8.1} MiB {own:>10.1} MiB"),
            None => println!("{name:<44} {:>12}", "unknown"),
        }
    }
    drop(server);
}

/// The first journal line a meta line names (`lines A-B of N`).
fn first_line_of(meta: &Value) -> Option<u64> {
    let meta = meta.as_str()?;
    let rest = meta.split("lines ").nth(1)?;
    rest.split(['-', ' ']).next()?.parse().ok()
}

fn median(v: &mut [f64]) -> f64 {
    percentile(v, 0.5)
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}
