//! A fake session: a program in a PTY, its [`Term`], its variables and profile.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, Notify};

use crate::pty::{Pty, Spawn};
use crate::term::{Term, TermEvent};
use crate::{lock, State};

/// How long screen updates are gathered before one notification (about a frame).
const FRAME: Duration = Duration::from_millis(8);

/// Input to a session's processing task.
pub(crate) enum Feed {
    /// Bytes the program wrote (or that were injected).
    Output(Vec<u8>),
    /// The program ended.
    Exited,
}

/// One session; see the module docs.
pub struct Session {
    /// The session's unique identifier (an upper-case UUID).
    pub id: String,
    pub(crate) term: Mutex<Term>,
    writer: Mutex<std::fs::File>,
    pty: Pty,
    pub(crate) pid: u32,
    pub(crate) feed: mpsc::UnboundedSender<Feed>,
    pub(crate) vars: Mutex<HashMap<String, String>>,
    pub(crate) profile: Mutex<HashMap<String, String>>,
    pub(crate) name: Mutex<String>,
    closed: AtomicBool,
    /// The program ended (the session may stay, showing "Session Ended").
    exited: AtomicBool,
    /// The foreground job as last seen while the program ran.
    last_job: Mutex<Job>,
    redraw: Arc<Notify>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// What a new session runs.
pub(crate) struct Launch {
    /// The program and its arguments (never empty).
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    pub cols: u16,
    pub rows: u16,
    pub profile: HashMap<String, String>,
}

impl Session {
    /// The session's terminal device (`/dev/pts/N`), as iTerm2's `tty` variable says.
    pub fn tty_name(&self) -> Option<String> {
        self.pty.tty_name()
    }

    /// Starts the program; its output is processed once [`Session::run`] is called.
    pub(crate) fn spawn(
        state: &Arc<State>,
        launch: Launch,
    ) -> std::io::Result<(Arc<Session>, mpsc::UnboundedReceiver<Feed>)> {
        let id = uuid::Uuid::new_v4().to_string().to_uppercase();
        let mut env = vec![
            ("TERM".to_string(), "xterm-256color".to_string()),
            ("TERM_PROGRAM".to_string(), "iTerm.app".to_string()),
            ("LC_TERMINAL".to_string(), "iTerm2".to_string()),
            ("ITERM_SESSION_ID".to_string(), format!("w0t0p0:{id}")),
            ("TERM_SESSION_ID".to_string(), format!("w0t0p0:{id}")),
        ];
        env.extend(state.options.env.iter().cloned());
        let home = state
            .options
            .env
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| v.clone());
        // A folder that does not exist starts the session at home, as in iTerm2.
        let cwd = launch
            .cwd
            .clone()
            .filter(|dir| std::path::Path::new(dir).is_dir())
            .or(home)
            .or_else(|| std::env::var("HOME").ok())
            .unwrap_or_else(|| "/".into());
        let (pty, child) = Pty::spawn(Spawn {
            argv: &launch.argv,
            env,
            cwd: &cwd,
            cols: launch.cols,
            rows: launch.rows,
        })?;
        let pid = child.id();
        let mut reader = pty.reader()?;
        let writer = pty.writer()?;
        let (tx, rx) = mpsc::unbounded_channel();
        let reader_tx = tx.clone();
        std::thread::spawn(move || {
            let mut child = child;
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if reader_tx.send(Feed::Output(buf[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                }
            }
            let _ = child.wait();
            let _ = reader_tx.send(Feed::Exited);
        });
        let name = launch
            .profile
            .get("Name")
            .and_then(|v| serde_json::from_str::<String>(v).ok())
            .unwrap_or_else(|| "Default".to_string());
        let session = Arc::new(Session {
            term: Mutex::new(Term::new(
                &id,
                launch.cols,
                launch.rows,
                state.options.scrollback,
            )),
            id,
            writer: Mutex::new(writer),
            pty,
            pid,
            feed: tx,
            vars: Mutex::new(HashMap::new()),
            profile: Mutex::new(launch.profile),
            name: Mutex::new(name),
            closed: AtomicBool::new(false),
            exited: AtomicBool::new(false),
            last_job: Mutex::new(Job::default()),
            redraw: Arc::new(Notify::new()),
        });
        Ok((session, rx))
    }

