//! The agent CLIs a worker can run, and how each is launched: its program, the flags
//! that give cohort its session id, hooks and notifications, how it resumes, and how
//! it is asked to exit.
//!
//! Only [`launch_line`] knows the command lines; everything else asks an
//! [`AgentKind`] what it can do.

use std::collections::BTreeMap;
use std::path::Path;

use cohort_backends::tmux::quote::sh;
use serde::{Deserialize, Serialize};

/// Which agent CLI a worker runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// Claude Code (`claude`).
    #[default]
    Claude,
    /// OpenAI's Codex CLI (`codex`).
    Codex,
    /// Google's Gemini CLI (`gemini`).
    Gemini,
    /// Aider (`aider`).
    Aider,
    /// Any other command line.
    Custom,
}

impl AgentKind {
    /// Every kind, in the order documented.
    pub const ALL: [AgentKind; 5] = [
        AgentKind::Claude,
        AgentKind::Codex,
        AgentKind::Gemini,
        AgentKind::Aider,
        AgentKind::Custom,
    ];

    /// The name used in arguments and listings.
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
            AgentKind::Aider => "aider",
            AgentKind::Custom => "custom",
        }
    }

    /// The kind named `name`, or an error that lists the choices.
    pub fn parse(name: &str) -> Result<AgentKind, String> {
        let name = name.trim().to_ascii_lowercase();
        AgentKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown agent {name:?}: use claude, codex, gemini, aider, or custom (with a command)"
                )
            })
    }

    /// The kind of a running program, by its process name (`claude`, `codex`…).
    pub fn of_program(command: &str) -> Option<AgentKind> {
        let base = Path::new(command.trim())
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("");
        match base {
            "claude" => Some(AgentKind::Claude),
            "codex" => Some(AgentKind::Codex),
            "gemini" => Some(AgentKind::Gemini),
            "aider" => Some(AgentKind::Aider),
            _ => None,
        }
    }

    /// The programs of agent CLIs whose composer redraws in frames (Enter typed
    /// before a frame settles lands as a newline in the input box): the known kinds'
    /// executables and other agent TUIs cohort has met.
    pub const PROGRAMS: &'static [&'static str] = &[
        "claude",
        "codex",
        "aider",
        "gemini",
        "opencode",
        "cursor-agent",
        "amp",
    ];

    /// The executable started when none is given.
    pub fn default_program(self) -> Option<&'static str> {
        match self {
            AgentKind::Custom => None,
            other => Some(other.name()),
        }
    }

    /// Whether cohort can wire the agent's hooks (or notifications) to itself.
    pub fn reports(self) -> bool {
        matches!(self, AgentKind::Claude | AgentKind::Codex)
    }

    /// What the agent takes as "exit" at its prompt.
    pub fn exit_command(self) -> Option<&'static str> {
        match self {
            AgentKind::Claude | AgentKind::Codex | AgentKind::Aider => Some("/exit"),
            AgentKind::Gemini => Some("/quit"),
            AgentKind::Custom => None,
        }
    }

    /// Whether cohort's hooks see this CLI's permission requests (and a policy can
    /// answer them through the hook's response).
    pub fn answers_permission_hooks(self) -> bool {
        matches!(self, AgentKind::Claude | AgentKind::Codex)
    }

    /// Whether cohort reads the tokens this CLI spends from its transcript.
    pub fn counts_tokens(self) -> bool {
        matches!(self, AgentKind::Claude | AgentKind::Codex)
    }

    /// Whether the agent can continue a session it had before.
    pub fn resumes(self) -> bool {
        matches!(
            self,
            AgentKind::Claude | AgentKind::Codex | AgentKind::Aider
        )
    }
}

/// How a worker's agent is launched: enough to launch it again after a reboot.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchSpec {
    /// Which CLI.
    pub agent: AgentKind,
    /// The executable, when not the CLI's usual name.
    #[serde(default)]
    pub program: Option<String>,
    /// The whole command line (`custom` agents).
    #[serde(default)]
    pub command: Option<String>,
    /// Model to ask for.
    #[serde(default)]
    pub model: Option<String>,
    /// More arguments, passed through.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Start the agent without permission prompts.
    #[serde(default)]
    pub skip_permissions: bool,
    /// The agent was started by hand in a shell (an adopted pane): when it quits,
    /// the shell is back.
    #[serde(default)]
    pub in_shell: bool,
    /// The remote host it runs on (an SSH destination or a declared host); `None`:
    /// this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// What a launch wires in, besides the spec.
#[derive(Clone, Debug, Default)]
pub struct LaunchWiring {
    /// Claude: the session id to take (`--session-id`).
    pub session_id: Option<String>,
    /// Claude: the per-launch settings file with cohort's hooks (`--settings`).
    pub settings: Option<String>,
    /// Codex: the `notify` program and its arguments (cohort's hook command).
    pub notify: Option<Vec<String>>,
    /// Codex: hooks were written for this launch, so their trust dialog is skipped.
    pub bypass_hook_trust: bool,
    /// The agent session to continue.
    pub resume: Option<String>,
}

