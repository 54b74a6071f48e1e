//! Per-command reducers. Each takes the cleaned lines and returns entries and hidden ranges,
//! or `None` when it does not recognise the output (the generic pipeline then runs).
//!
//! What every reducer here keeps to: tool summaries are kept verbatim rather than rewritten;
//! counts it writes itself are computed from the lines it saw; lines that read as errors or
//! warnings are only hidden through [`Out::hide_counted`](crate::doc::Out::hide_counted),
//! with a visible count.

mod cargo;
mod cc;
mod docker;
mod git;
mod go;
mod grep;
mod infra;
mod js;
mod listing;
mod logs;
mod net;
mod node;
mod pip;
mod pytest;
mod python;
mod table;

use crate::choose::ReducerKind;
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason;

/// A `LazyLock<Regex>` static, so patterns compile once.
macro_rules! re {
    ($name:ident, $pat:expr) => {
        static $name: std::sync::LazyLock<regex::Regex> =
            std::sync::LazyLock::new(|| regex::Regex::new($pat).expect("valid pattern"));
    };
}
pub(crate) use re;

/// Runs the reducer for `kind`; `None` means "not mine, use the generic pipeline".
pub(crate) fn apply<'a>(kind: ReducerKind, src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    use ReducerKind as K;
    match kind {
        K::Generic => None,
        K::GitStatus => git::status(src, post),
        K::GitLog => git::log(src, post),
        K::GitDiff => git::diff(src, post),
        K::Grep => grep::reduce(src, post),
        K::Pytest => pytest::reduce(src, post),
        K::Python => python::reduce(src, post),
        K::Cargo | K::CargoTest => cargo::reduce(src, post),
        K::JsInstall => js::install(src, post),
        K::JsTest => js::test(src, post),
        K::Lint => js::lint(src, post),
        K::GoTest | K::GoBuild => go::reduce(src, post),
        K::Make | K::Cc | K::Javac => cc::reduce(src, post),
        K::Node => node::reduce(src, post),
        K::Ls => listing::ls(src, post),
        K::Find => listing::find(src, post),
        K::Tree => listing::tree(src, post),
        K::Du => table::du(src, post),
        K::Df => table::df(src, post),
        K::Ps => table::ps(src, post),
        K::DockerBuild => docker::build(src, post),
        K::Pip => pip::reduce(src, post),
        K::Log => logs::reduce(src, post),
        K::PipList => infra::pip_list(src, post),
        K::NpmLs => infra::npm_ls(src, post),
        K::Curl => net::curl(src, post),
        K::Terraform => infra::terraform(src, post),
        K::DockerPs | K::KubectlGet => table::rows(src, post),
    }
}

/// Post settings for diagnostics: every error and warning survives elision.
pub(crate) fn diagnostics(mut post: Post) -> Post {
    post.max_signal = usize::MAX;
    post
}

/// Lists longer than this are cut: their first [`LIST_HEAD`] and last [`LIST_TAIL`] items
/// shown, the items between hidden (whole lines, counted, with their range).
pub(crate) const LIST_CAP: usize = 12;
/// Items shown from the start of a long list.
pub(crate) const LIST_HEAD: usize = 6;
/// Items shown from the end of a long list.
pub(crate) const LIST_TAIL: usize = 3;
/// The widest a packed line of list items grows (items are never cut).
const LIST_WIDTH: usize = 100;

/// Writes the list whose items stand for the consecutive raw lines `first..first +
/// items.len()`: every item whole (a path, a name, a package), several to a line, two
/// spaces apart; the first line opens with `lead` (`"  modified: "`), the others with two
/// spaces. A list longer than [`LIST_CAP`] keeps its first and last items and hides those
/// between, whole lines, under one marker that counts them (`… 25 more paths (12-36)`).
pub(crate) fn write_list<'a>(
    out: &mut Out<'a>,
    src: &Src<'a>,
    first: usize,
    items: &[String],
    lead: &str,
    what: &str,
) {
    let n = items.len();
    let (head, tail) = if n > LIST_CAP {
        (LIST_HEAD, LIST_TAIL)
    } else {
        (n, 0)
    };
    let width = out.post.width.unwrap_or(LIST_WIDTH).min(LIST_WIDTH);
    pack_into(out, src, first, &items[..head], lead, false, width);
    if tail == 0 {
        return;
    }
    let hidden = first + head..first + n - tail;
    for (k, i) in hidden.clone().enumerate() {
        if k == 0 {
            out.hide_excerpt_apart(i, HiddenReason::Capped);
        } else {
            out.hide_excerpt(i, HiddenReason::Capped);
        }
    }
    let marker = out
        .post
        .marker(hidden.len(), &format!("more {what}"), &hidden, 0);
    out.note(marker, hidden.start);
    pack_into(out, src, hidden.end, &items[n - tail..], "  ", false, width);
}

/// Writes names whose every one is a fact (a directory's entries, the paths a status
/// reports): [`write_list`] without its cap, and with `lead` (a state such as
/// `"  modified: "`) opening every packed line, so each name is read with its state.
pub(crate) fn write_names<'a>(
    out: &mut Out<'a>,
    src: &Src<'a>,
    first: usize,
    items: &[String],
    lead: &str,
) {
    let width = out.post.width.unwrap_or(LIST_WIDTH).min(LIST_WIDTH);
    pack_into(out, src, first, items, lead, true, width);
}

/// Packs `items` (raw lines `first..`) into lines of at most `width` characters (an item
/// longer than that alone on its line); `lead` opens the first line, or every line.
fn pack_into<'a>(
    out: &mut Out<'a>,
    src: &Src<'a>,
    first: usize,
    items: &[String],
    lead: &str,
    lead_every_line: bool,
    width: usize,
) {
    let mut line = String::new();
    let mut start = first;
    let mut count = 0;
    for item in items {
        if count > 0 && line.len() + 2 + item.len() > width {
            out.rewrite(src, std::mem::take(&mut line), start, count);
            start += count;
            count = 0;
        }
        if count == 0 {
            line.push_str(if start == first || lead_every_line {
                lead
            } else {
                "  "
            });
        } else {
            line.push_str("  ");
        }
        line.push_str(item);
        count += 1;
    }
    if count > 0 {
        out.rewrite(src, line, start, count);
    }
}

#[cfg(test)]
mod tests {
    use crate::{reduce, HiddenReason, Options};

    #[test]
    fn long_lists_keep_their_first_and_last_items_whole() {
        let raw: String = (1..=40)
            .map(|i| format!("./data/item_{i:03}.dat\n"))
            .collect();
        let r = reduce("find . -name '*.dat'", raw.as_bytes(), &Options::default());
        assert_eq!(r.reducer, "find");
        for i in (1..=6).chain(38..=40) {
            assert!(
                r.text.contains(&format!("./data/item_{i:03}.dat")),
                "{i}: {}",
                r.text
            );
        }
        assert!(!r.text.contains("item_007"), "{}", r.text);
        assert!(r.text.contains("… 31 more paths (7-37)"), "{}", r.text);
        let capped: Vec<_> = r
            .hidden
            .iter()
            .filter(|h| h.why == HiddenReason::Capped)
            .collect();
        assert_eq!(capped.len(), 1);
        assert_eq!(
            (capped[0].count, capped[0].display_range()),
            (31, "7-37".to_owned())
        );
    }
}
