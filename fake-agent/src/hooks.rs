//! Hooks and notifications, loaded from the places the real CLIs read them and run
//! the way they run them: `sh -c <command>`, the event as JSON on stdin, in the
//! session's directory, waited for (up to the hook's `timeout` seconds).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

/// A settings or hooks file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `--settings` names a file that does not exist.
    #[error("Settings file not found: {0}")]
    SettingsMissing(String),
    /// A settings or hooks file is not valid JSON.
    #[error("Invalid settings in {path}: {message}. Fix the JSON or pass another file.")]
    Invalid {
        /// Where the bad JSON came from.
        path: String,
        /// The parser's complaint.
        message: String,
    },
}

#[derive(Clone, Debug)]
struct Handler {
    command: String,
    timeout: Duration,
}

#[derive(Clone, Debug)]
struct Group {
    matcher: String,
    handlers: Vec<Handler>,
}

/// The hooks of one session.
#[derive(Clone, Debug, Default)]
pub struct Hooks {
    events: BTreeMap<String, Vec<Group>>,
    disabled: bool,
    notify: Option<Vec<String>>,
}

impl Hooks {
    /// Claude Code: user settings (`<config dir>/settings.json`), the project's
    /// `.claude/settings.json` and `.claude/settings.local.json`, then `--settings`
    /// (a file, or inline JSON). Hooks from every layer run; `disableAllHooks` in any
    /// layer turns them all off.
    pub fn load_claude(
        config_dir: &Path,
        cwd: &Path,
        settings: Option<&str>,
    ) -> Result<Hooks, ConfigError> {
        let mut hooks = Hooks::default();
        for path in [
            config_dir.join("settings.json"),
            cwd.join(".claude/settings.json"),
            cwd.join(".claude/settings.local.json"),
        ] {
            if let Ok(text) = std::fs::read_to_string(&path) {
                hooks.add_settings(&text, &path.to_string_lossy())?;
            }
        }
        if let Some(arg) = settings {
            if arg.trim_start().starts_with('{') {
                hooks.add_settings(arg, "--settings")?;
            } else {
                let text = std::fs::read_to_string(arg)
                    .map_err(|_| ConfigError::SettingsMissing(arg.to_string()))?;
                hooks.add_settings(&text, arg)?;
            }
        }
        Ok(hooks)
    }

    /// Codex: `<codex home>/hooks.json` and the project's `.codex/hooks.json`; `notify`
    /// from the top level of `<codex home>/config.toml`, overridden by `-c notify=[…]`.
    pub fn load_codex(
        home: &Path,
        cwd: &Path,
        overrides: &[(String, String)],
    ) -> Result<Hooks, ConfigError> {
        let mut hooks = Hooks::default();
        for path in codex_hook_files(home, cwd) {
            if let Ok(text) = std::fs::read_to_string(&path) {
                hooks.add_settings(&text, &path.to_string_lossy())?;
            }
        }
        if let Ok(toml) = std::fs::read_to_string(home.join("config.toml")) {
            hooks.notify = toml_top_level(&toml, "notify").and_then(|v| string_array(&v));
        }
        for (key, value) in overrides {
            if key == "notify" {
                hooks.notify = string_array(value);
            }
        }
        Ok(hooks)
    }

