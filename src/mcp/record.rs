//! The `record` tool (in the *core* toolset): a session recorded to an asciicast v2
//! file that `asciinema play` replays.

use cohort_terminal::{
    record::{RecordOptions, RecordingInfo, DEFAULT_RECORDING_CAP},
    sessions::session_name,
};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router, Json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::types::*;
use super::CohortServer;

/// `record` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordArgs {
    /// Session name, persistent id, agent name or pane id.
    pub target: String,
    /// Stop recording instead of starting (default false).
    #[serde(default)]
    pub stop: bool,
    /// The file to write (default: under cohort's state directory); never overwritten.
    #[serde(default)]
    pub path: Option<String>,
    /// Mark each command the shell starts with the text typed (default false).
    #[serde(default)]
    pub input_marks: bool,
    /// Stop when the file reaches this many MiB (default 64).
    #[serde(default)]
    pub max_mb: Option<u64>,
}

/// `record` result.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RecordResult {
    /// Session name.
    pub session: String,
    /// The asciicast file.
    pub path: String,
    /// Whether it is recording now.
    pub recording: bool,
    /// Bytes written.
    pub bytes: u64,
    /// Why it ended, once it has.
    pub ended: Option<String>,
    /// How to watch it.
    pub play: String,
}

impl From<RecordingInfo> for RecordResult {
    fn from(r: RecordingInfo) -> Self {
        let path = r.path.display().to_string();
        RecordResult {
            session: r.session,
            play: format!("asciinema play {path}"),
            path,
            recording: r.recording,
            bytes: r.bytes,
            ended: r.ended,
        }
    }
}

#[tool_router(router = record_router, vis = "pub(crate)")]
impl CohortServer {
    #[tool(
        description = "Record a session to an asciicast v2 file (replay with `asciinema play FILE`): from the screen as it is now, every byte of output with its timing, until stop: true, the session closes, or the size limit. Optionally marks each command started with the text typed.",
        annotations(
            title = "Record a session",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn record(
        &self,
        Parameters(args): Parameters<RecordArgs>,
    ) -> Result<Json<RecordResult>, String> {
        let engine = self.engine().await?;
        let pane = engine.terminal.resolve(&args.target).await.map_err(err)?;
        if args.stop {
            let stopped = engine
                .terminal
                .stop_recording(&pane.id)
                .await
                .map_err(err)?;
            return stopped.map(|r| Json(r.into())).ok_or_else(|| {
                format!(
                    "session {:?} is not being recorded: start with record (without stop)",
                    session_name(&pane)
                )
            });
        }
        let options = RecordOptions {
            path: args.path.map(Into::into),
            input_marks: args.input_marks,
            max_bytes: args
                .max_mb
                .map_or(DEFAULT_RECORDING_CAP, |mb| mb.saturating_mul(1 << 20)),
        };
        let info = engine
            .terminal
            .record(&pane.id, options)
            .await
            .map_err(err)?;
        Ok(Json(info.into()))
    }
}
