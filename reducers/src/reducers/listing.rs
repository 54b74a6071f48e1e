//! ls / find / tree: entries whole, packed several to a line. A directory's entries are
//! every one kept (the names are what was asked for); find's and tree's long lists are cut
//! to their first and last entries with a marker that counts the rest and gives their range.

use super::{re, write_list, write_names};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{self, Noise};

re!(
    LONG_ROW,
    r"^([-dlcbpsD])[-rwxsStTl]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+([\d.,]+[KMGTPE]?|\d+,\s*\d+)\s+(\w{3}\s+\d{1,2}\s+[\d:]{4,5}|\d{1,2}\s+\w{3}\s+[\d:]{4,5}|\d{4}-\d\d-\d\d(?:[ T][\d:.]+)?(?: [+-]\d{4})?)\s(.+)$"
);
re!(TOTAL, r"^total \d+[KMGTPE]?$");
re!(DIR_HEADER, r"^\S.*:$");

/// `ls`: long listings become names (directories end in `/`, links show their target,
/// executables end in `*`), every one whole, several to a line; modes, owners, sizes and
/// dates are left out, which the `total` line and a notice ([`LEFT_OUT`]) say.
pub(crate) fn ls<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let long = src.lines.iter().filter(|l| LONG_ROW.is_match(l)).count();
    let other = src
        .lines
        .iter()
        .filter(|l| {
            !l.is_empty() && !LONG_ROW.is_match(l) && !TOTAL.is_match(l) && !DIR_HEADER.is_match(l)
        })
        .count();
    if long > 0 && other <= long / 10 {
        return Some(packed(src, post));
    }
    // One name per line packs no smaller than it is, and a terminal's column layout is
    // already packed: both are left to the generic pipeline.
    None
}

/// The notice of a long listing shown by names, with the way to get the rest back.
const LEFT_OUT: &str =
    "ls -l rows shown by name: modes, links, owners, sizes and dates left out; a raw read (raw: true) shows them";

fn item(line: &str) -> Option<String> {
    let c = LONG_ROW.captures(line)?;
    let name = &c[4];
    let kind = &c[1];
    let exec = line.as_bytes().get(3) == Some(&b'x') && kind == "-";
    Some(match kind {
        "d" => format!("{name}/"),
        "l" => name.to_owned(),
        _ if exec => format!("{name}*"),
        _ => name.to_owned(),
    })
}

fn packed<'a>(src: &Src<'a>, post: Post) -> Out<'a> {
    let mut out = Out::new(post);
    out.post.fold_similar = false;
    out.post.max_lines = None;
    let mut noted = false;
    let n = src.len();
    let mut i = 0;
    while i < n {
        let line = src.line(i);
        if line == "." || line == ".." || line.ends_with(" .") || line.ends_with(" ..") {
            out.hide(src, i, Noise);
            i += 1;
            continue;
        }
        let Some(first) = item(line) else {
            if !noted && TOTAL.is_match(line) {
                out.rewrite(
                    src,
                    format!("{line} (names only; modes, owners, sizes and dates left out)"),
                    i,
                    1,
                );
                noted = true;
            } else if line.starts_with("ls: ") {
                out.pin(src, i);
            } else {
                out.keep(src, i);
            }
            i += 1;
            continue;
        };
        // A run of entries.
        let mut items = vec![first];
        let mut j = i + 1;
        while j < n {
            let l = src.line(j);
            if l == "." || l == ".." || l.ends_with(" .") || l.ends_with(" ..") {
                break;
            }
            match item(l) {
                Some(it) => items.push(it),
                None => break,
            }
            j += 1;
        }
        out.notice(LEFT_OUT);
        write_names(&mut out, src, i, &items, "");
        i = j;
    }
    out
}

re!(FIND_ERROR, r"^(find|fd|locate): ");

