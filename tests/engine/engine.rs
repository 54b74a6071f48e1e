//! The engine against real tmux, beyond what the parity suite (`parity_engine.rs`)
//! runs on both backends: the ladder's harder cases, the journal, reads, the input
//! path, the tripwire, and faults (a killed server, a damaged registry).

use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use cohort::engine::Engine;
use cohort_backends::PaneId;
use cohort_terminal::{
    completion::{Layer, Until, WaitSpec},
    read::{ReadOptions, ReadWhat},
    Caller, OpenOptions, SendOptions, TerminalError,
};

/// A raw line as a terminal shows it: escapes gone, text after the last carriage return.
fn plain(line: &str) -> String {
    let text = String::from_utf8_lossy(&strip_ansi_escapes::strip(
        line.trim_end_matches(['\r', '\n']),
    ))
    .into_owned();
    text.rsplit('\r')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

async fn engine(server: &TestServer) -> Engine {
    let backend = server.backend().await;
    Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket).unwrap()
}

async fn shell(engine: &Engine, name: &str) -> PaneId {
    let pane = engine
        .terminal
        .open(OpenOptions::named(name))
        .await
        .unwrap();
    assert!(
        engine.terminal.wait_ready(&pane.id, WAIT).await,
        "no prompt"
    );
    pane.id
}

/// A private tmux server, an engine on it and a shell session named `name`, at its
/// first prompt. The server lives as long as the first value.
async fn shell_session(name: &str) -> (TestServer, Engine, PaneId) {
    let server = TestServer::new();
    let engine = engine(&server).await;
    let pane = shell(&engine, name).await;
    (server, engine, pane)
}

fn spec(timeout_ms: u64) -> WaitSpec {
    WaitSpec {
        timeout: Duration::from_millis(timeout_ms),
        ..WaitSpec::default()
    }
}

async fn run(
    engine: &Engine,
    pane: &PaneId,
    command: &str,
    spec: WaitSpec,
) -> cohort_terminal::RunOutput {
    engine
        .terminal
        .run(
            pane,
            command,
            &SendOptions::default(),
            spec,
            false,
            &Caller::new("test"),
        )
        .await
        .unwrap_or_else(|e| panic!("{command}: {e}"))
}

#[tokio::test]
async fn a_prompt_like_line_is_not_taken_for_completion() {
    let (_server, engine, pane) = shell_session("collecting").await;
    // pytest prints "collecting ..." and pauses; only the shell's own mark ends it.
    let command = "printf 'collecting ... '; sleep 1.2; echo 'collected 3 items'; echo '3 passed'";
    let out = run(&engine, &pane, command, spec(15_000)).await;
    assert_eq!(out.verdict.layer, Layer::Exit);
    assert!(out.verdict.elapsed >= Duration::from_millis(1200));
    assert!(out.output.text.contains("3 passed"), "{}", out.output.text);
}

#[tokio::test]
async fn a_64k_paste_arrives_intact() {
    let (server, engine, pane) = shell_session("paste").await;
    let target = server.state_dir().join("pasted.txt");
    let mut body = String::new();
    let mut i = 0;
    while body.len() < 64 * 1024 {
        body.push_str(&format!("{i:06} ünïcödé 日本 'q' \"d\" $HOME\n"));
        i += 1;
    }
    let command = format!("cat > '{}' <<'EOF'\n{body}EOF", target.display());
    let out = run(&engine, &pane, &command, spec(30_000)).await;
    assert_eq!(out.verdict.exit_status, Some(0), "{:?}", out.verdict);
    assert!(
        std::fs::read_to_string(&target).unwrap() == body,
        "paste changed on the way"
    );
}

#[tokio::test]
async fn two_million_lines_stay_retrievable_with_bounded_memory() {
    let (_server, engine, pane) = shell_session("big").await;
    let out = run(&engine, &pane, "seq 1 2000000", spec(300_000)).await;
    assert_eq!(
        (out.verdict.layer, out.verdict.exit_status),
        (Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );
    // The reduced read says what it hid and how to read it.
    assert!(
        out.output.meta.contains("read lines="),
        "{}",
        out.output.meta
    );
    assert!(out.output.text.lines().count() < 200);
    assert!(
        engine.terminal.stats().journal_memory < 4 * 1024 * 1024,
        "{:?}",
        engine.terminal.stats()
    );

    // Find line "1" and check a sample of lines all the way to 2000000.
    let head = engine
        .terminal
        .read(
            &pane,
            &ReadOptions {
                what: ReadWhat::Lines(0..5),
                raw: true,
                ..Default::default()
            },
        )
        .await;
    let offset = head
        .text
        .lines()
        .position(|l| plain(l) == "1")
        .unwrap_or_else(|| panic!("line 1 missing from {:?} ({})", head.text, head.meta))
        as u64;
    for n in [1u64, 2, 1000, 777_777, 1_999_999, 2_000_000] {
        let line = offset + n - 1;
        let got = engine
            .terminal
            .read(
                &pane,
                &ReadOptions {
                    what: ReadWhat::Lines(line..line + 1),
                    raw: true,
                    ..Default::default()
                },
            )
            .await;
        assert_eq!(plain(&got.text), n.to_string(), "line for {n}");
    }
}

/// A run's output read again by its range: reduced whole, at once.
async fn read_again(
    engine: &Engine,
    pane: &PaneId,
    out: &cohort_terminal::RunOutput,
) -> cohort_terminal::read::ReadOutput {
    let options = ReadOptions {
        what: ReadWhat::Bytes(out.verdict.output.clone()),
        ..Default::default()
    };
    engine.terminal.read(pane, &options).await
}

#[tokio::test]
async fn a_big_output_reduced_while_it_arrives_reads_as_a_whole_reduction() {
    let (_server, engine, pane) = shell_session("prepared").await;
    // About 700 KiB over a few hundred milliseconds: numbered lines, errors among
    // them, a title sequence and a carriage-return progress line now and then.
    let command = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); echo \"step $i of the build\"; \
        case $i in *997) echo \"error: step $i failed\";; \
        *500) printf '\\033]0;title %d\\007progress 10%%\\r50%%\\r100%%\\n' $i;; esac; done";
    // The preparing runs on idle cores only: on a machine busy with other tests it
    // may get none during a run, and the read reduces it all; a few runs give it a
    // chance. Every run's reply must equal the whole reduction.
    let mut prepared = 0;
    for _ in 0..5 {
        let before = engine.terminal.stats().prepared_bytes;
        let out = run(&engine, &pane, command, spec(120_000)).await;
        assert_eq!(out.verdict.exit_status, Some(0), "{:?}", out.verdict);
        prepared = engine.terminal.stats().prepared_bytes - before;
        let again = read_again(&engine, &pane, &out).await;
        assert_eq!(out.output.text, again.text);
        assert!(
            out.output
                .meta
                .starts_with(again.meta.trim_end_matches(']')),
            "{}\n{}",
            out.output.meta,
            again.meta
        );
        assert!(out.output.text.contains("error: step 29997 failed"));
        if prepared >= 64 * 1024 {
            break;
        }
    }
    assert!(prepared >= 64 * 1024, "only {prepared} bytes were prepared");
}

#[tokio::test]
async fn output_with_nowhere_to_cut_is_reduced_whole_at_the_end() {
    let (_server, engine, pane) = shell_session("uncut").await;
    let before = engine.terminal.stats().prepared_bytes;
    // One line of 1.5 MB, then a string escape that never ends over many lines.
    let command = "head -c 1500000 /dev/zero | tr '\\0' x; echo; \
        printf '\\033]0;'; seq 1 100000; printf '\\007'; echo done";
    let out = run(&engine, &pane, command, spec(120_000)).await;
    assert_eq!(out.verdict.exit_status, Some(0), "{:?}", out.verdict);
    assert_eq!(engine.terminal.stats().prepared_bytes, before);
    let again = read_again(&engine, &pane, &out).await;
    assert_eq!(out.output.text, again.text);
    assert!(
        out.output.text.trim_end().ends_with("done"),
        "{}",
        out.output.text
    );
}

