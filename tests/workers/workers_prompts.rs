//! Prompts that are really submitted: 200 prompts from 1 B to 20 KB, most of them
//! multi-line, some starting with `/` or `!`, to fake Claude Code and Codex workers
//! with the paste-burst trap on (an Enter within the trap window after a paste is a
//! newline) — half at the fakes' default window, half at a window wider than cohort's
//! settle time, so Enters are lost and must be recovered. Every prompt must arrive
//! whole: the fake's answer carries the digest of what it received. The summary is
//! printed; nothing is timed.

use crate::{
    agents::{answer, Agents},
    terminals::{Terminal, Which},
    workers,
};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use cohort::engine::Engine;
use cohort_workers::{
    messages::{After, WaitMode},
    registry::WorkerRow,
    spawn::{SpawnLayout, SpawnRequest, WorkerSpec},
    submit::prepare,
    AgentKind, LaunchSpec,
};
use futures_util::future::join_all;

/// The largest prompt.
const MAX: usize = 20 * 1024;

/// Prompt `i` of `n`: sizes spread evenly on a log scale from 1 B to 20 KB, lines of
/// words (some not ASCII), a few starting with `/` or `!`.
fn prompt(i: usize, n: usize) -> String {
    let size = ((MAX as f64).powf(i as f64 / (n - 1) as f64)).round() as usize;
    let words = [
        "fix", "the", "parser", "naïve", "世界", "tests", "flaky", "über", "CI", "[x]", "{a: 1}",
        "'q'", "\"dq\"",
    ];
    let mut seed = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut text = match i % 17 {
        3 => "/".to_string(),
        11 => "!".to_string(),
        _ => String::new(),
    };
    let mut line = 0;
    while text.len() < size {
        let w = words[(next() % words.len() as u64) as usize];
        if line > 40 + (next() % 60) as usize {
            text.push('\n');
            line = 0;
        } else if !text.is_empty() && !text.ends_with(['/', '!']) {
            text.push(' ');
        }
        text.push_str(w);
        line += w.len() + 1;
    }
    // Cut to the size on a character boundary, never ending with a newline or space.
    let mut end = size.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    let trimmed = text.trim_end().to_string();
    if trimmed.is_empty() {
        "x".into()
    } else {
        trimmed
    }
}

#[derive(Default, Debug)]
struct Tally {
    sent: usize,
    bytes: usize,
    multiline: usize,
    whole: usize,
    enters: BTreeMap<u32, usize>,
    proofs: BTreeMap<String, usize>,
    lost: Vec<String>,
}

async fn feed(engine: &Engine, row: WorkerRow, prompts: Vec<String>) -> Tally {
    let mut t = Tally::default();
    for text in prompts {
        t.sent += 1;
        t.bytes += text.len();
        t.multiline += usize::from(text.contains('\n'));
        let expected = prepare(&text, false).unwrap();
        let submitted = match engine
            .workers
            .submit_prompt(&row, &text, false, false)
            .await
        {
            Ok(s) => s,
            Err(e) => {
                t.lost
                    .push(format!("{}: {} B not submitted: {e}", row.name, text.len()));
                continue;
            }
        };
        *t.enters.entry(submitted.enters).or_default() += 1;
        *t.proofs.entry(submitted.proof.to_string()).or_default() += 1;
        let after = HashMap::from([(row.id.clone(), After::Prompt(submitted.at_ms))]);
        let report = engine
            .workers
            .wait_workers(
                std::slice::from_ref(&row),
                WaitMode::All,
                Duration::from_secs(60),
                &after,
                &|_| {},
            )
            .await
            .expect("wait");
        let seen = &report.workers[0].observation;
        let got = seen.hook.last_message.clone().unwrap_or_default();
        if !report.timed_out && got == answer(&expected) {
            t.whole += 1;
        } else {
            t.lost.push(format!(
                "{}: {} B prompt: expected {:?}, the agent said {got:?} ({}; proved by {} after {} Enters)",
                row.name,
                text.len(),
                answer(&expected),
                seen.assessment.reason,
                submitted.proof,
                submitted.enters,
            ));
        }
    }
    t
}

