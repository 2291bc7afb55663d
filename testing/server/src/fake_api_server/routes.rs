//! Routing and the non-watch handlers: list, get, create, update, patch, delete (discovery and
//! `OpenAPI` documents are [`discovery`](super::discovery)'s).

use std::ops::Bound;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{Method, Request, Response, header};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::{Body, Incoming};
use kcache_store::DynamicObject;
use serde_json::{Value, json};

use super::body::ResponseBody;
use super::delete_options::DeleteOptions;
use super::discovery;
use super::faults::{FaultKind, RequestShape, Verb};
use super::field_manager::FieldManager;
use super::field_validation;
use super::limits::MAX_BODY;
use super::negotiation::{Format, negotiate};
use super::params::{self, ListParams, Target, parse_rv, truthy};
use super::partial_metadata;
use super::patch::{self, PatchType};
use super::protobuf;
use super::response::{error_response, json_response};
use super::schema;
use super::served_resource::{ResourceId, ServedResource};
use super::sharding;
use super::state::{self, Deleted, RequestRecord, Shared, wait_for_rv};
use super::status::{self, ApiError, internal};
use super::stored::Stored;
use super::subresource::{self, Subresource};
use super::table;
use super::util::parse_query;
use super::watch;
use super::write_options;
use super::{access, health};

/// The answer `stored` (an object of `resource`) in `format`: the object, its Table, or its
/// `PartialObjectMetadata` (406 when the list kind was asked for).
fn object_response(
    code: u16,
    stored: &Stored,
    format: Format,
    resource: &ServedResource,
) -> Response<ResponseBody> {
    let obj = &*stored.object;
    match format {
        Format::Table => {
            let t = table::table(resource, obj.metadata.resource_version.as_deref(), &[obj]);
            json_response(code, serde_json::to_vec(&t).unwrap_or_default())
        }
        Format::Partial(partial) => match partial.for_object(resource) {
            Ok(version) if partial.protobuf => {
                let mut body = Vec::new();
                match partial_metadata::write_protobuf_object(&mut body, version, stored) {
                    Some(()) => protobuf::protobuf_response(code, body),
                    None => encoded_response(
                        code,
                        partial_metadata::object_body(version, stored),
                        format,
                    ),
                }
            }
            Ok(version) => json_response(code, partial_metadata::object_body(version, stored)),
            Err(e) if partial.protobuf => protobuf::error_response(&e),
            Err(e) => error_response(&e),
        },
        Format::Json | Format::Protobuf => {
            let mut body = Vec::with_capacity(stored.json_len(true));
            stored.write_json(&mut body, true);
            encoded_response(code, body, format)
        }
    }
}

/// A response with status `code` and the JSON answer `json`, in protobuf when `format` is.
fn encoded_response(code: u16, json: Vec<u8>, format: Format) -> Response<ResponseBody> {
    if format.is_protobuf() {
        protobuf::response(code, json)
    } else {
        json_response(code, json)
    }
}

