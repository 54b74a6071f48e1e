//! Every scripted turn of the fake agents is classified right, on tmux and the fake
//! iTerm2, for Claude Code and Codex, with hooks and with hooks disabled by policy:
//! a normal turn, an approval (answered), a question, an API error without `Stop`,
//! an interrupt without `Stop`, a turn that fires no hook, background tasks, and a
//! crash. Each verdict names the signal that decided it.

use crate::{
    terminals::Which,
    workers::{self, Manager},
};
use serde_json::{json, Value};

const WORKERS: [&str; 3] = ["claude", "codex", "quiet"];

async fn say(m: &Manager, text: &str) -> Value {
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": WORKERS, "message": text, "wait_mode": "all", "timeout": 60}),
        )
        .await;
    for x in r["results"].as_array().unwrap() {
        assert_eq!(x["status"], "submitted", "{:?} {text}: {x}", m.which);
    }
    assert_eq!(r["wait"]["timed_out"], false, "{:?} {text}: {r}", m.which);
    r
}

/// One worker of `spawn_workers`: a fake `agent` in `repo` with the test's agents'
/// environment and `extra` on top.
fn worker_spec(
    m: &Manager,
    repo: &std::path::Path,
    name: &str,
    agent: &str,
    extra: &[(&str, &str)],
) -> Value {
    json!({"name": name, "agent": agent, "project_path": repo.display().to_string(),
           "env": m.agents.env_json(extra)})
}

