//! Facts about local processes that terminals do not report themselves: the
//! foreground process of a pane's terminal, a process's name, and whether it is
//! waiting for input. Linux reads `/proc`; elsewhere `ps` answers what it can.
//!
//! The `/proc` reader can be switched off ([`set_proc_reader`], or `COHORT_NO_PROC=1`
//! in the environment), so the facts a host without `/proc` (macOS) gives can be
//! tested on Linux.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

/// 0: not decided yet; 1: on; 2: off.
static PROC_READER: AtomicU8 = AtomicU8::new(0);

/// Whether facts come from `/proc`: on Linux, unless switched off.
pub fn proc_reader() -> bool {
    match PROC_READER.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let on = cfg!(target_os = "linux")
                && std::env::var_os("COHORT_NO_PROC").is_none_or(|v| v.is_empty() || v == "0");
            PROC_READER.store(if on { 1 } else { 2 }, Ordering::Relaxed);
            on
        }
    }
}

/// Switches the `/proc` reader on or off for this process (off: the facts are those
/// of a host without `/proc`). It cannot be switched on where there is no `/proc`.
pub fn set_proc_reader(on: bool) {
    let on = on && cfg!(target_os = "linux");
    PROC_READER.store(if on { 1 } else { 2 }, Ordering::Relaxed);
}

/// Where the kernel's process facts are read: this machine's `/proc`
/// ([`LocalProcs`]), or a snapshot of another machine's
/// ([`crate::remote_procs::ProcSnapshot`]). The rules that read them are the same.
pub trait Procs: Sync {
    /// The content of `/proc/<pid>/<file>` (`stat`, `comm`, `wchan`, `syscall`,
    /// `cmdline`).
    fn file(&self, pid: u32, file: &str) -> Option<Vec<u8>>;
    /// Where descriptor `fd` of `pid` points.
    fn fd_target(&self, pid: u32, fd: u32) -> Option<PathBuf>;
    /// Where every descriptor of `pid` points.
    fn fd_targets(&self, pid: u32) -> Option<Vec<PathBuf>>;
    /// The children of `pid`, from every one of its threads; `None` when the kernel
    /// does not list them.
    fn children(&self, pid: u32) -> Option<Vec<u32>>;
    /// Every process id.
    fn pids(&self) -> Vec<u32>;
    /// The mode of the terminal device `tty`.
    fn tty_mode(&self, tty: &Path) -> Option<TtyMode>;
    /// The machine's architecture as `uname -m` names it: system call numbers depend
    /// on it.
    fn arch(&self) -> &str;
}

/// This machine's `/proc`.
pub struct LocalProcs;

impl Procs for LocalProcs {
    fn file(&self, pid: u32, file: &str) -> Option<Vec<u8>> {
        std::fs::read(format!("/proc/{pid}/{file}")).ok()
    }

    fn fd_target(&self, pid: u32, fd: u32) -> Option<PathBuf> {
        std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok()
    }

    fn fd_targets(&self, pid: u32) -> Option<Vec<PathBuf>> {
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
        Some(
            fds.flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .collect(),
        )
    }

    fn children(&self, pid: u32) -> Option<Vec<u32>> {
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
    }

    fn pids(&self) -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
            .collect()
    }

    fn tty_mode(&self, tty: &Path) -> Option<TtyMode> {
        tty_mode(tty)
    }

    fn arch(&self) -> &str {
        std::env::consts::ARCH
    }
}

