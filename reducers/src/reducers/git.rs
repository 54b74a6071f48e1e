//! git status (hints dropped, files grouped and counted, detached HEAD kept), git log
//! (medium format: one line per commit with every subject; other formats untouched) and
//! git diff (headers, hunk headers and changed lines kept, context folded).

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
        return None; // porcelain, short form or an error: the generic pipeline keeps it all
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

/// git's short status code for a long-form entry kind (`modified` → `M`).
fn short_code(kind: &str) -> &'static str {
    match kind {
        "new file" => "A",
        "modified" => "M",
        "deleted" => "D",
        "renamed" => "R",
        "copied" => "C",
        "typechange" => "T",
        "both modified" => "UU",
        "both added" => "AA",
        "both deleted" => "DD",
        "added by us" => "AU",
        "added by them" => "UA",
        "deleted by us" => "DU",
        "deleted by them" => "UD",
        _ => "",
    }
}

/// Writes runs of entries with the same kind and directory as one line each, the kind as
/// git's short code and numbered runs as brace ranges: `  M src/: a.py mod{03..24}.py`.
fn group_paths<'a>(out: &mut Out<'a>, src: &Src<'a>, entries: &[(usize, &str, &str)]) {
    let dir_of = |p: &str| -> (String, String) {
        let p = p.trim_end_matches('/');
        match p.rfind('/') {
            Some(at) => (p[..=at].to_owned(), p[at + 1..].to_owned()),
            None => (String::new(), p.to_owned()),
        }
    };
    let mut k = 0;
    while k < entries.len() {
        let (first, kind, path) = entries[k];
        let (dir, _) = dir_of(path);
        let mut names = Vec::new();
        let mut m = k;
        while m < entries.len()
            && entries[m].1 == kind
            && dir_of(entries[m].2).0 == dir
            && entries[m].0 == first + (m - k)
        {
            let (_, name) = dir_of(entries[m].2);
            let slash = if entries[m].2.ends_with('/') { "/" } else { "" };
            names.push(format!("{name}{slash}"));
            m += 1;
        }
        let kind = match short_code(kind) {
            "" => String::new(),
            code => format!("{code} "),
        };
        let names = super::brace_runs(&names);
        let text = if m - k == 1 && !path.contains(" -> ") {
            format!("  {kind}{path}")
        } else if dir.is_empty() {
            format!("  {kind}{}", names.join(" "))
        } else {
            format!("  {kind}{dir}: {}", names.join(" "))
        };
        out.rewrite(src, text, first, m - k);
        k = m;
    }
}

re!(COMMIT, r"^commit ([0-9a-f]{7,64})( \(.*\))?$");
re!(DIFF_GIT, r"^diff --(git|cc|combined) ");
re!(
    DIFF_NOISE,
    r"^(index [0-9a-f]+[.,][.0-9a-f,]+|--- (a/|/dev/null)|\+\+\+ (b/|/dev/null))"
);

/// git log and git show. Only the default (medium) layout is reshaped, to one line per
/// commit: `<hash 12> (<refs>) <subject>`; author, date, merge parents and the body are
/// hidden as detail, with their ranges. Any other layout is left to the generic pipeline.
pub(crate) fn log<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    if !src.lines.first().is_some_and(|l| COMMIT.is_match(l)) {
        return None;
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
                out.hide_counted(src, k, Detail);
            }
        }
        // The body: indented lines (and blank lines between them) up to the next commit,
        // a stat block or a diff.
        let mut k = subject.map_or(header_end, |s| s + 1);
        while k < n && (src.line(k).starts_with("    ") || src.line(k).is_empty()) {
            if !src.line(k).is_empty() {
                out.hide_counted(src, k, Detail);
            }
            k += 1;
        }
        i = k;
    }
    Some(out)
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
    if !src.lines.iter().any(|l| DIFF_GIT.is_match(l)) {
        return None;
    }
    let mut out = Out::new(wide(post));
    out.post.fold_similar = false;
    let mut i = 0;
    while i < src.len() {
        if DIFF_GIT.is_match(src.line(i)) {
            i = diff_section(&mut out, src, i);
        } else {
            out.keep(src, i);
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
    let mut in_hunk = false;
    while i < n {
        let line = src.line(i);
        if DIFF_GIT.is_match(line) || COMMIT.is_match(line) {
            break;
        }
        if line.starts_with("@@") {
            in_hunk = true;
            out.keep(src, i);
        } else if in_hunk && (line.starts_with('+') || line.starts_with('-')) {
            out.keep(src, i);
        } else if in_hunk && (line.starts_with(' ') || line.is_empty() || line.starts_with('\\')) {
            // Context is code, not diagnostics: hidden even when it mentions an error.
            out.hide_counted(src, i, Context);
        } else if !in_hunk && DIFF_NOISE.is_match(line) {
            out.hide(src, i, Noise);
        } else if in_hunk {
            break; // something that is not diff text: let the caller handle it
        } else {
            out.keep(src, i);
        }
        i += 1;
    }
    i
}
