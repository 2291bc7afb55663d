//! [`finalizer`]: the finalizer protocol of an operator around its reconcile (kube-rs's
//! `runtime::finalizer`, controller-runtime's finalizer helpers): the finalizer is added before
//! the first apply, cleanup runs once the object is being deleted, and the finalizer is
//! removed after a successful cleanup, so the object is not gone before its cleanup ran.

use std::future::Future;
use std::sync::Arc;

use kcache_reflector::Error;
use kcache_store::Object;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::{BoxError, ObjectClient, Patch};

/// How many times a finalizer write is tried again on a fresh read after another writer
/// changed the object's finalizers in between.
pub const FINALIZER_ATTEMPTS: usize = 5;

/// What the reconcile is asked to do by [`finalizer`].
#[derive(Debug)]
pub enum FinalizerEvent<T> {
    /// The object lives (and carries the finalizer): bring the world in line with it.
    Apply(Arc<T>),
    /// The object is being deleted and still carries the finalizer: clean up what it made
    /// outside its owner references' reach. The finalizer is removed once this succeeds.
    Cleanup(Arc<T>),
}

/// Why [`finalizer`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FinalizerError {
    /// The reconcile's apply failed.
    #[error("the apply reconcile failed: {0}")]
    Apply(#[source] BoxError),
    /// The cleanup failed: the finalizer stays, and the deletion waits for a later cleanup.
    #[error("the cleanup failed (the finalizer stays): {0}")]
    Cleanup(#[source] BoxError),
    /// Adding the finalizer failed.
    #[error("adding finalizer `{finalizer}` failed: {source}")]
    Add {
        /// The finalizer.
        finalizer: String,
        /// The write's error.
        #[source]
        source: Error,
    },
    /// Removing the finalizer after the cleanup failed (the cleanup runs again later).
    #[error("removing finalizer `{finalizer}` failed: {source}")]
    Remove {
        /// The finalizer.
        finalizer: String,
        /// The write's error.
        #[source]
        source: Error,
    },
    /// The object cannot be read as JSON (its finalizers are read from its JSON form), or has
    /// no name.
    #[error("the object cannot be read: {0}")]
    Object(String),
}

/// What the finalizer protocol asks for, from the object's state.
enum Step {
    /// Add the finalizer (its current list is `finalizers`; `None` when it has none).
    Add(Option<Vec<String>>),
    /// Run the apply.
    Apply,
    /// Run the cleanup, then remove the finalizer.
    Cleanup,
    /// Being deleted without the finalizer: nothing of this controller's is left to do.
    Nothing,
}

/// The finalizers of `object`, from its JSON form (`None`: it has no list).
fn finalizers_of<T: Serialize>(object: &T) -> Result<Option<Vec<String>>, FinalizerError> {
    let value = serde_json::to_value(object).map_err(|e| FinalizerError::Object(e.to_string()))?;
    match value.pointer("/metadata/finalizers") {
        None | Some(Value::Null) => Ok(None),
        Some(list) => serde_json::from_value(list.clone())
            .map(Some)
            .map_err(|e| FinalizerError::Object(format!("metadata.finalizers: {e}"))),
    }
}

fn step<T: Object + Serialize>(object: &T, name: &str) -> Result<Step, FinalizerError> {
    let finalizers = finalizers_of(object)?;
    let has = finalizers.iter().flatten().any(|f| f == name);
    Ok(match (object.is_being_deleted(), has) {
        (false, false) => Step::Add(finalizers),
        (false, true) => Step::Apply,
        (true, true) => Step::Cleanup,
        (true, false) => Step::Nothing,
    })
}

/// The JSON patch adding `name` to `current` (tested first, so that a concurrent writer's
/// change makes it fail instead of being lost).
fn add_patch(current: Option<&Vec<String>>, name: &str) -> Patch {
    Patch::Json(match current {
        None => vec![
            json!({"op": "test", "path": "/metadata/finalizers", "value": null}),
            json!({"op": "add", "path": "/metadata/finalizers", "value": [name]}),
        ],
        Some(list) => vec![
            json!({"op": "test", "path": "/metadata/finalizers", "value": list}),
            json!({"op": "add", "path": "/metadata/finalizers/-", "value": name}),
        ],
    })
}

/// The JSON patch removing `name` from `current` (the whole list tested first).
fn remove_patch(current: &[String], name: &str) -> Patch {
    let kept: Vec<&String> = current.iter().filter(|f| *f != name).collect();
    Patch::Json(vec![
        json!({"op": "test", "path": "/metadata/finalizers", "value": current}),
        json!({"op": "replace", "path": "/metadata/finalizers", "value": kept}),
    ])
}

/// Whether `e` says the object changed under the patch: a failed `test` (422) or a conflict
/// (409). Then a fresh read decides again.
fn lost_race(e: &Error) -> bool {
    e.is_conflict() || e.status().is_some_and(|s| s.code == Some(422))
}

/// Runs `reconcile` under the finalizer `name` (a qualified name such as
/// `example.com/cleanup`), as kube-rs's `finalizer` does:
///
/// - an object that lives without the finalizer gets it (a JSON patch whose `test` of the
///   current list makes a concurrent writer's change fail the write instead of being lost),
///   then the apply runs on the object as written (not waiting for the write's own event,
///   which a predicate such as kcache-informer's `Predicate::generation_changed` filters out);
/// - an object that lives with it: `reconcile(FinalizerEvent::Apply(object))`, its result
///   returned as `Ok(Some(r))`;
/// - an object being deleted with it: `reconcile(FinalizerEvent::Cleanup(object))`; on
///   success the finalizer is removed (tested the same way) and the result returned; on
///   failure the finalizer stays, so the object waits for a later successful cleanup;
/// - an object being deleted without it: `Ok(None)`, nothing to do.
///
/// `object` is usually the cache's copy, which may be stale: when a finalizer write loses to
/// another writer, the object is read again from the server and the protocol decided again,
/// up to [`FINALIZER_ATTEMPTS`] times. `client` writes objects of `object`'s kind in its
/// namespace.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use kcache_client_http::{ApiResource, Client, Config, FinalizerEvent, ObjectClient, finalizer};
/// use kcache_store::{DynamicObject, Object};
/// use kcache_testing_server::FakeApiServer;
///
/// let server = FakeApiServer::start().await?;
/// let client = Client::new(Config::new(server.url().parse()?))?;
/// let configmaps = ObjectClient::<DynamicObject>::builder(
///     client,
///     ApiResource::new("", "v1", "configmaps", true),
/// )
/// .namespace("shop")
/// .build();
/// let created = Arc::new(configmaps.create(&DynamicObject::new(Some("shop"), "web")).await?);
///
/// // The finalizer is added first, then the apply runs.
/// let step = |event: FinalizerEvent<DynamicObject>| async move {
///     Ok::<_, std::io::Error>(match event {
///         FinalizerEvent::Apply(_) => "applied",
///         FinalizerEvent::Cleanup(_) => "cleaned up",
///     })
/// };
/// let outcome = finalizer(&configmaps, "example.com/cleanup", created, step).await?;
/// assert_eq!(outcome, Some("applied"));
/// let now = configmaps.get("web").await?.expect("exists");
/// assert_eq!(now.metadata.other["finalizers"], serde_json::json!(["example.com/cleanup"]));
///
/// // Deleted: the object stays, marked, until the cleanup has run and the finalizer is gone.
/// configmaps.delete("web", None).await?;
/// let marked = Arc::new(configmaps.get("web").await?.expect("waits for its finalizer"));
/// assert!(marked.is_being_deleted());
/// assert_eq!(
///     finalizer(&configmaps, "example.com/cleanup", marked, step).await?,
///     Some("cleaned up")
/// );
/// assert!(configmaps.get("web").await?.is_none());
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// [`FinalizerError::Apply`] or [`Cleanup`](FinalizerError::Cleanup) with the reconcile's
/// error; [`Add`](FinalizerError::Add) or [`Remove`](FinalizerError::Remove) when the write
/// fails otherwise than by losing a race, or still loses after [`FINALIZER_ATTEMPTS`];
/// [`Object`](FinalizerError::Object) when the object has no name or its finalizers cannot be
/// read.
pub async fn finalizer<T, F, Fut, R, E>(
    client: &ObjectClient<T>,
    name: &str,
    object: Arc<T>,
    reconcile: F,
) -> Result<Option<R>, FinalizerError>
where
    T: Object + Serialize + DeserializeOwned,
    F: FnOnce(FinalizerEvent<T>) -> Fut,
    Fut: Future<Output = Result<R, E>>,
    E: Into<BoxError>,
{
    let object_name = object
        .name()
        .ok_or_else(|| FinalizerError::Object("the object has no name".to_owned()))?
        .to_owned();
    let mut object = object;
    loop {
        match step(&*object, name)? {
            Step::Nothing => return Ok(None),
            Step::Apply => {
                return reconcile(FinalizerEvent::Apply(object))
                    .await
                    .map(Some)
                    .map_err(|e| FinalizerError::Apply(e.into()));
            }
            Step::Add(current) => {
                let patch = add_patch(current.as_ref(), name);
                // A fresh read that no longer needs the finalizer added is decided again.
                let rebuild = |fresh: &T| match step(fresh, name)? {
                    Step::Add(current) => Ok(Some(add_patch(current.as_ref(), name))),
                    _ => Ok(None),
                };
                match write(client, Change::Add, name, &object_name, patch, rebuild).await? {
                    // On to the apply, with the object as written (the finalizer on), or to
                    // what the fresh read asks for.
                    Written::Patched(written) | Written::Unneeded(written) => object = written,
                    // Gone meanwhile: nothing is left to do for it.
                    Written::Gone => return Ok(None),
                }
            }
            Step::Cleanup => {
                let current = finalizers_of(&*object)?.unwrap_or_default();
                let result = reconcile(FinalizerEvent::Cleanup(object))
                    .await
                    .map_err(|e| FinalizerError::Cleanup(e.into()))?;
                let patch = remove_patch(&current, name);
                // Removed by someone else meanwhile: nothing to write.
                let rebuild = |fresh: &T| {
                    let current = finalizers_of(fresh)?.unwrap_or_default();
                    Ok(current
                        .iter()
                        .any(|f| f == name)
                        .then(|| remove_patch(&current, name)))
                };
                // Written, no longer needed or gone with its last finalizer: removed.
                write(client, Change::Remove, name, &object_name, patch, rebuild).await?;
                return Ok(Some(result));
            }
        }
    }
}

/// Which finalizer write [`write`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Adding the finalizer.
    Add,
    /// Removing it after the cleanup.
    Remove,
}

