//! git status (hints dropped, every path kept whole, packed after its state on every
//! line; short, porcelain and porcelain v2 forms listed by state),
//! git log (medium format: one line per commit with every subject; other formats keep every
//! line, with only columns that are the same on every commit line shown once) and git diff
//! (headers, hunk headers and changed lines kept, context folded).

use super::re;
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{Context, Detail, Noise};

re!(
    HINT,
    r#"^\s+\(use "git .*\)$|^\s+\(commit or discard the untracked or modified content in submodules\)$"#
);
re!(
    SECTION,
    r"^(Changes to be committed|Changes not staged for commit|Untracked files|Unmerged paths|Ignored files):$"
);
re!(
    ENTRY,
    r"^\t(?:(new file|modified|deleted|renamed|copied|typechange|both modified|both added|both deleted|added by us|added by them|deleted by us|deleted by them):\s+)?(.+)$"
);
re!(
    STATUS_HEAD,
    r"^(On branch |HEAD detached |Not currently on any branch|Your branch |nothing to commit|nothing added to commit|no changes added to commit|You are in the middle|All conflicts fixed|You have unmerged paths|interactive rebase|rebase in progress|No commits yet|Initial commit)"
);

/// git status.
pub(crate) fn status<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    if !src
        .lines
        .iter()
        .any(|l| STATUS_HEAD.is_match(l) || SECTION.is_match(l))
    {
        return short_status(src, post);
    }
    let mut out = Out::new(post);
    let n = src.len();
    let mut i = 0;
    while i < n {
        let line = src.line(i);
        if HINT.is_match(line) {
            out.hide(src, i, Noise);
            i += 1;
        } else if SECTION.is_match(line) {
            // Collect the section's entries, then write them grouped by kind and directory.
            let mut j = i + 1;
            let mut entries: Vec<(usize, &str, &str)> = Vec::new();
            let mut hints = Vec::new();
            while j < n {
                let l = src.line(j);
                if HINT.is_match(l) {
                    hints.push(j);
                } else if let Some(c) = ENTRY.captures(l) {
                    let kind = c.get(1).map_or("", |m| m.as_str());
                    entries.push((j, kind, c.get(2).expect("group 2").as_str()));
                } else {
                    break;
                }
                j += 1;
            }
            let header = format!("{} ({}):", line.trim_end_matches(':'), entries.len());
            out.rewrite(src, header, i, 1);
            for h in hints {
                out.hide(src, h, Noise);
            }
            group_paths(&mut out, src, &entries);
            i = j;
        } else {
            out.keep(src, i);
            i += 1;
        }
    }
    Some(out)
}

/// Writes each run of entries of one kind (`modified`, `new file`, untracked …) as a list
/// under its label, every path whole: `  modified: src/a.py  src/b.py`.
fn group_paths<'a>(out: &mut Out<'a>, src: &Src<'a>, entries: &[(usize, &str, &str)]) {
    let mut k = 0;
    while k < entries.len() {
        let (first, kind, _) = entries[k];
        let mut m = k + 1;
        while m < entries.len() && entries[m].1 == kind && entries[m].0 == first + (m - k) {
            m += 1;
        }
        let paths: Vec<String> = entries[k..m].iter().map(|e| e.2.to_owned()).collect();
        let lead = if kind.is_empty() {
            "  ".to_owned()
        } else {
            format!("  {kind}: ")
        };
        super::write_names(out, src, first, &paths, &lead);
        k = m;
    }
}

re!(SHORT_ENTRY, r"^([ MTADRCU?!]{2}) (.+)$");
re!(
    V2_CHANGED,
    r"^1 (\S\S) (\S{4}) (\d{6}) (\d{6}) (\d{6}) [0-9a-f]{7,64} [0-9a-f]{7,64} (.+)$"
);
re!(
    V2_RENAMED,
    r"^2 (\S\S) (\S{4}) (\d{6}) (\d{6}) (\d{6}) [0-9a-f]{7,64} [0-9a-f]{7,64} ([RC]\d{1,3}) ([^\t]+)\t(.+)$"
);
re!(
    V2_UNMERGED,
    r"^u (\S\S) (\S{4}) (\d{6}) (\d{6}) (\d{6}) (\d{6}) [0-9a-f]{7,64} [0-9a-f]{7,64} [0-9a-f]{7,64} (.+)$"
);
re!(V2_OTHER, r"^([?!]) (.+)$");

