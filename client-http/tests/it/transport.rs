//! The transport seam: a second transport (a recording wrapper, and a fully in-memory one)
//! plugged into the client and the lister-watcher.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;
use kcache_client_http::{
    ApiResource, BoxError, Client, Config, HttpListerWatcher, HyperTransport, ResponseBody,
    Transport,
};
use kcache_reflector::{ListOptions, ListerWatcher, WatchEvent};
use kcache_store::{DynamicObject, Object};

use crate::support::{config, pods, server};

/// What a [`Recording`] transport saw: the URL and `Authorization` header of each request.
pub(crate) type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// Wraps another transport and records every request.
#[derive(Debug)]
pub(crate) struct Recording<T> {
    pub(crate) inner: T,
    pub(crate) seen: Seen,
}

#[async_trait::async_trait]
impl<T: Transport> Transport for Recording<T> {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, BoxError> {
        let auth = request
            .headers()
            .get(http::header::AUTHORIZATION)
            .map(|v| v.to_str().unwrap().to_owned());
        self.seen
            .lock()
            .unwrap()
            .push((request.uri().to_string(), auth));
        self.inner.send(request).await
    }
}

/// A client over a recording wrapper of the default transport for `config`.
pub(crate) fn recording_client(config: Config) -> (Client, Seen) {
    let seen = Seen::default();
    let inner = HyperTransport::new(&config).unwrap();
    let transport = Recording {
        inner,
        seen: seen.clone(),
    };
    (Client::with_transport(config, transport).unwrap(), seen)
}

/// The `Authorization` headers seen so far.
pub(crate) fn auth_headers(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|(_, a)| a.clone().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn a_recording_transport_sees_every_request_and_the_token() {
    let server = server(true, 2).await;
    let (client, seen) = recording_client(config(&server));
    let lw = HttpListerWatcher::<DynamicObject>::dynamic(client, pods());
    assert_eq!(
        lw.list(&ListOptions::default()).await.unwrap().items.len(),
        2
    );
    let mut stream = lw
        .watch(&ListOptions::default().with_resource_version("0"))
        .await
        .unwrap();
    assert!(matches!(
        stream.next().await,
        Some(Ok(WatchEvent::Added(_)))
    ));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].0, format!("{}/api/v1/pods", server.url()));
    assert_eq!(
        seen[1].0,
        format!("{}/api/v1/pods?watch=1&resourceVersion=0", server.url())
    );
    assert_eq!(seen[0].1.as_deref(), Some("Bearer kcache-fake-token"));
}

/// A transport with no network at all: canned answers by path.
#[derive(Debug)]
struct InMemory;

#[async_trait::async_trait]
impl Transport for InMemory {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, BoxError> {
        let watch = request.uri().query().is_some_and(|q| q.contains("watch=1"));
        let chunks: Vec<Result<Bytes, BoxError>> = if watch {
            // One event split across three chunks.
            [
                &br#"{"type":"ADDED","object":{"metadata":{"na"#[..],
                br#"me":"w","namespace":"m"}}}"#,
                b"\n",
            ]
            .into_iter()
            .map(|c| Ok(Bytes::from_static(c)))
            .collect()
        } else {
            vec![Ok(Bytes::from_static(
                br#"{"metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"m1","namespace":"m"}}]}"#,
            ))]
        };
        let body: ResponseBody = Box::pin(futures_util::stream::iter(chunks));
        Ok(http::Response::new(body))
    }
}

#[tokio::test]
async fn an_in_memory_transport_needs_no_server() {
    let config = Config::new("http://in-memory.invalid".parse().unwrap());
    let client = Client::with_transport(config, InMemory).unwrap();
    let lw = HttpListerWatcher::<DynamicObject>::dynamic(
        client,
        ApiResource::new("", "v1", "pods", true),
    );
    let page = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(
        (page.resource_version.as_str(), page.items[0].name()),
        ("5", Some("m1"))
    );
    let mut stream = lw.watch(&ListOptions::default()).await.unwrap();
    let Some(Ok(WatchEvent::Added(o))) = stream.next().await else {
        panic!("an ADDED event")
    };
    assert_eq!(o.name(), Some("w"));
    assert!(stream.next().await.is_none());
}
