//! [`Predicate`]: which changes of an object are worth a reconcile (controller-runtime's
//! predicates, kube-rs's `predicates`), set on a runner's sources.

use std::fmt;
use std::sync::Arc;

use kcache_store::{Object, ObjectOrTombstone};

use crate::ResourceEventHandler;

/// One change an informer reports, as a [`Predicate`] sees it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Change<'a, T> {
    /// The object appeared (from a list or a watch).
    Added(&'a T),
    /// The object changed from `old` to `new` (or a resync handed the same object twice).
    Updated {
        /// The state before.
        old: &'a T,
        /// The state now.
        new: &'a T,
    },
    /// The object is gone (its last known state, or a tombstone).
    Deleted(&'a ObjectOrTombstone<T>),
}

/// Decides whether a change enqueues its keys. A runner's source with several predicates
/// enqueues only what every one of them lets through (as controller-runtime's
/// `WithEventFilter` and `WithPredicates` do).
///
/// The built-in ones filter updates only: an object that appears or disappears is always
/// reconciled.
///
/// - [`generation_changed`](Self::generation_changed): the update changed
///   `metadata.generation`, which the API server increments on changes of the spec (not of
///   the status or the metadata) of kinds that have a status subresource (every custom
///   resource with `subresources.status`, the built-in workloads). It keeps a controller's own
///   status writes from reconciling the object again.
/// - [`labels_changed`](Self::labels_changed), [`annotations_changed`](Self::annotations_changed).
/// - [`updated`](Self::updated) with a function of the old and new states, or
///   [`new`](Self::new) with a function of any [`Change`], for anything else.
///
/// Combine with [`or`](Self::or) (either lets it through) and [`and`](Self::and).
///
/// ```
/// use kcache_informer::{Change, Predicate};
/// use kcache_store::DynamicObject;
///
/// let spec_or_labels: Predicate<DynamicObject> =
///     Predicate::generation_changed().or(Predicate::labels_changed());
/// let mut old = DynamicObject::new(Some("shop"), "web");
/// old.metadata.generation = Some(1);
/// let mut status_write = old.clone();
/// status_write.data.insert("status".into(), serde_json::json!({"ready": true}));
/// assert!(!spec_or_labels.allows(&Change::Updated { old: &old, new: &status_write }));
/// let mut spec_write = old.clone();
/// spec_write.metadata.generation = Some(2);
/// assert!(spec_or_labels.allows(&Change::Updated { old: &old, new: &spec_write }));
/// assert!(spec_or_labels.allows(&Change::Added(&old)));
/// ```
pub struct Predicate<T> {
    name: Arc<str>,
    allows: AllowsFn<T>,
}

/// A predicate's decision.
type AllowsFn<T> = Arc<dyn Fn(&Change<'_, T>) -> bool + Send + Sync>;

impl<T> Clone for Predicate<T> {
    fn clone(&self) -> Self {
        Self {
            name: Arc::clone(&self.name),
            allows: Arc::clone(&self.allows),
        }
    }
}

impl<T> fmt::Debug for Predicate<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Predicate")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<T: Object> Predicate<T> {
    /// A predicate named `name` (in logs) deciding every change with `allows`.
    pub fn new(
        name: impl Into<String>,
        allows: impl Fn(&Change<'_, T>) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: Arc::from(name.into()),
            allows: Arc::new(allows),
        }
    }

    /// A predicate named `name` deciding updates with `allows(old, new)`; additions and
    /// deletions pass.
    pub fn updated(
        name: impl Into<String>,
        allows: impl Fn(&T, &T) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self::new(name, move |change| match change {
            Change::Updated { old, new } => allows(old, new),
            Change::Added(_) | Change::Deleted(_) => true,
        })
    }

    /// Updates that change `metadata.generation` (controller-runtime's
    /// `GenerationChangedPredicate`, kube-rs's `predicates::generation`), or that mark the
    /// object for deletion, or of objects without a generation (a kind that has none, whose
    /// changes this predicate cannot tell apart, passes every update).
    #[must_use]
    pub fn generation_changed() -> Self {
        Self::updated("generation changed", |old: &T, new: &T| {
            match (old.generation(), new.generation()) {
                (Some(a), Some(b)) => a != b || old.is_being_deleted() != new.is_being_deleted(),
                _ => true,
            }
        })
    }

    /// Updates that change `metadata.labels` (controller-runtime's `LabelChangedPredicate`).
    #[must_use]
    pub fn labels_changed() -> Self {
        Self::updated("labels changed", |old: &T, new: &T| {
            non_empty(old.labels()) != non_empty(new.labels())
        })
    }

    /// Updates that change `metadata.annotations` (controller-runtime's
    /// `AnnotationChangedPredicate`).
    #[must_use]
    pub fn annotations_changed() -> Self {
        Self::updated("annotations changed", |old: &T, new: &T| {
            non_empty(old.annotations()) != non_empty(new.annotations())
        })
    }

    /// Changes that either predicate lets through.
    #[must_use]
    pub fn or(self, other: Self) -> Self {
        let name = format!("{} or {}", self.name, other.name);
        Self::new(name, move |change| {
            self.allows(change) || other.allows(change)
        })
    }

    /// Changes that both predicates let through.
    #[must_use]
    pub fn and(self, other: Self) -> Self {
        let name = format!("{} and {}", self.name, other.name);
        Self::new(name, move |change| {
            self.allows(change) && other.allows(change)
        })
    }

    /// Whether `change` enqueues its keys.
    pub fn allows(&self, change: &Change<'_, T>) -> bool {
        (self.allows)(change)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A map that is absent or empty is the same as no map.
fn non_empty<V>(
    map: Option<&std::collections::BTreeMap<String, V>>,
) -> Option<&std::collections::BTreeMap<String, V>> {
    map.filter(|m| !m.is_empty())
}

/// Whether every predicate lets `change` through (none: everything passes).
pub(crate) fn all_allow<T: Object>(predicates: &[Predicate<T>], change: &Change<'_, T>) -> bool {
    predicates.iter().all(|p| p.allows(change))
}

/// A source's handler behind its predicates: the events they let through reach `inner`.
pub(crate) struct Filtered<H, T> {
    pub(crate) inner: H,
    pub(crate) predicates: Vec<Predicate<T>>,
}

impl<T: Object, H: ResourceEventHandler<T>> ResourceEventHandler<T> for Filtered<H, T> {
    fn on_add(&self, obj: &Arc<T>, is_in_initial_list: bool) {
        if all_allow(&self.predicates, &Change::Added(&**obj)) {
            self.inner.on_add(obj, is_in_initial_list);
        }
    }
    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        let change = Change::Updated {
            old: &**old,
            new: &**new,
        };
        if all_allow(&self.predicates, &change) {
            self.inner.on_update(old, new);
        }
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<T>) {
        if all_allow(&self.predicates, &Change::Deleted(obj)) {
            self.inner.on_delete(obj);
        }
    }
    fn name(&self) -> &str {
        self.inner.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::{DeletedFinalStateUnknown, DynamicObject};

    fn object(generation: Option<i64>) -> DynamicObject {
        let mut o = DynamicObject::new(Some("ns"), "a");
        o.metadata.generation = generation;
        o
    }

    #[test]
    fn generation_changed_lets_spec_changes_and_deletion_through() {
        let p = Predicate::<DynamicObject>::generation_changed();
        let old = object(Some(1));
        let mut status = old.clone();
        status.data.insert("status".into(), serde_json::json!({}));
        assert!(!p.allows(&Change::Updated {
            old: &old,
            new: &status
        }));
        assert!(p.allows(&Change::Updated {
            old: &old,
            new: &object(Some(2))
        }));
        let mut deleting = old.clone();
        deleting.metadata.deletion_timestamp = Some("2025-01-01T00:00:00Z".into());
        assert!(p.allows(&Change::Updated {
            old: &old,
            new: &deleting
        }));
        // Without a generation nothing can be told: every update passes.
        assert!(p.allows(&Change::Updated {
            old: &object(None),
            new: &object(None)
        }));
        assert!(p.allows(&Change::Added(&old)));
        let gone = ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
            key: kcache_store::ObjectKey::new(Some("ns"), "a"),
            obj: None,
        });
        assert!(p.allows(&Change::Deleted(&gone)));
    }

    #[test]
    fn labels_and_annotations_changed_compare_their_maps() {
        let labels = Predicate::<DynamicObject>::labels_changed();
        let annotations = Predicate::<DynamicObject>::annotations_changed();
        let old = object(Some(1));
        let mut labelled = old.clone();
        labelled
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("app".into(), "web".into());
        let mut empty = old.clone();
        empty.metadata.labels = Some(std::collections::BTreeMap::default());
        let update = |new| Change::Updated { old: &old, new };
        assert!(labels.allows(&update(&labelled)));
        assert!(!labels.allows(&update(&empty)), "no map is an empty map");
        assert!(!annotations.allows(&update(&labelled)));
        let both = labels.clone().and(annotations.clone());
        assert!(!both.allows(&update(&labelled)));
        assert!(labels.clone().or(annotations).allows(&update(&labelled)));
        assert_eq!(both.name(), "labels changed and annotations changed");
    }

    #[test]
    fn no_predicate_lets_everything_through() {
        let old = object(Some(1));
        assert!(all_allow(
            &[],
            &Change::Updated {
                old: &old,
                new: &old
            }
        ));
    }
}
