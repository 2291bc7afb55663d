//! Content negotiation: the [`Format`] a request's `Accept` header asks for.
//!
//! Media ranges are tried in order. `application/json` (or `*/*`, `application/*`) without
//! conversion parameters is the object as stored; with `as=Table` a `meta.k8s.io/v1` Table;
//! with `as=PartialObjectMetadata` or `as=PartialObjectMetadataList` and `g=meta.k8s.io`,
//! `v=v1` or `v1beta1`, metadata only ([`partial_metadata`](super::partial_metadata)).
//! `application/vnd.kubernetes.protobuf` without conversion parameters is the object in
//! protobuf ([`protobuf`](super::protobuf)) for a kind the protobuf table has, built-in kinds;
//! for custom resources, which have no protobuf encoding, it is skipped. With the metadata
//! parameters it is the metadata in protobuf, for every resource (kube-apiserver encodes its
//! `meta.k8s.io` conversions in protobuf for custom resources too). A range asking for
//! another conversion (a Table in protobuf), or for another media type (YAML,
//! CBOR), is skipped too: clients list their preferences with JSON as the fallback. When no
//! range is left, the answer is kube-apiserver's 406 naming the media types it serves for the
//! kind.

use super::partial_metadata::Partial;
use super::protobuf;
use super::served_resource::ServedResource;
use super::status::ApiError;

/// What the Accept header asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// The object (or list) as stored.
    Json,
    /// A `meta.k8s.io/v1` Table.
    Table,
    /// Metadata only.
    Partial(Partial),
    /// The object (or list) as stored, in protobuf.
    Protobuf,
}

impl Format {
    /// Whether the answer is in protobuf (the object, or its metadata).
    pub(crate) fn is_protobuf(self) -> bool {
        match self {
            Self::Protobuf => true,
            Self::Partial(partial) => partial.protobuf,
            Self::Json | Self::Table => false,
        }
    }

    /// The format of a write's answer: Tables are for reads (a write answers the object).
    pub(crate) fn for_writes(self) -> Self {
        match self {
            Self::Table => Self::Json,
            other => other,
        }
    }
}

/// The [`Format`] `accept` asks for on a request for `resource`; 406 when it accepts none the
/// server serves.
pub(crate) fn negotiate(
    accept: Option<&str>,
    resource: &ServedResource,
) -> Result<Format, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Format::Json);
    };
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let (mut as_kind, mut group, mut version) = (None, None, None);
        let mut table = false;
        for param in parts {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let value = value.trim().trim_matches('"');
            match key.trim().to_ascii_lowercase().as_str() {
                "as" => {
                    table = value.eq_ignore_ascii_case("Table");
                    as_kind = Some(value);
                }
                "g" => group = Some(value),
                "v" => version = Some(value),
                _ => {}
            }
        }
        match media.as_str() {
            "application/json" => {
                if table {
                    return Ok(Format::Table);
                }
                if as_kind.is_none() && group.is_none() && version.is_none() {
                    return Ok(Format::Json);
                }
                if let Some(partial) = Partial::from_params(as_kind, group, version) {
                    return Ok(Format::Partial(partial));
                }
            }
            protobuf::MEDIA_TYPE if as_kind.is_some() => {
                // Metadata conversions are served in protobuf for every resource; Tables in
                // protobuf are not served here (the next range is tried).
                if let Some(partial) = Partial::from_params(as_kind, group, version) {
                    return Ok(Format::Partial(Partial {
                        protobuf: true,
                        ..partial
                    }));
                }
            }
            protobuf::MEDIA_TYPE
                if as_kind.is_none()
                    && group.is_none()
                    && version.is_none()
                    && protobuf::served(resource) =>
            {
                return Ok(Format::Protobuf);
            }
            "*/*" | "application/*" => return Ok(Format::Json),
            _ => {}
        }
    }
    Err(ApiError::new(
        406,
        "NotAcceptable",
        &format!(
            "only the following media types are accepted: {}",
            served_media_types(resource)
        ),
    ))
}

