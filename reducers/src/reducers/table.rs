//! du / df / ps: tables whose largest rows matter most. Long tables keep their header, the
//! largest rows by the size (or CPU and memory) columns, the last row (du's total) and any
//! error, in their original order; the rest are counted with their ranges. `ps` rows that
//! repeat a command (forty workers, forty `sleep`s) keep the first and last of their kind
//! and the busiest.

use super::{re, LIST_CAP, LIST_HEAD, LIST_TAIL};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::Capped;

/// Tables with at most this many rows are shown whole.
const SMALL: usize = 24;
/// Largest rows kept from a long table, per ranking column.
const TOP: usize = 12;

re!(SIZE, r"^([\d.,]+)([KMGTPE]i?B?|B)?$");

/// Parses `12`, `4.0K`, `1,5M`, `3G` into a comparable number.
fn size(s: &str) -> Option<f64> {
    let c = SIZE.captures(s.trim().trim_end_matches('%'))?;
    let n: f64 = c[1].replace(',', ".").parse().ok()?;
    let unit = c.get(2).map_or("", |m| m.as_str());
    let mult = match unit.chars().next() {
        Some('K') => 1e3,
        Some('M') => 1e6,
        Some('G') => 1e9,
        Some('T') => 1e12,
        Some('P') => 1e15,
        Some('E') => 1e18,
        _ => 1.0,
    };
    Some(n * mult)
}

/// Rows that repeat a command (the same text once numbers are ignored) this often fold to
/// their first and last.
const REPEATS: usize = 3;
/// Largest rows kept by each ranking column when repeated rows fold.
const OUTLIERS: usize = 3;

/// Keeps the header rows, the last row, every row that does not parse (errors) and, of a long
/// table, the `TOP` largest rows by each of `columns`; hides the rest with one marker. With
/// `repeats_from`, rows whose text from that column on repeats (the same command, numbers
/// aside) keep only the first and last of their kind and the [`OUTLIERS`] largest.
fn largest<'a>(
    src: &Src<'a>,
    post: Post,
    header_rows: usize,
    columns: &[usize],
    repeats_from: Option<usize>,
) -> Option<Out<'a>> {
    let n = src.len();
    let rows: Vec<usize> = (header_rows..n)
        .filter(|&i| !src.line(i).is_empty())
        .collect();
    let mut out = Out::new(post);
    out.post.fold_similar = false;
    out.post.max_lines = None;
    // Rows of a command that repeats, by the command with its numbers left out.
    let mut kinds: std::collections::HashMap<String, Vec<usize>> = Default::default();
    if let Some(from) = repeats_from {
        for &i in &rows {
            let command: Vec<&str> = src.line(i).split_whitespace().skip(from).collect();
            let shape: String = command
                .join(" ")
                .chars()
                .filter(|c| !c.is_ascii_digit())
                .collect();
            kinds.entry(shape).or_default().push(i);
        }
        kinds.retain(|_, at| at.len() >= REPEATS);
    }
    if rows.len() <= SMALL && kinds.is_empty() {
        for i in 0..n {
            out.keep(src, i);
        }
        return Some(out);
    }
    let mut keep = vec![false; n];
    keep[..header_rows].fill(true);
    if let Some(&last) = rows.last() {
        keep[last] = true;
    }
    // Rows of a kind that repeats keep the kind's first and last and the busiest; the
    // others are kept whole when few, else ranked.
    let repeated: std::collections::HashSet<usize> = kinds.values().flatten().copied().collect();
    let single: Vec<usize> = rows
        .iter()
        .copied()
        .filter(|i| !repeated.contains(i))
        .collect();
    let top = if single.len() <= SMALL {
        for &i in &single {
            keep[i] = true;
        }
        OUTLIERS
    } else {
        TOP
    };
    for at in kinds.values() {
        keep[at[0]] = true;
        keep[at[at.len() - 1]] = true;
    }
    let mut parsed = 0;
    for &col in columns {
        let mut ranked: Vec<(f64, usize)> = Vec::new();
        for &i in &rows {
            match src.line(i).split_whitespace().nth(col).and_then(size) {
                Some(v) => ranked.push((v, i)),
                None => keep[i] = true,
            }
        }
        parsed = parsed.max(ranked.len());
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        for &(_, i) in ranked.iter().take(top) {
            keep[i] = true;
        }
    }
    if parsed * 2 < rows.len() {
        return None; // not the table we expected
    }
    let hidden_rows: Vec<usize> = (0..n)
        .filter(|&i| !keep[i] && !src.line(i).is_empty())
        .collect();
    for (i, &kept) in keep.iter().enumerate() {
        if kept {
            if src.signal[i] {
                out.pin(src, i);
            } else {
                out.keep(src, i);
            }
        } else if !src.line(i).is_empty() {
            out.hide_counted(src, i, Capped);
        }
    }
    if let (Some(&first), Some(&last)) = (hidden_rows.first(), hidden_rows.last()) {
        let signal = hidden_rows.iter().filter(|&&i| src.signal[i]).count();
        let what = format!(
            "repeated or smaller rows hidden in {} ranges",
            count_ranges(&hidden_rows)
        );
        let note = out
            .post
            .marker(hidden_rows.len(), &what, &(first..last + 1), signal);
        out.note(note, n);
    }
    Some(out)
}

