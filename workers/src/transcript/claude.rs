//! Claude Code's project JSONL: `user` entries (a prompt, tool results, or the
//! `[Request interrupted by user]` an interrupt leaves), `assistant` entries (text and
//! `tool_use` blocks; `isApiErrorMessage` for an API error), and `system` entries
//! (`turn_duration` closes a turn, `stop_hook_summary` follows a `Stop`).

use serde_json::Value;

use super::{parse_iso_ms, Entry};
use crate::agent::AgentKind;
use crate::state::TurnOutcome;
use crate::transcript_rules::{named, starting, RulesAt};

/// Keeps an API error seen until the turn's end says how it ended.
#[derive(Debug)]
pub struct ClaudeParser {
    api_error: Option<String>,
    /// The CLI's version, as its entries give it (the newest).
    pub version: Option<String>,
    /// The tokens the session spent.
    pub(crate) meter: super::usage::ClaudeMeter,
    /// The names and texts entries are told apart by, at the version.
    pub(crate) rules: RulesAt,
}

impl Default for ClaudeParser {
    fn default() -> Self {
        ClaudeParser {
            api_error: None,
            version: None,
            meter: Default::default(),
            rules: RulesAt::new(AgentKind::Claude),
        }
    }
}

/// The main argument of a tool call's input.
pub(crate) fn tool_argument(input: &Value) -> String {
    for key in [
        "command",
        "file_path",
        "path",
        "pattern",
        "url",
        "prompt",
        "description",
    ] {
        if let Some(v) = input.get(key).and_then(Value::as_str) {
            return v.to_string();
        }
    }
    match input {
        Value::Null => String::new(),
        Value::Object(m) if m.is_empty() => String::new(),
        other => other.to_string(),
    }
}

/// The first of `fields` that is `true` in `v`.
fn flagged<'a>(v: &Value, fields: &'a [String]) -> Option<&'a String> {
    fields
        .iter()
        .find(|f| v.get(f.as_str()).and_then(Value::as_bool) == Some(true))
}

impl ClaudeParser {
    /// The entries one JSONL line stands for.
    pub fn entries(&mut self, v: &Value) -> Vec<Entry> {
        let at_ms = v
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_iso_ms)
            .unwrap_or(0);
        if let Some(version) = v.get("version").and_then(Value::as_str) {
            if self.version.as_deref() != Some(version) {
                self.version = Some(version.chars().take(64).collect());
            }
        }
        let rules = self.rules.at(self.version.as_deref());
        if flagged(v, &rules.skipped).is_some() {
            return Vec::new();
        }
        let content = &v["message"]["content"];
        match v.get("type").and_then(Value::as_str) {
            Some("user") => {
                // A prompt is written as the whole content or as text blocks (beside
                // tool results, which are no prompt).
                let texts: Vec<&str> = match content {
                    Value::String(text) => vec![text.as_str()],
                    Value::Array(blocks) => blocks
                        .iter()
                        .filter(|b| b["type"] == "text")
                        .filter_map(|b| b["text"].as_str())
                        .collect(),
                    _ => Vec::new(),
                };
                // An interrupt is written as a text block or as the whole content.
                if let Some(phrase) = texts.iter().find_map(|t| starting(&rules.interrupted, t)) {
                    self.rules.note(at_ms, "interrupted", phrase);
                    return vec![Entry::End {
                        at_ms,
                        outcome: TurnOutcome::Interrupted,
                    }];
                }
                if texts.is_empty() {
                    return Vec::new();
                }
                // The echo of a slash command and its output is the whole content.
                if content
                    .as_str()
                    .is_some_and(|text| starting(&rules.not_prompts, text).is_some())
                {
                    return Vec::new();
                }
                self.api_error = None;
                vec![Entry::Prompt {
                    at_ms,
                    text: texts.join("\n"),
                }]
            }
            Some("assistant") => {
                let api_error = flagged(v, &rules.api_errors).is_some();
                let mut out = Vec::new();
                for block in content.as_array().into_iter().flatten() {
                    match block["type"].as_str() {
                        Some("text") => {
                            let text = block["text"].as_str().unwrap_or("").to_string();
                            if api_error {
                                let short: String = text.chars().take(80).collect();
                                self.api_error = Some(short);
                            }
                            if !text.trim().is_empty() {
                                out.push(Entry::Say { at_ms, text });
                            }
                        }
                        Some("tool_use") => out.push(Entry::Tool {
                            at_ms,
                            name: block["name"].as_str().unwrap_or("tool").to_string(),
                            input: tool_argument(&block["input"]),
                        }),
                        _ => {}
                    }
                }
                out
            }
            Some("system") => {
                let subtype = v.get("subtype").and_then(Value::as_str).unwrap_or("");
                match named(&rules.turn_ends, subtype) {
                    Some(phrase) => {
                        self.rules.note(at_ms, "turn_ends", phrase);
                        let outcome = match self.api_error.take() {
                            Some(e) => TurnOutcome::ApiError(e),
                            None => TurnOutcome::Answered,
                        };
                        vec![Entry::End { at_ms, outcome }]
                    }
                    None => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prompts_tools_answers_interrupts_and_api_errors() {
        let mut p = ClaudeParser::default();
        let t = "2026-11-23T15:02:27.030Z";
        let lines = [
            json!({"type": "permission-mode", "permissionMode": "default"}),
            json!({"type": "user", "timestamp": t, "message": {"role": "user", "content": "fix"}}),
            json!({"type": "assistant", "timestamp": t, "message": {"content": [
                {"type": "tool_use", "id": "x", "name": "Bash", "input": {"command": "ls", "description": "List"}}]}}),
            json!({"type": "user", "timestamp": t, "message": {"content": [
                {"type": "tool_result", "tool_use_id": "x", "content": "ok"}]}}),
            json!({"type": "assistant", "timestamp": t, "message": {"content": [{"type": "text", "text": "Done."}]}}),
            json!({"type": "system", "subtype": "stop_hook_summary", "timestamp": t}),
            json!({"type": "system", "subtype": "turn_duration", "timestamp": t}),
            json!({"type": "user", "timestamp": t, "message": {"content": "again"}}),
            json!({"type": "assistant", "timestamp": t, "isApiErrorMessage": true, "message": {"content": [
                {"type": "text", "text": "API Error: 500 {\"type\":\"error\"}"}]}}),
            json!({"type": "system", "subtype": "turn_duration", "timestamp": t}),
            json!({"type": "user", "timestamp": t, "message": {"content": "third"}}),
            json!({"type": "user", "timestamp": t, "message": {"content": [
                {"type": "text", "text": "[Request interrupted by user]"}]}}),
            json!({"type": "user", "timestamp": t, "message": {"content": "fourth"}}),
            json!({"type": "user", "timestamp": t, "message": {"content": "[Request interrupted by user for tool use]"}}),
        ];
        let entries: Vec<Entry> = lines.iter().flat_map(|l| p.entries(l)).collect();
        let turns = crate::transcript::turns(&entries);
        assert_eq!(turns.len(), 4);
        assert_eq!(turns[0].tools, vec![("Bash".to_string(), "ls".to_string())]);
        assert_eq!(turns[0].outcome, Some(TurnOutcome::Answered));
        assert!(
            matches!(&turns[1].outcome, Some(TurnOutcome::ApiError(e)) if e.starts_with("API Error: 500"))
        );
        assert_eq!(turns[2].outcome, Some(TurnOutcome::Interrupted));
        assert_eq!(turns[3].outcome, Some(TurnOutcome::Interrupted));
        assert_eq!(entries[0].at_ms(), 1_795_446_147_030);
    }
}
