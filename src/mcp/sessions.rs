//! HTTP MCP sessions with a ceiling: at most [`SESSIONS_MAX`] live at once.
//!
//! Every `initialize` over streamable HTTP makes a session that lives until the
//! client sends `DELETE` or it stays idle for rmcp's keep-alive (5 minutes). A client
//! that initializes in a loop and never deletes would otherwise grow the server
//! without bound. [`CappedSessions`] wraps rmcp's [`LocalSessionManager`], notes when
//! each session was last used, and when a new session would pass the ceiling it
//! closes the one unused for longest first. A client whose session was closed gets
//! a 404 that says so and what to do (see [`SESSION_GONE`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};

/// Sessions alive at once; past it, the least recently used is closed.
pub const SESSIONS_MAX: usize = 256;

/// The body of a 404 for a session that is gone.
pub const SESSION_GONE: &str = "this MCP session is gone: it was deleted, idle for 5 minutes, \
or closed as the least recently used when the server reached its limit of live sessions. \
Start a new one with an initialize request (without the Mcp-Session-Id header).";

/// rmcp's session manager with a ceiling on live sessions.
#[derive(Debug)]
pub struct CappedSessions {
    inner: LocalSessionManager,
    max: usize,
    used: Mutex<HashMap<SessionId, Instant>>,
}

impl CappedSessions {
    /// A manager keeping at most `max` sessions (at least one).
    pub fn new(max: usize) -> Self {
        CappedSessions {
            inner: LocalSessionManager::default(),
            max: max.max(1),
            used: Mutex::new(HashMap::new()),
        }
    }

    /// Notes that session `id` was used now.
    fn touch(&self, id: &SessionId) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = used.get_mut(id) {
            *at = Instant::now();
        }
    }

    /// Forgets sessions rmcp no longer has, then closes the least recently used
    /// until there is room for one more.
    async fn make_room(&self) -> Result<(), <LocalSessionManager as SessionManager>::Error> {
        if self.lock_used().len() < self.max {
            return Ok(());
        }
        let known: Vec<SessionId> = self.lock_used().keys().cloned().collect();
        for id in known {
            if !self.inner.has_session(&id).await? {
                self.lock_used().remove(&id);
            }
        }
        loop {
            let oldest = {
                let used = self.lock_used();
                if used.len() < self.max {
                    return Ok(());
                }
                used.iter()
                    .min_by_key(|(_, at)| **at)
                    .map(|(id, _)| id.clone())
            };
            let Some(oldest) = oldest else {
                return Ok(());
            };
            tracing::info!(target: "cohort::http", "{} live MCP sessions: closing the least recently used", self.max);
            self.lock_used().remove(&oldest);
            self.inner.close_session(&oldest).await?;
        }
    }

    fn lock_used(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Instant>> {
        self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Live sessions, as this manager counts them.
    #[cfg(test)]
    fn live(&self) -> usize {
        self.lock_used().len()
    }
}

impl SessionManager for CappedSessions {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.make_room().await?;
        let (id, transport) = self.inner.create_session().await?;
        self.lock_used().insert(id.clone(), Instant::now());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.lock_used().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_ceiling_the_least_recently_used_session_is_closed() {
        let sessions = CappedSessions::new(3);
        let mut ids = Vec::new();
        for _ in 0..3 {
            let (id, _transport) = sessions.create_session().await.unwrap();
            ids.push(id);
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        // The first is used again, so the second is now the least recently used.
        sessions.touch(&ids[0]);
        let (newest, _transport) = sessions.create_session().await.unwrap();
        assert_eq!(sessions.live(), 3);
        assert!(sessions.has_session(&ids[0]).await.unwrap());
        assert!(!sessions.has_session(&ids[1]).await.unwrap());
        assert!(sessions.has_session(&ids[2]).await.unwrap());
        assert!(sessions.has_session(&newest).await.unwrap());
        // A deleted session frees its place at once.
        sessions.close_session(&ids[2]).await.unwrap();
        assert_eq!(sessions.live(), 2);
    }
}
