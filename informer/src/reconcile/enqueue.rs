//! The handlers that turn informer events into work-queue keys: the primary object's own key,
//! or the keys of the owners an owned object names.

use std::sync::Arc;

use kcache_queue::WorkQueue;
use kcache_store::{Object, ObjectKey, ObjectOrTombstone, OwnerReference};

use crate::{ResourceEventHandler, ShardFilter};

/// Where the handlers put keys: the runner's work queue, leaving out the keys of shards this
/// replica does not hold.
#[derive(Clone)]
pub(crate) struct Keys {
    pub(crate) queue: WorkQueue<ObjectKey>,
    pub(crate) shards: Option<ShardFilter>,
}

impl Keys {
    pub(crate) fn add(&self, key: ObjectKey) {
        if self.shards.as_ref().is_none_or(|f| f.owns(key.as_str())) {
            self.queue.add(key);
        }
    }
}

/// Enqueues the key of every primary object that is added, changed or deleted (a tombstone's
/// key too; controller-runtime's `EnqueueRequestForObject`).
pub(crate) struct EnqueueObject {
    pub(crate) keys: Keys,
    pub(crate) name: String,
}

impl<T: Object> ResourceEventHandler<T> for EnqueueObject {
    fn on_add(&self, obj: &Arc<T>, _: bool) {
        self.keys.add(obj.key());
    }
    fn on_update(&self, _: &Arc<T>, new: &Arc<T>) {
        self.keys.add(new.key());
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<T>) {
        self.keys.add(obj.key());
    }
    fn name(&self) -> &str {
        &self.name
    }
}

/// Which owner references an owned kind is followed by (controller-runtime's `Owns`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owns {
    group: String,
    kind: String,
    every_owner: bool,
    cluster_scoped: bool,
}

impl Owns {
    /// The reference marked `controller: true` whose group and kind are these (the version is
    /// ignored, as controller-runtime does): `Owns::controller("apps", "Deployment")`; the core
    /// group is `""`.
    #[must_use]
    pub fn controller(group: &str, kind: &str) -> Self {
        Self {
            group: group.to_owned(),
            kind: kind.to_owned(),
            every_owner: false,
            cluster_scoped: false,
        }
    }

    /// Every reference of this group and kind, controller or not.
    #[must_use]
    pub fn every_owner(group: &str, kind: &str) -> Self {
        Self {
            every_owner: true,
            ..Self::controller(group, kind)
        }
    }

    /// The owner kind is cluster-scoped (a namespaced object may be owned by one): its key is
    /// its name alone. By default an owner lives in its owned object's namespace (owner
    /// references never cross namespaces).
    #[must_use]
    pub fn cluster_scoped(mut self) -> Self {
        self.cluster_scoped = true;
        self
    }

    /// The key of the owner `name` of an object in `namespace`.
    fn owner_key(&self, namespace: Option<&str>, name: &str) -> ObjectKey {
        ObjectKey::new(namespace.filter(|_| !self.cluster_scoped), name)
    }

    fn matches(&self, r: &OwnerReference) -> bool {
        r.kind == self.kind && r.group() == self.group && (self.every_owner || r.is_controller())
    }
}

/// Enqueues the keys of the primary objects an owned object names as its owners, for the old
/// and the new state of an update and for the last known state of a deletion.
pub(crate) struct EnqueueOwners {
    pub(crate) keys: Keys,
    pub(crate) owns: Owns,
    pub(crate) name: String,
}

impl EnqueueOwners {
    fn enqueue<C: Object>(&self, child: &C) {
        for owner in child.owner_references() {
            if self.owns.matches(&owner) {
                self.keys
                    .add(self.owns.owner_key(child.namespace(), &owner.name));
            }
        }
    }
}

impl<C: Object> ResourceEventHandler<C> for EnqueueOwners {
    fn on_add(&self, obj: &Arc<C>, _: bool) {
        self.enqueue(&**obj);
    }
    fn on_update(&self, old: &Arc<C>, new: &Arc<C>) {
        // A resync hands the same object twice: read its owners once.
        if !Arc::ptr_eq(old, new) {
            self.enqueue(&**old);
        }
        self.enqueue(&**new);
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<C>) {
        match obj {
            ObjectOrTombstone::Object(o) => self.enqueue(&**o),
            ObjectOrTombstone::Tombstone(t) => {
                if let Some(o) = &t.obj {
                    self.enqueue(&**o);
                }
            }
        }
    }
    fn name(&self) -> &str {
        &self.name
    }
}

/// A user's function from an object of another kind to the keys to reconcile.
pub(crate) type MapFn<C> = Arc<dyn Fn(&C) -> Vec<ObjectKey> + Send + Sync>;

/// Enqueues the keys a user's function maps an object of another kind to
/// (controller-runtime's `Watches` with `EnqueueRequestsFromMapFunc`).
pub(crate) struct EnqueueMapped<C> {
    pub(crate) keys: Keys,
    #[allow(
        clippy::type_complexity,
        reason = "a boxed closure, named where it is built"
    )]
    pub(crate) map: Arc<dyn Fn(&C) -> Vec<ObjectKey> + Send + Sync>,
    pub(crate) name: String,
}

impl<C: Object> EnqueueMapped<C> {
    fn enqueue(&self, obj: &C) {
        for key in (self.map)(obj) {
            self.keys.add(key);
        }
    }
}

impl<C: Object> ResourceEventHandler<C> for EnqueueMapped<C> {
    fn on_add(&self, obj: &Arc<C>, _: bool) {
        self.enqueue(obj);
    }
    fn on_update(&self, old: &Arc<C>, new: &Arc<C>) {
        if !Arc::ptr_eq(old, new) {
            self.enqueue(old);
        }
        self.enqueue(new);
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<C>) {
        match obj {
            ObjectOrTombstone::Object(o) => self.enqueue(o),
            ObjectOrTombstone::Tombstone(t) => {
                if let Some(o) = &t.obj {
                    self.enqueue(o);
                }
            }
        }
    }
    fn name(&self) -> &str {
        &self.name
    }
}
