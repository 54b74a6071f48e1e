//! The generic pipeline: the stages every reduction ends with, and the whole reduction of
//! output no reducer claims.
//!
//! Order: blank runs collapsed → identical runs folded (`×N`) → runs that differ only in
//! numbers folded → head+tail elision (errors kept from the middle) → long lines clipped.

use crate::doc::{record, Entry, Out, Post, Src};
use crate::model::{display_range, Hidden, HiddenReason};
use std::borrow::Cow;
use std::ops::Range;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Output with no reducer: every cleaned line, then the finishing stages.
pub(crate) fn generic<'a>(src: &Src<'a>, post: Post) -> Out<'a> {
    let mut out = Out::new(post);
    out.entries.reserve(src.len());
    for i in 0..src.len() {
        out.keep(src, i);
    }
    out
}

/// Runs the finishing stages over a reducer's output. Returns the entries to show and every
/// hidden range, sorted by raw line.
pub(crate) fn finish<'a>(out: Out<'a>, signal: &[bool]) -> (Vec<Entry<'a>>, Vec<Hidden>) {
    let Out {
        entries,
        mut hidden,
        post,
        excerpts,
        ..
    } = out;
    // Excerpts are never counted as errors, even when elision takes them in.
    let adjusted;
    let signal = if excerpts.is_empty() {
        signal
    } else {
        let mut s = signal.to_vec();
        for i in excerpts {
            if let Some(flag) = s.get_mut(i) {
                *flag = false;
            }
        }
        adjusted = s;
        &adjusted[..]
    };
    let mut entries = entries;
    collapse_blanks(&mut entries);
    if post.fold_identical {
        fold_identical(&mut entries, &mut hidden);
    }
    if post.fold_similar {
        entries = fold_similar(entries, &post, &mut hidden);
    }
    if let Some(max) = post.max_lines {
        if entries.len() > max {
            entries = elide(entries, &post, &mut hidden, signal);
        }
    }
    if let Some(width) = post.width {
        clip(&mut entries, width, &mut hidden);
    }
    hidden.sort_by_key(|h| (h.lines.start, h.why));
    merge_ranges(&mut hidden);
    (entries, hidden)
}

/// A reason with more hidden ranges than this has them merged where they are close.
const MERGE_ABOVE: usize = 3;
/// The most shown lines between two ranges that are merged.
const MERGE_GAP: usize = 8;

/// Merges the hidden ranges of a reason that leaves many small ones (a git log's commit
/// headers and bodies around each shown subject, a diff's context around each change), so
/// that each range the reader is told about, and each read that brings one back, covers
/// several: two ranges of the same reason become one when at most [`MERGE_GAP`] lines lie
/// between them and none of those is hidden for another reason. The lines between are
/// shown ones; the merged range spans them but its `count` is still only of hidden lines.
///
/// Reasons whose ranges are named by a marker in the text (elided, similar, capped) keep
/// theirs, so that every marker still counts exactly the ranges inside its own span; and
/// so do clipped lines, which are shown.
fn merge_ranges(hidden: &mut Vec<Hidden>) {
    use HiddenReason::{Capped, Clipped, Elided, Similar};
    let fixed = |why: HiddenReason| matches!(why, Elided | Similar | Capped | Clipped);
    let mut many: Vec<HiddenReason> = Vec::new();
    for why in hidden.iter().map(|h| h.why).filter(|w| !fixed(*w)) {
        if !many.contains(&why) && hidden.iter().filter(|h| h.why == why).count() > MERGE_ABOVE {
            many.push(why);
        }
    }
    if many.is_empty() {
        return;
    }
    let mut out: Vec<Hidden> = Vec::with_capacity(hidden.len());
    // The last range in `out` that hides lines (not a clipped one).
    let mut last: Option<usize> = None;
    for h in hidden.drain(..) {
        if h.why == Clipped {
            out.push(h);
            continue;
        }
        if let Some(prev) = last.map(|at| &mut out[at]) {
            if prev.why == h.why
                && many.contains(&h.why)
                && h.lines.start >= prev.lines.end
                && h.lines.start - prev.lines.end <= MERGE_GAP
            {
                prev.lines.end = h.lines.end;
                prev.count += h.count;
                prev.signal += h.signal;
                continue;
            }
        }
        last = Some(out.len());
        out.push(h);
    }
    *hidden = out;
}

