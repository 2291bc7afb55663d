//! [`HttpListerWatcher`]: lists and watches one resource over HTTP for the reflector.

use std::fmt;
use std::marker::PhantomData;

use http::HeaderValue;
use http::header::ACCEPT;
use kcache_reflector::{Error, ListOptions, ListerWatcher, ObjectList, WatchStream};
use kcache_store::{Compact, CompactCodec, ExpectedType, Object, PartialObjectMetadata};
use serde::de::DeserializeOwned;

use crate::decode::metadata::{
    ACCEPT_METADATA, ACCEPT_METADATA_LIST, ACCEPT_METADATA_LIST_PROTOBUF, ACCEPT_METADATA_PROTOBUF,
    metadata_objects, metadata_proto_objects,
};
use crate::decode::protobuf::ACCEPT_PROTOBUF;
use crate::decode::response::{Decoding, watch_guard};
use crate::transport::request::{collection_url, get, resource_name};
use crate::{ApiResource, Client};

/// Lists and watches one resource type through a [`Client`]: the
/// [`ListerWatcher`] the reflector and informer run on.
///
/// Lists decode item by item (one undecodable item is reported and skipped), watches decode
/// incrementally with a per-event size limit; both can skip `metadata.managedFields` while
/// parsing. Selectors, resource versions, bookmarks and timeouts come from the
/// [`ListOptions`] the reflector passes in.
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use kcache_client_http::{ApiResource, Client, Config, HttpListerWatcher};
/// use kcache_reflector::ListerWatcher;
/// use kcache_store::DynamicObject;
///
/// let client = Client::new(Config::infer()?)?;
/// let widgets = ApiResource::new("example.com", "v1", "widgets", true);
/// let lw: Arc<dyn ListerWatcher<DynamicObject>> = Arc::new(
///     HttpListerWatcher::builder(client, widgets)
///         .namespace("prod")
///         .skip_managed_fields(true)
///         .build(),
/// );
/// # drop(lw); Ok(()) }
/// ```
pub struct HttpListerWatcher<T> {
    client: Client,
    resource: ApiResource,
    namespace: Option<String>,
    decoding: Decoding<T>,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for HttpListerWatcher<T> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            decoding: self.decoding.clone(),
            _t: PhantomData,
        }
    }
}

impl<T> fmt::Debug for HttpListerWatcher<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpListerWatcher")
            .field("resource", &self.resource)
            .field("namespace", &self.namespace)
            .field("decoding", &self.decoding)
            .field("client", &self.client)
            .finish()
    }
}

/// Builds an [`HttpListerWatcher`].
#[must_use]
pub struct HttpListerWatcherBuilder<T> {
    inner: HttpListerWatcher<T>,
}

impl<T> fmt::Debug for HttpListerWatcherBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("HttpListerWatcherBuilder")
            .field(&self.inner)
            .finish()
    }
}

impl<T> HttpListerWatcherBuilder<T> {
    /// Only this namespace (ignored for cluster-scoped resources). The default is all
    /// namespaces. An object of another namespace that the server sends anyway is refused:
    /// reported as an undecodable object is, and never cached.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        let namespace = namespace.into();
        self.inner.decoding.expected.namespace =
            self.inner.resource.namespaced.then(|| namespace.clone());
        self.inner.namespace = Some(namespace);
        self
    }

    /// Every namespace (the default).
    pub fn all_namespaces(mut self) -> Self {
        self.inner.namespace = None;
        self.inner.decoding.expected.namespace = None;
        self
    }

    /// The kind of the resource's objects (`Pod`): a list must then be a `PodList`, and an
    /// object that carries another kind is refused as an undecodable one is. The typed
    /// constructors (`typed`, `compact_typed`; feature `k8s-openapi`) set it; with
    /// [`builder`](HttpListerWatcher::builder) only the `apiVersion` is checked unless it is
    /// given. Set it before [`codec`](Self::codec), which hands it to the compact codec.
    pub fn kind(mut self, kind: &str) -> Self {
        self.inner.decoding.expected.r#type = self.inner.decoding.expected.r#type.with_kind(kind);
        self
    }

    crate::decode::setters::decoding_setters!();

    /// The lister-watcher.
    pub fn build(self) -> HttpListerWatcher<T> {
        self.inner
    }
}

