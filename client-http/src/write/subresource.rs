//! The `status` and `scale` subresources of [`ObjectClient`]'s objects, as the API server
//! serves them for the kinds that have them (pods, nodes, services, deployments, replica sets,
//! stateful sets, ...; a custom resource whose definition names `subresources.status` or
//! `subresources.scale`):
//!
//! - `<object>/status`: a write changes the object's `status` and ignores its spec (and, for
//!   most kinds, custom resources among them, its metadata), while writes to the object itself
//!   keep the stored `status`; so a controller reports what it observed without racing the
//!   owner of the spec. A read is of the whole object.
//! - `<object>/scale`: the object's `autoscaling/v1` [`Scale`], its desired and observed
//!   replicas and label selector; a write changes only the desired replicas.
//!
//! Each call is one request, sent as the calls on the object are: the same credentials,
//! timeout, size limit, errors and name checks. A kind without the subresource answers 404.

use std::borrow::Cow;

use bytes::Bytes;
use http::Method;
use kcache_reflector::Error;
use kcache_store::Object;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::object_client::is_missing_object;
use crate::decode::object::decode;
use crate::transport::request::{CONTENT_TYPE_JSON, Subresource};
use crate::{ObjectClient, Patch, Scale};

impl<T> ObjectClient<T> {
    /// Sends `patch` to `subresource` of object `name` and reads the whole answer.
    async fn patch_subresource(
        &self,
        name: &str,
        subresource: Subresource,
        patch: &Patch,
    ) -> Result<Bytes, Error> {
        let url = self.subresource_url(name, subresource, &patch.params())?;
        let body = patch.body().map_err(Error::transport)?;
        let request = self.request(Method::PATCH, &url, Some((patch.content_type(), body)))?;
        self.execute(request).await
    }

    /// PUTs `value`, as JSON, to `subresource` of object `name` and reads the whole answer.
    async fn put_subresource(
        &self,
        name: &str,
        subresource: Subresource,
        value: &impl Serialize,
    ) -> Result<Bytes, Error> {
        let url = self.subresource_url(name, subresource, &[])?;
        let body = serde_json::to_vec(value).map_err(Error::transport)?;
        let request = self.request(Method::PUT, &url, Some((CONTENT_TYPE_JSON, body)))?;
        self.execute(request).await
    }

    /// The [`Scale`] of object `name`: its desired replicas (`spec.replicas`), the replicas
    /// observed and their label selector (`status`), and the object's resource version, the
    /// precondition of a [`replace_scale`](Self::replace_scale) of it.
    ///
    /// # Errors
    ///
    /// A 404 when the object does not exist or its kind has no `scale` subresource
    /// ([`Error::is_not_found`]), any other non-2xx answer ([`Error::Api`]),
    /// [`Error::Transport`] for an invalid `name` (nothing is sent) or a failed request,
    /// [`Error::Timeout`], [`Error::Limit`], [`Error::Decode`].
    pub async fn get_scale(&self, name: &str) -> Result<Scale, Error> {
        let url = self.subresource_url(name, Subresource::Scale, &[])?;
        let request = self.request(Method::GET, &url, None)?;
        decode(&self.execute(request).await?, "get scale response")
    }

    /// Sets the desired replicas of object `name` to `scale`'s `spec.replicas` (a PUT of its
    /// `scale` subresource) and returns its [`Scale`] as written. Nothing else of the object
    /// changes.
    ///
    /// `scale`'s `metadata.resourceVersion` is the precondition, as for
    /// [`replace`](Self::replace): read the scale with [`get_scale`](Self::get_scale), change
    /// it and write it back, and the write fails with a 409 if the object changed in between.
    /// Without one the write is unconditional. When `scale`'s metadata has no name (or, for a
    /// namespaced resource, no namespace), `name` (and the namespace) are sent, which the API
    /// server requires of a `Scale`.
    ///
    /// # Errors
    ///
    /// A 409 on a stale resource version ([`Error::is_conflict`]), a 404 when the object does
    /// not exist or its kind has no `scale` subresource, 422 for negative replicas, any other
    /// non-2xx answer ([`Error::Api`]; a 400 when `scale` names another object),
    /// [`Error::Transport`] for an invalid `name` (nothing is sent) or a failed request,
    /// [`Error::Timeout`], [`Error::Limit`], [`Error::Decode`].
    pub async fn replace_scale(&self, name: &str, scale: &Scale) -> Result<Scale, Error> {
        let scale = self.addressed(name, scale);
        let body = self
            .put_subresource(name, Subresource::Scale, &scale)
            .await?;
        decode(&body, "replace scale response")
    }

    /// Patches the [`Scale`] of object `name` and returns it as written: a merge patch such as
    /// `{"spec": {"replicas": 5}}` (what `kubectl scale` sends), a JSON patch, or server-side
    /// apply of a `Scale` (`apiVersion: autoscaling/v1`, `kind: Scale`). Only the desired
    /// replicas are written.
    ///
    /// # Errors
    ///
    /// A 404 when the object does not exist or its kind has no `scale` subresource, a 409
    /// ([`Error::is_conflict`]) when the patch's `metadata.resourceVersion` is stale, 422 when
    /// a JSON patch's `test` fails or the replicas are invalid ([`Error::Api`] for all),
    /// [`Error::Transport`] for an invalid `name` (nothing is sent) or a failed request,
    /// [`Error::Timeout`], [`Error::Limit`], [`Error::Decode`].
    pub async fn patch_scale(&self, name: &str, patch: &Patch) -> Result<Scale, Error> {
        let body = self
            .patch_subresource(name, Subresource::Scale, patch)
            .await?;
        decode(&body, "patch scale response")
    }

