//! [`HttpLeaseLock`]: leader election's [`LeaseLock`] over a `coordination.k8s.io/v1` Lease,
//! read and written through an [`ObjectClient`]; the [`LeaseRecord`] is mapped to and from the
//! Lease's `spec` by hand, so no k8s-openapi type is needed.

use std::fmt;
use std::sync::{Mutex, PoisonError};

use kcache_reflector::{DecodeError, Error, LeaseLock, LeaseRecord, ObjectRef, VersionedLease};
use kcache_store::{DynamicObject, Object};
use serde_json::{Map, Value};

use crate::{ApiResource, Client, ObjectClient};

/// The API version of the Leases written.
const LEASE_API_VERSION: &str = "coordination.k8s.io/v1";

/// A [`LeaseLock`] on the Lease `name` in `namespace`: what leader election in
/// `kcache-informer` runs on over HTTP (client-go's `resourcelock.LeaseLock`).
///
/// `update` replaces the Lease with `metadata.resourceVersion` set to the version the caller
/// read, so the server answers 409 `Conflict` ([`Error::is_conflict`]) when another candidate
/// wrote it in between. It starts from the Lease as this lock last read or wrote it (or reads
/// it again when the version given is another one), and changes only the five fields of the
/// record in its `spec`: labels, annotations, owner references and other `spec` fields
/// (`preferredHolder`, `strategy`) are kept.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::SystemTime;
/// use kcache_client_http::{ApiResource, Client, Config, HttpLeaseLock};
/// use kcache_reflector::{LeaseLock, LeaseRecord};
/// use kcache_testing_server::{FakeApiServer, ServedResource};
///
/// let leases = ApiResource::new("coordination.k8s.io", "v1", "leases", true);
/// let server = FakeApiServer::builder()
///     .resource(ServedResource::new(leases, "Lease"))
///     .start()
///     .await?;
/// let client = Client::new(Config::new(server.url().parse()?))?;
/// let lock = HttpLeaseLock::new(client, "kube-system", "my-controller");
///
/// assert!(lock.get().await?.is_none());
/// let held = lock.create(&LeaseRecord::held_by("pod-a", 15, SystemTime::now())).await?;
/// let mut renewed = held.record.clone();
/// renewed.renew_time = Some(kcache_reflector::micro_time(SystemTime::now()));
/// let now = lock.update(&held, &renewed).await?;
/// assert_eq!(now.record.holder(), Some("pod-a"));
/// assert_ne!(now.resource_version, held.resource_version);
/// # Ok(())
/// # }
/// ```
pub struct HttpLeaseLock {
    leases: ObjectClient<DynamicObject>,
    name: String,
    /// The Lease as last read or written, which `update` starts from.
    last: Mutex<Option<DynamicObject>>,
}

impl fmt::Debug for HttpLeaseLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpLeaseLock")
            .field("lease", &self.describe())
            .field("client", &self.leases)
            .finish_non_exhaustive()
    }
}

impl HttpLeaseLock {
    /// A lock on the Lease `name` in `namespace`, through `client`.
    pub fn new(client: Client, namespace: &str, name: &str) -> Self {
        let leases = ApiResource::new("coordination.k8s.io", "v1", "leases", true);
        Self {
            leases: ObjectClient::builder(client, leases)
                .namespace(namespace)
                .build(),
            name: name.to_owned(),
            last: Mutex::new(None),
        }
    }

    /// The Lease's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Lease's namespace.
    pub fn namespace(&self) -> &str {
        self.leases.namespace().unwrap_or_default()
    }

    /// Keeps `lease` as the base of the next update and returns its versioned record.
    fn remember(&self, lease: DynamicObject) -> Result<VersionedLease, Error> {
        let versioned = versioned(&lease)?;
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(lease);
        Ok(versioned)
    }

    /// The Lease last read or written, if it is at `resource_version`.
    fn last_at(&self, resource_version: &str) -> Option<DynamicObject> {
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .filter(|lease| lease.resource_version() == Some(resource_version))
            .cloned()
    }

    /// A new Lease object with only its name and namespace.
    fn blank(&self) -> DynamicObject {
        let mut lease = DynamicObject::new(Some(self.namespace()), &self.name);
        lease.api_version = Some(LEASE_API_VERSION.to_owned());
        lease.kind = Some("Lease".to_owned());
        lease
    }
}

#[async_trait::async_trait]
impl LeaseLock for HttpLeaseLock {
    fn describe(&self) -> String {
        format!("{}/{}", self.namespace(), self.name)
    }

    async fn get(&self) -> Result<Option<VersionedLease>, Error> {
        match self.leases.get(&self.name).await? {
            Some(lease) => self.remember(lease).map(Some),
            None => Ok(None),
        }
    }

    async fn create(&self, record: &LeaseRecord) -> Result<VersionedLease, Error> {
        let mut lease = self.blank();
        write_record(&mut lease, record);
        let created = self.leases.create(&lease).await?;
        self.remember(created)
    }

    async fn update(
        &self,
        current: &VersionedLease,
        record: &LeaseRecord,
    ) -> Result<VersionedLease, Error> {
        let base = self.last_at(&current.resource_version);
        let mut lease = match base {
            Some(lease) => lease,
            // Another version than this lock saw: the server's copy keeps what is not ours
            // (still conditional on `current`, so a newer one fails with a conflict).
            None => self
                .leases
                .get(&self.name)
                .await?
                .unwrap_or_else(|| self.blank()),
        };
        lease.metadata.resource_version = Some(current.resource_version.clone());
        write_record(&mut lease, record);
        let written = self.leases.replace(&lease).await?;
        self.remember(written)
    }
}

