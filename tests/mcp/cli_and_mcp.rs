//! The `cohort` binary as a separate process: rediscovery from a second process,
//! `attach --print`, and the MCP server driven through rmcp's client.

// One test types through the backend itself: output written before any cohort
// process watched the pane.
#![allow(clippy::disallowed_methods)]

use std::process::Command;

use crate::support::*;
use cohort_backends::{Identity, SpawnOptions, TerminalBackend};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;

fn cohort(server: &TestServer) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cohort"));
    cmd.env("COHORT_TMUX_SOCKET", &server.socket)
        .env("COHORT_STATE_DIR", server.state_dir())
        .env("SHELL", bash_path())
        .env("HOME", server.home())
        .env_remove("TMUX");
    cmd
}

/// `cohort mcp` on `server` as a child process, through rmcp's client. `environment`
/// shapes the child's environment first (it may clear it); the server's socket and
/// state directory are set after it.
async fn mcp_child(
    server: &TestServer,
    environment: impl FnOnce(&mut tokio::process::Command),
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_cohort")).configure(|c| {
        environment(c);
        c.arg("mcp")
            .env("COHORT_TMUX_SOCKET", &server.socket)
            .env("COHORT_STATE_DIR", server.state_dir())
            .env_remove("TMUX");
    });
    ().serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .expect("initialize")
}

/// A tool call with JSON arguments.
fn call(name: &'static str, args: serde_json::Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone())
}

#[tokio::test]
async fn a_second_process_finds_panes_by_their_stamped_identity() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let pane = backend
        .spawn(SpawnOptions {
            name: "window-name".into(),
            identity: Some(Identity {
                id: "2b9d4c1e-0000-4000-8000-00000000000a".into(),
                name: "reviewer".into(),
                agent: None,
                team: None,
                key: None,
                anchor: None,
                announces_start: false,
            }),
            ..Default::default()
        })
        .await
        .unwrap();

    // A one-shot command that has exited is listed by the command it was given, not
    // by cohort's wrapper around it.
    let exited = backend
        .spawn(SpawnOptions {
            name: "one-shot".into(),
            command: Some("sh -c 'exit 3' # done\n# second line".into()),
            identity: stamped("one-shot"),
            ..Default::default()
        })
        .await
        .unwrap();
    for _ in 0..200 {
        let panes = backend.list_panes().await.unwrap();
        // tmux marks the pane dead when its terminal closes, and knows the status once
        // the process is reaped, a moment later.
        if panes
            .iter()
            .any(|p| p.id == exited.id && p.dead && p.exit_status.is_some())
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }

    let out = cohort(&server).arg("ls").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("reviewer"), "{listing}");
    assert!(listing.contains(pane.id.as_str()), "{listing}");
    let row = listing
        .lines()
        .find(|l| l.contains(exited.id.as_str()))
        .unwrap_or_else(|| panic!("the exited command is not listed:\n{listing}"));
    assert!(
        row.contains("sh -c 'exit 3' # done # second line") && row.contains("exited (3)"),
        "{listing}"
    );
    assert!(!listing.contains("__cohort"), "{listing}");

    let out = cohort(&server)
        .args(["attach", "--print", "reviewer"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(line.contains(&format!("-L {}", server.socket)), "{line}");
    assert!(line.contains(pane.id.as_str()), "{line}");

    let out = cohort(&server)
        .args(["attach", "--print", "nobody"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no session named \"nobody\"") && err.contains("reviewer"),
        "{err}"
    );
}

#[tokio::test]
async fn mcp_tools_over_stdio_through_a_real_client() {
    let server = TestServer::new();
    let client = mcp_child(&server, |c| {
        c.env("SHELL", bash_path()).env("HOME", server.home());
    })
    .await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for expected in ["list", "open", "send", "key", "read", "close"] {
        assert!(
            names.contains(&expected),
            "missing tool {expected}: {names:?}"
        );
    }
    assert!(
        tools.iter().all(|t| t.output_schema.is_some()),
        "every tool has an output schema"
    );

    let opened = client
        .call_tool(call("open", serde_json::json!({"name": "mcp-shell"})))
        .await
        .unwrap();
    assert_ne!(opened.is_error, Some(true), "{opened:?}");
    let sent = client
        .call_tool(call(
            "send",
            serde_json::json!({"target": "mcp-shell", "text": "echo from-$((6*7))"}),
        ))
        .await
        .unwrap();
    assert_ne!(sent.is_error, Some(true), "{sent:?}");

    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let read = client
            .call_tool(call(
                "read",
                serde_json::json!({"target": "mcp-shell", "mode": "screen"}),
            ))
            .await
            .unwrap();
        let screen = read
            .structured_content
            .as_ref()
            .and_then(|v| v["output"].as_str())
            .unwrap_or_default()
            .to_string();
        if screen.lines().any(|l| l == "from-42") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "output never showed: {screen} {read:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    let ran = client
        .call_tool(call(
            "run",
            serde_json::json!({"target": "mcp-shell", "command": "sh -c 'echo ran; exit 3'"}),
        ))
        .await
        .unwrap();
    let result = ran.structured_content.clone().unwrap();
    assert_eq!(result["verdict"]["complete"], true, "{result}");
    assert_eq!(result["verdict"]["layer"], "exit", "{result}");
    assert_eq!(result["verdict"]["exit_status"], 3, "{result}");
    assert_eq!(result["output"].as_str().unwrap().trim(), "ran", "{result}");
    assert!(
        result["meta"].as_str().unwrap().contains("exit 3"),
        "{result}"
    );

    let refused = client
        .call_tool(call(
            "run",
            serde_json::json!({"target": "mcp-shell", "command": "rm -rf ~"}),
        ))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true));

    let bad_key = client
        .call_tool(call(
            "key",
            serde_json::json!({"target": "mcp-shell", "keys": ["Entr"]}),
        ))
        .await
        .unwrap();
    assert_eq!(bad_key.is_error, Some(true));
    let unknown = client
        .call_tool(call("read", serde_json::json!({"target": "ghost"})))
        .await
        .unwrap();
    assert_eq!(unknown.is_error, Some(true));
    let bad_args = client
        .call_tool(call("send", serde_json::json!({"target": 3})))
        .await
        .unwrap();
    assert_eq!(bad_args.is_error, Some(true));

    let closed = client
        .call_tool(call("close", serde_json::json!({"target": "mcp-shell"})))
        .await
        .unwrap();
    assert_ne!(closed.is_error, Some(true), "{closed:?}");
    let listed = client
        .call_tool(call("list", serde_json::json!({})))
        .await
        .unwrap();
    let sessions = listed.structured_content.unwrap()["sessions"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(sessions, 0);
    client.cancel().await.unwrap();
}

