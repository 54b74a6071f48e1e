//! Bad input: every tool the server lists (`--toolsets all`) called with wrong types,
//! missing and extra fields, empty, NUL, newline and 10 MB strings, unknown targets,
//! invalid and catastrophic regexes, negative and overflowing numbers, tmux specials
//! in every name, title, team, role and reason (`#(touch FILE)` must never run), JSON
//! nested 64 to 200 levels deep and a line over the transport's 16 MiB limit.
//!
//! Each case is sorted by what came back: a clear error (a tool result with isError
//! and a message, or a JSON-RPC error answering the request), a result, a dead server
//! or no answer within a bound. Printed per class (`-- --nocapture`), with the
//! server's resident memory before, at the peak and after. Afterwards the server must
//! still serve, an earlier session's output must be intact, and no trap file may exist.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::{reliability::*, support::*};
use serde_json::{json, Map, Value};

/// Bound for one ordinary case.
const BOUND: Duration = Duration::from_secs(20);

/// Cases in flight at once.
const BATCH: usize = 8;

/// Bound for the cases that today go unanswered (run together, so they overlap).
const HANG_BOUND: Duration = Duration::from_secs(15);

/// The huge string, in bytes: 10 MB unless `COHORT_BAD_INPUT_MB` says otherwise. Sent
/// once per tool (in its first string field); every other string field gets
/// [`LARGE`] bytes, as far past any name limit and much cheaper to send, unless
/// `COHORT_BAD_INPUT_FULL=1` asks for the huge one everywhere.
fn huge_len() -> usize {
    env_usize("COHORT_BAD_INPUT_MB", 10) * 1_000_000
}

/// The size of the large string every string field gets.
const LARGE: usize = 100_000;

fn huge_everywhere() -> bool {
    env_usize("COHORT_BAD_INPUT_FULL", 0) == 1
}

/// What a case must get back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// A clear error.
    Refuse,
    /// A clear error, or acceptance that keeps the value literally (checked).
    RefuseOrLiteral(Kind),
    /// Any answer (a result or a clear error); only panics and hangs fail.
    Answer,
}

/// Where an accepted name shows again, to check it was kept literally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Session,
    Agent,
    Team,
    Title,
    Tag,
    /// Not listed anywhere (owners, requesters, roles, reasons): only the trap files
    /// tell.
    Unlisted,
}

/// How a string field is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cat {
    /// Names an existing thing: every odd value must be refused.
    Target,
    /// A new name: refused when empty, NUL, newline, too long or huge; specials
    /// refused or kept literally.
    Ident(Kind),
    /// Free text that reaches tmux (title, role, reason): NUL and huge refused,
    /// specials refused or kept literally.
    Free(Kind),
    /// One of a few words (mode, direction, a colour, a key name): refused.
    Enum,
    /// Content typed or matched (text, command, until, cwd): only huge is refused.
    Content,
}

/// Where in the arguments a value goes.
#[derive(Clone, Debug)]
enum Loc {
    Top(String),
    Item(String),
    MapKey(String),
    MapValue(String),
    Pane(&'static str),
}

impl Loc {
    fn describe(&self) -> String {
        match self {
            Loc::Top(f) => f.clone(),
            Loc::Item(f) => format!("{f}[0]"),
            Loc::MapKey(f) => format!("{f} key"),
            Loc::MapValue(f) => format!("{f} value"),
            Loc::Pane(f) => format!("panes[0].{f}"),
        }
    }