/// The notes kept on a worker, as one text.
async fn notes_of(m: &Manager, name: &str) -> String {
    let listed = m.ok("list_workers", json!({"verbose": true})).await;
    listed["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name)
        .map(|x| x["notes"].to_string())
        .unwrap_or_default()
}

async fn state(m: &Manager, name: &str) -> Value {
    m.ok("examine_worker", json!({"session_id": name})).await
}

/// Asserts the worker's state, the signal that decided it, and a part of its reason.
async fn expect(m: &Manager, name: &str, state_name: &str, signal: &str, reason: &str) {
    let w = state(m, name).await;
    assert_eq!(w["state"], state_name, "{:?} {name}: {w}", m.which);
    assert_eq!(w["signal"], signal, "{:?} {name}: {w}", m.which);
    assert!(
        w["reason"].as_str().unwrap().contains(reason),
        "{:?} {name}: {w}",
        m.which
    );
}

async fn scripted_turns(which: Which) {
    let m = Manager::new(which).await;
    let repo = m.agents.repo("states");
    let spec = |name: &str, agent: &str, extra: &[(&str, &str)]| {
        worker_spec(&m, &repo, name, agent, extra)
    };
    let spawned = m
        .ok(
            "spawn_workers",
            json!({"workers": [
                spec("claude", "claude", &[]),
                spec("codex", "codex", &[]),
                // Hooks disabled by policy: only the transcript and the screen speak.
                spec("quiet", "claude", &[("FAKE_AGENT_NO_HOOKS", "1")]),
            ]}),
        )
        .await;
    for w in spawned["workers"].as_array().unwrap() {
        assert!(w["error"].is_null(), "{which:?}: {w}");
        assert_eq!(w["state"], "ready", "{which:?}: {w}");
    }

    // A normal turn: its end is reported by the hooks (the transcript without them).
    say(&m, "a normal turn").await;
    expect(&m, "claude", "idle", "hook", "the turn ended").await;
    expect(&m, "codex", "idle", "hook", "the turn ended").await;
    expect(&m, "quiet", "idle", "transcript", "the turn ended").await;

    // A turn that fires no hook at all (hooks off for it).
    say(&m, "[[no-hooks]] quietly").await;
    for name in WORKERS {
        expect(&m, name, "idle", "transcript", "the turn ended").await;
    }

    // An approval: PermissionRequest at once (the screen's dialog without hooks).
    say(&m, "[[approval]] make a file").await;
    expect(&m, "claude", "needs_approval", "hook", "touch approved.txt").await;
    expect(&m, "codex", "needs_approval", "hook", "touch approved.txt").await;
    expect(&m, "quiet", "needs_approval", "screen", "approval dialog").await;
    for name in WORKERS {
        m.ok("key", json!({"target": name, "keys": ["1"]})).await;
    }
    // Until the agents repaint, their dialogs still show (a wait right now would
    // report them needing approval): wait for each to be idle.
    for name in WORKERS {
        m.worker_until(name, "idle after the approval", |w| w["state"] == "idle")
            .await;
    }
    for name in WORKERS {
        let w = state(&m, name).await;
        let dir = std::path::PathBuf::from(w["worktree"].as_str().unwrap());
        assert!(
            dir.join("approved.txt").exists(),
            "{which:?} {name}: not approved"
        );
    }

    // A question (Claude's Elicitation hook; Codex's dialog on the screen).
    say(&m, "[[ask]] which file").await;
    expect(&m, "claude", "needs_approval", "hook", "asks a question").await;
    expect(&m, "codex", "needs_approval", "screen", "question").await;
    for name in WORKERS {
        m.ok("key", json!({"target": name, "keys": ["Enter"]}))
            .await;
    }
    for name in WORKERS {
        m.worker_until(name, "idle after its answer", |w| w["state"] == "idle")
            .await;
    }

    // An API error: no Stop. Claude says StopFailure; Codex's rollout records it.
    say(&m, "[[api-error]] fail").await;
    expect(&m, "claude", "idle", "hook", "API error (server_error)").await;
    expect(
        &m,
        "codex",
        "idle",
        "transcript",
        "API error (unexpected status 500",
    )
    .await;
    expect(&m, "quiet", "idle", "transcript", "API error").await;

    // Background work still running when the turn ended.
    say(&m, "[[background]] start a job").await;
    expect(
        &m,
        "claude",
        "idle",
        "hook",
        "1 background task(s) still running",
    )
    .await;

    // An interrupt: no Stop; the transcript's interrupt entry ends the turn.
    let long = m
        .ok(
            "message_workers",
            json!({"session_ids": WORKERS, "message": "[[work 20000]] a long job"}),
        )
        .await;
    assert!(
        long["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "submitted"),
        "{long}"
    );
    for name in WORKERS {
        m.worker_until(name, "busy", |w| w["state"] == "busy").await;
        m.ok("key", json!({"target": name, "keys": ["Escape"]}))
            .await;
    }
    assert_eq!(
        m.ok("wait_idle_workers", json!({"timeout": 30})).await["all_idle"],
        true
    );
    for name in WORKERS {
        expect(&m, name, "idle", "transcript", "the turn was interrupted").await;
    }

    // A crash: the process dies mid-turn; no hook, no transcript entry.
    say(&m, "[[crash]] die").await;
    for name in WORKERS {
        expect(&m, name, "exited", "process", "killed by signal 9").await;
    }
    let listed = m.ok("check_idle_workers", json!({})).await;
    assert_eq!(
        workers::names(&listed["exited"]),
        ["claude", "codex", "quiet"]
    );
    m.ok(
        "close_workers",
        json!({"session_ids": WORKERS, "remove_worktree": true, "force": true}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_turns_on_tmux() {
    scripted_turns(Which::Tmux).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_turns_on_iterm2() {
    scripted_turns(Which::Iterm2).await;
}

/// A hook event is the worker's only when its own hooks signed it: `cohort hook`
/// run from another pane (no key), a line appended to the event file by hand, and
/// a real line replayed all leave the worker as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_forged_from_another_pane_or_replayed_move_no_worker() {
    let m = Manager::new(Which::Tmux).await;
    m.spawn_claude("claude", "forged", None).await;
    // A real approval, so the event file holds a real PermissionRequest line.
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": ["claude"], "message": "[[approval]] make a file", "wait_mode": "all", "timeout": 60}),
        )
        .await;
    assert_eq!(r["results"][0]["status"], "submitted", "{r}");
    expect(&m, "claude", "needs_approval", "hook", "touch approved.txt").await;
    m.ok("key", json!({"target": "claude", "keys": ["1"]}))
        .await;
    m.worker_until("claude", "idle after the approval", |w| {
        w["state"] == "idle"
    })
    .await;

    let row = m
        .engine
        .workers
        .find_worker("claude")
        .await
        .unwrap()
        .unwrap();
    let (state_dir, _) = m.terminal.engine_home();
    let events = cohort_workers::events::events_path(&state_dir, &row.id);
    let permission = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .find(|l| l.contains("PermissionRequest"))
        .expect("the real approval was recorded")
        .to_string();
    let forge = format!(
        "{cohort} --state-dir {state} hook --worker {id} PermissionRequest \
         '{{\"tool_name\":\"Bash\",\"tool_input\":{{\"command\":\"touch forged\"}}}}'; \
         {cohort} --state-dir {state} hook --worker {id} SessionEnd '{{\"reason\":\"logout\"}}'; \
         printf '%s\\n' '{{\"at_ms\":1,\"event\":\"PermissionRequest\",\"tool\":\"Bash\"}}' >> {events}; \
         printf '%s\\n' {replay} >> {events}; echo forged",
        cohort = env!("CARGO_BIN_EXE_cohort"),
        state = state_dir.display(),
        id = row.id,
        events = events.display(),
        replay = cohort_backends::tmux::quote::sh(&permission),
    );
    m.ok("open", json!({"name": "intruder"})).await;
    let ran = m
        .ok(
            "run",
            json!({"target": "intruder", "command": forge, "timeout_ms": 20000}),
        )
        .await;
    assert_eq!(ran["verdict"]["exit_status"], 0, "{ran}");
    // The forged lines are on file; none of them may move the worker. A look at the
    // worker reads its event file to the end first, so one look sees them all.
    let written = std::fs::read_to_string(&events).unwrap();
    assert!(written.contains("touch forged"), "{written}");
    let w = state(&m, "claude").await;
    assert_eq!(w["state"], "idle", "a forged hook moved the worker: {w}");
    // The worker's own hooks still speak.
    say_one(&m, "claude", "a normal turn").await;
    expect(&m, "claude", "idle", "hook", "the turn ended").await;
}

async fn say_one(m: &Manager, name: &str, text: &str) {
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": [name], "message": text, "wait_mode": "all", "timeout": 60}),
        )
        .await;
    assert_eq!(r["results"][0]["status"], "submitted", "{r}");
    assert_eq!(r["wait"]["timed_out"], false, "{r}");
}

/// An agent that hangs mid-turn (alive, silent, taking no keys) is `stuck` once the
/// stall bound passes, and a wait for any worker returns on it saying why, while a
/// worker that is really working (its spinner ticking) stays `busy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_agent_ends_a_wait_for_any_as_stuck() {
    let m = Manager::new(Which::Tmux).await;
    m.engine
        .workers
        .configure_workers(|s| s.bounds.stall_ms = 3_000);
    let repo = m.agents.repo("hang");
    let spec = |name: &str, agent: &str| worker_spec(&m, &repo, name, agent, &[]);
    m.ok(
        "spawn_workers",
        json!({"workers": [spec("hangs", "claude"), spec("works", "codex")]}),
    )
    .await;
    for (name, text) in [
        ("hangs", "[[hang]] freeze"),
        ("works", "[[work 20000]] steady"),
    ] {
        let r = m
            .ok(
                "message_workers",
                json!({"session_ids": [name], "message": text}),
            )
            .await;
        assert_eq!(r["results"][0]["status"], "submitted", "{r}");
    }
    let r = m
        .ok(
            "wait_idle_workers",
            json!({"session_ids": ["hangs", "works"], "mode": "any", "timeout": 60}),
        )
        .await;
    assert_eq!(r["timed_out"], false, "{r}");
    assert_eq!(r["stuck"], json!(["hangs"]), "{r}");
    assert_eq!(r["busy"], json!(["works"]), "{r}");
    let hung = r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "hangs")
        .unwrap();
    assert!(
        hung["reason"]
            .as_str()
            .is_some_and(|r| r.contains("nothing happened for") && r.contains("no output, no hook")),
        "{r}"
    );
    eprintln!(
        "a hang was reported stuck {} ms into the wait (bound 3 s)",
        r["waited_ms"]
    );
}

/// Permission requests are listed with what each worker wants to run, answered per
/// worker (allow for two, deny for one) by the keys of each CLI's dialog, checked
/// on screen and noted with who decided; nothing is answered for every worker at
/// once, and a worker that waits on nothing is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_listed_and_answered_from_anywhere() {
    let m = Manager::new(Which::Tmux).await;
    let repo = m.agents.repo("approvals");
    let spec = |name: &str, agent: &str, extra: &[(&str, &str)]| {
        worker_spec(&m, &repo, name, agent, extra)
    };
    m.ok(
        "spawn_workers",
        json!({"workers": [
            spec("claude", "claude", &[]),
            spec("codex", "codex", &[]),
            spec("quiet", "claude", &[("FAKE_AGENT_NO_HOOKS", "1")]),
        ]}),
    )
    .await;
    let idle = m
        .error(
            "approve_workers",
            json!({"session_ids": ["claude"], "decision": "allow"}),
        )
        .await;
    assert!(idle.contains("waits on no approval"), "{idle}");
    m.ok(
        "message_workers",
        json!({"session_ids": WORKERS, "message": "[[approval]] make a file"}),
    )
    .await;
    for name in WORKERS {
        m.worker_until(name, "asking", |w| w["state"] == "needs_approval")
            .await;
    }
    let listed = m.ok("approve_workers", json!({})).await;
    let pending = listed["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 3, "{listed}");
    for p in pending {
        assert!(
            p["shows"].as_str().unwrap().contains("touch approved.txt"),
            "{listed}"
        );
        let hooked = p["worker"] != "quiet";
        assert_eq!(
            p["request"]
                .as_str()
                .is_some_and(|r| r.contains("touch approved.txt")),
            hooked,
            "{listed}"
        );
    }
    // Why each waits: the hooked worker by its report, the other by a screen rule
    // on a row, through MCP and on the command line.
    let why = m
        .ok("examine_worker", json!({"session_id": "claude"}))
        .await;
    let lines = why["explain"].to_string();
    assert!(
        lines.contains("decided by its hook")
            && lines.contains("newest report: a permission request (Bash(touch approved.txt))"),
        "{why}"
    );
    // Its release, from its transcript: the built-in words have no range for it.
    assert!(
        lines.contains("claude 2.1.197: no version range applies"),
        "{why}"
    );
    let (state_dir, socket) = m.terminal.engine_home();
    // The user's screen words are read by the process that explains.
    let words = state_dir.join("screens.toml");
    std::fs::write(
        &words,
        "[claude]\nbusy = [\"esc to stop\"]\n[claude.versions.\"2.1\"]\nbusy = [\"esc to halt\"]\n",
    )
    .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_cohort"))
        .args(["workers", "explain", "quiet"])
        .env("COHORT_SCREENS_FILE", &words)
        .env("COHORT_STATE_DIR", &state_dir)
        .env("COHORT_BACKEND", "tmux")
        .env("COHORT_TMUX_SOCKET", &socket)
        .env_remove("TMUX")
        .output()
        .await
        .expect("cohort workers explain");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("needs_approval, decided by its screen")
            && text.contains("screen rule \"dialog\" matched row")
            && text.contains("Do you want to proceed?")
            && text.contains("(by all.approval \"Do you want to\")")
            && text.contains(&format!(
                "screen words: built-in screen words with the user's {}; claude 2.1.197: with the words of versions \"2.1\"",
                words.display()
            )),
        "{text}"
    );
    let everyone = m
        .error("approve_workers", json!({"decision": "allow"}))
        .await;
    assert!(everyone.contains("name the workers"), "{everyone}");

    let started = std::time::Instant::now();
    let allowed = m
        .ok(
            "approve_workers",
            json!({"session_ids": ["claude", "quiet"], "decision": "allow", "by": "lead"}),
        )
        .await;
    let took = started.elapsed();
    for a in allowed["answered"].as_array().unwrap() {
        assert_eq!(a["answered"], true, "{allowed}");
    }
    assert_eq!(
        allowed["pending"].as_array().unwrap().len(),
        0,
        "only the named workers' requests are in this call: {allowed}"
    );
    let denied = m
        .ok(
            "approve_workers",
            json!({"session_ids": ["codex"], "decision": "deny", "by": "lead"}),
        )
        .await;
    assert_eq!(denied["answered"][0]["answered"], true, "{denied}");
    for name in WORKERS {
        m.worker_until(name, "idle after the answer", |w| w["state"] == "idle")
            .await;
    }
    for (name, made) in [("claude", true), ("quiet", true), ("codex", false)] {
        let w = m.ok("examine_worker", json!({"session_id": name})).await;
        let dir = std::path::PathBuf::from(w["worktree"].as_str().unwrap());
        assert_eq!(dir.join("approved.txt").exists(), made, "{name}: {w}");
        let notes = notes_of(&m, name).await;
        let said = if made {
            "approval: allow"
        } else {
            "approval: deny"
        };
        assert!(
            notes.contains(said) && notes.contains("(by lead)"),
            "{name}: {notes}"
        );
    }
    eprintln!(
        "two approvals answered and their dialogs gone in {} ms",
        took.as_millis()
    );
}