/// A second cohort process (a worker's, next to its manager's) reads what a session
/// printed before it started: tail and line reads reach back; "new" starts at its start.
#[tokio::test]
async fn a_second_process_reads_the_history_from_before_it_started() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let mut events = backend.subscribe();
    let pane = backend
        .spawn(SpawnOptions {
            name: "history".into(),
            identity: stamped("history"),
            ..Default::default()
        })
        .await
        .unwrap();
    wait_prompt(&mut events, &pane.id).await;
    backend
        .send_text(&pane.id, "echo early-$((6*7))")
        .await
        .unwrap();
    backend
        .send_keys(&pane.id, &[cohort_backends::Key::ENTER])
        .await
        .unwrap();
    collect_output_until(&mut events, &pane.id, |o| contains(o, b"early-42")).await;

    let client = mcp_child(&server, |c| {
        c.env("SHELL", bash_path()).env("HOME", server.home());
    })
    .await;
    let read = |mode: &str| {
        call(
            "read",
            serde_json::json!({"target": pane.id.as_str(), "mode": mode}),
        )
    };
    let text_of = |r: rmcp::model::CallToolResult| {
        let out = r.structured_content.expect("structured result");
        (
            out["output"].as_str().unwrap_or_default().to_string(),
            out["meta"].as_str().unwrap_or_default().to_string(),
        )
    };
    // The very first call already sees it: the server takes the scrollback in before
    // it answers tool calls.
    let (tail, meta) = text_of(client.call_tool(read("tail")).await.unwrap());
    assert!(tail.contains("early-42"), "{tail}\n{meta}");
    assert!(
        meta.contains("scrollback from before cohort attached"),
        "{meta}"
    );
    let (new, _) = text_of(client.call_tool(read("new")).await.unwrap());
    assert!(!new.contains("early-42"), "{new}");
    client.cancel().await.unwrap();
}

