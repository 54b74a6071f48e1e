//! A worker on the dashboard, in a real browser: its CLI, branch, what it spent and
//! what it changed under its card, and a permission it asks for shown and answered
//! from the page, noted as the dashboard's decision. With
//! `COHORT_WORKER_SCREENSHOT=FILE` it also saves the page as it asks
//! (`docs/dashboard-workers.png`, made by `docs/demo/record.sh`).

use std::time::Duration;

use crate::{browser, terminals::Which, workers::Manager};
use cohort::dashboard::{router, DashboardOptions};
use cohort::engine::slot::EngineSlot;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_shows_what_it_spent_and_its_approval_is_answered_from_the_page() {
    let Some(chromium) = browser::program() else {
        return;
    };
    let m = Manager::new(Which::Tmux).await;
    m.spawn_claude("claude", "dash", Some("crew")).await;
    m.ask_for_approval("claude").await;
    m.worker_until("claude", "asking for approval", |w| {
        w["state"] == "needs_approval"
    })
    .await;

    // The page, allowed to type.
    let app = router(
        EngineSlot::ready(m.engine.clone()),
        DashboardOptions {
            loopback: true,
            input: true,
            ..DashboardOptions::default()
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let mut page =
        browser::Browser::open(&chromium, &format!("http://{addr}/dashboard/"), 1200, 800).await;
    let card = r#"document.querySelector('.card[data-session="claude"]')"#;
    page.wait_until(
        &format!("{card} && {card}.querySelector('.worker') && {card}.querySelector('.worker').textContent.includes('tokens')"),
        crate::support::WAIT,
    )
    .await;
    let line = page
        .eval(&format!("{card}.querySelector('.worker').textContent"))
        .await;
    let line = line.as_str().unwrap();
    assert!(
        line.starts_with("claude · cohort/claude · ") && line.contains("from cache"),
        "{line}"
    );
    page.wait_until(
        &format!("!!{card}.querySelector('.approval button.approve')"),
        crate::support::WAIT,
    )
    .await;
    // The card says what the worker asks to run, as its hook reported it.
    let asks = page
        .eval(&format!(
            "{card}.querySelector('.approval .request').textContent"
        ))
        .await;
    assert!(
        asks.as_str().unwrap().contains("touch approved.txt"),
        "{asks}"
    );
    // A decision the page cannot make is refused, and nothing is pressed.
    let refused = page
        .eval(
            "fetch('api/approve', {method: 'POST', headers: {'Content-Type': 'application/json', \
             'X-Cohort-Page': document.querySelector('meta[name=\"cohort-page\"]').content}, \
             body: JSON.stringify({worker: 'claude', decision: 'maybe', since_ms: 1})}) \
             .then(async r => [r.status, await r.text()])",
        )
        .await;
    assert_eq!(refused[0], 400, "{refused}");
    assert!(
        refused[1].as_str().unwrap().contains("unknown decision"),
        "{refused}"
    );
    // The README's picture of a worker (docs/demo/record.sh asks for it).
    if let Ok(file) = std::env::var("COHORT_WORKER_SCREENSHOT") {
        page.wait_until(
            &format!("{card}.querySelector('.screen').textContent.includes('Do you want')"),
            crate::support::WAIT,
        )
        .await;
        std::fs::write(file, page.screenshot().await).unwrap();
    }
    page.eval(&format!(
        "{card}.querySelector('.approval button.approve').click()"
    ))
    .await;
    // The click answered the dialog: the agent ran the command and went idle.
    m.worker_until("claude", "idle after the approval from the page", |w| {
        w["state"] == "idle"
    })
    .await;
    let w = m
        .ok("examine_worker", json!({"session_id": "claude"}))
        .await;
    let worktree = std::path::PathBuf::from(w["worktree"].as_str().unwrap());
    // The decision is noted on the worker as the dashboard's (once the dialog was
    // seen to go, which may come after the agent went on).
    m.worker_until("claude", "noted as the dashboard's decision", |w| {
        let notes = w["notes"].to_string();
        notes.contains("approval: allow") && notes.contains("(by the dashboard)")
    })
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !worktree.join("approved.txt").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the approval from the page did not reach the agent: {w}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // No approval is pending any more, so the page offers none; the card says what
    // the worker changed (the file it made, not committed).
    page.wait_until(
        &format!("!{card}.querySelector('.approval')"),
        crate::support::WAIT,
    )
    .await;
    page.wait_until(
        &format!("({card}.querySelector('.changes')?.textContent || '').includes('1 untracked')"),
        crate::support::WAIT,
    )
    .await;
}
