//! How a new iTerm2 session is started: the profile properties that make it run
//! cohort's command line (environment, command or shell, working directory).

use crate::error::{BackendError, Result};
use crate::shell::command_with_exit_mark;
use crate::tmux::quote;
use crate::types::SpawnOptions;

use super::proto::ProfileProperty;
use super::requests::property;
use super::Iterm2Backend;

impl Iterm2Backend {
    /// The `/bin/sh` command line a new session runs, with env and the command.
    pub(super) fn command_line(&self, options: &SpawnOptions) -> Result<String> {
        let mut line = String::new();
        if !options.env.is_empty() {
            line.push_str("/usr/bin/env");
            for (key, value) in &options.env {
                if key.is_empty() || key.contains('=') || key.contains('\0') {
                    return Err(BackendError::InvalidArgument(format!(
                        "environment variable name {key:?} is not valid: use a non-empty name without '='"
                    )));
                }
                line.push(' ');
                line.push_str(&quote::sh(&format!("{key}={value}")));
            }
            line.push(' ');
        }
        let command = match &options.command {
            Some(command) if command.trim().is_empty() => {
                return Err(BackendError::InvalidArgument("the command is empty".into()))
            }
            Some(command) => command_with_exit_mark(command),
            None => self.inner.shell_command.clone(),
        };
        line.push_str("/bin/sh -c ");
        line.push_str(&quote::sh(&command));
        Ok(line)
    }

    pub(super) fn profile_properties(
        &self,
        options: &SpawnOptions,
    ) -> Result<Vec<ProfileProperty>> {
        let json = |v: serde_json::Value| v.to_string();
        let mut props = vec![
            property("Custom Command", json("Yes".into())),
            property("Command", json(self.command_line(options)?.into())),
            // The session stays when its program ends ("Session Ended" under its
            // output), as tmux keeps a dead pane, so its exit can be read.
            property("Close Sessions On End", json(false.into())),
        ];
        if let Some(cwd) = &options.cwd {
            if !std::path::Path::new(cwd).is_dir() {
                return Err(BackendError::InvalidArgument(format!(
                    "working directory {cwd:?} does not exist or is not a directory"
                )));
            }
            props.push(property("Custom Directory", json("Yes".into())));
            props.push(property("Working Directory", json(cwd.as_str().into())));
        }
        Ok(props)
    }
}
