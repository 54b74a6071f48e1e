//! The fake's request handlers: [`handle`] answers one request, dispatching by
//! request family to the modules below, and notifies the monitors of any variable
//! the request changed.
//!
//! - `notify`: notifications and subscriptions;
//! - `screen`: text in and out (SendText, Inject, GetBuffer, prompts);
//! - `profile`: profiles, properties and invoked functions;
//! - `layout`: windows, tabs, splits, focus and closing;
//! - `broadcast`: broadcast domains;
//! - `arrangement`: saved window arrangements.

mod arrangement;
mod broadcast;
mod layout;
mod notify;
mod profile;
mod screen;

use std::sync::Arc;
use std::time::Duration;

use prost::Message as _;
use tokio_tungstenite::tungstenite::Message;

use cohort_backends::iterm2::proto::client_originated_message::Submessage as Req;
use cohort_backends::iterm2::proto::server_originated_message::Submessage as Rep;
use cohort_backends::iterm2::proto::*;

use crate::session::Session;
use crate::{lock, Conn, State};

pub(crate) use arrangement::SavedWindow;
pub(crate) use broadcast::broadcast_to;
pub(crate) use layout::open_first_window;
pub(crate) use notify::{custom_sequence, prompt_event, screen_updated, session_ended};

use layout::{activate, close, create_tab, focus, set_tab_layout, split_pane};
use notify::subscribe;
pub(crate) use profile::default_profile;
use profile::{get_profile, get_property, invoke, set_profile, set_property};
use screen::{get_buffer, get_prompt, inject, list_prompts, send_text};

/// Replies to CreateTab and SplitPane are sent this much later, as iTerm2 completes
/// them asynchronously.
const LATE_REPLY: Duration = Duration::from_millis(15);

pub(crate) fn notification() -> Notification {
    Notification::default()
}

pub(crate) fn reply(conn: &Conn, id: i64, submessage: Option<Rep>) {
    let message = ServerOriginatedMessage {
        id: Some(id),
        submessage,
    };
    let _ = conn
        .out
        .send(Message::Binary(message.encode_to_vec().into()));
}

/// Handles one request and sends its reply.
pub(crate) async fn handle(state: &Arc<State>, conn: &Arc<Conn>, request: ClientOriginatedMessage) {
    // iTerm2 copies the id into the reply, 0 included.
    let id = request.id.unwrap_or(0);
    let Some(submessage) = request.submessage else {
        reply(
            conn,
            id,
            Some(Rep::Error(
                "Invalid request. Upgrade iTerm2 to a newer version.".into(),
            )),
        );
        return;
    };
    if let Req::TransactionRequest(t) = &submessage {
        let mut held = conn.transaction.lock().await;
        let status = match (t.begin.unwrap_or(false), held.is_some()) {
            (true, true) => transaction_response::Status::AlreadyInTransaction,
            (true, false) => {
                *held = Some(state.main_loop.clone().lock_owned().await);
                transaction_response::Status::Ok
            }
            (false, true) => {
                held.take();
                transaction_response::Status::Ok
            }
            (false, false) => transaction_response::Status::NoTransaction,
        };
        reply(
            conn,
            id,
            Some(Rep::TransactionResponse(TransactionResponse {
                status: Some(status as i32),
            })),
        );
        return;
    }
    // Outside a transaction of its own, a request waits for the main loop.
    let in_transaction = conn.transaction.lock().await.is_some();
    let _main = if in_transaction {
        None
    } else {
        Some(state.main_loop.clone().lock_owned().await)
    };
    match submessage {
        Req::CreateTabRequest(r) => {
            let answer = create_tab(state, r);
            late_reply(conn, id, answer);
        }
        Req::SplitPaneRequest(r) => {
            let answer = split_pane(state, r);
            late_reply(conn, id, answer);
        }
        other => {
            let answer = handle_now(state, conn, other);
            reply(conn, id, answer);
        }
    }
    // A request may have changed variables someone watches.
    crate::variables::check(state);
}

fn late_reply(conn: &Arc<Conn>, id: i64, answer: Option<Rep>) {
    let conn = conn.clone();
    tokio::spawn(async move {
        tokio::time::sleep(LATE_REPLY).await;
        reply(&conn, id, answer);
    });
}

