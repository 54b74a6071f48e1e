//! Running and reading: a command sent and waited for on the completion ladder,
//! waits for what was typed before, reads of the journal, and the screen; and the
//! checks of a caller's wait and read arguments, shared by every front end.

use std::time::{Duration, Instant};

use cohort_backends::{PaneId, Screen};

use crate::{
    completion::{self, Started, Until, Verdict, WaitSpec},
    input,
    input::{Caller, SendOptions},
    prepare::{Preparer, Progress},
    read::{self, ReadOptions, ReadOutput, ReadWhat},
    Terminal, TerminalError,
};

/// A `run`'s result: the verdict and the command's output.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// Is it done, and who says so.
    pub verdict: Verdict,
    /// The output, reduced, with its meta line (the verdict appended).
    pub output: ReadOutput,
}

/// The least time typing a command may take before a run gives up on the terminal.
const TYPING_FLOOR: std::time::Duration = std::time::Duration::from_secs(2);

impl Terminal {
    /// Runs a command for `caller`: send, wait on the completion ladder, read its
    /// output reduced. What the run returned is not new to the caller: its cursor
    /// moves past it.
    pub async fn run(
        &self,
        pane: &PaneId,
        command: &str,
        send: &SendOptions,
        spec: WaitSpec,
        raw: bool,
        caller: &Caller,
    ) -> Result<RunOutput, TerminalError> {
        let mut send = send.clone();
        send.enter = true;
        let mut spec = spec;
        if send.mark.is_some() {
            spec.mark = send.mark.clone();
        }
        let runtime = self.runtimes.get(pane);
        let _turn = runtime.run_turn().await;
        // Runs take turns across processes too: a manager's and a worker's server
        // running in one session would otherwise type into each other's commands and
        // take each other's output and status. The lease is a lock on a file, so it
        // goes with its holder if that process dies.
        let path = input::lock_path(
            &self.lock_dir,
            &self.server_key,
            &format!("{}-run", pane.as_str()),
        );
        let _lease = input::lock_or(
            path,
            spec.timeout,
            "another cohort process's run is still going in this session; wait for it or raise timeout_ms",
        )
        .await
        .map_err(|e| TerminalError::Busy {
            pane: pane.clone(),
            reason: e.to_string(),
        })?;
        // Typing takes milliseconds; a tmux that does not take the keys must not hold
        // the call past its own timeout (a floor keeps a tiny timeout from cutting a
        // healthy but loaded server off mid-line).
        let typing_bound = spec.timeout.max(TYPING_FLOOR);
        let sent = tokio::time::timeout(
            typing_bound,
            self.type_text(pane, command, &send, caller, true),
        )
        .await
        .map_err(|_| {
            TerminalError::Backend(cohort_backends::BackendError::Timeout {
                what: "the terminal to take the command (is the tmux server stopped?); \
                       it may have been typed in part: `read` the session before sending more"
                    .into(),
                after_ms: typing_bound.as_millis() as u64,
            })
        })??;
        let started = sent.started.expect("enter was pressed");
        let preparer = (!raw).then(|| Preparer::start(runtime.clone(), started.enter_offset));
        let mut verdict =
            completion::wait(&runtime, self.backend.as_ref(), pane, &started, &spec).await;
        let progress = match preparer {
            Some(preparer) => preparer.finish().await,
            None => None,
        };
        if sent.pasted && sent.into_program {
            // A REPL runs a block line by line as it arrives: what it printed between
            // the lines (a traceback, a loop's output) came before Enter. The reply
            // holds the whole exchange, from the first typed line on.
            verdict.output.start = verdict.output.start.min(sent.typed_from);
        }
        let options = ReadOptions {
            what: ReadWhat::Bytes(verdict.output.clone()),
            raw,
            ..ReadOptions::default()
        };
        let mut output = self.read_after(pane, &options, progress).await;
        append_verdict(&mut output.meta, &verdict);
        self.mark_read(pane, &caller.connection, verdict.output.end);
        Ok(RunOutput { verdict, output })
    }

    /// Waits on the ladder for the command last typed into `pane` (from its Enter).
    pub async fn wait(&self, pane: &PaneId, spec: WaitSpec) -> Result<Verdict, TerminalError> {
        let runtime = self.runtimes.get(pane);
        let started = Started::latest(&runtime.lock(), Instant::now());
        // A command typed with a mark answers with its sentinel: wait for it again.
        let mut spec = spec;
        if spec.mark.is_none() {
            spec.mark = started.mark.clone();
        }
        Ok(completion::wait(&runtime, self.backend.as_ref(), pane, &started, &spec).await)
    }

    /// Moves `caller`'s cursor for new output past `upto` (a journal offset): what a
    /// `run` returned is not new to the caller that ran it.
    pub fn mark_read(&self, pane: &PaneId, caller: &str, upto: u64) {
        let runtime = self.runtimes.get(pane);
        let mut data = runtime.lock();
        let upto = upto.min(data.journal.len());
        data.cursors.advance(caller, upto);
    }

    /// Reads output from the journal. The bytes are taken under the pane's lock and
    /// reduced on a blocking thread after it is released, so a big read holds up
    /// neither the pane's events nor anyone else's.
    pub async fn read(&self, pane: &PaneId, options: &ReadOptions) -> ReadOutput {
        self.read_after(pane, options, None).await
    }

