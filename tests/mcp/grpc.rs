//! `cohort serve --grpc`: the gRPC API driven by its own generated Rust client over a
//! real `cohort serve` on a private tmux server; the token rule; HTTP MCP and gRPC
//! on one engine; and Python `grpcio` compiling `proto/cohort.proto` at test time
//! (`conformance/grpc/check.py`, skipped without grpcio, see `support/python.rs`).

use crate::{python, served, support::*};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cohort::grpc::proto::cohort_client::CohortClient;
use cohort::grpc::proto::{self, event::Kind};
use rmcp::ServiceExt;
use tonic::transport::Channel;
use tonic::{Code, Status};

/// `cohort serve --grpc 127.0.0.1:0 EXTRA…` on `server`, and the address it serves.
fn serve_grpc(server: &TestServer, extra: &[&str]) -> (served::Served, String) {
    let mut args = vec!["serve", "--grpc", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let served = served::start(server, &args, 1, &[]);
    let addr = served.address("127.0.0.1");
    (served, addr)
}

/// A new connection to `addr`: one client, with its own cursor and locks.
async fn channel(addr: &str) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .expect("connect over gRPC")
}

async fn client(addr: &str) -> CohortClient<Channel> {
    CohortClient::new(channel(addr).await)
}

async fn open(client: &mut CohortClient<Channel>, name: &str) -> proto::OpenReply {
    client
        .open(proto::OpenRequest {
            name: name.into(),
            ..Default::default()
        })
        .await
        .unwrap_or_else(|e| panic!("open {name}: {e}"))
        .into_inner()
}

async fn run(client: &mut CohortClient<Channel>, target: &str, command: &str) -> proto::RunReply {
    client
        .run(proto::RunRequest {
            target: target.into(),
            command: command.into(),
            ..Default::default()
        })
        .await
        .unwrap_or_else(|e| panic!("run {command:?}: {e}"))
        .into_inner()
}

/// The status a call failed with; fails the test when it succeeded.
fn refusal<T: std::fmt::Debug>(result: Result<T, Status>) -> Status {
    match result {
        Ok(reply) => panic!("expected a refusal, got {reply:?}"),
        Err(status) => status,
    }
}

/// Fails the test unless the call was refused with `code` and a message that says
/// `says`.
fn expect_refusal<T: std::fmt::Debug>(result: Result<T, Status>, code: Code, says: &str) {
    let status = refusal(result);
    assert_eq!(status.code(), code, "{status:?}");
    assert!(status.message().contains(says), "{status:?}");
}

