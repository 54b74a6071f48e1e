//! The agents' hooks and notifications, as cohort records them.
//!
//! A hook runs `cohort hook <Event>` (Claude Code's `--settings` hooks, Codex's
//! hooks and its `notify` program). That command ([`record`]) appends one JSON line
//! per event to the worker's event file under the state directory — a compact copy
//! of what the agent passed, never the agent's whole prompt — and pings every serving
//! cohort process through its wake socket ([`wake_all`]), so a waiter learns of a
//! `Stop` within milliseconds. It prints nothing (a hook's output would reach the
//! agent, or its transcript) and always succeeds.
//!
//! The serving side reads the file from where it stopped ([`EventTail`]) and turns
//! each line into a [`Report`] for the state machine ([`HookEvent::report`]).
//!
//! Any process of the user can run `cohort hook` or append to the file, so each line
//! a worker's own hooks write carries a tag: HMAC-SHA256 under the worker's hook key
//! ([`hook_key_path`]), which the agent gets in its environment ([`HOOK_KEY_ENV`])
//! and its hooks inherit; no other pane has it. The tag covers the worker, a fresh
//! nonce and the whole event, so a line is good for one worker once: a forged line,
//! a line copied from another worker or a line appended a second time is dropped.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::state::{Report, ReportKind, Signal, TurnOutcome};
use cohort_terminal::seal::SealKey;

/// The environment variable that hands a worker's hook key to its agent (and so to
/// the agent's hooks).
pub const HOOK_KEY_ENV: &str = "COHORT_HOOK_KEY";

/// Longest last message kept from a `Stop` (the transcript has it all).
const MESSAGE_KEPT: usize = 16 * 1024;

/// A worker's directory under the state directory.
pub fn worker_dir(state_dir: &Path, worker_id: &str) -> PathBuf {
    state_dir.join("workers").join(worker_id)
}

/// The directory of the serving processes' wake sockets.
pub fn wake_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("workers").join("wake")
}

/// A worker's hook key: what its hooks sign their events with.
pub fn hook_key_path(state_dir: &Path, worker_id: &str) -> PathBuf {
    worker_dir(state_dir, worker_id).join("hook.key")
}

/// A worker's event file.
pub fn events_path(state_dir: &Path, worker_id: &str) -> PathBuf {
    worker_dir(state_dir, worker_id).join("events.jsonl")
}

/// One recorded event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookEvent {
    /// When the hook ran (Unix ms).
    pub at_ms: i64,
    /// The event: `Stop`, `UserPromptSubmit`, … or `notify` for Codex's notify.
    pub event: String,
    /// The agent's session (Claude) or thread (Codex) id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The transcript the agent writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    /// The prompt or turn id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The tool, for tool events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The tool's main argument (a command, a path), shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<String>,
    /// A submitted prompt's length in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_len: Option<usize>,
    /// A submitted prompt's FNV-1a 64 digest (hex), to prove it arrived whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_fnv: Option<String>,
    /// The assistant's last message (`Stop`, `StopFailure`, notify), shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Background tasks still running at `Stop`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background: Vec<String>,
    /// The error of a `StopFailure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `SessionEnd`'s reason, `SessionStart`'s source, a notification's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A fresh random value, so that no two events share a tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    /// HMAC-SHA256 of the worker and the event under the worker's hook key
    /// ([`HookEvent::seal`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// Replaces (or with `None` removes) the file `name` in worker `id`'s state
/// directory, whole: written beside it and renamed over, readable by its owner only.
pub fn keep_worker_file(
    state_dir: &Path,
    id: &str,
    name: &str,
    contents: Option<&[u8]>,
) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let path = worker_dir(state_dir, id).join(name);
    let Some(contents) = contents else {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    };
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    // Each writer its own temporary file: two at once never tear each other's.
    let tmp = path.with_file_name(format!(
        ".{name}.{}.{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?
        .write_all(contents)?;
    std::fs::rename(tmp, path)
}

/// The event `cohort hook` records when a worker's approval policy answered a
/// permission request (`detail` says which way and by which rule).
pub const POLICY_DECISION: &str = "PolicyDecision";

/// A tool call's main argument, whole: the command (Codex gives it as a list), the
/// file, path, pattern or URL; the input as JSON when it has none of these.
pub fn main_argument(input: &Value) -> String {
    ["command", "file_path", "path", "pattern", "url"]
        .iter()
        .find_map(|k| input.get(*k))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
            other => other.to_string(),
        })
        .unwrap_or_else(|| input.to_string())
}