/// The media types kube-apiserver serves `resource`'s objects in, as its 406 lists them:
/// custom resources have no protobuf encoding.
fn served_media_types(resource: &ServedResource) -> &'static str {
    if resource.crd_style || resource.definition.is_some() {
        "application/json, application/yaml"
    } else {
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    }
}

#[cfg(test)]
mod tests {
    use super::super::partial_metadata::MetaVersion;
    use super::*;

    fn format(accept: &str) -> Result<Format, u16> {
        negotiate(Some(accept), &ServedResource::pods()).map_err(|e| e.code)
    }

    #[test]
    fn metadata_ranges_and_their_fallbacks() {
        let v1_list = Partial {
            list: true,
            version: MetaVersion::V1,
            protobuf: false,
        };
        assert_eq!(
            format("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
            Ok(Format::Partial(v1_list))
        );
        let in_protobuf = format(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;\
             v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,\
             application/json",
        );
        assert_eq!(
            in_protobuf,
            Ok(Format::Partial(Partial {
                protobuf: true,
                ..v1_list
            }))
        );
        assert!(in_protobuf.unwrap().is_protobuf());
        assert_eq!(
            format("application/json; as=PartialObjectMetadata; v=v1beta1; g=meta.k8s.io"),
            Ok(Format::Partial(Partial {
                list: false,
                version: MetaVersion::V1beta1,
                protobuf: false,
            }))
        );
        assert_eq!(
            format("application/json;as=PartialObjectMetadata, application/json"),
            Ok(Format::Json)
        );
        assert_eq!(
            format("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"),
            Ok(Format::Table)
        );
        assert_eq!(
            format("application/json;as=Foo;g=meta.k8s.io;v=v1"),
            Err(406)
        );
        assert_eq!(format("application/json;g=meta.k8s.io;v=v1"), Err(406));
        assert_eq!(format("application/yaml"), Err(406));
        assert_eq!(format("*/*"), Ok(Format::Json));
    }

    #[test]
    fn protobuf_for_built_in_kinds_json_for_custom_resources() {
        let widgets = ServedResource::new(
            kcache_store::ApiResource::new("example.com", "v1", "widgets", true),
            "Widget",
        );
        let custom = |accept: &str| negotiate(Some(accept), &widgets).map_err(|e| e.code);
        for accept in [
            "application/vnd.kubernetes.protobuf",
            "application/vnd.kubernetes.protobuf, */*",
            "application/vnd.kubernetes.protobuf,application/json",
            "application/vnd.kubernetes.protobuf;stream=watch",
        ] {
            assert_eq!(format(accept), Ok(Format::Protobuf), "{accept}");
        }
        assert_eq!(
            format("application/json, application/vnd.kubernetes.protobuf"),
            Ok(Format::Json)
        );
        assert_eq!(
            format("application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1"),
            Err(406)
        );
        assert_eq!(custom("application/vnd.kubernetes.protobuf"), Err(406));
        // Metadata is served in protobuf for custom resources too.
        assert!(
            custom(
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
            )
            .is_ok_and(Format::is_protobuf)
        );
        assert_eq!(
            custom("application/vnd.kubernetes.protobuf, */*"),
            Ok(Format::Json)
        );
        assert_eq!(
            custom("application/vnd.kubernetes.protobuf,application/json"),
            Ok(Format::Json)
        );
    }

    #[test]
    fn refusals_name_what_kube_apiserver_serves() {
        let widgets = ServedResource::new(
            kcache_store::ApiResource::new("example.com", "v1", "widgets", true),
            "Widget",
        );
        let message = |resource: &ServedResource| {
            let e = negotiate(Some("application/json;as=Foo"), resource).unwrap_err();
            match e.body {
                super::super::status::ErrorBody::Status(s) => s.message.unwrap_or_default(),
                super::super::status::ErrorBody::Text(t) => t,
            }
        };
        assert_eq!(
            message(&ServedResource::pods()),
            "only the following media types are accepted: application/json, application/yaml, \
             application/vnd.kubernetes.protobuf"
        );
        assert_eq!(
            message(&widgets),
            "only the following media types are accepted: application/json, application/yaml"
        );
    }
}
