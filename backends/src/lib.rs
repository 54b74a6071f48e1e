//! Terminal backends for cohort.
//!
//! A [`TerminalBackend`] is a terminal program cohort can drive: open windows and
//! panes, type, press keys, paste, read lines and the screen, and receive events
//! (output bytes, prompt marks with exit status, panes exiting, layouts changing).
//! This crate holds the trait, the data it exchanges, and the implementations:
//!
//! - [`tmux::TmuxBackend`]: cohort's own tmux server through control mode (Linux,
//!   macOS, CI; the default).
//! - [`iterm2::Iterm2Backend`]: iTerm2 through its WebSocket + protobuf API (macOS);
//!   [`iterm2::connect_auto`] picks between the two.
//!
//! It knows nothing of MCP or of how output is reduced; those live above it.
//!
//! ```no_run
//! use cohort_backends::{tmux::{TmuxBackend, config::TmuxConfig}, Key, SpawnOptions, TerminalBackend};
//!
//! # async fn demo() -> cohort_backends::Result<()> {
//! let backend = TmuxBackend::connect(TmuxConfig::new("/tmp/cohort-demo")).await?;
//! let mut events = backend.subscribe();
//! let pane = backend.spawn(SpawnOptions { name: "demo".into(), ..Default::default() }).await?;
//! backend.send_text(&pane.id, "false").await?;
//! backend.send_keys(&pane.id, &[Key::ENTER]).await?;
//! while let Some(event) = events.recv().await {
//!     println!("{event:?}"); // Output { .. }, Prompt { mark: CommandFinished { exit_status: Some(1) } }, …
//! }
//! # Ok(()) }
//! ```

// The backends implement the typing methods; the rule that only the terminal's input
// type calls them (clippy.toml) is for their callers.
#![allow(clippy::disallowed_methods)]
#![deny(missing_docs)]
#![warn(rust_2018_idioms, future_incompatible)]

mod backend;
pub mod error;
pub mod event;
pub mod hosts;
pub mod iterm2;
pub mod keys;
pub mod layout;
mod link;
pub mod pad;
pub mod process;
pub mod remote_procs;
pub mod shell;
pub mod stream;
pub mod telemetry;
pub mod tmux;
mod types;

pub use backend::TerminalBackend;
pub use error::{BackendError, Result};
pub use event::{BackendEvent, EventHub, EventStream, MarkParams, PromptMark};
pub use keys::{Guarded, Key, KeyCode, Keystrokes};
pub use layout::{LayoutNode, Rect};
pub use process::{group_members_waiting, waiting_for_input};
pub use types::*;
