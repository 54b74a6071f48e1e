//! Budgets: a worker may spend so many tokens (as its transcript counts them: input,
//! output, cache reads and writes, reasoning) or so many dollars (as the CLI states
//! its cost, or the price table prices its tokens), and a team so much between its
//! workers; a budget with both limits is reached at the first. A cost nobody can tell
//! (no price for the model) never reaches a dollar limit, and the budget's words say
//! so. When one is reached a notification goes out once; with `interrupt`, a
//! turn worked on past it is interrupted (Esc), then and at every later look, until
//! the budget is raised. A budget set again starts over (a new reach is said again).
//! A worker's budget is a file in its state directory, a team's one under
//! `workers/teams/`.

use std::collections::HashMap;
use std::path::Path;

use cohort_backends::{Key, KeyCode};
use serde::{Deserialize, Serialize};

use crate::{
    error::WorkerError,
    events::{keep_worker_file, worker_dir},
    registry::WorkerRow,
    state::WorkerState,
    transcript::usage::Usage,
    Workers,
};

/// A worker's budget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Tokens it may spend (none: no limit in tokens).
    #[serde(default)]
    pub tokens: Option<u64>,
    /// US dollars it may spend (none: no limit in dollars).
    #[serde(default)]
    pub usd: Option<f64>,
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

/// A team's budget: what its workers may spend between them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TeamBudget {
    /// The team.
    pub team: String,
    /// The budget itself (its `interrupted_turn_ms` unused).
    pub budget: Budget,
    /// Per worker id, the turn (by when it began) last interrupted for it.
    #[serde(default)]
    pub interrupted: HashMap<String, i64>,
}

/// What a look at a team's budget found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TeamNews {
    /// The team.
    pub team: String,
    /// The budget was reached just now (the notification to make).
    pub reached: Option<String>,
    /// The workers whose turns were interrupted because the team's budget is spent.
    pub interrupted: Vec<String>,
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

/// Where team budgets are kept, as a pseudo worker id under `workers/`; the team's
/// name is hex-encoded into the file's name, so any name is a file name.
const TEAMS_DIR: &str = "teams";

fn team_file(team: &str) -> String {
    let hex: String = team.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.budget.json")
}

/// Team `team`'s budget, if it has one.
pub fn load_team(state_dir: &Path, team: &str) -> Option<TeamBudget> {
    let path = worker_dir(state_dir, TEAMS_DIR).join(team_file(team));
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Team `team`'s budget with `spent` against it, in words, if it has one.
pub fn team_budget_words(state_dir: &Path, team: &str, spent: &Usage) -> Option<String> {
    load_team(state_dir, team).map(|kept| budget_words(spent, &kept.budget))
}

/// Every team budget kept.
pub fn team_budgets(state_dir: &Path) -> Vec<TeamBudget> {
    let Ok(entries) = std::fs::read_dir(worker_dir(state_dir, TEAMS_DIR)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".budget.json"))
        .filter_map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).ok()?).ok())
        .collect()
}

fn store_team(state_dir: &Path, team: &str, budget: Option<&TeamBudget>) -> std::io::Result<()> {
    let text = match budget {
        Some(b) => Some(serde_json::to_vec(b).map_err(std::io::Error::other)?),
        None => None,
    };
    keep_worker_file(state_dir, TEAMS_DIR, &team_file(team), text.as_deref())
}

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

impl Budget {
    /// A budget of `tokens`, `usd` or both (neither: none), turns past it
    /// interrupted when `interrupt`.
    pub fn of(tokens: Option<u64>, usd: Option<f64>, interrupt: bool) -> Option<Budget> {
        (tokens.is_some() || usd.is_some()).then(|| Budget {
            tokens,
            usd,
            interrupt,
            ..Budget::default()
        })
    }

    /// Whether `spent` reached either limit. A cost not known reaches no dollar
    /// limit: part of a cost would read as all of it.
    fn reached_by(&self, spent: &Usage) -> bool {
        self.tokens.is_some_and(|t| spent.total() >= t)
            || self
                .usd
                .is_some_and(|d| spent.cost_usd.is_some_and(|c| c >= d))
    }

    /// Whether the budget is spent: reached by `spent`, or said reached before. A
    /// cost known once can be unknown later (a team's new member with no price, a
    /// model the table does not price, a price table refused): what was spent stays
    /// spent until the budget is set again.
    fn spent_by(&self, spent: &Usage) -> bool {
        self.reached_ms.is_some() || self.reached_by(spent)
    }
}

