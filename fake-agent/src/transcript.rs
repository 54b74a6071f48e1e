//! The agents' own logs, in the shapes the real CLIs write: Claude Code's project
//! JSONL and Codex's rollout file. Each line is written whole and flushed at once.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::cli::{CLAUDE_VERSION, CODEX_VERSION};
use crate::clock;

/// Appends one JSON line to `path` (mode 0600 when it creates the file).
fn append(path: &Path, value: &Value) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    let mut line = value.to_string();
    line.push('\n');
    file.write_all(line.as_bytes())
}

/// Claude Code's project directory name for `cwd`: every character that is not an
/// ASCII letter or digit becomes `-`. Names over 200 characters are cut and given a
/// hash suffix (the real hash function differs; only the length rule is kept).
pub fn claude_project_dir(cwd: &Path) -> String {
    let name: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if name.len() <= 200 {
        return name;
    }
    let hash = crate::script::fnv1a64(name.as_bytes());
    format!("{}-{:x}", &name[..200], hash)
}

/// The transcript path Claude Code uses for `session_id` started in `cwd`.
pub fn claude_transcript_path(config_dir: &Path, cwd: &Path, session_id: &str) -> PathBuf {
    config_dir
        .join("projects")
        .join(claude_project_dir(cwd))
        .join(format!("{session_id}.jsonl"))
}

/// A Claude Code session transcript (created by the first prompt, as the real one).
#[derive(Debug)]
pub struct ClaudeTranscript {
    path: PathBuf,
    session_id: String,
    cwd: String,
    branch: String,
    permission_mode: String,
    parent: Option<String>,
    /// The `system` subtype a turn's end is written with (`FAKE_AGENT_TURN_END`, as
    /// a later release might name it; `turn_duration` by default).
    turn_end: String,
}

