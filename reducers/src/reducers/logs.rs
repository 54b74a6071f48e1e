//! journalctl, `tail` of a log, `docker logs`, `kubectl logs`, dmesg: a line that repeats
//! an earlier one with only numbers changed (timestamps, pids, counters) is folded into the
//! first, which says how many there were and where the last one is.

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
    // shape → (index of its entry, occurrences, last raw line)
    let mut seen: HashMap<String, (usize, usize, usize)> = HashMap::new();
    for i in 0..src.len() {
        let line = src.line(i);
        if line.is_empty() {
            out.keep(src, i);
            continue;
        }
        let key = shape(line);
        match seen.get_mut(&key) {
            Some((_, count, last)) => {
                *count += 1;
                *last = i;
                out.hide_counted(src, i, Similar);
            }
            None => {
                seen.insert(key, (out.entries.len(), 1, i));
                out.keep(src, i);
            }
        }
    }
    for (entry, count, last) in seen.into_values() {
        if count > 1 {
            let e = &mut out.entries[entry];
            let signal = if e.signal {
                format!("; {} errors/warnings among them", count - 1)
            } else {
                String::new()
            };
            e.text = format!(
                "{} [×{count} with other numbers; last at line {}{signal}]",
                e.text,
                last + 1
            )
            .into();
            e.verbatim = false;
        }
    }
    Some(out)
}
