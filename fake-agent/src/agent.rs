//! The agent side of a session: what each turn event writes to the transcript,
//! which hooks it fires with which JSON, and the lines it adds to the screen — per
//! flavour, in the order the real CLIs do it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Map, Value};

use crate::cli::{Flavor, Options};
use crate::hooks::{self, ConfigError, Hooks};
use crate::script;
use crate::transcript::{claude_transcript_path, ClaudeTranscript, CodexRollout};
use crate::turn::{Turn, APPROVAL_COMMAND};

/// Why a session cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A settings or hooks file is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `--resume` names a session with no transcript here.
    #[error("No conversation found with session ID: {0}")]
    NoSuchSession(String),
    /// `--session-id` names a session that already has a transcript.
    #[error("Error: Session ID {0} is already in use.")]
    SessionInUse(String),
    /// The working directory cannot be used.
    #[error("cannot use the working directory {path}: {source}")]
    Cwd {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

enum Log {
    Claude(ClaudeTranscript),
    Codex(CodexRollout),
}

/// One running session of the fake agent.
pub struct Session {
    /// The options it was started with.
    pub o: Options,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Its session id (Claude's `--session-id`, Codex's thread id).
    pub session_id: String,
    /// Lines shown above the composer.
    pub history: Vec<String>,
    log: Log,
    hooks: Hooks,
    resumed: bool,
    codex_started: bool,
    always_allow: bool,
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Claude Code's config directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn claude_config_dir() -> PathBuf {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".claude"))
}

/// Codex's home: `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> PathBuf {
    std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".codex"))
}

impl Session {
    /// Opens the session: working directory, hooks, transcript (not written yet).
    pub fn open(o: Options) -> Result<Session, StartError> {
        if let Some(dir) = &o.cd {
            std::env::set_current_dir(dir).map_err(|source| StartError::Cwd {
                path: dir.clone(),
                source,
            })?;
        }
        let cwd = std::env::current_dir().map_err(|source| StartError::Cwd {
            path: PathBuf::from("."),
            source,
        })?;
        let mut history = Vec::new();
        let (session_id, log, hooks) = match o.flavor {
            Flavor::Claude => {
                let config = claude_config_dir();
                let hooks = Hooks::load_claude(&config, &cwd, o.settings.as_deref())?;
                let id = match (&o.resume, &o.session_id) {
                    (Some(id), _) | (None, Some(id)) => id.clone(),
                    (None, None) => uuid::Uuid::new_v4().to_string(),
                };
                let path = claude_transcript_path(&config, &cwd, &id);
                match (&o.resume, path.exists()) {
                    (Some(_), false) => return Err(StartError::NoSuchSession(id)),
                    (None, true) => return Err(StartError::SessionInUse(id)),
                    (Some(_), true) => history.extend(claude_history(&path)),
                    (None, false) => {}
                }
                let t = ClaudeTranscript::open(path, &id, &cwd, &o.permission_mode);
                (id, Log::Claude(t), hooks)
            }
            Flavor::Codex => {
                let home = codex_home();
                let hooks = Hooks::load_codex(&home, &cwd, &o.config)?;
                match &o.resume {
                    Some(id) => {
                        let r = CodexRollout::resume(&home, id, &cwd, &o.model)
                            .ok_or_else(|| StartError::NoSuchSession(id.clone()))?;
                        (id.clone(), Log::Codex(r), hooks)
                    }
                    None => {
                        let id = uuid::Uuid::now_v7().to_string();
                        let r = CodexRollout::new(&home, &id, &cwd, &o.model);
                        (id, Log::Codex(r), hooks)
                    }
                }
            }
        };
        Ok(Session {
            resumed: o.resume.is_some(),
            o,
            cwd,
            session_id,
            history,
            log,
            hooks,
            codex_started: false,
            always_allow: false,
        })
    }

    /// How many hook commands are configured.
    pub fn hook_count(&self) -> usize {
        self.hooks.count()
    }

    /// Turns all hooks off for the rest of the session.
    pub fn disable_hooks(&mut self) {
        self.hooks.disable();
    }

    /// The transcript's path (Codex: where the rollout is or will be).
    pub fn transcript_path(&self) -> PathBuf {
        match &self.log {
            Log::Claude(t) => t.path().to_path_buf(),
            Log::Codex(r) => r.planned_path(),
        }
    }

    fn hook_input(&self, event: &str, turn: Option<&Turn>) -> Map<String, Value> {
        let path = self.transcript_path();
        let mut m = hooks::base_input(&self.session_id, &path, &self.cwd, event);
        match self.o.flavor {
            Flavor::Claude => {
                if let Some(t) = turn {
                    m.insert("prompt_id".into(), json!(t.id));
                }
            }
            Flavor::Codex => {
                if let Some(t) = turn {
                    m.insert("turn_id".into(), json!(t.id));
                }
                m.insert("model".into(), json!(self.o.model));
                m.insert("permission_mode".into(), json!(self.o.permission_mode));
            }
        }
        m
    }

