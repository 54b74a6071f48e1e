//! Recordings of the ladder at work, and their replay.
//!
//! A recording is what the driver showed the ladder while it waited for one command,
//! step by step, in JSON Lines: first the command and what was waited for, then one
//! line per step with what had changed since the step before (the output bytes, the
//! prompt marks, an exit), the time, the facts gathered, and the decision the ladder
//! took; last the verdict. [`replay`] feeds the same inputs to a fresh [`Ladder`] and
//! checks that it takes every decision again: recorded sessions from real terminals
//! are the ladder's reference tests (`fixtures/ladder/`), and a user's odd verdict can
//! be recorded (`COHORT_RECORD_LADDER=<dir>`) and become one.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cohort_backends::PromptMark;
use serde::{Deserialize, Serialize};

use super::facts::Facts;
use super::ladder::{Decision, Ladder, Outcome, PaneView};
use super::{Started, Until, WaitSpec};
use crate::runtime::MarkAt;

/// Output bytes kept as text when they are UTF-8, else as hex.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bytes {
    /// Nothing.
    #[default]
    None,
    /// UTF-8 text.
    Text(String),
    /// Any bytes, two hex digits each.
    Hex(String),
}

impl Bytes {
    fn from_slice(bytes: &[u8]) -> Bytes {
        if bytes.is_empty() {
            return Bytes::None;
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => Bytes::Text(text.to_string()),
            Err(_) => Bytes::Hex(bytes.iter().map(|b| format!("{b:02x}")).collect()),
        }
    }

    fn to_vec(&self) -> Result<Vec<u8>, String> {
        match self {
            Bytes::None => Ok(Vec::new()),
            Bytes::Text(text) => Ok(text.as_bytes().to_vec()),
            Bytes::Hex(hex) => (0..hex.len())
                .step_by(2)
                .map(|i| {
                    hex.get(i..i + 2)
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                        .ok_or_else(|| format!("bad hex output at {i}"))
                })
                .collect(),
        }
    }
}

/// A prompt mark as recorded: `A`, `B`, `C`, or `D` with its status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// Output offset right after the mark.
    pub offset: u64,
    /// `A`, `B`, `C` or `D`.
    pub kind: String,
    /// For `D`: the status it reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<i32>,
}

impl From<&MarkAt> for Mark {
    fn from(m: &MarkAt) -> Self {
        let (kind, status) = match m.mark {
            PromptMark::PromptStart => ("A", None),
            PromptMark::InputStart => ("B", None),
            PromptMark::CommandStart => ("C", None),
            PromptMark::CommandFinished { exit_status } => ("D", exit_status),
        };
        Mark {
            offset: m.offset,
            kind: kind.into(),
            status,
        }
    }
}

impl Mark {
    fn to_mark_at(&self) -> Result<MarkAt, String> {
        let mark = match self.kind.as_str() {
            "A" => PromptMark::PromptStart,
            "B" => PromptMark::InputStart,
            "C" => PromptMark::CommandStart,
            "D" => PromptMark::CommandFinished {
                exit_status: self.status,
            },
            other => return Err(format!("unknown mark kind {other:?}")),
        };
        Ok(MarkAt {
            offset: self.offset,
            mark,
        })
    }
}

/// What was waited for, as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    /// Milliseconds before giving up.
    pub timeout_ms: u64,
    /// The `until` pattern, and whether it is a regex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<(String, bool)>,
    /// The sentinel nonce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
    /// The quiet window, in milliseconds.
    pub quiet_ms: u64,
}

impl From<&WaitSpec> for Spec {
    fn from(spec: &WaitSpec) -> Self {
        Spec {
            timeout_ms: spec.timeout.as_millis() as u64,
            until: spec.until.as_ref().map(|u| match u {
                Until::Literal(s) => (s.clone(), false),
                Until::Regex(r) => (r.as_str().to_string(), true),
            }),
            mark: spec.mark.clone(),
            quiet_ms: spec.quiet.as_millis() as u64,
        }
    }
}

