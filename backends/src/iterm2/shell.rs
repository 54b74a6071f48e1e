//! Shell start-up for iTerm2 panes.
//!
//! iTerm2 understands OSC 133 natively, but it reports a prompt to API clients only
//! when the prompt *ends* (`OSC 133 ; B`, "input starts"), and it reports marks
//! without their parameters. cohort's own integration ([`crate::shell`]) emits `A`,
//! `C` and `D`, each signed with the next one-time token of the shell's pad
//! ([`crate::pad`]); the wrappers here load it and
//!
//! - add a `B` after the prompt for bash, zsh and POSIX sh, so that iTerm2 sends the
//!   prompt notification cohort reports as [`crate::PromptMark::PromptStart`] (fish
//!   gets none: its prompt is reported from `C` on);
//! - report each `B`, `C` and `D` signed a second way, through the user variable
//!   `cohortMark` set right before the mark and unset right after it (see
//!   `super::marks`). Its value is `base64("D;cohort=" ‖ token)`; the pad holds each
//!   token as the base64 of its zero-padded decimal ([`TokenForm::Base64`]), so the
//!   shell prints the constant base64 of the prefix followed by the token, with no
//!   encoder and no fork. Only the prefixes are written here: they are public.
//!
//! POSIX `sh` has no arrays, so its tokens are numbered variables it can only read
//! by name with `eval`, which a prompt string cannot run: its prompt runs two command
//! substitutions (two forks) per prompt on iTerm2.
//!
//! [`TokenForm::Base64`]: crate::pad::TokenForm::Base64

use std::path::{Path, PathBuf};

use crate::error::{BackendError, Result};
use crate::pad::base64;
use crate::shell::{launch_command, ShellIntegration};
use crate::tmux::quote;

/// The escape sequence that sets the user variable, up to the `=` before its value.
const SET_VAR: &str = r"\033]1337;SetUserVar=cohortMark";

/// The base64 of a signed mark's prefix: `B;cohort=` (a multiple of three bytes).
fn prefix(kind: char) -> String {
    base64(format!("{kind};cohort=").as_bytes())
}

/// POSIX shell code (bash, zsh, sh) that sets the signature pieces the base
/// integration prints around its marks; see the module docs.
fn posix_signs() -> String {
    format!(
        "# iTerm2 reports marks to its API clients without their parameters: each of\n\
         # the shell's marks is also reported signed with its token, as the user variable\n\
         # cohortMark, set right before the mark and unset right after it.\n\
         __cohort_uv=$(printf '{SET_VAR}')\n\
         __cohort_sign_end=$(printf '\\007')\n\
         __cohort_sign_B=\"$__cohort_uv={b}\"\n\
         __cohort_sign_C=\"$__cohort_uv={c}\"\n\
         __cohort_sign_D=\"$__cohort_uv={d}\"\n\
         __cohort_sign_exit_end=\"{exit}$__cohort_sign_end\"\n\
         __cohort_after=\"$__cohort_uv$__cohort_sign_end\"\n\
         unset __cohort_uv\n",
        b = prefix('B'),
        c = prefix('C'),
        d = prefix('D'),
        exit = base64(b";exit"),
    )
}

/// The same for fish.
fn fish_signs() -> String {
    format!(
        "# iTerm2 reports marks to its API clients without their parameters: each of\n\
         # the shell's marks is also reported signed with its token, as the user variable\n\
         # cohortMark, set right before the mark and unset right after it.\n\
         set -g __cohort_sign_C (printf '\\e]1337;SetUserVar=cohortMark={c}')\n\
         set -g __cohort_sign_D (printf '\\e]1337;SetUserVar=cohortMark={d}')\n\
         set -g __cohort_sign_end (printf '\\a')\n\
         set -g __cohort_sign_exit_end (printf '{exit}\\a')\n\
         set -g __cohort_after (printf '\\e]1337;SetUserVar=cohortMark\\a')\n",
        c = prefix('C'),
        d = prefix('D'),
        exit = base64(b";exit"),
    )
}

/// The prompt and exit trap of POSIX sh on iTerm2, replacing the base integration's
/// (which reads its tokens with shell arithmetic, as decimals): each signature looks
/// its token up by name in a command substitution, and the index moves on in the
/// prompt itself, inside the `A` and `B` marks' parameters where nothing shows.
const SH_MARKS: &str = r#"__cohort_next() { eval "__cohort_t=\${__cohort_tok$((__cohort_i + 1))-}"; }
__cohort_d() {
    __cohort_next
    printf '%s%s%s]133;D;%s%s' "$__cohort_sign_D" "$__cohort_t" "$__cohort_sign_end" "$1" "$__cohort_after"
}
__cohort_b() {
    __cohort_next
    printf '%s%s%s' "$__cohort_sign_B" "$__cohort_t" "$__cohort_sign_end"
}
trap '__cohort_status=$?; __cohort_next; printf "%s%s%s]133;D;%s;exit%s" "$__cohort_sign_D" "$__cohort_t" "$__cohort_sign_exit_end" "$__cohort_status" "$__cohort_after"; sleep 0.1' EXIT
PS1="\$(__cohort_d "\$?")$(printf ']133;A;n=')\$((__cohort_i+=1))$(printf '')$__cohort_user_ps1\$(__cohort_b)$(printf ']133;B;n=')\$((__cohort_i+=1))$(printf '')\${__cohort_after}"
"#;

