//! Orchestration against real tmux: waits, watchers (with actions, surviving a
//! restart), notifications, agents' status, playbooks and team colours.

use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use cohort::engine::Engine;
use cohort_backends::{PaneId, PaneInfo};
use cohort_orchestration::{
    many::ManyRead,
    playbook::{run::Runner, Playbook, PlaybookReport},
    waits::{Condition, Quorum, WaitOutcome},
    watch::{Action, Trigger, WatchEvent, WatchSpec},
};
use cohort_terminal::{completion::Until, Caller, OpenOptions, SendOptions};
use tokio_util::sync::CancellationToken;

async fn engine(server: &TestServer) -> Engine {
    let backend = server.backend().await;
    Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket).unwrap()
}

async fn shell(engine: &Engine, options: OpenOptions) -> PaneInfo {
    let pane = engine.terminal.open(options).await.unwrap();
    assert!(
        engine.terminal.wait_ready(&pane.id, WAIT).await,
        "no prompt"
    );
    engine.terminal.wait_reading(&pane.id, WAIT).await;
    pane
}

async fn type_line(engine: &Engine, pane: &PaneId, text: &str) {
    engine
        .terminal
        .send(pane, text, &SendOptions::default(), &Caller::new("test"))
        .await
        .unwrap_or_else(|e| panic!("{text}: {e}"));
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Waits until `text` shows in new output of `target` (through the engine's own
/// wait, which is what is tested elsewhere here).
async fn expect_text(engine: &Engine, target: &str, text: &str) -> String {
    let outcome = engine
        .orchestrator
        .wait_for(
            &names(&[target]),
            &Condition::Pattern {
                until: Until::new(text, false).unwrap(),
                input: false,
            },
            Quorum::Any,
            WAIT,
            |_, _, _| {},
        )
        .await
        .unwrap();
    assert!(
        outcome.done,
        "{text:?} never showed in {target}: {outcome:?}"
    );
    outcome.results[0].line.clone().unwrap_or_default()
}

#[tokio::test]
async fn wait_for_exit_answers_each_target_with_its_status() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    let a = shell(&engine, OpenOptions::named("wa")).await;
    let b = shell(&engine, OpenOptions::named("wb")).await;
    type_line(&engine, &a.id, "sleep 0.3; (exit 3)").await;
    type_line(&engine, &b.id, "sleep 0.6; true").await;
    let mut heard = Vec::new();
    let outcome = engine
        .orchestrator
        .wait_for(
            &names(&["wa", "wb"]),
            &Condition::Exit,
            Quorum::All,
            WAIT,
            |m, done, total| heard.push((m.target.clone(), done, total)),
        )
        .await
        .unwrap();
    assert!(outcome.done, "{outcome:?}");
    let status: Vec<(String, Option<i32>)> = outcome
        .results
        .iter()
        .map(|m| (m.target.clone(), m.exit_status))
        .collect();
    assert_eq!(
        status,
        vec![("wa".into(), Some(3)), ("wb".into(), Some(0))],
        "{outcome:?}"
    );
    assert_eq!(heard.len(), 2, "progress per target: {heard:?}");
    assert_eq!(heard[1].1, 2);
    assert_eq!(outcome.results[0].what, "exit 3", "{outcome:?}");
    // Waited on again with nothing running, the status is the previous command's,
    // and the answer says so.
    let again = engine
        .orchestrator
        .wait_for(
            &names(&["wa"]),
            &Condition::Exit,
            Quorum::All,
            WAIT,
            |_, _, _| {},
        )
        .await
        .unwrap();
    assert_eq!(again.results[0].exit_status, Some(3), "{again:?}");
    assert!(
        again.results[0].what.contains("previous command's exit 3"),
        "{again:?}"
    );
}

#[tokio::test]
async fn wait_for_pattern_gives_the_line_and_any_ends_at_the_first() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    let a = shell(&engine, OpenOptions::named("pa")).await;
    shell(&engine, OpenOptions::named("pb")).await;
    // The typed command line does not match; only the printed line does.
    type_line(
        &engine,
        &a.id,
        "sleep 1; printf 'listening on port %s\\n' 80$((40+2))",
    )
    .await;
    let outcome = engine
        .orchestrator
        .wait_for(
            &names(&["pa", "pb"]),
            &Condition::Pattern {
                until: Until::new(r"port \d+", true).unwrap(),
                input: false,
            },
            Quorum::Any,
            WAIT,
            |_, _, _| {},
        )
        .await
        .unwrap();
    assert!(outcome.done, "{outcome:?}");
    assert!(
        outcome.results[0].met && !outcome.results[1].met,
        "{outcome:?}"
    );
    assert_eq!(
        outcome.results[0].line.as_deref(),
        Some("listening on port 8042")
    );
}

