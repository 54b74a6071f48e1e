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
/// script opened, the `less` that ends a pipeline whose first command already exited.
/// Empty when none is, or where the platform cannot tell.
///
/// The members are looked for among the descendants of `shell_pid` (the pane's shell,
/// which started the group), through the kernel's per-thread `children` lists; where
/// those are missing (a kernel built without them) or the shell is unknown, among
/// every process.
pub fn group_members_waiting(shell_pid: Option<u32>, pgid: u32) -> Vec<(u32, String)> {
    if !cfg!(target_os = "linux") {
        return Vec::new();
    }
    let candidates = shell_pid.and_then(descendants).unwrap_or_else(all_pids);
    candidates
        .into_iter()
        .filter(|&pid| pid != pgid && group_of(pid) == Some(pgid))
        .filter(|&pid| waiting_for_input(pid) == Some(true))
        .map(|pid| (pid, process_name(pid).unwrap_or_default()))
        .collect()
}

/// Process group of `pid` (Linux).
fn group_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 1..];
    // state ppid pgrp
    after_comm.split_whitespace().nth(2)?.parse().ok()
}

/// Every descendant of `root` (Linux, from `/proc/<pid>/task/<tid>/children`); `None`
/// when the kernel does not provide those lists.
fn descendants(root: u32) -> Option<Vec<u32>> {
    let children_of = |pid: u32| -> Option<Vec<u32>> {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
        let mut children = Vec::new();
        for task in tasks.flatten() {
            let list = std::fs::read_to_string(task.path().join("children")).ok()?;
            children.extend(
                list.split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
        Some(children)
    };
    let mut found = Vec::new();
    let mut queue = children_of(root)?;
    while let Some(pid) = queue.pop() {
        // A process that exited meanwhile has no lists any more: skip it, not the walk.
        if let Some(children) = children_of(pid) {
            queue.extend(children);
        }
        found.push(pid);
    }
    Some(found)
}

/// Every process id in `/proc` (Linux).
fn all_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .collect()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn descendants_reach_grandchildren_and_members_are_found_by_group() {
        use std::os::unix::process::CommandExt;
        // sh → (sh → sleep) and sh → sleep: three descendants, two of them sleeps, all
        // in a process group of their own.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "(sleep 30; :) & sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let root = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut sleeps = 0;
        while std::time::Instant::now() < deadline {
            let all = descendants(root).expect("this kernel lists children");
            sleeps = all
                .iter()
                .filter(|&&p| process_name(p).as_deref() == Some("sleep"))
                .count();
            if sleeps == 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(sleeps, 2);
        // Sleeping is not waiting for the terminal: no member is reported, through the
        // walk or through the whole-system scan.
        assert_eq!(group_of(root), Some(root));
        assert!(group_members_waiting(Some(root), root).is_empty());
        assert!(group_members_waiting(None, root).is_empty());
        let _ = std::process::Command::new("kill")
            .args(["-9", "--", &format!("-{root}")])
            .status();
        child.wait().unwrap();
    }
}
