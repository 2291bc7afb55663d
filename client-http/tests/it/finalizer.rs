//! The finalizer helper against the fake API server: the finalizer is added before the first
//! apply and removed after a successful cleanup, a failed cleanup keeps it, and a concurrent
//! writer's finalizer is never lost (the helper's patches test the list they change, and a lost
//! race reads the object again).

use std::sync::Arc;

use http::Method;
use kcache_client_http::{
    ApiResource, Client, Config, FINALIZER_ATTEMPTS, FinalizerError, FinalizerEvent, ObjectClient,
    Patch, finalizer,
};
use kcache_store::{DynamicObject, Object};
use kcache_testing_server::{FakeApiServer, Reply, ScriptedServer};
use serde_json::{Value, json};

const OURS: &str = "example.com/cleanup";

fn finalizers(o: &DynamicObject) -> Value {
    o.metadata
        .other
        .get("finalizers")
        .cloned()
        .unwrap_or(Value::Null)
}

fn configmaps(server: &FakeApiServer) -> ObjectClient<DynamicObject> {
    configmaps_at(server.url())
}

fn configmaps_at(url: &str) -> ObjectClient<DynamicObject> {
    let client = Client::new(Config::new(url.parse().unwrap())).unwrap();
    ObjectClient::builder(client, ApiResource::new("", "v1", "configmaps", true))
        .namespace("shop")
        .build()
}

/// What each call of the reconcile saw.
async fn step(event: FinalizerEvent<DynamicObject>) -> Result<&'static str, std::io::Error> {
    Ok(match event {
        FinalizerEvent::Apply(_) => "apply",
        FinalizerEvent::Cleanup(_) => "cleanup",
    })
}

#[tokio::test]
async fn a_concurrent_writers_finalizer_is_never_lost() {
    let server = FakeApiServer::start().await.unwrap();
    let api = configmaps(&server);
    // The cache's copy: no finalizers yet.
    let cached = Arc::new(
        api.create(&DynamicObject::new(Some("shop"), "web"))
            .await
            .unwrap(),
    );
    // Another controller adds its finalizer after the cache's copy was taken.
    let theirs = Patch::Merge(json!({"metadata": {"finalizers": ["other.io/keep"]}}));
    api.patch("web", &theirs).await.unwrap();

    let outcome = finalizer(&api, OURS, cached.clone(), step).await.unwrap();
    assert_eq!(outcome, Some("apply"));
    let now = api.get("web").await.unwrap().unwrap();
    assert_eq!(finalizers(&now), json!(["other.io/keep", OURS]));

    // Deleted: both finalizers hold it. The cache's copy still shows only ours (stale), and the
    // other controller adds a third meanwhile: ours is removed, theirs stay.
    api.delete("web", None).await.unwrap();
    let mut stale = api.get("web").await.unwrap().unwrap();
    assert!(stale.is_being_deleted());
    stale
        .metadata
        .other
        .insert("finalizers".into(), json!([OURS]));
    let more = Patch::Json(vec![
        json!({"op": "add", "path": "/metadata/finalizers/-", "value": "third.io/x"}),
    ]);
    api.patch("web", &more).await.unwrap();
    let outcome = finalizer(&api, OURS, Arc::new(stale), step).await.unwrap();
    assert_eq!(outcome, Some("cleanup"));
    let now = api.get("web").await.unwrap().unwrap();
    assert_eq!(finalizers(&now), json!(["other.io/keep", "third.io/x"]));
    server.shutdown().await;
}

#[tokio::test]
async fn a_failed_cleanup_keeps_the_finalizer_and_a_later_one_removes_it() {
    let server = FakeApiServer::start().await.unwrap();
    let api = configmaps(&server);
    let created = Arc::new(
        api.create(&DynamicObject::new(Some("shop"), "db"))
            .await
            .unwrap(),
    );
    assert_eq!(
        finalizer(&api, OURS, created, step).await.unwrap(),
        Some("apply")
    );
    api.delete("db", None).await.unwrap();
    let marked = Arc::new(api.get("db").await.unwrap().unwrap());
    let failing = |_: FinalizerEvent<DynamicObject>| async {
        Err::<(), _>(std::io::Error::other("the backup is not done"))
    };
    let err = finalizer(&api, OURS, marked.clone(), failing)
        .await
        .unwrap_err();
    assert!(matches!(err, FinalizerError::Cleanup(_)), "{err}");
    assert!(err.to_string().contains("the backup is not done"), "{err}");
    let still = api.get("db").await.unwrap().unwrap();
    assert_eq!(finalizers(&still), json!([OURS]));

    assert_eq!(
        finalizer(&api, OURS, marked.clone(), step).await.unwrap(),
        Some("cleanup")
    );
    // The last finalizer gone, the object is deleted.
    assert!(api.get("db").await.unwrap().is_none());
    // Running again on the stale copy: the object is gone, its removal is not an error.
    assert_eq!(
        finalizer(&api, OURS, marked, step).await.unwrap(),
        Some("cleanup")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn being_deleted_without_the_finalizer_runs_nothing() {
    let server = FakeApiServer::start().await.unwrap();
    let api = configmaps(&server);
    let mut held = DynamicObject::new(Some("shop"), "cache");
    held.metadata
        .other
        .insert("finalizers".into(), json!(["other.io/keep"]));
    api.create(&held).await.unwrap();
    api.delete("cache", None).await.unwrap();
    let marked = Arc::new(api.get("cache").await.unwrap().unwrap());
    let never = |_: FinalizerEvent<DynamicObject>| async {
        Err::<(), _>(std::io::Error::other("must not run"))
    };
    assert_eq!(finalizer(&api, OURS, marked, never).await.unwrap(), None);
    server.shutdown().await;
}

/// A server where every finalizer write loses to another writer: each PATCH is a conflict and
/// each read shows the object as `object` (`deleting`: being deleted, with our finalizer).
async fn always_conflicting(deleting: bool) -> ScriptedServer {
    let object = if deleting {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web",
            "namespace": "shop", "deletionTimestamp": "2025-01-01T00:00:00Z",
            "finalizers": [OURS]}})
    } else {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "web", "namespace": "shop"}})
    };
    ScriptedServer::start(move |req| {
        if req.method == Method::PATCH {
            Reply::status(409, "Conflict", "the object has been modified")
        } else {
            Reply::json(200, object.to_string())
        }
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn losing_every_finalizer_write_is_an_error_after_the_last_attempt() {
    for deleting in [false, true] {
        let server = always_conflicting(deleting).await;
        let api = configmaps_at(server.url());
        let object = Arc::new(api.get("web").await.unwrap().unwrap());
        let err = finalizer(&api, OURS, object, step).await.unwrap_err();
        if deleting {
            // The cleanup ran, but the finalizer could not be removed: it runs again later.
            assert!(matches!(err, FinalizerError::Remove { .. }), "{err}");
        } else {
            assert!(matches!(err, FinalizerError::Add { .. }), "{err}");
        }
        let patches = server.count(|r| r.method == Method::PATCH);
        assert_eq!(patches, FINALIZER_ATTEMPTS, "deleting: {deleting}");
        server.shutdown().await;
    }
}
