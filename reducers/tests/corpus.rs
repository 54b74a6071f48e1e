//! The corpus check: every recorded fixture reduced with the default options and checked
//! against the facts of its raw output (see `support/facts.rs`, rules independent of the
//! reducers). Prints facts kept, invented signal, and the median and total saving; fails
//! unless every fact is kept, nothing is invented and the median saving on outputs of 20
//! or more lines is at least 70%. Machine-readable outputs (`--porcelain`, JSON) are
//! returned byte for byte on purpose: they count for the facts, not for the savings.
//!
//! ```sh
//! cargo test -p cohort-reducers --test corpus
//! COHORT_EXTRA_FIXTURES=DIR cargo test -p cohort-reducers --test corpus   # more outputs
//! ```

mod support;

use cohort_reducers::{reduce, Options};
use support::facts::{check, Kind};

/// The median saving the check asks of outputs of 20 or more lines.
const MEDIAN_FLOOR: f64 = 0.70;

/// The one test this harness holds, as test runners list it.
const NAME: &str = "corpus";

fn main() {
    // Test runners that list before they run (cargo-nextest) ask `--list --format terse`
    // and expect `NAME: test` per test, none of them ignored; a filter that does not
    // match this test's name runs nothing.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        if !args.iter().any(|a| a == "--ignored") {
            println!("{NAME}: test");
        }
        return;
    }
    let filter = args.iter().find(|a| !a.starts_with('-'));
    if filter.is_some_and(|f| !NAME.contains(f.as_str())) {
        return;
    }
    let fixtures = support::all_fixtures();
    let options = Options::default();
    let (mut facts, mut lost, mut invented) = (0, 0, 0);
    let (mut raw_total, mut shown_total) = (0, 0);
    let mut savings = Vec::new();
    let mut machine = 0;
    let mut sizeable = Vec::new();
    let mut by_kind = std::collections::BTreeMap::<Kind, (usize, usize)>::new();
    let mut problems = Vec::new();
    println!(
        "{:<28} {:<13} {:>6} {:>7} {:>6} {:>6}  facts",
        "fixture", "reducer", "lines", "raw", "shown", "saved"
    );
    for f in &fixtures {
        let r = reduce(&f.command, &f.raw, &options);
        let report = check(&f.command, &f.raw, &r);
        let all = support::facts::facts(&f.command, &support::facts::terminal_lines(&f.raw));
        for fact in &all {
            by_kind.entry(fact.kind).or_default().0 += 1;
        }
        for fact in &report.lost {
            by_kind.entry(fact.kind).or_default().1 += 1;
        }
        let saved = if r.raw_tokens == 0 {
            0.0
        } else {
            1.0 - r.shown_tokens as f64 / r.raw_tokens as f64
        };
        if r.reducer == "machine" {
            machine += 1;
        } else if r.raw_tokens > 0 {
            savings.push(saved);
            if r.raw_lines >= 20 {
                sizeable.push(saved);
            }
        }
        raw_total += r.raw_tokens;
        shown_total += r.shown_tokens;
        facts += report.facts;
        lost += report.lost.len();
        invented += report.invented.len();
        let mark = if report.lost.is_empty() && report.invented.is_empty() {
            ""
        } else {
            "  <--"
        };
        println!(
            "{:<28} {:<13} {:>6} {:>7} {:>6} {:>5.1}%  {}/{}{}{mark}",
            f.name,
            r.reducer,
            r.raw_lines,
            r.raw_tokens,
            r.shown_tokens,
            100.0 * saved,
            report.facts - report.lost.len(),
            report.facts,
            if report.invented.is_empty() {
                String::new()
            } else {
                format!(", {} invented", report.invented.len())
            }
        );
        for fact in report.lost.iter().take(6) {
            let missing = if fact.kind == Kind::Problem {
                let words = support::facts::missing_words(&fact.what, &r.text);
                format!(" (missing {words:?})")
            } else {
                String::new()
            };
            problems.push(format!(
                "{}: lost {} on line {}: {:?}{missing}",
                f.name,
                fact.kind.name(),
                fact.line + 1,
                fact.what
            ));
        }
        if report.lost.len() > 6 {
            problems.push(format!("{}: … {} more lost", f.name, report.lost.len() - 6));
        }
        for what in &report.invented {
            problems.push(format!("{}: invented: {what}", f.name));
        }
    }
    println!(
        "{machine} machine-readable outputs returned byte for byte, not counted in the savings"
    );
    let median_all = support::median(&mut savings);
    let median_sizeable = support::median(&mut sizeable);
    println!();
    for p in &problems {
        println!("{p}");
    }
    println!();
    for (kind, (n, l)) in &by_kind {
        println!("  {:<8} {}/{} kept", kind.name(), n - l, n);
    }
    println!(
        "facts kept: {}/{} ({:.1}%) over {} outputs; invented signal: {invented}",
        facts - lost,
        facts,
        100.0 * (facts - lost) as f64 / facts.max(1) as f64,
        fixtures.len()
    );
    println!(
        "median saving: {:.1}% over all {} outputs, {:.1}% over the {} of 20+ lines; \
         total: {raw_total} -> {shown_total} tokens ({:.1}% saved)",
        100.0 * median_all,
        savings.len(),
        100.0 * median_sizeable,
        sizeable.len(),
        100.0 * (1.0 - shown_total as f64 / raw_total.max(1) as f64)
    );
    let ok = lost == 0 && invented == 0 && median_sizeable >= MEDIAN_FLOOR;
    if !ok {
        println!(
            "FAILED: the check asks for every fact kept, nothing invented and a median \
             saving of at least {:.0}% on outputs of 20+ lines",
            100.0 * MEDIAN_FLOOR
        );
        std::process::exit(1);
    }
}
