//! What only `KubeListerWatcher` (the `kube` feature) does, against the fake API server: the
//! requests it writes past kube-rs's own parameters, typed and dynamic `Api`s, kube-rs's
//! retries and timeouts, compact and typed objects. The contract it shares with
//! `HttpListerWatcher` (lists, watches, decoding, bounds, error kinds) runs on both backends in
//! `list_watch.rs`. Plain HTTP only: this crate enables no TLS stack of kube-rs; informers over
//! kube-rs on TLS are tested in kcache-testing-e2e.
#![cfg(feature = "kube")]

use std::time::Duration;

use kcache_client_http::KubeListerWatcher;
use kcache_reflector::{Error, ListOptions, ListerWatcher, ResourceVersionMatch, WatchEvent};
use kcache_store::{Compact, CompactCodec, DynamicObject, Object};
use kcache_testing_server::FakeApiServer;
use kcache_testing_server::fake_api_server::{Fault, Verb};
use kube_client::core::ApiResource;
use kube_client::{Api, Client};

use crate::support::{fake_pods, kube_client_for, kube_resource, next, pods, server};
use crate::support_chain;

/// The core pods resource as kube-rs names it.
fn pods_resource() -> ApiResource {
    kube_resource(&pods())
}

/// Pods of all namespaces as kcache's `DynamicObject`s, through a dynamic `Api`.
async fn lw(server: &FakeApiServer) -> KubeListerWatcher<DynamicObject> {
    let resource = pods_resource();
    let api = Api::<kube_client::core::DynamicObject>::all_with(
        kube_client_for(server, false).await,
        &resource,
    );
    KubeListerWatcher::dynamic(api, &resource)
}

#[tokio::test]
async fn requests_carry_the_options_as_given() {
    // kube-rs's own `ListParams` would drop `resourceVersion=0` from a paginated list and its
    // `WatchParams` would send `timeoutSeconds=290`: the reflector's options go out unchanged.
    let server = server(false, 3).await;
    let lw = lw(&server).await;
    let opts = ListOptions {
        limit: Some(2),
        resource_version: "0".into(),
        ..ListOptions::default()
    };
    lw.list(&opts.clone().with_label_selector("app notin (db)"))
        .await
        .unwrap();
    let list = server.requests().last().unwrap().clone();
    assert_eq!(list.path, "/api/v1/pods");
    assert_eq!(list.param("resourceVersion"), Some("0"));
    assert_eq!(list.param("limit"), Some("2"));
    assert_eq!(list.param("labelSelector"), Some("app notin (db)"));
    let watch = ListOptions {
        resource_version: "1".into(),
        resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
        send_initial_events: Some(true),
        allow_watch_bookmarks: true,
        timeout_seconds: Some(537),
        limit: Some(500),
        ..ListOptions::default()
    };
    let _stream = lw.watch(&watch).await.unwrap();
    let sent = server.requests().last().unwrap().clone();
    assert!(sent.is_watch());
    for (name, value) in [
        ("timeoutSeconds", Some("537")),
        ("allowWatchBookmarks", Some("true")),
        ("sendInitialEvents", Some("true")),
        ("resourceVersionMatch", Some("NotOlderThan")),
        ("resourceVersion", Some("1")),
        ("limit", None),
    ] {
        assert_eq!(sent.param(name), value, "{name}");
    }
    assert_eq!(lw.resource().as_deref(), Some("pods"));
    assert_eq!(lw.path(), "/api/v1/pods");
}

/// A typed `Api<K>` names the collection (and its namespace) itself; selectors and
/// namespaces on both backends are in `list_watch::list_with_selectors_in_one_namespace`.
#[tokio::test]
async fn typed_api_in_one_namespace() {
    let server = server(false, 2).await;
    server
        .create(&fake_pods(), DynamicObject::new(Some("other"), "x"))
        .unwrap();
    let client = kube_client_for(&server, false).await;
    let ns = KubeListerWatcher::<DynamicObject>::new(
        Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client, "ns"),
    );
    assert_eq!(ns.path(), "/api/v1/namespaces/ns/pods");
    let page = ns.list(&ListOptions::default()).await.unwrap();
    let names: Vec<_> = page.items.iter().filter_map(|o| o.name()).collect();
    assert_eq!(names, ["p0", "p1"]);
}

#[tokio::test(start_paused = true)]
async fn kube_rs_retries_stay_inside_the_list_timeout() {
    // With kube-rs's retries on (its default), a 429 asking to wait 63 years is slept inside
    // kube-rs's client; the list's own timeout still ends the call.
    let server = server(false, 1).await;
    let resource = pods_resource();
    let api = Api::<kube_client::core::DynamicObject>::all_with(
        kube_client_for(&server, true).await,
        &resource,
    );
    let lw = KubeListerWatcher::<DynamicObject>::builder_with(api, &resource)
        .list_timeout(Duration::from_secs(5))
        .build();
    server.inject(Fault::too_many_requests(Verb::List, 2_000_000_000));
    let start = tokio::time::Instant::now();
    let e = lw.list(&ListOptions::default()).await.unwrap_err();
    assert!(matches!(e, Error::Timeout), "{e:?}");
    assert_eq!(start.elapsed(), Duration::from_secs(5));
}

