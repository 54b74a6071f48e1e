//! The README's tool reference is exactly what `cohort tools --markdown` prints, so
//! it never drifts from the schemas. Refresh it with `UPDATE_README=1 cargo test --test mcp readme`.

#[test]
fn the_tool_reference_matches_the_schemas() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (start, end) = ("<!-- tools:start -->\n", "<!-- tools:end -->");
    let a = readme
        .find(start)
        .expect("README has the tools:start marker")
        + start.len();
    let b = readme.find(end).expect("README has the tools:end marker");
    let generated = cohort::mcp::tool_reference_markdown();
    if std::env::var("UPDATE_README").is_ok_and(|v| v == "1") {
        let updated = format!("{}{}{}", &readme[..a], generated, &readme[b..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert!(
        readme[a..b] == generated,
        "README.md's tool reference is out of date: run `UPDATE_README=1 cargo test --test mcp readme`"
    );
}

/// The code blocks of the README's quick start (up to the next section).
fn quick_start_blocks() -> Vec<(String, String)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let start = readme.find("## Quick start").expect("a quick start");
    let end = start + readme[start..].find("\n## ").expect("a section after it");
    let mut blocks = Vec::new();
    let mut rest = &readme[start..end];
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let (lang, body) = after.split_once('\n').expect("a fenced block");
        let close = body.find("```").expect("a closed block");
        blocks.push((lang.trim().to_string(), body[..close].to_string()));
        rest = &body[close + 3..];
    }
    blocks
}

/// Every install snippet the README shows is what `cohort init` writes or prints,
/// and `cohort init` writes a `.mcp.json` that says so.
#[test]
fn the_install_snippets_are_what_cohort_init_gives() {
    use cohort::cli::init;
    let blocks = quick_start_blocks();
    let commands: Vec<&str> = blocks
        .iter()
        .filter(|(lang, _)| lang == "sh")
        .flat_map(|(_, body)| body.lines())
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .collect();
    let readme = init::Launch::default();
    for line in [
        "cohort init".to_string(),
        readme.claude_add(),
        readme.codex_add(),
    ] {
        assert!(
            commands.contains(&line.as_str()),
            "{line:?} not in {commands:?}"
        );
    }
    let json: Vec<serde_json::Value> = blocks
        .iter()
        .filter(|(lang, _)| lang == "json")
        .map(|(_, body)| serde_json::from_str(body).expect("the JSON snippet parses"))
        .collect();
    assert_eq!(json, vec![readme.mcp_json()]);
    let toml: Vec<&str> = blocks
        .iter()
        .filter(|(lang, _)| lang == "toml")
        .map(|(_, body)| body.as_str())
        .collect();
    assert_eq!(toml, vec![readme.codex_toml()]);

    // What cohort init writes and prints, run from a binary that is not on PATH: the
    // hosts get its full path, and the options asked for. The machine has Codex (its
    // directory) and the project uses VS Code; Cursor is nowhere.
    let dir = tempfile::tempdir().unwrap();
    let server = crate::support::TestServer::new();
    let home = server.home();
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::write(home.join(".codex/config.toml"), "model = \"o3\"\n").unwrap();
    std::fs::create_dir_all(dir.path().join(".vscode")).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_cohort"))
        .args([
            "init",
            "--toolsets",
            "core,workers",
            "--role",
            "builder",
            "--dir",
        ])
        .arg(dir.path())
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home)
        .env("COHORT_TMUX_SOCKET", &server.socket)
        .env("COHORT_STATE_DIR", server.state_dir())
        .env_remove("TMUX")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let own = std::path::Path::new(env!("CARGO_BIN_EXE_cohort"))
        .canonicalize()
        .unwrap();
    let launch = init::Launch {
        command: own.display().to_string(),
        args: ["mcp", "--toolsets", "core,workers", "--role", "builder"]
            .map(String::from)
            .to_vec(),
    };
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(".mcp.json")).unwrap())
            .unwrap();
    assert_eq!(written, launch.mcp_json());
    let printed = String::from_utf8_lossy(&output.stdout);
    for line in [launch.claude_add(), launch.codex_add()] {
        assert!(printed.contains(&line), "{line:?} not printed: {printed}");
    }
    for line in launch.codex_toml().lines() {
        assert!(printed.contains(line), "{line:?} not printed: {printed}");
    }
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("cohort is not on PATH"), "{said}");
    // The hosts found got it, in their own shapes; the rest of their files stayed.
    let codex = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(codex.starts_with("model = \"o3\"\n"), "{codex}");
    assert!(codex.ends_with(&launch.codex_toml()), "{codex}");
    let vscode: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(".vscode/mcp.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(vscode["servers"]["cohort"]["type"], "stdio");
    assert_eq!(vscode["servers"]["cohort"]["command"], launch.command);
    assert!(!home.join(".cursor").exists());
    // It was started once, as a host would, and listed its tools.
    assert!(
        printed.contains("starts and offers ") && printed.contains(" tools"),
        "{printed}"
    );
}
