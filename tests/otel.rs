//! OpenTelemetry (the `otel` feature; `cargo test --workspace --features cohort/otel --test otel`):
//! the spans of a tool call, its wait and its backend commands, read from the SDK's
//! in-memory exporter; and one export over OTLP/HTTP from a running `cohort serve`
//! to a receiver this test starts.

#![cfg(feature = "otel")]

#[path = "support/served.rs"]
mod served;
mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cohort::engine::Engine;
use cohort::mcp::CohortServer;
use opentelemetry_sdk::trace::SpanData;
use prost::Message;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::json;
use served::call;
use support::*;

/// Spans are made on this thread only (the subscriber is this thread's), so the
/// runtime is the current thread's.
#[tokio::test(flavor = "current_thread")]
async fn a_tool_call_its_wait_and_its_backend_commands_are_spans() {
    let recorded = record_spans();

    let server = TestServer::new();
    let backend = server.backend().await;
    let engine =
        Engine::with_backend(Arc::new(backend), server.state_dir(), &server.socket).unwrap();
    let (a, b) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = CohortServer::new(engine).serve(a).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(b).await.expect("initialize");
    call(
        &client,
        "create_layout",
        json!({"name": "pair", "layout": "horizontal", "panes": [
            {"name": "traced", "agent": "coder", "team": "build"},
            {"name": "other"}
        ]}),
    )
    .await;
    let failed = call(
        &client,
        "run",
        json!({"target": "traced", "command": "ls /nonexistent"}),
    )
    .await;
    // A host's trace goes on into cohort's: the W3C traceparent in `_meta`.
    let parent_trace = "0af7651916cd43dd8448eb211c80319c";
    let parent_span = "00f067aa0ba902b7";
    let mut meta = rmcp::model::MetaObject::new();
    meta.set_traceparent(format!("00-{parent_trace}-{parent_span}-01"));
    meta.set_tracestate("vendor=value");
    let mut traced_call = rmcp::model::CallToolRequestParams::new("list");
    traced_call.meta = Some(rmcp::model::RequestMetaObject(meta));
    client.call_tool(traced_call).await.expect("list");
    // One that does not parse starts a trace of its own.
    let mut bad = rmcp::model::MetaObject::new();
    bad.set_traceparent("00-not-a-trace-01");
    let mut untraced_call = rmcp::model::CallToolRequestParams::new("status");
    untraced_call.meta = Some(rmcp::model::RequestMetaObject(bad));
    client.call_tool(untraced_call).await.expect("status");

    client.cancel().await.unwrap();
    let spans = recorded.finished();

    let listed = spans
        .iter()
        .find(|s| s.name == "tool list")
        .unwrap_or_else(|| panic!("no list span in {:?}", names(&spans)));
    assert_eq!(listed.span_context.trace_id().to_string(), parent_trace);
    assert_eq!(listed.parent_span_id.to_string(), parent_span);
    let status = spans
        .iter()
        .find(|s| s.name == "tool status")
        .unwrap_or_else(|| panic!("no status span in {:?}", names(&spans)));
    assert_ne!(status.span_context.trace_id().to_string(), parent_trace);
    assert_eq!(
        status.parent_span_id,
        opentelemetry::trace::SpanId::INVALID,
        "a root span"
    );

    let tool = spans
        .iter()
        .find(|s| s.name == "tool run")
        .unwrap_or_else(|| panic!("no tool span in {:?}", names(&spans)));
    let attrs = attributes(tool);
    let expected_layer = failed["verdict"]["layer"].as_str().unwrap();
    for (key, value) in [
        ("tool", "run"),
        ("session", "traced"),
        ("verdict", "failed"),
        ("exit_status", "2"),
        ("layer", expected_layer),
    ] {
        assert_eq!(
            attrs.get(key).map(String::as_str),
            Some(value),
            "{key}: {attrs:?}"
        );
    }
    // The session's agent and team, though the call named neither.
    assert_eq!(
        attrs.get("agent").map(String::as_str),
        Some("coder"),
        "{attrs:?}"
    );
    assert_eq!(
        attrs.get("team").map(String::as_str),
        Some("build"),
        "{attrs:?}"
    );

    // The wait is the tool call's child, with the same verdict.
    let trace = tool.span_context.trace_id();
    let wait = spans
        .iter()
        .find(|s| s.name == "wait" && s.span_context.trace_id() == trace)
        .unwrap_or_else(|| panic!("no wait in the run's trace: {:?}", names(&spans)));
    assert_eq!(wait.parent_span_id, tool.span_context.span_id());
    let attrs = attributes(wait);
    assert_eq!(attrs.get("exit_status").map(String::as_str), Some("2"));
    assert_eq!(attrs.get("layer").map(String::as_str), Some(expected_layer));
    // The commands sent to tmux for it are in the same trace.
    let commands: Vec<String> = spans
        .iter()
        .filter(|s| s.name == "tmux command" && s.span_context.trace_id() == trace)
        .filter_map(|s| attributes(s).get("command").cloned())
        .collect();
    assert!(
        commands.iter().any(|c| c.contains("send-keys")),
        "{commands:?}"
    );
    println!("{} spans, {} in the run's trace", spans.len(), {
        spans
            .iter()
            .filter(|s| s.span_context.trace_id() == trace)
            .count()
    });
}

