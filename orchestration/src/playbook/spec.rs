//! What a playbook says, and checking it before anything runs: every error names the
//! step (number and name) and the field, and says what would be right.
//!
//! A playbook is JSON or TOML of this shape (TOML shown):
//!
//! ```toml
//! name = "check both services"
//! stop_on_error = true            # stop at the first failing step (default)
//!
//! [layout]                        # optional: sessions to open first
//! window = "svc"
//! preset = "horizontal"
//! panes = [{ name = "api", agent = "a1", team = "backend" },
//!          { name = "web", agent = "w1", team = "frontend" }]
//!
//! [[steps]]
//! name = "build"
//! targets = ["backend", "frontend"]  # sessions, agents, teams or paths
//! command = "make build"
//! wait = "exit"                    # exit (default) | idle | none; `until` waits for text
//! timeout_ms = 60000
//!
//! [[steps]]
//! name = "tell the agents"
//! parallel = false
//! commands = [{ targets = ["a1"], message = "review the diff" },
//!             { targets = ["w1"], message = "update the docs" }]
//! wait = "idle"
//! continue_on_error = true
//!
//! [cascade]                        # optional, after the steps
//! message = "done"
//!
//! [reads]                          # optional, at the end
//! targets = ["backend"]
//! mode = "tail"
//! filter = "error|warning"
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use cohort_terminal::{layout::SplitTree, sessions::LayoutPane};

/// The most steps one playbook holds.
pub const STEPS_MAX: usize = 200;

/// A step's default timeout.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest timeout a step may ask for (a day).
const TIMEOUT_MAX_MS: u64 = 24 * 3600 * 1000;

/// A checked playbook.
#[derive(Clone, Debug, Default)]
pub struct Playbook {
    /// Its name, for reports.
    pub name: Option<String>,
    /// Sessions to open first.
    pub layout: Option<LayoutSpec>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Messages to agents after the steps.
    pub cascade: Option<CascadeSpec>,
    /// Reads at the end.
    pub reads: Option<ReadsSpec>,
    /// Stop at the first failing step (default true).
    pub stop_on_error: bool,
}

/// Sessions to open before the steps.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayoutSpec {
    /// Window name.
    pub window: String,
    /// A layout preset (single, horizontal, vertical, quad, triple_vertical,
    /// triple_bottom, grid).
    #[serde(default)]
    pub preset: Option<String>,
    /// For grid: rows.
    #[serde(default)]
    pub rows: Option<u16>,
    /// For grid: columns.
    #[serde(default)]
    pub cols: Option<u16>,
    /// The panes in reading order.
    #[serde(default)]
    pub panes: Vec<LayoutPane>,
}

impl LayoutSpec {
    /// The split tree it asks for.
    pub fn tree(&self) -> Result<SplitTree, String> {
        let preset = match (&self.preset, self.panes.len()) {
            (Some(p), _) => p.as_str(),
            (None, 0 | 1) => "single",
            (None, 2) => "horizontal",
            (None, 3) => "triple_vertical",
            (None, 4) => "quad",
            (None, _) => "grid",
        };
        let (rows, cols) = match (preset, self.rows, self.cols) {
            ("grid", None, None) => {
                let n = self.panes.len().max(1) as u16;
                let cols = (1..=8).find(|c| c * c >= n).unwrap_or(4);
                (Some(n.div_ceil(cols)), Some(cols))
            }
            _ => (self.rows, self.cols),
        };
        SplitTree::preset(preset, rows, cols)
    }
}

/// One thing typed into targets.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Item {
    /// Sessions, agents, teams or paths.
    #[serde(default)]
    pub targets: Vec<String>,
    /// A command for a shell (waited for on the completion ladder).
    #[serde(default)]
    pub command: Option<String>,
    /// A message for an agent (typed, then waited for as the step says).
    #[serde(default)]
    pub message: Option<String>,
}

impl Item {
    /// The text typed.
    pub fn text(&self) -> &str {
        self.command
            .as_deref()
            .or(self.message.as_deref())
            .unwrap_or_default()
    }
}

/// How a step waits for each target.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StepWait {
    /// For the command's exit status (the completion ladder).
    Exit,
    /// For the agent working there to become idle again.
    Idle,
    /// Not at all: typed is done.
    None,
}

