//! `HttpLeaseLock` against the fake API server serving `coordination.k8s.io/v1` Leases: create,
//! get, update, the conflicts that make a Lease a lock (a second create, an update from a stale
//! version), and updates keeping what is not the election's (labels, annotations, other `spec`
//! fields).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kcache_client_http::{ApiResource, Client, Config, HttpLeaseLock};
use kcache_reflector::{LeaseLock, LeaseRecord, VersionedLease, micro_time};
use kcache_store::DynamicObject;
use kcache_testing_server::{FakeApiServer, Reply, ScriptedServer, ServedResource};
use serde_json::json;

use crate::support::client;

fn leases() -> ServedResource {
    ServedResource::new(
        ApiResource::new("coordination.k8s.io", "v1", "leases", true),
        "Lease",
    )
}

async fn server() -> FakeApiServer {
    FakeApiServer::builder()
        .resource(leases())
        .start()
        .await
        .unwrap()
}

/// A lock on the Lease `kube-system/election`.
fn lock(server: &FakeApiServer) -> HttpLeaseLock {
    HttpLeaseLock::new(client(server), "kube-system", "election")
}

/// The Lease as the server stores it.
fn stored(server: &FakeApiServer) -> std::sync::Arc<DynamicObject> {
    server
        .get(&leases(), Some("kube-system"), "election")
        .unwrap()
}

/// A fixed time, `secs` after a fixed start.
fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs)
}

/// `record` renewed at `at(secs)`.
fn renewed(record: &LeaseRecord, secs: u64) -> LeaseRecord {
    let mut r = record.clone();
    r.renew_time = Some(micro_time(at(secs)));
    r
}

#[tokio::test]
async fn the_lock_creates_reads_and_updates_its_lease() {
    let server = server().await;
    let lock = lock(&server);
    assert_eq!(lock.describe(), "kube-system/election");
    assert_eq!((lock.namespace(), lock.name()), ("kube-system", "election"));
    assert!(lock.get().await.unwrap().is_none());

    let record = LeaseRecord::held_by("pod-a", 15, at(0));
    let created = lock.create(&record).await.unwrap();
    assert_eq!(created.record, record);
    let lease = stored(&server);
    assert_eq!(
        (lease.api_version.as_deref(), lease.kind.as_deref()),
        (Some("coordination.k8s.io/v1"), Some("Lease"))
    );
    assert_eq!(
        lease.data["spec"],
        json!({"holderIdentity": "pod-a", "leaseDurationSeconds": 15,
               "acquireTime": "2027-01-15T08:00:00.000000Z",
               "renewTime": "2027-01-15T08:00:00.000000Z", "leaseTransitions": 0})
    );
    assert_eq!(lock.get().await.unwrap().unwrap(), created);

    let updated = lock.update(&created, &renewed(&record, 2)).await.unwrap();
    assert_ne!(updated.resource_version, created.resource_version);
    assert_eq!(
        updated.record.renew_time.as_deref(),
        Some("2027-01-15T08:00:02.000000Z")
    );
    assert_eq!(
        stored(&server).data["spec"]["renewTime"],
        "2027-01-15T08:00:02.000000Z"
    );
    assert_eq!(lock.get().await.unwrap().unwrap(), updated);
}

#[tokio::test]
async fn a_second_create_finds_the_lease_already_exists() {
    let server = server().await;
    let (a, b) = (lock(&server), lock(&server));
    a.create(&LeaseRecord::held_by("pod-a", 15, at(0)))
        .await
        .unwrap();
    let e = b
        .create(&LeaseRecord::held_by("pod-b", 15, at(0)))
        .await
        .unwrap_err();
    assert!(e.is_already_exists(), "{e}");
    assert!(!e.is_conflict(), "{e}");
    assert_eq!(stored(&server).data["spec"]["holderIdentity"], "pod-a");
}

