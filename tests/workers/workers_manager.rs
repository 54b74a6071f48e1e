//! A manager drives fake Claude Code and Codex workers end to end through the MCP
//! tools, on tmux and on the fake iTerm2: spawn with worktrees, message all, wait
//! all, examine, read logs, annotate, list, close; held messages, drafts, queued and
//! guarded prompts. Real git repositories and worktrees, real fake-agent TUIs.

use std::sync::atomic::Ordering;

use crate::support::parity;
use crate::{
    agents::{answer, git},
    workers::{names, Manager},
};
use serde_json::{json, Value};

fn worker_spec(m: &Manager, agent: &str, repo: &std::path::Path, prompt: &str) -> Value {
    json!({
        "agent": agent,
        "project_path": repo.display().to_string(),
        "prompt": prompt,
        "team": "core",
        "env": m.agents.env_json(&[]),
    })
}

/// A price table for Claude's model only, the same for the whole test process
/// (the variable is read by every engine in it).
pub(crate) fn price_claude_only() {
    static TABLE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let prices = dir.path().join("prices.toml");
        std::fs::write(
            &prices,
            "[[model]]\nname = \"claude-opus-*\"\ninput = 1.0\noutput = 2.0\ncache_read = 0.5\ncache_write = 3.0\n",
        )
        .unwrap();
        std::env::set_var("COHORT_PRICES_FILE", &prices);
        dir
    });
}

