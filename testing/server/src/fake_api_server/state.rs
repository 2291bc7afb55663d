//! The server's state: objects per resource, one global resource-version counter, a bounded event
//! history per resource, the registered watchers and the pending faults.

mod crds;
mod lifecycle;

use std::borrow::Cow;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use kcache_store::DynamicObject;
use kcache_testing::generated::{rfc3339, suffix, uuid};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use self::lifecycle::Ownership;
pub(crate) use self::lifecycle::{Deleted, Propagation};
use super::apply;
use super::crd_schema;
use super::defaults;
use super::faults::{Fault, FaultKind, RequestShape, UndecodableEvent, Verb};
use super::field_manager::{FieldManager, Operation};
use super::managed_fields;
use super::namespaces::{self, INITIAL_NAMESPACES, default_namespace};
use super::openapi::Documents;
use super::patch::{self, PatchType};
use super::preconditions::Preconditions;
use super::remaining::RemainingCounts;
use super::schema;
use super::served_resource::{ResourceId, ServedResource};
use super::status::ApiError;
use super::stored::Stored;
use super::util::now_secs;

/// Mixed into the server's seed for the names and uids it generates.
const UID_STREAM: u64 = 0x5e7e_c0de_0000_0001;

/// Tunables fixed at start (see [`FakeApiServerBuilder`](super::FakeApiServerBuilder)).
#[derive(Debug, Clone)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent feature switches"
)]
pub(crate) struct Config {
    pub(crate) history_limit: usize,
    pub(crate) bookmark_interval: Duration,
    pub(crate) default_watch_timeout: Duration,
    pub(crate) too_large_wait: Duration,
    pub(crate) watch_list: bool,
    pub(crate) watch_list_defaulting: bool,
    pub(crate) watcher_buffer: usize,
    pub(crate) rv0_ignores_limit: bool,
    pub(crate) not_found_as_status: bool,
    pub(crate) max_connections: usize,
    /// The `SETTINGS_MAX_CONCURRENT_STREAMS` of each HTTP/2 connection.
    pub(crate) http2_max_concurrent_streams: u32,
    pub(crate) request_log_limit: usize,
    pub(crate) watch_frames: super::WatchFrames,
    /// Encode every written object in protobuf as it is stored (see
    /// `FakeApiServerBuilder::protobuf_on_write`).
    pub(crate) protobuf_on_write: bool,
    /// Whether `shardSelector` is served (see `FakeApiServerBuilder::sharded_list_watch`).
    pub(crate) sharded_list_watch: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            history_limit: 1000,
            bookmark_interval: Duration::from_secs(60),
            default_watch_timeout: Duration::from_secs(1800),
            too_large_wait: Duration::from_secs(3),
            watch_list: true,
            watch_list_defaulting: false,
            watcher_buffer: 1024,
            rv0_ignores_limit: true,
            not_found_as_status: false,
            max_connections: 512,
            http2_max_concurrent_streams: 1000,
            request_log_limit: 10_000,
            protobuf_on_write: false,
            sharded_list_watch: true,
            watch_frames: super::WatchFrames::default(),
        }
    }
}

/// The type of a stored change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change in a resource's history.
#[derive(Debug)]
pub(crate) struct Event {
    pub(crate) rv: u64,
    pub(crate) kind: EventType,
    pub(crate) key: String,
    /// The new state; for DELETED the last state with the deletion's RV.
    pub(crate) obj: Arc<Stored>,
    /// The state before the change (None for ADDED).
    pub(crate) prev: Option<Arc<Stored>>,
}

/// Stored objects by key (`ns/name`), in key order.
pub(crate) type Objects = BTreeMap<String, Arc<Stored>>;

/// One registered resource.
#[derive(Debug)]
pub(crate) struct ResourceState {
    pub(crate) resource: ServedResource,
    pub(crate) objects: Objects,
    pub(crate) history: VecDeque<Arc<Event>>,
    /// Every event with an RV up to this one is gone: resuming from an older RV gives 410.
    pub(crate) compacted_rv: u64,
    pub(crate) watchers: Vec<mpsc::Sender<Arc<Event>>>,
    /// `remainingItemCount`s of recent list pages.
    pub(crate) remaining: RemainingCounts,
    /// The objects at [`State::latest_as_of`], made once when it is set (every page of a list
    /// and every watch-list reads them).
    pub(crate) as_of: Option<(u64, Arc<Objects>)>,
}

/// One logged request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// HTTP method.
    pub method: String,
    /// URL path.
    pub path: String,
    /// Decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    /// `HTTP/1.1` or `HTTP/2.0`.
    pub version: String,
    /// The `Impersonate-*` headers, names in lower case, in the order received.
    pub impersonation: Vec<(String, String)>,
    /// The `Accept` header, if sent.
    pub accept: Option<String>,
}

