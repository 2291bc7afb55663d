//! What happens to objects beyond the one write a request makes, as kube-apiserver and the
//! cluster's controllers would do it: garbage collection of dependents by
//! `metadata.ownerReferences` (background, foreground and orphan propagation), namespace
//! deletion (`Terminating`, its contents deleted, then the namespace), and the index of owners
//! both need.
//!
//! On a cluster the garbage collector and the namespace controller do this a moment after the
//! DELETE; here it happens within the same write, in the order their watch events would come:
//! - **background** (the default): the owner is deleted, then each dependent whose owners are
//!   all gone, recursively;
//! - **foreground**: the owner is marked (`deletionTimestamp` and the `foregroundDeletion`
//!   finalizer), its dependents are deleted (in the foreground too), and the owner goes once no
//!   dependent is left (a dependent held by a finalizer holds the owner until it goes);
//! - **orphan**: the owner's reference is removed from each dependent, then the owner is
//!   deleted;
//! - **namespace**: it is marked (`deletionTimestamp`, `status.phase: Terminating`), every
//!   object in it is deleted, and it goes once it is empty (objects held by finalizers hold it);
//!   nothing can be created in it meanwhile (403).
//!
//! What a removal sets off is worked through as a queue, breadth first, so an ownership chain
//! of any depth takes no stack. Dependents are found when their owner goes, and an object written with owners that all went
//! already (a controller's late write racing its owner's deletion) is deleted right after the
//! write, as the collector would. An object whose owners never existed here is left alone (a
//! cluster's collector would delete it once it checked): tests write objects owned by objects
//! they do not create. The uids of removed objects are remembered for that up to
//! [`REMEMBERED_REMOVALS`].

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use kcache_store::DynamicObject;
use kcache_testing::generated::rfc3339;
use serde_json::Value;

use super::{EventType, NAMESPACES, State, finalizers_empty};
use crate::fake_api_server::served_resource::ResourceId;
use crate::fake_api_server::status::ApiError;
use crate::fake_api_server::stored::Stored;
use crate::fake_api_server::util::now_secs;

/// How many uids of removed objects are remembered to recognise a write owned only by removed
/// objects (the oldest forgotten first): bounded, as every server input must be.
pub(crate) const REMEMBERED_REMOVALS: usize = 100_000;

/// The finalizer that holds an owner deleted in the foreground until its dependents are gone.
pub(crate) const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// How a delete treats the owned objects (`DeleteOptions.propagationPolicy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Propagation {
    /// Delete the owner now, its dependents after it.
    #[default]
    Background,
    /// Delete the dependents first, then the owner.
    Foreground,
    /// Delete the owner and leave its dependents, without their reference to it.
    Orphan,
}

impl Propagation {
    /// The policy named `name` (`Background`, `Foreground`, `Orphan`).
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "Background" => Some(Self::Background),
            "Foreground" => Some(Self::Foreground),
            "Orphan" => Some(Self::Orphan),
            _ => None,
        }
    }
}

/// Where an object is stored: its resource and key.
type Place = (ResourceId, String);

/// Which objects exist by uid, and which objects name each uid as an owner.
#[derive(Debug, Default)]
pub(crate) struct Ownership {
    /// Every stored object, by uid.
    live: HashMap<String, Place>,
    /// The objects whose `ownerReferences` name a uid, by that uid.
    dependents: HashMap<String, BTreeSet<Place>>,
    /// The uids of the latest removed objects, oldest first, at most [`REMEMBERED_REMOVALS`].
    removed: VecDeque<String>,
    /// The same uids, to look up.
    removed_set: HashSet<String>,
}

