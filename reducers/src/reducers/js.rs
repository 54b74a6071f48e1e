//! npm / pnpm / yarn / bun installs (summary and warnings kept, errors whole, progress and
//! funding chatter dropped), jest / vitest (passing tests and code frames dropped, every
//! failure with its message kept, summaries verbatim) and one-diagnostic-per-line linters
//! such as tsc and eslint (every diagnostic kept; tsc's code frames folded).

use super::{diagnostics, re};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{Detail, Noise, Passed};

re!(
    INSTALL_NOISE,
    r"(?x)
    ^npm\ notice\b | ^\d+\ packages?\ (is|are)\ looking\ for\ funding | ^\s+run\ `npm\ fund`
  | ^Progress:\ resolved\ | ^\+{3,}$ | ^-{3,}$ | ^Downloading\ | ^Already\ up\ to\ date
  | ^\[\d/\d\]\ | ^info\ | ^➤\ YN0000:\ | ^➤\ YN0085:\ | ^Lockfile\ is\ up\ to\ date
  | ^Packages\ are\ hard\ linked | ^Resolving:\ total | ^Progress:\ "
);

/// npm / pnpm / yarn / bun install, add, ci, update.
pub(crate) fn install<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(diagnostics(post));
    for i in 0..src.len() {
        if INSTALL_NOISE.is_match(src.line(i)) {
            out.hide(src, i, Noise);
        } else {
            out.keep(src, i);
        }
    }
    Some(out)
}

re!(
    TEST_MARK,
    r"^(Test Suites:|Tests:|\s*Test Files\s|\s*Tests\s+\d|ℹ tests \d)"
);
// node's runner lists the failures again, after this line.
re!(FAILING_AGAIN, r"^✖ failing tests:$");
re!(PASSING, r"^\s*(✓|√|✔|○ skipped|↓)\s|^PASS\s|^\s*✓\s");
re!(
    FRAME_CODE,
    r"^\s*>?\s*\d+\s?\|(\s|$)|^\s*\|\s*[\^~]+\s*$|^\s+\|\s*$"
);
re!(STACK, r"^\s+at\s");
re!(BAR, r"^[⎯─-]+(\[\d+/\d+\])?[⎯─-]*$");

/// jest, vitest, and npm scripts that run them. Declines output that is neither.
pub(crate) fn test<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    if !src.lines.iter().any(|l| TEST_MARK.is_match(l)) {
        return lint(src, post);
    }
    let mut out = Out::new(diagnostics(post));
    out.post.fold_similar = false;
    let mut stack_kept = false;
    // Lines already shown, and whether the runner is repeating its failures now: a line
    // it repeats is hidden (and counted, when it reads as an error), never shown twice.
    let mut shown: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut again = false;
    for i in 0..src.len() {
        let line = src.line(i);
        if again && !line.trim().is_empty() && shown.contains(line.trim()) {
            out.hide_counted(src, i, Detail);
            continue;
        }
        again |= FAILING_AGAIN.is_match(line);
        if !line.trim().is_empty() {
            shown.insert(line.trim());
        }
        if PASSING.is_match(line) {
            out.hide(src, i, Passed);
        } else if FRAME_CODE.is_match(line) {
            out.hide(src, i, Detail);
        } else if BAR.is_match(line.trim()) && !line.trim().is_empty() {
            out.hide(src, i, Noise);
        } else if STACK.is_match(line) {
            // The first frame says where; the rest is the runner's own machinery.
            if stack_kept {
                out.hide(src, i, Detail);
            } else {
                out.keep(src, i);
                stack_kept = true;
            }
            continue;
        } else {
            out.keep(src, i);
        }
        stack_kept = false;
    }
    Some(out)
}

re!(TSC_FRAME_CODE, r"^\d+\s");
// ruff, flake8, go vet, golangci-lint: `path:line:col: CODE message`, then (ruff) a source
// snippet in a `|` gutter and `= help:` lines.
re!(CODE_DIAG, r"^[^\s:][^:]*:\d+:\d+: \S");
re!(GUTTER_SNIPPET, r"^\s*\d*\s*\|(\s|$)|^\s*= (help|note): ");
re!(TSC_TILDES, r"^\s*~+\s*$");
re!(TSC_DIAG, r"^\S+:\d+:\d+ - (error|warning) TS\d+:");
re!(
    TSC_LINE,
    r"^(\S.*?)\((\d+),(\d+)\): (error|warning) (TS\d+): (.*)$"
);
re!(
    ESLINT_LINE,
    r"^\s+(\d+:\d+)\s+(error|warning)\s+(.*?)(?:\s{2,}(\S+))?$"
);

/// One diagnostic of a file: raw line, location, severity, rule and message.
struct Diag<'t> {
    raw: usize,
    at: String,
    severity: &'t str,
    rule: &'t str,
    message: &'t str,
}

