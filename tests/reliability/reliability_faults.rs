//! Faults under a running `cohort mcp`, driven as a user would through rmcp's client:
//! the tmux server killed mid-run, cohort killed mid-wait, the registry locked or
//! overwritten, the state directory deleted, the spill files unwritable. Each test
//! names the clear answer it expects and prints what it saw (`-- --nocapture`).

use std::time::{Duration, Instant};

use crate::{reliability::*, support::*};
use serde_json::json;

fn marker(label: &str) -> String {
    format!("{label}-{}", uuid::Uuid::new_v4().simple())
}

fn registry_path(server: &TestServer) -> std::path::PathBuf {
    server.state_dir().join("registry.db")
}

/// Polls `status` until `target`'s foreground program is `program`.
async fn wait_foreground(client: &Client, target: &str, program: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let status = call(client, "status", json!({"target": target}))
            .await
            .ok("status");
        if status["session"]["foreground"] == program {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{target} never ran {program}: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn output_of(v: &serde_json::Value) -> &str {
    v["output"].as_str().unwrap_or_default()
}

/// Session names in the registry file, read by a separate connection; also checks
/// the file's integrity.
fn registry_names(server: &TestServer) -> Vec<String> {
    let db = rusqlite::Connection::open(registry_path(server)).expect("open the registry");
    let check: String = db
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .expect("quick_check");
    assert_eq!(check, "ok", "the registry is damaged");
    let mut stmt = db
        .prepare("SELECT name FROM sessions ORDER BY name")
        .expect("query sessions");
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .expect("rows")
        .collect::<Result<Vec<_>, _>>()
        .expect("names");
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tmux_killed_mid_run_answers_closed_and_the_same_name_opens_again() {
    let server = TestServer::new();
    let mcp = mcp_child(&server, "kill-tmux", |_| {}).await;
    let client = mcp.client.peer().clone();
    call(&client, "open", json!({"name": "victim"}))
        .await
        .ok("open victim");

    let runner = client.clone();
    let run = tokio::spawn(async move {
        let started = Instant::now();
        let out = call(
            &runner,
            "run",
            json!({"target": "victim", "command": "sleep 30; echo never", "timeout_ms": 60000}),
        )
        .await;
        (out, started.elapsed())
    });
    wait_foreground(&client, "victim", "sleep").await;
    tmux(&server, &["kill-server"]);
    let (out, took) = run.await.expect("the run task");
    eprintln!("run after kill-server: {} in {took:?}", out.short());
    let verdict = out.ok("the interrupted run")["verdict"].clone();
    assert_eq!(verdict["layer"], "closed", "{verdict}");
    assert_eq!(verdict["complete"], false, "{verdict}");

    let listed = listed_names(&client).await;
    eprintln!(
        "after kill-server: list {listed:?}, registry {:?}",
        registry_names(&server)
    );
    assert!(
        listed.is_empty(),
        "list shows sessions that died: {listed:?}"
    );

    let reopened = call(&client, "open", json!({"name": "victim"})).await;
    eprintln!("open of the same name: {}", reopened.short());
    reopened.ok("open of the same name after kill-server");
    let m = marker("again");
    let ran = run_ok(&client, "victim", &format!("echo {m}")).await;
    assert_eq!(ran["verdict"]["exit_status"], 0, "{ran}");
    assert!(output_of(&ran).contains(&m), "{ran}");
    assert_eq!(listed_names(&client).await, vec!["victim".to_string()]);
    assert_eq!(registry_names(&server), vec!["victim".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cohort_killed_mid_wait_leaves_panes_a_new_server_adopts_with_history() {
    let server = TestServer::new();
    let first = mcp_child(&server, "first", |_| {}).await;
    let client = first.client.peer().clone();
    call(&client, "open", json!({"name": "survivor"}))
        .await
        .ok("open survivor");
    let before = marker("before");
    run_ok(&client, "survivor", &format!("echo {before}")).await;

    let late = marker("late");
    let runner = client.clone();
    // The marker is printed, not typed: its echo on the screen must not pass for the
    // command's output.
    let (head, tail) = late.split_at(4);
    let command = format!("sleep 2; printf '%s%s\\n' {head} {tail}");
    let run = tokio::spawn(async move {
        call(
            &runner,
            "run",
            json!({"target": "survivor", "command": command}),
        )
        .await
    });
    wait_foreground(&client, "survivor", "sleep").await;
    // SAFETY: kill(2) on the child this test started.
    assert_eq!(unsafe { libc::kill(first.pid as i32, libc::SIGKILL) }, 0);
    let out = run.await.expect("the run task");
    eprintln!("the interrupted client saw: {}", out.short());
    assert!(
        matches!(out, Outcome::Gone(_)),
        "the client of a killed server must see the connection end: {}",
        out.short()
    );
    assert!(eventually(WAIT, || !alive(first.pid)).await);

    // The pane lives on and finishes its command without cohort.
    let panes = tmux(
        &server,
        &["list-panes", "-a", "-F", "#{pane_id} #{window_name}"],
    );
    eprintln!("panes after kill -9: {panes:?}");
    let pane = panes
        .lines()
        .find_map(|l| l.strip_suffix(" survivor"))
        .unwrap_or_else(|| panic!("the pane died with cohort: {panes:?}"))
        .to_string();
    let finished = eventually(WAIT, || {
        tmux(&server, &["capture-pane", "-p", "-t", &pane]).contains(&late)
    })
    .await;
    assert!(finished, "the command never finished in the orphaned pane");

    let second = mcp_child(&server, "second", |_| {}).await;
    let client = second.client.peer().clone();
    let listed = listed_names(&client).await;
    eprintln!("the new server lists {listed:?}");
    assert_eq!(listed, vec!["survivor".to_string()]);
    let all = call(
        &client,
        "read",
        json!({"target": "survivor", "mode": "all", "raw": true}),
    )
    .await
    .ok("read all in the new server");
    let text = output_of(&all);
    eprintln!(
        "history read back: {} bytes; before marker {}, late marker {}",
        text.len(),
        text.contains(&before),
        text.contains(&late)
    );
    assert!(text.contains(&before) && text.contains(&late), "{all}");
    let again = marker("again");
    let ran = run_ok(&client, "survivor", &format!("echo {again}")).await;
    assert_eq!(ran["verdict"]["layer"], "exit", "{ran}");
    assert!(output_of(&ran).contains(&again), "{ran}");
    let stale = server
        .state_dir()
        .join("journal")
        .join(first.pid.to_string());
    eprintln!(
        "the dead server's journal directory left behind: {}",
        stale.exists()
    );
    assert!(!stale.exists(), "{} was not cleaned up", stale.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_locked_by_another_process_gets_clear_answers() {
    let server = TestServer::new();
    let mcp = mcp_child(&server, "locked", |_| {}).await;
    let client = mcp.client.peer().clone();
    call(&client, "open", json!({"name": "held"}))
        .await
        .ok("open held");
    run_ok(&client, "held", "true").await;

    // Another process takes the database's write lock and keeps it.
    let path = registry_path(&server);
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (locked, is_locked) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let db = rusqlite::Connection::open(&path).expect("open the registry");
        db.execute_batch("BEGIN EXCLUSIVE").expect("take the lock");
        locked.send(()).unwrap();
        let _ = released.recv_timeout(Duration::from_secs(120));
        db.execute_batch("ROLLBACK").expect("release the lock");
    });
    is_locked.recv().unwrap();

    let m = marker("while-locked");
    let started = Instant::now();
    let (ran, opened, status) = tokio::join!(
        async {
            let out = call(
                &client,
                "run",
                json!({"target": "held", "command": format!("echo {m}")}),
            )
            .await;
            (out, started.elapsed())
        },
        async {
            let out = call(&client, "open", json!({"name": "new-while-locked"})).await;
            (out, started.elapsed())
        },
        async {
            let out = call(&client, "status", json!({})).await;
            (out, started.elapsed())
        },
    );
    eprintln!("with the registry locked:");
    eprintln!(
        "  run in a held session: {} after {:?}",
        ran.0.short(),
        ran.1
    );
    eprintln!("  open: {} after {:?}", opened.0.short(), opened.1);
    eprintln!("  status: {} after {:?}", status.0.short(), status.1);
    release.send(()).unwrap();
    holder.join().unwrap();

    let ran = ran.0.ok("run in a session the server holds");
    assert_eq!(ran["verdict"]["exit_status"], 0, "{ran}");
    assert!(output_of(&ran).contains(&m), "{ran}");
    match opened.0 {
        Outcome::Ok(_) => {}
        other => {
            let message = other.error("open while locked");
            assert!(
                message.contains("registry.db") && message.to_lowercase().contains("lock"),
                "the error should name the file and say it is locked: {message}"
            );
        }
    }
    let status = status.0.ok("status while locked");
    let warning = status["registry_warning"].as_str().unwrap_or_default();
    assert!(
        warning.to_lowercase().contains("lock"),
        "status should say the registry is locked: {status}"
    );

    call(&client, "open", json!({"name": "after-lock"}))
        .await
        .ok("open after the lock was released");
    let listed = listed_names(&client).await;
    assert!(listed.contains(&"held".into()) && listed.contains(&"after-lock".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_overwritten_with_garbage_is_kept_aside_and_sessions_keep_working() {
    let server = TestServer::new();
    let mcp = mcp_child(&server, "garbage", |_| {}).await;
    let client = mcp.client.peer().clone();
    call(&client, "open", json!({"name": "kept"}))
        .await
        .ok("open kept");
    run_ok(&client, "kept", "true").await;

    // Another process overwrites the file in place, and its write-ahead log.
    let garbage: Vec<u8> = b"this is not a database\n".repeat(4096);
    std::fs::write(registry_path(&server), &garbage).expect("overwrite the registry");
    let wal = server.state_dir().join("registry.db-wal");
    if wal.exists() {
        std::fs::write(&wal, &garbage).expect("overwrite the log");
    }

    let m = marker("after-garbage");
    let ran = call(
        &client,
        "run",
        json!({"target": "kept", "command": format!("echo {m}")}),
    )
    .await;
    let opened = call(&client, "open", json!({"name": "fresh"})).await;
    let status = call(&client, "status", json!({})).await;
    eprintln!("with the registry overwritten:");
    eprintln!("  run in a held session: {}", ran.short());
    eprintln!("  open: {}", opened.short());
    eprintln!("  status: {}", status.short());
    let files: Vec<String> = std::fs::read_dir(server.state_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    eprintln!("  state directory: {files:?}");

    let ran = ran.ok("run in a session the server holds");
    assert!(output_of(&ran).contains(&m), "{ran}");
    if !matches!(opened, Outcome::Ok(_)) {
        let message = opened.error("open");
        assert!(message.contains("registry.db"), "{message}");
    }
    let status = status.ok("status");
    let warning = status["registry_warning"].as_str().unwrap_or_default();
    assert!(
        warning.contains("registry.db"),
        "status should report the registry's state: {status}"
    );
    // SQLite may have written pages into the garbage since, so only its presence is
    // checked, not its bytes.
    assert!(
        files
            .iter()
            .any(|f| f.starts_with("registry") && f.contains("corrupt")),
        "no backup of the damaged file kept: {files:?}"
    );
    let listed = listed_names(&client).await;
    assert!(listed.contains(&"kept".to_string()), "{listed:?}");
    let names = registry_names(&server);
    assert!(names.contains(&"kept".to_string()), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_state_directory_does_not_blame_the_users_startup_files() {
    let server = TestServer::new();
    let mcp = mcp_child(&server, "deleted", |_| {}).await;
    let client = mcp.client.peer().clone();
    call(&client, "open", json!({"name": "early"}))
        .await
        .ok("open early");
    std::fs::remove_dir_all(server.state_dir()).expect("delete the state directory");

    let started = Instant::now();
    let opened = call(&client, "open", json!({"name": "after-delete"})).await;
    let took = started.elapsed();
    eprintln!(
        "open after deleting the state directory: {} in {took:?}",
        opened.short()
    );
    let opened = opened.ok("open after deleting the state directory");
    let notice = opened["notice"].as_str().unwrap_or_default();
    assert!(
        !notice.contains("startup files"),
        "the user's startup files are blamed: {notice}"
    );
    let m = marker("after-delete");
    let ran = run_ok(&client, "after-delete", &format!("echo {m}")).await;
    eprintln!("run there: verdict {}", ran["verdict"]);
    assert_eq!(ran["verdict"]["layer"], "exit", "{ran}");
    assert!(output_of(&ran).contains(&m), "{ran}");
    let ran = run_ok(&client, "early", "echo still-here").await;
    assert_eq!(ran["verdict"]["layer"], "exit", "{ran}");
    eprintln!(
        "registry file there again: {}",
        registry_path(&server).exists()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unwritable_spill_files_keep_memory_bounded_and_reads_say_what_was_dropped() {
    let server = TestServer::new();
    // Root ignores directory permissions, so the disk "fills" through a file-size
    // limit instead: every write past 4 MiB fails with EFBIG, as on a full disk.
    const LIMIT: libc::rlim_t = 4 * 1024 * 1024;
    let mcp = mcp_child(&server, "spill", |c| {
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            c.pre_exec(|| {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit {
                    rlim_cur: LIMIT,
                    rlim_max: LIMIT,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    })
    .await;
    let client = mcp.client.peer().clone();
    call(&client, "open", json!({"name": "flood"}))
        .await
        .ok("open flood");
    let before = memory_kib(mcp.pid).unwrap_or_default();
    // About 11 MB of output, well past the limit.
    let ran = call(
        &client,
        "run",
        json!({"target": "flood", "command": "seq 1 1500000", "timeout_ms": 120000}),
    )
    .await
    .ok("run seq");
    assert_eq!(ran["verdict"]["exit_status"], 0, "{}", ran["verdict"]);
    let status = call(&client, "status", json!({})).await.ok("status");
    let journal_kib = status["journal_memory_kib"].as_u64().unwrap_or(u64::MAX);
    let after = memory_kib(mcp.pid).unwrap_or_default();
    let head = call(
        &client,
        "read",
        json!({"target": "flood", "mode": "lines", "lines": "1-3"}),
    )
    .await;
    let tail = call(
        &client,
        "read",
        json!({"target": "flood", "mode": "tail", "tail": 2}),
    )
    .await;
    eprintln!("spill limited to {} KiB, 11 MB of output:", LIMIT / 1024);
    eprintln!("  run meta: {}", ran["meta"]);
    eprintln!(
        "  journal memory {journal_kib} KiB; RSS {} -> {} KiB (peak {})",
        before.0, after.0, after.1
    );
    eprintln!("  read lines 1-3: {}", head.short());
    eprintln!("  read tail 2: {}", tail.short());

    let tail = tail.ok("tail");
    assert!(output_of(&tail).contains("1500000"), "{tail}");
    assert!(
        journal_kib <= 4096,
        "the journal holds {journal_kib} KiB after its spill file failed: memory is not bounded"
    );
    let head = head.ok("lines 1-3");
    let kept = output_of(&head).lines().collect::<Vec<_>>() == ["1", "2", "3"];
    let meta = head["meta"].as_str().unwrap_or_default().to_lowercase();
    let says_why = ["dropped", "lost", "not kept", "unavailable"]
        .iter()
        .any(|w| meta.contains(w));
    assert!(
        kept || says_why,
        "a read of dropped output must say what was dropped and why: {head}"
    );
}

/// Sends `signal` (`-STOP`, `-CONT`) to process `pid`.
fn signal(signal: &str, pid: &str) {
    let _ = std::process::Command::new("kill")
        .args([signal, pid])
        .status();
}

/// Resumes a stopped process when dropped, so a failing test still leaves a tmux
/// server its `TestServer` can kill.
struct Resume(String);

impl Drop for Resume {
    fn drop(&mut self) {
        signal("-CONT", &self.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_tmux_server_is_reported_instead_of_holding_the_call() {
    let server = TestServer::new();
    let mcp = mcp_child(&server, "stopped-tmux", |_| {}).await;
    let client = mcp.client.peer().clone();
    call(&client, "open", json!({"name": "held"}))
        .await
        .ok("open held");
    run_ok(&client, "held", "true").await;

    let pid = tmux(&server, &["display", "-p", "#{pid}"])
        .trim()
        .to_string();
    assert!(!pid.is_empty(), "the tmux server's pid");
    let resume = Resume(pid.clone());
    signal("-STOP", &pid);
    let started = Instant::now();
    let (ran, opened) = tokio::join!(
        async {
            let out = call(
                &client,
                "run",
                json!({"target": "held", "command": "echo late", "timeout_ms": 4000}),
            )
            .await;
            (out, started.elapsed())
        },
        async {
            let out = call(&client, "open", json!({"name": "while-stopped"})).await;
            (out, started.elapsed())
        },
    );
    eprintln!("with the tmux server stopped:");
    eprintln!(
        "  run (timeout_ms 4000): {} after {:?}",
        ran.0.short(),
        ran.1
    );
    eprintln!("  open: {} after {:?}", opened.0.short(), opened.1);
    drop(resume);

    // Each call answers, and says the terminal did not answer, rather than hang
    // until the server is resumed.
    for (what, outcome) in [("run", &ran.0), ("open", &opened.0)] {
        match outcome {
            Outcome::ToolError(m) | Outcome::RpcError(m) => assert!(
                m.contains("tmux") && (m.contains("stopped") || m.contains("timed out")),
                "{what}: {m}"
            ),
            Outcome::Ok(v) => assert_eq!(v["verdict"]["complete"], false, "{what}: {v}"),
            other => panic!(
                "{what}: no clear answer with tmux stopped: {}",
                other.short()
            ),
        }
    }

    // Resumed, the server answers again.
    let m = marker("resumed");
    let again = call(
        &client,
        "run",
        json!({"target": "held", "command": format!("echo {m}"), "timeout_ms": 20000}),
    )
    .await;
    eprintln!("after resuming: {}", again.short());
    let again = again.ok("a run once tmux is resumed");
    assert!(output_of(&again).contains(&m), "{again}");
    let listed = listed_names(&client).await;
    assert!(listed.contains(&"held".to_string()), "{listed:?}");
}

#[tokio::test]
async fn a_lock_ends_with_the_process_that_held_it() {
    let server = TestServer::new();
    let holder = mcp_child(&server, "lock-holder", |_| {}).await;
    let a = holder.client.peer().clone();
    call(&a, "open", json!({"name": "leased"})).await.ok("open");
    call(&a, "lock", json!({"target": "leased", "owner": "bob"}))
        .await
        .ok("lock");
    let heir = mcp_child(&server, "lock-heir", |_| {}).await;
    let b = heir.client.peer().clone();
    let send = json!({"target": "leased", "text": "echo from-heir", "owner": "bob"});
    // While its holder runs, the lock holds against bob's name on another connection,
    // and the answer says for how long it has been held.
    match call(&b, "send", send.clone()).await {
        Outcome::ToolError(m) => assert!(
            m.contains("locked by \"bob\"") && m.contains("(for "),
            "{m}"
        ),
        other => panic!("a held lock did not refuse: {}", other.short()),
    }
    // The holder dies without unlocking: the lease ends with its process.
    drop(holder);
    let deadline = Instant::now() + WAIT;
    loop {
        match call(&b, "send", send.clone()).await {
            Outcome::Ok(_) => break,
            Outcome::ToolError(m) if m.contains("locked") && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!(
                "the lock outlived its holder: {}\n{}",
                other.short(),
                log_tail(&heir.log, 20)
            ),
        }
    }
    call(&b, "lock", json!({"target": "leased", "owner": "bob"}))
        .await
        .ok("bob locks it on the new connection");
}