    /// `scale` with the name `name` and the client's namespace where its metadata has none.
    fn addressed<'a>(&self, name: &str, scale: &'a Scale) -> Cow<'a, Scale> {
        let unset = |field: Option<&str>| field.is_none_or(str::is_empty);
        let namespace = self
            .namespace()
            .filter(|_| unset(scale.metadata.namespace.as_deref()));
        let unnamed = unset(scale.metadata.name.as_deref());
        if !unnamed && namespace.is_none() {
            return Cow::Borrowed(scale);
        }
        let mut scale = scale.clone();
        if unnamed {
            scale.metadata.name = Some(name.to_owned());
        }
        if let Some(namespace) = namespace {
            scale.metadata.namespace = Some(namespace.to_owned());
        }
        Cow::Owned(scale)
    }
}

impl<T: DeserializeOwned> ObjectClient<T> {
    /// The object `name` read through its `status` subresource (the whole object, as
    /// [`get`](Self::get) reads it), or `None` when it does not exist: for a caller allowed
    /// to read `<resource>/status` only.
    ///
    /// # Errors
    ///
    /// A 404 other than the missing object's (the kind has no `status` subresource, see
    /// [`get`](Self::get)) and any other non-2xx answer ([`Error::Api`]),
    /// [`Error::Transport`] for an invalid `name` (nothing is sent) or a failed request,
    /// [`Error::Timeout`], [`Error::Limit`], [`Error::Decode`].
    pub async fn get_status(&self, name: &str) -> Result<Option<T>, Error> {
        let url = self.subresource_url(name, Subresource::Status, &[])?;
        let request = self.request(Method::GET, &url, None)?;
        match self.execute(request).await {
            Ok(body) => decode(&body, "get status response").map(Some),
            Err(e) if is_missing_object(&e, name) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Patches the `status` of object `name` (a PATCH of its `status` subresource) and returns
    /// the object as written. The `status` the patch makes is written; what it changes in the
    /// spec is ignored (and, for most kinds, in the metadata). The [`Patch`] decides the
    /// content type; server-side apply adds its `fieldManager` and `force` parameters, its
    /// object being of the object's type with the status this manager owns (`apiVersion`,
    /// `kind`, `metadata.name` and `status`), and unlike an apply of the object it creates
    /// nothing.
    ///
    /// A controller reporting what it observed, conditional on the version it read:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use kcache_client_http::{ApiResource, Client, Config, ObjectClient, Patch};
    /// use kcache_store::{DynamicObject, Object};
    /// use kcache_testing_server::FakeApiServer;
    /// use serde_json::json;
    ///
    /// let server = FakeApiServer::start().await?;
    /// let client = Client::new(Config::new(server.url().parse()?))?;
    /// let deployments = ObjectClient::<DynamicObject>::builder(
    ///     client,
    ///     ApiResource::new("apps", "v1", "deployments", true),
    /// )
    /// .namespace("shop")
    /// .build();
    /// let mut web = DynamicObject::new(Some("shop"), "web");
    /// web.data.insert("spec".into(), json!({"replicas": 3}));
    /// let web = deployments.create(&web).await?;
    ///
    /// let observed = Patch::Merge(json!({
    ///     "metadata": {"resourceVersion": web.resource_version()},
    ///     "status": {"observedGeneration": web.generation(), "readyReplicas": 3},
    ///     "spec": {"replicas": 0},
    /// }));
    /// let web = deployments.patch_status("web", &observed).await?;
    /// assert_eq!(web.data["status"]["readyReplicas"], 3);
    /// // Only the status is written through it: the spec stays the owner's.
    /// assert_eq!(web.data["spec"]["replicas"], 3);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// A 404 when the object does not exist (for apply too) or its kind has no `status`
    /// subresource, a 409 ([`Error::is_conflict`]) when the patch's
    /// `metadata.resourceVersion` is stale or an apply without `force` meets another manager's
    /// fields, 422 when a JSON patch's `test` fails or the status is invalid ([`Error::Api`]
    /// for all), [`Error::Transport`] for an invalid `name` (nothing is sent) or a failed
    /// request, [`Error::Timeout`], [`Error::Limit`], [`Error::Decode`].
    pub async fn patch_status(&self, name: &str, patch: &Patch) -> Result<T, Error> {
        let body = self
            .patch_subresource(name, Subresource::Status, patch)
            .await?;
        decode(&body, "patch status response")
    }
}

impl<T: Object + Serialize + DeserializeOwned> ObjectClient<T> {
    /// Replaces the `status` of the object named by `object`'s `metadata.name` with
    /// `object`'s (a PUT of its `status` subresource) and returns the object as written.
    /// `object`'s spec is ignored, the stored one kept, and so, for most kinds (custom
    /// resources among them), are its labels and annotations.
    ///
    /// `object`'s `metadata.resourceVersion` is the precondition, as for
    /// [`replace`](Self::replace): the server answers 409 `Conflict` when the object has
    /// changed since that version was read (a change of its spec included).
    ///
    /// # Errors
    ///
    /// A 409 on a stale resource version ([`Error::is_conflict`]), a 404 when the object does
    /// not exist or its kind has no `status` subresource, 422 when the status is invalid, any
    /// other non-2xx answer ([`Error::Api`]), [`Error::Transport`] when `object` has no name or
    /// an invalid one (nothing is sent), does not serialize, or the request fails,
    /// [`Error::Timeout`], [`Error::Limit`], [`Error::Decode`]. See
    /// [matching a conflict](Self#errors-and-matching-a-conflict).
    pub async fn replace_status(&self, object: &T) -> Result<T, Error> {
        // No name is the empty one, which the URL refuses.
        let name = object.name().unwrap_or_default();
        let body = self
            .put_subresource(name, Subresource::Status, object)
            .await?;
        decode(&body, "replace status response")
    }
}