    fn add_settings(&mut self, text: &str, origin: &str) -> Result<(), ConfigError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Invalid {
            path: origin.to_string(),
            message: e.to_string(),
        })?;
        if value.get("disableAllHooks") == Some(&Value::Bool(true)) {
            self.disabled = true;
        }
        let Some(events) = value.get("hooks").and_then(Value::as_object) else {
            return Ok(());
        };
        for (event, groups) in events {
            for group in groups.as_array().into_iter().flatten() {
                let matcher = group
                    .get("matcher")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let handlers = group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|h| {
                        h.get("type").and_then(Value::as_str).unwrap_or("command") == "command"
                    })
                    .filter_map(|h| {
                        Some(Handler {
                            command: h.get("command")?.as_str()?.to_string(),
                            timeout: Duration::from_secs(
                                h.get("timeout").and_then(Value::as_u64).unwrap_or(60),
                            ),
                        })
                    })
                    .collect();
                self.events
                    .entry(event.clone())
                    .or_default()
                    .push(Group { matcher, handlers });
            }
        }
        Ok(())
    }

    /// Turns every hook off (a policy that disables hooks).
    pub fn disable(&mut self) {
        self.disabled = true;
    }

    /// How many hook commands are configured (whether or not hooks are disabled).
    pub fn count(&self) -> usize {
        self.events
            .values()
            .flatten()
            .map(|g| g.handlers.len())
            .sum()
    }

    /// Runs the hooks for `event` whose matcher accepts `target` (the tool name, the
    /// session start source…), each with `input` on stdin. Returns the commands run.
    pub fn fire(&self, event: &str, target: &str, input: &Value, cwd: &Path) -> Vec<String> {
        if self.disabled {
            return Vec::new();
        }
        let mut ran = Vec::new();
        let stdin = input.to_string();
        for group in self.events.get(event).into_iter().flatten() {
            if !matches(&group.matcher, target) {
                continue;
            }
            for handler in &group.handlers {
                let _ = run_hook(&handler.command, &stdin, cwd, handler.timeout);
                ran.push(handler.command.clone());
            }
        }
        ran
    }

    /// Runs the `PermissionRequest` hooks for `target` and folds what they answer
    /// on stdout (`hookSpecificOutput.decision.behavior`): any `deny` wins, else an
    /// `allow`; `None` when no hook decided (the dialog is shown).
    pub fn permission(&self, target: &str, input: &Value, cwd: &Path) -> Option<Behavior> {
        if self.disabled {
            return None;
        }
        let stdin = input.to_string();
        let mut decided = None;
        for group in self.events.get("PermissionRequest").into_iter().flatten() {
            if !matches(&group.matcher, target) {
                continue;
            }
            for handler in &group.handlers {
                let out = run_hook(&handler.command, &stdin, cwd, handler.timeout);
                match behavior(&out) {
                    Some(Behavior::Deny) => decided = Some(Behavior::Deny),
                    Some(Behavior::Allow) if decided.is_none() => decided = Some(Behavior::Allow),
                    _ => {}
                }
            }
        }
        decided
    }

    /// Codex's `notify`: the program gets one more argument, the JSON, and is not
    /// waited for.
    pub fn notify(&self, payload: &Value, cwd: &Path) {
        let Some((program, args)) = self.notify.as_ref().and_then(|n| n.split_first()) else {
            return;
        };
        let child = Command::new(program)
            .args(args)
            .arg(payload.to_string())
            .process_group(0)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        if let Ok(mut child) = child {
            std::thread::spawn(move || child.wait());
        }
    }
}

/// The hook files Codex reads.
pub fn codex_hook_files(home: &Path, cwd: &Path) -> Vec<PathBuf> {
    vec![home.join("hooks.json"), cwd.join(".codex/hooks.json")]
}

/// A permission hook's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behavior {
    /// Run the tool without asking.
    Allow,
    /// Do not run it.
    Deny,
}

/// The decision a `PermissionRequest` hook printed, if any.
fn behavior(stdout: &str) -> Option<Behavior> {
    let v: Value = serde_json::from_str(stdout.trim()).ok()?;
    match v["hookSpecificOutput"]["decision"]["behavior"].as_str()? {
        "allow" => Some(Behavior::Allow),
        "deny" => Some(Behavior::Deny),
        _ => None,
    }
}

/// Matchers as alternatives separated by `|`; empty or `*` matches everything.
fn matches(matcher: &str, target: &str) -> bool {
    matcher.is_empty() || matcher == "*" || matcher.split('|').any(|m| m.trim() == target)
}

