//! `cohort init`: registers cohort with the MCP hosts of a project and a machine. It
//! adds cohort to the project's `.mcp.json` (Claude Code) and to the files of the other
//! hosts found (Codex, Cursor, VS Code; see `cli/hosts.rs`), then starts the server
//! once as a host would and lists its tools, so a registration that cannot start is
//! known now, not in the host. It also prints the one-line commands and config
//! snippets for registering by hand; the README shows the same snippets for `cohort
//! mcp`, and a test keeps the two equal. The hosts are given `cohort` when it is on PATH
//! and is this binary, else this binary's full path (a host would fail to start a
//! `cohort` it cannot find), with the toolsets, role and agent asked for.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};

use super::hosts::Host;

/// `cohort init` arguments.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The project directory (default: the current one).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Replace an existing `cohort` entry in the hosts' JSON files.
    #[arg(long)]
    pub force: bool,
    /// The hosts to register with: found (those on this machine, and Claude Code
    /// through the project's .mcp.json), all, none, or some of claude, codex, cursor,
    /// vscode (comma-separated).
    #[arg(long, value_name = "LIST", default_value = "found")]
    pub hosts: String,
    /// Do not start the server to check that it runs.
    #[arg(long)]
    pub no_verify: bool,
    /// Toolsets the server offers: core, layout, team, workers, orchestration
    /// (comma-separated), or all (default: core).
    #[arg(long, value_name = "LIST")]
    pub toolsets: Option<String>,
    /// Serve with this role (readonly, monitor, tester, builder, devops, orchestrator, or
    /// a custom one).
    #[arg(long, value_name = "ROLE")]
    pub role: Option<String>,
    /// Serve this registered agent: only the tools its role allows.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
}

/// How a host starts cohort: the program and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// `cohort` when that is on PATH, else the full path of this binary.
    pub command: String,
    /// `mcp` and its options.
    pub args: Vec<String>,
}

impl Default for Launch {
    /// What the README shows: `cohort mcp`.
    fn default() -> Self {
        Launch {
            command: "cohort".into(),
            args: vec!["mcp".into()],
        }
    }
}

impl Launch {
    /// The launch for these arguments, from the binary running now; with a note when
    /// `cohort` on PATH is not this binary (or there is none), so the full path is used.
    pub fn for_args(args: &InitArgs) -> (Launch, Option<String>) {
        let mut launch = Launch::default();
        for (flag, value) in [
            ("--toolsets", &args.toolsets),
            ("--role", &args.role),
            ("--agent", &args.agent),
        ] {
            if let Some(value) = value {
                launch.args.extend([flag.to_string(), value.clone()]);
            }
        }
        let own = std::env::current_exe().and_then(|p| p.canonicalize());
        let on_path = find_on_path("cohort").and_then(|p| p.canonicalize().ok());
        let note = match (&own, &on_path) {
            (Ok(own), Some(found)) if own == found => None,
            (Ok(own), found) => {
                launch.command = own.display().to_string();
                Some(match found {
                    Some(found) => format!(
                        "note: the cohort on PATH ({}) is not this one: the hosts are given {}",
                        found.display(),
                        own.display()
                    ),
                    None => format!(
                        "note: cohort is not on PATH: the hosts are given its full path, {}",
                        own.display()
                    ),
                })
            }
            (Err(_), _) => None,
        };
        (launch, note)
    }

    /// The server entry every host gets.
    pub fn entry(&self) -> Value {
        json!({ "command": self.command, "args": self.args })
    }

    /// The `.mcp.json` shape (Claude Code's project file; Cursor's `mcp.json` is the
    /// same).
    pub fn mcp_json(&self) -> Value {
        json!({ "mcpServers": { "cohort": self.entry() } })
    }