#[tokio::test]
async fn sessions_run_send_read_and_key_with_verdicts() {
    let server = TestServer::new();
    let (_served, addr) = serve_grpc(&server, &[]);
    let mut c = client(&addr).await;
    let opened = open(&mut c, "g-shell").await;
    assert_eq!(opened.session.as_ref().unwrap().name, "g-shell");
    assert!(opened.attach.contains("tmux"), "{opened:?}");

    let ran = run(&mut c, "g-shell", "echo via-grpc").await;
    assert_eq!(ran.output.trim(), "via-grpc", "{ran:?}");
    let verdict = ran.verdict.unwrap();
    assert!(verdict.complete, "{verdict:?}");
    assert_eq!(verdict.exit_status, Some(0), "{verdict:?}");
    let failed = run(&mut c, "g-shell", "(exit 3)").await.verdict.unwrap();
    assert!(failed.complete, "{failed:?}");
    assert_eq!(failed.exit_status, Some(3), "{failed:?}");

    // send, then read what it printed once it is done.
    c.send(proto::SendRequest {
        target: "g-shell".into(),
        text: "echo sent-$((40 + 2))".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let read = c
        .read(proto::ReadRequest {
            target: "g-shell".into(),
            wait: Some(proto::Wait::default()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(read.output.contains("sent-42"), "{read:?}");
    assert_eq!(read.verdict.unwrap().exit_status, Some(0));

    // key: interrupt a sleep; the shell reports the interrupted status.
    c.send(proto::SendRequest {
        target: "g-shell".into(),
        text: "sleep 60".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    c.key(proto::KeyRequest {
        target: "g-shell".into(),
        keys: vec!["C-c".into()],
        owner: None,
        alone: false,
    })
    .await
    .unwrap();
    let read = c
        .read(proto::ReadRequest {
            target: "g-shell".into(),
            wait: Some(proto::Wait::default()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let verdict = read.verdict.unwrap();
    assert!(verdict.complete, "{verdict:?}");
    assert_eq!(verdict.exit_status, Some(130), "{verdict:?}");
    let screen = c
        .read(proto::ReadRequest {
            target: "g-shell".into(),
            mode: Some("screen".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(screen.meta.starts_with("[screen "), "{screen:?}");
    assert!(screen.output.contains("sent-42"), "{screen:?}");

    let listed = c.list(proto::ListRequest {}).await.unwrap().into_inner();
    assert!(listed.sessions.iter().any(|s| s.name == "g-shell"));
    c.close(proto::TargetRequest {
        target: "g-shell".into(),
    })
    .await
    .unwrap();
    let listed = c.list(proto::ListRequest {}).await.unwrap().into_inner();
    assert!(!listed.sessions.iter().any(|s| s.name == "g-shell"));
}

#[tokio::test]
async fn layouts_agents_teams_broadcasts_and_locks() {
    let server = TestServer::new();
    let (_served, addr) = serve_grpc(&server, &[]);
    let mut a = client(&addr).await;
    let laid = a
        .create_layout(proto::CreateLayoutRequest {
            name: "crew".into(),
            layout: Some("horizontal".into()),
            panes: vec![
                proto::LayoutPane {
                    name: Some("crew-a".into()),
                    ..Default::default()
                },
                proto::LayoutPane {
                    name: Some("crew-b".into()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let names: Vec<&str> = laid.sessions.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["crew-a", "crew-b"]);

    a.create_team(proto::CreateTeamRequest {
        name: "web".into(),
        parent: None,
    })
    .await
    .unwrap();
    for (agent, session) in [("alice", "crew-a"), ("bob", "crew-b")] {
        let registered = a
            .register_agent(proto::RegisterAgentRequest {
                name: agent.into(),
                session: session.into(),
                role: None,
                teams: vec!["web".into()],
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(registered.teams, ["web"]);
    }
    let agents = a.list_agents(proto::ListAgentsRequest {}).await.unwrap();
    assert_eq!(agents.into_inner().agents.len(), 2);
    let teams = a.list_teams(proto::ListTeamsRequest {}).await.unwrap();
    let web = teams.into_inner().teams;
    assert_eq!(web[0].members, ["alice", "bob"], "{web:?}");

    // The cascade: bob's own message beats the team's.
    let sent = a
        .broadcast(proto::BroadcastRequest {
            teams: [("web".to_string(), "echo team-web".to_string())].into(),
            agents: [("bob".to_string(), "echo bob-only".to_string())].into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .results;
    let got = |agent: &str| {
        sent.iter()
            .find(|d| d.target == agent)
            .unwrap_or_else(|| panic!("{agent} in {sent:?}"))
    };
    assert!(got("alice").ok && got("bob").ok, "{sent:?}");
    assert_eq!(got("alice").text.as_deref(), Some("echo team-web"));
    assert_eq!(got("bob").text.as_deref(), Some("echo bob-only"));

    // A lock taken on one connection refuses another agent on another connection.
    let held = a
        .lock(proto::LockRequest {
            target: "crew-a".into(),
            owner: "alice".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(held.locked, "{held:?}");
    let mut b = client(&addr).await;
    expect_refusal(
        b.send(proto::SendRequest {
            target: "crew-a".into(),
            text: "echo intruder".into(),
            owner: Some("bob".into()),
            ..Default::default()
        })
        .await,
        Code::PermissionDenied,
        "locked by \"alice\"",
    );
    expect_refusal(
        b.unlock(proto::UnlockRequest {
            target: "crew-a".into(),
            owner: "bob".into(),
            force: false,
        })
        .await,
        Code::PermissionDenied,
        "",
    );
    let locks = b.list_locks(proto::ListLocksRequest {}).await.unwrap();
    let locks = locks.into_inner().locks;
    assert_eq!(locks.len(), 1, "{locks:?}");
    assert_eq!(
        (locks[0].session.as_str(), locks[0].owner.as_str()),
        ("crew-a", "alice")
    );
    // The holder still types there, and releases it.
    let ran = a
        .run(proto::RunRequest {
            target: "crew-a".into(),
            command: "echo holder-typed".into(),
            owner: Some("alice".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(ran.output.contains("holder-typed"), "{ran:?}");
    a.unlock(proto::UnlockRequest {
        target: "crew-a".into(),
        owner: "alice".into(),
        force: false,
    })
    .await
    .unwrap();
    let locks = b.list_locks(proto::ListLocksRequest {}).await.unwrap();
    assert!(locks.into_inner().locks.is_empty());
}

/// A lock is bound to the connection that took it: when that client goes, so does
/// the lock, while the server keeps running.
#[tokio::test]
async fn a_lock_ends_with_the_grpc_connection_that_took_it() {
    let server = TestServer::new();
    let (_served, addr) = serve_grpc(&server, &[]);
    let mut a = client(&addr).await;
    open(&mut a, "g-lease").await;
    let held = a
        .lock(proto::LockRequest {
            target: "g-lease".into(),
            owner: "alice".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(held.locked, "{held:?}");
    let mut b = client(&addr).await;
    let send = || proto::SendRequest {
        target: "g-lease".into(),
        text: "echo from-bob".into(),
        owner: Some("bob".into()),
        ..Default::default()
    };
    expect_refusal(b.send(send()).await, Code::PermissionDenied, "alice");
    drop(a);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match b.send(send()).await {
            Ok(_) => break,
            Err(status) if status.code() == Code::PermissionDenied => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the lock outlived its connection: {status:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(status) => panic!("{status:?}"),
        }
    }
    let locks = b.list_locks(proto::ListLocksRequest {}).await.unwrap();
    assert!(locks.into_inner().locks.is_empty());
}

#[tokio::test]
async fn playbooks_waits_and_the_event_stream() {
    let server = TestServer::new();
    let (_served, addr) = serve_grpc(&server, &[]);
    let mut c = client(&addr).await;
    let mut events = c
        .events(proto::EventsRequest { output: false })
        .await
        .unwrap()
        .into_inner();
    open(&mut c, "g-book").await;
    // The stream saw the session open (output events were not asked for).
    loop {
        let event = tokio::time::timeout(WAIT, events.message())
            .await
            .expect("no SessionOpened for g-book on the event stream in time")
            .unwrap()
            .expect("the stream goes on");
        match event.kind.unwrap() {
            Kind::SessionOpened(opened) if opened.session == "g-book" => break,
            Kind::Output(_) => panic!("output events were not asked for"),
            _ => {}
        }
    }

    let book = proto::Playbook {
        name: Some("build".into()),
        steps: vec![
            proto::PlaybookStep {
                name: Some("greet".into()),
                targets: vec!["g-book".into()],
                command: Some("echo from-playbook".into()),
                ..Default::default()
            },
            proto::PlaybookStep {
                name: Some("fail".into()),
                targets: vec!["g-book".into()],
                command: Some("(exit 4)".into()),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let report = c
        .run_playbook(proto::PlaybookRequest {
            source: Some(proto::playbook_request::Source::Playbook(book)),
            owner: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!report.ok, "{report:?}");
    assert!(
        report.summary.starts_with("failed: 1 of 2 steps ok"),
        "{report:?}"
    );
    let greet = &report.steps[0].results[0];
    assert!(greet.ok, "{report:?}");
    assert_eq!(greet.verdict.as_ref().unwrap().exit_status, Some(0));
    assert!(greet
        .output
        .as_deref()
        .unwrap_or_default()
        .contains("from-playbook"));
    let failed = &report.steps[1].results[0];
    assert_eq!(failed.verdict.as_ref().unwrap().exit_status, Some(4));

    // A wait for a pattern in output still to come.
    c.send(proto::SendRequest {
        target: "g-book".into(),
        text: "sleep 0.3; echo done-$((6 * 7))".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let waited = c
        .wait_for(proto::WaitForRequest {
            targets: vec!["g-book".into()],
            condition: "pattern".into(),
            pattern: Some("done-42".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(waited.done, "{waited:?}");
    assert!(waited.results[0]
        .line
        .as_deref()
        .unwrap_or_default()
        .contains("done-42"));

    // A lock shows on the stream.
    c.lock(proto::LockRequest {
        target: "g-book".into(),
        owner: "carol".into(),
    })
    .await
    .unwrap();
    loop {
        let event = tokio::time::timeout(WAIT, events.message())
            .await
            .expect("no LockChanged for g-book on the event stream in time")
            .unwrap()
            .expect("the stream goes on");
        if let Some(Kind::LockChanged(lock)) = event.kind {
            assert_eq!(lock.session, "g-book");
            assert_eq!(lock.holder.as_deref(), Some("carol"));
            break;
        }
    }
}

/// Where tmux placed `pane`: its top and left cells.
fn pane_origin(server: &TestServer, pane: &str) -> (u32, u32) {
    let out = Command::new("tmux")
        .args(["-L", &server.socket, "display-message", "-p", "-t", pane])
        .arg("#{pane_top} #{pane_left}")
        .output()
        .expect("tmux display-message");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut numbers = text
        .split_whitespace()
        .map(|n| n.parse().expect("a number"));
    (numbers.next().expect("top"), numbers.next().expect("left"))
}

fn leaf(pane: u32) -> proto::SplitTree {
    proto::SplitTree {
        node: Some(proto::split_tree::Node::Pane(pane)),
    }
}

fn split(direction: &str, children: Vec<(proto::SplitTree, Option<u32>)>) -> proto::SplitTree {
    proto::SplitTree {
        node: Some(proto::split_tree::Node::Split(proto::Split {
            direction: direction.into(),
            children: children
                .into_iter()
                .map(|(tree, size)| proto::SplitChild {
                    tree: Some(tree),
                    size,
                })
                .collect(),
        })),
    }
}

fn named_panes(names: &[&str]) -> Vec<proto::LayoutPane> {
    names
        .iter()
        .map(|name| proto::LayoutPane {
            name: Some(name.to_string()),
            ..Default::default()
        })
        .collect()
}

#[tokio::test]
async fn a_layout_from_a_split_tree_and_trees_that_cannot_be_one() {
    let server = TestServer::new();
    let (_served, addr) = serve_grpc(&server, &[]);
    let mut c = client(&addr).await;
    // One pane on top (60%), two side by side below it.
    let tree = split(
        "vertical",
        vec![
            (leaf(0), Some(60)),
            (
                split("horizontal", vec![(leaf(1), None), (leaf(2), None)]),
                None,
            ),
        ],
    );
    let laid = c
        .create_layout(proto::CreateLayoutRequest {
            name: "tree".into(),
            panes: named_panes(&["top", "left", "right"]),
            tree: Some(tree),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let names: Vec<&str> = laid.sessions.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["top", "left", "right"]);
    let [top, left, right] = [0, 1, 2].map(|i| pane_origin(&server, &laid.sessions[i].pane));
    assert_eq!(top, (0, 0), "the first pane is on top");
    assert!(
        left.0 > 0 && left.0 == right.0,
        "{left:?} {right:?}: one row below"
    );
    assert!(
        left.1 == 0 && right.1 > 0,
        "{left:?} {right:?}: side by side"
    );

    let refused = |tree: proto::SplitTree, name: &str| proto::CreateLayoutRequest {
        name: name.into(),
        panes: named_panes(&[&format!("{name}-a"), &format!("{name}-b")]),
        tree: Some(tree),
        ..Default::default()
    };
    expect_refusal(
        c.create_layout(refused(
            split("diagonal", vec![(leaf(0), None), (leaf(1), None)]),
            "diag",
        ))
        .await,
        Code::InvalidArgument,
        "\"diagonal\"",
    );
    expect_refusal(
        c.create_layout(refused(
            split("vertical", vec![(leaf(0), None), (leaf(7), None)]),
            "holes",
        ))
        .await,
        Code::InvalidArgument,
        "numbered 0 to 1",
    );
    // A tree bigger than any window: refused before it is built.
    let deep = |levels: usize| {
        let mut tree = leaf(0);
        for _ in 0..levels {
            tree = split("vertical", vec![(tree, None), (leaf(1), None)]);
        }
        tree
    };
    expect_refusal(
        c.create_layout(refused(deep(20), "deep")).await,
        Code::InvalidArgument,
        "too big",
    );
    // Deeper than protobuf decoding goes: a message that cannot be parsed, which
    // gRPC answers INTERNAL; the server goes on serving.
    expect_refusal(
        c.create_layout(refused(deep(60), "deeper")).await,
        Code::Internal,
        "recursion limit",
    );
    let empty = proto::SplitTree { node: None };
    expect_refusal(
        c.create_layout(refused(empty, "empty")).await,
        Code::InvalidArgument,
        "",
    );
    // Nothing was opened by the refused layouts.
    let listed = c.list(proto::ListRequest {}).await.unwrap().into_inner();
    assert_eq!(listed.sessions.len(), 3, "{:?}", listed.sessions);
}

/// Names reach tmux through every call that takes one; tmux must never expand them.
#[tokio::test]
async fn names_given_over_grpc_never_run_as_tmux_formats() {
    let server = TestServer::new();
    let (_served, addr) = serve_grpc(&server, &[]);
    let mut c = client(&addr).await;
    let trap = server.state_dir().join("trap");
    let payloads = [
        format!("#(touch {})", trap.display()),
        "#{pane_id}".to_string(),
        "#[fg=red]".to_string(),
        "a;b\\;c".to_string(),
    ];
    for (i, payload) in payloads.iter().enumerate() {
        let _ = c
            .open(proto::OpenRequest {
                name: payload.clone(),
                ..Default::default()
            })
            .await;
        let _ = c
            .create_layout(proto::CreateLayoutRequest {
                name: payload.clone(),
                panes: vec![proto::LayoutPane {
                    name: Some(format!("lay-{i}")),
                    agent: Some(payload.clone()),
                    team: Some(payload.clone()),
                    ..Default::default()
                }],
                ..Default::default()
            })
            .await;
        open(&mut c, &format!("plain-{i}")).await;
        let _ = c
            .register_agent(proto::RegisterAgentRequest {
                name: payload.clone(),
                session: format!("plain-{i}"),
                teams: vec![payload.clone()],
                ..Default::default()
            })
            .await;
        let _ = c
            .create_team(proto::CreateTeamRequest {
                name: payload.clone(),
                parent: None,
            })
            .await;
    }
    // Whatever was accepted is listed as given, never expanded.
    let listed = c.list(proto::ListRequest {}).await.unwrap().into_inner();
    for session in &listed.sessions {
        assert!(!session.name.starts_with('%'), "{session:?}");
    }
    run(&mut c, "plain-0", "true").await;
    assert!(!trap.exists(), "a name ran as a shell command");
}

#[tokio::test]
async fn bad_input_is_refused_with_a_clear_message() {
    let server = TestServer::new();
    let (_served, addr) = serve_grpc(&server, &[]);
    let mut c = client(&addr).await;
    expect_refusal(
        c.open(proto::OpenRequest {
            name: "_reserved".into(),
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
        "reserved",
    );
    open(&mut c, "g-bad").await;
    expect_refusal(
        c.key(proto::KeyRequest {
            target: "g-bad".into(),
            keys: vec!["Hyper-Q".into()],
            owner: None,
            alone: false,
        })
        .await,
        Code::InvalidArgument,
        "Hyper-Q",
    );
    expect_refusal(
        c.read(proto::ReadRequest {
            target: "g-bad".into(),
            mode: Some("sideways".into()),
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
        "unknown mode \"sideways\"",
    );
    expect_refusal(
        c.wait_for(proto::WaitForRequest {
            targets: vec!["g-bad".into()],
            condition: "pattern".into(),
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
        "needs `pattern`",
    );
    expect_refusal(
        c.run(proto::RunRequest {
            target: "nobody-here".into(),
            command: "true".into(),
            ..Default::default()
        })
        .await,
        Code::NotFound,
        "no session named \"nobody-here\"",
    );
    expect_refusal(
        c.open(proto::OpenRequest {
            name: "g-bad".into(),
            ..Default::default()
        })
        .await,
        Code::AlreadyExists,
        "",
    );
    // The tripwire: a destructive command is refused without force.
    expect_refusal(
        c.run(proto::RunRequest {
            target: "g-bad".into(),
            command: "rm -rf /".into(),
            ..Default::default()
        })
        .await,
        Code::PermissionDenied,
        "",
    );
}

#[tokio::test]
async fn a_token_is_required_off_loopback_and_checked_on_every_call() {
    let server = TestServer::new();
    let out = crate::support::deadline::refused(
        Command::new(env!("CARGO_BIN_EXE_cohort"))
            .args(["serve", "--grpc", "0.0.0.0:0"])
            .env("COHORT_TMUX_SOCKET", &server.socket)
            .env("COHORT_STATE_DIR", server.state_dir())
            .env_remove("COHORT_HTTP_TOKEN"),
        crate::support::WAIT,
    );
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("without a bearer token"), "{said}");

    let (_served, addr) = serve_grpc(&server, &["--token", "s3cret"]);
    for given in [None, Some("Bearer s3cre"), Some("Basic s3cret")] {
        let mut c = CohortClient::with_interceptor(
            channel(&addr).await,
            move |mut request: tonic::Request<()>| {
                if let Some(given) = given {
                    request
                        .metadata_mut()
                        .insert("authorization", given.parse().unwrap());
                }
                Ok(request)
            },
        );
        let refused = refusal(c.list(proto::ListRequest {}).await);
        assert_eq!(
            refused.code(),
            Code::Unauthenticated,
            "{given:?}: {refused:?}"
        );
        assert!(refused.message().contains("bearer token"), "{refused:?}");
    }
    let mut c =
        CohortClient::with_interceptor(channel(&addr).await, |mut request: tonic::Request<()>| {
            request
                .metadata_mut()
                .insert("authorization", "Bearer s3cret".parse().unwrap());
            Ok(request)
        });
    c.list(proto::ListRequest {}).await.expect("with the token");
}

/// HTTP MCP and gRPC served together run on one engine: a session opened over gRPC
/// is listed over MCP.
#[tokio::test]
async fn http_and_grpc_share_one_engine() {
    let server = TestServer::new();
    let served = served::start(
        &server,
        &["serve", "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"],
        3,
        &[],
    );
    // MCP's and the dashboard's addresses are URLs; gRPC's is host:port.
    let grpc = served
        .addresses
        .iter()
        .find(|a| !a.starts_with("http://"))
        .expect("the gRPC address");
    let mut c = client(grpc).await;
    open(&mut c, "g-both").await;
    let mcp = ()
        .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
            served.address("/mcp"),
        ))
        .await
        .expect("initialize over HTTP");
    let listed = served::call(&mcp, "list", serde_json::json!({})).await;
    assert!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "g-both"),
        "{listed}"
    );
    mcp.cancel().await.unwrap();
}

/// Python's `grpcio` compiles `proto/cohort.proto` (with grpcio-tools' own protoc)
/// and drives the served API: `conformance/grpc/check.py`.
#[tokio::test]
async fn python_grpcio_drives_the_api_from_the_proto() {
    let Some(python) = python::interpreter("grpc, grpc_tools", "conformance/grpc/requirements.txt")
    else {
        return;
    };
    let server = TestServer::new();
    let (_served, addr) = serve_grpc(&server, &["--token", "py-token"]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let generated = tempfile::tempdir().unwrap();
    let mut check = tokio::process::Command::new(&python);
    check
        .arg(root.join("conformance/grpc/check.py"))
        .arg(root.join("proto"))
        .arg(generated.path())
        .arg(&addr)
        .env("COHORT_GRPC_TOKEN", "py-token");
    python::run(check, Duration::from_secs(150)).await;
}

/// `cohort serve --grpc` with a role applies it to every call: what the role does not
/// allow is refused as permission denied, naming the role; `force` is refused to a
/// role without destructive choices; a server for an agent acts as that agent and as
/// no one else.
#[tokio::test]
async fn a_role_restricts_every_grpc_call() {
    let server = TestServer::new();
    let (_plain, plain_addr) = serve_grpc(&server, &[]);
    let mut plain = client(&plain_addr).await;
    open(&mut plain, "shared").await;
    plain
        .register_agent(proto::RegisterAgentRequest {
            name: "alice".into(),
            session: "shared".into(),
            role: Some("tester".into()),
            teams: vec![],
        })
        .await
        .unwrap();

    let (_readonly, readonly_addr) = serve_grpc(&server, &["--role", "readonly"]);
    let mut ro = client(&readonly_addr).await;
    let listed = ro.list(proto::ListRequest {}).await.unwrap().into_inner();
    assert!(
        listed.sessions.iter().any(|s| s.name == "shared"),
        "{listed:?}"
    );
    ro.read(proto::ReadRequest {
        target: "shared".into(),
        mode: Some("screen".into()),
        ..Default::default()
    })
    .await
    .unwrap();
    expect_refusal(
        ro.run(proto::RunRequest {
            target: "shared".into(),
            command: "touch ro-ran".into(),
            ..Default::default()
        })
        .await,
        Code::PermissionDenied,
        "the role \"readonly\" does not allow `run`",
    );
    expect_refusal(
        ro.open(proto::OpenRequest {
            name: "ro-opened".into(),
            ..Default::default()
        })
        .await,
        Code::PermissionDenied,
        "readonly",
    );
    expect_refusal(
        ro.approve_workers(proto::ApproveWorkersRequest {
            workers: vec!["any".into()],
            decision: Some("allow".into()),
            by: None,
            since_ms: None,
        })
        .await,
        Code::PermissionDenied,
        "readonly",
    );
    expect_refusal(
        ro.close(proto::TargetRequest {
            target: "shared".into(),
        })
        .await,
        Code::PermissionDenied,
        "readonly",
    );
    expect_refusal(
        ro.key(proto::KeyRequest {
            target: "shared".into(),
            keys: vec!["C-c".into()],
            ..Default::default()
        })
        .await,
        Code::PermissionDenied,
        "readonly",
    );

    let (_alice, alice_addr) = serve_grpc(&server, &["--agent", "alice"]);
    let mut a = client(&alice_addr).await;
    let ran = run(&mut a, "shared", "echo as-alice").await;
    assert!(ran.output.contains("as-alice"), "{ran:?}");
    expect_refusal(
        a.lock(proto::LockRequest {
            target: "shared".into(),
            owner: "mallory".into(),
        })
        .await,
        Code::PermissionDenied,
        "serves the agent \"alice\"",
    );
    let held = a
        .lock(proto::LockRequest {
            target: "shared".into(),
            owner: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(held.holder.as_ref().unwrap().owner, "alice", "{held:?}");
    expect_refusal(
        a.unlock(proto::UnlockRequest {
            target: "shared".into(),
            owner: "alice".into(),
            force: true,
        })
        .await,
        Code::PermissionDenied,
        "destructive",
    );
    expect_refusal(
        a.close(proto::TargetRequest {
            target: "shared".into(),
        })
        .await,
        Code::PermissionDenied,
        "tester",
    );
    // The session is still there and nothing the refused calls asked for happened.
    let listed = plain
        .list(proto::ListRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(listed.sessions.iter().any(|s| s.name == "shared"));
    assert!(!listed.sessions.iter().any(|s| s.name == "ro-opened"));
}

/// A recording that starts is an event on the stream, with the file it goes to.
#[tokio::test]
async fn a_recording_is_an_event_on_the_stream() {
    let server = TestServer::new();
    let (_served, addr) = serve_grpc(&server, &[]);
    let mut c = client(&addr).await;
    let mut events = c
        .events(proto::EventsRequest { output: false })
        .await
        .unwrap()
        .into_inner();
    let opened = c
        .open(proto::OpenRequest {
            name: "g-rec".into(),
            record: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let file = opened
        .recording
        .expect("the open reply names the recording");
    loop {
        let event = tokio::time::timeout(WAIT, events.message())
            .await
            .expect("no RecordingChanged for g-rec on the event stream in time")
            .unwrap()
            .expect("the stream goes on");
        if let Some(Kind::RecordingChanged(changed)) = event.kind {
            assert_eq!(changed.session, "g-rec", "{changed:?}");
            assert_eq!(changed.path.as_deref(), Some(file.as_str()), "{changed:?}");
            break;
        }
    }
}