impl Spec {
    fn to_wait_spec(&self) -> Result<WaitSpec, String> {
        Ok(WaitSpec {
            timeout: Duration::from_millis(self.timeout_ms),
            until: self
                .until
                .as_ref()
                .map(|(p, regex)| Until::new(p, *regex))
                .transpose()?,
            mark: self.mark.clone(),
            quiet: Duration::from_millis(self.quiet_ms),
            record: None,
        })
    }
}

/// One line of a recording.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "line", rename_all = "snake_case")]
pub enum Line {
    /// The command and what was waited for.
    Start {
        /// What the recording shows, in words.
        #[serde(default)]
        about: String,
        /// Output offset when Enter was pressed.
        enter_offset: u64,
        /// The text was typed into a running command.
        continues: bool,
        /// The process group that read the line.
        typed_into: Option<u32>,
        /// Its command line then.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        typed_into_args: Option<String>,
        /// The text typed.
        typed: String,
        /// What was waited for.
        spec: Spec,
        /// The last prompt marks from before Enter.
        marks_before: Vec<Mark>,
        /// Whether the shell had announced command starts before Enter.
        announces_start: bool,
        /// Where the recorded output starts (Enter).
        output_from: u64,
    },
    /// One step of the ladder.
    Step {
        /// Microseconds since Enter.
        now_us: u64,
        /// The pane changed since the step before (the question asked was dropped).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        changed: bool,
        /// Output since the step before.
        #[serde(default, skip_serializing_if = "is_none_bytes")]
        output: Bytes,
        /// Prompt marks since the step before.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        marks: Vec<Mark>,
        /// The pane's process exited (with its status, when known).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exited: Option<Option<i32>>,
        /// Microseconds from Enter to the last output.
        quiet_since_us: u64,
        /// An interrupt was pressed into the pane after Enter.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        interrupted: bool,
        /// The facts the step before asked for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        facts: Option<Facts>,
        /// What the ladder decided.
        decision: Decision,
    },
}

fn is_none_bytes(b: &Bytes) -> bool {
    *b == Bytes::None
}

/// Writes a recording while a wait goes on.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    seen_len: u64,
    seen_marks: usize,
    exited: bool,
    enter_offset: u64,
}

impl Recorder {
    /// Starts a recording at `path` for the wait of `started` (the pane as `view`
    /// shows it at Enter).
    pub fn start(
        path: &Path,
        started: &Started,
        spec: &WaitSpec,
        view: &dyn PaneView,
        about: &str,
    ) -> std::io::Result<Recorder> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = crate::private::file_options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        let before: Vec<Mark> = {
            let marks = view.marks();
            let first_after = marks.partition_point(|m| m.offset <= started.enter_offset);
            marks[first_after.saturating_sub(16)..first_after]
                .iter()
                .map(Mark::from)
                .collect()
        };
        // The ladder reads nothing before Enter.
        let output_from = started.enter_offset;
        let seen_marks = view
            .marks()
            .partition_point(|m| m.offset <= started.enter_offset);
        let mut recorder = Recorder {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
            seen_len: output_from,
            seen_marks,
            exited: false,
            enter_offset: started.enter_offset,
        };
        recorder.write(&Line::Start {
            about: about.to_string(),
            enter_offset: started.enter_offset,
            continues: started.continues,
            typed_into: started.typed_into,
            typed_into_args: started.typed_into_args.clone(),
            typed: started.typed.clone(),
            spec: Spec::from(spec),
            marks_before: before,
            announces_start: view.announces_start(),
            output_from,
        })?;
        Ok(recorder)
    }

    /// Where the recording goes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records one step: what changed in `view` since the last one, and the rest.
    pub fn step(
        &mut self,
        view: &mut dyn PaneView,
        now: Duration,
        changed: bool,
        facts: Option<&Facts>,
        decision: &Decision,
    ) -> std::io::Result<()> {
        let len = view.len();
        let output = view.read(self.seen_len, len).unwrap_or_default();
        self.seen_len = self.seen_len.max(len);
        let marks: Vec<Mark> = view.marks()[self.seen_marks.min(view.marks().len())..]
            .iter()
            .map(Mark::from)
            .collect();
        self.seen_marks = view.marks().len();
        let exited = view.exited().filter(|_| !self.exited);
        self.exited |= exited.is_some();
        self.write(&Line::Step {
            now_us: now.as_micros() as u64,
            changed,
            output: Bytes::from_slice(&output),
            marks,
            exited,
            quiet_since_us: view.quiet_since().as_micros() as u64,
            interrupted: view.interrupted(self.enter_offset),
            facts: facts.cloned(),
            decision: decision.clone(),
        })
    }

    fn write(&mut self, line: &Line) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, line)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }
}