    fn set(&self, base: &Value, value: Value) -> Value {
        let mut args = base.clone();
        let obj = args.as_object_mut().expect("arguments are an object");
        match self {
            Loc::Top(f) => {
                obj.insert(f.clone(), value);
            }
            Loc::Item(f) => {
                obj.insert(f.clone(), Value::Array(vec![value]));
            }
            Loc::MapKey(f) => {
                let key = value.as_str().unwrap_or("k").to_string();
                obj.insert(f.clone(), json!({ key: "true" }));
            }
            Loc::MapValue(f) => {
                obj.insert(f.clone(), json!({ "K": value }));
            }
            Loc::Pane(f) => {
                obj.insert("panes".into(), json!([{ *f: value }]));
            }
        }
        args
    }
}

struct Case {
    tool: String,
    class: &'static str,
    what: String,
    args: Value,
    expect: Expect,
    /// The value to find again when accepted literally.
    literal: Option<String>,
}

/// The sessions, agent and team the corpus aims at.
const SCRATCH: &str = "scratch";
const LOCKER: &str = "locker";
const ANCHOR: &str = "anchor";
const AGENT: &str = "helper";
const TEAM: &str = "crew";
/// A worker name nothing answers to.
const NO_WORKER: &str = "nobody-works-here";

/// Valid arguments for each tool; `n` keeps new names unique.
fn base(tool: &str, n: usize) -> Option<Value> {
    Some(match tool {
        "list" | "status" | "list_agents" | "list_teams" => json!({}),
        "close" | "focus" => json!({"target": SCRATCH}),
        // The scratch session is cohort's: adopting it again answers with it.
        "adopt" => json!({"pane": SCRATCH}),
        "broadcast_input" => json!({"targets": [SCRATCH], "off": true}),
        "hide" => json!({"targets": [SCRATCH], "show": true}),
        "arrange" => json!({"action": "save", "name": format!("arr-{n}"), "targets": [SCRATCH]}),
        // Mode "lines", so a mutated `lines` is read, not ignored.
        "read" => json!({"target": SCRATCH, "mode": "lines", "lines": "1-2"}),
        "key" => json!({"target": SCRATCH, "keys": ["Enter"]}),
        "open" => json!({"name": format!("fresh-{n}")}),
        "run" => json!({"target": SCRATCH, "command": "true"}),
        "send" => json!({"target": SCRATCH, "text": "true"}),
        "create_layout" => json!({"name": format!("lay-{n}"), "layout": "single"}),
        "set_appearance" => json!({"target": SCRATCH, "title": "t"}),
        "split" => json!({"target": SCRATCH, "name": format!("sp-{n}")}),
        "assign_team" => json!({"agent": AGENT, "team": TEAM}),
        "broadcast" => json!({"agents": {AGENT: "true"}}),
        "create_team" => json!({"name": format!("team-{n}")}),
        "lock" | "unlock" => json!({"target": LOCKER, "owner": AGENT}),
        "notifications" => json!({"owner": AGENT}),
        "read_many" => json!({"targets": [SCRATCH]}),
        "register_agent" => json!({"name": format!("ag-{n}"), "session": SCRATCH}),
        "remove_agent" | "remove_team" => json!({"name": format!("nobody-{n}")}),
        "request_access" => json!({"target": LOCKER, "requester": AGENT}),
        "tag" => json!({"target": SCRATCH, "add": ["t1"]}),
        "write_many" => json!({"targets": [SCRATCH], "text": "true"}),
        // Stopping: a mutated path is parsed and refused or ignored, and no file is made.
        "record" => json!({"target": SCRATCH, "stop": true}),
        // Workers: a spawn whose project does not exist, so no mutation starts an agent
        // in this repository; the other tools name a worker that is not there.
        "spawn_workers" => json!({"workers": [{
            "agent": "custom",
            "command": "true",
            "use_worktree": false,
            "project_path": "/nonexistent/cohort-reliability",
        }]}),
        "list_workers" | "check_idle_workers" | "discover_workers" | "list_worktrees" => json!({}),
        "examine_worker" | "read_worker_logs" | "adopt_worker" => json!({"session_id": NO_WORKER}),
        "annotate_worker" => json!({"session_id": NO_WORKER, "annotation": "note"}),
        "message_workers" => json!({"session_ids": [NO_WORKER], "message": "hi"}),
        "close_workers" => json!({"session_ids": [NO_WORKER]}),
        "approve_workers" => json!({"session_ids": [NO_WORKER], "decision": "deny"}),
        "merge_workers" | "diff_workers" => json!({"session_ids": [NO_WORKER]}),
        "budget_workers" => json!({"session_ids": [NO_WORKER], "tokens": 1000}),
        "wait_idle_workers" => json!({"session_ids": [NO_WORKER], "timeout": 0.1}),
        // Orchestration: a watcher that never fires, a wait that ends at once, a
        // playbook file that is not there.
        "agent_status" | "list_watches" => json!({}),
        "notify" => json!({"to": AGENT, "message": "note", "from": "tester"}),
        "playbook" => json!({"path": "/nonexistent/cohort-playbook.toml"}),
        "unwatch" => json!({"id": "w-none"}),
        "wait_for" => {
            json!({"targets": [SCRATCH], "condition": "quiet", "quiet_ms": 10, "timeout_ms": 2000})
        }
        "watch" => json!({"target": SCRATCH, "pattern": "zz-never-printed"}),
        _ => return None,
    })
}

/// How `tool`'s string field `field` is treated.
fn category(tool: &str, field: &str) -> Cat {
    match (tool, field) {
        (_, "target" | "targets" | "session" | "session_id" | "session_ids") => Cat::Target,
        ("assign_team", "agent" | "team") => Cat::Target,
        // Removing what is not there may answer "nothing to do"; odd names are still odd.
        ("remove_agent" | "remove_team", "name") => Cat::Ident(Kind::Unlisted),
        ("broadcast", "teams" | "agents") => Cat::Target,
        ("create_team", "parent") => Cat::Target,
        ("open" | "split" | "create_layout", "name") => Cat::Ident(Kind::Session),
        ("register_agent", "name") | ("split", "agent") | ("create_layout", "agent") => {
            Cat::Ident(Kind::Agent)
        }
        ("create_team", "name") | ("register_agent", "teams") => Cat::Ident(Kind::Team),
        ("split" | "create_layout", "team") => Cat::Ident(Kind::Team),
        ("tag", "add") => Cat::Ident(Kind::Tag),
        ("tag", "remove") => Cat::Ident(Kind::Unlisted),
        (_, "owner" | "requester") => Cat::Ident(Kind::Unlisted),
        ("open", "env") => Cat::Ident(Kind::Unlisted),
        ("set_appearance", "title") => Cat::Free(Kind::Title),
        (_, "role" | "reason") => Cat::Free(Kind::Unlisted),
        (
            _,
            "mode" | "direction" | "layout" | "lines" | "tab_color" | "background" | "keys"
            | "condition",
        ) => Cat::Enum,
        _ => Cat::Content,
    }
}

/// The tmux specials that must never be expanded; `trap` is a file a `#(…)` creates.
fn specials(n: usize, trap: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("colon", format!("a:b-{n}")),
        ("dot", format!("a.b-{n}")),
        ("format", format!("x#{{pane_id}}-{n}")),
        ("shell", format!("#(touch {})", trap.display())),
        ("style", format!("y#[fg=red]-{n}")),
        ("semicolon", format!("a;b-{n}")),
        ("semicolon-escaped", format!("a \\; kill-server-{n}")),
    ]
}