/// tsc, eslint and other linters: every diagnostic kept with its location. Consecutive
/// diagnostics of one file are written under one line naming the file and counting them;
/// when they all break the same rule with the same severity, the rule is said there once
/// instead of on every line. eslint's column padding is collapsed; tsc's pretty code frames
/// are folded. Anything else is kept as it is.
pub(crate) fn lint<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(diagnostics(post));
    out.post.fold_similar = false;
    let mut in_frame = false;
    let n = src.len();
    let mut i = 0;
    while i < n {
        let line = src.line(i);
        if let Some(c) = TSC_LINE.captures(line) {
            // A run of one file's plain tsc diagnostics.
            let file = c.get(1).expect("file").as_str();
            let mut diags = Vec::new();
            let mut j = i;
            while let Some(c) = (j < n).then(|| TSC_LINE.captures(src.line(j))).flatten() {
                if c.get(1).expect("file").as_str() != file {
                    break;
                }
                diags.push(Diag {
                    raw: j,
                    at: format!("{}:{}", &c[2], &c[3]),
                    severity: c.get(4).expect("severity").as_str(),
                    rule: c.get(5).expect("code").as_str(),
                    message: c.get(6).expect("message").as_str(),
                });
                j += 1;
            }
            if diags.len() == 1 {
                out.keep(src, i);
            } else {
                // The lines below leave to this one what it says: it is never elided.
                out.note(format!("{file}: {}", tally(&diags)), i);
                if let Some(note) = out.entries.last_mut() {
                    note.pinned = true;
                }
                write_diags(&mut out, src, &diags, ": ", true);
            }
            in_frame = false;
            i = j;
            continue;
        }
        if ESLINT_LINE.is_match(line) && i > 0 && !src.line(i - 1).starts_with(' ') {
            // eslint's stylish layout: the file's line, then its diagnostics.
            let mut diags = Vec::new();
            let mut j = i;
            while let Some(c) = (j < n).then(|| ESLINT_LINE.captures(src.line(j))).flatten() {
                diags.push(Diag {
                    raw: j,
                    at: c[1].to_owned(),
                    severity: c.get(2).expect("severity").as_str(),
                    rule: c.get(4).map_or("", |m| m.as_str()),
                    message: c.get(3).expect("message").as_str(),
                });
                j += 1;
            }
            let mut named = false;
            if !src.line(i - 1).is_empty() && diags.len() > 1 {
                // The file line was kept just before: say the count on it.
                if let Some(last) = out.entries.last_mut() {
                    if last.raw == i - 1 && last.nraw == 1 {
                        last.text = format!("{} ({})", last.text, tally(&diags)).into();
                        last.verbatim = false;
                        // The lines below leave the rule and severity to this one, so
                        // it is never elided.
                        last.pinned = true;
                        named = true;
                    }
                }
            }
            write_diags(&mut out, src, &diags, "  ", named);
            in_frame = false;
            i = j;
            continue;
        }
        if TSC_DIAG.is_match(line) || CODE_DIAG.is_match(line) {
            // A diagnostic, whatever words it uses: never elided.
            in_frame = true;
            out.pin(src, i);
        } else if in_frame && GUTTER_SNIPPET.is_match(line) {
            // The location says where to read it.
            out.hide_excerpt(i, Detail);
        } else if in_frame && (TSC_FRAME_CODE.is_match(line) || TSC_TILDES.is_match(line)) {
            out.hide(src, i, Detail);
        } else {
            if !line.is_empty() {
                in_frame = false;
            }
            out.keep(src, i);
        }
        i += 1;
    }
    Some(out)
}

/// `3 errors, 2 warnings`, and `all no-undef` when one rule and severity covers them all.
fn tally(diags: &[Diag<'_>]) -> String {
    let errors = diags.iter().filter(|d| d.severity == "error").count();
    let warnings = diags.len() - errors;
    let by_rule = rules_by_severity(diags);
    let plural = |n: usize, w: &str, rules: Option<&Vec<&str>>| {
        let s = if n == 1 { "" } else { "s" };
        match rules {
            Some(rules) => format!("{n} {w}{s} ({})", rules.join(", ")),
            None => format!("{n} {w}{s}"),
        }
    };
    let mut parts = Vec::new();
    if errors > 0 {
        parts.push(plural(errors, "error", by_rule.as_ref().map(|r| &r.0)));
    }
    if warnings > 0 {
        parts.push(plural(warnings, "warning", by_rule.as_ref().map(|r| &r.1)));
    }
    let mut text = parts.join(", ");
    if let Some(rule) = one_rule(diags) {
        text.push_str(&format!(", all {rule}"));
    }
    text
}

/// The rule every diagnostic breaks, when they all break the same one with the same
/// severity.
fn one_rule<'t>(diags: &[Diag<'t>]) -> Option<&'t str> {
    let first = diags.first()?;
    (!first.rule.is_empty()
        && diags.len() > 1
        && diags
            .iter()
            .all(|d| d.rule == first.rule && d.severity == first.severity))
    .then_some(first.rule)
}

