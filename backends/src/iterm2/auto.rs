//! Backend choice: tmux, iTerm2, or whichever fits where cohort runs.
//!
//! `auto` picks iTerm2 when cohort runs inside iTerm2 (`TERM_PROGRAM=iTerm.app` or
//! `ITERM_SESSION_ID` set) *and* iTerm2's API answers within a few seconds; anything
//! else (not in iTerm2, the API disabled, the cookie refused) falls back to tmux.

use std::sync::Arc;
use std::time::Duration;

use crate::backend::TerminalBackend;
use crate::error::{BackendError, Result};
use crate::tmux::config::TmuxConfig;
use crate::tmux::TmuxBackend;

use super::{Iterm2Backend, Iterm2Config};

/// How long `auto` waits for iTerm2 before falling back to tmux.
pub const AUTO_TIMEOUT: Duration = Duration::from_secs(5);

/// Which backend to use (`--backend tmux|iterm2|auto`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AutoChoice {
    /// cohort's own tmux server.
    Tmux,
    /// iTerm2's API; an error when it cannot be reached.
    Iterm2,
    /// iTerm2 when running inside it and it answers, else tmux.
    #[default]
    Auto,
}

impl std::str::FromStr for AutoChoice {
    type Err = BackendError;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "tmux" => Ok(AutoChoice::Tmux),
            "iterm2" | "iterm" => Ok(AutoChoice::Iterm2),
            "auto" => Ok(AutoChoice::Auto),
            other => Err(BackendError::InvalidArgument(format!(
                "unknown backend {other:?}: use tmux, iterm2 or auto"
            ))),
        }
    }
}

/// Whether this process runs inside an iTerm2 session.
pub fn inside_iterm2() -> bool {
    std::env::var("TERM_PROGRAM").is_ok_and(|v| v == "iTerm.app")
        || std::env::var_os("ITERM_SESSION_ID").is_some_and(|v| !v.is_empty())
}

/// Connects the chosen backend; see the module docs for `auto`.
pub async fn connect_auto(
    choice: AutoChoice,
    tmux: TmuxConfig,
    iterm2: Iterm2Config,
) -> Result<Arc<dyn TerminalBackend>> {
    match choice {
        AutoChoice::Tmux => Ok(Arc::new(TmuxBackend::connect(tmux).await?)),
        AutoChoice::Iterm2 => Ok(Arc::new(Iterm2Backend::connect(iterm2).await?)),
        AutoChoice::Auto => {
            if inside_iterm2() {
                match tokio::time::timeout(AUTO_TIMEOUT, Iterm2Backend::connect(iterm2)).await {
                    Ok(Ok(backend)) => return Ok(Arc::new(backend)),
                    Ok(Err(e)) => {
                        tracing::info!(target: "cohort::iterm2", error = %e, "running inside iTerm2 but its API did not answer; using tmux")
                    }
                    Err(_) => {
                        tracing::info!(target: "cohort::iterm2", "iTerm2's API did not answer in time; using tmux")
                    }
                }
            }
            Ok(Arc::new(TmuxBackend::connect(tmux).await?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse() {
        assert_eq!("tmux".parse::<AutoChoice>().unwrap(), AutoChoice::Tmux);
        assert_eq!("iTerm2".parse::<AutoChoice>().unwrap(), AutoChoice::Iterm2);
        assert_eq!("auto".parse::<AutoChoice>().unwrap(), AutoChoice::Auto);
        assert!("kitty".parse::<AutoChoice>().is_err());
    }
}
