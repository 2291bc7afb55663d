//! [`ListerWatcher`]: the one seam between the reflector and the API server.

use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;
use kcache_store::Object;

use crate::{Error, ListOptions, ObjectList, WatchEvent};

/// The stream of a watch: events, or errors.
///
/// An `Err` item of [`Error::Decode`] is one undecodable event: fill in its
/// [`DecodeError`](crate::DecodeError) with what can be read of it
/// ([`DecodeError::of_watch_event`](crate::DecodeError::of_watch_event) does), so the reflector
/// can remove just that key; without a readable identity it ends the watch and relists. An
/// `Err` of [`Error::Api`] is the same as an `ERROR` event; any other `Err` is a broken
/// connection and ends the watch like a clean close. The stream ends when the watch ends.
pub type WatchStream<T> = Pin<Box<dyn Stream<Item = Result<WatchEvent<T>, Error>> + Send>>;

/// Lists and watches one kind of object (client-go's `ListerWatcher`).
///
/// A list page puts the items it could not decode in
/// [`ObjectList::skipped`](crate::ObjectList::skipped) rather than failing the whole list.
///
/// Dyn-compatible through `async-trait`, so an `Arc<dyn ListerWatcher<T>>` can stand for any
/// backend (HTTP, a fake, a test double) and be swapped at run time. The options passed in are
/// complete: the reflector has already merged the selectors in.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use async_trait::async_trait;
/// use kcache_reflector::{Error, ListOptions, ListerWatcher, ObjectList, WatchStream};
/// use kcache_store::DynamicObject;
///
/// /// Nothing to list, and a watch that ends at once.
/// struct Empty;
///
/// #[async_trait]
/// impl ListerWatcher<DynamicObject> for Empty {
///     async fn list(&self, _: &ListOptions) -> Result<ObjectList<DynamicObject>, Error> {
///         Ok(ObjectList::new(Vec::new(), "1"))
///     }
///     async fn watch(&self, _: &ListOptions) -> Result<WatchStream<DynamicObject>, Error> {
///         Ok(Box::pin(futures_util::stream::empty()))
///     }
/// }
///
/// let lw: Arc<dyn ListerWatcher<DynamicObject>> = Arc::new(Empty);
/// # drop(lw);
/// ```
#[async_trait::async_trait]
pub trait ListerWatcher<T: Object>: Send + Sync {
    /// One list request (one page when `opts.limit` is set).
    async fn list(&self, opts: &ListOptions) -> Result<ObjectList<T>, Error>;

    /// Opens a watch. A failure to open is an `Err` here; a failure after the stream started
    /// comes as an `ERROR` event or an `Err` item.
    async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<T>, Error>;

    /// What is listed and watched (`pods`, `deployments.apps`), for logs: the reflector names
    /// its span after it. `None` by default.
    fn resource(&self) -> Option<String> {
        None
    }

    /// Whether this backend can serve streaming lists (a watch with `sendInitialEvents=true`
    /// ending in the initial-events bookmark). `true` by default. A backend that cannot (a
    /// fake, a cache, a server known to lack `WatchList`) returns `false`, and the reflector
    /// then lists at once instead of trying, failing and reporting a failed streaming list
    /// first (client-go's `IsWatchListSemanticsUnSupported`, with the opposite sense).
    fn supports_streaming_lists(&self) -> bool {
        true
    }
}

/// A lister-watcher behind a shared or owned pointer is one too (`Arc<dyn ListerWatcher<T>>`,
/// `Box<dyn ListerWatcher<T>>`), so wrappers such as `ShardedListerWatcher` take either.
macro_rules! through_pointer {
    ($($pointer:ident),*) => {$(
        #[async_trait::async_trait]
        impl<T: Object, L: ListerWatcher<T> + ?Sized> ListerWatcher<T> for $pointer<L> {
            async fn list(&self, opts: &ListOptions) -> Result<ObjectList<T>, Error> {
                (**self).list(opts).await
            }
            async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<T>, Error> {
                (**self).watch(opts).await
            }
            fn resource(&self) -> Option<String> {
                (**self).resource()
            }
            fn supports_streaming_lists(&self) -> bool {
                (**self).supports_streaming_lists()
            }
        }
    )*};
}

through_pointer!(Arc, Box);
