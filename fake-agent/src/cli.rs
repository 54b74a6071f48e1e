//! Command lines as the real CLIs take them, with their error messages and exit
//! codes for options they do not know.

use std::path::PathBuf;

/// The version each flavour reports (the release the fake was modelled on).
pub const CLAUDE_VERSION: &str = "2.1.197";
/// See [`CLAUDE_VERSION`].
pub const CODEX_VERSION: &str = "0.169.0";

/// Which CLI to imitate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Claude Code (`claude`).
    Claude,
    /// Codex CLI (`codex`).
    Codex,
}

impl Flavor {
    /// The flavour named by `name` (`claude` or `codex`).
    pub fn from_name(name: &str) -> Option<Flavor> {
        match name {
            "claude" => Some(Flavor::Claude),
            "codex" => Some(Flavor::Codex),
            _ => None,
        }
    }
}

/// Everything the command line asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The CLI imitated.
    pub flavor: Flavor,
    /// A prompt to submit as the first turn.
    pub prompt: Option<String>,
    /// The model shown and reported to hooks.
    pub model: String,
    /// Claude: `--session-id`.
    pub session_id: Option<String>,
    /// Claude `--resume <id>` or `codex resume <id>`.
    pub resume: Option<String>,
    /// Claude: `--settings` (a file path or inline JSON).
    pub settings: Option<String>,
    /// The permission mode reported to hooks.
    pub permission_mode: String,
    /// Approvals are never asked (`--dangerously-skip-permissions`,
    /// `--dangerously-bypass-approvals-and-sandbox`, `-a never`, `bypassPermissions`).
    pub skip_approvals: bool,
    /// Codex: `-c key=value` overrides, in order.
    pub config: Vec<(String, String)>,
    /// Codex: `-C <dir>`.
    pub cd: Option<PathBuf>,
    /// Codex draws on the alternate screen unless `--no-alt-screen`.
    pub alt_screen: bool,
    /// Codex: `--dangerously-bypass-hook-trust`.
    pub bypass_hook_trust: bool,
}

/// What to do after parsing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Start the TUI.
    Run(Options),
    /// Print this on stdout and exit 0 (`--version`, `--help`).
    Print(String),
}

/// A command line the real CLI would refuse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct UsageError {
    /// What the real CLI prints on stderr.
    pub message: String,
    /// Its exit status.
    pub code: i32,
}

/// Parses `args` (without argv\[0\]); `argv0` picks the flavour unless `--flavor` does.
pub fn parse(argv0: &str, args: &[String]) -> Result<Command, UsageError> {
    let mut flavor = std::path::Path::new(argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(Flavor::from_name);
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if let Some(name) = arg.strip_prefix("--flavor=") {
            flavor = Some(flavor_named(name)?);
        } else if arg == "--flavor" {
            let name = it.next().map(String::as_str).unwrap_or("");
            flavor = Some(flavor_named(name)?);
        } else {
            rest.push(arg.clone());
        }
    }
    match flavor {
        Some(Flavor::Claude) => parse_claude(&rest),
        Some(Flavor::Codex) => parse_codex(&rest),
        None => Err(UsageError {
            message: "cohort-fake-agent: say which CLI to imitate: run it as `claude` or \
                      `codex` (a symlink), or pass --flavor claude|codex"
                .into(),
            code: 2,
        }),
    }
}

fn flavor_named(name: &str) -> Result<Flavor, UsageError> {
    Flavor::from_name(name).ok_or_else(|| UsageError {
        message: format!("cohort-fake-agent: unknown flavor {name:?}; use claude or codex"),
        code: 2,
    })
}

fn base(flavor: Flavor) -> Options {
    Options {
        flavor,
        prompt: None,
        model: match flavor {
            Flavor::Claude => "claude-opus-4-8".into(),
            Flavor::Codex => "gpt-5".into(),
        },
        session_id: None,
        resume: None,
        settings: None,
        permission_mode: "default".into(),
        skip_approvals: false,
        config: Vec::new(),
        cd: None,
        alt_screen: flavor == Flavor::Codex,
        bypass_hook_trust: false,
    }
}

/// Splits `--name=value` into its parts.
fn split_eq(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((name, value)) if name.starts_with("--") => (name, Some(value)),
        _ => (arg, None),
    }
}

struct Args<'a> {
    it: std::slice::Iter<'a, String>,
}

impl<'a> Args<'a> {
    fn value(
        &mut self,
        inline: Option<&'a str>,
        missing: impl FnOnce() -> UsageError,
    ) -> Result<String, UsageError> {
        match inline {
            Some(v) => Ok(v.to_string()),
            None => self.it.next().cloned().ok_or_else(missing),
        }
    }
}