/// What was spent against a budget: `12.3k of 50.0k tokens`, `$1.20 of $5.00`, or
/// both; a cost not known is said with why.
fn spent_of(spent: &Usage, budget: &Budget) -> String {
    let mut parts = Vec::new();
    if let Some(tokens) = budget.tokens {
        parts.push(format!(
            "{} of {} tokens",
            tokens_text(spent.total()),
            tokens_text(tokens)
        ));
    }
    if let Some(usd) = budget.usd {
        let limit = dollars(usd);
        parts.push(match spent.cost_usd {
            Some(cost) => format!("{} of {limit}", dollars(cost)),
            None if spent.is_empty() => format!("$0.00 of {limit}"),
            None => format!("cost not known of {limit} ({})", why_no_cost(spent)),
        });
    }
    parts.join(", ")
}

/// The workers of `team` among `rows`.
fn members<'a>(rows: &'a [WorkerRow], team: &str) -> Vec<&'a WorkerRow> {
    rows.iter()
        .filter(|r| r.team.as_deref() == Some(team))
        .collect()
}

/// Why `spent` has no cost: the price table was refused, or the models it has no
/// price for (the CLI stated none).
fn why_no_cost(spent: &Usage) -> String {
    if let Some(error) = crate::prices::standing().error {
        return format!("the price table was refused: {error}");
    }
    let table = crate::prices::current();
    let unpriced: Vec<&str> = spent
        .by_model
        .keys()
        .filter(|m| table.of(m).is_none())
        .map(|m| {
            if m.is_empty() {
                "a model the CLI did not name"
            } else {
                m.as_str()
            }
        })
        .collect();
    match unpriced.as_slice() {
        [] => "the CLI states none and the price table prices none of its models: add them to prices.toml".into(),
        models => format!(
            "the CLI states none and the price table has no price for {}: add one to prices.toml",
            models.join(", ")
        ),
    }
}

/// An amount of US dollars: to a hundredth of a cent, with no zeros past the cents
/// (`$5.00`, `$4.996`, `$0.005`), so a limit reads as it was given.
fn dollars(usd: f64) -> String {
    let text = format!("{usd:.4}");
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let fraction = fraction.trim_end_matches('0');
    format!("${whole}.{fraction:0<2}")
}