/// Handles one request.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    address: Arc<str>,
) -> Response<ResponseBody> {
    let query = parse_query(req.uri().query());
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    {
        let record = RequestRecord {
            method: method.to_string(),
            path: path.clone(),
            query: query.clone(),
            version: format!("{:?}", req.version()),
            impersonation: req
                .headers()
                .iter()
                .filter(|(name, _)| name.as_str().starts_with("impersonate-"))
                .map(|(name, value)| {
                    let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                    (name.as_str().to_owned(), value)
                })
                .collect(),
            accept: req
                .headers()
                .get(header::ACCEPT)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        };
        let limit = shared.config.request_log_limit;
        shared.lock().log_request(record, limit);
    }
    match route(&shared, req, &path, &method, &query, &address).await {
        Ok(resp) | Err(resp) => resp,
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "one match over the verbs reads best in one place"
)]
async fn route(
    shared: &Arc<Shared>,
    req: Request<Incoming>,
    path: &str,
    method: &Method,
    query: &[(String, String)],
    address: &str,
) -> Result<Response<ResponseBody>, Response<ResponseBody>> {
    let err = |e: ApiError| error_response(&e);
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if method == Method::GET {
        if let Some(document) = discovery::document(shared, &segs, address) {
            return Ok(json_response(200, document));
        }
        if let Some(resp) = health::response(&segs, query) {
            return Ok(resp);
        }
    }
    if let Some(plural) = access::review_plural(&segs) {
        if method != Method::POST {
            return Err(err(ApiError::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )));
        }
        let protobuf_body = content_type(&req).is_some_and(protobuf::is_protobuf);
        let mut body = read_body(req.into_body()).await.map_err(err)?;
        if protobuf_body {
            body = protobuf::decode_body(&body).map_err(err)?;
        }
        let review = access::review(plural, &body).map_err(err)?;
        let review = serde_json::to_vec(&review).unwrap_or_default();
        if protobuf::preferred(accept.as_deref()) {
            return Ok(protobuf::response(201, review));
        }
        return Ok(json_response(201, review));
    }
    let target = parse_target(shared, &segs).map_err(err)?;
    let format = negotiate(accept.as_deref(), &target.resource).map_err(err)?;
    // Errors from here on are in the format negotiated: a `Status` in protobuf for a protobuf
    // request, as kube-apiserver answers them.
    let err = |e: ApiError| {
        if format.is_protobuf() {
            protobuf::error_response(&e)
        } else {
            error_response(&e)
        }
    };
    let is_watch = target.watch_prefix
        || query
            .iter()
            .any(|(k, v)| k == params::query::WATCH && truthy(v));
    let verb = match *method {
        Method::GET if is_watch => Verb::Watch,
        Method::GET if target.name.is_some() => Verb::Get,
        Method::GET => Verb::List,
        Method::POST => Verb::Create,
        Method::PUT => Verb::Update,
        Method::DELETE => Verb::Delete,
        Method::PATCH => Verb::Patch,
        _ => {
            return Err(err(ApiError::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )));
        }
    };
    let shape = RequestShape {
        continue_token: query
            .iter()
            .any(|(k, v)| k == params::query::CONTINUE && !v.is_empty()),
        streaming_list: verb == Verb::Watch
            && query
                .iter()
                .any(|(k, v)| k == params::query::SEND_INITIAL_EVENTS && truthy(v)),
    };
    let fault = shared.lock().take_fault(verb, &target.id, shape);
    if let Some(e) = fault.as_ref().and_then(super::faults::FaultKind::as_error) {
        return Err(err(e));
    }
    match verb {
        Verb::Watch => {
            let params =
                ListParams::parse(query, &target, shared.config.sharded_list_watch).map_err(err)?;
            Ok(watch::serve(shared.clone(), target, params, format, fault).await)
        }
        Verb::List => {
            let params =
                ListParams::parse(query, &target, shared.config.sharded_list_watch).map_err(err)?;
            let repeat_continue = fault == Some(FaultKind::RepeatContinue);
            list(shared, &target, &params, format, repeat_continue)
                .await
                .map_err(err)
        }
        Verb::Get => {
            let name = target.name.as_deref().unwrap_or_default();
            let obj = shared
                .lock()
                .get(&target.id, target.namespace.as_deref(), name)
                .map_err(err)?;
            if target.subresource == Some(Subresource::Scale) {
                let scale = subresource::scale_of(&obj.object, &target.resource.scale_paths);
                return Ok(encoded_response(
                    200,
                    serde_json::to_vec(&scale).unwrap_or_default(),
                    format,
                ));
            }
            Ok(object_response(200, &obj, format, &target.resource))
        }
        Verb::Create | Verb::Update | Verb::Patch => {
            write(shared, req, &target, verb, query, format.for_writes())
                .await
                .map_err(err)
        }
        Verb::Delete | Verb::Any => {
            if target.subresource.is_some() {
                return Err(err(ApiError::new(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )));
            }
            write_options::check(query, None).map_err(err)?;
            let protobuf_body = content_type(&req).is_some_and(protobuf::is_protobuf);
            let mut body = read_body(req.into_body()).await.map_err(err)?;
            if protobuf_body {
                body = protobuf::decode_body(&body).map_err(err)?;
            }
            let options = DeleteOptions::parse(&body).map_err(err)?;
            let dry_run = options.dry_run
                || write_options::dry_run(write_options::dry_run_values(query), "DeleteOptions")
                    .map_err(err)?;
            let Some(name) = target.name.as_deref() else {
                return delete_collection(shared, &target, query, &options, dry_run, format)
                    .map_err(err);
            };
            let ns = target.namespace.as_deref();
            let deleted = shared
                .mutate_maybe_dry(dry_run, |s| {
                    s.delete(
                        &target.id,
                        ns,
                        name,
                        &options.preconditions,
                        options.propagation,
                    )
                })
                .map_err(err)?;
            Ok(delete_response(
                &target.resource,
                &deleted,
                format.for_writes(),
            ))
        }
    }
}

