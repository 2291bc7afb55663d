//! [`ServedResource`]: one resource type the fake server serves: the [`ApiResource`] (group,
//! version, plural, scope, and so its paths) plus what only a server needs (kind, list style,
//! field selectors, short names).

use std::sync::Arc;

use kcache_store::ApiResource;

use super::crd_schema::CrdVersion;

/// A resource type served by the [`FakeApiServer`](super::FakeApiServer).
///
/// Core resources have an empty group and are served under `/api/v1`; others under
/// `/apis/<group>/<version>` (the paths are [`ApiResource::collection_path`]'s).
///
/// ```
/// use kcache_store::ApiResource;
/// use kcache_testing_server::fake_api_server::ServedResource;
///
/// let pods = ServedResource::pods();
/// assert_eq!(pods.api, ApiResource::new("", "v1", "pods", true));
/// assert_eq!(pods.api.collection_path(Some("web")), "/api/v1/namespaces/web/pods");
///
/// let widgets = ServedResource::new(ApiResource::new("example.com", "v1", "widgets", true), "Widget");
/// assert!(widgets.crd_style);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent facts about a kind, each with its builder method"
)]
pub struct ServedResource {
    /// Group, version, plural and scope: where the collection lives.
    pub api: ApiResource,
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// CRD style: list items carry `apiVersion`/`kind` (built-in types omit them).
    pub crd_style: bool,
    /// Extra field-selector paths beyond `metadata.name`/`metadata.namespace`, e.g.
    /// `spec.nodeName`. Values are read from the object JSON at that dotted path.
    pub fields: Vec<String>,
    /// Short names shown in discovery (`po` for pods).
    pub short_names: Vec<String>,
    /// Categories shown in discovery (`all` for the kinds `kubectl get all` lists).
    pub categories: Vec<String>,
    /// Whether the kind has a `status` subresource: writes to the object keep its stored
    /// `status`, and a create over HTTP starts without one; writes to `/status` change only
    /// `status` (and labels, annotations, finalizers and owner references, left as sent).
    pub status_subresource: bool,
    /// Whether the kind has a `scale` subresource (`autoscaling/v1` `Scale` over the fields
    /// [`scale_paths`](Self::scale_paths) names).
    pub scale_subresource: bool,
    /// Where a `scale` subresource reads and writes: `spec.replicas`, `status.replicas` and
    /// the label selector `spec.selector` for the built-in kinds; a custom resource's
    /// definition names its own.
    pub scale_paths: ScalePaths,
    /// Whether objects carry `metadata.generation` (1 at create, bumped when anything but
    /// metadata and status changes), as workloads and custom resources do; configmaps, secrets
    /// and the like have none.
    pub generation: bool,
    /// Whether a DELETE that removes an object answers with the object (pods, services, nodes,
    /// namespaces, service accounts and custom resources) rather than a `Status` of kind
    /// `Success` (configmaps, secrets, deployments, ...).
    pub returns_deleted_object: bool,
    /// For a custom resource served from a `CustomResourceDefinition` written to the server:
    /// what its version says of its objects (structural schema, printer columns; see
    /// [`crd_schema`](super::crd_schema)). `None` for every other kind, which so pays nothing
    /// for it.
    pub(crate) definition: Option<Arc<CrdVersion>>,
}

impl ServedResource {
    /// A resource of kind `kind` with no extra field selectors; CRD list style when its group
    /// looks like a CRD's (has a dot and is not `*.k8s.io`).
    pub fn new(api: ApiResource, kind: &str) -> Self {
        let crd_style = api.group.contains('.') && !api.group.ends_with(".k8s.io");
        Self {
            api,
            kind: kind.to_owned(),
            crd_style,
            fields: Vec::new(),
            short_names: Vec::new(),
            categories: Vec::new(),
            status_subresource: false,
            scale_subresource: false,
            scale_paths: ScalePaths::default(),
            generation: true,
            returns_deleted_object: true,
            definition: None,
        }
    }

    /// A core `v1` resource with one short name, without generation (most core kinds have
    /// none).
    fn core(plural: &str, kind: &str, namespaced: bool, short_name: &str) -> Self {
        Self::new(ApiResource::new("", "v1", plural, namespaced), kind)
            .with_short_name(short_name)
            .with_generation(false)
    }

