//! Per-command reducers. Each takes the cleaned lines and returns entries and hidden ranges,
//! or `None` when it does not recognise the output (the generic pipeline then runs).

use crate::choose::ReducerKind;
use crate::doc::{Out, Post, Src};

/// Runs the reducer for `kind`; `None` means "not mine, use the generic pipeline".
pub(crate) fn apply<'a>(kind: ReducerKind, src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let _ = (src, post);
    match kind {
        _ => None,
    }
}
