//! Hand-written prost messages for the subset of iTerm2's `api.proto` (package
//! `iterm2`, proto2) that cohort and its fake server use.
//!
//! Conventions, from the schema:
//!
//! - every optional field is an `Option`, because iTerm2 branches on presence;
//! - non-zero defaults are declared (`CodePointsPerCell.num_code_points` = 1,
//!   `LineContents.continuation` = HARD_EOL, `InvokeFunctionRequest.timeout` = -1),
//!   and prost generates accessors that honour them;
//! - repeated enums are unpacked (`packed = "false"`), as proto2 encodes them;
//! - unknown fields (newer iTerm2 builds) are skipped on decode.
//!
//! Field numbers match the official schema; `backends/tests/iterm2_golden.rs`
//! checks the encodings against bytes produced by the official client's schema.

#![allow(missing_docs, clippy::large_enum_variant)]

use prost::{Enumeration, Message, Oneof};

/// Every request a client sends, with its id.
#[derive(Clone, PartialEq, Message)]
pub struct ClientOriginatedMessage {
    #[prost(int64, optional, tag = "1")]
    pub id: Option<i64>,
    #[prost(
        oneof = "client_originated_message::Submessage",
        tags = "100, 101, 102, 103, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 117, 118, 120, 122, 123, 131, 132, 133"
    )]
    pub submessage: Option<client_originated_message::Submessage>,
}

pub mod client_originated_message {
    use super::*;

    /// The request.
    #[derive(Clone, PartialEq, Oneof)]
    pub enum Submessage {
        #[prost(message, tag = "100")]
        GetBufferRequest(GetBufferRequest),
        #[prost(message, tag = "101")]
        GetPromptRequest(GetPromptRequest),
        #[prost(message, tag = "102")]
        TransactionRequest(TransactionRequest),
        #[prost(message, tag = "103")]
        NotificationRequest(NotificationRequest),
        #[prost(message, tag = "105")]
        SetProfilePropertyRequest(SetProfilePropertyRequest),
        #[prost(message, tag = "106")]
        ListSessionsRequest(ListSessionsRequest),
        #[prost(message, tag = "107")]
        SendTextRequest(SendTextRequest),
        #[prost(message, tag = "108")]
        CreateTabRequest(CreateTabRequest),
        #[prost(message, tag = "109")]
        SplitPaneRequest(SplitPaneRequest),
        #[prost(message, tag = "110")]
        GetProfilePropertyRequest(GetProfilePropertyRequest),
        #[prost(message, tag = "111")]
        SetPropertyRequest(SetPropertyRequest),
        #[prost(message, tag = "112")]
        GetPropertyRequest(GetPropertyRequest),
        #[prost(message, tag = "113")]
        InjectRequest(InjectRequest),
        #[prost(message, tag = "114")]
        ActivateRequest(ActivateRequest),
        #[prost(message, tag = "115")]
        VariableRequest(VariableRequest),
        #[prost(message, tag = "117")]
        FocusRequest(FocusRequest),
        #[prost(message, tag = "118")]
        ListProfilesRequest(ListProfilesRequest),
        #[prost(message, tag = "120")]
        RestartSessionRequest(RestartSessionRequest),
        #[prost(message, tag = "122")]
        SetTabLayoutRequest(SetTabLayoutRequest),
        #[prost(message, tag = "123")]
        GetBroadcastDomainsRequest(GetBroadcastDomainsRequest),
        #[prost(message, tag = "131")]
        CloseRequest(CloseRequest),
        #[prost(message, tag = "132")]
        InvokeFunctionRequest(InvokeFunctionRequest),
        #[prost(message, tag = "133")]
        ListPromptsRequest(ListPromptsRequest),
    }
}

/// Every message the server sends: a reply (with the request's id) or a
/// notification (no id).
#[derive(Clone, PartialEq, Message)]
pub struct ServerOriginatedMessage {
    #[prost(int64, optional, tag = "1")]
    pub id: Option<i64>,
    #[prost(
        oneof = "server_originated_message::Submessage",
        tags = "2, 100, 101, 102, 103, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 117, 118, 120, 122, 123, 131, 132, 133, 1000"
    )]
    pub submessage: Option<server_originated_message::Submessage>,
}

pub mod server_originated_message {
    use super::*;

