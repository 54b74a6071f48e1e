//! Playbooks over the wire: the typed playbook becomes the document the engine
//! checks (the same checks as a playbook file or the MCP tool's argument), and the
//! engine's report becomes the reply.

use serde_json::{json, Map, Value};

use super::proto;
use cohort_orchestration::playbook::PlaybookReport;

/// The playbook document for `book`, with only the fields given.
pub fn document(book: proto::Playbook) -> Value {
    let mut top = Map::new();
    put(&mut top, "name", book.name.map(Value::from));
    top.insert(
        "steps".into(),
        Value::Array(book.steps.into_iter().map(step).collect()),
    );
    if let Some(cascade) = book.cascade {
        let mut c = Map::new();
        put(&mut c, "message", cascade.message.map(Value::from));
        c.insert("teams".into(), json!(cascade.teams));
        c.insert("agents".into(), json!(cascade.agents));
        top.insert("cascade".into(), Value::Object(c));
    }
    top.insert("stop_on_error".into(), Value::Bool(book.stop_on_error));
    Value::Object(top)
}

fn step(s: proto::PlaybookStep) -> Value {
    let mut out = Map::new();
    put(&mut out, "name", s.name.map(Value::from));
    if !s.targets.is_empty() {
        out.insert("targets".into(), json!(s.targets));
    }
    put(&mut out, "command", s.command.map(Value::from));
    put(&mut out, "message", s.message.map(Value::from));
    if !s.commands.is_empty() {
        let items = s
            .commands
            .into_iter()
            .map(|i| {
                let mut item = Map::new();
                item.insert("targets".into(), json!(i.targets));
                put(&mut item, "command", i.command.map(Value::from));
                put(&mut item, "message", i.message.map(Value::from));
                Value::Object(item)
            })
            .collect();
        out.insert("commands".into(), Value::Array(items));
    }
    put(&mut out, "parallel", s.parallel.map(Value::from));
    put(&mut out, "wait", s.wait.map(Value::from));
    put(&mut out, "until", s.until.map(Value::from));
    out.insert("regex".into(), Value::Bool(s.regex));
    put(&mut out, "timeout_ms", s.timeout_ms.map(Value::from));
    out.insert("continue_on_error".into(), Value::Bool(s.continue_on_error));
    Value::Object(out)
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        map.insert(key.into(), value);
    }
}

/// The reply for a playbook's report.
pub fn reply(r: PlaybookReport) -> proto::PlaybookReply {
    proto::PlaybookReply {
        summary: r.summary(),
        name: r.name,
        ok: r.ok,
        opened: r.opened,
        steps: r
            .steps
            .into_iter()
            .map(|s| proto::StepReport {
                step: s.label,
                ran: s.ran,
                ok: s.ok,
                elapsed_ms: s.elapsed_ms,
                results: s
                    .results
                    .into_iter()
                    .map(|t| proto::StepTarget {
                        target: t.target,
                        session: t.session,
                        ok: t.ok,
                        summary: t.summary,
                        verdict: t.verdict.as_ref().map(proto::Verdict::from),
                        output: t.output,
                    })
                    .collect(),
            })
            .collect(),
        stopped_at: r.stopped_at,
        cancelled: r.cancelled,
        cascade: r.cascade.into_iter().map(Into::into).collect(),
        reads: r.reads.into_iter().map(Into::into).collect(),
        error: r.error,
    }
}
