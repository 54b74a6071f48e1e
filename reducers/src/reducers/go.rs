//! go test / go build / go vet: `=== RUN` and `--- PASS` lines and module downloads dropped,
//! every failure with its messages kept, package result lines kept, goroutine traces reduced
//! to the frames in the project.

use super::{diagnostics, re};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{Detail, Noise, Passed};

re!(RUN, r"^\s*=== (RUN|PAUSE|CONT|NAME)\s");
re!(PASS, r"^\s*--- (PASS|SKIP): ");
re!(NOISE, r"^go: (downloading|finding|extracting) ");
re!(FRAME_PATH, r"^\t(/\S+|\S+\.go):\d+");
re!(
    GOROOT,
    r"/(usr/local/go|usr/lib/go[^/]*|go/pkg/mod)/|/src/(runtime|testing|reflect)/"
);

pub(crate) fn reduce<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(diagnostics(post));
    out.post.fold_similar = false;
    let n = src.len();
    let mut i = 0;
    while i < n {
        let line = src.line(i);
        if RUN.is_match(line) || NOISE.is_match(line) {
            out.hide(src, i, Noise);
        } else if PASS.is_match(line) {
            out.hide(src, i, Passed);
        } else if i + 1 < n
            && FRAME_PATH.is_match(src.line(i + 1))
            && !line.starts_with('\t')
            && !line.starts_with("---")
        {
            // A goroutine frame: function line, then its file line.
            if GOROOT.is_match(src.line(i + 1)) {
                out.hide(src, i, Detail);
                out.hide(src, i + 1, Detail);
            } else {
                out.keep(src, i);
                out.keep(src, i + 1);
            }
            i += 2;
            continue;
        } else {
            out.keep(src, i);
        }
        i += 1;
    }
    Some(out)
}
