//! Recordings to asciicast v2: started by the engine, by `open` with `record: true`
//! and the `record` tool, and by `cohort record NAME`. Every file is read back as a
//! player reads it (a header, then timed events in order) and replayed onto a
//! terminal screen of the recorded size, which must show what the pane showed; with
//! the official `asciinema` installed (`COHORT_PYTHON`, see `support/python.rs`) it
//! must accept the file too. The size limit holds.

use crate::{
    python,
    served::{self, call},
    support::*,
};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use cohort::engine::Engine;
use cohort_backends::PaneId;
use cohort_terminal::{completion::WaitSpec, record::RecordOptions, OpenOptions, SendOptions};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};

/// A recording read back: its header and its events.
struct Cast {
    header: Value,
    events: Vec<(f64, String, String)>,
}

impl Cast {
    /// Reads `path` as a player does, failing on anything a player would refuse.
    fn read(path: &Path) -> Cast {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let mut lines = text.lines();
        let header: Value =
            serde_json::from_str(lines.next().expect("a header line")).expect("the header is JSON");
        assert_eq!(header["version"], json!(2), "{header}");
        assert!(header["width"].as_u64().is_some_and(|w| w > 0), "{header}");
        assert!(header["height"].as_u64().is_some_and(|h| h > 0), "{header}");
        let mut events = Vec::new();
        let mut last = 0.0;
        for line in lines {
            let (time, code, data): (f64, String, String) =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not an event ({e}): {line}"));
            assert!(time >= last, "time goes back at {line}");
            assert!(matches!(code.as_str(), "o" | "m" | "i"), "{line}");
            last = time;
            events.push((time, code, data));
        }
        Cast { header, events }
    }

    /// The screen a terminal of the recorded size shows after all the output.
    fn replay(&self) -> Vec<String> {
        let rows = self.header["height"].as_u64().unwrap() as u16;
        let cols = self.header["width"].as_u64().unwrap() as u16;
        let mut terminal = vt100::Parser::new(rows, cols, 0);
        for (_, code, data) in &self.events {
            if code == "o" {
                terminal.process(data.as_bytes());
            }
        }
        terminal
            .screen()
            .rows(0, cols)
            .map(|row| row.trim_end().to_string())
            .collect()
    }

    fn markers(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter(|(_, code, _)| code == "m")
            .map(|(_, _, data)| data.as_str())
            .collect()
    }

