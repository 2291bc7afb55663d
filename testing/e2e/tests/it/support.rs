//! Helpers: the pods resource as client and server name it, a client config for the fake
//! server, the names in an informer's cache, temporary directories, and the two backends an
//! informer runs on.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use kcache_client_http::{
    ApiResource, Client, Config, HttpListerWatcher, KubeListerWatcher, Kubeconfig,
    KubeconfigOptions,
};
use kcache_informer::SharedIndexInformer;
use kcache_reflector::ListerWatcher;
use kcache_store::{Compact, DynamicObject, Object, PartialObjectMetadata};
use kcache_testing_server::FakeApiServer;
use serde::de::DeserializeOwned;

/// The core pods resource, as the client names it.
pub(crate) fn pods() -> ApiResource {
    ApiResource::new("", "v1", "pods", true)
}

/// The fake server's pods resource.
pub(crate) fn fake_pods() -> kcache_testing_server::ServedResource {
    kcache_testing_server::ServedResource::pods()
}

/// The config of the server's own kubeconfig (CA included for TLS).
pub(crate) fn config(server: &FakeApiServer) -> Config {
    let kc = Kubeconfig::from_yaml(&server.kubeconfig("ns")).unwrap();
    kc.config(&KubeconfigOptions::default()).unwrap()
}

/// The names of the objects in `informer`'s cache.
pub(crate) fn names(informer: &SharedIndexInformer<DynamicObject>) -> BTreeSet<String> {
    informer
        .indexer()
        .list()
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect()
}

/// A temporary directory, removed when dropped.
pub(crate) fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// The HTTP backend an informer lists and watches through: the full-stack tests run over both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// client-http's own client and `HttpListerWatcher` (hyper, HTTP/2 over TLS).
    Http,
    /// `KubeListerWatcher` over a kube-rs `Client` (HTTP/1.1).
    Kube,
}

/// Both backends.
pub(crate) const BACKENDS: [Backend; 2] = [Backend::Http, Backend::Kube];

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Http => "http",
            Self::Kube => "kube",
        })
    }
}

impl Backend {
    /// The backend named `name` (as [`Display`](fmt::Display) prints it).
    pub(crate) fn named(name: &str) -> Option<Self> {
        BACKENDS.into_iter().find(|b| b.to_string() == name)
    }

    /// Pods of every namespace at plain-HTTP `url`, decoded as `T` with the defaults.
    pub(crate) fn pods<T>(self, url: &str) -> Arc<dyn ListerWatcher<T>>
    where
        T: Object + DeserializeOwned,
    {
        match self {
            Self::Http => Arc::new(HttpListerWatcher::dynamic(http_client(url), pods())),
            Self::Kube => Arc::new(KubeListerWatcher::new(kube_pods(url))),
        }
    }

    /// Pods of every namespace at plain-HTTP `url`, metadata only (`PartialObjectMetadata`
    /// naming `v1` `Pod`).
    pub(crate) fn metadata_pods(self, url: &str) -> Arc<dyn ListerWatcher<PartialObjectMetadata>> {
        match self {
            Self::Http => Arc::new(
                HttpListerWatcher::<PartialObjectMetadata>::builder(http_client(url), pods())
                    .kind("Pod")
                    .metadata_only()
                    .build(),
            ),
            Self::Kube => Arc::new(
                KubeListerWatcher::<PartialObjectMetadata>::metadata(kube_pods(url)).build(),
            ),
        }
    }

    /// Pods of every namespace at plain-HTTP `url`, metadata only in protobuf.
    pub(crate) fn metadata_protobuf_pods(
        self,
        url: &str,
    ) -> Arc<dyn ListerWatcher<PartialObjectMetadata>> {
        match self {
            Self::Http => Arc::new(
                HttpListerWatcher::<PartialObjectMetadata>::builder(http_client(url), pods())
                    .kind("Pod")
                    .metadata_only()
                    .protobuf()
                    .build(),
            ),
            Self::Kube => Arc::new(
                KubeListerWatcher::<PartialObjectMetadata>::metadata(kube_pods(url))
                    .protobuf()
                    .build(),
            ),
        }
    }

    /// Pods of every namespace at plain-HTTP `url`, asked for in protobuf.
    pub(crate) fn protobuf_pods<T>(self, url: &str) -> Arc<dyn ListerWatcher<T>>
    where
        T: Object + DeserializeOwned + Send + 'static,
    {
        match self {
            Self::Http => Arc::new(
                HttpListerWatcher::<T>::builder(http_client(url), pods())
                    .kind("Pod")
                    .protobuf()
                    .build(),
            ),
            Self::Kube => Arc::new(
                KubeListerWatcher::builder(kube_pods(url))
                    .protobuf()
                    .build(),
            ),
        }
    }

    /// Pods of every namespace at plain-HTTP `url` as compact objects (the default codec),
    /// asked for in protobuf.
    pub(crate) fn compact_protobuf_pods<K>(self, url: &str) -> Arc<dyn ListerWatcher<Compact<K>>>
    where
        K: DeserializeOwned + 'static,
    {
        match self {
            Self::Http => Arc::new(
                HttpListerWatcher::compact(http_client(url), pods())
                    .kind("Pod")
                    .protobuf()
                    .build(),
            ),
            Self::Kube => Arc::new(
                KubeListerWatcher::compact(kube_pods(url))
                    .protobuf()
                    .build(),
            ),
        }
    }

    /// Pods of every namespace at plain-HTTP `url` as compact objects (the default codec).
    pub(crate) fn compact_pods<K>(self, url: &str) -> Arc<dyn ListerWatcher<Compact<K>>>
    where
        K: DeserializeOwned + 'static,
    {
        match self {
            Self::Http => Arc::new(HttpListerWatcher::compact(http_client(url), pods()).build()),
            Self::Kube => Arc::new(KubeListerWatcher::compact(kube_pods(url)).build()),
        }
    }
}

/// client-http's client of the plain-HTTP server at `url`.
pub(crate) fn http_client(url: &str) -> Client {
    Client::new(Config::new(url.parse().unwrap())).unwrap()
}

/// A kube-rs client of the plain-HTTP server at `url`, with kube-rs's own retries off (the
/// reflector retries, with its backoff and its cap on `Retry-After`).
pub(crate) fn kube_client(url: &str) -> kube_client::Client {
    let mut config = kube_client::Config::new(url.parse().unwrap());
    config.default_retry = false;
    kube_client::Client::try_from(config).unwrap()
}

/// kube-rs's `Api` of pods in every namespace at `url`.
pub(crate) fn kube_pods(url: &str) -> kube_client::Api<k8s_openapi::api::core::v1::Pod> {
    kube_client::Api::all(kube_client(url))
}
