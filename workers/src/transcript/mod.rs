//! The agents' own transcripts, read and reduced by turn.
//!
//! Each CLI keeps a log of its session in its own shape: Claude Code a project
//! JSONL ([`claude`]), Codex a rollout file ([`codex`]), Aider a Markdown chat
//! history and Gemini its chat checkpoints ([`other`]). Each parser turns its lines
//! into the same [`Entry`] stream, which serves twice: as reports for the state
//! machine (a prompt began a turn, the turn ended, was interrupted, hit an API
//! error), and grouped into [`Turn`]s for `read_worker_logs`, where tool calls are
//! summarised and the assistant's final messages kept whole.
//!
//! The formats are internal to the CLIs and change between versions: every parser
//! reads defensively and skips what it does not know, never failing a read for it.
//! The names and texts that tell entries apart (a turn's end, an interrupt, a text
//! that is no prompt) are data, per CLI and version: [`crate::transcript_rules`].

pub mod claude;
pub mod codex;
pub mod other;
pub mod usage;

use std::path::Path;

use super::agent::AgentKind;
use super::state::{Report, ReportKind, Signal, TurnOutcome};

/// One thing a transcript records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A turn began (Codex's `task_started`), before its prompt is known.
    Start {
        /// Unix ms.
        at_ms: i64,
    },
    /// The user's prompt (begins a turn unless one just began).
    Prompt {
        /// Unix ms.
        at_ms: i64,
        /// The prompt.
        text: String,
    },
    /// A tool call.
    Tool {
        /// Unix ms.
        at_ms: i64,
        /// The tool.
        name: String,
        /// Its main argument.
        input: String,
    },
    /// Something the assistant said.
    Say {
        /// Unix ms.
        at_ms: i64,
        /// The text.
        text: String,
    },
    /// The turn ended.
    End {
        /// Unix ms.
        at_ms: i64,
        /// How.
        outcome: TurnOutcome,
    },
}

impl Entry {
    /// When it happened (Unix ms).
    pub fn at_ms(&self) -> i64 {
        match self {
            Entry::Start { at_ms }
            | Entry::Prompt { at_ms, .. }
            | Entry::Tool { at_ms, .. }
            | Entry::Say { at_ms, .. }
            | Entry::End { at_ms, .. } => *at_ms,
        }
    }

    /// What the state machine takes from it.
    pub fn report(&self) -> Option<Report> {
        let kind = match self {
            Entry::Start { .. } | Entry::Prompt { .. } => ReportKind::TurnStart,
            Entry::Tool { name, .. } => ReportKind::Activity {
                tool: Some(name.clone()),
            },
            Entry::Say { .. } => return None,
            Entry::End { outcome, .. } => ReportKind::TurnEnd {
                outcome: outcome.clone(),
                background: 0,
            },
        };
        Some(Report {
            at_ms: self.at_ms(),
            kind,
            source: Signal::Transcript,
        })
    }
}

/// A transcript parser that keeps what it needs between lines.
#[derive(Debug)]
pub enum Parser {
    /// Claude Code's project JSONL.
    Claude(claude::ClaudeParser),
    /// Codex's rollout.
    Codex(codex::CodexParser),
    /// Aider's Markdown chat history.
    Aider(other::AiderParser),
    /// Gemini's chat checkpoint (a whole JSON document, re-read each time).
    Gemini,
}

impl Parser {
    /// The parser for `kind`'s transcript.
    pub fn for_kind(kind: AgentKind) -> Option<Parser> {
        match kind {
            AgentKind::Claude => Some(Parser::Claude(Default::default())),
            AgentKind::Codex => Some(Parser::Codex(Default::default())),
            AgentKind::Aider => Some(Parser::Aider(Default::default())),
            AgentKind::Gemini => Some(Parser::Gemini),
            AgentKind::Custom => None,
        }
    }

    /// Entries from one line of the transcript.
    pub fn line(&mut self, line: &str) -> Vec<Entry> {
        match self {
            Parser::Claude(p) => serde_json::from_str(line)
                .map(|v| {
                    p.meter.line(&v);
                    p.entries(&v)
                })
                .unwrap_or_default(),
            Parser::Codex(p) => serde_json::from_str(line)
                .map(|v| {
                    p.meter.line(&v);
                    p.entries(&v)
                })
                .unwrap_or_default(),
            Parser::Aider(p) => p.line(line),
            Parser::Gemini => Vec::new(),
        }
    }