fn count_ranges(rows: &[usize]) -> usize {
    1 + rows.windows(2).filter(|w| w[1] != w[0] + 1).count()
}

/// du: rank by the size column (first).
pub(crate) fn du<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    largest(src, post, 0, &[0], None)
}

/// df: rank by the Used column.
pub(crate) fn df<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let header = src
        .lines
        .first()
        .is_some_and(|l| l.starts_with("Filesystem"));
    if !header {
        return None;
    }
    largest(src, post, 1, &[2], None)
}

/// ps: rank by %CPU, %MEM and RSS, whichever the header has.
pub(crate) fn ps<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let header = src.lines.first()?;
    let cols: Vec<&str> = header.split_whitespace().collect();
    let ranking: Vec<usize> = ["%CPU", "%MEM", "RSS", "VSZ", "TIME"]
        .iter()
        .filter_map(|name| cols.iter().position(|c| c == name))
        .filter(|&k| k < 8)
        .collect();
    if ranking.is_empty() {
        return None;
    }
    let command = cols.iter().position(|c| *c == "COMMAND" || *c == "CMD");
    largest(src, post, 1, &ranking, command)
}

re!(
    BAD_STATE,
    r"\b(CrashLoopBackOff|ImagePullBackOff|ErrImagePull|CreateContainerConfigError|Error|OOMKilled|Evicted|Failed|Unknown|Pending|NotReady|Terminating|Restarting|Dead|unhealthy)\b|\bExited \([1-9]\d*\)"
);

re!(CELL_GAP, r"\s{2,}");

/// Tables of one row per object (`docker ps`, `docker images`, `kubectl get`): the header
/// and the rows, their padding dropped when no cell is empty (and a column with one value
/// on every row said once); a long table keeps its first and last rows and every row in a
/// bad state (`CrashLoopBackOff`, `Exited (1)`, `Error`, `Pending` …), the rest counted
/// under one marker with their range. Declines output without a header of capitals.
pub(crate) fn rows<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let header = src.lines.first()?;
    let capitals = header
        .split_whitespace()
        .filter(|w| {
            w.chars()
                .all(|c| c.is_ascii_uppercase() || "-()%/".contains(c))
        })
        .count();
    if capitals < 2 {
        return None;
    }
    let mut out = Out::new(post);
    out.post.fold_similar = false;
    out.post.max_lines = None;
    let n = src.len();
    let rows: Vec<usize> = (1..n).filter(|&i| !src.line(i).is_empty()).collect();
    let keep = |k: usize, i: usize| {
        rows.len() <= LIST_CAP
            || k < LIST_HEAD
            || k >= rows.len() - LIST_TAIL
            || src.signal[i]
            || BAD_STATE.is_match(src.line(i))
    };
    let hidden: Vec<usize> = rows
        .iter()
        .enumerate()
        .filter(|&(k, &i)| !keep(k, i))
        .map(|(_, &i)| i)
        .collect();
    // Cells are two or more blanks apart. When every row has as many as the header, no cell
    // is empty and the padding can go: two blanks still part the cells.
    let cells = |l: &str| CELL_GAP.split(l.trim()).count();
    let columns = cells(header);
    let full = rows.iter().all(|&i| cells(src.line(i)) == columns);
    // A column with one value on every row (of five or more) is said once, in a note.
    let split = |i: usize| -> Vec<&str> { CELL_GAP.split(src.line(i).trim()).collect() };
    let same: Vec<usize> = if full && rows.len() >= 5 {
        (0..columns)
            .filter(|&c| {
                let first = split(rows[0])[c];
                rows.iter().all(|&i| split(i)[c] == first)
            })
            .collect()
    } else {
        Vec::new()
    };
    // Never every column: the rows must still say which object they are.
    let same = if same.len() + 1 >= columns {
        Vec::new()
    } else {
        same
    };
    if !same.is_empty() {
        let head = split(0);
        let said: Vec<String> = same
            .iter()
            .map(|&c| format!("{} {}", head[c], split(rows[0])[c]))
            .collect();
        out.note(format!("(every row: {})", said.join(", ")), 0);
    }
    let show = |out: &mut Out<'a>, i: usize| {
        if full {
            let kept: Vec<&str> = split(i)
                .into_iter()
                .enumerate()
                .filter(|(c, _)| !same.contains(c))
                .map(|(_, cell)| cell)
                .collect();
            out.rewrite(src, kept.join("  "), i, 1);
        } else {
            out.keep(src, i);
        }
    };
    show(&mut out, 0);
    let mut marked = false;
    for (k, &i) in rows.iter().enumerate() {
        if keep(k, i) {
            show(&mut out, i);
            continue;
        }
        if !marked {
            let span = hidden[0]..hidden[hidden.len() - 1] + 1;
            let note = out.post.marker(hidden.len(), "more rows", &span, 0);
            out.note(note, i);
            marked = true;
            out.hide_excerpt_apart(i, Capped);
        } else {
            out.hide_excerpt(i, Capped);
        }
    }
    Some(out)
}
