//! [`ObjectClient`]: reads and writes single objects of one resource in one namespace through a
//! [`Client`], with the same transport, credentials, errors and bounds as its lists and watches.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request};
use kcache_reflector::Error;
use kcache_reflector::reason::NOT_FOUND;
use kcache_store::Object;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::decode::object::{decode, is_status, read_body};
use crate::transport::request::{
    CONTENT_TYPE_JSON, Subresource, object_url, request, subresource_url,
};
use crate::{ApiResource, Client, DEFAULT_MAX_EVENT_SIZE, Patch, Preconditions};

/// Reads and writes objects of one resource type in one namespace: `get`, `create`, `replace`,
/// `patch` and `delete`, what controllers and leader election need (client-go's typed clients,
/// kube-rs's `Api<K>`, cut down to those five), and the `status` and `scale` subresources
/// operators write: [`replace_status`](Self::replace_status),
/// [`patch_status`](Self::patch_status) and [`get_status`](Self::get_status);
/// [`get_scale`](Self::get_scale), [`replace_scale`](Self::replace_scale) and
/// [`patch_scale`](Self::patch_scale) (a [`Scale`](crate::Scale)).
///
/// Built from a [`Client`] and an [`ApiResource`] ([`dynamic`](Self::dynamic), or
/// [`builder`](Self::builder) to choose the namespace), or with the `k8s-openapi` feature from a
/// k8s-openapi type (`ObjectClient::<ConfigMap>::new(client)`). The namespace is the client's
/// default one (its kubeconfig context's, or its pod's) unless set; it is ignored for
/// cluster-scoped resources. `T` is anything serde reads and writes: [`DynamicObject`], a
/// k8s-openapi type, a custom resource type of your own.
///
/// Each call is one request, sent with the client's credentials and bounded by
/// [`timeout`](ObjectClientBuilder::timeout) (by default the client's
/// [`Config::list_timeout`](crate::Config::list_timeout)), past which it fails with
/// [`Error::Timeout`]; the response holds one object of at most
/// [`max_object_size`](ObjectClientBuilder::max_object_size) bytes ([`Error::Limit`]) and is
/// decoded whole, `managedFields` included. Nothing is retried: what to do on a conflict is the
/// caller's decision.
///
/// An object name is one URL path segment: a name that is empty, `.` or `..`, or holds a `/`
/// or a `%` (which client-go's `IsValidPathSegmentName` refuses too) fails with
/// [`Error::Transport`] before anything is sent. Such a name would make another URL than the
/// object's: an empty one the collection's, where a DELETE deletes the collection.
///
/// # Errors, and matching a conflict
///
/// The errors are the lister-watchers' [`kcache_reflector::Error`]s. Every non-2xx answer is an
/// [`Error::Api`] with the server's `Status`, which the helpers read: [`Error::is_conflict`] (a
/// 409 `Conflict`: the resource version given as a precondition is stale, or another
/// precondition failed), [`Error::is_already_exists`] (a 409 `AlreadyExists`: a create found
/// the name taken), [`Error::is_not_found`] (a 404), [`Error::status`] for the rest. A failed
/// connection, or a request that cannot be built (an object that does not serialize, an
/// invalid name, a replace of an object without a name), is an [`Error::Transport`]; an answer
/// that is not a `T`, an [`Error::Decode`] naming the field that failed (never its value).
///
/// The optimistic-concurrency loop of a controller reads, changes and replaces, and starts
/// again from a fresh read when it loses:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use kcache_client_http::{ApiResource, Client, Config, ObjectClient};
/// use kcache_store::DynamicObject;
/// use kcache_testing_server::FakeApiServer;
/// use serde_json::json;
///
/// let server = FakeApiServer::start().await?;
/// let client = Client::new(Config::new(server.url().parse()?))?;
/// let configmaps = ObjectClient::<DynamicObject>::builder(
///     client,
///     ApiResource::new("", "v1", "configmaps", true),
/// )
/// .namespace("shop")
/// .build();
///
/// let mut settings = DynamicObject::new(Some("shop"), "settings");
/// settings.data.insert("data".into(), json!({"mode": "slow"}));
/// let created = configmaps.create(&settings).await?;
///
/// // Someone else writes it in between...
/// let mut theirs = created.clone();
/// theirs.data.insert("data".into(), json!({"mode": "off"}));
/// configmaps.replace(&theirs).await?;
///
/// // ...so a replace from the stale copy loses: a 409, typed.
/// let mut ours = created;
/// ours.data.insert("data".into(), json!({"mode": "fast"}));
/// match configmaps.replace(&ours).await {
///     Err(e) if e.is_conflict() => {
///         // Read again and redo the change on the fresh copy.
///         let mut fresh = configmaps.get("settings").await?.expect("it exists");
///         fresh.data.insert("data".into(), json!({"mode": "fast"}));
///         configmaps.replace(&fresh).await?;
///     }
///     other => panic!("expected a conflict, got {other:?}"),
/// }
/// let now = configmaps.get("settings").await?.expect("it exists");
/// assert_eq!(now.data["data"]["mode"], "fast");
/// # Ok(())
/// # }
/// ```
///
/// [`DynamicObject`]: kcache_store::DynamicObject
pub struct ObjectClient<T> {
    client: Client,
    resource: ApiResource,
    namespace: String,
    max_object_size: usize,
    timeout: Duration,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for ObjectClient<T> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            max_object_size: self.max_object_size,
            timeout: self.timeout,
            _t: PhantomData,
        }
    }
}

