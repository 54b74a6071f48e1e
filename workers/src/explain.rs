//! Why a worker is in its state, in words: what `examine_worker` returns as
//! `explain` and `cohort workers explain NAME` prints.

use crate::agent::AgentKind;

/// Why a worker is in its state, line by line: the decision, the agent's newest
/// report, what the screen shows and which rule read it on which row, its output,
/// and the bounds the decision used.
pub fn explain(o: &crate::observe::Observation, bounds: &crate::state::Bounds) -> Vec<String> {
    let now = crate::events::now_ms();
    let ago = |at: i64| {
        let ms = (now - at).max(0);
        if ms < 120_000 {
            format!("{:.1} s ago", ms as f64 / 1000.0)
        } else {
            format!("{} min ago", ms / 60_000)
        }
    };
    let a = &o.assessment;
    let mut lines = vec![format!(
        "{}, decided by its {} {}: {}",
        a.state,
        a.signal.name(),
        ago(a.since_ms),
        a.reason
    )];
    match &o.last_report {
        Some(r) => {
            // The transcript's rule that read the entry, when it was this report's.
            let rule = o
                .transcript_rule
                .as_ref()
                .filter(|m| m.read(r))
                .map(|m| format!(" by transcript rule {} {:?}", m.rule, m.phrase))
                .unwrap_or_default();
            lines.push(format!(
                "newest report: {} (its {}{rule}), {}",
                report_words(&r.kind),
                r.source.name(),
                ago(r.at_ms)
            ))
        }
        None => lines.push("no report from the agent (no hook, no transcript entry)".into()),
    }
    match (&o.screen, o.screen_since_ms) {
        (Some(facts), since) => {
            let class = match facts.class() {
                crate::screen::ScreenClass::Busy => "working".to_string(),
                crate::screen::ScreenClass::Idle => "its prompt, nothing running".to_string(),
                crate::screen::ScreenClass::Waiting(d) => d.describe(),
                crate::screen::ScreenClass::Unknown => "nothing cohort recognises".to_string(),
            };
            let since = since
                .map(|s| format!(" since {}", ago(s)))
                .unwrap_or_default();
            let rule = match &facts.matched {
                Some(m) => format!(
                    "; screen rule \"{}\" matched row {}: {:?}{}",
                    m.rule,
                    m.row,
                    m.text,
                    m.phrase
                        .as_ref()
                        .map(|p| format!(" (by {p})"))
                        .unwrap_or_default()
                ),
                None => String::new(),
            };
            lines.push(format!("screen: {class}{since}{rule}"));
        }
        (None, _) => lines.push("screen: not read (no pane, or the agent is gone)".into()),
    }
    let kind = o.kind;
    let release = match &o.cli_version {
        Some(version) => {
            let ranges = crate::screen_rules::current().ranges_at(kind, Some(version));
            match ranges.is_empty() {
                true => format!("; {} {version}: no version range applies", kind.name()),
                false => format!(
                    "; {} {version}: with the words of versions {}",
                    kind.name(),
                    ranges
                        .iter()
                        .map(|r| format!("{r:?}"))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
            }
        }
        None if matches!(kind, AgentKind::Claude | AgentKind::Codex) => {
            "; the CLI's version is not known yet (its transcript gives it)".into()
        }
        None => String::new(),
    };
    lines.push(format!(
        "screen words: {}{release}",
        crate::screen_rules::describe(&crate::screen_rules::standing())
    ));
    if o.transcript.is_some() {
        lines.push(format!(
            "transcript rules: {}",
            crate::transcript_rules::describe(&crate::transcript_rules::standing())
        ));
    }
    if let Some(at) = o.last_output_ms {
        lines.push(format!("output: last printed {}", ago(at)));
    }
    lines.push(format!(
        "bounds: reports and a newer screen may disagree {} s; a working agent with no sign of life for {} s is stuck",
        bounds.disagree_ms / 1000,
        bounds.stall_ms / 1000
    ));
    lines
}

/// A report in words.
fn report_words(kind: &crate::state::ReportKind) -> String {
    use crate::state::{ReportKind, TurnOutcome};
    let with = |what: &str, tool: &Option<String>| match tool {
        Some(t) => format!("{what} ({t})"),
        None => what.to_string(),
    };
    match kind {
        ReportKind::SessionStart => "the session started".into(),
        ReportKind::TurnStart => "a turn started".into(),
        ReportKind::Activity { tool } => with("work", tool),
        ReportKind::Approval { tool } => with("a permission request", tool),
        ReportKind::Question => "a question".into(),
        ReportKind::TurnEnd { outcome, .. } => match outcome {
            TurnOutcome::Answered => "the turn ended".into(),
            TurnOutcome::ApiError(e) => format!("the turn ended with an API error ({e})"),
            TurnOutcome::Interrupted => "the turn was interrupted".into(),
        },
        ReportKind::SessionEnd { reason } => format!("the session ended ({reason})"),
    }
}
