//! `KubeListerWatcher` (the `kube` feature) against the fake API server: the same lists,
//! watches, decoding, bounds and error kinds as `HttpListerWatcher`, over kube-rs's client
//! (configured from the server's kubeconfig). Plain HTTP only: this crate enables no TLS stack
//! of kube-rs; informers over kube-rs on TLS are tested in kcache-testing-e2e.
#![cfg(feature = "kube")]

use std::time::Duration;

use kcache_client_http::KubeListerWatcher;
use kcache_reflector::{Error, ListOptions, ListerWatcher, ResourceVersionMatch, WatchEvent};
use kcache_store::{Compact, CompactCodec, DynamicObject, Object};
use kcache_testing_server::FakeApiServer;
use kcache_testing_server::fake_api_server::{Fault, FaultKind, Verb};
use kube_client::core::{ApiResource, GroupVersionKind};
use kube_client::{Api, Client};

use crate::support::{describe, fake_pods, next, server};
use crate::support_chain;

/// The core pods resource as kube-rs names it.
fn pods_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods")
}

/// A kube-rs client of `server`, from its kubeconfig (CA included for TLS), with kube-rs's own
/// retries off unless `retries` (the reflector retries with its own backoff).
async fn kube_client_with(server: &FakeApiServer, retries: bool) -> Client {
    let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&server.kubeconfig("ns")).unwrap();
    let mut config = kube_client::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube_client::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    config.default_retry = retries;
    Client::try_from(config).unwrap()
}

async fn kube_client(server: &FakeApiServer) -> Client {
    kube_client_with(server, false).await
}

/// Pods of all namespaces as kcache's `DynamicObject`s, through a dynamic `Api`.
async fn lw(server: &FakeApiServer) -> KubeListerWatcher<DynamicObject> {
    let resource = pods_resource();
    let api =
        Api::<kube_client::core::DynamicObject>::all_with(kube_client(server).await, &resource);
    KubeListerWatcher::dynamic(api, &resource)
}

#[tokio::test]
async fn list_pages() {
    let server = server(false, 5).await;
    let lw = lw(&server).await;
    let mut opts = ListOptions {
        limit: Some(2),
        ..ListOptions::default()
    };
    let mut names = Vec::new();
    let mut rvs = Vec::new();
    loop {
        let page = lw.list(&opts).await.unwrap();
        names.extend(page.items.iter().map(|o| o.name().unwrap().to_owned()));
        rvs.push(page.resource_version.clone());
        match page.next_page_token() {
            Some(t) => opts.continue_token = t.to_owned(),
            None => break,
        }
    }
    assert_eq!(names, ["p0", "p1", "p2", "p3", "p4"]);
    assert_eq!(rvs.len(), 3);
    assert!(rvs.iter().all(|rv| rv == &rvs[0]));
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

#[tokio::test]
async fn typed_api_in_one_namespace_with_selectors() {
    let server = server(false, 2).await;
    let mut labelled = DynamicObject::new(Some("other"), "x");
    labelled.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
    server.create(&fake_pods(), labelled).unwrap();
    let client = kube_client(&server).await;
    let all = KubeListerWatcher::<DynamicObject>::new(Api::<k8s_openapi::api::core::v1::Pod>::all(
        client.clone(),
    ));
    let opts = ListOptions::default().with_label_selector("app in (web,api)");
    assert_eq!(all.list(&opts).await.unwrap().items.len(), 1);
    let ns = KubeListerWatcher::<DynamicObject>::new(
        Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client, "ns"),
    );
    let page = ns
        .list(&ListOptions::default().with_field_selector("metadata.name=p1"))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].name(), Some("p1"));
    assert_eq!(ns.path(), "/api/v1/namespaces/ns/pods");
}