/// Agent hosts and CI often start servers with a bare environment: no `LANG`, no
/// `SHELL`, no `TERM`. cohort must still spawn panes, read tmux's formatted replies
/// (whose field separator is a control byte) and return non-ASCII output whole.
#[tokio::test]
async fn a_bare_environment_without_locale_or_shell_still_works() {
    let home = tempfile::tempdir().unwrap();
    let server = TestServer::new();
    let client = mcp_child(&server, |c| {
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path());
    })
    .await;
    let opened = client
        .call_tool(call("open", serde_json::json!({"name": "bare"})))
        .await
        .unwrap();
    assert_ne!(opened.is_error, Some(true), "{opened:?}");
    let ran = client
        .call_tool(call(
            "run",
            serde_json::json!({"target": "bare", "command": "printf 'caf\\303\\251 %s\\n' $((6*7)); false"}),
        ))
        .await
        .unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    let out = ran.structured_content.expect("structured result");
    assert!(out["output"].as_str().unwrap().contains("café 42"), "{out}");
    assert_eq!(out["verdict"]["layer"], "exit", "{out}");
    assert_eq!(out["verdict"]["exit_status"], 1, "{out}");
    client.cancel().await.unwrap();
}

/// `cohort workers rules` prints the screen words in use, the user's added to the
/// built-in ones; a file with an error is refused with its line and why, and the
/// built-in words are printed still.
#[test]
fn the_screen_words_are_the_built_in_ones_with_the_users() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("screens.toml");
    let rules = |text: &str| {
        std::fs::write(&file, text).unwrap();
        Command::new(env!("CARGO_BIN_EXE_cohort"))
            .args(["workers", "rules"])
            .env("COHORT_SCREENS_FILE", &file)
            .output()
            .unwrap()
    };
    let out = rules("[codex]\nbusy = [\"ctrl-c to stop\"]\n");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("busy = [\"esc to interrupt)\", \"ctrl-c to stop\"]"),
        "{text}"
    );
    let out = rules("[codex]\nbusy = [\"ctrl-c to stop\"]\nspiner = []\n");
    let (text, said) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "{}, line 3: unknown field `spiner`",
            file.display()
        )),
        "{said}"
    );
    assert!(
        text.contains("busy = [\"esc to interrupt)\"]") && !text.contains("ctrl-c"),
        "{text}"
    );
}

/// `cohort workers rules --transcripts` prints the transcript rules in use, the
/// user's added to the built-in ones; a file with an error is refused with its line
/// and why (exit 1), and the built-in rules are printed still.
#[test]
fn the_transcript_rules_are_the_built_in_ones_with_the_users() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("transcripts.toml");
    let rules = |text: &str| {
        std::fs::write(&file, text).unwrap();
        Command::new(env!("CARGO_BIN_EXE_cohort"))
            .args(["workers", "rules", "--transcripts"])
            .env("COHORT_TRANSCRIPTS_FILE", &file)
            .output()
            .unwrap()
    };
    let out = rules("[codex]\ninterrupted = [\"turn_cancelled\"]\n");
    let (text, said) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{said}");
    assert!(
        text.contains("interrupted = [\"turn_aborted\", \"turn_cancelled\"]"),
        "{text}"
    );
    assert!(
        said.contains(&format!(
            "built-in transcript rules with the user's {}",
            file.display()
        )),
        "{said}"
    );
    let out = rules("[gemini]\nuser = [\"user\"]\n\n[codex.versions.\"~0.4\"]\nerrors = [\"e\"]\n");
    let (text, said) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "built-in transcript rules only: the user's file was refused: {}, line 4: [codex.versions.\"~0.4\"]",
            file.display()
        )),
        "{said}"
    );
    assert!(text.contains("interrupted = [\"turn_aborted\"]"), "{text}");
}

/// `cohort workers rules` also says which price table is in use; one with an error
/// is refused with its line and why (exit 1).
#[test]
fn the_price_table_in_use_is_named_and_a_bad_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prices.toml");
    let rules = |text: Option<&str>| {
        if let Some(text) = text {
            std::fs::write(&file, text).unwrap();
        }
        Command::new(env!("CARGO_BIN_EXE_cohort"))
            .args(["workers", "rules"])
            .env("COHORT_PRICES_FILE", &file)
            .output()
            .unwrap()
    };
    let out = rules(None);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("no price table: costs only where the CLI states them"),
        "{said}"
    );
    let out = rules(Some(
        "[[model]]\nname = \"gpt-5*\"\ninput = 1.25\noutput = 10.0\n",
    ));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("price table {} (1 model(s))", file.display())),
        "{said}"
    );
    let out = rules(Some(
        "[[model]]\nname = \"gpt-5*\"\ninput = 1.25\noutput = \"ten\"\n",
    ));
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "no price table: the user's file was refused: {}, line 4",
            file.display()
        )),
        "{said}"
    );
}

