//! The gRPC API: cohort's engine operations as typed calls, for programs that are
//! not MCP hosts (`cohort serve --grpc ADDR`).
//!
//! A front end beside [`crate::mcp`], over the same engine methods: sessions,
//! run/send/read/key with verdicts, layouts, agents and teams, broadcasts with the
//! cascade, locks, playbooks, waits, and the engine's events as a server stream.
//! The schema is `proto/cohort.proto`; the code is generated from it at build time
//! ([`proto`]). Engine errors become statuses (`convert`) with the engine's own
//! messages.
//!
//! Guarded as HTTP MCP is (see [`crate::guard`]): loopback unless a token is given,
//! and with a token, every call carries `authorization: Bearer TOKEN`.

mod convert;
mod playbook;
pub mod proto;
mod service;

use std::future::Future;

use tokio_util::sync::CancellationToken;
use tonic::{Request, Status};

use crate::engine::slot::EngineSlot;
pub use convert::status;
pub use service::CohortService;

/// Serves the API on `listener` over `engine` until `shutdown` completes. With a
/// token, calls without `authorization: Bearer TOKEN` are refused as
/// unauthenticated; without one, `listener` must be on loopback. Under a role
/// (`restriction`), a call the role does not allow is refused as permission
/// denied, and the names a caller gives for itself are bound to the served agent.
pub async fn serve(
    engine: EngineSlot,
    listener: crate::connections::Connections,
    token: Option<String>,
    restriction: crate::restriction::Restriction,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), String> {
    let addr = listener
        .local_addr()
        .map_err(|e| format!("the gRPC listener has no address: {e}"))?;
    let token = token.filter(|t| !t.is_empty());
    crate::guard::require_token(addr, token.as_deref())?;
    let stop = CancellationToken::new();
    let cohort = CohortService::new(engine.clone(), stop.clone()).restricted(restriction);
    // A client that goes lets go of its locks then, as an MCP connection does.
    let named = cohort.clone();
    let listener = listener.on_close(std::sync::Arc::new(move |peer| {
        let (Some(engine), Ok(runtime)) =
            (engine.started(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let connection = named.connection_at(peer);
        runtime.spawn(async move {
            if let Err(e) = engine.terminal.release_connection(&connection).await {
                tracing::warn!(target: "cohort::grpc", "the locks of {connection} were not released: {e}");
            }
        });
    }));
    let service =
        proto::cohort_server::CohortServer::with_interceptor(cohort, move |request: Request<()>| {
            authorize(request, token.as_deref())
        });
    let shutdown = async move {
        shutdown.await;
        // Event streams run until their client goes: end them, so the server can.
        stop.cancel();
    };
    // Pings keep a quiet stream (an event stream with nothing to say) from counting as
    // idle; a connection that answers none is closed by its idle time.
    let incoming = futures_util::stream::unfold(listener, |mut listener| async move {
        let (connection, _) = listener.next().await;
        Some((Ok::<_, std::io::Error>(connection), listener))
    });
    tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(std::time::Duration::from_secs(20)))
        .http2_keepalive_timeout(Some(std::time::Duration::from_secs(20)))
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .map_err(|e| format!("serving gRPC on {addr}: {e}"))
}

/// Lets a call through when no token is configured, or it carries the token.
fn authorize(request: Request<()>, token: Option<&str>) -> Result<Request<()>, Status> {
    let Some(token) = token else {
        return Ok(request);
    };
    let given = request
        .metadata()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    if crate::guard::bearer_matches(given, token) {
        Ok(request)
    } else {
        Err(Status::unauthenticated(
            "missing or wrong bearer token: send `authorization: Bearer TOKEN` metadata",
        ))
    }
}
