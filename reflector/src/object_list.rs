//! [`ObjectList`]: one page of a list response.

use serde::{Deserialize, Deserializer};

/// One page of a list: the items and the list's `metadata` (a `ListMeta`).
///
/// Decodes from the wire form (`{"metadata":{...},"items":[...]}`, `items` may be `null`).
///
/// ```
/// use kcache_reflector::ObjectList;
/// use kcache_store::DynamicObject;
///
/// let page: ObjectList<DynamicObject> = serde_json::from_str(
///     r#"{"kind":"PodList","apiVersion":"v1",
///         "metadata":{"resourceVersion":"10245","continue":"abc","remainingItemCount":3},
///         "items":[{"metadata":{"name":"a","namespace":"ns"}}]}"#,
/// )?;
/// assert_eq!(page.resource_version, "10245");
/// assert_eq!(page.continue_token.as_deref(), Some("abc"));
/// assert_eq!(page.items.len(), 1);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectList<T> {
    /// The objects of this page.
    pub items: Vec<T>,
    /// `metadata.resourceVersion`: the snapshot every page of one list was taken at.
    pub resource_version: String,
    /// `metadata.continue`: the token for the next page; `None` (or empty) on the last one.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`: an estimate, only on partial unfiltered pages.
    pub remaining_item_count: Option<i64>,
}

impl<T> ObjectList<T> {
    /// A complete (single-page) list at `resource_version`.
    #[must_use]
    pub fn new(items: Vec<T>, resource_version: impl Into<String>) -> Self {
        Self {
            items,
            resource_version: resource_version.into(),
            continue_token: None,
            remaining_item_count: None,
        }
    }

    /// The continue token when there is a next page (an empty token means none).
    pub fn next_page_token(&self) -> Option<&str> {
        self.continue_token.as_deref().filter(|t| !t.is_empty())
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ListMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
    #[serde(default)]
    remaining_item_count: Option<i64>,
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
struct Wire<T> {
    #[serde(default)]
    metadata: Option<ListMeta>,
    #[serde(default)]
    items: Option<Vec<T>>,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectList<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::<T>::deserialize(d)?;
        let meta = w.metadata.unwrap_or_default();
        Ok(Self {
            items: w.items.unwrap_or_default(),
            resource_version: meta.resource_version.unwrap_or_default(),
            continue_token: meta.continue_token.filter(|t| !t.is_empty()),
            remaining_item_count: meta.remaining_item_count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_items_and_empty_continue() {
        let l: ObjectList<serde_json::Value> = serde_json::from_str(
            r#"{"metadata":{"resourceVersion":"1","continue":""},"items":null}"#,
        )
        .unwrap();
        assert!(l.items.is_empty());
        assert_eq!(l.continue_token, None);
        assert_eq!(l.next_page_token(), None);
    }
}