    /// The CLI's version, when its transcript says it (Claude Code on every entry,
    /// Codex in its session's first line).
    pub fn version(&self) -> Option<&str> {
        match self {
            Parser::Claude(p) => p.version.as_deref(),
            Parser::Codex(p) => p.version.as_deref(),
            Parser::Aider(_) | Parser::Gemini => None,
        }
    }

    /// Whether the rules in use changed since this parser took them (the user's
    /// `transcripts.toml` changed): what it read may read otherwise now.
    pub fn stale(&mut self) -> bool {
        match self {
            Parser::Claude(p) => p.rules.stale(),
            Parser::Codex(p) => p.rules.stale(),
            Parser::Aider(p) => p.rules.stale(),
            Parser::Gemini => false,
        }
    }

    /// The rule that decided the newest entry a rule decided (for `explain`).
    pub fn matched(&self) -> Option<&crate::transcript_rules::Matched> {
        self.rules().and_then(|rules| rules.matched())
    }

    fn rules(&self) -> Option<&crate::transcript_rules::RulesAt> {
        match self {
            Parser::Claude(p) => Some(&p.rules),
            Parser::Codex(p) => Some(&p.rules),
            Parser::Aider(p) => Some(&p.rules),
            Parser::Gemini => None,
        }
    }

    /// What the session spent so far, for the CLIs that record it, its cost from
    /// the price table when the CLI states none.
    pub fn usage(&self) -> Option<usage::Usage> {
        match self {
            Parser::Claude(p) => Some(p.meter.usage()),
            Parser::Codex(p) => Some(p.meter.usage()),
            Parser::Aider(_) | Parser::Gemini => None,
        }
        .map(crate::prices::priced)
    }

    /// Every entry of the transcript at `path` (at most its last `max` bytes).
    pub fn read_all(kind: AgentKind, path: &Path, max: u64) -> std::io::Result<Vec<Entry>> {
        let text = match kind {
            AgentKind::Gemini => std::fs::read_to_string(path)?,
            _ => read_tail(path, max)?,
        };
        Ok(Parser::entries_of(kind, &text))
    }

    /// Every entry of a transcript's `text` (whole lines; Gemini's whole file).
    pub fn entries_of(kind: AgentKind, text: &str) -> Vec<Entry> {
        if kind == AgentKind::Gemini {
            let rules = crate::transcript_rules::RulesAt::new(kind).at(None);
            return other::gemini_entries(text, &rules);
        }
        let Some(mut parser) = Parser::for_kind(kind) else {
            return Vec::new();
        };
        text.lines().flat_map(|l| parser.line(l)).collect()
    }
}

/// The last `max` bytes of a file, from a line start.
fn read_tail(path: &Path, max: u64) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(max);
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    if start > 0 {
        return Ok(text
            .split_once('\n')
            .map_or(String::new(), |(_, rest)| rest.to_string()));
    }
    Ok(text)
}

/// One turn: its prompt, the tools it used, what the assistant said, how it ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Turn {
    /// 1-based number in the transcript.
    pub number: usize,
    /// When it began (Unix ms).
    pub started_ms: i64,
    /// When it ended (Unix ms), if it did.
    pub ended_ms: Option<i64>,
    /// The prompt.
    pub prompt: String,
    /// Tool calls, in order: `(tool, main argument)`.
    pub tools: Vec<(String, String)>,
    /// What the assistant said, in order, each with the number of tool calls before it.
    pub says: Vec<(usize, String)>,
    /// How it ended; `None` while it runs, or when the transcript does not say.
    pub outcome: Option<TurnOutcome>,
    /// It ended, though the transcript does not say how: a later turn began, or the
    /// agent reported the end of its turn (see [`Turn::ended_at`]). Not every CLI
    /// writes an entry when a turn ends.
    pub ended_unrecorded: bool,
}

impl Turn {
    /// Takes the agent's report that a turn ended at `at_ms` (its Stop hook) for this
    /// turn's end when the transcript says nothing of it and the report came after the
    /// turn began.
    pub fn ended_at(&mut self, at_ms: Option<i64>) {
        if let Some(at) = at_ms.filter(|at| *at >= self.started_ms) {
            if self.outcome.is_none() && !self.ended_unrecorded {
                self.ended_unrecorded = true;
                self.ended_ms = Some(at);
            }
        }
    }
}

