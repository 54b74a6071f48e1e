//! The controlling terminal: raw mode (restored on drop), polled reads, size.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static HANGUP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_hangup(_: libc::c_int) {
    HANGUP.store(true, Ordering::SeqCst);
}

/// Catches SIGHUP and SIGTERM so the session can end cleanly (the real CLIs fire
/// `SessionEnd` when their terminal goes away).
pub fn catch_hangup() {
    let handler = on_hangup as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installs an async-signal-safe handler that only stores an atomic.
    unsafe {
        libc::signal(libc::SIGHUP, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// True once SIGHUP or SIGTERM arrived.
pub fn hung_up() -> bool {
    HANGUP.load(Ordering::SeqCst)
}

static RESIZED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_resize(_: libc::c_int) {
    RESIZED.store(true, Ordering::SeqCst);
}

/// Catches SIGWINCH: the real TUIs repaint at the terminal's new size.
pub fn catch_resize() {
    let handler = on_resize as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installs an async-signal-safe handler that only stores an atomic.
    unsafe {
        libc::signal(libc::SIGWINCH, handler);
    }
}

/// True once after each SIGWINCH.
pub fn take_resized() -> bool {
    RESIZED.swap(false, Ordering::SeqCst)
}

/// Raw mode on stdin for as long as this lives.
pub struct RawMode {
    saved: Option<libc::termios>,
}

impl RawMode {
    /// Switches stdin to raw mode, discarding input not yet read (`TCSAFLUSH`), as a
    /// TUI starting up does. Not a terminal: nothing changes.
    pub fn enter() -> RawMode {
        // SAFETY: tcgetattr/tcsetattr on fd 0 with a zeroed termios filled by the kernel.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return RawMode { saved: None };
            }
            let saved = t;
            libc::cfmakeraw(&mut t);
            // Keep output post-processing off as cfmakeraw sets it: we send CR LF ourselves.
            libc::tcsetattr(0, libc::TCSAFLUSH, &t);
            RawMode { saved: Some(saved) }
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(saved) = self.saved {
            // SAFETY: restores the attributes read in `enter`.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &saved);
            }
        }
    }
}

/// Waits up to `timeout` for input on stdin and reads what is there. `Ok(None)`:
/// nothing arrived; `Ok(Some(empty))`: end of input (the terminal went away).
pub fn read_input(timeout: Duration) -> io::Result<Option<Vec<u8>>> {
    let mut fds = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut fds, 1, ms) };
    if n < 0 {
        let err = io::Error::last_os_error();
        return if err.kind() == io::ErrorKind::Interrupted {
            Ok(None)
        } else {
            Err(err)
        };
    }
    if n == 0 {
        return Ok(None);
    }
    if fds.revents & libc::POLLIN == 0 {
        // POLLHUP or POLLERR without data: the terminal is gone.
        return Ok(Some(Vec::new()));
    }
    let mut buf = vec![0u8; 64 * 1024];
    // SAFETY: reads into a buffer of the given length.
    let got = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
    if got < 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => Ok(None),
            _ => Err(err),
        };
    }
    buf.truncate(got as usize);
    Ok(Some(buf))
}

/// The terminal's (columns, rows), or 80×24 when unknown.
pub fn size() -> (u16, u16) {
    // SAFETY: TIOCGWINSZ fills a winsize.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0 {
            return (ws.ws_col, ws.ws_row);
        }
    }
    (80, 24)
}

/// Writes `bytes` to stdout and flushes; a vanished terminal is not an error here.
pub fn write(bytes: &[u8]) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
}