    fn fire(&self, event: &str, target: &str, turn: Option<&Turn>, extra: Value) -> Vec<String> {
        if turn.is_some_and(|t| t.script.no_hooks) {
            return Vec::new();
        }
        let mut input = self.hook_input(event, turn);
        if let Value::Object(extra) = extra {
            input.extend(extra);
        }
        self.hooks
            .fire(event, target, &Value::Object(input), &self.cwd)
    }

    /// Claude Code fires `SessionStart` at launch; Codex with its first turn.
    pub fn launch(&mut self) {
        if self.o.flavor == Flavor::Claude {
            let source = if self.resumed { "resume" } else { "startup" };
            let mut extra = json!({"source": source});
            if !self.resumed {
                extra["model"] = json!(self.o.model);
            }
            self.fire("SessionStart", source, None, extra);
        }
    }

    /// A prompt is submitted: the turn starts.
    pub fn submit(&mut self, prompt: String, queued: bool, now: Instant) -> Turn {
        let id = match self.o.flavor {
            Flavor::Claude => uuid::Uuid::new_v4().to_string(),
            Flavor::Codex => uuid::Uuid::now_v7().to_string(),
        };
        let turn = Turn::new(id, prompt, now);
        let prompt = &turn.prompt;
        match &mut self.log {
            Log::Claude(t) => {
                let _ = t.user(prompt, &turn.id, if queued { "queued" } else { "typed" });
                self.history.push(shown("❯ ", prompt));
                let extra = json!({"permission_mode": self.o.permission_mode, "prompt": prompt});
                self.fire("UserPromptSubmit", "", Some(&turn), extra);
            }
            Log::Codex(r) => {
                let _ = r.task_started(&turn.id);
                self.history.push(shown("› ", prompt));
                if !self.codex_started {
                    self.codex_started = true;
                    let source = if self.resumed { "resume" } else { "startup" };
                    self.fire("SessionStart", source, None, json!({"source": source}));
                }
                self.fire(
                    "UserPromptSubmit",
                    "",
                    Some(&turn),
                    json!({"prompt": prompt}),
                );
                if let Log::Codex(r) = &mut self.log {
                    let _ = r.user_message(&turn.id, prompt);
                }
            }
        }
        turn
    }

    /// A tool call that runs without asking.
    pub fn tool(&mut self, turn: &mut Turn, name: &str, arg: &str) {
        turn.tools += 1;
        let id = format!("toolu_{:02}{}", turn.tools, &turn.id[..8]);
        let (input, output) = match name {
            "Read" => (json!({"file_path": self.cwd.join(arg)}), "Read 12 lines"),
            _ => (json!({"command": arg, "description": "List files"}), "Done"),
        };
        self.run_tool(turn, &id, name, input, output);
    }

