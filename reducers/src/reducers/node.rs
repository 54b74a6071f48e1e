//! Node.js programs (`node app.js`, `tsx`, `ts-node`, `deno run`): stack frames inside
//! Node's own code (`node:internal/…`) and installed packages (`node_modules/`) fold as
//! detail, unless one is the first frame, where the error was thrown. The error line,
//! the program's own frames, and the source line Node prints above the error stay;
//! the caret line under it folds.

use super::{diagnostics, re};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::Detail;

re!(FRAME, r"^\s+at \S");
re!(
    LIBRARY_FRAME,
    r"\(node:|\(internal/|^\s+at node:|/node_modules/|\(<anonymous>\)$|^\s+at <anonymous>$"
);
re!(CARET, r"^\s*\^+\s*$");

pub(crate) fn reduce<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(diagnostics(post));
    for i in 0..src.len() {
        let line = src.line(i);
        let first_frame = i == 0 || !FRAME.is_match(src.line(i - 1));
        let library_frame = FRAME.is_match(line) && LIBRARY_FRAME.is_match(line) && !first_frame;
        let caret = CARET.is_match(line) && i > 0 && !src.line(i - 1).trim().is_empty();
        if library_frame || caret {
            out.hide(src, i, Detail);
        } else {
            out.keep(src, i);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use crate::{reduce, Options};

    #[test]
    fn internal_frames_fold_own_frames_and_the_thrower_stay() {
        let raw = "\
/srv/app.js:9
  return orders.map((o) => o.lines.reduce((s, l) => s + l, 0));
                                   ^

TypeError: Cannot read properties of undefined (reading 'reduce')
    at /srv/app.js:9:36
    at Array.map (<anonymous>)
    at totals (/srv/app.js:9:17)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
    at Object.<anonymous> (/srv/node_modules/runner/index.js:3:1)
    at node:internal/main/run_main_module:28:49

Node.js v20.20.2
";
        let r = reduce("node app.js", raw.as_bytes(), &Options::default());
        assert_eq!(r.reducer, "node");
        assert_eq!(
            r.text,
            "/srv/app.js:9\n  \
             return orders.map((o) => o.lines.reduce((s, l) => s + l, 0));\n\n\
             TypeError: Cannot read properties of undefined (reading 'reduce')\n    \
             at /srv/app.js:9:36\n    \
             at totals (/srv/app.js:9:17)\n\n\
             Node.js v20.20.2"
        );
    }
}
