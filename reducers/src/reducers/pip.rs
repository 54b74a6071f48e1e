//! pip install: collection, download, progress and build chatter dropped, "already
//! satisfied" lines counted, the result line, warnings and errors kept.

use super::{diagnostics, re};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::Noise;

re!(
    NOISE,
    r"^(Collecting |Downloading |\s+Downloading |\s+Using cached |\s+[━╸╺\-]+ |Looking in indexes: |\s+Preparing metadata|\s+Installing build dependencies|\s+Getting requirements to build|\s+Building wheel for|\s+Created wheel for|\s+Stored in directory|Building wheels for collected packages|\s+Attempting uninstall|\s+Found existing installation|\s+Uninstalling |\s+Successfully uninstalled |Obtaining |\[notice\] |Using cached |Processing |Installing build dependencies|Preparing metadata)"
);
re!(SATISFIED, r"^Requirement already satisfied: ");

pub(crate) fn reduce<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(diagnostics(post));
    let mut satisfied = Vec::new();
    for i in 0..src.len() {
        let line = src.line(i);
        if SATISFIED.is_match(line) {
            satisfied.push(i);
            out.hide(src, i, Noise);
        } else if NOISE.is_match(line) {
            out.hide(src, i, Noise);
        } else {
            out.keep(src, i);
        }
    }
    if let (Some(&first), Some(&last)) = (satisfied.first(), satisfied.last()) {
        let range = crate::model::display_range(&(first..last + 1));
        out.note(
            format!(
                "({} requirements already satisfied, lines {range})",
                satisfied.len()
            ),
            first,
        );
        out.entries.sort_by_key(|e| e.raw);
    }
    Some(out)
}
