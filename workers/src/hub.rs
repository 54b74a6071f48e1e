//! The workers' side of one engine: settings, the wake socket the agents' hooks ping,
//! the per-worker trackers of signals, and which workers have a delivery task.
//!
//! The wake socket (`<state>/workers/wake/<pid>-<instance>.sock`, a Unix datagram socket) is
//! bound on first use; every datagram (a worker id, sent by `cohort hook`) bumps a
//! counter that waiters sleep on, so a `Stop` hook wakes `wait_idle_workers` within
//! milliseconds instead of at the next poll.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use crate::{events::wake_dir, observe::Tracker, state::Bounds};

/// Settings of the workers feature.
#[derive(Clone, Debug)]
pub struct WorkerSettings {
    /// The `cohort` executable the agents' hooks run (default: this executable when it
    /// is `cohort`, else `cohort` on the PATH).
    pub program: Option<PathBuf>,
    /// The state machine's bounds.
    pub bounds: Bounds,
    /// How long an agent may take to come up.
    pub ready_timeout: Duration,
    /// How many times Enter is pressed at least before a prompt counts as not
    /// submitted.
    pub enter_attempts: u32,
    /// How long Enter keeps being pressed (more slowly) into a composer that still
    /// holds the prompt: a fresh TUI may ignore Enter for a while after it drew.
    pub enter_patience: Duration,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        WorkerSettings {
            program: None,
            bounds: Bounds::default(),
            ready_timeout: Duration::from_secs(60),
            enter_attempts: 5,
            enter_patience: Duration::from_secs(60),
        }
    }
}

/// The per-engine state of the workers feature.
#[derive(Debug)]
pub struct Hub {
    pub(crate) state_dir: PathBuf,
    pub(crate) settings: Mutex<WorkerSettings>,
    /// This process's instance, recorded as the owner of the workers it manages.
    pub(crate) tag: String,
    wake: watch::Sender<u64>,
    socket: Mutex<Option<(PathBuf, tokio::task::AbortHandle)>>,
    trackers: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Tracker>>>>,
    pub(crate) pumps: Mutex<HashSet<String>>,
    /// Each worker's change line, when it was taken and for which state (since when):
    /// see [`crate::Workers::change_line`].
    pub(crate) changes: Mutex<HashMap<String, (std::time::Instant, i64, String)>>,
    /// The request (by since when it waited) each worker's policy last tried to
    /// deny for want of an answer.
    pub(crate) denials: Mutex<HashMap<String, i64>>,
    /// Workers whose hooks reported since the last [`Hub::take_woken`].
    woken: Arc<Mutex<HashSet<String>>>,
    /// Whether the notes of hooks on remote hosts are listened for (see
    /// [`crate::remote`]).
    pub(crate) hearing_hosts: std::sync::atomic::AtomicBool,
}

impl Hub {
    /// The hub of an engine keeping its state in `state_dir`.
    pub fn new(state_dir: &Path) -> Hub {
        Hub {
            state_dir: state_dir.to_path_buf(),
            settings: Mutex::new(WorkerSettings::default()),
            tag: uuid::Uuid::new_v4().simple().to_string(),
            wake: watch::channel(0).0,
            socket: Mutex::new(None),
            trackers: Mutex::new(HashMap::new()),
            pumps: Mutex::new(HashSet::new()),
            hearing_hosts: Default::default(),
            changes: Mutex::new(HashMap::new()),
            denials: Mutex::new(HashMap::new()),
            woken: Arc::default(),
        }
    }

    /// The current settings.
    pub fn settings(&self) -> WorkerSettings {
        self.settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The executable hooks run.
    pub fn program(&self) -> PathBuf {
        if let Some(p) = self.settings().program {
            return p;
        }
        let exe = std::env::current_exe().ok();
        if let Some(exe) = exe.filter(|e| e.file_name().is_some_and(|n| n == "cohort")) {
            return exe;
        }
        std::env::var_os("PATH")
            .and_then(|path| {
                std::env::split_paths(&path)
                    .map(|d| d.join("cohort"))
                    .find(|p| p.is_file())
            })
            .unwrap_or_else(|| PathBuf::from("cohort"))
    }

    /// A receiver woken whenever a hook reports (starts listening on first use).
    pub fn wakes(&self) -> watch::Receiver<u64> {
        self.listen();
        self.wake.subscribe()
    }

    /// Wakes this process's waiters (after cohort itself changed something).
    pub fn poke(&self) {
        self.wake.send_modify(|v| *v += 1);
    }

    /// Binds the wake socket, once.
    fn listen(&self) {
        let mut socket = self.socket.lock().unwrap_or_else(|e| e.into_inner());
        if socket.is_some() {
            return;
        }
        let dir = wake_dir(&self.state_dir);
        if std::fs::create_dir_all(&dir).is_err() {
            return;
        }
        remove_stale_sockets(&dir);
        let path = dir.join(format!("{}-{}.sock", std::process::id(), &self.tag[..8]));
        let _ = std::fs::remove_file(&path);
        let bound = match tokio::net::UnixDatagram::bind(&path) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(target: "cohort::workers", "no wake socket at {} ({e}); waits fall back to checking every second", path.display());
                return;
            }
        };
        let wake = self.wake.clone();
        let woken = self.woken.clone();
        let task = tokio::spawn(async move {
            let mut buf = [0u8; 256];
            while let Ok(n) = bound.recv(&mut buf).await {
                // The datagram names the worker whose hook reported.
                if let Ok(id) = std::str::from_utf8(&buf[..n]) {
                    let id = id.trim();
                    if !id.is_empty() && id.len() <= 64 && !id.contains(['/', '\0']) {
                        let mut set = woken.lock().unwrap_or_else(|e| e.into_inner());
                        if set.len() < 4096 {
                            set.insert(id.to_string());
                        }
                    }
                }
                wake.send_modify(|v| *v += 1);
            }
        });
        *socket = Some((path, task.abort_handle()));
    }

    /// The workers whose hooks reported since the last call, by id.
    pub fn take_woken(&self) -> HashSet<String> {
        std::mem::take(&mut *self.woken.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The tracker of worker `id`, created on first use.
    pub(crate) fn tracker(&self, id: &str) -> Arc<tokio::sync::Mutex<Tracker>> {
        self.trackers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(id.to_string())
            .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(Tracker::new(&self.state_dir, id))))
            .clone()
    }

    /// Forgets worker `id`'s tracker (closed, or adopted afresh).
    pub(crate) fn forget(&self, id: &str) {
        self.trackers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        if let Some((path, task)) = self.socket.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Whether process `pid` runs.
pub(crate) fn alive(pid: i64) -> bool {
    if pid <= 0 || pid > i64::from(i32::MAX) {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let sent = unsafe { libc::kill(pid as i32, 0) } == 0;
    sent || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes the sockets of processes that are gone.
fn remove_stale_sockets(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".sock"))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<i64>().ok())
        else {
            continue;
        };
        if !alive(pid) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
