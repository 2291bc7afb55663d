//! The delta-processing table of client-go's controller: how each popped delta changes the
//! indexer and which events it raises.

use std::collections::HashMap;
use std::sync::Arc;

use kcache_queue::{Delta, Deltas};
use kcache_store::{
    Cache, DeletedFinalStateUnknown, Indexer, Object, ObjectKey, ObjectOrTombstone, Store,
    Transaction,
};

use crate::Event;

/// Applies `deltas` (oldest first) to `indexer` and reports each resulting event to `emit`,
/// together with whether it is a resync (an update whose resource version did not change).
/// Objects are keyed by the indexer's own key function (the informer's), also when a relist
/// is matched against the cache.
///
/// | delta | indexer | event |
/// |---|---|---|
/// | `Added`, `Updated`, `Replaced`, `Sync` | update if the key is present, add otherwise | `Update(old, new)` or `Add(new, initial)` |
/// | `Deleted` | delete (by key for a tombstone) | `Delete` when the key was present |
/// | `ReplacedAll` | `replace(list, rv)` first | a tombstone `Delete` per key the list lacks, then `Update`/`Add` in list order |
/// | `SyncAll` | nothing | `Update(o, o)` for every object |
/// | `Bookmark` | `bookmark(rv)` | none |
///
/// # Errors
///
/// A store error skips that delta (the next relist corrects the cache); the first one is
/// returned once the others are applied.
pub(crate) fn process_deltas<T: Object>(
    indexer: &Cache<T>,
    deltas: Deltas<T>,
    mut emit: impl FnMut(Event<T>, bool),
) -> Result<(), kcache_store::Error> {
    let initial = deltas.is_in_initial_list();
    // The queue says when a pop holds distinct objects (a RealFifo batch); a DeltaFifo pop is
    // the deltas of one object, applied one after the other.
    if deltas.len() > 1
        && deltas.of_distinct_objects()
        && deltas.iter().all(Delta::is_single_object)
    {
        return process_batch(indexer, deltas.into_vec(), initial, &mut emit);
    }
    let mut first_error = None;
    for delta in deltas {
        // A batch holds deltas of many keys: one refused change must not drop the others.
        if let Err(e) = process_delta(indexer, delta, initial, &mut emit) {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// client-go's `processDeltasInBatch`: a batch of single-object deltas of distinct objects is
/// applied to the indexer as one [`Transaction`](kcache_store::Transaction) batch; the events
/// of the writes that were applied are raised, in order, and those of the writes that failed
/// are not (the cache and the handlers stay in agreement; the next relist corrects both).
///
/// # Errors
///
/// The transaction's error, naming the writes that failed, once the others are delivered.
fn process_batch<T: Object>(
    indexer: &Cache<T>,
    deltas: Vec<Delta<T>>,
    initial: bool,
    emit: &mut impl FnMut(Event<T>, bool),
) -> Result<(), kcache_store::Error> {
    let mut writes = Vec::with_capacity(deltas.len());
    // The event each write raises once applied (a deletion of an object the cache did not hold
    // raises none).
    let mut events = Vec::with_capacity(deltas.len());
    for delta in deltas {
        match delta {
            Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
                // A key that cannot be computed fails in the transaction too, at this position.
                if let Some(old) = indexer.get(&obj).ok().flatten() {
                    let sync = is_resync(&*old, &*obj);
                    writes.push(Transaction::Update(Arc::clone(&obj)));
                    events.push(Some((Event::Update { old, new: obj }, sync)));
                } else {
                    writes.push(Transaction::Add(Arc::clone(&obj)));
                    let add = Event::Add {
                        obj,
                        is_in_initial_list: initial,
                    };
                    events.push(Some((add, false)));
                }
            }
            Delta::Deleted(gone) => {
                let (held, write) = match &gone {
                    ObjectOrTombstone::Object(obj) => (
                        indexer.get(obj).ok().flatten().is_some(),
                        Transaction::Delete(Arc::clone(obj)),
                    ),
                    ObjectOrTombstone::Tombstone(t) => (
                        indexer.get_by_key(t.key.as_str()).is_some(),
                        Transaction::DeleteKey(t.key.clone()),
                    ),
                };
                writes.push(write);
                events.push(held.then_some((Event::Delete(gone), false)));
            }
            // Never here: `process_deltas` batches single-object deltas only.
            Delta::ReplacedAll { .. } | Delta::SyncAll { .. } | Delta::Bookmark { .. } => {}
        }
    }
    let result = indexer.transaction(writes);
    for (i, event) in events.into_iter().enumerate() {
        let applied = result.as_ref().map_or_else(|e| e.succeeded(i), |()| true);
        if applied && let Some((event, sync)) = event {
            emit(event, sync);
        }
    }
    result.map_err(kcache_store::Error::from)
}

fn process_delta<T: Object>(
    indexer: &Cache<T>,
    delta: Delta<T>,
    initial: bool,
    emit: &mut impl FnMut(Event<T>, bool),
) -> Result<(), kcache_store::Error> {
    match delta {
        Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
            if let Some(old) = indexer.get(&obj)? {
                indexer.update(Arc::clone(&obj))?;
                let sync = is_resync(&*old, &*obj);
                emit(Event::Update { old, new: obj }, sync);
            } else {
                indexer.add(Arc::clone(&obj))?;
                emit(
                    Event::Add {
                        obj,
                        is_in_initial_list: initial,
                    },
                    false,
                );
            }
        }
        Delta::Deleted(gone) => {
            // Handlers hear of a deletion only when the cache held the object: a delete of an
            // object the cache left out (it did not decode) or already removed (an undecodable
            // event's tombstone, then the real DELETED) would otherwise reach them twice or
            // without an add.
            let held = match &gone {
                ObjectOrTombstone::Object(obj) => {
                    let held = indexer.get(obj)?.is_some();
                    indexer.delete(Arc::clone(obj))?;
                    held
                }
                ObjectOrTombstone::Tombstone(t) => {
                    let held = indexer.get_by_key(t.key.as_str()).is_some();
                    indexer.delete_by_key(t.key.as_str())?;
                    held
                }
            };
            if held {
                emit(Event::Delete(gone), false);
            }
        }
        Delta::ReplacedAll {
            objects,
            resource_version,
        } => replace_all(indexer, objects, &resource_version, initial, emit)?,
        Delta::SyncAll { objects } => {
            let objects = if objects.is_empty() {
                indexer.list()
            } else {
                objects
            };
            for o in objects {
                emit(
                    Event::Update {
                        old: Arc::clone(&o),
                        new: o,
                    },
                    true,
                );
            }
        }
        Delta::Bookmark { resource_version } => indexer.bookmark(&resource_version),
    }
    Ok(())
}

/// client-go's `reconcileReplacement`: replace first, then tombstones, then updates and adds.
/// A listed object is matched with the cached one of the same key, as the cache's key function
/// (the informer's) makes it: an object still there is an update, never a tombstone and an add.
fn replace_all<T: Object>(
    indexer: &Cache<T>,
    objects: Vec<Arc<T>>,
    resource_version: &str,
    initial: bool,
    emit: &mut impl FnMut(Event<T>, bool),
) -> Result<(), kcache_store::Error> {
    let mut before: HashMap<ObjectKey, Arc<T>> = indexer
        .list_keys()
        .into_iter()
        .filter_map(|k| indexer.get_by_key(k.as_str()).map(|o| (k, o)))
        .collect();
    let mut changes = Vec::with_capacity(objects.len());
    for obj in &objects {
        let key = indexer.key_of(obj)?;
        changes.push((before.remove(&key), Arc::clone(obj)));
    }
    indexer.replace(objects, resource_version)?;
    let mut gone: Vec<(ObjectKey, Arc<T>)> = before.into_iter().collect();
    gone.sort_by(|a, b| a.0.cmp(&b.0));
    for (key, last) in gone {
        emit(
            Event::Delete(ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
                key,
                obj: Some(last),
            })),
            false,
        );
    }
    for (old, new) in changes {
        match old {
            Some(old) => {
                let sync = is_resync(&*old, &*new);
                emit(Event::Update { old, new }, sync);
            }
            None => emit(
                Event::Add {
                    obj: new,
                    is_in_initial_list: initial,
                },
                false,
            ),
        }
    }
    Ok(())
}