/// One entry of short or porcelain status: its state code as git printed it, its path, and
/// what else the line says that must stay next to the path (a rename's origin, a mode
/// change, a submodule state).
struct StatusEntry<'t> {
    raw: usize,
    code: &'t str,
    path: &'t str,
    extra: String,
}

/// The modes of a porcelain v2 line, shown only when they say more than the state does:
/// `000000` (absent) follows from an addition or deletion.
fn v2_modes(modes: &[&str]) -> String {
    let mut present: Vec<&str> = modes.iter().copied().filter(|m| *m != "000000").collect();
    present.dedup();
    if present.len() > 1 {
        format!(" [modes {}]", modes.join(" "))
    } else {
        String::new()
    }
}

fn v2_sub(sub: &str) -> String {
    if sub == "N..." {
        String::new()
    } else {
        format!(" [submodule {sub}]")
    }
}

/// `git status -s`, `--porcelain` and `--porcelain=v2`: branch lines kept, entries of the
/// same state in the same directory written as one line with brace ranges only where they
/// are exact; porcelain v2's object names are left out (said once in a note). Declines
/// output with no status entry.
fn short_status<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(post);
    out.post.fold_similar = false;
    let n = src.len();
    let mut found = false;
    let mut v2_noted = false;
    let mut run: Vec<StatusEntry<'_>> = Vec::new();
    for i in 0..n {
        let line = src.line(i);
        let entry = if let Some(c) = V2_CHANGED.captures(line) {
            let extra = v2_sub(&c[2]) + &v2_modes(&[&c[3], &c[4], &c[5]]);
            Some((c.get(1), c.get(6), extra, true))
        } else if let Some(c) = V2_RENAMED.captures(line) {
            let extra = format!(" <- {} ({})", &c[8], &c[6])
                + &v2_sub(&c[2])
                + &v2_modes(&[&c[3], &c[4], &c[5]]);
            Some((c.get(1), c.get(7), extra, true))
        } else if let Some(c) = V2_UNMERGED.captures(line) {
            let extra = v2_sub(&c[2]) + &v2_modes(&[&c[3], &c[4], &c[5], &c[6]]);
            Some((c.get(1), c.get(7), extra, true))
        } else if let Some(c) = V2_OTHER.captures(line) {
            Some((c.get(1), c.get(2), String::new(), false))
        } else {
            SHORT_ENTRY
                .captures(line)
                .filter(|c| &c[1] != "  ")
                .map(|c| (c.get(1), c.get(2), String::new(), false))
        };
        match entry {
            Some((Some(code), Some(path), extra, v2)) => {
                found = true;
                if v2 && !v2_noted {
                    flush_status_run(&mut out, src, &mut run);
                    out.note(
                        "(porcelain v2: object names left out, modes shown only where they change)"
                            .to_owned(),
                        i,
                    );
                    v2_noted = true;
                }
                run.push(StatusEntry {
                    raw: i,
                    code: code.as_str(),
                    path: path.as_str(),
                    extra,
                });
            }
            _ => {
                flush_status_run(&mut out, src, &mut run);
                out.keep(src, i);
            }
        }
    }
    flush_status_run(&mut out, src, &mut run);
    found.then_some(out)
}

/// Writes consecutive status entries, each run of one state as a list after its code,
/// every path whole (with what the line says beside it: a rename's origin, modes).
fn flush_status_run<'a>(out: &mut Out<'a>, src: &Src<'a>, run: &mut Vec<StatusEntry<'_>>) {
    let mut k = 0;
    while k < run.len() {
        let first = &run[k];
        let mut m = k + 1;
        while m < run.len() && run[m].code == first.code && run[m].raw == first.raw + (m - k) {
            m += 1;
        }
        let items: Vec<String> = run[k..m]
            .iter()
            .map(|e| format!("{}{}", e.path, e.extra))
            .collect();
        super::write_names(out, src, first.raw, &items, &format!("{} ", first.code));
        k = m;
    }
    run.clear();
}