/// Odd strings for one field, with what each must get back.
fn string_values(
    cat: Cat,
    n: usize,
    trap: &Path,
    huge: Option<&str>,
) -> Vec<(&'static str, String, Expect)> {
    use Expect::*;
    let mut out: Vec<(&'static str, String, Expect)> = Vec::new();
    let odd = |target_or_ident: Expect, free: Expect, content: Expect| match cat {
        Cat::Target | Cat::Enum => Refuse,
        Cat::Ident(_) => target_or_ident,
        Cat::Free(_) => free,
        Cat::Content => content,
    };
    out.push(("empty", String::new(), odd(Refuse, Answer, Answer)));
    out.push(("nul", format!("a\0b-{n}"), odd(Refuse, Refuse, Answer)));
    out.push(("newline", format!("a\nb-{n}"), odd(Refuse, Answer, Answer)));
    out.push(("65 chars", format!("{n:0>65}"), odd(Refuse, Answer, Answer)));
    match huge {
        Some(huge) => out.push(("huge", huge.to_string(), Refuse)),
        // Content may be long (a pasted file); a name or a word may not.
        None => out.push(("100 KB", "w".repeat(LARGE), odd(Refuse, Refuse, Answer))),
    }
    if cat == Cat::Target {
        out.push(("unknown", format!("ghost-{n}"), Refuse));
    }
    for (name, value) in specials(n, trap) {
        // In free text typed or matched, only a #(…) reaching tmux matters.
        if cat == Cat::Content && name != "shell" {
            continue;
        }
        let expect = match cat {
            Cat::Target | Cat::Enum => Refuse,
            Cat::Ident(kind) | Cat::Free(kind) => RefuseOrLiteral(kind),
            Cat::Content => Answer,
        };
        out.push((name, value, expect));
    }
    out
}

/// A JSON array nested `depth` levels deep.
fn nested_array(depth: usize) -> Value {
    let mut v = json!("x");
    for _ in 0..depth {
        v = Value::Array(vec![v]);
    }
    v
}

/// A split tree whose JSON is about `depth` levels deep (two per split).
fn nested_tree(depth: usize) -> Value {
    let mut v = json!({"pane": 0});
    for _ in 0..depth / 2 {
        v = json!({"split": "horizontal", "children": [v]});
    }
    v
}

fn depth_of(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth_of).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

/// Every case for one tool, from its input schema.
fn cases_for(tool: &rmcp::model::Tool, counter: &mut usize, traps: &Path, huge: &str) -> Vec<Case> {
    let mut huge_sent = false;
    let name = tool.name.to_string();
    let schema = Value::Object((*tool.input_schema).clone());
    let props: Map<String, Value> = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<String> = schema["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut next = || {
        *counter += 1;
        *counter
    };
    let base_of = |n| {
        base(&name, n)
            .unwrap_or_else(|| panic!("no base arguments for tool {name}: add it to base()"))
    };
    let mut out = Vec::new();
    let mut push = |class, what: String, args, expect, literal| {
        out.push(Case {
            tool: name.clone(),
            class,
            what,
            args,
            expect,
            literal,
        })
    };

    if !required.is_empty() {
        push("missing", "{}".into(), json!({}), Expect::Refuse, None);
        for field in &required {
            let mut args = base_of(next());
            args.as_object_mut().unwrap().remove(field);
            push(
                "missing",
                format!("without {field}"),
                args,
                Expect::Refuse,
                None,
            );
        }
    }
    let mut args = base_of(next());
    args["bogus_field"] = json!(true);
    push(
        "extra field",
        "bogus_field".into(),
        args,
        Expect::Refuse,
        None,
    );

    for (field, prop) in &props {
        let types: Vec<String> = match &prop["type"] {
            Value::String(t) => vec![t.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(|t| t.as_str().map(String::from))
                .collect(),
            _ => Vec::new(),
        };
        let is = |t: &str| types.iter().any(|x| x == t);
        let wrong = if is("string") {
            json!(42)
        } else if is("integer") || is("boolean") {
            json!("12")
        } else if is("array") || is("object") {
            json!("x")
        } else {
            json!(42)
        };
        push(
            "wrong type",
            format!("{field} = {wrong}"),
            Loc::Top(field.clone()).set(&base_of(next()), wrong),
            Expect::Refuse,
            None,
        );
        if is("integer") {
            for number in [
                json!(-1),
                json!(1.5),
                json!(1e300),
                serde_json::from_str::<Value>("18446744073709551616").unwrap(),
            ] {
                push(
                    "number",
                    format!("{field} = {number}"),
                    Loc::Top(field.clone()).set(&base_of(next()), number),
                    Expect::Refuse,
                    None,
                );
            }
        }
        let locs: Vec<Loc> = if field == "panes" {
            ["name", "agent", "team", "command", "cwd"]
                .into_iter()
                .map(Loc::Pane)
                .collect()
        } else if is("string") {
            vec![Loc::Top(field.clone())]
        } else if is("array") && prop["items"]["type"] == "string" {
            vec![Loc::Item(field.clone())]
        } else if is("object") {
            vec![Loc::MapKey(field.clone()), Loc::MapValue(field.clone())]
        } else {
            Vec::new()
        };
        for loc in locs {
            let cat = match &loc {
                Loc::Pane(f) => category("create_layout", f),
                Loc::MapValue(_) => Cat::Content,
                _ => category(&name, field),
            };
            let k = next();
            let huge = (!huge_sent || huge_everywhere()).then_some(huge);
            huge_sent = true;
            for (class, value, expect) in
                string_values(cat, k, &traps.join(format!("trap-{k}")), huge)
            {
                // A layout's sessions are named after it: "NAME-1".
                let literal = matches!(expect, Expect::RefuseOrLiteral(_)).then(|| {
                    match (name.as_str(), &loc) {
                        ("create_layout", Loc::Top(f)) if f == "name" => format!("{value}-1"),
                        _ => value.clone(),
                    }
                });
                let shown = if value.len() > 60 {
                    format!("{} bytes", value.len())
                } else {
                    format!("{value:?}")
                };
                let args = loc.set(&base_of(next()), json!(value));
                push(
                    class,
                    format!("{} = {shown}", loc.describe()),
                    args,
                    expect,
                    literal,
                );
            }
        }
    }
    out
}

/// Cases that today go unanswered or may: deep JSON and an over-long line.
fn deep_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for depth in [64usize, 100, 126, 200] {
        let variants = [
            (
                "create_layout",
                "tree",
                json!({"name": format!("deep-{depth}"), "tree": nested_tree(depth)}),
            ),
            (
                "open",
                "env",
                json!({"name": format!("deep-{depth}"), "env": {"A": nested_array(depth)}}),
            ),
            (
                "send",
                "target",
                json!({"target": nested_array(depth), "text": "true"}),
            ),
            (
                "write_many",
                "targets",
                json!({"targets": nested_array(depth), "text": "true"}),
            ),
        ];
        for (tool, field, args) in variants {
            let d = depth_of(&args);
            out.push(Case {
                tool: tool.into(),
                class: "deep JSON",
                what: format!("{field} nested {d} levels"),
                args,
                expect: Expect::Refuse,
                literal: None,
            });
        }
    }
    out.push(Case {
        tool: "send".into(),
        class: "17 MB line",
        what: "text of 17 MB (over the 16 MiB line limit)".into(),
        args: json!({"target": SCRATCH, "text": "y".repeat(17 * 1024 * 1024)}),
        expect: Expect::Refuse,
        literal: None,
    });
    out
}

/// Regex cases: invalid patterns refused, catastrophic ones answered.
fn regex_cases() -> Vec<Case> {
    let case = |tool: &str, what: &str, args: Value, expect| Case {
        tool: tool.into(),
        class: "regex",
        what: what.into(),
        args,
        expect,
        literal: None,
    };
    let long_line = "head -c 100000 /dev/zero | tr '\\0' a; echo";
    vec![
        case(
            "run",
            "until ( invalid",
            json!({"target": SCRATCH, "command": "true", "until": "(", "regex": true}),
            Expect::Refuse,
        ),
        case(
            "read",
            "until [z-a] invalid",
            json!({"target": SCRATCH, "wait": true, "until": "[z-a]", "regex": true}),
            Expect::Refuse,
        ),
        case(
            "read_many",
            "filter ( invalid",
            json!({"targets": [SCRATCH], "filter": "("}),
            Expect::Refuse,
        ),
        case(
            "run",
            "until (a+)+$ over 100,000 a's",
            json!({"target": SCRATCH, "command": long_line, "until": "(a+)+$", "regex": true, "timeout_ms": 5000}),
            Expect::Answer,
        ),
        case(
            "read_many",
            "filter (a+)+$ over 100,000 a's",
            json!({"targets": [SCRATCH], "mode": "all", "filter": "(a+)+$"}),
            Expect::Answer,
        ),
        case(
            "run",
            "until (x+x+)+y, 10 MB pattern",
            json!({"target": SCRATCH, "command": "true", "until": format!("(x+x+)+y{}", "a".repeat(10_000_000)), "regex": true}),
            Expect::Refuse,
        ),
    ]
}

/// How each case came out, by class.
#[derive(Default)]
struct Counts {
    cases: usize,
    clear_errors: usize,
    results: usize,
    literal: usize,
    gone: usize,
    hung: usize,
    failures: usize,
}

struct Verdicts {
    by_class: BTreeMap<&'static str, Counts>,
    failures: Vec<String>,
    /// Every case carrying a `#(touch …)`, with its outcome, to name the sprung ones.
    traps: Vec<(String, String)>,
    largest_error: usize,
}

impl Verdicts {
    fn new() -> Self {
        Verdicts {
            by_class: BTreeMap::new(),
            failures: Vec::new(),
            traps: Vec::new(),
            largest_error: 0,
        }
    }

    fn record(&mut self, case: &Case, outcome: &Outcome, literal_ok: Option<bool>, took: Duration) {
        let args = case.args.to_string();
        if let Some(at) = args.find("#(touch ") {
            let trap: String = args[at..].chars().take_while(|c| *c != ')').collect();
            self.traps.push((
                format!("{} {} [{}] ({trap})", case.tool, case.what, case.class),
                outcome.short(),
            ));
        }
        let counts = self.by_class.entry(case.class).or_default();
        counts.cases += 1;
        let failed = match outcome {
            Outcome::ToolError(m) | Outcome::RpcError(m) => {
                self.largest_error = self.largest_error.max(m.len());
                if outcome.is_clear_error() {
                    counts.clear_errors += 1;
                    false
                } else {
                    true
                }
            }
            Outcome::Ok(_) => {
                counts.results += 1;
                match case.expect {
                    Expect::Refuse => true,
                    Expect::Answer => false,
                    Expect::RefuseOrLiteral(_) => {
                        let kept = literal_ok.unwrap_or(true);
                        if kept {
                            counts.literal += 1;
                        }
                        !kept
                    }
                }
            }
            Outcome::Gone(_) => {
                counts.gone += 1;
                true
            }
            Outcome::Hung => {
                counts.hung += 1;
                true
            }
        };
        if failed {
            counts.failures += 1;
            eprintln!(
                "  fail: {} {} [{}] after {took:.1?}: {}",
                case.tool,
                case.what,
                case.class,
                outcome.short()
            );
            self.failures.push(format!(
                "{} {} [{}] after {took:.1?}: {}",
                case.tool,
                case.what,
                case.class,
                outcome.short()
            ));
        }
    }

    fn print(&self) {
        eprintln!(
            "{:<18} {:>6} {:>8} {:>8} {:>8} {:>6} {:>6} {:>9}",
            "class", "cases", "refused", "results", "literal", "gone", "hung", "failures"
        );
        let mut total = Counts::default();
        for (class, c) in &self.by_class {
            eprintln!(
                "{class:<18} {:>6} {:>8} {:>8} {:>8} {:>6} {:>6} {:>9}",
                c.cases, c.clear_errors, c.results, c.literal, c.gone, c.hung, c.failures
            );
            total.cases += c.cases;
            total.clear_errors += c.clear_errors;
            total.results += c.results;
            total.literal += c.literal;
            total.gone += c.gone;
            total.hung += c.hung;
            total.failures += c.failures;
        }
        eprintln!(
            "{:<18} {:>6} {:>8} {:>8} {:>8} {:>6} {:>6} {:>9}",
            "total",
            total.cases,
            total.clear_errors,
            total.results,
            total.literal,
            total.gone,
            total.hung,
            total.failures
        );
        eprintln!("longest error message: {} bytes", self.largest_error);
        for f in self.failures.iter().take(60) {
            eprintln!("  FAIL {f}");
        }
        if self.failures.len() > 60 {
            eprintln!("  … and {} more", self.failures.len() - 60);
        }
    }
}

/// The server under test; restarted when a case kills it.
struct Target {
    child: McpChild,
    restarts: usize,
}

/// Checks that an accepted special value is kept literally where it shows.
async fn kept_literally(client: &Client, server: &TestServer, kind: Kind, value: &str) -> bool {
    match kind {
        Kind::Session => {
            let Outcome::Ok(v) = call(client, "list", json!({})).await else {
                return false;
            };
            v["sessions"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x["name"] == value))
        }
        Kind::Agent => {
            let Outcome::Ok(v) = call(client, "list_agents", json!({})).await else {
                return false;
            };
            v["agents"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x["name"] == value))
                && titles(server).iter().any(|t| t.ends_with(value))
        }
        Kind::Team => {
            let Outcome::Ok(v) = call(client, "list_teams", json!({})).await else {
                return false;
            };
            v["teams"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x["name"] == value))
        }
        Kind::Title => titles(server).iter().any(|t| t == value),
        Kind::Tag => {
            let Outcome::Ok(v) = call(client, "status", json!({"target": SCRATCH})).await else {
                return false;
            };
            v["session"]["tags"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x == value))
        }
        Kind::Unlisted => true,
    }
}

