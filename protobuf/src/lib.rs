//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) for kcache: read any
//! built-in kind into the types users already have, and write it.
//!
//! kube-apiserver serves every built-in kind in protobuf; it is smaller on the wire than JSON
//! and much cheaper to decode. This crate reads it without generated Rust types of its own:
//! a field table ([`table`], generated from the published `.proto` definitions) tells, for each
//! message, each field's number, JSON name and encoding, and a serde `Deserializer` ([`de`])
//! presents the message as its JSON form would be, so k8s-openapi's `Pod`, a hand-written serde
//! type or `serde_json::Value` deserialize from protobuf exactly as they do from JSON.
//!
//! - [`envelope`]: the `k8s\0` magic and `runtime.Unknown` around every body;
//! - [`list`]: lists read item by item as the body arrives;
//! - [`frames`]: watch streams (length-prefixed `WatchEvent` frames);
//! - [`encode`](mod@encode): JSON objects written in protobuf (servers, tests).
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use serde_json::json;
//!
//! let pod = json!({
//!     "apiVersion": "v1", "kind": "Pod",
//!     "metadata": {"name": "web", "namespace": "default",
//!                  "creationTimestamp": "2024-05-01T10:00:00Z", "labels": {"app": "web"}},
//!     "spec": {"containers": [{"name": "app", "image": "nginx",
//!                              "ports": [{"containerPort": 80}],
//!                              "resources": {"limits": {"cpu": "500m"}}}]},
//! });
//! let bytes = kcache_protobuf::envelope::encode_object(&pod)?;
//! let from_protobuf: Pod = kcache_protobuf::envelope::decode(&bytes)?;
//! let from_json: Pod = serde_json::from_value(pod)?;
//! assert_eq!(from_protobuf, from_json);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod base64;
pub mod de;
pub mod encode;
pub mod envelope;
mod error;
pub mod frames;
pub mod list;
pub mod table;
pub mod time;
pub mod wire;

pub use de::{TypeMeta, from_message};
pub use error::Error;

/// How deep messages may nest before a body is refused (Kubernetes objects nest about 12 deep;
/// custom JSON inside `RawExtension` is read by `serde_json`, with its own limit).
pub const MAX_DEPTH: usize = 64;
