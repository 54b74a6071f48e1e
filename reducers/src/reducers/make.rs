//! make: directory enter/leave chatter dropped; commands, compiler diagnostics and make's
//! own errors kept.

use super::{diagnostics, re};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::Noise;

re!(
    DIRECTORY,
    r"^g?make(\[\d+\])?: (Entering|Leaving) directory "
);

pub(crate) fn reduce<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(diagnostics(post));
    for i in 0..src.len() {
        if DIRECTORY.is_match(src.line(i)) {
            out.hide(src, i, Noise);
        } else {
            out.keep(src, i);
        }
    }
    Some(out)
}
