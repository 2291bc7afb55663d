//! [`Scale`]: the `autoscaling/v1` object of an object's `scale` subresource, which
//! [`ObjectClient::get_scale`](crate::ObjectClient::get_scale) reads and
//! [`replace_scale`](crate::ObjectClient::replace_scale) and
//! [`patch_scale`](crate::ObjectClient::patch_scale) write: the desired replicas, and the
//! observed replicas and label selector.

use kcache_store::ObjectMeta;
use serde::{Deserialize, Serialize, Serializer};

/// The `apiVersion` of a [`Scale`].
const API_VERSION: &str = "autoscaling/v1";

/// The `kind` of a [`Scale`].
const KIND: &str = "Scale";

/// An `autoscaling/v1` `Scale`: how many replicas an object (a deployment, a replica set, a
/// stateful set, a custom resource whose definition has `subresources.scale`) wants and has,
/// the view `kubectl scale` and autoscalers read and write without touching the rest of the
/// object.
///
/// It is always written with `apiVersion: autoscaling/v1` and `kind: Scale`; decoding ignores
/// both, and any field not modelled here. A write changes only the desired replicas
/// ([`spec.replicas`](ScaleSpec::replicas)); its `metadata.resourceVersion`, when set, is the
/// precondition, as an object's is.
///
/// ```
/// use kcache_client_http::Scale;
/// use serde_json::json;
///
/// let scale: Scale = serde_json::from_value(json!({
///     "apiVersion": "autoscaling/v1", "kind": "Scale",
///     "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "7"},
///     "spec": {"replicas": 3},
///     "status": {"replicas": 2, "selector": "app=web"},
/// }))?;
/// assert_eq!(scale.spec.replicas, 3);
/// assert_eq!(scale.status.selector.as_deref(), Some("app=web"));
///
/// let mut wanted = Scale::default();
/// wanted.metadata.name = Some("web".into());
/// wanted.spec.replicas = 5;
/// assert_eq!(
///     serde_json::to_value(&wanted)?,
///     json!({
///         "apiVersion": "autoscaling/v1", "kind": "Scale",
///         "metadata": {"name": "web"},
///         "spec": {"replicas": 5},
///         "status": {"replicas": 0},
///     })
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Scale {
    /// `metadata`: the scaled object's name, namespace, uid and resource version.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `spec`: what is wanted.
    #[serde(default)]
    pub spec: ScaleSpec,
    /// `status`: what is observed (ignored by a write).
    #[serde(default)]
    pub status: ScaleStatus,
}

/// The `spec` of a [`Scale`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleSpec {
    /// `replicas`: the desired number of replicas (0 when the server leaves it out).
    #[serde(default)]
    pub replicas: i32,
}

/// The `status` of a [`Scale`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleStatus {
    /// `replicas`: the number of replicas observed.
    #[serde(default)]
    pub replicas: i32,
    /// `selector`: the label selector of the replicas' pods, as a selector string
    /// (`app=web,tier in (a,b)`), when the object has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}

impl Serialize for Scale {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// What is written: the fields, after the `apiVersion` and `kind` of every `Scale`.
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire<'a> {
            api_version: &'static str,
            kind: &'static str,
            metadata: &'a ObjectMeta,
            spec: &'a ScaleSpec,
            status: &'a ScaleStatus,
        }
        Wire {
            api_version: API_VERSION,
            kind: KIND,
            metadata: &self.metadata,
            spec: &self.spec,
            status: &self.status,
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_scale_round_trips_with_its_api_version_and_kind() {
        let sent = json!({
            "apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "web", "namespace": "shop", "uid": "u1",
                         "resourceVersion": "7", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"replicas": 3},
            "status": {"replicas": 2, "selector": "app=web"},
        });
        let scale: Scale = serde_json::from_value(sent.clone()).unwrap();
        assert_eq!(scale.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!((scale.spec.replicas, scale.status.replicas), (3, 2));
        assert_eq!(serde_json::to_value(&scale).unwrap(), sent);
    }

    #[test]
    fn missing_fields_are_their_defaults_and_unknown_ones_are_ignored() {
        // A `Scale` of zero desired replicas, as Go's `omitempty` writes it.
        let scale: Scale = serde_json::from_value(json!({
            "kind": "Scale", "metadata": {"name": "web"}, "spec": {},
            "status": {"replicas": 0, "targetSelector": "x"},
        }))
        .unwrap();
        assert_eq!(scale.spec.replicas, 0);
        assert_eq!(scale.status, ScaleStatus::default());
        let empty: Scale = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, Scale::default());
    }
}