/// A policy lets the workers' own hooks answer: an allowed request runs with no
/// dialog and nobody woken, a denied one does not run, each decision is noted with
/// its rule, and a rule that is not one is refused before anything changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_answers_requests_through_the_hook_without_a_dialog() {
    let m = Manager::new(Which::Tmux).await;
    let repo = m.agents.repo("policy");
    let spec = |name: &str, agent: &str| worker_spec(&m, &repo, name, agent, &[]);
    m.ok(
        "spawn_workers",
        json!({"workers": [spec("claude", "claude"), spec("codex", "codex")]}),
    )
    .await;
    let both = ["claude", "codex"];
    let bad = m
        .error(
            "approve_workers",
            json!({"session_ids": both, "policy": {"allow": ["Bash(touch"]}}),
        )
        .await;
    assert!(bad.contains("parenthesis"), "{bad}");
    let set = m
        .ok(
            "approve_workers",
            json!({"session_ids": both, "policy": {"allow": ["Read", "Bash(touch *)"]}, "by": "lead"}),
        )
        .await;
    assert_eq!(set["policy_set"], json!(both), "{set}");
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": both, "message": "[[approval]] make a file", "wait_mode": "all", "timeout": 60}),
        )
        .await;
    assert_eq!(r["wait"]["needs_approval"], json!([]), "{r}");
    assert_eq!(r["wait"]["all_idle"], true, "{r}");
    let worktree = |w: &Value| std::path::PathBuf::from(w["worktree"].as_str().unwrap());
    for name in both {
        let w = m.ok("examine_worker", json!({"session_id": name})).await;
        let file = worktree(&w).join("approved.txt");
        assert!(file.exists(), "{name}: not allowed: {w}");
        std::fs::remove_file(file).unwrap();
        let said = notes_of(&m, name).await;
        assert!(
            said.contains("allow by policy rule Bash(touch *)") && said.contains("(by lead)"),
            "{name}: {said}"
        );
    }
    m.ok(
        "approve_workers",
        json!({"session_ids": both, "policy": {"deny": ["Bash"]}, "by": "lead"}),
    )
    .await;
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": both, "message": "[[approval]] again", "wait_mode": "all", "timeout": 60}),
        )
        .await;
    assert_eq!(r["wait"]["all_idle"], true, "{r}");
    for name in both {
        let w = m.ok("examine_worker", json!({"session_id": name})).await;
        assert!(
            !worktree(&w).join("approved.txt").exists(),
            "{name}: ran: {w}"
        );
        let said = notes_of(&m, name).await;
        assert!(said.contains("deny by policy rule Bash"), "{name}: {said}");
    }
    // No rule, only a time: a request nobody answers is denied on its dialog.
    m.ok(
        "approve_workers",
        json!({"session_ids": ["claude"], "policy": {"deny_after_s": 1}, "by": "lead"}),
    )
    .await;
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": ["claude"], "message": "[[approval]] unanswered", "wait_mode": "all", "timeout": 60}),
        )
        .await;
    assert_eq!(r["wait"]["needs_approval"], json!(["claude"]), "{r}");
    m.worker_until("claude", "denied for want of an answer", |w| {
        w["state"] == "idle"
    })
    .await;
    let w = m
        .ok("examine_worker", json!({"session_id": "claude"}))
        .await;
    assert!(!worktree(&w).join("approved.txt").exists(), "ran: {w}");
    let notes = m
        .ok("notifications", json!({"owner": "lead", "all": true}))
        .await;
    assert!(notes.to_string().contains("approval_timed_out"), "{notes}");
}

