//! [`KubeListerWatcher`]: lists and watches one resource through a kube-rs client, decoding
//! with this crate's decoders.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use futures_util::TryStreamExt;
use http::header::{ACCEPT, ACCEPT_ENCODING};
use http_body_util::BodyExt;
use kcache_reflector::{Error, ListOptions, ListerWatcher, ObjectList, WatchStream};
use kcache_store::{Compact, CompactCodec, ExpectedType, Object, PartialObjectMetadata};
use kube_client::client::Body;
use kube_client::core::{ApiResource, DynamicObject, Resource};
use kube_client::{Api, Client};
use serde::de::DeserializeOwned;

use crate::BoxError;
use crate::config::{DEFAULT_LIST_TIMEOUT, DEFAULT_WATCH_TIMEOUT_SLACK};
use crate::decode::metadata::{
    ACCEPT_METADATA, ACCEPT_METADATA_LIST, ACCEPT_METADATA_LIST_PROTOBUF, ACCEPT_METADATA_PROTOBUF,
    metadata_objects, metadata_proto_objects,
};
use crate::decode::protobuf::ACCEPT_PROTOBUF;
use crate::decode::response::{Decoding, watch_guard};
use crate::kube::error_from_kube;
use crate::transport::ResponseBody;
use crate::transport::deadline::within;
use crate::transport::request::{ACCEPT_JSON, push_query, resource_name};
use crate::transport::response::error_status;

/// Lists and watches one resource through a kube-rs [`Client`]: the
/// [`ListerWatcher`] for an application that already has one (see the
/// [module documentation](crate::kube) for what is the same as
/// [`HttpListerWatcher`](crate::HttpListerWatcher) and what kube-rs's settings change).
///
/// Built from an [`Api`]: its client and its collection URL (namespace included) are all that
/// is taken from it. `T` is what the cache holds, decoded by this crate.
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kcache_client_http::KubeListerWatcher;
/// use kcache_reflector::ListerWatcher;
/// use kcache_store::{Compact, DynamicObject};
/// use kube_client::core::{ApiResource, GroupVersionKind};
///
/// let client = kube_client::Client::try_default().await?;
///
/// // Typed: an `Api<K>` of a k8s-openapi type, cached as compact objects.
/// let api: kube_client::Api<ConfigMap> = kube_client::Api::all(client.clone());
/// let config_maps: Arc<dyn ListerWatcher<Compact<ConfigMap>>> =
///     Arc::new(KubeListerWatcher::compact(api).build());
///
/// // Dynamic: an `Api<DynamicObject>` of a custom resource, through its `ApiResource`.
/// let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
/// let widgets = ApiResource::from_gvk_with_plural(&gvk, "widgets");
/// let api = kube_client::Api::<kube_client::core::DynamicObject>::namespaced_with(
///     client, "prod", &widgets,
/// );
/// let widgets: Arc<dyn ListerWatcher<DynamicObject>> =
///     Arc::new(KubeListerWatcher::dynamic(api, &widgets));
/// # drop((config_maps, widgets)); Ok(()) }
/// ```
pub struct KubeListerWatcher<T> {
    client: Client,
    /// The collection's path, namespace included (`/api/v1/namespaces/ns/pods`).
    path: String,
    /// `plural` or `plural.group`, for the reflector's logs.
    resource: String,
    list_timeout: Duration,
    watch_timeout_slack: Duration,
    decoding: Decoding<T>,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for KubeListerWatcher<T> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            path: self.path.clone(),
            resource: self.resource.clone(),
            list_timeout: self.list_timeout,
            watch_timeout_slack: self.watch_timeout_slack,
            decoding: self.decoding.clone(),
            _t: PhantomData,
        }
    }
}

impl<T> fmt::Debug for KubeListerWatcher<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // kube-rs's `Client` has no `Debug`.
        f.debug_struct("KubeListerWatcher")
            .field("path", &self.path)
            .field("resource", &self.resource)
            .field("list_timeout", &self.list_timeout)
            .field("watch_timeout_slack", &self.watch_timeout_slack)
            .field("decoding", &self.decoding)
            .finish_non_exhaustive()
    }
}

/// Builds a [`KubeListerWatcher`]. The decoding options are those of
/// [`HttpListerWatcherBuilder`](crate::HttpListerWatcherBuilder), with the same defaults.
#[must_use]
pub struct KubeListerWatcherBuilder<T> {
    inner: KubeListerWatcher<T>,
}

impl<T> fmt::Debug for KubeListerWatcherBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("KubeListerWatcherBuilder")
            .field(&self.inner)
            .finish()
    }
}

impl<T> KubeListerWatcherBuilder<T> {
    crate::decode::setters::decoding_setters!();

    /// The bound on one list request, body included, and on opening a watch (default 60 s, as
    /// [`Config::list_timeout`](crate::Config::list_timeout)); past it the call fails with [`Error::Timeout`].
    pub fn list_timeout(mut self, timeout: Duration) -> Self {
        self.inner.list_timeout = timeout;
        self
    }