impl Change {
    /// The error of this write failing with `source`.
    fn failed(self, finalizer: &str, source: Error) -> FinalizerError {
        let finalizer = finalizer.to_owned();
        match self {
            Self::Add => FinalizerError::Add { finalizer, source },
            Self::Remove => FinalizerError::Remove { finalizer, source },
        }
    }
}

/// How a finalizer write ended.
enum Written<T> {
    /// The patch was written: the object as written.
    Patched(Arc<T>),
    /// A fresh read, after a lost race, needs no write: the object as read.
    Unneeded(Arc<T>),
    /// The object is gone: a fresh read found none or, for a removal, the patch found none
    /// (the object went once its last finalizer went).
    Gone,
}

/// Writes `patch` to the object `object_name`; while the write loses to another writer (the
/// patch's `test` fails, or a conflict), reads the object again and writes what `rebuild`
/// makes of it instead (`None`: nothing to write any more), up to [`FINALIZER_ATTEMPTS`]
/// writes in all. Losing the last one is an error, as any other failed write is.
async fn write<T>(
    client: &ObjectClient<T>,
    change: Change,
    finalizer: &str,
    object_name: &str,
    mut patch: Patch,
    mut rebuild: impl FnMut(&T) -> Result<Option<Patch>, FinalizerError>,
) -> Result<Written<T>, FinalizerError>
where
    T: DeserializeOwned,
{
    let mut attempt = 1;
    loop {
        match client.patch(object_name, &patch).await {
            Ok(written) => return Ok(Written::Patched(Arc::new(written))),
            Err(e) if lost_race(&e) && attempt < FINALIZER_ATTEMPTS => {}
            Err(e) if change == Change::Remove && e.is_not_found() => return Ok(Written::Gone),
            Err(source) => return Err(change.failed(finalizer, source)),
        }
        attempt += 1;
        tracing::debug!(object = %object_name, finalizer, attempt, "the object changed under a finalizer write; reading it again");
        let fresh = client
            .get(object_name)
            .await
            .map_err(|source| change.failed(finalizer, source))?;
        let Some(fresh) = fresh else {
            return Ok(Written::Gone);
        };
        match rebuild(&fresh)? {
            Some(next) => patch = next,
            None => return Ok(Written::Unneeded(Arc::new(fresh))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::DynamicObject;

    fn object(finalizers: Option<&[&str]>, deleting: bool) -> DynamicObject {
        let mut o = DynamicObject::new(Some("ns"), "a");
        if let Some(list) = finalizers {
            o.metadata.other.insert("finalizers".into(), json!(list));
        }
        if deleting {
            o.metadata.deletion_timestamp = Some("2025-01-01T00:00:00Z".into());
        }
        o
    }

    #[test]
    fn the_step_follows_deletion_and_the_finalizer() {
        let f = "example.com/x";
        assert!(matches!(
            step(&object(None, false), f).unwrap(),
            Step::Add(None)
        ));
        assert!(matches!(
            step(&object(Some(&["other"]), false), f).unwrap(),
            Step::Add(Some(l)) if l == ["other"]
        ));
        assert!(matches!(
            step(&object(Some(&[f]), false), f).unwrap(),
            Step::Apply
        ));
        assert!(matches!(
            step(&object(Some(&[f]), true), f).unwrap(),
            Step::Cleanup
        ));
        assert!(matches!(
            step(&object(Some(&["other"]), true), f).unwrap(),
            Step::Nothing
        ));
    }

    #[test]
    fn patches_test_the_list_they_change() {
        let Patch::Json(add) = add_patch(None, "f") else {
            panic!("a JSON patch")
        };
        assert_eq!(
            add[0],
            json!({"op": "test", "path": "/metadata/finalizers", "value": null})
        );
        let Patch::Json(remove) = remove_patch(&["a".into(), "f".into()], "f") else {
            panic!("a JSON patch")
        };
        assert_eq!(remove[0]["value"], json!(["a", "f"]));
        assert_eq!(remove[1]["value"], json!(["a"]));
    }
}