impl RequestRecord {
    /// The value of query parameter `name`, if sent.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this was a watch request.
    pub fn is_watch(&self) -> bool {
        self.path.contains("/watch/")
            || self
                .param(super::params::query::WATCH)
                .is_some_and(super::params::truthy)
    }
}

/// Everything behind the lock.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) rv: u64,
    pub(crate) resources: BTreeMap<ResourceId, ResourceState>,
    pub(crate) faults: Vec<Fault>,
    /// The events undecodable-event faults broke, in order.
    pub(crate) undecodable: Vec<UndecodableEvent>,
    /// Continue tokens whose snapshot RV is below this are expired.
    pub(crate) token_floor: u64,
    /// Serve `resourceVersion=0` reads from this older RV (HA time travel).
    pub(crate) stale_rv0: Option<u64>,
    /// Serve reads of the latest state as the state at this RV, with every later change
    /// queued behind it (see `FakeApiServer::set_latest_as_of`).
    pub(crate) latest_as_of: Option<u64>,
    pub(crate) rng: fastrand::Rng,
    pub(crate) log: VecDeque<RequestRecord>,
    /// Resources registered so far: the `OpenAPI` documents below describe those of this count.
    pub(crate) registrations: u64,
    /// The `OpenAPI` documents of the registered resources, once asked for (dropped when one is
    /// registered; see [`discovery`](super::discovery)).
    pub(crate) openapi: Option<Arc<Documents>>,
    /// The manager of the HTTP write in progress ([`as_manager`](State::as_manager)), whose
    /// `managedFields` it records; none for the Rust handle's writes.
    pub(crate) field_manager: Option<FieldManager>,
    /// While set, writes are checked and answered but nothing is stored, no resource version is
    /// taken and no event is sent (`dryRun=All`).
    pub(crate) dry_run: bool,
    /// Objects by uid and their dependents (garbage collection).
    ownership: Ownership,
    /// Cluster IPs given to services so far (see [`allocate_ip`](Self::allocate_ip)).
    service_ips: u32,
    /// Removals whose consequences (collected dependents, finished namespaces) are still to
    /// follow: a worklist, so that a deep ownership chain never deepens the stack.
    removals: VecDeque<(ResourceId, Arc<Stored>)>,
    /// Whether the worklist is being worked through (a removal made meanwhile only joins it).
    following_removals: bool,
    history_limit: usize,
    /// Encode each stored object in protobuf when it is written (`Config::protobuf_on_write`).
    protobuf_on_write: bool,
}

/// What the server tasks share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) config: Config,
    /// The current global RV, for waiters (`NotOlderThan` above current).
    pub(crate) rv_tx: watch::Sender<u64>,
    /// Bumped by `send_bookmark()`: every bookmark-enabled watch sends one.
    pub(crate) bookmark_tx: watch::Sender<u64>,
    /// `true` while watch delivery is paused (`pause_watches()`).
    pub(crate) paused_tx: watch::Sender<bool>,
    pub(crate) cancel: CancellationToken,
    /// Connections accepted so far (refused ones not counted).
    pub(crate) accepted: AtomicU64,
}

impl Shared {
    /// The state of a new server: `resources` registered, the initial namespaces made.
    ///
    /// # Errors
    ///
    /// 500 if an initial namespace cannot be encoded (it always can).
    pub(crate) fn new(
        config: Config,
        resources: Vec<ServedResource>,
        seed: u64,
    ) -> Result<Self, ApiError> {
        let mut state = State {
            rv: 1,
            resources: BTreeMap::new(),
            faults: Vec::new(),
            undecodable: Vec::new(),
            token_floor: 0,
            stale_rv0: None,
            latest_as_of: None,
            // A stream of its own: the workload generators (`kcache_testing::workload`) draw
            // their owner references' uids with the same function, and from the same seed
            // their uids and the server's would coincide, making some pods owners of others.
            rng: fastrand::Rng::with_seed(seed ^ UID_STREAM),
            log: VecDeque::new(),
            registrations: 0,
            openapi: None,
            field_manager: None,
            dry_run: false,
            ownership: Ownership::default(),
            service_ips: 0,
            removals: VecDeque::new(),
            following_removals: false,
            history_limit: config.history_limit.max(1),
            protobuf_on_write: config.protobuf_on_write,
        };
        for r in resources {
            state.register(r);
        }
        for ns in INITIAL_NAMESPACES {
            if let Some(namespace) = state.new_namespace(ns, state.rv)? {
                state.add_namespace(ns, namespace);
            }
        }
        Ok(Self {
            state: Mutex::new(state),
            config,
            rv_tx: watch::Sender::new(1),
            bookmark_tx: watch::Sender::new(0),
            paused_tx: watch::Sender::new(false),
            cancel: CancellationToken::new(),
            accepted: AtomicU64::new(0),
        })
    }

