//! Running and reading: a command sent and waited for on the completion ladder,
//! waits for what was typed before, reads of the journal, and the screen.

use std::time::Instant;

use cohort_backends::{PaneId, Screen};

use super::completion::{self, Started, Verdict, WaitSpec};
use super::read::{self, ReadOptions, ReadOutput, ReadWhat};
use super::send::SendOptions;
use super::{input, Engine, EngineError};

/// A `run`'s result: the verdict and the command's output.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// Is it done, and who says so.
    pub verdict: Verdict,
    /// The output, reduced, with its meta line (the verdict appended).
    pub output: ReadOutput,
}

impl Engine {
    /// Runs a command: send, wait on the completion ladder, read its output reduced.
    pub async fn run(
        &self,
        pane: &PaneId,
        command: &str,
        send: &SendOptions,
        spec: WaitSpec,
        raw: bool,
    ) -> Result<RunOutput, EngineError> {
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
        .map_err(|e| EngineError::Busy {
            pane: pane.clone(),
            reason: e.to_string(),
        })?;
        let sent = self.type_text(pane, command, &send, true).await?;
        let started = sent.started.expect("enter was pressed");
        let verdict =
            completion::wait(&runtime, self.backend.as_ref(), pane, &started, &spec).await;
        let options = ReadOptions {
            what: ReadWhat::Bytes(verdict.output.clone()),
            raw,
            ..ReadOptions::default()
        };
        let mut output = self.read(pane, &options).await;
        append_verdict(&mut output.meta, &verdict);
        Ok(RunOutput { verdict, output })
    }

    /// Waits on the ladder for the command last typed into `pane` (from its Enter).
    pub async fn wait(&self, pane: &PaneId, spec: WaitSpec) -> Result<Verdict, EngineError> {
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
        let cursor = data.cursors.entry(caller.to_string()).or_insert(0);
        *cursor = (*cursor).max(upto);
    }

    /// Reads output from the journal. The bytes are taken under the pane's lock and
    /// reduced on a blocking thread after it is released, so a big read holds up
    /// neither the pane's events nor anyone else's.
    pub async fn read(&self, pane: &PaneId, options: &ReadOptions) -> ReadOutput {
        let slice = {
            let runtime = self.runtimes.get(pane);
            let mut data = runtime.lock();
            read::take(&mut data, options)
        };
        let (options, rules) = (options.clone(), self.rules.clone());
        match tokio::task::spawn_blocking(move || read::render(slice, &options, rules.as_deref()))
            .await
        {
            Ok(output) => output,
            Err(e) => ReadOutput::unavailable(format!("the read failed: {e}")),
        }
    }

    /// The rendered screen.
    pub async fn screen(&self, pane: &PaneId) -> Result<Screen, EngineError> {
        Ok(self.backend.read_screen(pane).await?)
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