/// Shell code for the `/bin/sh` that runs a one-shot command
/// ([`crate::shell::command_with_exit_mark_after`]): its exit mark is signed too.
pub(super) fn one_shot_signs() -> String {
    format!(
        "__cohort_sign_D=$(printf '{SET_VAR}={d}'); \
         __cohort_sign_exit_end=$(printf '{exit}\\007'); \
         __cohort_after=$(printf '{SET_VAR}\\007');",
        d = prefix('D'),
        exit = base64(b";exit"),
    )
}

/// Writes the integration files under `dir` and returns the `/bin/sh` command line
/// that starts `shell` with them.
pub fn install(dir: &Path, shell: &Path) -> Result<String> {
    let base = ShellIntegration::install(&dir.join("shell"))?;
    let own = dir.join("iterm2-shell");
    let q = |p: PathBuf| quote::sh(&p.to_string_lossy());
    let signs = posix_signs();
    let files: Vec<(PathBuf, String)> = vec![
        (
            own.join("bashrc"),
            format!(
                "# cohort shell integration for bash in iTerm2: cohort's marks, also reported\n\
                 # signed, plus B.\n\
                 . {}\n\
                 {signs}\
                 PS1=\"${{PS1}}\"'\\[${{__cohort_sign_B:+$__cohort_sign_B${{__cohort_pad[__cohort_i]-}}$__cohort_sign_end}}\\033]133;B;cohort=${{__cohort_pad[__cohort_i++]-}}\\007${{__cohort_after-}}\\]'\n",
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
                 {signs}\
                 if [[ -o interactive ]]; then\n\
                 \x20   # The B mark and its signature, with the next token, go at the end of the\n\
                 \x20   # prompt as it is drawn, and out of it once a command runs.\n\
                 \x20   __cohort_bseg=\n\
                 \x20   __cohort_b() {{\n\
                 \x20       local __cohort_t=${{__cohort_pad[++__cohort_i]-}}\n\
                 \x20       __cohort_b_done\n\
                 \x20       __cohort_bseg=\"%{{$__cohort_sign_B$__cohort_t$__cohort_sign_end\"$'\\e]133;B\\a'\"$__cohort_after%}}\"\n\
                 \x20       PS1=\"$PS1$__cohort_bseg\"\n\
                 \x20   }}\n\
                 \x20   __cohort_b_done() {{\n\
                 \x20       [[ -n $__cohort_bseg ]] && PS1=${{PS1//$__cohort_bseg/}}\n\
                 \x20       __cohort_bseg=\n\
                 \x20   }}\n\
                 \x20   autoload -Uz add-zsh-hook\n\
                 \x20   add-zsh-hook precmd __cohort_b\n\
                 \x20   add-zsh-hook preexec __cohort_b_done\n\
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
                 {signs}\
                 {SH_MARKS}",
                q(base.dir().join("shrc"))
            ),
        ),
        (
            own.join("cohort.fish"),
            format!(
                "# cohort shell integration for fish in iTerm2: cohort's marks, also reported\n\
                 # signed.\n\
                 source {}\n\
                 {}",
                q(base.dir().join("cohort.fish")),
                fish_signs()
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

    /// Runs `script` in `shell`; `None` when the shell is not installed here (a
    /// failure where every shell must be, `COHORT_REQUIRE_ALL_SHELLS=1`).
    fn run(shell: &str, script: &str) -> Option<String> {
        let out = std::process::Command::new(shell)
            .args(["-c", script])
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

    /// What each shell prints before and after a mark signed with `token` (the base64
    /// of a padded decimal), as the base integration puts the pieces together.
    #[test]
    fn every_shell_signs_with_the_token_it_prints() {
        let token = base64(b"000000000000000000042");
        let set = |v: String| format!("\x1b]1337;SetUserVar=cohortMark={v}\x07");
        let unset = "\x1b]1337;SetUserVar=cohortMark\x07";
        let expected = format!(
            "{}|{}|{}|{}|{unset}",
            set(base64(b"B;cohort=000000000000000000042")),
            set(base64(b"C;cohort=000000000000000000042")),
            set(base64(b"D;cohort=000000000000000000042")),
            set(base64(b"D;cohort=000000000000000000042;exit")),
        );
        let print = format!(
            r#"t={token}; printf '%s|%s|%s|%s|%s' "$__cohort_sign_B$t$__cohort_sign_end" "$__cohort_sign_C$t$__cohort_sign_end" "$__cohort_sign_D$t$__cohort_sign_end" "$__cohort_sign_D$t$__cohort_sign_exit_end" "$__cohort_after""#
        );
        for shell in ["sh", "bash", "zsh"] {
            match run(shell, &format!("{}{print}", posix_signs())) {
                Some(out) => assert_eq!(out, expected, "{shell}"),
                None => eprintln!("{shell} is not installed: not checked"),
            }
        }
        let fish_print = format!(
            r#"set t {token}; printf '%s|%s|%s|%s' "$__cohort_sign_C$t$__cohort_sign_end" "$__cohort_sign_D$t$__cohort_sign_end" "$__cohort_sign_D$t$__cohort_sign_exit_end" "$__cohort_after""#
        );
        let fish_expected = expected.split_once('|').unwrap().1.to_string();
        match run("fish", &format!("{}{fish_print}", fish_signs())) {
            Some(out) => assert_eq!(out, fish_expected, "fish"),
            None => eprintln!("fish is not installed: not checked"),
        }
        let one_shot = format!(
            r#"{} __cohort_tok={token}; printf '%s' "${{__cohort_sign_D:+$__cohort_sign_D$__cohort_tok$__cohort_sign_exit_end}}""#,
            one_shot_signs()
        );
        assert_eq!(
            run("sh", &one_shot).expect("sh"),
            set(base64(b"D;cohort=000000000000000000042;exit"))
        );
    }
}
