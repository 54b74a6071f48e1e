//! The dashboard in a real headless Chromium: the page served by `cohort serve
//! --http` loads, shows the panes of a running server grouped by team with their
//! colours, agents, verdicts, locks and unread notifications, updates when a pane
//! prints (the time it took is printed), opens a pane large with its attach line,
//! and refuses typing unless allowed. Screenshots are kept under `target/tmp/`.
//! Skipped without Chromium unless `COHORT_REQUIRE_BROWSER=1` (see
//! `support/browser.rs`).

#[path = "support/browser.rs"]
mod browser;
#[path = "support/served.rs"]
mod served;
mod support;

use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use support::*;

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> Value {
    let result = client
        .call_tool(
            CallToolRequestParams::new(tool.to_string())
                .with_arguments(args.as_object().expect("arguments are an object").clone()),
        )
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    result.structured_content.unwrap_or_default()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[tokio::test]
async fn the_dashboard_shows_and_follows_the_sessions_in_chromium() {
    let Some(chromium) = browser::program() else {
        return;
    };
    let server = TestServer::new();
    let (served, url) = served::serve_http(&server, &[]);
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(url))
            .await
            .expect("initialize over HTTP");

    // A team of two agents side by side, and a session outside any team.
    call(
        &client,
        "create_layout",
        json!({"name": "team", "layout": "horizontal", "panes": [
            {"name": "planner", "agent": "planner", "team": "build"},
            {"name": "coder", "agent": "coder", "team": "build"}
        ]}),
    )
    .await;
    call(&client, "open", json!({"name": "web"})).await;
    call(
        &client,
        "run",
        json!({"target": "web", "command": "printf '\\033[1;32mbuild ok\\033[0m, \\033[33m2 warnings\\033[0m\\n'"}),
    )
    .await;
    call(
        &client,
        "run",
        json!({"target": "planner", "command": "echo planning the work"}),
    )
    .await;
    let failed = call(
        &client,
        "run",
        json!({"target": "coder", "command": "ls /nonexistent"}),
    )
    .await;
    assert_eq!(failed["verdict"]["exit_status"], json!(2), "{failed}");
    call(
        &client,
        "lock",
        json!({"target": "coder", "owner": "planner"}),
    )
    .await;
    call(
        &client,
        "request_access",
        json!({"target": "coder", "requester": "reviewer", "reason": "to run the tests"}),
    )
    .await;

    let page = format!("{}/", served.address("/dashboard"));
    let page = page.trim_end_matches('/').to_string() + "/";
    let mut browser = browser::Browser::open(&chromium, &page, 1400, 900).await;
    // The page loads and shows every pane, grouped by team.
    browser
        .wait_until("document.querySelectorAll('.card').length === 3", WAIT)
        .await;
    browser
        .wait_until(
            "['planner', 'coder'].every(n => document.querySelector(`section[data-team=\"build\"] .card[data-session=\"${n}\"]`))",
            WAIT,
        )
        .await;
    // Screens keep their colours (bold green, yellow), and each card carries the
    // agent, the verdict, the lock and the unread notification.
    browser
        .wait_until(
            "(() => { const s = document.querySelector('.card[data-session=\"web\"] .screen').innerHTML; \
             return s.includes('color:#0dbc79;font-weight:bold;\">build ok') && s.includes('color:#e5e510;\">2 warnings'); })()",
            WAIT,
        )
        .await;
    let coder = browser
        .eval("document.querySelector('.card[data-session=\"coder\"] .card-head').textContent")
        .await;
    let coder = coder.as_str().unwrap();
    for expected in ["agent coder", "exit 2", "locked by planner"] {
        assert!(coder.contains(expected), "{expected:?} not in {coder:?}");
    }
    let planner = browser
        .eval("document.querySelector('.card[data-session=\"planner\"]').textContent")
        .await;
    let planner = planner.as_str().unwrap();
    for expected in ["exit 0", "1 unread", "echo planning the work"] {
        assert!(
            planner.contains(expected),
            "{expected:?} not in {planner:?}"
        );
    }
    let notes = browser
        .eval("document.getElementById('note-list').textContent")
        .await;
    assert!(
        notes
            .as_str()
            .unwrap()
            .contains("reviewer asks for access to coder"),
        "{notes}"
    );
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(shots.join("dashboard.png"), browser.screenshot().await).unwrap();

    // A pane that prints shows it: the page is told, it does not poll.
    browser
        .eval(
            "window.seen = new Promise(resolve => { \
               const shows = () => document.querySelector('.card[data-session=\"web\"] .screen').textContent.includes('MARK-123'); \
               new MutationObserver(() => { if (shows()) resolve(Date.now()); }) \
                 .observe(document.getElementById('teams'), { subtree: true, childList: true, characterData: true }); \
             }); true",
        )
        .await;
    let sent = now_ms();
    call(
        &client,
        "send",
        json!({"target": "web", "text": "echo MARK-$((100+23))"}),
    )
    .await;
    let shown = tokio::time::timeout(WAIT, browser.eval("window.seen"))
        .await
        .expect("the page showed the new output");
    let shown = shown.as_u64().unwrap();
    println!(
        "dashboard: a line typed into a pane showed on the page {} ms after the send",
        shown.saturating_sub(sent)
    );

    // Clicking a pane opens it large with the line to attach.
    browser
        .eval("document.querySelector('.card[data-session=\"coder\"]').click(); true")
        .await;
    browser
        .wait_until("!document.getElementById('zoom').hidden", WAIT)
        .await;
    let attach = browser
        .eval("document.getElementById('zoom-attach').textContent")
        .await;
    assert_eq!(
        attach,
        json!(format!("cohort --socket {} attach coder", server.socket))
    );
    let native = browser
        .eval("document.getElementById('zoom-native').textContent")
        .await;
    assert!(
        native.as_str().unwrap().contains(&server.socket),
        "{native}"
    );
    let zoomed = browser
        .eval("document.getElementById('zoom-screen').textContent")
        .await;
    assert!(zoomed.as_str().unwrap().contains("nonexistent"), "{zoomed}");
    assert_eq!(
        browser
            .eval("document.getElementById('zoom-input').hidden")
            .await,
        json!(true)
    );
    std::fs::write(shots.join("dashboard-pane.png"), browser.screenshot().await).unwrap();

    // Read-only: the page cannot type.
    let status = browser
        .eval(
            "fetch('api/send', { method: 'POST', headers: { 'Content-Type': 'application/json' }, \
             body: JSON.stringify({ pane: 'web', text: 'echo typed', enter: true }) }).then(r => r.status)",
        )
        .await;
    assert_eq!(status, json!(403));
    println!("screenshots: {}", shots.display());
    client.cancel().await.unwrap();
}