/// Reads a request body, up to [`MAX_BODY`] (413 beyond, as kube-apiserver answers).
async fn read_body<B>(body: B) -> Result<bytes::Bytes, ApiError>
where
    B: Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    Ok(Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<LengthLimitError>() {
                ApiError::entity_too_large(&format!("limit is {MAX_BODY}"))
            } else {
                ApiError::bad_request(&format!("reading body: {e}"))
            }
        })?
        .to_bytes())
}

/// POST (create), PUT (replace) and PATCH, of an object or of its `status` or `scale`.
#[allow(
    clippy::too_many_lines,
    reason = "each verb's path through dry run, subresources and defaults in one place"
)]
async fn write(
    shared: &Shared,
    req: Request<Incoming>,
    target: &Target,
    verb: Verb,
    query: &[(String, String)],
    format: Format,
) -> Result<Response<ResponseBody>, ApiError> {
    let ns = target.namespace.as_deref();
    let name = target.name.as_deref();
    let patch_type = if verb == Verb::Patch {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        Some(
            PatchType::from_content_type(content_type)
                .ok_or_else(|| patch::unsupported_media_type(content_type))?,
        )
    } else {
        None
    };
    let not_allowed = |message: &str| ApiError::new(405, "MethodNotAllowed", message);
    match (verb, name) {
        (Verb::Create, Some(_)) => {
            return Err(not_allowed("POST is not allowed on a single object"));
        }
        (Verb::Update, None) => return Err(not_allowed("PUT needs an object URL")),
        (Verb::Patch, None) => return Err(not_allowed("PATCH needs an object URL")),
        _ => {}
    }
    write_options::check(query, patch_type)?;
    let protobuf_body =
        patch_type.is_none() && content_type(&req).is_some_and(protobuf::is_protobuf);
    let user_agent = req
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    let mut manager = FieldManager::from_request(
        query,
        user_agent,
        patch_type,
        verb == Verb::Create,
        &target.resource,
    )?;
    if target.subresource.is_some() {
        manager.status_subresource = false;
    }
    let options_kind = match verb {
        Verb::Create => "CreateOptions",
        Verb::Update => "UpdateOptions",
        _ => "PatchOptions",
    };
    let dry_run = write_options::dry_run(write_options::dry_run_values(query), options_kind)?;
    let mut body = read_body(req.into_body()).await?;
    if protobuf_body {
        // kubectl's generated `create` commands send protobuf: written as its JSON form.
        body = protobuf::decode_body(&body)?;
    }
    let level = field_validation::Level::of(query);
    if let (Some(patch_type), Some(name)) = (patch_type, name) {
        let patch = patch::decode(patch_type, &body)?;
        let warnings = if target.subresource == Some(Subresource::Scale) {
            Vec::new()
        } else {
            field_validation::check_patch(
                shared,
                &target.resource,
                ns,
                name,
                (patch_type, &body, &patch),
                level,
            )?
        };
        if patch_type == PatchType::Apply && target.subresource.is_none() {
            let (obj, created) = shared.mutate_maybe_dry(dry_run, |s| {
                s.as_manager(manager, |s| {
                    s.patch(&target.id, ns, name, patch_type, &patch)
                })
            })?;
            let code = if created { 201 } else { 200 };
            let mut response = object_response(code, &obj, format, &target.resource);
            field_validation::add_warnings(&mut response, &warnings);
            return Ok(response);
        }
        let sub = target.subresource;
        let schema = schema::for_resource(&target.resource);
        let obj = shared.mutate_maybe_dry(dry_run, |s| {
            s.as_manager(manager, |s| {
                s.update_with(&target.id, ns, name, |_, current| match sub {
                    Some(Subresource::Scale) => {
                        let scale = serde_json::from_value(subresource::scale_of(
                            current,
                            &target.resource.scale_paths,
                        ))
                        .map_err(status::internal)?;
                        let scale_schema = schema::for_kind("autoscaling", "v1", "Scale");
                        let scaled = patch::patched(scale_schema, &scale, patch_type, &patch)?;
                        let scaled = serde_json::to_value(&scaled).map_err(status::internal)?;
                        subresource::with_scale(current, &scaled, &target.resource.scale_paths)
                    }
                    Some(Subresource::Status) => {
                        let patched = patch::patched(schema, current, patch_type, &patch)?;
                        Ok(subresource::with_status(current, &patched))
                    }
                    None => {
                        let obj = patch::patched(schema, current, patch_type, &patch)?;
                        // Unlike a PUT body, which may leave the name out, a patched object must
                        // keep it.
                        if obj.metadata.name.as_deref() != Some(name) {
                            return Err(state::name_mismatch(obj.metadata.name.as_deref(), name));
                        }
                        Ok(obj)
                    }
                })
            })
        })?;
        let mut response = written_response(200, &obj, sub, &target.resource, format);
        field_validation::add_warnings(&mut response, &warnings);
        return Ok(response);
    }
    let warnings = field_validation::check_object(&target.resource, &body, level)?;
    let obj: DynamicObject = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(&format!("the object provided is unrecognized: {e}")))?;
    let mut response = match name {
        None => {
            let obj = shared.mutate_maybe_dry(dry_run, |s| {
                s.as_manager(manager, |s| s.create(&target.id, ns, obj))
            })?;
            object_response(201, &obj, format, &target.resource)
        }
        Some(name) => {
            let sub = target.subresource;
            if sub == Some(Subresource::Scale) {
                let scale: Value = serde_json::from_slice(&body).map_err(|e| {
                    ApiError::bad_request(&format!("the object provided is unrecognized: {e}"))
                })?;
                let obj = shared.mutate_maybe_dry(dry_run, |s| {
                    s.as_manager(manager, |s| {
                        s.update_with(&target.id, ns, name, |_, current| {
                            subresource::with_scale(current, &scale, &target.resource.scale_paths)
                        })
                    })
                })?;
                return Ok(written_response(200, &obj, sub, &target.resource, format));
            }
            let obj = shared.mutate_maybe_dry(dry_run, |s| {
                s.as_manager(manager, |s| {
                    s.update_with(&target.id, ns, name, |_, current| {
                        if sub == Some(Subresource::Status) {
                            return Ok(subresource::with_status(current, &obj));
                        }
                        Ok(obj)
                    })
                })
            })?;
            written_response(200, &obj, sub, &target.resource, format)
        }
    };
    field_validation::add_warnings(&mut response, &warnings);
    Ok(response)
}