/// One step: items typed into targets, in parallel or in turn, each waited for.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Step {
    /// Its name, for reports.
    pub name: Option<String>,
    /// What is typed where (the step's own `targets` and `command`/`message` are
    /// the first item).
    pub items: Vec<Item>,
    /// Items and targets all at once (default), or one after another.
    pub parallel: bool,
    /// How each target is waited for (default: the exit status for a command,
    /// not at all for a message).
    pub wait: Option<StepWait>,
    /// Complete when this text appears in the output (a regex with `regex`).
    pub until: Option<String>,
    /// `until` is a regular expression.
    pub regex: bool,
    /// Give up waiting after this long.
    pub timeout_ms: u64,
    /// A failure here does not stop the playbook.
    pub continue_on_error: bool,
}

impl Step {
    /// The step's name for messages: `step 2 ("build")` or `step 2`.
    pub fn label(&self, index: usize) -> String {
        match &self.name {
            Some(name) => format!("step {} ({name:?})", index + 1),
            None => format!("step {}", index + 1),
        }
    }

    /// How `item` is waited for.
    pub fn wait_of(&self, item: &Item) -> StepWait {
        match (self.wait, &item.command) {
            (Some(wait), _) => wait,
            (None, Some(_)) => StepWait::Exit,
            (None, None) if self.until.is_some() => StepWait::Exit,
            (None, None) => StepWait::None,
        }
    }

    /// Its timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

/// Messages to agents after the steps, with the broadcast cascade.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CascadeSpec {
    /// For every agent without a closer message.
    #[serde(default)]
    pub message: Option<String>,
    /// Per team.
    #[serde(default)]
    pub teams: BTreeMap<String, String>,
    /// Per agent.
    #[serde(default)]
    pub agents: BTreeMap<String, String>,
}

/// Reads at the end.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ReadsSpec {
    /// Sessions, agents, teams or paths.
    pub targets: Vec<String>,
    /// new (default), tail or screen.
    #[serde(default)]
    pub mode: Option<String>,
    /// Keep only lines matching this regex.
    #[serde(default)]
    pub filter: Option<String>,
    /// Lines per target at most (default 40).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// A step as written: every field optional, so each is checked on its own.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    targets: Vec<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    commands: Vec<Item>,
    #[serde(default)]
    parallel: Option<bool>,
    #[serde(default)]
    wait: Option<StepWait>,
    #[serde(default)]
    until: Option<String>,
    #[serde(default)]
    regex: bool,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    continue_on_error: bool,
}

const STEP_FIELDS: &str = "name, targets, command, message, commands, parallel, wait, until, regex, timeout_ms, continue_on_error";
const TOP_FIELDS: &str = "name, layout, steps, cascade, reads, stop_on_error";

/// Whether `key` is one of a playbook's own top-level fields.
fn is_top_field(key: &str) -> bool {
    TOP_FIELDS.split(", ").any(|f| f == key)
}

/// Deserializes `value` as `T`, naming `field` of `place` when it does not fit.
fn field<T: serde::de::DeserializeOwned>(
    place: &str,
    field: &str,
    value: Value,
) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| format!("{place}: `{field}`: {e}"))
}

impl Playbook {
    /// Reads a playbook from a file: TOML when the name ends in `.toml`, JSON when in
    /// `.json`, otherwise whichever parses.
    ///
    /// Only a regular file of at most [`PLAYBOOK_FILE_MAX`] bytes is read, so a device,
    /// a FIFO or a descriptor of the server's own never blocks or floods it. An error
    /// about a file that is not a playbook names the file, line and column but never
    /// quotes what the file holds.
    pub fn from_file(path: &std::path::Path) -> Result<Playbook, String> {
        let text = read_playbook_file(path)?;
        let shown = path.display();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let value = match ext {
            "toml" => toml_value(&text).map_err(|e| format!("{shown}: {e}"))?,
            "json" => json_value(&text).map_err(|e| format!("{shown}: {e}"))?,
            _ => json_value(&text)
                .or_else(|_| toml_value(&text))
                .map_err(|e| format!("{shown}: neither JSON nor TOML: {e}"))?,
        };
        let is_a_playbook = value
            .as_object()
            .is_some_and(|top| top.keys().any(|k| is_top_field(k)));
        if !is_a_playbook {
            return Err(format!(
                "{shown} is not a playbook: its top level has none of the fields {TOP_FIELDS}"
            ));
        }
        Playbook::from_value(value).map_err(|e| format!("{shown}: {e}"))
    }

