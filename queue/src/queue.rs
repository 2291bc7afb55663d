//! The [`Queue`] trait: a [`Store`] a reflector writes into, plus an async, cancel-safe `pop`.

use std::future::Future;
use std::pin::Pin;

use kcache_store::{Object, Store};

use crate::{Deltas, PopError, ProcessError};

/// The function `pop` hands an item to. It runs synchronously, under the queue's lock.
///
/// It must not call the queue's [`Store`] methods (that would deadlock); `has_synced`,
/// `is_closed` and `close` are safe to call from it.
pub type ProcessFn<'a, T> = dyn FnMut(Deltas<T>) -> Result<(), ProcessError<T>> + Send + 'a;

/// The future returned by [`Queue::pop`].
pub type PopFuture<'a> = Pin<Box<dyn Future<Output = Result<(), PopError>> + Send + 'a>>;

/// A queue between a reflector (which drives its [`Store`] methods) and one consumer (which pops).
///
/// Dyn-compatible: an informer holds an `Arc<dyn Queue<T>>` and does not care which queue it is.
/// Implemented by [`Fifo`](crate::Fifo), [`DeltaFifo`](crate::DeltaFifo) and
/// [`RealFifo`](crate::RealFifo).
///
/// Writes are accepted after [`close`](Self::close), as in client-go; pops drain what is queued
/// and then return [`PopError::Closed`].
pub trait Queue<T: Object>: Store<T> {
    /// Waits for an item, then hands it to `process` and returns what became of it.
    ///
    /// Returns `Ok(())` once `process` succeeded (or asked for a requeue without an error),
    /// [`PopError::Process`] if it failed, and [`PopError::Closed`] at once if the queue is closed
    /// and empty.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the future only awaits while the queue is empty. Once an item is taken it is
    /// processed synchronously, with no await in between, so dropping the future never loses an
    /// item.
    fn pop<'a>(&'a self, process: &'a mut ProcessFn<'a, T>) -> PopFuture<'a>;

    /// Like [`pop`](Self::pop), but may hand over up to `max` items in one [`Deltas`].
    ///
    /// The default pops one item; [`RealFifo`](crate::RealFifo) batches consecutive
    /// single-object deltas of distinct keys, never past the end of the initial list.
    ///
    /// # Cancel safety
    ///
    /// As [`pop`](Self::pop).
    fn pop_batch<'a>(&'a self, max: usize, process: &'a mut ProcessFn<'a, T>) -> PopFuture<'a> {
        let _ = max;
        self.pop(process)
    }

    /// Whether the initial items (those of the first `replace`, or anything written before it)
    /// have all been *processed*: the process function returned for the last of them.
    ///
    /// Latched: once true, it stays true. True at once if the first write is not a `replace`.
    fn has_synced(&self) -> bool;

    /// Closes the queue: wakes every waiting `pop`. Items still queued are drained first.
    fn close(&self);

    /// Whether [`close`](Self::close) was called.
    fn is_closed(&self) -> bool;
}