re!(COMMIT, r"^commit ([0-9a-f]{7,64})( \(.*\))?$");
re!(
    HEADER_FIELD,
    r"^(Author|AuthorDate|Commit|CommitDate|Date|Merge|Reflog|Reflog message|Notes|gpg|Signed-off-by|Primary key fingerprint)\b.*:"
);
re!(DIFF_GIT, r"^diff --(git|cc|combined) ");
// `--stat`: ` path/to/file.rs     | 12 +++---`; the column padding is dropped, the count
// and git's bar (scaled, so never more exact than it looks) kept.
re!(DIFFSTAT, r"^ (\S.*?) +\| +(\d+ [+-]*|Bin .*)$");
re!(
    DIFF_NOISE,
    r"^(index [0-9a-f]+[.,][.0-9a-f,]+|--- (a/|/dev/null)|\+\+\+ (b/|/dev/null))"
);

/// git log and git show. Only the default (medium) layout is reshaped, to one line per
/// commit: `<hash 12> (<refs>) <subject>`; author, date, merge parents and the body are
/// hidden as detail, with their ranges. Any other layout is left to the generic pipeline.
pub(crate) fn log<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    if !src.lines.first().is_some_and(|l| COMMIT.is_match(l)) {
        return log_lines(src, post);
    }
    let mut out = Out::new(wide(post));
    let n = src.len();
    let mut i = 0;
    while i < n {
        let Some(c) = COMMIT.captures(src.line(i)) else {
            if DIFF_GIT.is_match(src.line(i)) {
                i = diff_section(&mut out, src, i);
            } else {
                out.keep(src, i);
                i += 1;
            }
            continue;
        };
        let hash = &c[1][..c[1].len().min(12)];
        let refs = c.get(2).map_or("", |m| m.as_str());
        // Header lines up to the blank line, then the indented message.
        let mut j = i + 1;
        while j < n && !src.line(j).is_empty() && !COMMIT.is_match(src.line(j)) {
            j += 1;
        }
        let header_end = j;
        // Only git's own header fields are hidden; anything else there is not a log's.
        if !(i + 1..header_end).all(|k| HEADER_FIELD.is_match(src.line(k))) {
            out.keep(src, i);
            i += 1;
            continue;
        }
        if j < n && src.line(j).is_empty() {
            j += 1;
        }
        let subject = (j < n && src.line(j).starts_with("    ")).then_some(j);
        let text = match subject {
            Some(s) => format!("{hash}{refs} {}", src.line(s).trim_start()),
            None => format!("{hash}{refs}"),
        };
        let merge = (i + 1..header_end).any(|k| src.line(k).starts_with("Merge: "));
        let text = if merge {
            format!("{text} [merge]")
        } else {
            text
        };
        out.rewrite(src, text, i, subject.map_or(1, |s| s - i + 1));
        for k in i + 1..subject.unwrap_or(header_end) {
            if !src.line(k).is_empty() {
                out.hide_excerpt(k, Detail);
            }
        }
        // The body: indented lines (and blank lines between them) up to the next commit,
        // a stat block or a diff.
        let mut k = subject.map_or(header_end, |s| s + 1);
        while k < n && (src.line(k).starts_with("    ") || src.line(k).is_empty()) {
            if !src.line(k).is_empty() {
                out.hide_excerpt(k, Detail);
            }
            k += 1;
        }
        i = k;
    }
    Some(out)
}

/// The graph drawn before a commit line by `--graph`.
fn graph_prefix(line: &str) -> usize {
    line.len()
        - line
            .trim_start_matches(['*', '|', '/', '\\', '_', ' '])
            .len()
}

/// A field that varies by nature from commit to commit (an abbreviated hash, a date or
/// time, a time zone, a number, an e-mail address): a column of these may stand between a
/// column that repeats and the subject.
fn atomic(field: &str) -> bool {
    let b = field.as_bytes();
    (b.len() >= 7 && b.iter().all(u8::is_ascii_hexdigit))
        || (!b.is_empty()
            && b.iter().any(u8::is_ascii_digit)
            && b.iter().all(|c| {
                c.is_ascii_digit() || matches!(c, b'-' | b':' | b'.' | b'/' | b'+' | b'T' | b'Z')
            }))
        || (field.starts_with('<') && field.ends_with('>') && field.contains('@'))
}

