//! cohort: a terminal engine for AI agents, served over MCP.
//!
//! The layers, top to bottom (arrows point one way only):
//!
//! - [`cli`]: the `cohort` command line (thin).
//! - [`mcp`]: the MCP server ([`mcp::CohortServer`]): validates arguments, resolves
//!   targets, calls the engine, formats results. Lives here so tests can drive it
//!   in-process.
//! - [`engine`]: the [`Engine`] puts together the terminal ([`cohort_terminal`]),
//!   the workers ([`cohort_workers`]) and the orchestration
//!   ([`cohort_orchestration`]), the crates that do the work.
//! - [`grpc`]: the gRPC API, a front end beside [`mcp`] over the same engine
//!   methods, generated from `proto/cohort.proto`.
//! - [`dashboard`]: the live web page over the engine's events (beside MCP, a front
//!   end of its own; [`guard`] holds the checks every HTTP service passes).
//! - [`cohort_backends`]: the `TerminalBackend` trait and the tmux backend.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let config = cohort::Config::from_env();
//! let engine = cohort::Engine::start(&config).await?;
//! let pane = engine.terminal.open(cohort_terminal::OpenOptions::named("builder")).await?;
//! engine.terminal.type_line(&pane.id, "cargo build").await?;
//! # Ok(()) }
//! ```

pub mod bounded;
pub mod cli;
pub mod config;
pub mod connections;
pub mod dashboard;
pub mod engine;
pub mod grpc;
pub mod guard;
pub mod hosts;
pub mod mcp;
pub mod restriction;
pub mod rules;
pub mod telemetry;

pub use cohort_terminal::TerminalError;
pub use config::Config;
pub use engine::Engine;