impl<T> HttpListerWatcher<T> {
    /// A builder for `resource`, decoded as `T` (e.g. [`DynamicObject`](kcache_store::DynamicObject)
    /// or a type of your own). Lists must be of the resource's `apiVersion` (a `Status`
    /// answered with a `200` is the error it describes), and so must objects that carry one.
    pub fn builder(client: Client, resource: ApiResource) -> HttpListerWatcherBuilder<T> {
        let mut decoding = Decoding::default();
        decoding.expected.r#type = ExpectedType::new(&resource.api_version(), None);
        HttpListerWatcherBuilder {
            inner: Self {
                client,
                resource,
                namespace: None,
                decoding,
                _t: PhantomData,
            },
        }
    }

    /// A lister-watcher of `resource` across all namespaces, with the defaults.
    pub fn dynamic(client: Client, resource: ApiResource) -> Self {
        Self::builder(client, resource).build()
    }

    /// The resource listed and watched.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The namespace, or `None` for all of them.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
}

#[cfg(feature = "k8s-openapi")]
#[cfg_attr(docsrs, doc(cfg(feature = "k8s-openapi")))]
impl<K: k8s_openapi::Resource> HttpListerWatcher<K> {
    /// A lister-watcher of the k8s-openapi type `K` across all namespaces.
    pub fn new(client: Client) -> Self {
        Self::typed(client).build()
    }

    /// A builder for the k8s-openapi type `K` (lists must be `K`'s list kind).
    pub fn typed(client: Client) -> HttpListerWatcherBuilder<K> {
        Self::builder(client, ApiResource::of::<K>()).kind(K::KIND)
    }
}

impl<K: DeserializeOwned + 'static> HttpListerWatcher<Compact<K>> {
    /// A builder for `resource`, producing [`Compact`] objects: only the metadata is decoded
    /// while listing and watching; the rest of each object is kept LZ4-compressed (without
    /// `managedFields`) against a dictionary its list and watches share, and decoded by
    /// [`Compact::typed`] when a handler asks. Set the codec's options with
    /// [`codec`](HttpListerWatcherBuilder::codec).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use kcache_client_http::{ApiResource, Client, Config, HttpListerWatcher};
    /// use kcache_store::{Compact, DynamicObject};
    ///
    /// let client = Client::new(Config::infer()?)?;
    /// let lw = HttpListerWatcher::<Compact<DynamicObject>>::compact(client, ApiResource::new("", "v1", "pods", true))
    ///     .build();
    /// # drop(lw); Ok(()) }
    /// ```
    pub fn compact(client: Client, resource: ApiResource) -> HttpListerWatcherBuilder<Compact<K>> {
        Self::builder(client, resource).codec(CompactCodec::new())
    }
}

#[cfg(feature = "k8s-openapi")]
#[cfg_attr(docsrs, doc(cfg(feature = "k8s-openapi")))]
impl<K: k8s_openapi::Resource + DeserializeOwned + 'static> HttpListerWatcher<Compact<K>> {
    /// A builder of compact objects of the k8s-openapi type `K` (see
    /// [`compact`](Self::compact)): `Compact<Pod>`, decoded into a `Pod` on demand.
    pub fn compact_typed(client: Client) -> HttpListerWatcherBuilder<Compact<K>> {
        Self::builder(client, ApiResource::of::<K>())
            .kind(K::KIND)
            .codec(CompactCodec::new())
    }
}

impl<K: DeserializeOwned + 'static> HttpListerWatcherBuilder<Compact<K>> {
    crate::decode::setters::codec_setter!();

    /// Ask for metadata only (as
    /// [`HttpListerWatcherBuilder::<PartialObjectMetadata>::metadata_only`](HttpListerWatcherBuilder::metadata_only)
    /// does) and keep each object's metadata in the compact form: the smallest cache of
    /// metadata, `Compact<PartialObjectMetadata>` (`typed()` gives the
    /// [`PartialObjectMetadata`]). The codec is the default one, given the metadata form as
    /// well as the resource's type; set another with [`codec`](Self::codec) after this.
    pub fn metadata_only(mut self) -> Self {
        self.inner.decoding.expected.r#type =
            self.inner.decoding.expected.r#type.clone().or_metadata();
        self.codec(CompactCodec::new())
    }
}