impl<T> fmt::Debug for ObjectClient<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectClient")
            .field("resource", &self.resource)
            .field("namespace", &self.namespace())
            .field("max_object_size", &self.max_object_size)
            .field("timeout", &self.timeout)
            .field("client", &self.client)
            .finish()
    }
}

/// Builds an [`ObjectClient`].
#[must_use]
pub struct ObjectClientBuilder<T> {
    inner: ObjectClient<T>,
}

impl<T> fmt::Debug for ObjectClientBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ObjectClientBuilder")
            .field(&self.inner)
            .finish()
    }
}

impl<T> ObjectClientBuilder<T> {
    /// The namespace of the objects (ignored for cluster-scoped resources). The default is the
    /// client's [`default_namespace`](Client::default_namespace).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.inner.namespace = namespace.into();
        self
    }

    /// The largest response accepted, in bytes: one object (default
    /// [`DEFAULT_MAX_EVENT_SIZE`], the watch event limit). Past it a call fails with
    /// [`Error::Limit`] and the rest of the body is not read.
    pub fn max_object_size(mut self, bytes: usize) -> Self {
        self.inner.max_object_size = bytes.max(1);
        self
    }

    /// The bound on each call, from sending the request to the last byte of the answer; past
    /// it the call fails with [`Error::Timeout`]. The default is the client's
    /// [`Config::list_timeout`](crate::Config::list_timeout) (60 s unless set), which suits
    /// long lists: set a shorter one so that writes (a leader's renewal, say) fail fast
    /// against a slow server. A credential is made ready before the bound starts (an exec
    /// plugin's run has its own timeout).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.inner.timeout = timeout;
        self
    }

    /// The object client.
    pub fn build(self) -> ObjectClient<T> {
        self.inner
    }
}

impl<T> ObjectClient<T> {
    /// A builder for `resource`, its objects read and written as `T` (e.g.
    /// [`DynamicObject`](kcache_store::DynamicObject) or a type of your own).
    pub fn builder(client: Client, resource: ApiResource) -> ObjectClientBuilder<T> {
        let namespace = client.default_namespace().to_owned();
        let timeout = client.list_timeout();
        ObjectClientBuilder {
            inner: Self {
                client,
                resource,
                namespace,
                max_object_size: DEFAULT_MAX_EVENT_SIZE,
                timeout,
                _t: PhantomData,
            },
        }
    }

    /// An object client of `resource` in the client's default namespace, with the defaults.
    pub fn dynamic(client: Client, resource: ApiResource) -> Self {
        Self::builder(client, resource).build()
    }

    /// The resource read and written.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The namespace, or `None` for a cluster-scoped resource.
    pub fn namespace(&self) -> Option<&str> {
        self.resource.namespaced.then_some(self.namespace.as_str())
    }

    /// The URL of object `name` (or of the collection), with `params`.
    ///
    /// # Errors
    ///
    /// [`Error::Transport`] when `name` cannot be one path segment (see
    /// [the type's docs](Self)): nothing is sent.
    fn url(&self, name: Option<&str>, params: &[(&str, &str)]) -> Result<String, Error> {
        object_url(
            self.client.base_url(),
            &self.resource,
            self.namespace(),
            name,
            params,
        )
        .map_err(Error::transport)
    }