#[test]
fn reduce_runs_a_command_and_passes_its_status_through() {
    let out = Command::new(env!("CARGO_BIN_EXE_cohort"))
        .args([
            "reduce",
            "--",
            "sh",
            "-c",
            "seq 1 400; echo 'error: it broke' >&2; exit 7",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("error: it broke"), "{text}");
    assert!(text.lines().count() < 20, "{text}");
    assert!(
        text.trim_end().ends_with(']') && text.contains("shown "),
        "{text}"
    );
}

#[test]
fn reduce_reads_stdin_and_names_bad_rule_lines() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cohort"))
        .args(["reduce", "--command", "git log"])
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"commit 0123456789abcdef0123456789abcdef01234567\nAuthor: A <a@x>\nDate:   Mon Jan 1 00:00:00 2026 +0000\n\n    first subject\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("first subject"));

    std::fs::create_dir_all(dir.path().join(".cohort")).unwrap();
    std::fs::write(
        dir.path().join(".cohort/reducers.toml"),
        "[[reducer]]\nname = \"x\"\ncommand = \"x\"\ndrop = [\"(\"]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cohort"))
        .args(["reduce", "--command", "x"])
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("reducers.toml:4:"), "{err}");
}

#[tokio::test]
async fn a_human_attaching_does_not_resize_the_agents_window() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let pane = backend
        .spawn(SpawnOptions {
            name: "watched".into(),
            identity: stamped("watched"),
            ..Default::default()
        })
        .await
        .unwrap();
    let before = pane.size;
    let (outer, _outer) = attach_a_human(&server, "watched").await;
    // The human's terminal shows the session (tmux draws it a moment after attaching).
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let screen = Command::new("tmux")
            .args(["-L", &outer, "capture-pane", "-p"])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&screen.stdout).contains("watched") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the human never saw the session"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let after = backend.pane_state(&pane.id).await.unwrap().size;
    assert_eq!(
        after, before,
        "the agent's window was resized by the human's terminal"
    );
}

#[test]
fn a_missing_tmux_says_how_to_install_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_cohort"))
        .arg("doctor")
        .env("COHORT_TMUX", "/nonexistent/tmux")
        .env("COHORT_TMUX_SOCKET", "cohort-test-missing")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("FAIL  tmux") && text.contains("install"),
        "{text}"
    );
}

#[test]
fn reduce_prints_the_meta_line_only_when_something_was_hidden() {
    use std::io::Write;
    let reduce = |args: &[&str], input: &[u8]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cohort"))
            .arg("reduce")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    // Nothing hidden: the output alone, not a token more.
    assert_eq!(
        reduce(&["--command", "hostname"], b"build-7\n"),
        "build-7\n"
    );
    // Asked for: the counts anyway.
    let always = reduce(&["--command", "hostname", "--meta", "always"], b"build-7\n");
    assert!(always.starts_with("build-7\n[shown 1/1 lines"), "{always}");
    // Something hidden: the line says what and where.
    let lines: String = (1..=3000).map(|n| format!("row {n}\n")).collect();
    let folded = reduce(&["--command", "cat rows"], lines.as_bytes());
    assert!(
        folded.trim_end().ends_with(']') && folded.contains("hidden"),
        "{folded}"
    );
    assert_eq!(
        reduce(
            &["--command", "cat rows", "--meta", "never"],
            lines.as_bytes()
        )
        .matches('[')
        .count(),
        0
    );
}

#[test]
fn doctor_times_the_shell_startup_and_warns_when_it_is_slow() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join(".bashrc"), "sleep 2.5\n").unwrap();
    let server = TestServer::new();
    let out = Command::new(env!("CARGO_BIN_EXE_cohort"))
        .arg("doctor")
        .env("HOME", home.path())
        .env("SHELL", bash_path())
        .env("COHORT_TMUX_SOCKET", &server.socket)
        .env("COHORT_STATE_DIR", server.state_dir())
        .env_remove("TMUX")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("first prompt after"), "{text}");
    // The user's files cohort reads: none in this home.
    assert!(
        text.contains("ok    screen words: built-in screen words\n")
            && text.contains("info  price table: none"),
        "{text}"
    );
    assert!(
        text.contains("warn  shell startup")
            && text.contains(&format!("`{} -l -i -c exit`", bash_path())),
        "{text}"
    );
}

