//! Where a worker's repository and files are: this machine, or a remote host whose
//! commands go through the connection the terminal already keeps to it. The worktree
//! functions ([`crate::worktree`]) take one, so a worker on a host gets its worktree
//! made, inspected and removed there by the same code as a local one.
//!
//! Everything here blocks (a remote call waits for its round trip): callers run it
//! on a blocking thread, as they run git.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use cohort_backends::tmux::quote::sh;
use cohort_backends::{BackendError, TerminalBackend};

use crate::error::WorkerError;

/// This machine, or a remote host.
#[derive(Clone)]
pub enum Machine {
    /// This machine: git and the file system, directly.
    Local,
    /// A remote host, through the terminal's connection to it.
    Remote(Remote),
}

/// A remote host as the worktree functions reach it.
#[derive(Clone)]
pub struct Remote {
    backend: Arc<dyn TerminalBackend>,
    host: String,
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Machine::Local => f.write_str("Local"),
            Machine::Remote(r) => write!(f, "Remote({})", r.host),
        }
    }
}

impl Machine {
    /// `host` (`None`: this machine), reached through `backend`. Made inside the
    /// runtime whose blocking threads then use it (a remote machine's calls wait on
    /// that runtime); outside one, a remote machine cannot be made, and this panics
    /// rather than act on this machine's paths of the same names.
    pub fn of(backend: &Arc<dyn TerminalBackend>, host: Option<&str>) -> Machine {
        match host {
            Some(host) => Machine::Remote(Remote {
                backend: backend.clone(),
                host: host.to_string(),
                runtime: tokio::runtime::Handle::current(),
            }),
            None => Machine::Local,
        }
    }

    /// The host, for a remote machine.
    pub fn host(&self) -> Option<&str> {
        match self {
            Machine::Local => None,
            Machine::Remote(r) => Some(&r.host),
        }
    }

    /// git in `dir`, never asking anything; `identity` gives commits an author
    /// where the repository has none configured. What git printed on success; what
    /// it said (its stderr, else its stdout) as the error.
    pub fn git(&self, dir: &Path, args: &[&str], identity: bool) -> Result<String, WorkerError> {
        let failed = |message: String| WorkerError::Git {
            command: args.join(" "),
            dir: dir.to_path_buf(),
            message,
        };
        let identity_args = [
            "-c",
            "user.name=cohort",
            "-c",
            "user.email=cohort@localhost",
        ];
        let identity_args: &[&str] = if identity { &identity_args } else { &[] };
        match self {
            Machine::Local => {
                let out = Command::new("git")
                    .arg("-C")
                    .arg(dir)
                    .args(identity_args)
                    .args(args)
                    .env("GIT_TERMINAL_PROMPT", "0")
                    .env("GIT_MERGE_AUTOEDIT", "no")
                    .env_remove("GIT_DIR")
                    .env_remove("GIT_WORK_TREE")
                    .stdin(Stdio::null())
                    .output()
                    .map_err(|e| failed(format!("could not run git ({e}); is git installed?")))?;
                if !out.status.success() {
                    let mut message = String::from_utf8_lossy(&out.stderr).trim().to_string();
                    if message.is_empty() {
                        message = String::from_utf8_lossy(&out.stdout).trim().to_string();
                    }
                    return Err(failed(message));
                }
                Ok(String::from_utf8_lossy(&out.stdout).into_owned())
            }
            Machine::Remote(r) => {
                // What git printed goes out byte for byte (a command substitution
                // would drop NULs, as in `ls-files -z`, and trailing newlines), and
                // on failure to stderr after what git said there.
                let mut line = format!(
                    "unset GIT_DIR GIT_WORK_TREE; GIT_TERMINAL_PROMPT=0 GIT_MERGE_AUTOEDIT=no; \
                     export GIT_TERMINAL_PROMPT GIT_MERGE_AUTOEDIT; \
                     t=$(mktemp) || exit 70; trap 'rm -f \"$t\"' EXIT; git -C {}",
                    sh(&dir.to_string_lossy())
                );
                for a in identity_args.iter().chain(args) {
                    line.push(' ');
                    line.push_str(&sh(a));
                }
                line.push_str(
                    " > \"$t\"; s=$?; if [ $s -ne 0 ]; then cat \"$t\" >&2; rm -f \"$t\"; exit $s; fi; \
                     cat \"$t\"; rm -f \"$t\"",
                );
                match r.run_with(&line, b"", GIT_LIMIT) {
                    Ok(out) => Ok(String::from_utf8_lossy(&out).into_owned()),
                    Err(BackendError::Remote { message, .. }) => Err(failed(message)),
                    Err(e) => Err(failed(format!("host {}: {e}", r.host))),
                }
            }
        }
    }

    /// Whether each path is what its test asks, asked all at once: one round trip to
    /// a remote host however many there are; an error when the host could not be
    /// asked, as [`Machine::exists`].
    pub fn test_all(&self, checks: &[(PathTest, &Path)]) -> Result<Vec<bool>, WorkerError> {
        match self {
            Machine::Local => Ok(checks
                .iter()
                .map(|(test, path)| match test {
                    PathTest::Exists => path.exists(),
                    PathTest::File => path.is_file(),
                    PathTest::Dir => path.is_dir(),
                })
                .collect()),
            Machine::Remote(r) => r.test_all(checks),
        }
    }

