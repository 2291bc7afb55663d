//! The store crate's errors.

use std::fmt;

/// A boxed error: the one error box of the workspace (user code such as key and index
/// functions, transports and decoders; `kcache-reflector` and `kcache-client-http` re-export it).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a key could not be computed for an object, or why a key could not be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The object has no `metadata.name` (or an empty one).
    #[error("object has no name{}", fmt_ns(namespace.as_deref()))]
    MissingName {
        /// The object's namespace, when it has one, to help find it.
        namespace: Option<String>,
    },
    /// A key that is not `name` or `namespace/name` with a non-empty name.
    #[error("unexpected key format: {key:?}")]
    Malformed {
        /// The key as given.
        key: String,
    },
    /// A user-supplied key function failed.
    #[error("key function failed: {message}")]
    Custom {
        /// What the key function said.
        message: String,
    },
}

fn fmt_ns(ns: Option<&str>) -> String {
    match ns {
        Some(ns) if !ns.is_empty() => format!(" (namespace {ns:?})"),
        _ => String::new(),
    }
}

/// Errors of the store, the indexer and the listers.
///
/// Every failing operation leaves the store exactly as it was, but for a transaction, which
/// applies the writes that do not fail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The key function rejected an object.
    #[error("couldn't create key for object")]
    Key(#[from] KeyError),
    /// An index with this name is not registered.
    #[error("index with name {0:?} does not exist")]
    IndexNotFound(String),
    /// `add_indexers` was given a name that is already registered.
    #[error("indexer conflict: {0:?} is already registered")]
    IndexerConflict(String),
    /// An index function failed for an object; the operation was not applied.
    #[error("unable to calculate an index entry for key {key:?} on index {index:?}")]
    IndexFunc {
        /// The index whose function failed.
        index: String,
        /// The key of the object it failed on.
        key: String,
        /// The index function's error.
        #[source]
        source: BoxError,
    },
    /// A label or field selector did not parse.
    #[error("invalid selector")]
    Selector(#[from] SelectorError),
    /// Some writes of a [`Transaction`](crate::Transaction) batch failed; the others were
    /// applied.
    #[error(transparent)]
    Transaction(#[from] crate::TransactionError),
}

/// A selector that does not parse, with the byte offset where the text went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorError {
    /// The selector text as given.
    pub input: String,
    /// Byte offset into `input` where parsing failed.
    pub position: usize,
    /// What was expected or what is wrong there.
    pub message: String,
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at position {} of {:?}",
            self.message, self.position, self.input
        )?;
        if self.position <= self.input.len() {
            let rest = self.input.get(self.position..).unwrap_or("");
            if rest.is_empty() {
                f.write_str(" (at end of input)")?;
            } else {
                write!(f, " (near {rest:?})")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for SelectorError {}