    fn run_tool(&mut self, turn: &Turn, id: &str, name: &str, input: Value, output: &str) {
        let pre = json!({"permission_mode": self.o.permission_mode, "tool_name": name,
                         "tool_input": input, "tool_use_id": id});
        self.fire("PreToolUse", name, Some(turn), pre.clone());
        let arg = input
            .get("command")
            .or_else(|| input.get("file_path"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        match &mut self.log {
            Log::Claude(t) => {
                let _ = t.tool_use(id, name, &input);
                let _ = t.tool_result(id, output, false);
                self.history.push(format!("● {name}({arg})\n  ⎿  {output}"));
            }
            Log::Codex(r) => {
                let _ = r.exec(id, &arg, output);
                let verb = if name == "Read" { "Explored" } else { "Ran" };
                self.history.push(format!("• {verb} {arg}\n  └ {output}"));
            }
        }
        let mut post = pre;
        post["tool_response"] = json!({"stdout": output, "stderr": "", "interrupted": false});
        self.fire("PostToolUse", name, Some(turn), post);
    }

    /// The approval step: true when a dialog must be shown (it fires
    /// `PermissionRequest`), false when approvals are skipped and the command ran.
    pub fn request_approval(&mut self, turn: &mut Turn) -> bool {
        turn.tools += 1;
        if self.o.skip_approvals || self.always_allow {
            self.approved(turn);
            return false;
        }
        let input = json!({"command": APPROVAL_COMMAND, "description": "Create approved.txt"});
        let id = format!("toolu_{:02}{}", turn.tools, &turn.id[..8]);
        let pre = json!({"permission_mode": self.o.permission_mode, "tool_name": "Bash",
                         "tool_input": input, "tool_use_id": id});
        self.fire("PreToolUse", "Bash", Some(turn), pre);
        let mut request = json!({"permission_mode": self.o.permission_mode,
                                 "tool_name": "Bash", "tool_input": input});
        if self.o.flavor == Flavor::Claude {
            request["permission_suggestions"] = json!([{"type": "addRules", "rules":
                [{"toolName": "Bash", "ruleContent": APPROVAL_COMMAND}],
                "behavior": "allow", "destination": "localSettings"}]);
        }
        if turn.script.no_hooks {
            return true;
        }
        let mut input = self.hook_input("PermissionRequest", Some(turn));
        if let Value::Object(extra) = request {
            input.extend(extra);
        }
        // A hook may answer at once: then no dialog is shown.
        match self
            .hooks
            .permission("Bash", &Value::Object(input), &self.cwd)
        {
            Some(crate::hooks::Behavior::Allow) => {
                self.approved(turn);
                false
            }
            Some(crate::hooks::Behavior::Deny) => {
                self.history.push(match self.o.flavor {
                    Flavor::Claude => format!("● Bash({APPROVAL_COMMAND})\n  ⎿  Denied by a hook"),
                    Flavor::Codex => format!("✗ {APPROVAL_COMMAND} (denied by a hook)"),
                });
                false
            }
            None => true,
        }
    }

    /// The user approved (once, or `always` for the rest of the session).
    pub fn approve(&mut self, turn: &mut Turn, always: bool) {
        self.always_allow |= always;
        self.approved(turn);
    }

    fn approved(&mut self, turn: &Turn) {
        let id = format!("toolu_{:02}{}", turn.tools, &turn.id[..8]);
        let _ = std::fs::write(self.cwd.join("approved.txt"), b"");
        let input = json!({"command": APPROVAL_COMMAND, "description": "Create approved.txt"});
        match &mut self.log {
            Log::Claude(t) => {
                let _ = t.tool_use(&id, "Bash", &input);
                let _ = t.tool_result(&id, "(Bash completed with no output)", false);
            }
            Log::Codex(r) => {
                let _ = r.exec(&id, APPROVAL_COMMAND, "");
            }
        }
        self.history.push(match self.o.flavor {
            Flavor::Claude => format!("● Bash({APPROVAL_COMMAND})\n  ⎿  Done"),
            Flavor::Codex => format!("• Ran {APPROVAL_COMMAND}\n  └ (no output)"),
        });
        let post = json!({"permission_mode": self.o.permission_mode, "tool_name": "Bash",
                          "tool_input": input, "tool_use_id": id,
                          "tool_response": {"stdout": "", "stderr": "", "interrupted": false}});
        self.fire("PostToolUse", "Bash", Some(turn), post);
    }

    /// A question for the user (Claude fires `Elicitation`; Codex has no hook for it).
    pub fn ask(&mut self, turn: &Turn) -> (String, Vec<String>) {
        let question = "Which file should I change?".to_string();
        let options = vec!["README.md".to_string(), "src/lib.rs".to_string()];
        if self.o.flavor == Flavor::Claude {
            let extra = json!({"mcp_server_name": "fake", "message": question, "mode": "form",
                "requested_schema": {"type": "object", "properties":
                    {"file": {"type": "string", "enum": options}}}});
            self.fire("Elicitation", "fake", Some(turn), extra);
        }
        (question, options)
    }

    /// The question was answered (`None`: cancelled).
    pub fn answered(&mut self, turn: &Turn, choice: Option<&str>) {
        if self.o.flavor == Flavor::Claude {
            let (action, content) = match choice {
                Some(c) => ("accept", json!({"file": c})),
                None => ("cancel", Value::Null),
            };
            let extra = json!({"mcp_server_name": "fake", "action": action, "content": content});
            self.fire("ElicitationResult", "fake", Some(turn), extra);
        }
        let shown = choice.unwrap_or("(cancelled)");
        self.history.push(match self.o.flavor {
            Flavor::Claude => format!("  ⎿  Answer: {shown}"),
            Flavor::Codex => format!("• Answer: {shown}"),
        });
    }

    /// The turn ends with its answer.
    pub fn finish(&mut self, turn: &Turn, now: Instant) {
        let answer = script::answer(&turn.prompt);
        let ms = turn.elapsed_ms(now);
        match &mut self.log {
            Log::Claude(t) => {
                let _ = t.assistant_text(&answer);
                self.history.push(format!("● {answer}"));
                let background = if turn.script.background {
                    json!([{"id": "bash_1", "type": "bash", "command": "sleep 30",
                            "description": "Background job", "status": "running"}])
                } else {
                    json!([])
                };
                let extra = json!({"permission_mode": self.o.permission_mode,
                    "effort": {"level": "high"}, "stop_hook_active": false,
                    "last_assistant_message": answer, "background_tasks": background,
                    "session_crons": []});
                let ran = self.fire("Stop", "", Some(turn), extra);
                if let Log::Claude(t) = &mut self.log {
                    if !ran.is_empty() {
                        let _ = t.stop_hook_summary(&ran);
                    }
                    let _ = t.turn_duration(ms);
                }
                self.history.push(format!("✻ Worked for {}s", ms / 1000));
            }
            Log::Codex(r) => {
                let _ = r.agent_message(&turn.id, &answer);
                self.history.push(format!("• {answer}"));
                self.history.push(format!("  Worked for {}s", ms / 1000));
                let extra = json!({"stop_hook_active": false, "last_assistant_message": answer});
                self.fire("Stop", "", Some(turn), extra);
                if let Log::Codex(r) = &mut self.log {
                    let _ = r.task_complete(&turn.id, Some(&answer), ms);
                }
                if !turn.script.no_hooks {
                    let payload = json!({"type": "agent-turn-complete",
                        "thread-id": self.session_id, "turn-id": turn.id,
                        "cwd": self.cwd, "client": "codex-tui",
                        "input-messages": [turn.prompt], "last-assistant-message": answer});
                    self.hooks.notify(&payload, &self.cwd);
                }
            }
        }
    }

    /// The turn ends with an API error: no `Stop` (Claude fires `StopFailure`).
    pub fn api_error(&mut self, turn: &Turn, now: Instant) {
        let ms = turn.elapsed_ms(now);
        match &mut self.log {
            Log::Claude(t) => {
                let text = "API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\
                            \"message\":\"Internal server error\"}}";
                let _ = t.api_error(text, 500);
                let _ = t.turn_duration(ms);
                self.history.push(format!("● {text}"));
                let extra = json!({"effort": {"level": "high"}, "error": "server_error",
                                   "last_assistant_message": text});
                self.fire("StopFailure", "server_error", Some(turn), extra);
            }
            Log::Codex(r) => {
                let text = "unexpected status 500 Internal Server Error";
                let _ = r.error(text);
                let _ = r.task_complete(&turn.id, None, ms);
                self.history.push(format!("■ {text}"));
            }
        }
    }

    /// The turn is interrupted (Esc, Ctrl-C, a refused approval): no `Stop`.
    pub fn interrupt(&mut self, turn: &Turn, now: Instant) {
        let ms = turn.elapsed_ms(now);
        match &mut self.log {
            Log::Claude(t) => {
                let _ = t.interrupted();
                self.history
                    .push("  ⎿  Interrupted · What should Claude do instead?".into());
            }
            Log::Codex(r) => {
                let _ = r.turn_aborted(&turn.id, ms);
                self.history.push(
                    "■ Conversation interrupted - tell the model what to do differently.".into(),
                );
            }
        }
    }

    /// The session ends: Claude fires `SessionEnd`. Returns what to print after the
    /// TUI is gone.
    pub fn end(&mut self, reason: &str) -> String {
        match self.o.flavor {
            Flavor::Claude => {
                self.fire("SessionEnd", reason, None, json!({"reason": reason}));
                format!(
                    "Resume this session with:\r\nclaude --resume {}\r\n",
                    self.session_id
                )
            }
            Flavor::Codex => match &self.log {
                Log::Codex(r) if r.path().is_some() => format!(
                    "To reconnect, run:\r\n  codex resume {}\r\n",
                    self.session_id
                ),
                _ => String::new(),
            },
        }
    }
}

/// A prompt as the history shows it: the first lines, then a count of the rest.
fn shown(prefix: &str, prompt: &str) -> String {
    let lines: Vec<&str> = prompt.split('\n').collect();
    let mut out = format!("{prefix}{}", lines[0]);
    for line in lines.iter().skip(1).take(5) {
        out.push_str("\n  ");
        out.push_str(line);
    }
    if lines.len() > 6 {
        out.push_str(&format!("\n  … +{} lines", lines.len() - 6));
    }
    out
}

/// The user and assistant lines of an existing Claude transcript (for `--resume`).
fn claude_history(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            let content = &v["message"]["content"];
            match (v["type"].as_str(), content) {
                (Some("user"), Value::String(s)) => Some(shown("❯ ", s)),
                (Some("assistant"), Value::Array(blocks)) => blocks
                    .iter()
                    .find_map(|b| b["text"].as_str())
                    .map(|t| format!("● {t}")),
                _ => None,
            }
        })
        .collect()
}
