//! A metadata-only informer against the fake API server, on both backends, in JSON and in
//! protobuf: secrets cached as
//! `PartialObjectMetadata` (no `data`), each naming `v1` `Secret`, kept in line with the server
//! through a label change and a delete, and the cache equal to the server's names.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kcache_client_http::{ApiResource, HttpListerWatcher, KubeListerWatcher};
use kcache_informer::SharedIndexInformer;
use kcache_reflector::ListerWatcher;
use kcache_store::{DynamicObject, Object, PartialObjectMetadata};
use kcache_testing_server::{FakeApiServer, ServedResource};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{BACKENDS, Backend, http_client, kube_client};

fn secret(name: &str, app: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "web", "labels": {"app": app}},
        "type": "Opaque",
        "data": {"token": "c2VjcmV0LXZhbHVlLXRoYXQtdGhlLWNhY2hlLW5ldmVyLWhvbGRz"},
    }))
    .unwrap()
}

fn lister_watcher(
    backend: Backend,
    protobuf: bool,
    url: &str,
) -> Arc<dyn ListerWatcher<PartialObjectMetadata>> {
    match backend {
        Backend::Http => {
            let builder = HttpListerWatcher::<PartialObjectMetadata>::builder(
                http_client(url),
                ApiResource::new("", "v1", "secrets", true),
            )
            .kind("Secret")
            .metadata_only();
            Arc::new(
                if protobuf {
                    builder.protobuf()
                } else {
                    builder
                }
                .build(),
            )
        }
        Backend::Kube => {
            let builder =
                KubeListerWatcher::<PartialObjectMetadata>::metadata(
                    kube_client::Api::<Secret>::all(kube_client(url)),
                );
            Arc::new(
                if protobuf {
                    builder.protobuf()
                } else {
                    builder
                }
                .build(),
            )
        }
    }
}

/// Waits up to 10 s for `done`.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metadata_only_informer_caches_secrets_without_their_data() {
    // Each backend in JSON and in protobuf.
    let runs = BACKENDS.into_iter().flat_map(|b| [(b, false), (b, true)]);
    for (backend, protobuf) in runs {
        let server = FakeApiServer::start().await.unwrap();
        let secrets = ServedResource::secrets();
        for name in ["a", "b", "c"] {
            server.create(&secrets, secret(name, "web")).unwrap();
        }
        let informer =
            SharedIndexInformer::builder(lister_watcher(backend, protobuf, server.url())).build();
        let cancel = CancellationToken::new();
        let running = tokio::spawn({
            let (informer, cancel) = (informer.clone(), cancel.clone());
            async move { informer.run(cancel).await }
        });
        eventually("the sync", || informer.has_synced()).await;
        let lister = informer.lister();
        let cached = lister.get_by_key("web/a").unwrap();
        assert_eq!(
            (cached.api_version.as_deref(), cached.kind.as_deref()),
            (Some("v1"), Some("Secret")),
            "{backend}"
        );
        assert_eq!(cached.labels().map(|l| l["app"].as_str()), Some("web"));
        assert!(
            !serde_json::to_string(&*cached)
                .unwrap()
                .contains("c2VjcmV0"),
            "{backend}: no data in the cache"
        );

        let mut relabelled = secret("b", "db");
        relabelled.metadata.namespace = Some("web".into());
        server.update(&secrets, relabelled).unwrap();
        server.delete(&secrets, Some("web"), "c").unwrap();
        eventually("the label change and the delete", || {
            let names: BTreeSet<String> = lister
                .list(&kcache_store::Selector::everything())
                .iter()
                .filter_map(|o| o.name().map(str::to_owned))
                .collect();
            names == BTreeSet::from(["a".to_owned(), "b".to_owned()])
                && lister
                    .get_by_key("web/b")
                    .is_some_and(|b| b.labels().map(|l| l["app"].as_str()) == Some("db"))
        })
        .await;
        // Every list and watch asked for the metadata, in protobuf first when told to.
        let requests = server.requests();
        assert!(!requests.is_empty());
        for request in requests {
            let accept = request.accept.unwrap_or_default();
            let wanted = if protobuf {
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata"
            } else {
                "application/json;as=PartialObjectMetadata"
            };
            assert!(accept.starts_with(wanted), "{backend}: {accept}");
        }
        cancel.cancel();
        running.await.unwrap().unwrap();
        server.shutdown().await;
    }
}
