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
    r"^(Test Suites:|Tests:|\s*Test Files\s|\s*Tests\s+\d)"
);
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
    for i in 0..src.len() {
        let line = src.line(i);
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
re!(TSC_TILDES, r"^\s*~+\s*$");
re!(TSC_DIAG, r"^\S+:\d+:\d+ - (error|warning) TS\d+:");

/// tsc, eslint and other linters: every line kept except tsc's pretty code frames.
/// Lint output has no progress noise; the generic pipeline and the error budget (all of
/// them) do the rest.
pub(crate) fn lint<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(diagnostics(post));
    out.post.fold_similar = false;
    let mut in_frame = false;
    for i in 0..src.len() {
        let line = src.line(i);
        if TSC_DIAG.is_match(line) {
            in_frame = true;
            out.keep(src, i);
        } else if in_frame && (TSC_FRAME_CODE.is_match(line) || TSC_TILDES.is_match(line)) {
            out.hide(src, i, Detail);
        } else {
            if !line.is_empty() {
                in_frame = false;
            }
            out.keep(src, i);
        }
    }
    Some(out)
}