impl ClaudeTranscript {
    /// A transcript at `path`; an existing file is continued (resume).
    pub fn open(path: PathBuf, session_id: &str, cwd: &Path, permission_mode: &str) -> Self {
        let parent = fs::read_to_string(&path).ok().and_then(|text| {
            text.lines()
                .rev()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find_map(|v| v.get("uuid").and_then(Value::as_str).map(str::to_string))
        });
        ClaudeTranscript {
            path,
            session_id: session_id.to_string(),
            cwd: cwd.to_string_lossy().into_owned(),
            branch: git_branch(cwd),
            permission_mode: permission_mode.to_string(),
            parent,
            turn_end: std::env::var("FAKE_AGENT_TURN_END")
                .ok()
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| "turn_duration".into()),
        }
    }

    /// Where the transcript is (or will be) written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write(&mut self, mut entry: Value) -> io::Result<()> {
        if !self.path.exists() {
            if let Some(dir) = self.path.parent() {
                fs::create_dir_all(dir)?;
            }
            append(
                &self.path,
                &json!({"type": "permission-mode", "permissionMode": self.permission_mode,
                        "sessionId": self.session_id}),
            )?;
        }
        let uuid = uuid::Uuid::new_v4().to_string();
        if let Some(obj) = entry.as_object_mut() {
            obj.insert("parentUuid".into(), json!(self.parent));
            obj.insert("isSidechain".into(), json!(false));
            obj.insert("uuid".into(), json!(uuid));
            obj.insert("timestamp".into(), json!(clock::now().iso()));
            obj.insert("userType".into(), json!("external"));
            obj.insert("entrypoint".into(), json!("cli"));
            obj.insert("cwd".into(), json!(self.cwd));
            obj.insert("sessionId".into(), json!(self.session_id));
            obj.insert("version".into(), json!(CLAUDE_VERSION));
            obj.insert("gitBranch".into(), json!(self.branch));
        }
        append(&self.path, &entry)?;
        self.parent = Some(uuid);
        Ok(())
    }

    /// A prompt the user submitted (`source`: `typed` or `queued`).
    pub fn user(&mut self, prompt: &str, prompt_id: &str, source: &str) -> io::Result<()> {
        self.write(json!({
            "type": "user", "promptId": prompt_id,
            "message": {"role": "user", "content": prompt},
            "permissionMode": self.permission_mode, "origin": {"kind": "human"},
            "promptSource": source,
        }))
    }

    /// An assistant message made of content blocks.
    fn assistant(&mut self, content: Value, stop_reason: &str) -> io::Result<()> {
        let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
        self.write(json!({
            "type": "assistant",
            "message": {"id": id, "type": "message", "role": "assistant",
                        "model": "claude-opus-4-8", "content": content,
                        "stop_reason": stop_reason, "stop_sequence": null,
                        "usage": {"input_tokens": 3, "cache_creation_input_tokens": 1_800,
                                  "cache_read_input_tokens": 12_000, "output_tokens": 5,
                                  "service_tier": "standard"}},
        }))
    }

    /// The assistant's final text.
    pub fn assistant_text(&mut self, text: &str) -> io::Result<()> {
        self.assistant(json!([{"type": "text", "text": text}]), "end_turn")
    }

    /// A tool call by the assistant.
    pub fn tool_use(&mut self, id: &str, name: &str, input: &Value) -> io::Result<()> {
        self.assistant(
            json!([{"type": "tool_use", "id": id, "name": name, "input": input}]),
            "tool_use",
        )
    }

    /// The result of a tool call.
    pub fn tool_result(&mut self, id: &str, output: &str, is_error: bool) -> io::Result<()> {
        self.write(json!({
            "type": "user",
            "message": {"role": "user", "content": [
                {"tool_use_id": id, "type": "tool_result", "content": output, "is_error": is_error}
            ]},
        }))
    }

    /// The synthetic assistant entry an API error leaves.
    pub fn api_error(&mut self, text: &str, status: u16) -> io::Result<()> {
        self.write(json!({
            "type": "assistant",
            "message": {"id": uuid::Uuid::new_v4().to_string(), "model": "<synthetic>",
                        "role": "assistant", "type": "message", "stop_reason": "stop_sequence",
                        "stop_sequence": "", "content": [{"type": "text", "text": text}]},
            "error": "unknown", "isApiErrorMessage": true, "apiErrorStatus": status,
        }))
    }

    /// The user entry an interrupt (Esc / Ctrl-C while busy) leaves.
    pub fn interrupted(&mut self) -> io::Result<()> {
        self.write(json!({
            "type": "user",
            "message": {"role": "user",
                        "content": [{"type": "text", "text": "[Request interrupted by user]"}]},
        }))
    }

    /// The summary of the Stop hooks that ran.
    pub fn stop_hook_summary(&mut self, commands: &[String]) -> io::Result<()> {
        let infos: Vec<Value> = commands
            .iter()
            .map(|c| json!({"command": c, "durationMs": 0}))
            .collect();
        self.write(json!({
            "type": "system", "subtype": "stop_hook_summary", "hookCount": commands.len(),
            "hookInfos": infos, "hookErrors": [], "preventedContinuation": false,
            "stopReason": "", "hasOutput": false, "level": "suggestion",
        }))
    }

    /// How long the turn took.
    pub fn turn_duration(&mut self, ms: u128) -> io::Result<()> {
        self.write(
            json!({"type": "system", "subtype": self.turn_end, "durationMs": ms,
                          "isMeta": false}),
        )
    }
}

/// The current branch of the repository at `cwd`, or `""` outside one.
fn git_branch(cwd: &Path) -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--abbrev-ref", "HEAD"])
        .current_dir(cwd)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// A Codex rollout file: `sessions/YYYY/MM/DD/rollout-<start>-<id>.jsonl` under the
/// Codex home, created when the first turn starts (not at launch).
#[derive(Debug)]
pub struct CodexRollout {
    home: PathBuf,
    path: Option<PathBuf>,
    session_id: String,
    cwd: String,
    model: String,
    started: clock::Utc,
    ordinal: u64,
    /// Tokens spent so far: input, cached input, output (Codex writes running totals).
    spent: (u64, u64, u64),
}

