//! The MCP hosts `cohort init` registers cohort with, and how each keeps its servers:
//!
//! | host | file | shape |
//! |---|---|---|
//! | Claude Code (project) | `<project>/.mcp.json` | `{"mcpServers": {"cohort": {command, args}}}` |
//! | Codex | `~/.codex/config.toml` | a `[mcp_servers.cohort]` table |
//! | Cursor | `~/.cursor/mcp.json` | as `.mcp.json` |
//! | VS Code (project) | `<project>/.vscode/mcp.json` | `{"servers": {"cohort": {"type": "stdio", command, args}}}` |
//!
//! A host is *found* when its program is on PATH or its configuration directory
//! exists. Every file is read first and changed only when it is understood: a file
//! that does not parse, or whose servers are not where the host keeps them, is left
//! untouched and the reason is given. Other servers and settings are kept; a `cohort`
//! server already there is replaced only when asked (`--force`). Codex's TOML is
//! appended to, never rewritten, so its comments and layout stay as they were.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::init::Launch;

/// A host cohort can register with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    /// Claude Code, through the project's `.mcp.json`.
    Claude,
    /// Codex, through `~/.codex/config.toml`.
    Codex,
    /// Cursor, through `~/.cursor/mcp.json`.
    Cursor,
    /// VS Code, through the project's `.vscode/mcp.json`.
    Vscode,
}

impl Host {
    /// Every host, in the order they are reported.
    pub const ALL: [Host; 4] = [Host::Claude, Host::Codex, Host::Cursor, Host::Vscode];

    /// The name `--hosts` takes.
    pub fn name(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
            Host::Cursor => "cursor",
            Host::Vscode => "vscode",
        }
    }

    /// Parses `--hosts`: `found` (the default), `all`, `none`, or names separated by
    /// commas.
    pub fn parse_list(
        list: &str,
        project: &Path,
        home: Option<&Path>,
    ) -> Result<Vec<Host>, String> {
        match list.trim() {
            "found" => Ok(Host::ALL
                .into_iter()
                .filter(|h| h.found(project, home))
                .collect()),
            "all" => Ok(Host::ALL.to_vec()),
            "none" => Ok(Vec::new()),
            names => names
                .split(',')
                .map(|name| {
                    let name = name.trim();
                    Host::ALL
                        .into_iter()
                        .find(|h| h.name() == name)
                        .ok_or_else(|| {
                            format!(
                                "unknown host {name:?}: give found, all, none, or some of claude, codex, cursor, vscode"
                            )
                        })
                })
                .collect(),
        }
    }

    /// Whether the host is on this machine (or this project uses it).
    pub fn found(self, project: &Path, home: Option<&Path>) -> bool {
        let in_home = |dir: &str| home.is_some_and(|h| h.join(dir).is_dir());
        match self {
            // The project's .mcp.json is read by Claude Code; it is written for every
            // project, as `cohort init` always did.
            Host::Claude => true,
            Host::Codex => on_path("codex") || in_home(".codex"),
            Host::Cursor => on_path("cursor") || in_home(".cursor"),
            Host::Vscode => on_path("code") || project.join(".vscode").is_dir(),
        }
    }

    /// The file the host reads its servers from.
    pub fn file(self, project: &Path, home: Option<&Path>) -> Result<PathBuf, String> {
        let home = || {
            home.map(Path::to_path_buf).ok_or_else(|| {
                format!(
                    "HOME is not set: {}'s configuration cannot be found",
                    self.name()
                )
            })
        };
        Ok(match self {
            Host::Claude => project.join(".mcp.json"),
            Host::Codex => home()?.join(".codex/config.toml"),
            Host::Cursor => home()?.join(".cursor/mcp.json"),
            Host::Vscode => project.join(".vscode/mcp.json"),
        })
    }

    /// Adds cohort to the host's file; says what was done.
    pub fn register(
        self,
        project: &Path,
        home: Option<&Path>,
        launch: &Launch,
        force: bool,
    ) -> Result<String, String> {
        let path = self.file(project, home)?;
        match self {
            Host::Claude | Host::Cursor => add_to_json(&path, "mcpServers", launch.entry(), force),
            Host::Vscode => {
                let mut entry = json!({ "type": "stdio" });
                if let (Some(e), Value::Object(launch)) = (entry.as_object_mut(), launch.entry()) {
                    e.extend(launch);
                }
                add_to_json(&path, "servers", entry, force)
            }
            Host::Codex => add_to_codex(&path, launch, force),
        }
    }
}

