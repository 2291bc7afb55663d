//! The bottom of kcache: objects, keys, the [`Store`] and [`Indexer`] traits, a thread-safe
//! indexed cache, label and field selectors, and listers.
//!
//! Everything here is synchronous and free of I/O: it is the memory side of client-go's
//! `tools/cache`. Objects are shared as `Arc<T>` from the moment they are decoded; the cache, the
//! queues, the handlers and the listers hold the same allocation and nobody can mutate it.
//!
//! Every other kcache crate builds on this one: `kcache-queue` and `kcache-reflector` write into
//! a [`Store`], `kcache-informer` reads through an [`Indexer`].
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use kcache_store::{Cache, DynamicObject, Indexer, Indexers, Lister, Store};
//!
//! // An index by node name, next to the usual one by namespace.
//! let indexers = Indexers::new().with_namespace().with("node", |pod: &DynamicObject| {
//!     Ok(pod.data["spec"]["nodeName"].as_str().map(str::to_owned).into_iter().collect())
//! });
//! let cache = Arc::new(Cache::with_indexers(indexers));
//!
//! for (name, node) in [("a", "n1"), ("b", "n1"), ("c", "n2")] {
//!     let pod: DynamicObject = serde_json::from_value(serde_json::json!({
//!         "apiVersion": "v1", "kind": "Pod",
//!         "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
//!         "spec": {"nodeName": node},
//!     }))?;
//!     cache.add(Arc::new(pod))?;
//! }
//!
//! assert_eq!(cache.index_keys("node", "n1")?, ["default/a", "default/b"]);
//! let lister = Lister::new(cache.clone());
//! assert_eq!(lister.namespace("default").list(&"app=web".parse()?).len(), 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! - `k8s-openapi` (off by default): implements [`Object`] for every k8s-openapi type whose
//!   metadata is `ObjectMeta`, and adds [`ApiResource::of`]. Libraries never pick a k8s-openapi
//!   version feature; applications do.
//!
// An item behind a feature is linked where it exists; without the feature, to its type.
#![cfg_attr(not(feature = "k8s-openapi"), doc = "[`ApiResource::of`]: ApiResource")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc(test(attr(deny(warnings))))]

mod api_resource;
mod cache;
mod compact;
mod dynamic_object;
mod error;
mod expected_type;
mod field_selector;
mod indexer;
#[cfg(feature = "k8s-openapi")]
mod k8s_openapi;
mod key;
mod lister;
mod managed_fields;
mod meta;
mod nesting;
mod object;
mod object_metadata;
mod owner_reference;
mod partial_object_metadata;
mod resource_version;
mod selector;
mod store;
mod thread_safe_store;
mod tombstone;
mod transaction;
mod transform;

pub use self::api_resource::ApiResource;
pub use self::cache::Cache;
pub use self::compact::{Compact, CompactCodec, CompactMetadata, JsonPointer, PayloadFormat};
pub use self::dynamic_object::DynamicObject;
pub use self::error::{BoxError, Error, KeyError, Result, SelectorError};
pub use self::expected_type::ExpectedType;
pub use self::field_selector::{FieldRequirement, FieldSelector};
pub use self::indexer::{IndexFunc, Indexer, Indexers, NAMESPACE_INDEX, namespace_index_func};
pub use self::key::{
    KeyFunc, ObjectKey, default_key_func, meta_namespace_key, split_meta_namespace_key,
};
pub use self::lister::{Lister, NamespaceLister};
pub use self::managed_fields::ClearManagedFields;
pub use self::meta::ObjectMeta;
pub use self::nesting::{MAX_NESTING, nesting_exceeds};
pub use self::object::Object;
pub use self::object_metadata::ObjectMetadata;
pub use self::owner_reference::OwnerReference;
pub use self::partial_object_metadata::{META_V1, PARTIAL_OBJECT_METADATA, PartialObjectMetadata};
pub use self::resource_version::LastResourceVersion;
pub use self::selector::{Operator, Requirement, Selector};
pub use self::store::{KnownObjects, Store};
pub use self::thread_safe_store::ThreadSafeStore;
pub use self::tombstone::{DeletedFinalStateUnknown, ObjectOrTombstone, deletion_handling_key};
pub use self::transaction::{Transaction, TransactionError};
pub use self::transform::TransformFn;
