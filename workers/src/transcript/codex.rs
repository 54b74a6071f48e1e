//! Codex's rollout file: lines `{timestamp, type, payload}`; `event_msg` payloads
//! `task_started`, `task_complete` (with `turn_id`), `turn_aborted` and `error`;
//! `response_item` payloads carry the user's and the assistant's messages and the
//! function calls; `session_meta` says which session and directory the file is for.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{parse_iso_ms, Entry};
use crate::agent::AgentKind;
use crate::state::TurnOutcome;
use crate::transcript_rules::{named, starting, RulesAt};

/// Keeps an error seen until the turn's end.
#[derive(Debug)]
pub struct CodexParser {
    error: Option<String>,
    /// The CLI's version, as the session's first line gives it.
    pub version: Option<String>,
    /// The tokens the session spent.
    pub(crate) meter: super::usage::CodexMeter,
    /// The names and texts entries are told apart by, at the version.
    pub(crate) rules: RulesAt,
}

impl Default for CodexParser {
    fn default() -> Self {
        CodexParser {
            error: None,
            version: None,
            meter: Default::default(),
            rules: RulesAt::new(AgentKind::Codex),
        }
    }
}

fn texts(content: &Value) -> String {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

fn call_argument(arguments: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(arguments) else {
        return arguments.to_string();
    };
    match v.get("command") {
        Some(Value::Array(parts)) => {
            let words: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
            // `["bash", "-lc", "ls"]`: the script is what was run.
            match words.as_slice() {
                [_, flag, script] if flag.starts_with('-') => script.to_string(),
                _ => words.join(" "),
            }
        }
        Some(Value::String(s)) => s.clone(),
        _ => super::claude::tool_argument(&v),
    }
}

impl CodexParser {
    /// The entries one rollout line stands for.
    pub fn entries(&mut self, v: &Value) -> Vec<Entry> {
        let at_ms = v
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_iso_ms)
            .unwrap_or(0);
        let p = &v["payload"];
        if let Some(version) = p.get("cli_version").and_then(Value::as_str) {
            self.version = Some(version.chars().take(64).collect());
        }
        let rules = self.rules.at(self.version.as_deref());
        let what = p.get("type").and_then(Value::as_str).unwrap_or("");
        match v.get("type").and_then(Value::as_str) {
            Some("event_msg") => {
                if let Some(phrase) = named(&rules.turn_starts, what) {
                    self.rules.note(at_ms, "turn_starts", phrase);
                    self.error = None;
                    return vec![Entry::Start { at_ms }];
                }
                if named(&rules.errors, what).is_some() {
                    let message = p["message"].as_str().unwrap_or("error");
                    self.error = Some(message.chars().take(80).collect());
                    return Vec::new();
                }
                if let Some(phrase) = named(&rules.turn_ends, what) {
                    self.rules.note(at_ms, "turn_ends", phrase);
                    let outcome = match self.error.take() {
                        Some(e) => TurnOutcome::ApiError(e),
                        None => TurnOutcome::Answered,
                    };
                    return vec![Entry::End { at_ms, outcome }];
                }
                if let Some(phrase) = named(&rules.interrupted, what) {
                    self.rules.note(at_ms, "interrupted", phrase);
                    self.error = None;
                    return vec![Entry::End {
                        at_ms,
                        outcome: TurnOutcome::Interrupted,
                    }];
                }
                Vec::new()
            }
            Some("response_item") if what == "message" => {
                let text = texts(&p["content"]);
                let typed = || starting(&rules.injected, text.trim_start()).is_none();
                match p["role"].as_str() {
                    Some("user") if !text.trim().is_empty() && typed() => {
                        vec![Entry::Prompt { at_ms, text }]
                    }
                    Some("assistant") if !text.trim().is_empty() => {
                        vec![Entry::Say { at_ms, text }]
                    }
                    _ => Vec::new(),
                }
            }
            Some("response_item") => match named(&rules.tool_calls, what) {
                Some(phrase) => {
                    self.rules.note(at_ms, "tool_calls", phrase);
                    let name = p["name"].as_str().unwrap_or("shell").to_string();
                    let input = p["arguments"]
                        .as_str()
                        .or_else(|| p["input"].as_str())
                        .map(call_argument)
                        .unwrap_or_default();
                    vec![Entry::Tool { at_ms, name, input }]
                }
                None => Vec::new(),
            },
            _ => Vec::new(),
        }
    }
}

