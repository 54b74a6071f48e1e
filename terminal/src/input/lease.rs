//! Per-pane leases that hold across cohort processes: one for typing (the input
//! lease every [`super::InputTurn`] holds), one for a whole run, from its Enter to its
//! verdict. Each is an `flock` on a file under the state directory, so it goes with
//! its holder when that process dies. The file holds the pid of its last holder, so a
//! process taking a lease knows whether another process held it last.

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
    /// Another process held the lease last.
    after_another: bool,
}

impl Lease {
    /// Whether another process held this lease last (and so may have typed into the
    /// pane a moment ago).
    pub fn after_another_process(&self) -> bool {
        self.after_another
    }

    /// Reads the last holder's pid from the file and writes this process's.
    fn note_holder(file: &File) -> bool {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 16];
        let read = file.read_at(&mut buf, 0).unwrap_or(0);
        let last = std::str::from_utf8(&buf[..read])
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        let own = std::process::id();
        if last != Some(own) {
            let text = format!("{own:<15}\n");
            if let Err(e) = file.write_at(text.as_bytes(), 0) {
                tracing::debug!(target: "cohort::engine", error = %e, "lease holder not noted");
            }
        }
        last.is_some_and(|pid| pid != own)
    }
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
            let after_another = Lease::note_holder(&file);
            return Ok(Lease {
                file,
                after_another,
            });
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
        let again = lock(path, Duration::from_millis(50)).await.unwrap();
        assert!(!again.after_another_process());
    }

    #[tokio::test]
    async fn a_lease_says_when_another_process_held_it_last() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_path(dir.path(), "-L cohort", "%4");
        assert!(!lock(path.clone(), Duration::from_millis(50))
            .await
            .unwrap()
            .after_another_process());
        // Another process's pid, as it leaves it.
        std::fs::write(&path, "1               \n").unwrap();
        assert!(lock(path.clone(), Duration::from_millis(50))
            .await
            .unwrap()
            .after_another_process());
        assert!(!lock(path, Duration::from_millis(50))
            .await
            .unwrap()
            .after_another_process());
    }
}