/// FNV-1a, 64 bits (the digest the fake agents answer with, and prompt checks use).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

impl HookEvent {
    /// The compact record of a hook's input (`payload`, the JSON the agent passed on
    /// stdin or, for Codex's notify, as its last argument).
    pub fn from_payload(event: &str, payload: &Value, at_ms: i64) -> HookEvent {
        let event = match event {
            "" | "auto" => text(payload, "hook_event_name")
                .or_else(|| text(payload, "type"))
                .unwrap_or_else(|| "unknown".into()),
            e => e.to_string(),
        };
        let prompt = payload.get("prompt").and_then(Value::as_str);
        let tool_input = payload
            .get("tool_input")
            .map(|input| shorten(&main_argument(input), 200));
        let background = payload
            .get("background_tasks")
            .and_then(Value::as_array)
            .map(|tasks| {
                tasks
                    .iter()
                    .map(|t| {
                        text(t, "description")
                            .or_else(|| text(t, "command"))
                            .unwrap_or_else(|| t.to_string())
                    })
                    .collect()
            })
            .unwrap_or_default();
        HookEvent {
            at_ms,
            session_id: text(payload, "session_id").or_else(|| text(payload, "thread-id")),
            transcript_path: text(payload, "transcript_path"),
            turn_id: text(payload, "turn_id")
                .or_else(|| text(payload, "prompt_id"))
                .or_else(|| text(payload, "turn-id")),
            tool: text(payload, "tool_name"),
            tool_input,
            prompt_len: prompt.map(str::len),
            prompt_fnv: prompt.map(|p| format!("{:016x}", fnv1a64(p.as_bytes()))),
            message: text(payload, "last_assistant_message")
                .or_else(|| text(payload, "last-assistant-message"))
                .map(|m| shorten(&m, MESSAGE_KEPT)),
            background,
            error: text(payload, "error"),
            detail: text(payload, "reason")
                .or_else(|| text(payload, "source"))
                .or_else(|| text(payload, "notification_type"))
                .or_else(|| (event == "notify").then(|| text(payload, "type")).flatten()),
            event,
            nonce: None,
            tag: None,
        }
    }

    /// What the tag covers: the worker and the event without its tag.
    fn sealed_bytes(&self, worker_id: &str) -> Vec<u8> {
        let untagged = HookEvent {
            tag: None,
            ..self.clone()
        };
        let mut bytes = worker_id.as_bytes().to_vec();
        bytes.push(0);
        bytes.extend(serde_json::to_vec(&untagged).unwrap_or_default());
        bytes
    }

    /// Gives the event a nonce and its tag for `worker_id` under `key`.
    pub fn seal(&mut self, worker_id: &str, key: &SealKey) {
        let mut nonce = [0u8; 12];
        if let Err(e) = getrandom::fill(&mut nonce) {
            // The nonce only has to be new (a replayed line repeats one); without the
            // system's random source, the time and the process make it so.
            tracing::warn!(target: "cohort::workers", error = %e, "no random source for a hook event's nonce: using the time");
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos() as u64;
            nonce[..8].copy_from_slice(&now.to_be_bytes());
            nonce[8..].copy_from_slice(&std::process::id().to_be_bytes());
        }
        self.nonce = Some(nonce.iter().map(|b| format!("{b:02x}")).collect());
        self.tag = None;
        self.tag = Some(key.tag(&self.sealed_bytes(worker_id)));
    }

    /// Whether the event carries a good tag for `worker_id` under `key`.
    pub fn verifies(&self, worker_id: &str, key: &SealKey) -> bool {
        self.nonce.is_some()
            && self
                .tag
                .as_deref()
                .is_some_and(|tag| key.verify(&self.sealed_bytes(worker_id), tag))
    }