#[tokio::test]
async fn an_update_from_a_stale_version_is_a_conflict() {
    let server = server().await;
    let (a, b) = (lock(&server), lock(&server));
    let record = LeaseRecord::held_by("pod-a", 15, at(0));
    a.create(&record).await.unwrap();
    let seen_by_a = a.get().await.unwrap().unwrap();
    let seen_by_b = b.get().await.unwrap().unwrap();
    assert_eq!(seen_by_a, seen_by_b);

    a.update(&seen_by_a, &renewed(&record, 2)).await.unwrap();
    let takeover = LeaseRecord::held_by("pod-b", 15, at(3));
    let e = b.update(&seen_by_b, &takeover).await.unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert_eq!(stored(&server).data["spec"]["holderIdentity"], "pod-a");

    // From a fresh read, the takeover goes through.
    let fresh = b.get().await.unwrap().unwrap();
    b.update(&fresh, &takeover).await.unwrap();
    assert_eq!(stored(&server).data["spec"]["holderIdentity"], "pod-b");
    // And now `a` is the stale one.
    let e = a.update(&fresh, &renewed(&record, 4)).await.unwrap_err();
    assert!(e.is_conflict(), "{e}");
}

/// Adds labels, an annotation and a `preferredHolder` to the stored Lease, as another writer
/// would.
fn decorate(server: &FakeApiServer) {
    let mut lease = (*stored(server)).clone();
    lease.metadata.labels = Some([("team".to_owned(), "core".to_owned())].into());
    lease.metadata.annotations = Some([("note".to_owned(), "keep me".to_owned())].into());
    lease.data["spec"]["preferredHolder"] = json!("pod-b");
    server.update(&leases(), lease).unwrap();
}

/// Asserts the decorations of [`decorate`] are still on the stored Lease.
fn assert_decorated(server: &FakeApiServer) {
    let lease = stored(server);
    assert_eq!(lease.metadata.labels.as_ref().unwrap()["team"], "core");
    assert_eq!(
        lease.metadata.annotations.as_ref().unwrap()["note"],
        "keep me"
    );
    assert_eq!(lease.data["spec"]["preferredHolder"], "pod-b");
}

#[tokio::test]
async fn an_update_keeps_labels_annotations_and_other_spec_fields() {
    let server = server().await;
    let lock = lock(&server);
    let record = LeaseRecord::held_by("pod-a", 15, at(0));
    lock.create(&record).await.unwrap();
    decorate(&server);

    let current = lock.get().await.unwrap().unwrap();
    let updated = lock.update(&current, &renewed(&record, 2)).await.unwrap();
    assert_decorated(&server);
    lock.update(&updated, &renewed(&record, 4)).await.unwrap();
    assert_decorated(&server);
    assert_eq!(
        stored(&server).data["spec"]["renewTime"],
        "2027-01-15T08:00:04.000000Z"
    );
}

#[tokio::test]
async fn an_update_from_a_version_this_lock_did_not_read_keeps_them_too() {
    let server = server().await;
    let (a, b) = (lock(&server), lock(&server));
    let record = LeaseRecord::held_by("pod-a", 15, at(0));
    a.create(&record).await.unwrap();
    decorate(&server);
    // `a` last saw the version it created; the version given was read by `b`.
    let current = b.get().await.unwrap().unwrap();
    a.update(&current, &renewed(&record, 2)).await.unwrap();
    assert_decorated(&server);
}

#[tokio::test]
async fn releasing_clears_the_holder() {
    let server = server().await;
    let lock = lock(&server);
    let held = lock
        .create(&LeaseRecord::held_by("pod-a", 15, at(0)))
        .await
        .unwrap();
    let mut released = held.record.clone();
    released.holder_identity = None;
    let after = lock.update(&held, &released).await.unwrap();
    assert_eq!(after.record.holder(), None);
    assert!(stored(&server).data["spec"].get("holderIdentity").is_none());
    assert_eq!(stored(&server).data["spec"]["leaseDurationSeconds"], 15);
}

#[tokio::test]
async fn an_update_of_a_deleted_lease_is_not_found() {
    let server = server().await;
    let lock = lock(&server);
    let held = lock
        .create(&LeaseRecord::held_by("pod-a", 15, at(0)))
        .await
        .unwrap();
    server
        .delete(&leases(), Some("kube-system"), "election")
        .unwrap();
    let e = lock.update(&held, &held.record).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
    // From a version this lock did not see, it reads the Lease again, finds it gone and sends
    // no replace.
    let stale = VersionedLease {
        record: held.record.clone(),
        resource_version: "1".into(),
    };
    server.clear_requests();
    let e = lock.update(&stale, &held.record).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert_eq!(methods(&server), ["GET"]);
}

/// The methods of the requests the server received.
fn methods(server: &FakeApiServer) -> Vec<String> {
    server.requests().into_iter().map(|r| r.method).collect()
}