/// git log in any layout but the default one (`--oneline`, `--format`, `--graph`): every
/// line is kept, in order, never folded as similar. Only a column that is the same on every
/// commit line (one author, one time zone) is shown once in a note and left out of the
/// lines; such a column must lie before the first field that varies freely (the subject)
/// and either be followed by a field such as a date, be made of such fields, or end in
/// punctuation (`Ada Demo:`), so that a subject's first words are never taken for one.
fn log_lines<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(wide(post));
    out.post.fold_similar = false;
    let n = src.len();
    // The fields of each commit line, after its graph.
    let rows: Vec<(usize, Vec<&str>)> = (0..n)
        .filter_map(|i| {
            let line = src.line(i);
            let rest = &line[graph_prefix(line)..];
            (!rest.is_empty()).then(|| (i, rest.split(' ').collect()))
        })
        .collect();
    let fold = if rows.len() >= 5 {
        repeated_columns(&rows.iter().map(|(_, f)| f.as_slice()).collect::<Vec<_>>())
    } else {
        Vec::new()
    };
    if fold.is_empty() {
        for i in 0..n {
            out.keep(src, i);
        }
        return Some(out);
    }
    let first = &rows[0].1;
    let said: Vec<String> = fold
        .iter()
        .map(|r| {
            let what = first[r.clone()].join(" ");
            match r.start {
                0 => format!("\"{what}\" first"),
                k => format!("\"{what}\" after field {k}"),
            }
        })
        .collect();
    out.note(format!("(every commit line: {})", said.join(", ")), 0);
    let mut rows = rows.into_iter().peekable();
    for i in 0..n {
        match rows.peek() {
            Some((at, fields)) if *at == i => {
                let line = src.line(i);
                let graph = &line[..graph_prefix(line)];
                let kept: Vec<&str> = fields
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| !fold.iter().any(|r| r.contains(k)))
                    .map(|(_, f)| *f)
                    .collect();
                out.rewrite(src, format!("{graph}{}", kept.join(" ")), i, 1);
                rows.next();
            }
            _ => out.keep(src, i),
        }
    }
    Some(out)
}

/// The runs of columns (field index ranges) that hold the same text on every row and may be
/// shown once; see [`log_lines`].
fn repeated_columns(rows: &[&[&str]]) -> Vec<std::ops::Range<usize>> {
    let width = rows.iter().map(|r| r.len()).min().unwrap_or(0);
    let mut kinds = Vec::new(); // (same on every row, atomic on every row)
    for k in 0..width.saturating_sub(1) {
        let same = rows.iter().all(|r| r[k] == rows[0][k]) && !rows[0][k].is_empty();
        let atom = rows.iter().all(|r| atomic(r[k]));
        if !same && !atom {
            break;
        }
        kinds.push((same, atom));
    }
    let mut out = Vec::new();
    let mut k = 0;
    while k < kinds.len() {
        if !kinds[k].0 {
            k += 1;
            continue;
        }
        let start = k;
        while k < kinds.len() && kinds[k].0 {
            k += 1;
        }
        let run = start..k;
        let followed_by_field = k < kinds.len() && kinds[k].1;
        let all_atomic = kinds[run.clone()].iter().all(|(_, a)| *a);
        let punctuated = rows[0][k - 1].ends_with([':', ',', '|', ')', ']', '>', ';']);
        let text_len: usize = rows[0][run.clone()].iter().map(|f| f.len() + 1).sum();
        if (followed_by_field || all_atomic || punctuated) && text_len >= 4 {
            out.push(run);
        }
    }
    out
}

/// Diffs and logs are read whole more often than other output: elide only when they are
/// four times longer than the usual limit.
fn wide(mut post: Post) -> Post {
    post.max_lines = post.max_lines.map(|m| m.saturating_mul(4));
    post.head = post.head.saturating_mul(4);
    post.tail = post.tail.saturating_mul(4);
    post
}

/// git diff.
pub(crate) fn diff<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let stat_lines = src.lines.iter().filter(|l| DIFFSTAT.is_match(l)).count();
    if stat_lines == 0 && !src.lines.iter().any(|l| DIFF_GIT.is_match(l)) {
        return None;
    }
    let mut out = Out::new(wide(post));
    out.post.fold_similar = false;
    let mut i = 0;
    while i < src.len() {
        if DIFF_GIT.is_match(src.line(i)) {
            i = diff_section(&mut out, src, i);
        } else {
            match DIFFSTAT.captures(src.line(i)) {
                Some(c) => out.rewrite(src, format!(" {} | {}", c[1].trim_end(), &c[2]), i, 1),
                None => out.keep(src, i),
            }
            i += 1;
        }
    }
    Some(out)
}

