//! `cohort serve --http`: streamable HTTP through rmcp's client, the loopback
//! default, and the bearer token.

use crate::{served, support::*};
use std::io::{Read, Write};
use std::process::Command;

use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;

fn serve(server: &TestServer, extra: &[&str]) -> Served {
    let (served, url) = served::serve_http(server, extra);
    Served {
        url,
        _child: served,
    }
}

struct Served {
    url: String,
    _child: served::Served,
}

#[tokio::test]
async fn tools_answer_over_streamable_http() {
    let server = TestServer::new();
    let served = serve(&server, &[]);
    let transport = StreamableHttpClientTransport::from_uri(served.url.clone());
    let client = ().serve(transport).await.expect("initialize over HTTP");
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "run"));
    let args = serde_json::json!({"name": "over-http"});
    let opened = client
        .call_tool(
            CallToolRequestParams::new("open").with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_ne!(opened.is_error, Some(true), "{opened:?}");
    let args = serde_json::json!({"target": "over-http", "command": "echo via-http"});
    let ran = client
        .call_tool(
            CallToolRequestParams::new("run").with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let result = ran.structured_content.unwrap();
    assert_eq!(
        result["output"].as_str().unwrap().trim(),
        "via-http",
        "{result}"
    );
    client.cancel().await.unwrap();
}

/// A role given to `cohort serve` restricts every HTTP session (the gRPC API's
/// calls too: `grpc::a_role_restricts_every_grpc_call`).
#[tokio::test]
async fn a_role_restricts_every_http_session() {
    let server = TestServer::new();
    let served = serve(&server, &["--role", "readonly"]);
    let transport = StreamableHttpClientTransport::from_uri(served.url.clone());
    let client = ().serve(transport).await.expect("initialize over HTTP");
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "list"));
    assert!(!tools.iter().any(|t| t.name == "run"), "{tools:?}");
    let args = serde_json::json!({"target": "x", "command": "true"});
    let refused = client
        .call_tool(
            CallToolRequestParams::new("run").with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    client.cancel().await.unwrap();

    // The dashboard's page may not type for a role that may not.
    let out = crate::support::deadline::refused(
        Command::new(env!("CARGO_BIN_EXE_cohort"))
            .args(["serve", "--http", "127.0.0.1:0", "--role", "readonly"])
            .arg("--dashboard-input")
            .env("COHORT_TMUX_SOCKET", &server.socket)
            .env("COHORT_STATE_DIR", server.state_dir()),
        crate::support::WAIT,
    );
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--dashboard-input"), "{said}");
}

