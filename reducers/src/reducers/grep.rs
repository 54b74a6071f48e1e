//! grep / rg / ag / git grep: hits grouped by file with a count, capped per file and in
//! total, and every hit left out counted with its raw line range. With context (`-C`,
//! `-A`, `-B`), counts are of matching lines only; context lines show with the matches
//! they surround (`12-text`) and fold as detail with the ones left out. The text of
//! every line shown is the raw text, whitespace and all.

use super::re;
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{Capped, Detail, Noise};

/// Hits shown per file.
const PER_FILE: usize = 3;
/// Hits shown in all.
const TOTAL: usize = 30;
/// Files named, with their counts, after the hits past [`TOTAL`].
const FILES_LISTED: usize = 24;
/// The widest a line of file names grows (names are never cut).
const LINE_WIDTH: usize = 100;

re!(MATCHED, r"^(.+?):(\d+):(.*)$");
re!(CONTEXT, r"^(.+?)-(\d+)-(.*)$");
re!(HEADING_HIT, r"^(\d+)([:-])(.*)$");
/// Between context blocks.
const BLOCK_SEPARATOR: &str = "--";
re!(
    TOOL_MESSAGE,
    r"^(grep|rg|ag|git|fatal|error|warning): |^Binary file .* matches$|^binary file matches"
);

struct Hit {
    raw: usize,
    file: String,
    line: String,
    text: String,
    /// A matching line, not context around one.
    matched: bool,
}

impl Hit {
    /// `:` after the line number of a matching line, `-` after that of a context line, as
    /// grep and rg print them.
    fn sep(&self) -> char {
        if self.matched {
            ':'
        } else {
            '-'
        }
    }

    /// The line as shown under its file's heading, as rg's heading layout prints it: the
    /// number, the separator and the line's text verbatim (its indentation is part of what
    /// matched); only the path is left out.
    fn shown(&self) -> String {
        format!("{}{}{}", self.line, self.sep(), self.text)
    }
}

fn hits_word(n: usize) -> &'static str {
    if n == 1 {
        "hit"
    } else {
        "hits"
    }
}