/// One file's diff from its `diff --git` line; returns the line after it.
fn diff_section<'a>(out: &mut Out<'a>, src: &Src<'a>, start: usize) -> usize {
    // `diff --git a/x b/x` says `x` twice; once is enough when the names agree.
    let header = src.line(start);
    let same = header.strip_prefix("diff --git a/").and_then(|rest| {
        let half = rest.len().checked_sub(3)? / 2;
        let (a, b) = (rest.get(..half)?, rest.get(half..)?);
        (b.strip_prefix(" b/") == Some(a)).then(|| a.to_owned())
    });
    match same {
        Some(path) => out.rewrite(src, format!("diff --git {path}"), start, 1),
        None => out.keep(src, start),
    }
    let n = src.len();
    let mut i = start + 1;
    // Marker columns of the current hunk's lines; 0 before the first hunk header.
    let mut columns = 0;
    while i < n {
        let line = src.line(i);
        if DIFF_GIT.is_match(line) || COMMIT.is_match(line) {
            break;
        }
        if line.starts_with("@@") {
            columns = hunk_columns(line);
            out.keep(src, i);
        } else if columns == 0 {
            if DIFF_NOISE.is_match(line) {
                out.hide(src, i, Noise);
            } else {
                out.keep(src, i);
            }
        } else {
            match hunk_line(line, columns) {
                Some(HunkLine::Changed) => out.keep(src, i),
                // Context is code, not diagnostics: never counted as an error.
                Some(HunkLine::Context) => out.hide_excerpt(i, Context),
                None => break, // something that is not diff text: let the caller handle it
            }
        }
        i += 1;
    }
    i
}

/// How many marker columns the lines of a hunk have: one in a plain diff (`@@ -a +b @@`),
/// one per parent in a combined diff (`diff --cc`, `@@@ -a -b +c @@@` for a merge of two),
/// that is one less than the `@` that open the header.
fn hunk_columns(header: &str) -> usize {
    (header.len() - header.trim_start_matches('@').len())
        .saturating_sub(1)
        .max(1)
}

/// What a line inside a hunk is.
enum HunkLine {
    /// Added or removed against at least one parent.
    Changed,
    /// The same as in every parent, or `\ No newline at end of file`.
    Context,
}

/// Reads a line of a hunk whose lines start with `columns` marker columns. Only a line whose
/// every column is a blank is context: in a combined diff ` +x` is a line added against
/// the second parent (one side of a merge conflict), not context. Cleaning drops trailing
/// blanks, so a line shorter than its columns counts its missing columns as blanks.
/// `None` for a line that is not diff text.
fn hunk_line(line: &str, columns: usize) -> Option<HunkLine> {
    if line.starts_with('\\') {
        return Some(HunkLine::Context);
    }
    let marks = &line.as_bytes()[..line.len().min(columns)];
    if !marks.iter().all(|b| matches!(b, b' ' | b'+' | b'-')) {
        return None;
    }
    Some(if marks.iter().all(|&b| b == b' ') {
        HunkLine::Context
    } else {
        HunkLine::Changed
    })
}

#[cfg(test)]
mod tests {
    use crate::{reduce, Options};

    fn text(command: &str, raw: &str) -> String {
        reduce(command, raw.as_bytes(), &Options::default()).text
    }

    #[test]
    fn diffstat_loses_its_padding_not_its_counts() {
        let raw = " .github/workflows/lint.yml            | 12 ++++--\n \
                   docs/logo.png                         | Bin 0 -> 5120 bytes\n \
                   src/requests/models.py                | 126 +++++++++++++++------\n \
                   3 files changed, 90 insertions(+), 48 deletions(-)\n";
        assert_eq!(
            text("git diff --stat v1 v2", raw),
            " .github/workflows/lint.yml | 12 ++++--\n \
             docs/logo.png | Bin 0 -> 5120 bytes\n \
             src/requests/models.py | 126 +++++++++++++++------\n \
             3 files changed, 90 insertions(+), 48 deletions(-)"
        );
    }