/// The budget_reached and budget_interrupt notifications `from` left for everyone.
async fn budget_news(m: &Manager, from: &str) -> Vec<String> {
    let notes = m
        .ok("notifications", json!({"owner": "lead", "all": true}))
        .await;
    notes["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["from"] == from && n["kind"].as_str().unwrap().starts_with("budget"))
        .map(|n| {
            format!(
                "{}: {}",
                n["kind"].as_str().unwrap(),
                n["message"].as_str().unwrap()
            )
        })
        .collect()
}

/// Waits (20 s at most) until each of `from` has left a budget notification.
async fn until_budget_news(m: &Manager, from: &[&str]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    for name in from {
        while budget_news(m, name).await.is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "no budget notification from {name}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }
}

/// Waits until worker `name` is idle after an interrupted turn; its view.
async fn until_interrupted(m: &Manager, name: &str) -> Value {
    m.worker_until(name, "interrupted", |w| {
        w["state"] == "idle"
            && w["reason"]
                .as_str()
                .is_some_and(|r| r.contains("interrupted"))
    })
    .await
}

/// A token budget: reaching it notifies everyone once; with interrupt, a turn the
/// worker starts past it is interrupted, and said so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_reached_notifies_once_and_can_interrupt() {
    let m = Manager::new(Which::Tmux).await;
    let repo = m.agents.repo("budget");
    let spec = |name: &str, interrupt: bool| {
        json!({"name": name, "agent": "claude", "project_path": repo.display().to_string(),
               "env": m.agents.env_json(&[]), "budget_tokens": 1000, "budget_interrupt": interrupt})
    };
    m.ok(
        "spawn_workers",
        json!({"workers": [spec("thrifty", false), spec("capped", true)]}),
    )
    .await;
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": ["thrifty", "capped"], "message": "a normal turn", "wait_mode": "all", "timeout": 60}),
        )
        .await;
    assert_eq!(r["wait"]["all_idle"], true, "{r}");
    until_budget_news(&m, &["thrifty", "capped"]).await;
    let w = m
        .ok("examine_worker", json!({"session_id": "thrifty"}))
        .await;
    assert!(
        w["budget"]
            .as_str()
            .is_some_and(|b| b.contains("of 1.0k tokens, reached")),
        "{w}"
    );
    // Past its budget, a worker without interrupt works on; the other is stopped.
    m.ok(
        "message_workers",
        json!({"session_ids": ["capped"], "message": "[[work 30000]] a long job"}),
    )
    .await;
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": ["thrifty"], "message": "another turn", "wait_mode": "all", "timeout": 60}),
        )
        .await;
    assert_eq!(r["wait"]["all_idle"], true, "{r}");
    let capped = until_interrupted(&m, "capped").await;
    assert!(
        capped["notes"]
            .to_string()
            .contains("budget: a turn was interrupted"),
        "{capped}"
    );
    let thrifty = budget_news(&m, "thrifty").await;
    assert_eq!(thrifty.len(), 1, "{thrifty:?}");
    assert!(
        thrifty[0].starts_with("budget_reached: thrifty reached its budget"),
        "{thrifty:?}"
    );
    let news = budget_news(&m, "capped").await;
    assert!(
        news.iter().any(|n| n.starts_with("budget_interrupt")),
        "{news:?}"
    );
}

