//! [`ResourceEventHandler`], closure adapters and the filtering handler.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use kcache_store::ObjectOrTombstone;

use crate::Event;

/// Receives the changes of an informer's cache, as client-go's `ResourceEventHandler`.
///
/// Synchronous: each registered handler runs on its own thread with its own buffer, so a slow
/// handler delays neither the other handlers nor the reflector. Objects arrive as shared `Arc`s
/// that nobody can mutate. Every method has an empty default, so implement only what you need.
///
/// # Panics in callbacks
///
/// A callback that panics does not bring anything down (client-go recovers them too): the
/// panic is caught on the handler's thread, the event is skipped (an initial-list add still
/// counts as delivered, so the registration can sync), and one error is logged naming the
/// handler ([`name`](Self::name)), the event (add, update or delete), the object's key, the
/// panic's message and the handler's panic count so far. The handler's thread then waits one
/// second before its next event, so at most one panic is handled per second per handler, and
/// the informer logs at most ten such lines a minute (the next one says how many were held
/// back): a handler that panics on every event cannot flood the log, and its events wait in
/// its buffer meanwhile. Other handlers, which have threads of their own, are
/// not affected, and removing the handler or stopping the informer ends the wait at once.
/// Rust's panic hook still runs for each panic (by default it prints the panic to stderr).
pub trait ResourceEventHandler<T>: Send + Sync + 'static {
    /// An object was added. `is_in_initial_list` marks the initial list (and the replay a late
    /// handler receives) as opposed to a live change.
    fn on_add(&self, obj: &Arc<T>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }
    /// An object changed. Also called on relists and resyncs, possibly with identical objects.
    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        let _ = (old, new);
    }
    /// An object was deleted: its final state, or a tombstone when the deletion was seen only by
    /// a relist.
    fn on_delete(&self, obj: &ObjectOrTombstone<T>) {
        let _ = obj;
    }
    /// The handler's name in logs (client-go's `nameForHandler`): the type's name by default.
    /// [`HandlerFuncs::named`] sets one for closures, whose type says little.
    ///
    /// ```
    /// use kcache_informer::ResourceEventHandler;
    /// use kcache_store::DynamicObject;
    ///
    /// struct Reconciler;
    /// impl ResourceEventHandler<DynamicObject> for Reconciler {}
    /// assert!(Reconciler.name().ends_with("Reconciler"));
    /// ```
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }
}

/// Delivers one event to a handler.
pub(crate) fn dispatch<T: 'static>(handler: &dyn ResourceEventHandler<T>, event: &Event<T>) {
    match event {
        Event::Add {
            obj,
            is_in_initial_list,
        } => handler.on_add(obj, *is_in_initial_list),
        Event::Update { old, new } => handler.on_update(old, new),
        Event::Delete(obj) => handler.on_delete(obj),
    }
}

type AddFn<T> = Box<dyn Fn(&Arc<T>, bool) + Send + Sync>;
type UpdateFn<T> = Box<dyn Fn(&Arc<T>, &Arc<T>) + Send + Sync>;
type DeleteFn<T> = Box<dyn Fn(&ObjectOrTombstone<T>) + Send + Sync>;

/// A handler made of closures; unset ones ignore their events.
///
/// ```
/// use kcache_informer::HandlerFuncs;
/// use kcache_store::DynamicObject;
///
/// let handler = HandlerFuncs::<DynamicObject>::new()
///     .named("pod-printer")
///     .on_added(|pod, initial| println!("add {:?} (initial: {initial})", pod.metadata.name))
///     .on_deleted(|gone| println!("delete, tombstone: {}", gone.is_tombstone()));
/// # let _ = handler;
/// ```
pub struct HandlerFuncs<T> {
    name: Option<Cow<'static, str>>,
    add: Option<AddFn<T>>,
    update: Option<UpdateFn<T>>,
    delete: Option<DeleteFn<T>>,
}

impl<T> HandlerFuncs<T> {
    /// A handler that ignores everything until closures are set.
    #[must_use]
    pub fn new() -> Self {
        Self {
            name: None,
            add: None,
            update: None,
            delete: None,
        }
    }

