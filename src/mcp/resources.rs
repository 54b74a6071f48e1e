//! Resources (`terminal://sessions`, `terminal://{name}/screen`,
//! `terminal://{name}/output`, `agents://all`, `teams://all`) and prompts
//! (`orchestrate_agents`, `monitor_team`).

use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Role,
};
use rmcp::ErrorData as McpError;

use super::types::{name_of, SessionSummary};
use crate::engine::read::{ReadOptions, ReadWhat};
use crate::engine::Engine;

fn internal(e: impl std::fmt::Display) -> McpError {
    McpError::internal_error(e.to_string(), None)
}

/// Fixed resources, plus a screen and an output resource per session.
pub async fn list(engine: &Engine) -> Result<ListResourcesResult, McpError> {
    let mut items = vec![
        Resource::new("terminal://sessions", "sessions")
            .with_description("Every cohort session: name, id, pane, command, state (JSON)")
            .with_mime_type("application/json"),
        Resource::new("agents://all", "agents")
            .with_description("Registered agents with their session, role and teams (JSON)")
            .with_mime_type("application/json"),
        Resource::new("teams://all", "teams")
            .with_description("Teams with parent and members (JSON)")
            .with_mime_type("application/json"),
    ];
    for pane in engine.list().await.map_err(internal)? {
        let name = name_of(&pane);
        let segment = encode_segment(&name);
        items.push(
            Resource::new(
                format!("terminal://{segment}/screen"),
                format!("{name} screen"),
            )
            .with_description(format!("What a human sees in {name} now"))
            .with_mime_type("text/plain"),
        );
        items.push(
            Resource::new(
                format!("terminal://{segment}/output"),
                format!("{name} output"),
            )
            .with_description(format!("The last lines of {name}'s output, reduced"))
            .with_mime_type("text/plain"),
        );
    }
    Ok(ListResourcesResult::with_all_items(items))
}

/// The per-session templates.
pub fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new("terminal://{name}/screen", "session screen").with_description(
            "The visible screen of a session (name, persistent id, agent or pane id)",
        ),
        ResourceTemplate::new("terminal://{name}/output", "session output").with_description(
            "The last 200 lines of a session's output, reduced, with a meta line",
        ),
    ])
}

/// Reads one resource.
pub async fn read(engine: &Engine, uri: &str) -> Result<ReadResourceResult, McpError> {
    let json = |value: serde_json::Value| {
        ReadResourceResult::new(vec![ResourceContents::text(
            value.to_string(),
            uri.to_string(),
        )
        .with_mime_type("application/json")])
    };
    match uri {
        "terminal://sessions" => {
            let panes = engine.list().await.map_err(internal)?;
            let sessions: Vec<SessionSummary> = panes.iter().map(SessionSummary::from).collect();
            return Ok(json(serde_json::to_value(sessions).map_err(internal)?));
        }
        "agents://all" => {
            return Ok(json(
                serde_json::to_value(
                    engine
                        .agents()
                        .await
                        .map_err(internal)?
                        .into_iter()
                        .map(super::team::AgentOut::from)
                        .collect::<Vec<_>>(),
                )
                .map_err(internal)?,
            ))
        }
        "teams://all" => {
            return Ok(json(
                serde_json::to_value(
                    engine
                        .teams()
                        .await
                        .map_err(internal)?
                        .into_iter()
                        .map(super::team::TeamOut::from)
                        .collect::<Vec<_>>(),
                )
                .map_err(internal)?,
            ))
        }
        _ => {}
    }
    let unknown = || {
        McpError::resource_not_found(
            format!("unknown resource {uri:?}: use terminal://sessions, terminal://<name>/screen, terminal://<name>/output, agents://all or teams://all"),
            None,
        )
    };
    let rest = uri.strip_prefix("terminal://").ok_or_else(unknown)?;
    let (segment, kind) = rest.rsplit_once('/').ok_or_else(unknown)?;
    let name = decode_segment(segment).ok_or_else(unknown)?;
    let pane = engine
        .resolve(&name)
        .await
        .map_err(|e| McpError::resource_not_found(e.to_string(), None))?;
    let text = match kind {
        "screen" => engine
            .screen(&pane.id)
            .await
            .map_err(internal)?
            .rows
            .join("\n")
            .trim_end()
            .to_string(),
        "output" => {
            let out = engine
                .read(
                    &pane.id,
                    &ReadOptions {
                        what: ReadWhat::Tail(200),
                        ..ReadOptions::default()
                    },
                )
                .await;
            format!("{}\n{}", out.text, out.meta)
        }
        _ => return Err(unknown()),
    };
    Ok(ReadResourceResult::new(vec![ResourceContents::text(
        text,
        uri.to_string(),
    )]))
}