    /// The URL of `subresource` of object `name`, with `params`.
    ///
    /// # Errors
    ///
    /// [`Error::Transport`] when `name` cannot be one path segment (see
    /// [the type's docs](Self)): nothing is sent.
    pub(super) fn subresource_url(
        &self,
        name: &str,
        subresource: Subresource,
        params: &[(&str, &str)],
    ) -> Result<String, Error> {
        subresource_url(
            self.client.base_url(),
            &self.resource,
            self.namespace(),
            name,
            subresource,
            params,
        )
        .map_err(Error::transport)
    }

    /// A `method` request for `url` with `body` (its content type and bytes), if any.
    pub(super) fn request(
        &self,
        method: Method,
        url: &str,
        body: Option<(&'static str, Vec<u8>)>,
    ) -> Result<Request<Bytes>, Error> {
        let body = body.map(|(content_type, bytes)| (content_type, Bytes::from(bytes)));
        request(method, url, self.client.user_agent(), body).map_err(Error::transport)
    }

    /// Sends `request` and reads the whole 2xx answer, within the [timeout](ObjectClientBuilder::timeout)
    /// (a credential is made ready first, so an exec plugin's run does not count).
    pub(super) async fn execute(&self, request: Request<Bytes>) -> Result<Bytes, Error> {
        self.client
            .exchange(request, self.timeout, |body| {
                read_body(body, self.max_object_size)
            })
            .await
    }
}

#[cfg(feature = "k8s-openapi")]
#[cfg_attr(docsrs, doc(cfg(feature = "k8s-openapi")))]
impl<K: k8s_openapi::Resource> ObjectClient<K> {
    /// An object client of the k8s-openapi type `K` in the client's default namespace.
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kcache_client_http::{Client, Config, ObjectClient};
    ///
    /// let client = Client::new(Config::infer()?)?;
    /// let configmaps = ObjectClient::<ConfigMap>::new(client);
    /// let settings: Option<ConfigMap> = configmaps.get("settings").await?;
    /// # drop(settings); Ok(()) }
    /// ```
    pub fn new(client: Client) -> Self {
        Self::builder(client, ApiResource::of::<K>()).build()
    }