    /// [`Terminal::read`], finishing the reduction from what was prepared of the
    /// output while it arrived (see [`read::take_after`]).
    async fn read_after(
        &self,
        pane: &PaneId,
        options: &ReadOptions,
        progress: Option<Progress>,
    ) -> ReadOutput {
        let slice = {
            let runtime = self.runtimes.get(pane);
            let mut data = runtime.lock();
            read::take_after(&mut data, options, progress)
        };
        self.prepared_bytes.fetch_add(
            slice.prepared_len() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        let (options, rules) = (options.clone(), self.rules.clone());
        match tokio::task::spawn_blocking(move || read::render(slice, &options, rules.as_deref()))
            .await
        {
            Ok(output) => output,
            Err(e) => ReadOutput::unavailable(format!("the read failed: {e}")),
        }
    }

    /// The rendered screen.
    pub async fn screen(&self, pane: &PaneId) -> Result<Screen, TerminalError> {
        Ok(self.backend.read_screen(pane).await?)
    }
}

/// The ladder's settings from a caller's arguments: the `until` text (a regular
/// expression with `regex`), the timeout and the quiet window in milliseconds.
pub fn wait_spec(
    until: Option<&str>,
    regex: bool,
    timeout_ms: Option<u64>,
    quiet_ms: Option<u64>,
) -> Result<WaitSpec, TerminalError> {
    let mut spec = WaitSpec {
        until: until
            .map(|u| Until::new(u, regex))
            .transpose()
            .map_err(TerminalError::InvalidArgument)?,
        ..WaitSpec::default()
    };
    if let Some(ms) = timeout_ms {
        spec.timeout = Duration::from_millis(ms.clamp(1, 24 * 3600 * 1000));
    }
    if let Some(ms) = quiet_ms {
        spec.quiet = Duration::from_millis(ms.clamp(10, 600_000));
    }
    Ok(spec)
}

/// What a caller reads: the screen, or a part of the journal.
#[derive(Clone, Debug)]
pub enum ReadMode {
    /// What a human sees now.
    Screen,
    /// A part of the journal.
    Journal(ReadWhat),
}

impl ReadMode {
    /// The mode a caller named (`new` when none): `new`, `screen`, `tail` (with
    /// `tail` lines, 50 when not given), `lines` (with a range such as `21-1180`) or
    /// `all`.
    pub fn parse(
        mode: Option<&str>,
        lines: Option<&str>,
        tail: Option<u64>,
    ) -> Result<ReadMode, TerminalError> {
        Ok(ReadMode::Journal(match mode.unwrap_or("new") {
            "screen" => return Ok(ReadMode::Screen),
            "new" => ReadWhat::New,
            "all" => ReadWhat::All,
            "tail" => ReadWhat::Tail(tail.unwrap_or(50).max(1)),
            "lines" => ReadWhat::Lines(parse_lines(lines)?),
            other => {
                return Err(TerminalError::InvalidArgument(format!(
                "unknown mode {other:?}: use \"new\", \"screen\", \"tail\", \"lines\" or \"all\""
            )))
            }
        }))
    }
}

/// Parses "21-1180" or "7" (1-based, inclusive) into a 0-based half-open range.
pub fn parse_lines(spec: Option<&str>) -> Result<std::ops::Range<u64>, TerminalError> {
    let bad = || {
        TerminalError::InvalidArgument(
            "lines must look like \"21-1180\" or \"7\" (1-based, inclusive), as the meta line prints them".to_string(),
        )
    };
    let spec = spec.ok_or_else(bad)?.trim();
    if spec.len() > 41 {
        return Err(bad());
    }
    let (a, b) = match spec.split_once('-') {
        Some((a, b)) => (
            a.trim().parse::<u64>().map_err(|_| bad())?,
            b.trim().parse::<u64>().map_err(|_| bad())?,
        ),
        None => {
            let n = spec.parse::<u64>().map_err(|_| bad())?;
            (n, n)
        }
    };
    if a == 0 || b < a {
        return Err(bad());
    }
    Ok(a - 1..b)
}

impl Terminal {
    /// Reads `pane` as `mode` asks, for `caller` (whose cursor a read of new output
    /// moves); `verdict`, from a wait before the read, goes in the meta line.
    pub async fn read_as(
        &self,
        pane: &PaneId,
        mode: ReadMode,
        caller: &Caller,
        raw: bool,
        verdict: Option<&Verdict>,
    ) -> Result<ReadOutput, TerminalError> {
        let mut out = match mode {
            ReadMode::Screen => {
                let screen = self.screen(pane).await?;
                let mut rows = screen.rows;
                while rows.last().is_some_and(|r| r.trim().is_empty()) {
                    rows.pop();
                }
                let meta = format!(
                    "[screen {}x{}, cursor row {} col {}{}]",
                    screen.size.cols,
                    screen.size.rows,
                    screen.cursor.y + 1,
                    screen.cursor.x + 1,
                    if screen.alternate {
                        ", full-screen program"
                    } else {
                        ""
                    }
                );
                ReadOutput {
                    text: rows.join("\n"),
                    meta,
                    first_line: 0,
                    last_line: 0,
                    total_lines: 0,
                    reducer: "screen".into(),
                    shown_tokens: 0,
                    raw_tokens: 0,
                }
            }
            ReadMode::Journal(what) => {
                let options = ReadOptions {
                    what,
                    caller: caller.connection.clone(),
                    raw,
                    max_lines: None,
                };
                self.read(pane, &options).await
            }
        };
        if let Some(v) = verdict {
            append_verdict(&mut out.meta, v);
        }
        Ok(out)
    }
}

/// Appends the verdict, and its hint, inside a bracketed meta line.
pub fn append_verdict(meta: &mut String, verdict: &Verdict) {
    if meta.ends_with(']') {
        meta.pop();
    }
    meta.push_str("; ");
    meta.push_str(&verdict.describe());
    if let Some(hint) = &verdict.hint {
        meta.push_str(": ");
        meta.push_str(hint);
    }
    meta.push(']');
}
