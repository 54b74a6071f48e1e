//! From the engine's types to the API's messages, and from engine errors to gRPC
//! statuses: the message is the engine's own (what MCP says too), the code tells a
//! program what kind of failure it was.

use cohort_backends::{BackendError, PaneInfo};
use tonic::{Code, Status};

use super::proto;
use cohort_orchestration::waits::Met;
use cohort_terminal::targets::Delivery;
use cohort_terminal::{
    completion::Verdict,
    events::EngineEvent,
    layout::{Child, Direction, SplitTree, MAX_PANES},
    registry::{AgentRecord, LockRecord, RegistryError, TeamRecord},
    request::{ReadAnswer, ReadRequest, RunAnswer, RunRequest, WaitArgs},
    sessions::session_name,
    TerminalError,
};

/// The status for an engine error.
pub fn status(e: TerminalError) -> Status {
    let code = match &e {
        TerminalError::UnknownTarget { .. } => Code::NotFound,
        TerminalError::NameTaken { .. } => Code::AlreadyExists,
        TerminalError::InvalidName { .. } | TerminalError::InvalidArgument(_) => {
            Code::InvalidArgument
        }
        TerminalError::Refused(_) | TerminalError::Locked(_) | TerminalError::NotAdopted { .. } => {
            Code::PermissionDenied
        }
        TerminalError::Busy { .. } => Code::Unavailable,
        TerminalError::Exited { .. } => Code::FailedPrecondition,
        TerminalError::Registry(RegistryError::NotFound(_)) => Code::NotFound,
        TerminalError::Registry(RegistryError::NotHolder(_)) => Code::PermissionDenied,
        TerminalError::Registry(RegistryError::Conflict(_)) => Code::FailedPrecondition,
        TerminalError::Registry(_) | TerminalError::Internal(_) => Code::Internal,
        TerminalError::Backend(BackendError::PaneGone(_)) => Code::NotFound,
        TerminalError::Backend(BackendError::InvalidKey { .. })
        | TerminalError::Backend(BackendError::InvalidArgument(_)) => Code::InvalidArgument,
        TerminalError::Backend(BackendError::Unsupported { .. }) => Code::Unimplemented,
        TerminalError::Backend(_) => Code::Unavailable,
    };
    Status::new(code, crate::bounded::error_text(&e.to_string()))
}

/// A workers' error as a gRPC status: an unknown worker is not found, a worker
/// in no state for what was asked (no dialog to answer) a failed precondition.
pub fn worker_status(e: cohort_workers::WorkerError) -> Status {
    use cohort_workers::WorkerError;
    let e = match e {
        WorkerError::Terminal(e) => return status(e),
        other => other,
    };
    let code = match &e {
        WorkerError::Unknown { .. } => Code::NotFound,
        WorkerError::Invalid(_) | WorkerError::NotReady { .. } => Code::FailedPrecondition,
        _ => Code::Internal,
    };
    Status::new(code, crate::bounded::error_text(&e.to_string()))
}

/// A bad argument caught before the engine was asked.
pub fn invalid(message: impl Into<String>) -> Status {
    Status::invalid_argument(crate::bounded::error_text(&message.into()))
}

/// A layout's split tree from its message. The engine checks the shape (pane
/// indexes, sizes); this reads what the message says, and stops at a tree bigger
/// than any window can hold before building it.
pub fn split_tree(tree: proto::SplitTree) -> Result<SplitTree, Status> {
    // A tree of MAX_PANES leaves whose splits have two children or more has fewer
    // than twice as many nodes.
    let mut nodes_left = 2 * MAX_PANES;
    split_node(tree, &mut nodes_left)
}