    /// Whether `path` exists; an error when the host could not be asked (never a
    /// "no" that would remove or rewrite what is there).
    pub fn exists(&self, path: &Path) -> Result<bool, WorkerError> {
        self.test_one(PathTest::Exists, path)
    }

    fn test_one(&self, test: PathTest, path: &Path) -> Result<bool, WorkerError> {
        Ok(self.test_all(&[(test, path)])?[0])
    }

    /// Whether `path` is a regular file (or a link to one); as [`Machine::exists`].
    pub fn is_file(&self, path: &Path) -> Result<bool, WorkerError> {
        self.test_one(PathTest::File, path)
    }

    /// The text of `path`, `None` when there is no such file; an error when it is
    /// there and cannot be read, or the host could not be asked.
    pub fn read_to_string(&self, path: &Path) -> Result<Option<String>, WorkerError> {
        let io = |source| WorkerError::Io {
            what: "could not read",
            path: path.to_path_buf(),
            source,
        };
        match self {
            Machine::Local => match std::fs::read_to_string(path) {
                Ok(text) => Ok(Some(text)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(io(e)),
            },
            Machine::Remote(r) => {
                let p = sh(&path.to_string_lossy());
                let out = r
                    .run(&format!(
                        "if [ -e {p} ]; then printf y; cat {p}; else printf n; fi"
                    ))
                    .map_err(|e| io(std::io::Error::other(format!("host {}: {e}", r.host))))?;
                match out.split_first() {
                    Some((b'y', text)) => Ok(Some(String::from_utf8_lossy(text).into_owned())),
                    Some((b'n', _)) => Ok(None),
                    _ => Err(io(std::io::Error::other(format!(
                        "host {} gave no answer",
                        r.host
                    )))),
                }
            }
        }
    }

    /// Writes `text` to `path`, making its directory.
    pub fn write(&self, path: &Path, text: &str) -> Result<(), WorkerError> {
        let io = |source| WorkerError::Io {
            what: "could not write",
            path: path.to_path_buf(),
            source,
        };
        match self {
            Machine::Local => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(io)?;
                }
                std::fs::write(path, text).map_err(io)
            }
            Machine::Remote(r) => {
                let p = sh(&path.to_string_lossy());
                let line = format!("mkdir -p \"$(dirname {p})\" && cat > {p}");
                r.run_with(&line, text.as_bytes(), crate::remote::QUICK)
                    .map(|_| ())
                    .map_err(|e| io(std::io::Error::other(format!("host {}: {e}", r.host))))
            }
        }
    }

    /// Copies the file `from` to `to`, making `to`'s directory.
    pub fn copy(&self, from: &Path, to: &Path) -> Result<(), WorkerError> {
        let io = |source| WorkerError::Io {
            what: "could not copy",
            path: from.to_path_buf(),
            source,
        };
        match self {
            Machine::Local => {
                if let Some(dir) = to.parent() {
                    std::fs::create_dir_all(dir).map_err(|source| WorkerError::Io {
                        what: "could not create",
                        path: dir.to_path_buf(),
                        source,
                    })?;
                }
                std::fs::copy(from, to).map(|_| ()).map_err(io)
            }
            Machine::Remote(r) => {
                let (f, t) = (sh(&from.to_string_lossy()), sh(&to.to_string_lossy()));
                r.run(&format!("mkdir -p \"$(dirname {t})\" && cp -p {f} {t}"))
                    .map(|_| ())
                    .map_err(|e| io(std::io::Error::other(format!("host {}: {e}", r.host))))
            }
        }
    }
}

/// How long git may take on a remote host (a worktree of a big repository).
const GIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

