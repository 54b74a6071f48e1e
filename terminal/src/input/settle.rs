//! Waiting for a program to settle: before Enter (a TUI still drawing a paste takes
//! Enter as a newline), after an interrupt (the next key must not reach the command
//! being stopped).

use std::time::{Duration, Instant};

use cohort_backends::{process, Key, KeyCode, PaneId, PaneState, TerminalBackend};

use crate::runtime::{PaneData, PaneRuntime};

/// Waits until `needle` is printed in the pane's output after `from` (in its first
/// 64 KiB), at most `limit`; says whether it was.
pub async fn until_printed(
    runtime: &PaneRuntime,
    from: u64,
    needle: &str,
    limit: Duration,
) -> bool {
    const LOOKED_AT: u64 = 64 << 10;
    until(runtime, limit, |data| {
        let start = from.max(data.journal.floor());
        let end = data.journal.len().min(start.saturating_add(LOOKED_AT));
        data.journal
            .read(start, end)
            .is_ok_and(|bytes| crate::completion::plain_text(&bytes).contains(needle))
    })
    .await
}

/// Waits until `holds` says so of the pane's data, looked at on each change, at most
/// `limit`; says whether it did.
async fn until(
    runtime: &PaneRuntime,
    limit: Duration,
    mut holds: impl FnMut(&mut PaneData) -> bool,
) -> bool {
    let deadline = Instant::now() + limit;
    let mut changes = runtime.watch();
    loop {
        changes.borrow_and_update();
        if holds(&mut runtime.lock()) {
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

/// Waits until the shell has taken the line typed last (see
/// [`crate::runtime::PaneData::line_not_taken`]), at most `limit`: an interrupt
/// pressed before that reaches the shell, which drops the line, or the shell in the
/// instant before it hands the terminal to the line's command, which runs on.
pub async fn until_line_taken(runtime: &PaneRuntime, limit: Duration) {
    until(runtime, limit, |data| {
        !data.line_not_taken(LINE_JUST_ENTERED)
    })
    .await;
}

/// How recently a line must have been entered for an interrupt to wait until the
/// shell takes it: a line the shell has not marked for longer went to a shell that
/// does not mark it (its hook gone), not to one about to.
const LINE_JUST_ENTERED: Duration = Duration::from_secs(2);

/// Waits until the shell reports the end of the command it runs, at most `limit`.
pub async fn until_command_ends(runtime: &PaneRuntime, limit: Duration) {
    until(runtime, limit, |data| !data.command_running()).await;
}

/// What holds a pane's terminal: the leader of its foreground process group and the
/// command line it runs (which changes when the shell's fork becomes the command).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminalHolder {
    pid: u32,
    command_line: String,
}

impl TerminalHolder {
    fn of(pid: u32) -> Option<TerminalHolder> {
        Some(TerminalHolder {
            pid,
            command_line: process::command_line(pid)?,
        })
    }
}

/// What holds the terminal of `pane` (its shell's pid from `last`, the state last
/// asked) now. Only this machine's kernel is asked: `None` for a pane on another
/// host, or where it cannot tell.
pub fn terminal_holder(pane: &PaneId, last: Option<&PaneState>) -> Option<TerminalHolder> {
    let shell = last?.shell_pid?;
    if cohort_backends::hosts::split(pane.as_str()).0.is_some() || !process::proc_reader() {
        return None;
    }
    TerminalHolder::of(process::foreground_pid(shell)?)
}

/// Whether an interrupt (`C-c`) pressed while `pressed_for` held the terminal never
/// reached the command `pane` runs: that command holds the terminal now, which turns
/// `C-c` into SIGINT, it lives on though it neither ignores, catches nor blocks the
/// signal, and it is not what held the terminal then. The shell, or its fork not yet
/// the command, took the key in the instant between starting the command and
/// handing it the terminal (a fork still running the shell's code has the shell's
/// handler). A program that held the terminal itself had the key: it is never
/// pressed again for it (one that asks for a second `C-c` to stop gets one only from
/// the caller). Only this machine's kernel is asked.
pub async fn interrupt_missed(
    backend: &dyn TerminalBackend,
    pane: &PaneId,
    pressed_for: &TerminalHolder,
) -> bool {
    if cohort_backends::hosts::split(pane.as_str()).0.is_some()
        || !backend.capabilities().foreground_process
        || !process::proc_reader()
    {
        return false;
    }
    let Ok(state) = backend.pane_state(pane).await else {
        return false;
    };
    let (Some(leader), Some(tty)) = (state.foreground_pid, state.tty.as_deref()) else {
        return false;
    };
    state.shell_pid != Some(leader)
        && TerminalHolder::of(leader).is_some_and(|now| now != *pressed_for)
        && process::tty_mode(std::path::Path::new(tty)).is_some_and(|mode| mode.signals)
        && process::interrupt_would_end(leader) == Some(true)
}

/// Whether `key` is `C-c`, the key the terminal turns into SIGINT.
pub fn is_sigint(key: &Key) -> bool {
    key.ctrl && matches!(key.code, KeyCode::Char('c' | 'C'))
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