/// The request's `Content-Type`, if it has a readable one.
fn content_type(req: &Request<Incoming>) -> Option<&str> {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
}

/// The answer to a write of an object or of its subresource `sub`: the object in `format`, or
/// its `Scale`.
fn written_response(
    code: u16,
    stored: &Stored,
    sub: Option<Subresource>,
    resource: &ServedResource,
    format: Format,
) -> Response<ResponseBody> {
    if sub == Some(Subresource::Scale) {
        let scale = subresource::scale_of(&stored.object, &resource.scale_paths);
        return encoded_response(code, serde_json::to_vec(&scale).unwrap_or_default(), format);
    }
    object_response(code, stored, format, resource)
}

/// The answer to a DELETE: the object while finalizers hold it or where the kind answers with
/// the deleted object; else a `Status` of kind `Success` naming it, as kube-apiserver answers.
fn delete_response(
    resource: &ServedResource,
    deleted: &Deleted,
    format: Format,
) -> Response<ResponseBody> {
    if !deleted.removed || resource.returns_deleted_object {
        return object_response(200, &deleted.object, format, resource);
    }
    let meta = &deleted.object.object.metadata;
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": meta.name,
            "group": resource.api.group,
            "kind": resource.api.plural,
            "uid": meta.uid,
        },
    });
    encoded_response(200, serde_json::to_vec(&status).unwrap_or_default(), format)
}

