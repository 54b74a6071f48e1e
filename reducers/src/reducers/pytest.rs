//! pytest: the session header and progress dots dropped, every failure and error kept with
//! its reason (`E` lines, indentation after `E` shortened) and location, traceback source
//! (`>` lines included) folded, the short summary and
//! the final counts line kept word for word. Collection errors stay as loud as pytest made
//! them. Decoration rules (`=====`) are shortened, their words kept.

use super::{diagnostics, re};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{Detail, Noise, Passed};

re!(BANNER, r"^(=+|_+|-+|!+) (.+?) (=+|_+|-+|!+)$");
// The counts line: between `=` rules, or bare under `-q` (`3 failed, 8 passed in 0.02s`).
re!(
    FINAL,
    r"^=+ .*\b(passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?|no tests ran)\b.* =+$|^\d+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?)\b.* in \d+(\.\d+)?s( \([^)]*\))?$|^no tests ran in \d+(\.\d+)?s$"
);
re!(
    HEADER_NOISE,
    r"^(platform |rootdir: |configfile: |plugins: |cachedir: |cache: |testpaths: |Using --randomly-seed|hypothesis profile|benchmark: )"
);
re!(
    PROGRESS,
    r"^\S+\.py [.sxXF E]*\s*\[\s*\d+%\]$|^\S+\.py::\S.* (PASSED|SKIPPED|XFAIL|XPASS|XFAILED)( \(.*\))?\s*\[\s*\d+%\]$|^[.sxXFE]+\s*\[\s*\d+%\]$"
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
    // Names of the failure blocks shown (`test_parse_bad`, `Test.test_x[1]`).
    let mut shown_blocks: Vec<String> = Vec::new();
    // The `E` reasons of the current block.
    let mut reasons: Vec<String> = Vec::new();
    for i in 0..src.len() {
        let line = src.line(i);
        if SEPARATOR.is_match(line) {
            out.hide(src, i, Detail);
            continue;
        }
        if let Some(c) = BANNER.captures(line) {
            let title = c[2].to_owned();
            let bar = &c[1][..1];
            if title == "test session starts" {
                section = title;
                out.hide(src, i, Noise);
                continue;
            }
            if bar == "=" {
                section = title.clone();
            }
            captured = bar == "-" && title.starts_with("Captured");
            reasons.clear();
            if bar == "_" && (section == "FAILURES" || section == "ERRORS") {
                shown_blocks.push(title.clone());
            }
            out.rewrite(src, format!("{bar}{bar} {title} {bar}{bar}"), i, 1);
            if FINAL.is_match(line) || bar == "!" || bar == "_" {
                if let Some(e) = out.entries.last_mut() {
                    e.pinned = true;
                }
            }
            continue;
        }
        let detail_section = section == "FAILURES" || section == "ERRORS";
        // Before the first rule is where `-q` puts its progress dots.
        if (section.is_empty() || section.contains("test session starts"))
            && (HEADER_NOISE.is_match(line) || PROGRESS.is_match(line))
        {
            let why = if PROGRESS.is_match(line) {
                Passed
            } else {
                Noise
            };
            out.hide(src, i, why);
        } else if let Some(id) = failed_shown(line, &shown_blocks) {
            // The reason is a copy of the `E` line shown in the test's block (often cut
            // short with `...`): the id is enough here.
            out.rewrite(src, format!("FAILED {id}"), i, 1);
        } else if DOCS.is_match(line) {
            out.hide(src, i, Noise);
        } else if line.starts_with("PASSED ") && section == "short test summary info" {
            // `-rA` lists every passing test; the counts line says how many passed.
            out.hide(src, i, Passed);
        } else if detail_section {
            if let Some(reason) = line.strip_prefix('E').filter(|r| r.starts_with(' ')) {
                // pytest indents every reason line by seven spaces after the `E`; the
                // reason's own indentation (diff lines) is kept.
                let reason = reason
                    .strip_prefix("       ")
                    .unwrap_or(reason.trim_start());
                out.rewrite(src, format!("E {reason}"), i, 1);
                reasons.push(reason.trim_start().to_owned());
            } else if let Some(at) = repeated_reason(line, &reasons) {
                // `tests/a.py:8: AssertionError` after `E AssertionError: …` (or the whole
                // reason again, with `--tb=line`): the reason is already shown.
                out.rewrite(src, at.to_owned(), i, 1);
            } else if captured || LOCATION.is_match(line) || line.starts_with("----") {
                out.pin(src, i);
            } else {
                // Source lines (`>` marks the failing one), locals, bare `E`: the location
                // line and the `E` reason say what failed and where.
                out.hide(src, i, Detail);
            }
        } else {
            out.keep(src, i);
        }
    }
    Some(out)
}

/// For a location line (`tests/a.py:8: AssertionError: x`) whose text after the location
/// repeats a reason already shown, the location alone.
fn repeated_reason<'l>(line: &'l str, reasons: &[String]) -> Option<&'l str> {
    let at = LOCATION.find(line)?;
    let said = &line[at.end()..];
    let repeated = reasons.iter().any(|r| r.starts_with(said))
        || line
            .rsplit_once(": ")
            .is_some_and(|(_, kind)| reasons.iter().any(|r| r.starts_with(kind)));
    repeated.then(|| line[..at.end()].trim_end_matches([' ', ':']))
}

/// For a `FAILED id - reason` line of a test whose failure block was shown, the id.
fn failed_shown<'l>(line: &'l str, blocks: &[String]) -> Option<&'l str> {
    let (id, _reason) = line.strip_prefix("FAILED ")?.split_once(" - ")?;
    // A block is titled by the test's name, with its class for methods: `Test.test_x`.
    let name = id.split_once("::")?.1.replace("::", ".");
    blocks.contains(&name).then_some(id)
}

#[cfg(test)]
mod tests {
    use crate::{reduce, Options};

    #[test]
    fn line_tracebacks_say_the_reason_once_and_passes_are_counted_not_listed() {
        let raw = "\
============================= test session starts ==============================
collected 4 items

tests/test_inv.py .FF.                                                   [100%]

=================================== FAILURES ===================================
E   KeyError: 'ZZ9'
/srv/app/inventory.py:26: KeyError: 'ZZ9'
E   assert 17.4 == 17.5
/srv/tests/test_inv.py:11
================================== PASSES ==================================
=========================== short test summary info ============================
PASSED tests/test_inv.py::test_add
PASSED tests/test_inv.py::test_list
FAILED tests/test_inv.py::test_remove - KeyError: 'ZZ9'
FAILED tests/test_inv.py::test_total - assert 17.4 == 17.5
========================= 2 failed, 2 passed in 0.03s ==========================
";
        let r = reduce("pytest -rA --tb=line", raw.as_bytes(), &Options::default());
        assert_eq!(r.reducer, "pytest");
        assert!(
            r.text
                .contains("E KeyError: 'ZZ9'\n/srv/app/inventory.py:26\n"),
            "{}",
            r.text
        );
        assert!(!r.text.contains("PASSED"), "{}", r.text);
        assert!(r.text.contains("2 failed, 2 passed"), "{}", r.text);
        assert!(r
            .text
            .contains("FAILED tests/test_inv.py::test_total - assert 17.4 == 17.5"));
    }
}