/// A pane rebuilt from a recording, step by step.
#[derive(Debug, Default)]
struct Replayed {
    base: u64,
    bytes: Vec<u8>,
    marks: Vec<MarkAt>,
    announces_start: bool,
    exited: Option<Option<i32>>,
    quiet_since: Duration,
    interrupted: bool,
}

impl PaneView for Replayed {
    fn len(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    fn read(&mut self, start: u64, end: u64) -> Option<Vec<u8>> {
        let end = end.min(self.len());
        if start < self.base {
            return None;
        }
        if start >= end {
            return Some(Vec::new());
        }
        let (a, b) = ((start - self.base) as usize, (end - self.base) as usize);
        Some(self.bytes[a..b].to_vec())
    }

    fn marks(&self) -> &[MarkAt] {
        &self.marks
    }

    fn announces_start(&self) -> bool {
        self.announces_start
    }

    fn exited(&self) -> Option<Option<i32>> {
        self.exited
    }

    fn quiet_since(&self) -> Duration {
        self.quiet_since
    }

    fn interrupted(&self, _enter_offset: u64) -> bool {
        self.interrupted
    }
}

/// What [`replay`] found.
#[derive(Debug)]
pub struct Replay {
    /// What the recording says it shows.
    pub about: String,
    /// Steps replayed.
    pub steps: usize,
    /// The verdict the ladder came to.
    pub verdict: Option<Outcome>,
}

/// Replays the recording in `text` through a fresh ladder: every decision must be the
/// one recorded. The error names the first step that differs, with both decisions.
pub fn replay(text: &str) -> Result<Replay, String> {
    let mut lines = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| serde_json::from_str::<Line>(l).map_err(|e| format!("line {}: {e}", i + 1)));
    let Some(first) = lines.next() else {
        return Err("the recording is empty".into());
    };
    let Line::Start {
        about,
        enter_offset,
        continues,
        typed_into,
        typed_into_args,
        typed,
        spec,
        marks_before,
        announces_start,
        output_from,
    } = first?
    else {
        return Err("the recording does not begin with its start line".into());
    };
    let started = Started {
        enter_offset,
        at: std::time::Instant::now(),
        continues,
        typed_into,
        typed_into_args,
        typed,
        mark: spec.mark.clone(),
    };
    let mut ladder = Ladder::new(started, spec.to_wait_spec()?);
    let mut pane = Replayed {
        base: output_from,
        marks: marks_before
            .iter()
            .map(Mark::to_mark_at)
            .collect::<Result<_, _>>()?,
        announces_start,
        ..Replayed::default()
    };
    let mut steps = 0;
    let mut verdict = None;
    for (n, line) in lines.enumerate() {
        let Line::Step {
            now_us,
            changed,
            output,
            marks,
            exited,
            quiet_since_us,
            interrupted,
            facts,
            decision,
        } = line?
        else {
            return Err(format!("line {}: a second start line", n + 2));
        };
        pane.bytes.extend(output.to_vec()?);
        for mark in &marks {
            let mark = mark.to_mark_at()?;
            pane.announces_start |= mark.mark == PromptMark::CommandStart;
            pane.marks.push(mark);
        }
        if exited.is_some() {
            pane.exited = exited;
        }
        pane.quiet_since = Duration::from_micros(quiet_since_us);
        pane.interrupted = interrupted;
        if changed {
            ladder.changed();
        }
        let got = ladder.step(&mut pane, Duration::from_micros(now_us), facts);
        steps += 1;
        if got != decision {
            return Err(format!(
                "step {steps} (at {:.1} ms): the ladder decided {got:?}, the recording {decision:?}",
                now_us as f64 / 1000.0
            ));
        }
        if let Decision::Verdict(outcome) = got {
            verdict = Some(outcome);
        }
    }
    Ok(Replay {
        about,
        steps,
        verdict,
    })
}
