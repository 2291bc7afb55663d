//! Shared helpers: objects, a recording handler, and running an informer.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcache_informer::{Event, InformerBuilder, ResourceEventHandler, SharedIndexInformer};
use kcache_store::{DynamicObject, Object, ObjectOrTombstone, deletion_handling_key};
use kcache_testing::{FakeHandle, FakeListerWatcher, FakeObject};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a real-time test waits for something before failing.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

pub(crate) fn pod(ns: &str, name: &str) -> DynamicObject {
    DynamicObject::new(Some(ns), name)
}

/// One recorded event, reduced to what the tests compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    Add {
        key: String,
        rv: String,
        initial: bool,
    },
    Update {
        key: String,
        old_rv: String,
        new_rv: String,
    },
    Delete {
        key: String,
        tombstone: bool,
    },
}

fn key_of(o: &(impl Object + ?Sized)) -> String {
    kcache_store::meta_namespace_key(o).unwrap().to_string()
}

fn rv(o: &(impl Object + ?Sized)) -> String {
    o.resource_version().unwrap_or_default().to_owned()
}

impl Seen {
    pub(crate) fn from_event<T: Object>(e: &Event<T>) -> Self {
        match e {
            Event::Add {
                obj,
                is_in_initial_list,
            } => Seen::Add {
                key: key_of(&**obj),
                rv: rv(&**obj),
                initial: *is_in_initial_list,
            },
            Event::Update { old, new } => Seen::Update {
                key: key_of(&**new),
                old_rv: rv(&**old),
                new_rv: rv(&**new),
            },
            Event::Delete(d) => Seen::Delete {
                key: deletion_handling_key(d).unwrap().to_string(),
                tombstone: d.is_tombstone(),
            },
        }
    }

    pub(crate) fn key(&self) -> &str {
        match self {
            Seen::Add { key, .. } | Seen::Update { key, .. } | Seen::Delete { key, .. } => key,
        }
    }
}

/// Replays an event log from empty: key -> resource version.
pub(crate) fn replay(log: &[Seen]) -> BTreeMap<String, String> {
    let mut state = BTreeMap::new();
    for e in log {
        match e {
            Seen::Add { key, rv, .. } => {
                state.insert(key.clone(), rv.clone());
            }
            Seen::Update { key, new_rv, .. } => {
                state.insert(key.clone(), new_rv.clone());
            }
            Seen::Delete { key, .. } => {
                state.remove(key);
            }
        }
    }
    state
}

/// The fake's state: key -> resource version.
pub(crate) fn fake_state<T: FakeObject>(fake: &FakeHandle<T>) -> BTreeMap<String, String> {
    fake.objects().iter().map(|o| (key_of(o), rv(o))).collect()
}

/// The informer's cache: key -> resource version.
pub(crate) fn cache_state<T: Object>(inf: &SharedIndexInformer<T>) -> BTreeMap<String, String> {
    inf.indexer()
        .list()
        .iter()
        .map(|o| (key_of(&**o), rv(&**o)))
        .collect()
}

/// A handler that records every event and wakes waiters.
#[derive(Clone, Default)]
pub(crate) struct Recorder {
    pub(crate) log: Arc<Mutex<Vec<Seen>>>,
    notify: Arc<Notify>,
}

impl Recorder {
    pub(crate) fn events(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }

    /// Waits (real time, bounded) until `cond` holds for the log.
    pub(crate) async fn wait(&self, what: &str, cond: impl Fn(&[Seen]) -> bool) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let notified = self.notify.notified();
            if cond(&self.log.lock().unwrap()) {
                return;
            }
            let woke = tokio::time::timeout_at(deadline, notified).await;
            assert!(
                woke.is_ok(),
                "timed out waiting for {what}; log: {:?}",
                self.events()
            );
        }
    }

    fn push(&self, seen: Seen) {
        self.log.lock().unwrap().push(seen);
        self.notify.notify_waiters();
    }
}

impl ResourceEventHandler<DynamicObject> for Recorder {
    fn on_add(&self, obj: &Arc<DynamicObject>, is_in_initial_list: bool) {
        self.push(Seen::from_event(&Event::Add {
            obj: Arc::clone(obj),
            is_in_initial_list,
        }));
    }
    fn on_update(&self, old: &Arc<DynamicObject>, new: &Arc<DynamicObject>) {
        self.push(Seen::from_event(&Event::Update {
            old: Arc::clone(old),
            new: Arc::clone(new),
        }));
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<DynamicObject>) {
        self.push(Seen::from_event(&Event::Delete(obj.clone())));
    }
}

/// A fake and an informer over it.
pub(crate) fn informer(
    resync: Duration,
) -> (
    FakeHandle<DynamicObject>,
    SharedIndexInformer<DynamicObject>,
) {
    informer_of(resync, |b| b)
}

/// A fake of `T`s and an informer over it (`DynamicObject`, or its compact form), with the
/// builder's settings adjusted by `settings`.
pub(crate) fn informer_of<T: FakeObject>(
    resync: Duration,
    settings: impl FnOnce(InformerBuilder<T>) -> InformerBuilder<T>,
) -> (FakeHandle<T>, SharedIndexInformer<T>) {
    let fake = FakeListerWatcher::<T>::new();
    let handle = fake.handle();
    let builder = SharedIndexInformer::builder(Arc::new(fake)).resync(resync);
    (handle, settings(builder).build())
}

/// Runs the informer on the test's runtime until the returned token is cancelled.
pub(crate) fn start<T: Object>(
    inf: &SharedIndexInformer<T>,
) -> (CancellationToken, JoinHandle<kcache_informer::Result<()>>) {
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (inf, cancel) = (inf.clone(), cancel.clone());
        async move { inf.run(cancel).await }
    });
    (cancel, run)
}

/// Waits (bounded) until `cond` holds, yielding to the runtime in between.
pub(crate) async fn eventually(what: &str, cond: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A gate a handler thread blocks on until the test opens it.
#[derive(Clone, Default)]
pub(crate) struct Gate(Arc<(Mutex<bool>, std::sync::Condvar)>);

impl Gate {
    pub(crate) fn wait(&self) {
        let (open, cv) = &*self.0;
        let mut is_open = open.lock().unwrap();
        while !*is_open {
            is_open = cv.wait(is_open).unwrap();
        }
    }

    pub(crate) fn open(&self) {
        let (open, cv) = &*self.0;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }

    /// Closes the gate again: the next `wait` blocks until it is opened.
    pub(crate) fn close(&self) {
        *self.0.0.lock().unwrap() = false;
    }
}