/// An update whose resource version did not change is a resync (client-go 1.18+).
fn is_resync<T: Object>(old: &T, new: &T) -> bool {
    match (old.resource_version(), new.resource_version()) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::{Cache, DynamicObject, Store};

    fn obj(name: &str, rv: &str) -> Arc<DynamicObject> {
        let mut o = DynamicObject::new(Some("ns"), name);
        o.metadata.resource_version = Some(rv.to_owned());
        Arc::new(o)
    }

    fn run(
        cache: &Cache<DynamicObject>,
        deltas: Vec<Delta<DynamicObject>>,
        initial: bool,
    ) -> Vec<String> {
        let mut log = Vec::new();
        process_deltas(cache, Deltas::new(deltas, initial), |e, sync| {
            log.push(match e {
                Event::Add {
                    obj,
                    is_in_initial_list,
                } => {
                    format!(
                        "add {} {is_in_initial_list}",
                        obj.metadata.name.as_deref().unwrap_or("")
                    )
                }
                Event::Update { old, new } => format!(
                    "update {} {}->{} sync={sync}",
                    new.metadata.name.as_deref().unwrap_or(""),
                    old.metadata.resource_version.as_deref().unwrap_or(""),
                    new.metadata.resource_version.as_deref().unwrap_or("")
                ),
                Event::Delete(d) => format!(
                    "delete {} tombstone={}",
                    d.object()
                        .and_then(|o| o.metadata.name.clone())
                        .unwrap_or_default(),
                    d.is_tombstone()
                ),
            });
        })
        .unwrap();
        log
    }

    #[test]
    fn single_object_deltas_follow_the_table() {
        let c = Cache::new();
        assert_eq!(
            run(&c, vec![Delta::Added(obj("a", "1"))], true),
            ["add a true"]
        );
        assert_eq!(
            run(
                &c,
                vec![Delta::Updated(obj("a", "2")), Delta::Sync(obj("a", "2"))],
                false
            ),
            ["update a 1->2 sync=false", "update a 2->2 sync=true"]
        );
        // Replaced/Sync of an unknown key is an add.
        assert_eq!(
            run(&c, vec![Delta::Replaced(obj("b", "3"))], false),
            ["add b false"]
        );
        assert_eq!(
            run(
                &c,
                vec![Delta::Deleted(ObjectOrTombstone::Object(obj("a", "4")))],
                false
            ),
            ["delete a tombstone=false"]
        );
        assert!(c.get_by_key("ns/a").is_none());
        let tomb = ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
            key: ObjectKey::explicit("ns/b"),
            obj: None,
        });
        assert_eq!(
            run(&c, vec![Delta::Deleted(tomb.clone())], false),
            ["delete  tombstone=true"]
        );
        assert!(c.is_empty());
        // A deletion of what the cache does not hold raises nothing: an undecodable event's
        // tombstone followed by the real DELETED, or a DELETED of an object left out.
        assert!(run(&c, vec![Delta::Deleted(tomb)], false).is_empty());
        assert!(
            run(
                &c,
                vec![Delta::Deleted(ObjectOrTombstone::Object(obj("a", "5")))],
                false
            )
            .is_empty()
        );
        run(
            &c,
            vec![Delta::Bookmark {
                resource_version: "99".into(),
            }],
            false,
        );
        assert_eq!(c.last_sync_resource_version().as_deref(), Some("99"));
    }

    #[test]
    fn replaced_all_reconciles_against_the_store() {
        let c = Cache::new();
        run(
            &c,
            vec![
                Delta::Added(obj("keep", "1")),
                Delta::Added(obj("gone", "1")),
                Delta::Added(obj("same", "1")),
            ],
            true,
        );
        let log = run(
            &c,
            vec![Delta::ReplacedAll {
                objects: vec![obj("new", "5"), obj("keep", "5"), obj("same", "1")],
                resource_version: "5".into(),
            }],
            false,
        );
        assert_eq!(
            log,
            [
                "delete gone tombstone=true",
                "add new false",
                "update keep 1->5 sync=false",
                "update same 1->1 sync=true"
            ]
        );
        assert_eq!(c.len(), 3);
        assert_eq!(c.last_sync_resource_version().as_deref(), Some("5"));
        let log = run(
            &c,
            vec![Delta::SyncAll {
                objects: Vec::new(),
            }],
            false,
        );
        assert_eq!(log.len(), 3);
        assert!(log.iter().all(|l| l.ends_with("sync=true")));
    }

    /// client-go's `TestReplaceEvents` ("Create, update, delete"), with a cache keyed by a key
    /// function of the informer's own: client-go hands the informer's `keyFunc` to
    /// `processDeltas` and on to `reconcileReplacement`, so a relist matches each listed object
    /// with the cached one of the same key. An object still there is an update, not a
    /// tombstone and an add.
    #[test]
    fn replace_events_with_the_informer_key_function() {
        let by_name_then_namespace: kcache_store::KeyFunc<DynamicObject> =
            Arc::new(|o: &DynamicObject| {
                Ok(ObjectKey::explicit(format!(
                    "{}.{}",
                    o.metadata.name.as_deref().unwrap_or_default(),
                    o.metadata.namespace.as_deref().unwrap_or_default()
                )))
            });
        let c = Cache::with_key_func(by_name_then_namespace, kcache_store::Indexers::new());
        run(
            &c,
            vec![
                Delta::Added(obj("pod-1", "1")),
                Delta::Added(obj("pod-2", "2")),
                Delta::Added(obj("pod-3", "3")),
            ],
            true,
        );
        let log = run(
            &c,
            vec![Delta::ReplacedAll {
                objects: vec![obj("pod-1", "4"), obj("pod-2", "5"), obj("pod-4", "6")],
                resource_version: "6".into(),
            }],
            false,
        );
        assert_eq!(
            log,
            [
                "delete pod-3 tombstone=true",
                "update pod-1 1->4 sync=false",
                "update pod-2 2->5 sync=false",
                "add pod-4 false"
            ]
        );
        let mut keys: Vec<String> = c.list_keys().iter().map(ToString::to_string).collect();
        keys.sort();
        assert_eq!(keys, ["pod-1.ns", "pod-2.ns", "pod-4.ns"]);
    }

    /// client-go 1.36's `processDeltasInBatch`: a batch of distinct objects is one transaction
    /// on the indexer; a write the indexer refuses (here an index function's error) is left out
    /// of the cache and raises no event, the others are applied and raise theirs in order, and
    /// the error says `failed to execute (1/3) transactions` with the cause.
    #[test]
    fn a_batch_is_one_transaction_and_only_applied_writes_raise_events() {
        let c = Cache::with_indexers(kcache_store::Indexers::new().with(
            "refuses-bad",
            |o: &DynamicObject| {
                if o.metadata.name.as_deref() == Some("bad") {
                    return Err("bad is not indexable".into());
                }
                Ok(Vec::new())
            },
        ));
        run(&c, vec![Delta::Added(obj("old", "1"))], true);
        let mut log = Vec::new();
        let result = process_deltas(
            &c,
            Deltas::batch(
                vec![
                    Delta::Added(obj("a", "2")),
                    Delta::Added(obj("bad", "3")),
                    Delta::Deleted(ObjectOrTombstone::Object(obj("old", "4"))),
                ],
                false,
            ),
            |e, _| {
                log.push(match e {
                    Event::Add { obj, .. } => {
                        format!("add {}", obj.metadata.name.as_deref().unwrap_or(""))
                    }
                    Event::Update { new, .. } => {
                        format!("update {}", new.metadata.name.as_deref().unwrap_or(""))
                    }
                    Event::Delete(gone) => format!("delete {}", gone.key()),
                });
            },
        );
        let err = result.unwrap_err().to_string();
        assert!(
            err.starts_with("failed to execute (1/3) transactions: #1: unable to calculate"),
            "{err}"
        );
        assert!(err.ends_with("bad is not indexable"), "{err}");
        assert_eq!(log, ["add a", "delete ns/old"]);
        assert!(c.get_by_key("ns/a").is_some());
        assert!(c.get_by_key("ns/bad").is_none());
        assert!(c.get_by_key("ns/old").is_none());
        assert_eq!(c.last_sync_resource_version().as_deref(), Some("4"));
    }
}