impl HttpListerWatcher<PartialObjectMetadata> {
    /// A builder of a metadata-only lister-watcher of `resource`: the API server sends each
    /// object's metadata alone (`PartialObjectMetadata`), a fraction of the bytes, decoded into
    /// [`PartialObjectMetadata`]s that name the resource's `apiVersion`; to name its kind too,
    /// use `metadata_of` for a k8s-openapi type (feature `k8s-openapi`), or
    /// `builder(client, resource).kind("Secret").metadata_only()`. For any resource, custom
    /// ones included: how controllers watch every secret or config map of a cluster for their
    /// labels or owners.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use kcache_client_http::{ApiResource, Client, Config, HttpListerWatcher};
    /// use kcache_store::PartialObjectMetadata;
    ///
    /// let client = Client::new(Config::infer()?)?;
    /// let secrets = ApiResource::new("", "v1", "secrets", true);
    /// let lw = HttpListerWatcher::<PartialObjectMetadata>::metadata(client, secrets).build();
    /// # drop(lw); Ok(()) }
    /// ```
    pub fn metadata(
        client: Client,
        resource: ApiResource,
    ) -> HttpListerWatcherBuilder<PartialObjectMetadata> {
        Self::builder(client, resource).metadata_only()
    }
}

#[cfg(feature = "k8s-openapi")]
#[cfg_attr(docsrs, doc(cfg(feature = "k8s-openapi")))]
impl HttpListerWatcher<PartialObjectMetadata> {
    /// A builder of a metadata-only lister-watcher of the k8s-openapi type `K` (see
    /// [`metadata`](Self::metadata)): objects name `K`'s `apiVersion` and kind.
    pub fn metadata_of<K: k8s_openapi::Resource>(
        client: Client,
    ) -> HttpListerWatcherBuilder<PartialObjectMetadata> {
        Self::builder(client, ApiResource::of::<K>())
            .kind(K::KIND)
            .metadata_only()
    }
}

impl<T> HttpListerWatcherBuilder<T> {
    /// Ask for Kubernetes' protobuf encoding (`Accept: application/vnd.kubernetes.protobuf,
    /// application/json`), as client-go's typed clients do: smaller on the wire and cheaper to
    /// decode. Objects deserialize into `T` from protobuf through `kcache-protobuf`'s field
    /// table, exactly as they would from JSON, so the same types work (k8s-openapi's `Pod`,
    /// `DynamicObject`, a serde type of a built-in kind). A resource the server answers in
    /// JSON instead is read as JSON; the response's `Content-Type` decides. Only a kind the
    /// table has is asked for in protobuf, so the kind must be known (the typed constructors
    /// and [`kind`](Self::kind) set it): a custom resource, a beta version or an aggregated
    /// API's kind is asked for in JSON, as is a lister-watcher without a kind.
    /// The list budget, item count, per-event limit and the skipping of undecodable objects
    /// are the JSON path's. A metadata-only lister-watcher asks for its metadata in protobuf
    /// (served for every resource, custom ones included); a compact one keeps protobuf answers
    /// compact in protobuf (only the metadata decoded; [`Compact::typed`] reads the rest).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use kcache_client_http::{ApiResource, Client, Config, HttpListerWatcher};
    /// use kcache_store::DynamicObject;
    ///
    /// let client = Client::new(Config::infer()?)?;
    /// let pods = ApiResource::new("", "v1", "pods", true);
    /// let lw = HttpListerWatcher::<DynamicObject>::builder(client, pods)
    ///     .kind("Pod")
    ///     .protobuf()
    ///     .build();
    /// # drop(lw); Ok(()) }
    /// ```
    pub fn protobuf(mut self) -> Self {
        self.inner.decoding.protobuf = true;
        self
    }
}

