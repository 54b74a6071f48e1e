//! Shell integration: the rc wrappers that make a shell report prompt marks.
//!
//! Panes cohort creates run the user's shell (bash, zsh or fish; any other shell
//! falls back to `/bin/sh`) through a small wrapper that first loads the user's own
//! startup files as usual, then adds OSC 133 marks from the prompt hooks.
//!
//! The shell starts as a login shell, as terminal emulators and tmux start theirs:
//! the profile files run, so a pane has the PATH the user's terminal has even when
//! cohort itself was started with a bare environment (a desktop app's MCP server on
//! macOS gets `/usr/bin:/bin:/usr/sbin:/sbin`; Homebrew's own setup lives in
//! `~/.zprofile`). zsh and fish take `-l`. bash ignores `--rcfile` in a login shell,
//! so its wrapper reads the profile files itself, in bash's order; when the user has
//! none of them it reads `~/.bashrc`, so an rc-only setup still loads. The `sh`
//! wrapper reads `/etc/profile` and `~/.profile` itself too, because a profile that
//! sets `ENV` would otherwise replace the wrapper.
//!
//! Some `/etc/profile`s (Debian's) reset `PATH` outright. So that a pane never loses
//! a directory cohort's own environment had (an activated virtualenv, a CI
//! toolchain), the bash, zsh and sh wrappers put those directories back in front of
//! what the startup files built, once they have all run.
//!
//! The marks:
//!
//! | mark | when |
//! |---|---|
//! | `ESC ] 133 ; A ; cohort=<key> BEL` | the prompt is about to be drawn |
//! | `ESC ] 133 ; C ; cohort=<key> BEL` | a command was accepted and starts running |
//! | `ESC ] 133 ; D ; <status> ; cohort=<key> BEL` | that command finished with `<status>` |
//! | `ESC ] 133 ; D ; <status> ; cohort=<key> ; exit BEL` | the shell itself exits |
//!
//! These are escape sequences, not text: terminals consume them and nothing visible
//! is printed. `D` is sent only after a command actually ran (not for an empty
//! line), except in the plain `sh` fallback, which reports the last status at every
//! prompt.
//!
//! Every mark is signed with a one-time token (`cohort=<token>`, see [`crate::pad`]).
//! Before anything else runs, the shell reads its tokens from the file named in
//! `COHORT_MARK_PAD`, deletes the file and removes the variable, keeping the tokens in
//! an unexported variable and taking the next one for each mark as it prints it: no
//! program the shell runs can sign a mark, and a mark one of them prints (a `printf`,
//! a recorded terminal log, a replayed capture, a remote host's own integration) is
//! not taken for the shell's (see [`crate::MarkParams`]). Without a pad (a backend that
//! signs marks its own way) the marks carry an empty signature.
//!
//! A terminal that does not hand a mark's parameters on to cohort has its own
//! wrapper around these files report the marks a second way, signed with the same
//! token: right before a `C`, `D` or exiting `D` mark the shell prints
//! `$__cohort_sign_C<token>$__cohort_sign_end` (`_D`, and `$__cohort_sign_D<token>$__cohort_sign_exit_end`
//! as it exits), and right after it `$__cohort_after`. These variables are unset
//! unless a wrapper sets them (the iTerm2 backend's does, see
//! [`crate::iterm2::shell`]), and then nothing is printed.
//!
//! bash runs cohort's prompt hook first in `PROMPT_COMMAND`, so the status it reports
//! is the command's even when a user's line later puts something in front of it
//! (`PROMPT_COMMAND="history -a; $PROMPT_COMMAND"`): the hook moves itself back to the
//! front at the next prompt.

use std::path::{Path, PathBuf};

use crate::error::{BackendError, Result};
use crate::tmux::quote;

/// Shells with a dedicated integration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShellKind {
    /// GNU bash (marks need bash ≥ 4.4 for the "a command ran" check; older bash
    /// reports at every prompt).
    Bash,
    /// zsh.
    Zsh,
    /// fish.
    Fish,
    /// Any POSIX sh (dash, busybox sh, ksh).
    Sh,
}