/// With `--dashboard-input` the page types through the send path, so a lock holds.
#[tokio::test]
async fn typing_from_the_page_is_allowed_only_behind_the_flag_and_respects_locks() {
    let server = TestServer::new();
    let (served, url) = served::serve_http(&server, &["--dashboard-input"]);
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(url))
            .await
            .expect("initialize over HTTP");
    call(&client, "open", json!({"name": "shell"})).await;
    let base = served.address("/dashboard");
    let addr = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let own = format!("http://{addr}");
    let typed = post(
        &addr,
        "api/send",
        &own,
        json!({"pane": "shell", "text": "echo from-the-page", "enter": true}),
    );
    assert!(typed.starts_with("HTTP/1.1 204"), "{typed}");
    let read = call(
        &client,
        "read",
        json!({"target": "shell", "wait": true, "timeout_ms": 10000}),
    )
    .await;
    assert!(
        read["output"].as_str().unwrap().contains("from-the-page"),
        "{read}"
    );
    call(
        &client,
        "lock",
        json!({"target": "shell", "owner": "someone"}),
    )
    .await;
    let refused = post(
        &addr,
        "api/send",
        &own,
        json!({"pane": "shell", "text": "echo no", "enter": true}),
    );
    assert!(refused.starts_with("HTTP/1.1 409"), "{refused}");
    assert!(refused.contains("someone"), "{refused}");
    // Another site's page may not post, even with the flag.
    let foreign = post(
        &addr,
        "api/send",
        "https://evil.example",
        json!({"pane": "shell", "text": "x"}),
    );
    assert!(foreign.starts_with("HTTP/1.1 403"), "{foreign}");
    client.cancel().await.unwrap();
}

/// A POST from a page at `origin` to the dashboard at `addr`; the raw response.
fn post(addr: &str, path: &str, origin: &str, body: Value) -> String {
    use std::io::{Read, Write};
    let body = body.to_string();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /dashboard/{path} HTTP/1.1\r\nHost: {addr}\r\nOrigin: {origin}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}