impl Ownership {
    /// Follows one committed change of the object at `key` of `id`: `obj` is its new state
    /// (the last one for a deletion), `old` the one before. Returns whether the new state is
    /// owned only by objects that were removed (see
    /// [`owners_all_removed`](Self::owners_all_removed)). Owner uids are compared borrowed: a
    /// write that keeps its owners (almost every update) allocates nothing here.
    pub(crate) fn track(
        &mut self,
        id: &ResourceId,
        key: &str,
        kind: EventType,
        obj: &DynamicObject,
        old: Option<&DynamicObject>,
    ) -> bool {
        let place = || (id.clone(), key.to_owned());
        if let Some(uid) = obj.metadata.uid.as_deref() {
            if kind == EventType::Deleted {
                self.live.remove(uid);
                self.remember_removal(uid);
            } else if kind == EventType::Added {
                self.live.insert(uid.to_owned(), place());
            }
        }
        let before = old.map(owner_uids).unwrap_or_default();
        let after = if kind == EventType::Deleted {
            Vec::new()
        } else {
            owner_uids(obj)
        };
        if before != after {
            for uid in before.iter().filter(|u| !after.contains(u)) {
                if let Some(set) = self.dependents.get_mut(*uid) {
                    set.remove(&place());
                    if set.is_empty() {
                        self.dependents.remove(*uid);
                    }
                }
            }
            for uid in after.iter().filter(|u| !before.contains(u)) {
                self.dependents
                    .entry((*uid).to_owned())
                    .or_default()
                    .insert(place());
            }
        }
        self.owners_all_removed(&after)
    }

    /// Remembers that the object of `uid` was removed, forgetting the oldest past the bound.
    fn remember_removal(&mut self, uid: &str) {
        if self.removed_set.insert(uid.to_owned()) {
            self.removed.push_back(uid.to_owned());
        }
        while self.removed.len() > REMEMBERED_REMOVALS {
            if let Some(old) = self.removed.pop_front() {
                self.removed_set.remove(&old);
            }
        }
    }

    /// Whether `owners` (an object's owner uids) are all of objects that were removed: there
    /// is one at least, none exists, and one at least existed here.
    fn owners_all_removed(&self, owners: &[&str]) -> bool {
        !owners.is_empty()
            && owners.iter().all(|uid| !self.live.contains_key(*uid))
            && owners.iter().any(|uid| self.removed_set.contains(*uid))
    }

    /// Records an object stored without a change event (a namespace made at start).
    pub(crate) fn add_live(&mut self, uid: &str, id: &ResourceId, key: &str) {
        self.live
            .insert(uid.to_owned(), (id.clone(), key.to_owned()));
    }

