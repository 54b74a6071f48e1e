//! Facts about local processes that terminals do not report themselves: the
//! foreground process of a pane's terminal, a process's name, and whether it is
//! waiting for input. Linux reads `/proc`; elsewhere `ps` answers what it can.

/// Pid of the foreground process group of `pid`'s terminal.
pub fn foreground_pid(shell_pid: u32) -> Option<u32> {
    if cfg!(target_os = "linux") {
        let stat = std::fs::read_to_string(format!("/proc/{shell_pid}/stat")).ok()?;
        let after_comm = &stat[stat.rfind(')')? + 1..];
        // state ppid pgrp session tty_nr tpgid
        let tpgid: i64 = after_comm.split_whitespace().nth(5)?.parse().ok()?;
        (tpgid > 0).then_some(tpgid as u32)
    } else {
        let out = std::process::Command::new("ps")
            .args(["-o", "tpgid=", "-p", &shell_pid.to_string()])
            .output()
            .ok()?;
        let tpgid: i64 = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
        (tpgid > 0).then_some(tpgid as u32)
    }
}

/// Executable name of a process.
pub fn process_name(pid: u32) -> Option<String> {
    if cfg!(target_os = "linux") {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        Some(comm.trim().to_string())
    } else {
        let out = std::process::Command::new("ps")
            .args(["-o", "comm=", "-p", &pid.to_string()])
            .output()
            .ok()?;
        let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (!name.is_empty()).then(|| {
            name.rsplit('/')
                .next()
                .unwrap_or(&name)
                .trim_start_matches('-')
                .to_string()
        })
    }
}

/// Whether process `pid` is blocked reading its terminal (or waiting in
/// `select`/`poll`/`epoll` for it to become readable), as far as the platform tells:
/// `None` where it cannot be known (not Linux, or the kernel hides it).
pub fn waiting_for_input(pid: u32) -> Option<bool> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    // A running process (R) or one in uninterruptible sleep (D) is not waiting for
    // input; its wchan reads "0" while it runs.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let state = stat[stat.rfind(')')? + 1..].split_whitespace().next()?;
    if state != "S" {
        return Some(false);
    }
    let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).ok()?;
    let wchan = wchan.trim();
    if wchan.is_empty() || wchan == "0" {
        return None;
    }
    Some(
        [
            "n_tty_read",
            "wait_woken",
            "poll_schedule_timeout",
            "do_select",
            "do_sys_poll",
            "core_sys_select",
            "ep_poll",
            "do_epoll_wait",
            "tty_read",
        ]
        .iter()
        .any(|w| wchan.starts_with(w)),
    )
}

/// The processes of foreground group `pgid`, other than its leader, that are waiting
/// for terminal input, with their names: the pager `git log` started, the editor a
/// script opened. Empty when none is, or where the platform cannot tell.
pub fn group_members_waiting(pgid: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    if !cfg!(target_os = "linux") {
        return found;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == pgid {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(after_comm) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        // state ppid pgrp
        let group = after_comm
            .split_whitespace()
            .nth(2)
            .and_then(|g| g.parse::<u32>().ok());
        if group == Some(pgid) && waiting_for_input(pid) == Some(true) {
            found.push((pid, process_name(pid).unwrap_or_default()));
        }
    }
    found
}