/// When each of several rules is reported with one severity only (as a lint configuration
/// does), the rules reported as errors and those reported as warnings, in order of first
/// appearance: the file's line then names them, and each line keeps its rule but not the
/// severity, which the rule determines.
fn rules_by_severity<'t>(diags: &[Diag<'t>]) -> Option<(Vec<&'t str>, Vec<&'t str>)> {
    if diags.len() < 4 || one_rule(diags).is_some() {
        return None;
    }
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for d in diags {
        if d.rule.is_empty() {
            return None;
        }
        match seen.iter().find(|(r, _)| *r == d.rule) {
            Some((_, sev)) if *sev != d.severity => return None,
            Some(_) => {}
            None => seen.push((d.rule, d.severity)),
        }
    }
    let pick = |sev: &str| {
        seen.iter()
            .filter(|(_, s)| *s == sev)
            .map(|(r, _)| *r)
            .collect()
    };
    Some((pick("error"), pick("warning")))
}

/// Writes each diagnostic on a line; when `named` (a line above names the file with its
/// tally), the rule and severity that line says are not repeated.
fn write_diags<'a>(out: &mut Out<'a>, src: &Src<'a>, diags: &[Diag<'_>], sep: &str, named: bool) {
    let shared = named && one_rule(diags).is_some();
    let by_rule = named && rules_by_severity(diags).is_some();
    for d in diags {
        let text = if shared {
            // The file's line names the rule and severity.
            format!("  {} {}", d.at, d.message)
        } else if d.rule.is_empty() {
            format!("  {} {}{sep}{}", d.at, d.severity, d.message)
        } else if by_rule && sep == ": " {
            // The file's line says which rules are errors and which warnings.
            format!("  {} {}: {}", d.at, d.rule, d.message)
        } else if by_rule {
            format!("  {} {}  {}", d.at, d.message, d.rule)
        } else if sep == ": " {
            format!("  {} {} {}: {}", d.at, d.severity, d.rule, d.message)
        } else {
            format!("  {} {}  {}  {}", d.at, d.severity, d.message, d.rule)
        };
        out.rewrite(src, text, d.raw, 1);
    }
}

#[cfg(test)]
mod tests {
    use crate::{reduce, Options};

    #[test]
    fn a_file_line_that_names_the_rule_is_never_elided() {
        // The diagnostics below the file's line leave their severity and rule to it;
        // with a tight budget the middle goes, but that line stays.
        let mut raw = String::new();
        for i in 0..30 {
            raw.push_str(&format!("noise line {i}\n"));
        }
        raw.push_str("/p/x.js\n");
        raw.push_str(
            "  1:5   error  'x' is not defined  no-undef\n"
                .repeat(2)
                .as_str(),
        );
        for i in 0..30 {
            raw.push_str(&format!("more noise {i}\n"));
        }
        let options = Options {
            max_lines: Some(12),
            head: 5,
            tail: 5,
            ..Options::default()
        };
        let r = reduce("eslint .", raw.as_bytes(), &options);
        assert!(
            r.text.contains("/p/x.js (2 errors, all no-undef)"),
            "{}",
            r.text
        );
    }

    #[test]
    fn lint_groups_by_file_and_keeps_every_diagnostic() {
        let raw = "a.ts(1,2): error TS2322: Type A.\na.ts(3,4): error TS2322: Type B.\nb.ts(5,6): error TS2345: Arg.\n";
        assert_eq!(
            reduce("tsc", raw.as_bytes(), &Options::default()).text,
            "a.ts: 2 errors, all TS2322\n  1:2 Type A.\n  3:4 Type B.\nb.ts(5,6): error TS2345: Arg."
        );
        let raw = "\n/p/x.js\n  1:1   warning  Unexpected var                        no-var\n  2:5   error    'y' is not defined                    no-undef\n\n✖ 2 problems (1 error, 1 warning)\n";
        assert_eq!(
            reduce("eslint .", raw.as_bytes(), &Options::default()).text,
            "/p/x.js (1 error, 1 warning)\n  1:1 warning  Unexpected var  no-var\n  2:5 error  'y' is not defined  no-undef\n\n✖ 2 problems (1 error, 1 warning)"
        );
        // Each rule with one severity: the file's line names them, the lines keep the rule.
        let raw = "\n/p/x.js\n  1:1   warning  Unexpected var                        no-var\n  2:5   error    'y' is not defined                    no-undef\n  3:1   warning  Unexpected var                        no-var\n  4:5   error    'z' is not defined                    no-undef\n";
        assert_eq!(
            reduce("eslint .", raw.as_bytes(), &Options::default()).text,
            "/p/x.js (2 errors (no-undef), 2 warnings (no-var))\n  1:1 Unexpected var  no-var\n  2:5 'y' is not defined  no-undef\n  3:1 Unexpected var  no-var\n  4:5 'z' is not defined  no-undef"
        );
    }
}
