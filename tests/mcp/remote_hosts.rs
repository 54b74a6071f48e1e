//! Sessions on a remote host through the MCP tools, as a user reaches them: a host
//! declared in `hosts.toml`, `open` with `host`, `run` with the remote command's
//! output and exit status, listings that say where each session runs, and a host
//! that cannot be reached refused with what ssh said.

use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;

use crate::ssh_support::{self, SshServer};
use crate::support::*;

fn call(name: &'static str, args: serde_json::Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone())
}

/// Runs `command` in session `target` through the `run` tool; its structured result.
async fn run(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    target: &str,
    command: &str,
    timeout_ms: u64,
) -> serde_json::Value {
    let ran = client
        .call_tool(call(
            "run",
            serde_json::json!({"target": target, "command": command, "timeout_ms": timeout_ms}),
        ))
        .await
        .unwrap();
    assert_ne!(ran.is_error, Some(true), "{command}: {ran:?}");
    ran.structured_content.expect("a structured result")
}

/// Checks that a call was refused with an error naming `host`; the error's text.
fn refused_naming(result: &rmcp::model::CallToolResult, host: &str) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let text = format!("{result:?}");
    assert!(text.contains(&format!("host {host}")), "{text}");
    text
}

/// Opens session `api` on host `far`; the `open` result.
async fn open_api_on_far(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
) -> serde_json::Value {
    let opened = client
        .call_tool(call(
            "open",
            serde_json::json!({"name": "api", "host": "far"}),
        ))
        .await
        .unwrap();
    assert_ne!(opened.is_error, Some(true), "{opened:?}");
    opened.structured_content.expect("a structured result")
}

/// `cohort mcp` on `server`, with `ssh`'s host declared as `far`.
async fn mcp_with_host(
    server: &TestServer,
    ssh: &SshServer,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    mcp_with_hosts(server, &[("far", ssh)]).await
}

/// `cohort mcp` on `server`, with each ssh server's host declared under its name.
async fn mcp_with_hosts(
    server: &TestServer,
    hosts: &[(&str, &SshServer)],
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let declared: String = hosts
        .iter()
        .map(|(name, ssh)| {
            format!(
                "[hosts.{name}]\nssh = \"cohort-test-host\"\nssh_args = [\"-F\", \"{}\"]\n",
                ssh.dir.path().join("ssh_config").display()
            )
        })
        .collect();
    let hosts = server.state_dir().join("hosts.toml");
    std::fs::write(&hosts, declared).unwrap();
    let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_cohort")).configure(|c| {
        c.arg("mcp")
            .env("COHORT_TMUX_SOCKET", &server.socket)
            .env("COHORT_STATE_DIR", server.state_dir())
            .env("COHORT_HOSTS_FILE", &hosts)
            .env("SHELL", bash_path())
            .env("HOME", server.home())
            .env_remove("TMUX");
    });
    ().serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .expect("initialize")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_on_a_host_then_run_answers_with_the_remote_output_and_status() {
    if !ssh_support::available() {
        return;
    }
    let ssh = SshServer::start().unwrap();
    let server = TestServer::new();
    let client = mcp_with_host(&server, &ssh).await;

    let opened = open_api_on_far(&client).await;
    assert_eq!(opened["session"]["host"], "far", "{opened}");
    assert!(
        opened["session"]["pane"]
            .as_str()
            .unwrap()
            .starts_with("far:%"),
        "{opened}"
    );
    assert!(
        opened["attach"].as_str().unwrap().contains("ssh"),
        "{opened}"
    );

    let out = run(
        &client,
        "api",
        "echo on-$(basename $HOME)-$((6*7)); (exit 3)",
        20_000,
    )
    .await;
    // The far side's home, not this machine's.
    assert!(
        out["output"].as_str().unwrap().contains("on-home-42"),
        "{out}"
    );
    assert_eq!(out["verdict"]["layer"], "exit", "{out}");
    assert_eq!(out["verdict"]["exit_status"], 3, "{out}");

    // A local session beside it; the listing says where each one runs.
    let local = client
        .call_tool(call("open", serde_json::json!({"name": "here"})))
        .await
        .unwrap();
    assert_ne!(local.is_error, Some(true), "{local:?}");
    let listed = client
        .call_tool(call("list", serde_json::json!({})))
        .await
        .unwrap()
        .structured_content
        .unwrap();
    let host_of = |name: &str| {
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["host"].clone())
    };
    assert_eq!(host_of("api"), Some(serde_json::json!("far")), "{listed}");
    assert_eq!(host_of("here"), Some(serde_json::Value::Null), "{listed}");

    // A program waiting for input over there is waiting, not done.
    let asked = run(&client, "api", "read -p 'name? ' who", 5_000).await;
    assert_eq!(asked["verdict"]["complete"], false, "{asked}");
    let answered = run(&client, "api", "me", 10_000).await;
    assert_eq!(answered["verdict"]["exit_status"], 0, "{answered}");
    client.cancel().await.unwrap();

    // Another cohort process (a restart) finds the remote session by its name, and a
    // human gets the line that attaches to it over ssh.
    let again = mcp_with_host(&server, &ssh).await;
    let out = run(&again, "api", "echo still-$((2+2)); echo $who", 20_000).await;
    let status = again
        .call_tool(call("status", serde_json::json!({"target": "api"})))
        .await
        .unwrap()
        .structured_content
        .unwrap();
    assert_eq!(status["session"]["host"], "far", "{status}");
    assert_eq!(status["session"]["at_shell"], true, "{status}");
    // Named with its host, as listings show it when a name is not found.
    let qualified = run(&again, "far:api", "echo q-$((1+1))", 20_000).await;
    assert!(
        qualified["output"].as_str().unwrap().contains("q-2"),
        "{qualified}"
    );
    let missing = again
        .call_tool(call(
            "run",
            serde_json::json!({"target": "elsewhere:api", "command": "true"}),
        ))
        .await
        .unwrap();
    assert_eq!(missing.is_error, Some(true), "{missing:?}");
    assert!(format!("{missing:?}").contains("far:api"), "{missing:?}");
    assert!(
        out["output"].as_str().unwrap().contains("still-4\nme"),
        "{out}"
    );
    again.cancel().await.unwrap();
    let attach = std::process::Command::new(env!("CARGO_BIN_EXE_cohort"))
        .args(["attach", "api", "--print"])
        .env("COHORT_TMUX_SOCKET", &server.socket)
        .env("COHORT_STATE_DIR", server.state_dir())
        .env("COHORT_HOSTS_FILE", server.state_dir().join("hosts.toml"))
        .env_remove("TMUX")
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&attach.stdout);
    assert!(
        attach.status.success(),
        "{line} {}",
        String::from_utf8_lossy(&attach.stderr)
    );
    assert!(line.starts_with("ssh -t"), "{line}");
    assert!(line.contains("cohort-test-host"), "{line}");
}