/// Waits until `targets` print `text` (with `quorum`), at most `timeout_ms`.
async fn wait_for_text(
    engine: &Engine,
    targets: &[&str],
    text: &str,
    quorum: Quorum,
    timeout_ms: u64,
) -> WaitOutcome {
    engine
        .orchestrator
        .wait_for(
            &names(targets),
            &Condition::Pattern {
                until: Until::new(text, false).unwrap(),
                input: false,
            },
            quorum,
            Duration::from_millis(timeout_ms),
            |_, _, _| {},
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn wait_for_all_times_out_naming_who_did_not_meet_it() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    let a = shell(&engine, OpenOptions::named("ta")).await;
    shell(&engine, OpenOptions::named("tb")).await;
    // Printed a while after the wait starts following new output.
    type_line(&engine, &a.id, "sleep 1; printf 'al%s\\n' pha").await;
    let outcome = wait_for_text(&engine, &["ta", "tb"], "alpha", Quorum::All, 5000).await;
    assert!(!outcome.done, "{outcome:?}");
    let by: Vec<(&str, bool)> = outcome
        .results
        .iter()
        .map(|m| (m.target.as_str(), m.met))
        .collect();
    assert_eq!(by, vec![("ta", true), ("tb", false)]);
    assert!(
        outcome.results[1]
            .what
            .contains("not pattern within the timeout"),
        "{outcome:?}"
    );
    // With `any`, the wait ends when one meets it: the other has not met it *yet*,
    // and the time given is the wait's own.
    type_line(&engine, &a.id, "sleep 0.3; printf 'be%s\\n' ta").await;
    let outcome = wait_for_text(&engine, &["ta", "tb"], "beta", Quorum::Any, 20_000).await;
    assert!(outcome.done, "{outcome:?}");
    let other = &outcome.results[1].what;
    assert!(other.contains("not pattern yet"), "{outcome:?}");
    assert!(!other.contains("20000"), "{outcome:?}");
    // A name that reaches nothing could only time out: the wait is refused at once,
    // naming it.
    let refused = engine
        .orchestrator
        .wait_for(
            &names(&["ta", "nobody"]),
            &Condition::Quiet(Duration::from_millis(100)),
            Quorum::All,
            Duration::from_millis(5000),
            |_, _, _| {},
        )
        .await
        .expect_err("an unknown target refuses the wait");
    assert!(refused.to_string().contains("nobody"), "{refused}");
}

#[tokio::test]
async fn wait_for_quiet_waits_until_output_stops() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    let a = shell(&engine, OpenOptions::named("qa")).await;
    type_line(
        &engine,
        &a.id,
        "for i in 1 2 3 4 5 6; do echo tick$i; sleep 0.1; done; echo ticks-done",
    )
    .await;
    let outcome = engine
        .orchestrator
        .wait_for(
            &names(&["qa"]),
            &Condition::Quiet(Duration::from_millis(300)),
            Quorum::All,
            WAIT,
            |_, _, _| {},
        )
        .await
        .unwrap();
    assert!(outcome.done, "{outcome:?}");
    // Quiet came only after the loop had printed its last line.
    let screen = engine
        .terminal
        .read(
            &a.id,
            &cohort_terminal::read::ReadOptions {
                what: cohort_terminal::read::ReadWhat::Tail(20),
                ..Default::default()
            },
        )
        .await;
    assert!(screen.text.contains("ticks-done"), "{}", screen.text);
}

