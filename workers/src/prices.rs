//! The price table: what a model's tokens cost, for the CLIs that do not say what a
//! session cost (Codex never does; Claude Code only in some versions). The user
//! keeps it in `prices.toml` in their config directory (or the file
//! `COHORT_PRICES_FILE` names); cohort ships no prices, as they change without
//! notice. A worker's cost is priced from it only when every model the worker used
//! has a price: a part priced and the rest left out would read as a whole.
//!
//! ```toml
//! # US dollars per million tokens; the first entry whose model matches is used.
//! [[model]]
//! name = "claude-sonnet-4*"   # `*` stands for any run of characters
//! input = 3.0
//! output = 15.0
//! cache_read = 0.30           # default: input
//! cache_write = 3.75          # default: input
//! # reasoning = 15.0          # default: output
//! ```

use std::sync::Arc;

use serde::Deserialize;

use crate::transcript::usage::{Tokens, Usage};
use crate::user_file::{toml_line, Standing, Watched};

/// The environment variable that names the price table in place of the default.
pub const FILE_ENV: &str = "COHORT_PRICES_FILE";

/// The price table.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Prices by model, the first match wins.
    #[serde(default)]
    pub model: Vec<ModelPrice>,
}

/// One model's prices, in US dollars per million tokens.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// The model's name; `*` stands for any run of characters.
    pub name: String,
    /// Input not read from the cache.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Input read from the prompt cache (default: `input`).
    pub cache_read: Option<f64>,
    /// Input written to the prompt cache (default: `input`).
    pub cache_write: Option<f64>,
    /// Reasoning (default: `output`).
    pub reasoning: Option<f64>,
}

impl ModelPrice {
    /// What `tokens` cost at these prices.
    fn cost(&self, t: &Tokens) -> f64 {
        let per = |n: u64, price: f64| n as f64 * price / 1e6;
        per(t.input, self.input)
            + per(t.output, self.output)
            + per(t.cache_read, self.cache_read.unwrap_or(self.input))
            + per(t.cache_write, self.cache_write.unwrap_or(self.input))
            + per(t.reasoning, self.reasoning.unwrap_or(self.output))
    }
}

impl Prices {
    /// The prices of `model`: the first entry whose name matches.
    pub fn of(&self, model: &str) -> Option<&ModelPrice> {
        self.model.iter().find(|p| glob(&p.name, model))
    }

    /// What `usage` cost by this table, when every model it used has a price. A
    /// model that spent nothing, and a message the CLI made itself (`<synthetic>`,
    /// an API error), need none.
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        let spent: Vec<(&String, &Tokens)> = usage
            .by_model
            .iter()
            .filter(|(model, tokens)| !model.starts_with('<') && **tokens != Tokens::default())
            .collect();
        if spent.is_empty() {
            return None;
        }
        spent
            .into_iter()
            .map(|(model, tokens)| self.of(model).map(|p| p.cost(tokens)))
            .sum()
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any run of characters.
fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Reads a `prices.toml` text (`origin` names it in errors).
pub fn parse(text: &str, origin: &str) -> Result<Prices, String> {
    let prices: Prices = toml::from_str(text)
        .map_err(|e| format!("{origin}{}: {}", toml_line(text, &e), e.message()))?;
    for p in &prices.model {
        if p.name.trim().is_empty() {
            return Err(format!(
                "{origin}: a [[model]] has an empty name: give the model's name, `*` for any run of characters"
            ));
        }
        if p.name != p.name.trim() {
            return Err(format!(
                "{origin}: the model name {:?} starts or ends with spaces, which no model's name does: trim them",
                p.name
            ));
        }
        let all = [
            Some(p.input),
            Some(p.output),
            p.cache_read,
            p.cache_write,
            p.reasoning,
        ];
        if all.into_iter().flatten().any(|v| !v.is_finite() || v < 0.0) {
            return Err(format!(
                "{origin}: the prices of {:?} must be numbers of 0 or more (US dollars per million tokens)",
                p.name
            ));
        }
    }
    Ok(prices)
}

static PRICES: Watched<Prices> = Watched::new("prices.toml", FILE_ENV, parse, Prices::default);

/// The price table in use, read again when its file changed.
pub fn current() -> Arc<Prices> {
    PRICES.current()
}

/// Where the price table is looked for.
pub fn file() -> Option<std::path::PathBuf> {
    PRICES.path()
}

/// Whether the user's price table is in use, and why it was refused if it was.
pub fn standing() -> Standing {
    PRICES.standing()
}

/// `usage` with its cost from the price table when the CLI stated none.
pub fn priced(mut usage: Usage) -> Usage {
    if usage.cost_usd.is_none() {
        if let Some(cost) = current().cost(&usage) {
            usage.cost_usd = Some(cost);
            usage.priced = true;
        }
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_any_run_where_a_star_stands() {
        assert!(glob("claude-sonnet-4*", "claude-sonnet-4-5-20250929"));
        assert!(glob("gpt-5*codex", "gpt-5.1-codex"));
        assert!(glob("*", "anything"));
        assert!(glob("o3", "o3"));
        assert!(!glob("o3", "o3-mini"));
        assert!(!glob("claude-opus*", "claude-sonnet-4"));
        assert!(!glob("a*bb", "ab"));
    }

    #[test]
    fn a_cost_needs_a_price_for_every_model_used() {
        let prices = parse(
            "[[model]]\nname = \"big*\"\ninput = 3.0\noutput = 15.0\ncache_read = 0.3\n",
            "prices.toml",
        )
        .unwrap();
        let mut usage = Usage::default();
        usage.by_model.insert(
            "big-1".into(),
            Tokens {
                input: 1_000_000,
                output: 100_000,
                cache_read: 2_000_000,
                cache_write: 10_000,
                reasoning: 0,
            },
        );
        let cost = prices.cost(&usage).unwrap();
        // 3 + 1.5 + 0.6 + 0.03 (cache writes at the input price)
        assert!((cost - 5.13).abs() < 1e-9, "{cost}");
        // A model that spent nothing, or the CLI's own messages, need no price.
        usage.by_model.insert("small".into(), Tokens::default());
        usage.by_model.insert(
            "<synthetic>".into(),
            Tokens {
                input: 5,
                ..Tokens::default()
            },
        );
        assert!((prices.cost(&usage).unwrap() - 5.13).abs() < 1e-9);
        usage.by_model.insert(
            "small".into(),
            Tokens {
                output: 1,
                ..Tokens::default()
            },
        );
        assert_eq!(prices.cost(&usage), None);
        assert_eq!(prices.cost(&Usage::default()), None);
    }

    #[test]
    fn a_table_with_an_error_says_where_and_why() {
        let e = parse("[[model]]\nname = \"x\"\ninput = 1\n", "p.toml").unwrap_err();
        assert!(e.contains("p.toml") && e.contains("output"), "{e}");
        let e = parse(
            "[[model]]\nname = \"x\"\ninput = 1.0\noutput = 2.0\nprice = 3\n",
            "p.toml",
        )
        .unwrap_err();
        assert!(e.contains("line 5") && e.contains("price"), "{e}");
        let e = parse(
            "[[model]]\nname = \"x\"\ninput = -1.0\noutput = 2.0\n",
            "p.toml",
        )
        .unwrap_err();
        assert!(e.contains("0 or more"), "{e}");
        let e = parse(
            "[[model]]\nname = \" \"\ninput = 1.0\noutput = 2.0\n",
            "p.toml",
        )
        .unwrap_err();
        assert!(e.contains("empty name"), "{e}");
    }
}
