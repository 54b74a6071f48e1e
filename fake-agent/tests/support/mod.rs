//! Test harness: the fake agent in a real pty under a private tmux server (killed on
//! drop, also when a test panics), with a private home, config and hook log.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long any one wait may take before the test fails (a guard, not a measure).
pub const WAIT: Duration = Duration::from_secs(20);

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// One fake agent running in a tmux pane.
pub struct Agent {
    pub socket: String,
    socket_path: Option<PathBuf>,
    pub dir: tempfile::TempDir,
    pub flavor: &'static str,
}

impl Agent {
    /// Starts `flavor` (`claude` or `codex`) with `args`, hooks that log every event
    /// and the given extra environment, and waits for its first screen.
    pub fn start(flavor: &'static str, args: &[&str], env: &[(&str, &str)]) -> Agent {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = tempfile::Builder::new()
            .prefix("fake-agent-test-")
            .tempdir()
            .expect("temp dir");
        let mut agent = Agent {
            socket: format!("fake-agent-test-{}-{n}", std::process::id()),
            socket_path: None,
            dir,
            flavor,
        };
        for sub in ["home", "project", "bin", "codex"] {
            std::fs::create_dir_all(agent.dir.path().join(sub)).expect("mkdir");
        }
        let bin = agent.dir.path().join("bin").join(flavor);
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_cohort-fake-agent"), &bin).expect("symlink");
        agent.write_hook_config();
        let mut command = format!(
            "cd {} && env HOME={} CODEX_HOME={} FAKE_AGENT_READY_MS=0 FAKE_AGENT_PASTE_ENTER_MS=0",
            agent.project().display(),
            agent.dir.path().join("home").display(),
            agent.codex_home().display(),
        );
        for (k, v) in env {
            command.push_str(&format!(" {k}={v}"));
        }
        command.push_str(&format!(" {}", bin.display()));
        if flavor == "claude" {
            command.push_str(&format!(" --settings {}", agent.settings().display()));
        }
        for a in args {
            command.push_str(&format!(" {}", shell_quote(a)));
        }
        command.push_str("; echo EXIT=$?; sleep 600");
        let status = Command::new("tmux")
            .args(["-L", &agent.socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-x", "120", "-y", "40", &command])
            .env_remove("TMUX")
            .status()
            .expect("tmux");
        assert!(status.success(), "tmux new-session failed");
        let path = agent.tmux(&["display", "-p", "#{socket_path}"]);
        agent.socket_path = Some(PathBuf::from(path.trim()));
        agent
    }

    pub fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    pub fn codex_home(&self) -> PathBuf {
        self.dir.path().join("codex")
    }

    pub fn claude_dir(&self) -> PathBuf {
        self.dir.path().join("home").join(".claude")
    }

    fn settings(&self) -> PathBuf {
        self.dir.path().join("settings.json")
    }

    pub fn hook_log(&self) -> PathBuf {
        self.dir.path().join("hooks.log")
    }

    pub fn notify_log(&self) -> PathBuf {
        self.dir.path().join("notify.log")
    }

    fn write_hook_config(&self) {
        let log = self.hook_log();
        let command = format!("cat >> {}; echo >> {}", log.display(), log.display());
        let events = [
            "SessionStart",
            "SessionEnd",
            "UserPromptSubmit",
            "Stop",
            "StopFailure",
            "PermissionRequest",
            "PreToolUse",
            "PostToolUse",
            "Elicitation",
            "ElicitationResult",
        ];
        let mut hooks = serde_json::Map::new();
        for e in events {
            hooks.insert(
                e.into(),
                serde_json::json!([{"matcher": "", "hooks": [{"type": "command", "command": command}]}]),
            );
        }
        let settings = serde_json::json!({ "hooks": hooks });
        std::fs::write(self.settings(), settings.to_string()).expect("settings");
        std::fs::write(self.codex_home().join("hooks.json"), settings.to_string()).expect("hooks");
        let notify = format!(
            "notify = [\"/bin/sh\", \"-c\", \"printf '%s\\\\n' \\\"$1\\\" >> {}\", \"sh\"]\n",
            self.notify_log().display()
        );
        std::fs::write(self.codex_home().join("config.toml"), notify).expect("config");
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The visible screen.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "0"])
    }

    /// Types literal text.
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "0", "-l", text]);
    }

    /// Presses named keys (`Enter`, `Escape`, `C-c`…).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Writes raw bytes to the pane in one write.
    pub fn raw(&self, bytes: &[u8]) {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut args = vec!["send-keys", "-t", "0", "-H"];
        args.extend(hex.iter().map(String::as_str));
        self.tmux(&args);
    }

    /// Pastes `text` as a bracketed paste (tmux turns its line feeds into CRs).
    pub fn paste(&self, text: &str) {
        self.tmux(&["set-buffer", "-b", "p", "--", text]);
        self.tmux(&["paste-buffer", "-p", "-b", "p", "-t", "0"]);
    }

    /// Waits until the screen satisfies `pred`; fails the test with the screen.
    pub fn wait_screen(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the screen contains `needle`.
    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_screen(needle, |s| s.contains(needle))
    }

    /// Every hook event logged so far, parsed.
    pub fn hooks(&self) -> Vec<Value> {
        read_json_lines(&self.hook_log())
    }

    /// The logged events named `event`.
    pub fn events(&self, event: &str) -> Vec<Value> {
        self.hooks()
            .into_iter()
            .filter(|v| v["hook_event_name"] == event)
            .collect()
    }

    /// Waits until `count` events named `event` were logged; returns them.
    pub fn wait_events(&self, event: &str, count: usize) -> Vec<Value> {
        let deadline = Instant::now() + WAIT;
        loop {
            let found = self.events(event);
            if found.len() >= count {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {count} {event} hook(s); log: {:?}; screen:\n{}",
                self.hooks(),
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the first screen is drawn (raw mode is set by then).
    pub fn wait_ready(&self) {
        let marker = if self.flavor == "claude" {
            "? for shortcuts"
        } else {
            "Ask Codex to do anything"
        };
        self.wait_for(marker);
    }

    /// Types `prompt`, waits until the composer shows its end, and presses Enter.
    pub fn submit(&self, prompt: &str) {
        self.type_text(prompt);
        let tail: String = prompt
            .chars()
            .rev()
            .take(12)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        self.wait_for(&tail);
        self.keys(&["Enter"]);
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .env_remove("TMUX")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        // tmux may leave its socket file behind.
        if let Some(path) = self
            .socket_path
            .take()
            .filter(|p| !p.as_os_str().is_empty())
        {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Parses every complete non-empty line of `path` as JSON (panics on a line that is
/// not). A last line without its newline is still being written: it is left for the
/// next read.
pub fn read_json_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
