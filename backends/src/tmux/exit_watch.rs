//! Waiting for a pane's process to exit, without polling.
//!
//! tmux's control mode has no notification for a pane dying (its `refresh-client -B`
//! subscriptions sample once a second and were seen to miss dead panes), so the
//! backend watches the pane's process itself: on Linux through a pidfd, which
//! becomes readable when the process exits. Elsewhere the subscription remains
//! the only source.

use std::io;

/// Resolves when process `pid` has exited. `Err` when the platform cannot watch it
/// (the caller falls back to tmux's own reports).
#[cfg(target_os = "linux")]
pub async fn process_exit(pid: u32) -> io::Result<()> {
    use std::os::fd::{FromRawFd, OwnedFd};
    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just created and nothing else owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: `owned` is moved into the AsyncFd and lives exactly as long as the
    // registration, so the descriptor cannot be closed or reused while registered.
    let watched = unsafe { AsyncFd::register_with_interest(owned, Interest::READABLE) }
        .map_err(|e| e.into_parts().1)?;
    let _ready = watched.readable().await?;
    Ok(())
}

/// Resolves when process `pid` has exited. `Err` when the platform cannot watch it
/// (the caller falls back to tmux's own reports).
#[cfg(not(target_os = "linux"))]
pub async fn process_exit(_pid: u32) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "process exit watching needs Linux pidfds",
    ))
}
