//! Python programs and `python -m unittest`: tracebacks keep their header, the location
//! of every frame in the program's own code, the frame that raised with its source line,
//! and the exception. The other frames' source lines, frames inside the standard library
//! and installed packages, and the `^^^^` markers Python 3.11+ draws under the failing
//! expression fold as detail: the locations say where to read them. unittest's passing tests and
//! its `=====`/`-----` rules are dropped; failures, their tracebacks and the closing
//! `Ran N tests` / `FAILED (…)` lines stay.

use super::{diagnostics, re};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{Detail, Noise, Passed};

re!(FRAME, r#"^\s*File "([^"]*)", line \d+"#);
re!(MARKERS, r"^\s*[~^]*\^[~^]*\s*$");
re!(UNITTEST_OK, r"^\s*\S+ \([\w.]+\)( \(.*\))? \.\.\. ok$");
re!(RULE, r"^(={20,}|-{20,})$");
re!(RAN, r"^Ran \d+ tests? in ");

pub(crate) fn reduce<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let mut out = Out::new(diagnostics(post));
    let n = src.len();
    // unittest's rules are decoration; a program's own may not be.
    let unittest = src.lines.iter().any(|l| RAN.is_match(l));
    let mut i = 0;
    while i < n {
        let line = src.line(i);
        if let Some(frame) = FRAME.captures(line) {
            // The frame, its source line and its markers.
            let mut end = i + 1;
            if end < n && !FRAME.is_match(src.line(end)) && is_source(src.line(end), line) {
                end += 1;
            }
            let markers = end < n && MARKERS.is_match(src.line(end));
            let raised = raises(src, end + usize::from(markers));
            if is_library(&frame[1]) && !raised {
                out.hide(src, i, Detail);
            } else {
                out.keep(src, i);
            }
            for j in i + 1..end {
                if raised {
                    out.keep(src, j);
                } else {
                    out.hide(src, j, Detail);
                }
            }
            if markers {
                out.hide(src, end, Detail);
                end += 1;
            }
            i = end;
            continue;
        }
        if UNITTEST_OK.is_match(line) {
            out.hide(src, i, Passed);
        } else if unittest && RULE.is_match(line) {
            out.hide(src, i, Noise);
        } else {
            out.keep(src, i);
        }
        i += 1;
    }
    Some(out)
}

/// Whether `line` is the source line Python prints under `frame`: indented deeper.
fn is_source(line: &str, frame: &str) -> bool {
    let indent = |s: &str| s.len() - s.trim_start().len();
    !line.trim().is_empty() && indent(line) > indent(frame)
}

/// Code that is not the program's own: the standard library, installed packages, the
/// import machinery (`<frozen importlib._bootstrap>`). `<string>` and `<stdin>` are the
/// program itself (`python -c`, a piped script).
fn is_library(path: &str) -> bool {
    path.starts_with("<frozen ")
        || path.contains("/site-packages/")
        || path.contains("/dist-packages/")
        || path.contains("/lib/python")
        || path.contains("\\Lib\\")
}

/// Whether the frame ending before raw line `next` is the last of its traceback: the
/// one that raised, which stays whatever code it is in.
fn raises(src: &Src<'_>, next: usize) -> bool {
    next >= src.len() || !FRAME.is_match(src.line(next))
}

#[cfg(test)]
mod tests {
    use crate::{reduce, Options};

    #[test]
    fn library_frames_and_markers_fold_own_frames_stay() {
        let raw = "\
Traceback (most recent call last):
  File \"/srv/app/main.py\", line 9, in read_config
    return json.load(f)
           ^^^^^^^^^^^^
  File \"/usr/lib/python3.11/json/__init__.py\", line 293, in load
    return loads(fp.read(),
           ^^^^^^^^^^^^^^^^
  File \"/usr/lib/python3.11/json/decoder.py\", line 353, in raw_decode
    obj, end = self.scan_once(s, idx)
               ^^^^^^^^^^^^^^^^^^^^^^
json.decoder.JSONDecodeError: Expecting property name: line 1 column 29 (char 28)
";
        let r = reduce("python3 main.py", raw.as_bytes(), &Options::default());
        assert_eq!(r.reducer, "python");
        assert_eq!(
            r.text,
            "Traceback (most recent call last):\n  \
             File \"/srv/app/main.py\", line 9, in read_config\n  \
             File \"/usr/lib/python3.11/json/decoder.py\", line 353, in raw_decode\n    \
             obj, end = self.scan_once(s, idx)\n\
             json.decoder.JSONDecodeError: Expecting property name: line 1 column 29 (char 28)"
        );
    }

    #[test]
    fn code_from_the_command_line_is_the_programs_own() {
        let raw = "\
Traceback (most recent call last):
  File \"<string>\", line 1, in <module>
  File \"<frozen runpy>\", line 88, in _run_code
  File \"/usr/lib/python3.11/json/decoder.py\", line 353, in raw_decode
    obj, end = self.scan_once(s, idx)
json.decoder.JSONDecodeError: Expecting property name: line 1 column 2 (char 1)
";
        let r = reduce(
            "python3 -c 'import json; json.loads(\"{bad\")'",
            raw.as_bytes(),
            &Options::default(),
        );
        assert!(r.text.contains("File \"<string>\", line 1"), "{}", r.text);
        assert!(!r.text.contains("<frozen runpy>"), "{}", r.text);
    }

    #[test]
    fn unittest_keeps_failures_and_the_verdict() {
        let raw = "\
test_add (test_calc.TestCalc.test_add) ... ok
test_div (test_calc.TestCalc.test_div) ... FAIL
test_todo (test_calc.TestCalc.test_todo) ... skipped 'later'

======================================================================
FAIL: test_div (test_calc.TestCalc.test_div)
----------------------------------------------------------------------
Traceback (most recent call last):
  File \"/srv/ut/test_calc.py\", line 16, in test_div
    self.assertEqual(divide(4, 2), 3)
AssertionError: 2.0 != 3

----------------------------------------------------------------------
Ran 3 tests in 0.001s

FAILED (failures=1, skipped=1)
";
        let r = reduce("python -m unittest -v", raw.as_bytes(), &Options::default());
        assert_eq!(r.reducer, "python");
        assert!(!r.text.contains("test_add"), "{}", r.text);
        for kept in [
            "test_div (test_calc.TestCalc.test_div) ... FAIL",
            "skipped 'later'",
            "FAIL: test_div",
            "line 16, in test_div",
            "AssertionError: 2.0 != 3",
            "Ran 3 tests",
            "FAILED (failures=1, skipped=1)",
        ] {
            assert!(r.text.contains(kept), "{kept} missing:\n{}", r.text);
        }
        assert!(!r.text.contains("====="), "{}", r.text);
    }
}
