//! The dashboard in a real headless Chromium: the page served by `cohort serve
//! --http` loads, shows the panes of a running server grouped by team with their
//! colours, agents, verdicts, locks and unread notifications, updates when a pane
//! prints (the time it took is printed), opens a pane large with its attach line,
//! and refuses typing unless allowed. Screenshots are kept under `target/tmp/`.
//! Skipped without Chromium unless `COHORT_REQUIRE_BROWSER=1` (see
//! `support/browser.rs`).

use crate::{
    browser,
    served::{self, call},
    support::*,
};
use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};

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
    // Each team shows its colour (the one its panes have in the terminal), and each
    // pane its badge and title.
    let colour = browser
        .eval("document.querySelector('section[data-team=\"build\"]').dataset.colour || ''")
        .await;
    let colour = colour.as_str().unwrap().to_string();
    let shown = call(&client, "list_teams", json!({})).await.to_string();
    assert!(
        colour.starts_with('#') && shown.contains(&colour),
        "{colour:?} is not the team's colour: {shown}"
    );
    let head = browser
        .eval("document.querySelector('.card[data-session=\"planner\"] .card-head').innerHTML")
        .await;
    let head = head.as_str().unwrap();
    assert!(head.contains("chip badge\">build<"), "{head}");
    // Its title, "build :: planner", says nothing the badge and the name do not.
    assert!(!head.contains("build :: planner"), "{head}");
    call(
        &client,
        "set_appearance",
        json!({"target": "planner", "title": "planning the release"}),
    )
    .await;
    // The change is an event of its own: the page shows it at once.
    browser
        .wait_until(
            "document.querySelector('.card[data-session=\"planner\"] .card-head .title')?.textContent === 'planning the release'",
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

    // A recording made by another process shows on its card, and goes when it stops,
    // without a reload.
    let other = cohort::engine::Engine::with_backend(
        std::sync::Arc::new(server.backend().await),
        server.state_dir(),
        &format!("-L {}", server.socket),
    )
    .unwrap();
    let web = other.terminal.resolve("web").await.unwrap();
    other
        .terminal
        .record(&web.id, cohort_terminal::record::RecordOptions::default())
        .await
        .unwrap();
    let chip = "!!document.querySelector('.card[data-session=\"web\"] .chip.rec')";
    browser.wait_until(chip, WAIT).await;
    other.terminal.stop_recording(&web.id).await.unwrap();
    browser.wait_until(&format!("!{chip}"), WAIT).await;

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
    // Nor answer a worker's request.
    let status = browser
        .eval(
            "fetch('api/approve', { method: 'POST', headers: { 'Content-Type': 'application/json' }, \
             body: JSON.stringify({ worker: 'w', decision: 'allow', since_ms: 1 }) }).then(r => r.status)",
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
    let page = get(&addr, "/dashboard/", &[]);
    let key = page
        .split("name=\"cohort-page\" content=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no page key in {page}"))
        .to_string();
    let from_page =
        |path: &str, origin: &str, body: Value| post(&addr, path, origin, Some(&key), body);
    let typed = from_page(
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
    let refused = from_page(
        "api/send",
        &own,
        json!({"pane": "shell", "text": "echo no", "enter": true}),
    );
    assert!(refused.starts_with("HTTP/1.1 409"), "{refused}");
    assert!(refused.contains("someone"), "{refused}");
    // Another site's page may not post, even with the flag; nor may a page on
    // another loopback port (another origin), nor the own origin without the key
    // that only the page's HTML holds.
    let (_, port) = addr.rsplit_once(':').unwrap();
    let other_port = format!("http://127.0.0.1:{}", port.parse::<u16>().unwrap() ^ 1);
    for origin in ["https://evil.example", "http://localhost:3000", &other_port] {
        for (path, body) in [
            ("api/keys", json!({"pane": "shell", "keys": ["Enter"]})),
            (
                "api/approve",
                json!({"worker": "w", "decision": "allow", "since_ms": 1}),
            ),
        ] {
            let foreign = from_page(path, origin, body);
            assert!(
                foreign.starts_with("HTTP/1.1 403"),
                "{origin} {path}: {foreign}"
            );
            assert!(
                foreign.contains("own page") || foreign.contains("cross-origin request refused"),
                "{foreign}"
            );
        }
    }
    // From the page itself: a decision for no worker is not found.
    let nobody = from_page(
        "api/approve",
        &own,
        json!({"worker": "nobody", "decision": "allow", "since_ms": 1}),
    );
    assert!(
        nobody.starts_with("HTTP/1.1 404") && nobody.contains("nobody"),
        "{nobody}"
    );
    let keyless = post(
        &addr,
        "api/send",
        &own,
        None,
        json!({"pane": "shell", "text": "x"}),
    );
    assert!(keyless.starts_with("HTTP/1.1 403"), "{keyless}");
    assert!(keyless.contains("page key"), "{keyless}");
    client.cancel().await.unwrap();
}

/// A POST from a page at `origin` to the dashboard at `addr`, with the page key
/// `key`; the raw response.
fn post(addr: &str, path: &str, origin: &str, key: Option<&str>, body: Value) -> String {
    use std::io::{Read, Write};
    let body = body.to_string();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    // A response that never ends fails the read instead of hanging it.
    stream.set_read_timeout(Some(crate::support::WAIT)).unwrap();
    write!(
        stream,
        "POST /dashboard/{path} HTTP/1.1\r\nHost: {addr}\r\nOrigin: {origin}\r\n{}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        key.map_or(String::new(), |k| format!("X-Cohort-Page: {k}\r\n")),
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// `cohort dashboard` on its own: loopback by default, refuses to listen elsewhere
/// without a token, and with one asks for it (the query once, then the cookie). The
/// page and its assets come from the binary, and the feed is pushed as events.
#[test]
fn the_dashboard_command_keeps_to_loopback_or_asks_for_a_token() {
    let server = TestServer::new();
    let open = served::start(&server, &["dashboard", "--listen", "127.0.0.1:0"], 1, &[]);
    let addr = host_of(&open.address("/dashboard"));
    let page = get(&addr, "/dashboard/", &[]);
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("<title>cohort</title>"), "{page}");
    // Nothing is fetched from elsewhere: every asset the page names is served here.
    for asset in ["app.js", "app.css", "favicon.svg"] {
        assert!(page.contains(asset), "{asset} not named in the page");
        let served = get(&addr, &format!("/dashboard/{asset}"), &[]);
        assert!(served.starts_with("HTTP/1.1 200"), "{asset}: {served}");
    }
    assert!(
        !page.contains("https://") && !page.contains("src=\"http"),
        "{page}"
    );
    let icon = get(&addr, "/favicon.ico", &[]);
    assert!(icon.starts_with("HTTP/1.1 200"), "{icon}");
    // A name that is not loopback (DNS rebinding) is refused.
    let rebound = get(&addr, "/dashboard/", &[("Host", "evil.example")]);
    assert!(!rebound.starts_with("HTTP/1.1 200"), "{rebound}");
    // The feed starts with the whole view, pushed as a server-sent event.
    let feed = first_event(&addr, "/dashboard/events");
    assert!(feed.contains("event: view"), "{feed}");
    drop(open);

    // Off loopback without a token: a refusal that says what to do.
    let refused = crate::support::deadline::refused(
        std::process::Command::new(env!("CARGO_BIN_EXE_cohort"))
            .args(["dashboard", "--listen", "0.0.0.0:0"])
            .env("COHORT_TMUX_SOCKET", &server.socket)
            .env("COHORT_STATE_DIR", server.state_dir())
            .env("HOME", server.home())
            .env_remove("COHORT_HTTP_TOKEN"),
        crate::support::WAIT,
    );
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("without a token") && said.contains("--token"),
        "{said}"
    );

    // With a token: asked for, taken from the query once, then from the cookie.
    let guarded = served::start(
        &server,
        &["dashboard", "--listen", "0.0.0.0:0", "--token", "s3cret"],
        1,
        &[],
    );
    let port = host_of(&guarded.address("/dashboard"))
        .rsplit_once(':')
        .map(|(_, p)| p.to_string())
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    let bare = get(&addr, "/dashboard/", &[]);
    assert!(bare.starts_with("HTTP/1.1 401"), "{bare}");
    let wrong = get(&addr, "/dashboard/?token=guess", &[]);
    assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
    // The token is moved into a cookie and out of the address at once.
    let first = get(&addr, "/dashboard/?token=s3cret", &[]);
    assert!(first.starts_with("HTTP/1.1 303"), "{first}");
    assert!(
        first
            .lines()
            .any(|l| l.eq_ignore_ascii_case("location: /dashboard/")),
        "{first}"
    );
    let cookie = first
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .unwrap_or_else(|| panic!("no cookie in {first}"))
        .to_string();
    let again = get(&addr, "/dashboard/api/view", &[("Cookie", &cookie)]);
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
    assert!(again.contains("\"teams\""), "{again}");
    // The page may not be framed and sends no referrer.
    let page = get(&addr, "/dashboard/", &[("Cookie", &cookie)]).to_ascii_lowercase();
    assert!(page.starts_with("http/1.1 200"), "{page}");
    for policy in [
        "frame-ancestors 'none'",
        "x-frame-options: deny",
        "referrer-policy: no-referrer",
    ] {
        assert!(page.contains(policy), "{policy} missing: {page}");
    }
}

/// `host:port` of an announced `http://host:port/…` address.
fn host_of(address: &str) -> String {
    address
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string()
}

/// A GET to `addr` with extra headers (a `Host` given replaces the real one); the raw response.
fn get(addr: &str, path: &str, headers: &[(&str, &str)]) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    // A response that never ends fails the read instead of hanging it.
    stream.set_read_timeout(Some(crate::support::WAIT)).unwrap();
    let host = headers
        .iter()
        .find(|(k, _)| *k == "Host")
        .map_or(addr, |(_, v)| v);
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers.iter().filter(|(k, _)| *k != "Host") {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// The event stream at `path` until its first whole event.
fn first_event(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("\ndata:") {
        let n = stream.read(&mut buffer).expect("the feed sent an event");
        assert!(n > 0, "the feed closed: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buffer[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// Takes the README's picture: the dashboard running at `COHORT_SCREENSHOT_URL`,
/// once it shows `COHORT_SCREENSHOT_CARDS` panes, saved to `COHORT_SCREENSHOT_FILE`.
/// `docs/demo/record.sh` runs it against its demo.
#[tokio::test]
#[ignore = "takes the README's screenshot; docs/demo/record.sh runs it"]
async fn readme_screenshot() {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("set {name}"));
    let chromium = browser::program().expect("Chromium");
    let mut browser =
        browser::Browser::open(&chromium, &var("COHORT_SCREENSHOT_URL"), 1400, 820).await;
    let cards = var("COHORT_SCREENSHOT_CARDS");
    browser
        .wait_until(
            &format!("document.querySelectorAll('.card .screen').length >= {cards} && [...document.querySelectorAll('.card .screen')].every(s => s.textContent.trim())"),
            WAIT,
        )
        .await;
    std::fs::write(var("COHORT_SCREENSHOT_FILE"), browser.screenshot().await).unwrap();
}