    /// Core `v1` pods, with field selectors `spec.nodeName` and `status.phase`; in category
    /// `all`, with a `status` subresource and generation.
    pub fn pods() -> Self {
        Self::core("pods", "Pod", true, "po")
            .with_field("spec.nodeName")
            .with_field("status.phase")
            .with_category("all")
            .with_status_subresource(true)
            .with_generation(true)
    }

    /// Core `v1` configmaps.
    pub fn configmaps() -> Self {
        Self::core("configmaps", "ConfigMap", true, "cm").with_returns_deleted_object(false)
    }

    /// Core `v1` nodes (cluster-scoped), with a `status` subresource.
    pub fn nodes() -> Self {
        Self::core("nodes", "Node", false, "no").with_status_subresource(true)
    }

    /// Core `v1` namespaces (cluster-scoped), with field selector `status.phase` and a
    /// `status` subresource.
    pub fn namespaces() -> Self {
        Self::core("namespaces", "Namespace", false, "ns")
            .with_field("status.phase")
            .with_status_subresource(true)
    }

    /// Core `v1` services, in category `all`, with a `status` subresource.
    pub fn services() -> Self {
        Self::core("services", "Service", true, "svc")
            .with_category("all")
            .with_status_subresource(true)
    }

    /// Core `v1` events, with the field selectors `kubectl describe` sends
    /// (`involvedObject.kind`, `.name`, `.namespace`, `.uid`, ...) and `reason`, `type`,
    /// `reportingComponent` and `source`, which selects on `source.component` (or
    /// `reportingComponent` when that is empty), as on kube-apiserver.
    pub fn events() -> Self {
        [
            "involvedObject.apiVersion",
            "involvedObject.fieldPath",
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.resourceVersion",
            "involvedObject.uid",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ]
        .into_iter()
        .fold(Self::core("events", "Event", true, "ev"), Self::with_field)
        .with_returns_deleted_object(false)
    }

    /// `events.k8s.io/v1` events (the API `kubectl events` and client-go's `tools/events`
    /// use), with the field selectors kube-apiserver converts for it: `regarding.kind`,
    /// `.name`, `.namespace`, `.uid`, ..., `reason`, `reportingController` and `type`. Stored
    /// apart from the core `v1` events (on kube-apiserver both are views of one storage).
    pub fn events_k8s_io() -> Self {
        [
            "regarding.apiVersion",
            "regarding.fieldPath",
            "regarding.kind",
            "regarding.name",
            "regarding.namespace",
            "regarding.resourceVersion",
            "regarding.uid",
            "reason",
            "reportingController",
            "type",
        ]
        .into_iter()
        .fold(
            Self::new(
                ApiResource::new("events.k8s.io", "v1", "events", true),
                "Event",
            ),
            Self::with_field,
        )
        .with_generation(false)
        .with_returns_deleted_object(false)
    }

    /// Core `v1` secrets, with field selector `type`.
    pub fn secrets() -> Self {
        Self::new(ApiResource::new("", "v1", "secrets", true), "Secret")
            .with_field("type")
            .with_generation(false)
            .with_returns_deleted_object(false)
    }

    /// Core `v1` service accounts.
    pub fn serviceaccounts() -> Self {
        Self::core("serviceaccounts", "ServiceAccount", true, "sa")
    }

    /// `apps/v1` deployments, in category `all`, with `status` and `scale` subresources.
    pub fn deployments() -> Self {
        Self::new(
            ApiResource::new("apps", "v1", "deployments", true),
            "Deployment",
        )
        .with_short_name("deploy")
        .with_category("all")
        .with_status_subresource(true)
        .with_scale_subresource(true)
        .with_returns_deleted_object(false)
    }

    /// `apps/v1` replica sets, with field selector `status.replicas`; in category `all`, with
    /// `status` and `scale` subresources.
    pub fn replicasets() -> Self {
        Self::new(
            ApiResource::new("apps", "v1", "replicasets", true),
            "ReplicaSet",
        )
        .with_short_name("rs")
        .with_field("status.replicas")
        .with_category("all")
        .with_status_subresource(true)
        .with_scale_subresource(true)
        .with_returns_deleted_object(false)
    }

    /// `coordination.k8s.io/v1` leases (leader election's lock).
    pub fn leases() -> Self {
        Self::new(
            ApiResource::new("coordination.k8s.io", "v1", "leases", true),
            "Lease",
        )
        .with_generation(false)
        .with_returns_deleted_object(false)
    }

