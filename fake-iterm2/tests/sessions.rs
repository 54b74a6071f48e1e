//! What the fake does when a session's program ends, as iTerm2 does: it announces
//! the end, then closes the session when its profile says "Close Sessions On End"
//! (iTerm2's stock profile does), or keeps it with " Session Ended " under its output
//! and refuses input to it.

use std::time::Duration;

use cohort_backends::iterm2::conn::{
    ConnEvent, ConnectOptions, Connection, CredentialSource, Endpoint,
};
use cohort_backends::iterm2::proto::client_originated_message::Submessage as Req;
use cohort_backends::iterm2::proto::server_originated_message::Submessage as Rep;
use cohort_backends::iterm2::proto::*;
use cohort_fake_iterm2::{Auth, FakeOptions, FakeServer};
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(15);

struct Client {
    conn: Connection,
    events: mpsc::UnboundedReceiver<ConnEvent>,
    _server: FakeServer,
    _dir: tempfile::TempDir,
}

async fn client() -> Client {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("socket");
    let server = FakeServer::start(
        &socket,
        FakeOptions {
            auth: Auth::AllowAll,
            initial_window: false,
            env: vec![("HOME".into(), dir.path().display().to_string())],
            ..FakeOptions::default()
        },
    )
    .await
    .unwrap();
    let (tx, events) = mpsc::unbounded_channel();
    let options = ConnectOptions {
        endpoint: Some(Endpoint::Unix(socket)),
        credentials: CredentialSource::None,
        app_name: "fake-tests".into(),
    };
    let conn = Connection::connect(&options, tx).await.unwrap();
    for kind in [
        NotificationType::NotifyOnTerminateSession,
        NotificationType::NotifyOnLayoutChange,
    ] {
        let reply = conn
            .call(Req::NotificationRequest(NotificationRequest {
                subscribe: Some(true),
                notification_type: Some(kind as i32),
                ..Default::default()
            }))
            .await
            .unwrap();
        assert!(
            matches!(reply, Rep::NotificationResponse(r) if r.status() == notification_response::Status::Ok)
        );
    }
    Client {
        conn,
        events,
        _server: server,
        _dir: dir,
    }
}

impl Client {
    /// Opens a tab running `sh -c 'exit 3'` with these extra profile properties.
    async fn run_to_end(&self, extra: &[(&str, &str)]) -> String {
        let mut props = vec![
            ("Custom Command", "\"Yes\""),
            ("Command", "\"/bin/sh -c 'exit 3'\""),
        ];
        props.extend_from_slice(extra);
        let reply = self
            .conn
            .call(Req::CreateTabRequest(CreateTabRequest {
                custom_profile_properties: props
                    .iter()
                    .map(|(k, v)| ProfileProperty {
                        key: Some(k.to_string()),
                        json_value: Some(v.to_string()),
                    })
                    .collect(),
                ..Default::default()
            }))
            .await
            .unwrap();
        match reply {
            Rep::CreateTabResponse(r) => r.session_id.expect("a session id"),
            other => panic!("{other:?}"),
        }
    }

    /// Waits for a notification `pick` accepts.
    async fn wait<T>(&mut self, what: &str, mut pick: impl FnMut(&Notification) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let event = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
                .expect("the connection stays open");
            if let ConnEvent::Notification(n) = event {
                if let Some(found) = pick(&n) {
                    return found;
                }
            }
        }
    }

    async fn listed(&self, session: &str) -> bool {
        match self
            .conn
            .call(Req::ListSessionsRequest(ListSessionsRequest {}))
            .await
            .unwrap()
        {
            Rep::ListSessionsResponse(r) => format!("{r:?}").contains(session),
            other => panic!("{other:?}"),
        }
    }
}

fn terminated(session: &str) -> impl FnMut(&Notification) -> Option<()> + '_ {
    move |n| {
        let id = n
            .terminate_session_notification
            .as_ref()?
            .session_id
            .as_deref()?;
        (id == session).then_some(())
    }
}

#[tokio::test]
async fn the_stock_profile_closes_a_session_whose_program_ended() {
    let mut client = client().await;
    let session = client.run_to_end(&[]).await;
    client
        .wait("the end of the session", terminated(&session))
        .await;
    let gone = |n: &Notification| {
        let layout = n.layout_changed_notification.as_ref()?;
        (!format!("{layout:?}").contains(session.as_str())).then_some(())
    };
    client.wait("the layout without it", gone).await;
    assert!(!client.listed(&session).await);
}

#[tokio::test]
async fn without_close_on_end_the_session_stays_and_refuses_input() {
    let mut client = client().await;
    let session = client
        .run_to_end(&[("Close Sessions On End", "false")])
        .await;
    client
        .wait("the end of the session", terminated(&session))
        .await;
    assert!(client.listed(&session).await);
    let reply = client
        .conn
        .call(Req::SendTextRequest(SendTextRequest {
            session: Some(session.clone()),
            text: Some("echo hi\r".into()),
            suppress_broadcast: Some(true),
        }))
        .await
        .unwrap();
    assert!(
        matches!(&reply, Rep::SendTextResponse(r) if r.status() == send_text_response::Status::SessionNotFound),
        "{reply:?}"
    );
    let screen = client
        .conn
        .call(Req::GetBufferRequest(GetBufferRequest {
            session: Some(session.clone()),
            line_range: Some(LineRange {
                screen_contents_only: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }))
        .await
        .unwrap();
    let Rep::GetBufferResponse(screen) = screen else {
        panic!("{screen:?}")
    };
    assert!(
        screen.contents.iter().any(|l| l
            .text
            .as_deref()
            .is_some_and(|t| t.trim() == "Session Ended")),
        "{screen:?}"
    );
}
