//! [`ApiResource`]: one resource type the fake server serves (group, version, plural, kind, scope).

/// A resource type served by the [`FakeApiServer`](super::FakeApiServer).
///
/// Core resources have an empty group and are served under `/api/v1`; others under
/// `/apis/<group>/<version>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiResource {
    /// API group, `""` for the core group.
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Plural resource name used in URLs, e.g. `pods`.
    pub plural: String,
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// CRD style: list items carry `apiVersion`/`kind` (built-in types omit them).
    pub crd_style: bool,
    /// Extra field-selector paths beyond `metadata.name`/`metadata.namespace`, e.g.
    /// `spec.nodeName`. Values are read from the object JSON at that dotted path.
    pub fields: Vec<String>,
    /// Short names shown in discovery (`po` for pods).
    pub short_names: Vec<String>,
}

impl ApiResource {
    /// A resource with no extra field selectors and built-in list style.
    pub fn new(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> Self {
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
            kind: kind.to_owned(),
            namespaced,
            crd_style: group.contains('.') && !group.ends_with(".k8s.io"),
            fields: Vec::new(),
            short_names: Vec::new(),
        }
    }

    /// Core `v1` pods, with field selectors `spec.nodeName` and `status.phase`.
    pub fn pods() -> Self {
        let mut r = Self::new("", "v1", "pods", "Pod", true);
        r.fields = vec!["spec.nodeName".into(), "status.phase".into()];
        r.short_names = vec!["po".into()];
        r
    }

    /// Core `v1` configmaps.
    pub fn configmaps() -> Self {
        let mut r = Self::new("", "v1", "configmaps", "ConfigMap", true);
        r.short_names = vec!["cm".into()];
        r
    }

    /// Core `v1` nodes (cluster-scoped).
    pub fn nodes() -> Self {
        let mut r = Self::new("", "v1", "nodes", "Node", false);
        r.short_names = vec!["no".into()];
        r
    }

    /// Core `v1` namespaces (cluster-scoped).
    pub fn namespaces() -> Self {
        let mut r = Self::new("", "v1", "namespaces", "Namespace", false);
        r.short_names = vec!["ns".into()];
        r
    }

    /// Sets [`crd_style`](Self::crd_style).
    #[must_use]
    pub fn with_crd_style(mut self, crd_style: bool) -> Self {
        self.crd_style = crd_style;
        self
    }

    /// Adds a field-selector path (dotted JSON path into the object).
    #[must_use]
    pub fn with_field(mut self, path: &str) -> Self {
        self.fields.push(path.to_owned());
        self
    }

    /// `v1` for the core group, else `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The URL of the collection, in one namespace or across all of them.
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

    /// The identity used to look the resource up: (group, version, plural).
    pub(crate) fn id(&self) -> ResourceId {
        ResourceId {
            group: self.group.clone(),
            version: self.version.clone(),
            plural: self.plural.clone(),
        }
    }

    /// The singular name used in messages and discovery: the lowercase kind.
    pub(crate) fn singular(&self) -> String {
        self.kind.to_lowercase()
    }

    /// `pods` or `widgets.example.com`, as used in error messages (`pods "x" not found`).
    pub(crate) fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// The lookup key of a registered resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ResourceId {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) plural: String,
}