const CLAUDE_MODES: [&str; 6] = [
    "acceptEdits",
    "auto",
    "bypassPermissions",
    "default",
    "dontAsk",
    "plan",
];

fn claude_error(message: String) -> UsageError {
    UsageError { message, code: 1 }
}

fn parse_claude(args: &[String]) -> Result<Command, UsageError> {
    let mut o = base(Flavor::Claude);
    let mut positional = Vec::new();
    let mut a = Args { it: args.iter() };
    while let Some(arg) = a.it.next() {
        let (name, inline) = split_eq(arg);
        let missing = || claude_error(format!("error: option '{name} <value>' argument missing"));
        match name {
            "-v" | "--version" => {
                return Ok(Command::Print(format!("{CLAUDE_VERSION} (Claude Code)\n")))
            }
            "-h" | "--help" => {
                return Ok(Command::Print(
                    "Usage: claude [options] [command] [prompt]\n".into(),
                ))
            }
            "--session-id" => {
                let id = a.value(inline, missing)?;
                if uuid::Uuid::parse_str(&id).is_err() {
                    return Err(claude_error(
                        "Error: Invalid session ID. Must be a valid UUID.".into(),
                    ));
                }
                o.session_id = Some(id);
            }
            "--settings" => o.settings = Some(a.value(inline, missing)?),
            "--model" => o.model = a.value(inline, missing)?,
            "-r" | "--resume" => o.resume = Some(a.value(inline, missing)?),
            "--dangerously-skip-permissions" => {
                o.skip_approvals = true;
                o.permission_mode = "bypassPermissions".into();
            }
            "--permission-mode" => {
                let mode = a.value(inline, missing)?;
                if !CLAUDE_MODES.contains(&mode.as_str()) {
                    return Err(claude_error(format!(
                        "error: option '--permission-mode <mode>' argument '{mode}' is invalid. \
                         Allowed choices are {}.",
                        CLAUDE_MODES.join(", ")
                    )));
                }
                o.skip_approvals = mode == "bypassPermissions";
                o.permission_mode = mode;
            }
            "--add-dir"
            | "--append-system-prompt"
            | "--system-prompt"
            | "--allowedTools"
            | "--allowed-tools"
            | "--disallowedTools"
            | "--disallowed-tools"
            | "--mcp-config"
            | "--agent"
            | "--effort"
            | "-n"
            | "--name"
            | "--fallback-model" => {
                a.value(inline, missing)?;
            }
            "--verbose"
            | "--strict-mcp-config"
            | "--ide"
            | "--fork-session"
            | "--allow-dangerously-skip-permissions" => {}
            "-p" | "--print" | "-c" | "--continue" => {
                return Err(claude_error(format!(
                    "error: option '{name}' is not modelled by this fake (it imitates the \
                     interactive TUI only)"
                )))
            }
            "--" => positional.extend(a.it.by_ref().cloned()),
            _ if name.starts_with('-') && name.len() > 1 => {
                return Err(claude_error(format!("error: unknown option '{name}'")))
            }
            _ => positional.push(arg.clone()),
        }
    }
    if positional.len() > 1 {
        return Err(claude_error(format!(
            "error: too many arguments. Expected 1 argument but got {}.",
            positional.len()
        )));
    }
    o.prompt = positional.pop();
    Ok(Command::Run(o))
}

fn codex_error(arg: &str) -> UsageError {
    UsageError {
        message: format!(
            "error: unexpected argument '{arg}' found\n\n  tip: to pass '{arg}' as a value, \
             use '-- {arg}'\n\nUsage: codex [OPTIONS] [PROMPT]\n       codex [OPTIONS] \
             <COMMAND> [ARGS]\n\nFor more information, try '--help'."
        ),
        code: 2,
    }
}