impl Machine {
    /// Runs `script` with `sh -c` in `dir` on a remote host for at most `limit`: its
    /// exit status (`None`: stopped at the limit) and the last `lines` lines of its
    /// output (stdout and stderr), which `log` there holds whole when given. What
    /// it started goes with it, where the host can say so (`setsid`: a process
    /// group of its own, signalled whole, as a local check's is).
    pub(crate) fn run_limited(
        &self,
        dir: &Path,
        script: &str,
        log: Option<&Path>,
        limit: std::time::Duration,
        lines: usize,
    ) -> Result<(Option<i32>, String), WorkerError> {
        let Machine::Remote(r) = self else {
            return Err(WorkerError::Invalid(
                "a script on this machine is run by its caller".into(),
            ));
        };
        let d = sh(&dir.to_string_lossy());
        let (open_log, l, close_log) = match log {
            Some(log) => {
                let l = sh(&log.to_string_lossy());
                (format!("mkdir -p \"$(dirname {l})\""), l, String::new())
            }
            None => (
                "log=$(mktemp) || exit 70".to_string(),
                "\"$log\"".to_string(),
                "rm -f \"$log\"".to_string(),
            ),
        };
        let ticks = (limit.as_millis() / 200).max(1);
        // The host has no `timeout` for sure: the shell watches the script and stops
        // it at its limit (TERM, then KILL), its status first and its output's tail
        // after (which may end without a newline).
        let line = format!(
            "cd {d} || exit 97; {open_log}; \
             if sleep 0.2 2>/dev/null; then tick=0.2; n={ticks}; else tick=1; n={secs}; fi; \
             if command -v setsid >/dev/null 2>&1; then g=-; \
             setsid sh -c {script} > {l} 2>&1 < /dev/null & p=$!; \
             else g=; (exec sh -c {script}) > {l} 2>&1 < /dev/null & p=$!; fi; \
             i=0; stopped=; \
             while kill -0 $p 2>/dev/null; do \
             if [ $i -ge $n ]; then stopped=1; kill -TERM $g$p 2>/dev/null; j=0; \
             while kill -0 $p 2>/dev/null && [ $j -lt 10 ]; do sleep $tick; j=$((j + 1)); done; \
             kill -KILL $g$p 2>/dev/null; break; fi; \
             sleep $tick; i=$((i + 1)); done; \
             wait $p; s=$?; if [ -n \"$g\" ]; then kill -TERM $g$p 2>/dev/null; fi; \
             if [ -n \"$stopped\" ]; then echo stopped; else echo \"status $s\"; fi; \
             tail -n {lines} {l}; {close_log}",
            script = sh(script),
            secs = limit.as_secs().max(1),
        );
        let out = r
            .run_with(&line, b"", limit + std::time::Duration::from_secs(30))
            .map_err(|e| WorkerError::Invalid(format!("host {}: {e}", r.host)))?;
        let text = String::from_utf8_lossy(&out);
        let (first, tail) = text.split_once('\n').unwrap_or((&text, ""));
        let status = match first.strip_prefix("status ") {
            Some(code) => Some(code.trim().parse().unwrap_or(-1)),
            None if first == "stopped" => None,
            None => {
                return Err(WorkerError::Invalid(format!(
                    "host {}: the script's end was not reported",
                    r.host
                )))
            }
        };
        Ok((status, tail.trim_end_matches('\n').to_string()))
    }

    /// Whether `path` is a directory; as [`Machine::exists`].
    pub fn is_dir(&self, path: &Path) -> Result<bool, WorkerError> {
        self.test_one(PathTest::Dir, path)
    }
}

/// What [`Machine::test_all`] asks of a path (as `test -e`, `-f`, `-d` do).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathTest {
    /// It exists.
    Exists,
    /// It is a regular file (or a link to one).
    File,
    /// It is a directory (or a link to one).
    Dir,
}

impl PathTest {
    fn flag(self) -> &'static str {
        match self {
            PathTest::Exists => "-e",
            PathTest::File => "-f",
            PathTest::Dir => "-d",
        }
    }
}

impl Remote {
    /// Runs `line` on the host, from the remote home, and waits for it.
    fn run(&self, line: &str) -> Result<Vec<u8>, BackendError> {
        self.run_with(line, b"", crate::remote::QUICK)
    }

    fn run_with(
        &self,
        line: &str,
        input: &[u8],
        limit: std::time::Duration,
    ) -> Result<Vec<u8>, BackendError> {
        // sshd starts commands in the account's home, which a `HOME` set for the
        // session may differ from: relative paths start at `$HOME`, as in a pane.
        let line = format!("cd \"$HOME\" 2>/dev/null; {line}");
        self.runtime
            .block_on(self.backend.run_on_host(&self.host, &line, input, limit))
    }

    /// One line of `y`/`n`, a letter per check, from one script.
    fn test_all(&self, checks: &[(PathTest, &Path)]) -> Result<Vec<bool>, WorkerError> {
        let script: Vec<String> = checks
            .iter()
            .map(|(test, path)| {
                let p = sh(&path.to_string_lossy());
                format!(
                    "if [ {} {p} ]; then printf y; else printf n; fi",
                    test.flag()
                )
            })
            .collect();
        let out = self
            .run(&script.join("; "))
            .map_err(|e| WorkerError::Invalid(format!("host {}: {e}", self.host)))?;
        let answers: Option<Vec<bool>> = out
            .trim_ascii_end()
            .iter()
            .map(|b| match b {
                b'y' => Some(true),
                b'n' => Some(false),
                _ => None,
            })
            .collect();
        match answers {
            Some(answers) if answers.len() == checks.len() => Ok(answers),
            _ => Err(WorkerError::Invalid(format!(
                "host {} did not say whether {} exist",
                self.host,
                checks
                    .iter()
                    .map(|(_, p)| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}

impl crate::Workers {
    /// The machine `row`'s worker runs on.
    pub(crate) fn machine_of(&self, row: &crate::registry::WorkerRow) -> Machine {
        self.machine_of_host(row.spec.host.as_deref())
    }

    /// `host` (`None`: this machine) as a machine.
    pub(crate) fn machine_of_host(&self, host: Option<&str>) -> Machine {
        Machine::of(self.terminal.backend(), host)
    }
}