#[test]
fn a_reader_that_stops_early_is_not_an_error() {
    // `cohort tools | head -1`: the pipe closes after the first line.
    let mut child = Command::new(env!("CARGO_BIN_EXE_cohort"))
        .arg("tools")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("panicked"),
        "{stderr}"
    );
}

/// Every request gets an answer: one nested past what the JSON parser reads, or over
/// the size limit, is refused with an error for its id, and the server goes on.
#[test]
fn requests_too_deep_or_too_big_are_answered() {
    use std::io::{BufRead, BufReader, Write};
    let server = TestServer::new();
    let mut child = cohort(&server)
        .args(["mcp", "--toolsets", "all"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answer = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<serde_json::Value>(&line).unwrap()
    };
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"raw","version":"1"}}}}}}"#).unwrap();
    assert_eq!(answer()["id"], 1);
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    let mut tree = serde_json::json!({"pane": 0});
    for _ in 0..70 {
        tree = serde_json::json!({"split": "horizontal", "children": [tree, {"pane": 1}]});
    }
    let deep = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "create_layout", "arguments": {"name": "deep", "tree": tree}}});
    writeln!(stdin, "{deep}").unwrap();
    let refused = answer();
    assert_eq!(refused["id"], 2, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("levels deep"),
        "{refused}"
    );
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"list","arguments":{{"x":"{}"}}}}}}"#,
        "z".repeat(17 << 20)
    );
    writeln!(stdin, "{big}").unwrap();
    let refused = answer();
    assert_eq!(refused["id"], 3, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("MiB"),
        "{refused}"
    );
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":4,"method":"ping"}}"#).unwrap();
    assert_eq!(answer()["id"], 4);
    drop(stdin);
    let _ = child.wait();
}

/// Every command that takes toolsets names every one of them in its help.
#[test]
fn help_names_every_toolset_wherever_toolsets_are_taken() {
    for command in ["mcp", "serve"] {
        let help = crate::support::deadline::output_within(
            Command::new(env!("CARGO_BIN_EXE_cohort")).args([command, "--help"]),
            WAIT,
        )
        .unwrap_or_else(|| panic!("cohort {command} --help did not answer"));
        for set in cohort::mcp::Toolset::ALL {
            assert!(
                help.contains(set.name()),
                "cohort {command} --help lacks {}: {help}",
                set.name()
            );
        }
    }
}

/// cohort's own settings and secrets in its environment (the state directory, a
/// worker's hook key, an iTerm2 cookie, a role) do not reach the shells of its
/// panes: the tmux server cohort starts, and every tmux command it runs, go without
/// them.
#[tokio::test]
async fn cohort_settings_and_secrets_stay_out_of_its_panes() {
    let server = TestServer::new();
    let client = mcp_child(&server, |c| {
        c.env("SHELL", bash_path())
            .env("HOME", server.home())
            .env("COHORT_HOOK_KEY", "00".repeat(32))
            .env("COHORT_TOOLSETS", "core")
            .env("ITERM2_COOKIE", "a-secret-cookie");
    })
    .await;
    let opened = client
        .call_tool(call("open", serde_json::json!({"name": "env-shell"})))
        .await
        .unwrap();
    assert_ne!(opened.is_error, Some(true), "{opened:?}");
    let ran = client
        .call_tool(call(
            "run",
            serde_json::json!({"target": "env-shell",
                "command": "env | grep -E '^(COHORT_|ITERM2_COOKIE)' | cut -d= -f1 | sort | tr '\\n' ' '; echo END"}),
        ))
        .await
        .unwrap();
    let out = ran.structured_content.expect("structured result");
    let names = out["output"].as_str().unwrap().trim().to_string();
    // What cohort gives a pane on purpose: its session name, persistent id and the
    // secret its programs signal with.
    assert_eq!(
        names, "COHORT_SESSION COHORT_SESSION_ID COHORT_SIGNAL_ID END",
        "cohort's settings leaked into the pane: {out}"
    );
    client.cancel().await.unwrap();
}