#[tokio::test]
async fn skip_managed_fields_and_compact_objects_over_kube() {
    let server = server(false, 0).await;
    let mut pod = DynamicObject::new(Some("ns"), "mf");
    pod.metadata.other.insert(
        "managedFields".to_owned(),
        serde_json::json!([{"manager": "kubectl", "operation": "Apply"}]),
    );
    pod.data
        .insert("spec".to_owned(), serde_json::json!({"nodeName": "n1"}));
    server.create(&fake_pods(), pod).unwrap();
    let client = kube_client_for(&server, false).await;
    let resource = pods_resource();
    let api = || Api::<kube_client::core::DynamicObject>::all_with(client.clone(), &resource);
    for skip in [false, true] {
        let lw = KubeListerWatcher::<DynamicObject>::builder_with(api(), &resource)
            .skip_managed_fields(skip)
            .build();
        let page = lw.list(&ListOptions::default()).await.unwrap();
        assert_eq!(
            page.items[0].metadata.other.contains_key("managedFields"),
            !skip
        );
    }
    let lw = KubeListerWatcher::<Compact<DynamicObject>>::builder_with(api(), &resource)
        .codec(CompactCodec::new())
        .build();
    let page = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(page.items[0].name(), Some("mf"));
    let typed = page.items[0].typed().unwrap();
    assert!(!typed.metadata.other.contains_key("managedFields"));
    let mut stream = lw
        .watch(&ListOptions::default().with_resource_version("0"))
        .await
        .unwrap();
    let Some(Ok(WatchEvent::Added(o))) = next(&mut stream).await else {
        panic!("an ADDED event")
    };
    assert_eq!(o.pointer("/spec/nodeName").unwrap(), Some("n1".into()));
}

#[cfg(feature = "k8s-openapi")]
#[tokio::test]
async fn typed_k8s_openapi_pods_plain_and_compact() {
    use k8s_openapi::api::core::v1::Pod;
    let server = server(false, 2).await;
    let client = kube_client_for(&server, false).await;
    let lw = KubeListerWatcher::<Pod>::new(Api::<Pod>::namespaced(client.clone(), "ns"));
    let page = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.items[1].metadata.name.as_deref(), Some("p1"));
    let lw = KubeListerWatcher::<Compact<Pod>>::compact(Api::<Pod>::all(client)).build();
    let page = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(
        page.items[0].typed().unwrap().metadata.name.as_deref(),
        Some("p0")
    );
}

#[tokio::test]
async fn refused_connection_is_a_retriable_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut config = kube_client::Config::new(format!("http://{addr}").parse().unwrap());
    config.default_retry = false;
    let api: Api<k8s_openapi::api::core::v1::Pod> = Api::all(Client::try_from(config).unwrap());
    let lw = KubeListerWatcher::<DynamicObject>::new(api);
    let e = lw.watch(&ListOptions::default()).await.err().unwrap();
    assert!(e.is_connection_refused(), "{e:?}");
    assert!(e.is_watch_retriable());
    // The kube-rs error is the source, with its own chain.
    let chain = support_chain(&e);
    assert!(chain.starts_with("transport error: "), "{chain}");
    assert!(chain.contains("Connection refused"), "{chain}");
}

#[tokio::test(start_paused = true)]
async fn a_list_that_never_ends_times_out() {
    use kcache_testing_server::scripted_server::{Reply, ScriptedServer, feed};
    let (feed, rest) = feed();
    let rest = std::sync::Mutex::new(Some(rest));
    let server = ScriptedServer::start(move |_| match rest.lock().unwrap().take() {
        Some(rest) => Reply::stream(200, rest),
        None => Reply::status(500, "InternalError", "once"),
    })
    .await
    .unwrap();
    feed.send(r#"{"kind":"PodList","items":["#);
    let mut config = kube_client::Config::new(server.url().parse().unwrap());
    config.default_retry = false;
    let api: Api<k8s_openapi::api::core::v1::Pod> = Api::all(Client::try_from(config).unwrap());
    let lw = KubeListerWatcher::<DynamicObject>::builder(api)
        .list_timeout(Duration::from_secs(7))
        .build();
    let start = tokio::time::Instant::now();
    let e = lw.list(&ListOptions::default()).await.unwrap_err();
    assert!(matches!(e, Error::Timeout), "{e:?}");
    assert_eq!(start.elapsed(), Duration::from_secs(7));
}
