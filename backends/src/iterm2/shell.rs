//! Shell start-up for iTerm2 panes.
//!
//! iTerm2 understands OSC 133 natively, but it reports a prompt to API clients only
//! when the prompt *ends* (`OSC 133 ; B`, "input starts"). cohort's own integration
//! ([`crate::shell`]) emits `A`, `C` and `D`; this module wraps it and adds a `B`
//! after the prompt for bash, zsh and POSIX sh, so that iTerm2 sends the prompt
//! notification cohort reports as [`crate::PromptMark::PromptStart`]. fish runs
//! cohort's integration unchanged (its prompt is reported from `C` on).

use std::path::{Path, PathBuf};

use crate::error::{BackendError, Result};
use crate::shell::{launch_command, ShellIntegration, ShellKind};
use crate::tmux::quote;

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
                "# cohort shell integration for bash in iTerm2: cohort's marks plus B.\n\
                 . {}\n\
                 PS1=\"${{PS1}}\"'\\[\\033]133;B\\007\\]'\n",
                q(base.dir().join("bashrc"))
            ),
        ),
        (
            own.join("zsh/.zshenv"),
            format!(
                "# cohort shell integration for zsh in iTerm2: cohort's marks plus B.\n\
                 ZDOTDIR={zdir}\n\
                 source {zdir}/.zshenv\n\
                 if [[ -o interactive ]]; then\n\
                 \x20   __cohort_b() {{ [[ \"$PS1\" == *$'\\e]133;B\\a'* ]] || PS1=\"$PS1\"$'%{{\\e]133;B\\a%}}'; }}\n\
                 \x20   autoload -Uz add-zsh-hook\n\
                 \x20   add-zsh-hook precmd __cohort_b\n\
                 fi\n",
                zdir = q(base.dir().join("zsh"))
            ),
        ),
        (
            own.join("shrc"),
            format!(
                "# cohort shell integration for sh in iTerm2: cohort's marks plus B.\n\
                 . {}\n\
                 PS1=\"${{PS1}}$(printf '\\033]133;B\\007')\"\n",
                q(base.dir().join("shrc"))
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
    Ok(match ShellKind::detect(shell) {
        ShellKind::Fish => base.shell_command(shell),
        _ => launch_command(shell, &own),
    })
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
}
