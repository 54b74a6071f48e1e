//! The kernel's facts about a pane's processes on another machine: one snapshot of
//! the far side's `/proc`, read by the same rules as the local one ([`Procs`]).
//!
//! The completion ladder asks whether a pane's foreground process waits for input
//! (a REPL, `read`, a pager at the end of a pipeline). On a remote host those answers
//! are in that host's `/proc`, so a small POSIX script ([`SCRIPT`], installed on the
//! far side with the shell integration) prints, in one call, what the rules read: the
//! pane's shell and every descendant's `stat`, `comm`, `wchan`, `syscall`,
//! `cmdline`, descriptors and children, the terminal's modes (`stty -a`) and the
//! machine's architecture (system call numbers depend on it). [`ProcSnapshot::parse`]
//! turns that into a [`Procs`] the rules run on unchanged.
//!
//! What the snapshot cannot give is left unknown: bytes typed but not read
//! (`FIONREAD` has no shell command), and everything on a host without `/proc`,
//! where the ladder falls back on the terminal's mode and quiescence.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::process::{Procs, TtyMode};

/// The script's file name in cohort's directory on the far side.
pub const SCRIPT_NAME: &str = "procs.sh";

/// Prints the snapshot of one pane's processes. Arguments: the pane, then the tmux
/// socket options (`-L NAME`). One record per line: `a ARCH`, `s SHELL_PID`,
/// `t TTY STTY-OUTPUT`, `c PID CHILDREN…`, `f PID FILE CONTENT`, `d PID LS-LINE`.
pub const SCRIPT: &str = r#"# cohort: a snapshot of one tmux pane's processes, for the machine that drives it.
pane=$1
shift
set -- $(tmux -u "$@" display-message -p -t "$pane" '#{pane_pid} #{pane_tty}' 2>/dev/null)
root=${1:-}
tty=${2:-}
[ -n "$root" ] || { echo "no such pane: $pane" >&2; exit 3; }
printf 'a %s\ns %s\n' "$(uname -m)" "$root"
if [ -n "$tty" ]; then
    printf 't %s ' "$tty"
    stty -a < "$tty" 2>/dev/null | tr '\n' ' '
    echo
