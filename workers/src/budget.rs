//! Token budgets: a worker may spend so many tokens (as its transcript counts them:
//! input, output, cache reads and writes, reasoning). When it reaches the budget a
//! notification goes out once; with `interrupt`, a turn it works on past the
//! budget is interrupted (Esc), then and at every later look, until the budget is
//! raised. The budget is a file in the worker's state directory.

use std::path::Path;

use cohort_backends::{Key, KeyCode};
use serde::{Deserialize, Serialize};

use crate::{
    error::WorkerError,
    events::{keep_worker_file, worker_dir},
    registry::WorkerRow,
    state::WorkerState,
    Workers,
};

/// A worker's budget.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// Tokens it may spend.
    pub tokens: u64,
    /// Interrupt its turns once the budget is spent.
    #[serde(default)]
    pub interrupt: bool,
    /// When it was reached (Unix ms), once it was said.
    #[serde(default)]
    pub reached_ms: Option<i64>,
    /// The turn (by when it began, Unix ms) last interrupted for it.
    #[serde(default)]
    pub interrupted_turn_ms: Option<i64>,
}

/// What a look at a worker's budget found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetNews {
    /// The budget was reached just now (the notification to make).
    pub reached: Option<String>,
    /// A turn was interrupted because the budget is spent.
    pub interrupted: bool,
}

/// The budget's file in a worker's state directory.
const BUDGET_FILE: &str = "budget.json";

/// Worker `id`'s budget, if it has one.
pub fn load(state_dir: &Path, id: &str) -> Option<Budget> {
    let text = std::fs::read_to_string(worker_dir(state_dir, id).join(BUDGET_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

fn store(state_dir: &Path, id: &str, budget: Option<&Budget>) -> std::io::Result<()> {
    let text = match budget {
        Some(b) => Some(serde_json::to_vec(b).map_err(std::io::Error::other)?),
        None => None,
    };
    keep_worker_file(state_dir, id, BUDGET_FILE, text.as_deref())
}

/// What was spent against a budget: `12.3k of 50.0k tokens`.
fn spent_of(spent: u64, budget: u64) -> String {
    format!("{} of {} tokens", tokens_text(spent), tokens_text(budget))
}

/// A token count in words: `1.2k`, `3.4M`.
pub fn tokens_text(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

impl Workers {
    /// Gives `row` a budget of `tokens` (none: removes it), interrupting its turns
    /// past it when `interrupt`. A budget already spent is reported at the next look.
    pub async fn set_budget(
        &self,
        row: &WorkerRow,
        tokens: Option<u64>,
        interrupt: bool,
    ) -> Result<(), WorkerError> {
        let budget = tokens.map(|tokens| Budget {
            tokens,
            interrupt,
            ..Budget::default()
        });
        self.keep_budget(row, budget.as_ref())
    }

    fn keep_budget(&self, row: &WorkerRow, budget: Option<&Budget>) -> Result<(), WorkerError> {
        store(&self.hub.state_dir, &row.id, budget).map_err(|e| {
            WorkerError::Invalid(format!("{}'s budget could not be kept: {e}", row.name))
        })
    }

    /// The worker's budget and what it spent, in words (`12.3k of 50.0k tokens`).
    pub async fn budget_line(&self, row: &WorkerRow) -> Option<String> {
        let budget = load(&self.hub.state_dir, &row.id)?;
        let spent = self.usage_of(row).await.map_or(0, |u| u.total());
        Some(format!(
            "{}{}{}",
            spent_of(spent, budget.tokens),
            if budget.reached_ms.is_some() {
                ", reached"
            } else {
                ""
            },
            if budget.interrupt {
                "; turns past it are interrupted"
            } else {
                ""
            }
        ))
    }

    /// Looks at the worker's spending against its budget: whether it is reached
    /// and not said yet (say it, then [`Workers::budget_said`]); with `interrupt`,
    /// interrupts the turn it works on past the budget, once per turn, and only
    /// when its screen shows it working while its input is held (Esc into a dialog
    /// would deny, into a composer would clear it).
    pub async fn check_budget(&self, row: &WorkerRow) -> BudgetNews {
        let mut news = BudgetNews {
            reached: None,
            interrupted: false,
        };
        let Some(mut budget) = load(&self.hub.state_dir, &row.id) else {
            return news;
        };
        let spent = self.usage_of(row).await.map_or(0, |u| u.total());
        if spent < budget.tokens {
            return news;
        }
        let of = spent_of(spent, budget.tokens);
        if budget.reached_ms.is_none() {
            news.reached = Some(format!(
                "{} reached its budget: {of}{}",
                row.name,
                if budget.interrupt {
                    "; its turns past it are interrupted (close it, or spawn it again with a higher budget)"
                } else {
                    ""
                }
            ));
        }
        if budget.interrupt {
            match self.interrupt_for_budget(row, &mut budget).await {
                Ok(true) => {
                    news.interrupted = true;
                    let note = format!("budget: a turn was interrupted at {of}");
                    let _ = self.annotate_worker(row, &note, Some("budget")).await;
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(target: "cohort::workers", worker = %row.name, "not interrupted for its budget: {e}")
                }
            }
        }
        news
    }

    /// Records that the budget's reach was said, so it is said once.
    pub fn budget_said(&self, row: &WorkerRow) {
        if let Some(mut budget) = load(&self.hub.state_dir, &row.id) {
            budget.reached_ms = Some(crate::events::now_ms());
            if let Err(e) = self.keep_budget(row, Some(&budget)) {
                tracing::warn!(target: "cohort::workers", "{e}");
            }
        }
    }

    async fn interrupt_for_budget(
        &self,
        row: &WorkerRow,
        budget: &mut Budget,
    ) -> Result<bool, WorkerError> {
        let seen = self.observe(row, false).await?;
        let turn_ms = seen.turn_started_ms.or(row.last_prompt_ms);
        if seen.assessment.state != WorkerState::Busy
            || turn_ms.is_some_and(|t| budget.interrupted_turn_ms == Some(t))
        {
            return Ok(false);
        }
        let Some(pane) = seen.pane.clone() else {
            return Ok(false);
        };
        let mut turn = self
            .terminal
            .input(&pane.id, &self.caller(), cohort_terminal::Purpose::Prompt)
            .await?;
        let now = self.observe(row, true).await?;
        let working = now
            .screen
            .as_ref()
            .is_some_and(|s| s.class() == crate::screen::ScreenClass::Busy);
        if !working {
            return Ok(false);
        }
        turn.keys(&[Key::plain(KeyCode::Escape)]).await?;
        budget.interrupted_turn_ms = Some(turn_ms.unwrap_or_else(crate::events::now_ms));
        self.keep_budget(row, Some(budget))?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_kept_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path(), "w1"), None);
        let b = Budget {
            tokens: 5_000,
            interrupt: true,
            ..Budget::default()
        };
        store(dir.path(), "w1", Some(&b)).unwrap();
        assert_eq!(load(dir.path(), "w1"), Some(b));
        store(dir.path(), "w1", None).unwrap();
        assert_eq!(load(dir.path(), "w1"), None);
        assert_eq!(tokens_text(12_345), "12.3k");
        assert_eq!(tokens_text(7), "7");
    }
}