/// A text file of `pid` from `procs`.
fn text(procs: &dyn Procs, pid: u32, file: &str) -> Option<String> {
    procs
        .file(pid, file)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// Pid of the foreground process group of `shell_pid`'s terminal, from `procs`.
pub fn foreground_pid_in(procs: &dyn Procs, shell_pid: u32) -> Option<u32> {
    let tpgid: i64 = stat_field(procs, shell_pid, TPGID)?.parse().ok()?;
    (tpgid > 0).then_some(tpgid as u32)
}

/// Executable name of a process, from `procs`.
pub fn process_name_in(procs: &dyn Procs, pid: u32) -> Option<String> {
    Some(text(procs, pid, "comm")?.trim().to_string())
}

/// Pid of the foreground process group of `pid`'s terminal.
pub fn foreground_pid(shell_pid: u32) -> Option<u32> {
    if proc_reader() {
        foreground_pid_in(&LocalProcs, shell_pid)
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
    if proc_reader() {
        process_name_in(&LocalProcs, pid)
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
///
/// The kernel's wait channel says *how* a process sleeps, not on what, so each kind of
/// wait is looked at further:
///
/// - a blocking read (`wait_woken`, `n_tty_read`) is on the terminal when the system
///   call in progress reads a terminal descriptor; a `recvfrom` on a socket (`pip`
///   downloading, `urlopen`) sleeps in the same place. Where the system call cannot be
///   read (another user's process, Yama's ptrace scope), a process that holds a socket
///   while the terminal is in line mode is taken to be waiting on the network;
/// - `poll`, `select` and `epoll` waits count only while the terminal is in raw mode,
///   as REPLs, editors, pagers and remote shells set it to read keys. A program
///   polling for something else (a timer, a socket, a growing file: `node -e
///   setTimeout`, `curl`, `tail -f`) leaves the terminal in line mode.
pub fn waiting_for_input(pid: u32) -> Option<bool> {
    if !proc_reader() {
        return None;
    }
    waiting_for_input_in(&LocalProcs, pid)
}

/// [`waiting_for_input`], from `procs`.
pub fn waiting_for_input_in(procs: &dyn Procs, pid: u32) -> Option<bool> {
    // A running process (R) or one in uninterruptible sleep (D) is not waiting for
    // input; its wchan reads "0" while it runs.
    if stat_field(procs, pid, STATE)? != "S" {
        return Some(false);
    }
    let wchan = text(procs, pid, "wchan")?;
    let wchan = wchan.trim();
    if wchan.is_empty() || wchan == "0" {
        return None;
    }
    let is = |names: &[&str]| names.iter().any(|w| wchan.starts_with(w));
    if is(&["n_tty_read", "tty_read", "wait_woken"]) {
        return Some(match syscall_reading(procs, pid) {
            Some(Some(fd)) => fd_is_terminal(procs, pid, fd),
            Some(None) => false,
            None => !(line_mode(procs, pid) == Some(true) && holds_socket(procs, pid)),
        });
    }
    if is(&[
        "poll_schedule_timeout",
        "do_select",
        "do_sys_poll",
        "core_sys_select",
        "ep_poll",
        "do_epoll_wait",
    ]) {
        return Some(line_mode(procs, pid) != Some(true));
    }
    Some(false)
}

/// Whether the terminal of `pid` is in line mode, from `procs`.
fn line_mode(procs: &dyn Procs, pid: u32) -> Option<bool> {
    terminal_mode_in(procs, pid).map(|mode| mode.line)
}

/// The system call `pid` sleeps in, from `/proc/<pid>/syscall`: `Some(Some(fd))` for a
/// read of descriptor `fd`, `Some(None)` for any other call, `None` when it cannot be
/// read (permissions, or an architecture whose numbers are not listed here).
fn syscall_reading(procs: &dyn Procs, pid: u32) -> Option<Option<u32>> {
    // read, readv, pread64, preadv.
    let reads: &[u64] = match procs.arch() {
        "x86_64" | "amd64" => &[0, 19, 17, 295],
        "aarch64" | "arm64" => &[63, 65, 67, 69],
        _ => return None,
    };
    let text = text(procs, pid, "syscall")?;
    let mut fields = text.split_whitespace();
    let number: u64 = fields.next()?.parse().ok()?;
    if !reads.contains(&number) {
        return Some(None);
    }
    let fd = u64::from_str_radix(fields.next()?.trim_start_matches("0x"), 16).ok()?;
    Some(u32::try_from(fd).ok())
}

/// Whether descriptor `fd` of `pid` is a terminal.
fn fd_is_terminal(procs: &dyn Procs, pid: u32, fd: u32) -> bool {
    procs
        .fd_target(pid, fd)
        .is_some_and(|target| is_terminal_path(&target))
}

fn is_terminal_path(path: &std::path::Path) -> bool {
    let path = path.to_string_lossy();
    path.starts_with("/dev/pts/") || path.starts_with("/dev/tty")
}

/// Whether `pid` has a socket open.
fn holds_socket(procs: &dyn Procs, pid: u32) -> bool {
    procs.fd_targets(pid).is_some_and(|targets| {
        targets
            .iter()
            .any(|t| t.to_string_lossy().starts_with("socket:"))
    })
}

/// Whether the terminal of `pid` (its standard input, output or error) is in line mode
/// (`ICANON`), as shells leave it for the programs they run; `false` for raw mode, which
/// programs set to read keys; `None` when `pid` has no terminal or it cannot be opened.
pub fn terminal_in_line_mode(pid: u32) -> Option<bool> {
    terminal_mode(pid).map(|mode| mode.line)
}

/// The mode of the terminal of `pid` (see [`TtyMode`]); `None` when `pid` has no
/// terminal or it cannot be opened.
pub fn terminal_mode(pid: u32) -> Option<TtyMode> {
    if !proc_reader() {
        return None;
    }
    terminal_mode_in(&LocalProcs, pid)
}

/// [`terminal_mode`], from `procs`.
pub fn terminal_mode_in(procs: &dyn Procs, pid: u32) -> Option<TtyMode> {
    let tty = (0..3)
        .filter_map(|fd| procs.fd_target(pid, fd))
        .find(|p| is_terminal_path(p))?;
    procs.tty_mode(&tty)
}

/// What a terminal's local modes say about who reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TtyMode {
    /// Line mode (`ICANON`): the kernel gathers whole lines, as shells leave it for
    /// the programs they run. Off: a program reads keys.
    pub line: bool,
    /// The kernel echoes what is typed (`ECHO`). A line editor (readline, zle, fish's)
    /// turns it off and draws the line itself, so keys read with echo on are not a
    /// shell's prompt but a program (or a builtin: `read -n1`) asking for a key.
    pub echo: bool,
    /// `C-c` becomes SIGINT for the foreground process group (`ISIG`). Off, a
    /// program reads `C-c` as a key.
    pub signals: bool,
}

/// The mode of the terminal device at `tty` (`/dev/pts/3`): `tcgetattr`, which any
/// POSIX system answers for a terminal it can open. `None` when it cannot be opened.
pub fn tty_mode(tty: &std::path::Path) -> Option<TtyMode> {
    use std::os::unix::io::AsRawFd;
    let file = open_tty(tty)?;
    // SAFETY: `termios` is plain data that `tcgetattr` fills in; the descriptor is open
    // for the duration of the call.
    let mut termios: libc::termios = unsafe { std::mem::zeroed() };
    if unsafe { libc::tcgetattr(file.as_raw_fd(), &mut termios) } != 0 {
        return None;
    }
    Some(TtyMode {
        line: termios.c_lflag & libc::ICANON != 0,
        echo: termios.c_lflag & libc::ECHO != 0,
        signals: termios.c_lflag & libc::ISIG != 0,
    })
}

/// Whether the terminal device at `tty` (`/dev/pts/3`) is in line mode (`ICANON`):
/// `tcgetattr`, which any POSIX system answers for a terminal it can open, whoever's
/// controlling terminal it is. `None` when it cannot be opened.
pub fn tty_in_line_mode(tty: &std::path::Path) -> Option<bool> {
    tty_mode(tty).map(|mode| mode.line)
}

/// How many bytes typed into the terminal device at `tty` no program has read yet
/// (`FIONREAD`; in line mode, the complete lines). `None` when it cannot be opened.
pub fn tty_input_pending(tty: &std::path::Path) -> Option<usize> {
    use std::os::unix::io::AsRawFd;
    let file = open_tty(tty)?;
    let mut pending: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer; the descriptor is open for
    // the duration of the call.
    if unsafe { libc::ioctl(file.as_raw_fd(), libc::FIONREAD, &mut pending) } != 0 {
        return None;
    }
    usize::try_from(pending).ok()
}

/// Opens a terminal device only to ask about it: never as a controlling terminal,
/// never blocking.
fn open_tty(tty: &std::path::Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(tty)
        .ok()
}

/// Whether `pid` lives on as a process that a SIGINT would have ended: it neither
/// ignores, catches nor blocks the signal, and none is pending for it. Seen after an
/// interrupt was pressed for it, the interrupt never reached it. `None` where the
/// kernel does not tell (no `/proc`, the process gone).
pub fn interrupt_would_end(pid: u32) -> Option<bool> {
    if !proc_reader() {
        return None;
    }
    interrupt_would_end_in(&LocalProcs, pid)
}

/// [`interrupt_would_end`], from `procs`.
pub fn interrupt_would_end_in(procs: &dyn Procs, pid: u32) -> Option<bool> {
    let status = text(procs, pid, "status")?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    // A zombie or a dying process has ended already.
    if !matches!(field("State")?.chars().next()?, 'R' | 'S' | 'D') {
        return Some(false);
    }
    const SIGINT_BIT: u64 = 1 << (libc::SIGINT - 1);
    for mask in ["SigIgn", "SigCgt", "SigBlk", "SigPnd", "ShdPnd"] {
        let bits = u64::from_str_radix(field(mask)?, 16).ok()?;
        if bits & SIGINT_BIT != 0 {
            return Some(false);
        }
    }
    Some(true)
}

/// The command line `pid` runs (its arguments joined by spaces), from `/proc` or `ps`.
pub fn command_line(pid: u32) -> Option<String> {
    arguments(pid).map(|args| args.join(" "))
}

/// Whether `pid` is a shell running a script or a `-c` command line rather than reading
/// commands from its terminal: `bash install.sh`, `sh -c '…'`, as opposed to `bash`,
/// `bash --norc` or `zsh -l`. `None` when its arguments cannot be read.
pub fn shell_runs_a_script(pid: u32) -> Option<bool> {
    let args = arguments(pid)?;
    Some(script_arguments(&args))
}

/// [`shell_runs_a_script`], from `procs`.
pub fn shell_runs_a_script_in(procs: &dyn Procs, pid: u32) -> Option<bool> {
    Some(script_arguments(&arguments_in(procs, pid)?))
}

/// [`command_line`], from `procs`.
pub fn command_line_in(procs: &dyn Procs, pid: u32) -> Option<String> {
    arguments_in(procs, pid).map(|args| args.join(" "))
}

/// The arguments of `pid`, from its `cmdline` in `procs`.
fn arguments_in(procs: &dyn Procs, pid: u32) -> Option<Vec<String>> {
    let raw = procs.file(pid, "cmdline")?;
    Some(
        raw.split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

fn arguments(pid: u32) -> Option<Vec<String>> {
    if proc_reader() {
        arguments_in(&LocalProcs, pid)
    } else {
        let out = std::process::Command::new("ps")
            .args(["-o", "args=", "-p", &pid.to_string()])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let args: Vec<String> = text.split_whitespace().map(str::to_string).collect();
        (!args.is_empty()).then_some(args)
    }
}

/// The argument rule of [`shell_runs_a_script`]: after the shell's name, `-c` or a
/// first operand (a script) means a script, unless `-i` or `-s` asks for an interactive
/// shell or commands from standard input.
fn script_arguments(args: &[String]) -> bool {
    // Options whose value is the next argument (bash, zsh, fish).
    const WITH_VALUE: &[&str] = &[
        "-o",
        "+o",
        "-O",
        "+O",
        "--rcfile",
        "--init-file",
        "-C",
        "--init-command",
    ];
    let mut script = false;
    let mut interactive = false;
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        if arg == "--" || arg == "-" {
            script |= rest.next().is_some();
            break;
        }
        if WITH_VALUE.contains(&arg.as_str()) {
            rest.next();
            continue;
        }
        if arg.starts_with("--") {
            interactive |= arg == "--interactive";
            script |= arg == "--command" || arg.starts_with("--command=");
            continue;
        }
        if let Some(flags) = arg.strip_prefix('-').or_else(|| arg.strip_prefix('+')) {
            interactive |= flags.contains('i') || flags.contains('s');
            script |= arg.starts_with('-') && flags.contains('c');
            continue;
        }
        // The first operand is the script (with -c, the command's $0).
        script = true;
        break;
    }
    script && !interactive
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
    if !proc_reader() {
        return Vec::new();
    }
    group_members_waiting_in(&LocalProcs, shell_pid, pgid)
}

/// [`group_members_waiting`], from `procs`.
pub fn group_members_waiting_in(
    procs: &dyn Procs,
    shell_pid: Option<u32>,
    pgid: u32,
) -> Vec<(u32, String)> {
    let candidates = shell_pid
        .and_then(|root| descendants(procs, root))
        .unwrap_or_else(|| procs.pids());
    candidates
        .into_iter()
        .filter(|&pid| pid != pgid && group_of(procs, pid) == Some(pgid))
        .filter(|&pid| waiting_for_input_in(procs, pid) == Some(true))
        .map(|pid| (pid, process_name_in(procs, pid).unwrap_or_default()))
        .collect()
}

/// Process group of `pid` (Linux).
fn group_of(procs: &dyn Procs, pid: u32) -> Option<u32> {
    stat_field(procs, pid, PGRP)?.parse().ok()
}

/// Fields of `/proc/<pid>/stat` after the command name (which may hold spaces and
/// parentheses, so the fields are counted from its closing one).
const STATE: usize = 0;
const PGRP: usize = 2;
const TPGID: usize = 5;

/// Field `index` of `/proc/<pid>/stat`, counted after the command name (Linux).
fn stat_field(procs: &dyn Procs, pid: u32, index: usize) -> Option<String> {
    let stat = text(procs, pid, "stat")?;
    let after_comm = &stat[stat.rfind(')')? + 1..];
    after_comm.split_whitespace().nth(index).map(str::to_string)
}

/// Every descendant of `root` (Linux, from `/proc/<pid>/task/<tid>/children`); `None`
/// when the kernel does not provide those lists.
fn descendants(procs: &dyn Procs, root: u32) -> Option<Vec<u32>> {
    let mut found = Vec::new();
    let mut queue = procs.children(root)?;
    while let Some(pid) = queue.pop() {
        // A process that exited meanwhile has no lists any more: skip it, not the walk.
        if let Some(children) = procs.children(pid) {
            queue.extend(children);
        }
        found.push(pid);
    }
    Some(found)
}

#[cfg(test)]
mod argument_tests {
    use super::script_arguments;

    fn script(line: &str) -> bool {
        let args: Vec<String> = line.split(' ').map(str::to_string).collect();
        script_arguments(&args)
    }

    #[test]
    fn scripts_and_command_lines_are_told_from_interactive_shells() {
        for line in [
            "bash ask.sh",
            "sh -c read",
            "bash -ec true",
            "bash --norc ./configure",
            "bash -o pipefail build.sh",
            "zsh -c exit",
            "fish --command=ls",
            "bash -- script",
        ] {
            assert!(script(line), "{line} runs a script");
        }
        for line in [
            "bash",
            "-bash",
            "bash --norc",
            "bash --rcfile /x/bashrc -i",
            "zsh -l -i",
            "fish -l --init-command source -i",
            "sh -i -c read",
            "bash -s arg",
            "bash -o vi",
        ] {
            assert!(!script(line), "{line} is interactive");
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn descendants_reach_grandchildren_and_members_are_found_by_group() {
        let tree = SleepingTree::start();
        let root = tree.root();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut sleeps = 0;
        while std::time::Instant::now() < deadline {
            let all = descendants(&LocalProcs, root).expect("this kernel lists children");
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
        assert_eq!(group_of(&LocalProcs, root), Some(root));
        assert!(group_members_waiting(Some(root), root).is_empty());
        assert!(group_members_waiting(None, root).is_empty());
    }

    #[test]
    fn a_process_that_would_die_of_an_interrupt_is_told_from_one_that_handles_it() {
        use std::os::unix::process::CommandExt;
        let start = |script: &str| {
            std::process::Command::new("sh")
                .args(["-c", script])
                .process_group(0)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        };
        // `exec sleep` keeps the shell's pid; a trap set before it is kept as "ignore".
        let mut plain = start("exec sleep 30");
        let mut ignoring = start("trap '' INT; exec sleep 30");
        let mut catching = start("trap 'exit 1' INT; sleep 30; :");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        // Until each has set itself up (the catching shell has set its trap once it
        // started its `sleep`).
        let set_up = |c: &std::process::Child| match process_name(c.id()).as_deref() {
            Some("sleep") => true,
            _ => LocalProcs
                .children(c.id())
                .is_some_and(|kids| !kids.is_empty()),
        };
        while std::time::Instant::now() < deadline
            && ![&plain, &ignoring, &catching].iter().all(|c| set_up(c))
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(interrupt_would_end(plain.id()), Some(true));
        assert_eq!(interrupt_would_end(ignoring.id()), Some(false));
        assert_eq!(interrupt_would_end(catching.id()), Some(false));
        for child in [&mut plain, &mut ignoring, &mut catching] {
            // The whole group: the catching shell's `sleep` too.
            let _ = std::process::Command::new("kill")
                .args(["-9", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
        }
        // Reaped, it is gone: nothing to tell.
        assert_eq!(interrupt_would_end(plain.id()), None);
    }
}

/// A process tree for tests: `sh` → (`sh` → `sleep`) and `sh` → `sleep`, three
/// descendants, two of them sleeps, all in a process group of their own, killed on
/// drop.
#[cfg(all(test, target_os = "linux"))]
pub(crate) struct SleepingTree(std::process::Child);

#[cfg(all(test, target_os = "linux"))]
impl SleepingTree {
    pub(crate) fn start() -> SleepingTree {
        use std::os::unix::process::CommandExt;
        SleepingTree(
            std::process::Command::new("sh")
                .args(["-c", "(sleep 30; :) & sleep 30 & wait"])
                .process_group(0)
                .spawn()
                .unwrap(),
        )
    }

    pub(crate) fn root(&self) -> u32 {
        self.0.id()
    }
}

#[cfg(all(test, target_os = "linux"))]
impl Drop for SleepingTree {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-9", "--", &format!("-{}", self.root())])
            .status();
        let _ = self.0.wait();
    }
}