pub(crate) fn reduce<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let (hits, headings) = parse(src)?;
    let mut out = Out::new(post);
    let matched = hits.iter().filter(|h| h.matched).count();
    let mut files: Vec<&str> = hits.iter().map(|h| h.file.as_str()).collect();
    files.sort_unstable();
    files.dedup();
    if files.len() > 1 {
        out.note(
            format!("{matched} {} in {} files", hits_word(matched), files.len()),
            0,
        );
    }
    out.post.fold_similar = false;
    out.post.max_lines = None; // the caps below bound the output
    let mut shown_total = 0;
    let mut k = 0;
    // Tool messages (errors, binary matches) are pinned where they stand.
    let mut hit_at: std::collections::HashSet<usize> = hits.iter().map(|h| h.raw).collect();
    hit_at.extend(headings.iter().map(|&(at, _)| at));
    let mut next_raw = 0;
    let flush_messages = |out: &mut Out<'a>, upto: usize, next_raw: &mut usize| {
        while *next_raw < upto {
            if !hit_at.contains(next_raw) {
                let l = src.line(*next_raw);
                if TOOL_MESSAGE.is_match(l) {
                    out.pin(src, *next_raw);
                } else if !l.is_empty() {
                    out.keep(src, *next_raw);
                }
            }
            *next_raw += 1;
        }
    };
    while k < hits.len() {
        let file = &hits[k].file;
        let end = k + hits[k..].iter().take_while(|h| &h.file == file).count();
        flush_messages(&mut out, hits[k].raw, &mut next_raw);
        let group = &hits[k..end];
        let room = TOTAL.saturating_sub(shown_total).min(PER_FILE);
        if room == 0 {
            break;
        }
        let matches = group.iter().filter(|h| h.matched).count();
        // A marker costs a line: one hit past the room is shown instead.
        let room = if matches == room + 1 { matches } else { room };
        if group.len() == 1 {
            let hit = &group[0];
            out.rewrite(
                src,
                format!("{}:{}{}{}", file, hit.line, hit.sep(), hit.text),
                hit.raw,
                1,
            );
            shown_total += 1;
        } else {
            let header = format!("{file} ({matches} {})", hits_word(matches));
            match headings.iter().find(|(_, f)| f == file) {
                Some(&(at, _)) if at + 1 == group[0].raw => out.rewrite(src, header, at, 1),
                _ => out.note(header, group[0].raw),
            }
            // Matches (with their context) until the room is used; then every line is
            // left out: matches counted under the marker, context as detail.
            let first = group[0].raw;
            let last = group[group.len() - 1].raw;
            // The matches past the room, counted under one marker where the first is.
            let capped: Vec<&Hit> = group.iter().filter(|h| h.matched).skip(room).collect();
            let capped_from = capped.first().map(|h| h.raw);
            let mut marker = capped_from.map(|from| {
                out.post.marker(
                    capped.len(),
                    &format!("more {}", hits_word(capped.len())),
                    &(from..last + 1),
                    0,
                )
            });
            let mut by_raw = group.iter().peekable();
            for i in first..=last {
                let past_room = capped_from.is_some_and(|from| i >= from);
                let Some(h) = by_raw.next_if(|h| h.raw == i) else {
                    let l = src.line(i);
                    if TOOL_MESSAGE.is_match(l) {
                        out.pin(src, i);
                    } else if l == BLOCK_SEPARATOR && past_room {
                        out.hide(src, i, Noise);
                    } else if !l.is_empty() {
                        out.keep(src, i);
                    }
                    continue;
                };
                match (past_room, h.matched) {
                    (false, _) => out.rewrite(src, h.shown(), i, 1),
                    (true, true) if capped_from == Some(i) => {
                        out.note(marker.take().unwrap_or_default(), i);
                        out.hide_excerpt_apart(i, Capped);
                    }
                    (true, true) => out.hide_excerpt(i, Capped),
                    (true, false) => out.hide_excerpt(i, Detail),
                }
            }
            shown_total += matches.min(room);
        }
        next_raw = group[group.len() - 1].raw + 1;
        k = end;
    }
    if k < hits.len() {
        let rest = &hits[k..];
        let mut files: Vec<(&str, usize)> = Vec::new();
        for h in rest {
            let matched = usize::from(h.matched);
            match files.last_mut() {
                Some((f, c)) if *f == h.file => *c += matched,
                _ => files.push((&h.file, matched)),
            }
        }
        let matched_at: std::collections::HashSet<usize> =
            rest.iter().filter(|h| h.matched).map(|h| h.raw).collect();
        let lines = rest[0].raw..rest[rest.len() - 1].raw + 1;
        let heading = headings
            .iter()
            .find(|&&(at, _)| at + 1 == rest[0].raw)
            .map(|&(at, _)| at);
        let mut first_capped = true;
        for i in heading.into_iter().chain(lines.clone()) {
            if headings.iter().any(|&(at, _)| at == i) || src.line(i) == BLOCK_SEPARATOR {
                out.hide(src, i, Noise);
            } else if matched_at.contains(&i) && first_capped {
                out.hide_excerpt_apart(i, Capped);
                first_capped = false;
            } else if matched_at.contains(&i) {
                out.hide_excerpt(i, Capped);
            } else if hit_at.contains(&i) {
                out.hide_excerpt(i, Detail);
            } else if !src.line(i).is_empty() {
                out.pin(src, i);
            }
        }
        let more = format!("more {}", hits_word(matched_at.len()));
        let hits = out.post.marker(matched_at.len(), &more, &lines, 0);
        out.note(format!("{hits} in {} files:", files.len()), rest[0].raw);
        // Every file with its count, whole, several to a line; past a few lines, how many
        // more files there are.
        let mut line = String::from(" ");
        let mut written = 0;
        for (f, c) in &files {
            let item = format!(" {f} ({c})");
            if line.len() + item.len() > LINE_WIDTH && written > 0 {
                out.note(std::mem::replace(&mut line, String::from(" ")), rest[0].raw);
                if written >= FILES_LISTED {
                    break;
                }
            }
            line.push_str(&item);
            written += 1;
        }
        if written < files.len() {
            line = format!("  and {} more files", files.len() - written);
        }
        if line.trim() != "" {
            out.note(line, rest[0].raw);
        }
        // Anything after the last hit (an error at the end) is still shown.
        for (i, l) in src
            .lines
            .iter()
            .enumerate()
            .skip(rest[rest.len() - 1].raw + 1)
        {
            if TOOL_MESSAGE.is_match(l) {
                out.pin(src, i);
            } else if !l.is_empty() {
                out.keep(src, i);
            }
        }
    } else {
        flush_messages(&mut out, src.len(), &mut next_raw);
    }
    Some(out)
}

/// Reads `path:line:text` lines, or rg's heading layout (a path, then `line:text` lines).
/// `None` when most lines are neither (grep without -n, -c, -l…: the generic pipeline).
/// rg's heading lines: raw line and path.
type Headings = Vec<(usize, String)>;