/// Groups entries into turns.
pub fn turns(entries: &[Entry]) -> Vec<Turn> {
    let mut out: Vec<Turn> = Vec::new();
    let mut open = false;
    let begin = |out: &mut Vec<Turn>, at_ms: i64| {
        // A turn begins after the last one ended, whether or not its end was written.
        if let Some(last) = out.last_mut().filter(|t| t.outcome.is_none()) {
            last.ended_unrecorded = true;
        }
        out.push(Turn {
            number: out.len() + 1,
            started_ms: at_ms,
            ..Turn::default()
        });
    };
    for e in entries {
        match e {
            Entry::Start { at_ms } => {
                begin(&mut out, *at_ms);
                open = true;
            }
            Entry::Prompt { at_ms, text } => {
                let fresh = open
                    && out
                        .last()
                        .is_some_and(|t| t.prompt.is_empty() && t.tools.is_empty());
                if !fresh {
                    begin(&mut out, *at_ms);
                }
                open = true;
                if let Some(t) = out.last_mut() {
                    t.prompt = text.clone();
                }
            }
            Entry::Tool { at_ms, name, input } => {
                if out.is_empty() {
                    begin(&mut out, *at_ms);
                }
                if let Some(t) = out.last_mut() {
                    t.tools.push((name.clone(), input.clone()));
                }
            }
            Entry::Say { at_ms, text } => {
                if out.is_empty() {
                    begin(&mut out, *at_ms);
                }
                if let Some(t) = out.last_mut() {
                    let n = t.tools.len();
                    t.says.push((n, text.clone()));
                }
            }
            Entry::End { at_ms, outcome } => {
                if let Some(t) = out.last_mut().filter(|t| t.outcome.is_none()) {
                    t.outcome = Some(outcome.clone());
                    t.ended_ms = Some(*at_ms);
                }
                open = false;
            }
        }
    }
    out
}

/// The longest prompt shown whole in a log page.
const PROMPT_SHOWN: usize = 1500;

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}… ({} more characters)", text.chars().count() - max)
}