async fn manager_drives_four_workers(m: Manager) {
    price_claude_only();
    let repo = m.agents.repo("app");
    let spawned = m
        .ok(
            "spawn_workers",
            json!({"workers": [
                worker_spec(&m, "claude", &repo, "task one"),
                worker_spec(&m, "codex", &repo, "task two"),
                worker_spec(&m, "claude", &repo, "task three"),
                worker_spec(&m, "codex", &repo, "task four"),
            ]}),
        )
        .await;
    let workers = spawned["workers"].as_array().unwrap().clone();
    assert_eq!(workers.len(), 4, "{spawned}");
    let mut all = Vec::new();
    for w in &workers {
        let name = w["name"].as_str().unwrap().to_string();
        assert!(w["error"].is_null(), "{:?}: {w}", m.which);
        assert_eq!(w["branch"], format!("cohort/{}", name.to_lowercase()));
        let worktree = std::path::PathBuf::from(w["worktree"].as_str().unwrap());
        assert!(worktree.starts_with(repo.join(".worktrees")), "{w}");
        assert_eq!(
            std::fs::read_to_string(worktree.join(".env")).unwrap(),
            "SECRET=1\n"
        );
        assert_eq!(w["copied"], json!([".env"]));
        assert!(
            w["prompt"].as_str().unwrap().starts_with("submitted"),
            "{w}"
        );
        assert_eq!(w["team"], "core");
        assert!(w["colour"].as_str().unwrap().starts_with('#'));
        all.push(name);
    }
    // One team, one colour; names from one theme, none repeated.
    let colours: std::collections::BTreeSet<&str> = workers
        .iter()
        .map(|w| w["colour"].as_str().unwrap())
        .collect();
    assert_eq!(colours.len(), 1);
    assert_eq!(all, ["Groucho", "Harpo", "Chico", "Zeppo"]);

    let first = m.ok("wait_idle_workers", json!({"timeout": 60})).await;
    assert_eq!(names(&first["idle"]), names(&json!(all)), "{first}");
    assert!(first["all_idle"].as_bool().unwrap());

    // Message all; wait for every turn to end. The turns take a while, so the wait
    // sends progress.
    let before = m.progress.load(Ordering::SeqCst);
    let second = "second task [[work 1500]]\nwith a second line";
    let sent = m
        .ok(
            "message_workers",
            json!({"session_ids": all, "message": second, "wait_mode": "all", "timeout": 60}),
        )
        .await;
    for r in sent["results"].as_array().unwrap() {
        assert_eq!(r["status"], "submitted", "{r}");
    }
    assert_eq!(sent["wait"]["all_idle"], true, "{sent}");
    assert_eq!(names(&sent["wait"]["idle"]), names(&json!(all)));
    assert!(
        m.progress.load(Ordering::SeqCst) > before,
        "no progress during a 1.5 s wait"
    );

    // A change in one worktree shows in examine_worker's diff against the base.
    let chico = workers.iter().find(|w| w["name"] == "Chico").unwrap();
    std::fs::write(
        std::path::Path::new(chico["worktree"].as_str().unwrap()).join("notes.txt"),
        "x\n",
    )
    .unwrap();
    let x = m.ok("examine_worker", json!({"session_id": "Chico"})).await;
    assert_eq!(x["state"], "idle", "{x}");
    assert_eq!(x["signal"], "hook", "{x}");
    assert!(
        x["diff_stat"].as_str().unwrap().contains("1 untracked"),
        "{x}"
    );
    assert_eq!(x["dirty_files"], 1);
    assert!(
        x["last_turn"].as_str().unwrap().contains(&answer(second)),
        "{x}"
    );
    assert!(x["attach"].as_str().is_some_and(|a| !a.is_empty()));

    // What each agent spent, from its transcript: Claude's usage per message (a
    // message counted once), Codex's running totals; rolled up for the team.
    let claude = &x["usage"];
    assert_eq!(claude["model"], "claude-opus-4-8", "{x}");
    assert!(claude["calls"].as_u64().unwrap() >= 2, "{x}");
    assert_eq!(
        claude["cache_read"].as_u64().unwrap(),
        12_000 * claude["calls"].as_u64().unwrap(),
        "{x}"
    );
    assert!(x["spent"].as_str().unwrap().contains("tokens"), "{x}");
    // The fake CLI states no cost: the price table gives it, and says so.
    let tokens = |k: &str| claude[k].as_u64().unwrap() as f64;
    let priced = (tokens("input")
        + 2.0 * tokens("output")
        + 0.5 * tokens("cache_read")
        + 3.0 * tokens("cache_write"))
        / 1e6;
    assert!(
        (claude["cost_usd"].as_f64().unwrap() - priced).abs() < 1e-9,
        "{priced} {x}"
    );
    assert_eq!(claude["priced"], true, "{x}");
    assert!(
        x["spent"].as_str().unwrap().ends_with("by the price table"),
        "{x}"
    );
    let harpo = m.ok("examine_worker", json!({"session_id": "Harpo"})).await;
    // Codex's model has no price in the table: no cost rather than a guess.
    assert!(harpo["usage"].get("cost_usd").is_none(), "{harpo}");
    assert_eq!(
        (&harpo["usage"]["input"], &harpo["usage"]["cache_read"]),
        (&json!(2 * (2_400 - 1_024)), &json!(2 * 1_024)),
        "two turns of Codex's running totals: {harpo}"
    );
    let listed = m.ok("list_workers", json!({})).await;
    assert_eq!(listed["spent_by_team"][0]["team"], "core", "{listed}");
    assert_eq!(listed["spent_by_team"][0]["workers"], 4, "{listed}");

    // The transcript, paged by turn; tool calls summarised, answers whole.
    for name in &all {
        let logs = m
            .ok("read_worker_logs", json!({"session_id": name, "pages": 2}))
            .await;
        let text = logs["output"].as_str().unwrap();
        assert!(
            text.contains(&answer(&format!(
                "task {}",
                ["one", "two", "three", "four"][all.iter().position(|n| n == name).unwrap()]
            ))),
            "{name}: {text}"
        );
        assert!(text.contains(&answer(second)), "{name}: {text}");
        assert!(text.contains("tool call(s)"), "{text}");
        assert!(
            logs["meta"]
                .as_str()
                .unwrap()
                .starts_with("[turns 1-2 of 2;"),
            "{logs}"
        );
        // What the model reads: the turns as written, then the meta line, as `read`.
        let plain = m
            .call("read_worker_logs", json!({"session_id": name, "pages": 2}))
            .await;
        let plain = plain.content[0].as_text().unwrap().text.clone();
        assert_eq!(
            plain,
            format!(
                "{}\n{}",
                logs["output"].as_str().unwrap().trim_end_matches('\n'),
                logs["meta"].as_str().unwrap()
            )
        );
        let older = m
            .ok("read_worker_logs", json!({"session_id": name, "offset": 1}))
            .await;
        assert!(
            older["meta"]
                .as_str()
                .unwrap()
                .starts_with("[turns 1-1 of 2;"),
            "{older}"
        );
    }

    let noted = m
        .ok(
            "annotate_worker",
            json!({"session_id": "Harpo", "annotation": "owns the parser"}),
        )
        .await;
    assert_eq!(noted["workers"][0]["notes"], json!(["owns the parser"]));
    let compact = m.ok("list_workers", json!({})).await;
    assert_eq!(compact["workers"].as_array().unwrap().len(), 4);
    assert!(
        compact["workers"][0].get("notes").is_none(),
        "compact lists stay short"
    );
    let idle = m.ok("check_idle_workers", json!({})).await;
    assert_eq!(idle["all_idle"], true);

    let trees = m
        .ok(
            "list_worktrees",
            json!({"repo_path": repo.display().to_string()}),
        )
        .await;
    let trees = trees["worktrees"].as_array().unwrap();
    assert_eq!(trees.len(), 4);
    assert!(trees
        .iter()
        .all(|t| t["orphan"] == false && t["worker"].is_string()));

    // Close: clean worktrees go, the dirty one stays; branches stay. The four close
    // side by side (the figure is printed, not asserted).
    let closing = std::time::Instant::now();
    let closed = m
        .ok(
            "close_workers",
            json!({"session_ids": all, "remove_worktree": true}),
        )
        .await;
    eprintln!("closing 4 workers took {:?}", closing.elapsed());
    for c in closed["results"].as_array().unwrap() {
        assert_eq!(c["ended"], "exit command", "{c}");
        if c["worker"] == "Chico" {
            assert_eq!(c["worktree_removed"], false);
            assert!(c["error"].as_str().unwrap().contains("uncommitted"), "{c}");
        } else {
            assert_eq!(c["worktree_removed"], true, "{c}");
        }
    }
    let branches = git(&repo, &["branch", "--list", "cohort/*"]);
    assert_eq!(branches.lines().count(), 4, "{branches}");
    let left = m
        .ok(
            "list_worktrees",
            json!({"repo_path": repo.display().to_string(), "remove_orphans": true}),
        )
        .await;
    let left = left["worktrees"].as_array().unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(
        (left[0]["orphan"].clone(), left[0]["removed"].clone()),
        (json!(true), json!(false))
    );
    assert!(m.ok("list_workers", json!({})).await["workers"]
        .as_array()
        .unwrap()
        .is_empty());
}
parity!(
    local,
    Manager::new,
    manager_drives_four_workers_,
    manager_drives_four_workers
);

