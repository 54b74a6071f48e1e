//! Pure output reducers for cohort: a command's raw bytes in, far fewer tokens out, and an
//! exact account of what was left out.
//!
//! [`reduce`] is the entry point. It decodes the bytes (lossy UTF-8, with a notice), cleans
//! every line (CRLF, carriage-return progress bars, ANSI/OSC/DCS sequences, control
//! characters), runs the reducer [`choose_reducer`] picks for the command — or a user's
//! rule from [`UserRules`] — and ends with the generic pipeline: blank runs collapsed,
//! repeated lines folded (`×N`), runs that differ only in numbers folded, head+tail elision
//! and over-long lines clipped. [`Options`] sets the limits; `raw: true` bypasses it all.
//!
//! The result, [`Reduced`], carries the text, the reducer's name, lines and tokens shown vs
//! raw (tokens by [`estimate_tokens`]: characters / 4, rounded up), notices, and every
//! [`Hidden`] range with its [`HiddenReason`], so the caller can say exactly how to get a
//! hidden part back ([`Reduced::meta_line`] renders it).
//!
//! The rules every reducer keeps:
//! - a line that reads as an error, failure, panic, traceback or warning is shown, or counted
//!   in a visible marker;
//! - counts in markers and summaries equal what the raw output holds;
//! - no summary claims more success than the raw output shows: tool summaries are kept
//!   verbatim, not rewritten;
//! - when a reducer does not recognise its output it declines, and the generic pipeline runs;
//! - the text is never longer than the raw output.
//!
//! The crate does no I/O and has no async; it is fast enough to run on every read.
//!
//! # Example
//!
//! ```
//! use cohort_reducers::{reduce, HiddenReason, Options};
//!
//! let mut raw = String::from("   Compiling demo v0.1.0 (/tmp/demo)\n");
//! raw.push_str("warning: unused variable: `x`\n --> src/lib.rs:2:9\n");
//! raw.push_str("  |\n2 |     let x = 5;\n  |         ^ help: prefix it with an underscore: `_x`\n");
//! raw.push_str("  |\n  = note: `#[warn(unused_variables)]` on by default\n\n");
//! raw.push_str("warning: `demo` (lib) generated 1 warning\n");
//! raw.push_str("    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.31s\n");
//!
//! let out = reduce("cargo build", raw.as_bytes(), &Options::default());
//! assert_eq!(out.reducer, "cargo");
//! assert!(out.text.contains("warning: unused variable: `x`\n --> src/lib.rs:2:9"));
//! assert!(out.text.contains("generated 1 warning"));
//! assert!(!out.text.contains("Compiling"));
//! assert!(out.shown_tokens < out.raw_tokens);
//! assert_eq!(out.hidden[0].why, HiddenReason::Noise);
//! assert_eq!(out.hidden[0].display_range(), "1");
//! ```
#![deny(missing_docs)]

mod choose;
mod clean;
pub mod command;
mod decode;
mod doc;
mod large;
mod machine;
mod model;
mod options;
mod pipeline;
mod prepared;
mod reducers;
mod rules;
mod signal;
mod tokens;

#[cfg(test)]
mod random;
#[cfg(test)]
mod tests;
// The test support shared with the integration tests names the crate by its name.
#[cfg(test)]
extern crate self as cohort_reducers;

pub use choose::{choose_reducer, ReducerKind};
pub use model::{ranges_named, Hidden, HiddenReason, Reduced};
pub use options::Options;
pub use prepared::Prepared;
pub use rules::{RulesError, UserRules};
pub use tokens::estimate_tokens;

use doc::{Post, Src};

/// Reduces the raw output of `command` (the command line as typed; it only selects the
/// reducer and is never run).
///
/// Never panics and never fails: unknown commands and unrecognised output get the generic
/// pipeline, invalid UTF-8 and binary output get lossy text and a notice. Outputs over
/// 2 MiB have their head and tail reduced and their middle scanned for errors and
/// warnings (shown or counted), so memory stays near that of a 2 MiB output.
pub fn reduce(command: &str, raw: &[u8], options: &Options) -> Reduced {
    large::reduce(command, raw, options).unwrap_or_else(|| run(command, raw, options, false, 0).0)
}

/// Every cleaned line of `src`, ended as the raw text ends (a trailing newline ends the
/// last line), or `None` when cleaning changed nothing and the raw text says the same.
fn whole_lines(src: &Src<'_>, raw_text: &str) -> Option<String> {
    if src
        .lines
        .iter()
        .all(|l| matches!(l, std::borrow::Cow::Borrowed(_)))
    {
        return None;
    }
    let mut text = String::with_capacity(raw_text.len());
    for (i, line) in src.lines.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(line);
    }
    if raw_text.ends_with('\n') {
        text.push('\n');
    }
    Some(text)
}

