//! A custom key function (`InformerBuilder::key_func`) keys everything alike: the cache, the
//! queue, and the matching of a relist against the cache.

use std::sync::Arc;
use std::time::Duration;

use kcache_informer::QueueKind;
use kcache_reflector::Status;
use kcache_store::{DynamicObject, KeyFunc, ObjectKey};

use crate::support::{Recorder, Seen, informer_of, pod, start};

/// `name.namespace`: a key that is not `namespace/name`.
fn name_dot_namespace() -> KeyFunc<DynamicObject> {
    Arc::new(|o: &DynamicObject| {
        Ok(ObjectKey::explicit(format!(
            "{}.{}",
            o.metadata.name.as_deref().unwrap_or_default(),
            o.metadata.namespace.as_deref().unwrap_or_default()
        )))
    })
}

/// client-go's shared informer hands its `keyFunc` to `processDeltas`, and on to
/// `reconcileReplacement` for a relist (`TestReplaceEvents` with the informer's key function):
/// each listed object is matched with the cached one of the same key, so an object that is
/// still there after a relist is an update (never a tombstone and an add), and one that is gone
/// is a tombstone carrying the informer's key. With either queue.
#[tokio::test]
async fn a_relist_with_a_custom_key_function_updates_what_is_still_there() {
    for queue in [QueueKind::RealFifo, QueueKind::DeltaFifo] {
        let (fake, inf) = informer_of(Duration::ZERO, |b| {
            b.key_func(name_dot_namespace()).queue(queue)
        });
        fake.add(pod("ns", "a"));
        fake.add(pod("ns", "b"));
        let recorder = Recorder::default();
        let registration = inf.add_event_handler(recorder.clone()).unwrap();
        let (cancel, run) = start(&inf);
        assert!(registration.synced().await);
        fake.wait_for_watches(1).await;

        // While no watch is open (nothing runs until the test awaits), `a` changes and `b` is
        // deleted; the next watch is answered 410, so only a relist finds out.
        fake.close_watches();
        fake.fail_next_watch_with_status(Status::expired("too old resource version"));
        let a = fake.update(pod("ns", "a"));
        fake.delete(&pod("ns", "b"));
        recorder
            .wait("the relist's events", |log| log.len() >= 4)
            .await;

        let new_rv = a.metadata.resource_version.clone().unwrap();
        // The order of the two is the queue's (RealFifo: tombstones first; DeltaFifo: by key).
        let relist = &recorder.events()[2..];
        for want in [
            Seen::Delete {
                key: "b.ns".to_owned(),
                tombstone: true,
            },
            Seen::Update {
                key: "ns/a".to_owned(),
                old_rv: "1".to_owned(),
                new_rv,
            },
        ] {
            assert!(
                relist.contains(&want),
                "{queue:?}: {want:?} not in {relist:?}"
            );
        }
        let mut keys: Vec<String> = inf
            .indexer()
            .list_keys()
            .iter()
            .map(ToString::to_string)
            .collect();
        keys.sort();
        assert_eq!(keys, ["a.ns"], "{queue:?}");
        cancel.cancel();
        run.await.unwrap().unwrap();
    }
}
