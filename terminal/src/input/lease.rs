//! Per-pane leases that hold across cohort processes: one for typing (the input
//! lease every [`super::InputTurn`] holds), one for a whole run, from its Enter to its
//! verdict. Each is an `flock` on a file under the state directory, so it goes with
//! its holder when that process dies.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// An exclusive lock on one pane's input, held until dropped. Backed by `flock` on a
/// file under cohort's state directory, so two cohort processes (a manager and a
/// worker) never interleave their keystrokes in one pane.
#[derive(Debug)]
pub struct Lease {
    file: File,
}

impl Drop for Lease {
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
pub async fn lock(path: PathBuf, timeout: Duration) -> std::io::Result<Lease> {
    lock_or(
        path,
        timeout,
        "another cohort process is typing into this pane",
    )
    .await
}

/// Takes the lock, waiting up to `timeout` for another holder; `busy` says who holds
/// it when the time is up.
pub async fn lock_or(path: PathBuf, timeout: Duration, busy: &str) -> std::io::Result<Lease> {
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
            return Ok(Lease { file });
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
