//! How soon a manager learns that a worker's turn ended: the time from the agent's
//! turn end (the answer's timestamp in its own transcript) to `wait_workers`
//! returning, through the agents' hooks and cohort's wake socket, against a baseline
//! that polls the transcript every 500 ms (as orchestrators without hooks do),
//! measured in the same run on the same fake Claude Code workers in tmux.
//!
//! Then prompts into composers deaf to Enter: fresh fake Claude Code TUIs that draw
//! their composer at once but ignore Enter for 40 s after (as recent Claude Code
//! releases were reported to), 100 of them, each given its first prompt at spawn:
//! how many prompts the agents received whole and once, how many were lost,
//! doubled or garbled, the presses it took and when each went in.
//! (`COHORT_BENCH_DEAF_WORKERS`, `COHORT_BENCH_DEAF_MS` change the count and the
//! deaf period; `COHORT_BENCH_DEAF_WORKERS=0` skips it.)
//!
//! Then the approval round trip on the same workers: from the agent's request (its
//! `PreToolUse` hook, just before it asks) to the agent running the tool (its tool
//! call in the transcript), answered by a manager that waits on the workers and
//! answers at once (`answer_approvals`, keys on the dialog, checked on screen), and
//! answered by a policy through the agent's own `PermissionRequest` hook (no dialog).
//!
//! Prints medians, p90s and the ratio; asserts nothing.

use std::collections::HashMap;
use std::path::Path;
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

#[path = "support/agents.rs"]
mod agents;
use agents::answer_time;

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

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
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
    let env = agents::agent_env(&bin, &home);
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
    approvals(&engine, &rows, &dir.path().join("state")).await;
    let _ = engine.workers.close_workers(&rows, true, false).await;
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
    enter_deaf(&engine, &env, &work).await;
}

/// When the newest hook `event` of `row` at or after `since` ran (Unix ms).
fn hook_ran(state: &Path, row: &WorkerRow, event: &str, since: i64) -> Option<i64> {
    let text = std::fs::read_to_string(cohort_workers::events::events_path(state, &row.id)).ok()?;
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == event)
        .filter_map(|v| v["at_ms"].as_i64())
        .find(|at| *at >= since)
}

