//! [`Transaction`]: one write of a batch applied to an indexer at once, and
//! [`TransactionError`], what such a batch could not apply.

use std::fmt;
use std::sync::Arc;

use crate::{Error, ObjectKey};

/// One write of a batch given to [`Indexer::transaction`](crate::Indexer::transaction) (client-go's
/// `Transaction` with its `TransactionType`).
#[derive(Debug)]
pub enum Transaction<T> {
    /// Store the object under its key.
    Add(Arc<T>),
    /// Store the object under its key; the same as `Add`, named for the caller's intent.
    Update(Arc<T>),
    /// Remove the object's key; the object's resource version is recorded.
    Delete(Arc<T>),
    /// Remove a key whose last state is unknown (a tombstone's).
    DeleteKey(ObjectKey),
}

impl<T> Clone for Transaction<T> {
    fn clone(&self) -> Self {
        match self {
            Self::Add(o) => Self::Add(Arc::clone(o)),
            Self::Update(o) => Self::Update(Arc::clone(o)),
            Self::Delete(o) => Self::Delete(Arc::clone(o)),
            Self::DeleteKey(k) => Self::DeleteKey(k.clone()),
        }
    }
}

/// The writes of a transaction that failed, each with its position in the batch and its
/// cause; every other write was applied (client-go's `TransactionError`).
///
/// ```
/// use std::sync::Arc;
/// use kcache_store::{Cache, DynamicObject, Indexer, Store, Transaction};
///
/// let cache = Cache::<DynamicObject>::new();
/// let err = cache
///     .transaction(vec![
///         Transaction::Add(Arc::new(DynamicObject::new(Some("ns"), "a"))),
///         Transaction::Add(Arc::new(DynamicObject::new(Some("ns"), ""))), // no name: no key
///         Transaction::Add(Arc::new(DynamicObject::new(Some("ns"), "c"))),
///     ])
///     .unwrap_err();
/// assert!(err.to_string().starts_with("failed to execute (1/3) transactions"));
/// assert_eq!(err.successful(), [0, 2]);
/// assert_eq!(cache.list_keys().len(), 2);
/// ```
#[derive(Debug)]
pub struct TransactionError {
    total: usize,
    failed: Vec<(usize, Error)>,
}

impl TransactionError {
    /// The failures of a batch of `total` writes, or `None` when nothing failed.
    #[must_use]
    pub fn from_failures(total: usize, mut failed: Vec<(usize, Error)>) -> Option<Self> {
        if failed.is_empty() {
            return None;
        }
        failed.sort_by_key(|(i, _)| *i);
        Some(Self { total, failed })
    }

    /// How many writes the batch held.
    #[must_use]
    pub fn total(&self) -> usize {
        self.total
    }

    /// The failed writes: their positions in the batch, in order, and why each failed.
    #[must_use]
    pub fn failed(&self) -> &[(usize, Error)] {
        &self.failed
    }

    /// The failed writes, by value.
    #[must_use]
    pub fn into_failed(self) -> Vec<(usize, Error)> {
        self.failed
    }

    /// Whether the write at `index` was applied.
    #[must_use]
    pub fn succeeded(&self, index: usize) -> bool {
        index < self.total
            && self
                .failed
                .binary_search_by_key(&index, |(i, _)| *i)
                .is_err()
    }

    /// The positions of the writes that were applied, in order.
    #[must_use]
    pub fn successful(&self) -> Vec<usize> {
        (0..self.total).filter(|&i| self.succeeded(i)).collect()
    }
}

impl fmt::Display for TransactionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "failed to execute ({}/{}) transactions:",
            self.failed.len(),
            self.total
        )?;
        for (n, (i, e)) in self.failed.iter().enumerate() {
            let sep = if n == 0 { " " } else { "; " };
            write!(f, "{sep}#{i}: {e}")?;
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                write!(f, ": {s}")?;
                source = s.source();
            }
        }
        Ok(())
    }
}

/// No source: the message already names every failed write with its causes, so a log line
/// that follows an error's sources does not repeat them.
impl std::error::Error for TransactionError {}