#[tokio::test]
async fn wait_for_idle_follows_agent_states() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    let pane = shell(&engine, OpenOptions::named("ia")).await;
    engine
        .terminal
        .register_agent("ivy", &pane, None, &names(&["crew"]))
        .await
        .unwrap();
    engine
        .orchestrator
        .report_agent_state("ivy", "busy", "turn started");
    let publisher = engine.clone();
    let later = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        publisher
            .workers
            .report_agent_state("ivy", "idle", "turn ended");
    });
    let outcome = engine
        .orchestrator
        .wait_for(
            &names(&["crew"]),
            &Condition::Idle,
            Quorum::All,
            WAIT,
            |_, _, _| {},
        )
        .await
        .unwrap();
    later.await.unwrap();
    assert!(outcome.done, "{outcome:?}");
    assert_eq!(outcome.results[0].what, "idle: turn ended");
    // Without an agent state: idle once the command typed there is over.
    let plain = shell(&engine, OpenOptions::named("ib")).await;
    type_line(&engine, &plain.id, "sleep 1; echo slept-$((2+3))").await;
    let outcome = engine
        .orchestrator
        .wait_for(
            &names(&["ib"]),
            &Condition::Idle,
            Quorum::All,
            WAIT,
            |_, _, _| {},
        )
        .await
        .unwrap();
    assert!(outcome.done, "{outcome:?}");
    assert!(
        outcome.results[0].what.contains("at the prompt"),
        "{outcome:?}"
    );
    let tail = engine
        .terminal
        .read(
            &plain.id,
            &cohort_terminal::read::ReadOptions {
                what: cohort_terminal::read::ReadWhat::Tail(5),
                ..Default::default()
            },
        )
        .await;
    assert!(
        tail.text.contains("slept-5"),
        "idle came before the command ended: {}",
        tail.text
    );
}

fn send_on_get(target: &str, to: &str, text: &str) -> WatchSpec {
    WatchSpec {
        id: String::new(),
        target: target.into(),
        trigger: Trigger::Pattern {
            pattern: "GET /".into(),
            regex: false,
            input: false,
        },
        action: Some(Action::Send {
            target: to.into(),
            text: text.into(),
            enter: true,
        }),
        notify: "lead".into(),
        context: 2,
        once: false,
        owner: None,
    }
}

#[tokio::test]
async fn a_watcher_acts_on_the_line_and_leaves_a_notification() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    engine.orchestrator.start_orchestration();
    let srv = shell(&engine, OpenOptions::named("server")).await;
    shell(&engine, OpenOptions::named("client")).await;
    let spec = engine
        .orchestrator
        .add_watch(send_on_get("server", "client", "echo served-$((6*7))"))
        .await
        .unwrap();
    type_line(
        &engine,
        &srv.id,
        "echo booting; sleep 1; printf '%s / HTTP/1.1\\n' GET",
    )
    .await;
    // The client got the action's command, and ran it.
    expect_text(&engine, "client", "served-42").await;
    let notes = engine
        .orchestrator
        .notifications_for("lead", false, Some(WAIT))
        .await
        .unwrap();
    let note = notes
        .iter()
        .find(|n| n.kind == "watch")
        .unwrap_or_else(|| panic!("no watch notification: {notes:?}"));
    assert!(note.message.contains("GET / HTTP/1.1"), "{}", note.message);
    assert!(
        note.message.contains("booting"),
        "context: {}",
        note.message
    );
    assert!(
        note.message.contains("typed into client"),
        "{}",
        note.message
    );
    let listed = engine.orchestrator.watches().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].spec.id, spec.id);
    assert!(listed[0].here && listed[0].hits >= 1, "{:?}", listed[0]);
    assert!(engine.orchestrator.remove_watch(&spec.id).await.unwrap());
    assert!(engine.orchestrator.watches().await.unwrap().is_empty());
}

/// A watcher that only notifies `lead` when `pattern` shows in `target`.
fn notify_on(target: &str, pattern: &str, input: bool) -> WatchSpec {
    WatchSpec {
        id: String::new(),
        target: target.into(),
        trigger: Trigger::Pattern {
            pattern: pattern.into(),
            regex: false,
            input,
        },
        action: None,
        notify: "lead".into(),
        context: 0,
        once: false,
        owner: None,
    }
}

/// A watcher on `event` in `target` that notifies `lead`.
fn on_event(target: &str, event: WatchEvent) -> WatchSpec {
    WatchSpec {
        trigger: Trigger::Event { event },
        ..notify_on(target, "", false)
    }
}

