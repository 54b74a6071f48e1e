//! Waits on other processes that cannot wait for ever: a program's output read line
//! by line on a thread of its own, a command given a time limit. When the limit
//! passes, the failure says what was awaited, from which program, and what it had
//! printed so far.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a server or browser may take to say it is listening.
pub const STARTUP: Duration = Duration::from_secs(30);

/// Lines a failure shows of what the program printed.
const SHOWN: usize = 20;

/// The lines of one program's output, read on a thread of its own. The thread reads
/// to the end whatever happens (the program never blocks on a full pipe), writing
/// every line to the log when one is given.
pub struct Lines {
    program: String,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Lines {
    /// Starts reading `output` of `program`.
    pub fn read(output: impl Read + Send + 'static, program: &str, log: Option<PathBuf>) -> Lines {
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut log = log.and_then(|path| std::fs::File::create(path).ok());
            for line in BufReader::new(output).lines() {
                let Ok(line) = line else { break };
                if let Some(file) = log.as_mut() {
                    let _ = writeln!(file, "{line}");
                }
                // Once the reader is gone the rest is only drained.
                let _ = send.send(line);
            }
        });
        Lines {
            program: program.to_string(),
            lines,
            seen: Vec::new(),
        }
    }

    /// The first line from now on that `pick` accepts, by `deadline`; otherwise why
    /// not: the program ended, or the time ran out, with what it printed.
    pub fn until<T>(
        &mut self,
        what: &str,
        deadline: Instant,
        mut pick: impl FnMut(&str) -> Option<T>,
    ) -> Result<T, String> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(found) = pick(&line) {
                        return Ok(found);
                    }
                    self.seen.push(line);
                    if self.seen.len() > SHOWN {
                        self.seen.remove(0);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "{} printed no {what} in time; its last lines:\n{}",
                        self.program,
                        self.seen.join("\n")
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!(
                        "{} ended its output before {what}; its last lines:\n{}",
                        self.program,
                        self.seen.join("\n")
                    ))
                }
            }
        }
    }
}

/// Runs `command` to its end, at most `limit`, and returns what it printed on
/// stdout; `None` (after killing it) when it ran out of time or could not start.
pub fn output_within(command: &mut Command, limit: Duration) -> Option<String> {
    match run_within(command, limit) {
        Ok(output) => Some(String::from_utf8_lossy(&output.stdout).into_owned()),
        Err(why) => {
            eprintln!("{why}");
            None
        }
    }
}

/// Runs `command`, expected to refuse and end at once, and returns what it printed.
/// A command still running after `limit` (it did not refuse: it is serving) is killed
/// and the test fails saying so.
pub fn refused(command: &mut Command, limit: Duration) -> std::process::Output {
    run_within(command, limit).unwrap_or_else(|why| panic!("did not refuse: {why}"))
}

/// Runs `command` to its end with its output captured, at most `limit`; past it,
/// kills it and says so.
fn run_within(command: &mut Command, limit: Duration) -> Result<std::process::Output, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{command:?} could not start: {e}"))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{command:?} still running after {limit:?}: killed"));
            }
        }
    };
    Ok(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}
