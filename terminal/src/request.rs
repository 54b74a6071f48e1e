//! What a front end asks of a session, in one shape for all of them.
//!
//! MCP and gRPC decode their own wire types into a [`RunRequest`] or a
//! [`ReadRequest`] and hand it to the terminal with their [`Caller`]; the steps of a
//! run and of a read (resolve the target, check the wait, choose the send options,
//! run or wait, read, move the caller's cursor) are taken here once, so no front end
//! repeats them and none can take them in another order.

use crate::{
    completion::Verdict,
    ids::short_id,
    input::{Caller, SendOptions},
    read::ReadOutput,
    run::{wait_spec, ReadMode, RunOutput},
    sessions::session_name,
    Terminal, TerminalError,
};

/// How to wait for a command, as a caller gave it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitArgs {
    /// Done when the output shows this (a regular expression with `regex`).
    pub until: Option<String>,
    /// Whether `until` is a regular expression.
    pub regex: bool,
    /// Give up after this many milliseconds.
    pub timeout_ms: Option<u64>,
    /// The quiet window for quiescence, in milliseconds.
    pub quiet_ms: Option<u64>,
}

/// A command to run in a session and wait for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunRequest {
    /// The session, agent or pane.
    pub target: String,
    /// The command line.
    pub command: String,
    /// How to wait for it.
    pub wait: WaitArgs,
    /// Type it even when the tripwire would refuse it.
    pub force: bool,
    /// End it with a sentinel that says when it is done (for shells without marks).
    pub mark: bool,
    /// Return the output without the reducers.
    pub raw: bool,
}

/// A read of a session's output, after an optional wait.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadRequest {
    /// The session, agent or pane.
    pub target: String,
    /// `new` (the default), `screen`, `tail`, `lines` or `all`.
    pub mode: Option<String>,
    /// For `lines`: a range such as `21-1180`.
    pub lines: Option<String>,
    /// For `tail`: how many lines.
    pub tail: Option<u64>,
    /// Return the output without the reducers.
    pub raw: bool,
    /// Wait first for the command last typed to be done.
    pub wait: Option<WaitArgs>,
}

/// What a run answers.
#[derive(Clone, Debug)]
pub struct RunAnswer {
    /// The session's name as the caller knows it.
    pub session: String,
    /// The command's output and its meta line (the verdict appended).
    pub output: ReadOutput,
    /// Is it done, and who says so.
    pub verdict: Verdict,
}

/// What a read answers.
#[derive(Clone, Debug)]
pub struct ReadAnswer {
    /// The session's name as the caller knows it.
    pub session: String,
    /// The output and its meta line.
    pub output: ReadOutput,
    /// The verdict of the wait before the read, when it asked for one.
    pub verdict: Option<Verdict>,
}

impl Terminal {
    /// Runs `request` for `caller`: the target resolved, the wait checked, the
    /// command sent and waited for on the ladder, its output read and marked read.
    pub async fn run_request(
        &self,
        request: &RunRequest,
        caller: &Caller,
    ) -> Result<RunAnswer, TerminalError> {
        let pane = self.resolve(&request.target).await?;
        let spec = spec_of(&request.wait)?;
        let send = SendOptions {
            enter: true,
            raw: false,
            force: request.force,
            mark: request.mark.then(|| short_id(12)),
        };
        let RunOutput { verdict, output } = self
            .run(&pane.id, &request.command, &send, spec, request.raw, caller)
            .await?;
        Ok(RunAnswer {
            session: session_name(&pane),
            output,
            verdict,
        })
    }

    /// Reads as `request` asks for `caller`, after the wait it asks for.
    pub async fn read_request(
        &self,
        request: &ReadRequest,
        caller: &Caller,
    ) -> Result<ReadAnswer, TerminalError> {
        let pane = self.resolve(&request.target).await?;
        let mode = ReadMode::parse(
            request.mode.as_deref(),
            request.lines.as_deref(),
            request.tail,
        )?;
        let spec = request.wait.as_ref().map(spec_of).transpose()?;
        let verdict = match spec {
            Some(spec) => Some(self.wait(&pane.id, spec).await?),
            None => None,
        };
        let output = self
            .read_as(&pane.id, mode, caller, request.raw, verdict.as_ref())
            .await?;
        Ok(ReadAnswer {
            session: session_name(&pane),
            output,
            verdict,
        })
    }
}

fn spec_of(wait: &WaitArgs) -> Result<crate::completion::WaitSpec, TerminalError> {
    wait_spec(
        wait.until.as_deref(),
        wait.regex,
        wait.timeout_ms,
        wait.quiet_ms,
    )
}
