//! cohort's prost messages against reference encodings made with the official
//! iTerm2 schema (the `iterm2` Python package's compiled `api_pb2`), both ways:
//! what cohort encodes equals the reference bytes, and the reference bytes decode
//! to the expected message.

use cohort_backends::iterm2::proto::client_originated_message::Submessage as Req;
use cohort_backends::iterm2::proto::server_originated_message::Submessage as Rep;
use cohort_backends::iterm2::proto::*;
use prost::Message;

fn hex(text: &str) -> Vec<u8> {
    text.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).expect("hex byte"))
        .collect()
}

fn request(id: i64, submessage: Req) -> ClientOriginatedMessage {
    ClientOriginatedMessage {
        id: Some(id),
        submessage: Some(submessage),
    }
}

/// Encodes to exactly `bytes`, and `bytes` decode back to the same message.
fn both_ways<M: Message + Default + PartialEq + std::fmt::Debug>(message: &M, bytes: &str) {
    let expected = hex(bytes);
    assert_eq!(
        message.encode_to_vec(),
        expected,
        "encoding of {message:?} differs from the reference"
    );
    let decoded = M::decode(expected.as_slice()).expect("reference bytes decode");
    assert_eq!(&decoded, message, "reference bytes decode differently");
}

#[test]
fn list_sessions_request_id_zero() {
    both_ways(
        &request(0, Req::ListSessionsRequest(ListSessionsRequest {})),
        "08 00 d2 06 00",
    );
}

#[test]
fn send_text() {
    both_ways(
        &request(
            7,
            Req::SendTextRequest(SendTextRequest {
                session: Some("S1".into()),
                text: Some("ls\r".into()),
                suppress_broadcast: Some(false),
            }),
        ),
        "08 07 da 06 0b 0a 02 53 31 12 03 6c 73 0d 18 00",
    );
}

#[test]
fn get_buffer_screen_contents_only() {
    both_ways(
        &request(
            8,
            Req::GetBufferRequest(GetBufferRequest {
                session: Some("S1".into()),
                line_range: Some(LineRange {
                    screen_contents_only: Some(true),
                    trailing_lines: None,
                    windowed_coord_range: None,
                }),
                include_styles: Some(false),
            }),
        ),
        "08 08 a2 06 0a 0a 02 53 31 12 02 08 01 18 00",
    );
}

#[test]
fn get_buffer_trailing_lines() {
    both_ways(
        &request(
            9,
            Req::GetBufferRequest(GetBufferRequest {
                session: Some("S1".into()),
                line_range: Some(LineRange {
                    screen_contents_only: None,
                    trailing_lines: Some(100),
                    windowed_coord_range: None,
                }),
                include_styles: None,
            }),
        ),
        "08 09 a2 06 08 0a 02 53 31 12 02 10 64",
    );
}

#[test]
fn prompt_subscription_with_unpacked_modes() {
    both_ways(
        &request(
            10,
            Req::NotificationRequest(NotificationRequest {
                session: Some("S1".into()),
                subscribe: Some(true),
                notification_type: Some(NotificationType::NotifyOnPrompt as i32),
                arguments: Some(notification_request::Arguments::PromptMonitorRequest(
                    PromptMonitorRequest {
                        modes: vec![
                            PromptMonitorMode::Prompt as i32,
                            PromptMonitorMode::CommandStart as i32,
                            PromptMonitorMode::CommandEnd as i32,
                        ],
                    },
                )),
            }),
        ),
        "08 0a ba 06 10 0a 02 53 31 10 01 18 03 4a 06 08 01 08 02 08 03",
    );
}

#[test]
fn split_pane_vertical() {
    both_ways(
        &request(
            11,
            Req::SplitPaneRequest(SplitPaneRequest {
                session: Some("S1".into()),
                split_direction: Some(split_pane_request::SplitDirection::Vertical as i32),
                before: Some(false),
                profile_name: None,
                custom_profile_properties: Vec::new(),
            }),
        ),
        "08 0b ea 06 08 0a 02 53 31 10 00 18 00",
    );
}

#[test]
fn variable_get() {
    both_ways(
        &request(
            12,
            Req::VariableRequest(VariableRequest {
                scope: Some(variable_request::Scope::SessionId("S1".into())),
                set: Vec::new(),
                get: vec!["jobName".into()],
            }),
        ),
        "08 0c 9a 07 0d 0a 02 53 31 1a 07 6a 6f 62 4e 61 6d 65",
    );
}

#[test]
fn list_sessions_response() {
    use list_sessions_response::{Tab, Window};
    use split_tree_node::{split_tree_link::Child, SplitTreeLink};
    let message = ServerOriginatedMessage {
        id: Some(0),
        submessage: Some(Rep::ListSessionsResponse(ListSessionsResponse {
            windows: vec![Window {
                tabs: vec![Tab {
                    tab_id: Some("1".into()),
                    root: Some(SplitTreeNode {
                        vertical: None,
                        links: vec![SplitTreeLink {
                            child: Some(Child::Session(SessionSummary {
                                unique_identifier: Some("S1".into()),
                                frame: None,
                                grid_size: Some(Size {
                                    width: Some(80),
                                    height: Some(24),
                                }),
                                title: Some("zsh".into()),
                            })),
                        }],
                    }),
                    tmux_window_id: None,
                    tmux_connection_id: None,
                    minimized_sessions: Vec::new(),
                }],
                window_id: Some("pty-W".into()),
                frame: None,
                number: None,
            }],
            buried_sessions: Vec::new(),
        })),
    };
    both_ways(
        &message,
        "08 00 d2 06 23 0a 21 0a 18 12 01 31 1a 13 12 11 0a 0f 0a 02 53 31 1a 04 08 50 10 18 22 03 7a 73 68 12 05 70 74 79 2d 57",
    );
}