/// The lines watcher `id` fired on, once the watcher on `last` has fired (watchers
/// take a pane's lines in order, so every earlier line has been looked at by then).
async fn fired_on(engine: &Engine, id: &str, last: &str) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let notes = engine
            .orchestrator
            .notifications_for("lead", true, None)
            .await
            .unwrap();
        let lines = |watch: &str| -> Vec<String> {
            let prefix = format!("watch {watch} on ");
            notes
                .iter()
                .filter_map(|n| n.message.strip_prefix(&prefix))
                .map(|m| m.split_once(": ").map_or(m, |(_, line)| line).to_string())
                .collect()
        };
        if !lines(last).is_empty() {
            return lines(id);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the last watcher never fired: {notes:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn watchers_and_waits_match_what_programs_print_not_the_echo_of_typed_lines() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    engine.orchestrator.start_orchestration();
    let pane = shell(&engine, OpenOptions::named("echoes")).await;
    let add = |spec| engine.orchestrator.add_watch(spec);
    let output = add(notify_on("echoes", "ALARM", false)).await.unwrap();
    let input = add(notify_on("echoes", "ALARM", true)).await.unwrap();
    let end = add(notify_on("echoes", "END-2", false)).await.unwrap();

    // In the shell, whose marks bound the line it accepted: a line that only types
    // the word, and one whose output prints it once, typed while the first still
    // runs (so the terminal echoes it before the prompt and the shell again after).
    type_line(&engine, &pane.id, ": ALARM typed only; sleep 0.3").await;
    type_line(&engine, &pane.id, "echo ALARM-$((40+2))").await;

    // A wait on a word the command line holds ends on the output, not the echo.
    let targets = names(&["echoes"]);
    let condition = Condition::Pattern {
        until: Until::new("WAITED-MARK", false).unwrap(),
        input: false,
    };
    let (waited, ()) = tokio::join!(
        engine
            .orchestrator
            .wait_for(&targets, &condition, Quorum::Any, WAIT, |_, _, _| {},),
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            type_line(&engine, &pane.id, "sleep 0.5; echo WAITED-MARK").await;
        }
    );
    let waited = waited.unwrap();
    assert!(waited.done, "{waited:?}");
    assert_eq!(
        waited.results[0].line.as_deref(),
        Some("WAITED-MARK"),
        "the wait ended on the typed line: {waited:?}"
    );

    // In a program without marks (cat): the terminal echoes the typed line, then cat
    // prints it; only cat's line is output.
    type_line(&engine, &pane.id, "cat").await;
    engine.terminal.wait_reading(&pane.id, WAIT).await;
    let from_cat = Condition::Pattern {
        until: Until::new("ALARM-in-cat", false).unwrap(),
        input: false,
    };
    let (printed, ()) = tokio::join!(
        engine
            .orchestrator
            .wait_for(&targets, &from_cat, Quorum::Any, WAIT, |_, _, _| {}),
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            type_line(&engine, &pane.id, "ALARM-in-cat").await;
        }
    );
    let printed = printed.unwrap();
    assert!(printed.done, "cat never printed the line: {printed:?}");
    engine
        .terminal
        .keys(
            &pane.id,
            &["C-c".parse().unwrap()],
            &Caller::new("test"),
            false,
        )
        .await
        .unwrap();
    type_line(&engine, &pane.id, "echo END-$((1+1))").await;

    let seen = fired_on(&engine, &output.id, &end.id).await;
    assert_eq!(
        seen,
        ["ALARM-42", "ALARM-in-cat"],
        "the output-only watcher fired on an echo"
    );
    let seen = fired_on(&engine, &input.id, &end.id).await;
    for line in [
        ": ALARM typed only; sleep 0.3",
        "echo ALARM-$((40+2))",
        "ALARM-42",
    ] {
        assert!(
            seen.iter().any(|l| l.ends_with(line)),
            "the watcher asked for input too missed {line:?}: {seen:?}"
        );
    }
    assert_eq!(
        seen.iter().filter(|l| l.as_str() == "ALARM-in-cat").count(),
        2,
        "cat's echo and cat's line: {seen:?}"
    );
}