    /// Processes output until the program ends, then closes the session.
    pub(crate) fn run(
        self: &Arc<Session>,
        state: &Arc<State>,
        mut rx: mpsc::UnboundedReceiver<Feed>,
    ) {
        let weak_state: Weak<State> = Arc::downgrade(state);
        let session = self.clone();
        tokio::spawn(async move {
            while let Some(feed) = rx.recv().await {
                let Some(state) = weak_state.upgrade() else {
                    return;
                };
                match feed {
                    Feed::Output(bytes) => {
                        if let Some(dir) = &state.options.raw_log_dir {
                            log_raw(dir, &session.id, &bytes);
                        }
                        let events = lock(&session.term).feed(&bytes);
                        for event in events {
                            match event {
                                TermEvent::Mark(mark) => {
                                    crate::handlers::prompt_event(&state, &session, mark)
                                }
                                TermEvent::UserVar(var) => {
                                    crate::variables::set_by_output(&state, &session, var)
                                }
                                TermEvent::Alert(text) => {
                                    crate::lock(&state.alerts).push((session.id.clone(), text))
                                }
                                TermEvent::Custom { identity, payload } => {
                                    crate::handlers::custom_sequence(
                                        &state,
                                        &session.id,
                                        identity,
                                        payload,
                                    )
                                }
                            }
                        }
                        session.redraw.notify_one();
                    }
                    Feed::Exited => {
                        crate::handlers::session_ended(&state, &session);
                        return;
                    }
                }
            }
        });
        let weak_state: Weak<State> = Arc::downgrade(state);
        let weak_session = Arc::downgrade(self);
        let redraw = self.redraw.clone();
        tokio::spawn(async move {
            loop {
                redraw.notified().await;
                tokio::time::sleep(FRAME).await;
                let (Some(state), Some(session)) = (weak_state.upgrade(), weak_session.upgrade())
                else {
                    return;
                };
                if session.is_closed() {
                    return;
                }
                crate::handlers::screen_updated(&state, &session.id);
            }
        });
    }

    /// Writes bytes to the program as if typed.
    pub fn write(&self, data: &[u8]) -> std::io::Result<()> {
        let mut writer = lock(&self.writer);
        writer.write_all(data)?;
        writer.flush()
    }

    /// Resizes the PTY and the screen.
    pub fn resize(&self, cols: u16, rows: u16) {
        let _ = self.pty.resize(cols, rows);
        lock(&self.term).resize(cols, rows);
    }

    /// `(cols, rows)`.
    pub fn size(&self) -> (u16, u16) {
        lock(&self.term).size()
    }

    /// The foreground job (the shell when idle), as iTerm2 polls it; once the
    /// program ended, the job last seen.
    pub fn job(&self) -> Job {
        if self.exited() {
            return lock(&self.last_job).clone();
        }
        let job = self.poll_job();
        *lock(&self.last_job) = job.clone();
        job
    }

    fn poll_job(&self) -> Job {
        let pid = self.pty.foreground_group().unwrap_or(self.pid);
        let argv: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|raw| {
                raw.split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let name = cohort_backends::process::process_name(pid).unwrap_or_default();
        Job {
            pid,
            title: argv.first().cloned().unwrap_or_else(|| name.clone()),
            command_line: argv.join(" "),
            name,
        }
    }

    /// The foreground job's working directory.
    pub fn cwd(&self) -> Option<String> {
        let pid = self.job().pid;
        std::fs::read_link(format!("/proc/{pid}/cwd"))
            .ok()
            .map(|p| p.display().to_string())
    }

    /// Ends the program.
    pub fn kill(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _ = crate::pty::hang_up(self.pid);
    }

    /// Whether the session was closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Whether the session's program ended.
    pub fn exited(&self) -> bool {
        self.exited.load(Ordering::SeqCst)
    }

    /// Records that the program ended.
    pub(crate) fn mark_exited(&self) {
        self.exited.store(true, Ordering::SeqCst);
    }

    /// Whether the session closes when its program ends: the profile's "Close
    /// Sessions On End" (true in iTerm2's stock profile; `0`, the "no action"
    /// setting, or `false` keeps it).
    pub fn closes_on_end(&self) -> bool {
        match lock(&self.profile)
            .get("Close Sessions On End")
            .map(String::as_str)
        {
            None => true,
            Some(v) => matches!(v.trim(), "true" | "1"),
        }
    }

    /// Writes iTerm2's end-of-session banner under the program's last output.
    pub(crate) fn append_banner(&self, message: &str) {
        let mut term = lock(&self.term);
        let (cols, _) = term.size();
        let mut text = String::new();
        if term.cursor().x != 0 {
            text.push_str("\r\n");
        }
        let pad = (cols as usize).saturating_sub(message.chars().count()) / 2;
        text.push_str(&" ".repeat(pad));
        text.push_str(message);
        text.push_str("\r\n");
        term.feed(text.as_bytes());
    }
}

/// A session's foreground job, as iTerm2's `jobName`, `jobPid`, `processTitle` and
/// `commandLine` variables show it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Job {
    /// Process id.
    pub pid: u32,
    /// Process name.
    pub name: String,
    /// `argv[0]` as the process shows it.
    pub title: String,
    /// Arguments joined with spaces.
    pub command_line: String,
}

/// Appends `bytes` to the session's raw log in `dir`. A log that cannot be written is
/// reported and skipped, as iTerm2 carries on without its log.
fn log_raw(dir: &std::path::Path, session: &str, bytes: &[u8]) {
    use std::io::Write;
    let path = dir.join(format!("{session}.log"));
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(bytes));
    if let Err(e) = written {
        eprintln!(
            "cohort-fake-iterm2: raw log {} not written: {e}",
            path.display()
        );
    }
}