    /// The playbook a caller gave either inline (`value`) or as a file (`path`), as
    /// the tool and the API take it: exactly one of the two. A file is read on a
    /// blocking thread, off the async runtime.
    pub async fn from_either(value: Option<Value>, path: Option<&str>) -> Result<Playbook, String> {
        match (value, path) {
            (Some(value), None) => Playbook::from_value(value),
            (None, Some(path)) => {
                let path = std::path::PathBuf::from(path);
                tokio::task::spawn_blocking(move || Playbook::from_file(&path))
                    .await
                    .map_err(|e| format!("reading the playbook failed: {e}"))?
            }
            (Some(_), Some(_)) => Err("give playbook or path, not both".into()),
            (None, None) => Err("give playbook (the steps) or path (a TOML/JSON file)".into()),
        }
    }

    /// Checks a playbook given as JSON (the tool's argument, a parsed file).
    pub fn from_value(value: Value) -> Result<Playbook, String> {
        let Value::Object(mut top) = value else {
            return Err("a playbook is an object with `steps` (and optionally name, layout, cascade, reads, stop_on_error)".into());
        };
        if let Some(unknown) = top.keys().find(|k| !is_top_field(k)) {
            return Err(format!(
                "unknown field `{unknown}` in the playbook; the fields are {TOP_FIELDS}"
            ));
        }
        let name: Option<String> = field("the playbook", "name", take(&mut top, "name"))?;
        let layout: Option<LayoutSpec> = field("the playbook", "layout", take(&mut top, "layout"))?;
        let cascade: Option<CascadeSpec> =
            field("the playbook", "cascade", take(&mut top, "cascade"))?;
        let reads: Option<ReadsSpec> = field("the playbook", "reads", take(&mut top, "reads"))?;
        let stop_on_error: Option<bool> = field(
            "the playbook",
            "stop_on_error",
            take(&mut top, "stop_on_error"),
        )?;
        let steps = match take(&mut top, "steps") {
            Value::Array(steps) => steps,
            Value::Null => Vec::new(),
            other => {
                return Err(format!(
                    "the playbook: `steps` must be a list of steps, not {}",
                    kind_of(&other)
                ))
            }
        };
        if steps.is_empty() && layout.is_none() && cascade.is_none() && reads.is_none() {
            return Err("the playbook has nothing to do: give `steps` (a list of steps), or a layout, cascade or reads".into());
        }
        if steps.len() > STEPS_MAX {
            return Err(format!(
                "the playbook has {} steps; at most {STEPS_MAX}: split it in several",
                steps.len()
            ));
        }
        let steps = steps
            .into_iter()
            .enumerate()
            .map(|(i, step)| check_step(i, step))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(layout) = &layout {
            layout
                .tree()
                .map_err(|e| format!("the playbook: `layout`: {e}"))?;
        }
        if let Some(reads) = &reads {
            if reads.targets.is_empty() {
                return Err("the playbook: `reads`: `targets` is empty: name what to read".into());
            }
            if let Some(mode) = reads
                .mode
                .as_deref()
                .filter(|m| !["new", "tail", "screen"].contains(m))
            {
                return Err(format!(
                    "the playbook: `reads`: `mode` {mode:?} is not one of new, tail, screen"
                ));
            }
            if let Some(filter) = &reads.filter {
                cohort_terminal::pattern::compile("filter", filter)
                    .map_err(|e| format!("the playbook: `reads`: {e}"))?;
            }
        }
        if let Some(c) = &cascade {
            if c.message.is_none() && c.teams.is_empty() && c.agents.is_empty() {
                return Err(
                    "the playbook: `cascade` sends nothing: give message, teams or agents".into(),
                );
            }
        }
        Ok(Playbook {
            name,
            layout,
            steps,
            cascade,
            reads,
            stop_on_error: stop_on_error.unwrap_or(true),
        })
    }
}