async fn messages_wait_for_idle_workers_and_never_type_over_drafts(m: Manager) {
    let repo = m.agents.repo("held");
    let spawned = m
        .ok("spawn_workers", json!({"workers": [worker_spec(&m, "claude", &repo, "[[work 2000]] long task")], "names": "beatles"}))
        .await;
    let name = spawned["workers"][0]["name"].as_str().unwrap().to_string();
    assert_eq!(name, "John");
    // Busy: the message is held, not typed over its work.
    let held = m
        .ok(
            "message_workers",
            json!({"session_ids": [name], "message": "follow up"}),
        )
        .await;
    assert_eq!(held["results"][0]["status"], "held", "{held}");
    let listed = m.ok("list_workers", json!({})).await;
    assert_eq!(listed["workers"][0]["held_messages"], 1);
    let done = m
        .ok(
            "wait_idle_workers",
            json!({"session_ids": [name], "timeout": 60}),
        )
        .await;
    assert_eq!(names(&done["idle"]), std::slice::from_ref(&name), "{done}");
    let logs = m
        .ok("read_worker_logs", json!({"session_id": name, "pages": 3}))
        .await;
    let text = logs["output"].as_str().unwrap();
    assert!(
        text.contains("## turn 2") && text.contains(&answer("follow up")),
        "{text}"
    );

    // A human's draft: held until the composer is empty, and never sent with it.
    m.ok(
        "send",
        json!({"target": name, "text": "my draft", "enter": false}),
    )
    .await;
    // Wait until the draft is on the screen: a draft typed while the message goes
    // in is a race no tool can win.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let seen = m.ok("examine_worker", json!({"session_id": name})).await;
        if seen["screen"]
            .as_str()
            .is_some_and(|s| s.contains("my draft"))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the draft never showed: {seen}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let drafted = m
        .ok(
            "message_workers",
            json!({"session_ids": [name], "message": "after the draft"}),
        )
        .await;
    assert_eq!(drafted["results"][0]["status"], "held", "{drafted}");
    assert!(
        drafted["results"][0]["note"]
            .as_str()
            .unwrap()
            .contains("draft"),
        "{drafted}"
    );
    m.ok("key", json!({"target": name, "keys": ["C-u"]})).await;
    m.ok(
        "wait_idle_workers",
        json!({"session_ids": [name], "timeout": 60}),
    )
    .await;
    let logs = m.ok("read_worker_logs", json!({"session_id": name})).await;
    assert!(
        logs["output"]
            .as_str()
            .unwrap()
            .contains(&answer("after the draft")),
        "{logs}"
    );

    // when: now to a busy worker: the agent queues it; both turns run.
    m.ok(
        "message_workers",
        json!({"session_ids": [name], "message": "[[work 1500]] first"}),
    )
    .await;
    let now = m
        .ok(
            "message_workers",
            json!({"session_ids": [name], "message": "queued one", "when": "now"}),
        )
        .await;
    assert_eq!(now["results"][0]["status"], "submitted", "{now}");
    m.ok(
        "wait_idle_workers",
        json!({"session_ids": [name], "timeout": 60}),
    )
    .await;
    let logs = m.ok("read_worker_logs", json!({"session_id": name})).await;
    assert!(
        logs["output"]
            .as_str()
            .unwrap()
            .contains(&answer("queued one")),
        "{logs}"
    );

    // A leading slash is text, not a command, unless asked.
    m.ok("message_workers", json!({"session_ids": [name], "message": "/etc/hosts looks wrong", "wait_mode": "all", "timeout": 60})).await;
    let logs = m.ok("read_worker_logs", json!({"session_id": name})).await;
    assert!(
        logs["output"]
            .as_str()
            .unwrap()
            .contains(&answer("\u{200b}/etc/hosts looks wrong")),
        "{logs}"
    );

    // Errors say what to do.
    assert!(m
        .error(
            "message_workers",
            json!({"session_ids": ["Nobody"], "message": "x"})
        )
        .await
        .contains("no worker named"));
    assert!(m
        .error("examine_worker", json!({"session_id": "Nobody"}))
        .await
        .contains("John"));
    assert!(m
        .error("spawn_workers", json!({"workers": [{"agent": "vim"}]}))
        .await
        .contains("custom"));
    assert!(m
        .error("wait_idle_workers", json!({"mode": "some"}))
        .await
        .contains("any or all"));
    let closed = m.ok("close_workers", json!({"session_ids": [name]})).await;
    assert_eq!(closed["results"][0]["ended"], "exit command", "{closed}");
}
parity!(
    local,
    Manager::new,
    messages_wait_for_idle_workers_and_never_type_over_drafts_,
    messages_wait_for_idle_workers_and_never_type_over_drafts
);

