//! The send path's shared pieces: per-pane locks that hold across cohort processes
//! (one for typing, one for a whole run, from its Enter to its verdict), and waiting
//! for a program to settle before Enter.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cohort_backends::{Key, KeyCode};

use super::runtime::PaneRuntime;

/// An exclusive lock on one pane's input, held until dropped. Backed by `flock` on a
/// file under cohort's state directory, so two cohort processes (a manager and a
/// worker) never interleave their keystrokes in one pane.
#[derive(Debug)]
pub struct SendLock {
    file: File,
}

impl Drop for SendLock {
    fn drop(&mut self) {
        // SAFETY: the descriptor is open for as long as `file` lives.
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Path of the lock file for `pane` on `server`.
pub fn lock_path(dir: &Path, server: &str, pane: &str) -> PathBuf {
    let clean = |s: &str| {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    dir.join(format!("{}-{}.lock", clean(server), clean(pane)))
}

/// Takes the lock, waiting up to `timeout` for another holder.
pub async fn lock(path: PathBuf, timeout: Duration) -> std::io::Result<SendLock> {
    lock_or(
        path,
        timeout,
        "another cohort process is typing into this pane",
    )
    .await
}

/// Takes the lock, waiting up to `timeout` for another holder; `busy` says who holds
/// it when the time is up.
pub async fn lock_or(path: PathBuf, timeout: Duration, busy: &str) -> std::io::Result<SendLock> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = File::options()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)?;
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        // SAFETY: flock on an open descriptor; LOCK_NB never blocks.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(SendLock { file });
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(err);
        }
        if Instant::now() >= deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                busy.to_string(),
            ));
        }
        // Contention only: back off briefly.
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Agent CLIs whose input box redraws in frames (Enter too early becomes a newline).
pub fn is_agent_tui(command: &str) -> bool {
    matches!(
        command,
        "claude" | "codex" | "aider" | "gemini" | "opencode" | "cursor-agent" | "amp"
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_lock_excludes_a_second_holder_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_path(dir.path(), "-L cohort", "%3");
        let first = lock(path.clone(), Duration::from_millis(50)).await.unwrap();
        // flock locks belong to the open file description: a second open (as another
        // process would make) cannot take it.
        let err = lock(path.clone(), Duration::from_millis(100))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        drop(first);
        lock(path, Duration::from_millis(50)).await.unwrap();
    }
}
