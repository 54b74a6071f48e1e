//! Logs of the CLIs cohort reads without hooks: Aider's Markdown chat history
//! (`.aider.chat.history.md` in the working directory: `#### ` lines are the user's,
//! `> ` lines are tool output, the rest is the assistant's) and Gemini's chat
//! checkpoints (`~/.gemini/tmp/<project>/chats/session-*.json`: a `messages` list of
//! `user` and `gemini` entries), whose format varies by version.

use serde_json::Value;

use super::{parse_iso_ms, Entry};
use crate::agent::AgentKind;
use crate::transcript_rules::{named, starting, EntryWords, RulesAt};

/// Aider's history, line by line.
#[derive(Debug)]
pub struct AiderParser {
    saying: Option<String>,
    /// The line starts the history is read by.
    pub(crate) rules: RulesAt,
}

impl Default for AiderParser {
    fn default() -> Self {
        AiderParser {
            saying: None,
            rules: RulesAt::new(AgentKind::Aider),
        }
    }
}

impl AiderParser {
    /// Entries from one line of the Markdown history. An assistant paragraph is
    /// handed out when the next prompt or tool line begins.
    pub fn line(&mut self, line: &str) -> Vec<Entry> {
        let mut out = Vec::new();
        let flush = |saying: &mut Option<String>, out: &mut Vec<Entry>| {
            if let Some(text) = saying.take().filter(|t| !t.trim().is_empty()) {
                out.push(Entry::Say {
                    at_ms: 0,
                    text: text.trim().to_string(),
                });
            }
        };
        let rules = self.rules.at(None);
        if let Some(start) = starting(&rules.prompts, line) {
            flush(&mut self.saying, &mut out);
            out.push(Entry::Prompt {
                at_ms: 0,
                text: line[start.len()..].to_string(),
            });
        } else if starting(&rules.session_starts, line).is_some() {
            flush(&mut self.saying, &mut out);
        } else if let Some(start) = starting(&rules.tool_output, line) {
            flush(&mut self.saying, &mut out);
            let note = &line[start.len()..];
            if let Some(run) = starting(&rules.runs, note) {
                out.push(Entry::Tool {
                    at_ms: 0,
                    name: "shell".into(),
                    input: note[run.len()..].to_string(),
                });
            }
        } else {
            let s = self.saying.get_or_insert_with(String::new);
            s.push_str(line);
            s.push('\n');
        }
        out
    }
}

/// Entries of a Gemini chat checkpoint (a JSON document with `messages`), its
/// messages told apart by `rules`.
pub fn gemini_entries(text: &str, rules: &EntryWords) -> Vec<Entry> {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let messages = v
        .get("messages")
        .and_then(Value::as_array)
        .or_else(|| v.as_array())
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for m in messages {
        let at_ms = m
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_iso_ms)
            .unwrap_or(0);
        let body = match m.get("content").or_else(|| m.get("message")) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        let what = m.get("type").and_then(Value::as_str).unwrap_or("");
        if named(&rules.user, what).is_some() {
            if !body.trim().is_empty() {
                out.push(Entry::Prompt { at_ms, text: body })
            }
        } else if named(&rules.assistant, what).is_some() {
            for call in m
                .get("toolCalls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.push(Entry::Tool {
                    at_ms,
                    name: call["name"].as_str().unwrap_or("tool").to_string(),
                    input: super::claude::tool_argument(&call["args"]),
                });
            }
            if !body.trim().is_empty() {
                out.push(Entry::Say { at_ms, text: body });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aider_history_and_gemini_checkpoints() {
        let md = "# aider chat started at 2026-01-01 10:00:00\n\n#### add a test\n\nSure, here it is.\n\n> Running cargo test\n> ok\n\n#### next\n";
        let mut p = AiderParser::default();
        let entries: Vec<Entry> = md.lines().flat_map(|l| p.line(l)).collect();
        let turns = crate::transcript::turns(&entries);
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0].says[0].1, "Sure, here it is.");
        assert_eq!(turns[0].tools[0].1, "cargo test");
        let json = r#"{"messages": [{"type": "user", "content": "hi", "timestamp": "2026-01-01T00:00:00Z"},
            {"type": "gemini", "content": "hello", "toolCalls": [{"name": "read_file", "args": {"path": "a"}}]}]}"#;
        let rules = RulesAt::new(AgentKind::Gemini).at(None);
        let turns = crate::transcript::turns(&gemini_entries(json, &rules));
        assert_eq!(
            turns[0].tools,
            vec![("read_file".to_string(), "a".to_string())]
        );
        assert_eq!(turns[0].says[0].1, "hello");
    }
}
