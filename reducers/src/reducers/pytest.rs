//! pytest: the session header and progress dots dropped, every failure and error kept with
//! its reason (`>` line, `E` lines, location), traceback source folded, the short summary and
//! the final counts line kept word for word. Collection errors stay as loud as pytest made
//! them. Decoration rules (`=====`) are shortened, their words kept.

use super::{diagnostics, re};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{Detail, Noise, Passed};

re!(BANNER, r"^(=+|_+|-+|!+) (.+?) (=+|_+|-+|!+)$");
re!(
    FINAL,
    r"^=+ .*\b(passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?|no tests ran)\b.* =+$"
);
re!(
    HEADER_NOISE,
    r"^(platform |rootdir: |configfile: |plugins: |cachedir: |cache: |testpaths: |Using --randomly-seed|hypothesis profile|benchmark: )"
);
re!(
    PROGRESS,
    r"^\S+\.py [.sxXF E]*\s*\[\s*\d+%\]$|^\S+\.py::\S.* (PASSED|SKIPPED|XFAIL|XPASS|XFAILED)( \(.*\))?\s*\[\s*\d+%\]$|^[.sxX]+\s*\[\s*\d+%\]$"
);
re!(LOCATION, r"^[^\s:]+:\d+: ");
re!(SEPARATOR, r"^(_ )+_?$");
re!(DOCS, r"^-- Docs: https://docs\.pytest\.org");

pub(crate) fn reduce<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let recognised = src
        .lines
        .iter()
        .any(|l| FINAL.is_match(l) || l.contains("test session starts"));
    if !recognised {
        return None;
    }
    let mut out = Out::new(diagnostics(post));
    out.post.fold_similar = false;
    // Which section a line is in: "" before the first banner.
    let mut section = String::new();
    let mut captured = false;
    for i in 0..src.len() {
        let line = src.line(i);
        if SEPARATOR.is_match(line) {
            out.hide(src, i, Detail);
            continue;
        }
        if let Some(c) = BANNER.captures(line) {
            let title = c[2].to_owned();
            let bar = &c[1][..1];
            if bar == "=" {
                section = title.clone();
            }
            captured = bar == "-" && title.starts_with("Captured");
            out.rewrite(src, format!("{bar}{bar} {title} {bar}{bar}"), i, 1);
            if FINAL.is_match(line) || bar == "!" || bar == "_" {
                if let Some(e) = out.entries.last_mut() {
                    e.pinned = true;
                }
            }
            continue;
        }
        let detail_section = section == "FAILURES" || section == "ERRORS";
        if section.contains("test session starts")
            && (HEADER_NOISE.is_match(line) || PROGRESS.is_match(line))
        {
            let why = if PROGRESS.is_match(line) {
                Passed
            } else {
                Noise
            };
            out.hide(src, i, why);
        } else if DOCS.is_match(line) {
            out.hide(src, i, Noise);
        } else if detail_section {
            if captured
                || line.starts_with('>')
                || line.starts_with("E ")
                || line == "E"
                || LOCATION.is_match(line)
                || line.starts_with("----")
            {
                out.pin(src, i);
            } else {
                out.hide(src, i, Detail);
            }
        } else {
            out.keep(src, i);
        }
    }
    Some(out)
}