    /// What the state machine takes from this event, if anything.
    pub fn report(&self) -> Option<Report> {
        let source = if self.event == "notify" {
            Signal::Notify
        } else {
            Signal::Hook
        };
        let kind = match self.event.as_str() {
            "SessionStart" => ReportKind::SessionStart,
            "UserPromptSubmit" => ReportKind::TurnStart,
            "PreToolUse" | "PostToolUse" | "PostToolUseFailure" | "ElicitationResult"
            | "SubagentStop" => ReportKind::Activity {
                tool: self.tool.clone(),
            },
            "PermissionRequest" => ReportKind::Approval {
                tool: self
                    .tool
                    .as_ref()
                    .map(|t| crate::observe::tool_call(t, self.tool_input.as_deref())),
            },
            "Elicitation" => ReportKind::Question,
            "Stop" => ReportKind::TurnEnd {
                outcome: TurnOutcome::Answered,
                background: self.background.len(),
            },
            "StopFailure" => ReportKind::TurnEnd {
                outcome: TurnOutcome::ApiError(
                    self.error.clone().unwrap_or_else(|| "unknown error".into()),
                ),
                background: 0,
            },
            "SessionEnd" => ReportKind::SessionEnd {
                reason: self.detail.clone().unwrap_or_else(|| "other".into()),
            },
            "notify" if self.detail.as_deref() == Some("agent-turn-complete") => {
                ReportKind::TurnEnd {
                    outcome: TurnOutcome::Answered,
                    background: 0,
                }
            }
            _ => return None,
        };
        Some(Report {
            at_ms: self.at_ms,
            kind,
            source,
        })
    }
}

/// Appends `event` to the worker's event file (one line, one write).
pub fn append(state_dir: &Path, worker_id: &str, event: &HookEvent) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let path = events_path(state_dir, worker_id);
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut line = serde_json::to_string(event).map_err(std::io::Error::other)?;
    line.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)?
        .write_all(line.as_bytes())
}

/// Pings every serving cohort process: `worker_id` has news.
pub fn wake_all(state_dir: &Path, worker_id: &str) {
    let Ok(entries) = std::fs::read_dir(wake_dir(state_dir)) else {
        return;
    };
    let Ok(socket) = std::os::unix::net::UnixDatagram::unbound() else {
        return;
    };
    let _ = socket.set_nonblocking(true);
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "sock") {
            let _ = socket.send_to(worker_id.as_bytes(), &path);
        }
    }
}

/// What `cohort hook` does: records the event, sealed with `key` (the worker's hook
/// key from the agent's environment), and wakes the servers. `payload` is the JSON
/// the agent passed (its last argument, or stdin). Never fails loudly: a hook
/// without the key still records, and the server drops what does not verify.
pub fn record(
    state_dir: &Path,
    worker_id: &str,
    event: &str,
    payload: &str,
    key: Option<&SealKey>,
) {
    record_at(state_dir, worker_id, event, payload, key, now_ms());
}