/// Whether `name` is a file in one of PATH's directories.
fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

/// Adds `entry` as `cohort` under `key` in the JSON file at `path` (made if missing).
pub fn add_to_json(path: &Path, key: &str, entry: Value, force: bool) -> Result<String, String> {
    let mut doc = match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => json!({}),
        Ok(text) => serde_json::from_str::<Value>(&text).map_err(|e| {
            format!(
                "{} is not JSON ({e}): left untouched; fix or remove it, then run cohort init again",
                path.display()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let Some(root) = doc.as_object_mut() else {
        return Err(format!(
            "{} holds no JSON object: left untouched; fix or remove it, then run cohort init again",
            path.display()
        ));
    };
    let servers = root
        .entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| format!("{}: {key} is not an object: left untouched", path.display()))?;
    if servers.contains_key("cohort") && !force {
        return Ok(format!(
            "{} already has a cohort server; left as it is (--force replaces it)",
            path.display()
        ));
    }
    servers.insert("cohort".into(), entry);
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
    write(path, &text)?;
    Ok(format!("wrote {}", path.display()))
}

/// Adds a `[mcp_servers.cohort]` table to Codex's TOML file (made if missing), by
/// appending it: the rest of the file stays byte for byte.
fn add_to_codex(path: &Path, launch: &Launch, force: bool) -> Result<String, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let doc: toml::Table = toml::from_str(&text).map_err(|e| {
        format!(
            "{} is not TOML ({}): left untouched; fix it, then run cohort init again",
            path.display(),
            e.message()
        )
    })?;
    let present = doc
        .get("mcp_servers")
        .and_then(|s| s.as_table())
        .is_some_and(|s| s.contains_key("cohort"));
    if present {
        let forced = if force {
            "; --force does not rewrite TOML"
        } else {
            ""
        };
        return Ok(format!(
            "{} already has [mcp_servers.cohort]; left as it is (edit it there to change it){forced}",
            path.display()
        ));
    }
    let mut out = text;
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&launch.codex_toml());
    // What was appended must leave the file valid (a dotted key elsewhere could
    // already define the table): check before writing.
    toml::from_str::<toml::Table>(&out).map_err(|e| {
        format!(
            "{} defines mcp_servers in a way cohort's table would clash with ({}): left untouched; add the table yourself",
            path.display(),
            e.message()
        )
    })?;
    write(path, &out)?;
    Ok(format!("wrote {}", path.display()))
}

/// Writes `text` to `path` through a temporary file beside it, so a host reading at the
/// same moment never sees half a file; makes the directory when missing.
fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension(format!("cohort-{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_files_keep_what_they_had_and_refuse_what_they_do_not_understand() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, r#"{"servers":{"other":{"command":"x"}},"keep":1}"#).unwrap();
        add_to_json(&path, "servers", json!({"command": "c"}), false).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["servers"]["other"]["command"], "x");
        assert_eq!(doc["servers"]["cohort"]["command"], "c");
        assert_eq!(doc["keep"], 1);
        for broken in ["{\"servers\": ", "[1]", "{\"servers\": 3}"] {
            std::fs::write(&path, broken).unwrap();
            assert!(
                add_to_json(&path, "servers", json!({}), false).is_err(),
                "{broken}"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
        }
    }

    #[test]
    fn codex_gets_a_table_appended_and_nothing_else_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let before = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        std::fs::write(&path, before).unwrap();
        let launch = Launch::default();
        add_to_codex(&path, &launch, false).unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(after.starts_with(before), "{after}");
        let doc: toml::Table = toml::from_str(&after).unwrap();
        assert_eq!(
            doc["mcp_servers"]["cohort"]["command"].as_str(),
            Some("cohort")
        );
        assert_eq!(doc["mcp_servers"]["other"]["command"].as_str(), Some("x"));
        // Once only.
        let said = add_to_codex(&path, &launch, false).unwrap();
        assert!(said.contains("left as it is"), "{said}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), after);
        // A file that is not TOML is not touched.
        std::fs::write(&path, "model = \n").unwrap();
        assert!(add_to_codex(&path, &launch, false).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "model = \n");
    }
}