fn parse(src: &Src<'_>) -> Option<(Vec<Hit>, Headings)> {
    let mut hits = Vec::new();
    let mut headings = Vec::new();
    let mut heading: Option<&str> = None;
    let mut other = 0;
    for (i, l) in src.lines.iter().enumerate() {
        if l.is_empty() {
            heading = None;
            continue;
        }
        if TOOL_MESSAGE.is_match(l) {
            continue;
        }
        if l == BLOCK_SEPARATOR {
            continue;
        }
        if let (Some(file), Some(c)) = (heading, HEADING_HIT.captures(l)) {
            hits.push(Hit {
                raw: i,
                file: file.to_owned(),
                line: c[1].to_owned(),
                text: c[3].to_owned(),
                matched: &c[2] == ":",
            });
        } else if let Some((c, matched)) = MATCHED
            .captures(l)
            .map(|c| (c, true))
            .or_else(|| CONTEXT.captures(l).map(|c| (c, false)))
        {
            hits.push(Hit {
                raw: i,
                file: c[1].to_owned(),
                line: c[2].to_owned(),
                text: c[3].to_owned(),
                matched,
            });
        } else if src
            .lines
            .get(i + 1)
            .is_some_and(|n| HEADING_HIT.is_match(n))
        {
            heading = Some(l);
            headings.push((i, l.to_string()));
        } else {
            other += 1;
        }
    }
    (!hits.is_empty() && other * 4 <= hits.len()).then_some((hits, headings))
}

#[cfg(test)]
mod tests {
    use crate::{reduce, Options};

    /// `grep -rn -C1 raise`: six matches in one file, context around each.
    fn with_context() -> String {
        let mut raw = String::new();
        for (n, line) in [10, 20, 30, 40, 50, 60].iter().enumerate() {
            if n > 0 {
                raw.push_str("--\n");
            }
            raw.push_str(&format!("app/models.py-{}-    if bad:\n", line - 1));
            raw.push_str(&format!(
                "app/models.py:{line}:        raise ValueError(\"case {n}\")\n"
            ));
            raw.push_str(&format!("app/models.py-{}-    return x\n", line + 1));
        }
        raw
    }

    #[test]
    fn context_lines_are_not_counted_as_hits() {
        let r = reduce(
            "grep -rn -C1 raise app",
            with_context().as_bytes(),
            &Options::default(),
        );
        assert_eq!(r.reducer, "grep");
        let lines: Vec<&str> = r.text.lines().collect();
        assert_eq!(lines[0], "app/models.py (6 hits)", "{}", r.text);
        // Three matches shown with their context, the other three counted.
        assert!(
            r.text.contains(
                "9-    if bad:\n10:        raise ValueError(\"case 0\")\n11-    return x"
            ),
            "{}",
            r.text
        );
        assert_eq!(
            r.text.matches(":        raise ValueError").count(),
            3,
            "{}",
            r.text
        );
        assert!(r.text.contains("… 3 more hits"), "{}", r.text);
    }

    #[test]
    fn matched_text_keeps_its_whitespace() {
        let mut raw = String::new();
        for i in 0..30 {
            raw.push_str(&format!("./mod_{i:02}.py:2:    return x\n"));
            raw.push_str(&format!("./mod_{i:02}.py:9:\treturn  x  # two\n"));
        }
        raw.push_str("./single.py:4:        return x\n");
        let r = reduce("grep -rn return .", raw.as_bytes(), &Options::default());
        assert_eq!(r.reducer, "grep");
        assert!(
            r.text
                .contains("./mod_00.py (2 hits)\n2:    return x\n9:\treturn  x  # two\n"),
            "{}",
            r.text
        );
        let r = reduce(
            "grep -rn return .",
            b"./single.py:4:        return x\n",
            &Options::default(),
        );
        assert_eq!(r.text, "./single.py:4:        return x");
        // rg's heading layout.
        let mut raw = String::from("src/a.py\n2:    return x\n7:\t\tpass\n");
        for i in 0..10 {
            raw.push_str(&format!("\nsrc/b{i}.py\n"));
            for n in 1..=8 {
                raw.push_str(&format!("{n}:  y = {n}\n"));
            }
        }
        let r = reduce("rg -n --heading x", raw.as_bytes(), &Options::default());
        assert_eq!(r.reducer, "grep");
        assert!(
            r.text
                .contains("src/a.py (2 hits)\n2:    return x\n7:\t\tpass\n"),
            "{}",
            r.text
        );
    }

    #[test]
    fn a_single_match_with_context_says_one_hit() {
        let raw = "src/service/handlers.py-1-            value = compute(request)\n\
                   src/service/handlers.py:2:            raise Boom(value)\n\
                   src/service/handlers.py-3-            return value\n";
        let r = reduce(
            "grep -n -C1 raise a.py",
            raw.as_bytes(),
            &Options::default(),
        );
        assert!(
            r.text.starts_with("src/service/handlers.py (1 hit)\n"),
            "{}",
            r.text
        );
    }
}