/// Reads `targets` (one session) with `how` and `filter` until `done` holds for
/// the text gathered so far.
async fn read_many_until(
    engine: &Engine,
    target: &str,
    caller: &Caller,
    filter: Option<&regex::Regex>,
    done: impl Fn(&str) -> bool,
) -> String {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut gathered = String::new();
    loop {
        let read = engine
            .orchestrator
            .read_many(&names(&[target]), ManyRead::New, caller, 100, filter)
            .await
            .unwrap();
        let text = read[0].text.clone().unwrap_or_default();
        if !text.is_empty() {
            gathered.push_str(&text);
            gathered.push('\n');
        }
        if done(&gathered) {
            return gathered;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never read what was awaited: {gathered:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn filtered_reads_match_output_not_echo_and_leave_the_rest_unread() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    let pane = shell(&engine, OpenOptions::named("filtered")).await;
    let caller = Caller::new("reader");
    let errors = regex::Regex::new("ERROR").unwrap();
    type_line(&engine, &pane.id, ": ERROR typed only").await;
    type_line(
        &engine,
        &pane.id,
        "echo ERROR-$((40+2)); echo plain-$((1+1))",
    )
    .await;

    // Only the line a program printed matches: neither typed line does.
    let matched = read_many_until(&engine, "filtered", &caller, Some(&errors), |t| {
        t.contains("ERROR-42")
    })
    .await;
    assert_eq!(matched.trim_end(), "ERROR-42", "the filter matched an echo");
    // Asked again, the filter has nothing new.
    let again = engine
        .orchestrator
        .read_many(
            &names(&["filtered"]),
            ManyRead::New,
            &caller,
            100,
            Some(&errors),
        )
        .await
        .unwrap();
    assert_eq!(again[0].text.as_deref(), Some(""), "{again:?}");
    assert!(
        again[0].meta.as_deref().unwrap_or("").contains("kept 0 of"),
        "{again:?}"
    );
    // The lines the filter passed over are still new to a plain read.
    let plain = read_many_until(&engine, "filtered", &caller, None, |t| {
        t.contains("plain-2")
    })
    .await;
    for line in ["ERROR typed only", "ERROR-42", "plain-2"] {
        assert!(plain.contains(line), "{line:?} was marked read: {plain:?}");
    }
}

#[tokio::test]
async fn watchers_survive_a_restart_of_the_server_that_made_them() {
    let server = TestServer::new();
    let first = engine(&server).await;
    first.orchestrator.start_orchestration();
    shell(&first, OpenOptions::named("server")).await;
    shell(&first, OpenOptions::named("client")).await;
    let spec = first
        .orchestrator
        .add_watch(send_on_get(
            "server",
            "client",
            "echo after-restart-$((40+2))",
        ))
        .await
        .unwrap();
    first.orchestrator.stop_orchestration();
    // The server's identity, to tell in a failure whether it was the same one.
    let tmux_says = || {
        let out = std::process::Command::new("tmux")
            .args(["-L", &server.socket, "display-message", "-p"])
            .arg("#{pid} #{start_time} sessions: #{server_sessions}")
            .env_remove("TMUX")
            .output()
            .expect("tmux");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )
    };
    let before = tmux_says();
    drop(first);

    let second = engine(&server).await;
    second.terminal.adopt().await.unwrap();
    second.orchestrator.start_orchestration();
    let srv = second.terminal.resolve("server").await.unwrap_or_else(|e| {
        panic!(
            "{e}: the tmux server before the first engine went: {before}; now: {}",
            tmux_says()
        )
    });
    second.terminal.wait_reading(&srv.id, WAIT).await;
    // Taking over happens as the runner starts: wait until this engine runs it.
    let mut taken = false;
    for _ in 0..200 {
        let listed = second.orchestrator.watches().await.unwrap();
        if listed.iter().any(|w| w.spec.id == spec.id && w.here) {
            taken = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(taken, "the new server never took the watcher over");
    type_line(&second, &srv.id, "sleep 1; printf '%s /index.html\\n' GET").await;
    expect_text(&second, "client", "after-restart-42").await;
}

#[tokio::test]
async fn failed_commands_and_agent_states_become_notifications_and_status() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    engine.orchestrator.start_orchestration();
    let pane = shell(&engine, OpenOptions::named("nb")).await;
    engine
        .terminal
        .register_agent("nia", &pane, None, &names(&["ops"]))
        .await
        .unwrap();
    type_line(&engine, &pane.id, "sh -c 'exit 4'").await;
    let notes = engine
        .orchestrator
        .notifications_for("boss", false, Some(WAIT))
        .await
        .unwrap();
    let failed = notes
        .iter()
        .find(|n| n.kind == "command_failed")
        .unwrap_or_else(|| panic!("no command_failed notification: {notes:?}"));
    assert!(failed.message.contains("status 4"), "{}", failed.message);
    assert!(failed.message.contains("nb"), "{}", failed.message);
    // A state change makes one too, and shows in the agent's status line.
    engine
        .orchestrator
        .report_agent_state("nia", "needs_approval", "asks to run rm");
    let notes = engine
        .orchestrator
        .notifications_for("boss", false, Some(WAIT))
        .await
        .unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.kind == "agent_state" && n.message.contains("needs_approval")),
        "{notes:?}"
    );
    engine
        .orchestrator
        .notify("boss", "ops", "info", "rebase first")
        .await
        .unwrap();
    let status = engine.orchestrator.agent_statuses().await.unwrap();
    assert_eq!(status.len(), 1);
    let line = status[0].line();
    assert!(line.starts_with("nia (ops) needs_approval"), "{line}");
    assert!(line.contains("asks to run rm"), "{line}");
    assert!(line.contains("exit 4"), "{line}");
    assert!(status[0].unread >= 1, "{line}");
    let mine = engine
        .orchestrator
        .notifications_for("nia", false, None)
        .await
        .unwrap();
    assert!(
        mine.iter()
            .any(|n| n.message == "rebase first" && n.source == "boss"),
        "{mine:?}"
    );
    // Read once: handed out, no more unread for that one.
    let again = engine
        .orchestrator
        .notifications_for("nia", false, None)
        .await
        .unwrap();
    assert!(
        again.iter().all(|n| n.message != "rebase first"),
        "{again:?}"
    );
}

/// Runs `book` to its end, as a test caller, without progress.
async fn run_book(engine: &Engine, book: &Playbook) -> PlaybookReport {
    engine
        .orchestrator
        .run_playbook(
            book,
            &Runner::new(Caller::new("test")),
            &CancellationToken::new(),
            |_| {},
        )
        .await
}

/// The playbook example the README shows.
fn two_teams() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/playbooks/two-teams.toml")
}

