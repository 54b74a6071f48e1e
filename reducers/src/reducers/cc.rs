//! C, C++ and Java compilers (gcc, g++, clang, cc, javac) and the build tools that run
//! them (make): every diagnostic headline (`file:line:col: error: …`, its `note:`s,
//! `In function …` context, javac's `symbol:`/`location:` lines, linker errors, make's own
//! `***` lines) kept; the source snippet under each headline (`  12 |     code`,
//! `     |     ^~~~`, or a bare source line over a `^` caret line) folded as detail,
//! since the headline's location says where to read it; compiler invocations that
//! printed nothing folded as noise. make's directory chatter is dropped.

use super::{diagnostics, re};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{Detail, Noise};

re!(
    HEADLINE,
    r"^[^\s:][^:]*:\d+(:\d+)?: (fatal error|error|warning|note|remark): "
);
// gcc's and clang's snippet gutter: `   12 | code`, `      |     ^~~~`.
re!(SNIPPET, r"^\s*\d*\s+\|( |$)");
// Under a bare source line (javac, older compilers): the caret marking the column.
re!(CARET, r"^\s*[~^]*\^[~^]*\s*$");
re!(
    DIRECTORY,
    r"^g?make(\[\d+\])?: (Entering|Leaving) directory "
);
// A compiler or archiver run echoed by make, possibly behind ccache or a full path.
re!(
    INVOCATION,
    r"^\s*(\S*/)?(ccache\s+)?(\S*/)?(gcc|g\+\+|cc|c\+\+|clang|clang\+\+|[\w.-]+-(gcc|g\+\+|clang|clang\+\+)(-\d+)?|gcc-\d+|g\+\+-\d+|clang-\d+|ar|ranlib|ld|libtool)\s"
);

/// A compiler's own output (`gcc …`, `javac …`) or a build tool's around it (`make …`).
pub(crate) fn reduce<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(diagnostics(post));
    let n = src.len();
    let mut in_diagnostic = false;
    let mut i = 0;
    while i < n {
        let line = src.line(i);
        let bare_snippet = |at: usize| {
            at + 1 < n && !HEADLINE.is_match(src.line(at)) && CARET.is_match(src.line(at + 1))
        };
        if HEADLINE.is_match(line) {
            in_diagnostic = true;
            out.keep(src, i);
            if bare_snippet(i + 1) {
                out.hide(src, i + 1, Detail);
                out.hide(src, i + 2, Detail);
                i += 2;
            }
        } else if in_diagnostic && SNIPPET.is_match(line) {
            out.hide(src, i, Detail);
        } else {
            in_diagnostic = false;
            let quiet_run = INVOCATION.is_match(line) && printed_nothing(src, i + 1);
            if DIRECTORY.is_match(line) || quiet_run {
                out.hide(src, i, Noise);
            } else {
                out.keep(src, i);
            }
        }
        i += 1;
    }
    Some(out)
}

/// Whether the command echoed just before raw line `next` printed nothing: the next
/// line is another command, make's directory chatter, or the end.
fn printed_nothing(src: &Src<'_>, next: usize) -> bool {
    next >= src.len() || {
        let line = src.line(next);
        INVOCATION.is_match(line) || DIRECTORY.is_match(line)
    }
}

#[cfg(test)]
mod tests {
    use crate::{reduce, Options};

    const GCC: &str = "\
main.c: In function 'main':
main.c:15:12: warning: missing initializer for field 'verbose' [-Wmissing-field-initializers]
   15 |     struct config cfg = { \"localhost\", 8080 };
      |            ^~~~~~
main.c:7:9: note: 'verbose' declared here
    7 |     int verbose;
      |         ^~~~~~~
main.c:29:18: error: incompatible type for argument 1 of 'print_config'
   29 |     print_config(cfg);
      |                  ^~~
      |                  |
      |                  struct config
";

    #[test]
    fn headlines_stay_snippets_fold() {
        let r = reduce(
            "gcc -Wall -o app main.c",
            GCC.as_bytes(),
            &Options::default(),
        );
        assert_eq!(r.reducer, "cc");
        assert_eq!(
            r.text,
            "main.c: In function 'main':\n\
             main.c:15:12: warning: missing initializer for field 'verbose' [-Wmissing-field-initializers]\n\
             main.c:7:9: note: 'verbose' declared here\n\
             main.c:29:18: error: incompatible type for argument 1 of 'print_config'"
        );
        assert_eq!(r.hidden.iter().map(|h| h.count).sum::<usize>(), 8);
    }

    #[test]
    fn javac_source_and_caret_fold_its_detail_lines_stay() {
        let raw = "\
src/Main.java:8: error: constructor Order in class Order cannot be applied to given types;
        Order o = new Order(\"ORD-1\", true);
                  ^
  required: String
  found:    String,boolean
src/Main.java:12: error: cannot find symbol
        total += o.sum();
                  ^
  symbol:   method sum()
  location: variable o of type Order
2 errors
";
        let r = reduce(
            "javac -d out src/Main.java",
            raw.as_bytes(),
            &Options::default(),
        );
        assert_eq!(r.reducer, "javac");
        assert_eq!(
            r.text,
            "src/Main.java:8: error: constructor Order in class Order cannot be applied to given types;\n  \
             required: String\n  \
             found:    String,boolean\n\
             src/Main.java:12: error: cannot find symbol\n  \
             symbol:   method sum()\n  \
             location: variable o of type Order\n\
             2 errors"
        );
    }

    #[test]
    fn make_folds_quiet_compiler_runs_and_keeps_the_rest() {
        let raw = "\
mkdir -p build
gcc -c src/a.c -o build/a.o
gcc -c src/b.c -o build/b.o
src/b.c:8:32: error: 'x' undeclared
    8 | int b(void) { return x; }
      |                      ^
make: *** [Makefile:15: build/b.o] Error 1
gcc -o app build/a.o
/usr/bin/ld: build/a.o: in function `main':
a.c:(.text+0x5): undefined reference to `missing'
collect2: error: ld returned 1 exit status
";
        let r = reduce("make -k", raw.as_bytes(), &Options::default());
        assert_eq!(r.reducer, "make");
        assert_eq!(
            r.text,
            "mkdir -p build\n\
             gcc -c src/b.c -o build/b.o\n\
             src/b.c:8:32: error: 'x' undeclared\n\
             make: *** [Makefile:15: build/b.o] Error 1\n\
             gcc -o app build/a.o\n\
             /usr/bin/ld: build/a.o: in function `main':\n\
             a.c:(.text+0x5): undefined reference to `missing'\n\
             collect2: error: ld returned 1 exit status"
        );
    }
}
