//! The install channels, end to end and offline: `packaging/package.py` packs the
//! built binary as a Python wheel and as npm packages; each is installed from the
//! local file into a fresh place (a virtual environment; an npm prefix), and the
//! `cohort-mcp` command it puts on PATH serves MCP to rmcp's client, which opens a
//! session and runs a command in it; then the official MCP Python SDK's conformance
//! check (`conformance/mcp/check.py`) drives the installed `cohort` with no Rust
//! toolchain on PATH.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::python;
use crate::support::{bash_path, TestServer};

/// Packs the test build of cohort into `out`; the packages' paths.
fn package(out: &Path, npm: bool) -> Vec<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/package.py");
    let python = python::program();
    let mut cmd = Command::new(python);
    cmd.arg(script)
        .args(["--binary", env!("CARGO_BIN_EXE_cohort")])
        .arg("--out")
        .arg(out);
    if !npm {
        cmd.arg("--no-npm");
    }
    let made = cmd.output().expect("run packaging/package.py");
    assert!(
        made.status.success(),
        "packaging failed: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    String::from_utf8(made.stdout)
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .collect()
}

/// Runs `program` (an installed `cohort-mcp`) as an MCP server on `server`'s tmux
/// socket, opens a session and runs a command in it through rmcp's client.
async fn serves_mcp(server: &TestServer, program: &Path) {
    let log = server.state_dir().join("packaged.stderr");
    let cmd = tokio::process::Command::new(program).configure(|c| {
        c.args(["--toolsets", "all"])
            .env("SHELL", bash_path())
            .env("HOME", server.home())
            .env("COHORT_LOG", "warn")
            .env("COHORT_TMUX_SOCKET", &server.socket)
            .env("COHORT_STATE_DIR", server.state_dir())
            .env_remove("TMUX")
            .kill_on_drop(true);
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", program.display()));
    let client = tokio::time::timeout(Duration::from_secs(30), ().serve(transport))
        .await
        .expect("the packaged server answers initialize in time")
        .unwrap_or_else(|e| {
            panic!(
                "initialize {}: {e}\n{}",
                program.display(),
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        });
    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("cohort")
    );
    let call = |name: &'static str, args: Value| {
        let client = client.peer().clone();
        async move {
            let params = CallToolRequestParams::new(name)
                .with_arguments(args.as_object().cloned().unwrap_or_default());
            let result = tokio::time::timeout(Duration::from_secs(30), client.call_tool(params))
                .await
                .expect("the tool answers in time")
                .expect("the tool call");
            assert_ne!(result.is_error, Some(true), "{name}: {result:?}");
            serde_json::to_value(&result.structured_content).unwrap()
        }
    };
    call("open", json!({"name": "packaged"})).await;
    let ran = call(
        "run",
        json!({"target": "packaged", "command": "echo packaged-$((6*7))"}),
    )
    .await;
    assert!(
        ran["output"]
            .as_str()
            .unwrap_or_default()
            .contains("packaged-42"),
        "{ran}"
    );
    assert_eq!(ran["verdict"]["exit_status"], 0, "{ran}");
    client.cancel().await.ok();
}

/// The official MCP Python SDK's conformance check against the installed `cohort` in
/// `bin`, with a PATH of the system's directories and `bin` only: no Rust toolchain.
async fn sdk_drives(server: &TestServer, bin: &Path) {
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    python::mcp_sdk_check(server, &bin.join("cohort"), Some(&path)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wheel_installs_with_pip_and_serves_mcp() {
    let dir = tempfile::tempdir().unwrap();
    let made = package(&dir.path().join("dist"), false);
    let wheel = made
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("a wheel");
    let python = python::program();
    let venv = dir.path().join("venv");
    let created = Command::new(&python)
        .args(["-m", "venv"])
        .arg(&venv)
        .output()
        .expect("python -m venv");
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let installed = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--no-index",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg(wheel)
        .output()
        .expect("pip install");
    assert!(
        installed.status.success(),
        "pip refused the wheel: {}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let version = Command::new(venv.join("bin/cohort"))
        .arg("--version")
        .output()
        .expect("cohort --version");
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("cohort {}", env!("CARGO_PKG_VERSION"))
    );
    let server = TestServer::new();
    serves_mcp(&server, &venv.join("bin/cohort-mcp")).await;
    sdk_drives(&TestServer::new(), &venv.join("bin")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_npm_packages_install_offline_and_serve_mcp() {
    if Command::new("npm").arg("--version").output().is_err() {
        assert!(
            std::env::var("COHORT_REQUIRE_PACKAGING").as_deref() != Ok("1"),
            "npm is not installed but COHORT_REQUIRE_PACKAGING=1"
        );
        eprintln!("skipped: npm is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let made = package(&dir.path().join("dist"), true);
    let tarballs: Vec<&PathBuf> = made
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "tgz"))
        .collect();
    assert_eq!(tarballs.len(), 2, "{made:?}");
    let prefix = dir.path().join("project");
    std::fs::create_dir_all(&prefix).unwrap();
    // Offline: the launcher's other platforms are optional and are skipped; this
    // platform's package comes from its tarball.
    let installed = Command::new("npm")
        .args([
            "install",
            "--offline",
            "--no-audit",
            "--no-fund",
            "--prefix",
        ])
        .arg(&prefix)
        .args(&tarballs)
        .env("npm_config_cache", dir.path().join("npm-cache"))
        .output()
        .expect("npm install");
    assert!(
        installed.status.success(),
        "npm install failed: {}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let bin = prefix.join("node_modules/.bin");
    let version = Command::new(bin.join("cohort"))
        .arg("--version")
        .output()
        .expect("cohort --version through the launcher");
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("cohort {}", env!("CARGO_PKG_VERSION")),
        "{}",
        String::from_utf8_lossy(&version.stderr)
    );
    let server = TestServer::new();
    serves_mcp(&server, &bin.join("cohort-mcp")).await;
    sdk_drives(&TestServer::new(), &bin).await;
}

/// `packaging/symbol_order.py`'s two readers, with the Python the tests run: a
/// callgrind profile (names given once and then by number, recursion copies, addresses
/// without a symbol, callgrind's own names) becomes the functions in the order first named, and every
/// fixture's command reads the same with `tomllib` and with the fallback for Pythons
/// before 3.11 (the release runners'). And the list kept for x86_64 Linux is one the
/// linker reads: a header of comments, then names, none twice.
#[test]
fn the_symbol_order_reads_profiles_and_fixtures_and_its_list_is_well_formed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let check = r#"
import glob, os, sys, tempfile
sys.path.insert(0, sys.argv[1])
import symbol_order as so
profile = """version: 1
fn=(1) main
cfn=(2) _ZN6cohort4main17h0123456789abcdefE
calls=1 0
fn=(2)
cfn=(3) descend'2
fn=(4) 0x0000000000401000
fn=(5) (below main)
fn=(3)
cfn=(1)
"""
with tempfile.NamedTemporaryFile("w", suffix=".callgrind", delete=False) as f:
    f.write(profile)
found = so.executed_functions(f.name)
os.unlink(f.name)
assert found == ["main", "_ZN6cohort4main17h0123456789abcdefE", "descend"], found
toml = so.tomllib
fixtures = sorted(glob.glob(os.path.join(sys.argv[2], "*.toml")))
assert len(fixtures) > 100, len(fixtures)
for path in fixtures:
    so.tomllib = toml
    read = so.fixture_command(path) if toml is not None else None
    so.tomllib = None
    fallback = so.fixture_command(path)
    assert read is None or read == fallback, (path, read, fallback)
    assert fallback.strip(), path
print(len(fixtures))
"#;
    let python = python::program();
    let out = Command::new(python)
        .arg("-c")
        .arg(check)
        .arg(root.join("packaging"))
        .arg(root.join("fixtures/reducers"))
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let list =
        std::fs::read_to_string(root.join("packaging/symbol-order/x86_64-unknown-linux-gnu.txt"))
            .expect("the list for x86_64 Linux");
    let header: Vec<&str> = list.lines().take_while(|l| l.starts_with('#')).collect();
    assert!(
        header.iter().any(|l| l.contains("rustc ")),
        "the header names the toolchain: {header:?}"
    );
    let names: Vec<&str> = list.lines().skip(header.len()).collect();
    assert!(names.len() > 1000, "{} names", names.len());
    let mut seen = std::collections::HashSet::new();
    for name in &names {
        assert!(
            !name.is_empty() && !name.starts_with('#') && !name.contains(char::is_whitespace),
            "not a symbol name: {name:?}"
        );
        assert!(seen.insert(name), "named twice: {name}");
    }
}