/// DELETE of a collection (`deletecollection`): every object the label and field selectors of
/// `query` match, in the target's namespace or all, deleted as one DELETE each would; answers
/// the list of their last states (their metadata for a metadata-only request).
fn delete_collection(
    shared: &Shared,
    target: &Target,
    query: &[(String, String)],
    options: &DeleteOptions,
    dry_run: bool,
    format: Format,
) -> Result<Response<ResponseBody>, ApiError> {
    let params = ListParams::parse(query, target, shared.config.sharded_list_watch)?;
    let (rv, deleted) = shared.mutate_maybe_dry(dry_run, |s| {
        let keys: Vec<String> = s
            .resource(&target.id)?
            .objects
            .iter()
            .filter(|(_, obj)| params.matches(target, &obj.object))
            .map(|(key, _)| key.clone())
            .collect();
        let mut deleted = Vec::with_capacity(keys.len());
        for key in keys {
            // An earlier delete may have collected this one (a dependent).
            if s.resource(&target.id)?.objects.contains_key(&key) {
                deleted.push(
                    s.delete_stored(&target.id, &key, options.propagation)?
                        .object,
                );
            }
        }
        Ok::<_, ApiError>((s.rv, deleted))
    })?;
    let mut meta = serde_json::Map::new();
    meta.insert("resourceVersion".into(), json!(rv.to_string()));
    if let Some(shard) = &params.shard {
        meta.insert(sharding::SHARD_INFO.into(), shard.shard_info());
    }
    let items: Vec<&Stored> = deleted.iter().map(|s| &**s).collect();
    let body = match format {
        Format::Partial(partial) => {
            partial_metadata::list_body(partial.for_list(&target.resource)?, &meta, &items)?
        }
        Format::Json | Format::Table | Format::Protobuf => {
            list_body(&target.resource, &meta, &items)?
        }
    };
    Ok(encoded_response(200, body, format))
}

fn parse_target(shared: &Shared, segs: &[&str]) -> Result<Target, ApiError> {
    let not_found = || {
        if shared.config.not_found_as_status {
            ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        } else {
            ApiError::page_not_found()
        }
    };
    let (group, version, rest) = match segs {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(not_found()),
    };
    let (watch_prefix, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    let state = shared.lock();
    let find = |plural: &str| {
        state
            .resources
            .get(&ResourceId {
                group: group.to_owned(),
                version: version.to_owned(),
                plural: plural.to_owned(),
            })
            .map(|r| r.resource.clone())
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, rest @ ..] if find(plural).is_some_and(|r| r.api.namespaced) => {
            (
                Some((*ns).to_owned()),
                std::iter::once(*plural)
                    .chain(rest.iter().copied())
                    .collect::<Vec<_>>(),
            )
        }
        _ => (None, rest.to_vec()),
    };
    let (plural, name, subresource) = match rest.as_slice() {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some((*name).to_owned()), None),
        [plural, name, sub] if !watch_prefix => (
            *plural,
            Some((*name).to_owned()),
            Some(Subresource::parse(sub).ok_or_else(not_found)?),
        ),
        _ => return Err(not_found()),
    };
    let resource = find(plural).ok_or_else(not_found)?;
    let served = match subresource {
        None => true,
        Some(Subresource::Status) => resource.status_subresource,
        Some(Subresource::Scale) => resource.scale_subresource,
    };
    if !served {
        return Err(not_found());
    }
    if resource.api.namespaced && name.is_some() && namespace.is_none() {
        return Err(not_found());
    }
    if watch_prefix && name.is_some() {
        // /watch/.../pods/name is a deprecated single-object watch; served like ?watch=1.
    }
    Ok(Target {
        id: resource.id(),
        resource,
        namespace,
        name,
        watch_prefix,
        subresource,
    })
}

/// A decoded continue token.
struct Token {
    rv: i64,
    start: String,
}

fn encode_token(rv: i64, start: &str) -> String {
    let json = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start});
    URL_SAFE_NO_PAD.encode(json.to_string())
}

fn decode_token(token: &str) -> Result<Token, ApiError> {
    let bad = |why: &str| ApiError::bad_request(&format!("invalid continue token: {why}"));
    // `base64.RawURLEncoding`, as the API server writes it; padding tolerated.
    let bytes = URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| bad("not base64url"))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| bad(&e.to_string()))?;
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(bad("unknown version"));
    }
    let rv = v
        .get("rv")
        .and_then(Value::as_i64)
        .ok_or_else(|| bad("no rv"))?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no start"))?
        .to_owned();
    if rv == 0 || rv < -1 {
        return Err(bad("bad rv"));
    }
    Ok(Token { rv, start })
}

