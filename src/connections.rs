//! The connections a network front end (HTTP, the dashboard, gRPC) takes: at most
//! [`CONNECTIONS_MAX`] at once, and each closed once no byte has gone either way for
//! its idle time.
//!
//! Without these, idle or half-open connections stay open for ever: a thousand of them
//! use up the process's descriptors, and then neither a client with the token nor
//! the engine itself can open anything. A connection past the ceiling is closed as
//! soon as it is accepted, and the server says so in its log. Streams that stay open
//! on purpose (an event stream, a long `run`) are not idle: their keep-alives and
//! progress notifications are bytes on the wire.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// Connections open at once, per listener.
pub const CONNECTIONS_MAX: usize = 256;

/// How long a connection may stay without a byte either way (default).
pub const IDLE: Duration = Duration::from_secs(60);

/// What is done when a connection closes, with its peer's address.
pub type OnClose = Arc<dyn Fn(SocketAddr) + Send + Sync>;

/// A listener that bounds its connections (see the module docs).
pub struct Connections {
    listener: TcpListener,
    permits: Arc<Semaphore>,
    max: usize,
    idle: Duration,
    on_close: Option<OnClose>,
}

impl std::fmt::Debug for Connections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connections")
            .field("listener", &self.listener)
            .field("max", &self.max)
            .field("idle", &self.idle)
            .finish_non_exhaustive()
    }
}

impl Connections {
    /// Connections of `listener`, at most `max` at once, each closed after `idle`.
    pub fn new(listener: TcpListener, max: usize, idle: Duration) -> Self {
        let max = max.max(1);
        Connections {
            listener,
            permits: Arc::new(Semaphore::new(max)),
            max,
            idle,
            on_close: None,
        }
    }

    /// Calls `on_close` with the peer's address when a connection closes (a client
    /// gone, or closed for being idle): what the connection held is let go then, not
    /// when the process ends.
    pub fn on_close(mut self, on_close: OnClose) -> Self {
        self.on_close = Some(on_close);
        self
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The next connection within the ceiling; those past it are closed at once.
    pub async fn next(&mut self) -> (Bounded, SocketAddr) {
        loop {
            let (stream, addr) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors, or a connection reset before it was taken:
                    // wait a moment rather than spin.
                    tracing::warn!(target: "cohort::net", "accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            match self.permits.clone().try_acquire_owned() {
                Ok(permit) => {
                    let mut bounded = Bounded::new(stream, permit, self.idle);
                    bounded.on_close = self.on_close.clone().map(|f| (f, addr));
                    return (bounded, addr);
                }
                Err(_) => {
                    tracing::warn!(
                        target: "cohort::net",
                        "{addr} refused: {} connections are open, the most this server keeps",
                        self.max
                    );
                    drop(stream);
                }
            }
        }
    }
}

impl axum::serve::Listener for Connections {
    type Io = Bounded;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Bounded, SocketAddr) {
        self.next().await
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// One connection: its place under the ceiling, and its idle deadline.
pub struct Bounded {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
    on_close: Option<(OnClose, SocketAddr)>,
}

impl std::fmt::Debug for Bounded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bounded")
            .field("stream", &self.stream)
            .field("idle", &self.idle)
            .finish_non_exhaustive()
    }
}

impl Drop for Bounded {
    fn drop(&mut self) {
        if let Some((on_close, addr)) = self.on_close.take() {
            on_close(addr);
        }
    }
}

impl Bounded {
    fn new(stream: TcpStream, permit: OwnedSemaphorePermit, idle: Duration) -> Self {
        Bounded {
            stream,
            _permit: permit,
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
            on_close: None,
        }
    }

    /// Bytes went by: the idle time starts again.
    fn active(&mut self) {
        let next = Instant::now() + self.idle;
        self.deadline.as_mut().reset(next);
    }

    /// Whether the idle time is up (and `cx` is woken when it will be).
    fn idle_for_too_long(&mut self, cx: &mut Context<'_>) -> bool {
        self.deadline.as_mut().poll(cx).is_ready()
    }

    /// A write's outcome: bytes written count as activity, and a write that waits
    /// past the idle time (a peer that reads nothing) ends the connection.
    fn after_write(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match polled {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    self.active();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Pending if self.idle_for_too_long(cx) => Poll::Ready(Err(self.timed_out())),
            other => other,
        }
    }

    fn timed_out(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "no byte either way for {:?}: the connection is closed",
                self.idle
            ),
        )
    }
}

impl AsyncRead for Bounded {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    this.active();
                }
                Poll::Ready(result)
            }
            Poll::Pending if this.idle_for_too_long(cx) => Poll::Ready(Err(this.timed_out())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for Bounded {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.after_write(cx, polled)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.after_write(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

impl tonic::transport::server::Connected for Bounded {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn listening(max: usize, idle: Duration) -> (Connections, SocketAddr) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        (Connections::new(listener, max, idle), addr)
    }

    #[tokio::test]
    async fn past_the_ceiling_a_connection_is_closed_at_once() {
        let (mut connections, addr) = listening(2, IDLE).await;
        let _a = TcpStream::connect(addr).await.unwrap();
        let _b = TcpStream::connect(addr).await.unwrap();
        let mut c = TcpStream::connect(addr).await.unwrap();
        let (first, _) = connections.next().await;
        let (_second, _) = connections.next().await;
        // Accepting goes on in the background: the third is closed at once.
        let taker = tokio::spawn(async move {
            let next = connections.next().await;
            (connections, next)
        });
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(10), c.read(&mut byte)).await;
        assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
        // A place freed is taken by the next connection.
        drop(first);
        let mut e = TcpStream::connect(addr).await.unwrap();
        let (_connections, (mut taken, _)) = tokio::time::timeout(Duration::from_secs(10), taker)
            .await
            .unwrap()
            .unwrap();
        e.write_all(b"x").await.unwrap();
        let mut got = [0u8; 1];
        taken.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"x");
    }

    #[tokio::test]
    async fn an_idle_connection_is_closed_and_an_active_one_is_not() {
        // Long against the talker's 100 ms gaps, so a loaded machine cannot stretch a
        // gap past it.
        let idle = Duration::from_secs(2);
        let (mut connections, addr) = listening(4, idle).await;
        let _quiet = TcpStream::connect(addr).await.unwrap();
        let (mut quiet, _) = connections.next().await;
        let mut busy_peer = TcpStream::connect(addr).await.unwrap();
        let (mut busy, _) = connections.next().await;
        let talker = tokio::spawn(async move {
            for _ in 0..8 {
                busy_peer.write_all(b".").await.unwrap();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            busy_peer
        });
        let mut buf = [0u8; 16];
        let err = quiet.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        let mut got = 0;
        while got < 8 {
            got += busy
                .read(&mut buf)
                .await
                .expect("an active connection stays");
        }
        talker.await.unwrap();
    }
}
