//! [`EventStream`]: an informer's events as a `Stream`, the alternative to callbacks.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::mpsc;

use crate::Event;
use crate::listener::Shared;

/// A subscription to an informer's events, with the same guarantees as a handler: the current
/// cache first (as initial-list adds) when subscribing late, its own unbounded buffer, and its
/// own [`has_synced`](Self::has_synced).
///
/// Dropping the stream unsubscribes it.
#[must_use = "a stream does nothing unless polled"]
pub struct EventStream<T> {
    rx: mpsc::UnboundedReceiver<Event<T>>,
    shared: Arc<Shared<T>>,
}

impl<T> EventStream<T> {
    pub(crate) fn new(rx: mpsc::UnboundedReceiver<Event<T>>, shared: Arc<Shared<T>>) -> Self {
        Self { rx, shared }
    }

    /// True once the informer has synced and this stream has yielded every initial-list add.
    pub fn has_synced(&self) -> bool {
        self.shared.has_synced()
    }

    /// Resolves with `true` once [`has_synced`](Self::has_synced), `false` if the stream is
    /// dropped or the informer stops first. The initial adds count as delivered when the
    /// stream yields them, so poll the stream while waiting: the future owns what it needs and
    /// can be spawned, or raced against the stream.
    pub fn synced(&self) -> impl Future<Output = bool> + Send + 'static
    where
        T: Send + Sync + 'static,
    {
        self.shared.owned_synced()
    }

    /// Events waiting in this stream's buffer.
    pub fn buffer_depth(&self) -> usize {
        self.shared.depth()
    }
}

impl<T> Stream for EventStream<T> {
    type Item = Event<T>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event<T>>> {
        let polled = self.rx.poll_recv(cx);
        if let Poll::Ready(Some(event)) = &polled {
            self.shared.delivered(event.is_initial());
        }
        polled
    }
}

impl<T> Drop for EventStream<T> {
    fn drop(&mut self) {
        self.shared.mark_closed();
    }
}

impl<T> fmt::Debug for EventStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("buffer_depth", &self.shared.depth())
            .field("has_synced", &self.shared.has_synced())
            .finish_non_exhaustive()
    }
}
