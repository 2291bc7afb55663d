//! The lister-watcher contract against the fake API server: lists, watches, decoding, bounds
//! and error kinds, each on every backend this build has ([`BACKENDS`]: client-http's own
//! client over HTTP and HTTPS, and with the `kube` feature kube-rs's client), then what only
//! client-http's own transport does (HTTP/2, shared connections, typed and compact objects).

use std::time::Duration;

use http::Version;
use kcache_client_http::{ApiResource, Config, HttpListerWatcher, Transport};
use kcache_reflector::{ListOptions, ListerWatcher, ResourceVersionMatch, WatchEvent};
use kcache_store::{DynamicObject, Object};
use kcache_testing_server::fake_api_server::{Fault, FaultKind, Verb};

use crate::support::{BACKENDS, Settings, client, describe, fake_pods, next, pods, server};
use crate::support_chain;

#[tokio::test]
async fn list_pages() {
    for &backend in BACKENDS {
        for &tls in backend.tls_modes() {
            let server = server(tls, 5).await;
            let lw = backend.pods(&server).await;
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
            assert_eq!(
                names,
                ["p0", "p1", "p2", "p3", "p4"],
                "{backend:?} tls {tls}"
            );
            assert_eq!(rvs.len(), 3);
            assert!(rvs.iter().all(|rv| rv == &rvs[0]));
        }
    }
}

#[tokio::test]
async fn list_with_selectors_in_one_namespace() {
    for &backend in BACKENDS {
        let server = server(false, 2).await;
        let mut labelled = DynamicObject::new(Some("other"), "x");
        labelled.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
        server.create(&fake_pods(), labelled).unwrap();
        let all = backend.pods(&server).await;
        let opts = ListOptions::default().with_label_selector("app in (web,api)");
        assert_eq!(all.list(&opts).await.unwrap().items.len(), 1, "{backend:?}");
        let settings = Settings {
            namespace: Some("ns"),
            ..Settings::default()
        };
        let ns = backend.lister_watcher(&server, &pods(), settings).await;
        let page = ns
            .list(&ListOptions::default().with_field_selector("metadata.name=p1"))
            .await
            .unwrap();
        assert_eq!(page.items.len(), 1, "{backend:?}");
        assert_eq!(page.items[0].name(), Some("p1"));
    }
}

#[tokio::test]
async fn watch_sees_changes_and_bookmarks() {
    for &backend in BACKENDS {
        for &tls in backend.tls_modes() {
            let server = server(tls, 1).await;
            let lw = backend.pods(&server).await;
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
                panic!("{backend:?}: a bookmark")
            };
            assert_eq!(b.resource_version, server.resource_version().to_string());
        }
    }
}

#[tokio::test]
async fn streaming_list_ends_with_the_initial_events_bookmark() {
    for &backend in BACKENDS {
        let server = server(*backend.tls_modes().last().unwrap(), 3).await;
        let opts = ListOptions {
            send_initial_events: Some(true),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            allow_watch_bookmarks: true,
            ..ListOptions::default()
        };
        let mut stream = backend.pods(&server).await.watch(&opts).await.unwrap();
        let mut seen = Vec::new();
        for _ in 0..4 {
            seen.push(describe(&next(&mut stream).await.unwrap().unwrap()));
        }
        assert_eq!(
            seen,
            ["Added p0", "Added p1", "Added p2", "BOOKMARK end=true"],
            "{backend:?}"
        );
    }
}

#[tokio::test]
async fn gone_as_http_410_and_as_error_event() {
    for &backend in BACKENDS {
        let server = server(false, 1).await;
        let lw = backend.pods(&server).await;
        server.inject(Fault::status(Verb::List, 410, "Expired", "too old"));
        let e = lw.list(&ListOptions::default()).await.unwrap_err();
        assert!(e.is_gone() && e.is_expired(), "{backend:?}: {e}");
        server.inject(Fault::expired_event(0));
        let mut stream = lw
            .watch(&ListOptions::default().with_resource_version("1"))
            .await
            .unwrap();
        let WatchEvent::Error(status) = next(&mut stream).await.unwrap().unwrap() else {
            panic!("{backend:?}: an ERROR event")
        };
        assert!(status.is_gone());
        assert!(
            next(&mut stream).await.is_none(),
            "{backend:?}: the stream ends after the ERROR"
        );
    }
}

#[tokio::test]
async fn too_many_requests_carries_retry_after_json_or_text() {
    for &backend in BACKENDS {
        let server = server(false, 1).await;
        let lw = backend.pods(&server).await;
        server.inject(Fault::too_many_requests(Verb::Watch, 4));
        let e = lw.watch(&ListOptions::default()).await.err().unwrap();
        assert!(
            e.is_too_many_requests() && e.is_watch_retriable(),
            "{backend:?}"
        );
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
        assert_eq!(e.retry_after(), Some(Duration::from_secs(2)), "{backend:?}");
        let status = e.status().unwrap();
        assert_eq!(
            status.message.as_deref(),
            Some("Too many requests, please try again later.")
        );
        assert_eq!(status.reason.as_deref(), Some("TooManyRequests"));
    }
}

