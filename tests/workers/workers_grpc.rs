//! Approvals over gRPC: `ApproveWorkers` lists the permission request a worker waits
//! on, answers it with the keys of its dialog, and notes who decided — the same
//! engine path as the `approve_workers` tool, through cohort's own generated client.

use std::time::Duration;

use crate::{terminals::Which, workers::Manager};
use cohort::engine::slot::EngineSlot;
use cohort::grpc::proto::{cohort_client::CohortClient, ApproveWorkersRequest};
use serde_json::json;
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_request_is_listed_and_answered_over_grpc() {
    let m = Manager::new(Which::Tmux).await;
    m.spawn_claude("claude", "grpc", None).await;

    // The API, served in this process over the manager's engine.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = cohort::connections::Connections::new(
        listener,
        cohort::connections::CONNECTIONS_MAX,
        cohort::connections::IDLE,
    );
    let engine = EngineSlot::ready(m.engine.clone());
    tokio::spawn(async move {
        let _ = cohort::grpc::serve(
            engine,
            listener,
            None,
            cohort::restriction::Restriction::default(),
            std::future::pending(),
        )
        .await;
    });
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .expect("connect over gRPC");
    let mut client = CohortClient::new(channel);
    let approve = |workers: &[&str], decision: Option<&str>| ApproveWorkersRequest {
        workers: workers.iter().map(|w| w.to_string()).collect(),
        decision: decision.map(str::to_string),
        by: Some("ops".into()),
        since_ms: None,
    };

    // Nothing waits yet; a decision with nothing to answer presses nothing.
    let listed = client
        .approve_workers(approve(&[], None))
        .await
        .unwrap()
        .into_inner();
    assert!(listed.pending.is_empty(), "{listed:?}");
    let idle = client
        .approve_workers(approve(&["claude"], Some("allow")))
        .await
        .unwrap_err();
    assert_eq!(idle.code(), Code::FailedPrecondition, "{idle:?}");
    assert!(idle.message().contains("waits on no approval"), "{idle:?}");

    m.ask_for_approval("claude").await;
    m.worker_until("claude", "asking for approval", |w| {
        w["state"] == "needs_approval"
    })
    .await;

    // Refused before anything is pressed: an unknown decision, a decision for
    // every worker at once, a worker that does not exist.
    for (request, code) in [
        (approve(&["claude"], Some("maybe")), Code::InvalidArgument),
        (approve(&[], Some("allow")), Code::InvalidArgument),
        (approve(&["nobody"], Some("allow")), Code::NotFound),
    ] {
        let refused = client.approve_workers(request).await.unwrap_err();
        assert_eq!(refused.code(), code, "{refused:?}");
    }
    let listed = client
        .approve_workers(approve(&[], None))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.pending.len(), 1, "{listed:?}");
    let pending = &listed.pending[0];
    assert_eq!(pending.worker, "claude");
    assert!(
        pending
            .request
            .as_deref()
            .is_some_and(|r| r.contains("touch approved.txt")),
        "{pending:?}"
    );

    // An answer meant for another request (one the caller did not see) presses
    // nothing; a name that is no name is refused.
    let unseen = client
        .approve_workers(ApproveWorkersRequest {
            since_ms: Some(pending.since_ms - 1),
            ..approve(&["claude"], Some("allow"))
        })
        .await
        .unwrap_err();
    assert_eq!(unseen.code(), Code::FailedPrecondition, "{unseen:?}");
    assert!(
        unseen.message().contains("nothing was pressed"),
        "{unseen:?}"
    );
    let badly_named = client
        .approve_workers(ApproveWorkersRequest {
            by: Some("ops\u{1b}[31m".into()),
            ..approve(&["claude"], Some("allow"))
        })
        .await
        .unwrap_err();
    assert_eq!(badly_named.code(), Code::InvalidArgument, "{badly_named:?}");

    let reply = client
        .approve_workers(ApproveWorkersRequest {
            since_ms: Some(pending.since_ms),
            ..approve(&["claude"], Some("allow"))
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.answered.len(), 1, "{reply:?}");
    assert!(reply.answered[0].answered, "{reply:?}");
    assert!(reply.pending.is_empty(), "{reply:?}");
    m.worker_until("claude", "idle after the approval", |w| {
        w["state"] == "idle"
    })
    .await;
    let w = m
        .ok("examine_worker", json!({"session_id": "claude"}))
        .await;
    let worktree = std::path::PathBuf::from(w["worktree"].as_str().unwrap());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !worktree.join("approved.txt").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the approval over gRPC did not reach the agent: {w}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let listed = m.ok("list_workers", json!({"verbose": true})).await;
    let notes = listed["workers"][0]["notes"].to_string();
    assert!(
        notes.contains("approval: allow") && notes.contains("(by ops)"),
        "{notes}"
    );
}