#[tokio::test]
async fn watch_sees_changes_and_bookmarks() {
    let server = server(false, 1).await;
    let lw = lw(&server).await;
    let list = lw.list(&ListOptions::default()).await.unwrap();
    let opts = ListOptions {
        resource_version: list.resource_version.clone(),
        allow_watch_bookmarks: true,
        timeout_seconds: Some(60),
        ..ListOptions::default()
    };
    let mut stream = lw.watch(&opts).await.unwrap();
    server
        .create(&fake_pods(), DynamicObject::new(Some("ns"), "new"))
        .unwrap();
    assert_eq!(
        describe(&next(&mut stream).await.unwrap().unwrap()),
        "Added new"
    );
    server.delete(&fake_pods(), Some("ns"), "p0").unwrap();
    assert_eq!(
        describe(&next(&mut stream).await.unwrap().unwrap()),
        "Deleted p0"
    );
    server.send_bookmark();
    let WatchEvent::Bookmark(b) = next(&mut stream).await.unwrap().unwrap() else {
        panic!("a bookmark")
    };
    assert_eq!(b.resource_version, server.resource_version().to_string());
}

#[tokio::test]
async fn streaming_list_ends_with_the_initial_events_bookmark() {
    let server = server(false, 3).await;
    let opts = ListOptions {
        send_initial_events: Some(true),
        resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
        allow_watch_bookmarks: true,
        ..ListOptions::default()
    };
    let mut stream = lw(&server).await.watch(&opts).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(describe(&next(&mut stream).await.unwrap().unwrap()));
    }
    assert_eq!(
        seen,
        ["Added p0", "Added p1", "Added p2", "BOOKMARK end=true"]
    );
}

#[tokio::test]
async fn gone_as_http_410_and_as_error_event() {
    let server = server(false, 1).await;
    let lw = lw(&server).await;
    server.inject(Fault::status(Verb::List, 410, "Expired", "too old"));
    let e = lw.list(&ListOptions::default()).await.unwrap_err();
    assert!(e.is_gone() && e.is_expired(), "{e}");
    server.inject(Fault::expired_event(0));
    let mut stream = lw
        .watch(&ListOptions::default().with_resource_version("1"))
        .await
        .unwrap();
    let WatchEvent::Error(status) = next(&mut stream).await.unwrap().unwrap() else {
        panic!("an ERROR event")
    };
    assert!(status.is_gone());
    assert!(
        next(&mut stream).await.is_none(),
        "the stream ends after the ERROR"
    );
}

#[tokio::test]
async fn too_many_requests_carries_retry_after_json_or_text() {
    let server = server(false, 1).await;
    let lw = lw(&server).await;
    server.inject(Fault::too_many_requests(Verb::Watch, 4));
    let e = lw.watch(&ListOptions::default()).await.err().unwrap();
    assert!(e.is_too_many_requests() && e.is_watch_retriable());
    assert_eq!(e.retry_after(), Some(Duration::from_secs(4)));
    server.inject(Fault::new(
        Verb::List,
        FaultKind::Text {
            code: 429,
            body: "Too many requests, please try again later.\n".into(),
            retry_after: Some(2),
        },
    ));
    let e = lw.list(&ListOptions::default()).await.unwrap_err();
    assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
    let status = e.status().unwrap();
    assert_eq!(
        status.message.as_deref(),
        Some("Too many requests, please try again later.")
    );
    assert_eq!(status.reason.as_deref(), Some("TooManyRequests"));
}

