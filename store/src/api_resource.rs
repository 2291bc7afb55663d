//! [`ApiResource`]: which collection to list and watch (group, version, plural, scope), and the
//! paths the API server serves it under. The HTTP client lists and watches by it; the fake API
//! server serves by it.

/// A resource type on the API server: where its collection lives.
///
/// For k8s-openapi types (feature `k8s-openapi`) [`ApiResource::of`] reads it from the type; for
/// custom resources and [`DynamicObject`](crate::DynamicObject) give it by hand.
///
/// ```
/// use kcache_store::ApiResource;
///
/// let widgets = ApiResource::new("example.com", "v1", "widgets", true);
/// assert_eq!(widgets.api_version(), "example.com/v1");
/// assert_eq!(ApiResource::new("", "v1", "pods", true).api_version(), "v1");
/// ```
///
// Without the feature, `ApiResource::of` does not exist: link to the section that enables it.
#[cfg_attr(
    not(feature = "k8s-openapi"),
    doc = "[`ApiResource::of`]: crate#features"
)]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiResource {
    /// API group; empty for the core group (served under `/api`).
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Plural resource name used in URLs, e.g. `pods`.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

impl ApiResource {
    /// A resource type.
    pub fn new(group: &str, version: &str, plural: &str, namespaced: bool) -> Self {
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
            namespaced,
        }
    }

    /// The resource type of a k8s-openapi type: group, version, plural and scope.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::{Node, Pod};
    /// use kcache_store::ApiResource;
    ///
    /// assert_eq!(ApiResource::of::<Pod>(), ApiResource::new("", "v1", "pods", true));
    /// assert!(!ApiResource::of::<Node>().namespaced);
    /// ```
    #[cfg(feature = "k8s-openapi")]
    #[cfg_attr(docsrs, doc(cfg(feature = "k8s-openapi")))]
    pub fn of<K: ::k8s_openapi::Resource>() -> Self {
        Self {
            group: K::GROUP.to_owned(),
            version: K::VERSION.to_owned(),
            plural: K::URL_PATH_SEGMENT.to_owned(),
            // `ResourceScope` has no methods and the scope types are not `'static`-bound, so
            // the scope is told by its type's name.
            namespaced: std::any::type_name::<K::Scope>()
                == std::any::type_name::<::k8s_openapi::NamespaceResourceScope>(),
        }
    }

    /// `v1` for the core group, else `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The path of the collection, in namespace `namespace` (ignored for cluster-scoped types)
    /// or across all namespaces.
    ///
    /// ```
    /// use kcache_store::ApiResource;
    ///
    /// let pods = ApiResource::new("", "v1", "pods", true);
    /// assert_eq!(pods.collection_path(Some("web")), "/api/v1/namespaces/web/pods");
    /// assert_eq!(pods.collection_path(None), "/api/v1/pods");
    /// let crd = ApiResource::new("example.com", "v1", "widgets", false);
    /// assert_eq!(crd.collection_path(Some("web")), "/apis/example.com/v1/widgets");
    /// ```
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let root = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        match namespace {
            Some(ns) if self.namespaced => format!("{root}/namespaces/{ns}/{}", self.plural),
            _ => format!("{root}/{}", self.plural),
        }
    }
}
