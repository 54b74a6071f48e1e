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
    let python = std::env::var("COHORT_PYTHON").unwrap_or_else(|_| "python3".into());
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
    let python = std::env::var("COHORT_PYTHON").unwrap_or_else(|_| "python3".into());
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
