//! [`ShardedListerWatcher`]: asks the server for one shard of a collection and makes sure only
//! that shard comes through, whether the server honours the selector or not.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use futures_util::StreamExt as _;
use kcache_store::Object;

use crate::{
    Error, ListOptions, ListerWatcher, ObjectList, ShardSelector, WatchEvent, WatchStream,
};

/// Wraps any [`ListerWatcher`] (HTTP, kube-rs, a fake) to list and watch only the objects of a
/// [`ShardSelector`]: every request carries `shardSelector`, and every object that comes back is
/// checked against it.
///
/// A server with sharded list and watch sends only the shard and echoes the selector in the
/// list's `metadata.shardInfo`; one without it (an older release, the feature gate off, one
/// replica of a control plane being upgraded) ignores the parameter and sends everything. Then
/// the objects outside the shard are left out here: the cache holds the shard either way, only
/// the savings on the wire are lost. The first time it happens it is logged (with the
/// resource and the selector); [`ignored_objects`](Self::ignored_objects) counts the objects
/// left out, [`server_honoured`](Self::server_honoured) tells what the last list found.
///
/// ```
/// use std::sync::Arc;
/// use kcache_reflector::{ListOptions, ListerWatcher, ShardField, ShardSelector, ShardedListerWatcher};
/// use kcache_store::DynamicObject;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let fake = kcache_testing::FakeListerWatcher::<DynamicObject>::new();
/// for i in 0..64 {
///     let mut pod = DynamicObject::new(Some("default"), &format!("pod-{i}"));
///     pod.metadata.uid = Some(format!("uid-{i}"));
///     fake.handle().add(pod);
/// }
/// // The fake ignores shardSelector, as a server without the feature does.
/// let first = ShardSelector::shard(ShardField::Uid, 0, 2);
/// let lw = ShardedListerWatcher::new(Arc::new(fake), first.clone());
/// let page = lw.list(&ListOptions::default()).await.unwrap();
/// assert!(page.items.iter().all(|p| first.matches(p)));
/// assert_eq!(page.items.len() as u64 + lw.ignored_objects(), 64);
/// assert_eq!(lw.server_honoured(), Some(false));
/// # }
/// ```
pub struct ShardedListerWatcher<L> {
    inner: L,
    selector: ShardSelector,
    state: Arc<State>,
}

#[derive(Default)]
struct State {
    /// 0: no list yet; 1: the last list was sharded by the server; 2: it was not.
    honoured: std::sync::atomic::AtomicU8,
    ignored: AtomicU64,
    warned: AtomicBool,
}

impl State {
    /// Counts `n` objects the server sent outside the shard, logging the first time.
    fn ignored(&self, n: u64, resource: Option<&str>, selector: &ShardSelector, why: &str) {
        if n > 0 {
            self.ignored.fetch_add(n, Ordering::Relaxed);
        }
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                resource = resource.unwrap_or("objects"),
                %selector,
                "the server did not apply the shard selector ({why}): objects outside the shard are left out here, the shard's savings on the wire are lost"
            );
        }
    }
}

impl<L> ShardedListerWatcher<L> {
    /// `inner`, asked for the objects of `selector` only.
    pub fn new(inner: L, selector: ShardSelector) -> Self {
        Self {
            inner,
            selector,
            state: Arc::default(),
        }
    }

    /// The selector every request carries.
    #[must_use]
    pub fn selector(&self) -> &ShardSelector {
        &self.selector
    }

    /// How many objects the server sent outside the shard (left out here) so far.
    #[must_use]
    pub fn ignored_objects(&self) -> u64 {
        self.state.ignored.load(Ordering::Relaxed)
    }

    /// Whether the last list came back sharded by the server (`shardInfo` naming this
    /// selector, and nothing outside it); `None` before the first list (a streaming list
    /// carries no `shardInfo`: only objects outside the shard tell there).
    #[must_use]
    pub fn server_honoured(&self) -> Option<bool> {
        match self.state.honoured.load(Ordering::Relaxed) {
            1 => Some(true),
            2 => Some(false),
            _ => None,
        }
    }

    fn options(&self, opts: &ListOptions) -> ListOptions {
        let mut opts = opts.clone();
        opts.shard_selector = Some(self.selector.clone());
        opts
    }
}

#[async_trait::async_trait]
impl<T: Object, L: ListerWatcher<T>> ListerWatcher<T> for ShardedListerWatcher<L> {
    async fn list(&self, opts: &ListOptions) -> Result<ObjectList<T>, Error> {
        let mut page = self.inner.list(&self.options(opts)).await?;
        let echoed = page
            .shard_info
            .as_deref()
            .and_then(|s| ShardSelector::parse(s).ok());
        let before = page.items.len();
        page.items.retain(|o| self.selector.matches(o));
        let outside = (before - page.items.len()) as u64;
        let honoured = echoed.as_ref() == Some(&self.selector) && outside == 0;
        self.state
            .honoured
            .store(if honoured { 1 } else { 2 }, Ordering::Relaxed);
        if !honoured {
            // The count of the unfiltered collection means nothing for the shard.
            page.remaining_item_count = None;
            let why = match (&echoed, outside) {
                (None, _) => "the list carries no shardInfo",
                (Some(_), 0) => "the list's shardInfo names another selector",
                (Some(_), _) => "the list holds objects outside the shard",
            };
            self.state.ignored(
                outside,
                self.inner.resource().as_deref(),
                &self.selector,
                why,
            );
        }
        Ok(page)
    }

    async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<T>, Error> {
        let stream = self.inner.watch(&self.options(opts)).await?;
        let (selector, state, resource) = (
            self.selector.clone(),
            Arc::clone(&self.state),
            self.inner.resource(),
        );
        Ok(Box::pin(stream.filter(move |item| {
            let keep = match item {
                Ok(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) => {
                    selector.matches(o)
                }
                _ => true,
            };
            if !keep {
                state.ignored(
                    1,
                    resource.as_deref(),
                    &selector,
                    "the watch sent an object outside the shard",
                );
            }
            std::future::ready(keep)
        })))
    }

    fn resource(&self) -> Option<String> {
        self.inner.resource()
    }

    fn supports_streaming_lists(&self) -> bool {
        self.inner.supports_streaming_lists()
    }
}

impl<L> std::fmt::Debug for ShardedListerWatcher<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedListerWatcher")
            .field("selector", &self.selector.to_string())
            .field("ignored_objects", &self.ignored_objects())
            .finish_non_exhaustive()
    }
}
