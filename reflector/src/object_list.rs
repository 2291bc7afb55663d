//! [`ObjectList`]: one page of a list response.

use serde::{Deserialize, Deserializer};

use crate::DecodeError;

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
    /// The items that could not be decoded, left out of `items`. The reflector reports each
    /// (once per version) and the replace leaves them out of the cache.
    pub skipped: Vec<DecodeError>,
    /// `metadata.shardInfo.selector`: the shard selector the server applied to this list, if
    /// it applied one (a server without sharded list and watch leaves it out).
    pub shard_info: Option<String>,
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
            skipped: Vec::new(),
            shard_info: None,
        }
    }

    /// The same page, with `skipped` as its undecodable items.
    #[must_use]
    pub fn with_skipped(mut self, skipped: Vec<DecodeError>) -> Self {
        self.skipped = skipped;
        self
    }

    /// A page from its items and its list's `metadata` (`None` when absent). An empty continue
    /// token means there is no next page and is kept as `None`.
    #[must_use]
    pub fn from_meta(items: Vec<T>, meta: Option<ListMeta>) -> Self {
        let meta = meta.unwrap_or_default();
        Self {
            items,
            resource_version: meta.resource_version.unwrap_or_default(),
            continue_token: meta.continue_token.filter(|t| !t.is_empty()),
            remaining_item_count: meta.remaining_item_count,
            skipped: Vec::new(),
            shard_info: meta.shard_info.map(|s| s.selector),
        }
    }

    /// The continue token when there is a next page (an empty token means none).
    pub fn next_page_token(&self) -> Option<&str> {
        self.continue_token.as_deref().filter(|t| !t.is_empty())
    }
}

/// A list response's `metadata` (the `ListMeta` of the wire form), for decoders that take the
/// items apart themselves: [`ObjectList::from_meta`] assembles the page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMeta {
    /// `resourceVersion`.
    #[serde(default)]
    pub resource_version: Option<String>,
    /// `continue`.
    #[serde(default, rename = "continue")]
    pub continue_token: Option<String>,
    /// `remainingItemCount`.
    #[serde(default)]
    pub remaining_item_count: Option<i64>,
    /// `shardInfo`: set when the server applied a shard selector.
    #[serde(default)]
    pub shard_info: Option<ShardInfo>,
}

/// A list's `metadata.shardInfo`: the shard selector the server applied, echoed back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ShardInfo {
    /// `selector`.
    #[serde(default)]
    pub selector: String,
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
        Ok(Self::from_meta(w.items.unwrap_or_default(), w.metadata))
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