    /// The objects that name `uid` as an owner.
    fn dependents_of(&self, uid: &str) -> Vec<Place> {
        self.dependents
            .get(uid)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Where the object of `uid` is, if it exists.
    fn place_of(&self, uid: &str) -> Option<&Place> {
        self.live.get(uid)
    }
}

/// The uids an object's `metadata.ownerReferences` name (no allocation without owners).
pub(crate) fn owner_uids(obj: &DynamicObject) -> Vec<&str> {
    obj.metadata
        .other
        .get("ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}

/// The finalizers of `obj`.
fn finalizers(obj: &DynamicObject) -> Vec<String> {
    obj.metadata
        .other
        .get("finalizers")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Sets `obj`'s finalizers (removes the member when there are none).
fn set_finalizers(obj: &mut DynamicObject, finalizers: &[String]) {
    if finalizers.is_empty() {
        obj.metadata.other.remove("finalizers");
    } else {
        obj.metadata
            .other
            .insert("finalizers".into(), Value::from(finalizers.to_vec()));
    }
}

/// Marks `obj` as being deleted (its `deletionTimestamp`, and a grace period of 0), if it is
/// not yet.
fn mark_deleted(obj: &mut DynamicObject) {
    if obj.metadata.deletion_timestamp.is_none() {
        obj.metadata.deletion_timestamp = Some(rfc3339(now_secs()));
        obj.metadata
            .other
            .insert("deletionGracePeriodSeconds".into(), Value::from(0));
    }
}

/// The outcome of a delete: the object's last state, and whether it is gone (rather than
/// marked, waiting for finalizers).
pub(crate) struct Deleted {
    pub(crate) object: Arc<Stored>,
    pub(crate) removed: bool,
}

impl State {
    /// Deletes the object at `key` of `id` (it exists) with `propagation`.
    pub(crate) fn delete_stored(
        &mut self,
        id: &ResourceId,
        key: &str,
        propagation: Propagation,
    ) -> Result<Deleted, ApiError> {
        let Some(old) = self.resource(id)?.objects.get(key).cloned() else {
            return Err(ApiError::not_found(
                &self.resource(id)?.resource.qualified(),
                key,
            ));
        };
        if *id == *NAMESPACES {
            return self.terminate_namespace(key, old);
        }
        let uid = old.object.metadata.uid.clone().unwrap_or_default();
        if propagation == Propagation::Orphan {
            for (dep_id, dep_key) in self.ownership.dependents_of(&uid) {
                self.drop_owner_reference(&dep_id, &dep_key, &uid)?;
            }
        }
        let dependents = self.ownership.dependents_of(&uid);
        let current = &*old.object;
        let mut finals = finalizers(current);
        let foreground = propagation == Propagation::Foreground && !dependents.is_empty();
        if foreground && !finals.iter().any(|f| f == FOREGROUND_FINALIZER) {
            finals.push(FOREGROUND_FINALIZER.to_owned());
        }
        if finals.is_empty() {
            let last = current.clone();
            let object = self.commit(id, EventType::Deleted, key.to_owned(), last, Some(old))?;
            return Ok(Deleted {
                object,
                removed: true,
            });
        }
        if current.metadata.deletion_timestamp.is_some() && finals == finalizers(current) {
            return Ok(Deleted {
                object: old,
                removed: false,
            });
        }
        let mut obj = current.clone();
        mark_deleted(&mut obj);
        set_finalizers(&mut obj, &finals);
        let marked = self.commit(id, EventType::Modified, key.to_owned(), obj, Some(old))?;
        if foreground && !self.dry_run {
            for (dep_id, dep_key) in dependents {
                if self.resource(&dep_id)?.objects.contains_key(&dep_key) {
                    self.delete_stored(&dep_id, &dep_key, Propagation::Foreground)?;
                }
            }
            self.release_foreground(&uid)?;
        }
        let object = self
            .resource(id)?
            .objects
            .get(key)
            .cloned()
            .unwrap_or(marked);
        let removed = !self.resource(id)?.objects.contains_key(key);
        Ok(Deleted { object, removed })
    }

    /// Removes the reference to owner `uid` from the object at `key` of `id`.
    fn drop_owner_reference(
        &mut self,
        id: &ResourceId,
        key: &str,
        uid: &str,
    ) -> Result<(), ApiError> {
        let Some(old) = self.resource(id)?.objects.get(key).cloned() else {
            return Ok(());
        };
        let mut obj = (*old.object).clone();
        if let Some(Value::Array(refs)) = obj.metadata.other.get_mut("ownerReferences") {
            refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
            if refs.is_empty() {
                obj.metadata.other.remove("ownerReferences");
            }
        }
        self.commit(id, EventType::Modified, key.to_owned(), obj, Some(old))?;
        Ok(())
    }

    /// What follows the removal of `removed` from `id`: its dependents whose owners are all
    /// gone are deleted, an owner waiting in the foreground for it may go, and so may the
    /// terminating namespace it was in.
    pub(super) fn after_removal(
        &mut self,
        id: &ResourceId,
        removed: &DynamicObject,
    ) -> Result<(), ApiError> {
        if let Some(uid) = removed.metadata.uid.as_deref() {
            for (dep_id, dep_key) in self.ownership.dependents_of(uid) {
                let Some(dep) = self.resource(&dep_id)?.objects.get(&dep_key).cloned() else {
                    continue;
                };
                let orphaned = owner_uids(&dep.object)
                    .iter()
                    .all(|owner| self.ownership.place_of(owner).is_none());
                if orphaned {
                    self.delete_stored(&dep_id, &dep_key, Propagation::Background)?;
                }
            }
        }
        for owner in owner_uids(removed) {
            self.release_foreground(owner)?;
        }
        if let Some(ns) = removed.metadata.namespace.as_deref()
            && self.resource(id)?.resource.api.namespaced
        {
            self.finish_namespace(ns)?;
        }
        Ok(())
    }

    /// Lets the owner of `uid` go if it waits in the foreground and no dependent is left.
    fn release_foreground(&mut self, uid: &str) -> Result<(), ApiError> {
        let Some((id, key)) = self.ownership.place_of(uid).cloned() else {
            return Ok(());
        };
        if !self.ownership.dependents_of(uid).is_empty() {
            return Ok(());
        }
        let Some(old) = self.resource(&id)?.objects.get(&key).cloned() else {
            return Ok(());
        };
        let mut finals = finalizers(&old.object);
        if old.object.metadata.deletion_timestamp.is_none()
            || !finals.iter().any(|f| f == FOREGROUND_FINALIZER)
        {
            return Ok(());
        }
        finals.retain(|f| f != FOREGROUND_FINALIZER);
        let mut obj = (*old.object).clone();
        set_finalizers(&mut obj, &finals);
        let kind = if finalizers_empty(&obj) {
            EventType::Deleted
        } else {
            EventType::Modified
        };
        self.commit(&id, kind, key, obj, Some(old))?;
        Ok(())
    }

    /// Deletes namespace `name` (stored as `old`): marks it `Terminating`, deletes every object
    /// in it, and removes it if that left it empty.
    fn terminate_namespace(&mut self, name: &str, old: Arc<Stored>) -> Result<Deleted, ApiError> {
        let id = NAMESPACES.clone();
        let mut obj = (*old.object).clone();
        if obj.metadata.deletion_timestamp.is_none() {
            mark_deleted(&mut obj);
            obj.metadata.other.remove("deletionGracePeriodSeconds");
            obj.data
                .insert("status".into(), serde_json::json!({"phase": "Terminating"}));
            self.commit(&id, EventType::Modified, name.to_owned(), obj, Some(old))?;
        }
        if !self.dry_run {
            for (resource_id, key) in self.namespace_contents(name) {
                if self.resource(&resource_id)?.objects.contains_key(&key) {
                    self.delete_stored(&resource_id, &key, Propagation::Background)?;
                }
            }
            self.finish_namespace(name)?;
        }
        let object = self.resource(&id)?.objects.get(name).cloned();
        let removed = object.is_none();
        let object = match object {
            Some(object) => object,
            None => self
                .resource(&id)?
                .history
                .iter()
                .rev()
                .find(|e| e.key == name)
                .map(|e| e.obj.clone())
                .ok_or_else(|| ApiError::not_found("namespaces", name))?,
        };
        Ok(Deleted { object, removed })
    }

    /// The objects stored in namespace `ns`, every namespaced resource's.
    fn namespace_contents(&self, ns: &str) -> Vec<Place> {
        let from = format!("{ns}/");
        let to = format!("{ns}0");
        self.resources
            .iter()
            .filter(|(_, rs)| rs.resource.api.namespaced)
            .flat_map(|(id, rs)| {
                rs.objects
                    .range::<str, _>((
                        std::ops::Bound::Included(from.as_str()),
                        std::ops::Bound::Excluded(to.as_str()),
                    ))
                    .map(move |(key, _)| (id.clone(), key.clone()))
            })
            .collect()
    }

    /// Whether namespace `ns` holds no object: one range lookup per namespaced resource, so
    /// that each removal during a namespace's termination costs no scan of its contents.
    fn namespace_is_empty(&self, ns: &str) -> bool {
        let from = format!("{ns}/");
        let to = format!("{ns}0");
        self.resources
            .values()
            .filter(|rs| rs.resource.api.namespaced)
            .all(|rs| {
                rs.objects
                    .range::<str, _>((
                        std::ops::Bound::Included(from.as_str()),
                        std::ops::Bound::Excluded(to.as_str()),
                    ))
                    .next()
                    .is_none()
            })
    }

    /// Whether namespace `ns` is being deleted.
    pub(crate) fn namespace_terminating(&self, ns: &str) -> bool {
        self.resources
            .get(&*NAMESPACES)
            .and_then(|rs| rs.objects.get(ns))
            .is_some_and(|n| n.object.metadata.deletion_timestamp.is_some())
    }

    /// Removes namespace `ns` if it is terminating and empty: its `kubernetes` finalizer goes,
    /// then the namespace unless other finalizers hold it.
    fn finish_namespace(&mut self, ns: &str) -> Result<(), ApiError> {
        if !self.namespace_terminating(ns) || !self.namespace_is_empty(ns) {
            return Ok(());
        }
        let id = NAMESPACES.clone();
        let Some(old) = self.resource(&id)?.objects.get(ns).cloned() else {
            return Ok(());
        };
        let mut obj = (*old.object).clone();
        if let Some(spec) = obj.data.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("finalizers");
        }
        let kind = if finalizers_empty(&obj) {
            EventType::Deleted
        } else {
            EventType::Modified
        };
        self.commit(&id, kind, ns.to_owned(), obj, Some(old))?;
        Ok(())
    }
}
