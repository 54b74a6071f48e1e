//! Approvals answered from anywhere: what each waiting worker asks to run, and an
//! answer given by the keys its CLI's dialog takes, checked on the screen and kept
//! as a note on the worker with who gave it.
//!
//! Only an approval dialog is answered. A question, a sign-in page, a trust or
//! hook-review dialog is refused with what it is: its answer is not "allow" or
//! "deny". Nothing is pressed unless the dialog is on the screen at that moment.

use std::time::Duration;

use cohort_backends::{Key, KeyCode};

use crate::{
    agent::AgentKind,
    error::WorkerError,
    observe::Observation,
    registry::WorkerRow,
    screen::{Dialog, ScreenClass},
    state::WorkerState,
    Workers,
};

/// An answer to a permission request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run it this once.
    Allow,
    /// Run it, and do not ask again for the like (the CLI's own "always").
    AllowAlways,
    /// Do not run it.
    Deny,
}

impl Decision {
    /// The decision named `name`.
    pub fn parse(name: &str) -> Result<Decision, String> {
        match name {
            "allow" | "yes" => Ok(Decision::Allow),
            "allow_always" | "always" => Ok(Decision::AllowAlways),
            "deny" | "no" => Ok(Decision::Deny),
            other => Err(format!(
                "unknown decision {:?}: use allow, allow_always or deny",
                other.chars().take(40).collect::<String>()
            )),
        }
    }

    /// The name used in results and notes.
    pub fn name(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::AllowAlways => "allow_always",
            Decision::Deny => "deny",
        }
    }

    /// The keys that give this answer in `kind`'s approval dialog, chosen by the
    /// labels the dialog shows (`rows`): a choice is pressed only when the dialog
    /// offers it, never by its place alone.
    fn keys(self, kind: AgentKind, rows: &[String]) -> Result<Vec<Key>, String> {
        let char_key = |c: char| Key::plain(KeyCode::Char(c));
        let labels: Vec<String> = rows.iter().map(|r| r.to_lowercase()).collect();
        let offers = |needle: &str| labels.iter().any(|l| l.contains(needle));
        let always = |l: &str| l.contains("don't ask again") || l.contains("always");
        match (kind, self) {
            (AgentKind::Custom, _) => Err(
                "cohort does not know the keys of a custom program's dialogs: answer it with the key tool".into(),
            ),
            (AgentKind::Aider, Decision::Deny) => Ok(vec![char_key('n'), Key::ENTER]),
            (_, Decision::Deny) => Ok(vec![Key::plain(KeyCode::Escape)]),
            (AgentKind::Codex, Decision::Allow) if offers("(y)") => Ok(vec![char_key('y')]),
            (AgentKind::Codex, Decision::AllowAlways) if offers("(p)") => {
                Ok(vec![char_key('p')])
            }
            (AgentKind::Aider, Decision::Allow) if offers("(y)es") => {
                Ok(vec![char_key('y'), Key::ENTER])
            }
            (AgentKind::Aider, Decision::AllowAlways) if offers("(a)ll") => {
                Ok(vec![char_key('a'), Key::ENTER])
            }
            (AgentKind::Claude | AgentKind::Gemini, _) => {
                // Numbered choices: `1. Yes`, `2. Yes, and don't ask again…`.
                let wanted = labels.iter().find_map(|l| {
                    let t = l.trim().trim_start_matches(['│', '❯', '>', '●', '○']).trim_start();
                    let digits = t.chars().take_while(char::is_ascii_digit).count();
                    let label = t.get(digits..)?.strip_prefix(". ")?;
                    let yes = label.starts_with("yes") || label.starts_with("allow");
                    let fits = match self {
                        Decision::Allow => yes && !always(label),
                        _ => yes && always(label),
                    };
                    (digits == 1 && fits).then(|| t.chars().next())?
                });
                wanted
                    .map(|d| vec![char_key(d)])
                    .ok_or_else(|| format!("its dialog offers no choice to {}", self.name()))
            }
            _ => Err(format!("its dialog offers no choice to {}", self.name())),
        }
    }
}

/// A permission request a worker waits on.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The worker.
    pub name: String,
    /// The tool and its input, as its hook reported them.
    pub request: Option<String>,
    /// The dialog's question, as drawn.
    pub question: Option<String>,
    /// The screen's last rows (the command or change shown with the question).
    pub shows: String,
    /// Since when it waits (Unix ms).
    pub since_ms: i64,
}