impl CodexRollout {
    /// A rollout for a new session; nothing is written yet.
    pub fn new(home: &Path, session_id: &str, cwd: &Path, model: &str) -> Self {
        CodexRollout {
            home: home.to_path_buf(),
            path: None,
            session_id: session_id.to_string(),
            cwd: cwd.to_string_lossy().into_owned(),
            model: model.to_string(),
            started: clock::now(),
            ordinal: 0,
            spent: (0, 0, 0),
        }
    }

    /// The existing rollout of session `id` (for `codex resume <id>`).
    pub fn resume(home: &Path, id: &str, cwd: &Path, model: &str) -> Option<Self> {
        let path = find_rollout(&home.join("sessions"), id)?;
        let lines = fs::read_to_string(&path).ok()?.lines().count() as u64;
        let mut rollout = CodexRollout::new(home, id, cwd, model);
        rollout.path = Some(path);
        rollout.ordinal = lines;
        Some(rollout)
    }

    /// The file, once the first turn has created it.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Where the file will be, whether or not it exists yet.
    pub fn planned_path(&self) -> PathBuf {
        self.path.clone().unwrap_or_else(|| {
            let s = &self.started;
            self.home
                .join("sessions")
                .join(format!("{:04}", s.year))
                .join(format!("{:02}", s.month))
                .join(format!("{:02}", s.day))
                .join(format!(
                    "rollout-{}-{}.jsonl",
                    s.file_stamp(),
                    self.session_id
                ))
        })
    }

    fn line(&mut self, kind: &str, payload: Value) -> io::Result<()> {
        let path = match &self.path {
            Some(p) => p.clone(),
            None => {
                let p = self.planned_path();
                if let Some(dir) = p.parent() {
                    fs::create_dir_all(dir)?;
                }
                self.path = Some(p.clone());
                let meta = json!({
                    "session_id": self.session_id, "id": self.session_id,
                    "timestamp": self.started.iso(), "cwd": self.cwd,
                    "originator": "codex-tui", "cli_version": CODEX_VERSION,
                    "source": "cli", "model_provider": "openai",
                });
                self.line("session_meta", meta)?;
                p
            }
        };
        let value = json!({"timestamp": clock::now().iso(), "ordinal": self.ordinal,
                           "type": kind, "payload": payload});
        self.ordinal += 1;
        append(&path, &value)
    }

    /// A turn started (creates the file on the first turn).
    pub fn task_started(&mut self, turn_id: &str) -> io::Result<()> {
        self.line(
            "event_msg",
            json!({"type": "task_started", "turn_id": turn_id,
                   "started_at": clock::unix_secs(), "model_context_window": 258_400}),
        )?;
        self.line(
            "turn_context",
            json!({"turn_id": turn_id, "cwd": self.cwd, "model": self.model,
                   "approval_policy": "on-request"}),
        )
    }