#[tokio::test]
async fn a_playbook_over_two_teams_stops_at_its_failing_step() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    let book = Playbook::from_file(&two_teams()).unwrap();
    let mut progress = Vec::new();
    let report = engine
        .orchestrator
        .run_playbook(
            &book,
            &Runner::new(Caller::new("test")),
            &CancellationToken::new(),
            |p| progress.push(p.message),
        )
        .await;
    assert_eq!(report.opened.len(), 4, "{report:?}");
    assert!(!report.ok);
    let steps: Vec<(bool, bool)> = report.steps.iter().map(|s| (s.ran, s.ok)).collect();
    assert_eq!(
        steps,
        vec![(true, true), (true, false), (false, false)],
        "{report:#?}"
    );
    assert_eq!(report.steps[0].results.len(), 4);
    assert!(report
        .stopped_at
        .as_deref()
        .unwrap_or_default()
        .contains("test"));
    let test = &report.steps[1].results;
    let by: Vec<(&str, bool)> = test.iter().map(|r| (r.session.as_str(), r.ok)).collect();
    assert_eq!(
        by,
        vec![("api", true), ("web", true), ("db", false)],
        "{test:#?}"
    );
    let db = &test[2];
    assert_eq!(
        db.verdict.as_ref().and_then(|v| v.exit_status),
        Some(1),
        "{db:?}"
    );
    assert!(
        db.output.as_deref().unwrap_or_default().contains("fail"),
        "{db:?}"
    );
    assert!(progress.len() >= 4, "{progress:?}");
    // Teams got colours, and the panes show them.
    let backend = engine.terminal.backend().clone();
    let api = engine.terminal.resolve("api").await.unwrap();
    let web = engine.terminal.resolve("web").await.unwrap();
    let shown_api = backend.appearance(&api.id).await.unwrap();
    let shown_web = backend.appearance(&web.id).await.unwrap();
    assert_eq!(
        shown_api.tab_color,
        Some(engine.terminal.team_colour("backend").await.unwrap().hex)
    );
    assert_eq!(
        shown_web.tab_color,
        Some(engine.terminal.team_colour("frontend").await.unwrap().hex)
    );
    assert_ne!(shown_api.tab_color, shown_web.tab_color);
}

#[tokio::test]
async fn a_playbook_that_stops_says_its_cascade_was_not_sent() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    shell(&engine, OpenOptions::named("lone")).await;
    let book = Playbook::from_value(serde_json::json!({
        "steps": [{"name": "fails", "targets": ["lone"], "command": "false"}],
        "cascade": {"message": "ship it"},
    }))
    .unwrap();
    let report = run_book(&engine, &book).await;
    assert!(report.cascade.is_empty(), "{report:#?}");
    let why = report.cascade_skipped.as_deref().unwrap_or_default();
    assert!(why.contains("stopped at step 1 (\"fails\")"), "{report:#?}");
}

