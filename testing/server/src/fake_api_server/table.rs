//! A `meta.k8s.io/v1` Table, for clients (kubectl) that ask for server-side printing: the
//! columns of the resource's kind ([`columns`](super::columns)), wide ones included with
//! priority 1 (kubectl shows them with `-o wide`); each row's object is
//! `PartialObjectMetadata`. A custom resource whose definition has printer columns gets `Name`
//! and those ([`crd_columns`](super::crd_columns)).

use kcache_store::DynamicObject;
use serde_json::{Value, json};

use super::columns::{Column, columns};
use super::crd_columns::PrinterColumn;
use super::served_resource::ServedResource;
use super::util::now_secs;

/// The Tables of one resource: its columns and their definitions, computed once, for a list or
/// for every event of a table watch.
pub(crate) struct Printer {
    columns: Vec<Column>,
    /// A custom resource's printer columns, after `columns` (`Name` only, then).
    custom: Vec<PrinterColumn>,
    /// The `columnDefinitions` of every Table.
    definitions: Value,
}

impl Printer {
    /// The printer of `resource`'s kind.
    pub(crate) fn new(resource: &ServedResource) -> Self {
        let mut columns = columns(resource);
        let custom = resource
            .definition
            .as_ref()
            .map(|d| d.columns.clone())
            .unwrap_or_default();
        if !custom.is_empty() {
            columns.retain(|c| c.name == "Name");
        }
        let definitions = columns
            .iter()
            .map(Column::definition)
            .chain(custom.iter().map(PrinterColumn::definition))
            .collect();
        Self {
            columns,
            custom,
            definitions: Value::Array(definitions),
        }
    }

    /// The Table of `items` at list RV `rv`.
    pub(crate) fn table(&self, rv: Option<&str>, items: &[&DynamicObject]) -> Value {
        let now = now_secs();
        let rows: Vec<Value> = items
            .iter()
            .map(|o| {
                let mut cells: Vec<Value> = self.columns.iter().map(|c| (c.cell)(o, now)).collect();
                if !self.custom.is_empty() {
                    let value = serde_json::to_value(o).unwrap_or_default();
                    cells.extend(self.custom.iter().map(|c| c.cell(&value, now)));
                }
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
            "columnDefinitions": self.definitions,
            "rows": rows,
        })
    }
}

/// The Table of `items`, objects of `resource`, at list RV `rv` (one list or object).
pub(crate) fn table(
    resource: &ServedResource,
    rv: Option<&str>,
    items: &[&DynamicObject],
) -> Value {
    Printer::new(resource).table(rv, items)
}
