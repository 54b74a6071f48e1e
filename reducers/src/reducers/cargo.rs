//! cargo build / check / clippy / run and cargo test / nextest: progress lines dropped,
//! every diagnostic kept as its headline and location (source snippet, labels and notes
//! folded as detail), passing tests dropped (the summary counts them),
//! failures kept with their panic message, every `test result:` line kept as it is.
//! JSON diagnostics (`--message-format=json`) are read, one line each.

use super::{diagnostics, re};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{Detail, Noise, Passed};

re!(
    PROGRESS,
    r"^\s*(Compiling|Checking|Downloaded|Downloading|Updating|Locking|Adding|Blocking|Fresh|Documenting|Packaging|Verifying|Archiving|Unpacking|Installing|Replacing|Removing|Fetching|Building|Running|Doc-tests|Nextest run ID|Starting) "
);
re!(TEST_OK, r"^\s*test .+ \.\.\. (ok|ignored)$");
re!(NEXTEST_PASS, r"^\s+(PASS|SKIP) \[");
re!(FRAME, r"^\s*\d+: \S");
re!(FRAME_AT, r"^\s+at \S");
re!(GUTTER, r"^\s*\|\s*$");
re!(
    NOTE_NOISE,
    r"^\s*= note: `#\[(warn|deny)\(.*\)\]`.* on by default$|^\s*= note: `#\[(warn|deny)\(.*\)\]` implied by|^\s*= help: for further information visit https://rust-lang\.github\.io|^For more information about (this|an) error, try `rustc --explain"
);
re!(
    BACKTRACE_NOTE,
    r"^\s*note: (run with `RUST_BACKTRACE=1`|Some details are omitted, run with `RUST_BACKTRACE=full`)"
);
re!(RULE, r"^\s*─+\s*$");
re!(LIBTEST_NOISE, r"^\s*running \d+ tests?$");
re!(DIAG_HEADER, r"^(error|warning)(\[\w+\])?: ");
re!(ARROW, r"^\s*--> \S");
// What follows a diagnostic's headline: indented snippet and labels, gutter lines, notes.
re!(
    BODY,
    r"^(\s|\d+\s*\||\d+ [-+~] |(help|note|suggestion)(\[\w+\])?: |\.\.\.$)"
);
re!(
    EXPLAIN,
    r"^Some errors have detailed explanations: |^\.\.\.$"
);

pub(crate) fn reduce<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(diagnostics(post));
    let n = src.len();
    let mut in_diag = false;
    // Whether the current diagnostic's ` --> file:line:col` was seen.
    let mut located = false;
    let mut i = 0;
    while i < n {
        let line = src.line(i);
        if line.starts_with("{\"reason\":") || line.starts_with("{\"$message_type\":") {
            json_line(&mut out, src, i);
            i += 1;
            continue;
        }
        let header = DIAG_HEADER.is_match(line);
        if header {
            in_diag = true;
            located = false;
        } else if line.is_empty() || !BODY.is_match(line) {
            in_diag = false;
        }
        if in_diag && !header && !located && ARROW.is_match(line) {
            // The diagnostic's location: kept with its headline.
            located = true;
            out.keep(src, i);
        } else if in_diag && !header && NOTE_NOISE.is_match(line) {
            // `= note: #[warn(unused)] on by default` holds the word but only names the
            // lint: hidden, never counted as a warning.
            out.hide_excerpt(i, Detail);
        } else if in_diag && !header {
            // Source snippet, span labels, `= note`/`= help` and sub-notes: detail behind
            // the headline and location, which say where to read it.
            out.hide(src, i, Detail);
        } else if line.trim_start() == "failures:" && heads_nothing(src, i + 1) {
            // A header whose block is empty (nextest runs one test a process): a heading,
            // not a failure of its own.
            out.hide_excerpt(i, Noise);
        } else if EXPLAIN.is_match(line)
            || PROGRESS.is_match(line)
            || LIBTEST_NOISE.is_match(line)
            || RULE.is_match(line)
            || BACKTRACE_NOTE.is_match(line)
        {
            out.hide(src, i, Noise);
        } else if TEST_OK.is_match(line) || NEXTEST_PASS.is_match(line) {
            out.hide(src, i, Passed);
        } else if GUTTER.is_match(line)
            || NOTE_NOISE.is_match(line)
            || line.trim() == "stack backtrace:"
        {
            out.hide(src, i, Detail);
        } else if FRAME.is_match(line) {
            // A backtrace frame: kept when it points into the project (`at ./src/…`).
            let at = (i + 1 < n && FRAME_AT.is_match(src.line(i + 1))).then_some(i + 1);
            let own = at.is_some_and(|a| src.line(a).trim_start().starts_with("at ./"));
            for j in std::iter::once(i).chain(at) {
                if own {
                    out.keep(src, j);
                } else {
                    out.hide(src, j, Detail);
                }
            }
            i = at.unwrap_or(i) + 1;
            continue;
        } else if line.trim_start() == "failures:" && is_name_list(src, i + 1) {
            // The second `failures:` block only lists the names already shown as FAILED.
            out.hide_excerpt(i, Noise);
            let mut j = i + 1;
            while j < n && !src.line(j).is_empty() {
                out.hide(src, j, Detail);
                j += 1;
            }
            i = j;
            continue;
        } else {
            out.keep(src, i);
        }
        i += 1;
    }
    Some(out)
}

