//! Bringing workers' branches together: four workers, one of them in conflict with
//! another, merged smallest first with a check between merges; a failing check; a
//! clean merge. The user's checkout is never touched.

use crate::{agents::git, terminals::Which, workers::Manager};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn commit(dir: &Path, file: &str, text: &str, message: &str) {
    std::fs::write(dir.join(file), text).unwrap();
    git(dir, &["add", file]);
    git(dir, &["commit", "-q", "-m", message]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn branches_merge_smallest_first_and_stop_at_a_conflict_or_a_failed_check() {
    let m = Manager::new(Which::Tmux).await;
    let repo = m.agents.repo("merge");
    let names = ["big", "small", "left", "right"];
    let specs: Vec<Value> = names
        .iter()
        .map(|n| {
            json!({"name": n, "agent": "claude", "project_path": repo.display().to_string(),
                   "env": m.agents.env_json(&[])})
        })
        .collect();
    m.ok("spawn_workers", json!({"workers": specs})).await;
    let tree = |name: &str| -> PathBuf { repo.join(".worktrees").join(name) };
    let many: String = (0..100).map(|i| format!("line {i}\n")).collect();
    commit(&tree("big"), "big.txt", &many, "a big change");
    commit(&tree("small"), "small.txt", "one\n", "a small change");
    commit(&tree("left"), "README.md", "# left\n", "left's title");
    commit(&tree("right"), "README.md", "# right\n", "right's title");
    // Work not committed is left out, and said so.
    std::fs::write(tree("small").join("draft.txt"), "wip\n").unwrap();
    let head_before = git(&repo, &["rev-parse", "HEAD"]);

    let changes = m.ok("diff_workers", json!({"session_ids": names})).await;
    let big = &changes["workers"][0];
    assert!(
        big["change"].as_str().unwrap().contains("1 commit")
            && big["stat"].as_str().unwrap().contains("big.txt"),
        "{changes}"
    );

    let started = std::time::Instant::now();
    let r = m
        .ok(
            "merge_workers",
            json!({"session_ids": names, "order": "smallest_first", "check": "test -f small.txt"}),
        )
        .await;
    let took = started.elapsed();
    assert_eq!(r["complete"], false, "{r}");
    assert_eq!(r["into"], "main", "{r}");
    let steps = r["steps"].as_array().unwrap();
    let seen: Vec<(&str, &str)> = steps
        .iter()
        .map(|s| {
            (
                s["worker"].as_str().unwrap(),
                s["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("small", "merged"),
            ("left", "merged"),
            ("right", "conflict"),
            ("big", "not_tried")
        ],
        "{r}"
    );
    assert_eq!(steps[0]["uncommitted"], 1, "{r}");
    assert_eq!(steps[2]["conflicts"], json!(["README.md"]), "{r}");
    assert!(
        steps[2]["hunks"].as_str().unwrap().contains("<<<<<<<"),
        "{r}"
    );
    let scratch = PathBuf::from(r["worktree"].as_str().expect("kept to resolve in"));
    // The conflict is left there to resolve.
    assert_eq!(
        git(&scratch, &["diff", "--name-only", "--diff-filter=U"]),
        "README.md\n"
    );
    let branch = r["branch"].as_str().unwrap();
    assert_eq!(
        git(&repo, &["show", &format!("{branch}:README.md")]),
        "# left\n"
    );
    // The user's checkout and branch are as they were.
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), head_before);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");

    // A check that fails after a merge: that merge is taken back out, and it stops.
    let r = m
        .ok(
            "merge_workers",
            json!({"session_ids": ["small", "big"], "branch": "cohort/checked",
                   "check": "test ! -f big.txt || { echo big.txt is not wanted; exit 3; }"}),
        )
        .await;
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps[0]["outcome"], "merged", "{r}");
    assert_eq!(steps[1]["outcome"], "check_failed", "{r}");
    assert_eq!(steps[1]["check_status"], 3, "{r}");
    assert!(
        steps[1]["check_output"]
            .as_str()
            .unwrap()
            .contains("big.txt is not wanted"),
        "{r}"
    );
    let files = git(&repo, &["ls-tree", "--name-only", "cohort/checked"]);
    assert!(
        files.contains("small.txt") && !files.contains("big.txt"),
        "{files}"
    );

    // Nothing in the way: every branch in, the scratch worktree gone.
    let r = m
        .ok(
            "merge_workers",
            json!({"session_ids": ["big", "left"], "branch": "cohort/clean"}),
        )
        .await;
    assert_eq!(r["complete"], true, "{r}");
    assert!(r["worktree"].is_null(), "{r}");
    let files = git(&repo, &["ls-tree", "--name-only", "cohort/clean"]);
    assert!(files.contains("big.txt"), "{files}");
    // An existing branch is never overwritten.
    let taken = m
        .error(
            "merge_workers",
            json!({"session_ids": ["big"], "branch": "cohort/clean"}),
        )
        .await;
    assert!(taken.contains("exists already"), "{taken}");
    eprintln!(
        "merging 4 workers' branches with one conflict and a check after each: {} ms",
        took.as_millis()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_is_handed_to_a_worker_in_the_scratch_worktree() {
    let m = Manager::new(Which::Tmux).await;
    let repo = m.agents.repo("resolve");
    let specs: Vec<Value> = ["left", "right"]
        .iter()
        .map(|n| {
            json!({"name": n, "agent": "claude", "project_path": repo.display().to_string(),
                   "env": m.agents.env_json(&[])})
        })
        .collect();
    m.ok("spawn_workers", json!({"workers": specs})).await;
    let tree = |name: &str| -> PathBuf { repo.join(".worktrees").join(name) };
    commit(&tree("left"), "README.md", "# left\n", "left's title");
    commit(&tree("right"), "README.md", "# right\n", "right's title");

    // Its place is cohort's to choose.
    let refused = m
        .error(
            "merge_workers",
            json!({"session_ids": ["left", "right"], "resolver": {"project_path": "/tmp"}}),
        )
        .await;
    assert!(
        refused.contains("unknown field `project_path`"),
        "{refused}"
    );

    let r = m
        .ok(
            "merge_workers",
            json!({"session_ids": ["left", "right"], "branch": "cohort/resolved",
                   "check": "! grep -q '<<<<<<<' README.md",
                   "resolver": {"name": "mender", "agent": "claude",
                                "env": m.agents.env_json(&[]), "prompt": "Keep both titles."}}),
        )
        .await;
    assert_eq!(r["steps"][1]["outcome"], "conflict", "{r}");
    let scratch = r["worktree"].as_str().expect("kept to resolve in");
    let resolver = &r["resolver"];
    assert_eq!(resolver["name"], "mender", "{r}");
    assert!(resolver["error"].is_null(), "{r}");
    let prompt = r["resolver_prompt"].as_str().unwrap();
    for part in [
        &format!("{scratch} is a scratch git worktree on branch cohort/resolved"),
        "merging right's branch",
        "conflicts in: README.md",
        "! grep -q '<<<<<<<' README.md",
    ] {
        assert!(prompt.contains(part), "{part:?} not in {prompt}");
    }
    // It works in the scratch worktree, on the merge's branch, and got the conflict
    // and the caller's words whole.
    m.worker_until("mender", "went idle after its prompt", |w| {
        w["state"] == "idle"
    })
    .await;
    let mender = m
        .ok("examine_worker", json!({"session_id": "mender"}))
        .await;
    let dir = mender["worktree"].as_str().expect("its directory");
    assert_eq!(
        std::fs::canonicalize(dir).unwrap(),
        std::fs::canonicalize(scratch).unwrap(),
        "{mender}"
    );
    assert_eq!(mender["branch"], "cohort/resolved", "{mender}");
    assert_eq!(mender["role"], "resolver", "{mender}");
    let whole = format!("{prompt} Keep both titles.");
    assert!(
        mender["last_turn"]
            .as_str()
            .unwrap()
            .contains(&crate::agents::answer(&whole)),
        "{mender}"
    );
    // The conflict is still there for it: the merge left it in place.
    assert_eq!(
        git(
            Path::new(scratch),
            &["diff", "--name-only", "--diff-filter=U"]
        ),
        "README.md\n"
    );
    // Resolved and committed (by hand here), the worktree is clean and still the
    // resolver's: a sweep of orphans leaves it.
    commit(
        Path::new(scratch),
        "README.md",
        "# left and right\n",
        "both titles",
    );
    let swept = m
        .ok(
            "list_worktrees",
            json!({"repo_path": repo.display().to_string(), "remove_orphans": true}),
        )
        .await;
    let entry = swept["worktrees"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| {
            std::fs::canonicalize(w["path"].as_str().unwrap()).ok()
                == std::fs::canonicalize(scratch).ok()
        })
        .cloned()
        .unwrap_or_else(|| panic!("the scratch worktree is listed: {swept}"));
    assert_eq!(entry["worker"], "mender", "{swept}");
    assert_eq!(entry["removed"], false, "{swept}");
    assert!(Path::new(scratch).exists());
}
