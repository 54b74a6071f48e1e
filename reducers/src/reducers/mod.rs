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
mod js;
mod listing;
mod logs;
mod node;
mod pip;
mod pytest;
mod python;
mod table;

use crate::choose::ReducerKind;
use crate::doc::{Out, Post, Src};

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
        K::DockerPs => None,
        K::DockerBuild => docker::build(src, post),
        K::Pip => pip::reduce(src, post),
        K::Log => logs::reduce(src, post),
    }
}

/// Post settings for diagnostics: every error and warning survives elision.
pub(crate) fn diagnostics(mut post: Post) -> Post {
    post.max_signal = usize::MAX;
    post
}

/// Packs short items into lines of at most `width` characters, two spaces apart. Returns
/// each line with the number of items in it.
pub(crate) fn pack(items: &[String], width: usize) -> Vec<(String, usize)> {
    let counted: Vec<(String, usize)> = items.iter().map(|i| (i.clone(), 1)).collect();
    pack_counted(&counted, width)
}

/// [`pack`] for items that each stand for a number of raw lines; returns each line with the
/// number of raw lines it stands for.
pub(crate) fn pack_counted(items: &[(String, usize)], width: usize) -> Vec<(String, usize)> {
    let mut lines: Vec<(String, usize)> = Vec::new();
    for (item, count) in items {
        match lines.last_mut() {
            Some((line, n)) if line.len() + 2 + item.len() <= width => {
                line.push_str("  ");
                line.push_str(item);
                *n += count;
            }
            _ => lines.push((item.clone(), *count)),
        }
    }
    lines
}

/// Writes runs of three or more names that differ only in a consecutive number of the same
/// width as one shell brace range: `mod03.py mod04.py mod05.py` → `mod{03..05}.py`. The
/// range expands (in bash, zsh) to exactly the names it stands for; anything else is left
/// as it is.
pub(crate) fn brace_runs(names: &[String]) -> Vec<String> {
    brace_runs_counted(names)
        .into_iter()
        .map(|(s, _)| s)
        .collect()
}

/// [`brace_runs`], with the number of names each item stands for.
pub(crate) fn brace_runs_counted(names: &[String]) -> Vec<(String, usize)> {
    fn split(name: &str) -> Option<(&str, &str, &str)> {
        let b = name.as_bytes();
        let end = b.iter().rposition(u8::is_ascii_digit)? + 1;
        let start = b[..end]
            .iter()
            .rposition(|c| !c.is_ascii_digit())
            .map_or(0, |p| p + 1);
        if end - start > 9 || name.contains(['{', '}', ',', ' ']) {
            return None;
        }
        Some((&name[..start], &name[start..end], &name[end..]))
    }
    let mut out = Vec::with_capacity(names.len());
    let mut i = 0;
    while i < names.len() {
        let mut j = i + 1;
        if let Some((pre, num, suf)) = split(&names[i]) {
            let first: u64 = num.parse().unwrap_or(0);
            while j < names.len() {
                match split(&names[j]) {
                    Some((p, n, s))
                        if p == pre
                            && s == suf
                            && n.len() == num.len()
                            && n.parse::<u64>().ok() == Some(first + (j - i) as u64) =>
                    {
                        j += 1
                    }
                    _ => break,
                }
            }
            if j - i >= 3 {
                let (_, last, _) = split(&names[j - 1]).expect("matched");
                out.push((format!("{pre}{{{num}..{last}}}{suf}"), j - i));
                i = j;
                continue;
            }
        }
        out.push((names[i].clone(), 1));
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::brace_runs;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn brace_runs_only_for_exact_consecutive_runs() {
        assert_eq!(
            brace_runs(&s(&[
                "a.py", "mod03.py", "mod04.py", "mod05.py", "mod07.py"
            ])),
            s(&["a.py", "mod{03..05}.py", "mod07.py"])
        );
        assert_eq!(brace_runs(&s(&["x1", "x2"])), s(&["x1", "x2"]));
        assert_eq!(
            brace_runs(&s(&["f9", "f10", "f11"])),
            s(&["f9", "f10", "f11"])
        );
        assert_eq!(
            brace_runs(&s(&["f8", "f9", "f10"])),
            s(&["f8", "f9", "f10"])
        );
        assert_eq!(brace_runs(&s(&["v1.2", "v1.3", "v1.4"])), s(&["v1.{2..4}"]));
    }
}