    /// A builder for the k8s-openapi type `K`.
    pub fn typed(client: Client) -> ObjectClientBuilder<K> {
        Self::builder(client, ApiResource::of::<K>())
    }
}

impl<T: DeserializeOwned> ObjectClient<T> {
    /// The object `name`, or `None` when it does not exist.
    ///
    /// Only the API server's answer for a missing object is `None`: a 404 whose body is a
    /// `Status` with reason `NotFound` and `details.name` the name asked for (what the API
    /// server sends, for built-in and custom resources alike). Any other 404 is an error: the
    /// `404 page not found` text of a path nothing serves (an unknown group or version), or a
    /// `NotFound` `Status` without that name (a resource its group does not serve), because
    /// `None` would hide the misconfiguration (a lock on a Lease the server does not serve
    /// would never be held, silently).
    ///
    /// # Errors
    ///
    /// Any other non-2xx answer ([`Error::Api`]; a 404 other than the missing object's, see
    /// above), [`Error::Transport`] for an invalid `name` (nothing is sent) or a failed
    /// request, [`Error::Timeout`], [`Error::Limit`], [`Error::Decode`]; see
    /// [matching errors](Self#errors-and-matching-a-conflict).
    pub async fn get(&self, name: &str) -> Result<Option<T>, Error> {
        let request = self.request(Method::GET, &self.url(Some(name), &[])?, None)?;
        match self.execute(request).await {
            Ok(body) => decode(&body, "get response").map(Some),
            Err(e) if is_missing_object(&e, name) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Patches the object `name` and returns it as written. The [`Patch`] decides the content
    /// type; server-side apply adds its `fieldManager` and `force` parameters (and creates the
    /// object if it does not exist).
    ///
    /// # Errors
    ///
    /// A 404 when the object does not exist (but for apply), a 409 ([`Error::is_conflict`])
    /// when an apply without `force` meets another manager's fields or the patch's
    /// `metadata.resourceVersion` is stale, 422 when a JSON patch's `test` fails or the patched
    /// object is invalid ([`Error::Api`] for all),
    /// [`Error::Transport`] for an invalid `name` (nothing is sent) or a failed request,
    /// [`Error::Timeout`], [`Error::Limit`], [`Error::Decode`].
    pub async fn patch(&self, name: &str, patch: &Patch) -> Result<T, Error> {
        let url = self.url(Some(name), &patch.params())?;
        let body = patch.body().map_err(Error::transport)?;
        let request = self.request(Method::PATCH, &url, Some((patch.content_type(), body)))?;
        decode(&self.execute(request).await?, "patch response")
    }

    /// Deletes the object `name`, if `preconditions` (resource version, uid) still hold.
    ///
    /// Returns the object when the server answers with it: its last state, or, when deletion
    /// waits for finalizers or a grace period, the object with its `deletionTimestamp` set.
    /// `None` when the server answers with a success `Status` instead (the object is gone and
    /// its resource does not return deleted objects, which is the real server's default).
    ///
    /// # Errors
    ///
    /// A 404 when the object does not exist ([`Error::is_not_found`]: deleting what is already
    /// gone is often fine), a 409 when a precondition fails ([`Error::is_conflict`]), any other
    /// non-2xx answer ([`Error::Api`]), [`Error::Transport`] for an invalid `name` (nothing is
    /// sent: an empty name would delete the collection) or a failed request,
    /// [`Error::Timeout`], [`Error::Limit`], [`Error::Decode`].
    pub async fn delete(
        &self,
        name: &str,
        preconditions: Option<&Preconditions>,
    ) -> Result<Option<T>, Error> {
        let url = self.url(Some(name), &[])?;
        let body = match preconditions {
            Some(p) => Some((
                CONTENT_TYPE_JSON,
                serde_json::to_vec(&p.delete_options()).map_err(Error::transport)?,
            )),
            None => None,
        };
        let request = self.request(Method::DELETE, &url, body)?;
        let body = self.execute(request).await?;
        if is_status(&body) {
            return Ok(None);
        }
        decode(&body, "delete response").map(Some)
    }
}

impl<T: Serialize + DeserializeOwned> ObjectClient<T> {
    /// Creates `object` in the namespace (its own `metadata.namespace` must be that one or
    /// unset) and returns it as the server wrote it: with its uid, resource version and
    /// defaults. A `metadata.generateName` without a name lets the server pick the name.
    ///
    /// # Errors
    ///
    /// A 409 `AlreadyExists` when the name is taken ([`Error::is_already_exists`]), 422 when
    /// the object is invalid, any other non-2xx answer ([`Error::Api`]), [`Error::Transport`] when
    /// it does not serialize or the request fails, [`Error::Timeout`], [`Error::Limit`],
    /// [`Error::Decode`].
    pub async fn create(&self, object: &T) -> Result<T, Error> {
        let body = serde_json::to_vec(object).map_err(Error::transport)?;
        let request = self.request(
            Method::POST,
            &self.url(None, &[])?,
            Some((CONTENT_TYPE_JSON, body)),
        )?;
        decode(&self.execute(request).await?, "create response")
    }
}

impl<T: Object + Serialize + DeserializeOwned> ObjectClient<T> {
    /// Replaces the object named by `object`'s `metadata.name` with `object` (a PUT) and
    /// returns it as written.
    ///
    /// `object`'s `metadata.resourceVersion` is the precondition: the server answers 409
    /// `Conflict` when the object has changed since that version was read. Without one the
    /// write is unconditional where the resource allows it (most built-in types do).
    ///
    /// # Errors
    ///
    /// A 409 on a stale resource version ([`Error::is_conflict`]), a 404 when the object does
    /// not exist, any other non-2xx answer ([`Error::Api`]), [`Error::Transport`] when
    /// `object` has no name or an invalid one (nothing is sent), does not serialize, or the
    /// request fails, [`Error::Timeout`], [`Error::Limit`], [`Error::Decode`]. See
    /// [matching a conflict](Self#errors-and-matching-a-conflict).
    pub async fn replace(&self, object: &T) -> Result<T, Error> {
        // No name is the empty one, which the URL refuses.
        let url = self.url(Some(object.name().unwrap_or_default()), &[])?;
        let body = serde_json::to_vec(object).map_err(Error::transport)?;
        let request = self.request(Method::PUT, &url, Some((CONTENT_TYPE_JSON, body)))?;
        decode(&self.execute(request).await?, "replace response")
    }
}

/// Whether `e` is the API server's answer for a missing object `name`: a `Status` with reason
/// `NotFound` whose `details.name` is `name` (as `apierrors.NewNotFound` makes it). A
/// `NotFound` made from a text body (`404 page not found`) has no details, and one for a
/// resource that is not served names no object: neither is a missing object.
pub(super) fn is_missing_object(e: &Error, name: &str) -> bool {
    e.status().is_some_and(|s| {
        s.reason.as_deref() == Some(NOT_FOUND)
            && s.details.as_ref().and_then(|d| d.name.as_deref()) == Some(name)
    })
}