/// [`record`], for an event that happened at `at_ms` (Unix ms): a remote hook's,
/// timed by when its note arrived.
pub fn record_at(
    state_dir: &Path,
    worker_id: &str,
    event: &str,
    payload: &str,
    key: Option<&SealKey>,
    at_ms: i64,
) {
    let value: Value = serde_json::from_str(payload.trim()).unwrap_or(Value::Null);
    let mut recorded = HookEvent::from_payload(event, &value, at_ms);
    if let Some(key) = key {
        recorded.seal(worker_id, key);
    }
    if append(state_dir, worker_id, &recorded).is_ok() {
        wake_all(state_dir, worker_id);
    }
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Reads a JSON-lines file from where the last read stopped; a partial last line
/// waits for the rest.
#[derive(Debug, Default)]
pub struct LineTail {
    /// The file.
    pub path: PathBuf,
    offset: u64,
    carry: Vec<u8>,
}

impl LineTail {
    /// A tail of `path` from its start.
    pub fn new(path: PathBuf) -> LineTail {
        LineTail {
            path,
            offset: 0,
            carry: Vec::new(),
        }
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The complete lines added since the last call (at most `max` bytes at a time).
    pub fn read_new(&mut self, max: u64) -> Vec<String> {
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let from = self.start(len);
        if len == from || file.seek(SeekFrom::Start(from)).is_err() {
            return Vec::new();
        }
        let mut buf = Vec::new();
        let _ = (&mut file).take(max).read_to_end(&mut buf);
        self.feed(&buf)
    }

    /// Where the next read starts in a file now `len` bytes long: where the last
    /// stopped, or its start when it was replaced or truncated.
    pub fn start(&mut self, len: u64) -> u64 {
        if len < self.offset {
            self.offset = 0;
            self.carry.clear();
        }
        self.offset
    }

    /// The complete lines of `bytes`, read from [`LineTail::start`] (another
    /// machine's file, fetched from there).
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        self.offset += bytes.len() as u64;
        self.carry.extend_from_slice(bytes);
        let Some(end) = self.carry.iter().rposition(|&b| b == b'\n') else {
            return Vec::new();
        };
        let complete: Vec<u8> = self.carry.drain(..=end).collect();
        String::from_utf8_lossy(&complete)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// The tail of a worker's event file: the events its own hooks recorded, each once.
#[derive(Debug, Default)]
pub struct EventTail {
    lines: LineTail,
    worker_id: String,
    /// The worker's hook key; `None` for a worker made before hooks had keys.
    key: Option<SealKey>,
    /// Tags already taken: a line appended again is not an event again.
    seen: std::collections::HashSet<String>,
    /// Lines dropped because they did not verify.
    dropped: u64,
}

impl EventTail {
    /// A tail of the worker's event file from its start.
    pub fn new(state_dir: &Path, worker_id: &str) -> EventTail {
        let key = match SealKey::load(&hook_key_path(state_dir, worker_id)) {
            Ok(key) => key,
            Err(e) => {
                // A key file that cannot be read must not open the door to every
                // line: a key nobody holds verifies none.
                tracing::warn!(target: "cohort::workers", worker = worker_id, "the worker's hook key is unreadable ({e}); its hook events are ignored until it is spawned again");
                SealKey::generate().ok()
            }
        };
        EventTail {
            lines: LineTail::new(events_path(state_dir, worker_id)),
            worker_id: worker_id.to_string(),
            key,
            seen: Default::default(),
            dropped: 0,
        }
    }

    /// The events recorded since the last call that the worker's hooks signed.
    pub fn read_new(&mut self) -> Vec<HookEvent> {
        let events: Vec<HookEvent> = self
            .lines
            .read_new(8 << 20)
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let Some(key) = &self.key else {
            return events;
        };
        let mut kept = Vec::with_capacity(events.len());
        for event in events {
            let fresh = event.verifies(&self.worker_id, key)
                && self.seen.insert(event.tag.clone().unwrap_or_default());
            if fresh {
                kept.push(event);
            } else {
                self.dropped += 1;
                tracing::warn!(target: "cohort::workers", worker = %self.worker_id, event = %event.event, "a hook event without this worker's signature was ignored (written by another process, or replayed)");
            }
        }
        kept
    }

    /// How many lines were dropped because they did not verify.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hook_inputs_become_compact_events_and_reports() {
        let stop = json!({"session_id": "s1", "transcript_path": "/t.jsonl", "hook_event_name": "Stop",
            "last_assistant_message": "done", "background_tasks": [{"id": "b", "description": "Background job"}]});
        let e = HookEvent::from_payload("Stop", &stop, 7);
        assert_eq!(e.background, vec!["Background job".to_string()]);
        assert_eq!(e.transcript_path.as_deref(), Some("/t.jsonl"));
        let r = e.report().unwrap();
        assert_eq!(
            r.kind,
            ReportKind::TurnEnd {
                outcome: TurnOutcome::Answered,
                background: 1
            }
        );
        let prompt =
            json!({"hook_event_name": "UserPromptSubmit", "prompt": "a\nb", "prompt_id": "p"});
        let e = HookEvent::from_payload("UserPromptSubmit", &prompt, 1);
        assert_eq!(e.prompt_len, Some(3));
        assert_eq!(
            e.prompt_fnv.as_deref(),
            Some(format!("{:016x}", fnv1a64(b"a\nb")).as_str())
        );
        let failure = json!({"hook_event_name": "StopFailure", "error": "rate_limit"});
        assert_eq!(
            HookEvent::from_payload("StopFailure", &failure, 1)
                .report()
                .unwrap()
                .kind,
            ReportKind::TurnEnd {
                outcome: TurnOutcome::ApiError("rate_limit".into()),
                background: 0
            }
        );
        let notify = json!({"type": "agent-turn-complete", "thread-id": "t", "turn-id": "u",
            "last-assistant-message": "hi"});
        let e = HookEvent::from_payload("notify", &notify, 1);
        assert_eq!(
            (e.session_id.as_deref(), e.turn_id.as_deref()),
            (Some("t"), Some("u"))
        );
        assert_eq!(e.report().unwrap().source, Signal::Notify);
        let permission = json!({"tool_name": "Bash", "tool_input": {"command": "touch x"}});
        assert_eq!(
            HookEvent::from_payload("PermissionRequest", &permission, 1)
                .report()
                .unwrap()
                .kind,
            ReportKind::Approval {
                tool: Some("Bash(touch x)".into())
            }
        );
    }

    #[test]
    fn the_event_file_is_read_incrementally_and_wakes_listeners() {
        let dir = tempfile::tempdir().unwrap();
        let wake = wake_dir(dir.path());
        std::fs::create_dir_all(&wake).unwrap();
        let listener = std::os::unix::net::UnixDatagram::bind(wake.join("1.sock")).unwrap();
        listener.set_nonblocking(true).unwrap();
        let mut tail = EventTail::new(dir.path(), "w1");
        assert!(tail.read_new().is_empty());
        record(
            dir.path(),
            "w1",
            "Stop",
            "{\"last_assistant_message\": \"ok\"}",
            None,
        );
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"w1");
        record(dir.path(), "w1", "UserPromptSubmit", "not json", None);
        let events = tail.read_new();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].message.as_deref(), Some("ok"));
        assert!(tail.read_new().is_empty());
        // A half-written line waits for its end.
        let path = events_path(dir.path(), "w1");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"at_ms\":1,")
            .unwrap();
        assert!(tail.read_new().is_empty());
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"\"event\":\"Stop\"}\n")
            .unwrap();
        assert_eq!(tail.read_new()[0].event, "Stop");
    }

    #[test]
    fn only_lines_the_workers_own_hooks_signed_are_events_and_each_only_once() {
        let dir = tempfile::tempdir().unwrap();
        let key = SealKey::load_or_create(&{
            std::fs::create_dir_all(worker_dir(dir.path(), "w1")).unwrap();
            hook_key_path(dir.path(), "w1")
        })
        .unwrap();
        let mut tail = EventTail::new(dir.path(), "w1");
        // Another pane runs `cohort hook --worker w1 SessionEnd` without the key.
        record(dir.path(), "w1", "SessionEnd", "{}", None);
        // Or signs with a key of its own, or the key of another worker.
        let stranger = SealKey::generate().unwrap();
        record(dir.path(), "w1", "Stop", "{}", Some(&stranger));
        let mut elsewhere = HookEvent::from_payload("Stop", &Value::Null, 1);
        elsewhere.seal("w2", &key);
        append(dir.path(), "w1", &elsewhere).unwrap();
        // The worker's own hook.
        record(dir.path(), "w1", "UserPromptSubmit", "{}", Some(&key));
        let events = tail.read_new();
        assert_eq!(
            events.iter().map(|e| e.event.as_str()).collect::<Vec<_>>(),
            vec!["UserPromptSubmit"]
        );
        assert_eq!(tail.dropped(), 3);
        // A signed line appended again (a replay), or altered, is dropped too.
        let mut replay = events[0].clone();
        append(dir.path(), "w1", &replay).unwrap();
        replay.event = "Stop".into();
        append(dir.path(), "w1", &replay).unwrap();
        assert!(tail.read_new().is_empty());
        assert_eq!(tail.dropped(), 5);
        // A worker made before hooks had keys takes its lines as they come.
        let mut legacy = EventTail::new(dir.path(), "w0");
        record(dir.path(), "w0", "Stop", "{}", None);
        assert_eq!(legacy.read_new().len(), 1);
    }
}
