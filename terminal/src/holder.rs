//! A process as the holder of something cohort processes share (a session's lock):
//! its pid and when it started, so a holder that is gone, or whose pid was reused by
//! another program, is told apart from one that still runs.

/// This process: its pid and start time.
pub fn this() -> (i64, Option<String>) {
    let pid = i64::from(std::process::id());
    (pid, started(pid))
}

/// Whether the process `pid` that started at `start` (as [`this`] gave it) still runs.
/// Where start times cannot be read, a running process of that pid counts.
pub fn running(pid: i64, start: Option<&str>) -> bool {
    if pid <= 0 || pid > i64::from(i32::MAX) {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid as libc::pid_t, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return false;
    }
    match stat(pid) {
        // A zombie has ended; only its parent has not looked yet.
        Some((state, _)) if state == "Z" => false,
        Some((_, now)) => start.is_none_or(|then| now == then),
        None => true,
    }
}

/// When process `pid` started (clock ticks since boot, from `/proc`), where known.
fn started(pid: i64) -> Option<String> {
    stat(pid).map(|(_, start)| start)
}

/// Process `pid`'s state letter and start time, from `/proc` where there is one.
fn stat(pid: i64) -> Option<(String, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.to_string();
    // The start time is field 22; `rest` begins at field 3 (the state).
    let start = fields.nth(18)?.to_string();
    Some((state, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_runs_and_a_reused_pid_does_not_count() {
        let (pid, start) = this();
        assert!(running(pid, start.as_deref()));
        if start.is_some() {
            assert!(
                !running(pid, Some("1")),
                "another start time is another process"
            );
        }
        assert!(!running(0, None));
        assert!(!running(i64::from(i32::MAX) + 1, None));
    }

    #[test]
    fn a_process_that_ended_does_not_run() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = i64::from(child.id());
        child.wait().unwrap();
        assert!(!running(pid, None));
    }
}