    /// The command line, quoted for a shell.
    pub fn line(&self) -> String {
        std::iter::once(&self.command)
            .chain(&self.args)
            .map(|w| cohort_backends::tmux::quote::sh(w))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Claude Code's one-line registration (user scope).
    pub fn claude_add(&self) -> String {
        format!("claude mcp add cohort -- {}", self.line())
    }

    /// Codex's one-line registration.
    pub fn codex_add(&self) -> String {
        format!("codex mcp add cohort -- {}", self.line())
    }

    /// Codex's `~/.codex/config.toml` entry.
    pub fn codex_toml(&self) -> String {
        let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
        format!(
            "[mcp_servers.cohort]\ncommand = {}\nargs = [{}]\n",
            quoted(&self.command),
            self.args
                .iter()
                .map(|a| quoted(a))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// What `cohort init` prints after registering: what it did, then how to register
    /// by hand.
    pub fn instructions(&self, written: &str) -> String {
        let json = serde_json::to_string_pretty(&self.mcp_json()).unwrap_or_default();
        format!(
            "{written}\n\n\
             To register by hand elsewhere:\n\n\
             Claude Code (all projects):\n    {}\n\n\
             Codex:\n    {}\n  or in ~/.codex/config.toml:\n{}\n\
             Cursor (.cursor/mcp.json in the project, or ~/.cursor/mcp.json):\n{}\n",
            self.claude_add(),
            self.codex_add(),
            indent(&self.codex_toml()),
            indent(&format!("{json}\n")),
        )
    }
}

/// The first `name` in the directories of PATH that is a file.
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// Registers cohort with the hosts asked for, checks that it starts, and prints how
/// to register it elsewhere.
pub fn run(args: &InitArgs) -> Result<(), String> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?,
    };
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute());
    let hosts = Host::parse_list(&args.hosts, &dir, home.as_deref())?;
    let (launch, note) = Launch::for_args(args);
    if let Some(note) = note {
        eprintln!("{note}");
    }
    let mut report = Vec::new();
    let mut refused = 0;
    for host in &hosts {
        match host.register(&dir, home.as_deref(), &launch, args.force) {
            Ok(done) => report.push(format!("{}: {done}", host.name())),
            Err(e) => {
                refused += 1;
                report.push(format!("{}: {e}", host.name()));
            }
        }
    }
    if hosts.is_empty() {
        report.push("no host registered (--hosts none)".into());
    }
    print!("{}", launch.instructions(&report.join("\n")));
    if !args.no_verify {
        match verify(&launch, Duration::from_secs(30)) {
            Ok(tools) => println!(
                "checked: `{}` starts and offers {tools} tools",
                launch.line()
            ),
            Err(e) => {
                return Err(format!(
                    "`{}` did not start as an MCP server: {e} (run `cohort doctor`)",
                    launch.line()
                ))
            }
        }
    }
    if refused > 0 {
        return Err(format!(
            "{refused} host file(s) were left untouched: see above"
        ));
    }
    Ok(())
}

/// Starts the server as a host would (`launch` on stdio), initializes an MCP session
/// and lists the tools; their number. The server is stopped after.
pub fn verify(launch: &Launch, limit: Duration) -> Result<usize, String> {
    let mut child = std::process::Command::new(&launch.command)
        .args(&launch.args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start it: {e}"))?;
    let stdout = child.stdout.take().expect("piped stdout");
    // Replies are read on a thread, so a server that never answers cannot hold us.
    let (replies, answers) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if let Ok(value) = serde_json::from_str::<Value>(&line) {
                if replies.send(value).is_err() {
                    return;
                }
            }
        }
    });
    let mut session = Probe {
        stdin: child.stdin.take().expect("piped stdin"),
        answers,
        deadline: std::time::Instant::now() + limit,
    };
    let result = session.tools();
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// One MCP session over a server's stdio, as [`verify`] holds it.
struct Probe {
    stdin: std::process::ChildStdin,
    answers: std::sync::mpsc::Receiver<Value>,
    deadline: std::time::Instant,
}

impl Probe {
    /// Initializes the session and lists the tools; their number.
    fn tools(&mut self) -> Result<usize, String> {
        self.ask(
            1,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "cohort-init", "version": env!("CARGO_PKG_VERSION")},
            }),
        )?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        let listed = self.ask(2, "tools/list", json!({}))?;
        Ok(listed["tools"].as_array().map_or(0, Vec::len))
    }

    fn send(&mut self, message: &Value) -> Result<(), String> {
        writeln!(self.stdin, "{message}").map_err(|e| format!("it closed its input: {e}"))
    }

    /// Sends a request and waits for its answer's result.
    fn ask(&mut self, id: u64, method: &str, params: Value) -> Result<Value, String> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let left = self
                .deadline
                .saturating_duration_since(std::time::Instant::now());
            let reply = self
                .answers
                .recv_timeout(left)
                .map_err(|_| format!("no answer to {method} in time"))?;
            if reply["id"] != id {
                continue;
            }
            if let Some(error) = reply.get("error") {
                return Err(format!("{method} failed: {error}"));
            }
            return Ok(reply["result"].clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_servers_are_kept_and_cohort_is_not_replaced_unasked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".mcp.json");
        std::fs::write(
            &path,
            r#"{"mcpServers":{"other":{"command":"x"}},"keep":1}"#,
        )
        .unwrap();
        let launch = Launch::default();
        let write =
            |force| super::super::hosts::add_to_json(&path, "mcpServers", launch.entry(), force);
        write(false).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["mcpServers"]["other"]["command"], "x");
        assert_eq!(doc["mcpServers"]["cohort"], launch.entry());
        assert_eq!(doc["keep"], 1);
        std::fs::write(&path, r#"{"mcpServers":{"cohort":{"command":"old"}}}"#).unwrap();
        let said = write(false).unwrap();
        assert!(said.contains("left as it is"), "{said}");
        write(true).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["mcpServers"]["cohort"], launch.entry());
        std::fs::write(&path, "[1]").unwrap();
        assert!(write(false).is_err());
    }
}
