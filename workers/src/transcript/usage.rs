//! What a worker's agent spent: tokens in and out, cache reads and writes, reasoning,
//! and the cost when the CLI states it, read from the transcript as it grows.
//!
//! Claude Code records the API's `usage` on each `assistant` line; a message whose
//! content comes in several blocks is written as several lines with the same
//! `message.id`, each repeating the usage (the output count may still grow), so a
//! message counts once, with the largest count seen for each field. Some versions add
//! `costUSD` to the line. Codex records running totals in its `token_count` events
//! (`info.total_token_usage`); the last one is the session's.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

/// Tokens of one model, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Input not read from the cache.
    pub input: u64,
    /// Output (reasoning not included).
    pub output: u64,
    /// Input read from the prompt cache.
    pub cache_read: u64,
    /// Input written to the prompt cache.
    pub cache_write: u64,
    /// Reasoning, where the CLI counts it apart.
    pub reasoning: u64,
}

impl Tokens {
    fn add(&mut self, other: &Tokens) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.reasoning += other.reasoning;
    }
}

/// Tokens and cost, summed over a session.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Usage {
    /// Input tokens not read from the cache.
    pub input: u64,
    /// Output tokens (reasoning not included).
    pub output: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
    /// Reasoning tokens, where the CLI counts them apart (Codex).
    pub reasoning: u64,
    /// The cost in US dollars, when the CLI states it or the price table gives it
    /// ([`crate::prices`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The cost is the price table's, not the CLI's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub priced: bool,
    /// The model of the last message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model calls counted.
    pub calls: u64,
    /// The tokens by model (`""` when the CLI named none), for the price table.
    #[serde(skip)]
    pub by_model: BTreeMap<String, Tokens>,
}

impl Usage {
    /// Every token counted.
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write + self.reasoning
    }

    /// Tokens in: input, whether read from the cache, written to it or neither.
    pub fn tokens_in(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }

    /// Tokens out: output and reasoning.
    pub fn tokens_out(&self) -> u64 {
        self.output + self.reasoning
    }

    /// Whether nothing was counted yet.
    pub fn is_empty(&self) -> bool {
        self.calls == 0 && self.total() == 0
    }

    /// `1.2M tokens (…), $0.42`: for a person.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} tokens ({} in, {} out",
            compact(self.total()),
            compact(self.tokens_in()),
            compact(self.tokens_out())
        );
        if self.cache_read > 0 {
            s.push_str(&format!(", {} from cache", compact(self.cache_read)));
        }
        s.push(')');
        if let Some(cost) = self.cost_usd {
            s.push_str(&format!(", ${cost:.2}"));
            if self.priced {
                s.push_str(" by the price table");
            }
        }
        s
    }

    /// Adds another session's usage (a team's roll-up).
    pub fn add(&mut self, other: &Usage) {
        let was_empty = self.is_empty();
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.reasoning += other.reasoning;
        self.calls += other.calls;
        // A sum with a part whose cost is not known has no cost: part of a cost
        // would read as all of it.
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (Some(a), None) if other.is_empty() => Some(a),
            (None, Some(b)) if was_empty => Some(b),
            _ => None,
        };
        self.priced = self.cost_usd.is_some() && (self.priced || other.priced);
        if other.model.is_some() {
            self.model = other.model.clone();
        }
        for (model, tokens) in &other.by_model {
            self.by_model.entry(model.clone()).or_default().add(tokens);
        }
    }
}