#[tokio::test]
async fn callers_have_independent_cursors() {
    let (_server, engine, pane) = shell_session("cursors").await;
    let new = |caller: &str| ReadOptions {
        caller: caller.into(),
        ..Default::default()
    };

    run(&engine, &pane, "echo alpha", spec(10_000)).await;
    let a1 = engine.terminal.read(&pane, &new("a")).await;
    assert!(a1.text.contains("alpha"));
    run(&engine, &pane, "echo beta", spec(10_000)).await;
    let a2 = engine.terminal.read(&pane, &new("a")).await;
    assert!(
        a2.text.contains("beta") && !a2.text.contains("alpha"),
        "{}",
        a2.text
    );
    let b1 = engine.terminal.read(&pane, &new("b")).await;
    assert!(
        b1.text.contains("alpha") && b1.text.contains("beta"),
        "{}",
        b1.text
    );
    let a3 = engine.terminal.read(&pane, &new("a")).await;
    assert!(!a3.text.contains("beta"), "{}", a3.text);
}

/// Typing a line without Enter and pressing Enter as a key is judged as one line:
/// the tripwire sees what Enter submits, whichever path typed it.
#[tokio::test]
async fn the_tripwire_judges_the_line_enter_submits_when_typed_in_parts() {
    let (_server, engine, pane) = shell_session("tripwire-parts").await;
    let dir = tempfile::tempdir().unwrap();
    let caller = Caller::new("test");
    let typed = SendOptions {
        enter: false,
        ..SendOptions::default()
    };
    let first = format!("cd '{}' && git reset", dir.path().display());
    for part in [first.as_str(), " --hard"] {
        engine
            .terminal
            .send(&pane, part, &typed, &caller)
            .await
            .unwrap();
    }
    let err = engine
        .terminal
        .keys(&pane, &[cohort_backends::Key::ENTER], &caller, false)
        .await
        .expect_err("Enter on a destructive line typed in parts is refused");
    match &err {
        TerminalError::Refused(r) => assert_eq!(r.rule, "git-reset-hard"),
        other => panic!("{other}"),
    }
    // C-u empties the line; what is typed after it is judged alone.
    engine
        .terminal
        .keys(&pane, &["C-u".parse().unwrap()], &caller, false)
        .await
        .unwrap();
    let out = run(&engine, &pane, "echo fine", spec(10_000)).await;
    assert_eq!(out.verdict.exit_status, Some(0), "{:?}", out.verdict);
    assert!(out.output.text.contains("fine"), "{}", out.output.text);
}

#[tokio::test]
async fn the_tripwire_refuses_and_force_passes() {
    let (_server, engine, pane) = shell_session("tripwire").await;
    let dir = tempfile::tempdir().unwrap();
    let command = format!("cd '{}' && git reset --hard", dir.path().display());
    let err = engine
        .terminal
        .run(
            &pane,
            &command,
            &SendOptions::default(),
            spec(10_000),
            false,
            &Caller::new("test"),
        )
        .await
        .unwrap_err();
    match &err {
        TerminalError::Refused(r) => assert_eq!(r.rule, "git-reset-hard"),
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("force: true"), "{err}");
    let forced = SendOptions {
        force: true,
        ..SendOptions::default()
    };
    let out = engine
        .terminal
        .run(
            &pane,
            &command,
            &forced,
            spec(10_000),
            false,
            &Caller::new("test"),
        )
        .await
        .unwrap();
    assert_eq!(
        out.verdict.exit_status,
        Some(128),
        "git outside a repository: {:?}",
        out.verdict
    );
}

#[tokio::test]
async fn escapes_in_typed_text_cannot_break_out() {
    let (_server, engine, pane) = shell_session("sanitise").await;
    let out = run(
        &engine,
        &pane,
        "echo safe\x1b[201~; echo injected",
        spec(10_000),
    )
    .await;
    assert_eq!(out.verdict.exit_status, Some(0));
    assert!(out.output.text.contains("safe"));
    // Output escape payloads (title, clipboard) never reach the reader.
    let out = run(
        &engine,
        &pane,
        "printf '\\033]52;c;ZXZpbA==\\007\\033]0;title\\007visible\\n'",
        spec(10_000),
    )
    .await;
    assert_eq!(out.output.text.trim(), "visible", "{:?}", out.output.text);
}

#[tokio::test]
async fn typing_into_a_pane_in_copy_mode_leaves_copy_mode_first() {
    let server = TestServer::new();
    let backend = Arc::new(server.backend().await);
    let engine = Engine::with_backend(backend.clone(), server.state_dir(), &server.socket).unwrap();
    let pane = shell(&engine, "copy-mode").await;
    backend
        .raw_command(&format!("copy-mode -t {pane}"))
        .await
        .unwrap();
    assert!(
        cohort_backends::TerminalBackend::pane_state(backend.as_ref(), &pane)
            .await
            .unwrap()
            .copy_mode
    );
    let out = run(&engine, &pane, "echo typed-after-copy-mode", spec(10_000)).await;
    assert_eq!(out.verdict.exit_status, Some(0));
    assert_eq!(out.output.text.trim(), "typed-after-copy-mode");
}

