//! The engine: owns the backend and answers in terms of named sessions.
//!
//! A *session* is a named terminal (a tmux window with its pane). Its identity (a
//! persistent UUID and its name) is stamped on the pane, so any cohort process
//! finds it by name, id or pane id.

mod target;

use std::sync::Arc;

use cohort_backends::tmux::TmuxBackend;
use cohort_backends::{
    BackendError, Identity, Key, PaneId, PaneInfo, Screen, SpawnOptions, TerminalBackend,
};

use crate::config::Config;

pub use target::{describe_targets, resolve_target};

/// Errors the engine reports; each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// No session matches the target.
    #[error("no session named {target:?}; {known}")]
    UnknownTarget {
        /// The target as given.
        target: String,
        /// What exists, phrased for the user.
        known: String,
    },
    /// The name is taken.
    #[error("a session named {0:?} already exists: pick another name, or close it first")]
    NameTaken(String),
    /// The name is not usable.
    #[error("invalid session name {name:?}: {why}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// How to open a session.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Unique name.
    pub name: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// Command to run instead of an interactive shell.
    pub command: Option<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
}

impl OpenOptions {
    /// A shell session with this name.
    pub fn named(name: impl Into<String>) -> Self {
        OpenOptions {
            name: name.into(),
            ..Default::default()
        }
    }
}

/// The engine; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    backend: Arc<dyn TerminalBackend>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("backend", &self.backend.kind())
            .finish()
    }
}

impl Engine {
    /// Starts the engine on the tmux backend.
    pub async fn start(config: &Config) -> Result<Engine, EngineError> {
        let backend = TmuxBackend::connect(config.tmux()).await?;
        Ok(Engine::with_backend(Arc::new(backend)))
    }

    /// An engine over any backend.
    pub fn with_backend(backend: Arc<dyn TerminalBackend>) -> Engine {
        Engine { backend }
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn TerminalBackend> {
        &self.backend
    }

    /// Every session (pane) cohort manages.
    pub async fn list(&self) -> Result<Vec<PaneInfo>, EngineError> {
        Ok(self.backend.list_panes().await?)
    }

    /// Finds a session by name, persistent id, agent name or pane id.
    pub async fn resolve(&self, target: &str) -> Result<PaneInfo, EngineError> {
        let panes = self.list().await?;
        resolve_target(&panes, target)
            .cloned()
            .ok_or_else(|| EngineError::UnknownTarget {
                target: target.to_string(),
                known: describe_targets(&panes),
            })
    }

    /// Opens a new session.
    pub async fn open(&self, options: OpenOptions) -> Result<PaneInfo, EngineError> {
        validate_name(&options.name)?;
        let panes = self.list().await?;
        if resolve_target(&panes, &options.name).is_some() {
            return Err(EngineError::NameTaken(options.name));
        }
        let identity = Identity {
            id: uuid::Uuid::new_v4().to_string(),
            name: options.name.clone(),
            agent: None,
            team: None,
        };
        let mut env = options.env;
        env.push(("COHORT_SESSION".into(), options.name.clone()));
        env.push(("COHORT_SESSION_ID".into(), identity.id.clone()));
        Ok(self
            .backend
            .spawn(SpawnOptions {
                name: options.name,
                cwd: options.cwd,
                env,
                command: options.command,
                size: None,
                identity: Some(identity),
            })
            .await?)
    }

    /// Types `text` and presses Enter (a multi-line text is pasted as one paste).
    pub async fn type_line(&self, pane: &PaneId, text: &str) -> Result<(), EngineError> {
        self.send(pane, text, true).await
    }

    /// Types `text`, optionally followed by Enter.
    pub async fn send(&self, pane: &PaneId, text: &str, enter: bool) -> Result<(), EngineError> {
        self.backend.cancel_copy_mode(pane).await?;
        if text.contains('\n') {
            self.backend.paste(pane, text).await?;
        } else {
            self.backend.send_text(pane, text).await?;
        }
        if enter {
            self.backend.send_keys(pane, &[Key::ENTER]).await?;
        }
        Ok(())
    }

    /// Presses named keys.
    pub async fn keys(&self, pane: &PaneId, keys: &[Key]) -> Result<(), EngineError> {
        self.backend.cancel_copy_mode(pane).await?;
        Ok(self.backend.send_keys(pane, keys).await?)
    }

    /// The rendered screen.
    pub async fn screen(&self, pane: &PaneId) -> Result<Screen, EngineError> {
        Ok(self.backend.read_screen(pane).await?)
    }

    /// Closes a session.
    pub async fn close(&self, pane: &PaneId) -> Result<(), EngineError> {
        Ok(self.backend.close(pane).await?)
    }
}

/// Session names: 1–64 characters, no control characters, not starting with `_` or
/// `%` (reserved for cohort and for pane ids).
pub fn validate_name(name: &str) -> Result<(), EngineError> {
    let invalid = |why| EngineError::InvalidName {
        name: name.to_string(),
        why,
    };
    if name.trim().is_empty() {
        return Err(invalid("it is empty"));
    }
    if name.chars().count() > 64 {
        return Err(invalid("it is longer than 64 characters"));
    }
    if name.chars().any(char::is_control) {
        return Err(invalid("it contains control characters"));
    }
    if name.starts_with('_') || name.starts_with('%') {
        return Err(invalid("names starting with '_' or '%' are reserved"));
    }
    if name != name.trim() {
        return Err(invalid("it starts or ends with spaces"));
    }
    Ok(())
}
