//! A request's target (resource, namespace, name) and its list and watch parameters, parsed and
//! checked as the API server does.

use std::time::Duration;

use super::subresource::Subresource;

use kcache_store::{DynamicObject, FieldSelector, Selector};
use serde_json::Value;

use super::served_resource::{ResourceId, ServedResource};
use super::sharding::ShardFilter;
use super::status::ApiError;
use super::util::value_at;

/// The Kubernetes boolean parameter rule: anything but `0`/`false` (any case) is true.
pub(crate) fn truthy(value: &str) -> bool {
    !(value == "0" || value.eq_ignore_ascii_case("false"))
}

/// The query parameters of a list or a watch (`ListOptions`) as they are on the wire: what
/// [`ListParams::parse`] reads, and what the `OpenAPI` documents list for a list operation.
///
/// The names `kcache_reflector::ListOptions::to_query` writes come from the reflector crate;
/// [`WATCH`](query::WATCH) is added here.
pub(crate) mod query {
    pub(crate) use kcache_reflector::query::{
        ALLOW_WATCH_BOOKMARKS, CONTINUE, FIELD_SELECTOR, LABEL_SELECTOR, LIMIT, RESOURCE_VERSION,
        RESOURCE_VERSION_MATCH, SEND_INITIAL_EVENTS, SHARD_SELECTOR, TIMEOUT_SECONDS,
    };

    /// `watch`: not a `ListOptions` field; the HTTP clients add it to a watch request.
    pub(crate) const WATCH: &str = "watch";

    /// Every one of them, in the order the `OpenAPI` documents list them.
    pub(crate) const ALL: [&str; 11] = [
        ALLOW_WATCH_BOOKMARKS,
        CONTINUE,
        FIELD_SELECTOR,
        LABEL_SELECTOR,
        LIMIT,
        RESOURCE_VERSION,
        RESOURCE_VERSION_MATCH,
        SEND_INITIAL_EVENTS,
        SHARD_SELECTOR,
        TIMEOUT_SECONDS,
        WATCH,
    ];
}

/// A request on a resource URL.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) id: ResourceId,
    pub(crate) resource: ServedResource,
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) watch_prefix: bool,
    /// The object's subresource the path names (`status`, `scale`), if any.
    pub(crate) subresource: Option<Subresource>,
}

/// Parsed list/watch options.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListParams {
    pub(crate) label: Selector,
    pub(crate) field: FieldSelector,
    pub(crate) limit: Option<usize>,
    pub(crate) continue_token: Option<String>,
    /// `None` when absent or empty.
    pub(crate) rv: Option<String>,
    pub(crate) rv_match: Option<String>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) watch: bool,
    pub(crate) bookmarks: bool,
    pub(crate) send_initial: Option<bool>,
    /// The object name from the URL (a single-object watch).
    pub(crate) name: Option<String>,
    /// `shardSelector`, when the server shards (see [`sharding`](super::sharding)).
    pub(crate) shard: Option<ShardFilter>,
}