fn split_node(tree: proto::SplitTree, nodes_left: &mut usize) -> Result<SplitTree, Status> {
    *nodes_left = nodes_left.checked_sub(1).ok_or_else(|| {
        invalid(format!(
            "the split tree is too big: a window holds at most {MAX_PANES} panes"
        ))
    })?;
    match tree.node {
        Some(proto::split_tree::Node::Pane(pane)) => Ok(SplitTree::Pane {
            pane: pane as usize,
        }),
        Some(proto::split_tree::Node::Split(split)) => {
            let direction = match split.direction.as_str() {
                "horizontal" => Direction::Horizontal,
                "vertical" => Direction::Vertical,
                other => {
                    return Err(invalid(format!(
                        "split direction {other:?} is not one: use \"horizontal\" (side by side) or \"vertical\" (stacked)"
                    )))
                }
            };
            let children = split
                .children
                .into_iter()
                .map(|child| {
                    let size = child
                        .size
                        .map(|size| {
                            u8::try_from(size).map_err(|_| {
                                invalid(format!("a child's size {size} is out of range: give a percentage from 1 to 99"))
                            })
                        })
                        .transpose()?;
                    let tree = child.tree.ok_or_else(|| {
                        invalid("a split's child has no tree: give it a pane or a split")
                    })?;
                    Ok(Child {
                        tree: split_node(tree, nodes_left)?,
                        size,
                    })
                })
                .collect::<Result<_, Status>>()?;
            Ok(SplitTree::Split {
                split: direction,
                children,
            })
        }
        None => Err(invalid(
            "a split tree node is empty: give it a pane or a split",
        )),
    }
}

impl From<&PaneInfo> for proto::Session {
    fn from(p: &PaneInfo) -> Self {
        proto::Session {
            name: session_name(p),
            id: p.identity.as_ref().map(|i| i.id.clone()),
            pane: p.id.to_string(),
            command: p.command.clone(),
            exited: p.dead,
            agent: p.identity.as_ref().and_then(|i| i.agent.clone()),
        }
    }
}

impl From<&PaneInfo> for proto::Done {
    fn from(p: &PaneInfo) -> Self {
        proto::Done {
            session: session_name(p),
            pane: p.id.to_string(),
            also: Vec::new(),
            missed: Vec::new(),
        }
    }
}

impl proto::Done {
    /// The answer for input typed into `p` and echoed to its broadcast group.
    pub(crate) fn echoed(p: &PaneInfo, echoed: cohort_terminal::broadcast::Echoed) -> Self {
        proto::Done {
            also: echoed.reached,
            missed: echoed.missed,
            ..proto::Done::from(p)
        }
    }
}

impl From<proto::Wait> for WaitArgs {
    fn from(wait: proto::Wait) -> WaitArgs {
        WaitArgs {
            until: wait.until,
            regex: wait.regex,
            timeout_ms: wait.timeout_ms,
            quiet_ms: wait.quiet_ms,
        }
    }
}

/// The run a request asks for (its `owner` goes to the caller).
impl From<proto::RunRequest> for RunRequest {
    fn from(args: proto::RunRequest) -> RunRequest {
        RunRequest {
            target: args.target,
            command: args.command,
            wait: args.wait.map(WaitArgs::from).unwrap_or_default(),
            force: args.force,
            mark: args.mark,
            raw: args.raw,
        }
    }
}

impl From<proto::ReadRequest> for ReadRequest {
    fn from(args: proto::ReadRequest) -> ReadRequest {
        ReadRequest {
            target: args.target,
            mode: args.mode,
            lines: args.lines,
            tail: args.tail,
            raw: args.raw,
            wait: args.wait.map(WaitArgs::from),
        }
    }
}

impl From<RunAnswer> for proto::RunReply {
    fn from(answer: RunAnswer) -> Self {
        proto::RunReply {
            session: answer.session,
            output: answer.output.text,
            meta: answer.output.meta,
            verdict: Some(proto::Verdict::from(&answer.verdict)),
        }
    }
}

impl From<ReadAnswer> for proto::ReadReply {
    fn from(answer: ReadAnswer) -> Self {
        proto::ReadReply {
            session: answer.session,
            output: answer.output.text,
            meta: answer.output.meta,
            verdict: answer.verdict.as_ref().map(proto::Verdict::from),
        }
    }
}

impl From<&Verdict> for proto::Verdict {
    fn from(v: &Verdict) -> Self {
        proto::Verdict {
            complete: v.complete,
            layer: v.layer.as_str().to_string(),
            exit_status: v.exit_status,
            elapsed_ms: v.elapsed.as_millis() as u64,
            hint: v.hint.clone(),
        }
    }
}

