//! The architecture's invariants (ARCHITECTURE.md), checked against the code itself:
//! which crate may depend on which, what a crate may not know, and the one input path.
//! The compiler keeps the order of the crates; these checks keep what it cannot see.

use std::path::{Path, PathBuf};

/// The workspace's root folder.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The names of the crates `crate_dir`'s manifest depends on (not dev or build).
fn dependencies(crate_dir: &str) -> Vec<String> {
    let path = root().join(crate_dir).join("Cargo.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let manifest: toml::Table = text.parse().unwrap_or_else(|e| panic!("{path:?}: {e}"));
    manifest
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|d| d.keys().cloned().collect())
        .unwrap_or_default()
}

/// Every Rust file below `dir`, with its text.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    out
}

/// The lines of `text` that are code: comments and doc comments left out.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, line)| {
        let code = line.split("//").next().unwrap_or("");
        (!code.trim().is_empty()).then_some((i + 1, code))
    })
}

/// The workspace's crates from the bottom up, and the workspace crates each may use.
const LAYERS: &[(&str, &[&str])] = &[
    ("backends", &[]),
    ("reducers", &[]),
    ("terminal", &["cohort-backends", "cohort-reducers"]),
    (
        "workers",
        &["cohort-backends", "cohort-reducers", "cohort-terminal"],
    ),
    (
        "orchestration",
        &["cohort-backends", "cohort-terminal", "cohort-workers"],
    ),
];

#[test]
fn each_crate_depends_only_on_the_layers_below_it() {
    for (dir, allowed) in LAYERS {
        let ours: Vec<String> = dependencies(dir)
            .into_iter()
            .filter(|d| d.starts_with("cohort"))
            .collect();
        for dependency in &ours {
            assert!(
                allowed.contains(&dependency.as_str()),
                "{dir} depends on {dependency}, which is not below it (allowed: {allowed:?})"
            );
        }
    }
}

#[test]
fn only_the_binary_crate_knows_wire_formats() {
    // The MCP, gRPC and HTTP front ends and their schemas belong to `cohort` alone.
    const WIRE: &[&str] = &[
        "rmcp",
        "tonic",
        "prost",
        "axum",
        "schemars",
        "tonic-prost",
        "clap",
    ];
    for dir in ["terminal", "workers", "orchestration", "reducers"] {
        for dependency in dependencies(dir) {
            assert!(
                !WIRE.contains(&dependency.as_str()),
                "{dir} depends on {dependency}: wire formats belong to the cohort crate"
            );
        }
    }
}

#[test]
fn the_terminal_knows_no_agent_cli() {
    // Agent CLIs are the workers' business: the terminal is told what it needs
    // (programs that redraw in frames) through its API.
    const CLIS: &[&str] = &[
        "claude",
        "codex",
        "gemini",
        "aider",
        "cursor-agent",
        "opencode",
    ];
    for (path, text) in sources(&root().join("terminal/src")) {
        for (n, code) in code_lines(&text) {
            let lower = code.to_ascii_lowercase();
            if let Some(cli) = CLIS.iter().find(|c| lower.contains(*c)) {
                panic!(
                    "{}:{n} names the agent CLI {cli:?}: {}",
                    path.display(),
                    code.trim()
                );
            }
        }
    }
}

#[test]
fn reducers_do_no_io() {
    assert!(
        !dependencies("reducers").iter().any(|d| d == "tokio"),
        "the reducers depend on tokio"
    );
    const IO: &[&str] = &[
        "std::fs",
        "std::net",
        "std::process",
        "std::io::stdin",
        "File::",
        "tokio",
    ];
    for (path, text) in sources(&root().join("reducers/src")) {
        // The crate's unit tests read their fixtures: its test module
        // (`reducers/src/tests.rs`) and the `#[cfg(test)]` module that ends a file.
        if path.ends_with("reducers/src/tests.rs") {
            continue;
        }
        let shipped = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, code) in code_lines(shipped) {
            if let Some(io) = IO.iter().find(|io| code.contains(*io)) {
                panic!("{}:{n} does I/O ({io}): {}", path.display(), code.trim());
            }
        }
    }
}

#[test]
fn backends_know_no_engine() {
    let ours: Vec<String> = dependencies("backends")
        .into_iter()
        .filter(|d| d.starts_with("cohort"))
        .collect();
    assert!(ours.is_empty(), "the backends depend on {ours:?}");
}

#[test]
fn every_keystroke_goes_through_the_input_type() {
    // The backend's typing methods are called in one place: the terminal's input
    // module, which applies the rules once. (clippy's disallowed-methods says the
    // same while editing; this check holds even where clippy is not run.)
    // `paste` is also the input turn's own method (`turn.paste`), which is the way in.
    const TYPING: &[&str] = &[
        ".send_text(",
        ".send_keys(",
        ".send_input(",
        ".send_input_guarded(",
    ];
    let typing = |code: &str| {
        TYPING.iter().any(|t| code.contains(t))
            || (code.contains(".paste(") && !code.contains("turn.paste("))
    };
    // The doctor checks the shell integration in a scratch pane of its own,
    // with no engine above the backend.
    let doctor = root().join("src/cli/doctor.rs");
    let input = root().join("terminal/src/input");
    let mut found = Vec::new();
    for dir in ["src", "terminal/src", "workers/src", "orchestration/src"] {
        for (path, text) in sources(&root().join(dir)) {
            if path.starts_with(&input) || path == doctor {
                continue;
            }
            for (n, code) in code_lines(&text) {
                if typing(code) {
                    found.push(format!("{}:{n}: {}", path.display(), code.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "typing outside the input type:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_slice_of_one_type_is_implemented_outside_its_crate() {
    // `impl Terminal` lives in the terminal crate, `impl Workers` in the workers
    // crate, `impl Orchestrator` in the orchestration crate: a type is not cut into
    // slices across folders.
    for (ty, home) in [
        ("Terminal", "terminal/src"),
        ("Workers", "workers/src"),
        ("Orchestrator", "orchestration/src"),
        ("Engine", "src/engine"),
    ] {
        for dir in ["src", "terminal/src", "workers/src", "orchestration/src"] {
            for (path, text) in sources(&root().join(dir)) {
                if path.starts_with(root().join(home)) {
                    continue;
                }
                let opening = format!("impl {ty} {{");
                assert!(
                    !text.lines().any(|l| l.starts_with(&opening)),
                    "{} implements {ty}, whose home is {home}",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn the_checked_in_protobuf_code_comes_from_the_schemas_as_they_are() {
    // `tools/protogen` writes each file with the FNV-1a hash of the schema it came
    // from, on its second line.
    fn fnv1a64(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
            (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }
    for (schema, generated) in [
        (
            "backends/proto/iterm2.proto",
            "backends/src/iterm2/proto_generated.rs",
        ),
        ("proto/cohort.proto", "src/grpc/proto_generated.rs"),
    ] {
        let bytes = std::fs::read(root().join(schema)).unwrap();
        let code = std::fs::read_to_string(root().join(generated)).unwrap();
        let recorded = code
            .lines()
            .nth(1)
            .and_then(|l| l.strip_prefix("// schema fnv1a64 "));
        let hash = format!("{:016x}", fnv1a64(&bytes));
        assert_eq!(
            recorded,
            Some(hash.as_str()),
            "{generated} was not generated from {schema} as it is now: \
             run `cargo run --manifest-path tools/protogen/Cargo.toml`"
        );
    }
}