/// A budget in dollars, priced by the price table: reached by a turn's cost, said
/// in dollars; a limit that is no amount is refused with what to give.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dollar_budget_is_reached_by_what_the_turns_cost() {
    crate::workers_manager::price_claude_only();
    let m = Manager::new(Which::Tmux).await;
    let repo = m.agents.repo("dollars");
    m.ok(
        "spawn_workers",
        json!({"workers": [{"name": "priced", "agent": "claude",
                            "project_path": repo.display().to_string(),
                            "env": m.agents.env_json(&[]), "budget_usd": 0.005}]}),
    )
    .await;
    let set = m
        .ok("examine_worker", json!({"session_id": "priced"}))
        .await;
    assert_eq!(set["budget"], "$0.00 of $0.005", "{set}");
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": ["priced"], "message": "a normal turn", "wait_mode": "all", "timeout": 60}),
        )
        .await;
    assert_eq!(r["wait"]["all_idle"], true, "{r}");
    until_budget_news(&m, &["priced"]).await;
    let news = budget_news(&m, "priced").await;
    assert!(
        news[0].starts_with("budget_reached: priced reached its budget: $")
            && news[0].contains(" of $0.005"),
        "{news:?}"
    );
    let w = m
        .ok("examine_worker", json!({"session_id": "priced"}))
        .await;
    assert!(
        w["budget"]
            .as_str()
            .is_some_and(|b| b.ends_with(" of $0.005, reached")),
        "{w}"
    );
    for bad in [json!(0), json!(-2.5)] {
        let refused = m
            .error(
                "budget_workers",
                json!({"session_ids": ["priced"], "usd": bad}),
            )
            .await;
        assert!(
            refused.contains("usd must be a positive amount of US dollars"),
            "{refused}"
        );
    }
}