/// A budget and what was spent against it, in words.
fn budget_words(spent: &Usage, budget: &Budget) -> String {
    format!(
        "{}{}{}",
        spent_of(spent, budget),
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
    )
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
    /// Gives `row` `budget` (none: removes it). A budget already spent is reported
    /// at the next look.
    pub async fn set_budget(
        &self,
        row: &WorkerRow,
        budget: Option<Budget>,
    ) -> Result<(), WorkerError> {
        self.keep_budget(row, budget.as_ref())
    }

    /// Gives team `team` `budget` for its workers between them (none: removes it).
    pub fn set_team_budget(&self, team: &str, budget: Option<Budget>) -> Result<(), WorkerError> {
        let budget = budget.map(|budget| TeamBudget {
            team: team.to_string(),
            budget,
            interrupted: HashMap::new(),
        });
        self.keep_team_budget(team, budget.as_ref())
    }

    fn keep_team_budget(&self, team: &str, budget: Option<&TeamBudget>) -> Result<(), WorkerError> {
        store_team(&self.hub.state_dir, team, budget).map_err(|e| {
            WorkerError::Invalid(format!("team {team}'s budget could not be kept: {e}"))
        })
    }

    /// What the workers of `team` among `rows` spent between them.
    async fn team_spent(&self, team: &str, rows: &[WorkerRow]) -> Usage {
        let mut spent = Usage::default();
        for row in members(rows, team) {
            if let Some(usage) = self.usage_of(row).await {
                spent.add(&usage);
            }
        }
        spent
    }

    /// Team `team`'s budget and what its workers among `rows` spent, in words.
    pub async fn team_budget_line(&self, team: &str, rows: &[WorkerRow]) -> Option<String> {
        let kept = load_team(&self.hub.state_dir, team)?;
        let spent = self.team_spent(team, rows).await;
        Some(budget_words(&spent, &kept.budget))
    }

    /// Team `team`'s budget with `spent` against it, in words, if it has one.
    pub fn team_budget_of(&self, team: &str, spent: &Usage) -> Option<String> {
        team_budget_words(&self.hub.state_dir, team, spent)
    }

    /// Looks at every team budget against what the team's workers spent: a reach
    /// not said yet (record it with [`Workers::team_budget_said`], then say it); with `interrupt`,
    /// the turns its workers work on past it are interrupted, once each.
    pub async fn check_team_budgets(&self) -> Vec<TeamNews> {
        let mut all = Vec::new();
        let budgets = team_budgets(&self.hub.state_dir);
        if budgets.is_empty() {
            return all;
        }
        let rows = match self.worker_rows().await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(target: "cohort::workers", "team budgets not looked at: {e}");
                return all;
            }
        };
        for mut kept in budgets {
            let spent = self.team_spent(&kept.team, &rows).await;
            if !kept.budget.spent_by(&spent) {
                continue;
            }
            let of = spent_of(&spent, &kept.budget);
            let mut news = TeamNews {
                team: kept.team.clone(),
                reached: None,
                interrupted: Vec::new(),
            };
            if kept.budget.reached_ms.is_none() {
                news.reached = Some(format!(
                    "team {} reached its budget: {of}{}",
                    kept.team,
                    if kept.budget.interrupt {
                        "; its workers' turns past it are interrupted (raise it with budget_workers)"
                    } else {
                        ""
                    }
                ));
            }
            if kept.budget.interrupt {
                let team = kept.team.clone();
                for row in members(&rows, &team) {
                    let last = kept.interrupted.get(&row.id).copied();
                    match self.interrupt_for_budget(row, last).await {
                        Ok(Some(turn)) => {
                            kept.interrupted.insert(row.id.clone(), turn);
                            let note =
                                format!("budget: a turn was interrupted at team {team}'s {of}");
                            let _ = self.annotate_worker(row, &note, Some("budget")).await;
                            news.interrupted.push(row.name.clone());
                        }
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(target: "cohort::workers", worker = %row.name, "not interrupted for its team's budget: {e}")
                        }
                    }
                }
                if !news.interrupted.is_empty() {
                    if let Err(e) = self.keep_team_budget(&team, Some(&kept)) {
                        tracing::warn!(target: "cohort::workers", "{e}");
                    }
                }
            }
            if news.reached.is_some() || !news.interrupted.is_empty() {
                all.push(news);
            }
        }
        all
    }

    /// Records that team `team`'s budget's reach is said (`said`), so it is said
    /// once, or takes that back when saying it failed (`!said`). Recorded before it
    /// is said: whoever sees the notification sees the budget reached.
    pub fn team_budget_said(&self, team: &str, said: bool) {
        if let Some(mut kept) = load_team(&self.hub.state_dir, team) {
            kept.budget.reached_ms = said.then(crate::events::now_ms);
            if let Err(e) = self.keep_team_budget(team, Some(&kept)) {
                tracing::warn!(target: "cohort::workers", "{e}");
            }
        }
    }

    fn keep_budget(&self, row: &WorkerRow, budget: Option<&Budget>) -> Result<(), WorkerError> {
        store(&self.hub.state_dir, &row.id, budget).map_err(|e| {
            WorkerError::Invalid(format!("{}'s budget could not be kept: {e}", row.name))
        })
    }

    /// The worker's budget and what it spent, in words (`12.3k of 50.0k tokens`).
    pub async fn budget_line(&self, row: &WorkerRow) -> Option<String> {
        let budget = load(&self.hub.state_dir, &row.id)?;
        let spent = self.usage_of(row).await.unwrap_or_default();
        Some(budget_words(&spent, &budget))
    }

    /// Looks at the worker's spending against its budget: whether it is reached
    /// and not said yet (record it with [`Workers::budget_said`], then say it); with `interrupt`,
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
        let spent = self.usage_of(row).await.unwrap_or_default();
        if !budget.spent_by(&spent) {
            return news;
        }
        let of = spent_of(&spent, &budget);
        if budget.reached_ms.is_none() {
            news.reached = Some(format!(
                "{} reached its budget: {of}{}",
                row.name,
                if budget.interrupt {
                    "; its turns past it are interrupted (raise it with budget_workers)"
                } else {
                    ""
                }
            ));
        }
        if budget.interrupt {
            match self
                .interrupt_for_budget(row, budget.interrupted_turn_ms)
                .await
            {
                Ok(Some(turn)) => {
                    budget.interrupted_turn_ms = Some(turn);
                    if let Err(e) = self.keep_budget(row, Some(&budget)) {
                        tracing::warn!(target: "cohort::workers", "{e}");
                    }
                    news.interrupted = true;
                    let note = format!("budget: a turn was interrupted at {of}");
                    let _ = self.annotate_worker(row, &note, Some("budget")).await;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(target: "cohort::workers", worker = %row.name, "not interrupted for its budget: {e}")
                }
            }
        }
        news
    }

    /// Records that the budget's reach is said (`said`), so it is said once, or
    /// takes that back when saying it failed (`!said`). Recorded before it is said:
    /// whoever sees the notification sees the budget reached.
    pub fn budget_said(&self, row: &WorkerRow, said: bool) {
        if let Some(mut budget) = load(&self.hub.state_dir, &row.id) {
            budget.reached_ms = said.then(crate::events::now_ms);
            if let Err(e) = self.keep_budget(row, Some(&budget)) {
                tracing::warn!(target: "cohort::workers", "{e}");
            }
        }
    }

    /// Interrupts the turn `row` works on, unless it is the turn `last`
    /// interrupted (by when it began); the turn interrupted, when one was.
    async fn interrupt_for_budget(
        &self,
        row: &WorkerRow,
        last: Option<i64>,
    ) -> Result<Option<i64>, WorkerError> {
        let seen = self.observe(row, false).await?;
        let turn_ms = seen.turn_started_ms.or(row.last_prompt_ms);
        if seen.assessment.state != WorkerState::Busy || turn_ms.is_some_and(|t| last == Some(t)) {
            return Ok(None);
        }
        let Some(pane) = seen.pane.clone() else {
            return Ok(None);
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
            return Ok(None);
        }
        turn.keys(&[Key::plain(KeyCode::Escape)]).await?;
        Ok(Some(turn_ms.unwrap_or_else(crate::events::now_ms)))
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
            tokens: Some(5_000),
            usd: Some(2.5),
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

    #[test]
    fn a_budget_kept_before_dollar_limits_reads_as_tokens_only() {
        let old: Budget = serde_json::from_str(r#"{"tokens": 5000, "interrupt": true}"#).unwrap();
        assert_eq!(old, Budget::of(Some(5000), None, true).unwrap());
        assert_eq!(Budget::of(None, None, true), None);
    }

    fn spent(tokens: u64, cost: Option<f64>) -> Usage {
        Usage {
            input: tokens,
            cost_usd: cost,
            calls: 1,
            model: Some("claude-opus-4-8".into()),
            ..Usage::default()
        }
    }

    #[test]
    fn the_first_limit_reached_counts_and_an_unknown_cost_reaches_none() {
        let both = Budget::of(Some(1000), Some(2.0), false).unwrap();
        assert!(!both.reached_by(&spent(999, Some(1.99))));
        assert!(both.reached_by(&spent(1000, Some(0.5))));
        assert!(both.reached_by(&spent(10, Some(2.0))));
        let mut in_dollars = Budget::of(None, Some(2.0), false).unwrap();
        assert!(!in_dollars.reached_by(&spent(10_000_000, None)));
        assert!(in_dollars.reached_by(&spent(0, Some(2.5))));
        assert!(!in_dollars.reached_by(&Usage::default()));
        // Said reached once, it stays spent when the cost is no longer known.
        in_dollars.reached_ms = Some(1);
        assert!(in_dollars.spent_by(&spent(10, None)));
    }

    #[test]
    fn budgets_say_each_limit_and_why_a_cost_is_not_known() {
        let both = Budget::of(Some(50_000), Some(5.0), true).unwrap();
        assert_eq!(
            budget_words(&spent(12_345, Some(1.2)), &both),
            "12.3k of 50.0k tokens, $1.20 of $5.00; turns past it are interrupted"
        );
        let in_dollars = Budget::of(None, Some(5.0), false).unwrap();
        assert_eq!(
            budget_words(&Usage::default(), &in_dollars),
            "$0.00 of $5.00"
        );
        let small = Budget::of(None, Some(0.005), false).unwrap();
        assert_eq!(
            budget_words(&spent(9, Some(0.0123)), &small),
            "$0.0123 of $0.005"
        );
        let near = Budget::of(None, Some(5.0), false).unwrap();
        assert_eq!(
            budget_words(&spent(9, Some(4.996)), &near),
            "$4.996 of $5.00"
        );
        assert_eq!(dollars(12345.6), "$12345.60");
        let mut unpriced = spent(100, None);
        unpriced
            .by_model
            .insert("claude-opus-4-8".into(), Default::default());
        unpriced.by_model.insert("gpt-5".into(), Default::default());
        let unknown = budget_words(&unpriced, &in_dollars);
        assert!(
            unknown.starts_with("cost not known of $5.00")
                && unknown.contains("no price for claude-opus-4-8, gpt-5")
                && unknown.contains("prices.toml"),
            "{unknown}"
        );
    }
}