/// Tool calls in one line: consecutive repeats of a tool counted.
pub fn summarise_tools(tools: &[(String, String)]) -> String {
    let mut parts: Vec<(String, usize)> = Vec::new();
    for (name, input) in tools {
        let one = if input.is_empty() {
            name.clone()
        } else {
            format!("{name} {}", clip(input.lines().next().unwrap_or(""), 60))
        };
        match parts.last_mut() {
            Some((last, n)) if *last == one => *n += 1,
            _ => parts.push((one, 1)),
        }
    }
    parts
        .into_iter()
        .map(|(p, n)| if n > 1 { format!("{p} ×{n}") } else { p })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// A turn as text: its header, prompt, tool calls summarised, and the assistant's
/// final messages whole (what it said before its last tool call, one line each).
pub fn render_turn(t: &Turn) -> String {
    let outcome = match &t.outcome {
        None if t.ended_unrecorded => "ended".to_string(),
        None => "running".to_string(),
        Some(TurnOutcome::Answered) => "answered".to_string(),
        Some(TurnOutcome::Interrupted) => "interrupted".to_string(),
        Some(TurnOutcome::ApiError(e)) => format!("API error: {e}"),
    };
    let took = t
        .ended_ms
        .map(|end| format!(", {:.1} s", (end - t.started_ms).max(0) as f64 / 1000.0))
        .unwrap_or_default();
    let mut out = format!("## turn {} ({outcome}{took})\n", t.number);
    if !t.prompt.is_empty() {
        for line in clip(&t.prompt, PROMPT_SHOWN).lines() {
            out.push_str("> ");
            out.push_str(line);
            out.push('\n');
        }
    }
    let last_tool = t.tools.len();
    for (before, text) in &t.says {
        if *before < last_tool {
            out.push_str(&format!(
                "· {}\n",
                clip(text.lines().next().unwrap_or(""), 120)
            ));
        }
    }
    if !t.tools.is_empty() {
        out.push_str(&format!(
            "[{} tool call(s): {}]\n",
            t.tools.len(),
            summarise_tools(&t.tools)
        ));
    }
    for (before, text) in &t.says {
        if *before >= last_tool {
            out.push_str(text.trim_end());
            out.push('\n');
        }
    }
    out
}

/// Parses `2026-11-23T15:02:27.030Z` (or without fraction, or with an offset) into
/// Unix milliseconds.
pub fn parse_iso_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &text[19..];
    let mut ms = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits: String = frac.chars().take_while(char::is_ascii_digit).collect();
        rest = &frac[digits.len()..];
        let three: String = digits.chars().chain("000".chars()).take(3).collect();
        ms = three.parse::<i64>().ok()?;
    }
    let offset_min = match rest.as_bytes().first() {
        Some(b'+') | Some(b'-') if rest.len() >= 6 => {
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (rest[1..3].parse::<i64>().ok()? * 60 + rest[4..6].parse::<i64>().ok()?)
        }
        _ => 0,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + mi * 60 + s - offset_min * 60) * 1000) + ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CLI that writes no entry when a turn ends: a turn followed by another has
    /// ended, and the last one has when the agent reported its turn's end after it
    /// began; neither is "running".
    #[test]
    fn turns_without_an_end_entry_are_not_running() {
        let prompt = |at_ms: i64, text: &str| Entry::Prompt {
            at_ms,
            text: text.into(),
        };
        let say = |at_ms: i64| Entry::Say {
            at_ms,
            text: "done".into(),
        };
        let entries = [
            prompt(1_000, "one"),
            say(2_000),
            prompt(5_000, "two"),
            say(6_000),
        ];
        let mut all = turns(&entries);
        assert!(
            render_turn(&all[0]).starts_with("## turn 1 (ended)"),
            "{}",
            render_turn(&all[0])
        );
        assert!(render_turn(&all[1]).starts_with("## turn 2 (running)"));
        // A Stop report from before this turn began says nothing of it.
        all[1].ended_at(Some(4_000));
        assert!(render_turn(&all[1]).starts_with("## turn 2 (running)"));
        all[1].ended_at(Some(7_500));
        assert!(
            render_turn(&all[1]).starts_with("## turn 2 (ended, 2.5 s)"),
            "{}",
            render_turn(&all[1])
        );
    }

    #[test]
    fn iso_times_parse() {
        assert_eq!(parse_iso_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_iso_ms("2026-11-23T15:02:27.030Z"),
            Some(1_795_446_147_030)
        );
        assert_eq!(
            parse_iso_ms("2026-11-23T16:02:27.030+01:00"),
            Some(1_795_446_147_030)
        );
        assert_eq!(parse_iso_ms("yesterday"), None);
    }

    #[test]
    fn turns_group_and_render_with_tools_summarised() {
        let entries = vec![
            Entry::Prompt {
                at_ms: 0,
                text: "fix it".into(),
            },
            Entry::Say {
                at_ms: 1,
                text: "Looking.\nMore.".into(),
            },
            Entry::Tool {
                at_ms: 2,
                name: "Read".into(),
                input: "a.rs".into(),
            },
            Entry::Tool {
                at_ms: 3,
                name: "Bash".into(),
                input: "ls".into(),
            },
            Entry::Tool {
                at_ms: 4,
                name: "Bash".into(),
                input: "ls".into(),
            },
            Entry::Say {
                at_ms: 5,
                text: "Done: all\ngood.".into(),
            },
            Entry::End {
                at_ms: 2500,
                outcome: TurnOutcome::Answered,
            },
            Entry::Start { at_ms: 3000 },
            Entry::Prompt {
                at_ms: 3001,
                text: "again".into(),
            },
            Entry::End {
                at_ms: 3100,
                outcome: TurnOutcome::Interrupted,
            },
        ];
        let t = turns(&entries);
        assert_eq!(t.len(), 2);
        let text = render_turn(&t[0]);
        assert_eq!(
            text,
            "## turn 1 (answered, 2.5 s)\n> fix it\n· Looking.\n[3 tool call(s): Read a.rs · Bash ls ×2]\nDone: all\ngood.\n"
        );
        assert_eq!(t[1].prompt, "again");
        assert_eq!(t[1].outcome, Some(TurnOutcome::Interrupted));
    }

    #[test]
    fn the_clis_version_is_taken_from_its_transcript() {
        let mut claude = Parser::for_kind(AgentKind::Claude).unwrap();
        assert_eq!(claude.version(), None);
        claude.line(r#"{"type":"permission-mode","permissionMode":"default"}"#);
        assert_eq!(claude.version(), None);
        claude
            .line(r#"{"type":"user","version":"2.1.197","isMeta":true,"message":{"content":"x"}}"#);
        assert_eq!(claude.version(), Some("2.1.197"));
        let mut codex = Parser::for_kind(AgentKind::Codex).unwrap();
        codex.line(
            r#"{"timestamp":"2026-11-23T15:02:27.030Z","type":"session_meta","payload":{"id":"s","cli_version":"0.169.0","originator":"codex-tui"}}"#,
        );
        assert_eq!(codex.version(), Some("0.169.0"));
        assert_eq!(Parser::for_kind(AgentKind::Aider).unwrap().version(), None);
    }
}