impl From<AgentRecord> for proto::Agent {
    fn from(a: AgentRecord) -> Self {
        proto::Agent {
            name: a.name,
            session: a.session,
            role: a.role,
            teams: a.teams,
        }
    }
}

impl From<TeamRecord> for proto::Team {
    fn from(t: TeamRecord) -> Self {
        proto::Team {
            name: t.name,
            parent: t.parent,
            members: t.members,
        }
    }
}

impl From<LockRecord> for proto::LockHolder {
    fn from(l: LockRecord) -> Self {
        proto::LockHolder {
            session: l.session,
            owner: l.owner,
            since: l.since,
        }
    }
}

impl From<Delivery> for proto::Delivery {
    fn from(d: Delivery) -> Self {
        proto::Delivery {
            target: d.target,
            session: d.session,
            ok: d.error.is_none(),
            error: d.error,
            text: d.text,
            meta: d.meta,
        }
    }
}

impl From<Met> for proto::Met {
    fn from(m: Met) -> Self {
        proto::Met {
            target: m.target,
            session: m.session,
            met: m.met,
            what: m.what,
            line: m.line,
            exit_status: m.exit_status,
            after_ms: m.after_ms,
        }
    }
}

impl From<EngineEvent> for proto::Event {
    fn from(e: EngineEvent) -> Self {
        use proto::event::Kind;
        let kind = match e {
            EngineEvent::Output { pane, from, to } => Kind::Output(proto::OutputEvent {
                pane: pane.to_string(),
                from,
                to,
            }),
            EngineEvent::CommandStarted { pane, offset } => {
                Kind::CommandStarted(proto::CommandStarted {
                    pane: pane.to_string(),
                    offset,
                })
            }
            EngineEvent::CommandEnded {
                pane,
                exit_status,
                offset,
            } => Kind::CommandEnded(proto::CommandEnded {
                pane: pane.to_string(),
                exit_status,
                offset,
            }),
            EngineEvent::PaneExited { pane, exit_status } => Kind::PaneExited(proto::PaneExited {
                pane: pane.to_string(),
                exit_status,
            }),
            EngineEvent::SessionOpened { session, pane } => {
                Kind::SessionOpened(proto::SessionOpened {
                    session,
                    pane: pane.to_string(),
                })
            }
            EngineEvent::SessionClosed { session, pane } => {
                Kind::SessionClosed(proto::SessionClosed {
                    session,
                    pane: pane.to_string(),
                })
            }
            EngineEvent::Notification {
                to,
                from,
                kind,
                message,
            } => Kind::Notification(proto::Notification {
                to,
                from,
                kind,
                message,
            }),
            EngineEvent::LockChanged { session, holder } => {
                Kind::LockChanged(proto::LockChanged { session, holder })
            }
            EngineEvent::RecordingChanged {
                session,
                pane,
                path,
            } => Kind::RecordingChanged(proto::RecordingChanged {
                session,
                pane: pane.to_string(),
                path,
            }),
            EngineEvent::AppearanceChanged { session, pane } => {
                Kind::AppearanceChanged(proto::AppearanceChanged {
                    session,
                    pane: pane.to_string(),
                })
            }
            EngineEvent::Signal { pane, payload } => Kind::Signal(proto::Signal {
                pane: pane.to_string(),
                payload,
            }),
            EngineEvent::Focused { pane } => Kind::Focused(proto::Focused {
                pane: pane.to_string(),
            }),
            EngineEvent::LayoutChanged { window } => {
                Kind::LayoutChanged(proto::LayoutChanged { window })
            }
            EngineEvent::OutsidePaneOpened { pane, window } => {
                Kind::OutsidePane(proto::OutsidePane {
                    pane: pane.to_string(),
                    window,
                    opened: true,
                })
            }
            EngineEvent::OutsidePaneClosed { pane, window } => {
                Kind::OutsidePane(proto::OutsidePane {
                    pane: pane.to_string(),
                    window,
                    opened: false,
                })
            }
            EngineEvent::AgentState {
                agent,
                state,
                reason,
                ..
            } => Kind::AgentState(proto::AgentState {
                agent,
                state,
                reason,
            }),
        };
        proto::Event { kind: Some(kind) }
    }
}