    /// `apiextensions.k8s.io/v1` custom resource definitions (cluster-scoped, short name
    /// `crd`): writing one serves the custom resource it defines.
    pub fn customresourcedefinitions() -> Self {
        Self::new(
            ApiResource::new(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                false,
            ),
            "CustomResourceDefinition",
        )
        .with_short_name("crd")
        .with_short_name("crds")
        .with_crd_style(false)
        .with_status_subresource(true)
    }

    /// The kinds a [`FakeApiServer`](super::FakeApiServer) serves by default: pods, configmaps,
    /// nodes, namespaces, services, events (core `v1` and `events.k8s.io/v1`), secrets, service
    /// accounts, deployments, replica sets, leases and custom resource definitions.
    pub fn defaults() -> Vec<Self> {
        vec![
            Self::pods(),
            Self::configmaps(),
            Self::nodes(),
            Self::namespaces(),
            Self::services(),
            Self::events(),
            Self::events_k8s_io(),
            Self::secrets(),
            Self::serviceaccounts(),
            Self::deployments(),
            Self::replicasets(),
            Self::leases(),
            Self::customresourcedefinitions(),
        ]
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

    /// Adds a short name shown in discovery.
    #[must_use]
    pub fn with_short_name(mut self, short_name: &str) -> Self {
        self.short_names.push(short_name.to_owned());
        self
    }

    /// Adds a category shown in discovery (`all`: listed by `kubectl get all`).
    #[must_use]
    pub fn with_category(mut self, category: &str) -> Self {
        self.categories.push(category.to_owned());
        self
    }

    /// Sets [`status_subresource`](Self::status_subresource).
    #[must_use]
    pub fn with_status_subresource(mut self, served: bool) -> Self {
        self.status_subresource = served;
        self
    }

    /// Sets [`scale_subresource`](Self::scale_subresource).
    #[must_use]
    pub fn with_scale_subresource(mut self, served: bool) -> Self {
        self.scale_subresource = served;
        self
    }

    /// Sets [`scale_paths`](Self::scale_paths).
    #[must_use]
    pub fn with_scale_paths(mut self, paths: ScalePaths) -> Self {
        self.scale_paths = paths;
        self
    }

    /// Sets [`generation`](Self::generation).
    #[must_use]
    pub fn with_generation(mut self, generation: bool) -> Self {
        self.generation = generation;
        self
    }

    /// Sets [`returns_deleted_object`](Self::returns_deleted_object).
    #[must_use]
    pub fn with_returns_deleted_object(mut self, returns: bool) -> Self {
        self.returns_deleted_object = returns;
        self
    }

    /// Sets [`definition`](Self::definition).
    #[must_use]
    pub(crate) fn with_definition(mut self, definition: Option<CrdVersion>) -> Self {
        self.definition = definition.map(Arc::new);
        self
    }

    /// The identity used to look the resource up: (group, version, plural).
    pub(crate) fn id(&self) -> ResourceId {
        ResourceId {
            group: self.api.group.clone(),
            version: self.api.version.clone(),
            plural: self.api.plural.clone(),
        }
    }

    /// The singular name used in messages and discovery: the lowercase kind.
    pub(crate) fn singular(&self) -> String {
        self.kind.to_lowercase()
    }

    /// Whether this is the core (`""` group) resource of kind `kind`.
    pub(crate) fn is_core_kind(&self, kind: &str) -> bool {
        self.api.group.is_empty() && self.kind == kind
    }

    /// `pods` or `widgets.example.com`, as used in error messages (`pods "x" not found`).
    pub(crate) fn qualified(&self) -> String {
        if self.api.group.is_empty() {
            self.api.plural.clone()
        } else {
            format!("{}.{}", self.api.plural, self.api.group)
        }
    }
}

/// The fields a `scale` subresource reads and writes, as dotted JSON paths from the object's
/// root (`.spec.replicas`), as a custom resource definition's `subresources.scale` names them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScalePaths {
    /// The desired replicas, read and written (`.spec.replicas`).
    pub spec_replicas: String,
    /// The observed replicas, read (`.status.replicas`).
    pub status_replicas: String,
    /// The label selector, read: a `LabelSelector` object (`.spec.selector` of the built-in
    /// kinds) or a selector string (a custom resource's `.status.selector`); none if unset.
    pub label_selector: Option<String>,
}

impl Default for ScalePaths {
    fn default() -> Self {
        Self {
            spec_replicas: ".spec.replicas".to_owned(),
            status_replicas: ".status.replicas".to_owned(),
            label_selector: Some(".spec.selector".to_owned()),
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
