//! A network link between this machine and a test host, made of a TCP relay on
//! loopback: each byte crosses it after a one-way delay, and the link can go silent
//! and come back.
//!
//! This stands in for a cable: `tc qdisc … netem` needs a kernel module that not every
//! machine has, a network namespace needs privileges CI may not give, and neither can
//! be driven from inside a test as simply. What the far side and ssh see is what a slow
//! or broken route shows them:
//!
//! - **delay**: every chunk is delivered `delay` after it was read, in order, so a
//!   round trip over the link costs twice the delay on top of loopback's;
//! - **silence**: nothing crosses; what is sent meanwhile is held and delivered, in
//!   order, when the link comes back, as TCP's retransmissions deliver it after a
//!   route returns. Neither end is told anything: sockets stay open, so only
//!   keepalives and timeouts notice, as behind a cut cable.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

/// A relay from a loopback port to `127.0.0.1:target`; stops with its runtime or when
/// dropped.
pub struct Link {
    /// The port to connect to instead of the target's.
    pub port: u16,
    up: Arc<watch::Sender<bool>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Link {
    /// A link to `target` with `delay` each way.
    pub async fn start(target: u16, delay: Duration) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a relay");
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(watch::channel(true).0);
        let link_up = up.clone();
        let accept = tokio::spawn(async move {
            while let Ok((near, _)) = listener.accept().await {
                let Ok(far) = TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let _ = near.set_nodelay(true);
                let _ = far.set_nodelay(true);
                let (near_read, near_write) = near.into_split();
                let (far_read, far_write) = far.into_split();
                relay(near_read, far_write, delay, link_up.subscribe());
                relay(far_read, near_write, delay, link_up.subscribe());
            }
        });
        Link { port, up, accept }
    }

    /// The link goes silent: nothing crosses until [`Link::restore`].
    pub fn silence(&self) {
        self.up.send_replace(false);
    }

    /// The link carries again, first what was held.
    pub fn restore(&self) {
        self.up.send_replace(true);
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Copies one direction: a reader task timestamps each chunk, a writer task delivers
/// it once its delay has passed and the link is up. An end that closes closes the
/// other (once what it sent has crossed).
fn relay(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay: Duration,
    mut up: watch::Receiver<bool>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let due = tokio::time::Instant::now() + delay;
                    if tx.send((due, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
    });
    tokio::spawn(async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if up.wait_for(|up| *up).await.is_err() || to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    });
}
