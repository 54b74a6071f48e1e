//! How soon a manager learns that a worker's turn ended: the time from the agent's
//! turn end (the answer's timestamp in its own transcript) to `wait_workers`
//! returning, through the agents' hooks and cohort's wake socket, against a baseline
//! that polls the transcript every 500 ms (as orchestrators without hooks do),
//! measured in the same run on the same fake Claude Code workers in tmux.
//!
//! Prints medians, p90s and the ratio; asserts nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cohort::engine::Engine;
use cohort_backends::tmux::config::{Socket, TmuxConfig};
use cohort_backends::tmux::TmuxBackend;
use cohort_workers::{
    events::now_ms,
    messages::{After, WaitMode},
    registry::WorkerRow,
    spawn::{SpawnLayout, SpawnRequest, WorkerSpec},
    transcript::{Entry, Parser},
    AgentKind, LaunchSpec,
};

const SAMPLES: usize = 16;
const WORKERS: usize = 4;
const POLL: Duration = Duration::from_millis(500);

struct KillServer(String);
impl Drop for KillServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .status();
    }
}

/// The fake agent next to this benchmark's profile, built when missing.
fn fake_agent() -> PathBuf {
    let exe = std::env::current_exe().expect("benchmark executable");
    let profile = exe.parent().and_then(Path::parent).expect("target dir");
    let bin = profile.join("cohort-fake-agent");
    if !bin.exists() {
        let mut build =
            std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        build.args(["build", "-p", "cohort-fake-agent"]);
        if profile.ends_with("release") {
            build.arg("--release");
        }
        assert!(
            build.status().expect("cargo").success(),
            "building the fake agent failed"
        );
    }
    bin
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

/// When the agent wrote `answer` in its transcript (Unix ms).
fn answer_time(transcript: &Path, answer: &str) -> Option<i64> {
    let entries = Parser::read_all(AgentKind::Claude, transcript, 64 << 20).ok()?;
    entries.iter().rev().find_map(|e| match e {
        Entry::Say { at_ms, text } if text == answer => Some(*at_ms),
        _ => None,
    })
}

/// Waits until the turn `row` began at `prompted_ms` has ended; whether it timed out.
async fn wait_turn(engine: &Engine, row: &WorkerRow, prompted_ms: i64) -> bool {
    let after = HashMap::from([(row.id.clone(), After::Prompt(prompted_ms))]);
    engine
        .workers
        .wait_workers(
            std::slice::from_ref(row),
            WaitMode::All,
            Duration::from_secs(30),
            &after,
            &|_| {},
        )
        .await
        .expect("wait")
        .timed_out
}

fn stats(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.9))
}

async fn run() {
    let socket = format!("cohort-bench-workers-{}", std::process::id());
    let _guard = KillServer(socket.clone());
    let dir = tempfile::Builder::new()
        .prefix("cohort-bench-workers-")
        .tempdir()
        .unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(fake_agent(), bin.join("claude")).unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let mut config = TmuxConfig::new(dir.path().join("state"));
    config.socket = Socket::Name(socket.clone());
    let backend = TmuxBackend::connect(config).await.expect("tmux");
    let engine = Engine::with_backend(
        Arc::new(backend),
        &dir.path().join("state"),
        &format!("-L {socket}"),
    )
    .unwrap();
    engine
        .workers
        .configure_workers(|s| s.program = Some(env!("CARGO_BIN_EXE_cohort").into()));
    let env = std::collections::BTreeMap::from([
        (
            "PATH".to_string(),
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        ),
        ("HOME".to_string(), home.display().to_string()),
    ]);
    let specs = (0..WORKERS)
        .map(|_| WorkerSpec {
            launch: LaunchSpec {
                agent: AgentKind::Claude,
                env: env.clone(),
                ..LaunchSpec::default()
            },
            project: Some(work.display().to_string()),
            worktree: Some(false),
            ..WorkerSpec::default()
        })
        .collect();
    let spawned = engine
        .workers
        .spawn_workers(SpawnRequest {
            workers: specs,
            layout: SpawnLayout::Windows,
            ..SpawnRequest::default()
        })
        .await
        .expect("spawn");
    let rows: Vec<WorkerRow> = spawned
        .into_iter()
        .map(|s| s.row.expect("started"))
        .collect();

    let mut hooked = Vec::new();
    let mut hook_process = Vec::new();
    let mut polled = Vec::new();
    for i in 0..SAMPLES * 2 {
        let row = &rows[i % WORKERS];
        let prompt = format!("[[work 300]] sample {i}");
        let expected = cohort_fake_agent::script::answer(&prompt);
        let sent = engine
            .workers
            .submit_prompt(row, &prompt, false, false)
            .await
            .expect("submit");
        let use_hooks = i % 2 == 0;
        let returned = if use_hooks {
            assert!(
                !wait_turn(&engine, row, sent.at_ms).await,
                "sample {i} timed out"
            );
            now_ms()
        } else {
            // The baseline: look at the transcript every 500 ms until the answer is in.
            let path = engine
                .workers
                .observe(row, false)
                .await
                .expect("observe")
                .transcript
                .expect("transcript");
            loop {
                tokio::time::sleep(POLL).await;
                if answer_time(&path, &expected).is_some() {
                    break now_ms();
                }
            }
        };
        let seen = engine.workers.observe(row, false).await.expect("observe");
        let transcript = seen.transcript.expect("transcript");
        let mut ended = None;
        for _ in 0..100 {
            ended = answer_time(&transcript, &expected);
            if ended.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let ended = ended.expect("the answer in the transcript");
        let latency = (returned - ended) as f64;
        if use_hooks {
            hooked.push(latency);
            if let Some(at) = seen.turn_ended_ms {
                hook_process.push((at - ended) as f64);
            }
        } else {
            polled.push(latency);
        }
        // Let the worker settle before its next sample.
        wait_turn(&engine, row, sent.at_ms).await;
    }
    let (h50, h90) = stats(hooked.clone());
    let (p50, p90) = stats(polled.clone());
    let (k50, k90) = stats(hook_process);
    println!("turn end (the answer in the agent's transcript) -> wait_workers returns, {WORKERS} fake Claude Code workers, {SAMPLES} samples each way");
    println!("  through hooks + wake socket: median {h50:.0} ms, p90 {h90:.0} ms");
    println!("    of which the hook process (agent runs `cohort hook`): median {k50:.0} ms, p90 {k90:.0} ms");
    println!(
        "  polling the transcript every {} ms: median {p50:.0} ms, p90 {p90:.0} ms",
        POLL.as_millis()
    );
    println!(
        "  polling / hooks: {:.1}x at the median",
        p50 / h50.max(1.0)
    );
}
