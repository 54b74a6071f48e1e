//! A program in a pseudo-terminal: `openpty`, then the program started as the leader
//! of a new session whose controlling terminal is the PTY, as a terminal emulator does.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

/// The terminal side of a PTY whose program runs.
#[derive(Debug)]
pub(crate) struct Pty {
    master: File,
    tty: Option<String>,
}

/// What to start in a new PTY.
pub(crate) struct Spawn<'a> {
    /// The program and its arguments (never empty).
    pub argv: &'a [String],
    /// Set on top of the environment this process has.
    pub env: Vec<(String, String)>,
    pub cwd: &'a str,
    pub cols: u16,
    pub rows: u16,
}

impl Pty {
    /// Opens a PTY of the given size and starts the program in it.
    pub fn spawn(spawn: Spawn<'_>) -> io::Result<(Pty, Child)> {
        let (program, args) = spawn
            .argv
            .split_first()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no program to start"))?;
        let (master, slave) = open(spawn.cols, spawn.rows)?;
        let tty = tty_name(&slave);
        let mut command = Command::new(program);
        command
            .args(args)
            .envs(spawn.env)
            .current_dir(spawn.cwd)
            .stdin(Stdio::from(slave.try_clone()?))
            .stdout(Stdio::from(slave.try_clone()?))
            .stderr(Stdio::from(slave));
        // SAFETY: between fork and exec only async-signal-safe calls are made.
        unsafe {
            command.pre_exec(|| {
                // Signals this process ignores or handles start at their defaults.
                for signal in [
                    libc::SIGCHLD,
                    libc::SIGHUP,
                    libc::SIGINT,
                    libc::SIGQUIT,
                    libc::SIGTERM,
                    libc::SIGALRM,
                    libc::SIGPIPE,
                ] {
                    libc::signal(signal, libc::SIG_DFL);
                }
                if libc::setsid() == -1 {
                    return Err(io::Error::last_os_error());
                }
                // The PTY (standard input by now) becomes the controlling terminal.
                #[allow(clippy::useless_conversion)]
                if libc::ioctl(0, libc::TIOCSCTTY.into(), 0) == -1 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn()?;
        Ok((
            Pty {
                master: File::from(master),
                tty,
            },
            child,
        ))
    }

    /// The terminal device (`/dev/pts/N`).
    pub fn tty_name(&self) -> Option<String> {
        self.tty.clone()
    }

    /// A second handle for reading what the program writes.
    pub fn reader(&self) -> io::Result<File> {
        self.master.try_clone()
    }

    /// A second handle for typing to the program.
    pub fn writer(&self) -> io::Result<File> {
        self.master.try_clone()
    }

    /// Sets the terminal's size; the program gets `SIGWINCH`.
    pub fn resize(&self, cols: u16, rows: u16) -> io::Result<()> {
        let size = window_size(cols, rows);
        // SAFETY: the descriptor is open and `size` outlives the call.
        #[allow(clippy::useless_conversion)]
        let rc = unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ.into(), &size) };
        if rc == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The terminal's foreground process group, if there is one.
    pub fn foreground_group(&self) -> Option<u32> {
        // SAFETY: the descriptor is open.
        let group = unsafe { libc::tcgetpgrp(self.master.as_raw_fd()) };
        u32::try_from(group).ok().filter(|g| *g > 0)
    }
}

/// `SIGHUP` to `pid`, as closing a terminal window sends it.
pub(crate) fn hang_up(pid: u32) -> io::Result<()> {
    let pid = i32::try_from(pid).map_err(|_| io::Error::other("no such process"))?;
    // SAFETY: sending a signal has no memory effects.
    if unsafe { libc::kill(pid, libc::SIGHUP) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn window_size(cols: u16, rows: u16) -> libc::winsize {
    libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

/// A new PTY's two ends, both closed on exec.
fn open(cols: u16, rows: u16) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut master = -1;
    let mut slave = -1;
    let size = window_size(cols, rows);
    // SAFETY: the out-pointers are valid; a null name and termios are allowed.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &size,
        )
    };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openpty returned two descriptors that nothing else owns.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    for fd in [&master, &slave] {
        // SAFETY: the descriptor is open.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) } == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok((master, slave))
}

/// The device name of a PTY's terminal end.
fn tty_name(slave: &OwnedFd) -> Option<String> {
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: the buffer is writable for its whole length.
    let rc = unsafe { libc::ttyname_r(slave.as_raw_fd(), name.as_mut_ptr(), name.len()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: on success ttyname_r wrote a NUL-terminated string into the buffer.
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}
