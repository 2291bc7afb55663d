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

/// Runs one informer: on the caller's task, or on a thread of its own (`true`).
type RunFn =
    Box<dyn Fn(CancellationToken, bool) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

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

    /// The informer for `(T, resource)`, created with `lister_watcher()` the first time.
    pub fn informer<T: Object>(
        &self,
        resource: &str,
        lister_watcher: impl FnOnce() -> Arc<dyn ListerWatcher<T>>,
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
        let informer = SharedIndexInformer::new(lister_watcher(), self.default_resync);
        let runner = informer.clone();
        let run: RunFn = Box::new(move |cancel, own_thread| {
            let informer = runner.clone();
            Box::pin(async move {
                let result = if own_thread {
                    informer.run_on_own_thread(cancel).await
                } else {
                    informer.run(cancel).await
                };
                if let Err(e) = result {
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
    /// [`SharedIndexInformer::run`]: on a thread of its own on a multi-threaded runtime, on the
    /// caller's task on a current-thread one. Informers requested later need another call.
    pub async fn run(&self, cancel: CancellationToken) {
        self.run_all(cancel, false).await;
    }

    /// [`run`](Self::run), with each informer on a thread of its own whatever the runtime
    /// ([`SharedIndexInformer::run_on_own_thread`]).
    pub async fn run_on_own_threads(&self, cancel: CancellationToken) {
        self.run_all(cancel, true).await;
    }

    async fn run_all(&self, cancel: CancellationToken, own_threads: bool) {
        let runs: Vec<_> = {
            let mut map = self
                .informers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            map.values_mut()
                .filter(|e| !e.started)
                .map(|e| {
                    e.started = true;
                    (e.run)(cancel.clone(), own_threads)
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