/// Removes `key` from `map` (null when absent).
fn take(map: &mut serde_json::Map<String, Value>, key: &str) -> Value {
    map.remove(key).unwrap_or(Value::Null)
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Checks one step: each field on its own (so an error names it), then together.
pub fn check_step(index: usize, value: Value) -> Result<Step, String> {
    let place = format!("step {}", index + 1);
    let Value::Object(map) = value else {
        return Err(format!(
            "{place}: a step is an object (with targets and command, or commands), not {}",
            kind_of(&value)
        ));
    };
    // Name the step as soon as its name is known.
    let place = match map.get("name").and_then(Value::as_str) {
        Some(name) => format!("{place} ({name:?})"),
        None => place,
    };
    let mut raw = RawStep::default();
    for (key, value) in map {
        let one = Value::Object(serde_json::Map::from_iter([(key.clone(), value)]));
        let parsed: RawStep = serde_json::from_value(one).map_err(|e| {
            if e.to_string().starts_with("unknown field") {
                format!("{place}: unknown field `{key}`; the fields of a step are {STEP_FIELDS}")
            } else {
                format!("{place}: `{key}`: {e}")
            }
        })?;
        merge(&mut raw, parsed, &key);
    }
    let mut items = Vec::new();
    match (&raw.command, &raw.message) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{place}: give `command` (for a shell) or `message` (for an agent), not both"
            ))
        }
        (None, None) if !raw.targets.is_empty() => {
            return Err(format!(
                "{place}: `targets` without `command` or `message`: say what to type"
            ))
        }
        (None, None) => {}
        _ if raw.targets.is_empty() => {
            return Err(format!(
                "{place}: `targets` is missing: name the sessions, agents or teams to type into"
            ))
        }
        _ => items.push(Item {
            targets: raw.targets.clone(),
            command: raw.command.clone(),
            message: raw.message.clone(),
        }),
    }
    for (i, item) in raw.commands.iter().enumerate() {
        let at = format!("{place}: `commands`[{i}]");
        if item.targets.is_empty() {
            return Err(format!("{at}: `targets` is empty: name where to type"));
        }
        match (&item.command, &item.message) {
            (Some(_), Some(_)) => {
                return Err(format!("{at}: give `command` or `message`, not both"))
            }
            (None, None) => return Err(format!("{at}: give `command` or `message`")),
            _ => {}
        }
        items.push(item.clone());
    }
    if items.is_empty() {
        return Err(format!(
            "{place}: nothing to type: give `targets` with `command` or `message`, or `commands`"
        ));
    }
    for item in &items {
        if item.text().trim().is_empty() {
            return Err(format!("{place}: a `command` or `message` is empty"));
        }
        if let Some(t) = item.targets.iter().find(|t| t.trim().is_empty()) {
            return Err(format!("{place}: `targets` holds an empty name ({t:?})"));
        }
    }
    if let Some(until) = &raw.until {
        cohort_terminal::completion::Until::new(until, raw.regex)
            .map_err(|e| format!("{place}: `until`: {e}"))?;
        if raw.wait.is_some_and(|w| w != StepWait::Exit) {
            return Err(format!(
                "{place}: `until` waits for text in the output; it goes with wait \"exit\" (the default), not {:?}",
                raw.wait.unwrap_or(StepWait::Exit)
            ));
        }
    }
    if raw.regex && raw.until.is_none() {
        return Err(format!(
            "{place}: `regex` applies to `until`, which is missing"
        ));
    }
    let timeout_ms = raw.timeout_ms.unwrap_or(STEP_TIMEOUT.as_millis() as u64);
    if !(1..=TIMEOUT_MAX_MS).contains(&timeout_ms) {
        return Err(format!(
            "{place}: `timeout_ms` {timeout_ms} is out of range: give 1 to {TIMEOUT_MAX_MS} (a day)"
        ));
    }
    Ok(Step {
        name: raw.name,
        items,
        parallel: raw.parallel.unwrap_or(true),
        wait: raw.wait,
        until: raw.until,
        regex: raw.regex,
        timeout_ms,
        continue_on_error: raw.continue_on_error,
    })
}

/// Takes the one field `key` that `parsed` holds into `raw`.
fn merge(raw: &mut RawStep, parsed: RawStep, key: &str) {
    match key {
        "name" => raw.name = parsed.name,
        "targets" => raw.targets = parsed.targets,
        "command" => raw.command = parsed.command,
        "message" => raw.message = parsed.message,
        "commands" => raw.commands = parsed.commands,
        "parallel" => raw.parallel = parsed.parallel,
        "wait" => raw.wait = parsed.wait,
        "until" => raw.until = parsed.until,
        "regex" => raw.regex = parsed.regex,
        "timeout_ms" => raw.timeout_ms = parsed.timeout_ms,
        "continue_on_error" => raw.continue_on_error = parsed.continue_on_error,
        _ => {}
    }
}