/// When the agent, after `since`, wrote the tool call it had asked permission for
/// (Unix ms), waiting up to 5 s for it.
async fn tool_ran(transcript: &Path, since: i64) -> Option<i64> {
    for _ in 0..500 {
        let entries = Parser::read_all(AgentKind::Claude, transcript, 64 << 20).ok()?;
        let ran = entries.iter().rev().find_map(|e| match e {
            Entry::Tool { at_ms, name, .. } if name == "Bash" && *at_ms >= since => Some(*at_ms),
            _ => None,
        });
        if ran.is_some() {
            return ran;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

/// The approval round trip, answered by a waiting manager through the dialog's keys,
/// then by a policy through the agent's hook.
async fn approvals(engine: &Engine, rows: &[WorkerRow], state: &Path) {
    use cohort_workers::{approve::Decision, policy::ApprovalPolicy, WorkerState};
    let mut seen = Vec::new();
    let mut call = Vec::new();
    let mut by_keys = Vec::new();
    let mut by_hook = Vec::new();
    for policy in [false, true] {
        if policy {
            let allow = ApprovalPolicy {
                allow: vec!["Bash(touch*)".into()],
                ..ApprovalPolicy::default()
            };
            for row in rows {
                engine
                    .workers
                    .set_approval_policy(row, &allow, "bench")
                    .await
                    .expect("policy");
            }
        }
        for i in 0..SAMPLES {
            let row = &rows[i % WORKERS];
            let prompt = format!("[[approval]] [[work 10]] approval {i}");
            let sent = engine
                .workers
                .submit_prompt(row, &prompt, false, false)
                .await
                .expect("submit");
            // Settled: waiting on the dialog (keys) or done (policy).
            assert!(
                !wait_turn(engine, row, sent.at_ms).await,
                "approval {i} timed out"
            );
            if !policy {
                let noticed = now_ms();
                let o = engine.workers.observe(row, false).await.expect("observe");
                assert_eq!(o.assessment.state, WorkerState::NeedsApproval, "{o:?}");
                if let Some(asked) = hook_ran(state, row, "PermissionRequest", sent.at_ms) {
                    seen.push((noticed - asked) as f64);
                }
                let pressed = now_ms();
                engine
                    .workers
                    .answer_approvals(std::slice::from_ref(row), Decision::Allow, "bench", None)
                    .await
                    .expect("answer");
                call.push((now_ms() - pressed) as f64);
                wait_turn(engine, row, sent.at_ms).await;
            }
            let transcript = engine
                .workers
                .observe(row, false)
                .await
                .expect("observe")
                .transcript
                .expect("transcript");
            let (Some(asked), Some(ran)) = (
                hook_ran(state, row, "PreToolUse", sent.at_ms),
                tool_ran(&transcript, sent.at_ms).await,
            ) else {
                println!("approval {i}: the request or the tool call was not found");
                continue;
            };
            match policy {
                false => by_keys.push((ran - asked) as f64),
                true => by_hook.push((ran - asked) as f64),
            }
            wait_turn(engine, row, sent.at_ms).await;
        }
    }
    println!("approval round trip (the agent asks -> it runs the tool), {WORKERS} fake Claude Code workers, {SAMPLES} samples each way");
    if let (false, false) = (by_keys.is_empty(), seen.is_empty()) {
        let (k50, k90) = stats(by_keys);
        let (s50, s90) = stats(seen);
        let (c50, c90) = stats(call);
        println!("  a waiting manager answers on the dialog: median {k50:.0} ms, p90 {k90:.0} ms");
        println!("    of which the request reaching the manager's wait: median {s50:.0} ms, p90 {s90:.0} ms");
        println!("    and the answer's call (keys, dialog checked gone): median {c50:.0} ms, p90 {c90:.0} ms");
    }
    if !by_hook.is_empty() {
        let (h50, h90) = stats(by_hook);
        println!(
            "  a policy answers through the agent's hook: median {h50:.0} ms, p90 {h90:.0} ms"
        );
    }
}

/// Spawns `count` fake Claude Code workers deaf to Enter for `deaf` after their first
/// paint, each with its first prompt, and counts what their transcripts received.
async fn enter_deaf(
    engine: &Engine,
    env: &std::collections::BTreeMap<String, String>,
    work: &Path,
) {
    let count: usize = std::env::var("COHORT_BENCH_DEAF_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let deaf_ms: u64 = std::env::var("COHORT_BENCH_DEAF_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40_000);
    if count == 0 {
        return;
    }
    let mut env = env.clone();
    env.insert("FAKE_AGENT_ENTER_DEAF_MS".into(), deaf_ms.to_string());
    let prompt = |i: usize| format!("task {i}: read the notes\nthen write the summary");
    let started_ms = now_ms();
    // A spawn starts at most SPAWN_MAX; the spawns go at once.
    let names: Vec<usize> = (0..count).collect();
    let spawns = names.chunks(cohort_workers::spawn::SPAWN_MAX).map(|chunk| {
        let specs = chunk
            .iter()
            .map(|i| WorkerSpec {
                name: Some(format!("deaf{i}")),
                launch: LaunchSpec {
                    agent: AgentKind::Claude,
                    env: env.clone(),
                    ..LaunchSpec::default()
                },
                prompt: Some(prompt(*i)),
                project: Some(work.display().to_string()),
                worktree: Some(false),
                ..WorkerSpec::default()
            })
            .collect();
        engine.workers.spawn_workers(SpawnRequest {
            workers: specs,
            layout: SpawnLayout::Windows,
            ..SpawnRequest::default()
        })
    });
    let spawned: Vec<_> = futures_util::future::join_all(spawns)
        .await
        .into_iter()
        .flat_map(|r| r.expect("spawn"))
        .collect();
    let mut in_after = Vec::new();
    let mut enters = Vec::new();
    let mut not_submitted = Vec::new();
    let mut rows = Vec::new();
    for s in &spawned {
        match (&s.prompt, &s.row) {
            (Some(sent), Some(_)) => {
                in_after.push((sent.at_ms - started_ms) as f64);
                enters.push(f64::from(sent.enters));
            }
            _ => not_submitted.push(format!(
                "{}: {}",
                s.name,
                s.error.clone().unwrap_or_default()
            )),
        }
        if let Some(row) = &s.row {
            rows.push(row.clone());
        }
    }
    // What each agent received: its answers name a digest of the prompt it got. Once
    // every agent answered (or two minutes passed), a few seconds more for a second
    // copy to come as a second turn.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    for s in &spawned {
        if let Some(row) = &s.row {
            while answers(engine, row).await.is_empty() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (mut whole, mut lost, mut doubled, mut garbled) = (0, 0, 0, 0);
    for (i, s) in spawned.iter().enumerate() {
        let got = match &s.row {
            Some(row) => answers(engine, row).await,
            None => Vec::new(),
        };
        let expected = cohort_fake_agent::script::answer(&prompt(i));
        match (got.iter().filter(|a| **a == expected).count(), got.len()) {
            (_, 0) => lost += 1,
            (1, 1) => whole += 1,
            (n, _) if n > 1 => doubled += 1,
            _ => garbled += 1,
        }
    }
    let _ = engine.workers.close_workers(&rows, true, false).await;
    println!(
        "first prompts into {count} fresh composers deaf to Enter for {} s (given at spawn)",
        deaf_ms / 1000
    );
    println!(
        "  received whole and once: {whole}; lost: {lost}; doubled: {doubled}; garbled: {garbled}; not reported submitted: {}",
        not_submitted.len()
    );
    for why in not_submitted.iter().take(5) {
        println!("    {why}");
    }
    if !in_after.is_empty() {
        let (a50, a90) = stats(in_after);
        let (e50, e90) = stats(enters);
        println!(
            "  in after (from the spawn call): median {:.1} s, p90 {:.1} s",
            a50 / 1000.0,
            a90 / 1000.0
        );
        println!("  Enter presses: median {e50:.0}, p90 {e90:.0}");
    }
}

/// The answers in `row`'s transcript (each names a digest of the prompt it answers).
async fn answers(engine: &Engine, row: &WorkerRow) -> Vec<String> {
    let transcript = engine
        .workers
        .observe(row, false)
        .await
        .ok()
        .and_then(|seen| seen.transcript);
    transcript
        .and_then(|t| Parser::read_all(AgentKind::Claude, &t, 64 << 20).ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| match e {
            Entry::Say { text, .. } if text.starts_with("Done:") => Some(text),
            _ => None,
        })
        .collect()
}
