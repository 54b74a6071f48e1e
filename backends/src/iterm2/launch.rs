//! How a new iTerm2 session is started: the profile properties that make it run
//! cohort's command (working directory, environment, the command or the shell).
//!
//! Everything goes into one `/bin/sh -c` script passed as a single argument,
//! encoded with [`literal::command`] so that iTerm2 evaluates, substitutes and
//! splits nothing of it: a command, an environment value or a directory name with
//! `\(…)`, `$$`, quotes or backslashes arrives as written. The directory is changed
//! by the script too, since iTerm2 would evaluate a "Working Directory" property.
//! A pane whose marks are signed gets the path of its pad of one-time tokens in the
//! environment (see [`crate::pad`]): a path, never a token, and the shell deletes the
//! file before anything else runs. Secrets in the environment ([`SECRET_ENV`]: a
//! pane's signal secret, a worker's hook key) go the same way: iTerm2 keeps the
//! script as the session's command and `ps` shows it while it runs, so the script
//! reads them from a file only the user can read, which it deletes.

use crate::error::{BackendError, Result};
use crate::pad::{TokenForm, PAD_ENV};
use crate::shell::command_with_exit_mark_after;
use crate::tmux::quote;
use crate::types::SpawnOptions;
use crate::types::SECRET_ENV;

use super::literal;
use super::proto::ProfileProperty;
use super::requests::property;
use super::shell::one_shot_signs;
use super::Iterm2Backend;

impl Iterm2Backend {
    /// The `/bin/sh` script a new session runs: into the directory, then the
    /// command (or the shell) with the extra environment.
    pub(super) fn launch_script(&self, options: &SpawnOptions) -> Result<String> {
        let mut script = String::new();
        if let Some(cwd) = &options.cwd {
            if !std::path::Path::new(cwd).is_dir() {
                return Err(BackendError::InvalidArgument(format!(
                    "working directory {:?} does not exist or is not a directory",
                    cwd.chars().take(200).collect::<String>()
                )));
            }
            script.push_str(&format!("cd -- {} || exit 1; ", quote::sh(cwd)));
        }
        type Var = (String, String);
        let (secrets, plain): (Vec<&Var>, Vec<&Var>) = options
            .env
            .iter()
            .partition(|(key, _)| SECRET_ENV.contains(&key.as_str()));
        script.push_str("exec ");
        let pad = match &options.marks {
            Some(marks) => {
                let path = marks.write_pad(&self.inner.config.pad_dir(), TokenForm::Base64)?;
                Some((PAD_ENV.to_string(), path.to_string_lossy().into_owned()))
            }
            None => None,
        };
        let env: Vec<&(String, String)> = plain.into_iter().chain(pad.as_ref()).collect();
        if !env.is_empty() {
            script.push_str("/usr/bin/env");
            for (key, value) in env {
                if key.is_empty() || key.contains('=') || key.contains('\0') {
                    return Err(BackendError::InvalidArgument(format!(
                        "environment variable name {key:?} is not valid: use a non-empty name without '='"
                    )));
                }
                script.push(' ');
                script.push_str(&quote::sh(&format!("{key}={value}")));
            }
            script.push(' ');
        }
        let command = match &options.command {
            Some(command) if command.trim().is_empty() => {
                return Err(BackendError::InvalidArgument("the command is empty".into()))
            }
            Some(command) => command_with_exit_mark_after(command, &one_shot_signs()),
            None => self.inner.shell_command.clone(),
        };
        script.push_str("/bin/sh -c ");
        script.push_str(&quote::sh(&command));
        // Written last, once nothing above can refuse, and read (and deleted)
        // first, before anything else can fail.
        if !secrets.is_empty() {
            let file = quote::sh(&self.write_secrets(&secrets)?.to_string_lossy());
            script = format!(
                "while IFS= read -r cohort_kv; do export \"$cohort_kv\"; done < {file}; \
                 rm -f -- {file}; unset cohort_kv; {script}"
            );
        }
        Ok(script)
    }

    /// Writes `secrets` (`KEY=value` lines) to a new file only the user can read,
    /// beside the pads; returns its path.
    fn write_secrets(&self, secrets: &[&(String, String)]) -> Result<std::path::PathBuf> {
        use std::io::Write;
        let dir = self.inner.config.pad_dir();
        crate::pad::create_private_dir(&dir)?;
        let path = dir.join(format!("{}.env", crate::pad::pad_name()?));
        let mut text = String::new();
        for (key, value) in secrets {
            if value.contains(['\n', '\0']) {
                return Err(BackendError::InvalidArgument(format!(
                    "the value of {key} holds a line break: a secret is one line"
                )));
            }
            text.push_str(&format!("{key}={value}\n"));
        }
        crate::pad::private_file(&path)?
            .write_all(text.as_bytes())
            .map_err(|e| BackendError::io(format!("writing {}", path.display()), e))?;
        Ok(path)
    }

    pub(super) fn profile_properties(
        &self,
        options: &SpawnOptions,
    ) -> Result<Vec<ProfileProperty>> {
        let json = |v: serde_json::Value| v.to_string();
        let script = self.launch_script(options)?;
        let command = literal::command(&["/bin/sh", "-c", &script]);
        Ok(vec![
            property("Custom Command", json("Yes".into())),
            property("Command", json(command.into())),
            // The session stays when its program ends ("Session Ended" under its
            // output), as tmux keeps a dead pane, so its exit can be read.
            property("Close Sessions On End", json(false.into())),
        ])
    }
}
