//! A `meta.k8s.io/v1` Table, for clients (kubectl) that ask for server-side printing: the
//! columns of the resource's kind ([`columns`](super::columns)), wide ones included with
//! priority 1 (kubectl shows them with `-o wide`); each row's object is
//! `PartialObjectMetadata`.

use kcache_store::DynamicObject;
use serde_json::{Value, json};

use super::columns::columns;
use super::served_resource::ServedResource;
use super::util::now_secs;

/// The Table of `items`, objects of `resource`, at list RV `rv`.
pub(crate) fn table(
    resource: &ServedResource,
    rv: Option<&str>,
    items: &[&DynamicObject],
) -> Value {
    let columns = columns(resource);
    let now = now_secs();
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let cells: Vec<Value> = columns.iter().map(|c| (c.cell)(o, now)).collect();
            json!({
                "cells": cells,
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": o.metadata,
                },
            })
        })
        .collect();
    let mut meta = serde_json::Map::new();
    if let Some(rv) = rv {
        meta.insert("resourceVersion".into(), json!(rv));
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": columns.iter().map(super::columns::Column::definition).collect::<Vec<_>>(),
        "rows": rows,
    })
}
