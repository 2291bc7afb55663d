//! A minimal `meta.k8s.io/v1` Table, for clients (kubectl) that ask for server-side printing.

use kcache_store::DynamicObject;
use serde_json::{Value, json};

use super::util::{human_age, now_secs, parse_rfc3339};

/// A Table with NAME, (STATUS for pods), AGE columns; each row's object is
/// `PartialObjectMetadata`.
pub(crate) fn table(rv: Option<&str>, items: &[&DynamicObject]) -> Value {
    let has_phase = items
        .iter()
        .any(|o| o.data.get("status").and_then(|s| s.get("phase")).is_some());
    let mut columns = vec![json!({"name": "Name", "type": "string", "format": "name",
        "description": "Name must be unique within a namespace.", "priority": 0})];
    if has_phase {
        columns.push(json!({"name": "Status", "type": "string", "format": "",
            "description": "The phase.", "priority": 0}));
    }
    columns.push(json!({"name": "Age", "type": "string", "format": "",
        "description": "Time since creation.", "priority": 0}));
    let now = now_secs();
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let age = o
                .metadata
                .creation_timestamp
                .as_deref()
                .and_then(parse_rfc3339)
                .map_or_else(
                    || "<unknown>".to_owned(),
                    |t| human_age(now.saturating_sub(t)),
                );
            let mut cells = vec![json!(o.metadata.name.as_deref().unwrap_or_default())];
            if has_phase {
                let phase = o.data.get("status").and_then(|s| s.get("phase"));
                cells.push(phase.cloned().unwrap_or(json!("")));
            }
            cells.push(json!(age));
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
        "columnDefinitions": columns,
        "rows": rows,
    })
}