/// [`reduce`], and when `spans` is set, the raw line span each shown line stands for (for
/// the invariant tests). Markers name raw lines counting the first as `line_base`.
pub(crate) fn run(
    command: &str,
    raw: &[u8],
    options: &Options,
    spans: bool,
    line_base: usize,
) -> (Reduced, Vec<std::ops::Range<usize>>) {
    let decoded = decode::decode(raw);
    reduce_text(
        command,
        &decoded.text,
        decoded.binary,
        decoded.notices,
        options,
        spans,
        line_base,
        Src::new,
    )
}

/// [`run`] from the decoded text on: `make_src` splits, cleans and classifies its lines
/// (called once, with the text and whether it is binary), so a caller that did that
/// while the output arrived ([`Prepared`]) hands in what it has.
#[allow(clippy::too_many_arguments)]
fn reduce_text<'t>(
    command: &str,
    raw_text: &'t str,
    binary: bool,
    notices: Vec<String>,
    options: &Options,
    spans: bool,
    line_base: usize,
    make_src: impl FnOnce(&'t str, bool) -> Src<'t>,
) -> (Reduced, Vec<std::ops::Range<usize>>) {
    let raw_tokens = estimate_tokens(raw_text);
    let all = |raw_lines: usize| {
        if spans {
            std::iter::once(0..raw_lines).collect()
        } else {
            Vec::new()
        }
    };
    if options.raw {
        let raw_lines = clean::raw_lines(raw_text).count();
        return (
            Reduced {
                text: raw_text.to_owned(),
                reducer: "raw".to_owned(),
                raw_lines,
                shown_lines: raw_lines,
                raw_tokens,
                shown_tokens: raw_tokens,
                hidden: Vec::new(),
                notices,
            },
            all(raw_lines),
        );
    }
    let rule = options.user_rules.as_ref().and_then(|r| r.find(command));
    let machine = rule.is_none() && !options.exact && machine::readable(command, raw_text);
    if machine && raw_text.len() <= options.machine_max {
        // A format asked for to be parsed: every byte as written.
        let raw_lines = make_src(raw_text, binary).len();
        return (
            Reduced {
                text: raw_text.to_owned(),
                reducer: "machine".to_owned(),
                raw_lines,
                shown_lines: raw_text.split_terminator('\n').count(),
                raw_tokens,
                shown_tokens: raw_tokens,
                hidden: Vec::new(),
                notices,
            },
            all(raw_lines),
        );
    }
    let src = make_src(raw_text, binary);
    let raw_lines = src.len();
    let post = Post {
        line_base: options.line_base + line_base,
        ..Post::from_options(options)
    };
    let (reducer, mut out) = match rule {
        _ if options.exact => {
            let post = Post {
                fold_identical: false,
                fold_similar: false,
                max_lines: None,
                width: None,
                ..post
            };
            ("exact".to_owned(), pipeline::generic(&src, post))
        }
        Some(rule) => (format!("user:{}", rule.name), rule.apply(&src, post)),
        None => {
            let kind = choose_reducer(command);
            match reducers::apply(kind, &src, post) {
                Some(out) => (kind.name().to_owned(), out),
                None => ("generic".to_owned(), pipeline::generic(&src, post)),
            }
        }
    };
    // What the reducer left out of the lines it shows; moot if the raw text is returned.
    let mut left_out = std::mem::take(&mut out.notices);
    if machine {
        left_out.push(format!(
            "machine-readable output over {} KiB is reduced like any other: read it with raw: true for every byte",
            options.machine_max >> 10
        ));
    }
    let (entries, hidden) = pipeline::finish(out, &src.signal);
    let text = pipeline::render(&entries);
    let shown_tokens = estimate_tokens(&text);
    if shown_tokens > raw_tokens {
        // Markers cost more than they saved: every line is the better answer, as a
        // terminal shows it (a line a carriage return rewrote reads as rewritten, as the
        // reducers and the facts they keep read it), unless that is somehow longer.
        let (text, tokens) = match whole_lines(&src, raw_text) {
            Some(whole) => {
                let tokens = estimate_tokens(&whole);
                (whole, tokens)
            }
            None => (raw_text.to_owned(), raw_tokens),
        };
        let (text, tokens) = if tokens > raw_tokens {
            (raw_text.to_owned(), raw_tokens)
        } else {
            (text, tokens)
        };
        let shown_lines = text.split_terminator('\n').count();
        return (
            Reduced {
                text,
                reducer: "raw".to_owned(),
                raw_lines,
                shown_lines,
                raw_tokens,
                shown_tokens: tokens,
                hidden: Vec::new(),
                notices,
            },
            all(raw_lines),
        );
    }
    let spans = if spans {
        entries.iter().map(|e| e.raw..e.raw + e.nraw).collect()
    } else {
        Vec::new()
    };
    (
        Reduced {
            text,
            reducer,
            raw_lines,
            shown_lines: entries.len(),
            raw_tokens,
            shown_tokens,
            hidden,
            notices: notices.into_iter().chain(left_out).collect(),
        },
        spans,
    )
}