/// The largest playbook file read. Playbooks are a page or two of steps; anything
/// bigger is not one, and reading it whole would cost its size in memory.
pub const PLAYBOOK_FILE_MAX: u64 = 1 << 20;

/// The text of a playbook file: a regular file, at most [`PLAYBOOK_FILE_MAX`] bytes,
/// UTF-8. Opened without blocking and checked again once open, so a name swapped for a
/// FIFO between the two looks is refused too.
fn read_playbook_file(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display();
    let cannot = |e: std::io::Error| format!("cannot read the playbook {shown}: {e}");
    let refuse = |meta: &std::fs::Metadata| -> Result<(), String> {
        if !meta.is_file() {
            return Err(format!(
                "{shown} is {}, not a regular file; a playbook is a TOML or JSON file",
                file_kind(meta)
            ));
        }
        if meta.len() > PLAYBOOK_FILE_MAX {
            return Err(too_big(path));
        }
        Ok(())
    };
    refuse(&std::fs::metadata(path).map_err(cannot)?)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(cannot)?;
    refuse(&file.metadata().map_err(cannot)?)?;
    let mut bytes = Vec::new();
    file.take(PLAYBOOK_FILE_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > PLAYBOOK_FILE_MAX {
        return Err(too_big(path));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{shown} is not text: invalid UTF-8 at byte {}; a playbook is a TOML or JSON file",
            e.utf8_error().valid_up_to()
        )
    })
}

fn too_big(path: &std::path::Path) -> String {
    format!(
        "{} is larger than {} KiB, the most a playbook may be; split it or give the steps inline",
        path.display(),
        PLAYBOOK_FILE_MAX / 1024
    )
}

/// What a file that is not a regular file is, in words.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Parses JSON; a syntax error says where, never what is there.
fn json_value(text: &str) -> Result<Value, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("not valid JSON at line {} column {}", e.line(), e.column()))
}

