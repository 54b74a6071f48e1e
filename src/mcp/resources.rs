//! Resources (`terminal://sessions`, `terminal://{name}/screen`,
//! `terminal://{name}/output`, `agents://all`, `agents://status`, `teams://all`,
//! `notifications://{owner}`) and prompts (`orchestrate_agents`, `monitor_team`,
//! `run_playbook`).

use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Role,
};
use rmcp::ErrorData as McpError;

use super::types::SessionSummary;
use crate::engine::Engine;
use cohort_terminal::{
    read::{ReadOptions, ReadWhat},
    sessions::session_name,
};

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
        Resource::new("agents://status", "agent status")
            .with_description("One line per agent: state, since, last command, unread notifications (subscribable)")
            .with_mime_type("text/plain"),
        Resource::new("notifications://*", "notifications for everyone")
            .with_description("The shared notification queue, newest last (subscribable)")
            .with_mime_type("text/plain"),
    ];
    for pane in engine.terminal.list().await.map_err(internal)? {
        let name = session_name(&pane);
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
        ResourceTemplate::new("notifications://{owner}", "notifications")
            .with_description("Notifications kept for an agent (and for everyone), newest last"),
    ])
}

/// Reads one resource.
pub async fn read(engine: &Engine, uri: &str) -> Result<ReadResourceResult, McpError> {
    if let Some(read) = super::push::read(engine, uri).await {
        return read;
    }
    let json = |value: serde_json::Value| {
        ReadResourceResult::new(vec![ResourceContents::text(
            value.to_string(),
            uri.to_string(),
        )
        .with_mime_type("application/json")])
    };
    match uri {
        "terminal://sessions" => {
            let panes = engine.terminal.list().await.map_err(internal)?;
            let sessions: Vec<SessionSummary> = panes.iter().map(SessionSummary::from).collect();
            return Ok(json(serde_json::to_value(sessions).map_err(internal)?));
        }
        "agents://all" => {
            return Ok(json(
                serde_json::to_value(
                    engine
                        .terminal
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
                        .terminal
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
            format!("unknown resource {uri:?}: use terminal://sessions, terminal://<name>/screen, terminal://<name>/output, agents://all, agents://status, teams://all or notifications://<owner>"),
            None,
        )
    };
    let rest = uri.strip_prefix("terminal://").ok_or_else(unknown)?;
    let (segment, kind) = rest.rsplit_once('/').ok_or_else(unknown)?;
    let name = decode_segment(segment).ok_or_else(unknown)?;
    let pane = engine
        .terminal
        .resolve(&name)
        .await
        .map_err(|e| McpError::resource_not_found(e.to_string(), None))?;
    let text = match kind {
        "screen" => engine
            .terminal
            .screen(&pane.id)
            .await
            .map_err(internal)?
            .rows
            .join("\n")
            .trim_end()
            .to_string(),
        "output" => {
            let out = engine
                .terminal
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
        Prompt::new(
            "run_playbook",
            Some("Turn a goal into a playbook (steps over sessions, agents and teams), run it, and act on its per-step results"),
            Some(vec![
                PromptArgument::new("goal").with_description("What the workflow should achieve").with_required(true),
                PromptArgument::new("targets").with_description("Sessions, agents or teams involved (comma-separated)"),
            ]),
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
            let n = match arg("agents") {
                None => 3,
                Some(a) => a.trim().parse::<usize>().ok().filter(|n| (1..=AGENTS_MAX).contains(n)).ok_or_else(|| {
                    McpError::invalid_params(
                        format!("agents {a:?} is not a number from 1 to {AGENTS_MAX}: give how many agents, e.g. \"4\""),
                        None,
                    )
                })?,
            };
            let plan = layout_for(n);
            let windows = plan
                .iter()
                .map(|(preset, count)| format!("{preset} ({count} panes)"))
                .collect::<Vec<_>>()
                .join(", then ");
            let layout = if plan.len() == 1 {
                format!("create_layout with layout {windows}")
            } else {
                format!(
                    "{} windows (at most 16 panes fit one window): create_layout with {windows}",
                    plan.len()
                )
            };
            let text = format!(
                "You coordinate {n} agents working in cohort terminal sessions on this task:\n\n{task}\n\n\
                 1. {layout}, one pane per agent, each with a name, an agent and a team, and the command that starts \
                 the agent if it is an agent CLI. Teams get distinct colours.\n\
                 2. Give each agent its part with broadcast (messages: [{{target: \"team\" or \"team/agent\", message}}]; \
                 the most specific target wins) or write_many.\n\
                 3. Wait with wait_for (condition idle for agents, exit for commands; mode all) instead of polling; \
                 watch sessions for \"error|FAIL|Traceback\" so failures reach you as notifications; use run for commands \
                 whose result you need (check the verdict and exit status), and agent_status for one line per agent.\n\
                 4. Report what each agent did and what is left. Sessions stay open for a human to attach."
            );
            Ok(
                GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                    .with_description(format!("Plan and run a task with {n} agents")),
            )
        }
        "run_playbook" => {
            let goal = arg("goal")
                .ok_or_else(|| McpError::invalid_params("run_playbook needs a goal", None))?;
            let targets = arg("targets")
                .map(|t| format!(" Involved: {t}."))
                .unwrap_or_default();
            let text = format!(
                "Reach this goal with one cohort playbook: {goal}.{targets}\n\n\
                 1. Write the playbook as steps, in order: each step has a name, targets (sessions, agents, teams, or \
                 paths like team/agent) and a command (for shells; waited for by its exit status, or until a text \
                 appears) or a message (for agents; wait: \"idle\" waits until the agent is idle again), a timeout_ms, \
                 and continue_on_error only where a failure should not stop the rest. Steps run their targets in \
                 parallel unless parallel: false. Add a layout first if sessions must be opened, a cascade for final \
                 messages, and reads (targets, mode, filter) for what to look at at the end.\n\
                 2. Call the playbook tool with it (or with path for a TOML/JSON file). It stops at the first failing \
                 step unless stop_on_error is false.\n\
                 3. Read the per-step, per-target results: verdicts, exit statuses, output tails. Fix what failed and run \
                 only the remaining steps again, then report."
            );
            Ok(
                GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                    .with_description("Write and run a playbook"),
            )
        }
        "monitor_team" => {
            let team = arg("team")
                .ok_or_else(|| McpError::invalid_params("monitor_team needs a team", None))?;
            let members = engine
                .terminal
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
            format!("unknown prompt {other:?}: orchestrate_agents, monitor_team or run_playbook"),
            None,
        )),
    }
}

/// The most agents the orchestration prompt plans for (four full windows).
const AGENTS_MAX: usize = 64;

/// Windows that fit `n` panes: presets for up to 4, then grids of at most 4×4 per
/// window, the last one as small as its panes allow.
fn layout_for(n: usize) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut left = n;
    while left > 0 {
        let count = left.min(16);
        left -= count;
        let preset = match count {
            1 => "single".to_string(),
            2 => "horizontal".to_string(),
            3 => "triple_vertical".to_string(),
            4 => "quad".to_string(),
            _ => {
                let cols = (1..=4).find(|c| c * c >= count).unwrap_or(4);
                format!("grid with rows {} and cols {cols}", count.div_ceil(cols))
            }
        };
        out.push((preset, count));
    }
    out
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
pub(super) fn decode_segment(segment: &str) -> Option<String> {
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
    fn layouts_fit_the_count_without_clamping() {
        assert_eq!(layout_for(3), vec![("triple_vertical".to_string(), 3)]);
        assert_eq!(
            layout_for(9),
            vec![("grid with rows 3 and cols 3".to_string(), 9)]
        );
        let twenty = layout_for(20);
        assert_eq!(twenty.iter().map(|(_, c)| c).sum::<usize>(), 20);
        assert_eq!(twenty[0], ("grid with rows 4 and cols 4".to_string(), 16));
        assert_eq!(twenty[1].0, "quad");
    }

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