/// With the `otel` feature, a worker's change of state is a span with what it spent
/// so far: tokens in the GenAI conventions' names, the model, and the cost the
/// price table gives. Spans are made on this thread only (the subscriber is this
/// thread's), so the runtime is the current thread's.
#[cfg(feature = "otel")]
#[tokio::test(flavor = "current_thread")]
async fn a_workers_state_changes_are_spans_with_what_it_spent() {
    let recorded = crate::support::record_spans();
    crate::workers_manager::price_claude_only();
    let m = Manager::new(Which::Tmux).await;
    m.spawn_claude("traced", "traced", Some("crew")).await;
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": ["traced"], "message": "a normal turn", "wait_mode": "all", "timeout": 60}),
        )
        .await;
    assert_eq!(r["wait"]["all_idle"], true, "{r}");
    let changes: Vec<_> = recorded
        .finished()
        .iter()
        .filter(|s| s.name.starts_with("worker traced "))
        .map(crate::support::attributes)
        .collect();
    let idle = changes
        .iter()
        .rev()
        .find(|a| a.get("state").map(String::as_str) == Some("idle"))
        .unwrap_or_else(|| panic!("no span of the turn's end: {changes:?}"));
    assert_eq!(idle["worker"], "traced", "{idle:?}");
    assert_eq!(idle["agent"], "claude", "{idle:?}");
    assert_eq!(idle["team"], "crew", "{idle:?}");
    assert_eq!(idle["gen_ai.request.model"], "claude-opus-4-8", "{idle:?}");
    let tokens = |key: &str| idle[key].parse::<u64>().unwrap();
    assert!(tokens("cohort.usage.input_tokens") > 0, "{idle:?}");
    assert!(tokens("cohort.usage.output_tokens") > 0, "{idle:?}");
    let ends = changes
        .iter()
        .filter(|a| a.get("state").map(String::as_str) == Some("idle"))
        .count();
    assert!(ends <= 2, "one span per change, not per look: {changes:?}");
    assert!(
        idle["cohort.usage.cost_usd"].parse::<f64>().unwrap() > 0.0,
        "{idle:?}"
    );
}

/// A team's budget, set after its workers were spawned, is shared by them: reaching
/// it between them notifies everyone once, said by the team, and with interrupt a
/// turn either starts past it is interrupted. A worker's own budget can be changed
/// after its spawn, and asking wrongly says what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_shares_a_budget_set_after_its_spawn() {
    let m = Manager::new(Which::Tmux).await;
    let repo = m.agents.repo("team-budget");
    let spec = |name: &str| {
        json!({"name": name, "agent": "claude", "project_path": repo.display().to_string(),
               "team": "crew", "env": m.agents.env_json(&[])})
    };
    m.ok(
        "spawn_workers",
        json!({"workers": [spec("ann"), spec("bob")]}),
    )
    .await;
    let set = m
        .ok(
            "budget_workers",
            json!({"team": "crew", "tokens": 1500, "interrupt": true}),
        )
        .await;
    assert_eq!(set["team"]["name"], "crew", "{set}");
    assert!(
        set["team"]["budget"]
            .as_str()
            .is_some_and(|b| b.contains("of 1.5k tokens; turns past it are interrupted")),
        "{set}"
    );
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": ["ann", "bob"], "message": "a normal turn", "wait_mode": "all", "timeout": 60}),
        )
        .await;
    assert_eq!(r["wait"]["all_idle"], true, "{r}");
    until_budget_news(&m, &["crew"]).await;
    let listed = m.ok("list_workers", json!({})).await;
    assert!(
        listed["spent_by_team"][0]["budget"]
            .as_str()
            .is_some_and(|b| b.contains("of 1.5k tokens")),
        "{listed}"
    );
    m.ok(
        "message_workers",
        json!({"session_ids": ["bob"], "message": "[[work 30000]] a long job"}),
    )
    .await;
    let bob = until_interrupted(&m, "bob").await;
    assert!(bob["notes"].to_string().contains("team crew's"), "{bob}");
    let news = budget_news(&m, "crew").await;
    let reached: Vec<_> = news
        .iter()
        .filter(|n| n.starts_with("budget_reached: team crew reached its budget"))
        .collect();
    assert_eq!(reached.len(), 1, "{news:?}");
    assert!(
        news.iter()
            .any(|n| n.starts_with("budget_interrupt") && n.contains("bob")),
        "{news:?}"
    );

    // A worker's own budget, given after its spawn, and raised.
    let own = m
        .ok(
            "budget_workers",
            json!({"session_ids": ["ann"], "tokens": 2000000}),
        )
        .await;
    assert!(
        own["workers"][0]["budget"]
            .as_str()
            .is_some_and(|b| b.ends_with("of 2.0M tokens")),
        "{own}"
    );
    for (args, says) in [
        (json!({"tokens": 10}), "name the workers"),
        (
            json!({"session_ids": ["ann"], "team": "crew", "tokens": 10}),
            "not both",
        ),
        (json!({"team": "crew", "tokens": 0}), "above 0"),
    ] {
        let err = m.error("budget_workers", args).await;
        assert!(err.contains(says), "{err}");
    }
}

