//! Per-command reducers. Each takes the cleaned lines and returns entries and hidden ranges,
//! or `None` when it does not recognise the output (the generic pipeline then runs).
//!
//! What every reducer here keeps to: tool summaries are kept verbatim rather than rewritten;
//! counts it writes itself are computed from the lines it saw; lines that read as errors or
//! warnings are only hidden through [`Out::hide_counted`](crate::doc::Out::hide_counted),
//! with a visible count.

mod cargo;
mod docker;
mod git;
mod go;
mod grep;
mod js;
mod listing;
mod logs;
mod make;
mod pip;
mod pytest;
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
        K::Cargo | K::CargoTest => cargo::reduce(src, post),
        K::JsInstall => js::install(src, post),
        K::JsTest => js::test(src, post),
        K::Lint => js::lint(src, post),
        K::GoTest | K::GoBuild => go::reduce(src, post),
        K::Make => make::reduce(src, post),
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

/// Packs short items into lines of at most `width` characters, two spaces apart.
pub(crate) fn pack(items: &[String], width: usize) -> Vec<(String, usize)> {
    let mut lines: Vec<(String, usize)> = Vec::new();
    for item in items {
        match lines.last_mut() {
            Some((line, n)) if line.len() + 2 + item.len() <= width => {
                line.push_str("  ");
                line.push_str(item);
                *n += 1;
            }
            _ => lines.push((item.clone(), 1)),
        }
    }
    lines
}