#[tokio::test]
async fn a_token_is_required_when_given_and_off_loopback() {
    let server = TestServer::new();
    // Off loopback without a token: refused before listening.
    let out = crate::support::deadline::refused(
        Command::new(env!("CARGO_BIN_EXE_cohort"))
            .args(["serve", "--http", "0.0.0.0:0", "--toolsets", "all"])
            .env("COHORT_TMUX_SOCKET", &server.socket)
            .env("COHORT_STATE_DIR", server.state_dir())
            .env_remove("COHORT_HTTP_TOKEN"),
        crate::support::WAIT,
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bearer token"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let served = serve(&server, &["--token", "s3cret"]);
    // Without the token: 401.
    let addr = served
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let post = |authorization: &str| {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        // A response that never ends fails the read instead of hanging it.
        stream.set_read_timeout(Some(crate::support::WAIT)).unwrap();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{authorization}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response
    };
    let response = post("");
    assert!(response.starts_with("HTTP/1.1 401"), "{response}");
    // Refused, and the connection is closed with the answer, even one the client
    // asked to keep open.
    {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        stream.set_read_timeout(Some(crate::support::WAIT)).unwrap();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut kept = String::new();
        // The server ends the connection: the read ends rather than times out.
        stream
            .read_to_string(&mut kept)
            .expect("the connection was closed");
        assert!(kept.starts_with("HTTP/1.1 401"), "{kept}");
        assert!(
            kept.to_ascii_lowercase().contains("connection: close"),
            "{kept}"
        );
    }
    assert!(
        response
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{response}"
    );
    for wrong in ["Bearer s3cre", "Bearer  s3cret", "Basic s3cret"] {
        let response = post(&format!("Authorization: {wrong}\r\n"));
        assert!(response.starts_with("HTTP/1.1 401"), "{wrong}: {response}");
    }
    // The scheme's name is case-insensitive.
    let response = post("Authorization: bearer s3cret\r\n");
    assert!(!response.starts_with("HTTP/1.1 401"), "{response}");

    // With it: a working session.
    let config =
        StreamableHttpClientTransportConfig::with_uri(served.url.clone()).auth_header("s3cret");
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("initialize with the token");
    assert!(!client.list_all_tools().await.unwrap().is_empty());
    client.cancel().await.unwrap();
}

/// A browser page on another site (a drive-by page, or DNS rebinding) cannot drive
/// the terminals: a request with a foreign `Origin` is refused, a loopback page's and
/// an allowed one pass, and clients that send no `Origin` are not affected.
#[tokio::test]
async fn cross_origin_requests_from_browsers_are_refused() {
    let server = TestServer::new();
    let served = serve(&server, &["--allow-origin", "https://app.example.com"]);
    let addr = served
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let post = |origin: Option<&str>| {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        // A response that never ends fails the read instead of hanging it.
        stream.set_read_timeout(Some(crate::support::WAIT)).unwrap();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}"#;
        let origin = origin
            .map(|o| format!("Origin: {o}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{origin}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response
    };
    for foreign in [
        "https://evil.example",
        "null",
        "http://localhost.evil.example",
    ] {
        let response = post(Some(foreign));
        assert!(
            response.starts_with("HTTP/1.1 403"),
            "{foreign}: {response}"
        );
        assert!(response.contains("--allow-origin"), "{response}");
    }
    for fine in [
        None,
        Some("http://localhost:3000"),
        Some("https://app.example.com"),
    ] {
        let response = post(fine);
        assert!(response.starts_with("HTTP/1.1 200"), "{fine:?}: {response}");
    }
}

/// Two clients of one server each have their own "new output" cursor, and a lock is
/// the connection's that took it: the other client passing the same owner name is
/// refused.
#[tokio::test]
async fn clients_have_their_own_cursors_and_locks_are_bound_to_their_connection() {
    let server = TestServer::new();
    let served = serve(&server, &[]);
    let connect = || async {
        ().serve(StreamableHttpClientTransport::from_uri(served.url.clone()))
            .await
            .expect("initialize over HTTP")
    };
    let (a, b) = (connect().await, connect().await);
    let call = |name: &'static str, args: serde_json::Value| {
        CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone())
    };
    let ok = |r: rmcp::model::CallToolResult| {
        assert_ne!(r.is_error, Some(true), "{r:?}");
        r.structured_content.unwrap()
    };
    ok(
        a.call_tool(call("open", serde_json::json!({"name": "shared"})))
            .await
            .unwrap(),
    );
    ok(a.call_tool(call(
        "send",
        serde_json::json!({"target": "shared", "text": "echo cursor-$((40+2))"}),
    ))
    .await
    .unwrap());
    let wait = serde_json::json!({"target": "shared", "wait": true, "timeout_ms": 10000});
    ok(a.call_tool(call("read", wait.clone())).await.unwrap());
    // A has read it; B has not: B's first read of new output still has it.
    let seen = |v: &serde_json::Value| {
        v["output"]
            .as_str()
            .unwrap_or_default()
            .contains("cursor-42")
    };
    let again_a = ok(a
        .call_tool(call("read", serde_json::json!({"target": "shared"})))
        .await
        .unwrap());
    assert!(!seen(&again_a), "{again_a}");
    let first_b = ok(b
        .call_tool(call("read", serde_json::json!({"target": "shared"})))
        .await
        .unwrap());
    assert!(seen(&first_b), "{first_b}");

    ok(a.call_tool(call(
        "lock",
        serde_json::json!({"target": "shared", "owner": "alice"}),
    ))
    .await
    .unwrap());
    let forged = b
        .call_tool(call(
            "send",
            serde_json::json!({"target": "shared", "text": "echo not-alice", "owner": "alice"}),
        ))
        .await
        .unwrap();
    assert_eq!(forged.is_error, Some(true), "{forged:?}");
    assert!(format!("{forged:?}").contains("locked by"), "{forged:?}");
    ok(a.call_tool(call(
        "send",
        serde_json::json!({"target": "shared", "text": "echo alice", "owner": "alice"}),
    ))
    .await
    .unwrap());
    let steal = b
        .call_tool(call(
            "unlock",
            serde_json::json!({"target": "shared", "owner": "alice"}),
        ))
        .await
        .unwrap();
    assert_eq!(steal.is_error, Some(true), "{steal:?}");
    ok(b.call_tool(call(
        "unlock",
        serde_json::json!({"target": "shared", "owner": "bob", "force": true}),
    ))
    .await
    .unwrap());
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}