/// Parses TOML; a syntax error says where and what was expected, but leaves out the
/// quoted line the parser's own message carries.
fn toml_value(text: &str) -> Result<Value, String> {
    toml::from_str::<Value>(text).map_err(|e| {
        let place = e.span().map(|span| {
            let before = text.get(..span.start).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!(" at line {line} column {column}")
        });
        let message = e.message().lines().next().unwrap_or("").trim();
        format!("not valid TOML{}: {message}", place.unwrap_or_default())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(value: Value) -> String {
        Playbook::from_value(value).unwrap_err()
    }

    #[test]
    fn a_full_playbook_reads_with_defaults() {
        let book = Playbook::from_value(json!({
            "name": "ci",
            "steps": [
                {"name": "build", "targets": ["a", "b"], "command": "make"},
                {"commands": [{"targets": ["x"], "message": "hi"}], "wait": "idle", "parallel": false,
                 "continue_on_error": true, "timeout_ms": 5000},
                {"targets": ["py"], "command": "python3", "until": ">>> "}
            ],
            "reads": {"targets": ["a"], "mode": "tail", "filter": "error"}
        }))
        .unwrap();
        assert!(book.stop_on_error);
        assert_eq!(book.steps.len(), 3);
        assert_eq!(
            book.steps[0].wait_of(&book.steps[0].items[0]),
            StepWait::Exit
        );
        assert_eq!(
            book.steps[1].wait_of(&book.steps[1].items[0]),
            StepWait::Idle
        );
        assert!(book.steps[0].parallel);
        assert_eq!(book.steps[0].timeout(), STEP_TIMEOUT);
        assert_eq!(book.steps[1].items[0].text(), "hi");
        assert!(!book.steps[1].parallel && book.steps[1].continue_on_error);
        assert_eq!(book.steps[2].until.as_deref(), Some(">>> "));
    }

    #[test]
    fn errors_name_the_step_and_the_field() {
        let e = error(
            json!({"steps": [{"name": "ok", "targets": ["a"], "command": "x"},
                                        {"name": "test", "targets": ["a"], "comand": "x"}]}),
        );
        assert!(
            e.starts_with("step 2 (\"test\"): unknown field `comand`"),
            "{e}"
        );
        let e = error(json!({"steps": [{"targets": "a", "command": "x"}]}));
        assert!(e.starts_with("step 1: `targets`: invalid type"), "{e}");
        let e = error(json!({"steps": [{"targets": ["a"], "command": "x", "wait": "idel"}]}));
        assert!(e.contains("`wait`: unknown variant `idel`"), "{e}");
        let e = error(json!({"steps": [{"targets": ["a"], "command": "x", "timeout_ms": 0}]}));
        assert!(e.contains("`timeout_ms` 0 is out of range"), "{e}");
        let e = error(
            json!({"steps": [{"name": "u", "targets": ["a"], "command": "x", "until": "(", "regex": true}]}),
        );
        assert!(e.starts_with("step 1 (\"u\"): `until`:"), "{e}");
        let e = error(json!({"steps": [{"commands": [{"targets": ["a"]}]}]}));
        assert!(
            e.contains("`commands`[0]: give `command` or `message`"),
            "{e}"
        );
        let e = error(json!({"steps": [], "cascade": {}}));
        assert!(e.contains("`cascade` sends nothing"), "{e}");
        let e = error(json!({"stpes": []}));
        assert!(e.contains("unknown field `stpes`"), "{e}");
        let e = error(
            json!({"steps": [{"targets": ["a"], "message": "x", "until": "y", "wait": "idle"}]}),
        );
        assert!(e.contains("goes with wait \"exit\""), "{e}");
    }

    #[test]
    fn toml_files_read_like_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("book.toml");
        std::fs::write(
            &path,
            "name = \"t\"\n[[steps]]\nname = \"one\"\ntargets = [\"a\"]\ncommand = \"true\"\n\n[[steps]]\nname = \"two\"\ntargets = [\"a\"]\ncommand = \"false\"\ntimout_ms = 3\n",
        )
        .unwrap();
        let e = Playbook::from_file(&path).unwrap_err();
        assert!(
            e.contains("book.toml: step 2 (\"two\"): unknown field `timout_ms`"),
            "{e}"
        );
        std::fs::write(&path, "[[steps]\n").unwrap();
        let e = Playbook::from_file(&path).unwrap_err();
        assert!(e.contains("not valid TOML"), "{e}");
    }

    #[test]
    fn only_regular_files_of_bounded_size_are_read() {
        let e = Playbook::from_file(std::path::Path::new("/dev/zero")).unwrap_err();
        assert!(
            e.contains("/dev/zero is a device, not a regular file"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let e = Playbook::from_file(dir.path()).unwrap_err();
        assert!(e.contains("is a directory"), "{e}");

        // A FIFO with no writer would block a plain read for ever.
        let fifo = dir.path().join("book.fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = Playbook::from_file(&fifo).unwrap_err();
            assert!(e.contains("is a FIFO"), "{e}");
        }

        let big = dir.path().join("big.json");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(PLAYBOOK_FILE_MAX + 1).unwrap();
        let e = Playbook::from_file(&big).unwrap_err();
        assert!(e.contains("larger than 1024 KiB"), "{e}");
    }

    #[test]
    fn a_file_that_is_not_a_playbook_is_never_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "s3cr3t-value-from-the-file";
        for (name, text) in [
            (
                "shadow",
                format!("root:$6${secret}:19000:0:99999:7:::\n").into_bytes(),
            ),
            (
                "env.toml",
                format!("API_TOKEN = \"{secret}\"\n").into_bytes(),
            ),
            (
                "broken.toml",
                format!("token = \"{secret}\"\n[[steps]\n").into_bytes(),
            ),
            (
                "broken.json",
                format!("{{\"token\": \"{secret}\",}}").into_bytes(),
            ),
            (
                "binary",
                [b"\xff\xfe".as_slice(), secret.as_bytes()].concat(),
            ),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let e = Playbook::from_file(&path).unwrap_err();
            assert!(!e.contains(secret), "{name}: {e}");
            assert!(e.contains(name), "the error names the file: {e}");
        }
        let e = Playbook::from_file(&dir.path().join("broken.toml")).unwrap_err();
        assert!(e.contains("not valid TOML at line 2 column"), "{e}");
        let e = Playbook::from_file(&dir.path().join("env.toml")).unwrap_err();
        assert!(e.contains("is not a playbook"), "{e}");
    }
}
