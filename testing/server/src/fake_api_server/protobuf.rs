//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`), through
//! `kcache-protobuf`: answers to clients that ask for it, and request bodies sent in it.
//!
//! - A request whose `Accept` prefers protobuf (client-go's `application/vnd.kubernetes.protobuf,
//!   */*`) for a kind the protobuf table has is answered in protobuf: GETs, lists (the enveloped
//!   `<Kind>List`), the objects writes answer, and `Status` errors once the request got that far.
//!   The body is the JSON answer the server would send, re-encoded: what a client decodes is the
//!   same either way.
//! - Its watches are `application/vnd.kubernetes.protobuf;stream=watch`: each event one
//!   length-prefixed `WatchEvent` frame whose object is enveloped with its `apiVersion`/`kind`
//!   (bookmarks included; an ERROR event's object is a `Status`).
//! - Custom resources have no protobuf encoding (on kube-apiserver neither): a protobuf range in
//!   `Accept` is skipped for them, so protobuf alone is 406 and protobuf then JSON is JSON (see
//!   [`negotiation`](super::negotiation)).
//! - POST and PUT bodies in protobuf (kubectl's generated `create` commands send them), DELETE
//!   options and access reviews too, are decoded to their JSON form (their empty strings left
//!   out, see [`decode_body`]), then handled exactly as a JSON body is; undecodable bytes are
//!   400.
//!
//! Encoding a stored object costs a JSON parse and a protobuf write per answer (nothing is kept
//! encoded): fine for tests, not for benchmarks of protobuf clients.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use kcache_protobuf::envelope;
use kcache_protobuf::table::{Kind, MapValue, Message, Special};
use kcache_protobuf::{Error, frames, table};
use serde_json::Value;

use super::body::ResponseBody;
use super::partial_metadata::{self, MetaVersion};
use super::served_resource::ServedResource;
use super::sharding;
use super::status::{ApiError, internal};
use super::stored::Stored;

/// The protobuf media type (`application/vnd.kubernetes.protobuf`).
pub(crate) const MEDIA_TYPE: &str = envelope::CONTENT_TYPE;

/// Whether the server answers `resource`'s objects in protobuf: a built-in kind whose object and
/// list kinds the protobuf table has (custom resources never).
pub(crate) fn served(resource: &ServedResource) -> bool {
    if resource.crd_style || resource.definition.is_some() {
        return false;
    }
    let api_version = resource.api.api_version();
    table::message_for_kind(&api_version, &resource.kind).is_some()
        && table::message_for_kind(&api_version, &format!("{}List", resource.kind)).is_some()
}

/// Whether a `Content-Type` header value names the protobuf media type.
pub(crate) fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(MEDIA_TYPE))
}

/// Whether `accept` prefers protobuf: its first media range is protobuf without conversion
/// parameters (for the answers not negotiated per kind: access reviews).
pub(crate) fn preferred(accept: Option<&str>) -> bool {
    let Some(first) = accept.and_then(|a| a.split(',').next()) else {
        return false;
    };
    let mut parts = first.split(';').map(str::trim);
    parts
        .next()
        .is_some_and(|media| media.eq_ignore_ascii_case(MEDIA_TYPE))
        && parts.all(|param| {
            let key = param.split('=').next().unwrap_or_default().trim();
            !["as", "g", "v"].iter().any(|k| key.eq_ignore_ascii_case(k))
        })
}

/// The enveloped protobuf of `value`, a JSON object naming its `apiVersion` and `kind`.
///
/// # Errors
/// [`Error::UnknownKind`] for a kind the table does not have; an object the protobuf form
/// cannot carry.
pub(crate) fn encode_value(value: &Value) -> Result<Vec<u8>, Error> {
    envelope::encode_object(value)
}