/// Undoes what an accepted case left behind (sessions, agents, teams, tags, the lock),
/// so every case meets the same server and one huge name does not slow all later ones.
async fn reset(client: &Client) {
    let ok = |o: Outcome| match o {
        Outcome::Ok(v) => Some(v),
        _ => None,
    };
    if let Some(v) = ok(call_within(client, "list", json!({}), BOUND).await) {
        for s in v["sessions"].as_array().into_iter().flatten() {
            if ![ANCHOR, SCRATCH, LOCKER].contains(&s["name"].as_str().unwrap_or_default()) {
                let pane = s["pane"].as_str().unwrap_or_default();
                call_within(client, "close", json!({"target": pane}), BOUND).await;
            }
        }
    }
    if let Some(v) = ok(call_within(client, "list_agents", json!({}), BOUND).await) {
        for a in v["agents"].as_array().into_iter().flatten() {
            if a["name"] != AGENT {
                call_within(client, "remove_agent", json!({"name": a["name"]}), BOUND).await;
            }
        }
    }
    if let Some(v) = ok(call_within(client, "list_teams", json!({}), BOUND).await) {
        for t in v["teams"].as_array().into_iter().flatten() {
            if t["name"] != TEAM {
                call_within(client, "remove_team", json!({"name": t["name"]}), BOUND).await;
            }
        }
    }
    if let Some(v) = ok(call_within(client, "status", json!({"target": SCRATCH}), BOUND).await) {
        let tags = v["session"]["tags"].clone();
        if tags.as_array().is_some_and(|t| !t.is_empty()) {
            call_within(
                client,
                "tag",
                json!({"target": SCRATCH, "remove": tags}),
                BOUND,
            )
            .await;
        }
    }
    call_within(
        client,
        "unlock",
        json!({"target": LOCKER, "owner": AGENT, "force": true}),
        BOUND,
    )
    .await;
    call_within(
        client,
        "notifications",
        json!({"owner": AGENT, "all": true}),
        BOUND,
    )
    .await;
}

