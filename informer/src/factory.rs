//! [`InformerFactory`]: one shared informer per resource for every part of a program.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kcache_reflector::ListerWatcher;
use kcache_store::Object;
use tokio_util::sync::CancellationToken;

use crate::SharedIndexInformer;

/// Runs one informer.
type RunFn = Box<dyn Fn(CancellationToken) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

struct Entry {
    informer: Box<dyn Any + Send + Sync>,
    run: RunFn,
    started: bool,
}

/// Hands out one [`SharedIndexInformer`] per resource, so every controller in a program shares
/// one list/watch and one cache (client-go's `SharedInformerFactory`).
///
/// Resources are told apart by object type and a name (for example the plural, which matters
/// for [`DynamicObject`](kcache_store::DynamicObject) informers of different kinds).
pub struct InformerFactory {
    default_resync: Duration,
    informers: Mutex<HashMap<(TypeId, String), Entry>>,
}

impl InformerFactory {
    /// A factory whose informers resync every `default_resync` (zero: never).
    pub fn new(default_resync: Duration) -> Self {
        Self {
            default_resync,
            informers: Mutex::new(HashMap::new()),
        }
    }

    /// The informer for `(T, resource)`, created with `lister_watcher()` and the builder's
    /// defaults (the factory's resync period) the first time.
    pub fn informer<T: Object>(
        &self,
        resource: &str,
        lister_watcher: impl FnOnce() -> Arc<dyn ListerWatcher<T>>,
    ) -> SharedIndexInformer<T> {
        let resync = self.default_resync;
        self.informer_with(resource, move || {
            SharedIndexInformer::builder(lister_watcher())
                .resync(resync)
                .build()
        })
    }

    /// The informer for `(T, resource)`, built by `build()` the first time: for informers with
    /// settings of their own (indexers, transform, run mode...).
    pub fn informer_with<T: Object>(
        &self,
        resource: &str,
        build: impl FnOnce() -> SharedIndexInformer<T>,
    ) -> SharedIndexInformer<T> {
        let mut map = self
            .informers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let key = (TypeId::of::<T>(), resource.to_owned());
        if let Some(existing) = map
            .get(&key)
            .and_then(|e| e.informer.downcast_ref::<SharedIndexInformer<T>>())
        {
            return existing.clone();
        }
        let informer = build();
        let runner = informer.clone();
        let run: RunFn = Box::new(move |cancel| {
            let informer = runner.clone();
            Box::pin(async move {
                if let Err(e) = informer.run(cancel).await {
                    tracing::warn!(error = %e, "a shared informer did not run");
                }
            })
        });
        map.insert(
            key,
            Entry {
                informer: Box::new(informer.clone()),
                run,
                started: false,
            },
        );
        informer
    }

    /// Runs every informer not yet started until `cancel` fires, each with
    /// [`SharedIndexInformer::run`] in its own [`RunMode`](crate::RunMode). Informers requested
    /// later need another call.
    pub async fn run(&self, cancel: CancellationToken) {
        let runs: Vec<_> = {
            let mut map = self
                .informers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            map.values_mut()
                .filter(|e| !e.started)
                .map(|e| {
                    e.started = true;
                    (e.run)(cancel.clone())
                })
                .collect()
        };
        futures_util::future::join_all(runs).await;
    }
}

impl fmt::Debug for InformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self
            .informers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("InformerFactory")
            .field("default_resync", &self.default_resync)
            .field("informers", &n)
            .finish()
    }
}