/// Joins entries into the final text.
pub(crate) fn render(entries: &[Entry<'_>]) -> String {
    let len = entries.iter().map(|e| e.text.len() + 1).sum();
    let mut text = String::with_capacity(len);
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(&e.text);
    }
    text
}

/// The marker that stands for hidden lines: `… 1160 lines hidden (21-1180)`, with the count
/// of errors and warnings among them when there are any.
pub(crate) fn marker(count: usize, what: &str, lines: &Range<usize>, signal: usize) -> String {
    let range = display_range(lines);
    if signal > 0 {
        format!("… {count} {what} ({range}; {signal} errors/warnings among them)")
    } else {
        format!("… {count} {what} ({range})")
    }
}

/// Drops blank lines that follow a blank line or start the output, and trailing blanks; in
/// place.
fn collapse_blanks(entries: &mut Vec<Entry<'_>>) {
    let mut after_blank = true;
    entries.retain(|e| {
        let keep = !(e.is_blank() && after_blank);
        if keep {
            after_blank = e.is_blank();
        }
        keep
    });
    while entries.last().is_some_and(Entry::is_blank) {
        entries.pop();
    }
}

/// Folds runs of identical lines into the first, marked `×N`; in place: entries move down
/// over the ones folded away, nothing is copied into a new vector.
fn fold_identical(entries: &mut Vec<Entry<'_>>, hidden: &mut Vec<Hidden>) {
    let n = entries.len();
    let (mut w, mut r) = (0, 0);
    while r < n {
        entries.swap(w, r); // the slots between `w` and `r` hold folded-away entries
        r += 1;
        let mut count = 1;
        if entries[w].nraw > 0 && !entries[w].is_blank() {
            while r < n && entries[r].nraw != 0 && entries[r].text == entries[w].text {
                let next = &entries[r];
                for raw in next.raw..next.raw + next.nraw {
                    record(hidden, raw, HiddenReason::Duplicate, next.signal);
                }
                count += 1;
                r += 1;
            }
        }
        if count > 1 {
            let head = &mut entries[w];
            head.text = Cow::Owned(format!("{} ×{count}", head.text));
            head.verbatim = false;
        }
        w += 1;
    }
    entries.truncate(w);
}

fn similar_candidate(e: &Entry<'_>) -> bool {
    e.verbatim && !e.pinned && e.nraw == 1 && e.digits
}

/// Whether two lines are the same once every number is ignored. Equal stretches are
/// skipped eight bytes at a time; only where the lines differ is the number around that
/// point looked at, so a pair costs about a byte comparison per byte, not a digit test.
fn same_shape(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    let mut after_number = false;
    loop {
        let common = common_prefix(&a[i..], &b[j..]);
        let (seg_a, seg_b) = (i, j);
        i += common;
        j += common;
        if i == a.len() && j == b.len() {
            return true;
        }
        // They differ here (or one has ended). Right after a number there is nothing to
        // skip again; otherwise a difference inside a number is no difference.
        if common == 0 && after_number {
            return false;
        }
        let digit_here =
            a.get(i).is_some_and(u8::is_ascii_digit) || b.get(j).is_some_and(u8::is_ascii_digit);
        let digit_before = i > seg_a && a[i - 1].is_ascii_digit();
        if !(digit_here || digit_before) {
            return false;
        }
        // Back to where the number starts (the stretch before is the same in both lines),
        // then skip the number in each line as a forward scan would.
        let mut s = i;
        while s > seg_a
            && (a[s - 1].is_ascii_digit()
                || (matches!(a[s - 1], b'.' | b',' | b':')
                    && a.get(s).is_some_and(u8::is_ascii_digit)
                    && s < i))
        {
            s -= 1;
        }
        // A number starts with a digit: a joiner it backed over at the start is not in it.
        while s < i && !a[s].is_ascii_digit() {
            s += 1;
        }
        let t = seg_b + (s - seg_a);
        if !(a.get(s).is_some_and(u8::is_ascii_digit) && b.get(t).is_some_and(u8::is_ascii_digit)) {
            // Only one line has a number here.
            return false;
        }
        let (ni, nj) = (skip_number(a, s), skip_number(b, t));
        i = ni;
        j = nj;
        after_number = true;
    }
}