    /// Names the handler in logs (see [`ResourceEventHandler::name`]); unnamed, it is
    /// `HandlerFuncs<..>` with the object type.
    ///
    /// ```
    /// use kcache_informer::{HandlerFuncs, ResourceEventHandler};
    /// use kcache_store::DynamicObject;
    ///
    /// let handler = HandlerFuncs::<DynamicObject>::new().named("pod-indexer");
    /// assert_eq!(handler.name(), "pod-indexer");
    /// ```
    #[must_use]
    pub fn named(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Called for adds, with `is_in_initial_list`.
    #[must_use]
    pub fn on_added(mut self, f: impl Fn(&Arc<T>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Called for updates with the old and new state.
    #[must_use]
    pub fn on_updated(mut self, f: impl Fn(&Arc<T>, &Arc<T>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Called for deletes, with the final state or a tombstone.
    #[must_use]
    pub fn on_deleted(mut self, f: impl Fn(&ObjectOrTombstone<T>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<T> Default for HandlerFuncs<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for HandlerFuncs<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerFuncs")
            .field("name", &self.name)
            .field("add", &self.add.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .finish()
    }
}

impl<T: Send + Sync + 'static> ResourceEventHandler<T> for HandlerFuncs<T> {
    fn on_add(&self, obj: &Arc<T>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list);
        }
    }
    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<T>) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }
    fn name(&self) -> &str {
        self.name
            .as_deref()
            .unwrap_or_else(|| std::any::type_name::<Self>())
    }
}

/// Passes on only the objects a filter accepts, turning updates into adds or deletes when an
/// object enters or leaves the filter (client-go's `FilteringResourceEventHandler`).
///
/// - add, delete: passed on when the filter accepts the object (a tombstone without a last known
///   state is always passed on: there is nothing to judge it by);
/// - update: both accepted -> update; only the new one -> add (with `is_in_initial_list` false);
///   only the old one -> delete of the old state; neither -> nothing.
pub struct FilteringHandler<T, H> {
    filter: Box<dyn Fn(&T) -> bool + Send + Sync>,
    handler: H,
}

impl<T, H> FilteringHandler<T, H> {
    /// Wraps `handler` behind `filter`.
    pub fn new(filter: impl Fn(&T) -> bool + Send + Sync + 'static, handler: H) -> Self {
        Self {
            filter: Box::new(filter),
            handler,
        }
    }
}

impl<T, H: fmt::Debug> fmt::Debug for FilteringHandler<T, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteringHandler")
            .field("handler", &self.handler)
            .finish_non_exhaustive()
    }
}

impl<T, H> ResourceEventHandler<T> for FilteringHandler<T, H>
where
    T: Send + Sync + 'static,
    H: ResourceEventHandler<T>,
{
    fn on_add(&self, obj: &Arc<T>, is_in_initial_list: bool) {
        if (self.filter)(obj) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }
    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        match ((self.filter)(old), (self.filter)(new)) {
            (true, true) => self.handler.on_update(old, new),
            (false, true) => self.handler.on_add(new, false),
            (true, false) => self
                .handler
                .on_delete(&ObjectOrTombstone::Object(Arc::clone(old))),
            (false, false) => {}
        }
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<T>) {
        if obj.object().is_none_or(|o| (self.filter)(o)) {
            self.handler.on_delete(obj);
        }
    }
    /// The wrapped handler's name.
    fn name(&self) -> &str {
        self.handler.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);
    impl ResourceEventHandler<i32> for Log {
        fn on_add(&self, obj: &Arc<i32>, initial: bool) {
            self.0.lock().unwrap().push(format!("add {obj} {initial}"));
        }
        fn on_update(&self, old: &Arc<i32>, new: &Arc<i32>) {
            self.0.lock().unwrap().push(format!("update {old} {new}"));
        }
        fn on_delete(&self, obj: &ObjectOrTombstone<i32>) {
            let v = obj.object().map_or(-1, |o| **o);
            self.0.lock().unwrap().push(format!("delete {v}"));
        }
    }

    #[test]
    fn filtering_turns_updates_into_adds_and_deletes() {
        let h = FilteringHandler::new(|v: &i32| *v > 0, Log::default());
        h.on_add(&Arc::new(1), true);
        h.on_add(&Arc::new(-1), true);
        h.on_update(&Arc::new(1), &Arc::new(2));
        h.on_update(&Arc::new(-1), &Arc::new(3));
        h.on_update(&Arc::new(4), &Arc::new(-4));
        h.on_update(&Arc::new(-5), &Arc::new(-6));
        h.on_delete(&ObjectOrTombstone::Object(Arc::new(-7)));
        h.on_delete(&ObjectOrTombstone::Object(Arc::new(8)));
        h.on_delete(&ObjectOrTombstone::Tombstone(
            kcache_store::DeletedFinalStateUnknown {
                key: kcache_store::ObjectKey::explicit("k"),
                obj: None,
            },
        ));
        assert_eq!(
            *h.handler.0.lock().unwrap(),
            [
                "add 1 true",
                "update 1 2",
                "add 3 false",
                "delete 4",
                "delete 8",
                "delete -1"
            ]
        );
    }

    /// client-go's `nameForHandler`: a handler's name for logs comes from its type, or from
    /// what the funcs were named.
    #[test]
    fn handlers_are_named_by_type_or_by_hand() {
        assert!(
            Log::default().name().ends_with("::Log"),
            "{}",
            Log::default().name()
        );
        let unnamed = HandlerFuncs::<i32>::new();
        assert!(
            unnamed.name().contains("HandlerFuncs<i32>"),
            "{}",
            unnamed.name()
        );
        let named = HandlerFuncs::<i32>::new().named(format!("worker-{}", 3));
        assert_eq!(named.name(), "worker-3");
        let filtered = FilteringHandler::new(|_: &i32| true, named);
        assert_eq!(filtered.name(), "worker-3", "the wrapped handler's name");
    }

    #[test]
    fn funcs_call_only_what_is_set() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        let h = HandlerFuncs::new().on_updated(move |o: &Arc<i32>, n: &Arc<i32>| {
            s.lock().unwrap().push((**o, **n));
        });
        h.on_add(&Arc::new(1), false);
        h.on_update(&Arc::new(1), &Arc::new(2));
        assert_eq!(*seen.lock().unwrap(), [(1, 2)]);
    }
}
