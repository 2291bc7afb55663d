//! The objects of a metadata-only lister-watcher: the `Accept` headers that ask the API server
//! for `PartialObjectMetadata`, and the object function that decodes each one into a
//! [`PartialObjectMetadata`] describing the resource's own type.
//!
//! With [`protobuf`](crate::HttpListerWatcherBuilder::protobuf) the metadata is asked for in
//! protobuf first (kube-apiserver serves it so for every resource, custom ones included), and
//! read from the `PartialObjectMetadata` message by [`metadata_proto_objects`].
//!
//! The headers name plain JSON as a fallback, as client-go's metadata client does: a server
//! that cannot answer metadata-only sends whole objects, which decode into the same type (every
//! field but `apiVersion`, `kind` and `metadata` skipped unread), so the cache is right either
//! way and only the savings are lost. An object in the metadata form is taken as the
//! resource's; a whole object must be of the resource's type, as any object of the
//! lister-watcher must.

use std::sync::Arc;

use kcache_store::{ExpectedType, PartialObjectMetadata};
use serde::de::Error as _;

use crate::decode::compact::ObjectFn;
use crate::decode::decode_object;
use crate::decode::protobuf::{self, ProtoObjectFn};

/// The `Accept` of a metadata-only list.
pub(crate) const ACCEPT_METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// The `Accept` of a metadata-only watch (streaming lists included) or get.
pub(crate) const ACCEPT_METADATA: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// The `Accept` of a metadata-only list in protobuf: the metadata in protobuf, else in JSON,
/// else whole objects in JSON (client-go's metadata client asks so).
pub(crate) const ACCEPT_METADATA_LIST_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;\
     as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;\
     as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// The `Accept` of a metadata-only watch or get in protobuf.
pub(crate) const ACCEPT_METADATA_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;\
     as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;\
     as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// Makes decoded metadata describe the resource: checks a whole object's type, then names the
/// resource's `apiVersion` and kind (one copy of each, shared by every object).
#[derive(Clone)]
struct Describer {
    expected: ExpectedType,
    api_version: Option<Arc<str>>,
    kind: Option<Arc<str>>,
}

impl Describer {
    fn new(expected: ExpectedType) -> Self {
        Self {
            api_version: expected.api_version().map(Arc::from),
            kind: expected.kind().map(Arc::from),
            expected,
        }
    }

    fn describe(&self, object: &mut PartialObjectMetadata) -> Result<(), String> {
        let (api_version, kind) = (object.api_version.as_deref(), object.kind.as_deref());
        if !PartialObjectMetadata::is_metadata_form(api_version, kind) {
            self.expected.check_object(api_version, kind)?;
        }
        if self.api_version.is_some() {
            object.api_version.clone_from(&self.api_version);
        }
        object.kind.clone_from(&self.kind);
        Ok(())
    }
}

/// The object function of a metadata-only lister-watcher whose objects are of `expected`
/// type; `skip_managed_fields` drops `metadata.managedFields` unbuilt.
pub(crate) fn metadata_objects(
    expected: ExpectedType,
    skip_managed_fields: bool,
) -> ObjectFn<PartialObjectMetadata> {
    let describer = Describer::new(expected);
    Arc::new(move |json: &str| {
        let mut object: PartialObjectMetadata = decode_object(json, skip_managed_fields, None)?;
        describer
            .describe(&mut object)
            .map_err(serde_json::Error::custom)?;
        Ok(object)
    })
}

/// The protobuf object function of a metadata-only lister-watcher: as [`metadata_objects`],
/// from a `PartialObjectMetadata` message (or a whole object's, from a server that sends them).
pub(crate) fn metadata_proto_objects(
    expected: ExpectedType,
    skip_managed_fields: bool,
) -> ProtoObjectFn<PartialObjectMetadata> {
    let describer = Describer::new(expected);
    Arc::new(move |raw, message, type_meta| {
        let mut object: PartialObjectMetadata =
            protobuf::decode_object(raw, message, type_meta, skip_managed_fields)?;
        describer
            .describe(&mut object)
            .map_err(kcache_protobuf::Error::Custom)?;
        Ok(object)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> ObjectFn<PartialObjectMetadata> {
        metadata_objects(ExpectedType::new("v1", Some("Secret")).or_metadata(), true)
    }

    #[test]
    fn the_metadata_form_describes_the_resources_type_without_managed_fields() {
        let object = secrets()(
            r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{
                "name":"tls","namespace":"web","managedFields":[{"manager":"m"}]}}"#,
        )
        .unwrap();
        assert_eq!(
            (object.api_version.as_deref(), object.kind.as_deref()),
            (Some("v1"), Some("Secret"))
        );
        assert!(!object.metadata.other.contains_key("managedFields"));
    }

    #[test]
    fn a_whole_object_must_be_of_the_resources_type() {
        let object = secrets()(
            r#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"tls"},"data":{"k":"dg=="}}"#,
        )
        .unwrap();
        assert_eq!(object.metadata.name.as_deref(), Some("tls"));
        let wrong = secrets()(r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"}}"#);
        assert!(wrong.unwrap_err().to_string().contains("ConfigMap"));
    }
}
