//! [`HttpLeaseLock`]: leader election's [`LeaseLock`] over a `coordination.k8s.io/v1` Lease,
//! read and written through an [`ObjectClient`]; the [`LeaseRecord`] is mapped to and from the
//! Lease's `spec` JSON by [`LeaseRecord::from_spec`] and [`LeaseRecord::write_spec`], so no
//! k8s-openapi type is needed.

use std::fmt;
use std::sync::{Mutex, PoisonError};

use kcache_reflector::reason::{CONFLICT, NOT_FOUND};
use kcache_reflector::{
    DecodeError, Error, LeaseLock, LeaseRecord, ObjectRef, Status, StatusDetails, VersionedLease,
};
use kcache_store::{DynamicObject, Object};
use serde_json::{Map, Value};

use crate::transport::path_segment::check_name;
use crate::{ApiResource, Client, ObjectClient};

/// The API version of the Leases written.
const LEASE_API_VERSION: &str = "coordination.k8s.io/v1";
/// How the API server's messages name the Lease resource.
const LEASES: &str = "leases.coordination.k8s.io";

/// A [`LeaseLock`] on the Lease `name` in `namespace`: what leader election in
/// `kcache-informer` runs on over HTTP (client-go's `resourcelock.LeaseLock`).
///
/// `update` replaces the Lease with `metadata.resourceVersion` set to the version the caller
/// read, so the server answers 409 `Conflict` ([`Error::is_conflict`]) when another candidate
/// wrote it in between. It starts from the Lease as this lock last read or wrote it, and
/// changes only the five fields of the record in its `spec`: labels, annotations, owner
/// references and other `spec` fields (`preferredHolder`, `strategy`) are kept. When the
/// version given is not the one this lock last saw, it reads the Lease again first; if that
/// read shows another version than the caller's, the replace could only fail, so none is
/// sent: `update` returns the 409 `Conflict` the server would have (built here, without a
/// request), or its 404 `NotFound` when the Lease is gone.
///
/// `get` returns `None` only for the server's `NotFound` for this Lease: a server that does
/// not serve Leases is an error (see [`ObjectClient::get`]). A name that cannot be one URL
/// path segment (empty, `.`, `..`, with `/` or `%`) makes every call fail with
/// [`Error::Transport`] before anything is sent, as [`ObjectClient`]'s calls do.
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
        // A create names the object in its body, not its URL: the name is checked as the
        // other calls' URLs check it.
        check_name(&self.name).map_err(Error::transport)?;
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
        let mut lease = match self.last_at(&current.resource_version) {
            Some(lease) => lease,
            // Another version than this lock saw: the server's copy keeps what is not ours,
            // if it is still at `current`; at any other version (or gone) the replace, being
            // conditional on `current`, is doomed, so it is not sent.
            None => match self.leases.get(&self.name).await? {
                Some(fresh) if fresh.resource_version() == Some(&current.resource_version) => fresh,
                Some(_) => return Err(self.conflict()),
                None => return Err(self.not_found()),
            },
        };
        lease.metadata.resource_version = Some(current.resource_version.clone());
        write_record(&mut lease, record);
        let written = self.leases.replace(&lease).await?;
        self.remember(written)
    }
}

impl HttpLeaseLock {
    /// The 409 `Conflict` the server answers a replace of this Lease from a version it is no
    /// longer at, in its words, built here so that no doomed request is sent.
    fn conflict(&self) -> Error {
        self.failure(
            409,
            CONFLICT,
            &format!(
                "Operation cannot be fulfilled on {LEASES} \"{}\": the object has been \
                 modified; please apply your changes to the latest version and try again",
                self.name
            ),
        )
    }

    /// The 404 `NotFound` the server answers a replace of this Lease once it is gone, built
    /// here as [`conflict`](Self::conflict) is.
    fn not_found(&self) -> Error {
        self.failure(
            404,
            NOT_FOUND,
            &format!("{LEASES} \"{}\" not found", self.name),
        )
    }

    /// An [`Error::Api`] with a failure `Status` naming this Lease in its details, as the API
    /// server's `apierrors` make them.
    fn failure(&self, code: u16, reason: &str, message: &str) -> Error {
        let mut status = Status::failure(code, reason, message);
        status.details = Some(StatusDetails {
            name: Some(self.name.clone()),
            group: Some("coordination.k8s.io".to_owned()),
            kind: Some("leases".to_owned()),
            ..StatusDetails::default()
        });
        Error::api(status)
    }
}

/// The record and resource version of `lease`.
fn versioned(lease: &DynamicObject) -> Result<VersionedLease, Error> {
    let object = || {
        Some(ObjectRef::new(
            lease.namespace(),
            lease.name().unwrap_or_default(),
            lease.resource_version().unwrap_or_default(),
        ))
    };
    let resource_version = lease
        .resource_version()
        .filter(|rv| !rv.is_empty())
        .ok_or_else(|| {
            Error::decode(
                DecodeError::new("lease", "it has no metadata.resourceVersion")
                    .with_object(object()),
            )
        })?
        .to_owned();
    let spec = lease.data.get("spec").unwrap_or(&Value::Null);
    let record = LeaseRecord::from_spec(spec).map_err(|e| match e {
        Error::Decode(d) => Error::decode(d.with_object(object())),
        other => other,
    })?;
    Ok(VersionedLease {
        record,
        resource_version,
    })
}

/// Writes `record` into `lease`'s `spec` ([`LeaseRecord::write_spec`]: its other fields are
/// kept), making `spec` an object first if it is not one.
fn write_record(lease: &mut DynamicObject, record: &LeaseRecord) {
    let spec = lease
        .data
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if !spec.is_object() {
        *spec = Value::Object(Map::new());
    }
    if let Value::Object(spec) = spec {
        record.write_spec(spec);
    }
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