impl ShellKind {
    /// Recognises a shell by its executable name.
    pub fn detect(shell: &Path) -> ShellKind {
        let name = shell
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .trim_start_matches('-');
        match name {
            "bash" => ShellKind::Bash,
            "zsh" => ShellKind::Zsh,
            "fish" => ShellKind::Fish,
            _ => ShellKind::Sh,
        }
    }
}

/// The user's login shell: `$SHELL` when it exists, else `/bin/sh`.
pub fn user_shell() -> PathBuf {
    std::env::var_os("SHELL")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.exists())
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

/// POSIX shell code shared by the bash, zsh and sh wrappers: `__cohort_keep_path OLD`
/// puts the directories of `OLD` that `PATH` lacks back in front of it, in their order.
const KEEP_PATH: &str = r#"# cohort: after your startup files, the directories of the PATH this shell
# started with that they dropped are put back in front.
__cohort_keep_path() {
    __cohort_rest="$1:"
    __cohort_add=
    while [ -n "$__cohort_rest" ]; do
        __cohort_dir=${__cohort_rest%%:*}
        __cohort_rest=${__cohort_rest#*:}
        case ":$PATH:$__cohort_add:" in
            *":$__cohort_dir:"*) ;;
            *) [ -n "$__cohort_dir" ] && __cohort_add="${__cohort_add:+$__cohort_add:}$__cohort_dir" ;;
        esac
    done
    [ -n "$__cohort_add" ] && PATH="$__cohort_add${PATH:+:$PATH}"
    unset __cohort_rest __cohort_add __cohort_dir
}
"#;

const BASH_RC: &str = r#"# cohort shell integration for bash. Starts like a login shell (bash ignores
# --rcfile in one): /etc/profile, then the first of ~/.bash_profile, ~/.bash_login
# and ~/.profile, which usually load ~/.bashrc; with none of them, ~/.bashrc.
# Then adds OSC 133 prompt marks so cohort knows when a command ends and its exit
# status. Nothing here prints visible text.

# Bash before 4.4 has neither PS0 (so no command-start mark) nor `mapfile -d`.
__cohort_old_bash=
if [ "${BASH_VERSINFO[0]}" -lt 4 ] || { [ "${BASH_VERSINFO[0]}" -eq 4 ] && [ "${BASH_VERSINFO[1]}" -lt 4 ]; }; then
    __cohort_old_bash=1
fi

