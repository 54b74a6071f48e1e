//! `cohort init`: registers cohort with a project's MCP hosts. It writes (or adds
//! cohort to) the project's `.mcp.json`, which Claude Code reads for the project, and
//! prints the one-line commands and config snippets for Claude Code, Codex and
//! Cursor. The README shows the same snippets for `cohort mcp`, and a test keeps the
//! two equal. The hosts are given `cohort` when it is on PATH and is this binary,
//! else this binary's full path (a host would fail to start a `cohort` it cannot
//! find), with the toolsets, role and agent asked for.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{json, Value};

/// `cohort init` arguments.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The project directory (default: the current one).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Replace an existing `cohort` entry in .mcp.json.
    #[arg(long)]
    pub force: bool,
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

    fn line(&self) -> String {
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

    /// What `cohort init` prints after writing the file.
    pub fn instructions(&self, written: &str) -> String {
        let json = serde_json::to_string_pretty(&self.mcp_json()).unwrap_or_default();
        format!(
            "{written}\n\n\
             Claude Code reads it for this project. Elsewhere:\n\n\
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

/// Writes `.mcp.json` and prints how to register cohort elsewhere.
pub fn run(args: &InitArgs) -> Result<(), String> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?,
    };
    let (launch, note) = Launch::for_args(args);
    let written = write_mcp_json(&dir, &launch, args.force)?;
    if let Some(note) = note {
        eprintln!("{note}");
    }
    print!("{}", launch.instructions(&written));
    Ok(())
}

/// Adds cohort to `dir/.mcp.json` (made if missing), keeping every other server;
/// says what it did.
pub fn write_mcp_json(dir: &Path, launch: &Launch, force: bool) -> Result<String, String> {
    let path = dir.join(".mcp.json");
    let mut doc = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str::<Value>(&text).map_err(|e| {
            format!(
                "{} is not JSON ({e}): fix or remove it, then run cohort init again",
                path.display()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let Some(root) = doc.as_object_mut() else {
        return Err(format!(
            "{} holds no JSON object: fix or remove it, then run cohort init again",
            path.display()
        ));
    };
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| format!("{}: mcpServers is not an object", path.display()))?;
    if servers.contains_key("cohort") && !force {
        return Ok(format!(
            "{} already has a cohort server; left as it is (--force replaces it)",
            path.display()
        ));
    }
    servers.insert("cohort".into(), launch.entry());
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(format!(
        "wrote {} (cohort as an MCP server on stdio)",
        path.display()
    ))
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
        write_mcp_json(dir.path(), &launch, false).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["mcpServers"]["other"]["command"], "x");
        assert_eq!(doc["mcpServers"]["cohort"], launch.entry());
        assert_eq!(doc["keep"], 1);
        std::fs::write(&path, r#"{"mcpServers":{"cohort":{"command":"old"}}}"#).unwrap();
        let said = write_mcp_json(dir.path(), &launch, false).unwrap();
        assert!(said.contains("left as it is"), "{said}");
        write_mcp_json(dir.path(), &launch, true).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["mcpServers"]["cohort"], launch.entry());
        std::fs::write(&path, "[1]").unwrap();
        assert!(write_mcp_json(dir.path(), &launch, false).is_err());
    }
}
