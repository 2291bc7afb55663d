//! [`ListOptions`]: the query parameters of a list or watch request (`metav1.ListOptions`).

use std::fmt;

use crate::ShardSelector;

/// `resourceVersionMatch`: how `resourceVersion` is interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceVersionMatch {
    /// `NotOlderThan`: the result is at least as new as the given version.
    NotOlderThan,
    /// `Exact`: the result is at exactly the given version (410 if it was compacted).
    Exact,
}

impl ResourceVersionMatch {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotOlderThan => "NotOlderThan",
            Self::Exact => "Exact",
        }
    }
}

impl fmt::Display for ResourceVersionMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The options of a list or watch request, with every field of the protocol.
///
/// String fields follow the API server: an empty string means "not set" and is not sent
/// (`resource_version: ""` is a consistent read, `"0"` is "any"). [`to_query`](Self::to_query)
/// gives the URL query pairs with the server's parameter names.
///
/// ```
/// use kcache_reflector::{ListOptions, ResourceVersionMatch};
///
/// let opts = ListOptions {
///     resource_version: "0".into(),
///     limit: Some(500),
///     ..ListOptions::default()
/// }
/// .with_label_selector("app=web");
/// assert_eq!(
///     opts.to_query(),
///     [("labelSelector", "app=web".to_owned()), ("limit", "500".to_owned()),
///      ("resourceVersion", "0".to_owned())],
/// );
/// let watch = ListOptions {
///     send_initial_events: Some(true),
///     resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
///     allow_watch_bookmarks: true,
///     ..ListOptions::default()
/// };
/// assert_eq!(watch.to_query().len(), 3);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ListOptions {
    /// `labelSelector`; empty selects everything.
    pub label_selector: String,
    /// `fieldSelector`; empty selects everything.
    pub field_selector: String,
    /// `limit`: the page size of a list; `None` or `Some(0)` asks for everything at once.
    pub limit: Option<i64>,
    /// `continue`: the token of the previous page; empty on a first page.
    pub continue_token: String,
    /// `resourceVersion`: `""` (unset, most recent), `"0"` (any) or a version.
    pub resource_version: String,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<i64>,
    /// `allowWatchBookmarks` (watch only).
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents` (watch only: the streaming list).
    pub send_initial_events: Option<bool>,
    /// `shardSelector`: only the objects of these hash ranges (server-side sharded list and
    /// watch). A server that does not honour it sends everything; wrap the lister-watcher in a
    /// [`ShardedListerWatcher`](crate::ShardedListerWatcher) to filter what it sends.
    pub shard_selector: Option<ShardSelector>,
}

impl ListOptions {
    /// Sets `labelSelector`.
    #[must_use]
    pub fn with_label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = selector.into();
        self
    }

    /// Sets `fieldSelector`.
    #[must_use]
    pub fn with_field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = selector.into();
        self
    }

    /// Sets `shardSelector`.
    #[must_use]
    pub fn with_shard_selector(mut self, selector: ShardSelector) -> Self {
        self.shard_selector = Some(selector);
        self
    }

    /// Sets `resourceVersion`.
    #[must_use]
    pub fn with_resource_version(mut self, rv: impl Into<String>) -> Self {
        self.resource_version = rv.into();
        self
    }

    /// The URL query pairs, in a fixed (alphabetical) order, leaving out unset fields. A watch
    /// request adds `watch=1` itself.
    pub fn to_query(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::with_capacity(8);
        if self.allow_watch_bookmarks {
            q.push((query::ALLOW_WATCH_BOOKMARKS, "true".to_owned()));
        }
        if !self.continue_token.is_empty() {
            q.push((query::CONTINUE, self.continue_token.clone()));
        }
        if !self.field_selector.is_empty() {
            q.push((query::FIELD_SELECTOR, self.field_selector.clone()));
        }
        if !self.label_selector.is_empty() {
            q.push((query::LABEL_SELECTOR, self.label_selector.clone()));
        }
        if let Some(limit) = self.limit.filter(|&l| l > 0) {
            q.push((query::LIMIT, limit.to_string()));
        }
        if !self.resource_version.is_empty() {
            q.push((query::RESOURCE_VERSION, self.resource_version.clone()));
        }
        if let Some(m) = self.resource_version_match {
            q.push((query::RESOURCE_VERSION_MATCH, m.as_str().to_owned()));
        }
        if let Some(s) = self.send_initial_events {
            q.push((query::SEND_INITIAL_EVENTS, s.to_string()));
        }
        if let Some(s) = &self.shard_selector {
            q.push((query::SHARD_SELECTOR, s.to_string()));
        }
        if let Some(t) = self.timeout_seconds {
            q.push((query::TIMEOUT_SECONDS, t.to_string()));
        }
        q
    }
}

/// The wire names of [`ListOptions`]' query parameters, as [`ListOptions::to_query`] writes
/// them (and as a fake API server reads them).
pub mod query {
    /// `allowWatchBookmarks`.
    pub const ALLOW_WATCH_BOOKMARKS: &str = "allowWatchBookmarks";
    /// `continue`: the token of the next page.
    pub const CONTINUE: &str = "continue";
    /// `fieldSelector`.
    pub const FIELD_SELECTOR: &str = "fieldSelector";
    /// `labelSelector`.
    pub const LABEL_SELECTOR: &str = "labelSelector";
    /// `limit`: objects per page.
    pub const LIMIT: &str = "limit";
    /// `resourceVersion`.
    pub const RESOURCE_VERSION: &str = "resourceVersion";
    /// `resourceVersionMatch`.
    pub const RESOURCE_VERSION_MATCH: &str = "resourceVersionMatch";
    /// `sendInitialEvents`: a streaming list.
    pub const SEND_INITIAL_EVENTS: &str = "sendInitialEvents";
    /// `shardSelector`: `shardRange(...)` calls joined by `||`.
    pub const SHARD_SELECTOR: &str = "shardSelector";
    /// `timeoutSeconds`.
    pub const TIMEOUT_SECONDS: &str = "timeoutSeconds";

    /// Every one of them, in the order `to_query` writes them.
    pub const ALL: [&str; 10] = [
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
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_options_send_nothing() {
        assert!(ListOptions::default().to_query().is_empty());
        let zero = ListOptions {
            limit: Some(0),
            ..ListOptions::default()
        };
        assert!(zero.to_query().is_empty());
    }

    #[test]
    fn every_field_has_its_wire_name() {
        let o = ListOptions {
            label_selector: "a=b".into(),
            field_selector: "metadata.name=x".into(),
            limit: Some(5),
            continue_token: "tok".into(),
            resource_version: "12".into(),
            resource_version_match: Some(ResourceVersionMatch::Exact),
            timeout_seconds: Some(300),
            allow_watch_bookmarks: true,
            send_initial_events: Some(false),
            shard_selector: Some(crate::ShardSelector::shard(crate::ShardField::Uid, 0, 2)),
        };
        let names: Vec<_> = o.to_query().into_iter().map(|(k, _)| k).collect();
        assert_eq!(names, query::ALL);
    }
}