# The one-time tokens that sign this shell's marks, one per mark, read before
# anything else runs from a file deleted at once: no program gets them. mapfile
# takes the 8192 tokens in a millisecond, a quarter of what read's word splitting
# costs.
__cohort_pad=()
__cohort_i=0
if [ -n "${COHORT_MARK_PAD-}" ]; then
    if [ -r "$COHORT_MARK_PAD" ]; then
        if [ -z "$__cohort_old_bash" ]; then
            mapfile -t -d ' ' __cohort_pad < "$COHORT_MARK_PAD"
            # The newline that ends the line is not part of the last token.
            [ ${#__cohort_pad[@]} -gt 0 ] && __cohort_pad[-1]=${__cohort_pad[-1]%$'\n'}
        else
            IFS=' ' read -r -a __cohort_pad < "$COHORT_MARK_PAD"
        fi
    fi
    command rm -f -- "$COHORT_MARK_PAD"
fi
unset COHORT_MARK_PAD

__cohort_start_path=$PATH
if [ -r /etc/profile ]; then . /etc/profile; fi
if [ -r "$HOME/.bash_profile" ]; then . "$HOME/.bash_profile"
elif [ -r "$HOME/.bash_login" ]; then . "$HOME/.bash_login"
elif [ -r "$HOME/.profile" ]; then . "$HOME/.profile"
elif [ -r "$HOME/.bashrc" ]; then . "$HOME/.bashrc"
fi
__cohort_keep_path "$__cohort_start_path"
unset __cohort_start_path

__cohort_prompt() {
    local __cohort_status=$? __cohort_t
    if [ -n "${__cohort_ran-}" ] || [ -n "${__cohort_old_bash-}" ]; then
        __cohort_t=${__cohort_pad[__cohort_i++]-}
        printf '%s\033]133;D;%s;cohort=%s\007%s' "${__cohort_sign_D:+$__cohort_sign_D$__cohort_t$__cohort_sign_end}" "$__cohort_status" "$__cohort_t" "${__cohort_after-}"
    fi
    __cohort_ran=
    printf '\033]133;A;cohort=%s\007' "${__cohort_pad[__cohort_i++]-}"
    __cohort_first
    return $__cohort_status
}

# Keeps __cohort_prompt first in PROMPT_COMMAND, so the status it reads is the
# command's, whatever a user's line put in front of it.
__cohort_first() {
    if [[ ${PROMPT_COMMAND@a} == *a* ]]; then
        [[ ${PROMPT_COMMAND[0]} == __cohort_prompt ]] && return
        local __cohort_c __cohort_rest=()
        for __cohort_c in "${PROMPT_COMMAND[@]}"; do
            [[ $__cohort_c == __cohort_prompt ]] || __cohort_rest+=("$__cohort_c")
        done
        PROMPT_COMMAND=(__cohort_prompt "${__cohort_rest[@]}")
    else
        case ${PROMPT_COMMAND-} in
            __cohort_prompt | "__cohort_prompt;"*) return ;;
        esac
        local __cohort_pc=${PROMPT_COMMAND-}
        __cohort_pc=${__cohort_pc//__cohort_prompt;/}
        __cohort_pc=${__cohort_pc//__cohort_prompt/}
        # No separator left dangling at either end: `a; ` followed by a user's
        # `; b` would be `a; ; b`, which does not parse, and no hook would run.
        __cohort_pc=${__cohort_pc#"${__cohort_pc%%[![:space:];]*}"}
        __cohort_pc=${__cohort_pc%"${__cohort_pc##*[![:space:];]}"}
        PROMPT_COMMAND="__cohort_prompt${__cohort_pc:+;$__cohort_pc}"
    fi
}

if [ -z "$__cohort_old_bash" ]; then
    # PS0 is expanded when a command is about to run (never for an empty line). The
    # array subscript assigns the flag without printing anything; the next token is
    # taken as it is expanded (read once more just before, for a terminal's signature).
    PS0='${__cohort_unset[__cohort_ran=1]}${__cohort_sign_C:+$__cohort_sign_C${__cohort_pad[__cohort_i]-}$__cohort_sign_end}\033]133;C;cohort=${__cohort_pad[__cohort_i++]-}\007${__cohort_after-}'"${PS0-}"
fi

# When the shell itself exits, report its exit status the same way, and linger a
# moment so the terminal forwards these last bytes before the pane closes. Any
# EXIT trap of your own still runs.
__cohort_exit() {
    local __cohort_status=$? __cohort_t=${__cohort_pad[__cohort_i++]-}
    printf '%s\033]133;D;%s;cohort=%s;exit\007%s' "${__cohort_sign_D:+$__cohort_sign_D$__cohort_t$__cohort_sign_exit_end}" "$__cohort_status" "$__cohort_t" "${__cohort_after-}"
    sleep 0.1
    return $__cohort_status
}
__cohort_user_exit_trap=$(trap -p EXIT)
__cohort_user_exit_trap=${__cohort_user_exit_trap#trap -- }
__cohort_user_exit_trap=${__cohort_user_exit_trap% EXIT}
eval "__cohort_user_exit_trap=${__cohort_user_exit_trap:-''}"
trap '__cohort_exit; eval "$__cohort_user_exit_trap"' EXIT

if [[ "$(declare -p PROMPT_COMMAND 2>/dev/null)" == "declare -a"* ]]; then
    PROMPT_COMMAND=(__cohort_prompt "${PROMPT_COMMAND[@]}")
else
    PROMPT_COMMAND="__cohort_prompt${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
fi
"#;

const ZSH_ENV: &str = r#"# cohort shell integration for zsh: restores your ZDOTDIR and loads your
# .zshenv; zsh then reads your .zprofile/.zshrc/.zlogin as usual.

# The one-time tokens that sign this shell's marks, one per mark, read before
# anything else runs from a file deleted at once: no program gets them.
typeset -ga __cohort_pad
typeset -gi __cohort_i=0
if [[ -n "${COHORT_MARK_PAD-}" ]]; then
    [[ -r "$COHORT_MARK_PAD" ]] && __cohort_pad=(${=$(<"$COHORT_MARK_PAD")})
    command rm -f -- "$COHORT_MARK_PAD"
fi
unset COHORT_MARK_PAD

__cohort_start_path=$PATH
if [[ -n "${COHORT_USER_ZDOTDIR-}" && "$COHORT_USER_ZDOTDIR" != "$HOME" ]]; then
    ZDOTDIR="$COHORT_USER_ZDOTDIR"
else
    unset ZDOTDIR
fi
unset COHORT_USER_ZDOTDIR
[[ -f "${ZDOTDIR:-$HOME}/.zshenv" ]] && source "${ZDOTDIR:-$HOME}/.zshenv"
if [[ -o interactive ]]; then
    __cohort_ran=
    __cohort_precmd() {
        local __cohort_status=$? __cohort_t
        if [[ -n "${__cohort_start_path+set}" ]]; then
            __cohort_keep_path "$__cohort_start_path"
            unset __cohort_start_path
        fi
        if [[ -n "$__cohort_ran" ]]; then
            __cohort_t=${__cohort_pad[++__cohort_i]-}
            printf '%s\033]133;D;%s;cohort=%s\007%s' "${__cohort_sign_D:+$__cohort_sign_D$__cohort_t$__cohort_sign_end}" "$__cohort_status" "$__cohort_t" "${__cohort_after-}"
        fi
        __cohort_ran=
        printf '\033]133;A;cohort=%s\007' "${__cohort_pad[++__cohort_i]-}"
    }
    __cohort_preexec() {
        __cohort_ran=1
        local __cohort_t=${__cohort_pad[++__cohort_i]-}
        printf '%s\033]133;C;cohort=%s\007%s' "${__cohort_sign_C:+$__cohort_sign_C$__cohort_t$__cohort_sign_end}" "$__cohort_t" "${__cohort_after-}"
    }
    __cohort_zshexit() {
        local __cohort_status=$? __cohort_t=${__cohort_pad[++__cohort_i]-}
        printf '%s\033]133;D;%s;cohort=%s;exit\007%s' "${__cohort_sign_D:+$__cohort_sign_D$__cohort_t$__cohort_sign_exit_end}" "$__cohort_status" "$__cohort_t" "${__cohort_after-}"
        sleep 0.1
    }
    autoload -Uz add-zsh-hook
    add-zsh-hook precmd __cohort_precmd
    add-zsh-hook preexec __cohort_preexec
    add-zsh-hook zshexit __cohort_zshexit
fi
"#;

const FISH_RC: &str = r#"# cohort shell integration for fish (run after your config.fish).
# The one-time tokens that sign this shell's marks, one per mark, read from a file
# deleted at once: no program gets them.
set -g __cohort_pad
set -g __cohort_i 0
if set -q COHORT_MARK_PAD
    test -r "$COHORT_MARK_PAD"; and read -g -a __cohort_pad < "$COHORT_MARK_PAD"
    command rm -f -- "$COHORT_MARK_PAD"
    set -e COHORT_MARK_PAD
end
function __cohort_sig
    set -g __cohort_i (math $__cohort_i + 1)
    printf %s $__cohort_pad[$__cohort_i]
end
# A terminal's signature for a mark about to be printed with token $argv[2].
function __cohort_signed
    set -l __cohort_v __cohort_sign_$argv[1]
    set -q $__cohort_v; or return 0
    printf '%s%s%s' "$$__cohort_v" "$argv[2]" "$argv[3]"
end
function __cohort_prompt --on-event fish_prompt
    printf '\e]133;A;cohort=%s\a' (__cohort_sig)
end
function __cohort_preexec --on-event fish_preexec
    set -l __cohort_t (__cohort_sig)
    __cohort_signed C "$__cohort_t" "$__cohort_sign_end"
    printf '\e]133;C;cohort=%s\a%s' "$__cohort_t" "$__cohort_after"
end
function __cohort_postexec --on-event fish_postexec
    set -l __cohort_status $status
    set -l __cohort_t (__cohort_sig)
    __cohort_signed D "$__cohort_t" "$__cohort_sign_end"
    printf '\e]133;D;%s;cohort=%s\a%s' $__cohort_status "$__cohort_t" "$__cohort_after"
end
function __cohort_exit --on-event fish_exit
    set -l __cohort_status $status
    set -l __cohort_t (__cohort_sig)
    __cohort_signed D "$__cohort_t" "$__cohort_sign_exit_end"
    printf '\e]133;D;%s;cohort=%s;exit\a%s' $__cohort_status "$__cohort_t" "$__cohort_after"
    sleep 0.1
end
"#;

const SH_RC: &str = r#"# cohort shell integration for POSIX sh: the prompt reports the last exit status.
# Starts like a login shell: /etc/profile and ~/.profile, then the ENV file, yours
# from before or the one your profile names.

# The one-time tokens that sign this shell's marks, one per mark, read before
# anything else runs from a file deleted at once: no program gets them. sh has no
# arrays: token N is in __cohort_tokN, taken with shell arithmetic.
__cohort_i=0
if [ -n "${COHORT_MARK_PAD-}" ]; then
    __cohort_n=0
    if [ -r "$COHORT_MARK_PAD" ]; then
        for __cohort_v in $(cat "$COHORT_MARK_PAD"); do
            __cohort_n=$((__cohort_n + 1))
            eval "__cohort_tok$__cohort_n=\$__cohort_v"
        done
    fi
    rm -f -- "$COHORT_MARK_PAD"
    unset __cohort_n __cohort_v
fi
unset COHORT_MARK_PAD

ENV=${COHORT_USER_ENV-}
unset COHORT_USER_ENV
__cohort_start_path=$PATH
if [ -r /etc/profile ]; then . /etc/profile; fi
if [ -r "$HOME/.profile" ]; then . "$HOME/.profile"; fi
if [ -n "${ENV-}" ] && [ -r "$ENV" ]; then . "$ENV"; fi
__cohort_keep_path "$__cohort_start_path"
unset __cohort_start_path
trap '__cohort_status=$?; printf "\033]133;D;%s;cohort=%s;exit\007" "$__cohort_status" "$((__cohort_tok$((__cohort_i+=1))))"; sleep 0.1' EXIT
# The prompt as your startup files left it, which a terminal's wrapper builds on.
__cohort_user_ps1=${PS1:-\$ }
PS1="$(printf '\033]133;D;')\$?;cohort=\$((__cohort_tok\$((__cohort_i+=1))))$(printf '\007\033]133;A;')cohort=\$((__cohort_tok\$((__cohort_i+=1))))$(printf '\007')$__cohort_user_ps1"
"#;

/// The installed integration files.
#[derive(Clone, Debug)]
pub struct ShellIntegration {
    dir: PathBuf,
}

impl ShellIntegration {
    /// Writes the integration files under `dir` (only those whose content changed).
    pub fn install(dir: &Path) -> Result<Self> {
        for (name, content) in Self::files() {
            let content = content.as_str();
            let path = dir.join(name);
            if std::fs::read_to_string(&path).ok().as_deref() == Some(content) {
                continue;
            }
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| BackendError::io(format!("creating {}", parent.display()), e))?;
            }
            // Write then rename, so a shell starting at the same moment never reads half a file.
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            std::fs::write(&tmp, content)
                .map_err(|e| BackendError::io(format!("writing {}", tmp.display()), e))?;
            std::fs::rename(&tmp, &path)
                .map_err(|e| BackendError::io(format!("writing {}", path.display()), e))?;
        }
        Ok(ShellIntegration {
            dir: dir.to_path_buf(),
        })
    }

    /// The files, by their path under the integration's directory, and their text.
    pub fn files() -> [(&'static str, String); 4] {
        [
            ("bashrc", format!("{KEEP_PATH}\n{BASH_RC}")),
            ("zsh/.zshenv", format!("{KEEP_PATH}\n{ZSH_ENV}")),
            ("cohort.fish", FISH_RC.to_string()),
            ("shrc", format!("{KEEP_PATH}\n{SH_RC}")),
        ]
    }

    /// Directory holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A `/bin/sh` command line that starts `shell` interactively with the integration.
    pub fn shell_command(&self, shell: &Path) -> String {
        launch_command(shell, &self.dir)
    }
}

/// A `/bin/sh` command line that starts `shell` as an interactive login shell with
/// the integration files found in `files` (`bashrc`, `zsh/.zshenv`, `cohort.fish`,
/// `shrc`). A backend that adds marks of its own writes its own files there.
pub fn launch_command(shell: &Path, files: &Path) -> String {
    let path = |name: &str| quote::sh(&files.join(name).to_string_lossy());
    let shell_q = quote::sh(&shell.to_string_lossy());
    // SHELL names the shell the pane runs (tmux would leave its own `/bin/sh` there), so
    // programs that start "your shell" start this one.
    match ShellKind::detect(shell) {
        ShellKind::Bash => {
            format!("SHELL={shell_q} exec {shell_q} --rcfile {} -i", path("bashrc"))
        }
        ShellKind::Zsh => format!(
            "COHORT_USER_ZDOTDIR=\"${{ZDOTDIR:-$HOME}}\" ZDOTDIR={} SHELL={shell_q} exec {shell_q} -l -i",
            path("zsh")
        ),
        ShellKind::Fish => {
            let init = format!("source {}", path("cohort.fish"));
            format!(
                "SHELL={shell_q} exec {shell_q} -l --init-command {} -i",
                quote::sh(&init)
            )
        }
        ShellKind::Sh => format!(
            "COHORT_USER_ENV=\"${{ENV-}}\" ENV={} SHELL={shell_q} exec {shell_q} -i",
            path("shrc")
        ),
    }
}

/// A `/bin/sh` command line that runs `command` and then reports its exit status as
/// an OSC 133 `D` mark signed with the one token of its pad (read from the file named
/// in `COHORT_MARK_PAD` and deleted before the command starts), so one-shot commands finish with the same event as
/// shell commands. Job control is on, so the command runs in a process group of its
/// own that holds the terminal: the terminal's foreground is the command, not the
/// wrapper. It lingers 0.1 s after the mark: tmux 3.3a drops a dying pane's last
/// output from the control stream about half the time when the process exits right
/// after writing it.
pub fn command_with_exit_mark(command: &str) -> String {
    command_with_exit_mark_after(command, "")
}

/// [`command_with_exit_mark`] with `setup`, shell code run before the command starts
/// (ending in `;`): a terminal's wrapper sets `__cohort_sign_D`,
/// `__cohort_sign_exit_end` and `__cohort_after` there (see the module docs); the
/// token is in `$__cohort_tok`.
pub fn command_with_exit_mark_after(command: &str, setup: &str) -> String {
    format!(
        "__cohort_tok=; if [ -n \"${{COHORT_MARK_PAD-}}\" ]; then read -r __cohort_tok < \"$COHORT_MARK_PAD\" 2>/dev/null; rm -f -- \"$COHORT_MARK_PAD\"; fi; unset COHORT_MARK_PAD; {setup} set -m; /bin/sh -c {}; __cohort_status=$?; printf '%s\\033]133;D;%s;cohort=%s;exit\\007%s' \"${{__cohort_sign_D:+$__cohort_sign_D$__cohort_tok$__cohort_sign_exit_end}}\" \"$__cohort_status\" \"$__cohort_tok\" \"${{__cohort_after-}}\"; sleep 0.1; exit \"$__cohort_status\"",
        quote::sh(command)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_shells() {
        assert_eq!(ShellKind::detect(Path::new("/bin/bash")), ShellKind::Bash);
        assert_eq!(
            ShellKind::detect(Path::new("/usr/local/bin/zsh")),
            ShellKind::Zsh
        );
        assert_eq!(ShellKind::detect(Path::new("fish")), ShellKind::Fish);
        assert_eq!(ShellKind::detect(Path::new("/bin/dash")), ShellKind::Sh);
        assert_eq!(ShellKind::detect(Path::new("-bash")), ShellKind::Bash);
    }

    #[test]
    fn install_is_idempotent_and_commands_name_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let shells = ShellIntegration::install(dir.path()).unwrap();
        ShellIntegration::install(dir.path()).unwrap();
        let cmd = shells.shell_command(Path::new("/bin/bash"));
        assert!(
            cmd.starts_with("SHELL=/bin/bash exec /bin/bash --rcfile "),
            "{cmd}"
        );
        assert!(dir.path().join("bashrc").exists());
        assert!(dir.path().join("zsh/.zshenv").exists());
    }
}