    /// What `asciinema cat` prints for the file, when asciinema is installed.
    fn asciinema_cat(path: &Path) -> Option<String> {
        let python = python::interpreter("asciinema", "conformance/record/requirements.txt")?;
        let output = Command::new(python)
            .args(["-m", "asciinema", "cat"])
            .arg(path)
            .output()
            .expect("run asciinema");
        assert!(
            output.status.success(),
            "asciinema refused {}: {}",
            path.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        Some(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

async fn shell(server: &TestServer, name: &str) -> (Engine, PaneId) {
    let backend = server.backend().await;
    let engine = Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket)
        .expect("engine");
    let pane = engine
        .terminal
        .open(OpenOptions::named(name))
        .await
        .expect("open a shell");
    assert!(
        engine.terminal.wait_ready(&pane.id, WAIT).await,
        "no prompt"
    );
    (engine, pane.id)
}

async fn run(engine: &Engine, pane: &PaneId, command: &str) {
    let spec = WaitSpec {
        timeout: WAIT,
        ..WaitSpec::default()
    };
    engine
        .terminal
        .run(
            pane,
            command,
            &SendOptions::default(),
            spec,
            false,
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .unwrap_or_else(|e| panic!("{command}: {e}"));
}

/// The rows of the pane's screen now, as plain text.
async fn screen(engine: &Engine, pane: &PaneId) -> Vec<String> {
    let screen = engine.terminal.screen(pane).await.expect("screen");
    screen
        .rows
        .iter()
        .map(|r| r.trim_end().to_string())
        .collect()
}

#[tokio::test]
async fn a_recording_replays_to_the_screen_it_recorded() {
    let server = TestServer::new();
    let (engine, pane) = shell(&server, "demo").await;
    run(&engine, &pane, "echo before the recording").await;
    let path = server.state_dir().join("demo.cast");
    let started = engine
        .terminal
        .record(
            &pane,
            RecordOptions {
                path: Some(path.clone()),
                input_marks: true,
                ..RecordOptions::default()
            },
        )
        .await
        .expect("record");
    assert!(started.recording);
    // Recording it twice is refused, naming the file it goes to.
    let twice = engine
        .terminal
        .record(&pane, RecordOptions::default())
        .await
        .expect_err("a second recording");
    assert!(twice.to_string().contains("demo.cast"), "{twice}");

    run(
        &engine,
        &pane,
        "printf '\\033[1;32mbuild ok\\033[0m, \\033[33m2 warnings\\033[0m\\n'",
    )
    .await;
    run(&engine, &pane, "seq 1 30 | paste -sd' '").await;
    run(&engine, &pane, "printf 'caf\\303\\251 \\342\\234\\223\\n'").await;
    let live = screen(&engine, &pane).await;
    let ended = engine
        .terminal
        .stop_recording(&pane)
        .await
        .expect("stop")
        .expect("it was recording");
    assert!(!ended.recording);
    assert_eq!(ended.ended.as_deref(), Some("stopped"));
    assert_eq!(ended.bytes, std::fs::metadata(&path).unwrap().len());

    let cast = Cast::read(&path);
    // The first frame is the screen as it was, so the earlier line is there too.
    assert_eq!(cast.replay(), live, "the replay differs from the pane");
    let colours: String = cast.events.iter().map(|(_, _, d)| d.as_str()).collect();
    assert!(colours.contains("\u{1b}[1;32mbuild ok"), "{colours}");
    let markers = cast.markers();
    assert!(
        markers.iter().any(|m| m.contains("seq 1 30")),
        "{markers:?}"
    );
    if let Some(shown) = Cast::asciinema_cat(&path) {
        for text in ["before the recording", "build ok", "1 2 3 4 5", "café ✓"] {
            assert!(shown.contains(text), "asciinema cat lacks {text:?}");
        }
    }
}

#[tokio::test]
async fn a_recording_stops_at_its_size_limit_and_stays_readable() {
    let server = TestServer::new();
    let (engine, pane) = shell(&server, "flood").await;
    let path = server.state_dir().join("flood.cast");
    let limit = 16 * 1024;
    engine
        .terminal
        .record(
            &pane,
            RecordOptions {
                path: Some(path.clone()),
                max_bytes: limit,
                ..RecordOptions::default()
            },
        )
        .await
        .expect("record");
    run(&engine, &pane, "seq 1 20000").await;
    let ended = tokio::time::timeout(WAIT, engine.terminal.recording_ended(&pane))
        .await
        .expect("the recording ended")
        .expect("there was one");
    let why = ended.ended.unwrap();
    assert!(why.contains("size limit"), "{why}");
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size <= limit, "{size} bytes over a limit of {limit}");
    let cast = Cast::read(&path);
    assert!(
        cast.markers()
            .last()
            .is_some_and(|m| m.contains("size limit")),
        "{:?}",
        cast.markers()
    );
    Cast::asciinema_cat(&path);
    // The session goes on, and a new recording may start.
    engine
        .terminal
        .record(&pane, RecordOptions::default())
        .await
        .expect("record again");
}

/// `open` with `record: true` records from the start; the `record` tool stops it.
#[tokio::test]
async fn open_records_and_the_record_tool_stops() {
    let server = TestServer::new();
    let (_served, url) = served::serve_http(&server, &[]);
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(url))
            .await
            .expect("initialize over HTTP");
    let opened = call(&client, "open", json!({"name": "taped", "record": true})).await;
    let path = opened["recording"]
        .as_str()
        .unwrap_or_else(|| panic!("no recording in {opened}"))
        .to_string();
    call(
        &client,
        "run",
        json!({"target": "taped", "command": "echo on the tape"}),
    )
    .await;
    let stopped = call(&client, "record", json!({"target": "taped", "stop": true})).await;
    assert_eq!(stopped["path"], json!(path), "{stopped}");
    assert_eq!(stopped["recording"], json!(false), "{stopped}");
    assert_eq!(stopped["play"], json!(format!("asciinema play {path}")));
    let cast = Cast::read(Path::new(&path));
    assert!(
        cast.replay().iter().any(|r| r == "on the tape"),
        "{:?}",
        cast.replay()
    );
    // Stopping what is not recording says so.
    let again = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("record").with_arguments(
                json!({"target": "taped", "stop": true})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(again.is_error, Some(true), "{again:?}");
    // The tool starts one with input marks, to a path of the caller's choosing.
    let chosen = server.state_dir().join("chosen.cast");
    let started = call(
        &client,
        "record",
        json!({"target": "taped", "path": chosen, "input_marks": true}),
    )
    .await;
    assert_eq!(started["recording"], json!(true), "{started}");
    call(
        &client,
        "run",
        json!({"target": "taped", "command": "true"}),
    )
    .await;
    call(&client, "record", json!({"target": "taped", "stop": true})).await;
    assert!(Cast::read(&chosen).markers().contains(&"$ true"));
    client.cancel().await.unwrap();
}

/// `cohort record NAME` follows a session another process drives, until it ends.
#[tokio::test]
async fn the_record_command_follows_a_session_until_it_ends() {
    let server = TestServer::new();
    let (engine, pane) = shell(&server, "watched").await;
    let path = server.state_dir().join("watched.cast");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cohort"))
        .args(["record", "watched", "--input", "--out"])
        .arg(&path)
        .env("COHORT_TMUX_SOCKET", &server.socket)
        .env("COHORT_STATE_DIR", server.state_dir())
        .env("HOME", server.home())
        .env_remove("TMUX")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("recording watched to"), "{line}");
    run(&engine, &pane, "echo recorded from outside").await;
    engine
        .terminal
        .send(
            &pane,
            "exit 3",
            &SendOptions::default(),
            &cohort_terminal::Caller::new("test"),
        )
        .await
        .expect("exit");
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let mut said = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut said).unwrap();
    assert!(output.status.success(), "{said}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        path.display().to_string()
    );
    assert!(said.contains("asciinema play"), "{said}");
    let cast = Cast::read(&path);
    let markers = cast.markers();
    // Typed by another process: the marker is the line as the terminal showed it.
    assert!(
        markers
            .iter()
            .any(|m| m.ends_with("echo recorded from outside")),
        "{markers:?}"
    );
    assert!(
        markers.last().is_some_and(|m| m.contains("exited")),
        "{markers:?}"
    );
    assert!(
        cast.replay().iter().any(|r| r == "recorded from outside"),
        "{:?}",
        cast.replay()
    );
}
