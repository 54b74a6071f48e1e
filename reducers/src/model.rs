//! What a reduction returns: the text, the figures, and an exact account of what was hidden.

use std::fmt::Write as _;
use std::ops::Range;

/// The result of [`reduce`](crate::reduce).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduced {
    /// The text to show, lines joined by `\n`, no trailing newline.
    pub text: String,
    /// The reducer that shaped it: `"generic"`, `"raw"`, a built-in name such as
    /// `"cargo-test"` (see [`ReducerKind::name`](crate::ReducerKind::name)), or
    /// `"user:<name>"` for a user-defined rule.
    pub reducer: String,
    /// Lines in the raw output (split on `\n`; a trailing newline ends the last line).
    pub raw_lines: usize,
    /// Lines in `text`.
    pub shown_lines: usize,
    /// [`estimate_tokens`](crate::estimate_tokens) of the raw output (decoded lossily).
    pub raw_tokens: usize,
    /// [`estimate_tokens`](crate::estimate_tokens) of `text`.
    pub shown_tokens: usize,
    /// What was left out, in raw line order. Blank lines removed by the generic pipeline
    /// (runs collapsed to one, none at either end) are not listed.
    pub hidden: Vec<Hidden>,
    /// Things the reader must be told, such as invalid UTF-8 or binary output, or what a
    /// reducer left out of the lines it shows (an `ls -l` row shown by its name) and how to
    /// get it back.
    pub notices: Vec<String>,
}

/// A part of the raw output that is not in [`Reduced::text`], or only in part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hidden {
    /// Raw line numbers, **0-based and half-open** like a slice index: `5..9` is the fifth
    /// to eighth line counted from zero, that is lines 6–9 counted from one (see
    /// [`Hidden::display_range`]). The range spans every hidden line; lines inside it that are
    /// shown (an error kept from an elided middle, the subjects between a git log's commit
    /// details when their many small ranges are merged into one) are not counted in `count`.
    pub lines: Range<usize>,
    /// How many raw lines of the range are hidden (for [`HiddenReason::Clipped`]: how many
    /// lines are shown only in part).
    pub count: usize,
    /// Why they were hidden.
    pub why: HiddenReason,
    /// How many of the hidden lines read as errors, failures, panics, tracebacks or warnings.
    /// Every text marker and [`Reduced::meta_line`] states it when it is not zero.
    pub signal: usize,
}

impl Hidden {
    /// The range as people and the caller's `lines=` parameter write it: 1-based, inclusive,
    /// `"21-1180"` (or `"7"` for one line).
    pub fn display_range(&self) -> String {
        display_range(&self.lines)
    }
}

/// How many of `count` hidden ranges a meta line names one by one; the others go as
/// one span. Four cost no more than three and a count.
pub fn ranges_named(count: usize) -> usize {
    if count <= 4 {
        count
    } else {
        3
    }
}

pub(crate) fn display_range(lines: &Range<usize>) -> String {
    if lines.end <= lines.start + 1 {
        format!("{}", lines.start + 1)
    } else {
        format!("{}-{}", lines.start + 1, lines.end)
    }
}

/// Why raw lines were hidden.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum HiddenReason {
    /// The middle of a long output, cut by head+tail elision.
    Elided,
    /// Repeats of the line shown just before them (`×N`).
    Duplicate,
    /// A run of lines that differ from the ones around them only in numbers (progress,
    /// downloads, timestamps).
    Similar,
    /// Chatter with no facts in it: `Compiling` lines, git hints, progress steps.
    Noise,
    /// Passing tests, counted in the tool's own summary.
    Passed,
    /// Unchanged context lines of a diff.
    Context,
    /// Detail behind a fact that is shown: traceback source, stack frames, commit bodies.
    Detail,
    /// Entries beyond a reducer's cap (grep hits, listing entries, table rows), counted in a
    /// marker line.
    Capped,
    /// Shown only in part: the line was wider than the width limit.
    Clipped,
    /// Dropped by a user-defined rule.
    Rule,
}

