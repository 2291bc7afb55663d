//! Proxies over the wire: the fake API server behind a fake HTTP `CONNECT` proxy and a fake
//! SOCKS5 proxy, set as `Config::proxy` and as a kubeconfig's `proxy-url`, with and without
//! credentials; and what a dead or refusing proxy gives (an error naming the proxy, never a
//! direct connection).

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Version};
use kcache_client_http::{Client, Config, HttpListerWatcher, Kubeconfig, KubeconfigOptions, Proxy};
use kcache_reflector::{ListOptions, ListerWatcher, WatchEvent};
use kcache_store::DynamicObject;
use kcache_testing_server::{FakeApiServer, FakeProxy, ProxyProtocol};

use crate::support::{self, fake_pods, list_names as list, next, pods};

/// `config` with every request going through `proxy_url`.
fn through(mut config: Config, proxy_url: &str) -> Config {
    config.proxy = Proxy::Url(proxy_url.parse().unwrap());
    config
}

/// The server's `host:port`, as a tunnel names it.
fn target(server: &FakeApiServer) -> String {
    server
        .url()
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .to_owned()
}

#[tokio::test]
async fn lists_and_watches_through_a_connect_proxy_over_tls_and_http2() {
    let server = support::server(true, 3).await;
    let proxy = FakeProxy::start(ProxyProtocol::HttpConnect).await.unwrap();
    let client = Client::new(through(support::config(&server), &proxy.url())).unwrap();

    // TLS and ALPN run inside the tunnel: the server sees HTTP/2.
    let request = Request::get(format!("{}/api/v1/pods", client.base_url()))
        .body(Bytes::new())
        .unwrap();
    let response = client.send(request).await.unwrap();
    assert_eq!(response.version(), Version::HTTP_2);

    let lw = HttpListerWatcher::<DynamicObject>::dynamic(client, pods());
    let list = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(list.items.len(), 3);
    let mut watch = lw
        .watch(&ListOptions {
            resource_version: list.resource_version.clone(),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    server
        .create(&fake_pods(), DynamicObject::new(Some("ns"), "late"))
        .unwrap();
    match next(&mut watch).await {
        Some(Ok(WatchEvent::Added(pod))) => {
            assert_eq!(pod.metadata.name.as_deref(), Some("late"));
        }
        other => panic!("expected the new pod, got {other:?}"),
    }
    // One HTTP/2 connection carried everything, through one tunnel to the server.
    assert_eq!(proxy.tunnels(), [target(&server)]);
    assert!(
        server.requests().iter().all(|r| r.version == "HTTP/2.0"),
        "{:?}",
        server.requests()
    );
}

#[tokio::test]
async fn a_kubeconfig_proxy_url_with_socks5_credentials_is_honoured() {
    let server = support::server(true, 2).await;
    let proxy = FakeProxy::builder()
        .protocol(ProxyProtocol::Socks5)
        .credentials("alice", "s3cr:t@")
        .start()
        .await
        .unwrap();
    let url = proxy.url_with_credentials("alice", "s3cr:t@");
    let mut kubeconfig: serde_json::Value = serde_json::from_str(&server.kubeconfig("ns")).unwrap();
    kubeconfig["clusters"][0]["cluster"]["proxy-url"] = url.into();
    let config = Kubeconfig::from_yaml(&kubeconfig.to_string())
        .unwrap()
        .config(&KubeconfigOptions::default())
        .unwrap();
    assert!(matches!(&config.proxy, Proxy::Url(p) if p.has_credentials()));
    assert!(
        !format!("{config:?}").contains("s3cr"),
        "Debug shows no proxy password"
    );
    assert_eq!(list(config).await.unwrap(), ["p0", "p1"]);
    assert_eq!(proxy.tunnels(), [target(&server)]);
    assert_eq!(proxy.refusals(), 0);
}

#[tokio::test]
async fn proxy_credentials_are_sent_and_a_refusal_names_the_proxy() {
    let server = support::server(true, 1).await;
    for (protocol, refused) in [
        (ProxyProtocol::HttpConnect, "proxy authorization required"),
        (ProxyProtocol::Socks5, "SOCKS error"),
    ] {
        let proxy = FakeProxy::builder()
            .protocol(protocol)
            .credentials("bob", "hunter2")
            .start()
            .await
            .unwrap();
        let good = proxy.url_with_credentials("bob", "hunter2");
        assert_eq!(
            list(through(support::config(&server), &good))
                .await
                .unwrap(),
            ["p0"]
        );
        // Wrong credentials, then none.
        for url in [proxy.url_with_credentials("bob", "wrong"), proxy.url()] {
            let e = list(through(support::config(&server), &url))
                .await
                .unwrap_err();
            assert!(e.contains(&format!("through proxy {}", proxy.url())), "{e}");
            assert!(e.contains(refused), "{e}");
            assert!(!e.contains("wrong") && !e.contains("hunter2"), "{e}");
        }
        assert_eq!(proxy.refusals(), 2, "{protocol:?}");
        assert_eq!(proxy.tunnels().len(), 1, "{protocol:?}");
    }
}

#[tokio::test]
async fn a_dead_proxy_is_an_error_and_never_a_direct_connection() {
    let server = support::server(true, 1).await;
    let refusing = kcache_testing_server::RefusingPort::new().unwrap();
    let port = refusing.port();
    for scheme in ["http", "socks5"] {
        let url = format!("{scheme}://127.0.0.1:{port}");
        let e = list(through(support::config(&server), &url))
            .await
            .unwrap_err();
        assert!(
            e.contains(&format!("through proxy {url}: cannot connect to the proxy")),
            "{e}"
        );
        assert!(e.to_lowercase().contains("refused"), "{e}");
        // Still a refused connection to the reflector, which retries the watch after a backoff.
        let lw = HttpListerWatcher::<DynamicObject>::dynamic(
            Client::new(through(support::config(&server), &url)).unwrap(),
            pods(),
        );
        let e = lw.watch(&ListOptions::default()).await.err().unwrap();
        assert!(e.is_connection_refused(), "{e:?}");
    }
    assert!(
        server.requests().is_empty(),
        "nothing reached the server directly"
    );
}

#[tokio::test]
async fn a_server_the_proxy_cannot_reach_is_an_error_naming_the_proxy() {
    let refusing = kcache_testing_server::RefusingPort::new().unwrap();
    let port = refusing.port();
    for protocol in [ProxyProtocol::HttpConnect, ProxyProtocol::Socks5] {
        let proxy = FakeProxy::start(protocol).await.unwrap();
        let config = through(
            Config::new(format!("http://127.0.0.1:{port}").parse().unwrap()),
            &proxy.url(),
        );
        let e = list(config).await.unwrap_err();
        assert!(e.contains(&format!("through proxy {}", proxy.url())), "{e}");
        assert!(!e.contains("cannot connect to the proxy"), "{e}");
        assert_eq!(proxy.refusals(), 1, "{protocol:?}");
        assert!(proxy.tunnels().is_empty());
    }
}

#[tokio::test]
async fn plain_http_servers_are_tunnelled_too() {
    let server = support::server(false, 2).await;
    let proxy = FakeProxy::start(ProxyProtocol::HttpConnect).await.unwrap();
    let config = through(support::config(&server), &proxy.url());
    assert_eq!(list(config).await.unwrap(), ["p0", "p1"]);
    assert_eq!(proxy.tunnels(), [target(&server)]);
}

#[tokio::test]
async fn bad_proxy_urls_in_a_kubeconfig_are_specific_errors() {
    let load = |proxy: &str| {
        let yaml = format!(
            "current-context: c\nclusters: [{{name: c, cluster: {{server: 'https://h', proxy-url: '{proxy}'}}}}]\ncontexts: [{{name: c, context: {{cluster: c}}}}]\n"
        );
        Kubeconfig::from_yaml(&yaml)
            .unwrap()
            .config(&KubeconfigOptions::default())
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert_eq!(load(""), Ok(()), "an empty proxy-url means none");
    let e = load("https://proxy:443").unwrap_err();
    assert!(
        e.starts_with("unsupported setting: proxy-url of cluster `c`: https://"),
        "{e}"
    );
    let e = load("proxy:3128").unwrap_err();
    assert_eq!(
        e,
        "invalid proxy-url of cluster `c`: no scheme (expected http://, socks5:// or socks5h://)"
    );
    let e = load("http://proxy:3128/some/path").unwrap_err();
    assert!(e.contains("no path"), "{e}");
}

#[tokio::test]
async fn the_environment_default_reaches_loopback_servers_directly() {
    // `Config::new` reads HTTPS_PROXY and friends, which never apply to loopback servers (the
    // rules themselves are unit tests of the crate; the environment is process-wide).
    let server = support::server(true, 1).await;
    let config = support::config(&server);
    assert!(matches!(config.proxy, Proxy::FromEnvironment));
    let listed = tokio::time::timeout(Duration::from_secs(10), list(config)).await;
    assert_eq!(listed.unwrap().unwrap(), ["p0"]);
}
