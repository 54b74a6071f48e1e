//! How the orchestration tools' results read as text (what a model, or a person at
//! `cohort playbook run`, reads): a playbook as one line per step and target with
//! the output of what failed, a wait as one line per target, agents' status as
//! their one-line summaries.

use super::orchestration::{AgentStatusResult, PlaybookResult, WaitForResult, WatchesResult};
use super::reply::Plain;

impl PlaybookResult {
    /// The report for people: one line per step and target, failures with their
    /// output, then the cascade and the reads.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let name = self
            .name
            .as_deref()
            .map(|n| format!("playbook {n:?}"))
            .unwrap_or_else(|| "playbook".into());
        let good = self.steps.iter().filter(|s| s.ran && s.ok).count();
        out.push_str(&format!(
            "{name}: {}: {good} of {} steps ok{}{}\n",
            if self.ok { "ok" } else { "FAILED" },
            self.steps.len(),
            self.stopped_at
                .as_ref()
                .map(|s| format!(", stopped at {s}"))
                .unwrap_or_default(),
            if self.cancelled { " (cancelled)" } else { "" }
        ));
        if !self.opened.is_empty() {
            out.push_str(&format!("  opened: {}\n", self.opened.join(", ")));
        }
        for step in &self.steps {
            let state = match (step.ran, step.ok) {
                (false, _) => "skipped".to_string(),
                (true, true) => format!("ok ({} ms)", step.elapsed_ms),
                (true, false) => format!("FAILED ({} ms)", step.elapsed_ms),
            };
            out.push_str(&format!("  {}: {state}\n", step.step));
            for r in &step.results {
                let session = if r.session.is_empty() || r.session == r.target {
                    String::new()
                } else {
                    format!(" ({})", r.session)
                };
                out.push_str(&format!(
                    "    {}{session}: {} — {}\n",
                    r.target,
                    if r.ok { "ok" } else { "failed" },
                    r.summary
                ));
                if let Some(output) = r
                    .output
                    .as_deref()
                    .filter(|o| !r.ok && !o.trim().is_empty())
                {
                    for line in output.lines() {
                        out.push_str(&format!("      | {line}\n"));
                    }
                }
            }
        }
        for d in &self.cascade {
            out.push_str(&format!(
                "  cascade {}: {}\n",
                d.target,
                d.error.as_deref().unwrap_or("sent")
            ));
        }
        if let Some(why) = &self.cascade_skipped {
            out.push_str(&format!("  cascade: {why}\n"));
        }
        for d in &self.reads {
            out.push_str(&format!("  read {}:\n", d.target));
            for line in d.text.as_deref().unwrap_or_default().lines() {
                out.push_str(&format!("      | {line}\n"));
            }
        }
        if let Some(e) = &self.error {
            out.push_str(&format!("  error: {e}\n"));
        }
        out
    }
}

impl Plain for PlaybookResult {
    fn plain(&self) -> String {
        self.text()
    }
}

impl Plain for WaitForResult {
    fn plain(&self) -> String {
        let mut out = format!(
            "{} after {} ms\n",
            if self.done { "done" } else { "not done" },
            self.elapsed_ms
        );
        for m in &self.results {
            out.push_str(&format!(
                "{} ({}): {}",
                m.target,
                if m.met { "met" } else { "not met" },
                m.what
            ));
            if let Some(line) = &m.line {
                out.push_str(&format!(" | {line}"));
            }
            out.push('\n');
        }
        out
    }
}

impl Plain for AgentStatusResult {
    fn plain(&self) -> String {
        if self.lines.is_empty() {
            return "no agents registered\n".into();
        }
        self.lines.iter().map(|l| format!("{l}\n")).collect()
    }
}

impl Plain for WatchesResult {}
