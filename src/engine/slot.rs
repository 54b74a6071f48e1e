//! The engine a server uses, shared by its front ends (MCP, gRPC, the dashboard):
//! ready, or starting in the background so the server can answer at once.

use std::sync::Arc;

use super::Engine;
use crate::config::Config;

/// The engine a server uses: ready, or starting in the background.
///
/// A server (`cohort mcp`, `cohort serve`) answers at once and connects to the
/// terminal backend meanwhile (starting cohort's tmux server can take tens of
/// milliseconds); calls wait for it. When it cannot start (tmux missing), the call
/// says why and how to fix it, and the next call tries again: a start that failed
/// for a moment (another process starting at the same time) costs one call, not
/// the server.
#[derive(Clone)]
pub struct EngineSlot {
    cell: Arc<tokio::sync::OnceCell<Engine>>,
    config: Option<Arc<Config>>,
}

impl EngineSlot {
    /// A slot holding a running engine (whose watchers and notifier it starts).
    pub fn ready(engine: Engine) -> Self {
        engine.orchestrator.start_orchestration();
        EngineSlot {
            cell: Arc::new(tokio::sync::OnceCell::new_with(Some(engine))),
            config: None,
        }
    }

    /// A slot whose engine starts now, in the background.
    pub fn starting(config: Config) -> Self {
        let slot = EngineSlot {
            cell: Arc::new(tokio::sync::OnceCell::new()),
            config: Some(Arc::new(config)),
        };
        let background = slot.clone();
        tokio::spawn(async move {
            if let Err(e) = background.get().await {
                tracing::error!(target: "cohort::engine", "the terminal backend did not start: {e}");
            }
        });
        slot
    }

    /// The engine if it has started, without waiting for it.
    pub fn started(&self) -> Option<Engine> {
        self.cell.get().cloned()
    }

    /// The engine, once it has started; a start that failed is tried again.
    pub async fn get(&self) -> Result<&Engine, String> {
        let config = self.config.clone();
        self.cell
            .get_or_try_init(|| async move {
                match config {
                    Some(config) => {
                        let engine = Engine::start(&config).await.map_err(|e| e.to_string())?;
                        // Before the first tool call: a read or run then sees what the
                        // sessions printed before this process started.
                        engine.terminal.take_in_histories().await;
                        engine.orchestrator.start_orchestration();
                        Ok(engine)
                    }
                    None => Err("no engine configured".to_string()),
                }
            })
            .await
            .map_err(|e| format!("cohort's terminal backend is not available: {e}"))
    }
}