    /// The reply or notification.
    #[derive(Clone, PartialEq, Oneof)]
    pub enum Submessage {
        #[prost(string, tag = "2")]
        Error(String),
        #[prost(message, tag = "100")]
        GetBufferResponse(GetBufferResponse),
        #[prost(message, tag = "101")]
        GetPromptResponse(GetPromptResponse),
        #[prost(message, tag = "102")]
        TransactionResponse(TransactionResponse),
        #[prost(message, tag = "103")]
        NotificationResponse(NotificationResponse),
        #[prost(message, tag = "105")]
        SetProfilePropertyResponse(SetProfilePropertyResponse),
        #[prost(message, tag = "106")]
        ListSessionsResponse(ListSessionsResponse),
        #[prost(message, tag = "107")]
        SendTextResponse(SendTextResponse),
        #[prost(message, tag = "108")]
        CreateTabResponse(CreateTabResponse),
        #[prost(message, tag = "109")]
        SplitPaneResponse(SplitPaneResponse),
        #[prost(message, tag = "110")]
        GetProfilePropertyResponse(GetProfilePropertyResponse),
        #[prost(message, tag = "111")]
        SetPropertyResponse(SetPropertyResponse),
        #[prost(message, tag = "112")]
        GetPropertyResponse(GetPropertyResponse),
        #[prost(message, tag = "113")]
        InjectResponse(InjectResponse),
        #[prost(message, tag = "114")]
        ActivateResponse(ActivateResponse),
        #[prost(message, tag = "115")]
        VariableResponse(VariableResponse),
        #[prost(message, tag = "117")]
        FocusResponse(FocusResponse),
        #[prost(message, tag = "118")]
        ListProfilesResponse(ListProfilesResponse),
        #[prost(message, tag = "120")]
        RestartSessionResponse(RestartSessionResponse),
        #[prost(message, tag = "122")]
        SetTabLayoutResponse(SetTabLayoutResponse),
        #[prost(message, tag = "123")]
        GetBroadcastDomainsResponse(GetBroadcastDomainsResponse),
        #[prost(message, tag = "131")]
        CloseResponse(CloseResponse),
        #[prost(message, tag = "132")]
        InvokeFunctionResponse(InvokeFunctionResponse),
        #[prost(message, tag = "133")]
        ListPromptsResponse(ListPromptsResponse),
        #[prost(message, tag = "1000")]
        Notification(Notification),
    }
}

// ---------------------------------------------------------------- layout

#[derive(Clone, PartialEq, Message)]
pub struct ListSessionsRequest {}

#[derive(Clone, PartialEq, Message)]
pub struct ListSessionsResponse {
    #[prost(message, repeated, tag = "1")]
    pub windows: Vec<list_sessions_response::Window>,
    #[prost(message, repeated, tag = "2")]
    pub buried_sessions: Vec<SessionSummary>,
}

pub mod list_sessions_response {
    use super::*;

