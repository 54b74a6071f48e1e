//! Server-originated RPCs: functions a client registers (a status-bar component is
//! one) and iTerm2 calls, answered with ServerOriginatedRPCResultRequest. The fake
//! keeps each registration with its connection and calls a status-bar component
//! when asked what a session's status bar shows ([`crate::FakeServer::status_bar_text`]),
//! giving each argument with a default path that variable's value, as iTerm2 does.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use cohort_backends::iterm2::proto::*;
use prost::Message as _;
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::Message;

use crate::{lock, Conn, State};

/// A function a client registered.
pub(crate) struct Registration {
    conn: Weak<Conn>,
    request: RpcRegistrationRequest,
}

/// The registrations and the calls waiting for their answers.
#[derive(Default)]
pub(crate) struct Rpcs {
    registered: Vec<Registration>,
    waiting: HashMap<String, oneshot::Sender<ServerOriginatedRpcResultRequest>>,
}

/// A registration, as iTerm2 takes it: a function of the same name and role that
/// a live connection registered already is a duplicate.
pub(crate) fn register(
    state: &State,
    conn: &Arc<Conn>,
    request: RpcRegistrationRequest,
) -> notification_response::Status {
    let mut rpcs = lock(&state.rpcs);
    rpcs.registered.retain(|r| r.conn.strong_count() > 0);
    // iTerm2 tells functions apart by name and argument names.
    let signature = |r: &RpcRegistrationRequest| {
        let mut names: Vec<String> = r.arguments.iter().filter_map(|a| a.name.clone()).collect();
        names.sort();
        (r.name.clone(), names)
    };
    let taken = rpcs
        .registered
        .iter()
        .any(|r| signature(&r.request) == signature(&request));
    if taken || request.name.as_deref().unwrap_or("").is_empty() {
        return if taken {
            notification_response::Status::DuplicateServerOriginatedRpc
        } else {
            notification_response::Status::RequestMalformed
        };
    }
    rpcs.registered.push(Registration {
        conn: Arc::downgrade(conn),
        request,
    });
    notification_response::Status::Ok
}

/// Takes back a registration the connection made; NotSubscribed when it made none.
pub(crate) fn unregister(
    state: &State,
    conn: &Arc<Conn>,
    request: &RpcRegistrationRequest,
) -> notification_response::Status {
    let mut rpcs = lock(&state.rpcs);
    let before = rpcs.registered.len();
    rpcs.registered.retain(|r| {
        !(r.request.name == request.name && r.conn.upgrade().is_some_and(|c| Arc::ptr_eq(&c, conn)))
    });
    if rpcs.registered.len() < before {
        notification_response::Status::Ok
    } else {
        notification_response::Status::NotSubscribed
    }
}

/// A client's answer to a call.
pub(crate) fn answered(state: &State, result: ServerOriginatedRpcResultRequest) {
    let id = result.request_id.clone().unwrap_or_default();
    if let Some(waiter) = lock(&state.rpcs).waiting.remove(&id) {
        let _ = waiter.send(result);
    }
}

/// Calls every registered status-bar component for `session`; the text of the
/// first that answers, `None` when none is registered or none answers.
pub(crate) async fn status_bar_text(state: &Arc<State>, session: &str) -> Option<String> {
    let components: Vec<(Arc<Conn>, RpcRegistrationRequest)> = lock(&state.rpcs)
        .registered
        .iter()
        .filter(|r| {
            r.request.role == Some(rpc_registration_request::Role::StatusBarComponent as i32)
        })
        .filter_map(|r| Some((r.conn.upgrade()?, r.request.clone())))
        .collect();
    let target = lock(&state.world).session(session)?;
    'components: for (conn, request) in components {
        // iTerm2 calls a function only when every variable it names without `?`
        // is set.
        let mut arguments = Vec::new();
        for name in request.arguments.iter().filter_map(|a| a.name.clone()) {
            let path = request
                .defaults
                .iter()
                .find(|d| d.name.as_deref() == Some(&name))
                .and_then(|d| d.path.clone());
            let json_value = match (name.as_str(), path) {
                // The knobs, as iTerm2 passes them: a JSON string holding JSON.
                ("knobs", _) => "\"{}\"".to_string(),
                (_, Some(path)) => {
                    let (path, optional) = match path.strip_suffix('?') {
                        Some(path) => (path.to_string(), true),
                        None => (path, false),
                    };
                    match lock(&target.vars).get(&path).cloned() {
                        Some(value) => value,
                        None if optional => "null".to_string(),
                        None => continue 'components,
                    }
                }
                (_, None) => "null".to_string(),
            };
            arguments.push(server_originated_rpc::RpcArgument {
                name: Some(name),
                json_value: Some(json_value),
            });
        }

        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        lock(&state.rpcs).waiting.insert(id.clone(), tx);
        let message = ServerOriginatedMessage {
            id: None,
            submessage: Some(server_originated_message::Submessage::Notification(
                Notification {
                    server_originated_rpc_notification: Some(ServerOriginatedRpcNotification {
                        request_id: Some(id.clone()),
                        rpc: Some(ServerOriginatedRpc {
                            name: request.name.clone(),
                            arguments,
                        }),
                    }),
                    ..Default::default()
                },
            )),
        };
        let _ = conn
            .out
            .send(Message::Binary(message.encode_to_vec().into()));
        match tokio::time::timeout(Duration::from_secs(5), rx).await {
            Ok(Ok(result)) => {
                if let Some(server_originated_rpc_result_request::Result::JsonValue(v)) =
                    result.result
                {
                    return serde_json::from_str::<String>(&v).ok().or(Some(v));
                }
            }
            _ => {
                lock(&state.rpcs).waiting.remove(&id);
            }
        }
    }
    None
}