    #[test]
    fn combined_diff_shows_both_sides_of_a_conflict() {
        let raw = "diff --cc src/mod10.py\n\
                   index 18ff52c,d0bbcdb..0000000\n\
                   --- a/src/mod10.py\n\
                   +++ b/src/mod10.py\n\
                   @@@ -2,7 -2,7 +2,11 @@@\n  import os\n  \n  def a_10(x):\n\
                   ++<<<<<<< HEAD\n +    # TODO (a10, main side)\n++=======\n\
                   +     # TODO (a10, other side)\n++>>>>>>> other\n      if x is None:\n\
                   \x20-    old line of the first parent\n\
                   -     old line of the second parent\n";
        let r = reduce("git diff", raw.as_bytes(), &Options::default());
        assert_eq!(
            r.text,
            "diff --cc src/mod10.py\n\
             @@@ -2,7 -2,7 +2,11 @@@\n\
             ++<<<<<<< HEAD\n +    # TODO (a10, main side)\n++=======\n\
             +     # TODO (a10, other side)\n++>>>>>>> other\n\
             \x20-    old line of the first parent\n\
             -     old line of the second parent"
        );
        let context: Vec<String> = r
            .hidden
            .iter()
            .filter(|h| h.why == crate::HiddenReason::Context)
            .map(|h| h.display_range())
            .collect();
        assert_eq!(context, ["6-8", "14"]);
        // A plain diff keeps its one marker column: ` +x` there is context.
        let raw = "diff --git a/x b/x\n@@ -1,2 +1,2 @@\n +x\n-a\n+b\n";
        assert_eq!(
            text("git diff", raw),
            "diff --git x\n@@ -1,2 +1,2 @@\n-a\n+b"
        );
    }

    #[test]
    fn short_status_keeps_every_path_whole_listed_by_state() {
        let raw = "## main\nM  src/a.py\nM  src/b.py\n M src/m01.py\n M src/m02.py\n M src/m03.py\n M src/m05.py\nR  x.py -> y.py\n?? \"odd name.txt\"\n?? t1.log\n";
        assert_eq!(
            text("git status -sb", raw),
            "## main\nM  src/a.py  src/b.py\n M src/m01.py  src/m02.py  src/m03.py  src/m05.py\n\
             R  x.py -> y.py\n?? \"odd name.txt\"  t1.log"
        );
    }

    #[test]
    fn porcelain_v2_drops_object_names_keeps_renames_and_mode_changes() {
        let raw = "# branch.head main\n1 .M N... 100644 100644 100755 aaaaaaa aaaaaaa run.sh\n2 R. N... 100644 100644 100644 bbbbbbb bbbbbbb R100 new.py\told.py\nu UU N... 100644 100644 100644 100644 c1c1c1c c2c2c2c c3c3c3c both.py\n? tmp/\n";
        let command = "git status --porcelain=v2 --branch";
        // Asked for to be parsed, it comes back byte for byte...
        assert_eq!(text(command, raw), raw);
        // ...and reduced only once it is too large to return whole.
        let large = Options {
            machine_max: 0,
            ..Options::default()
        };
        assert_eq!(
            reduce(command, raw.as_bytes(), &large).text,
            "# branch.head main\n(porcelain v2: object names left out, modes shown only where they change)\n.M run.sh [modes 100644 100644 100755]\nR. new.py <- old.py (R100)\nUU both.py\n? tmp/"
        );
    }

    #[test]
    fn log_columns_fold_only_before_the_subject() {
        let raw: String = (1..=6)
            .map(|i| format!("abc{i:04} Ada Demo 2026-03-0{i} Add module {i}\n"))
            .collect();
        let out = text("git log --format='%h %an %ad %s'", &raw);
        assert!(out.starts_with("(every commit line: \"Ada Demo\" after field 1)\n"));
        for i in 1..=6 {
            assert!(
                out.contains(&format!("abc{i:04} 2026-03-0{i} Add module {i}\n"))
                    || out.ends_with(&format!("Add module {i}"))
            );
        }
        // Subjects that all start alike are not a column: nothing folds.
        let raw: String = (1..=6)
            .map(|i| format!("abc{i:04} Add module {i}\n"))
            .collect();
        assert_eq!(text("git log --oneline", &raw), raw.trim_end());
    }
}