#[tokio::test]
async fn a_host_that_cannot_be_reached_is_refused_with_what_ssh_said() {
    if !ssh_support::available() {
        return;
    }
    let mut ssh = SshServer::start().unwrap();
    let server = TestServer::new();
    let client = mcp_with_host(&server, &ssh).await;
    ssh.stop();
    let opened = client
        .call_tool(call(
            "open",
            serde_json::json!({"name": "api", "host": "far"}),
        ))
        .await
        .unwrap();
    let text = refused_naming(&opened, "far");
    assert!(text.contains("Connection refused"), "{text}");
    // Nothing was left half-made: the name is free for another try.
    let listed = client
        .call_tool(call("list", serde_json::json!({})))
        .await
        .unwrap()
        .structured_content
        .unwrap();
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 0, "{listed}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_hangs_holds_up_only_the_calls_that_need_it() {
    if !ssh_support::available() {
        return;
    }
    let far = SshServer::start().unwrap();
    let dark = SshServer::start().unwrap();
    let server = TestServer::new();
    let client = mcp_with_hosts(&server, &[("far", &far), ("dark", &dark)]).await;
    // `dark` takes connections and never answers them, as a host behind a network
    // that drops its packets does.
    dark.stop_answering();
    let peer = client.peer().clone();
    let waiting = tokio::spawn(async move {
        peer.call_tool(call(
            "open",
            serde_json::json!({"name": "lost", "host": "dark"}),
        ))
        .await
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let opened = open_api_on_far(&client).await;
    assert_eq!(opened["session"]["host"], "far", "{opened}");
    assert!(
        !waiting.is_finished(),
        "the dark host's attempt ended before the other host was reached"
    );
    // The dark host's call ends too, with an error that names it.
    let started = std::time::Instant::now();
    let refused = waiting.await.unwrap().unwrap();
    refused_naming(&refused, "dark");
    eprintln!("the dark host was refused {:?} later", started.elapsed());
    dark.answer_again();
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cohort_hosts_and_doctor_say_which_answer_with_their_tmux() {
    if !ssh_support::available() {
        return;
    }
    let mut ssh = SshServer::start().unwrap();
    let server = TestServer::new();
    // Declares the host (and checks the MCP server starts with it).
    mcp_with_host(&server, &ssh).await.cancel().await.unwrap();
    let cohort = |command: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_cohort"))
            .arg(command)
            .env("COHORT_STATE_DIR", server.state_dir())
            .env("COHORT_TMUX_SOCKET", &server.socket)
            .env("COHORT_HOSTS_FILE", server.state_dir().join("hosts.toml"))
            .env("SHELL", bash_path())
            .env("HOME", server.home())
            .env_remove("TMUX")
            .output()
            .unwrap()
    };
    let hosts = || cohort("hosts");
    let doctor = cohort("doctor");
    let text = String::from_utf8_lossy(&doctor.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("ok    host far:"))
        .unwrap_or_else(|| panic!("doctor says nothing of host far: {text}"));
    assert!(line.contains("tmux 3."), "{text}");
    let up = hosts();
    let text = String::from_utf8_lossy(&up.stdout);
    assert!(up.status.success(), "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with("far "))
        .expect("a row for far");
    assert!(row.contains("cohort-test-host"), "{text}");
    assert!(row.contains("tmux 3."), "{text}");
    assert!(row.contains("reachable"), "{text}");
    ssh.stop();
    let down = hosts();
    let text = String::from_utf8_lossy(&down.stdout);
    assert!(!down.status.success(), "{text}");
    assert!(text.contains("unreachable: host far"), "{text}");
    // The doctor says so with what ssh said, as a warning: this machine is fine.
    let doctor = cohort("doctor");
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("warn  host far:") && l.contains("Connection refused")),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_on_a_host_gone_away_is_kept_and_calls_say_why() {
    if !ssh_support::available() {
        return;
    }
    let mut ssh = SshServer::start().unwrap();
    let server = TestServer::new();
    let client = mcp_with_host(&server, &ssh).await;
    open_api_on_far(&client).await;
    client.cancel().await.unwrap();
    ssh.stop();
    // A new cohort process while the host is away: the session is not lost, and a
    // call on it names the host and what ssh said, not "no session named".
    let again = mcp_with_host(&server, &ssh).await;
    let ran = again
        .call_tool(call(
            "run",
            serde_json::json!({"target": "api", "command": "true"}),
        ))
        .await
        .unwrap();
    let text = refused_naming(&ran, "far");
    assert!(text.contains("Connection refused"), "{text}");
    assert!(!text.contains("no session"), "{text}");
    again.cancel().await.unwrap();
}
