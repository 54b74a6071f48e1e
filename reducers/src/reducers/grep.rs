//! grep / rg / ag / git grep: hits grouped by file with a count, capped per file and in
//! total, and every hit left out counted with its raw line range.

use super::re;
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::Capped;
use crate::pipeline::marker;

/// Hits shown per file.
const PER_FILE: usize = 4;
/// Hits shown in all.
const TOTAL: usize = 40;

re!(NUMBERED, r"^(.+?)[:-](\d+)[:-](.*)$");
re!(HEADING_HIT, r"^(\d+)[:-](.*)$");
re!(
    TOOL_MESSAGE,
    r"^(grep|rg|ag|git|fatal|error|warning): |^Binary file .* matches$|^binary file matches"
);

struct Hit {
    raw: usize,
    file: String,
    line: String,
    text: String,
}

pub(crate) fn reduce<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let (hits, headings) = parse(src)?;
    let mut out = Out::new(post);
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
        let show = group.len().min(room);
        if group.len() == 1 {
            out.rewrite(
                src,
                format!("{}:{}: {}", file, group[0].line, group[0].text.trim()),
                group[0].raw,
                1,
            );
        } else {
            let header = format!("{file} ({} hits)", group.len());
            match headings.iter().find(|(_, f)| f == file) {
                Some(&(at, _)) if at + 1 == group[0].raw => out.rewrite(src, header, at, 1),
                _ => out.note(header, group[0].raw),
            }
            for h in &group[..show] {
                out.rewrite(src, format!("  {}: {}", h.line, h.text.trim()), h.raw, 1);
            }
        }
        if show < group.len() {
            let rest = &group[show..];
            let signal = rest.iter().filter(|h| src.signal[h.raw]).count();
            for (n, h) in rest.iter().enumerate() {
                if n == 0 {
                    out.hide_counted_apart(src, h.raw, Capped);
                } else {
                    out.hide_counted(src, h.raw, Capped);
                }
            }
            let lines = rest[0].raw..rest[rest.len() - 1].raw + 1;
            out.note(
                format!("  {}", marker(rest.len(), "more hits", &lines, signal)),
                rest[0].raw,
            );
        }
        shown_total += show;
        next_raw = group[group.len() - 1].raw + 1;
        k = end;
    }
    if k < hits.len() {
        let rest = &hits[k..];
        let mut files: Vec<(&str, usize)> = Vec::new();
        for h in rest {
            match files.last_mut() {
                Some((f, c)) if *f == h.file => *c += 1,
                _ => files.push((&h.file, 1)),
            }
        }
        let signal = rest.iter().filter(|h| src.signal[h.raw]).count();
        let lines = rest[0].raw..rest[rest.len() - 1].raw + 1;
        let heading = headings
            .iter()
            .find(|&&(at, _)| at + 1 == rest[0].raw)
            .map(|&(at, _)| at);
        for i in heading.into_iter().chain(lines.clone()) {
            if headings.iter().any(|&(at, _)| at == i) {
                out.hide(src, i, crate::model::HiddenReason::Noise);
            } else if hit_at.contains(&i) && i == lines.start {
                out.hide_counted_apart(src, i, Capped);
            } else if hit_at.contains(&i) {
                out.hide_counted(src, i, Capped);
            } else if !src.line(i).is_empty() {
                out.pin(src, i);
            }
        }
        let listed: Vec<String> = files
            .iter()
            .take(8)
            .map(|(f, c)| format!("{f} ({c})"))
            .collect();
        let more = if files.len() > 8 {
            format!(" and {} more files", files.len() - 8)
        } else {
            String::new()
        };
        out.note(
            format!(
                "{} in {} files: {}{more}",
                marker(rest.len(), "more hits", &lines, signal),
                files.len(),
                listed.join(", ")
            ),
            rest[0].raw,
        );
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
        if let (Some(file), Some(c)) = (heading, HEADING_HIT.captures(l)) {
            hits.push(Hit {
                raw: i,
                file: file.to_owned(),
                line: c[1].to_owned(),
                text: c[2].to_owned(),
            });
        } else if let Some(c) = NUMBERED.captures(l) {
            hits.push(Hit {
                raw: i,
                file: c[1].to_owned(),
                line: c[2].to_owned(),
                text: c[3].to_owned(),
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