/// What answering one worker did.
#[derive(Clone, Debug)]
pub struct Answered {
    /// The worker.
    pub name: String,
    /// The request answered, as reported or drawn.
    pub request: Option<String>,
    /// The dialog went away after the keys.
    pub answered: bool,
    /// What happened, in words.
    pub detail: String,
}

/// What an approval call did.
#[derive(Clone, Debug)]
pub struct Approvals {
    /// The answers given, one per worker named (none when only listing).
    pub answered: Vec<Answered>,
    /// The requests still waiting.
    pub pending: Vec<Pending>,
}

/// How long an answered dialog may take to go.
const GONE_WITHIN: Duration = Duration::from_secs(3);

fn approval_on_screen(o: &Observation) -> Option<String> {
    match o.screen.as_ref().map(|s| s.class()) {
        Some(ScreenClass::Waiting(Dialog::Approval(q))) => Some(q),
        _ => None,
    }
}

impl Workers {
    /// The permission requests `rows` wait on.
    pub async fn pending_approvals(&self, rows: &[WorkerRow]) -> Result<Vec<Pending>, WorkerError> {
        let mut out = Vec::new();
        for row in rows {
            let seen = self.observe(row, true).await?;
            if seen.assessment.state != WorkerState::NeedsApproval {
                continue;
            }
            let question = approval_on_screen(&seen);
            let request = seen.hook.permission_request.clone();
            if question.is_none() && request.is_none() {
                // A question, a sign-in page, a trust dialog: not a permission.
                continue;
            }
            out.push(Pending {
                name: row.name.clone(),
                request,
                question,
                shows: match &seen.pane {
                    Some(p) => self.screen_tail(&p.id, 8).await,
                    None => String::new(),
                },
                since_ms: seen.assessment.since_ms,
            });
        }
        Ok(out)
    }

    /// Answers the request each of `rows` waits on with `decision`, each on its
    /// own: one that waits on nothing is answered `answered: false` with the reason
    /// and does not hide the answers given to the others. With `since` (one worker
    /// named), only the request that has waited since then is answered: one drawn
    /// after the caller looked is left alone. Refused when nothing was pressed for
    /// any of them, with the worker's own error when there was one.
    pub async fn answer_approvals(
        &self,
        rows: &[WorkerRow],
        decision: Decision,
        by: &str,
        since: Option<i64>,
    ) -> Result<Vec<Answered>, WorkerError> {
        if since.is_some() && rows.len() != 1 {
            return Err(WorkerError::Invalid(
                "since_ms names one request: name exactly one worker with it".into(),
            ));
        }
        let mut answered = Vec::new();
        let mut refused = Vec::new();
        for row in rows {
            answered.push(match self.answer_approval(row, decision, by, since).await {
                Ok(a) => a,
                Err(err) => {
                    let detail = err.to_string();
                    refused.push(err);
                    Answered {
                        name: row.name.clone(),
                        request: None,
                        answered: false,
                        detail,
                    }
                }
            });
        }
        if !rows.is_empty() && refused.len() == rows.len() {
            if refused.len() == 1 {
                return Err(refused.remove(0));
            }
            let said: Vec<String> = refused.iter().map(ToString::to_string).collect();
            return Err(WorkerError::Invalid(format!(
                "nothing was pressed: {}",
                said.join("; ")
            )));
        }
        Ok(answered)
    }

    /// What a front end's approval call does: answers the requests of `rows` with
    /// `decision` when one is given ([`Workers::answer_approvals`]), then lists what
    /// still waits. Once keys were pressed the answers are the reply: a listing that
    /// fails after them is logged and left empty, never returned as a failed answer
    /// (a caller retrying would answer the next request).
    pub async fn approve(
        &self,
        rows: &[WorkerRow],
        decision: Option<Decision>,
        by: &str,
        since: Option<i64>,
    ) -> Result<Approvals, WorkerError> {
        let answered = match decision {
            Some(decision) => self.answer_approvals(rows, decision, by, since).await?,
            None => Vec::new(),
        };
        let pending = match self.pending_approvals(rows).await {
            Ok(pending) => pending,
            Err(e) if !answered.is_empty() => {
                tracing::warn!(target: "cohort::workers", "the requests still waiting were not listed: {e}");
                Vec::new()
            }
            Err(e) => return Err(e),
        };
        Ok(Approvals { answered, pending })
    }