async fn shared_directories_custom_agents_setup_and_splits(m: Manager) {
    let repo = m.agents.repo("shared");
    let failing = m
        .ok(
            "spawn_workers",
            json!({"workers": [
                {"name": "setup-fails", "agent": "claude", "project_path": repo.display().to_string(),
                 "setup": "echo preparing; exit 3", "env": m.agents.env_json(&[])},
                {"name": "setup-ok", "agent": "claude", "project_path": repo.display().to_string(),
                 "setup": "echo installed > setup.txt", "env": m.agents.env_json(&[])},
            ]}),
        )
        .await;
    let results = failing["workers"].as_array().unwrap();
    let bad = results.iter().find(|w| w["name"] == "setup-fails").unwrap();
    assert!(
        bad["error"].as_str().unwrap().contains("preparing"),
        "{bad}"
    );
    let good = results.iter().find(|w| w["name"] == "setup-ok").unwrap();
    assert!(good["error"].is_null(), "{good}");
    let wt = std::path::PathBuf::from(good["worktree"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(wt.join("setup.txt")).unwrap(),
        "installed\n"
    );
    assert!(
        !repo.join(".worktrees/setup-fails").exists(),
        "a failed setup's worktree is removed"
    );

    // A custom agent sharing the repository directory, in a split of setup-ok's pane.
    let custom = m
        .ok(
            "spawn_workers",
            json!({"layout": "split", "target": "setup-ok", "workers": [
                {"name": "repl", "agent": "custom", "command": "python3 -q -i", "use_worktree": false,
                 "project_path": repo.display().to_string()}
            ]}),
        )
        .await;
    let repl = &custom["workers"][0];
    assert!(repl["error"].is_null(), "{repl}");
    assert_eq!(repl["worktree"], repo.display().to_string());
    // Its screen says nothing cohort reads: quiet output decides, so a message right
    // after it started may be held for a moment.
    let sent = m.ok("message_workers", json!({"session_ids": ["repl"], "message": "print(6*7)", "wait_mode": "all", "timeout": 30})).await;
    assert_ne!(sent["results"][0]["status"], "failed", "{sent}");
    assert_eq!(sent["wait"]["idle"], json!(["repl"]), "{sent}");
    let screen = m
        .ok("read", json!({"target": "repl", "mode": "screen"}))
        .await;
    assert!(
        screen["output"].as_str().unwrap().contains("42"),
        "{screen}"
    );
    let x = m.ok("examine_worker", json!({"session_id": "repl"})).await;
    assert_eq!(x["signal"], "quiescence", "{x}");
    let closed = m
        .ok(
            "close_workers",
            json!({"session_ids": ["repl", "setup-ok"], "remove_worktree": true, "force": true}),
        )
        .await;
    for c in closed["results"].as_array().unwrap() {
        assert!(c["error"].is_null() || c["worker"] == "repl", "{c}");
    }
}
parity!(
    local,
    Manager::new,
    shared_directories_custom_agents_setup_and_splits_,
    shared_directories_custom_agents_setup_and_splits
);