#[allow(
    clippy::too_many_lines,
    reason = "the API server's resource-version table for lists in one place"
)]
/// A list page. With `repeat_continue` (a [`FaultKind::RepeatContinue`] fault) the page names
/// the request's own continue token as the next one.
async fn list(
    shared: &Shared,
    target: &Target,
    p: &ListParams,
    format: Format,
    repeat_continue: bool,
) -> Result<Response<ResponseBody>, ApiError> {
    if p.send_initial.is_some() {
        return Err(ApiError::invalid_list_options(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    if let Some(m) = &p.rv_match {
        if p.rv.is_none() {
            return Err(ApiError::invalid_list_options(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if p.continue_token.is_some() {
            return Err(ApiError::invalid_list_options(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if m == "Exact" && p.rv.as_deref() == Some("0") {
            return Err(ApiError::invalid_list_options(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    let rv_num = match p.rv.as_deref() {
        None => None,
        Some(rv) => Some(parse_rv(rv, false)?),
    };
    let mut limit = p.limit;
    // (snapshot RV, start key, token RV for the next page)
    let (snapshot_rv, start, exact) = if let Some(token) = &p.continue_token {
        if rv_num.is_some_and(|n| n != 0) {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let t = decode_token(token)?;
        if t.rv == -1 {
            (None, t.start, false)
        } else {
            let rv = u64::try_from(t.rv).unwrap_or(0);
            let state = shared.lock();
            let compacted = state.resource(&target.id)?.compacted_rv;
            if rv < compacted || rv < state.token_floor {
                return Err(status::continue_expired(Some(encode_token(-1, &t.start))));
            }
            (Some(rv), t.start, true)
        }
    } else {
        match (rv_num, p.rv_match.as_deref()) {
            (None, _) => (None, String::new(), false),
            (Some(0), _) => {
                if shared.config.rv0_ignores_limit {
                    limit = None;
                }
                (shared.lock().stale_rv0, String::new(), false)
            }
            (Some(n), Some("Exact")) => (Some(n), String::new(), true),
            (Some(n), None) if limit.is_some() => (Some(n), String::new(), true),
            (Some(n), _) => {
                wait_for_rv(shared, n)
                    .await
                    .map_err(|current| ApiError::too_large(n, current))?;
                (None, String::new(), false)
            }
        }
    };
    if exact
        && let Some(n) = snapshot_rv
        && n > shared.lock().rv
    {
        wait_for_rv(shared, n)
            .await
            .map_err(|current| ApiError::too_large(n, current))?;
    }
    let mut state = shared.lock();
    // A read of the latest state (no RV, or RV 0 without a stale snapshot) is of the state
    // `set_latest_as_of` holds, if any.
    let latest = state.latest_as_of.filter(|_| rv_num.is_none_or(|n| n == 0));
    let list_rv = snapshot_rv.or(latest).unwrap_or(state.rv);
    let objects = state
        .snapshot(&target.id, list_rv)?
        .ok_or_else(ApiError::list_too_old)?;
    let namespace = target.namespace.as_deref();
    let in_namespace = |key: &str| {
        namespace.is_none_or(|ns| key.strip_prefix(ns).is_some_and(|r| r.starts_with('/')))
    };
    // The keys of a namespace are those from "<ns>/" up to "<ns>0" ('0' follows '/'): a
    // namespaced list walks only them (none if the token starts past them).
    let (from, to) = match namespace {
        Some(ns) => {
            let end = format!("{ns}0");
            let from = start.clone().max(format!("{ns}/")).min(end.clone());
            (from, Bound::Excluded(end))
        }
        None => (start.clone(), Bound::Unbounded),
    };
    let to = to.as_ref().map(String::as_str);
    let mut items: Vec<&Stored> = Vec::new();
    let mut next_key = None;
    // Keys of the namespace walked before `next_key`.
    let mut walked = 0usize;
    for (key, obj) in objects.range::<str, _>((Bound::Included(from.as_str()), to)) {
        if !in_namespace(key) {
            continue;
        }
        if limit.is_some_and(|l| items.len() >= l) {
            next_key = Some(key.clone());
            break;
        }
        walked += 1;
        if p.matches(target, &obj.object) {
            items.push(obj);
        }
    }
    // The objects from `next_key` on (`remainingItemCount`, sent without selectors only): from
    // the count where this page started, if a recent page ended there, else counted.
    let remaining_counts = &state.resource(&target.id)?.remaining;
    let remaining = match &next_key {
        Some(next) if !p.has_selectors() => {
            Some(match remaining_counts.get(list_rv, namespace, &start) {
                Some(at_start) => at_start.saturating_sub(walked),
                None => objects
                    .range::<str, _>((Bound::Included(next.as_str()), to))
                    .filter(|(key, _)| in_namespace(key))
                    .count(),
            })
        }
        _ => None,
    };
    let token_rv = if exact || snapshot_rv.is_none() {
        i64::try_from(list_rv).unwrap_or(-1)
    } else {
        -1
    };
    let continue_token = if repeat_continue {
        p.continue_token.clone()
    } else {
        next_key.as_ref().map(|k| encode_token(token_rv, k))
    };
    let mut meta = serde_json::Map::new();
    meta.insert("resourceVersion".into(), json!(list_rv.to_string()));
    if let Some(c) = &continue_token {
        meta.insert("continue".into(), json!(c));
        if let Some(remaining) = remaining {
            meta.insert("remainingItemCount".into(), json!(remaining));
        }
    }
    if let Some(shard) = &p.shard {
        meta.insert(sharding::SHARD_INFO.into(), shard.shard_info());
    }
    // In protobuf, copied from the items' stored protobuf when they all have it.
    let protobuf_list = match format {
        Format::Protobuf => protobuf::list_of_stored(&target.resource, None, &meta, &items),
        Format::Partial(partial) if partial.protobuf => {
            let version = partial.for_list(&target.resource)?;
            protobuf::list_of_stored(&target.resource, Some(version), &meta, &items)
        }
        Format::Json | Format::Table | Format::Partial(_) => None,
    };
    let body = match format {
        _ if protobuf_list.is_some() => Vec::new(),
        Format::Table => {
            let objects: Vec<&DynamicObject> = items.iter().map(|s| &*s.object).collect();
            let mut t = table::table(&target.resource, Some(&list_rv.to_string()), &objects);
            if let Some(c) = &continue_token {
                t["metadata"]["continue"] = json!(c);
            }
            serde_json::to_vec(&t).unwrap_or_default()
        }
        Format::Partial(partial) => {
            partial_metadata::list_body(partial.for_list(&target.resource)?, &meta, &items)?
        }
        Format::Json | Format::Protobuf => list_body(&target.resource, &meta, &items)?,
    };
    drop(items);
    drop(objects);
    if let (Some(next), Some(remaining), false) = (next_key, remaining, repeat_continue) {
        state
            .resource_mut(&target.id)?
            .remaining
            .insert(list_rv, namespace, next, remaining);
    }
    Ok(match protobuf_list {
        Some(list) => protobuf::protobuf_response(200, list),
        None => encoded_response(200, body, format),
    })
}

/// The JSON of a `<Kind>List` with `meta` and `items`, copied from their stored encodings.
fn list_body(
    resource: &ServedResource,
    meta: &serde_json::Map<String, Value>,
    items: &[&Stored],
) -> Result<Vec<u8>, ApiError> {
    let typed = resource.crd_style;
    let items_len: usize = items.iter().map(|s| s.json_len(typed) + 1).sum();
    let mut out = Vec::with_capacity(256 + items_len);
    out.extend_from_slice(b"{\"kind\":");
    serde_json::to_writer(&mut out, &format!("{}List", resource.kind)).map_err(internal)?;
    out.extend_from_slice(b",\"apiVersion\":");
    serde_json::to_writer(&mut out, &resource.api.api_version()).map_err(internal)?;
    out.extend_from_slice(b",\"metadata\":");
    serde_json::to_writer(&mut out, meta).map_err(internal)?;
    out.extend_from_slice(b",\"items\":[");
    for (i, obj) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        obj.write_json(&mut out, typed);
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use http_body_util::Full;

    use super::*;

    #[tokio::test]
    async fn bodies_are_read_up_to_three_mebibytes() {
        let body = |len: usize| Full::new(bytes::Bytes::from(vec![b' '; len]));
        assert_eq!(
            read_body(body(MAX_BODY)).await.map(|b| b.len()),
            Ok(MAX_BODY)
        );
        let over = read_body(body(MAX_BODY + 1)).await.unwrap_err();
        assert_eq!(over.code, 413, "{over:?}");
    }
}