    /// Locks the state. Never held across an `.await`.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs a mutation and publishes the new global RV.
    pub(crate) fn mutate<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut state = self.lock();
        let out = f(&mut state);
        self.rv_tx.send_if_modified(|rv| {
            let changed = *rv != state.rv;
            *rv = state.rv;
            changed
        });
        out
    }

    /// Runs a mutation as a dry run when `dry_run` is set: checked and answered as it would
    /// be, with nothing stored and no event (see [`State::dry_run`]).
    pub(crate) fn mutate_maybe_dry<T>(&self, dry_run: bool, f: impl FnOnce(&mut State) -> T) -> T {
        if !dry_run {
            return self.mutate(f);
        }
        let mut state = self.lock();
        state.dry_run = true;
        let out = f(&mut state);
        state.dry_run = false;
        out
    }
}

/// The store key: `ns/name`, or `name` for cluster-scoped objects.
pub(crate) fn key_of(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}

fn finalizers_empty(obj: &DynamicObject) -> bool {
    obj.metadata
        .other
        .get("finalizers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}

/// The result of registering a watch under the lock.
#[derive(Debug)]
pub(crate) struct WatchSetup {
    /// Objects for synthetic ADDED events (state at `snapshot_rv`), in key order.
    pub(crate) initial: Vec<Arc<Stored>>,
    pub(crate) snapshot_rv: u64,
    /// History events after the requested RV.
    pub(crate) replay: Vec<Arc<Event>>,
    pub(crate) rx: mpsc::Receiver<Arc<Event>>,
}

/// The stored object an update or delete acts on, as [`State::existing`] finds it.
struct Existing<'n> {
    /// The namespace as it applies to the resource: `None` when cluster-scoped.
    namespace: Option<&'n str>,
    /// The store key.
    key: String,
    /// The stored object.
    old: Arc<Stored>,
}

impl State {
    /// Runs `write` as an HTTP write by `manager`: `managedFields` are recorded (see
    /// [`managed_fields`]) and an apply is one with field ownership (see [`apply`]).
    pub(crate) fn as_manager<T>(
        &mut self,
        manager: FieldManager,
        write: impl FnOnce(&mut Self) -> T,
    ) -> T {
        self.field_manager = Some(manager);
        let out = write(self);
        self.field_manager = None;
        out
    }

    /// Serves `resource` from now on (nothing changes if it is served already).
    pub(crate) fn register(&mut self, resource: ServedResource) {
        if let Entry::Vacant(slot) = self.resources.entry(resource.id()) {
            slot.insert(ResourceState {
                resource,
                objects: BTreeMap::new(),
                history: VecDeque::new(),
                compacted_rv: 0,
                watchers: Vec::new(),
                remaining: RemainingCounts::default(),
                // Held at an older version, a resource registered since had nothing then.
                as_of: self.latest_as_of.map(|at| (at, Arc::new(Objects::new()))),
            });
            self.registrations += 1;
            self.openapi = None;
        }
    }

    pub(crate) fn resource(&self, id: &ResourceId) -> Result<&ResourceState, ApiError> {
        self.resources.get(id).ok_or_else(ApiError::page_not_found)
    }

    pub(crate) fn resource_mut(&mut self, id: &ResourceId) -> Result<&mut ResourceState, ApiError> {
        self.resources
            .get_mut(id)
            .ok_or_else(ApiError::page_not_found)
    }

    /// Takes one use of the first fault matching `verb` on `id` that can act on a request of
    /// `shape`.
    pub(crate) fn take_fault(
        &mut self,
        verb: Verb,
        id: &ResourceId,
        shape: RequestShape,
    ) -> Option<FaultKind> {
        let index = self
            .faults
            .iter()
            .position(|f| f.matches(verb, id, shape))?;
        let fault = &mut self.faults[index];
        let kind = fault.kind.clone();
        fault.times = fault.times.saturating_sub(1);
        if fault.times == 0 {
            self.faults.remove(index);
        }
        Some(kind)
    }

    pub(crate) fn log_request(&mut self, record: RequestRecord, limit: usize) {
        if self.log.len() >= limit.max(1) {
            self.log.pop_front();
        }
        self.log.push_back(record);
    }

    /// Records a change: bumps nothing (the caller already did), appends to the history, trims it,
    /// and fans the event out to the watchers, dropping any whose buffer is full.
    fn record(
        &mut self,
        id: &ResourceId,
        kind: EventType,
        key: String,
        obj: Arc<Stored>,
        prev: Option<Arc<Stored>>,
    ) {
        let limit = self.history_limit;
        let rv = self.rv;
        let Some(rs) = self.resources.get_mut(id) else {
            return;
        };
        let event = Arc::new(Event {
            rv,
            kind,
            key,
            obj,
            prev,
        });
        rs.history.push_back(event.clone());
        while rs.history.len() > limit {
            if let Some(old) = rs.history.pop_front() {
                rs.compacted_rv = old.rv;
            }
        }
        rs.watchers.retain(|tx| tx.try_send(event.clone()).is_ok());
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    /// Creates an object. `url_namespace` comes from the request path, if any.
    pub(crate) fn create(
        &mut self,
        id: &ResourceId,
        url_namespace: Option<&str>,
        mut obj: DynamicObject,
    ) -> Result<Arc<Stored>, ApiError> {
        let resource = self.resource(id)?.resource.clone();
        let namespace = if resource.api.namespaced {
            match (url_namespace, obj.metadata.namespace.as_deref()) {
                (Some(u), Some(b)) if !b.is_empty() && u != b => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent \
                         on the request",
                    ));
                }
                (Some(u), _) => Some(u.to_owned()),
                (None, Some(b)) if !b.is_empty() => Some(b.to_owned()),
                _ => Some("default".to_owned()),
            }
        } else {
            None
        };
        if let Some(ns) = &namespace {
            namespaces::check_name(ns)?;
            if self.namespace_terminating(ns) {
                return Err(namespaces::terminating(
                    &resource,
                    obj.metadata.name.as_deref(),
                    ns,
                ));
            }
        }
        obj.metadata.namespace.clone_from(&namespace);
        if obj.metadata.name.as_deref().is_none_or(str::is_empty) {
            let Some(prefix) = obj
                .metadata
                .other
                .get("generateName")
                .and_then(Value::as_str)
                .map(str::to_owned)
            else {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    &format!(
                        "{} \"\" is invalid: metadata.name: Required value: name or \
                         generateName is required",
                        resource.kind
                    ),
                ));
            };
            obj.metadata.name = Some(format!("{prefix}{}", suffix(&mut self.rng)));
        }
        let name = obj.metadata.name.clone().unwrap_or_default();
        let key = key_of(namespace.as_deref(), &name);
        if self.resource(id)?.objects.contains_key(&key) {
            return Err(ApiError::already_exists(&resource.qualified(), &name));
        }
        obj.api_version = Some(resource.api.api_version());
        obj.kind = Some(resource.kind.clone());
        obj.metadata.uid = Some(uuid(&mut self.rng));
        obj.metadata.creation_timestamp = Some(rfc3339(now_secs()));
        obj.metadata.generation = resource.generation.then_some(1);
        obj.metadata.deletion_timestamp = None;
        if let Some(manager) = &self.field_manager {
            // An HTTP write: the status goes through its subresource, and the kind's defaults
            // are set (the Rust handle stores what it is given).
            if manager.status_subresource {
                obj.data.remove("status");
            }
            defaults::apply(&resource, &mut obj, true, &mut || self.allocate_ip());
            crd_schema::admit(&resource, &name, &mut obj)?;
        }
        if *id == *NAMESPACES {
            default_namespace(&mut obj);
        }
        managed_fields::record(self.field_manager.as_ref(), None, &mut obj);
        // The namespace the object is created in comes to exist with it, at the RV the write
        // is about to take; made first, so that the write happens whole or not at all.
        let new_namespace = match &namespace {
            Some(ns) if !self.dry_run => self.new_namespace(ns, self.rv + 1)?,
            _ => None,
        };
        let stored = self.commit(id, EventType::Added, key, obj, None)?;
        if let (Some(ns), Some(new_namespace)) = (&namespace, new_namespace) {
            self.add_namespace(ns, new_namespace);
        }
        Ok(stored)
    }

    /// Namespace `name` as it would come to exist at `rv`, if the server serves namespaces and
    /// has none of that name: the namespace an object is created in comes to exist with it, at
    /// the same resource version (one write, as etcd would commit two keys in one
    /// transaction), so the resource versions of the objects a test writes do not depend on
    /// which namespaces existed before. It stays after them (see
    /// [`namespaces`](super::namespaces)).
    fn new_namespace(&self, name: &str, rv: u64) -> Result<Option<Arc<Stored>>, ApiError> {
        match self.resources.get(&*NAMESPACES) {
            Some(rs) if !rs.objects.contains_key(name) => {
                namespaces::namespace_object(&rs.resource, name, rv).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Stores a namespace that [`new_namespace`](Self::new_namespace) made, with its ADDED
    /// event (none at start, RV 1: the initial namespaces are the initial state).
    fn add_namespace(&mut self, name: &str, namespace: Arc<Stored>) {
        let id = &*NAMESPACES;
        if let Some(rs) = self.resources.get_mut(id) {
            rs.objects.insert(name.to_owned(), namespace.clone());
        }
        if let Some(uid) = namespace.object.metadata.uid.as_deref() {
            self.ownership.add_live(uid, id, name);
        }
        if self.rv > 1 {
            self.record(id, EventType::Added, name.to_owned(), namespace, None);
        }
    }

    /// The stored object `name` of `id` that an update or delete acts on, with the namespace as
    /// it applies to the resource (`None` when cluster-scoped) and the store key; 404 Not Found
    /// if there is no such object.
    fn existing<'n>(
        &self,
        id: &ResourceId,
        namespace: Option<&'n str>,
        name: &str,
    ) -> Result<Existing<'n>, ApiError> {
        let rs = self.resource(id)?;
        let namespace = if rs.resource.api.namespaced {
            namespace
        } else {
            None
        };
        let key = key_of(namespace, name);
        let Some(old) = rs.objects.get(&key).cloned() else {
            return Err(ApiError::not_found(&rs.resource.qualified(), name));
        };
        Ok(Existing {
            namespace,
            key,
            old,
        })
    }

    /// Writes `obj` at the next RV: stores it under `key` (removes `key` for
    /// [`EventType::Deleted`]), records the event with `old` as the previous state and returns the
    /// written state. The new state is encoded here, once for everything that serves it.
    fn commit(
        &mut self,
        id: &ResourceId,
        kind: EventType,
        key: String,
        mut obj: DynamicObject,
        old: Option<Arc<Stored>>,
    ) -> Result<Arc<Stored>, ApiError> {
        let definition = *id == *CRDS;
        if definition && kind != EventType::Deleted {
            crds::served_of(&obj)?;
            crds::accept(&mut obj);
        }
        if self.dry_run {
            // Answered as written, at the version it had: nothing is stored.
            obj.metadata.resource_version = old
                .as_ref()
                .and_then(|o| o.object.metadata.resource_version.clone());
            return Stored::new(obj).map_err(super::status::internal);
        }
        if definition && kind == EventType::Deleted {
            self.delete_definition_objects(&obj)?;
        }
        let rv = self.next_rv();
        obj.metadata.resource_version = Some(rv.to_string());
        let obj = Stored::new(obj).map_err(super::status::internal)?;
        if self.protobuf_on_write {
            // Made now, with the write, as the JSON form is; a kind without one has none.
            let _ = obj.protobuf();
            let _ = obj.metadata_protobuf();
        }
        let objects = &mut self.resource_mut(id)?.objects;
        if kind == EventType::Deleted {
            objects.remove(&key);
        } else {
            objects.insert(key.clone(), obj.clone());
        }
        let owners_removed = self.ownership.track(
            id,
            &key,
            kind,
            &obj.object,
            old.as_ref().map(|o| &*o.object),
        );
        let old_definition = if definition { old.clone() } else { None };
        // Written with owners already gone: the collector deletes it, once the write is done.
        let orphaned = (kind != EventType::Deleted && owners_removed).then(|| key.clone());
        self.record(id, kind, key, obj.clone(), old);
        if definition {
            if kind == EventType::Deleted {
                for resource in crds::served_of(&obj.object).unwrap_or_default() {
                    self.unregister(&resource.id());
                }
            } else {
                let before = old_definition.as_deref().map(|o| &*o.object);
                self.definition_written(&obj.object, before);
            }
        }
        if kind == EventType::Deleted {
            self.removal_follows(id, &obj)?;
        } else if let Some(key) = orphaned {
            self.delete_stored(id, &key, Propagation::Background)?;
        }
        Ok(obj)
    }

    /// Replaces an object. A non-empty `metadata.resourceVersion` in `obj` must match the stored
    /// one (else 409 Conflict). A write that changes nothing keeps the RV and emits no event.
    pub(crate) fn update(
        &mut self,
        id: &ResourceId,
        namespace: Option<&str>,
        name: &str,
        obj: DynamicObject,
    ) -> Result<Arc<Stored>, ApiError> {
        let existing = self.existing(id, namespace, name)?;
        self.replace(id, name, existing, obj)
    }

    /// Replaces object `name` with what `f` makes of the stored one (and of the state: a
    /// service's defaults take a cluster IP from it), under one lock: status and scale writes,
    /// and patches over HTTP.
    pub(crate) fn update_with(
        &mut self,
        id: &ResourceId,
        namespace: Option<&str>,
        name: &str,
        f: impl FnOnce(&mut State, &DynamicObject) -> Result<DynamicObject, ApiError>,
    ) -> Result<Arc<Stored>, ApiError> {
        let existing = self.existing(id, namespace, name)?;
        let current = Arc::clone(&existing.old);
        let obj = f(self, &current.object)?;
        self.replace(id, name, existing, obj)
    }

    /// The next cluster IP of a service: `10.96.0.10` onwards (`10.96.0.1` is the API server's
    /// own service on a cluster), within `10.96.0.0/12`. A dry run takes none.
    pub(crate) fn allocate_ip(&mut self) -> String {
        let n = 10 + self.service_ips % 0x000f_fff0;
        if !self.dry_run {
            self.service_ips += 1;
        }
        format!("10.{}.{}.{}", 96 + (n >> 16), (n >> 8) & 0xff, n & 0xff)
    }

    /// Queues what follows the removal of `removed` from `id` and, unless the queue is already
    /// being worked through further up, works through it: each step may remove more objects,
    /// which join the queue instead of recursing.
    fn removal_follows(&mut self, id: &ResourceId, removed: &Arc<Stored>) -> Result<(), ApiError> {
        self.removals.push_back((id.clone(), Arc::clone(removed)));
        if self.following_removals {
            return Ok(());
        }
        self.following_removals = true;
        let mut result = Ok(());
        while let Some((id, removed)) = self.removals.pop_front() {
            result = self.after_removal(&id, &removed.object);
            if result.is_err() {
                self.removals.clear();
                break;
            }
        }
        self.following_removals = false;
        result
    }

    /// Replaces `existing`, object `name` of `id`, with `obj` (see [`update`](Self::update)).
    fn replace(
        &mut self,
        id: &ResourceId,
        name: &str,
        existing: Existing<'_>,
        mut obj: DynamicObject,
    ) -> Result<Arc<Stored>, ApiError> {
        let Existing {
            namespace,
            key,
            old,
        } = existing;
        let current = &*old.object;
        if let Some(manager) = &self.field_manager {
            // An HTTP write to the object keeps the stored status when the kind has a status
            // subresource, and gets the kind's defaults.
            if manager.status_subresource {
                obj = super::subresource::keep_status(current, obj);
            }
            let resource = self.resource(id)?.resource.clone();
            defaults::apply(&resource, &mut obj, false, &mut || self.allocate_ip());
            crd_schema::admit(&resource, name, &mut obj)?;
        }
        if obj.metadata.name.as_deref().is_some_and(|n| n != name) {
            return Err(name_mismatch(obj.metadata.name.as_deref(), name));
        }
        let resource = &self.resource(id)?.resource;
        let rv_mismatch = obj.metadata.resource_version.as_deref().is_some_and(|rv| {
            !rv.is_empty() && Some(rv) != current.metadata.resource_version.as_deref()
        });
        let uid_mismatch = obj
            .metadata
            .uid
            .as_deref()
            .is_some_and(|uid| !uid.is_empty() && Some(uid) != current.metadata.uid.as_deref());
        if rv_mismatch || uid_mismatch {
            return Err(ApiError::conflict(&resource.qualified(), name));
        }
        obj.api_version = Some(resource.api.api_version());
        obj.kind = Some(resource.kind.clone());
        obj.metadata.name = Some(name.to_owned());
        obj.metadata.namespace = namespace.map(str::to_owned);
        obj.metadata.uid.clone_from(&current.metadata.uid);
        obj.metadata
            .creation_timestamp
            .clone_from(&current.metadata.creation_timestamp);
        obj.metadata
            .deletion_timestamp
            .clone_from(&current.metadata.deletion_timestamp);
        obj.metadata
            .resource_version
            .clone_from(&current.metadata.resource_version);
        let spec_changed = obj
            .data
            .iter()
            .filter(|(k, _)| k.as_str() != "status")
            .ne(current.data.iter().filter(|(k, _)| k.as_str() != "status"));
        obj.metadata.generation = if resource.generation {
            Some(current.metadata.generation.unwrap_or(1) + i64::from(spec_changed))
        } else {
            current.metadata.generation
        };
        managed_fields::record(self.field_manager.as_ref(), Some(current), &mut obj);
        if obj == *current {
            return Ok(old);
        }
        let kind = if obj.metadata.deletion_timestamp.is_some() && finalizers_empty(&obj) {
            EventType::Deleted
        } else {
            EventType::Modified
        };
        self.commit(id, kind, key, obj, Some(old))
    }

    /// Deletes an object if `preconditions` hold (else 409 Conflict): with finalizers, marks it
    /// (MODIFIED); else removes it (DELETED with the last state and a new RV), and its
    /// dependents as `propagation` says (see [`lifecycle`]). A namespace is marked
    /// `Terminating` and goes once its contents are gone. Returns the object's final state.
    pub(crate) fn delete(
        &mut self,
        id: &ResourceId,
        namespace: Option<&str>,
        name: &str,
        preconditions: &Preconditions,
        propagation: Propagation,
    ) -> Result<Deleted, ApiError> {
        let Existing { key, old, .. } = self.existing(id, namespace, name)?;
        preconditions.check(&old.object, &self.resource(id)?.resource.qualified())?;
        self.delete_stored(id, &key, propagation)
    }

    /// Patches object `name` (see [`patch`](super::patch) for each type). An apply patch
    /// creates the object when there is none; the flag says whether it did.
    pub(crate) fn patch(
        &mut self,
        id: &ResourceId,
        namespace: Option<&str>,
        name: &str,
        patch_type: PatchType,
        body: &Value,
    ) -> Result<(Arc<Stored>, bool), ApiError> {
        let applier = (patch_type == PatchType::Apply)
            .then(|| self.field_manager.clone())
            .flatten()
            .filter(|m| m.operation == Operation::Apply);
        if patch_type == PatchType::Apply {
            check_applied_type(&self.resource(id)?.resource, body)?;
        }
        let existing = match self.existing(id, namespace, name) {
            Ok(existing) => existing,
            Err(e) if e.code == 404 && patch_type == PatchType::Apply => {
                let mut obj: DynamicObject = match &applier {
                    Some(m) => apply::apply_now(None, body, m, &self.resource(id)?.resource)?,
                    None => serde_json::from_value(body.clone()).map_err(|e| {
                        ApiError::bad_request(&format!("the applied object is not an object: {e}"))
                    })?,
                };
                if obj.metadata.name.as_deref().is_some_and(|n| n != name) {
                    return Err(name_mismatch(obj.metadata.name.as_deref(), name));
                }
                obj.metadata.name = Some(name.to_owned());
                return self.create(id, namespace, obj).map(|s| (s, true));
            }
            Err(e) => return Err(e),
        };
        let schema = schema::for_resource(&self.resource(id)?.resource);
        let obj = match &applier {
            Some(m) => apply::apply_now(
                Some(&existing.old.object),
                body,
                m,
                &self.resource(id)?.resource,
            )?,
            None => patch::patched(schema, &existing.old.object, patch_type, body)?,
        };
        // Unlike a PUT body, which may leave the name out, a patched object must keep it.
        if obj.metadata.name.as_deref() != Some(name) {
            return Err(name_mismatch(obj.metadata.name.as_deref(), name));
        }
        self.replace(id, name, existing, obj).map(|s| (s, false))
    }

    pub(crate) fn get(
        &self,
        id: &ResourceId,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Arc<Stored>, ApiError> {
        let rs = self.resource(id)?;
        let namespace = if rs.resource.api.namespaced {
            namespace
        } else {
            None
        };
        rs.objects
            .get(&key_of(namespace, name))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rs.resource.qualified(), name))
    }

    /// The objects of `id` as they were at `rv`, or `None` if that RV was compacted.
    pub(crate) fn snapshot(
        &self,
        id: &ResourceId,
        rv: u64,
    ) -> Result<Option<Cow<'_, Objects>>, ApiError> {
        let rs = self.resource(id)?;
        if rs.history.back().is_none_or(|e| e.rv <= rv) && rv >= rs.compacted_rv {
            return Ok(Some(Cow::Borrowed(&rs.objects)));
        }
        if let Some((at, objects)) = &rs.as_of
            && *at == rv
        {
            return Ok(Some(Cow::Borrowed(objects)));
        }
        if rv < rs.compacted_rv {
            return Ok(None);
        }
        let mut objects = rs.objects.clone();
        for event in rs.history.iter().rev().take_while(|e| e.rv > rv) {
            match (&event.kind, &event.prev) {
                (EventType::Added, _) | (_, None) => {
                    objects.remove(&event.key);
                }
                (_, Some(prev)) => {
                    objects.insert(event.key.clone(), prev.clone());
                }
            }
        }
        Ok(Some(Cow::Owned(objects)))
    }

    /// Registers a watcher. `from`: `None` = synthetic ADDED for the current state, `Some(n)` =
    /// replay history after `n`. Err(Some(compacted)) when `n` is too old.
    pub(crate) fn register_watch(
        &mut self,
        id: &ResourceId,
        from: Option<u64>,
        buffer: usize,
    ) -> Result<Result<WatchSetup, u64>, ApiError> {
        let current = self.latest_as_of.unwrap_or(self.rv);
        let rs = self.resource_mut(id)?;
        let (initial, replay) = match (from, &rs.as_of) {
            (None, Some((at, objects))) if *at == current => (
                objects.values().cloned().collect(),
                rs.history
                    .iter()
                    .skip_while(|e| e.rv <= current)
                    .cloned()
                    .collect(),
            ),
            (None, _) => (rs.objects.values().cloned().collect(), Vec::new()),
            (Some(n), _) if n < rs.compacted_rv => return Ok(Err(rs.compacted_rv)),
            (Some(n), _) => (
                Vec::new(),
                rs.history
                    .iter()
                    .skip_while(|e| e.rv <= n)
                    .cloned()
                    .collect(),
            ),
        };
        let (tx, rx) = mpsc::channel(buffer.max(1));
        rs.watchers.retain(|w| !w.is_closed());
        rs.watchers.push(tx);
        Ok(Ok(WatchSetup {
            initial,
            snapshot_rv: current,
            replay,
            rx,
        }))
    }

    /// Serves the latest state as the state at `rv` (see `FakeApiServer::set_latest_as_of`),
    /// or the latest again with `None`. Err(compacted) when `rv` is older than a history.
    pub(crate) fn set_latest_as_of(&mut self, rv: Option<u64>) -> Result<(), u64> {
        let Some(rv) = rv.map(|rv| rv.min(self.rv)) else {
            self.latest_as_of = None;
            for rs in self.resources.values_mut() {
                rs.as_of = None;
            }
            return Ok(());
        };
        let mut frozen = Vec::with_capacity(self.resources.len());
        for (id, rs) in &self.resources {
            match self.snapshot(id, rv) {
                Ok(Some(objects)) => frozen.push((id.clone(), Arc::new(objects.into_owned()))),
                _ => return Err(rs.compacted_rv),
            }
        }
        for (id, objects) in frozen {
            if let Some(rs) = self.resources.get_mut(&id) {
                rs.as_of = Some((rv, objects));
            }
        }
        self.latest_as_of = Some(rv);
        Ok(())
    }

    /// Drops every event up to `rv` from every history: older resumes and tokens get 410.
    pub(crate) fn compact(&mut self, rv: u64) {
        let rv = rv.min(self.rv);
        if self.latest_as_of.is_some_and(|at| at < rv) {
            // The changes queued behind it are gone: serve the latest again.
            self.latest_as_of = None;
            for rs in self.resources.values_mut() {
                rs.as_of = None;
            }
        }
        for rs in self.resources.values_mut() {
            while rs.history.front().is_some_and(|e| e.rv <= rv) {
                rs.history.pop_front();
            }
            rs.compacted_rv = rs.compacted_rv.max(rv);
        }
    }
}

