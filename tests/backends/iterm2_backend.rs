//! iTerm2-specific backend behaviour against the fake: the legacy TCP transport, the
//! fresh-cookie retry after a 401, protocol-version gating, replies that come back
//! out of order, what the backend reports of a pane's state (an ended program, the
//! alternate screen, the foreground job), sized splits, strings that reach iTerm2
//! without being evaluated, and secrets that never reach the session's command.

// These tests drive the backend itself, below the terminal's input type.
#![allow(clippy::disallowed_methods)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::{iterm2_support::FakeIterm2, support::*};
use cohort_backends::iterm2::conn::{CredentialSource, Credentials, Endpoint};
use cohort_backends::iterm2::Iterm2Backend;
use cohort_backends::{
    Appearance, BackendError, BackendEvent, Identity, PaneId, SpawnOptions, SplitDirection,
    SplitOptions, SplitSize, TerminalBackend,
};
use cohort_fake_iterm2::{Auth, FakeOptions, FakeServer};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_program_leaves_a_dead_pane_with_its_status() {
    let fake = FakeIterm2::new().await;
    let backend = fake.backend().await;
    let mut events = backend.subscribe();
    let pane = backend
        .spawn(SpawnOptions {
            name: "ends".into(),
            command: Some("echo from-command; exit 3".into()),
            ..Default::default()
        })
        .await
        .expect("spawn a command");
    let status = wait_pane_exit(&mut events, &pane.id).await;
    assert_eq!(status, Some(3));
    // The session stays, dead, with its status; it takes no more input.
    let state = backend
        .pane_state(&pane.id)
        .await
        .expect("state of a dead pane");
    assert!(state.dead, "{state:?}");
    assert_eq!(state.exit_status, Some(3));
    let listed = backend.list_panes().await.expect("list");
    let row = listed
        .iter()
        .find(|p| p.id == pane.id)
        .expect("still listed");
    assert!(row.dead);
    let refused = backend.send_text(&pane.id, "echo late").await;
    assert!(
        matches!(refused, Err(BackendError::PaneGone(_))),
        "{refused:?}"
    );
    // A second cohort process, which never saw it end, knows it too.
    let restarted = fake.backend().await;
    let state = restarted.pane_state(&pane.id).await.expect("state");
    assert!(state.dead && state.exit_status.is_none(), "{state:?}");
    backend.close(&pane.id).await.expect("close the dead pane");
    assert!(matches!(
        backend.pane_state(&pane.id).await,
        Err(BackendError::PaneGone(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_left_with_exit_reports_its_own_status() {
    let fake = FakeIterm2::new().await;
    let backend = fake.backend().await;
    let mut events = backend.subscribe();
    let pane = backend
        .spawn(SpawnOptions {
            name: "leaves".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    wait_prompt(&mut events, &pane.id).await;
    backend.send_text(&pane.id, "true\r").await.unwrap();
    assert_eq!(wait_exit(&mut events, &pane.id).await, Some(0));
    backend.send_text(&pane.id, "exit 7\r").await.unwrap();
    let status = wait_pane_exit(&mut events, &pane.id).await;
    // cohort's shell reports its own exit (a D mark from its EXIT trap): 7, not the
    // 0 of the command before.
    assert_eq!(status, Some(7));
    let state = backend.pane_state(&pane.id).await.unwrap();
    assert!(state.dead);
    assert_eq!(state.exit_status, Some(7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alternate_screen_and_the_foreground_job_are_reported() {
    let fake = FakeIterm2::new().await;
    let backend = fake.backend().await;
    let mut events = backend.subscribe();
    let pane = backend
        .spawn(SpawnOptions {
            name: "tui".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    wait_prompt(&mut events, &pane.id).await;
    let state = backend.pane_state(&pane.id).await.unwrap();
    assert!(!state.alternate_screen && !state.dead);
    backend
        .send_text(&pane.id, "printf '\\033[?1049h'\r")
        .await
        .unwrap();
    wait_exit(&mut events, &pane.id).await;
    assert!(backend.pane_state(&pane.id).await.unwrap().alternate_screen);
    assert!(backend.read_screen(&pane.id).await.unwrap().alternate);
    backend
        .send_text(&pane.id, "printf '\\033[?1049l'\r")
        .await
        .unwrap();
    wait_exit(&mut events, &pane.id).await;
    assert!(!backend.pane_state(&pane.id).await.unwrap().alternate_screen);
    assert!(!backend.read_screen(&pane.id).await.unwrap().alternate);

    backend.send_text(&pane.id, "sleep 1\r").await.unwrap();
    let job = |e: &BackendEvent| match e {
        BackendEvent::ForegroundChanged { command, .. } => Some(command.clone()),
        _ => None,
    };
    assert_eq!(wait_for(&mut events, &pane.id, "sleep", job).await, "sleep");
    assert_eq!(
        wait_for(&mut events, &pane.id, "the shell", job).await,
        "bash"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_takes_the_size_asked_for() {
    let fake = FakeIterm2::new().await;
    let backend = fake.backend().await;
    assert!(backend.capabilities().split_sizes);
    let first = backend
        .spawn(SpawnOptions {
            name: "sized".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(first.size.cols, 100);
    let right = backend
        .split(
            &first.id,
            SplitOptions {
                direction: SplitDirection::Horizontal,
                size: Some(SplitSize::Percent(30)),
                spawn: SpawnOptions::default(),
            },
        )
        .await
        .unwrap();
    let below = backend
        .split(
            &right.id,
            SplitOptions {
                direction: SplitDirection::Vertical,
                size: Some(SplitSize::Cells(8)),
                spawn: SpawnOptions::default(),
            },
        )
        .await
        .unwrap();
    let panes = backend.list_panes().await.unwrap();
    let size = |id: &PaneId| panes.iter().find(|p| &p.id == id).unwrap().size;
    // 30 % of the 100 columns (with the divider) the first pane had; 8 rows below.
    assert_eq!(size(&right.id).cols, 30);
    assert_eq!(size(&first.id).cols, 69);
    assert_eq!(size(&below.id).rows, 8);
    assert_eq!(size(&right.id).rows, 30 - 1 - 8);
}

/// Everything cohort hands iTerm2 arrives literally: names, titles, badges, user
/// variables, the command, its environment and directory. The fake evaluates them
/// as iTerm2 does (`\(…)` expressions, backslash escapes, `$$…$$` substitutions,
/// its own word splitting), so a string that was not encoded would read back
/// changed, start the wrong program, or make a function call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_reach_iterm2_literally() {
    let fake = FakeIterm2::new().await;
    let backend = fake.backend().await;
    let mut events = backend.subscribe();
    let work = tempfile::tempdir().unwrap();
    let touched = work.path().join("touched");
    let evil = format!(
        "a#(touch {})#{{pane_id}}#[fg=red] \\(user.cohort_id)\\(session.name) \
         \\(iterm2.alert(title: \"x\")) '\"\\\\n\\\\ \\u0041 $$HOST$$ $$ \nz",
        touched.display()
    );
    // A directory name may hold all of it but the slash.
    let dir = work.path().join(evil.replace('/', "_"));
    std::fs::create_dir(&dir).unwrap();
    let out = work.path().join("out");
    let identity = Identity {
        id: "id-1".into(),
        name: evil.clone(),
        agent: Some(evil.clone()),
        team: Some(evil.clone()),
        key: None,
        anchor: None,
        announces_start: false,
    };
    let pane = backend
        .spawn(SpawnOptions {
            name: evil.clone(),
            cwd: Some(dir.display().to_string()),
            env: vec![("COHORT_EVIL".into(), evil.clone())],
            command: Some(format!(
                "printf '%s' \"$COHORT_EVIL\" > '{0}.env'; pwd > '{0}.pwd'; \
                 printf '%s' '\\(user.x) $$A$$' > '{0}.cmd'",
                out.display()
            )),
            identity: Some(identity.clone()),
            ..Default::default()
        })
        .await
        .expect("spawn");
    assert_eq!(pane.window_name, evil, "the tab title");
    wait_exit(&mut events, &pane.id).await;
    let read = |ext: &str| std::fs::read_to_string(format!("{}.{ext}", out.display()));
    assert_eq!(read("env").expect("the command ran"), evil);
    assert_eq!(
        read("pwd").unwrap().trim_end_matches('\n'),
        dir.display().to_string()
    );
    assert_eq!(read("cmd").unwrap(), "\\(user.x) $$A$$");

    let shell = backend
        .spawn(SpawnOptions {
            name: "plain".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    backend.set_title(&shell.id, &evil).await.expect("title");
    backend
        .set_appearance(
            &shell.id,
            &Appearance {
                badge: Some(evil.clone()),
                ..Default::default()
            },
        )
        .await
        .expect("badge");
    backend
        .stamp_identity(&shell.id, &identity)
        .await
        .expect("identity");
    let listed = backend.list_panes().await.unwrap();
    let row = listed.iter().find(|p| p.id == shell.id).unwrap();
    assert_eq!(row.title, evil, "the session name");
    assert_eq!(row.identity.as_ref(), Some(&identity));
    let shown = backend.variables(&shell.id, &["badge"]).await.unwrap();
    assert_eq!(shown[0].as_deref(), Some(evil.as_str()), "the badge");

    assert!(!touched.exists(), "a #(…) ran");
    assert_eq!(fake.server.function_calls(), Vec::<String>::new());
}

/// The connection is cut while a read waits for its reply (another client holds
/// iTerm2's main loop in a transaction, so the read is answered only later): the
/// read ends with a clear error instead of hanging, subscribers hear of the
/// disconnect, and the next call connects again, with output flowing as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_cut_mid_read_is_reported_and_replaced() {
    use cohort_backends::iterm2::conn::Connection;
    use cohort_backends::iterm2::proto::client_originated_message::Submessage as Req;
    use cohort_backends::iterm2::proto::TransactionRequest;

    let fake = FakeIterm2::new().await;
    let backend = fake.backend().await;
    let mut events = backend.subscribe();
    let pane = backend
        .spawn(SpawnOptions {
            name: "cut".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    wait_prompt(&mut events, &pane.id).await;

    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let holder = Connection::connect(&fake.config().connect, tx)
        .await
        .expect("a second client");
    holder
        .call(Req::TransactionRequest(TransactionRequest {
            begin: Some(true),
        }))
        .await
        .expect("hold the main loop");
    let reading = {
        let backend = backend.clone();
        let pane = pane.id.clone();
        tokio::spawn(async move { backend.read_screen(&pane).await })
    };
    // The read's own request (a screen's contents; the backend's background syncs
    // ask for trailing lines), received while the main loop is held: cut before it
    // was sent, the read would rightly run on the next connection.
    let screen_read = |request: &cohort_backends::iterm2::proto::ClientOriginatedMessage| {
        matches!(&request.submessage, Some(Req::GetBufferRequest(get))
            if get.session.as_deref() == Some(pane.id.as_str())
                && get.line_range.as_ref().and_then(|r| r.screen_contents_only) == Some(true))
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    while fake.server.requests_received(screen_read) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the read never reached the fake"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    fake.server.cut_connections();

    let read = tokio::time::timeout(WAIT, reading)
        .await
        .expect("the read ends")
        .expect("no panic");
    assert!(
        matches!(&read, Err(BackendError::Disconnected { reason, .. }) if reason.contains("before the reply arrived")),
        "{read:?}"
    );
    let reason = tokio::time::timeout(WAIT, async {
        loop {
            match events.recv().await {
                Some(BackendEvent::Disconnected { reason }) => return reason,
                Some(_) => continue,
                None => panic!("the event stream ended"),
            }
        }
    })
    .await
    .expect("a Disconnected event");
    assert!(!reason.is_empty());

    // The next call connects again; the pane is still there and still followed.
    let state = backend.pane_state(&pane.id).await.expect("reconnected");
    assert!(!state.dead);
    tokio::time::timeout(WAIT, async {
        while !matches!(events.recv().await, Some(BackendEvent::Reconnected)) {}
    })
    .await
    .expect("a Reconnected event");
    backend
        .send_text(&pane.id, "echo after-$((40+2))\r")
        .await
        .unwrap();
    collect_output_until(&mut events, &pane.id, |out| contains(out, b"after-42")).await;
}

/// A secret in a new session's environment (its signal secret, a worker's hook key)
/// reaches the program, but not the command iTerm2 keeps for the session (nor `ps`
/// while it starts): the launch script reads it from a private file it deletes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_reach_the_environment_but_not_the_sessions_command() {
    let fake = FakeIterm2::new().await;
    let backend = fake.backend().await;
    let mut events = backend.subscribe();
    let secret = "5ec12e7".repeat(9);
    let pane = backend
        .spawn(SpawnOptions {
            name: "secretive".into(),
            env: vec![
                ("COHORT_SIGNAL_ID".into(), secret.clone()),
                ("PLAIN_VALUE".into(), "in-the-open".into()),
            ],
            ..Default::default()
        })
        .await
        .unwrap();
    wait_prompt(&mut events, &pane.id).await;
    let command = fake
        .server
        .profile_property(pane.id.as_str(), "Command")
        .expect("the session's command");
    assert!(!command.contains(&secret), "{command}");
    assert!(command.contains("in-the-open"), "{command}");
    backend
        .send_text(
            &pane.id,
            "echo \"got-${#COHORT_SIGNAL_ID}-$COHORT_SIGNAL_ID\"\r",
        )
        .await
        .unwrap();
    let expected = format!("got-63-{secret}");
    collect_output_until(&mut events, &pane.id, |o| contains(o, expected.as_bytes())).await;
    // The file it came from is gone.
    let pads = fake.dir.path().join("state/pads");
    let left: Vec<_> = std::fs::read_dir(&pads)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        left.iter().all(|p| !p.to_string_lossy().ends_with(".env")),
        "{left:?}"
    );
}

/// An alert on iTerm2 is the session's own: the notification it posts (OSC 9) and
/// a request for the user's attention, as if its program had written them; the text
/// arrives as written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_posts_a_notification_and_asks_for_attention() {
    let fake = FakeIterm2::new().await;
    let backend = fake.backend().await;
    let mut events = backend.subscribe();
    let pane = backend
        .spawn(SpawnOptions {
            name: "alerted".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    wait_prompt(&mut events, &pane.id).await;
    backend
        .alert(&pane.id, "build failed: \\(secret) 3 errors\nsee log")
        .await
        .unwrap();
    let id = pane.id.to_string();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let alerts = fake.server.alerts();
        let posted = alerts.iter().any(|(s, text)| {
            s == &id && text.as_deref() == Some("build failed: \\(secret) 3 errors see log")
        });
        let attention = alerts.iter().any(|(s, text)| s == &id && text.is_none());
        if posted && attention {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{alerts:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(matches!(
        backend.alert(&PaneId("NO-SUCH-SESSION".into()), "x").await,
        Err(BackendError::PaneGone(_))
    ));
}