/// `find`: paths whole, several to a line, long runs cut to their first and last paths;
/// error lines kept where they stand.
pub(crate) fn find<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    if src.len() < 8 || src.lines.iter().any(|l| l.contains('\t')) {
        return None;
    }
    let mut out = Out::new(post);
    out.post.fold_similar = false;
    out.post.max_lines = None;
    // Error lines (find's own, or anything that reads as one) stay where they are.
    let path = |k: usize| {
        let l = src.line(k);
        !(FIND_ERROR.is_match(l) || l.is_empty() || src.signal[k])
    };
    let n = src.len();
    let mut i = 0;
    while i < n {
        if !path(i) {
            out.pin(src, i);
            i += 1;
            continue;
        }
        let j = i + (i..n).take_while(|&k| path(k)).count();
        let paths: Vec<String> = (i..j).map(|k| src.line(k).to_owned()).collect();
        write_list(&mut out, src, i, &paths, "", "paths");
        i = j;
    }
    Some(out)
}

/// `tree`: a run of more than [`LIST_CAP`](super::LIST_CAP) siblings (lines drawn to the
/// same depth, one after the other) keeps its first and last and hides those between
/// under a marker that counts them; the closing count is pinned.
pub(crate) fn tree<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    use super::{LIST_CAP, LIST_HEAD, LIST_TAIL};
    let depth = |l: &str| {
        l.find(|c: char| !"│├└─ \u{a0}".contains(c))
            .filter(|&at| at > 0 && l[..at].contains(['├', '└']))
            .map(|at| l[..at].chars().count())
    };
    let mut out = Out::new(post);
    out.post.fold_similar = false;
    let n = src.len();
    let mut i = 0;
    while i < n {
        let Some(d) = depth(src.line(i)) else {
            out.keep(src, i);
            i += 1;
            continue;
        };
        // Siblings: same depth, nothing nested between them.
        let j = i
            + (i..n)
                .take_while(|&k| depth(src.line(k)) == Some(d))
                .count();
        if j - i <= LIST_CAP {
            (i..j).for_each(|k| out.keep(src, k));
        } else {
            (i..i + LIST_HEAD).for_each(|k| out.keep(src, k));
            let hidden = i + LIST_HEAD..j - LIST_TAIL;
            let note = out.post.marker(hidden.len(), "more entries", &hidden, 0);
            out.note(note, hidden.start);
            for (m, k) in hidden.clone().enumerate() {
                if m == 0 {
                    out.hide_excerpt_apart(k, HiddenReason::Capped);
                } else {
                    out.hide_excerpt(k, HiddenReason::Capped);
                }
            }
            (hidden.end..j).for_each(|k| out.keep(src, k));
        }
        i = j;
    }
    if let Some(last) = out.entries.iter_mut().rev().find(|e| !e.is_blank()) {
        last.pinned = true;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use crate::{reduce, Options};

    #[test]
    fn a_long_listing_says_what_it_left_out_and_how_to_get_it() {
        let mut raw = String::from("total 24\n");
        raw.push_str("drwxr-xr-x 2 demo demo 4096 Mar  1 10:00 .\n");
        raw.push_str("drwxr-xr-x 9 demo demo 4096 Mar  1 10:00 ..\n");
        for i in 1..=12 {
            raw.push_str(&format!(
                "-rw-r--r-- 1 demo demo {} Mar  1 10:00 data_{i:02}.csv\n",
                i * 37
            ));
        }
        let r = reduce("ls -la", raw.as_bytes(), &Options::default());
        assert_eq!(r.reducer, "ls");
        assert!(r.text.contains("data_01.csv  data_02.csv"), "{}", r.text);
        assert!(
            r.meta_line().ends_with(
                "; ls -l rows shown by name: modes, links, owners, sizes and dates left out; \
                 a raw read (raw: true) shows them"
            ),
            "{}",
            r.meta_line()
        );
        // Without a `total` line (files named on the command line) the notice is all
        // that says so.
        let raw: String = raw.lines().skip(3).map(|l| format!("{l}\n")).collect();
        let r = reduce("ls -l data_*.csv", raw.as_bytes(), &Options::default());
        assert!(r.text.starts_with("data_01.csv  data_02.csv"), "{}", r.text);
        assert_eq!(r.notices.len(), 1, "{}", r.meta_line());
    }
}