#[tokio::test(start_paused = true)]
async fn kube_rs_retries_stay_inside_the_list_timeout() {
    // With kube-rs's retries on (its default), a 429 asking to wait 63 years is slept inside
    // kube-rs's client; the list's own timeout still ends the call.
    let server = server(false, 1).await;
    let resource = pods_resource();
    let api = Api::<kube_client::core::DynamicObject>::all_with(
        kube_client_with(&server, true).await,
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
async fn unknown_path_text_404_is_kept_as_text() {
    let server = server(false, 0).await;
    let nothings = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Nothing"),
        "nothings",
    );
    let api =
        Api::<kube_client::core::DynamicObject>::all_with(kube_client(&server).await, &nothings);
    let lw = KubeListerWatcher::<DynamicObject>::dynamic(api, &nothings);
    assert_eq!(lw.resource().as_deref(), Some("nothings.example.com"));
    let e = lw.list(&ListOptions::default()).await.unwrap_err();
    let status = e.status().unwrap();
    assert_eq!(status.code, Some(404));
    assert_eq!(status.message.as_deref(), Some("404 page not found"));
}

/// Watches from RV 0 (synthetic ADDED for `p0`, `p1`) with a fault after 1 event.
async fn watch_with_fault(kind: FaultKind, max_event_size: Option<usize>) -> Vec<String> {
    let server = server(false, 2).await;
    let resource = pods_resource();
    let api =
        Api::<kube_client::core::DynamicObject>::all_with(kube_client(&server).await, &resource);
    let mut builder = KubeListerWatcher::<DynamicObject>::builder_with(api, &resource);
    if let Some(limit) = max_event_size {
        builder = builder.max_event_size(limit);
    }
    let lw = builder.build();
    server.inject(Fault::watch(kind));
    let mut stream = lw
        .watch(&ListOptions::default().with_resource_version("0"))
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Some(item) = next(&mut stream).await {
        seen.push(match item {
            Ok(ev) => describe(&ev),
            Err(e) => format!("Err {}", support_chain(&e)),
        });
        if seen.len() == 3 {
            break;
        }
    }
    seen
}

#[tokio::test]
async fn corrupt_and_unknown_lines_are_decode_errors_and_the_watch_goes_on() {
    let seen = watch_with_fault(FaultKind::CorruptAfter(1), None).await;
    assert_eq!(seen[0], "Added p0");
    assert!(
        seen[1].starts_with("Err could not decode watch event: "),
        "{seen:?}"
    );
    assert_eq!(seen[2], "Added p1");
    let seen = watch_with_fault(FaultKind::UnknownTypeAfter(1), None).await;
    assert!(
        seen[1].contains("got an invalid watch event type") && !seen[1].contains("BOGUS"),
        "{seen:?}"
    );
    assert_eq!(seen[2], "Added p1");
}

#[tokio::test]
async fn truncated_or_dropped_streams_end_with_a_transport_error() {
    let seen = watch_with_fault(FaultKind::TruncateAfter(1), None).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[1].starts_with("Err transport error"), "{seen:?}");
    let seen = watch_with_fault(FaultKind::DropAfter(1), None).await;
    assert_eq!(seen[0], "Added p0");
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[1].starts_with("Err transport error"), "{seen:?}");
}

#[tokio::test]
async fn event_over_the_size_limit_is_skipped() {
    let server = server(false, 0).await;
    let mut big = DynamicObject::new(Some("ns"), "big");
    big.metadata.annotations = Some([("blob".to_owned(), "x".repeat(8000))].into());
    server
        .create(&fake_pods(), DynamicObject::new(Some("ns"), "a"))
        .unwrap();
    server.create(&fake_pods(), big).unwrap();
    server
        .create(&fake_pods(), DynamicObject::new(Some("ns"), "c"))
        .unwrap();
    let resource = pods_resource();
    let api =
        Api::<kube_client::core::DynamicObject>::all_with(kube_client(&server).await, &resource);
    let lw = KubeListerWatcher::<DynamicObject>::builder_with(api, &resource)
        .max_event_size(4096)
        .build();
    let mut stream = lw
        .watch(&ListOptions::default().with_resource_version("0"))
        .await
        .unwrap();
    assert_eq!(
        describe(&next(&mut stream).await.unwrap().unwrap()),
        "Added a"
    );
    let e = next(&mut stream).await.unwrap().unwrap_err();
    assert!(matches!(e, Error::Decode { .. }));
    assert!(
        support_chain(&e).contains("larger than the limit of 4096 bytes"),
        "{e}"
    );
    assert_eq!(
        describe(&next(&mut stream).await.unwrap().unwrap()),
        "Added c"
    );
}

#[tokio::test]
async fn list_over_max_list_bytes_is_a_limit_error() {
    let server = server(false, 20).await;
    let resource = pods_resource();
    let api =
        Api::<kube_client::core::DynamicObject>::all_with(kube_client(&server).await, &resource);
    let lw = KubeListerWatcher::<DynamicObject>::builder_with(api, &resource)
        .max_list_bytes(1000)
        .build();
    let e = lw.list(&ListOptions::default()).await.unwrap_err();
    assert!(matches!(e, Error::Limit(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "the list response is larger than the limit of 1000 bytes"
    );
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
    let client = kube_client(&server).await;
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
    let client = kube_client(&server).await;
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