/// A lock given a version it did not see reads the Lease again; when the Lease has moved on
/// past that version, the replace could only fail, so none is sent: the conflict is the
/// server's, built by the lock.
#[tokio::test]
async fn an_update_from_a_version_overtaken_since_sends_no_replace() {
    let server = server().await;
    let (a, b, c) = (lock(&server), lock(&server), lock(&server));
    let record = LeaseRecord::held_by("pod-a", 15, at(0));
    let created = a.create(&record).await.unwrap();
    let seen_by_b = b.get().await.unwrap().unwrap();
    a.update(&created, &renewed(&record, 2)).await.unwrap();

    server.clear_requests();
    let takeover = LeaseRecord::held_by("pod-c", 15, at(3));
    let e = c.update(&seen_by_b, &takeover).await.unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert!(!e.is_already_exists(), "{e}");
    let status = e.status().unwrap();
    assert_eq!(
        (status.code, status.reason.as_deref()),
        (Some(409), Some("Conflict"))
    );
    let details = status.details.as_ref().unwrap();
    assert_eq!(details.name.as_deref(), Some("election"));
    assert_eq!(methods(&server), ["GET"], "the re-read, and no PUT");
    assert_eq!(stored(&server).data["spec"]["holderIdentity"], "pod-a");
    assert_eq!(
        stored(&server).data["spec"]["renewTime"],
        "2027-01-15T08:00:02.000000Z"
    );

    // From the version the re-read found, `c` goes through.
    let fresh = c.get().await.unwrap().unwrap();
    c.update(&fresh, &takeover).await.unwrap();
    assert_eq!(stored(&server).data["spec"]["holderIdentity"], "pod-c");
}

/// A name that cannot be one URL path segment fails every call before anything is sent, as
/// `ObjectClient`'s do (an empty one would make the collection's URL).
#[tokio::test]
async fn a_lock_on_a_name_that_is_not_one_path_segment_sends_nothing() {
    let server = server().await;
    let record = LeaseRecord::held_by("pod-a", 15, at(0));
    let versioned = VersionedLease {
        record: record.clone(),
        resource_version: "1".into(),
    };
    for name in ["", ".", "..", "a/b", "a%2Fb"] {
        let lock = HttpLeaseLock::new(client(&server), "kube-system", name);
        server.clear_requests();
        let invalid = |e: kcache_reflector::Error| {
            assert!(
                matches!(e, kcache_reflector::Error::Transport(_)),
                "{name:?}: {e:?}"
            );
            let chain = crate::support_chain(&e);
            assert!(
                chain.starts_with(&format!("transport error: invalid object name {name:?}: ")),
                "{chain}"
            );
        };
        invalid(lock.get().await.unwrap_err());
        invalid(lock.create(&record).await.unwrap_err());
        invalid(lock.update(&versioned, &record).await.unwrap_err());
        assert!(server.requests().is_empty(), "{name:?}");
    }
}

/// A server that does not serve Leases answers `404 page not found`: an error, not a Lease
/// that does not exist (which a candidate would try to create, and never lead, silently).
#[tokio::test]
async fn a_server_without_leases_is_an_error_not_a_missing_lease() {
    let server = ScriptedServer::start(|_| Reply::json(404, "404 page not found\n"))
        .await
        .unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let lock = HttpLeaseLock::new(client, "kube-system", "election");
    let e = lock.get().await.unwrap_err();
    assert_eq!(e.status().unwrap().code, Some(404), "{e}");
}

#[tokio::test]
async fn a_lease_of_the_wrong_shape_is_a_decode_error() {
    let server = server().await;
    let mut lease = DynamicObject::new(Some("kube-system"), "election");
    lease.data.insert(
        "spec".into(),
        json!({"holderIdentity": "pod-a", "leaseDurationSeconds": "fifteen"}),
    );
    server.create(&leases(), lease).unwrap();
    let e = lock(&server).get().await.unwrap_err();
    assert!(e.as_decode().is_some(), "{e:?}");
    let text = e.to_string();
    assert!(
        text.starts_with("could not decode lease (kube-system/election at resourceVersion "),
        "{text}"
    );
    assert!(text.ends_with("spec.leaseDurationSeconds is not of the type a Lease has"));
    assert!(!text.contains("fifteen"), "{text}");
}