fn handle_now(state: &Arc<State>, conn: &Arc<Conn>, request: Req) -> Option<Rep> {
    Some(match request {
        Req::ListSessionsRequest(_) => Rep::ListSessionsResponse(lock(&state.world).list()),
        Req::NotificationRequest(r) => Rep::NotificationResponse(subscribe(state, conn, r)),
        Req::FocusRequest(_) => Rep::FocusResponse(focus(state)),
        Req::GetBroadcastDomainsRequest(_) => {
            Rep::GetBroadcastDomainsResponse(broadcast::get_domains(state))
        }
        Req::SetBroadcastDomainsRequest(r) => {
            Rep::SetBroadcastDomainsResponse(broadcast::set_domains(state, r))
        }
        Req::SavedArrangementRequest(r) => {
            Rep::SavedArrangementResponse(arrangement::saved_arrangement(state, r))
        }
        Req::SendTextRequest(r) => Rep::SendTextResponse(send_text(state, r)),
        Req::GetBufferRequest(r) => return get_buffer(state, r).map(Rep::GetBufferResponse),
        Req::GetPromptRequest(r) => Rep::GetPromptResponse(get_prompt(state, r)),
        Req::ListPromptsRequest(r) => Rep::ListPromptsResponse(list_prompts(state, r)),
        Req::VariableRequest(r) => Rep::VariableResponse(crate::variables::handle(state, r)),
        Req::SetProfilePropertyRequest(r) => Rep::SetProfilePropertyResponse(set_profile(state, r)),
        Req::GetProfilePropertyRequest(r) => Rep::GetProfilePropertyResponse(get_profile(state, r)),
        Req::ListProfilesRequest(r) => Rep::ListProfilesResponse(list_profiles(state, r)),
        Req::ActivateRequest(r) => Rep::ActivateResponse(activate(state, r)),
        Req::InjectRequest(r) => Rep::InjectResponse(inject(state, r)),
        Req::CloseRequest(r) => Rep::CloseResponse(close(state, r)),
        Req::InvokeFunctionRequest(r) => Rep::InvokeFunctionResponse(invoke(state, r)),
        Req::GetPropertyRequest(r) => Rep::GetPropertyResponse(get_property(state, r)),
        Req::SetPropertyRequest(r) => Rep::SetPropertyResponse(set_property(state, r)),
        Req::RestartSessionRequest(r) => {
            let known = r
                .session_id
                .as_deref()
                .is_some_and(|s| lock(&state.world).session(s).is_some());
            Rep::RestartSessionResponse(RestartSessionResponse {
                status: Some(if known {
                    restart_session_response::Status::SessionNotRestartable as i32
                } else {
                    restart_session_response::Status::SessionNotFound as i32
                }),
            })
        }
        Req::SetTabLayoutRequest(r) => Rep::SetTabLayoutResponse(set_tab_layout(state, r)),
        Req::ServerOriginatedRpcResultRequest(r) => {
            crate::rpc::answered(state, r);
            Rep::ServerOriginatedRpcResultResponse(ServerOriginatedRpcResultResponse {})
        }
        Req::TransactionRequest(_) | Req::CreateTabRequest(_) | Req::SplitPaneRequest(_) => {
            return None
        }
    })
}

/// Default and the dynamic profiles, with the properties asked for (all when none
/// are named), as iTerm2 lists them.
fn list_profiles(state: &State, r: ListProfilesRequest) -> ListProfilesResponse {
    let mut all = vec![default_profile()];
    all.extend(crate::dynamic::load(
        state.options.dynamic_profiles.as_deref(),
    ));
    ListProfilesResponse {
        profiles: all
            .into_iter()
            .filter(|p| {
                r.guids.is_empty()
                    || p.iter().any(|(k, v)| {
                        k == "Guid"
                            && serde_json::from_str::<String>(v)
                                .is_ok_and(|guid| r.guids.contains(&guid))
                    })
            })
            .map(|p| list_profiles_response::Profile {
                properties: p
                    .into_iter()
                    .filter(|(k, _)| r.properties.is_empty() || r.properties.contains(k))
                    .map(|(k, v)| ProfileProperty {
                        key: Some(k),
                        json_value: Some(v),
                    })
                    .collect(),
            })
            .collect(),
    }
}

pub(crate) fn targets(state: &State, id: &str) -> Vec<Arc<Session>> {
    let world = lock(&state.world);
    if id == "all" {
        world.sessions.values().cloned().collect()
    } else {
        world.session(id).into_iter().collect()
    }
}
