//! `cohort init`: registers cohort with a project's MCP hosts. It writes (or adds
//! cohort to) the project's `.mcp.json`, which Claude Code reads for the project, and
//! prints the one-line commands and config snippets for Claude Code, Codex and
//! Cursor. The README shows the same snippets, and a test keeps the two equal.

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
}

/// The server entry every host gets: run `cohort mcp` on stdio.
pub fn server_entry() -> Value {
    json!({ "command": "cohort", "args": ["mcp"] })
}

/// The `.mcp.json` shape (Claude Code's project file; Cursor's `mcp.json` is the same).
pub fn mcp_json() -> Value {
    json!({ "mcpServers": { "cohort": server_entry() } })
}

/// Claude Code's one-line registration (user scope).
pub const CLAUDE_ADD: &str = "claude mcp add cohort -- cohort mcp";
/// Codex's one-line registration.
pub const CODEX_ADD: &str = "codex mcp add cohort -- cohort mcp";
/// Codex's `~/.codex/config.toml` entry.
pub const CODEX_TOML: &str = "[mcp_servers.cohort]\ncommand = \"cohort\"\nargs = [\"mcp\"]\n";

/// What `cohort init` prints after writing the file.
pub fn instructions(written: &str) -> String {
    let json = serde_json::to_string_pretty(&mcp_json()).unwrap_or_default();
    format!(
        "{written}\n\n\
         Claude Code reads it for this project. Elsewhere:\n\n\
         Claude Code (all projects):\n    {CLAUDE_ADD}\n\n\
         Codex:\n    {CODEX_ADD}\n  or in ~/.codex/config.toml:\n{}\n\
         Cursor (.cursor/mcp.json in the project, or ~/.cursor/mcp.json):\n{}\n",
        indent(CODEX_TOML),
        indent(&format!("{json}\n")),
    )
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
    let written = write_mcp_json(&dir, args.force)?;
    print!("{}", instructions(&written));
    Ok(())
}

/// Adds cohort to `dir/.mcp.json` (made if missing), keeping every other server;
/// says what it did.
pub fn write_mcp_json(dir: &Path, force: bool) -> Result<String, String> {
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
    servers.insert("cohort".into(), server_entry());
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
        write_mcp_json(dir.path(), false).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["mcpServers"]["other"]["command"], "x");
        assert_eq!(doc["mcpServers"]["cohort"], server_entry());
        assert_eq!(doc["keep"], 1);
        std::fs::write(&path, r#"{"mcpServers":{"cohort":{"command":"old"}}}"#).unwrap();
        let said = write_mcp_json(dir.path(), false).unwrap();
        assert!(said.contains("left as it is"), "{said}");
        write_mcp_json(dir.path(), true).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["mcpServers"]["cohort"], server_entry());
        std::fs::write(&path, "[1]").unwrap();
        assert!(write_mcp_json(dir.path(), false).is_err());
    }
}