fn names(spans: &[SpanData]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_ref()).collect()
}

/// What the receiver has been sent: (service name, span name, attributes).
type Received = Arc<Mutex<Vec<(String, String, HashMap<String, String>)>>>;

/// A minimal OTLP/HTTP receiver: `POST /v1/traces` with a protobuf body.
async fn receiver() -> (String, Received) {
    use axum::body::Bytes;
    use opentelemetry_proto::tonic::collector::trace::v1::{
        ExportTraceServiceRequest, ExportTraceServiceResponse,
    };
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    let received: Received = Arc::default();
    let store = received.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: Bytes| {
            let store = store.clone();
            async move {
                let request = match ExportTraceServiceRequest::decode(body) {
                    Ok(request) => request,
                    Err(e) => {
                        return (
                            axum::http::StatusCode::BAD_REQUEST,
                            e.to_string().into_bytes(),
                        )
                    }
                };
                let text = |v: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>| match v
                    .as_ref()
                    .and_then(|v| v.value.as_ref())
                {
                    Some(Value::StringValue(s)) => s.clone(),
                    Some(Value::IntValue(i)) => i.to_string(),
                    Some(other) => format!("{other:?}"),
                    None => String::new(),
                };
                for resource in request.resource_spans {
                    let service = resource
                        .resource
                        .iter()
                        .flat_map(|r| &r.attributes)
                        .find(|kv| kv.key == "service.name")
                        .map(|kv| text(&kv.value))
                        .unwrap_or_default();
                    for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
                        let attrs = span
                            .attributes
                            .iter()
                            .map(|kv| (kv.key.clone(), text(&kv.value)))
                            .collect();
                        store
                            .lock()
                            .unwrap()
                            .push((service.clone(), span.name, attrs));
                    }
                }
                (
                    axum::http::StatusCode::OK,
                    ExportTraceServiceResponse::default().encode_to_vec(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (address, received)
}

#[tokio::test]
async fn a_running_server_exports_its_spans_over_otlp() {
    let (endpoint, received) = receiver().await;
    let server = TestServer::new();
    let served = served::start(
        &server,
        &["serve", "--http", "127.0.0.1:0"],
        2,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_SERVICE_NAME", "cohort-under-test"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let client = ()
        .serve(StreamableHttpClientTransport::from_uri(
            served.address("/mcp"),
        ))
        .await
        .expect("initialize over HTTP");
    call(&client, "open", json!({"name": "exported"})).await;
    call(
        &client,
        "run",
        json!({"target": "exported", "command": "(exit 4)"}),
    )
    .await;
    // The exporter sends in batches: wait (up to the usual limit) for the run.
    let deadline = tokio::time::Instant::now() + WAIT;
    let run = loop {
        let found = received
            .lock()
            .unwrap()
            .iter()
            .find(|(_, name, _)| name == "tool run")
            .cloned();
        if let Some(run) = found {
            break run;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "nothing exported: {:?}",
            received.lock().unwrap()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let (service, _, attrs) = run;
    assert_eq!(service, "cohort-under-test");
    assert_eq!(attrs.get("session").map(String::as_str), Some("exported"));
    assert_eq!(attrs.get("exit_status").map(String::as_str), Some("4"));
    assert_eq!(attrs.get("verdict").map(String::as_str), Some("failed"));
    client.cancel().await.unwrap();
    let kinds: std::collections::BTreeSet<String> = received
        .lock()
        .unwrap()
        .iter()
        .map(|(_, name, _)| name.clone())
        .collect();
    println!("exported span names: {kinds:?}");
}
