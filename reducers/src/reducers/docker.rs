//! docker build (BuildKit and the legacy builder): step headers, errors and the result kept;
//! step output, cache and timing lines folded. Declines anything else (a client that cannot
//! reach the engine prints one error, which the generic pipeline keeps).

use super::{diagnostics, re};
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{Detail, Noise};

re!(STEP, r"^#\d+ \[|^Step \d+/\d+ : ");
re!(
    STEP_NOISE,
    r"^#\d+ (DONE|CACHED)\b|^#\d+ (sha256:|resolve |transferring |extracting |exporting |writing |naming |unpacking )|^ ---> |^Removing intermediate container |^Sending build context"
);
re!(STEP_OUTPUT, r"^#\d+ \d+\.\d+ ");

pub(crate) fn build<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    if !src.lines.iter().any(|l| STEP.is_match(l)) {
        return None;
    }
    let mut out = Out::new(diagnostics(post));
    for i in 0..src.len() {
        let line = src.line(i);
        if STEP_NOISE.is_match(line) {
            out.hide(src, i, Noise);
        } else if STEP_OUTPUT.is_match(line) {
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

    // No Docker engine was available to record a real build; this is a hand-written
    // BuildKit transcript in the layout BuildKit documents, used only for this unit test.
    const BUILD: &str = "#0 building with \"default\" instance using docker driver\n\n#1 [internal] load build definition from Dockerfile\n#1 transferring dockerfile: 120B done\n#1 DONE 0.0s\n\n#2 [1/3] FROM docker.io/library/debian:bookworm-slim\n#2 CACHED\n\n#3 [2/3] RUN apt-get update\n#3 0.512 Get:1 http://deb.debian.org/debian bookworm InRelease [151 kB]\n#3 1.734 Reading package lists...\n#3 2.100 E: Unable to locate package nosuch\n#3 ERROR: process \"/bin/sh -c apt-get update\" did not complete successfully: exit code: 100\n------\n > [2/3] RUN apt-get update:\n------\nERROR: failed to solve: process \"/bin/sh -c apt-get update\" did not complete successfully: exit code: 100\n";

    #[test]
    fn keeps_steps_and_errors() {
        let out = reduce("docker build .", BUILD.as_bytes(), &Options::default());
        assert_eq!(out.reducer, "docker-build");
        assert!(out.text.contains("#3 [2/3] RUN apt-get update"));
        assert!(out.text.contains("#3 ERROR: process"));
        assert!(out.text.contains("ERROR: failed to solve"));
        assert!(!out.text.contains("Reading package lists"));
        assert!(!out.text.contains("#1 DONE"));
    }
}
