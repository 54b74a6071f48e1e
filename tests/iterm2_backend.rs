//! iTerm2-specific backend behaviour against the fake: the legacy TCP transport, the
//! fresh-cookie retry after a 401, protocol-version gating, and replies that come
//! back out of order.

#[path = "support/iterm2.rs"]
mod iterm2_support;
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cohort_backends::iterm2::conn::{CredentialSource, Credentials, Endpoint};
use cohort_backends::iterm2::Iterm2Backend;
use cohort_backends::{BackendError, SpawnOptions, TerminalBackend};
use cohort_fake_iterm2::{Auth, FakeOptions, FakeServer};
use iterm2_support::FakeIterm2;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_cookie_is_replaced_once() {
    let fake = FakeIterm2::new().await;
    let jar = fake.server.cookie_jar();
    let asked = Arc::new(AtomicUsize::new(0));
    let mut config = fake.config();
    let counter = asked.clone();
    config.connect.credentials = CredentialSource::Custom(Arc::new(move |fresh| {
        counter.fetch_add(1, Ordering::SeqCst);
        Some(Credentials {
            cookie: Some(if fresh { jar.issue() } else { "stale".into() }),
            key: None,
        })
    }));
    let backend = Iterm2Backend::connect(config.clone())
        .await
        .expect("retry succeeds");
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    assert_eq!(backend.protocol_version().await.unwrap(), (1, 17));

    config.connect.credentials = CredentialSource::Custom(Arc::new(|_| {
        Some(Credentials {
            cookie: Some("stale".into()),
            key: None,
        })
    }));
    let err = Iterm2Backend::connect(config).await.unwrap_err();
    assert!(
        matches!(&err, BackendError::Disconnected { reason, .. } if reason.contains("401")),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_tcp_transport_works() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start_tcp(
        "127.0.0.1:0",
        FakeOptions {
            auth: Auth::AllowAll,
            env: vec![("HOME".into(), dir.path().display().to_string())],
            ..FakeOptions::default()
        },
    )
    .await
    .unwrap();
    let mut config = cohort_backends::iterm2::Iterm2Config::new(dir.path());
    config.connect.endpoint = Some(Endpoint::Tcp(server.endpoint().to_string()));
    config.connect.credentials = CredentialSource::None;
    config.shell = Some(bash_path().into());
    let backend = Iterm2Backend::connect(config)
        .await
        .expect("connect over TCP");
    let mut events = backend.subscribe();
    let pane = backend
        .spawn(SpawnOptions {
            name: "tcp".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    wait_prompt(&mut events, &pane.id).await;
    assert_eq!(pane.window_name, "tcp");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_modes_are_gated_on_the_protocol_version() {
    // A server announcing 1.0 cannot send COMMAND_START / COMMAND_END; the backend
    // subscribes to PROMPT only and still works.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("private/socket");
    let server = FakeServer::start(
        &socket,
        FakeOptions {
            auth: Auth::AllowAll,
            protocol_version: "1.0".into(),
            env: vec![("HOME".into(), dir.path().display().to_string())],
            ..FakeOptions::default()
        },
    )
    .await
    .unwrap();
    let mut config = cohort_backends::iterm2::Iterm2Config::new(dir.path().join("state"));
    config.connect.endpoint = Some(Endpoint::Unix(socket));
    config.connect.credentials = CredentialSource::None;
    config.shell = Some(bash_path().into());
    let backend = Iterm2Backend::connect(config).await.unwrap();
    assert_eq!(backend.protocol_version().await.unwrap(), (1, 0));
    let mut events = backend.subscribe();
    let pane = backend
        .spawn(SpawnOptions {
            name: "old".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    wait_prompt(&mut events, &pane.id).await;
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_are_matched_by_id() {
    let fake = FakeIterm2::new().await;
    let backend = fake.backend().await;
    // Tab creation answers late; listing answers at once: the replies cross.
    let spawns = (0..3).map(|i| {
        let backend = backend.clone();
        tokio::spawn(async move {
            backend
                .spawn(SpawnOptions {
                    name: format!("w{i}"),
                    ..Default::default()
                })
                .await
        })
    });
    let lists = (0..5).map(|_| {
        let backend = backend.clone();
        tokio::spawn(async move { backend.list_panes().await.map(|_| ()) })
    });
    let spawns: Vec<_> = spawns.collect();
    for list in lists {
        list.await.unwrap().expect("list");
    }
    let mut names = Vec::new();
    for spawn in spawns {
        names.push(spawn.await.unwrap().expect("spawn").window_name);
    }
    names.sort();
    assert_eq!(names, ["w0", "w1", "w2"]);
}