/// A rollout's session id and working directory (its `session_meta` line).
pub fn rollout_meta(path: &Path) -> Option<(String, String)> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let first = std::io::BufReader::new(file).lines().next()?.ok()?;
    let v: Value = serde_json::from_str(&first).ok()?;
    if v["type"] != "session_meta" {
        return None;
    }
    let p = &v["payload"];
    Some((
        p["id"]
            .as_str()
            .or_else(|| p["session_id"].as_str())?
            .to_string(),
        p["cwd"].as_str().unwrap_or("").to_string(),
    ))
}

/// Rollout files under `sessions` (a Codex home's `sessions/`), in the day
/// directories from `since` (Unix ms) on, newest first, with their modification time.
pub fn rollouts_since(sessions: &Path, since_ms: i64) -> Vec<(PathBuf, i64)> {
    let mut out = Vec::new();
    let mut stack = vec![sessions.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            let modified = meta
                .modified()
                .ok()
                .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0);
            if meta.is_dir() {
                // Day directories older than the day before `since` cannot hold it.
                if modified + 2 * 86_400_000 >= since_ms {
                    stack.push(path);
                }
            } else if modified >= since_ms
                && path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
            {
                out.push((path, modified));
            }
        }
    }
    out.sort_by_key(|b| std::cmp::Reverse(b.1));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rollout_turns_complete_abort_and_fail() {
        let mut p = CodexParser::default();
        let t = "2026-11-23T15:02:27.030Z";
        let lines = [
            json!({"timestamp": t, "type": "session_meta", "payload": {"id": "th", "cwd": "/w"}}),
            json!({"timestamp": t, "type": "event_msg", "payload": {"type": "task_started", "turn_id": "a"}}),
            json!({"timestamp": t, "type": "response_item", "payload": {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}]}}),
            json!({"timestamp": t, "type": "response_item", "payload": {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "hello"}]}}),
            json!({"timestamp": t, "type": "response_item", "payload": {"type": "function_call", "name": "shell",
                "arguments": "{\"command\":[\"bash\",\"-lc\",\"ls\"]}", "call_id": "c"}}),
            json!({"timestamp": t, "type": "response_item", "payload": {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "Done."}]}}),
            json!({"timestamp": t, "type": "event_msg", "payload": {"type": "task_complete", "turn_id": "a"}}),
            json!({"timestamp": t, "type": "event_msg", "payload": {"type": "task_started", "turn_id": "b"}}),
            json!({"timestamp": t, "type": "event_msg", "payload": {"type": "error", "message": "unexpected status 500"}}),
            json!({"timestamp": t, "type": "event_msg", "payload": {"type": "task_complete", "turn_id": "b", "last_agent_message": null}}),
            json!({"timestamp": t, "type": "event_msg", "payload": {"type": "task_started", "turn_id": "c"}}),
            json!({"timestamp": t, "type": "event_msg", "payload": {"type": "turn_aborted", "turn_id": "c"}}),
        ];
        let entries: Vec<Entry> = lines.iter().flat_map(|l| p.entries(l)).collect();
        let turns = crate::transcript::turns(&entries);
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[0].prompt, "hello");
        assert_eq!(
            turns[0].tools,
            vec![("shell".to_string(), "ls".to_string())]
        );
        assert_eq!(turns[0].says, vec![(1, "Done.".to_string())]);
        assert_eq!(
            turns[1].outcome,
            Some(TurnOutcome::ApiError("unexpected status 500".into()))
        );
        assert_eq!(turns[2].outcome, Some(TurnOutcome::Interrupted));
    }
}