fi
todo=$root
while :; do
    set -- $todo
    [ $# -gt 0 ] || break
    q=$1
    shift
    todo=$*
    kids=
    listed=
    for t in /proc/$q/task/*/children; do
        [ -r "$t" ] || continue
        listed=1
        k=
        { read -r k || [ -n "$k" ]; } < "$t" 2>/dev/null
        kids="$kids $k"
    done
    [ -n "$listed" ] && printf 'c %s%s\n' "$q" "$kids"
    todo="$todo $kids"
    for f in stat comm wchan syscall; do
        v=
        if { read -r v || [ -n "$v" ]; } 2>/dev/null < "/proc/$q/$f"; then
            printf 'f %s %s %s\n' "$q" "$f" "$v"
        fi
    done
    if [ -r "/proc/$q/cmdline" ]; then
        printf 'f %s cmdline ' "$q"
        tr '\000\n' '\037 ' < "/proc/$q/cmdline" 2>/dev/null
        echo
    fi
    ls -l "/proc/$q/fd" 2>/dev/null | while IFS= read -r line; do
        printf 'd %s %s\n' "$q" "$line"
    done
done
"#;

/// One moment of another machine's `/proc`, as [`SCRIPT`] printed it.
#[derive(Clone, Debug, Default)]
pub struct ProcSnapshot {
    arch: String,
    shell_pid: u32,
    files: HashMap<(u32, String), Vec<u8>>,
    fds: HashMap<u32, Vec<(u32, PathBuf)>>,
    children: HashMap<u32, Vec<u32>>,
    tty: Option<(PathBuf, TtyMode)>,
}

impl ProcSnapshot {
    /// Reads the script's output; `None` when it names no shell.
    pub fn parse(text: &str) -> Option<ProcSnapshot> {
        let mut snap = ProcSnapshot::default();
        let mut shell = None;
        for line in text.lines() {
            let Some((kind, rest)) = line.split_once(' ') else {
                continue;
            };
            match kind {
                "a" => snap.arch = rest.trim().to_string(),
                "s" => shell = rest.trim().parse().ok(),
                "t" => {
                    let (tty, modes) = rest.split_once(' ').unwrap_or((rest, ""));
                    if let Some(mode) = stty_mode(modes) {
                        snap.tty = Some((PathBuf::from(tty), mode));
                    }
                }
                "c" => {
                    let mut words = rest.split_whitespace().filter_map(|w| w.parse().ok());
                    if let Some(pid) = words.next() {
                        snap.children.entry(pid).or_default().extend(words);
                    }
                }
                "f" => {
                    let mut parts = rest.splitn(3, ' ');
                    let (Some(pid), Some(file)) = (parts.next(), parts.next()) else {
                        continue;
                    };
                    let Ok(pid) = pid.parse::<u32>() else {
                        continue;
                    };
                    let content = parts.next().unwrap_or("");
                    let bytes = if file == "cmdline" {
                        content.replace('\u{1f}', "\0").into_bytes()
                    } else {
                        content.as_bytes().to_vec()
                    };
                    snap.files.insert((pid, file.to_string()), bytes);
                }
                "d" => {
                    let Some((pid, listing)) = rest.split_once(' ') else {
                        continue;
                    };
                    let (Ok(pid), Some((fd, target))) = (pid.parse::<u32>(), fd_entry(listing))
                    else {
                        continue;
                    };
                    snap.fds.entry(pid).or_default().push((fd, target));
                }
                _ => {}
            }
        }
        snap.shell_pid = shell?;
        Some(snap)
    }

    /// The pid of the pane's first process (its shell), on the far side.
    pub fn shell_pid(&self) -> u32 {
        self.shell_pid
    }

    /// The pane's terminal device on the far side, when it was read.
    pub fn tty(&self) -> Option<&Path> {
        self.tty.as_ref().map(|(tty, _)| tty.as_path())
    }
}

/// `ls -l` of a `/proc/PID/fd` entry: `lrwx------ 1 u u 64 Dec  4 21:00 0 -> /dev/pts/3`.
fn fd_entry(listing: &str) -> Option<(u32, PathBuf)> {
    let (left, target) = listing.split_once(" -> ")?;
    let fd = left.split_whitespace().last()?.parse().ok()?;
    Some((fd, PathBuf::from(target)))
}

/// The modes `stty -a` prints (`icanon` or `-icanon`, `echo` or `-echo`), on Linux
/// and the BSDs alike.
fn stty_mode(text: &str) -> Option<TtyMode> {
    let mut line = None;
    let mut echo = None;
    let mut signals = None;
    for word in text.split(|c: char| c.is_whitespace() || c == ';') {
        match word {
            "icanon" => line = Some(true),
            "-icanon" => line = Some(false),
            "echo" => echo = Some(true),
            "-echo" => echo = Some(false),
            "isig" => signals = Some(true),
            "-isig" => signals = Some(false),
            _ => {}
        }
    }
    Some(TtyMode {
        line: line?,
        echo: echo?,
        // stty prints it; where it does not, the default.
        signals: signals.unwrap_or(true),
    })
}

impl Procs for ProcSnapshot {
    fn file(&self, pid: u32, file: &str) -> Option<Vec<u8>> {
        self.files.get(&(pid, file.to_string())).cloned()
    }

    fn fd_target(&self, pid: u32, fd: u32) -> Option<PathBuf> {
        self.fds
            .get(&pid)?
            .iter()
            .find(|(n, _)| *n == fd)
            .map(|(_, target)| target.clone())
    }

    fn fd_targets(&self, pid: u32) -> Option<Vec<PathBuf>> {
        Some(self.fds.get(&pid)?.iter().map(|(_, t)| t.clone()).collect())
    }

    fn children(&self, pid: u32) -> Option<Vec<u32>> {
        self.children.get(&pid).cloned()
    }

    fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self.files.keys().map(|(pid, _)| *pid).collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    fn tty_mode(&self, tty: &Path) -> Option<TtyMode> {
        self.tty
            .as_ref()
            .filter(|(ours, _)| ours == tty)
            .map(|(_, mode)| *mode)
    }

    fn arch(&self) -> &str {
        &self.arch
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::process::{
        foreground_pid_in, group_members_waiting_in, process_name_in, shell_runs_a_script_in,
        LocalProcs,
    };

    /// The script run here, on a process tree of this machine, gives the same facts as
    /// this machine's `/proc` read directly.
    #[test]
    fn the_snapshot_reads_as_the_local_proc_does() {
        let tree = crate::process::SleepingTree::start();
        let root = tree.root();
        // The script's walk without tmux: a shell that prints the records for `root`.
        let walk = SCRIPT
            .split_once("todo=$root\n")
            .map(|(_, walk)| format!("root={root}\nprintf 's %s\\n' \"$root\"\nprintf 'a %s\\n' \"$(uname -m)\"\ntodo=$root\n{walk}"))
            .unwrap();
        // Until the tree has formed: the root and its three descendants.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let (snap, text) = loop {
            let out = std::process::Command::new("sh")
                .args(["-c", &walk])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "the walk failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let snap = ProcSnapshot::parse(&text).expect("a snapshot");
            if snap.pids().len() == 4 || std::time::Instant::now() > deadline {
                break (snap, text);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(snap.shell_pid(), root);
        assert_eq!(snap.arch(), std::env::consts::ARCH);
        let local = LocalProcs;
        assert_eq!(process_name_in(&snap, root), process_name_in(&local, root));
        assert_eq!(
            shell_runs_a_script_in(&snap, root),
            shell_runs_a_script_in(&local, root)
        );
        assert_eq!(shell_runs_a_script_in(&snap, root), Some(true));
        let mut kids_snap = snap.pids();
        kids_snap.retain(|p| *p != root);
        assert_eq!(kids_snap.len(), 3, "two sleeps and a subshell: {text}");
        for pid in kids_snap {
            assert_eq!(process_name_in(&snap, pid), process_name_in(&local, pid));
        }
        assert_eq!(
            foreground_pid_in(&snap, root),
            foreground_pid_in(&local, root)
        );
        assert!(group_members_waiting_in(&snap, Some(root), root).is_empty());
    }

    #[test]
    fn records_parse_and_odd_lines_are_skipped() {
        let text = "a x86_64\ns 10\nt /dev/pts/3 speed 38400 baud; line = 0; isig -icanon iexten -echo echoe\n\
                    c 10 11 12\nf 11 comm python3\nf 11 cmdline python3\u{1f}-q\u{1f}\n\
                    d 11 lrwx------ 1 u u 64 Dec  4 21:00 0 -> /dev/pts/3\nd 11 total 0\ngarbage\n";
        let snap = ProcSnapshot::parse(text).unwrap();
        assert_eq!(snap.children(10), Some(vec![11, 12]));
        assert_eq!(snap.file(11, "cmdline").unwrap(), b"python3\0-q\0");
        assert_eq!(snap.fd_target(11, 0), Some(PathBuf::from("/dev/pts/3")));
        assert_eq!(
            snap.tty_mode(Path::new("/dev/pts/3")),
            Some(TtyMode {
                line: false,
                echo: false,
                signals: true
            })
        );
        assert_eq!(snap.tty_mode(Path::new("/dev/pts/4")), None);
        assert!(ProcSnapshot::parse("a x86_64\n").is_none());
    }
}
