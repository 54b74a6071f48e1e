//! A real headless Chromium driven over the DevTools protocol (its WebSocket), for
//! tests of web pages cohort serves.
//!
//! The browser is `$COHORT_CHROMIUM`, else `chromium`, `chromium-browser` or
//! `google-chrome` on `PATH`. Without one the test is skipped with a message, unless
//! `COHORT_REQUIRE_BROWSER=1`, which makes that a failure (CI sets it).

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};

use crate::support::deadline::{Lines, STARTUP};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A headless Chromium with one page attached.
pub struct Browser {
    child: Child,
    socket: Socket,
    session: String,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The browser program, or `None` (after saying why) when the test may be skipped.
pub fn program() -> Option<String> {
    let candidates = std::env::var("COHORT_CHROMIUM")
        .map(|p| vec![p])
        .unwrap_or_else(|_| {
            ["chromium", "chromium-browser", "google-chrome"]
                .map(String::from)
                .to_vec()
        });
    for candidate in candidates {
        // A browser named by path is taken as it is (a headless shell may not answer
        // --version); names on PATH must run.
        let found = std::path::Path::new(&candidate).is_file()
            || Command::new(&candidate)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success());
        if found {
            return Some(candidate);
        }
    }
    let message = "no Chromium found (apt-get install chromium, or set COHORT_CHROMIUM)";
    let required = std::env::var("COHORT_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
    assert!(!required, "{message}");
    eprintln!("skipped: {message}");
    None
}

impl Browser {
    /// Starts `program` headless with a page at `url` (`width`×`height` pixels).
    pub async fn open(program: &str, url: &str, width: u32, height: u32) -> Browser {
        let profile = tempfile::Builder::new()
            .prefix("cohort-chromium-")
            .tempdir()
            .unwrap();
        let mut child = Command::new(program)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                &format!("--window-size={width},{height}"),
                &format!("--user-data-dir={}", profile.path().display()),
                "about:blank",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start Chromium");
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut lines = Lines::read(stderr, &format!("Chromium ({program})"), None);
        let listening = lines.until(
            "`DevTools listening on URL`",
            std::time::Instant::now() + STARTUP,
            |line| {
                line.trim()
                    .strip_prefix("DevTools listening on ")
                    .map(str::to_string)
            },
        );
        let ws = match listening {
            Ok(ws) => ws,
            Err(why) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{why}");
            }
        };
        let (socket, _) = tokio_tungstenite::connect_async(ws.as_str())
            .await
            .expect("connect to DevTools");
        let mut browser = Browser {
            child,
            socket,
            session: String::new(),
            next_id: 0,
            _profile: profile,
        };
        let target = browser
            .call("Target.createTarget", json!({ "url": url }))
            .await;
        let attached = browser
            .call(
                "Target.attachToTarget",
                json!({ "targetId": target["targetId"], "flatten": true }),
            )
            .await;
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        browser
    }

    /// Sends a DevTools command (to the page once attached) and returns its result.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .await
            .expect("send to DevTools");
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(30), self.socket.next())
                .await
                .unwrap_or_else(|_| panic!("DevTools did not answer {method}"))
                .expect("DevTools closed")
                .expect("DevTools frame");
            let Message::Text(text) = frame else { continue };
            let reply: Value = serde_json::from_str(&text).unwrap();
            if reply["id"] == json!(id) {
                assert!(reply.get("error").is_none(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its value.
    pub async fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            )
            .await;
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is true in the page; panics after `limit`.
    pub async fn wait_until(&mut self, expression: &str, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if self.eval(expression).await == json!(true) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the page never showed {expression}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A PNG screenshot of the page.
    pub async fn screenshot(&mut self) -> Vec<u8> {
        let shot = self
            .call("Page.captureScreenshot", json!({ "format": "png" }))
            .await;
        base64_decode(shot["data"].as_str().unwrap())
    }
}

/// Standard base64 (with padding), as DevTools sends binary data.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let clean: Vec<u8> = text
        .bytes()
        .filter(|c| *c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= (value(*c) as u32) << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}