    /// The permission request `row` waits on, from what is known of it without
    /// reading its screen again: the tool and input its hook reported, else the
    /// dialog last seen, and since when it waits. For a page that shows it.
    pub async fn pending_request(&self, row: &WorkerRow) -> Option<(String, i64)> {
        let seen = self.observe(row, false).await.ok()?;
        if seen.assessment.state != WorkerState::NeedsApproval {
            return None;
        }
        let request = seen
            .hook
            .permission_request
            .clone()
            .or_else(|| approval_on_screen(&seen))
            .or_else(|| {
                // A custom program's dialog is answered by keys, whatever it asks.
                (row.agent == AgentKind::Custom)
                    .then(|| seen.screen.as_ref().and_then(|s| s.dialog.clone()))
                    .flatten()
                    .map(|d| d.describe())
            })?;
        Some((request, seen.assessment.since_ms))
    }

    /// Answers the permission request `row` waits on with `decision`, by the keys
    /// its CLI's dialog takes, once the dialog is on the screen; checks that the
    /// dialog went, and notes the decision and `by` on the worker. With `expected`,
    /// only the request that has waited since then is answered (another one drawn
    /// meanwhile is not). The screen is read again while the pane's input is held,
    /// so two answers (a manager's, a policy's time) never both press into one
    /// dialog.
    pub async fn answer_approval(
        &self,
        row: &WorkerRow,
        decision: Decision,
        by: &str,
        expected: Option<i64>,
    ) -> Result<Answered, WorkerError> {
        let refuse = |why: String| WorkerError::Invalid(format!("{}: {why}", row.name));
        let seen = self.observe(row, true).await?;
        if seen.assessment.state != WorkerState::NeedsApproval {
            return Err(refuse(format!(
                "it waits on no approval: it is {} ({})",
                seen.assessment.state, seen.assessment.reason
            )));
        }
        if let Some(since) = expected.filter(|since| *since != seen.assessment.since_ms) {
            return Err(refuse(format!(
                "the request it waits on now (since {}) is not the one listed (since {since}): nothing was pressed; list again",
                seen.assessment.since_ms
            )));
        }
        if row.agent == AgentKind::Custom {
            return Err(refuse(
                "cohort does not know the keys of a custom program's dialogs: answer it with the key tool".into(),
            ));
        }
        // A hook may report the request a moment before the dialog is drawn.
        let seen = self
            .await_composer(row, |o| approval_on_screen(o).is_some(), GONE_WITHIN)
            .await?;
        let Some(question) = approval_on_screen(&seen) else {
            let shows = match seen.screen.as_ref().and_then(|s| s.dialog.clone()) {
                Some(d) => d.describe(),
                None => "no dialog".into(),
            };
            return Err(refuse(format!(
                "its screen shows {shows}, not an approval dialog: nothing was pressed"
            )));
        };
        let request = seen
            .hook
            .permission_request
            .clone()
            .or(Some(question.clone()));
        let Some(pane) = seen.pane.clone() else {
            return Err(refuse("its pane is gone".into()));
        };
        let mut turn = self
            .terminal
            .input(&pane.id, &self.caller(), cohort_terminal::Purpose::Prompt)
            .await?;
        // Held: what the screen shows now is what the keys go into.
        let now = self.observe(row, true).await?;
        if approval_on_screen(&now).as_deref() != Some(question.as_str())
            || expected.is_some_and(|since| now.assessment.since_ms != since)
        {
            return Err(refuse(
                "its dialog changed before the keys could be pressed (someone answered it): nothing was pressed".into(),
            ));
        }
        let rows: Vec<String> = self.terminal.screen(&pane.id).await?.rows;
        let keys = decision.keys(row.agent, &rows).map_err(refuse)?;
        turn.keys(&keys).await?;
        drop(turn);
        let after = self
            .await_composer(row, |o| approval_on_screen(o).is_none(), GONE_WITHIN)
            .await?;
        let answered = approval_on_screen(&after).is_none();
        let what = request.as_deref().unwrap_or("its request");
        let detail = if answered {
            format!("{} {what}", decision.name())
        } else {
            format!(
                "pressed {} for {what}, but the dialog is still on its screen: read its screen",
                decision.name()
            )
        };
        let note = format!("approval: {detail} (by {by})");
        let _ = self
            .annotate_worker(row, &crate::inspect::note_text(&note), Some(by))
            .await;
        tracing::info!(target: "cohort::workers", worker = %row.name, by, answered, "{note}");
        self.hub.poke();
        Ok(Answered {
            name: row.name.clone(),
            request,
            answered,
            detail,
        })
    }