impl HttpListerWatcherBuilder<PartialObjectMetadata> {
    /// Ask for metadata only (`Accept: application/json;as=PartialObjectMetadataList;
    /// g=meta.k8s.io;v=v1` for lists, `as=PartialObjectMetadata` for watches, plain JSON
    /// named as the fallback). Objects are taken as the resource's: each names its
    /// `apiVersion` and, if set before this, its [`kind`](Self::kind); a whole object that a
    /// server sends instead must be of that type. `managedFields` are skipped as
    /// [`skip_managed_fields`](Self::skip_managed_fields) says when this is called (on by
    /// default).
    pub fn metadata_only(mut self) -> Self {
        let expected = self.inner.decoding.expected.r#type.clone().or_metadata();
        self.inner.decoding.expected.r#type = expected.clone();
        let skip = self.inner.decoding.options.skip_managed_fields;
        self.inner.decoding.objects = Some(metadata_objects(expected.clone(), skip));
        self.inner.decoding.proto_objects = Some(metadata_proto_objects(expected, skip));
        self
    }
}

impl<T> HttpListerWatcher<T> {
    /// Whether lists and watches ask for metadata only
    /// ([`metadata_only`](HttpListerWatcherBuilder::metadata_only)).
    fn metadata_only(&self) -> bool {
        self.decoding.expected.r#type.accepts_metadata()
    }

    fn url(&self, opts: &ListOptions, watch: bool) -> String {
        collection_url(
            self.client.base_url(),
            &self.resource,
            self.namespace.as_deref(),
            opts,
            watch,
        )
    }
}

#[async_trait::async_trait]
impl<T> ListerWatcher<T> for HttpListerWatcher<T>
where
    T: Object + DeserializeOwned + Send + 'static,
{
    async fn list(&self, opts: &ListOptions) -> Result<ObjectList<T>, Error> {
        let mut request =
            get(&self.url(opts, false), self.client.user_agent()).map_err(Error::transport)?;
        if self.metadata_only() {
            let accept = if self.decoding.asks_protobuf() {
                ACCEPT_METADATA_LIST_PROTOBUF
            } else {
                ACCEPT_METADATA_LIST
            };
            request
                .headers_mut()
                .insert(ACCEPT, HeaderValue::from_static(accept));
        } else if self.decoding.asks_protobuf() {
            request
                .headers_mut()
                .insert(ACCEPT, HeaderValue::from_static(ACCEPT_PROTOBUF));
        }
        // Decoded as it arrives: the body is never held whole beside its objects.
        self.client
            .exchange_typed(request, self.client.list_timeout(), |content_type, body| {
                self.decoding.list_typed(content_type, body)
            })
            .await
    }

    async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<T>, Error> {
        let mut request =
            get(&self.url(opts, true), self.client.user_agent()).map_err(Error::transport)?;
        if self.metadata_only() {
            let accept = if self.decoding.asks_protobuf() {
                ACCEPT_METADATA_PROTOBUF
            } else {
                ACCEPT_METADATA
            };
            request
                .headers_mut()
                .insert(ACCEPT, HeaderValue::from_static(accept));
        } else if self.decoding.asks_protobuf() {
            request
                .headers_mut()
                .insert(ACCEPT, HeaderValue::from_static(ACCEPT_PROTOBUF));
        }
        // Only opening the watch is bounded; the stream itself lasts as long as the server
        // keeps it, with a guard a little past `timeoutSeconds`.
        let (content_type, body) = self
            .client
            .exchange_typed(request, self.client.list_timeout(), |content_type, body| {
                std::future::ready(Ok((content_type, body)))
            })
            .await?;
        let guard = watch_guard(opts.timeout_seconds, self.client.watch_timeout_slack());
        Ok(self
            .decoding
            .watch_typed(content_type.as_deref(), body, guard))
    }

    /// `plural` or `plural.group` (`pods`, `deployments.apps`), for the reflector's logs.
    fn resource(&self) -> Option<String> {
        Some(resource_name(&self.resource.plural, &self.resource.group))
    }
}