/// Every pane's title, as tmux holds it.
fn titles(server: &TestServer) -> Vec<String> {
    tmux(server, &["list-panes", "-a", "-F", "#{pane_title}"])
        .lines()
        .map(String::from)
        .collect()
}

fn traps_sprung(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// The server under test with its sessions, agent and team, an earlier output to find
/// again, and the directory the `#(touch …)` traps point into.
struct Setup {
    server: TestServer,
    target: Target,
    traps: tempfile::TempDir,
    anchor_marker: String,
    tools: Vec<rmcp::model::Tool>,
}

async fn setup(label: &str) -> Setup {
    let server = TestServer::new();
    let traps = tempfile::tempdir().expect("trap dir");
    let target = Target {
        child: mcp_child(&server, &format!("{label}-0"), |_| {}).await,
        restarts: 0,
    };
    let client = target.child.client.peer().clone();
    for name in [ANCHOR, SCRATCH, LOCKER] {
        call(&client, "open", json!({"name": name}))
            .await
            .ok(&format!("open {name}"));
    }
    call(&client, "create_team", json!({"name": TEAM}))
        .await
        .ok("create_team");
    call(
        &client,
        "register_agent",
        json!({"name": AGENT, "session": SCRATCH, "teams": [TEAM]}),
    )
    .await
    .ok("register_agent");
    let anchor_marker = format!("anchor-{}", uuid::Uuid::new_v4().simple());
    run_ok(&client, ANCHOR, &format!("echo {anchor_marker}")).await;
    let tools = target
        .child
        .client
        .list_all_tools()
        .await
        .expect("tools/list");
    Setup {
        server,
        target,
        traps,
        anchor_marker,
        tools,
    }
}

/// Every case of every tool, huge strings included or not.
fn corpus(setup: &Setup, huge: &str) -> Vec<Case> {
    let mut counter = 0;
    let mut cases: Vec<Case> = Vec::new();
    for tool in &setup.tools {
        cases.extend(cases_for(tool, &mut counter, setup.traps.path(), huge));
    }
    cases.extend(regex_cases());
    cases
}

/// After a corpus: prints the table and the figures, then checks that the server
/// still serves, the anchor's earlier output is intact, no trap was sprung, no case
/// went without a clear answer, and memory came back near `start_memory`.
async fn closing_checks(setup: Setup, verdicts: Verdicts, start_memory: (u64, u64), figures: &str) {
    let Setup {
        server: _server,
        target,
        traps,
        anchor_marker,
        ..
    } = setup;
    let server_alive = alive(target.child.pid);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let client = target.child.client.peer().clone();
    let peak_memory = memory_kib(target.child.pid).unwrap_or_default();
    let alive_marker = format!("alive-{}", uuid::Uuid::new_v4().simple());
    let still = call(
        &client,
        "run",
        json!({"target": ANCHOR, "command": format!("echo {alive_marker}")}),
    )
    .await;
    let history = call(
        &client,
        "read",
        json!({"target": ANCHOR, "mode": "all", "raw": true}),
    )
    .await;
    let sprung = traps_sprung(traps.path());
    let end_memory = memory_kib(target.child.pid).unwrap_or_default();

    verdicts.print();
    eprintln!("{figures}");
    eprintln!(
        "server restarts {}; alive after the corpus: {server_alive}",
        target.restarts
    );
    eprintln!(
        "server memory: RSS {} KiB before the corpus, peak {} KiB, {} KiB after",
        start_memory.0, peak_memory.1, end_memory.0
    );
    eprintln!("trap files created by #(…): {}", sprung.len());
    for trap in &sprung {
        let name = format!("{})", trap.display());
        for (case, outcome) in verdicts.traps.iter().filter(|(c, _)| c.ends_with(&name)) {
            eprintln!("  sprung by {case}: {outcome}");
        }
    }
    eprintln!("run after the corpus: {}", still.short());

    assert!(
        sprung.is_empty(),
        "a #(…) in a name ran a shell command: {sprung:?}"
    );
    let still = still.ok("run after the corpus");
    assert!(
        still["output"]
            .as_str()
            .unwrap_or_default()
            .contains(&alive_marker),
        "{still}"
    );
    let history = history.ok("read of the anchor's history");
    assert!(
        history["output"]
            .as_str()
            .unwrap_or_default()
            .contains(&anchor_marker),
        "the anchor's earlier output is gone: {history}"
    );
    assert_eq!(
        target.restarts, 0,
        "the server died {} times",
        target.restarts
    );
    assert!(
        verdicts.failures.is_empty(),
        "{} of the cases did not get a clear answer (see the table above); first: {}",
        verdicts.failures.len(),
        verdicts.failures[0]
    );
    // Near its start: within 64 MiB of the resident size before the corpus.
    assert!(
        end_memory.0 <= start_memory.0 + 64 * 1024,
        "the server keeps {} KiB after the corpus, {} KiB before",
        end_memory.0,
        start_memory.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_refuses_bad_input_clearly_and_keeps_serving() {
    let mut setup = setup("bad-input").await;
    // The huge strings have their own test; here every string field gets LARGE.
    let cases: Vec<Case> = corpus(&setup, "")
        .into_iter()
        .filter(|c| c.class != "huge")
        .collect();
    let start_memory = memory_kib(setup.target.child.pid).unwrap_or_default();
    eprintln!(
        "{} tools, {} cases, then {} deep or over-long ones",
        setup.tools.len(),
        cases.len(),
        deep_cases().len()
    );
    let server = &setup.server;
    let target = &mut setup.target;
    let mut verdicts = Verdicts::new();
    let corpus_started = Instant::now();
    // Batches run concurrently (shell startups overlap); what accepted cases left
    // behind is undone after each batch.
    for batch in cases.chunks(BATCH) {
        let client = target.child.client.peer().clone();
        // Cases that set or check a pane title take turns: they all set the same
        // pane's title, so a check beside another one would read the other's.
        let titles_turn = tokio::sync::Mutex::new(());
        let outcomes = futures_util::future::join_all(batch.iter().map(|case| {
            let client = client.clone();
            let server = &server;
            let titles_turn = &titles_turn;
            async move {
                let titled = matches!(case.tool.as_str(), "set_appearance" | "register_agent")
                    || matches!(
                        case.expect,
                        Expect::RefuseOrLiteral(Kind::Title | Kind::Agent)
                    );
                let _turn = if titled {
                    Some(titles_turn.lock().await)
                } else {
                    None
                };
                let started = Instant::now();
                let outcome = call_within(&client, &case.tool, case.args.clone(), BOUND).await;
                let took = started.elapsed();
                let literal_ok = match (&outcome, case.expect, &case.literal) {
                    (Outcome::Ok(_), Expect::RefuseOrLiteral(kind), Some(value)) => {
                        Some(kept_literally(&client, server, kind, value).await)
                    }
                    _ => None,
                };
                (outcome, literal_ok, took)
            }
        }))
        .await;
        let mut accepted = false;
        let mut hung = false;
        let mut died = !alive(target.child.pid);
        for (case, (outcome, literal_ok, took)) in batch.iter().zip(outcomes) {
            verdicts.record(case, &outcome, literal_ok, took);
            accepted |= matches!(outcome, Outcome::Ok(_));
            hung |= matches!(outcome, Outcome::Hung);
            died |= matches!(outcome, Outcome::Gone(_));
        }
        // A hang may have wedged the server: if it does not answer a list either, it
        // is restarted (and counted) so the corpus goes on.
        let wedged = hung
            && matches!(
                call_within(&client, "list", json!({}), BOUND).await,
                Outcome::Hung | Outcome::Gone(_)
            );
        if died || wedged {
            eprintln!(
                "server {} during the batch starting with {} {}; log:\n{}",
                if died { "died" } else { "wedged" },
                batch[0].tool,
                batch[0].what,
                log_tail(&target.child.log, 20)
            );
            // SAFETY: kill(2) on the child this test started.
            unsafe { libc::kill(target.child.pid as i32, libc::SIGKILL) };
            target.restarts += 1;
            target.child =
                mcp_child(server, &format!("bad-input-{}", target.restarts), |_| {}).await;
            reset(target.child.client.peer()).await;
        } else if accepted {
            reset(&client).await;
        }
    }
    let corpus_took = corpus_started.elapsed();

    // The cases that may go unanswered, all at once so their bounds overlap.
    let deep = deep_cases();
    let client = target.child.client.peer().clone();
    let deep_started = Instant::now();
    let outcomes = futures_util::future::join_all(deep.iter().map(|case| {
        let client = client.clone();
        async move {
            let started = Instant::now();
            let outcome = call_within(&client, &case.tool, case.args.clone(), HANG_BOUND).await;
            (outcome, started.elapsed())
        }
    }))
    .await;
    for (case, (outcome, took)) in deep.iter().zip(outcomes) {
        verdicts.record(case, &outcome, None, took);
    }
    let deep_took = deep_started.elapsed();
    drop(deep);
    let figures = format!("corpus {corpus_took:.1?}, deep and over-long cases {deep_took:.1?}");
    closing_checks(setup, verdicts, start_memory, &figures).await;
}

/// A huge string (10 MB) once in every tool, one at a time on one server, each beside
/// a probe: a `list` that must still be answered meanwhile (nothing may block
/// everyone). The server's memory must come back near where it started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_arguments_are_refused_without_stalling_other_calls() {
    let mut setup = setup("huge-input").await;
    let huge = "z".repeat(huge_len());
    let cases: Vec<Case> = corpus(&setup, &huge)
        .into_iter()
        .filter(|c| c.class == "huge")
        .collect();
    drop(huge);
    let start_memory = memory_kib(setup.target.child.pid).unwrap_or_default();
    eprintln!("{} huge arguments of {} bytes", cases.len(), huge_len());
    let server = &setup.server;
    let target = &mut setup.target;
    let mut verdicts = Verdicts::new();
    let started_all = Instant::now();
    let mut probe_latencies = Vec::new();
    let mut stalled = 0;
    for case in &cases {
        let client = target.child.client.peer().clone();
        let started = Instant::now();
        let ((outcome, took), (answered, probe_took)) = tokio::join!(
            async {
                let outcome = call_within(&client, &case.tool, case.args.clone(), BOUND).await;
                (outcome, started.elapsed())
            },
            async {
                // Once the huge request is on its way.
                tokio::time::sleep(Duration::from_millis(200)).await;
                let probe_started = Instant::now();
                let probe = call_within(&client, "list", json!({}), BOUND).await;
                (!matches!(probe, Outcome::Hung), probe_started.elapsed())
            }
        );
        probe_latencies.push(probe_took);
        if !answered {
            stalled += 1;
            eprintln!("  fail: a list stalled behind {} {}", case.tool, case.what);
        }
        verdicts.record(case, &outcome, None, took);
        if !alive(target.child.pid) || matches!(outcome, Outcome::Gone(_)) {
            target.restarts += 1;
            target.child =
                mcp_child(server, &format!("huge-input-{}", target.restarts), |_| {}).await;
        }
        if matches!(outcome, Outcome::Ok(_)) {
            reset(target.child.client.peer()).await;
        }
    }
    let probe_max = probe_latencies.iter().max().copied().unwrap_or_default();
    let probe_p50 = percentile(&mut probe_latencies, 50.0);
    let figures = format!(
        "huge arguments {:.1?}; a list beside each: p50 {probe_p50:.1?}, max {probe_max:.1?}, unanswered {stalled} of {}",
        started_all.elapsed(),
        cases.len()
    );
    closing_checks(setup, verdicts, start_memory, &figures).await;
    assert_eq!(stalled, 0, "calls stalled behind a huge argument");
}