    #[derive(Clone, PartialEq, Message)]
    pub struct Window {
        #[prost(message, repeated, tag = "1")]
        pub tabs: Vec<Tab>,
        #[prost(string, optional, tag = "2")]
        pub window_id: Option<String>,
        #[prost(message, optional, tag = "3")]
        pub frame: Option<Frame>,
        #[prost(int32, optional, tag = "4")]
        pub number: Option<i32>,
        #[prost(string, optional, tag = "5")]
        pub selected_tab_id: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Tab {
        #[prost(string, optional, tag = "2")]
        pub tab_id: Option<String>,
        #[prost(message, optional, tag = "3")]
        pub root: Option<SplitTreeNode>,
        #[prost(string, optional, tag = "4")]
        pub tmux_window_id: Option<String>,
        #[prost(string, optional, tag = "5")]
        pub tmux_connection_id: Option<String>,
        #[prost(message, repeated, tag = "6")]
        pub minimized_sessions: Vec<SessionSummary>,
        #[prost(string, optional, tag = "7")]
        pub active_session_id: Option<String>,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct SessionSummary {
    #[prost(string, optional, tag = "1")]
    pub unique_identifier: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub frame: Option<Frame>,
    #[prost(message, optional, tag = "3")]
    pub grid_size: Option<Size>,
    #[prost(string, optional, tag = "4")]
    pub title: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SplitTreeNode {
    #[prost(bool, optional, tag = "1")]
    pub vertical: Option<bool>,
    #[prost(message, repeated, tag = "2")]
    pub links: Vec<split_tree_node::SplitTreeLink>,
}

pub mod split_tree_node {
    use super::*;

    #[derive(Clone, PartialEq, Message)]
    pub struct SplitTreeLink {
        #[prost(oneof = "split_tree_link::Child", tags = "1, 2")]
        pub child: Option<split_tree_link::Child>,
    }

    pub mod split_tree_link {
        use super::super::*;

        #[derive(Clone, PartialEq, Oneof)]
        pub enum Child {
            #[prost(message, tag = "1")]
            Session(SessionSummary),
            #[prost(message, tag = "2")]
            Node(SplitTreeNode),
        }
    }
}

/// Resizes the sessions of a tab: the tree must match the tab's tree exactly
/// (`vertical` included); only the sessions' `grid_size` may change, and the sizes
/// must still add up to the same totals in every dimension.
#[derive(Clone, PartialEq, Message)]
pub struct SetTabLayoutRequest {
    #[prost(message, optional, tag = "1")]
    pub root: Option<SplitTreeNode>,
    #[prost(string, optional, tag = "2")]
    pub tab_id: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SetTabLayoutResponse {
    #[prost(enumeration = "set_tab_layout_response::Status", optional, tag = "1")]
    pub status: Option<i32>,
}

pub mod set_tab_layout_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        BadTabId = 1,
        WrongTree = 2,
        InvalidSize = 3,
    }
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct Frame {
    #[prost(message, optional, tag = "1")]
    pub origin: Option<Point>,
    #[prost(message, optional, tag = "2")]
    pub size: Option<Size>,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct Point {
    #[prost(int32, optional, tag = "1")]
    pub x: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub y: Option<i32>,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct Size {
    #[prost(int32, optional, tag = "1")]
    pub width: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub height: Option<i32>,
}

// ---------------------------------------------------------------- create, split, send

#[derive(Clone, PartialEq, Message)]
pub struct ProfileProperty {
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub json_value: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CreateTabRequest {
    #[prost(string, optional, tag = "1")]
    pub profile_name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub window_id: Option<String>,
    #[prost(uint32, optional, tag = "3")]
    pub tab_index: Option<u32>,
    #[prost(string, optional, tag = "4")]
    pub command: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub custom_profile_properties: Vec<ProfileProperty>,
    #[prost(bool, optional, tag = "6")]
    pub select_tab: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CreateTabResponse {
    #[prost(enumeration = "create_tab_response::Status", optional, tag = "1")]
    pub status: Option<i32>,
    #[prost(string, optional, tag = "2")]
    pub window_id: Option<String>,
    /// An int32, unlike every other tab id.
    #[prost(int32, optional, tag = "3")]
    pub tab_id: Option<i32>,
    #[prost(string, optional, tag = "4")]
    pub session_id: Option<String>,
}

pub mod create_tab_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        InvalidProfileName = 1,
        InvalidWindowId = 2,
        InvalidTabIndex = 3,
        MissingSubstitution = 4,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct SplitPaneRequest {
    #[prost(string, optional, tag = "1")]
    pub session: Option<String>,
    #[prost(
        enumeration = "split_pane_request::SplitDirection",
        optional,
        tag = "2"
    )]
    pub split_direction: Option<i32>,
    #[prost(bool, optional, tag = "3", default = "false")]
    pub before: Option<bool>,
    #[prost(string, optional, tag = "4")]
    pub profile_name: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub custom_profile_properties: Vec<ProfileProperty>,
}

pub mod split_pane_request {
    use super::*;

    /// `Vertical` is a vertical divider: panes side by side.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum SplitDirection {
        Vertical = 0,
        Horizontal = 1,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct SplitPaneResponse {
    #[prost(enumeration = "split_pane_response::Status", optional, tag = "1")]
    pub status: Option<i32>,
    #[prost(string, repeated, tag = "2")]
    pub session_id: Vec<String>,
}

pub mod split_pane_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        SessionNotFound = 1,
        InvalidProfileName = 2,
        CannotSplit = 3,
        MalformedCustomProfileProperty = 4,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct SendTextRequest {
    #[prost(string, optional, tag = "1")]
    pub session: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub text: Option<String>,
    #[prost(bool, optional, tag = "3")]
    pub suppress_broadcast: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SendTextResponse {
    #[prost(enumeration = "send_text_response::Status", optional, tag = "1")]
    pub status: Option<i32>,
}

pub mod send_text_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        SessionNotFound = 1,
    }
}

// ---------------------------------------------------------------- buffer

#[derive(Clone, PartialEq, Message)]
pub struct GetBufferRequest {
    #[prost(string, optional, tag = "1")]
    pub session: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub line_range: Option<LineRange>,
    #[prost(bool, optional, tag = "3")]
    pub include_styles: Option<bool>,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct LineRange {
    #[prost(bool, optional, tag = "1")]
    pub screen_contents_only: Option<bool>,
    #[prost(int32, optional, tag = "2")]
    pub trailing_lines: Option<i32>,
    #[prost(message, optional, tag = "3")]
    pub windowed_coord_range: Option<WindowedCoordRange>,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct WindowedCoordRange {
    #[prost(message, optional, tag = "1")]
    pub coord_range: Option<CoordRange>,
    #[prost(message, optional, tag = "2")]
    pub columns: Option<Range>,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct CoordRange {
    #[prost(message, optional, tag = "1")]
    pub start: Option<Coord>,
    #[prost(message, optional, tag = "2")]
    pub end: Option<Coord>,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct Coord {
    #[prost(int32, optional, tag = "1")]
    pub x: Option<i32>,
    #[prost(int64, optional, tag = "2")]
    pub y: Option<i64>,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct Range {
    #[prost(int64, optional, tag = "1")]
    pub location: Option<i64>,
    #[prost(int64, optional, tag = "2")]
    pub length: Option<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetBufferResponse {
    #[prost(
        enumeration = "get_buffer_response::Status",
        optional,
        tag = "1",
        default = "Ok"
    )]
    pub status: Option<i32>,
    #[prost(message, optional, tag = "2")]
    pub range: Option<Range>,
    #[prost(message, repeated, tag = "3")]
    pub contents: Vec<LineContents>,
    #[prost(message, optional, tag = "4")]
    pub cursor: Option<Coord>,
    #[prost(int64, optional, tag = "5")]
    pub num_lines_above_screen: Option<i64>,
    #[prost(message, optional, tag = "6")]
    pub windowed_coord_range: Option<WindowedCoordRange>,
}

pub mod get_buffer_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        SessionNotFound = 1,
        InvalidLineRange = 2,
        RequestMalformed = 3,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct LineContents {
    #[prost(string, optional, tag = "1")]
    pub text: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub code_points_per_cell: Vec<CodePointsPerCell>,
    #[prost(
        enumeration = "line_contents::Continuation",
        optional,
        tag = "3",
        default = "ContinuationHardEol"
    )]
    pub continuation: Option<i32>,
}

pub mod line_contents {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Continuation {
        ContinuationHardEol = 1,
        ContinuationSoftEol = 2,
    }
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct CodePointsPerCell {
    #[prost(int32, optional, tag = "1", default = "1")]
    pub num_code_points: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub repeats: Option<i32>,
}

// ---------------------------------------------------------------- prompts

#[derive(Clone, PartialEq, Message)]
pub struct GetPromptRequest {
    #[prost(string, optional, tag = "1")]
    pub session: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub unique_prompt_id: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetPromptResponse {
    #[prost(
        enumeration = "get_prompt_response::Status",
        optional,
        tag = "1",
        default = "Ok"
    )]
    pub status: Option<i32>,
    #[prost(message, optional, tag = "2")]
    pub prompt_range: Option<CoordRange>,
    #[prost(message, optional, tag = "3")]
    pub command_range: Option<CoordRange>,
    #[prost(message, optional, tag = "4")]
    pub output_range: Option<CoordRange>,
    #[prost(string, optional, tag = "5")]
    pub working_directory: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub command: Option<String>,
    #[prost(enumeration = "get_prompt_response::State", optional, tag = "7")]
    pub prompt_state: Option<i32>,
    #[prost(uint32, optional, tag = "9")]
    pub exit_status: Option<u32>,
    #[prost(string, optional, tag = "10")]
    pub unique_prompt_id: Option<String>,
}

pub mod get_prompt_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        SessionNotFound = 1,
        RequestMalformed = 2,
        PromptUnavailable = 3,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum State {
        Editing = 0,
        Running = 1,
        Finished = 2,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct ListPromptsRequest {
    #[prost(string, optional, tag = "1")]
    pub session: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub first_unique_id: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub last_unique_id: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ListPromptsResponse {
    #[prost(
        enumeration = "list_prompts_response::Status",
        optional,
        tag = "1",
        default = "Ok"
    )]
    pub status: Option<i32>,
    #[prost(string, repeated, tag = "2")]
    pub unique_prompt_id: Vec<String>,
}

pub mod list_prompts_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        SessionNotFound = 1,
    }
}

// ---------------------------------------------------------------- notifications

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
#[repr(i32)]
pub enum NotificationType {
    NotifyOnKeystroke = 1,
    NotifyOnScreenUpdate = 2,
    NotifyOnPrompt = 3,
    NotifyOnLocationChange = 4,
    NotifyOnCustomEscapeSequence = 5,
    NotifyOnNewSession = 6,
    NotifyOnTerminateSession = 7,
    NotifyOnLayoutChange = 8,
    NotifyOnFocusChange = 9,
    NotifyOnServerOriginatedRpc = 10,
    NotifyOnBroadcastChange = 11,
    NotifyOnVariableChange = 12,
    NotifyOnProfileChange = 13,
    KeystrokeFilter = 14,
}

#[derive(Clone, PartialEq, Message)]
pub struct NotificationRequest {
    #[prost(string, optional, tag = "1")]
    pub session: Option<String>,
    #[prost(bool, optional, tag = "2")]
    pub subscribe: Option<bool>,
    #[prost(enumeration = "NotificationType", optional, tag = "3")]
    pub notification_type: Option<i32>,
    #[prost(oneof = "notification_request::Arguments", tags = "6, 9")]
    pub arguments: Option<notification_request::Arguments>,
}

pub mod notification_request {
    use super::*;

    #[derive(Clone, PartialEq, Oneof)]
    pub enum Arguments {
        #[prost(message, tag = "6")]
        VariableMonitorRequest(VariableMonitorRequest),
        #[prost(message, tag = "9")]
        PromptMonitorRequest(PromptMonitorRequest),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct PromptMonitorRequest {
    #[prost(
        enumeration = "PromptMonitorMode",
        repeated,
        packed = "false",
        tag = "1"
    )]
    pub modes: Vec<i32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
#[repr(i32)]
pub enum PromptMonitorMode {
    Prompt = 1,
    CommandStart = 2,
    CommandEnd = 3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
#[repr(i32)]
pub enum VariableScope {
    Session = 1,
    Tab = 2,
    Window = 3,
    App = 4,
}

#[derive(Clone, PartialEq, Message)]
pub struct VariableMonitorRequest {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(enumeration = "VariableScope", optional, tag = "2")]
    pub scope: Option<i32>,
    #[prost(string, optional, tag = "3")]
    pub identifier: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NotificationResponse {
    #[prost(enumeration = "notification_response::Status", optional, tag = "1")]
    pub status: Option<i32>,
}

pub mod notification_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        SessionNotFound = 1,
        RequestMalformed = 2,
        NotSubscribed = 3,
        AlreadySubscribed = 4,
        DuplicateServerOriginatedRpc = 5,
        InvalidIdentifier = 6,
    }
}

/// Not a oneof: separate optional fields, one set in practice.
#[derive(Clone, PartialEq, Message)]
pub struct Notification {
    #[prost(message, optional, tag = "2")]
    pub screen_update_notification: Option<ScreenUpdateNotification>,
    #[prost(message, optional, tag = "3")]
    pub prompt_notification: Option<PromptNotification>,
    #[prost(message, optional, tag = "6")]
    pub new_session_notification: Option<NewSessionNotification>,
    #[prost(message, optional, tag = "7")]
    pub terminate_session_notification: Option<TerminateSessionNotification>,
    #[prost(message, optional, tag = "8")]
    pub layout_changed_notification: Option<LayoutChangedNotification>,
    #[prost(message, optional, tag = "9")]
    pub focus_changed_notification: Option<FocusChangedNotification>,
    #[prost(message, optional, tag = "11")]
    pub broadcast_domains_changed: Option<BroadcastDomainsChangedNotification>,
    #[prost(message, optional, tag = "12")]
    pub variable_changed_notification: Option<VariableChangedNotification>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ScreenUpdateNotification {
    #[prost(string, optional, tag = "1")]
    pub session: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct PromptNotification {
    #[prost(string, optional, tag = "1")]
    pub session: Option<String>,
    #[prost(oneof = "prompt_notification::Event", tags = "2, 3, 4")]
    pub event: Option<prompt_notification::Event>,
    #[prost(string, optional, tag = "5")]
    pub unique_prompt_id: Option<String>,
}

pub mod prompt_notification {
    use super::*;

    #[derive(Clone, PartialEq, Oneof)]
    pub enum Event {
        #[prost(message, tag = "2")]
        Prompt(PromptNotificationPrompt),
        #[prost(message, tag = "3")]
        CommandStart(PromptNotificationCommandStart),
        #[prost(message, tag = "4")]
        CommandEnd(PromptNotificationCommandEnd),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct PromptNotificationPrompt {
    #[prost(string, optional, tag = "1")]
    pub placeholder: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub prompt: Option<GetPromptResponse>,
}

#[derive(Clone, PartialEq, Message)]
pub struct PromptNotificationCommandStart {
    #[prost(string, optional, tag = "1")]
    pub command: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct PromptNotificationCommandEnd {
    #[prost(int32, optional, tag = "1")]
    pub status: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NewSessionNotification {
    #[prost(string, optional, tag = "1")]
    pub session_id: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TerminateSessionNotification {
    #[prost(string, optional, tag = "1")]
    pub session_id: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct LayoutChangedNotification {
    #[prost(message, optional, tag = "1")]
    pub list_sessions_response: Option<ListSessionsResponse>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FocusChangedNotification {
    #[prost(oneof = "focus_changed_notification::Event", tags = "1, 2, 3, 4")]
    pub event: Option<focus_changed_notification::Event>,
}

pub mod focus_changed_notification {
    use super::*;

    #[derive(Clone, PartialEq, Oneof)]
    pub enum Event {
        #[prost(bool, tag = "1")]
        ApplicationActive(bool),
        #[prost(message, tag = "2")]
        Window(Window),
        #[prost(string, tag = "3")]
        SelectedTab(String),
        #[prost(string, tag = "4")]
        Session(String),
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Window {
        #[prost(enumeration = "window::WindowStatus", optional, tag = "1")]
        pub window_status: Option<i32>,
        #[prost(string, optional, tag = "2")]
        pub window_id: Option<String>,
    }

    pub mod window {
        use super::super::*;

        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
        #[repr(i32)]
        pub enum WindowStatus {
            TerminalWindowBecameKey = 0,
            TerminalWindowIsCurrent = 1,
            TerminalWindowResignedKey = 2,
        }
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct BroadcastDomainsChangedNotification {
    #[prost(message, repeated, tag = "1")]
    pub broadcast_domains: Vec<BroadcastDomain>,
}

#[derive(Clone, PartialEq, Message)]
pub struct VariableChangedNotification {
    #[prost(enumeration = "VariableScope", optional, tag = "1")]
    pub scope: Option<i32>,
    #[prost(string, optional, tag = "2")]
    pub identifier: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub json_new_value: Option<String>,
}

// ---------------------------------------------------------------- profile, focus, close…

#[derive(Clone, PartialEq, Message)]
pub struct SetProfilePropertyRequest {
    #[prost(oneof = "set_profile_property_request::Target", tags = "1, 2")]
    pub target: Option<set_profile_property_request::Target>,
    #[prost(string, optional, tag = "3")]
    pub key: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub json_value: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub assignments: Vec<set_profile_property_request::Assignment>,
}

pub mod set_profile_property_request {
    use super::*;

    #[derive(Clone, PartialEq, Oneof)]
    pub enum Target {
        #[prost(string, tag = "1")]
        Session(String),
        #[prost(message, tag = "2")]
        GuidList(GuidList),
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct GuidList {
        #[prost(string, repeated, tag = "1")]
        pub guids: Vec<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Assignment {
        #[prost(string, optional, tag = "1")]
        pub key: Option<String>,
        #[prost(string, optional, tag = "2")]
        pub json_value: Option<String>,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct SetProfilePropertyResponse {
    #[prost(
        enumeration = "set_profile_property_response::Status",
        optional,
        tag = "1",
        default = "Ok"
    )]
    pub status: Option<i32>,
}

pub mod set_profile_property_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        SessionNotFound = 1,
        RequestMalformed = 2,
        BadGuid = 3,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct GetProfilePropertyRequest {
    #[prost(string, optional, tag = "1")]
    pub session: Option<String>,
    #[prost(string, repeated, tag = "2")]
    pub keys: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetProfilePropertyResponse {
    #[prost(
        enumeration = "get_profile_property_response::Status",
        optional,
        tag = "1",
        default = "Ok"
    )]
    pub status: Option<i32>,
    #[prost(message, repeated, tag = "3")]
    pub properties: Vec<ProfileProperty>,
}

pub mod get_profile_property_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        SessionNotFound = 1,
        RequestMalformed = 2,
        Error = 3,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct ListProfilesRequest {
    #[prost(string, repeated, tag = "1")]
    pub properties: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub guids: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ListProfilesResponse {
    #[prost(message, repeated, tag = "1")]
    pub profiles: Vec<list_profiles_response::Profile>,
}

pub mod list_profiles_response {
    use super::*;

    #[derive(Clone, PartialEq, Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub properties: Vec<ProfileProperty>,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct ActivateRequest {
    #[prost(oneof = "activate_request::Identifier", tags = "1, 2, 3")]
    pub identifier: Option<activate_request::Identifier>,
    #[prost(bool, optional, tag = "4")]
    pub order_window_front: Option<bool>,
    #[prost(bool, optional, tag = "5")]
    pub select_tab: Option<bool>,
    #[prost(bool, optional, tag = "6")]
    pub select_session: Option<bool>,
    #[prost(message, optional, tag = "7")]
    pub activate_app: Option<activate_request::App>,
}

pub mod activate_request {
    use super::*;

    #[derive(Clone, PartialEq, Oneof)]
    pub enum Identifier {
        #[prost(string, tag = "1")]
        WindowId(String),
        #[prost(string, tag = "2")]
        TabId(String),
        #[prost(string, tag = "3")]
        SessionId(String),
    }

    #[derive(Clone, Copy, PartialEq, Message)]
    pub struct App {
        #[prost(bool, optional, tag = "1")]
        pub raise_all_windows: Option<bool>,
        #[prost(bool, optional, tag = "2")]
        pub ignoring_other_apps: Option<bool>,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct ActivateResponse {
    #[prost(enumeration = "activate_response::Status", optional, tag = "1")]
    pub status: Option<i32>,
}

pub mod activate_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        BadIdentifier = 1,
        InvalidOption = 2,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct CloseRequest {
    #[prost(oneof = "close_request::Target", tags = "1, 2, 3")]
    pub target: Option<close_request::Target>,
    #[prost(bool, optional, tag = "4")]
    pub force: Option<bool>,
}

pub mod close_request {
    use super::*;

    #[derive(Clone, PartialEq, Oneof)]
    pub enum Target {
        #[prost(message, tag = "1")]
        Tabs(CloseTabs),
        #[prost(message, tag = "2")]
        Sessions(CloseSessions),
        #[prost(message, tag = "3")]
        Windows(CloseWindows),
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct CloseTabs {
        #[prost(string, repeated, tag = "1")]
        pub tab_ids: Vec<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct CloseSessions {
        #[prost(string, repeated, tag = "1")]
        pub session_ids: Vec<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct CloseWindows {
        #[prost(string, repeated, tag = "1")]
        pub window_ids: Vec<String>,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct CloseResponse {
    #[prost(
        enumeration = "close_response::Status",
        repeated,
        packed = "false",
        tag = "1"
    )]
    pub statuses: Vec<i32>,
}

pub mod close_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        NotFound = 1,
        UserDeclined = 2,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct VariableRequest {
    #[prost(oneof = "variable_request::Scope", tags = "1, 4, 5, 6")]
    pub scope: Option<variable_request::Scope>,
    #[prost(message, repeated, tag = "2")]
    pub set: Vec<variable_request::Set>,
    #[prost(string, repeated, tag = "3")]
    pub get: Vec<String>,
}

pub mod variable_request {
    use super::*;

    #[derive(Clone, PartialEq, Oneof)]
    pub enum Scope {
        #[prost(string, tag = "1")]
        SessionId(String),
        #[prost(string, tag = "4")]
        TabId(String),
        #[prost(bool, tag = "5")]
        App(bool),
        #[prost(string, tag = "6")]
        WindowId(String),
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Set {
        #[prost(string, optional, tag = "1")]
        pub name: Option<String>,
        #[prost(string, optional, tag = "2")]
        pub value: Option<String>,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct VariableResponse {
    #[prost(enumeration = "variable_response::Status", optional, tag = "1")]
    pub status: Option<i32>,
    #[prost(string, repeated, tag = "2")]
    pub values: Vec<String>,
}

pub mod variable_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        SessionNotFound = 1,
        InvalidName = 2,
        MissingScope = 3,
        TabNotFound = 4,
        MultiGetDisallowed = 5,
        WindowNotFound = 6,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct InjectRequest {
    #[prost(string, repeated, tag = "1")]
    pub session_id: Vec<String>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub data: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct InjectResponse {
    #[prost(
        enumeration = "inject_response::Status",
        repeated,
        packed = "false",
        tag = "1"
    )]
    pub status: Vec<i32>,
}

pub mod inject_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        SessionNotFound = 1,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct GetPropertyRequest {
    #[prost(oneof = "get_property_request::Identifier", tags = "1, 3")]
    pub identifier: Option<get_property_request::Identifier>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

pub mod get_property_request {
    use super::*;

    #[derive(Clone, PartialEq, Oneof)]
    pub enum Identifier {
        #[prost(string, tag = "1")]
        WindowId(String),
        #[prost(string, tag = "3")]
        SessionId(String),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct GetPropertyResponse {
    #[prost(enumeration = "get_property_response::Status", optional, tag = "1")]
    pub status: Option<i32>,
    #[prost(string, optional, tag = "2")]
    pub json_value: Option<String>,
}

pub mod get_property_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        UnrecognizedName = 1,
        InvalidTarget = 2,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct SetPropertyRequest {
    #[prost(oneof = "set_property_request::Identifier", tags = "1, 5")]
    pub identifier: Option<set_property_request::Identifier>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub json_value: Option<String>,
}

pub mod set_property_request {
    use super::*;

    #[derive(Clone, PartialEq, Oneof)]
    pub enum Identifier {
        #[prost(string, tag = "1")]
        WindowId(String),
        #[prost(string, tag = "5")]
        SessionId(String),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct SetPropertyResponse {
    #[prost(enumeration = "set_property_response::Status", optional, tag = "1")]
    pub status: Option<i32>,
}

pub mod set_property_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        UnrecognizedName = 1,
        InvalidValue = 2,
        InvalidTarget = 3,
        Deferred = 4,
        Impossible = 5,
        Failed = 6,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct RestartSessionRequest {
    #[prost(string, optional, tag = "1")]
    pub session_id: Option<String>,
    #[prost(bool, optional, tag = "2")]
    pub only_if_exited: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
pub struct RestartSessionResponse {
    #[prost(enumeration = "restart_session_response::Status", optional, tag = "1")]
    pub status: Option<i32>,
}

pub mod restart_session_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        SessionNotFound = 1,
        SessionNotRestartable = 2,
    }
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct TransactionRequest {
    #[prost(bool, optional, tag = "1")]
    pub begin: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TransactionResponse {
    #[prost(
        enumeration = "transaction_response::Status",
        optional,
        tag = "1",
        default = "Ok"
    )]
    pub status: Option<i32>,
}

pub mod transaction_response {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Ok = 0,
        NoTransaction = 1,
        AlreadyInTransaction = 2,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct FocusRequest {}

#[derive(Clone, PartialEq, Message)]
pub struct FocusResponse {
    #[prost(message, repeated, tag = "1")]
    pub notifications: Vec<FocusChangedNotification>,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetBroadcastDomainsRequest {}

#[derive(Clone, PartialEq, Message)]
pub struct GetBroadcastDomainsResponse {
    #[prost(message, repeated, tag = "1")]
    pub broadcast_domains: Vec<BroadcastDomain>,
}

#[derive(Clone, PartialEq, Message)]
pub struct BroadcastDomain {
    #[prost(string, repeated, tag = "1")]
    pub session_ids: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct InvokeFunctionRequest {
    #[prost(oneof = "invoke_function_request::Context", tags = "1, 2, 3, 4, 7")]
    pub context: Option<invoke_function_request::Context>,
    #[prost(string, optional, tag = "5")]
    pub invocation: Option<String>,
    #[prost(double, optional, tag = "6", default = "-1")]
    pub timeout: Option<f64>,
}

pub mod invoke_function_request {
    use super::*;

    #[derive(Clone, PartialEq, Oneof)]
    pub enum Context {
        #[prost(message, tag = "1")]
        Tab(Tab),
        #[prost(message, tag = "2")]
        Session(Session),
        #[prost(message, tag = "3")]
        Window(Window),
        #[prost(message, tag = "4")]
        App(App),
        #[prost(message, tag = "7")]
        Method(Method),
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Tab {
        #[prost(string, optional, tag = "1")]
        pub tab_id: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Session {
        #[prost(string, optional, tag = "1")]
        pub session_id: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Window {
        #[prost(string, optional, tag = "1")]
        pub window_id: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct App {}

    #[derive(Clone, PartialEq, Message)]
    pub struct Method {
        #[prost(string, optional, tag = "1")]
        pub receiver: Option<String>,
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct InvokeFunctionResponse {
    #[prost(oneof = "invoke_function_response::Disposition", tags = "1, 2")]
    pub disposition: Option<invoke_function_response::Disposition>,
}

pub mod invoke_function_response {
    use super::*;

    #[derive(Clone, PartialEq, Oneof)]
    pub enum Disposition {
        #[prost(message, tag = "1")]
        Error(Error),
        #[prost(message, tag = "2")]
        Success(Success),
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
    #[repr(i32)]
    pub enum Status {
        Timeout = 1,
        Failed = 2,
        RequestMalformed = 3,
        InvalidId = 4,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Error {
        #[prost(enumeration = "Status", optional, tag = "1")]
        pub status: Option<i32>,
        #[prost(string, optional, tag = "2")]
        pub error_reason: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Success {
        #[prost(string, optional, tag = "1")]
        pub json_result: Option<String>,
    }
}
