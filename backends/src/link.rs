//! One live connection to the terminal, opened again on demand.
//!
//! Each backend talks to its terminal over a single long-lived connection (tmux's
//! control client, iTerm2's WebSocket). When that connection closes (the server
//! restarted, the socket dropped), the next call opens a new one. Callers that arrive
//! while it is being opened wait for that one attempt instead of racing to open
//! several.

use std::future::Future;
use std::sync::{Arc, RwLock};

/// A connection that can tell whether it is still usable.
pub(crate) trait Closable {
    /// True once the connection can no longer carry requests.
    fn is_closed(&self) -> bool;
}

/// How [`Link::get`] came by its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Got {
    /// The connection already open.
    Live,
    /// A first connection, or one opened after [`Link::take`].
    Opened,
    /// A new connection replacing one that was lost: whatever the old one was
    /// following may have missed events.
    Reopened,
}

/// The current connection, if any, and the lock that serialises opening one.
pub(crate) struct Link<C> {
    current: RwLock<Option<Arc<C>>>,
    opening: tokio::sync::Mutex<()>,
}

impl<C: Closable> Link<C> {
    pub(crate) fn new() -> Self {
        Link {
            current: RwLock::new(None),
            opening: tokio::sync::Mutex::new(()),
        }
    }

    /// The open connection, if there is one that still works.
    pub(crate) fn live(&self) -> Option<Arc<C>> {
        let current = self.current.read().unwrap_or_else(|e| e.into_inner());
        current.as_ref().filter(|c| !c.is_closed()).cloned()
    }

    /// The open connection, or a new one from `open` when there is none or it closed.
    pub(crate) async fn get<E, F, Fut>(&self, open: F) -> Result<(Arc<C>, Got), E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Arc<C>, E>>,
    {
        if let Some(c) = self.live() {
            return Ok((c, Got::Live));
        }
        let _opening = self.opening.lock().await;
        // Someone else may have opened it while this caller waited.
        if let Some(c) = self.live() {
            return Ok((c, Got::Live));
        }
        let lost = self
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        let c = open().await?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(c.clone());
        Ok((c, if lost { Got::Reopened } else { Got::Opened }))
    }

    /// Removes the connection (the caller closes it); the next [`get`](Self::get)
    /// opens a new one without calling it a reconnection.
    pub(crate) fn take(&self) -> Option<Arc<C>> {
        self.current
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    struct Fake {
        closed: AtomicBool,
    }

    impl Closable for Fake {
        fn is_closed(&self) -> bool {
            self.closed.load(Ordering::SeqCst)
        }
    }

    fn fake() -> Arc<Fake> {
        Arc::new(Fake {
            closed: AtomicBool::new(false),
        })
    }

    #[tokio::test]
    async fn opens_once_reuses_then_reopens_after_loss() {
        let link = Link::<Fake>::new();
        let opened = AtomicUsize::new(0);
        let open = || async {
            opened.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ()>(fake())
        };
        let (first, got) = link.get(open).await.unwrap();
        assert_eq!(got, Got::Opened);
        let (again, got) = link.get(open).await.unwrap();
        assert_eq!(got, Got::Live);
        assert!(Arc::ptr_eq(&first, &again));

        first.closed.store(true, Ordering::SeqCst);
        assert!(link.live().is_none());
        let (_, got) = link.get(open).await.unwrap();
        assert_eq!(got, Got::Reopened);

        link.take();
        let (_, got) = link.get(open).await.unwrap();
        assert_eq!(got, Got::Opened);
        assert_eq!(opened.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn concurrent_callers_share_one_attempt() {
        let link = Arc::new(Link::<Fake>::new());
        let opened = Arc::new(AtomicUsize::new(0));
        let callers: Vec<_> = (0..8)
            .map(|_| {
                let link = link.clone();
                let opened = opened.clone();
                tokio::spawn(async move {
                    link.get(|| async {
                        opened.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        Ok::<_, ()>(fake())
                    })
                    .await
                    .map(|(c, _)| c)
                })
            })
            .collect();
        let mut conns = Vec::new();
        for caller in callers {
            conns.push(caller.await.unwrap().unwrap());
        }
        assert_eq!(opened.load(Ordering::SeqCst), 1);
        assert!(conns.iter().all(|c| Arc::ptr_eq(c, &conns[0])));
    }

    #[tokio::test]
    async fn a_failed_attempt_leaves_the_next_caller_free_to_try() {
        let link = Link::<Fake>::new();
        let failed: Result<(Arc<Fake>, Got), &str> = link.get(|| async { Err("refused") }).await;
        assert!(failed.is_err());
        let (_, got) = link.get(|| async { Ok::<_, &str>(fake()) }).await.unwrap();
        assert_eq!(got, Got::Opened);
    }
}