    /// The user's message of a turn.
    pub fn user_message(&mut self, turn_id: &str, text: &str) -> io::Result<()> {
        self.line(
            "response_item",
            json!({"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": text}]}),
        )?;
        self.line(
            "event_msg",
            json!({"type": "item_completed", "thread_id": self.session_id, "turn_id": turn_id,
                   "item": {"type": "UserMessage", "id": uuid::Uuid::now_v7().to_string(),
                            "content": [{"type": "text", "text": text, "text_elements": []}]}}),
        )
    }

    /// A shell call and its output.
    pub fn exec(&mut self, call_id: &str, command: &str, output: &str) -> io::Result<()> {
        let args = json!({"command": ["bash", "-lc", command]}).to_string();
        self.line(
            "response_item",
            json!({"type": "function_call", "name": "shell", "arguments": args,
                   "call_id": call_id}),
        )?;
        self.line(
            "response_item",
            json!({"type": "function_call_output", "call_id": call_id, "output": output}),
        )
    }

    /// The assistant's message.
    pub fn agent_message(&mut self, turn_id: &str, text: &str) -> io::Result<()> {
        let id = format!("msg_{}", uuid::Uuid::now_v7().simple());
        self.line(
            "event_msg",
            json!({"type": "item_completed", "thread_id": self.session_id, "turn_id": turn_id,
                   "item": {"type": "AgentMessage", "id": id,
                            "content": [{"type": "Text", "text": text}]}}),
        )?;
        self.line(
            "response_item",
            json!({"type": "message", "role": "assistant", "id": id,
                   "content": [{"type": "output_text", "text": text}]}),
        )
    }

    /// An error reported during the turn.
    pub fn error(&mut self, message: &str) -> io::Result<()> {
        self.line("event_msg", json!({"type": "error", "message": message}))
    }

    /// The turn finished (after the model's last response, whose tokens Codex counts
    /// first, as running totals).
    pub fn task_complete(
        &mut self,
        turn_id: &str,
        last: Option<&str>,
        duration_ms: u128,
    ) -> io::Result<()> {
        let output = 8 + last.map_or(0, |t| t.len() as u64 / 4);
        self.spent = (
            self.spent.0 + 2_400,
            self.spent.1 + 1_024,
            self.spent.2 + output,
        );
        let (input, cached, output) = self.spent;
        self.line(
            "event_msg",
            json!({"type": "token_count", "info": {
                "total_token_usage": {"input_tokens": input, "cached_input_tokens": cached,
                    "output_tokens": output, "reasoning_output_tokens": 0,
                    "total_tokens": input + output},
                "last_token_usage": {"input_tokens": 2_400, "cached_input_tokens": 1_024,
                    "output_tokens": output, "reasoning_output_tokens": 0},
                "model_context_window": 258_400},
                "rate_limits": null}),
        )?;
        self.line(
            "event_msg",
            json!({"type": "task_complete", "turn_id": turn_id, "last_agent_message": last,
                   "completed_at": clock::unix_secs(), "duration_ms": duration_ms}),
        )
    }

    /// The turn was interrupted.
    pub fn turn_aborted(&mut self, turn_id: &str, duration_ms: u128) -> io::Result<()> {
        self.line(
            "event_msg",
            json!({"type": "turn_aborted", "turn_id": turn_id, "reason": "interrupted",
                   "completed_at": clock::unix_secs(), "duration_ms": duration_ms}),
        )
    }
}

/// Finds `rollout-*-<id>.jsonl` under `dir` (depth-first, any date).
fn find_rollout(dir: &Path, id: &str) -> Option<PathBuf> {
    let suffix = format!("-{id}.jsonl");
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_rollout(&path, id) {
                return Some(found);
            }
        } else if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(&suffix))
        {
            return Some(path);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_dir_replaces_every_non_alphanumeric() {
        assert_eq!(
            claude_project_dir(Path::new("/tmp/real_cli/pro.j")),
            "-tmp-real-cli-pro-j"
        );
        let long = format!("/{}", "a".repeat(300));
        assert!(claude_project_dir(Path::new(&long)).len() > 200);
    }

    #[test]
    fn rollout_appears_with_the_first_turn_and_resumes() {
        let home = tempfile::tempdir().unwrap();
        let id = uuid::Uuid::now_v7().to_string();
        let mut r = CodexRollout::new(home.path(), &id, Path::new("/w"), "gpt-5");
        assert!(r.path().is_none() && !r.planned_path().exists());
        r.task_started("t1").unwrap();
        let path = r.path().unwrap().to_path_buf();
        let text = fs::read_to_string(&path).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["type"], "session_meta");
        assert_eq!(first["payload"]["id"], json!(id));
        let resumed = CodexRollout::resume(home.path(), &id, Path::new("/w"), "gpt-5").unwrap();
        assert_eq!(resumed.path(), Some(path.as_path()));
        assert_eq!(resumed.ordinal, 3);
    }
}
