//! The gRPC API (placeholder while it is built).

/// Serves gRPC.
pub async fn serve(
    _engine: crate::mcp::EngineSlot,
    _addr: std::net::SocketAddr,
    _token: Option<String>,
    _stop: tokio_util::sync::CancellationToken,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    Err("not yet".into())
}