/// The enveloped protobuf list of `items` (of `resource`, or their metadata in `partial`'s
/// version) with the list metadata `meta`, copied from each item's stored protobuf as the
/// JSON list is from their stored JSON: nothing decoded or encoded per item. `None` when an
/// item has no protobuf form (the JSON answer is then converted).
pub(crate) fn list_of_stored(
    resource: &ServedResource,
    partial: Option<MetaVersion>,
    meta: &serde_json::Map<String, Value>,
    items: &[&Stored],
) -> Option<Vec<u8>> {
    let message = table::message_named("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")?;
    let mut list_meta =
        kcache_protobuf::encode::to_vec(&Value::Object(meta.clone()), message).ok()?;
    sharding::append_protobuf_shard_info(&mut list_meta, message.fields, meta);
    let mut raw = Vec::new();
    kcache_protobuf::wire::put_bytes(&mut raw, 1, &list_meta);
    for item in items {
        let message = match partial {
            Some(_) => item.metadata_protobuf()?,
            None => envelope::parse(item.protobuf()?).ok()?.raw,
        };
        kcache_protobuf::wire::put_bytes(&mut raw, 2, message);
    }
    let mut out = Vec::with_capacity(raw.len() + 64);
    match partial {
        Some(version) => {
            envelope::write(
                version.api_version(),
                partial_metadata::LIST_KIND,
                &raw,
                &mut out,
            );
        }
        None => envelope::write(
            &resource.api.api_version(),
            &format!("{}List", resource.kind),
            &raw,
            &mut out,
        ),
    }
    Some(out)
}

/// The enveloped protobuf of the JSON answer `json`.
fn encode_json(json: &[u8]) -> Result<Vec<u8>, Error> {
    let value: Value = serde_json::from_slice(json).map_err(|e| Error::Custom(e.to_string()))?;
    encode_value(&value)
}

/// A response with status `code`, `Content-Type: application/vnd.kubernetes.protobuf` and
/// `body`.
pub(crate) fn protobuf_response(code: u16, body: impl Into<Bytes>) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::full(body));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
    resp
}

/// The answer `json` (an object or list naming its kind) in protobuf, with status `code`; in
/// JSON when the table does not have its kind; a 500 `Status` (in protobuf) when it cannot be
/// encoded.
pub(crate) fn response(code: u16, json: Vec<u8>) -> Response<ResponseBody> {
    match encode_json(&json) {
        Ok(body) => protobuf_response(code, body),
        Err(Error::UnknownKind { .. }) => super::response::json_response(code, json),
        Err(e) => error_response(&internal(format!(
            "the fake API server could not encode its answer in protobuf: {e}"
        ))),
    }
}

/// The response for `err` to a protobuf request: its `Status` enveloped (plain-text bodies stay
/// text), with its code and `Retry-After`; in JSON when the `Status` cannot be encoded.
pub(crate) fn error_response(err: &ApiError) -> Response<ResponseBody> {
    let mut resp = super::response::error_response(err);
    let super::status::ErrorBody::Status(status) = &err.body else {
        return resp;
    };
    let Ok(mut value) = serde_json::to_value(status) else {
        return resp;
    };
    name_status_kind(&mut value);
    if let Ok(body) = encode_value(&value) {
        *resp.body_mut() = ResponseBody::full(body);
        resp.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
    }
    resp
}

/// Sets a `Status` object's `apiVersion` and `kind` when it leaves them out (a fault's own
/// `Status`, say): the envelope needs them.
fn name_status_kind(value: &mut Value) {
    if let Value::Object(map) = value {
        map.entry("apiVersion").or_insert_with(|| Value::from("v1"));
        map.entry("kind").or_insert_with(|| Value::from("Status"));
    }
}

/// Appends the watch frame of an event of type `event_type` whose object is `object` (a JSON
/// object naming its kind; a `Status` for ERROR events). An object that cannot be encoded is
/// sent as an ERROR event with a 500 `Status` saying why.
pub(crate) fn write_event(out: &mut Vec<u8>, event_type: &str, object: &Value) {
    let mut object = object.clone();
    if event_type == "ERROR" {
        name_status_kind(&mut object);
    }
    match encode_value(&object) {
        Ok(enveloped) => frames::write_event(event_type, &enveloped, out),
        Err(e) => {
            let status = internal(format!(
                "the fake API server could not encode a watch event in protobuf: {e}"
            ))
            .status();
            let mut status = serde_json::to_value(status).unwrap_or_default();
            name_status_kind(&mut status);
            let enveloped = encode_value(&status).unwrap_or_default();
            frames::write_event("ERROR", &enveloped, out);
        }
    }
}

