//! Text in and out of sessions: SendText and Inject write, GetBuffer reads lines by
//! absolute number, GetPrompt and ListPrompts describe the shell-integration marks.

use cohort_backends::iterm2::proto::*;

use crate::session::{Feed, Session};
use crate::term::{AbsCoord, PromptRecord};
use crate::{lock, State};

use super::targets;

pub(crate) fn coord(c: AbsCoord) -> Coord {
    Coord {
        x: Some(c.x),
        y: Some(c.y),
    }
}

pub(crate) fn range(start: AbsCoord, end: AbsCoord) -> CoordRange {
    CoordRange {
        start: Some(coord(start)),
        end: Some(coord(end)),
    }
}

pub(crate) fn prompt_response(
    p: &PromptRecord,
    cursor: AbsCoord,
    session: &Session,
) -> GetPromptResponse {
    let prompt_end = p.prompt_end.unwrap_or(cursor);
    let state = if p.exit_status.is_some() {
        get_prompt_response::State::Finished
    } else if p.output_start.is_some() {
        get_prompt_response::State::Running
    } else {
        get_prompt_response::State::Editing
    };
    GetPromptResponse {
        status: Some(0),
        prompt_range: Some(range(p.prompt_start, prompt_end)),
        command_range: Some(range(prompt_end, p.output_start.unwrap_or(cursor))),
        output_range: Some(range(
            p.output_start.unwrap_or(cursor),
            p.output_end.unwrap_or(cursor),
        )),
        working_directory: session.cwd(),
        command: p.command.clone(),
        prompt_state: Some(state as i32),
        exit_status: p.exit_status.map(|s| s as u32),
        unique_prompt_id: Some(p.id.clone()),
    }
}

pub(crate) fn send_text(state: &State, r: SendTextRequest) -> SendTextResponse {
    let sessions = targets(state, r.session.as_deref().unwrap_or(""));
    let text = r.text.unwrap_or_default();
    let mut ok = !sessions.is_empty();
    for s in &sessions {
        // A session whose program ended takes no input (iTerm2: SESSION_NOT_FOUND).
        if s.is_closed() || s.exited() || s.write(text.as_bytes()).is_err() {
            ok = false;
        }
    }
    // Unless suppressed, the text also reaches the rest of the target's broadcast
    // domain, as typing would (`PTYSession.writeTask:`).
    if ok && !r.suppress_broadcast.unwrap_or(false) && r.session.as_deref() != Some("all") {
        if let Some(target) = sessions.first() {
            for other in super::broadcast_to(state, &target.id) {
                if other == target.id {
                    continue;
                }
                let session = lock(&state.world).session(&other);
                if let Some(s) = session.filter(|s| !s.is_closed() && !s.exited()) {
                    let _ = s.write(text.as_bytes());
                }
            }
        }
    }
    SendTextResponse {
        status: Some(if ok {
            send_text_response::Status::Ok as i32
        } else {
            send_text_response::Status::SessionNotFound as i32
        }),
    }
}

pub(crate) fn get_buffer(state: &State, r: GetBufferRequest) -> Option<GetBufferResponse> {
    let Some(session) = lock(&state.world).session(r.session.as_deref().unwrap_or("")) else {
        return Some(GetBufferResponse {
            status: Some(get_buffer_response::Status::SessionNotFound as i32),
            ..Default::default()
        });
    };
    let mut term = lock(&session.term);
    let line_range = r.line_range.unwrap_or_default();
    let first_screen = term.first_screen_line();
    let end_line = term.end_line();
    let (start, end) = if let Some(w) = line_range.windowed_coord_range {
        let c = w.coord_range?;
        let (s, e) = (c.start?, c.end?);
        let (y0, y1) = (s.y.unwrap_or(0), e.y.unwrap_or(0));
        if y1 < y0 || y0 < 0 {
            return None;
        }
        (y0, if e.x.unwrap_or(0) > 0 { y1 + 1 } else { y1 })
    } else {
        // Exactly one of the two must be present; otherwise the reply is empty.
        match (line_range.screen_contents_only, line_range.trailing_lines) {
            (Some(_), None) => (first_screen, end_line),
            (None, Some(n)) => {
                let n = (n.max(0) as i64).min(1_000_000);
                (end_line - n, end_line)
            }
            _ => return None,
        }
    };
    let (first, lines) = term.lines(start, end);
    let cursor = term.cursor();
    let count = lines.len() as i64;
    Some(GetBufferResponse {
        status: Some(0),
        contents: lines
            .into_iter()
            .map(|l| LineContents {
                text: Some(l.text),
                code_points_per_cell: l
                    .cells
                    .into_iter()
                    .map(|(points, repeats)| CodePointsPerCell {
                        num_code_points: Some(points),
                        repeats: Some(repeats),
                    })
                    .collect(),
                continuation: Some(if l.soft_wrap {
                    line_contents::Continuation::ContinuationSoftEol as i32
                } else {
                    line_contents::Continuation::ContinuationHardEol as i32
                }),
            })
            .collect(),
        cursor: Some(coord(cursor)),
        windowed_coord_range: Some(WindowedCoordRange {
            coord_range: Some(CoordRange {
                start: Some(Coord {
                    x: Some(0),
                    y: Some(first),
                }),
                end: Some(Coord {
                    x: Some(0),
                    y: Some(first + count),
                }),
            }),
            columns: None,
        }),
        // The deprecated `range` and `num_lines_above_screen` are not filled.
        ..Default::default()
    })
}

pub(crate) fn get_prompt(state: &State, r: GetPromptRequest) -> GetPromptResponse {
    let Some(session) = lock(&state.world).session(r.session.as_deref().unwrap_or("")) else {
        return GetPromptResponse {
            status: Some(get_prompt_response::Status::SessionNotFound as i32),
            ..Default::default()
        };
    };
    let mut term = lock(&session.term);
    let cursor = term.cursor();
    match term.prompt(r.unique_prompt_id.as_deref()) {
        Some(p) => prompt_response(p, cursor, &session),
        None => GetPromptResponse {
            status: Some(get_prompt_response::Status::PromptUnavailable as i32),
            ..Default::default()
        },
    }
}

pub(crate) fn list_prompts(state: &State, r: ListPromptsRequest) -> ListPromptsResponse {
    let Some(session) = lock(&state.world).session(r.session.as_deref().unwrap_or("")) else {
        return ListPromptsResponse {
            status: Some(list_prompts_response::Status::SessionNotFound as i32),
            unique_prompt_id: Vec::new(),
        };
    };
    let ids = lock(&session.term).prompt_ids();
    let from = r
        .first_unique_id
        .as_ref()
        .and_then(|f| ids.iter().position(|i| i == f))
        .unwrap_or(0);
    let to = r
        .last_unique_id
        .as_ref()
        .and_then(|l| ids.iter().position(|i| i == l))
        .map(|i| i + 1)
        .unwrap_or(ids.len());
    ListPromptsResponse {
        status: Some(0),
        unique_prompt_id: ids.get(from..to.max(from)).unwrap_or_default().to_vec(),
    }
}

pub(crate) fn inject(state: &State, r: InjectRequest) -> InjectResponse {
    let data = r.data.unwrap_or_default();
    let mut statuses = Vec::new();
    for id in &r.session_id {
        let sessions = targets(state, id);
        let ok = !sessions.is_empty();
        for s in sessions {
            let _ = s.feed.send(Feed::Output(data.clone()));
        }
        statuses.push(if ok {
            inject_response::Status::Ok as i32
        } else {
            inject_response::Status::SessionNotFound as i32
        });
    }
    InjectResponse { status: statuses }
}
