//! Reads that keep only the output lines matching a pattern.
//!
//! A filter looks at what programs printed, never at the echo of typed input (see
//! [`crate::echo`]): `echo "ERROR …"` typed into a shell is not an error line. A
//! filtered read of new output keeps a cursor of its own per caller and pattern, so
//! the lines it passes over stay unread for the caller's plain reads, and asking
//! again with the same pattern returns only matches that came since. When more lines
//! match than the limit, the rest are left for the next read, never dropped.

use cohort_backends::PaneId;
use regex::Regex;

use crate::lines::{Line, LineFeed};
use crate::Terminal;

/// Lines of the journal's end a filtered tail looks through.
pub const TAIL_SCAN_LINES: u64 = 10_000;

/// Which output a filtered read looks through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilteredWhat {
    /// What came since this caller's last read with the same pattern.
    New,
    /// The last [`TAIL_SCAN_LINES`] lines; the last matches are kept.
    Tail,
}

/// The matching lines of one pane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilteredRead {
    /// The matching lines' output (echo left out), oldest first.
    pub lines: Vec<String>,
    /// Each matching line's number in the pane's output (1-based).
    pub numbers: Vec<u64>,
    /// Complete lines looked through.
    pub examined: u64,
    /// Matches past the limit, left for the next read (`New`) or before the ones
    /// shown (`Tail`).
    pub more: usize,
    /// Output that was no longer kept when the read began.
    pub dropped: bool,
}

impl FilteredRead {
    /// The lines, one per line of text.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The meta line: what the filter kept of what, and what it left.
    pub fn meta(&self, filter: &Regex, what: FilteredWhat) -> String {
        let span = match (self.numbers.first(), self.numbers.last()) {
            (Some(a), Some(b)) if a == b => format!(", line {a}"),
            (Some(a), Some(b)) => format!(", lines {a}-{b}"),
            _ => String::new(),
        };
        let more = match (self.more, what) {
            (0, _) => String::new(),
            (n, FilteredWhat::New) => {
                format!("; {n} more matching line(s) left for the next read")
            }
            (n, FilteredWhat::Tail) => format!("; {n} earlier matching line(s) not shown"),
        };
        let dropped = if self.dropped {
            "; older output is no longer kept"
        } else {
            ""
        };
        let cursor = match what {
            FilteredWhat::New => "; lines the filter passed over stay unread",
            FilteredWhat::Tail => "",
        };
        format!(
            "[filter /{}/ kept {} of {} line(s) of output{span}{more}{dropped}{cursor}; typed input is not matched]",
            filter.as_str(),
            self.lines.len(),
            self.examined
        )
    }
}

/// The cursor a filtered read of new output keeps: one per caller and pattern, apart
/// from the caller's own.
fn cursor_key(caller: &str, filter: &Regex) -> String {
    format!("{caller}\u{0}filter\u{0}{}", filter.as_str())
}

impl Terminal {
    /// The output lines of `pane` that match `filter`, at most `limit`.
    pub async fn read_filtered(
        &self,
        pane: &PaneId,
        what: FilteredWhat,
        caller: &str,
        filter: &Regex,
        limit: usize,
    ) -> FilteredRead {
        let runtime = self.runtimes.get(pane);
        let key = cursor_key(caller, filter);
        let (from, first_line, dropped) = {
            let mut data = runtime.lock();
            let len = data.journal.len();
            let from = match what {
                FilteredWhat::New => data.cursors.get(&key).unwrap_or(data.history_end).min(len),
                FilteredWhat::Tail => {
                    let total = data.journal.line_count();
                    data.journal
                        .line_start(total.saturating_sub(TAIL_SCAN_LINES))
                        .unwrap_or(len)
                }
            };
            let floor = data.journal.floor();
            let dropped = from < floor && len > from;
            let from = from.max(floor);
            (from, data.journal.line_of(from), dropped)
        };
        // The follower's lines: complete ones only, each with its echo left out.
        let mut feed = LineFeed::at(from);
        let (lines, _being_written) = feed.feed(&runtime);
        let (read, resume) = scan(&lines, first_line, feed.position(), filter, what, limit);
        if what == FilteredWhat::New {
            runtime.lock().cursors.set(&key, resume);
        }
        FilteredRead { dropped, ..read }
    }
}

/// Looks through `lines` (the first on line `first_line`, 0-based; `end` is where the
/// next line starts). Returns the read and where a read of new output resumes: after
/// the last line looked at, or at the first match past the limit.
fn scan(
    lines: &[Line],
    first_line: u64,
    end: u64,
    filter: &Regex,
    what: FilteredWhat,
    limit: usize,
) -> (FilteredRead, u64) {
    let mut read = FilteredRead {
        lines: Vec::new(),
        numbers: Vec::new(),
        examined: 0,
        more: 0,
        dropped: false,
    };
    let mut resume = None;
    for (n, line) in (first_line + 1..).zip(lines) {
        let output = line.matched(false);
        if !output.trim().is_empty() && filter.is_match(output) {
            if read.lines.len() < limit || what == FilteredWhat::Tail {
                read.lines.push(output.to_string());
                read.numbers.push(n);
            } else {
                resume.get_or_insert(line.start);
                read.more += 1;
            }
        }
        if resume.is_none() {
            read.examined += 1;
        }
    }
    if what == FilteredWhat::Tail && read.lines.len() > limit {
        let cut = read.lines.len() - limit;
        read.lines.drain(..cut);
        read.numbers.drain(..cut);
        read.more = cut;
    }
    (read, resume.unwrap_or(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of plain output (no echo) from journal offset 100, on line 10 on.
    fn scan_plain(text: &str, what: FilteredWhat, limit: usize) -> (FilteredRead, u64) {
        let re = Regex::new("ERROR").unwrap();
        let mut lines = Vec::new();
        let mut start = 100;
        for l in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
            let text = l.trim_end_matches('\n').to_string();
            lines.push(Line {
                start,
                output: text.clone(),
                text,
            });
            start += l.len() as u64;
        }
        scan(&lines, 9, start, &re, what, limit)
    }

    #[test]
    fn matches_past_the_limit_are_left_for_the_next_read() {
        let text = "ok\nERROR one\nfine\nERROR two\nERROR three\npartial ERROR";
        let (read, resume) = scan_plain(text, FilteredWhat::New, 2);
        assert_eq!(read.lines, ["ERROR one", "ERROR two"]);
        assert_eq!(read.numbers, [11, 13]);
        assert_eq!(read.more, 1);
        // The next read starts at the third match.
        assert_eq!(resume, 100 + text.find("ERROR three").unwrap() as u64);
        assert_eq!(read.examined, 4);
    }

    #[test]
    fn a_line_still_being_written_is_looked_at_when_it_ends() {
        let text = "ERROR one\npartial ERROR";
        let (read, resume) = scan_plain(text, FilteredWhat::New, 10);
        assert_eq!(read.lines, ["ERROR one"]);
        assert_eq!(resume, 100 + text.find("partial").unwrap() as u64);
    }

    #[test]
    fn a_tail_keeps_the_last_matches() {
        let text = "ERROR one\nERROR two\nok\nERROR three\n";
        let (read, _) = scan_plain(text, FilteredWhat::Tail, 2);
        assert_eq!(read.lines, ["ERROR two", "ERROR three"]);
        assert_eq!(read.more, 1);
        let meta = read.meta(&Regex::new("ERROR").unwrap(), FilteredWhat::Tail);
        assert!(meta.contains("kept 2 of 4"), "{meta}");
        assert!(meta.contains("1 earlier matching line"), "{meta}");
    }
}