/// The record and resource version of `lease`.
fn versioned(lease: &DynamicObject) -> Result<VersionedLease, Error> {
    let invalid = |reason: &str| {
        let object = ObjectRef::new(
            lease.namespace(),
            lease.name().unwrap_or_default(),
            lease.resource_version().unwrap_or_default(),
        );
        Error::decode(DecodeError::new("lease", reason).with_object(Some(object)))
    };
    let resource_version = lease
        .resource_version()
        .filter(|rv| !rv.is_empty())
        .ok_or_else(|| invalid("it has no metadata.resourceVersion"))?
        .to_owned();
    let record = match lease.data.get("spec") {
        None | Some(Value::Null) => LeaseRecord::default(),
        Some(Value::Object(spec)) => read_record(spec)
            .map_err(|field| invalid(&format!("spec.{field} is not of the type a Lease has")))?,
        Some(_) => return Err(invalid("spec is not an object")),
    };
    Ok(VersionedLease {
        record,
        resource_version,
    })
}

/// The record in a Lease's `spec`; `Err` names the first field of the wrong type.
fn read_record(spec: &Map<String, Value>) -> Result<LeaseRecord, &'static str> {
    fn string(
        spec: &Map<String, Value>,
        field: &'static str,
    ) -> Result<Option<String>, &'static str> {
        match spec.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(field),
        }
    }
    fn int(spec: &Map<String, Value>, field: &'static str) -> Result<Option<i32>, &'static str> {
        match spec.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .map(Some)
                .ok_or(field),
        }
    }
    let mut record = LeaseRecord::default();
    record.holder_identity = string(spec, "holderIdentity")?;
    record.lease_duration_seconds = int(spec, "leaseDurationSeconds")?;
    record.acquire_time = string(spec, "acquireTime")?;
    record.renew_time = string(spec, "renewTime")?;
    record.lease_transitions = int(spec, "leaseTransitions")?;
    Ok(record)
}

/// Writes `record` into `lease`'s `spec`, keeping its other fields; a field the record does
/// not set is removed.
fn write_record(lease: &mut DynamicObject, record: &LeaseRecord) {
    let spec = lease
        .data
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if !spec.is_object() {
        *spec = Value::Object(Map::new());
    }
    let Value::Object(spec) = spec else {
        return;
    };
    let mut set = |field: &str, value: Option<Value>| match value {
        Some(v) => {
            spec.insert(field.to_owned(), v);
        }
        None => {
            spec.remove(field);
        }
    };
    set(
        "holderIdentity",
        record.holder_identity.clone().map(Value::from),
    );
    set(
        "leaseDurationSeconds",
        record.lease_duration_seconds.map(Value::from),
    );
    set("acquireTime", record.acquire_time.clone().map(Value::from));
    set("renewTime", record.renew_time.clone().map(Value::from));
    set(
        "leaseTransitions",
        record.lease_transitions.map(Value::from),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lease(spec: &Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": LEASE_API_VERSION, "kind": "Lease",
            "metadata": {"name": "l", "namespace": "ns", "resourceVersion": "5"},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn records_map_to_the_spec_and_back() {
        let mut record = LeaseRecord::default();
        record.holder_identity = Some("a".into());
        record.lease_duration_seconds = Some(15);
        record.acquire_time = Some("2026-01-01T00:00:00.000000Z".into());
        record.renew_time = Some("2026-01-01T00:00:05.000000Z".into());
        record.lease_transitions = Some(2);
        let mut l = lease(&json!({"preferredHolder": "b", "holderIdentity": "old"}));
        write_record(&mut l, &record);
        assert_eq!(
            l.data["spec"],
            json!({
                "preferredHolder": "b", "holderIdentity": "a", "leaseDurationSeconds": 15,
                "acquireTime": "2026-01-01T00:00:00.000000Z",
                "renewTime": "2026-01-01T00:00:05.000000Z", "leaseTransitions": 2,
            })
        );
        let v = versioned(&l).unwrap();
        assert_eq!((v.record, v.resource_version.as_str()), (record, "5"));
    }

    #[test]
    fn a_released_record_removes_its_fields() {
        let mut l = lease(&json!({"holderIdentity": "a", "leaseTransitions": 1}));
        write_record(&mut l, &LeaseRecord::default());
        assert_eq!(l.data["spec"], json!({}));
        let mut l = lease(&Value::Null);
        assert_eq!(versioned(&l).unwrap().record, LeaseRecord::default());
        write_record(
            &mut l,
            &LeaseRecord::held_by("x", 10, std::time::UNIX_EPOCH),
        );
        assert_eq!(l.data["spec"]["holderIdentity"], "x");
    }

    #[test]
    fn a_spec_of_the_wrong_shape_is_a_decode_error_without_its_values() {
        let e = versioned(&lease(&json!({"holderIdentity": 7}))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "could not decode lease (ns/l at resourceVersion 5): spec.holderIdentity is not of \
             the type a Lease has"
        );
        let e = versioned(&lease(&json!({"leaseDurationSeconds": 1e12}))).unwrap_err();
        assert!(e.to_string().contains("spec.leaseDurationSeconds"), "{e}");
        let e = versioned(&lease(&json!("x"))).unwrap_err();
        assert!(e.to_string().ends_with("spec is not an object"), "{e}");
        let mut l = lease(&json!({}));
        l.metadata.resource_version = None;
        assert!(
            versioned(&l)
                .unwrap_err()
                .to_string()
                .contains("resourceVersion")
        );
    }
}