/// One line of `--message-format=json` (cargo) or `--error-format=json` (rustc): a
/// diagnostic becomes `file:line:col: level[code]: message` in its place, the JSON line
/// itself hidden as detail and, for an error or a warning, counted as one; the build's
/// artifacts and notes are hidden; anything that does not parse stays as it is.
fn json_line<'a>(out: &mut Out<'a>, src: &Src<'a>, i: usize) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(src.line(i)) else {
        out.keep(src, i);
        return;
    };
    let message = match v["reason"].as_str() {
        Some("compiler-message") => &v["message"],
        None if v["$message_type"] == "diagnostic" => &v,
        Some("build-finished") if v["success"] == false => {
            out.keep(src, i);
            return;
        }
        _ => {
            out.hide(src, i, Noise);
            return;
        }
    };
    let level = message["level"].as_str().unwrap_or("");
    if !matches!(level, "error" | "warning") {
        out.hide_excerpt(i, Noise);
        return;
    }
    let mut text = String::new();
    let primary = message["spans"]
        .as_array()
        .and_then(|spans| spans.iter().find(|s| s["is_primary"] == true));
    if let Some(span) = primary {
        text.push_str(&format!(
            "{}:{}:{}: ",
            span["file_name"].as_str().unwrap_or("?"),
            span["line_start"],
            span["column_start"]
        ));
    }
    text.push_str(level);
    if let Some(code) = message["code"]["code"].as_str() {
        text.push_str(&format!("[{code}]"));
    }
    text.push_str(": ");
    text.push_str(message["message"].as_str().unwrap_or(""));
    out.note(text, i);
    if let Some(e) = out.entries.last_mut() {
        e.pinned = true;
    }
    crate::doc::record(&mut out.hidden, i, Detail, true);
}

/// Whether the block that would follow a `failures:` header at `from` is empty: the next
/// line that is not blank is another header or the result.
fn heads_nothing(src: &Src<'_>, from: usize) -> bool {
    let next = src.lines[from.min(src.len())..]
        .iter()
        .find(|l| !l.trim().is_empty());
    next.is_none_or(|l| {
        let l = l.trim_start();
        l == "failures:" || l.starts_with("test result:")
    })
}

fn is_name_list(src: &Src<'_>, from: usize) -> bool {
    let names: Vec<&str> = src.lines[from.min(src.len())..]
        .iter()
        .map(|l| &**l)
        .take_while(|l| !l.is_empty())
        .collect();
    !names.is_empty()
        && names
            .iter()
            .all(|l| l.starts_with("    ") && !l.trim().contains(' ') && !l.trim().ends_with(':'))
}

#[cfg(test)]
mod tests {
    use crate::{reduce, HiddenReason, Options};

    #[test]
    fn json_diagnostics_are_read_one_line_each() {
        let raw = concat!(
            r#"{"$message_type":"diagnostic","message":"cannot find value `x` in this scope","code":{"code":"E0425","explanation":null},"level":"error","spans":[{"file_name":"main.rs","line_start":2,"column_start":13,"is_primary":true}],"children":[],"rendered":"error[E0425]: cannot find value `x` in this scope\n"}"#,
            "\n",
            r#"{"$message_type":"diagnostic","message":"For more information about this error, try `rustc --explain E0425`.","code":null,"level":"failure-note","spans":[],"children":[],"rendered":"..."}"#,
            "\n",
        );
        // Asked for as JSON, it comes back byte for byte...
        let command = "rustc --error-format=json main.rs";
        let r = reduce(command, raw.as_bytes(), &Options::default());
        assert_eq!((r.text.as_str(), r.reducer.as_str()), (raw, "machine"));
        // ...and read one line each once it is too large to return whole.
        let large = Options {
            machine_max: 0,
            ..Options::default()
        };
        let r = reduce(command, raw.as_bytes(), &large);
        assert_eq!(
            r.text,
            "main.rs:2:13: error[E0425]: cannot find value `x` in this scope"
        );
        let detail: Vec<_> = r
            .hidden
            .iter()
            .filter(|h| h.why == HiddenReason::Detail)
            .collect();
        assert_eq!(
            (detail[0].display_range(), detail[0].signal),
            ("1".to_owned(), 1)
        );
    }
}
