//! journalctl, `tail` of a log, `docker logs`, `kubectl logs`, dmesg: lines that repeat with
//! only numbers changed (timestamps, pids, counters) keep their first occurrence, which says
//! how many there are, and their last, the current state, where it stands; those between
//! are hidden and counted.

use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::Similar;
use std::collections::HashMap;

/// The line with every digit run replaced, so that timestamps and counters compare equal.
fn shape(line: &str) -> String {
    let mut s = String::with_capacity(line.len());
    let mut in_digits = false;
    for c in line.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                s.push('#');
            }
            in_digits = true;
        } else {
            in_digits = false;
            s.push(c);
        }
    }
    s
}

pub(crate) fn reduce<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(post);
    // Every occurrence of each shape, in order.
    let shapes: Vec<String> = src.lines.iter().map(|l| shape(l)).collect();
    let mut seen: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, key) in shapes.iter().enumerate() {
        if !src.line(i).is_empty() {
            seen.entry(key.as_str()).or_default().push(i);
        }
    }
    for (i, key) in shapes.iter().enumerate() {
        let line = src.line(i);
        let at = match seen.get(key.as_str()) {
            Some(at) if at.len() > 1 && !line.is_empty() => at,
            _ => {
                out.keep(src, i);
                continue;
            }
        };
        let (first, last) = (at[0], at[at.len() - 1]);
        // Named as the raw output counts it: the tail of a large output starts far in.
        let last_named = last + 1 + out.post.line_base;
        if i == first {
            // The first says how many there are; the last, the current state, is shown
            // where it stands.
            let between = at.len() - 2;
            let signal = at[1..at.len() - 1]
                .iter()
                .filter(|&&k| src.signal[k])
                .count();
            let signal = if signal > 0 {
                format!("; {signal} errors/warnings among them")
            } else {
                String::new()
            };
            let text = if between == 0 {
                format!("{line} [again at line {last_named}]")
            } else {
                format!(
                    "{line} [×{} with other numbers; {between} hidden between, the last at line {last_named}{signal}]",
                    at.len(),
                )
            };
            out.rewrite(src, text, i, 1);
        } else if i == last {
            out.keep(src, i);
        } else {
            out.hide_counted(src, i, Similar);
        }
    }
    Some(out)
}