/// The id of core v1 namespaces.
static NAMESPACES: LazyLock<ResourceId> = LazyLock::new(|| ServedResource::namespaces().id());

/// The id of custom resource definitions.
static CRDS: LazyLock<ResourceId> =
    LazyLock::new(|| ServedResource::customresourcedefinitions().id());

/// 400 for an object whose name is not the one on the URL.
/// The 400 for an object whose name is not its URL's.
pub(crate) fn name_mismatch(body: Option<&str>, url: &str) -> ApiError {
    ApiError::bad_request(&format!(
        "the name of the object ({}) does not match the name on the URL ({url})",
        body.unwrap_or_default()
    ))
}

/// 400 unless an applied object's `apiVersion` and `kind`, where set, are `resource`'s.
fn check_applied_type(resource: &ServedResource, body: &Value) -> Result<(), ApiError> {
    let field = |name: &str| body.get(name).and_then(Value::as_str);
    let api_version = resource.api.api_version();
    if field("kind").is_some_and(|k| k != resource.kind)
        || field("apiVersion").is_some_and(|v| v != api_version)
    {
        return Err(ApiError::bad_request(&format!(
            "the applied object is a {}/{}, the URL names {api_version}/{}",
            field("apiVersion").unwrap_or_default(),
            field("kind").unwrap_or_default(),
            resource.kind
        )));
    }
    Ok(())
}

/// Waits until the global RV reaches `rv`, up to the configured wait. Returns the current RV.
pub(crate) async fn wait_for_rv(shared: &Shared, rv: u64) -> Result<u64, u64> {
    let mut rx = shared.rv_tx.subscribe();
    let deadline = tokio::time::Instant::now() + shared.config.too_large_wait;
    loop {
        let current = *rx.borrow_and_update();
        if current >= rv {
            return Ok(current);
        }
        if tokio::time::timeout_at(deadline, rx.changed())
            .await
            .is_err()
        {
            return Err(current);
        }
    }
}
