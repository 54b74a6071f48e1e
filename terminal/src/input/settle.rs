//! Waiting for a program to settle: before Enter (a TUI still drawing a paste takes
//! Enter as a newline), after an interrupt (the next key must not reach the command
//! being stopped).

use std::time::{Duration, Instant};

use cohort_backends::{Key, KeyCode};

use crate::runtime::PaneRuntime;

/// Waits until `needle` is printed in the pane's output after `from` (in its first
/// 64 KiB), at most `limit`; says whether it was.
pub async fn until_printed(
    runtime: &PaneRuntime,
    from: u64,
    needle: &str,
    limit: Duration,
) -> bool {
    const LOOKED_AT: u64 = 64 << 10;
    let deadline = Instant::now() + limit;
    let mut changes = runtime.watch();
    loop {
        changes.borrow_and_update();
        let printed = {
            let mut data = runtime.lock();
            let start = from.max(data.journal.floor());
            let end = data.journal.len().min(start.saturating_add(LOOKED_AT));
            data.journal
                .read(start, end)
                .is_ok_and(|bytes| crate::completion::plain_text(&bytes).contains(needle))
        };
        if printed {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::select! {
            _ = changes.changed() => {}
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
    }
}

/// Waits until the program has echoed something after `before` (what was typed) and
/// then stayed quiet for `quiet`, at most `limit` in all.
pub async fn settle_after_echo(
    runtime: &PaneRuntime,
    before: u64,
    quiet: Duration,
    limit: Duration,
) {
    let deadline = Instant::now() + limit;
    let mut changes = runtime.watch();
    // The echo: any output after the text was typed (at most a quarter of the limit).
    let echo_deadline = Instant::now() + limit / 4;
    loop {
        changes.borrow_and_update();
        if runtime.lock().journal.len() > before || Instant::now() >= echo_deadline {
            break;
        }
        tokio::select! {
            _ = changes.changed() => {}
            _ = tokio::time::sleep_until(echo_deadline.into()) => {}
        }
    }
    settle(
        runtime,
        quiet,
        deadline.saturating_duration_since(Instant::now()),
    )
    .await;
}

/// Keys that stop or end the program reading them: `C-c`, `C-\\`, `C-z`, `C-d`.
pub fn is_interrupt(key: &Key) -> bool {
    match key.code {
        KeyCode::Char(c) => key.ctrl && matches!(c.to_ascii_lowercase(), 'c' | '\\' | 'z' | 'd'),
        _ => false,
    }
}

/// Waits until the shell reports the end of the command it runs, at most `limit`.
pub async fn until_command_ends(runtime: &PaneRuntime, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut changes = runtime.watch();
    loop {
        changes.borrow_and_update();
        if !runtime.lock().command_running() || Instant::now() >= deadline {
            return;
        }
        tokio::select! {
            _ = changes.changed() => {}
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
    }
}

/// Waits until the pane has produced no output for `quiet` (at most `limit`): a
/// program drawing the pasted text must finish before Enter, or a TUI may take the
/// Enter as a newline in its input box.
pub async fn settle(runtime: &PaneRuntime, quiet: Duration, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut changes = runtime.watch();
    loop {
        changes.borrow_and_update();
        let last = runtime.lock().last_output;
        let quiet_at = last + quiet;
        let now = Instant::now();
        if now >= quiet_at || now >= deadline {
            return;
        }
        tokio::select! {
            _ = changes.changed() => {}
            _ = tokio::time::sleep_until(quiet_at.min(deadline).into()) => {}
        }
    }
}