#[tokio::test]
async fn unknown_path_text_404_is_kept_as_text() {
    for &backend in BACKENDS {
        let server = server(false, 0).await;
        let nothings = ApiResource::new("example.com", "v1", "nothings", true);
        let lw = backend
            .lister_watcher(&server, &nothings, Settings::default())
            .await;
        assert_eq!(lw.resource().as_deref(), Some("nothings.example.com"));
        let e = lw.list(&ListOptions::default()).await.unwrap_err();
        let status = e.status().unwrap();
        assert_eq!(status.code, Some(404), "{backend:?}");
        assert_eq!(status.message.as_deref(), Some("404 page not found"));
    }
}

/// On each backend: watches from RV 0 (synthetic ADDED for `p0`, `p1`) with a fault after
/// 1 event, and what the stream yielded (at most 3 items).
async fn watch_with_fault(kind: FaultKind) -> Vec<Vec<String>> {
    let mut all = Vec::new();
    for &backend in BACKENDS {
        let server = server(false, 2).await;
        let lw = backend.pods(&server).await;
        server.inject(Fault::watch(kind.clone()));
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
                // Faults that carry on would otherwise wait for the timeout.
                break;
            }
        }
        all.push(seen);
    }
    all
}

#[tokio::test]
async fn corrupt_line_is_a_decode_error_and_the_watch_goes_on() {
    for seen in watch_with_fault(FaultKind::CorruptAfter(1)).await {
        assert_eq!(seen[0], "Added p0");
        assert!(
            seen[1].starts_with("Err could not decode watch event: "),
            "{seen:?}"
        );
        assert_eq!(seen[2], "Added p1");
    }
}

#[tokio::test]
async fn unknown_event_type_is_a_decode_error() {
    for seen in watch_with_fault(FaultKind::UnknownTypeAfter(1)).await {
        // The server's text is not quoted back (it may be secret data).
        assert!(
            seen[1].contains("got an invalid watch event type") && !seen[1].contains("BOGUS"),
            "{seen:?}"
        );
        assert_eq!(seen[2], "Added p1");
    }
}

#[tokio::test]
async fn truncated_stream_ends_with_a_transport_error() {
    // A stream cut inside an event is a broken connection: the reflector watches again from
    // the last resource version and gets the event again.
    for seen in watch_with_fault(FaultKind::TruncateAfter(1)).await {
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(
            seen[1].starts_with(
                "Err transport error: the watch stream ended in the middle of an event, after"
            ),
            "{seen:?}"
        );
    }
}

#[tokio::test]
async fn dropped_connection_is_a_transport_error_then_the_end() {
    for seen in watch_with_fault(FaultKind::DropAfter(1)).await {
        assert_eq!(seen[0], "Added p0");
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(seen[1].starts_with("Err transport error"), "{seen:?}");
    }
}

#[tokio::test]
async fn event_over_the_size_limit_is_skipped() {
    for &backend in BACKENDS {
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
        let settings = Settings {
            max_event_size: Some(4096),
            ..Settings::default()
        };
        let lw = backend.lister_watcher(&server, &pods(), settings).await;
        let mut stream = lw
            .watch(&ListOptions::default().with_resource_version("0"))
            .await
            .unwrap();
        assert_eq!(
            describe(&next(&mut stream).await.unwrap().unwrap()),
            "Added a"
        );
        let e = next(&mut stream).await.unwrap().unwrap_err();
        assert!(
            matches!(e, kcache_reflector::Error::Decode { .. }),
            "{backend:?}"
        );
        assert!(
            support_chain(&e).contains("larger than the limit of 4096 bytes"),
            "{e}"
        );
        assert_eq!(
            describe(&next(&mut stream).await.unwrap().unwrap()),
            "Added c"
        );
    }
}

#[tokio::test]
async fn list_over_max_list_bytes_is_a_limit_error() {
    for &backend in BACKENDS {
        let server = server(false, 20).await;
        let settings = Settings {
            max_list_bytes: Some(1000),
            ..Settings::default()
        };
        let lw = backend.lister_watcher(&server, &pods(), settings).await;
        let e = lw.list(&ListOptions::default()).await.unwrap_err();
        assert!(
            matches!(e, kcache_reflector::Error::Limit(_)),
            "{backend:?}: {e:?}"
        );
        assert_eq!(
            e.to_string(),
            "the list response is larger than the limit of 1000 bytes"
        );
    }
}

#[tokio::test]
async fn http2_is_negotiated_over_tls_and_http1_on_plain() {
    for (tls, want) in [(true, Version::HTTP_2), (false, Version::HTTP_11)] {
        let server = server(tls, 0).await;
        let config: Config = crate::support::config(&server);
        let transport = kcache_client_http::HyperTransport::new(&config).unwrap();
        let request = http::Request::get(format!("{}/api/v1/pods", server.url()))
            .body(bytes::Bytes::new())
            .unwrap();
        let response = transport.send(request).await.unwrap();
        assert_eq!(response.version(), want, "tls {tls}");
        assert!(response.status().is_success());
        assert_eq!(
            server.requests().last().unwrap().version,
            format!("{want:?}")
        );
    }
}