    /// A watch asked to last `timeoutSeconds` is ended by the client after that plus this much,
    /// in case the server never ends it (default 30 s, as [`Config::watch_timeout_slack`](crate::Config::watch_timeout_slack)).
    pub fn watch_timeout_slack(mut self, slack: Duration) -> Self {
        self.inner.watch_timeout_slack = slack;
        self
    }

    /// Ask for Kubernetes' protobuf encoding, JSON named as the fallback, as
    /// [`HttpListerWatcherBuilder::protobuf`](crate::HttpListerWatcherBuilder::protobuf) does
    /// (the same decoders read the answer, by its `Content-Type`); metadata-only ones ask for
    /// their metadata in protobuf, compact ones keep protobuf answers compact in protobuf.
    pub fn protobuf(mut self) -> Self {
        self.inner.decoding.protobuf = true;
        self
    }

    /// The lister-watcher.
    pub fn build(self) -> KubeListerWatcher<T> {
        self.inner
    }
}

impl<K: DeserializeOwned + 'static> KubeListerWatcherBuilder<Compact<K>> {
    crate::decode::setters::codec_setter!();

    /// Ask for metadata only and keep it compact, as
    /// [`HttpListerWatcherBuilder`](crate::HttpListerWatcherBuilder)'s `metadata_only` for
    /// compact objects does.
    pub fn metadata_only(mut self) -> Self {
        self.inner.decoding.expected.r#type =
            self.inner.decoding.expected.r#type.clone().or_metadata();
        self.codec(CompactCodec::new())
    }
}

impl KubeListerWatcherBuilder<PartialObjectMetadata> {
    /// Ask for metadata only, as
    /// [`HttpListerWatcherBuilder::metadata_only`](crate::HttpListerWatcherBuilder::metadata_only)
    /// does: the objects are [`PartialObjectMetadata`]s naming the `Api`'s type (kube-rs's
    /// `metadata_watcher` over this crate's cache).
    pub fn metadata_only(mut self) -> Self {
        let expected = self.inner.decoding.expected.r#type.clone().or_metadata();
        self.inner.decoding.expected.r#type = expected.clone();
        let skip = self.inner.decoding.options.skip_managed_fields;
        self.inner.decoding.objects = Some(metadata_objects(expected.clone(), skip));
        self.inner.decoding.proto_objects = Some(metadata_proto_objects(expected, skip));
        self
    }
}

impl KubeListerWatcher<PartialObjectMetadata> {
    /// A builder of a metadata-only lister-watcher of the resource of a typed `api` (see
    /// [`metadata_only`](KubeListerWatcherBuilder::metadata_only)).
    pub fn metadata<A>(api: Api<A>) -> KubeListerWatcherBuilder<PartialObjectMetadata>
    where
        A: Resource,
        A::DynamicType: Default,
    {
        Self::builder(api).metadata_only()
    }
}

impl<T> KubeListerWatcher<T> {
    /// A builder for the resource of `api`, a typed [`Api<K>`] (`K` a k8s-openapi type or a
    /// `#[derive(CustomResource)]` one), decoded as `T`.
    pub fn builder<K>(api: Api<K>) -> KubeListerWatcherBuilder<T>
    where
        K: Resource,
        K::DynamicType: Default,
    {
        Self::builder_with(api, &K::DynamicType::default())
    }

    /// A builder for the resource of `api`, whose type `K` is described by `dyntype` (an
    /// [`ApiResource`] for [`DynamicObject`]), decoded as `T`.
    pub fn builder_with<K: Resource>(
        api: Api<K>,
        dyntype: &K::DynamicType,
    ) -> KubeListerWatcherBuilder<T> {
        let resource = resource_name(&K::plural(dyntype), &K::group(dyntype));
        let path = api.resource_url().to_owned();
        let mut decoding = Decoding::default();
        // The type kube-rs knows for `K`, and the namespace of the `Api`: what a typed decode
        // and a namespaced list would accept.
        decoding.expected.r#type =
            ExpectedType::new(&K::api_version(dyntype), Some(&K::kind(dyntype)));
        decoding.expected.namespace = namespace_of(&path).map(str::to_owned);
        KubeListerWatcherBuilder {
            inner: Self {
                path,
                client: api.into_client(),
                resource,
                list_timeout: DEFAULT_LIST_TIMEOUT,
                watch_timeout_slack: DEFAULT_WATCH_TIMEOUT_SLACK,
                decoding,
                _t: PhantomData,
            },
        }
    }

    /// A lister-watcher of the resource of `api` (typed) with the defaults.
    pub fn new<K>(api: Api<K>) -> Self
    where
        K: Resource,
        K::DynamicType: Default,
    {
        Self::builder(api).build()
    }

    /// A lister-watcher of the resource of a dynamic `api`, described by `resource` (the
    /// [`ApiResource`] the `Api` was made with), with the defaults.
    pub fn dynamic(api: Api<DynamicObject>, resource: &ApiResource) -> Self {
        Self::builder_with(api, resource).build()
    }