/// A line for a shell at its prompt goes in without asking the pane first (its state
/// is presumed from the last look and the process table); tmux checks the pane when
/// the keys arrive, and what a person changed meanwhile (copy mode, synchronised
/// panes) sends the line the long way, never into the wrong place.
#[tokio::test]
async fn a_line_typed_without_asking_first_is_checked_when_it_arrives() {
    let server = TestServer::new();
    let backend = Arc::new(server.backend().await);
    let engine = Engine::with_backend(backend.clone(), server.state_dir(), &server.socket).unwrap();
    let pane = shell(&engine, "presumed").await;
    // What went in under the guard, without a question (this test's process only).
    let unasked = cohort_backends::tmux::guarded_typed;
    let first = run(&engine, &pane, "echo first", spec(10_000)).await;
    assert_eq!(first.output.text.trim(), "first");
    assert_eq!(unasked(), 0, "the first line is typed after asking");
    let second = run(&engine, &pane, "echo second", spec(10_000)).await;
    assert_eq!(second.output.text.trim(), "second");
    assert_eq!(unasked(), 1, "the second line goes in without a question");
    // Its buffer went with the paste.
    let buffers = backend
        .raw_command("list-buffers -F '#{buffer_name}'")
        .await
        .unwrap();
    assert!(buffers.is_empty(), "{buffers:?}");

    // Keys go the same way: C-c to the command running, without asking first.
    let caller = cohort_terminal::Caller::new("test");
    engine
        .terminal
        .send(&pane, "sleep 30", &SendOptions::default(), &caller)
        .await
        .unwrap();
    let sleeping = || async {
        let deadline = std::time::Instant::now() + WAIT;
        while cohort_backends::TerminalBackend::pane_state(backend.as_ref(), &pane)
            .await
            .unwrap()
            .foreground_command
            != "sleep"
        {
            assert!(std::time::Instant::now() < deadline, "sleep never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    sleeping().await;
    let before = unasked();
    let interrupt = ["C-c".parse().unwrap()];
    engine
        .terminal
        .keys(&pane, &interrupt, &caller, false)
        .await
        .unwrap();
    assert_eq!(unasked(), before + 1, "C-c goes in without a question");
    let back = run(&engine, &pane, "echo back", spec(10_000)).await;
    assert_eq!(back.output.text.trim(), "back");

    // A key into a pane a person put in copy mode is refused by the guard, and
    // pressed after asking: copy mode left, the command interrupted.
    engine
        .terminal
        .send(&pane, "sleep 30", &SendOptions::default(), &caller)
        .await
        .unwrap();
    sleeping().await;
    backend
        .raw_command(&format!("copy-mode -t {pane}"))
        .await
        .unwrap();
    let before = unasked();
    engine
        .terminal
        .keys(&pane, &interrupt, &caller, false)
        .await
        .unwrap();
    assert_eq!(unasked(), before, "refused in copy mode");
    let back = run(&engine, &pane, "echo back-again", spec(10_000)).await;
    assert_eq!(back.output.text.trim(), "back-again", "{:?}", back.verdict);

    // A person scrolls back: the keys would go to copy mode.
    backend
        .raw_command(&format!("copy-mode -t {pane}"))
        .await
        .unwrap();
    let out = run(&engine, &pane, "echo after-copy-mode", spec(10_000)).await;
    assert_eq!(out.verdict.exit_status, Some(0), "{:?}", out.verdict);
    assert_eq!(out.output.text.trim(), "after-copy-mode");
    let state = cohort_backends::TerminalBackend::pane_state(backend.as_ref(), &pane)
        .await
        .unwrap();
    assert!(!state.copy_mode);

    // A person splits the window and synchronises its panes: the line must reach
    // this pane alone (pasted to it, not typed as keys the window repeats).
    let other = synchronised_neighbour(&backend, &pane).await;
    let out = run(&engine, &pane, "echo only-$((6*7))", spec(10_000)).await;
    assert_eq!(out.output.text.trim(), "only-42", "{:?}", out.output.text);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = backend
        .raw_command(&format!("capture-pane -p -t {other}"))
        .await
        .unwrap()
        .join("\n");
    assert!(
        !seen.contains("only"),
        "the other pane got the line: {seen}"
    );
    // The window's own setting is the person's, and stays.
    let setting = backend
        .raw_command(&format!("show-options -wv -t {pane} synchronize-panes"))
        .await
        .unwrap();
    assert_eq!(setting, ["on"]);
}

#[tokio::test]
async fn sessions_the_registry_lost_are_adopted_again() {
    let server = TestServer::new();
    let pane = {
        let engine = engine(&server).await;
        let pane = engine
            .terminal
            .open(OpenOptions {
                name: "survivor".into(),
                agent: Some("sam".into()),
                team: Some("ops".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        pane.id
    };
    // The registry is lost (deleted, or replaced after corruption).
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(server.state_dir().join(format!("registry.db{suffix}")));
    }
    let engine = engine(&server).await;
    assert!(engine.terminal.registry().sessions().unwrap().is_empty());
    engine.terminal.adopt().await.unwrap();
    let sessions = engine.terminal.registry().sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(
        (sessions[0].name.as_str(), sessions[0].pane.as_str()),
        ("survivor", pane.as_str())
    );
    let agents = engine.terminal.registry().agents().unwrap();
    assert_eq!(agents[0].name, "sam");
    assert_eq!(agents[0].teams, vec!["ops".to_string()]);
    // And the agent's name works as a target again.
    assert_eq!(engine.terminal.resolve("sam").await.unwrap().id, pane);
}

#[tokio::test]
async fn cjk_and_emoji_come_back_exactly() {
    let (_server, engine, pane) = shell_session("unicode").await;
    for text in ["héllo 世界 🎉", "日本語テキスト ✓ 🧪 👩‍💻 ünïcödé"] {
        let out = run(&engine, &pane, &format!("echo '{text}'"), spec(10_000)).await;
        assert_eq!(out.output.text.trim(), text, "{}", out.output.meta);
        assert!(
            !out.output.meta.contains("not valid UTF-8"),
            "{}",
            out.output.meta
        );
    }
}

#[tokio::test]
async fn a_timeout_before_the_first_prompt_says_the_shell_is_still_starting() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    // A home of its own whose ~/.bashrc takes a while, like one that runs a slow
    // version-manager hook.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join(".bashrc"), "sleep 4\n").unwrap();
    let mut options = OpenOptions::named("slow-rc");
    options.env = vec![("HOME".into(), home.path().display().to_string())];
    let pane = engine.terminal.open(options).await.unwrap().id;

    let out = run(&engine, &pane, "echo typed-$((40+2))", spec(500)).await;
    assert!(!out.verdict.complete);
    assert_eq!(out.verdict.layer, Layer::Timeout);
    let hint = out.verdict.hint.unwrap_or_default();
    assert!(hint.contains("first prompt"), "{hint}");

    // Nothing typed was lost: it runs once the startup files finish.
    let verdict = engine
        .terminal
        .wait(&pane, spec(15_000))
        .await
        .unwrap_or_else(|e| panic!("wait: {e}"));
    assert!(verdict.complete, "{verdict:?}");
    let seen = engine
        .terminal
        .read(
            &pane,
            &ReadOptions {
                what: ReadWhat::Tail(20),
                raw: true,
                ..Default::default()
            },
        )
        .await;
    assert!(seen.text.contains("typed-42"), "{}", seen.text);

    // Once the shell has prompted, a timeout is an ordinary "still running".
    let out = run(&engine, &pane, "sleep 5", spec(300)).await;
    let hint = out.verdict.hint.unwrap_or_default();
    assert!(hint.contains("still running"), "{hint}");
}

#[tokio::test]
async fn git_log_completes_instead_of_waiting_in_a_pager() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(repo.path())
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    for n in 0..80 {
        std::fs::write(repo.path().join("f.txt"), n.to_string()).unwrap();
        git(&["add", "f.txt"]);
        git(&["commit", "-q", "-m", &format!("change {n}")]);
    }
    // A user whose git config asks for less, on a screen too small for the log.
    git(&["config", "core.pager", "less"]);
    let mut options = OpenOptions::named("pager");
    options.cwd = Some(repo.path().display().to_string());
    let pane = engine.terminal.open(options).await.unwrap().id;
    assert!(engine.terminal.wait_ready(&pane, WAIT).await, "no prompt");

    let out = run(&engine, &pane, "git log", spec(10_000)).await;
    assert_eq!(
        (out.verdict.layer, out.verdict.exit_status),
        (Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );
    let out = run(&engine, &pane, "echo $PAGER/$GIT_PAGER", spec(10_000)).await;
    assert_eq!(out.output.text.trim(), "cat/cat");
}

#[tokio::test]
async fn a_pager_set_back_on_is_named_with_the_way_out() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    let mut options = OpenOptions::named("pager-on");
    options.env = vec![("PAGER".into(), "less".into())];
    let pane = engine.terminal.open(options).await.unwrap().id;
    assert!(engine.terminal.wait_ready(&pane, WAIT).await, "no prompt");

    // `man`-style: a program hands its long output to $PAGER and waits for it.
    let out = run(&engine, &pane, "seq 1 500 | sh -c '$PAGER'", spec(10_000)).await;
    assert!(!out.verdict.complete, "{:?}", out.verdict);
    assert_eq!(out.verdict.layer, Layer::Nested, "{:?}", out.verdict);
    let hint = out.verdict.hint.unwrap_or_default();
    assert!(
        hint.contains("`less`, a pager") && hint.contains("key q"),
        "{hint}"
    );

    engine
        .terminal
        .keys(&pane, &["q".parse().unwrap()], &Caller::new("test"), false)
        .await
        .unwrap();
    let verdict = engine.terminal.wait(&pane, spec(10_000)).await.unwrap();
    assert!(verdict.complete, "{verdict:?}");
}

#[tokio::test]
async fn a_shell_builtin_waiting_for_input_is_not_done() {
    let (_server, engine, pane) = shell_session("read-builtin").await;

    // `read` runs inside the shell itself: the shell is in the foreground and reading
    // its terminal, exactly as at its prompt, but the command has not ended.
    let out = run(&engine, &pane, "read -p 'name? ' who", spec(10_000)).await;
    assert!(!out.verdict.complete, "{:?}", out.verdict);
    assert_eq!(out.verdict.layer, Layer::Nested, "{:?}", out.verdict);
    let hint = out.verdict.hint.unwrap_or_default();
    assert!(hint.contains("answer it with send"), "{hint}");

    // The answer ends `read`: the shell's mark for it is the answer's verdict.
    let out = run(&engine, &pane, "alice", spec(10_000)).await;
    assert_eq!(
        (
            out.verdict.complete,
            out.verdict.layer,
            out.verdict.exit_status
        ),
        (true, Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );
    let out = run(&engine, &pane, "echo hello $who", spec(10_000)).await;
    assert_eq!(out.output.text.trim(), "hello alice");
}

#[tokio::test]
async fn input_that_ends_a_running_program_reports_its_exit_status() {
    let (_server, engine, pane) = shell_session("repl-exit").await;

    let out = run(
        &engine,
        &pane,
        "python3 -q",
        WaitSpec {
            until: Some(Until::new(">>> ", false).unwrap()),
            ..spec(10_000)
        },
    )
    .await;
    assert_eq!(out.verdict.layer, Layer::Until, "{:?}", out.verdict);

    // `exit(3)` goes to Python, not to the shell: when Python ends, the shell's mark
    // for `python3 -q` is this input's answer, with Python's status.
    let out = run(&engine, &pane, "exit(3)", spec(10_000)).await;
    assert_eq!(
        (
            out.verdict.complete,
            out.verdict.layer,
            out.verdict.exit_status
        ),
        (true, Layer::Exit, Some(3)),
        "{:?}",
        out.verdict
    );
    // And the shell's next command is a command of its own again.
    let out = run(&engine, &pane, "echo $((40+2))", spec(10_000)).await;
    assert_eq!(
        (out.verdict.layer, out.output.text.trim()),
        (Layer::Exit, "42")
    );
}

/// `(complete, layer, exit status)` of a run, for compact assertions.
fn outcome(out: &cohort_terminal::RunOutput) -> (bool, Layer, Option<i32>) {
    (
        out.verdict.complete,
        out.verdict.layer,
        out.verdict.exit_status,
    )
}

#[tokio::test]
async fn a_script_waiting_at_its_question_is_not_done() {
    let (server, engine, pane) = shell_session("script-read").await;
    let script = server.state_dir().join("ask.sh");
    std::fs::write(
        &script,
        "echo installing\nread -p 'Continue? [y/N] ' ans\necho answer=$ans\nexit 3\n",
    )
    .unwrap();

    // A shell running a script is a program like any other: at its `read` it is not a
    // shell back at its prompt.
    let out = run(
        &engine,
        &pane,
        &format!("bash {}", script.display()),
        spec(10_000),
    )
    .await;
    assert_eq!(
        outcome(&out),
        (false, Layer::Nested, None),
        "{:?}",
        out.verdict
    );
    let hint = out.verdict.hint.unwrap_or_default();
    assert!(hint.contains("script") && hint.contains("send"), "{hint}");

    let out = run(&engine, &pane, "y", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (true, Layer::Exit, Some(3)),
        "{:?}",
        out.verdict
    );
    assert!(out.output.text.contains("answer=y"), "{}", out.output.text);
}

#[tokio::test]
async fn an_unfinished_command_line_waits_for_its_rest() {
    let (_server, engine, pane) = shell_session("ps2").await;

    let out = run(&engine, &pane, "echo \"unterminated", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (false, Layer::Nested, None),
        "{:?}",
        out.verdict
    );
    let hint = out.verdict.hint.unwrap_or_default();
    assert!(hint.contains("rest of the command"), "{hint}");

    // The rest completes it, with the shell's status.
    let out = run(&engine, &pane, "end\"; false", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (true, Layer::Exit, Some(1)),
        "{:?}",
        out.verdict
    );
    assert!(
        out.output.text.contains("unterminated"),
        "{}",
        out.output.text
    );
}

#[tokio::test]
async fn a_replaced_prompt_hook_still_completes_and_says_statuses_are_lost() {
    let (_server, engine, pane) = shell_session("lost-hook").await;

    let out = run(&engine, &pane, "PROMPT_COMMAND='echo hook'", spec(10_000)).await;
    assert!(out.verdict.complete, "{:?}", out.verdict);
    let out = run(&engine, &pane, "bash -c 'exit 4'", spec(10_000)).await;
    assert_eq!(
        (out.verdict.complete, out.verdict.layer),
        (true, Layer::Quiescence),
        "{:?}",
        out.verdict
    );
    assert!(
        out.verdict
            .hint
            .unwrap_or_default()
            .contains("no longer reports"),
        "the verdict says why there is no status"
    );

    // A shell replaced by `exec` has no hook at all; its commands still complete.
    let out = run(&engine, &pane, "exec bash --norc", spec(10_000)).await;
    assert!(out.verdict.complete, "{:?}", out.verdict);
    let out = run(&engine, &pane, "echo after-exec", spec(10_000)).await;
    assert_eq!(
        (out.verdict.complete, out.verdict.layer),
        (true, Layer::Quiescence),
        "{:?}",
        out.verdict
    );
    assert!(
        out.output.text.contains("after-exec"),
        "{}",
        out.output.text
    );
}

#[tokio::test]
async fn a_program_waiting_on_a_timer_or_a_socket_is_not_waiting_for_input() {
    let (_server, engine, pane) = shell_session("not-input").await;

    // Quiet for 1.5 s in a poll on a timer, then in a blocking socket read: neither
    // is a question to the user, so the ladder waits for the exit. (perl, not
    // python: a pyenv shim alone can take seconds to start on a loaded machine.)
    let out = run(
        &engine,
        &pane,
        "perl -e 'select(undef, undef, undef, 1.5)'; exit_code=5; (exit $exit_code)",
        spec(30_000),
    )
    .await;
    assert_eq!(
        outcome(&out),
        (true, Layer::Exit, Some(5)),
        "{:?}",
        out.verdict
    );
    let out = run(
        &engine,
        &pane,
        "perl -MSocket -e 'socketpair(my $a, my $b, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or die; \
         if (fork) { sysread($a, my $x, 1) } else { select(undef, undef, undef, 1.5); syswrite($b, \"x\") }'",
        spec(30_000),
    )
    .await;
    assert_eq!(
        outcome(&out),
        (true, Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );
}

#[tokio::test]
async fn runs_on_one_session_take_turns() {
    let (_server, engine, pane) = shell_session("turns").await;

    // Three runs at once, as an MCP host issuing parallel calls does: each gets its
    // own command's output and exit status.
    let commands: Vec<String> = (0..3)
        .map(|n| format!("sleep 0.3; echo job{n}; (exit {n})"))
        .collect();
    let (a, b, c) = tokio::join!(
        run(&engine, &pane, &commands[0], spec(10_000)),
        run(&engine, &pane, &commands[1], spec(10_000)),
        run(&engine, &pane, &commands[2], spec(10_000)),
    );
    for (n, out) in [a, b, c].iter().enumerate() {
        assert_eq!(
            (outcome(out), out.output.text.trim()),
            (
                (true, Layer::Exit, Some(n as i32)),
                format!("job{n}").as_str()
            ),
            "{:?}",
            out.verdict
        );
    }
}

#[tokio::test]
async fn typing_into_a_session_whose_program_exited_is_refused() {
    let (_server, engine, pane) = shell_session("gone").await;

    let out = run(&engine, &pane, "exit 7", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (true, Layer::Exit, Some(7)),
        "{:?}",
        out.verdict
    );
    // The shell reports its status a moment before the pane closes.
    let deadline = std::time::Instant::now() + WAIT;
    while !engine
        .terminal
        .backend()
        .pane_state(&pane)
        .await
        .unwrap()
        .dead
    {
        assert!(std::time::Instant::now() < deadline, "the pane never died");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let err = engine
        .terminal
        .run(
            &pane,
            "echo after",
            &SendOptions::default(),
            spec(5_000),
            false,
            &Caller::new("test"),
        )
        .await
        .err()
        .unwrap_or_else(|| panic!("a run in an exited session was not refused"));
    assert!(
        matches!(
            err,
            TerminalError::Exited {
                status: Some(7),
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("open a new one"), "{err}");
    let err = engine
        .terminal
        .keys(
            &pane,
            &[cohort_backends::Key::ENTER],
            &Caller::new("test"),
            false,
        )
        .await
        .expect_err("keys in an exited session are refused");
    assert!(matches!(err, TerminalError::Exited { .. }), "{err}");
}

#[tokio::test]
async fn a_wrong_exit_mark_does_not_lock_a_live_shell() {
    let (_server, engine, pane) = shell_session("forged-exit").await;
    // The typed line has the shell's own powers: it prints the shell's "exiting"
    // mark with the shell's next token, and the shell itself goes on.
    let token = "\"${__cohort_pad[__cohort_i++]}\"";
    let forge = format!("printf '\\033]133;D;0;cohort=%s;exit\\007' {token}; echo forged");
    // (Its verdict may rest on the forged mark: the signature is the pane's.)
    run(&engine, &pane, &forge, spec(10_000)).await;
    // The pane is alive and its shell at its prompt: the next commands run.
    for n in 1..=2 {
        let out = run(
            &engine,
            &pane,
            &format!("echo alive-$((40+{n}))"),
            spec(10_000),
        )
        .await;
        assert_eq!(
            outcome(&out),
            (true, Layer::Exit, Some(0)),
            "run {n}: {:?}",
            out.verdict
        );
        assert!(
            out.output.text.contains(&format!("alive-{}", 40 + n)),
            "{}",
            out.output.text
        );
    }
    // Printed while a command runs, the mark holds the pane's input only until the
    // pane shows it alive.
    let forge = format!("printf '\\033]133;D;0;cohort=%s;exit\\007' {token}; sleep 3");
    engine
        .terminal
        .send(&pane, &forge, &SendOptions::default(), &Caller::new("test"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    engine
        .terminal
        .keys(
            &pane,
            &["C-c".parse().unwrap()],
            &Caller::new("test"),
            false,
        )
        .await
        .expect("a live pane takes keys after a wrong exit mark");
    let out = run(&engine, &pane, "echo after-$((6*7))", spec(10_000)).await;
    assert!(out.output.text.contains("after-42"), "{}", out.output.text);
}

#[tokio::test]
async fn a_tab_in_a_command_is_text_not_completion() {
    let (server, engine, pane) = shell_session("tab").await;
    // A file the tab would complete `x` to, were it typed as a key.
    let dir = server.state_dir().join("tabdir");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("x.txt"), "").unwrap();
    run(
        &engine,
        &pane,
        &format!("cd {}", dir.display()),
        spec(10_000),
    )
    .await;

    let out = run(&engine, &pane, "printf '[%s]\\n' \"x\ty\"", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (true, Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );
    assert!(out.output.text.contains("[x\ty]"), "{:?}", out.output.text);
}

#[tokio::test]
async fn an_answer_that_is_not_echoed_keeps_the_first_line_of_output() {
    let (_server, engine, pane) = shell_session("silent-answer").await;

    let out = run(
        &engine,
        &pane,
        "read -s -p 'Password: ' pw; echo got ${#pw}; echo line3",
        spec(10_000),
    )
    .await;
    assert_eq!(out.verdict.layer, Layer::Nested, "{:?}", out.verdict);
    // A password prompt echoes neither the answer nor its Enter: the first line after
    // Enter is output, not echo.
    let out = run(&engine, &pane, "secret", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (true, Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );
    assert!(
        out.output.text.contains("got 6") && out.output.text.contains("line3"),
        "{:?}",
        out.output.text
    );
    assert!(!out.output.text.contains("secret"), "{:?}", out.output.text);
}

#[tokio::test]
async fn markers_in_a_read_name_the_lines_to_read_back() {
    let (_server, engine, pane) = shell_session("marker-lines").await;
    run(&engine, &pane, "seq 1 3000 | sed 's/^/row /'", spec(20_000)).await;

    // A read from the middle of the pane's output: its markers name the pane's line
    // numbers, the ones `lines=` takes (1-based, inclusive).
    let read = |what| {
        let engine = engine.clone();
        let pane = pane.clone();
        async move {
            engine
                .terminal
                .read(
                    &pane,
                    &ReadOptions {
                        what,
                        raw: false,
                        ..ReadOptions::default()
                    },
                )
                .await
        }
    };
    let out = read(ReadWhat::Tail(1500)).await;
    let marker = regex::Regex::new(r"… (\d+) [a-z ]+ \((\d+)-(\d+)\)").unwrap();
    let caps = marker
        .captures(&out.text)
        .unwrap_or_else(|| panic!("no marker in:\n{}", out.text));
    let (a, b): (u64, u64) = (caps[2].parse().unwrap(), caps[3].parse().unwrap());
    assert!(a > 1500 && b <= 3003, "{a}-{b} is outside the read");
    assert!(
        out.meta.contains(&format!("read lines={a}-{b}")),
        "{}",
        out.meta
    );
    // The lines the marker names are the ones hidden, and reading them by number shows
    // every one of them: the line shown before the marker is the one before them.
    // (At most 500 a read; the meta line names the next range.)
    let back = read(ReadWhat::Lines(a - 1..b)).await;
    let rows: Vec<&str> = back.text.lines().collect();
    assert_eq!(rows.len() as u64, (b - a + 1).min(500), "{}", back.text);
    if b - a + 1 > 500 {
        assert!(
            back.meta.contains(&format!("read lines={}-", a + 500)),
            "{}",
            back.meta
        );
    }
    // A range past the end says so, with what exists.
    let past = read(ReadWhat::Lines(99_999_998..999_999_999)).await;
    assert!(
        past.text.is_empty() && past.meta.contains("past the end"),
        "{}",
        past.meta
    );
    let before_marker = out.text.lines().take_while(|l| !marker.is_match(l)).last();
    let first_hidden: u64 = rows[0].trim_start_matches("row ").trim().parse().unwrap();
    assert_eq!(
        before_marker.map(str::trim),
        Some(format!("row {}", first_hidden - 1).as_str()),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn many_hidden_ranges_make_a_short_meta_line() {
    let (server, engine, pane) = shell_session("short-meta").await;
    // Eight runs of similar lines, each between lines that differ.
    let mut text = String::new();
    for i in 1..=8 {
        text.push_str(&format!("item {i}\n"));
        for j in 1..=6 {
            text.push_str(&format!("downloading chunk {j} of 6 for item {i}\n"));
        }
        text.push_str(&format!("{}\n", "alpha ".repeat(i)));
    }
    let file = server.state_dir().join("many.txt");
    std::fs::write(&file, text).unwrap();

    let out = run(
        &engine,
        &pane,
        &format!("cat {}", file.display()),
        spec(10_000),
    )
    .await;
    let meta = &out.output.meta;
    assert!(meta.contains("more hidden range(s)"), "{meta}");
    assert!(meta.matches("read lines=").count() <= 4, "{meta}");
    assert!(meta.len() < 600, "{} chars: {meta}", meta.len());
}

#[tokio::test]
async fn text_that_starts_with_a_dash_or_a_tilde_is_typed_as_it_is() {
    let (server, engine, pane) = shell_session("dash-tilde").await;

    // Not flags for tmux: the shell gets the word and says it is no command.
    let out = run(&engine, &pane, "-l", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (true, Layer::Exit, Some(127)),
        "{:?}",
        out.verdict
    );

    // A paste whose text starts with `-`, then one starting with `~` (which tmux would
    // expand to a home directory), into `cat`.
    let file = server.state_dir().join("pasted.txt");
    let out = run(
        &engine,
        &pane,
        &format!("cat > {}", file.display()),
        spec(10_000),
    )
    .await;
    assert_eq!(out.verdict.layer, Layer::Nested, "{:?}", out.verdict);
    let typed = SendOptions {
        enter: false,
        ..SendOptions::default()
    };
    for text in ["-    x = compute(0)\n--help\n", "~/not-home\n~user\n"] {
        engine
            .terminal
            .send(&pane, text, &typed, &Caller::new("test"))
            .await
            .unwrap();
    }
    engine
        .terminal
        .keys(
            &pane,
            &[cohort_backends::Key::ENTER, "C-d".parse().unwrap()],
            &Caller::new("test"),
            false,
        )
        .await
        .unwrap();
    let out = run(
        &engine,
        &pane,
        &format!("cat {}", file.display()),
        spec(10_000),
    )
    .await;
    assert_eq!(
        out.output.text.trim(),
        "-    x = compute(0)\n--help\n~/not-home\n~user",
        "{:?}",
        out.output.text
    );
}

#[tokio::test]
async fn a_second_process_waits_for_the_command_another_one_typed() {
    let server = TestServer::new();
    let typist = engine(&server).await;
    let watcher = engine(&server).await;
    let pane = shell(&typist, "watched").await;

    // One process starts a command; another, which never typed into the pane, waits
    // for that command rather than answering with the previous one's status.
    run(&typist, &pane, "true", spec(10_000)).await;
    let out = run(&typist, &pane, "sleep 0.7; false", spec(100)).await;
    assert_eq!(out.verdict.layer, Layer::Timeout, "{:?}", out.verdict);
    let verdict = watcher.terminal.wait(&pane, spec(10_000)).await.unwrap();
    assert_eq!(
        (verdict.complete, verdict.layer, verdict.exit_status),
        (true, Layer::Exit, Some(1)),
        "{verdict:?}"
    );
}

/// An engine whose panes run `name` (zsh, fish), when it is installed; CI installs
/// every shell and sets COHORT_REQUIRE_ALL_SHELLS, so a missing one fails there.
async fn engine_with_shell(server: &TestServer, name: &str) -> Option<Engine> {
    let Some(path) = ["/usr/bin", "/usr/local/bin", "/bin"]
        .iter()
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.exists())
    else {
        assert!(
            std::env::var("COHORT_REQUIRE_ALL_SHELLS").as_deref() != Ok("1"),
            "{name} is not installed but COHORT_REQUIRE_ALL_SHELLS=1"
        );
        eprintln!("NOTICE: {name} is not installed; its verdicts were not tested here");
        return None;
    };
    let mut config = server.config();
    config.shell = Some(path);
    let backend = cohort_backends::tmux::TmuxBackend::connect(config)
        .await
        .unwrap();
    Some(Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket).unwrap())
}

#[tokio::test]
async fn zsh_output_without_a_final_newline_has_no_partial_line_mark() {
    let server = TestServer::new();
    let Some(engine) = engine_with_shell(&server, "zsh").await else {
        return;
    };
    let pane = shell(&engine, "zsh").await;
    let out = run(&engine, &pane, "printf nonl", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (true, Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );
    assert_eq!(out.output.text, "nonl");
    let out = run(&engine, &pane, "echo ok", spec(10_000)).await;
    assert_eq!(out.output.text, "ok");
}

/// fish: a continuation line and its own `read` are not done.
#[tokio::test]
async fn fish_continuation_and_read_are_not_done() {
    let server = TestServer::new();
    let Some(engine) = engine_with_shell(&server, "fish").await else {
        return;
    };
    let pane = shell(&engine, "fish").await;

    let out = run(&engine, &pane, "for i in 1 2", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (false, Layer::Nested, None),
        "{:?}",
        out.verdict
    );
    assert!(
        out.verdict
            .hint
            .unwrap_or_default()
            .contains("rest of the command"),
        "continuation"
    );
    let out = run(&engine, &pane, "echo $i; end", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (true, Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );

    let out = run(&engine, &pane, "read -P 'q? ' answer", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (false, Layer::Nested, None),
        "{:?}",
        out.verdict
    );
    let out = run(&engine, &pane, "yes", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (true, Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );
}

#[tokio::test]
async fn a_run_is_not_appended_to_keys_left_on_the_line() {
    let (_server, engine, pane) = shell_session("dirty-line").await;
    let typed = SendOptions {
        enter: false,
        ..SendOptions::default()
    };
    engine
        .terminal
        .send(&pane, "a", &typed, &Caller::new("test"))
        .await
        .unwrap();
    let out = run(&engine, &pane, "echo two", spec(10_000)).await;
    assert_eq!(
        outcome(&out),
        (true, Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );
    assert_eq!(out.output.text.trim(), "two");
}

#[tokio::test]
async fn a_run_whose_session_is_closed_says_so() {
    let (_server, engine, pane) = shell_session("closing").await;
    let (out, closed) = tokio::join!(run(&engine, &pane, "sleep 20", spec(15_000)), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        engine.terminal.close(&pane).await
    });
    closed.unwrap();
    // Not a timeout: the wait noticed the pane was gone.
    assert_eq!(
        outcome(&out),
        (false, Layer::Closed, None),
        "{:?}",
        out.verdict
    );
}

#[tokio::test]
async fn two_processes_opening_one_name_at_once_get_one_session() {
    let server = TestServer::new();
    let (a, b) = (engine(&server).await, engine(&server).await);
    for round in 0..3 {
        let name = format!("race-{round}");
        let (x, y) = tokio::join!(
            a.terminal.open(OpenOptions::named(&name)),
            b.terminal.open(OpenOptions::named(&name))
        );
        assert!(
            x.is_ok() != y.is_ok(),
            "round {round}: exactly one open succeeds: {x:?} / {y:?}"
        );
        let refused = x.err().or(y.err()).unwrap();
        assert!(
            matches!(refused, TerminalError::NameTaken { .. }),
            "{refused}"
        );
        let named = a
            .terminal
            .list()
            .await
            .unwrap()
            .into_iter()
            .filter(|p| p.identity.as_ref().is_some_and(|i| i.name == name))
            .count();
        assert_eq!(named, 1, "round {round}");
    }
}

/// tmux killed and started again: the run in flight ends `closed`, the same name opens
/// again, and the new pane (which gets the old one's id) inherits nothing: not its
/// output, not its marks, not its registry row or lock.
#[tokio::test]
async fn a_new_tmux_server_hands_nothing_of_the_old_one_to_new_panes() {
    let (server, engine, pane) = shell_session("phoenix").await;
    run(&engine, &pane, "echo old-life-marker", spec(10_000)).await;
    engine.terminal.lock(&pane, "holder", None).await.unwrap();
    let waiting = {
        let (engine, pane) = (engine.clone(), pane.clone());
        let holder = Caller::new("test").as_owner(Some("holder".into()));
        tokio::spawn(async move {
            engine
                .terminal
                .run(
                    &pane,
                    "sleep 30",
                    &SendOptions::default(),
                    spec(60_000),
                    false,
                    &holder,
                )
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed = std::process::Command::new("tmux")
        .args(["-L", &server.socket, "kill-server"])
        .env_remove("TMUX")
        .status()
        .unwrap();
    assert!(killed.success());
    let out = tokio::time::timeout(WAIT, waiting).await.unwrap().unwrap();
    assert_eq!(out.verdict.layer, Layer::Closed, "{}", out.output.meta);

    let again = engine
        .terminal
        .open(OpenOptions::named("phoenix"))
        .await
        .expect("the same name opens on the new server");
    assert!(
        engine.terminal.wait_ready(&again.id, WAIT).await,
        "no prompt"
    );
    assert_eq!(
        again.id, pane,
        "tmux reuses the pane id (the case under test)"
    );
    let all = engine
        .terminal
        .read(
            &again.id,
            &ReadOptions {
                what: ReadWhat::All,
                raw: true,
                ..ReadOptions::default()
            },
        )
        .await;
    assert!(!all.text.contains("old-life-marker"), "{}", all.text);
    // Not locked by the old session's holder, and its commands complete on their own
    // marks.
    assert!(engine.terminal.lock_of(&again.id).await.unwrap().is_none());
    let out = run(&engine, &again.id, "echo new-life", spec(10_000)).await;
    assert_eq!(out.verdict.layer, Layer::Exit);
    assert_eq!(out.output.text.trim(), "new-life");
    assert_eq!(engine.terminal.list().await.unwrap().len(), 1);
}

/// The registry overwritten with garbage, or deleted, under a running server: the
/// sessions it holds keep working, the next calls get a fresh registry that knows
/// them again (from their panes), the old file is kept, and status says what
/// happened, naming the file.
#[tokio::test]
async fn a_registry_overwritten_or_deleted_under_the_server_is_recovered() {
    let (server, engine, pane) = shell_session("keeper").await;
    let agent_pane = engine
        .terminal
        .open(OpenOptions {
            name: "worker-1".into(),
            agent: Some("wally".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let db = server.state_dir().join("registry.db");
    for damage in ["overwrite", "delete"] {
        match damage {
            // Same file, new bytes: as `echo garbage > registry.db` does.
            "overwrite" => std::fs::write(&db, b"this is not a database at all").unwrap(),
            _ => std::fs::remove_file(&db).unwrap(),
        }
        let out = run(
            &engine,
            &pane,
            &format!("echo after-{damage}"),
            spec(10_000),
        )
        .await;
        assert_eq!(
            out.output.text.trim(),
            format!("after-{damage}"),
            "{}",
            out.output.meta
        );
        let fresh = engine
            .terminal
            .open(OpenOptions::named(format!("new-after-{damage}")))
            .await
            .unwrap_or_else(|e| panic!("open after {damage}: {e}"));
        assert!(engine.terminal.wait_ready(&fresh.id, WAIT).await);
        // The registry knows the sessions and the agent again.
        let names: Vec<String> = engine
            .terminal
            .registry()
            .sessions()
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert!(names.contains(&"keeper".to_string()), "{damage}: {names:?}");
        assert!(
            engine.terminal.agent("wally").await.unwrap().is_some(),
            "{damage}"
        );
        let status = engine.terminal.status().await.unwrap();
        let warning = status.registry_warning.unwrap_or_default();
        assert!(
            warning.contains(&db.display().to_string()),
            "{damage}: {warning:?}"
        );
    }
    // The overwritten file was kept aside, not lost.
    let kept = std::fs::read_dir(server.state_dir())
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains("corrupt-"));
    assert!(kept, "no backup of the overwritten registry");
    let _ = agent_pane;
}

/// The whole state directory deleted under a running server: a new session still
/// comes up with its prompt marks (the shell integration is written again), instead
/// of waiting 10 s and blaming the user's startup files.
#[tokio::test]
async fn a_deleted_state_directory_is_written_again() {
    let (server, engine, pane) = shell_session("before-rm").await;
    std::fs::remove_dir_all(server.state_dir()).unwrap();
    let fresh = engine
        .terminal
        .open(OpenOptions::named("after-rm"))
        .await
        .unwrap();
    assert!(
        engine.terminal.wait_shell_up(&fresh.id).await.is_none(),
        "the new shell came up without its integration"
    );
    let out = run(&engine, &fresh.id, "false", spec(10_000)).await;
    assert_eq!(
        (out.verdict.layer, out.verdict.exit_status),
        (Layer::Exit, Some(1))
    );
    let out = run(&engine, &pane, "echo still-here", spec(10_000)).await;
    assert_eq!(out.output.text.trim(), "still-here");
}

/// A pane's journal keeps a bounded amount of output on disk: past it the oldest is
/// dropped, the files stay near the cap, and reads say what was dropped and why.
#[tokio::test]
async fn output_past_the_journal_cap_is_dropped_and_reads_say_so() {
    let server = TestServer::new();
    let engine = engine(&server).await;
    engine.terminal.set_journal_disk_cap(2 << 20);
    let pane = shell(&engine, "capped").await;
    let out = run(&engine, &pane, "seq 1 1000000", spec(60_000)).await;
    assert_eq!(out.verdict.layer, Layer::Exit, "{}", out.output.meta);
    let all = engine
        .terminal
        .read(
            &pane,
            &ReadOptions {
                what: ReadWhat::All,
                ..ReadOptions::default()
            },
        )
        .await;
    assert!(all.meta.contains("were dropped"), "{}", all.meta);
    assert!(all.meta.contains("MiB of output on disk"), "{}", all.meta);
    assert!(
        all.text.contains("1000000"),
        "the end is kept: {}",
        all.meta
    );
    let journal_bytes: u64 = walk(&server.state_dir().join("journal"));
    assert!(
        journal_bytes < 3 << 20,
        "{journal_bytes} bytes of journal on disk"
    );
}

fn walk(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let path = e.path();
                    if path.is_dir() {
                        walk(&path)
                    } else {
                        e.metadata().map(|m| m.len()).unwrap_or(0)
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// No child process and no replay signs a mark: a program in the pane that gathers
/// every value it can reach (the shell's initial environment in `/proc` and `ps`,
/// cohort's tmux options, a pad file named there) and signs marks with each, then
/// replays a raw capture of the pane's own earlier marks, leaves its command running
/// until the shell reports its real end.
#[tokio::test]
async fn no_child_process_and_no_replay_forges_a_verdict() {
    let (server, engine, pane) = shell_session("forge-suite").await;
    let capture = server.home().join("raw-capture");
    // The pane's raw output, signed marks and all, for a few commands.
    let piped = format!(
        "tmux pipe-pane -o -t \"$TMUX_PANE\" 'cat >> {}'",
        capture.display()
    );
    run(&engine, &pane, &piped, spec(10_000)).await;
    for command in ["echo one", "false", "echo three"] {
        run(&engine, &pane, command, spec(10_000)).await;
    }
    run(
        &engine,
        &pane,
        "tmux pipe-pane -t \"$TMUX_PANE\"",
        spec(10_000),
    )
    .await;
    let raw = std::fs::read(&capture).unwrap();
    assert!(
        String::from_utf8_lossy(&raw).matches(";cohort=").count() >= 6,
        "the capture holds no signed marks to replay: {:?}",
        String::from_utf8_lossy(&raw)
    );

    let forger = server.home().join("forger.sh");
    std::fs::write(
        &forger,
        r#"values=""
add() { values="$values $(printf '%s' "$1" | tr ':\n' '  ')"; }
add "$(tr '\0' '\n' < /proc/$PPID/environ | sed -n 's/^COHORT[A-Z_]*=//p')"
add "$(ps eww -o args= -p $PPID | tr ' ' '\n' | sed -n 's/^COHORT[A-Z_]*=//p')"
add "$(tmux show-options -p -t "$TMUX_PANE" | sed -n 's/^@cohort_[a-z]* //p')"
add "$(printenv PS0 PS1 PROMPT_COMMAND)"
for v in $values; do [ -f "$v" ] && add "$(cat "$v")"; done
for v in $values; do
    printf '\033]133;C;cohort=%s\007\033]133;D;0;cohort=%s\007\033]133;A;cohort=%s\007' "$v" "$v" "$v"
    printf '\033]133;D;0;cohort=%s;exit\007' "$v"
done
echo "forger tried $(echo $values | wc -w) values"
"#,
    )
    .unwrap();
    let command = format!(
        "sh {}; cat {}; sleep 1; echo after-the-forgery; (exit 3)",
        forger.display(),
        capture.display()
    );
    let out = run(&engine, &pane, &command, spec(15_000)).await;
    let tried: u32 = out
        .output
        .text
        .split("forger tried ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the forger did not run: {}", out.output.text));
    assert!(
        tried >= 2,
        "the forger found nothing to try: {}",
        out.output.text
    );
    assert_eq!(
        (out.verdict.layer, out.verdict.exit_status),
        (Layer::Exit, Some(3)),
        "a forged verdict: {:?}\n{}",
        out.verdict,
        out.output.text
    );
    assert!(
        out.output.text.contains("after-the-forgery"),
        "{}",
        out.output.text
    );
    // The shell's own marks still verify after the attempt.
    let out = run(&engine, &pane, "echo still-$((6*7))", spec(10_000)).await;
    assert_eq!(
        (out.verdict.layer, out.verdict.exit_status),
        (Layer::Exit, Some(0)),
        "{:?}",
        out.verdict
    );
}

/// A server that adopts a pane knows, as the one before it did, that its shell
/// announces each command's start: a line typed while the shell itself still runs the
/// command another server started (a loop of builtins: the shell is in the foreground)
/// is answered for with its own end, not with that command's end arriving after Enter.
#[tokio::test]
async fn a_server_that_adopts_a_pane_answers_for_its_own_line() {
    let server = TestServer::new();
    let first = engine(&server).await;
    let pane = shell(&first, "adopted-turn").await;
    run(&first, &pane, "echo warm", spec(10_000)).await;
    let busy = "sleep 0.5; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; \
                echo first-done; test 4 = 5";
    first
        .terminal
        .send(&pane, busy, &SendOptions::default(), &Caller::new("test"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(first);

    let second = engine(&server).await;
    second.terminal.adopt().await.unwrap();
    // The shell runs the loop itself now.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let out = run(&second, &pane, "echo second-$((1+1))", spec(20_000)).await;
    assert_eq!(
        (out.verdict.layer, out.verdict.exit_status),
        (Layer::Exit, Some(0)),
        "the other server's command's end was taken for this line's: {:?}\n{}",
        out.verdict,
        out.output.text
    );
    assert!(out.output.text.contains("second-2"), "{}", out.output.text);
    assert!(
        !out.output.text.contains("first-done"),
        "{}",
        out.output.text
    );
}

/// Prompt marks a program prints are not the shell's: a forged `D` mid-command, a
/// `cat` of a recorded terminal log full of marks, and a nested shell with an
/// integration of its own all leave the command running until the pane's own shell
/// reports its end.
#[tokio::test]
async fn marks_a_program_prints_never_complete_a_command() {
    let (server, engine, pane) = shell_session("forged").await;
    let out = run(
        &engine,
        &pane,
        "printf 'x\\033]133;D;0\\007\\033]133;A\\007'; sleep 1.2; (exit 3)",
        spec(15_000),
    )
    .await;
    assert_eq!(
        (out.verdict.layer, out.verdict.exit_status),
        (Layer::Exit, Some(3)),
        "{:?}",
        out.verdict
    );
    assert!(
        out.verdict.elapsed >= Duration::from_millis(1200),
        "{:?}",
        out.verdict
    );

    let log = server.home().join("session.log");
    let mut recorded = Vec::new();
    for i in 0..50 {
        recorded.extend_from_slice(
            format!("\x1b]133;A\x07$ cmd{i}\r\n\x1b]133;C\x07out{i}\r\n\x1b]133;D;0\x07")
                .as_bytes(),
        );
    }
    std::fs::write(&log, recorded).unwrap();
    let command = format!("cat {}; sleep 1; echo after-the-log", log.display());
    let out = run(&engine, &pane, &command, spec(15_000)).await;
    assert_eq!(out.verdict.layer, Layer::Exit, "{:?}", out.verdict);
    assert!(
        out.output.text.contains("after-the-log"),
        "{}",
        out.output.text
    );

    // A nested shell with an integration of its own: its marks are unsigned.
    let nested = "bash --norc --noprofile";
    run(&engine, &pane, nested, spec(10_000)).await;
    run(
        &engine,
        &pane,
        "PROMPT_COMMAND='printf \"\\033]133;D;$?\\007\\033]133;A\\007\"'; PS0='\\033]133;C\\007'",
        spec(10_000),
    )
    .await;
    let marked = SendOptions {
        mark: Some("n3st".into()),
        ..SendOptions::default()
    };
    // The sentinel's nonce is never on screen: a program that reads the screen and
    // prints the sentinel with every word it finds there forges nothing.
    let forger = server.home().join("sentinel-forger.sh");
    std::fs::write(
        &forger,
        r#"tmux capture-pane -p -J -t "$TMUX_PANE" -S -100 | tr " '\t" '\n\n\n' | sort -u > "$0.words"
for w in $(cat "$0.words"); do printf '\n__cohort_mark_%s:0__\n' "$w"; done
echo "forger tried $(wc -l < "$0.words") words"
"#,
    )
    .unwrap();
    let command = format!("sh {}; sleep 1; (exit 5)", forger.display());
    let out = engine
        .terminal
        .run(
            &pane,
            &command,
            &marked,
            spec(15_000),
            false,
            &Caller::new("test"),
        )
        .await
        .unwrap();
    assert!(
        out.output.text.contains("forger tried"),
        "{}",
        out.output.text
    );
    assert_eq!(
        (out.verdict.layer, out.verdict.exit_status),
        (Layer::Mark, Some(5)),
        "{:?}\n{}",
        out.verdict,
        out.output.text
    );
    assert!(
        out.verdict.elapsed >= Duration::from_secs(1),
        "{:?}",
        out.verdict
    );
    // Only the real sentinel, printed once the command ended, shows it.
    let screen = engine.terminal.backend().read_screen(&pane).await.unwrap();
    let screen = screen.rows.join("\n");
    assert_eq!(
        screen.matches("n3st").count(),
        screen.matches("__cohort_mark_n3st:5__").count(),
        "the nonce is on screen:\n{screen}"
    );
}

/// Text typed while a command runs that is not reading the terminal is type-ahead:
/// the shell runs it once that command ends, and the run answers with its own output
/// and status, not the running command's, however long the shell takes to start it.
#[tokio::test]
async fn a_run_typed_ahead_of_a_running_command_answers_for_itself() {
    let (_server, engine, pane) = shell_session("type-ahead").await;
    // A shell slow to read its next line after each prompt (a heavy prompt hook).
    run(
        &engine,
        &pane,
        "PROMPT_COMMAND=\"${PROMPT_COMMAND:+$PROMPT_COMMAND;}sleep 0.4\"",
        spec(10_000),
    )
    .await;
    engine
        .terminal
        .send(
            &pane,
            "sleep 1; echo first-done; (exit 4)",
            &SendOptions::default(),
            &Caller::new("test"),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let out = run(&engine, &pane, "echo second-$((1+1))", spec(15_000)).await;
    assert_eq!(
        (out.verdict.complete, out.verdict.exit_status),
        (true, Some(0)),
        "the running command's end was taken for this one's: {:?}\n{}",
        out.verdict,
        out.output.text
    );
    assert!(out.output.text.contains("second-2"), "{}", out.output.text);
}

/// `exit 7` reports the shell's status; what is typed next is refused (the shell is
/// on its way out and would lose it), not answered with the old status.
#[tokio::test]
async fn typing_after_the_shell_exits_is_refused() {
    let (_server, engine, pane) = shell_session("exiting").await;
    let out = run(&engine, &pane, "exit 7", spec(10_000)).await;
    assert_eq!(
        (out.verdict.layer, out.verdict.exit_status),
        (Layer::Exit, Some(7))
    );
    let err = engine
        .terminal
        .run(
            &pane,
            "echo hi",
            &SendOptions::default(),
            spec(5000),
            false,
            &Caller::new("test"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            TerminalError::Exited {
                status: Some(7),
                ..
            }
        ),
        "{err}"
    );
}

/// A process that never saw a command start (it started after it, or its marks went to
/// a process that died) runs its own command while that one still runs: its verdict
/// and output are its own command's, not the running one's.
#[tokio::test]
async fn a_run_typed_while_another_command_runs_gets_its_own_verdict() {
    let (server, first, pane) = shell_session("busy").await;
    first
        .terminal
        .send(
            &pane,
            "sleep 1.5; printf '%s-%s\\n' first done",
            &SendOptions::default(),
            &Caller::new("test"),
        )
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while first
        .terminal
        .session_status(&pane)
        .await
        .unwrap()
        .state
        .foreground_command
        != "sleep"
    {
        assert!(std::time::Instant::now() < deadline, "sleep never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A second process, knowing nothing of the running command.
    let second = engine(&server).await;
    second.terminal.list().await.unwrap();
    let out = run(
        &second,
        &pane,
        "printf '%s-%s\\n' second done",
        spec(15_000),
    )
    .await;
    assert_eq!(out.verdict.layer, Layer::Exit, "{:?}", out.verdict);
    assert!(
        out.output.text.contains("second-done") && !out.output.text.contains("first-done"),
        "{:?} {}",
        out.output.text,
        out.output.meta
    );
}

/// The engine's event stream tells a follower what happens, in order: a session
/// opening, output arriving, the command's start and end with its status, a lock, and
/// the session closing.
#[tokio::test]
async fn the_event_stream_follows_sessions_commands_and_locks() {
    use cohort_terminal::events::EngineEvent;
    let server = TestServer::new();
    let engine = engine(&server).await;
    let mut events = engine.terminal.events();
    let pane = shell(&engine, "followed").await;
    run(&engine, &pane, "(exit 3)", spec(10_000)).await;
    engine.terminal.lock(&pane, "watcher", None).await.unwrap();
    engine.terminal.close(&pane).await.unwrap();
    let mut seen = Vec::new();
    while let Ok(Ok(event)) = tokio::time::timeout(Duration::from_millis(500), events.recv()).await
    {
        seen.push(event);
    }
    let position = |want: &dyn Fn(&EngineEvent) -> bool| {
        seen.iter()
            .position(want)
            .unwrap_or_else(|| panic!("missing from {seen:#?}"))
    };
    let opened = position(
        &|e| matches!(e, EngineEvent::SessionOpened { session, .. } if session == "followed"),
    );
    let output = position(&|e| matches!(e, EngineEvent::Output { pane: p, .. } if *p == pane));
    let started =
        position(&|e| matches!(e, EngineEvent::CommandStarted { pane: p, .. } if *p == pane));
    let ended = position(
        &|e| matches!(e, EngineEvent::CommandEnded { pane: p, exit_status: Some(3), .. } if *p == pane),
    );
    let locked = position(
        &|e| matches!(e, EngineEvent::LockChanged { holder: Some(h), .. } if h == "watcher"),
    );
    let closed = position(
        &|e| matches!(e, EngineEvent::SessionClosed { session, .. } if session == "followed"),
    );
    assert!(opened < started && started < ended && ended < locked && locked < closed);
    assert!(output < ended);
}

/// Journals hold what panes printed and the registry who runs what: another user
/// may read neither. An existing state directory that is too open is tightened. And
/// the journal keeps the prompt marks without cohort's signature.
#[tokio::test]
async fn state_is_readable_by_its_owner_only_and_holds_no_mark_key() {
    use std::os::unix::fs::PermissionsExt;
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let server = TestServer::new();
    std::fs::set_permissions(server.state_dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let engine = engine(&server).await;
    let pane = shell(&engine, "private").await;
    run(&engine, &pane, "echo AWS_SECRET_ACCESS_KEY=x", spec(10_000)).await;
    // More than the spill writer's buffer, so what came before is on disk.
    run(&engine, &pane, "seq 1 40000", spec(20_000)).await;

    assert_eq!(mode(server.state_dir()), 0o700);
    assert_eq!(mode(&server.state_dir().join("registry.db")), 0o600);
    let journal = server.state_dir().join("journal");
    let mut spilled = Vec::new();
    for dir in std::fs::read_dir(&journal).unwrap().flatten() {
        for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
            assert_eq!(mode(&file.path()), 0o600, "{}", file.path().display());
            spilled.extend(std::fs::read(file.path()).unwrap());
        }
    }
    let spilled = String::from_utf8_lossy(&spilled);
    assert!(
        spilled.contains("AWS_SECRET_ACCESS_KEY"),
        "the journal spills to {}",
        journal.display()
    );
    // The prompt marks are kept, cohort's signature on them is not: nothing read
    // from the journal could be replayed as a verified mark.
    assert!(spilled.contains("\x1b]133;D;0"), "{spilled:?}");
    assert!(!spilled.contains("cohort="), "{spilled:?}");
}