    /// Denies the request `row` waits on when its policy's `deny_after_s` has
    /// passed with no answer; what was done, in words.
    pub async fn deny_overdue(&self, row: &WorkerRow) -> Option<String> {
        let after = crate::policy::load(&self.hub.state_dir, &row.id)?.deny_after_s?;
        let seen = self.observe(row, false).await.ok()?;
        let waited = crate::events::now_ms() - seen.assessment.since_ms;
        if seen.assessment.state != WorkerState::NeedsApproval
            || approval_on_screen(&seen).is_none()
            || waited < i64::try_from(after.saturating_mul(1000)).unwrap_or(i64::MAX)
        {
            return None;
        }
        let since = seen.assessment.since_ms;
        // One try per request: a dialog that stays after the keys is not pressed
        // again every few seconds.
        {
            let mut tried = self.hub.denials.lock().unwrap_or_else(|e| e.into_inner());
            if tried.get(&row.id) == Some(&since) {
                return None;
            }
            tried.insert(row.id.clone(), since);
        }
        let by = format!("policy: no answer within {after} s");
        let answered = self
            .answer_approval(row, Decision::Deny, &by, Some(since))
            .await
            .ok()
            .filter(|a| a.answered)?;
        Some(format!(
            "{}'s request {} was denied: no answer within {after} s",
            row.name,
            answered.request.as_deref().unwrap_or("")
        ))
    }

    /// Gives `row` the approval `policy` its hook answers requests by (an empty one
    /// removes it), and notes it on the worker with who set it.
    pub async fn set_approval_policy(
        &self,
        row: &WorkerRow,
        policy: &crate::policy::ApprovalPolicy,
        by: &str,
    ) -> Result<(), WorkerError> {
        policy.validate().map_err(WorkerError::Invalid)?;
        // A remote worker's hook waits for an answer only where its host says the
        // worker has rules: said there first, so no rule is kept that it would miss.
        if let Some(host) = row.spec.host.as_deref() {
            let set = policy.has_rules();
            crate::remote::mark_policy(self.terminal.backend(), host, &row.id, set).await?;
        }
        crate::policy::store(&self.hub.state_dir, &row.id, policy).map_err(|e| {
            WorkerError::Invalid(format!(
                "{}'s approval policy could not be kept: {e}",
                row.name
            ))
        })?;
        let note = if policy.is_empty() {
            format!("approval policy removed (by {by})")
        } else {
            format!(
                "approval policy: allow [{}], deny [{}]{} (by {by})",
                policy.allow.join(", "),
                policy.deny.join(", "),
                policy
                    .deny_after_s
                    .map(|s| format!(", unanswered requests denied after {s} s"))
                    .unwrap_or_default()
            )
        };
        let _ = self
            .annotate_worker(row, &crate::inspect::note_text(&note), Some(by))
            .await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_pressed_by_the_labels_the_dialog_shows() {
        let rows = |text: &str| text.lines().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(Decision::parse("allow"), Ok(Decision::Allow));
        assert_eq!(Decision::parse("always"), Ok(Decision::AllowAlways));
        assert!(Decision::parse("maybe")
            .unwrap_err()
            .contains("allow_always"));
        let claude = rows(" Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and don't ask again for this command\n   3. No");
        let key = |c| vec![Key::plain(KeyCode::Char(c))];
        assert_eq!(
            Decision::Allow.keys(AgentKind::Claude, &claude),
            Ok(key('1'))
        );
        assert_eq!(
            Decision::AllowAlways.keys(AgentKind::Claude, &claude),
            Ok(key('2'))
        );
        // Two choices only: "always" is not offered, and `2` would deny.
        let short = rows(" Do you want to proceed?\n ❯ 1. Yes\n   2. No");
        assert!(Decision::AllowAlways
            .keys(AgentKind::Claude, &short)
            .is_err());
        let codex = rows("› 1. Yes, proceed (y)\n  2. Yes, and don't ask again for commands that start with `touch` (p)\n  3. No (esc)");
        assert_eq!(
            Decision::AllowAlways.keys(AgentKind::Codex, &codex),
            Ok(key('p'))
        );
        assert_eq!(
            Decision::Deny.keys(AgentKind::Codex, &codex),
            Ok(vec![Key::plain(KeyCode::Escape)])
        );
        assert!(Decision::Allow.keys(AgentKind::Custom, &claude).is_err());
    }
}