    /// The collection's path, namespace included (`/api/v1/namespaces/ns/pods`).
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl<K: DeserializeOwned + 'static> KubeListerWatcher<Compact<K>> {
    /// A builder producing [`Compact`] objects (only the metadata decoded, the rest kept
    /// compressed against a dictionary the list and watches share; see
    /// [`HttpListerWatcher::compact`](crate::HttpListerWatcher::compact)) for the resource of a
    /// typed `api`. For a dynamic one, use [`builder_with`](Self::builder_with) and
    /// [`codec`](KubeListerWatcherBuilder::codec).
    pub fn compact<A>(api: Api<A>) -> KubeListerWatcherBuilder<Compact<K>>
    where
        A: Resource,
        A::DynamicType: Default,
    {
        Self::builder(api).codec(CompactCodec::new())
    }
}

impl<T> KubeListerWatcher<T> {
    /// A GET of the collection with the query of `opts`, as
    /// [`HttpListerWatcher`](crate::HttpListerWatcher) sends it; kube-rs's client adds the
    /// server's URL and the credentials.
    fn request(&self, opts: &ListOptions, watch: bool) -> Result<http::Request<Body>, Error> {
        let mut uri = String::with_capacity(self.path.len() + 128);
        uri.push_str(&self.path);
        push_query(&mut uri, opts, watch);
        let protobuf = self.decoding.asks_protobuf();
        let accept = match (self.decoding.expected.r#type.accepts_metadata(), watch) {
            (false, _) if protobuf => ACCEPT_PROTOBUF,
            (false, _) => ACCEPT_JSON,
            (true, false) if protobuf => ACCEPT_METADATA_LIST_PROTOBUF,
            (true, false) => ACCEPT_METADATA_LIST,
            (true, true) if protobuf => ACCEPT_METADATA_PROTOBUF,
            (true, true) => ACCEPT_METADATA,
        };
        http::Request::get(uri)
            .header(ACCEPT, accept)
            // kube-rs's `gzip` feature would otherwise ask for compression.
            .header(ACCEPT_ENCODING, "identity")
            .body(Body::empty())
            .map_err(Error::transport)
    }

    /// Sends `request` and returns the `Content-Type` and body of a 2xx answer; any other
    /// answer is an [`Error::Api`] with its `Status`, read as client-http reads one.
    async fn send(
        &self,
        request: http::Request<Body>,
    ) -> Result<(Option<String>, ResponseBody), Error> {
        let response = self.client.send(request).await.map_err(error_from_kube)?;
        let (parts, body) = response.into_parts();
        let body: ResponseBody = Box::pin(body.into_data_stream().map_err(BoxError::from));
        if parts.status.is_success() {
            let content_type = crate::decode::response::content_type(&parts.headers);
            Ok((content_type, body))
        } else {
            let response = http::Response::from_parts(parts, body);
            Err(Error::api(error_status(response).await))
        }
    }
}

/// The namespace of a collection path (`/api/v1/namespaces/ns/pods` or
/// `/apis/apps/v1/namespaces/ns/deployments`), `None` for every namespace or a cluster-scoped
/// resource (`/api/v1/namespaces` itself lists namespaces).
fn namespace_of(path: &str) -> Option<&str> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let at = segments.iter().position(|s| *s == "namespaces")?;
    // A namespace and, after it, the resource.
    (segments.len() == at + 3).then(|| segments[at + 1])
}

#[async_trait::async_trait]
impl<T> ListerWatcher<T> for KubeListerWatcher<T>
where
    T: Object + DeserializeOwned + Send + 'static,
{
    async fn list(&self, opts: &ListOptions) -> Result<ObjectList<T>, Error> {
        let request = self.request(opts, false)?;
        within(self.list_timeout, async {
            let (content_type, body) = self.send(request).await?;
            // Decoded as it arrives: the body is never held whole beside its objects.
            self.decoding.list_typed(content_type, body).await
        })
        .await
    }

    async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<T>, Error> {
        let request = self.request(opts, true)?;
        // Only opening the watch is bounded; the stream itself lasts as long as the server
        // keeps it, with a guard a little past `timeoutSeconds`.
        let (content_type, body) = within(self.list_timeout, self.send(request)).await?;
        let guard = watch_guard(opts.timeout_seconds, self.watch_timeout_slack);
        Ok(self
            .decoding
            .watch_typed(content_type.as_deref(), body, guard))
    }

    /// `plural` or `plural.group` (`pods`, `deployments.apps`), for the reflector's logs.
    fn resource(&self) -> Option<String> {
        Some(self.resource.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::namespace_of;

    #[test]
    fn the_namespace_of_a_collection_path() {
        assert_eq!(namespace_of("/api/v1/namespaces/ns/pods"), Some("ns"));
        assert_eq!(
            namespace_of("/apis/apps/v1/namespaces/prod/deployments"),
            Some("prod")
        );
        assert_eq!(namespace_of("/api/v1/pods"), None);
        assert_eq!(namespace_of("/api/v1/namespaces"), None);
        assert_eq!(namespace_of("/apis/example.com/v1/widgets"), None);
    }
}
