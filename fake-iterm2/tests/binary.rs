//! The standalone `cohort-fake-iterm2` binary: it listens where `--listen` says,
//! accepts the `--cookie` it was given (any number of times) and refuses clients
//! without it, as iTerm2 does.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Kills the fake when the test ends, also when it fails.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The HTTP status the fake answers a WebSocket upgrade with.
async fn upgrade_status(socket: &Path, cookie: Option<&str>) -> u16 {
    let mut stream = tokio::net::UnixStream::connect(socket)
        .await
        .expect("connect to the fake");
    let mut request = String::from(
        "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Protocol: api.iterm2.com\r\nOrigin: ws://localhost/\r\n\
         x-iterm2-library-version: rust 0.1.0\r\nx-iterm2-disable-auth-ui: true\r\n",
    );
    if let Some(cookie) = cookie {
        request.push_str(&format!("x-iterm2-cookie: {cookie}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
        .await
        .expect("an answer")
        .unwrap();
    String::from_utf8_lossy(&buf[..n])
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn the_binary_serves_its_socket_and_checks_the_cookie() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("it2.sock");
    let child = Command::new(env!("CARGO_BIN_EXE_cohort-fake-iterm2"))
        .arg("--listen")
        .arg(&socket)
        .args(["--cookie", "demo-cookie"])
        .env("HOME", dir.path())
        .env("SHELL", "/bin/sh")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start cohort-fake-iterm2");
    let _running = Running(child);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !socket.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the fake never listened on {}",
            socket.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(upgrade_status(&socket, None).await, 401);
    assert_eq!(upgrade_status(&socket, Some("wrong")).await, 401);
    // The given cookie is accepted every time.
    assert_eq!(upgrade_status(&socket, Some("demo-cookie")).await, 101);
    assert_eq!(upgrade_status(&socket, Some("demo-cookie")).await, 101);
}