#[test]
fn get_buffer_response() {
    let message = ServerOriginatedMessage {
        id: Some(8),
        submessage: Some(Rep::GetBufferResponse(GetBufferResponse {
            status: Some(0),
            contents: vec![LineContents {
                text: Some("hi".into()),
                code_points_per_cell: vec![CodePointsPerCell {
                    num_code_points: Some(1),
                    repeats: Some(2),
                }],
                continuation: Some(line_contents::Continuation::ContinuationHardEol as i32),
            }],
            cursor: Some(Coord {
                x: Some(2),
                y: Some(0),
            }),
            windowed_coord_range: None,
            // The deprecated `range` and `num_lines_above_screen`, absent.
            ..Default::default()
        })),
    };
    both_ways(
        &message,
        "08 08 a2 06 16 08 00 1a 0c 0a 02 68 69 12 04 08 01 10 02 18 01 22 04 08 02 10 00",
    );
}

#[test]
fn screen_update_notification_has_no_id() {
    let message = ServerOriginatedMessage {
        id: None,
        submessage: Some(Rep::Notification(Notification {
            screen_update_notification: Some(ScreenUpdateNotification {
                session: Some("S1".into()),
            }),
            ..Default::default()
        })),
    };
    both_ways(&message, "c2 3e 06 12 04 0a 02 53 31");
}

#[test]
fn command_end_notification_keeps_status_zero() {
    let message = ServerOriginatedMessage {
        id: None,
        submessage: Some(Rep::Notification(Notification {
            prompt_notification: Some(PromptNotification {
                session: Some("S1".into()),
                event: Some(prompt_notification::Event::CommandEnd(
                    PromptNotificationCommandEnd { status: Some(0) },
                )),
                unique_prompt_id: Some("P".into()),
            }),
            ..Default::default()
        })),
    };
    both_ways(&message, "c2 3e 0d 1a 0b 0a 02 53 31 22 02 08 00 2a 01 50");
}

#[test]
fn error_reply() {
    let message = ServerOriginatedMessage {
        id: Some(5),
        submessage: Some(Rep::Error(
            "Invalid request. Upgrade iTerm2 to a newer version.".into(),
        )),
    };
    both_ways(
        &message,
        "08 05 12 33 49 6e 76 61 6c 69 64 20 72 65 71 75 65 73 74 2e 20 55 70 67 72 61 64 65 20 69 54 65 72 6d 32 20 74 6f 20 61 20 6e 65 77 65 72 20 76 65 72 73 69 6f 6e 2e",
    );
}

#[test]
fn absent_fields_take_the_schema_defaults() {
    let cell = CodePointsPerCell::decode(hex("10 03").as_slice()).unwrap();
    assert_eq!(cell.repeats, Some(3));
    assert_eq!(cell.num_code_points, None);
    assert_eq!(cell.num_code_points(), 1);

    let line = LineContents::decode(&[][..]).unwrap();
    assert_eq!(
        line.continuation(),
        line_contents::Continuation::ContinuationHardEol
    );

    let invoke = InvokeFunctionRequest::decode(&[][..]).unwrap();
    assert_eq!(invoke.timeout(), -1.0);
}

#[test]
fn packed_repeated_enums_decode_too() {
    // Decoders accept the packed form as well: modes [1, 2, 3] packed.
    let packed = PromptMonitorRequest::decode(hex("0a 03 01 02 03").as_slice()).unwrap();
    assert_eq!(packed.modes, vec![1, 2, 3]);
}

#[test]
fn notifications_are_told_apart_from_replies() {
    // A notification decodes with no id; a reply to request 0 keeps its id.
    let n = ServerOriginatedMessage::decode(hex("c2 3e 06 12 04 0a 02 53 31").as_slice()).unwrap();
    assert_eq!(n.id, None);
    assert!(matches!(n.submessage, Some(Rep::Notification(_))));
    let r = ServerOriginatedMessage::decode(hex("08 00 d2 06 00").as_slice()).unwrap();
    assert_eq!(r.id, Some(0));
    assert!(matches!(r.submessage, Some(Rep::ListSessionsResponse(_))));
}

#[test]
fn unknown_requests_decode_to_an_empty_submessage() {
    // Tag 200 is no request this schema knows (a newer client's): it is skipped,
    // leaving no submessage, which the server answers with an error.
    let m = ClientOriginatedMessage::decode(hex("08 03 c2 0c 00").as_slice()).unwrap();
    assert_eq!(m.id, Some(3));
    assert!(m.submessage.is_none());
}