/// Appends the watch frame of an event whose object's JSON is `json`.
pub(crate) fn write_event_json(out: &mut Vec<u8>, event_type: &str, json: &[u8]) {
    let value = serde_json::from_slice(json).unwrap_or(Value::Null);
    write_event(out, event_type, &value);
}

/// Appends the frame of an event whose object cannot be decoded but whose metadata can:
/// `object`, of `kind` in `api_version`, encoded by that kind's message, in an envelope naming
/// apiVersion `7`, which no table has (the protobuf form of the JSON fault's numeric
/// `apiVersion`).
pub(crate) fn write_undecodable_event(
    out: &mut Vec<u8>,
    event_type: &str,
    (api_version, kind): (&str, &str),
    object: &Value,
) {
    let raw = table::message_for_kind(api_version, kind)
        .and_then(|message| kcache_protobuf::encode::to_vec(object, message).ok())
        .unwrap_or_default();
    let mut enveloped = Vec::with_capacity(raw.len() + 32);
    envelope::write("7", kind, &raw, &mut enveloped);
    frames::write_event(event_type, &enveloped, out);
}

/// Appends a frame whose payload is not a `WatchEvent` (a corrupt stream).
pub(crate) fn write_corrupt_frame(out: &mut Vec<u8>) {
    // Field 1 as a length-delimited value longer than the frame.
    let payload = [0x0a, 0x7f, b'M', b'O'];
    let len = u32::try_from(payload.len()).unwrap_or_default();
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&payload);
}

/// The JSON form of a protobuf request body (an enveloped object), for the write to go on as
/// with a JSON body; 400 when it is not one.
///
/// Go clients (kubectl) write every string field that is not a pointer, set or not, and the
/// decoder presents what is on the wire: `"generateName": ""`, a Secret's `"type": ""`, a
/// port's `"protocol": ""`. Go's JSON encoding leaves those out (`omitempty`), and
/// kube-apiserver, decoding into Go types, cannot tell them from absent ones: defaults apply.
/// So empty strings are removed from the object's fields here (not from maps: a label or a
/// configmap key may be empty). Zero numbers and `false` are kept: on a pointer field they are
/// meaningful (`replicas: 0`), and on the others they mean what absent means.
pub(crate) fn decode_body(body: &[u8]) -> Result<Bytes, ApiError> {
    let bad = |e: Error| {
        ApiError::bad_request(&format!(
            "the object provided is unrecognized: the protobuf body could not be decoded: {e}"
        ))
    };
    let message = envelope::parse(body)
        .and_then(|e| e.message())
        .map_err(bad)?;
    let mut value: Value = envelope::decode(body).map_err(bad)?;
    drop_empty_strings(&mut value, message, 0);
    serde_json::to_vec(&value)
        .map(Bytes::from)
        .map_err(internal)
}

