//! Outputs too large to reduce whole.
//!
//! Reducing works on every line at once, at several times the input's size in memory.
//! Past [`WHOLE_LIMIT`] bytes only the head and the tail go through the reducer; the
//! middle is scanned line by line for errors and warnings, which are shown with their line
//! numbers (the first and the last [`MIDDLE_SIGNAL_HALF`]) or counted, and every other
//! middle line is listed as hidden.
//! Head+tail elision would have hidden that middle anyway; this bounds the memory a
//! read of a 100 MB build log takes to that of a few megabytes.

use std::ops::Range;

use crate::clean::{clean_line_digits, raw_lines};
use crate::model::{Hidden, HiddenReason, Reduced};
use crate::options::Options;
use crate::pipeline::marker;
use crate::signal::is_signal;
use crate::tokens::estimate_tokens;

/// Outputs up to this many bytes are reduced whole.
pub(crate) const WHOLE_LIMIT: usize = 2 << 20;
/// Bytes of the head reduced (then extended to the end of its line).
const HEAD: usize = 256 << 10;
/// Bytes of the tail reduced (then extended back to the start of its line).
const TAIL: usize = 1 << 20;
/// Error and warning lines of the middle shown from its start, and as many from its end;
/// those between are counted in the markers.
const MIDDLE_SIGNAL_HALF: usize = 100;

/// Reduces `raw` as head + scanned middle + tail, or `None` when it is small enough
/// (or has too few lines) to reduce whole.
pub(crate) fn reduce(command: &str, raw: &[u8], options: &Options) -> Option<Reduced> {
    if raw.len() <= WHOLE_LIMIT || options.raw || options.exact {
        return None;
    }
    let head_end = HEAD + raw[HEAD..].iter().position(|b| *b == b'\n')? + 1;
    let tail_from = raw.len() - TAIL;
    let tail_start = raw[..tail_from]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    if tail_start <= head_end {
        return None;
    }
    let head = crate::run(command, &raw[..head_end], options, false, 0).0;

    // The middle, one line at a time.
    let middle_text = String::from_utf8_lossy(&raw[head_end..tail_start]);
    let first = head.raw_lines;
    let mut middle_lines = 0;
    // Shown: the first and the last error and warning lines (raw line, text); every one's
    // line, for the counts of those between.
    let mut head_signal: Vec<(usize, String)> = Vec::new();
    let mut tail_signal: std::collections::VecDeque<(usize, String)> = Default::default();
    let mut every_signal: Vec<usize> = Vec::new();
    for (n, line) in raw_lines(&middle_text).enumerate() {
        middle_lines += 1;
        let (cleaned, _) = clean_line_digits(line, false);
        if is_signal(&cleaned) {
            every_signal.push(first + n);
            let entry = (first + n, cleaned.into_owned());
            if head_signal.len() < MIDDLE_SIGNAL_HALF {
                head_signal.push(entry);
            } else {
                tail_signal.push_back(entry);
                if tail_signal.len() > MIDDLE_SIGNAL_HALF {
                    tail_signal.pop_front();
                }
            }
        }
    }
    let signal_at: Vec<(usize, String)> = head_signal.into_iter().chain(tail_signal).collect();
    let hidden_signal: Vec<usize> = every_signal
        .into_iter()
        .filter(|at| signal_at.binary_search_by_key(at, |(k, _)| *k).is_err())
        .collect();
    let middle = first..first + middle_lines;
    let tail_offset = first + middle_lines;
    // Reduced with its markers naming absolute line numbers; its hidden ranges are
    // shifted below.
    let tail = crate::run(command, &raw[tail_start..], options, false, tail_offset).0;
    let hidden_middle = hidden_ranges(&middle, &signal_at, &hidden_signal);

    // The middle: a marker for each hidden stretch, in line order with the signal
    // lines shown between them.
    let mut text = head.text.clone();
    let base = options.line_base;
    let mut shown = signal_at.iter().peekable();
    let numbered = |at: usize, line: &str| format!("(line {}) {line}", at + base + 1);
    for range in &hidden_middle {
        while let Some((at, line)) = shown.next_if(|(at, _)| *at < range.lines.start) {
            text.push('\n');
            text.push_str(&numbered(*at, line));
        }
        text.push('\n');
        text.push_str(&marker(
            range.count,
            "lines hidden",
            &(range.lines.start + base..range.lines.end + base),
            range.signal,
        ));
    }
    for (at, line) in shown {
        text.push('\n');
        text.push_str(&numbered(*at, line));
    }
    text.push('\n');
    text.push_str(&tail.text);

    let mut hidden = head.hidden;
    hidden.extend(hidden_middle);
    hidden.extend(tail.hidden.into_iter().map(|h| Hidden {
        lines: h.lines.start + tail_offset..h.lines.end + tail_offset,
        ..h
    }));
    let mut notices = head.notices;
    for notice in tail.notices {
        if !notices.contains(&notice) {
            notices.push(notice);
        }
    }
    if std::str::from_utf8(&raw[head_end..tail_start]).is_err() {
        let notice =
            "invalid UTF-8 in the middle of the output was replaced with U+FFFD".to_owned();
        notices.push(notice);
    }
    notices.push(format!(
        "output over {} MiB: its middle was scanned for errors and warnings, not reduced; \
         the first and last {MIDDLE_SIGNAL_HALF} of them there are shown with their line \
         numbers, the markers count the others",
        WHOLE_LIMIT >> 20
    ));
    let reducer = if head.reducer == tail.reducer {
        head.reducer
    } else {
        format!("{}+{}", head.reducer, tail.reducer)
    };
    Some(Reduced {
        shown_lines: text.split('\n').count(),
        shown_tokens: estimate_tokens(&text),
        raw_lines: tail_offset + tail.raw_lines,
        raw_tokens: head.raw_tokens + estimate_tokens(&middle_text) + tail.raw_tokens,
        text,
        reducer,
        hidden,
        notices,
    })
}