/// `950`, `12.3k`, `4.1M`.
fn compact(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Claude Code's usage, message by message.
#[derive(Debug, Default)]
pub struct ClaudeMeter {
    /// Each message's largest counts, and its model.
    messages: HashMap<String, (Tokens, String)>,
    costs: HashMap<String, f64>,
    /// Lines without a message id, summed by model.
    unnamed: BTreeMap<String, Tokens>,
    unnamed_calls: u64,
    model: Option<String>,
}

impl ClaudeMeter {
    /// Takes one transcript line.
    pub fn line(&mut self, v: &Value) {
        if v.get("type").and_then(Value::as_str) != Some("assistant") {
            return;
        }
        let message = &v["message"];
        let Some(usage) = message.get("usage").filter(|u| u.is_object()) else {
            return;
        };
        let seen = Tokens {
            input: count(usage, "input_tokens"),
            output: count(usage, "output_tokens"),
            cache_read: count(usage, "cache_read_input_tokens"),
            cache_write: count(usage, "cache_creation_input_tokens"),
            reasoning: 0,
        };
        let model = message
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        // `<synthetic>` marks messages the CLI made itself (an API error).
        if !model.is_empty() && !model.starts_with('<') {
            self.model = Some(model.clone());
        }
        let cost = v.get("costUSD").and_then(Value::as_f64);
        let id = message.get("id").and_then(Value::as_str).map(|id| {
            match v.get("requestId").and_then(Value::as_str) {
                Some(request) => format!("{id}:{request}"),
                None => id.to_string(),
            }
        });
        match id {
            Some(id) => {
                let (kept, kept_model) = self.messages.entry(id.clone()).or_default();
                if kept_model.is_empty() {
                    *kept_model = model;
                }
                kept.input = kept.input.max(seen.input);
                kept.output = kept.output.max(seen.output);
                kept.cache_read = kept.cache_read.max(seen.cache_read);
                kept.cache_write = kept.cache_write.max(seen.cache_write);
                if let Some(cost) = cost {
                    let c = self.costs.entry(id).or_insert(0.0);
                    *c = c.max(cost);
                }
            }
            None => {
                self.unnamed.entry(model).or_default().add(&seen);
                self.unnamed_calls += 1;
                if let Some(cost) = cost {
                    *self.costs.entry(String::new()).or_insert(0.0) += cost;
                }
            }
        }
    }

    /// The session's usage so far.
    pub fn usage(&self) -> Usage {
        let mut by_model = self.unnamed.clone();
        for (tokens, model) in self.messages.values() {
            by_model.entry(model.clone()).or_default().add(tokens);
        }
        let mut sum = Tokens::default();
        by_model.values().for_each(|t| sum.add(t));
        Usage {
            input: sum.input,
            output: sum.output,
            cache_read: sum.cache_read,
            cache_write: sum.cache_write,
            reasoning: 0,
            cost_usd: (!self.costs.is_empty()).then(|| self.costs.values().sum()),
            priced: false,
            model: self.model.clone(),
            calls: self.messages.len() as u64 + self.unnamed_calls,
            by_model,
        }
    }
}

/// Codex's usage: its running totals.
#[derive(Debug, Default)]
pub struct CodexMeter {
    usage: Usage,
}

impl CodexMeter {
    /// Takes one rollout line.
    pub fn line(&mut self, v: &Value) {
        let payload = &v["payload"];
        match (
            v.get("type").and_then(Value::as_str),
            payload.get("type").and_then(Value::as_str),
        ) {
            (Some("turn_context"), _) => {
                if let Some(model) = payload.get("model").and_then(Value::as_str) {
                    self.usage.model = Some(model.to_string());
                }
            }
            (Some("event_msg"), Some("token_count")) => {
                let info = &payload["info"];
                let Some(total) = info.get("total_token_usage").filter(|t| t.is_object()) else {
                    return;
                };
                // Codex counts cached input inside the input; cohort apart.
                let cached = count(total, "cached_input_tokens");
                self.usage.input = count(total, "input_tokens").saturating_sub(cached);
                self.usage.cache_read = cached;
                // Its output counts the reasoning too (as OpenAI's API does); apart here.
                let reasoning = count(total, "reasoning_output_tokens");
                self.usage.output = count(total, "output_tokens").saturating_sub(reasoning);
                self.usage.reasoning = reasoning;
                self.usage.calls += 1;
            }
            _ => {}
        }
    }

    /// The session's usage so far: Codex keeps running totals, so all of it goes
    /// to the model of the last turn.
    pub fn usage(&self) -> Usage {
        let mut usage = self.usage.clone();
        if !usage.is_empty() {
            usage.by_model.insert(
                usage.model.clone().unwrap_or_default(),
                Tokens {
                    input: usage.input,
                    output: usage.output,
                    cache_read: usage.cache_read,
                    cache_write: usage.cache_write,
                    reasoning: usage.reasoning,
                },
            );
        }
        usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_roll_up_has_a_cost_only_when_every_part_with_tokens_has_one() {
        let spent = |cost: Option<f64>, priced: bool| Usage {
            input: 10,
            calls: 1,
            cost_usd: cost,
            priced,
            ..Usage::default()
        };
        let mut team = Usage::default();
        team.add(&spent(Some(1.0), false));
        team.add(&spent(Some(0.5), true));
        assert_eq!((team.cost_usd, team.priced), (Some(1.5), true));
        team.add(&Usage::default());
        assert_eq!(team.cost_usd, Some(1.5));
        team.add(&spent(None, false));
        assert_eq!((team.cost_usd, team.priced), (None, false));
        team.add(&spent(Some(2.0), false));
        assert_eq!(team.cost_usd, None);
        let mut late = Usage::default();
        late.add(&spent(None, false));
        late.add(&spent(Some(1.0), false));
        assert_eq!(late.cost_usd, None);
    }

    #[test]
    fn a_claude_message_in_several_lines_counts_once_with_its_largest_counts() {
        let mut m = ClaudeMeter::default();
        let line = |id: &str, out: u64, cost: Option<f64>| {
            let mut v = json!({"type": "assistant", "requestId": "req_1", "message": {
                "id": id, "model": "claude-sonnet-4-5", "content": [],
                "usage": {"input_tokens": 4, "cache_creation_input_tokens": 1200,
                          "cache_read_input_tokens": 15000, "output_tokens": out}}});
            if let Some(cost) = cost {
                v["costUSD"] = json!(cost);
            }
            v
        };
        m.line(&json!({"type": "user", "message": {"content": "hi"}}));
        m.line(&line("msg_a", 1, None));
        m.line(&line("msg_a", 310, None));
        m.line(&line("msg_b", 20, Some(0.25)));
        m.line(
            &json!({"type": "assistant", "message": {"model": "<synthetic>", "content": [],
            "usage": {"input_tokens": 0, "output_tokens": 0}}}),
        );
        let u = m.usage();
        assert_eq!(
            (u.input, u.output, u.cache_read, u.cache_write, u.calls),
            (8, 330, 30000, 2400, 3)
        );
        assert_eq!(u.cost_usd, Some(0.25));
        assert_eq!(u.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(u.total(), 8 + 330 + 30000 + 2400);
        assert_eq!(
            u.summary(),
            "32.7k tokens (32.4k in, 330 out, 30.0k from cache), $0.25"
        );
    }

    #[test]
    fn codex_totals_are_the_last_token_count() {
        let mut m = CodexMeter::default();
        m.line(&json!({"type": "turn_context", "payload": {"model": "gpt-5-codex"}}));
        m.line(&json!({"type": "event_msg", "payload": {"type": "token_count", "info": null}}));
        for (input, cached, out) in [(2512, 0, 33), (9000, 2304, 410)] {
            m.line(
                &json!({"type": "event_msg", "payload": {"type": "token_count", "info": {
                "total_token_usage": {"input_tokens": input, "cached_input_tokens": cached,
                    "output_tokens": out, "reasoning_output_tokens": 64,
                    "total_tokens": input + out},
                "last_token_usage": {"input_tokens": 1, "output_tokens": 1}}}}),
            );
        }
        let u = m.usage();
        assert_eq!(
            (u.input, u.cache_read, u.output, u.reasoning),
            (6696, 2304, 346, 64)
        );
        assert_eq!(u.model.as_deref(), Some("gpt-5-codex"));
        assert_eq!(u.cost_usd, None);
    }
}