/// Removes the empty strings of the fields of `value`, an object of `message`'s JSON form, at
/// any depth.
fn drop_empty_strings(value: &mut Value, message: &'static Message, depth: usize) {
    if depth > kcache_protobuf::MAX_DEPTH || message.special != Special::None {
        return;
    }
    for field in message.fields {
        if field.inline {
            if let Kind::Message(inner) = field.kind {
                drop_empty_strings(value, table::message(inner), depth + 1);
            }
            continue;
        }
        let Value::Object(object) = value else {
            return;
        };
        let Some(member) = object.get_mut(field.json) else {
            continue;
        };
        match field.kind {
            Kind::String if !field.repeated && member.as_str() == Some("") => {
                object.remove(field.json);
            }
            Kind::Message(inner) => {
                let inner = table::message(inner);
                match member {
                    Value::Array(items) if field.repeated => {
                        for item in items {
                            drop_empty_strings(item, inner, depth + 1);
                        }
                    }
                    member => drop_empty_strings(member, inner, depth + 1),
                }
            }
            Kind::Map(MapValue::Message(inner)) => {
                if let Value::Object(entries) = member {
                    for entry in entries.values_mut() {
                        drop_empty_strings(entry, table::message(inner), depth + 1);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn built_in_kinds_are_served_custom_resources_not() {
        let unserved: Vec<String> = ServedResource::defaults()
            .into_iter()
            .filter(|r| !served(r))
            .map(|r| r.kind)
            .collect();
        // The protobuf table has no `apiextensions.k8s.io` kinds: definitions answer JSON.
        assert_eq!(unserved, ["CustomResourceDefinition"]);
        let widgets = ServedResource::new(
            kcache_store::ApiResource::new("example.com", "v1", "widgets", true),
            "Widget",
        );
        assert!(!served(&widgets));
    }

    #[test]
    fn protobuf_is_preferred_when_it_comes_first_without_conversions() {
        assert!(preferred(Some(
            "application/vnd.kubernetes.protobuf,application/json"
        )));
        assert!(preferred(Some(
            "application/vnd.kubernetes.protobuf;stream=watch"
        )));
        assert!(!preferred(Some(
            "application/json, application/vnd.kubernetes.protobuf"
        )));
        assert!(!preferred(Some(
            "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1"
        )));
        assert!(!preferred(None));
    }

    #[test]
    fn content_types_are_matched_by_media_type() {
        assert!(is_protobuf("application/vnd.kubernetes.protobuf"));
        assert!(is_protobuf(
            "Application/Vnd.Kubernetes.Protobuf; charset=x"
        ));
        assert!(!is_protobuf("application/json"));
        assert!(!is_protobuf("application/vnd.kubernetes.protobuf-x"));
    }

    #[test]
    fn bodies_round_trip_and_bad_bytes_are_400() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default"}, "data": {"k": "v"}});
        let body = encode_value(&cm).unwrap();
        let json: Value = serde_json::from_slice(&decode_body(&body).unwrap()).unwrap();
        assert_eq!(json, cm);
        let err = decode_body(b"{\"kind\":\"ConfigMap\"}").unwrap_err();
        assert_eq!(err.code, 400);
        let err = decode_body(b"k8s\0\x0a\x7f").unwrap_err();
        assert_eq!(err.code, 400);
    }

    /// Hex of what `kubectl create configmap settings -n team-a --from-literal=level=3
    /// --from-literal=mode=fast` sends.
    const KUBECTL_CONFIGMAP: &str = "6b3873000a0f0a0276311209436f6e6669674d6170123a0a1e0a087365\
        7474696e677312001a067465616d2d6122002a00320038004200120a0a056c6576656c120133120c0a046d6f\
        64651204666173741a002200";

    fn unhex(hex: &str) -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn go_clients_empty_strings_are_left_out_but_not_from_maps() {
        let body = decode_body(&unhex(KUBECTL_CONFIGMAP)).unwrap();
        let json: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            json,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "settings", "namespace": "team-a",
                    "creationTimestamp": null},
                "data": {"level": "3", "mode": "fast"}})
        );
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"empty": ""}},
            "spec": {"replicas": 0, "strategy": {"type": ""},
                "template": {"metadata": {"name": ""}, "spec": {"containers": [
                    {"name": "c", "image": "i", "imagePullPolicy": "", "args": ["", "x"],
                     "ports": [{"containerPort": 80, "protocol": ""}],
                     "livenessProbe": {"httpGet": {"path": "", "port": 80}}}]}}}});
        let body = decode_body(&encode_value(&deployment).unwrap()).unwrap();
        let json: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["metadata"]["labels"], json!({"empty": ""}));
        assert_eq!(json["spec"]["replicas"], 0);
        assert_eq!(json["spec"]["strategy"], json!({}));
        assert_eq!(json["spec"]["template"]["metadata"], json!({}));
        let container = &json["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container.get("imagePullPolicy"), None);
        assert_eq!(container["args"], json!(["", "x"]));
        assert_eq!(container["ports"], json!([{"containerPort": 80}]));
        assert_eq!(container["livenessProbe"], json!({"httpGet": {"port": 80}}));
    }

    #[test]
    fn statuses_without_their_kind_are_named() {
        let mut frame = Vec::new();
        write_event(
            &mut frame,
            "ERROR",
            &json!({"status": "Failure", "code": 410}),
        );
        let event = frames::parse_event(&frame[4..]).unwrap();
        assert_eq!(event.event_type, "ERROR");
        let status: Value = envelope::decode(event.object).unwrap();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["code"], 410);
    }
}