/// Spawns the worker `asker` in a repository of its own and has it ask for
/// permission to run `touch approved.txt`.
async fn spawn_an_asker(m: &Manager, repo: &str) {
    m.spawn_claude("asker", repo, None).await;
    m.ask_for_approval("asker").await;
}

/// The body of one HTTP request read from `stream` (its headers up to the blank
/// line, then Content-Length bytes).
async fn http_body(stream: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&bytes).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if body.len() >= length {
                return body.to_string();
            }
        }
    }
    String::new()
}

/// The next post the receiver took: its number and body.
async fn posted_next(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<(usize, String)>,
) -> (usize, String) {
    tokio::time::timeout(std::time::Duration::from_secs(30), rx.recv())
        .await
        .expect("a post within 30 s")
        .expect("the receiver")
}

/// A worker that needs approval reaches a person: the notifier posts it to the
/// webhook as JSON, and a receiver that failed the first post gets it on the retry.
/// An idle worker is not posted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_needing_approval_is_posted_to_the_webhook() {
    use tokio::io::AsyncWriteExt;
    let m = Manager::new(Which::Tmux).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, String)>();
    tokio::spawn(async move {
        let mut n = 0;
        while let Ok((mut stream, _)) = listener.accept().await {
            n += 1;
            let body = http_body(&mut stream).await;
            let status = if n == 1 {
                "500 Internal Server Error"
            } else {
                "200 OK"
            };
            let _ = stream
                .write_all(
                    format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                        .as_bytes(),
                )
                .await;
            let _ = tx.send((n, body));
        }
    });
    let hook = cohort_orchestration::webhook::Webhook::new(
        &format!("http://127.0.0.1:{port}/hook"),
        None,
        "",
    )
    .unwrap();
    m.engine.orchestrator.set_webhook(Some(hook));
    spawn_an_asker(&m, "webhook").await;
    let (first, failed) = posted_next(&mut rx).await;
    let (second, body) = posted_next(&mut rx).await;
    assert_eq!((first, second), (1, 2));
    assert_eq!(failed, body, "the retry posts the same notification");
    let posted: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(posted["kind"], "agent_state", "{posted}");
    assert!(
        posted["message"].as_str().is_some_and(
            |t| t.contains("asker is needs_approval") && t.contains("touch approved.txt")
        ),
        "{posted}"
    );
    // Answered, the worker goes idle: nothing more is posted.
    m.ok("key", json!({"target": "asker", "keys": ["1"]})).await;
    m.worker_until("asker", "idle", |w| w["state"] == "idle")
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(rx.try_recv().is_err(), "an idle worker was posted");
}

