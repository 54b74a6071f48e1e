//! What the fake does with a session's program, as iTerm2 does:
//!
//! - when the program ends, it announces the end, then closes the session when its
//!   profile says "Close Sessions On End" (iTerm2's stock profile does), or keeps it
//!   with " Session Ended " under its output and refuses input to it;
//! - when its output sets a user variable (`OSC 1337 ; SetUserVar`), the session's
//!   `user.<name>` takes the decoded value and its monitors hear of each change in
//!   order with the prompt notifications of the same output.

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

/// A VariableMonitor on `name` of every session.
fn monitor(name: &str) -> Req {
    Req::NotificationRequest(NotificationRequest {
        subscribe: Some(true),
        notification_type: Some(NotificationType::NotifyOnVariableChange as i32),
        arguments: Some(notification_request::Arguments::VariableMonitorRequest(
            VariableMonitorRequest {
                name: Some(name.into()),
                scope: Some(VariableScope::Session as i32),
                identifier: Some("all".into()),
            },
        )),
        ..Default::default()
    })
}

#[tokio::test]
async fn a_user_variable_set_by_the_output_is_reported_in_order_with_the_marks() {
    let mut client = client().await;
    for request in [
        monitor("user.cohortMark"),
        Req::NotificationRequest(NotificationRequest {
            session: Some("all".into()),
            subscribe: Some(true),
            notification_type: Some(NotificationType::NotifyOnPrompt as i32),
            arguments: Some(notification_request::Arguments::PromptMonitorRequest(
                PromptMonitorRequest {
                    modes: vec![PromptMonitorMode::CommandEnd as i32],
                },
            )),
        }),
    ] {
        let reply = client.conn.call(request).await.unwrap();
        assert!(
            matches!(&reply, Rep::NotificationResponse(r) if r.status() == notification_response::Status::Ok),
            "{reply:?}"
        );
    }
    let session = client
        .run_to_end(&[
            ("Command", "\"/bin/sh -c 'sleep 60'\""),
            ("Close Sessions On End", "false"),
        ])
        .await;
    let set = |name: &str, value: &str| format!("\x1b]1337;SetUserVar={name}={value}\x07");
    // "D;cohort=k1", then the mark, then unset; the same value again (it changed from
    // unset); a name with a dot, which iTerm2 ignores; the same value once more,
    // which is no change; and a value that is not base64, which unsets.
    let output = [
        set("cohortMark", "RDtjb2hvcnQ9azE="),
        "\x1b]133;D;4\x07".to_string(),
        "\x1b]1337;SetUserVar=cohortMark\x1b\\".to_string(),
        set("cohortMark", "RDtjb2hvcnQ9azE="),
        set("cohort.mark", "eA=="),
        set("cohortMark", "RDtjb2hvcnQ9azE="),
        set("cohortMark", "*"),
    ]
    .concat();
    let reply = client
        .conn
        .call(Req::InjectRequest(InjectRequest {
            session_id: vec![session.clone()],
            data: Some(output.into_bytes()),
        }))
        .await
        .unwrap();
    assert!(
        matches!(&reply, Rep::InjectResponse(r) if r.status == [0]),
        "{reply:?}"
    );
    let mut seen = Vec::new();
    while seen.len() < 5 {
        let next = client
            .wait("a change or a mark", |n| {
                if let Some(v) = &n.variable_changed_notification {
                    assert_eq!(v.identifier.as_deref(), Some(session.as_str()));
                    assert_eq!(v.name.as_deref(), Some("user.cohortMark"));
                    return v.json_new_value.clone();
                }
                let end = n.prompt_notification.as_ref()?;
                match &end.event {
                    Some(prompt_notification::Event::CommandEnd(e)) => {
                        Some(format!("end {}", e.status.unwrap_or(-1)))
                    }
                    _ => None,
                }
            })
            .await;
        seen.push(next);
    }
    assert_eq!(
        seen,
        [
            "\"D;cohort=k1\"",
            "end 4",
            "null",
            "\"D;cohort=k1\"",
            "null"
        ]
    );
    let reply = client
        .conn
        .call(Req::VariableRequest(VariableRequest {
            scope: Some(variable_request::Scope::SessionId(session.clone())),
            get: vec!["user.cohortMark".into(), "user.cohort".into()],
            ..Default::default()
        }))
        .await
        .unwrap();
    assert!(
        matches!(&reply, Rep::VariableResponse(r) if r.values == ["null", "null"]),
        "{reply:?}"
    );
}