impl ListParams {
    /// Reads the query `params` of a request on `target`; `sharding`: whether the server has
    /// sharded list and watch (else `shardSelector` is ignored, as an older server ignores it).
    pub(crate) fn parse(
        params: &[(String, String)],
        target: &Target,
        sharding: bool,
    ) -> Result<Self, ApiError> {
        let mut p = ListParams {
            watch: target.watch_prefix,
            ..ListParams::default()
        };
        for (k, v) in params {
            match k.as_str() {
                query::LABEL_SELECTOR => {
                    p.label = Selector::parse(v).map_err(|e| {
                        ApiError::bad_request(&format!("unable to parse requirement: {e}"))
                    })?;
                }
                query::FIELD_SELECTOR => {
                    p.field = FieldSelector::parse(v).map_err(|e| {
                        ApiError::bad_request(&format!("invalid field selector: {e}"))
                    })?;
                }
                query::LIMIT => {
                    let n: i64 = v
                        .parse()
                        .map_err(|_| ApiError::bad_request(&format!("invalid limit: {v:?}")))?;
                    p.limit = usize::try_from(n).ok().filter(|n| *n > 0);
                }
                query::CONTINUE if !v.is_empty() => p.continue_token = Some(v.clone()),
                query::RESOURCE_VERSION if !v.is_empty() => p.rv = Some(v.clone()),
                query::RESOURCE_VERSION_MATCH if !v.is_empty() => p.rv_match = Some(v.clone()),
                query::TIMEOUT_SECONDS => {
                    let n: u64 = v.parse().map_err(|_| {
                        ApiError::bad_request(&format!("invalid timeoutSeconds: {v:?}"))
                    })?;
                    p.timeout = (n > 0).then(|| Duration::from_secs(n));
                }
                query::WATCH => p.watch = truthy(v),
                query::ALLOW_WATCH_BOOKMARKS => p.bookmarks = truthy(v),
                query::SEND_INITIAL_EVENTS => p.send_initial = Some(truthy(v)),
                query::SHARD_SELECTOR => p.shard = ShardFilter::parse(v, sharding)?,
                _ => {}
            }
        }
        if let Some(name) = &target.name {
            // A GET on one object's URL with watch=1 watches that object only.
            if p.field
                .requirements()
                .iter()
                .any(|r| r.field == "metadata.name" && (r.negated || r.value != *name))
            {
                return Err(ApiError::bad_request(
                    "fieldSelector metadata.name conflicts with the name in the URL",
                ));
            }
            p.name = Some(name.clone());
        }
        for r in p.field.requirements() {
            let known = r.field == "metadata.name"
                || r.field == "metadata.namespace"
                || target.resource.fields.contains(&r.field);
            if !known {
                return Err(ApiError::bad_request(&format!(
                    "\"{}\" is not a known field selector: only \"metadata.name\", \
                     \"metadata.namespace\"",
                    r.field
                )));
            }
        }
        if let Some(m) = &p.rv_match
            && m != "Exact"
            && m != "NotOlderThan"
        {
            return Err(ApiError::invalid_list_options(
                "resourceVersionMatch",
                &format!(
                    "Unsupported value: \"{m}\": supported values: \"Exact\", \"NotOlderThan\""
                ),
            ));
        }
        Ok(p)
    }

    /// Whether `obj` passes the selectors and the URL's namespace.
    pub(crate) fn matches(&self, target: &Target, obj: &DynamicObject) -> bool {
        if let Some(ns) = &target.namespace
            && obj.metadata.namespace.as_deref() != Some(ns.as_str())
        {
            return false;
        }
        if let Some(name) = &self.name
            && obj.metadata.name.as_deref() != Some(name.as_str())
        {
            return false;
        }
        if !self.label.is_empty() && !self.label.matches(obj.metadata.labels.as_ref()) {
            return false;
        }
        if self.shard.as_ref().is_some_and(|shard| !shard.selects(obj)) {
            return false;
        }
        if self.field.is_empty() {
            return true;
        }
        self.field
            .matches(|f| Some(field_value(&target.resource, obj, f)))
    }

    /// Whether anything but the URL's namespace narrows the objects: a label, field or shard
    /// selector, or the URL's name.
    pub(crate) fn has_selectors(&self) -> bool {
        !self.label.is_empty()
            || !self.field.is_empty()
            || self.name.is_some()
            || self.shard.is_some()
    }
}

/// The value of field selector `field` in `obj`, an object of `resource`: the string at that
/// dotted path (empty when missing or not a string), except for events' `source`, which
/// kube-apiserver's event strategy maps to `source.component`, or `reportingComponent` when
/// that is empty (`source` itself is an object, and would never match).
fn field_value<'a>(resource: &ServedResource, obj: &'a DynamicObject, field: &str) -> &'a str {
    let string_at = |path: &str| {
        value_at(obj, path.split('.'))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    match field {
        "metadata.name" => obj.metadata.name.as_deref().unwrap_or_default(),
        "metadata.namespace" => obj.metadata.namespace.as_deref().unwrap_or_default(),
        "source" if resource.is_core_kind("Event") => match string_at("source.component") {
            "" => string_at("reportingComponent"),
            component => component,
        },
        path => string_at(path),
    }
}

/// Parses a decimal RV.
pub(crate) fn parse_rv(rv: &str, watch: bool) -> Result<u64, ApiError> {
    rv.parse::<u64>().map_err(|_| {
        if watch {
            ApiError::new(
                422,
                "Invalid",
                &format!("resourceVersion: Invalid value: \"{rv}\": must be a valid uint64"),
            )
        } else {
            ApiError::bad_request(&format!("invalid resource version: {rv}"))
        }
    })
}