/// The middle's lines that are not shown, as ranges between the shown signal lines, each
/// counting the hidden signal lines it holds.
fn hidden_ranges(
    middle: &Range<usize>,
    shown: &[(usize, String)],
    hidden_signal: &[usize],
) -> Vec<Hidden> {
    let mut out = Vec::new();
    let mut from = middle.start;
    let bounds = shown
        .iter()
        .map(|(at, _)| *at)
        .chain(std::iter::once(middle.end));
    for stop in bounds {
        if stop > from {
            out.push(Hidden {
                lines: from..stop,
                count: stop - from,
                why: HiddenReason::Elided,
                signal: hidden_signal
                    .iter()
                    .filter(|&&at| (from..stop).contains(&at))
                    .count(),
            });
        }
        from = stop + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::{reduce, HiddenReason, Options};

    /// A build log of about 6 MB with errors scattered through its middle.
    fn big_log() -> (String, Vec<usize>) {
        let mut log = String::new();
        let mut errors = Vec::new();
        for n in 0..120_000 {
            if n % 200 == 77 {
                errors.push(n);
                log.push_str(&format!("error: step {n} failed to link libfoo.so\n"));
            } else {
                log.push_str(&format!(
                    "[{n:06}] compiling module_{n} with flags -O2 -g -fPIC\n"
                ));
            }
        }
        (log, errors)
    }

    #[test]
    fn a_huge_output_shows_head_tail_and_every_middle_error_or_its_count() {
        let (log, errors) = big_log();
        assert!(log.len() > super::WHOLE_LIMIT * 2);
        let r = reduce("make", log.as_bytes(), &Options::default());
        assert_eq!(r.raw_lines, 120_000);
        assert!(
            r.text.contains("[000000] compiling module_0"),
            "head missing"
        );
        assert!(
            r.text.contains("[119999] compiling module_119999"),
            "tail missing"
        );
        // Every error line is shown (from the middle: the first and last 100) or counted
        // among the hidden lines.
        let shown = errors
            .iter()
            .filter(|n| r.text.contains(&format!("error: step {n} failed")))
            .count();
        let counted: usize = r.hidden.iter().map(|h| h.signal).sum();
        assert_eq!(shown + counted, errors.len(), "{}", r.text);
        assert!(counted > 0, "the test should exceed the shown allowance");
        // The middle's first and last errors are among those shown, with their numbers.
        let middle: Vec<&usize> = errors
            .iter()
            .filter(|n| {
                r.text
                    .contains(&format!("(line {}) error: step {n} ", *n + 1))
            })
            .collect();
        assert_eq!(middle.len(), 200, "{}", r.text);
        let hidden_one = errors
            .iter()
            .find(|n| !r.text.contains(&format!("step {n} failed")));
        let (lo, hi) = (middle[0], middle[199]);
        assert!(
            hidden_one.is_some_and(|h| lo < h && h < hi),
            "{hidden_one:?}"
        );
        // Hidden ranges are in bounds, ordered, and never cover a shown error.
        let mut last = 0;
        for h in &r.hidden {
            assert!(h.lines.start >= last && h.lines.end <= r.raw_lines, "{h:?}");
            last = h.lines.end;
        }
        // The middle's markers count the hidden errors, and stand in line order with
        // the errors shown between them: every number the text names grows.
        let marked: usize = r
            .text
            .lines()
            .filter(|l| l.starts_with("… ") && l.contains("lines hidden"))
            .filter_map(|l| {
                let n = l.split("; ").nth(1)?.split(' ').next()?;
                n.parse::<usize>().ok()
            })
            .sum();
        assert_eq!(marked, counted, "{}", r.text);
        let mut previous = 0;
        for line in r.text.lines() {
            let at = if let Some((_, step)) = line.split_once("error: step ") {
                step.split(' ').next().unwrap().parse::<usize>().unwrap() + 1
            } else if let Some(range) = line.strip_prefix("… ").and_then(|l| l.split('(').nth(1))
            {
                range
                    .split(['-', ';', ')'])
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            } else {
                continue;
            };
            assert!(at > previous, "{line:?} after line {previous}:\n{}", r.text);
            previous = at;
        }
        assert!(r.hidden.iter().any(|h| h.why == HiddenReason::Elided));
        assert!(r.meta_line().contains("scanned for errors and warnings"));
        assert!(r.shown_tokens * 20 < r.raw_tokens);
    }

    #[test]
    fn markers_count_from_the_line_base() {
        let (log, _) = big_log();
        let plain = reduce("make", log.as_bytes(), &Options::default());
        let based = reduce(
            "make",
            log.as_bytes(),
            &Options {
                line_base: 1_000_000,
                ..Options::default()
            },
        );
        // The same hidden ranges, named 1,000,000 lines later in the text.
        assert_eq!(plain.hidden, based.hidden);
        for h in &plain.hidden {
            let (a, b) = (h.lines.start + 1_000_001, h.lines.end + 1_000_000);
            let named = if a >= b {
                format!("({a}")
            } else {
                format!("({a}-{b}")
            };
            assert!(
                based.text.contains(&named),
                "{named} missing:\n{}",
                based.text
            );
        }
    }

    #[test]
    fn fold_notes_in_the_tail_name_absolute_lines() {
        // A log whose tail repeats one shape: the fold note there names the last one by
        // its line in the whole output, not in the tail part.
        let mut log = String::new();
        let mut n = 0;
        while log.len() <= super::WHOLE_LIMIT + super::TAIL {
            n += 1;
            log.push_str(&format!("{n:08} worker tick {n} heartbeat ok\n"));
        }
        let r = reduce("journalctl", log.as_bytes(), &Options::default());
        let note = r
            .text
            .lines()
            .rev()
            .find(|l| l.contains("the last at line"))
            .unwrap_or_else(|| panic!("no fold note in the tail:\n{}", r.text));
        let named: usize = note
            .rsplit("the last at line ")
            .next()
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no line number in {note:?}"));
        assert_eq!(named, n, "{note}");
    }

    #[test]
    fn line_numbers_of_the_tail_are_absolute() {
        let (log, _) = big_log();
        let r = reduce("make", log.as_bytes(), &Options::default());
        let last = r.hidden.last().expect("hidden ranges");
        assert!(last.lines.end <= 120_000);
        assert!(last.lines.start > 100_000, "{last:?}");
        // The tail's own marker names the same lines as its hidden range.
        let range = last.display_range();
        assert!(
            r.text.contains(&format!("({range})")),
            "no marker for {range}:\n{}",
            r.text
        );
    }

    #[test]
    fn raw_reads_stay_whole() {
        let (log, _) = big_log();
        let options = Options {
            raw: true,
            ..Options::default()
        };
        assert_eq!(reduce("make", log.as_bytes(), &options).text, log);
    }
}