/// The shell command line that starts (or resumes) the agent.
pub fn launch_line(spec: &LaunchSpec, wiring: &LaunchWiring) -> Result<String, String> {
    if spec.agent == AgentKind::Custom {
        let command = spec
            .command
            .as_deref()
            .filter(|c| !c.trim().is_empty())
            .ok_or("a custom agent needs its command line: pass command")?;
        return Ok(format!("exec {command}"));
    }
    let program = spec
        .program
        .clone()
        .or_else(|| spec.agent.default_program().map(str::to_string))
        .unwrap_or_default();
    let mut words: Vec<String> = vec![program];
    let model = |words: &mut Vec<String>, flag: &str| {
        if let Some(m) = &spec.model {
            words.push(flag.into());
            words.push(m.clone());
        }
    };
    match spec.agent {
        AgentKind::Claude => {
            match (&wiring.resume, &wiring.session_id) {
                (Some(id), _) => words.extend(["--resume".into(), id.clone()]),
                (None, Some(id)) => words.extend(["--session-id".into(), id.clone()]),
                (None, None) => {}
            }
            if let Some(settings) = &wiring.settings {
                words.extend(["--settings".into(), settings.clone()]);
            }
            model(&mut words, "--model");
            if spec.skip_permissions {
                words.push("--dangerously-skip-permissions".into());
            }
        }
        AgentKind::Codex => {
            if let Some(id) = &wiring.resume {
                words.extend(["resume".into(), id.clone()]);
            }
            if wiring.bypass_hook_trust {
                words.push("--dangerously-bypass-hook-trust".into());
            }
            if let Some(notify) = &wiring.notify {
                words.extend(["-c".into(), format!("notify={}", toml_strings(notify))]);
            }
            model(&mut words, "-m");
            if spec.skip_permissions {
                words.push("--dangerously-bypass-approvals-and-sandbox".into());
            }
        }
        AgentKind::Gemini => {
            model(&mut words, "--model");
            if spec.skip_permissions {
                words.push("--yolo".into());
            }
        }
        AgentKind::Aider => {
            if wiring.resume.is_some() {
                words.push("--restore-chat-history".into());
            }
            model(&mut words, "--model");
            if spec.skip_permissions {
                words.push("--yes-always".into());
            }
        }
        AgentKind::Custom => {}
    }
    words.extend(spec.flags.iter().cloned());
    let line: Vec<String> = words.iter().map(|w| sh(w)).collect();
    Ok(format!("exec {}", line.join(" ")))
}

/// A TOML array of basic strings.
fn toml_strings(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| {
            let escaped = s.replace('\\', "\\\\").replace('"', "\\\"");
            format!("\"{escaped}\"")
        })
        .collect();
    format!("[{}]", quoted.join(","))
}

/// Claude Code's project directory name for `cwd` (every character that is not an
/// ASCII letter or digit becomes `-`), under which its transcripts live.
pub fn claude_project_dir(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_gets_its_session_id_and_settings_or_resumes() {
        let spec = LaunchSpec {
            model: Some("opus".into()),
            flags: vec!["--add-dir".into(), "/a b".into()],
            ..LaunchSpec::default()
        };
        let wiring = LaunchWiring {
            session_id: Some("0b9f".into()),
            settings: Some("/s/settings.json".into()),
            ..LaunchWiring::default()
        };
        assert_eq!(
            launch_line(&spec, &wiring).unwrap(),
            "exec claude --session-id 0b9f --settings /s/settings.json --model opus --add-dir '/a b'"
        );
        let resume = LaunchWiring {
            resume: Some("0b9f".into()),
            ..wiring
        };
        assert!(launch_line(&spec, &resume)
            .unwrap()
            .starts_with("exec claude --resume 0b9f --settings"));
    }

    #[test]
    fn codex_gets_notify_as_toml_and_skips_hook_trust() {
        let spec = LaunchSpec {
            agent: AgentKind::Codex,
            skip_permissions: true,
            ..LaunchSpec::default()
        };
        let wiring = LaunchWiring {
            notify: Some(vec!["/bin/cohort".into(), "hook".into(), "a\"b".into()]),
            bypass_hook_trust: true,
            ..LaunchWiring::default()
        };
        let line = launch_line(&spec, &wiring).unwrap();
        assert_eq!(
            line,
            r#"exec codex --dangerously-bypass-hook-trust -c 'notify=["/bin/cohort","hook","a\"b"]' --dangerously-bypass-approvals-and-sandbox"#
        );
        assert!(!line.contains("--full-auto"), "refused by current Codex");
    }

    #[test]
    fn custom_agents_need_a_command() {
        let mut spec = LaunchSpec {
            agent: AgentKind::Custom,
            ..LaunchSpec::default()
        };
        assert!(launch_line(&spec, &LaunchWiring::default()).is_err());
        spec.command = Some("python3 -q".into());
        assert_eq!(
            launch_line(&spec, &LaunchWiring::default()).unwrap(),
            "exec python3 -q"
        );
        assert_eq!(AgentKind::parse("Codex"), Ok(AgentKind::Codex));
        assert!(AgentKind::parse("vim").unwrap_err().contains("custom"));
        assert_eq!(
            AgentKind::of_program("/usr/bin/claude"),
            Some(AgentKind::Claude)
        );
        assert_eq!(
            claude_project_dir(Path::new("/tmp/real_cli/pro.j")),
            "-tmp-real-cli-pro-j"
        );
    }
}