fn parse_codex(args: &[String]) -> Result<Command, UsageError> {
    let mut o = base(Flavor::Codex);
    let mut positional = Vec::new();
    let mut a = Args { it: args.iter() };
    while let Some(arg) = a.it.next() {
        let (name, inline) = split_eq(arg);
        let missing = || UsageError {
            message: format!(
                "error: a value is required for '{name} <VALUE>' but none was supplied"
            ),
            code: 2,
        };
        match name {
            "-V" | "--version" => {
                return Ok(Command::Print(format!("codex-cli {CODEX_VERSION}\n")))
            }
            "-h" | "--help" => {
                return Ok(Command::Print(
                    "Usage: codex [OPTIONS] [PROMPT]\n       codex [OPTIONS] <COMMAND> [ARGS]\n"
                        .into(),
                ))
            }
            "-m" | "--model" => o.model = a.value(inline, missing)?,
            "-c" | "--config" => {
                let kv = a.value(inline, missing)?;
                let Some((k, v)) = kv.split_once('=') else {
                    return Err(UsageError {
                        message: format!(
                            "error: invalid value '{kv}' for '--config <key=value>': expected \
                             key=value"
                        ),
                        code: 2,
                    });
                };
                apply_codex_override(&mut o, k.trim(), v.trim());
                o.config.push((k.trim().to_string(), v.trim().to_string()));
            }
            "-C" | "--cd" => o.cd = Some(PathBuf::from(a.value(inline, missing)?)),
            "-a" | "--ask-for-approval" => {
                let policy = a.value(inline, missing)?;
                apply_codex_override(&mut o, "approval_policy", &policy);
            }
            "-s" | "--sandbox" | "-i" | "--image" | "-p" | "--profile" | "--enable"
            | "--disable" | "--local-provider" => {
                a.value(inline, missing)?;
            }
            "--search" | "--oss" | "--strict-config" => {}
            "--no-alt-screen" => o.alt_screen = false,
            "--dangerously-bypass-approvals-and-sandbox" | "--yolo" => {
                o.skip_approvals = true;
                o.permission_mode = "bypassPermissions".into();
            }
            "--dangerously-bypass-hook-trust" => o.bypass_hook_trust = true,
            "--" => positional.extend(a.it.by_ref().cloned()),
            _ if name.starts_with('-') && name.len() > 1 => return Err(codex_error(name)),
            _ => positional.push(arg.clone()),
        }
    }
    let mut positional = positional.into_iter();
    match positional.next() {
        Some(sub) if sub == "resume" => {
            o.resume = Some(positional.next().ok_or_else(|| {
                UsageError {
                    message: "codex resume: this fake needs the session id (the picker and --last \
                          are not modelled)"
                        .into(),
                    code: 2,
                }
            })?);
            o.prompt = positional.next();
        }
        first => o.prompt = first,
    }
    if let Some(extra) = positional.next() {
        return Err(codex_error(&extra));
    }
    Ok(Command::Run(o))
}

fn apply_codex_override(o: &mut Options, key: &str, value: &str) {
    let value = value.trim_matches('"');
    match key {
        "model" => o.model = value.to_string(),
        "approval_policy" if value == "never" => o.skip_approvals = true,
        "approval_policy" => o.skip_approvals = false,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(argv0: &str, args: &[&str]) -> Result<Options, UsageError> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(argv0, &args)? {
            Command::Run(o) => Ok(o),
            Command::Print(p) => panic!("printed {p}"),
        }
    }

    #[test]
    fn claude_flags() {
        let o = run(
            "/x/claude",
            &[
                "--session-id",
                "11111111-2222-3333-4444-555555555555",
                "--settings=/s.json",
                "--model",
                "m",
                "hello",
            ],
        )
        .unwrap();
        assert_eq!(o.flavor, Flavor::Claude);
        assert_eq!(o.prompt.as_deref(), Some("hello"));
        assert_eq!(o.settings.as_deref(), Some("/s.json"));
        assert_eq!(o.model, "m");
        let e = run("claude", &["--bogus"]).unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.code),
            ("error: unknown option '--bogus'", 1)
        );
        assert!(run("claude", &["--session-id", "nope"]).is_err());
        assert!(run("claude", &["--permission-mode", "x"]).is_err());
        assert!(
            run("claude", &["--dangerously-skip-permissions"])
                .unwrap()
                .skip_approvals
        );
    }

    #[test]
    fn codex_flags_and_resume() {
        let o = run(
            "codex",
            &[
                "-c",
                "notify=[\"a\"]",
                "--model",
                "o3",
                "resume",
                "abc",
                "go on",
            ],
        )
        .unwrap();
        assert_eq!(o.resume.as_deref(), Some("abc"));
        assert_eq!(o.prompt.as_deref(), Some("go on"));
        assert_eq!(o.model, "o3");
        assert_eq!(o.config, vec![("notify".into(), "[\"a\"]".into())]);
        assert_eq!(run("codex", &["--full-auto"]).unwrap_err().code, 2);
        assert!(
            run("codex", &["--dangerously-bypass-approvals-and-sandbox"])
                .unwrap()
                .skip_approvals
        );
        assert!(
            run("other", &["--flavor", "codex", "-a", "never"])
                .unwrap()
                .skip_approvals
        );
        assert!(run("other", &[]).is_err());
    }
}