#[tokio::test]
async fn a_playbook_reads_after_its_cascade_landed() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    let pane = shell(&engine, OpenOptions::named("desk")).await;
    engine
        .terminal
        .register_agent("ada", &pane, None, &names(&["crew"]))
        .await
        .unwrap();
    let book = Playbook::from_value(serde_json::json!({
        "cascade": {"agents": {"ada": "sleep 0.05; echo cascade-$((6*7))-landed"}},
        "reads": {"targets": ["desk"], "mode": "tail"},
    }))
    .unwrap();
    let report = run_book(&engine, &book).await;
    assert!(report.ok, "{report:#?}");
    let read = report.reads[0].text.as_deref().unwrap_or_default();
    assert!(read.contains("cascade-42-landed"), "{report:#?}");
}

#[tokio::test]
async fn a_playbook_with_continue_on_error_runs_every_step() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    shell(&engine, OpenOptions::named("solo")).await;
    let book = Playbook::from_value(serde_json::json!({
        "steps": [
            {"name": "fails", "targets": ["solo"], "command": "false", "continue_on_error": true},
            {"name": "waits", "targets": ["solo"], "command": "sleep 0.2; echo ready-now", "until": "ready-now"},
        ]
    }))
    .unwrap();
    let report = run_book(&engine, &book).await;
    let steps: Vec<(bool, bool)> = report.steps.iter().map(|s| (s.ran, s.ok)).collect();
    assert_eq!(steps, vec![(true, false), (true, true)], "{report:#?}");
    assert!(
        report.ok,
        "continue_on_error keeps the playbook ok: {report:#?}"
    );
}

#[tokio::test]
async fn eight_teams_get_hues_far_apart_and_keep_them() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    let mut hues = Vec::new();
    for i in 0..8 {
        hues.push(
            engine
                .terminal
                .team_colour(&format!("team{i}"))
                .await
                .unwrap()
                .hue,
        );
    }
    assert_eq!(hues[0], 180.0);
    for (i, a) in hues.iter().enumerate() {
        for b in &hues[i + 1..] {
            let d = cohort_terminal::colours::hue_distance(*a, *b);
            assert!(d >= 40.0, "hues {a} and {b} are {d}° apart: {hues:?}");
        }
    }
    // Stable: asked again (from a new engine), the same.
    let again = self::engine(&server).await;
    assert_eq!(
        again.terminal.team_colour("team3").await.unwrap().hue,
        hues[3]
    );
    // A pane opened for an agent of a team shows the team's colour and name; one
    // registered later too.
    let pane = engine
        .terminal
        .open(OpenOptions {
            agent: Some("tia".into()),
            team: Some("team3".into()),
            ..OpenOptions::named("t3")
        })
        .await
        .unwrap();
    let shown = engine
        .terminal
        .backend()
        .appearance(&pane.id)
        .await
        .unwrap();
    assert_eq!(
        shown.tab_color.as_deref(),
        Some(cohort_terminal::colours::hue_hex(hues[3]).as_str())
    );
    assert_eq!(shown.badge.as_deref(), Some("team3"));
    let other = shell(&engine, OpenOptions::named("t5")).await;
    engine
        .terminal
        .register_agent("tom", &other, None, &names(&["team5"]))
        .await
        .unwrap();
    let shown = engine
        .terminal
        .backend()
        .appearance(&other.id)
        .await
        .unwrap();
    assert_eq!(
        shown.tab_color.as_deref(),
        Some(cohort_terminal::colours::hue_hex(hues[5]).as_str())
    );
}