/// How many leading bytes `a` and `b` share.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut k = 0;
    while k + 8 <= n {
        let x = u64::from_le_bytes(a[k..k + 8].try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(b[k..k + 8].try_into().expect("8 bytes"));
        if x != y {
            return k + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        k += 8;
    }
    while k < n && a[k] == b[k] {
        k += 1;
    }
    k
}

fn skip_number(s: &[u8], mut i: usize) -> usize {
    while i < s.len() {
        let digit = s[i].is_ascii_digit();
        let joiner =
            matches!(s[i], b'.' | b',' | b':') && s.get(i + 1).is_some_and(u8::is_ascii_digit);
        if !(digit || joiner) {
            break;
        }
        i += 1;
    }
    i
}

fn fold_similar<'a>(
    entries: Vec<Entry<'a>>,
    post: &Post,
    hidden: &mut Vec<Hidden>,
) -> Vec<Entry<'a>> {
    let min_run = post.similar_run;
    let n = entries.len();
    // Where each similar run ends, found before anything moves.
    let mut i = 0;
    let mut runs: Vec<(usize, usize)> = Vec::new();
    while i < n {
        let mut j = i + 1;
        if similar_candidate(&entries[i]) {
            while j < n
                && similar_candidate(&entries[j])
                && same_shape(&entries[i].text, &entries[j].text)
            {
                j += 1;
            }
        }
        if j - i >= min_run.max(3) {
            runs.push((i, j));
        }
        i = j;
    }
    if runs.is_empty() {
        return entries;
    }
    let mut out = Vec::with_capacity(n);
    let mut runs = runs.into_iter().peekable();
    let mut signal = 0;
    let mut lo = 0;
    for (k, e) in entries.into_iter().enumerate() {
        match runs.peek().copied() {
            Some((a, b)) if k > a && k < b - 1 => {
                if k == a + 1 {
                    lo = e.raw;
                    signal = 0;
                }
                signal += usize::from(e.signal);
                record(hidden, e.raw, HiddenReason::Similar, e.signal);
                if k == b - 2 {
                    let lines = lo..e.raw + 1;
                    out.push(Entry::note(
                        post.marker(b - a - 2, "similar lines", &lines, signal),
                        lo,
                    ));
                }
            }
            Some((_, b)) if k == b - 1 => {
                out.push(e);
                runs.next();
            }
            _ => out.push(e),
        }
    }
    out
}