/// On the command line too, a person's window is no session: `ls` leaves it out,
/// `ls --all` shows it as not cohort's, `attach` refuses it saying how to adopt it,
/// and `cohort adopt` makes it one.
#[tokio::test]
async fn the_command_line_lists_and_adopts_a_persons_window() {
    let server = TestServer::new();
    let backend = server.backend().await;
    backend
        .spawn(SpawnOptions {
            name: "mine".into(),
            identity: stamped("mine"),
            ..Default::default()
        })
        .await
        .unwrap();
    let pane = server.persons_window("notes");
    let run = |args: &[&str]| {
        crate::support::deadline::output_within(cohort(&server).args(args), WAIT)
            .unwrap_or_else(|| panic!("cohort {args:?} did not answer"))
    };
    let listing = run(&["ls"]);
    assert!(
        listing.contains("mine") && !listing.contains(pane.as_str()),
        "{listing}"
    );
    let all = run(&["ls", "--all"]);
    let row = all
        .lines()
        .find(|l| l.contains(pane.as_str()))
        .unwrap_or_else(|| panic!("{pane} not in ls --all:\n{all}"));
    assert!(
        row.contains("notes") && row.contains("(not cohort's)"),
        "{all}"
    );
    let refused = cohort(&server)
        .args(["attach", "notes", "--print"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("not one of cohort's sessions")
            && said.contains(&format!("cohort adopt {pane}")),
        "{said}"
    );
    let adopted = run(&["adopt", pane.as_str(), "--name", "jotter"]);
    assert!(adopted.contains("jotter"), "{adopted}");
    let listing = run(&["ls"]);
    assert!(
        listing
            .lines()
            .any(|l| l.contains("jotter") && l.contains(pane.as_str())),
        "{listing}"
    );
}

/// The other tmux server a human's terminal is, killed on drop.
struct KillOuter(String);

impl Drop for KillOuter {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .status();
    }
}

/// A human in an 80x20 terminal (a pane of another tmux server) runs `cohort attach
/// NAME`; returns once their client is attached to cohort's server, with the outer
/// server's socket name.
async fn attach_a_human(server: &TestServer, name: &str) -> (String, KillOuter) {
    let outer = format!("{}-human", server.socket);
    let attach = format!(
        "env COHORT_TMUX_SOCKET={} COHORT_STATE_DIR={} {} attach {name}",
        server.socket,
        server.state_dir().display(),
        env!("CARGO_BIN_EXE_cohort")
    );
    let status = Command::new("tmux")
        .args([
            "-L",
            &outer,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "80",
            "-y",
            "20",
            &attach,
        ])
        .env_remove("TMUX")
        .status()
        .unwrap();
    assert!(status.success());
    let kill = KillOuter(outer.clone());
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let clients = Command::new("tmux")
            .args([
                "-L",
                &server.socket,
                "list-clients",
                "-F",
                "#{client_termname}",
            ])
            .output()
            .unwrap();
        if !String::from_utf8_lossy(&clients.stdout).trim().is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the human never attached"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    (outer, kill)
}

/// An alert reaches the human attached to the pane's session: a message on their
/// client's status line, and the terminal's own notification (OSC 9) and a bell
/// written to their terminal; the text is shown, never run or expanded.
#[tokio::test]
async fn an_alert_reaches_the_human_attached() {
    let server = TestServer::new();
    let backend = server.backend().await;
    let pane = backend
        .spawn(SpawnOptions {
            name: "alerted".into(),
            identity: stamped("alerted"),
            ..Default::default()
        })
        .await
        .unwrap();
    let (outer, _outer) = attach_a_human(&server, "alerted").await;
    // What reaches the human's terminal, raw.
    let raw = server.state_dir().join("human-terminal.log");
    let piped = Command::new("tmux")
        .args(["-L", &outer, "pipe-pane", "-o"])
        .arg(format!("cat >> '{}'", raw.display()))
        .env_remove("TMUX")
        .status()
        .unwrap();
    assert!(piped.success());
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // A format job in the text would run when the message is drawn.
    let canary = server.state_dir().join("alert-ran");
    let message = format!(
        "build failed: #(touch {}) 3 errors\nsee log",
        canary.display()
    );
    backend.alert(&pane.id, &message).await.unwrap();
    let text = format!(
        "build failed: #(touch {}) 3 errors see log",
        canary.display()
    );
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let written = std::fs::read(&raw).unwrap_or_default();
        let wanted = format!("\x1b]9;{text}\x07\x07");
        if written
            .windows(wanted.len())
            .any(|w| w == wanted.as_bytes())
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no notification in the human's terminal: {:?}",
            String::from_utf8_lossy(&written)
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let messages = Command::new("tmux")
        .args(["-L", &server.socket, "show-messages"])
        .output()
        .unwrap();
    let messages = String::from_utf8_lossy(&messages.stdout);
    assert!(messages.contains(&format!("cohort: {text}")), "{messages}");
    assert!(!canary.exists(), "the alert's text ran a command");
}
