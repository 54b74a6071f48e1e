//! The fake's handshake checks, with raw HTTP requests over its unix socket.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use cohort_fake_iterm2::{Auth, FakeOptions, FakeServer};

async fn status(socket: &std::path::Path, request: &str) -> (u16, String) {
    let mut stream = tokio::net::UnixStream::connect(socket).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(std::time::Duration::from_secs(5), stream.read(&mut buf))
        .await
        .expect("an answer")
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

fn request(path: &str, extra: &[(&str, &str)], skip: &[&str]) -> String {
    let mut headers = vec![
        ("Host", "localhost"),
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Protocol", "api.iterm2.com"),
        ("Origin", "ws://localhost/"),
        ("x-iterm2-library-version", "rust 0.1.0"),
        ("x-iterm2-disable-auth-ui", "true"),
    ];
    headers.retain(|(k, _)| !skip.contains(k));
    for (k, v) in extra {
        headers.retain(|(h, _)| !h.eq_ignore_ascii_case(k));
        headers.push((k, v));
    }
    let mut text = format!("GET {path} HTTP/1.1\r\n");
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str("\r\n");
    text
}

#[tokio::test]
async fn handshake_checks_match_iterm2() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("private/socket");
    let server = FakeServer::start(
        &socket,
        FakeOptions {
            auth: Auth::Cookies,
            ..FakeOptions::default()
        },
    )
    .await
    .unwrap();
    // Bad requests: 400. Each comes with a cookie of its own, since iTerm2 takes the
    // cookie before it checks the library version.
    let cookie = server.issue_reusable_cookie();
    let with_cookie = [("x-iterm2-cookie", cookie.as_str())];
    for (why, req) in [
        ("path", request("/x", &with_cookie, &[])),
        (
            "connection list",
            request(
                "/",
                &[("Connection", "keep-alive, Upgrade"), with_cookie[0]],
                &[],
            ),
        ),
        (
            "origin 127.0.0.1",
            request("/", &[("Origin", "ws://127.0.0.1/"), with_cookie[0]], &[]),
        ),
        (
            "two subprotocols",
            request(
                "/",
                &[
                    ("Sec-WebSocket-Protocol", "api.iterm2.com, other"),
                    with_cookie[0],
                ],
                &[],
            ),
        ),
        (
            "no library version",
            request("/", &with_cookie, &["x-iterm2-library-version"]),
        ),
        (
            "malformed library version",
            request(
                "/",
                &[("x-iterm2-library-version", "rust"), with_cookie[0]],
                &[],
            ),
        ),
        (
            "host",
            request("/", &[("Host", "example.com"), with_cookie[0]], &[]),
        ),
    ] {
        assert_eq!(status(&socket, &req).await.0, 400, "{why}");
    }
    // An old Python library: 406.
    let old = request(
        "/",
        &[("x-iterm2-library-version", "python 0.23"), with_cookie[0]],
        &[],
    );
    assert_eq!(status(&socket, &old).await.0, 406);
    // A request refused for its library version has used up its cookie.
    let spent = server.issue_cookie();
    let no_version = request(
        "/",
        &[("x-iterm2-cookie", spent.as_str())],
        &["x-iterm2-library-version"],
    );
    assert_eq!(status(&socket, &no_version).await.0, 400);
    let retry = request("/", &[("x-iterm2-cookie", spent.as_str())], &[]);
    assert_eq!(status(&socket, &retry).await.0, 401);
    // No cookie, or an unknown one: 401.
    assert_eq!(status(&socket, &request("/", &[], &[])).await.0, 401);
    assert_eq!(
        status(&socket, &request("/", &[("x-iterm2-cookie", "nope")], &[]))
            .await
            .0,
        401
    );
    // A cookie works once, and the reply names the protocol version.
    let cookie = server.issue_cookie();
    let with_cookie = [("x-iterm2-cookie", cookie.as_str())];
    let (code, text) = status(&socket, &request("/", &with_cookie, &[])).await;
    assert_eq!(code, 101, "{text}");
    let lower = text.to_ascii_lowercase();
    assert!(lower.contains("x-iterm2-protocol-version: 1.17"), "{text}");
    assert!(
        lower.contains("sec-websocket-protocol: api.iterm2.com"),
        "{text}"
    );
    assert_eq!(
        status(&socket, &request("/", &with_cookie, &[])).await.0,
        401
    );
    // A reusable cookie works every time.
    let reusable = server.issue_reusable_cookie();
    for _ in 0..2 {
        let req = request("/", &[("x-iterm2-cookie", reusable.as_str())], &[]);
        assert_eq!(status(&socket, &req).await.0, 101);
    }
}
