//! Shared helpers: objects and a non-blocking pop that collects what it was handed.

use std::sync::Arc;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use kcache_queue::{Delta, DeltaType, Deltas, PopError, ProcessError, Queue};
use kcache_store::{DynamicObject, Object};

/// `ns/name` at resource version `rv`.
pub(crate) fn obj(name: &str, rv: u64) -> Arc<DynamicObject> {
    let mut o = DynamicObject::new(Some("ns"), name);
    o.metadata.resource_version = Some(rv.to_string());
    Arc::new(o)
}

/// An object without a name: its key cannot be computed.
pub(crate) fn nameless() -> Arc<DynamicObject> {
    let mut o = DynamicObject::new(Some("ns"), "");
    o.metadata.name = None;
    Arc::new(o)
}

/// A delta as `(type, name, rv, tombstone)`.
pub(crate) type Seen = (DeltaType, String, Option<String>, bool);

pub(crate) fn seen(d: &Delta<DynamicObject>) -> Seen {
    let name = match d {
        Delta::Deleted(kcache_store::ObjectOrTombstone::Tombstone(t)) => t
            .key
            .as_str()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned(),
        _ => d
            .object()
            .and_then(|o| o.name())
            .unwrap_or_default()
            .to_owned(),
    };
    (
        d.kind(),
        name,
        d.object()
            .and_then(|o| o.resource_version())
            .map(str::to_owned),
        d.is_tombstone(),
    )
}

/// Shorthand for an expected [`Seen`].
pub(crate) fn s(kind: DeltaType, name: &str, rv: u64) -> Seen {
    (kind, name.to_owned(), Some(rv.to_string()), false)
}

/// Shorthand for an expected tombstone.
pub(crate) fn tomb(name: &str, rv: Option<u64>) -> Seen {
    (
        DeltaType::Deleted,
        name.to_owned(),
        rv.map(|r| r.to_string()),
        true,
    )
}

/// Polls `fut` once: its output, or `None` if it would wait.
pub(crate) fn now_or_never<F: Future>(fut: F) -> Option<F::Output> {
    let fut = pin!(fut);
    match fut.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

/// Pops once without waiting: `None` if the pop would wait.
pub(crate) fn try_pop<Q: Queue<DynamicObject> + ?Sized>(
    q: &Q,
) -> Option<Result<(Vec<Seen>, bool), PopError>> {
    let mut got = None;
    let r = now_or_never(q.pop(&mut |d: Deltas<DynamicObject>| {
        got = Some((d.iter().map(seen).collect(), d.is_in_initial_list()));
        Ok(())
    }))?;
    Some(r.map(|()| got.unwrap()))
}

/// Pops once, expecting an item; its deltas.
pub(crate) fn pop<Q: Queue<DynamicObject> + ?Sized>(q: &Q) -> Vec<Seen> {
    try_pop(q).expect("an item is queued").unwrap().0
}

/// Pops once and asks for a requeue.
pub(crate) fn pop_requeue<Q: Queue<DynamicObject> + ?Sized>(q: &Q) -> Vec<Seen> {
    let mut got = Vec::new();
    now_or_never(q.pop(&mut |d: Deltas<DynamicObject>| {
        got = d.iter().map(seen).collect();
        Err(ProcessError::requeue(d))
    }))
    .expect("an item is queued")
    .unwrap();
    got
}