/// The watchers' notes for `lead` once there is one, with every note `lead` has.
async fn watch_notes_for_lead(
    engine: &Engine,
) -> (
    Vec<String>,
    Vec<cohort_orchestration::registry::NotificationRecord>,
) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let notes = engine
            .orchestrator
            .notifications_for("lead", true, None)
            .await
            .unwrap();
        let hits: Vec<String> = notes
            .iter()
            .filter(|n| n.kind == "watch")
            .map(|n| n.message.clone())
            .collect();
        if !hits.is_empty() {
            return (hits, notes);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the watcher never fired: {notes:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A watcher on `signal` fires on what a program in the session says with its
/// pane's secret, and only on that: a sequence with another id leaves no note.
#[tokio::test]
async fn a_watcher_on_signals_hears_the_program_with_the_panes_secret() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    engine.orchestrator.start_orchestration();
    let pane = shell(&engine, OpenOptions::named("sig")).await;
    engine
        .orchestrator
        .add_watch(WatchSpec {
            context: 0,
            once: false,
            ..on_event("sig", WatchEvent::Signal)
        })
        .await
        .unwrap();
    type_line(
        &engine,
        &pane.id,
        "printf '\\033]1337;Custom=id=forged:not me\\007'; printf '\\033]1337;Custom=id=%s:tests passed\\007' \"$COHORT_SIGNAL_ID\"",
    )
    .await;
    let (hits, _) = watch_notes_for_lead(&engine).await;
    // A moment for a second (forged) hit to arrive, if it were going to.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let all: Vec<String> = engine
        .orchestrator
        .notifications_for("lead", true, None)
        .await
        .unwrap()
        .into_iter()
        .filter(|n| n.kind == "watch")
        .map(|n| n.message)
        .collect();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(hits[0].contains("signalled: tests passed"), "{hits:?}");
    assert!(!all.iter().any(|h| h.contains("not me")), "{all:?}");
}

#[tokio::test]
async fn a_watcher_on_an_event_fires_on_a_failed_command_only() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    engine.orchestrator.start_orchestration();
    let pane = shell(&engine, OpenOptions::named("ev")).await;
    engine
        .orchestrator
        .add_watch(WatchSpec {
            context: 2,
            once: true,
            ..on_event("ev", WatchEvent::CommandFailed)
        })
        .await
        .unwrap();
    type_line(&engine, &pane.id, "true").await;
    engine
        .terminal
        .send(
            &pane.id,
            "printf 'step %s\\n' one two 'failed: disk full'; sh -c 'exit 9'",
            &SendOptions::default(),
            &Caller::new("test"),
        )
        .await
        .unwrap();
    // The watcher's note, not the first note to come: cohort's own `command_failed`
    // notice for every reader can arrive before it.
    let (hits, notes) = watch_notes_for_lead(&engine).await;
    assert_eq!(hits.len(), 1, "{notes:?}");
    // Like a pattern hit, it says what ran and what it printed last.
    let hit = &hits[0];
    assert!(hit.contains("status 9"), "{hit}");
    assert!(hit.contains("`printf 'step %s"), "the command: {hit}");
    assert!(
        hit.contains("step two") && hit.contains("step failed: disk full"),
        "its last lines: {hit}"
    );
    assert!(!hit.contains("step one"), "two lines of context: {hit}");
}

#[tokio::test]
async fn an_agents_state_pushed_out_of_the_event_backlog_still_fires_and_notifies() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    engine.orchestrator.start_orchestration();
    let pane = shell(&engine, OpenOptions::named("fl")).await;
    engine
        .terminal
        .register_agent("flo", &pane, None, &names(&["ops"]))
        .await
        .unwrap();
    engine
        .orchestrator
        .add_watch(WatchSpec {
            context: 0,
            once: true,
            ..on_event("flo", WatchEvent::NeedsApproval)
        })
        .await
        .unwrap();
    // Let the watcher runner take the watcher in, then, with no await between (the
    // test's runtime runs one task at a time), the state and more output events than
    // any follower's backlog holds: every follower lags past the state.
    tokio::time::sleep(Duration::from_millis(300)).await;
    engine
        .orchestrator
        .report_agent_state("flo", "needs_approval", "asks to run rm");
    for _ in 0..10_000 {
        engine
            .terminal
            .publish(cohort_terminal::events::EngineEvent::Output {
                pane: pane.id.clone(),
                from: 0,
                to: 0,
            });
    }
    let (hits, notes) = watch_notes_for_lead(&engine).await;
    assert_eq!(hits.len(), 1, "{notes:?}");
    assert!(hits[0].contains("needs_approval"), "{hits:?}");
    let notes = engine
        .orchestrator
        .notifications_for("boss", false, Some(WAIT))
        .await
        .unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.kind == "agent_state" && n.message.contains("asks to run rm")),
        "the notifier lost the state: {notes:?}"
    );
}