/// The prompts offered.
pub fn prompts() -> ListPromptsResult {
    ListPromptsResult::with_all_items(vec![
        Prompt::new(
            "orchestrate_agents",
            Some("Plan and run a task with several agents in cohort sessions: layout, roles, messages, checks"),
            Some(vec![
                PromptArgument::new("task").with_description("What the team should get done").with_required(true),
                PromptArgument::new("agents").with_description("How many agents (default 3)"),
            ]),
        ),
        Prompt::new(
            "monitor_team",
            Some("Check on a team: read every member's new output, spot failures and idle agents, report"),
            Some(vec![PromptArgument::new("team").with_description("Team name").with_required(true)]),
        ),
    ])
}

/// One prompt, filled in.
pub async fn prompt(
    engine: &Engine,
    request: &GetPromptRequestParams,
) -> Result<GetPromptResult, McpError> {
    let arg = |name: &str| {
        request
            .arguments
            .as_ref()
            .and_then(|a| a.get(name))
            .and_then(|v| {
                v.as_str()
                    .map(str::to_string)
                    .or_else(|| Some(v.to_string()))
            })
    };
    match request.name.as_str() {
        "orchestrate_agents" => {
            let task = arg("task")
                .ok_or_else(|| McpError::invalid_params("orchestrate_agents needs a task", None))?;
            let n = arg("agents")
                .and_then(|a| a.parse::<u8>().ok())
                .unwrap_or(3)
                .clamp(1, 9);
            let text = format!(
                "You coordinate {n} agents working in cohort terminal sessions on this task:\n\n{task}\n\n\
                 1. create_layout with {n} panes (grid or triple_vertical), one per agent, each with a name, an agent \
                 and a team, and the command that starts the agent if it is an agent CLI.\n\
                 2. Give each agent its part with write_many or broadcast (team messages for shared instructions, \
                 agent messages for individual parts).\n\
                 3. Use run for commands whose result you need (check the verdict and the exit status), lock a session \
                 while you drive it, and read_many with a filter such as \"error|FAIL\" to follow progress.\n\
                 4. Report what each agent did and what is left. Sessions stay open for a human to attach."
            );
            Ok(
                GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                    .with_description("Plan and run a multi-agent task"),
            )
        }
        "monitor_team" => {
            let team = arg("team")
                .ok_or_else(|| McpError::invalid_params("monitor_team needs a team", None))?;
            let members = engine
                .team_members(&team)
                .await
                .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
            let list = if members.is_empty() {
                "(no members yet)".to_string()
            } else {
                members.into_iter().collect::<Vec<_>>().join(", ")
            };
            let text = format!(
                "Check on team {team} (members: {list}).\n\n\
                 1. read_many with targets [\"{team}\"] to see what is new for every member; add filter \
                 \"error|fail|panic|Traceback\" to find problems fast.\n\
                 2. status on any member that looks stuck (foreground program, exit status, copy mode).\n\
                 3. Report per member: working, done, failing (quote the line), or idle; suggest the next message."
            );
            Ok(
                GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                    .with_description(format!("Monitor team {team}")),
            )
        }
        other => Err(McpError::invalid_params(
            format!("unknown prompt {other:?}: orchestrate_agents or monitor_team"),
            None,
        )),
    }
}

/// A session name as a URI segment: bytes other than letters, digits and `-._~` as
/// `%XX`, so names with spaces or slashes make valid URIs.
fn encode_segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The name a URI segment stands for (`%XX` decoded; a raw name passes as it is), or
/// `None` when the escapes do not make UTF-8.
fn decode_segment(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_make_uri_segments_and_back() {
        for name in ["build", "has space", "a/b", "naïve 100%", "x-y_z.1~"] {
            let segment = encode_segment(name);
            assert!(
                segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b)),
                "{segment}"
            );
            assert_eq!(decode_segment(&segment).as_deref(), Some(name));
        }
        assert_eq!(encode_segment("has space"), "has%20space");
        // A raw name, as a person might type it, still resolves.
        assert_eq!(decode_segment("has space").as_deref(), Some("has space"));
    }
}