/// Keeps `head` and `tail` entries, and from the middle every pinned entry and signal
/// entries up to the budget. Each run of dropped entries becomes one marker and one hidden
/// range, which absorbs the hidden ranges of earlier stages that lie inside it.
fn elide<'a>(
    entries: Vec<Entry<'a>>,
    post: &Post,
    hidden: &mut Vec<Hidden>,
    signal: &[bool],
) -> Vec<Entry<'a>> {
    let n = entries.len();
    let head = post.head.min(n);
    let tail = post.tail.min(n - head);
    let mut budget = post.max_signal;
    let mut keep: Vec<bool> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            i < head
                || i >= n - tail
                || e.pinned
                || (e.signal && budget > 0 && {
                    budget -= 1;
                    true
                })
        })
        .collect();
    // A marker costs a line: gaps of one or two lines between kept ones are shown instead.
    let mut i = 0;
    while i < n {
        let j = i + keep[i..].iter().take_while(|k| !**k).count();
        if j > i && j - i <= 2 {
            keep[i..j].fill(true);
        }
        i = j.max(i + 1);
    }
    let mut out = Vec::with_capacity(head + tail + 8);
    // Runs of dropped entries: (position of their marker in `out`, raw spans).
    let mut runs: Vec<(usize, Vec<Range<usize>>)> = Vec::new();
    let mut in_run = false;
    for (e, keep) in entries.into_iter().zip(keep) {
        if keep {
            out.push(e);
            in_run = false;
            continue;
        }
        if !in_run {
            runs.push((out.len(), Vec::new()));
            out.push(Entry::note(String::new(), e.raw)); // the marker, written below
            in_run = true;
        }
        let spans = &mut runs.last_mut().expect("run started").1;
        // Consecutive raw lines extend one span, so a long run costs no memory.
        if e.nraw > 0 && spans.last().is_some_and(|l| l.end == e.raw) {
            spans.last_mut().expect("checked").end = e.raw + e.nraw;
        } else if e.nraw > 0 || spans.is_empty() {
            spans.push(e.raw..e.raw + e.nraw);
        }
    }
    // Absorb earlier hidden ranges lying inside a run's extent, in one pass over both.
    hidden.sort_by_key(|h| h.lines.start);
    let mut absorbed = vec![false; hidden.len()];
    let mut h = 0;
    for (_, spans) in &mut runs {
        let lo = spans.iter().map(|r| r.start).min().unwrap_or(0);
        let hi = spans.iter().map(|r| r.end).max().unwrap_or(0);
        while h < hidden.len() && hidden[h].lines.start < lo {
            h += 1;
        }
        let mut k = h;
        while k < hidden.len() && hidden[k].lines.start < hi {
            if hidden[k].lines.end <= hi && hidden[k].why != HiddenReason::Clipped {
                absorbed[k] = true;
                spans.push(hidden[k].lines.clone());
            }
            k += 1;
        }
    }
    let mut keep_flags = absorbed.into_iter();
    hidden.retain(|_| !keep_flags.next().unwrap_or(false));
    let mut dead = Vec::new();
    for (at, mut spans) in runs {
        spans.sort_by_key(|r| r.start);
        let (mut count, mut sig, mut reach) = (0, 0, 0);
        let (mut start, mut end) = (usize::MAX, 0);
        for r in spans.into_iter().filter(|r| !r.is_empty()) {
            let from = r.start.max(reach);
            if r.end > from {
                count += r.end - from;
                sig += signal
                    .get(from..r.end)
                    .map_or(0, |s| s.iter().filter(|&&b| b).count());
            }
            reach = reach.max(r.end);
            start = start.min(r.start);
            end = end.max(r.end);
        }
        if count == 0 {
            dead.push(at);
            continue;
        }
        let lines = start..end;
        out[at] = Entry::note(post.marker(count, "lines hidden", &lines, sig), start);
        hidden.push(Hidden {
            lines,
            count,
            why: HiddenReason::Elided,
            signal: sig,
        });
    }
    if !dead.is_empty() {
        let mut i = 0;
        out.retain(|_| {
            i += 1;
            !dead.contains(&(i - 1))
        });
    }
    out
}