async fn two_hundred_prompts(which: Which, total: usize, per_kind: usize) {
    let terminal = Terminal::start(which).await;
    let engine = workers::engine_for(&terminal, terminal.backend().await);
    let agents = Agents::new();
    let dir = agents.dir.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let mut specs = Vec::new();
    for kind in [AgentKind::Claude, AgentKind::Codex] {
        for k in 0..per_kind {
            // Half the workers trap an Enter up to 150 ms after a paste (longer than
            // cohort waits for the screen to settle): their Enters get lost.
            let window = if k % 2 == 0 { "20" } else { "150" };
            specs.push(WorkerSpec {
                launch: LaunchSpec {
                    agent: kind,
                    env: agents.env(&[
                        ("FAKE_AGENT_PASTE_TRAP", "1"),
                        ("FAKE_AGENT_PASTE_ENTER_MS", window),
                    ]),
                    ..LaunchSpec::default()
                },
                project: Some(dir.display().to_string()),
                worktree: Some(false),
                ..WorkerSpec::default()
            });
        }
    }
    let count = specs.len();
    let spawned = engine
        .workers
        .spawn_workers(SpawnRequest {
            workers: specs,
            // A window each: a composer holding a 20-line paste fits.
            layout: SpawnLayout::Windows,
            ..SpawnRequest::default()
        })
        .await
        .expect("spawn");
    let rows: Vec<WorkerRow> = spawned
        .iter()
        .map(|s| {
            assert!(s.error.is_none(), "{which:?}: {s:?}");
            s.row.clone().unwrap()
        })
        .collect();
    let prompts: Vec<String> = (0..total).map(|i| prompt(i, total)).collect();
    let feeds = rows.iter().enumerate().map(|(w, row)| {
        let mine: Vec<String> = prompts.iter().skip(w).step_by(count).cloned().collect();
        feed(&engine, row.clone(), mine)
    });
    let tallies = join_all(feeds).await;
    let mut all = Tally::default();
    for t in tallies {
        all.sent += t.sent;
        all.bytes += t.bytes;
        all.multiline += t.multiline;
        all.whole += t.whole;
        for (k, v) in t.enters {
            *all.enters.entry(k).or_default() += v;
        }
        for (k, v) in t.proofs {
            *all.proofs.entry(k).or_default() += v;
        }
        all.lost.extend(t.lost);
    }
    let sizes: Vec<usize> = prompts.iter().map(String::len).collect();
    eprintln!(
        "prompt submission on {which:?}: {} prompts to {count} fake agents (Claude Code and Codex, paste-burst trap on), \
         {} B to {} B, {} KiB in all, {} multi-line; arrived whole: {}; Enters pressed per prompt: {:?}; \
         proved by: {:?}; lost Enters: {}",
        all.sent,
        sizes.iter().min().unwrap(),
        sizes.iter().max().unwrap(),
        all.bytes / 1024,
        all.multiline,
        all.whole,
        all.enters,
        all.proofs,
        all.lost.len()
    );
    for l in &all.lost {
        eprintln!("  lost: {l}");
    }
    assert_eq!(all.sent, total);
    assert!(
        all.lost.is_empty(),
        "{which:?}: {} prompts lost",
        all.lost.len()
    );
    assert_eq!(all.whole, total);
    assert!(sizes.iter().min() == Some(&1) && sizes.iter().max() == Some(&MAX));
}

#[test]
fn prompts_span_the_sizes_and_shapes() {
    let ps: Vec<String> = (0..200).map(|i| prompt(i, 200)).collect();
    assert_eq!(ps[0].len(), 1);
    assert_eq!(ps[199].len(), MAX);
    assert!(ps.iter().filter(|p| p.contains('\n')).count() > 100);
    assert!(ps.iter().any(|p| p.starts_with('/')) && ps.iter().any(|p| p.starts_with('!')));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_prompts_on_tmux() {
    two_hundred_prompts(Which::Tmux, 200, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_prompts_on_iterm2() {
    two_hundred_prompts(Which::Iterm2, 40, 2).await;
}