/// With desktop notifications on, a worker that needs approval shows on the
/// desktop through its notifier (here a stand-in `notify-send` on the notifier's
/// PATH that keeps its arguments), title and message as separate arguments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_needing_approval_shows_on_the_desktop() {
    let m = Manager::new(Which::Tmux).await;
    let bin = tempfile::tempdir().unwrap();
    let shown = bin.path().join("shown.txt");
    let notifier = bin.path().join("notify-send");
    std::fs::write(
        &notifier,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> '{}'; done\n",
            shown.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &notifier,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let desktop = cohort_orchestration::desktop::Desktop::find(bin.path().as_os_str(), "").unwrap();
    m.engine.orchestrator.set_desktop(Some(desktop));
    spawn_an_asker(&m, "desktop").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(&shown).unwrap_or_default();
        if text.contains("asker is needs_approval") {
            let args: Vec<&str> = text.lines().collect();
            assert_eq!(args[0], "--app-name=cohort", "{text}");
            assert_eq!(args[2], "cohort: agent_state from asker", "{text}");
            assert!(args[3].contains("touch approved.txt"), "{text}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "nothing shown on the desktop: {text:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// A change of a worker's state is published once, by the look whose write made it:
/// looks that start from an older row (another look wrote the change first, here or
/// in another process) publish nothing, so a watcher on the state fires once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_change_of_state_is_published_once() {
    let m = Manager::new(Which::Tmux).await;
    m.spawn_claude("once", "once", None).await;
    let before = m.engine.workers.worker_row("once").await.unwrap();
    let mut events = m.engine.terminal.events();
    let r = m
        .ok(
            "message_workers",
            json!({"session_ids": ["once"], "message": "[[work 3000]] a long turn"}),
        )
        .await;
    assert_eq!(r["results"][0]["status"], "submitted", "{r}");
    m.worker_until("once", "busy", |w| w["state"] == "busy")
        .await;
    // Four looks at once, each from the row read before the turn.
    let looks = (0..4).map(|_| m.engine.workers.observe(&before, false));
    for seen in futures_util::future::join_all(looks).await {
        assert_eq!(seen.unwrap().assessment.state.name(), "busy");
    }
    let mut busy = 0;
    while let Ok(event) = events.try_recv() {
        if let cohort_terminal::events::EngineEvent::AgentState { agent, state, .. } = event {
            if agent == "once" && state == "busy" {
                busy += 1;
            }
        }
    }
    assert_eq!(busy, 1, "the change to busy was published {busy} times");
    m.worker_until("once", "idle after the turn", |w| w["state"] == "idle")
        .await;
}

/// A release that renames the entry closing a turn (here `turn_duration` written as
/// `turn_summary`) goes unread by the built-in transcript rules: the worker is
/// `stuck`, never falsely idle. A line in the user's `transcripts.toml`, taken while
/// the engine runs, makes the transcript decide again (the entry already written
/// included), and `explain` names the rule and the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renamed_transcript_entry_is_read_by_the_users_rules_without_a_restart() {
    // Read by every engine of this test process, as the user's file would be: set
    // once, before any engine starts, and kept for the process.
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var(
            "COHORT_TRANSCRIPTS_FILE",
            dir.path().join("transcripts.toml"),
        );
        dir
    });
    let file = dir.path().join("transcripts.toml");
    let m = Manager::new(Which::Tmux).await;
    let repo = m.agents.repo("renamed");
    let spawned = m
        .ok(
            "spawn_workers",
            json!({"workers": [worker_spec(&m, &repo, "renamed", "claude",
                &[("FAKE_AGENT_NO_HOOKS", "1"), ("FAKE_AGENT_TURN_END", "turn_summary")])]}),
        )
        .await;
    assert_eq!(spawned["workers"][0]["state"], "ready", "{spawned}");
    let turn = |text: &'static str| {
        let m = &m;
        async move {
            let r = m
                .ok(
                    "message_workers",
                    json!({"session_ids": ["renamed"], "message": text}),
                )
                .await;
            assert_eq!(r["results"][0]["status"], "submitted", "{r}");
        }
    };

    // Unread: the transcript still says the turn runs while the screen shows the
    // composer; after the bound they may disagree, the worker needs a look.
    turn("a first turn").await;
    let w = m
        .worker_until("renamed", "stuck", |w| w["state"] == "stuck")
        .await;
    assert!(
        w["reason"].as_str().unwrap().contains(
            "its transcript says busy (a turn started) but the screen shows an idle prompt"
        ),
        "{w}"
    );

    std::fs::write(&file, "[claude]\nturn_ends = [\"turn_summary\"]\n").unwrap();
    // The file is looked at again within a second; the test waits until it was.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !cohort_workers::transcript_rules::current()
        .claude
        .turn_ends
        .contains(&"turn_summary".to_string())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the file was not read"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // The transcript is read again by the new rules: the first turn had ended.
    m.worker_until("renamed", "idle by its transcript", |w| {
        w["state"] == "idle" && w["signal"] == "transcript"
    })
    .await;
    // And the next turn's end is read as it is written.
    turn("a second turn").await;
    m.worker_until("renamed", "busy", |w| w["state"] == "busy")
        .await;
    m.worker_until("renamed", "idle by its transcript", |w| {
        w["state"] == "idle" && w["signal"] == "transcript"
    })
    .await;
    expect(&m, "renamed", "idle", "transcript", "the turn ended").await;
    let why = state(&m, "renamed").await;
    let lines = why["explain"].to_string();
    assert!(
        lines.contains(
            "newest report: the turn ended (its transcript by transcript rule claude.turn_ends \\\"turn_summary\\\")"
        ) && lines.contains(&format!(
            "transcript rules: built-in transcript rules with the user's {}",
            file.display()
        )),
        "{why}"
    );
    m.ok(
        "close_workers",
        json!({"session_ids": ["renamed"], "remove_worktree": true, "force": true}),
    )
    .await;
}