/// Runs one hook command with `stdin`; returns what it printed (the first 64 KiB).
fn run_hook(command: &str, stdin: &str, cwd: &Path, timeout: Duration) -> String {
    // The hangup that ends a session (a closed pane) must not also kill the
    // SessionEnd hook it runs: own process group, and SIGHUP ignored.
    let mut cmd = Command::new("/bin/sh");
    // SAFETY: only calls signal(2), which is async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let child = cmd
        .arg("-c")
        .arg(command)
        .process_group(0)
        .current_dir(cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return String::new();
    };
    let printed = child.stdout.take().map(|out| {
        std::thread::spawn(move || {
            use std::io::Read;
            let mut text = String::new();
            let _ = out.take(64 << 10).read_to_string(&mut text);
            text
        })
    });
    let collect = move || {
        printed
            .and_then(|reader| reader.join().ok())
            .unwrap_or_default()
    };
    if let Some(mut pipe) = child.stdin.take() {
        // Written from a thread: a hook that does not read a large input must not
        // block the session past its timeout.
        let input = stdin.to_string();
        std::thread::spawn(move || pipe.write_all(input.as_bytes()));
    }
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return collect(),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                // A hook past its timeout decides nothing.
                return String::new();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// The common fields every hook input carries.
pub fn base_input(
    session_id: &str,
    transcript_path: &Path,
    cwd: &Path,
    event: &str,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("session_id".into(), json!(session_id));
    m.insert(
        "transcript_path".into(),
        json!(transcript_path.to_string_lossy()),
    );
    m.insert("cwd".into(), json!(cwd.to_string_lossy()));
    m.insert("hook_event_name".into(), json!(event));
    m
}

/// The raw text of `key = …` at the top level of a TOML document (before any
/// table header), joined across lines while brackets are open.
pub fn toml_top_level(toml: &str, key: &str) -> Option<String> {
    let mut lines = toml.lines();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.starts_with('[') {
            return None;
        }
        let Some((k, v)) = t.split_once('=') else {
            continue;
        };
        if k.trim() != key {
            continue;
        }
        let mut value = v.trim().to_string();
        while value.matches('[').count() > value.matches(']').count() {
            match lines.next() {
                Some(more) => value.push_str(more.trim()),
                None => break,
            }
        }
        return Some(value);
    }
    None
}

/// A TOML or JSON array of strings (`["a", 'b']`).
pub fn string_array(text: &str) -> Option<Vec<String>> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    let mut out = Vec::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '"' && c != '\'' {
            continue;
        }
        let mut s = String::new();
        while let Some(d) = chars.next() {
            match d {
                '\\' if c == '"' => {
                    if let Some(e) = chars.next() {
                        s.push(e);
                    }
                }
                _ if d == c => break,
                _ => s.push(d),
            }
        }
        out.push(s);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_notify_is_read_from_the_top_level_only() {
        let toml = "model = \"x\"\nnotify = [\"/bin/n\",\n 'arg']\n[tui]\nnotify = true\n";
        let raw = toml_top_level(toml, "notify").unwrap();
        assert_eq!(string_array(&raw).unwrap(), vec!["/bin/n", "arg"]);
        assert_eq!(toml_top_level("[t]\nnotify = [\"a\"]", "notify"), None);
    }

    #[test]
    fn settings_layers_merge_and_disable_all_wins() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let settings = json!({"hooks": {"Stop": [{"matcher": "", "hooks": [
            {"type": "command", "command": format!("cat >> {}", out.display())}]}]}});
        let hooks =
            Hooks::load_claude(dir.path(), dir.path(), Some(&settings.to_string())).unwrap();
        assert_eq!(hooks.count(), 1);
        let ran = hooks.fire("Stop", "", &json!({"x": 1}), dir.path());
        assert_eq!(ran.len(), 1);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "{\"x\":1}");
        std::fs::write(
            dir.path().join("settings.json"),
            "{\"disableAllHooks\": true}",
        )
        .unwrap();
        let off = Hooks::load_claude(dir.path(), dir.path(), Some(&settings.to_string())).unwrap();
        assert!(off.fire("Stop", "", &json!({}), dir.path()).is_empty());
        assert!(matches!(
            Hooks::load_claude(dir.path(), dir.path(), Some("/no/such/file")),
            Err(ConfigError::SettingsMissing(_))
        ));
    }

    #[test]
    fn matchers_select_by_tool() {
        assert!(matches("", "Bash"));
        assert!(matches("Edit|Bash", "Bash"));
        assert!(!matches("Edit", "Bash"));
    }
}