fn clip(entries: &mut [Entry<'_>], width: usize, hidden: &mut Vec<Hidden>) {
    let mut clipped = Vec::new();
    for e in entries.iter_mut() {
        // A string never takes more columns than bytes, so short ones need no measuring.
        // Lines a reducer wrote are never cut: it writes them within bounds; nor are a
        // tool's summaries, short of a runaway line.
        let summary = e.summary && e.text.len() <= width.saturating_mul(3);
        if e.nraw == 0 || summary || e.text.len() <= width || e.text.width() <= width {
            continue;
        }
        e.text = Cow::Owned(clip_text(&e.text, width));
        e.verbatim = false;
        for raw in e.raw..e.raw + e.nraw {
            record(&mut clipped, raw, HiddenReason::Clipped, false);
        }
    }
    hidden.extend(clipped);
}

/// Keeps about two thirds of `width` from the start of `s` and the rest from its end, with
/// the number of characters left out between. The cuts fall between words where there are
/// any (never inside a path, a name or a number), else on character boundaries.
pub(crate) fn clip_text(s: &str, width: usize) -> String {
    let total_chars = s.chars().count();
    let budget = width.saturating_sub(16).max(8);
    let head_cols = budget * 2 / 3;
    let tail_cols = budget - head_cols;
    let (mut head_end, mut cols, mut head_chars) = (0, 0, 0);
    for (at, c) in s.char_indices() {
        let w = c.width().unwrap_or(0);
        if cols + w > head_cols {
            break;
        }
        cols += w;
        head_end = at + c.len_utf8();
        head_chars += 1;
    }
    let (mut tail_start, mut cols, mut tail_chars) = (s.len(), 0, 0);
    for (at, c) in s.char_indices().rev() {
        let w = c.width().unwrap_or(0);
        if at < head_end || cols + w > tail_cols {
            break;
        }
        cols += w;
        tail_start = at;
        tail_chars += 1;
    }
    // Back to the last blank of the head and on past the first blank of the tail, when
    // that keeps most of each.
    if let Some(blank) = s[..head_end].rfind([' ', '\t']) {
        if blank >= head_end / 3 {
            head_chars -= s[blank..head_end].chars().count();
            head_end = blank;
        }
    }
    if let Some(blank) = s[tail_start..].find([' ', '\t']) {
        let from = tail_start + blank + 1;
        if from < s.len() && s.len() - from >= (s.len() - tail_start) / 3 {
            tail_chars -= s[tail_start..from].chars().count();
            tail_start = from;
        }
    }
    let left_out = total_chars - head_chars - tail_chars;
    format!(
        "{} …[{left_out} chars]… {}",
        &s[..head_end],
        &s[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, post: Post) -> (String, Vec<Hidden>) {
        let src = Src::new(text, false);
        let (entries, hidden) = finish(generic(&src, post), &src.signal);
        (render(&entries), hidden)
    }

    fn post() -> Post {
        Post::from_options(&crate::Options::default())
    }

    fn range(lines: Range<usize>, why: HiddenReason, signal: usize) -> Hidden {
        Hidden {
            count: lines.len(),
            lines,
            why,
            signal,
        }
    }

    #[test]
    fn many_close_ranges_of_a_reason_merge() {
        use HiddenReason::{Context, Detail, Elided, Noise};
        // Five detail ranges one shown line apart become one range counting their lines.
        let mut hidden: Vec<Hidden> = (0..5)
            .map(|k| range(k * 4 + 1..k * 4 + 4, Detail, usize::from(k == 2)))
            .collect();
        merge_ranges(&mut hidden);
        assert_eq!(
            hidden,
            [Hidden {
                lines: 1..20,
                count: 15,
                why: Detail,
                signal: 1
            }]
        );
        // Three are few enough to name one by one.
        let mut hidden: Vec<Hidden> = (0..3)
            .map(|k| range(k * 4 + 1..k * 4 + 4, Detail, 0))
            .collect();
        let before = hidden.clone();
        merge_ranges(&mut hidden);
        assert_eq!(hidden, before);
        // Not across lines hidden for another reason, nor across a long stretch shown, nor
        // for a reason whose ranges markers name.
        let mut hidden = vec![
            range(0..2, Detail, 0),
            range(3..5, Detail, 0),
            range(5..6, Noise, 0),
            range(6..8, Detail, 0),
            range(30..32, Detail, 0),
            range(33..35, Detail, 0),
            range(40..50, Elided, 0),
            range(51..60, Elided, 0),
            range(61..70, Elided, 0),
            range(71..80, Elided, 0),
            range(81..82, Context, 0),
        ];
        merge_ranges(&mut hidden);
        let got: Vec<(Range<usize>, HiddenReason)> =
            hidden.iter().map(|h| (h.lines.clone(), h.why)).collect();
        assert_eq!(
            got,
            [
                (0..5, Detail),
                (5..6, Noise),
                (6..8, Detail),
                (30..35, Detail),
                (40..50, Elided),
                (51..60, Elided),
                (61..70, Elided),
                (71..80, Elided),
                (81..82, Context),
            ]
        );
    }

    #[test]
    fn shapes() {
        assert!(same_shape(
            "Downloading 1/300 (1.5 MB)",
            "Downloading 299/300 (12.25 MB)"
        ));
        assert!(!same_shape("a 1", "b 1"));
        assert!(same_shape("10:00:01 poll", "10:00:02 poll"));
    }

    /// The byte-at-a-time definition [`same_shape`] must agree with.
    fn same_shape_reference(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        let (mut i, mut j) = (0, 0);
        loop {
            match (a.get(i), b.get(j)) {
                (None, None) => return true,
                (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                    i = skip_number(a, i);
                    j = skip_number(b, j);
                }
                (Some(x), Some(y)) if x == y => {
                    i += 1;
                    j += 1;
                }
                _ => return false,
            }
        }
    }

    #[test]
    fn same_shape_agrees_with_its_definition() {
        let mut random = crate::random::Random::new(0);
        // `",1"` against `"1"` once disagreed: a run of digits after a separator.
        let mut pairs = vec![(",1".to_owned(), "1".to_owned())];
        for _ in 0..1000 {
            let a = random.string_of("a1.,: 9x", 24);
            let b = random.string_of("a1.,: 9x", 24);
            pairs.push((a, b));
        }
        for (a, b) in pairs {
            assert_eq!(
                same_shape(&a, &b),
                same_shape_reference(&a, &b),
                "{a:?} {b:?}"
            );
            let long_a = format!("prefix that is long enough {a} and a tail");
            let long_b = format!("prefix that is long enough {b} and a tail");
            assert_eq!(
                same_shape(&long_a, &long_b),
                same_shape_reference(&long_a, &long_b),
                "{long_a:?} {long_b:?}"
            );
        }
    }

    #[test]
    fn identical_runs_fold_with_count() {
        let (text, hidden) = run("a\nsame line\nsame line\nsame line\nb\n", post());
        assert_eq!(text, "a\nsame line ×3\nb");
        assert_eq!(
            hidden,
            vec![Hidden {
                lines: 2..4,
                count: 2,
                why: HiddenReason::Duplicate,
                signal: 0
            }]
        );
    }

    #[test]
    fn blank_runs_collapse() {
        let (text, _) = run("\n\na\n\n\n\nb\n\n", post());
        assert_eq!(text, "a\n\nb");
    }

    #[test]
    fn numeric_runs_fold_first_and_last_kept() {
        let input: String = (1..=100).map(|i| format!("step {i}/100\n")).collect();
        let (text, hidden) = run(&input, post());
        assert_eq!(text, "step 1/100\n… 98 similar lines (2-99)\nstep 100/100");
        assert_eq!(hidden[0].lines, 1..99);
        assert_eq!(hidden[0].count, 98);
    }

    #[test]
    fn elision_keeps_errors_from_the_middle() {
        let mut input = String::new();
        for i in 0..200 {
            if i == 100 {
                input.push_str("error: the one that matters\n");
            } else {
                input.push_str(&format!("line {i} {}\n", "x".repeat(i % 7)));
            }
        }
        let mut p = post();
        p.fold_similar = false;
        let (text, hidden) = run(&input, p);
        assert!(text.contains("\nerror: the one that matters\n"), "{text}");
        assert!(text.contains("… 75 lines hidden (26-100)"), "{text}");
        assert!(text.contains("… 74 lines hidden (102-175)"), "{text}");
        let elided: usize = hidden.iter().map(|h| h.count).sum();
        assert_eq!(elided, 149);
    }

    #[test]
    fn clipping_respects_width_and_boundaries() {
        let s = "世".repeat(200);
        let clipped = clip_text(&s, 100);
        assert!(clipped.width() <= 100, "{}", clipped.width());
        assert!(clipped.contains("chars]"));
        // Between words: no path, name or number is cut.
        let words: Vec<String> = (0..60).map(|i| format!("./src/db/report_{i}.py")).collect();
        let line = words.join(" ");
        let clipped = clip_text(&line, 120);
        assert!(clipped.width() <= 120, "{clipped}");
        for piece in clipped.split(' ').filter(|p| p.starts_with("./")) {
            assert!(words.iter().any(|w| w == piece), "{piece} cut in {clipped}");
        }
    }
}