#[tokio::test]
async fn watches_of_one_client_share_one_h2_connection() {
    let server = server(true, 0).await;
    let client = client(&server);
    let a = HttpListerWatcher::<DynamicObject>::dynamic(client.clone(), pods());
    let b = HttpListerWatcher::<DynamicObject>::dynamic(
        client,
        kcache_client_http::ApiResource::new("", "v1", "configmaps", true),
    );
    let _sa = a.watch(&ListOptions::default()).await.unwrap();
    let _sb = b.watch(&ListOptions::default()).await.unwrap();
    let _list = a.list(&ListOptions::default()).await.unwrap();
    assert!(server.requests().iter().all(|r| r.version == "HTTP/2.0"));
}

/// The object of the first event of a watch from resource version 0, which must be an ADDED.
async fn first_added<T: Object + std::fmt::Debug>(lw: &impl ListerWatcher<T>) -> T {
    let mut stream = lw
        .watch(&ListOptions::default().with_resource_version("0"))
        .await
        .unwrap();
    match next(&mut stream).await {
        Some(Ok(WatchEvent::Added(o))) => o,
        other => panic!("expected an ADDED event, got {other:?}"),
    }
}

/// Pod `ns/mf` with a `managedFields` entry.
fn managed_pod() -> DynamicObject {
    let mut pod = DynamicObject::new(Some("ns"), "mf");
    pod.metadata.other.insert(
        "managedFields".to_owned(),
        serde_json::json!([{"manager": "kubectl", "operation": "Apply"}]),
    );
    pod
}

#[tokio::test]
async fn skip_managed_fields_over_the_wire() {
    let server = server(false, 0).await;
    server.create(&fake_pods(), managed_pod()).unwrap();
    // `None`: the default, which drops them.
    for skip in [Some(false), Some(true), None] {
        let builder = HttpListerWatcher::<DynamicObject>::builder(client(&server), pods());
        let lw = match skip {
            Some(skip) => builder.skip_managed_fields(skip),
            None => builder,
        }
        .build();
        let skip = skip.unwrap_or(true);
        let page = lw.list(&ListOptions::default()).await.unwrap();
        assert_eq!(
            page.items[0].metadata.other.contains_key("managedFields"),
            !skip
        );
        let o = first_added(&lw).await;
        assert_eq!(o.metadata.other.contains_key("managedFields"), !skip);
    }
}

#[tokio::test]
async fn compact_objects_over_the_wire() {
    use kcache_store::{Compact, CompactCodec, Object};
    let server = server(false, 0).await;
    let mut pod = managed_pod();
    pod.data
        .insert("spec".to_owned(), serde_json::json!({"nodeName": "n1"}));
    let stored = server.create(&fake_pods(), pod).unwrap();
    for keep in [false, true] {
        let lw = HttpListerWatcher::<Compact<DynamicObject>>::compact(client(&server), pods())
            .codec(CompactCodec::new().keep_managed_fields(keep))
            .build();
        let mut expected = stored.clone();
        if !keep {
            std::sync::Arc::make_mut(&mut expected)
                .metadata
                .other
                .remove("managedFields");
        }
        let page = lw.list(&ListOptions::default()).await.unwrap();
        assert_eq!(page.items.len(), 1);
        assert_eq!(page.items[0].name(), Some("mf"));
        // List items come without kind and apiVersion, as the API server writes them.
        let mut item = page.items[0].typed().unwrap();
        item.api_version.clone_from(&expected.api_version);
        item.kind.clone_from(&expected.kind);
        assert_eq!(item, *expected);
        let o = first_added(&lw).await;
        assert_eq!(
            o.resource_version(),
            stored.metadata.resource_version.as_deref()
        );
        assert_eq!(o.pointer("/spec/nodeName").unwrap(), Some("n1".into()));
        assert_eq!(o.typed().unwrap(), *expected);
    }
}

#[cfg(feature = "k8s-openapi")]
#[tokio::test]
async fn typed_k8s_openapi_pods() {
    use k8s_openapi::api::core::v1::Pod;
    let server = server(false, 2).await;
    let lw = HttpListerWatcher::<Pod>::typed(client(&server))
        .namespace("ns")
        .skip_managed_fields(true)
        .build();
    assert_eq!(lw.resource(), &pods());
    let page = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.items[1].metadata.name.as_deref(), Some("p1"));
}

#[tokio::test]
async fn refused_connection_is_a_retriable_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let config = Config::new(format!("http://{addr}").parse().unwrap());
    let lw = HttpListerWatcher::<DynamicObject>::dynamic(
        kcache_client_http::Client::new(config).unwrap(),
        pods(),
    );
    let e = lw.watch(&ListOptions::default()).await.err().unwrap();
    assert!(e.is_connection_refused(), "{e:?}");
}
