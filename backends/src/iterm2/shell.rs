//! Shell start-up for iTerm2 panes.
//!
//! iTerm2 understands OSC 133 natively, but it reports a prompt to API clients only
//! when the prompt *ends* (`OSC 133 ; B`, "input starts"), and it reports marks
//! without their parameters. cohort's own integration ([`crate::shell`]) emits `A`,
//! `C` and `D`, signed; the wrappers here load it and
//!
//! - add a `B` after the prompt for bash, zsh and POSIX sh, so that iTerm2 sends the
//!   prompt notification cohort reports as [`crate::PromptMark::PromptStart`] (fish
//!   gets none: its prompt is reported from `C` on);
//! - report each `B`, `C` and `D` signed a second way, through the user variable
//!   `cohortMark` set right before the mark and unset right after it (see
//!   `super::marks`). The signed values come in `COHORT_MARK_SIGNS`, which the shell
//!   reads into the unexported variables the base integration prints around its
//!   marks (`__cohort_before_C`, `__cohort_before_D`, `__cohort_before_exit`,
//!   `__cohort_after`) and then removes from its environment.

use std::path::{Path, PathBuf};

use crate::error::{BackendError, Result};
use crate::shell::{launch_command, ShellIntegration};
use crate::tmux::quote;

/// POSIX shell code (bash, zsh, sh) that takes the signed values out of the
/// environment; see the module docs.
const SIGNS: &str = r#"# iTerm2 reports marks to its API clients without their parameters: each of
# the shell's marks is also reported signed, as the user variable cohortMark, set
# right before the mark and unset right after it. The signed values come in
# COHORT_MARK_SIGNS (B, C, D, and D as the shell exits); programs this shell runs
# do not inherit them.
__cohort_signs=${COHORT_MARK_SIGNS-}
unset COHORT_MARK_SIGNS
if [ -n "$__cohort_signs" ]; then
    __cohort_uv=$(printf '\033]1337;SetUserVar=cohortMark')
    __cohort_bel=$(printf '\007')
    __cohort_before_B="$__cohort_uv=${__cohort_signs%% *}$__cohort_bel"
    __cohort_signs=${__cohort_signs#* }
    __cohort_before_C="$__cohort_uv=${__cohort_signs%% *}$__cohort_bel"
    __cohort_signs=${__cohort_signs#* }
    __cohort_before_D="$__cohort_uv=${__cohort_signs%% *}$__cohort_bel"
    __cohort_before_exit="$__cohort_uv=${__cohort_signs#* }$__cohort_bel"
    __cohort_after="$__cohort_uv$__cohort_bel"
    unset __cohort_uv __cohort_bel
fi
unset __cohort_signs
"#;

/// The same for fish.
const FISH_SIGNS: &str = r#"# iTerm2 reports marks to its API clients without their parameters: each of
# the shell's marks is also reported signed, as the user variable cohortMark, set
# right before the mark and unset right after it. The signed values come in
# COHORT_MARK_SIGNS (B, C, D, and D as the shell exits); programs this shell runs
# do not inherit them.
set -l __cohort_signs (string split ' ' -- "$COHORT_MARK_SIGNS")
set -e COHORT_MARK_SIGNS
if test (count $__cohort_signs) -eq 4
    set -g __cohort_before_C (printf '\e]1337;SetUserVar=cohortMark=%s\a' $__cohort_signs[2])
    set -g __cohort_before_D (printf '\e]1337;SetUserVar=cohortMark=%s\a' $__cohort_signs[3])
    set -g __cohort_before_exit (printf '\e]1337;SetUserVar=cohortMark=%s\a' $__cohort_signs[4])
    set -g __cohort_after (printf '\e]1337;SetUserVar=cohortMark\a')
end
"#;

/// Shell code for the `/bin/sh` that runs a one-shot command
/// ([`crate::shell::command_with_exit_mark_after`]): its exit mark is signed too.
pub(super) const ONE_SHOT_SIGNS: &str = "__cohort_signs=${COHORT_MARK_SIGNS-}; unset COHORT_MARK_SIGNS; \
     if [ -n \"$__cohort_signs\" ]; then \
     __cohort_before_exit=$(printf '\\033]1337;SetUserVar=cohortMark=%s\\007' \"${__cohort_signs##* }\"); \
     __cohort_after=$(printf '\\033]1337;SetUserVar=cohortMark\\007'); fi;";

/// Writes the integration files under `dir` and returns the `/bin/sh` command line
/// that starts `shell` with them.
pub fn install(dir: &Path, shell: &Path) -> Result<String> {
    let base = ShellIntegration::install(&dir.join("shell"))?;
    let own = dir.join("iterm2-shell");
    let q = |p: PathBuf| quote::sh(&p.to_string_lossy());
    let files: Vec<(PathBuf, String)> = vec![
        (
            own.join("bashrc"),
            format!(
                "# cohort shell integration for bash in iTerm2: cohort's marks, also reported\n\
                 # signed, plus B.\n\
                 . {}\n\
                 {SIGNS}\
                 PS1=\"${{PS1}}\"'\\[${{__cohort_before_B-}}\\033]133;B\\007${{__cohort_after-}}\\]'\n",
                q(base.dir().join("bashrc"))
            ),
        ),
        (
            own.join("zsh/.zshenv"),
            format!(
                "# cohort shell integration for zsh in iTerm2: cohort's marks, also reported\n\
                 # signed, plus B.\n\
                 ZDOTDIR={zdir}\n\
                 source {zdir}/.zshenv\n\
                 {SIGNS}\
                 if [[ -o interactive ]]; then\n\
                 \x20   __cohort_b() {{ [[ \"$PS1\" == *$'\\e]133;B\\a'* ]] || PS1=\"$PS1%{{${{__cohort_before_B-}}\"$'\\e]133;B\\a'\"${{__cohort_after-}}%}}\"; }}\n\
                 \x20   autoload -Uz add-zsh-hook\n\
                 \x20   add-zsh-hook precmd __cohort_b\n\
                 fi\n",
                zdir = q(base.dir().join("zsh"))
            ),
        ),
        (
            own.join("shrc"),
            format!(
                "# cohort shell integration for sh in iTerm2: cohort's marks, also reported\n\
                 # signed, plus B.\n\
                 . {}\n\
                 {SIGNS}\
                 PS1=\"${{PS1}}${{__cohort_before_B-}}$(printf '\\033]133;B\\007')${{__cohort_after-}}\"\n",
                q(base.dir().join("shrc"))
            ),
        ),
        (
            own.join("cohort.fish"),
            format!(
                "# cohort shell integration for fish in iTerm2: cohort's marks, also reported\n\
                 # signed.\n\
                 source {}\n\
                 {FISH_SIGNS}",
                q(base.dir().join("cohort.fish"))
            ),
        ),
    ];
    for (path, content) in &files {
        if std::fs::read_to_string(path).ok().as_deref() == Some(content.as_str()) {
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| BackendError::io(format!("creating {}", parent.display()), e))?;
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, content)
            .map_err(|e| BackendError::io(format!("writing {}", tmp.display()), e))?;
        std::fs::rename(&tmp, path)
            .map_err(|e| BackendError::io(format!("writing {}", path.display()), e))?;
    }
    Ok(launch_command(shell, &own))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_gets_a_b_mark() {
        let dir = tempfile::tempdir().unwrap();
        let cmd = install(dir.path(), Path::new("/bin/bash")).unwrap();
        assert!(cmd.contains("iterm2-shell/bashrc"), "{cmd}");
        let rc = std::fs::read_to_string(dir.path().join("iterm2-shell/bashrc")).unwrap();
        assert!(rc.contains("133;B"));
        assert!(dir.path().join("shell/bashrc").exists());
    }

    /// Runs `script` in `shell` with the signed values in the environment; `None`
    /// when the shell is not installed here (a failure where every shell must be,
    /// `COHORT_REQUIRE_ALL_SHELLS=1`).
    fn run(shell: &str, script: &str) -> Option<String> {
        let out = std::process::Command::new(shell)
            .args(["-c", script])
            .env("COHORT_MARK_SIGNS", "Qg== Qw== RA== WA==")
            .output();
        let Ok(out) = out else {
            assert!(
                std::env::var("COHORT_REQUIRE_ALL_SHELLS").as_deref() != Ok("1"),
                "{shell} is not installed but COHORT_REQUIRE_ALL_SHELLS=1"
            );
            return None;
        };
        assert!(out.status.success(), "{shell}: {out:?}");
        Some(String::from_utf8(out.stdout).unwrap())
    }

    #[test]
    fn every_shell_takes_its_signed_values_out_of_the_environment() {
        let sign = |v: &str| format!("\x1b]1337;SetUserVar=cohortMark={v}\x07");
        let unset = "\x1b]1337;SetUserVar=cohortMark\x07";
        let expected = format!(
            "{}|{}|{}|{unset}|gone",
            sign("Qw=="),
            sign("RA=="),
            sign("WA==")
        );
        let print = r#"printf '%s|%s|%s|%s|%s' "$__cohort_before_C" "$__cohort_before_D" "$__cohort_before_exit" "$__cohort_after" "${COHORT_MARK_SIGNS-gone}""#;
        for shell in ["sh", "bash", "zsh"] {
            let out = run(shell, &format!("{SIGNS}{print}"));
            match out {
                Some(out) => assert_eq!(out, expected, "{shell}"),
                None => eprintln!("{shell} is not installed: not checked"),
            }
            let b = run(shell, &format!("{SIGNS}printf %s \"$__cohort_before_B\""));
            if let Some(b) = b {
                assert_eq!(b, sign("Qg=="), "{shell}");
            }
        }
        let fish_print = r#"printf '%s|%s|%s|%s|%s' "$__cohort_before_C" "$__cohort_before_D" "$__cohort_before_exit" "$__cohort_after" (set -q COHORT_MARK_SIGNS; and echo left; or echo gone)"#;
        match run("fish", &format!("{FISH_SIGNS}{fish_print}")) {
            Some(out) => assert_eq!(out, expected, "fish"),
            None => eprintln!("fish is not installed: not checked"),
        }
        let one_shot = format!(
            "{ONE_SHOT_SIGNS} printf '%s|%s|%s' \"$__cohort_before_exit\" \"$__cohort_after\" \"${{COHORT_MARK_SIGNS-gone}}\""
        );
        assert_eq!(
            run("sh", &one_shot).expect("sh"),
            format!("{}|{unset}|gone", sign("WA=="))
        );
    }
}