impl HiddenReason {
    /// The hidden lines counted and named in words that cannot be read as a tool's own
    /// figures: `"4 lines of passing-test progress"`, never `"passed 4 lines"` next to a
    /// runner's `120 passed`.
    ///
    /// ```
    /// use cohort_reducers::HiddenReason;
    /// assert_eq!(HiddenReason::Passed.describe(4), "4 lines of passing-test progress");
    /// assert_eq!(HiddenReason::Elided.describe(1), "1 line from the middle");
    /// ```
    pub fn describe(self, count: usize) -> String {
        let lines = if count == 1 { "line" } else { "lines" };
        match self {
            HiddenReason::Elided => format!("{count} {lines} from the middle"),
            HiddenReason::Duplicate => format!("{count} repeated {lines}"),
            HiddenReason::Similar => format!("{count} similar {lines}"),
            HiddenReason::Noise => format!("{count} {lines} of progress and hints"),
            HiddenReason::Passed => format!("{count} {lines} of passing-test progress"),
            HiddenReason::Context => format!("{count} diff context {lines}"),
            HiddenReason::Detail => format!("{count} {lines} of detail"),
            HiddenReason::Capped => format!("{count} {lines} past a list's cap"),
            HiddenReason::Clipped => format!("{count} long {lines} cut short"),
            HiddenReason::Rule => format!("{count} {lines} dropped by a user rule"),
        }
    }

    /// A short lowercase word for the reason.
    pub fn as_str(self) -> &'static str {
        match self {
            HiddenReason::Elided => "elided",
            HiddenReason::Duplicate => "duplicates",
            HiddenReason::Similar => "similar",
            HiddenReason::Noise => "noise",
            HiddenReason::Passed => "passed",
            HiddenReason::Context => "context",
            HiddenReason::Detail => "detail",
            HiddenReason::Capped => "capped",
            HiddenReason::Clipped => "clipped",
            HiddenReason::Rule => "rule",
        }
    }
}

impl Reduced {
    /// One line describing the reduction, for the end of a read:
    ///
    /// `shown 40/1200 lines, 310/9000 tokens (pytest); hidden: 1160 lines from the middle (21-1180; 2 errors/warnings among them); 12 lines of passing-test progress (3-14)`
    ///
    /// Ranges are 1-based and inclusive. Reasons with more than four ranges list the first
    /// three, then how many more and the span that holds them all (`and 9 more ranges
    /// within 40-222`), so that one read of that span brings every one of them back.
    /// Notices follow after `; `.
    pub fn meta_line(&self) -> String {
        let mut out = format!(
            "shown {}/{} lines, {}/{} tokens ({})",
            self.shown_lines, self.raw_lines, self.shown_tokens, self.raw_tokens, self.reducer
        );
        if !self.hidden.is_empty() {
            out.push_str("; hidden:");
            let mut reasons: Vec<HiddenReason> = self.hidden.iter().map(|h| h.why).collect();
            reasons.sort();
            reasons.dedup();
            for (n, why) in reasons.into_iter().enumerate() {
                let of: Vec<&Hidden> = self.hidden.iter().filter(|h| h.why == why).collect();
                let lines: usize = of.iter().map(|h| h.count).sum();
                let signal: usize = of.iter().map(|h| h.signal).sum();
                let sep = if n == 0 { " " } else { "; " };
                let _ = write!(out, "{sep}{} (", why.describe(lines));
                let named = ranges_named(of.len());
                let shown: Vec<String> = of.iter().take(named).map(|h| h.display_range()).collect();
                out.push_str(&shown.join(", "));
                if of.len() > named {
                    let rest = of[named].lines.start..of[of.len() - 1].lines.end;
                    let _ = write!(
                        out,
                        " and {} more ranges within {}",
                        of.len() - named,
                        display_range(&rest)
                    );
                }
                if signal > 0 {
                    let _ = write!(out, "; {signal} errors/warnings among them");
                }
                out.push(')');
            }
        }
        for notice in &self.notices {
            out.push_str("; ");
            out.push_str(notice);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reduced(hidden: Vec<Hidden>) -> Reduced {
        Reduced {
            text: String::new(),
            reducer: "generic".to_owned(),
            raw_lines: 200,
            shown_lines: 20,
            raw_tokens: 2000,
            shown_tokens: 200,
            hidden,
            notices: Vec::new(),
        }
    }

    fn elided(ranges: usize) -> Vec<Hidden> {
        (1..=ranges)
            .map(|k| Hidden {
                lines: k * 10..k * 10 + 3,
                count: 3,
                why: HiddenReason::Elided,
                signal: 0,
            })
            .collect()
    }

    #[test]
    fn many_ranges_are_named_by_the_span_that_holds_them() {
        assert_eq!(
            reduced(elided(10)).meta_line(),
            "shown 20/200 lines, 200/2000 tokens (generic); hidden: 30 lines from the middle \
             (11-13, 21-23, 31-33 and 7 more ranges within 41-103)"
        );
        assert_eq!(
            reduced(elided(4)).meta_line(),
            "shown 20/200 lines, 200/2000 tokens (generic); hidden: 12 lines from the middle \
             (11-13, 21-23, 31-33, 41-43)"
        );
    }
}
