//! `cargo xtask deps`: checks every dependency edge of the workspace against the layer table of
//! `ARCHITECTURE.md`.
//!
//! The rules, read from `cargo metadata --no-deps`:
//! - A normal or build dependency from a crate of [`LAYERS`] on a workspace crate (or any
//!   `kcache-*` crate) must be listed for it there. Other workspace members (the programs:
//!   `kcache-testing-e2e`, `kcache-testing-job`, the bench) may depend on anything, but no
//!   library may depend on them, not even as a dev-dependency.
//! - A library's dev-dependency on a workspace library must be either a crate below it (one its
//!   row of [`LAYERS`] reaches, directly or through other rows), or a test-support package
//!   ([`TEST_SUPPORT`]) whose [`layer`] is at most its own. A library's layer is 0 with no
//!   internal dependency, else one more than the highest layer it depends on; a test-support
//!   package sits *beside* the highest library it depends on (its layer is that library's), so
//!   `kcache-testing` and `kcache-testing-server` (store, queue, reflector) are at layer 1 with
//!   queue and reflector. So no library's tests build a sibling or a crate above it (informer
//!   and client-http never reach each other), and store's tests use no test-support package.
//! - HTTP and TLS crates ([`NETWORK_CRATES`]) are normal dependencies of
//!   [`NETWORK_HOMES`] only, among the libraries.
//! - kube-rs ([`KUBE_CRATES`]) is a normal dependency of [`KUBE_HOME`] only, among the
//!   libraries, and there an optional one (its `kube` feature) without default features or a
//!   TLS feature ([`KUBE_TLS_FEATURES`]): the application's own kube-rs picks the TLS stack.
//! - `kcache-store` has no async dependency ([`ASYNC_CRATES`]).
//! - The runtime-free libraries ([`RUNTIME_FREE`]) may use `tokio`, but never with a feature of
//!   [`RUNTIME_FEATURES`]: the application picks the runtime. The one exception
//!   ([`RUNTIME_ALLOWED`]): `kcache-informer` enables `rt` to build the single-threaded runtime
//!   of the thread an informer runs on when it takes one (`RunMode`); it opens no socket.
//!
//! [`check`] is a pure function over the metadata, so the tests feed it synthetic workspaces.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use serde_json::Value;

use crate::Failure;

/// The layering table: each library crate (and xtask) with the workspace crates its normal and
/// build dependencies may name.
pub(crate) const LAYERS: &[(&str, &[&str])] = &[
    ("kcache-store", &[]),
    ("kcache-protobuf", &[]),
    ("kcache-queue", &["kcache-store"]),
    ("kcache-reflector", &["kcache-store"]),
    (
        "kcache-informer",
        &["kcache-store", "kcache-queue", "kcache-reflector"],
    ),
    (
        "kcache-client-http",
        &["kcache-store", "kcache-protobuf", "kcache-reflector"],
    ),
    (
        "kcache-testing",
        &["kcache-store", "kcache-queue", "kcache-reflector"],
    ),
    (
        "kcache-testing-server",
        &[
            "kcache-store",
            "kcache-protobuf",
            "kcache-reflector",
            "kcache-testing",
        ],
    ),
    ("kcache-xtask", &[]),
];

/// The test-support libraries: they sit beside the highest library they depend on (see
/// [`layer`]), so the tests of a library at that layer or above may use them.
pub(crate) const TEST_SUPPORT: &[&str] = &["kcache-testing", "kcache-testing-server"];

/// The library crates: no workspace program may be among their dependencies of any kind. They
/// are the crates published to crates.io; every other member says `publish = false` (`cargo
/// xtask tidy` checks both).
pub(crate) const LIBRARIES: &[&str] = &[
    "kcache-store",
    "kcache-protobuf",
    "kcache-queue",
    "kcache-reflector",
    "kcache-informer",
    "kcache-client-http",
    "kcache-testing",
    "kcache-testing-server",
];

/// HTTP and TLS crates: a name ending in `*` is a prefix.
const NETWORK_CRATES: &[&str] = &[
    "hyper",
    "hyper-util",
    "hyper-rustls",
    "h2",
    "tokio-rustls",
    "rustls*",
];

/// The libraries that may depend on [`NETWORK_CRATES`].
const NETWORK_HOMES: &[&str] = &["kcache-client-http", "kcache-testing-server"];

/// kube-rs's crates: a name ending in `*` is a prefix.
const KUBE_CRATES: &[&str] = &["kube", "kube-*"];

/// The one library that may depend on [`KUBE_CRATES`], behind its `kube` feature.
const KUBE_HOME: &str = "kcache-client-http";

/// kube-rs features that pick a TLS stack or crypto provider: the application's choice.
const KUBE_TLS_FEATURES: &[&str] = &[
    "rustls-tls",
    "openssl-tls",
    "aws-lc-rs",
    "ring",
    "webpki-roots",
];

/// Async crates that `kcache-store` must not depend on: a name ending in `*` is a prefix.
const ASYNC_CRATES: &[&str] = &["tokio", "tokio-util", "futures*", "async-trait"];

/// The libraries whose `tokio` dependency must not enable [`RUNTIME_FEATURES`].
/// `kcache-informer` may enable `rt` alone, for the single-threaded runtime of
/// an informer that runs on a thread of its own (see [`RUNTIME_ALLOWED`]).
const RUNTIME_FREE: &[&str] = &[
    "kcache-store",
    "kcache-queue",
    "kcache-reflector",
    "kcache-informer",
    "kcache-testing",
];

/// Runtime features a [`RUNTIME_FREE`] library may still enable: (library, feature).
const RUNTIME_ALLOWED: &[(&str, &str)] = &[("kcache-informer", "rt")];

/// `tokio` features that bring in a runtime or sockets.
const RUNTIME_FEATURES: &[&str] = &["rt", "rt-multi-thread", "net", "full"];

/// Where the layering rules are written down.
const GUIDE: &str = "ARCHITECTURE.md, Layers";

/// The kind of a dependency edge, as `cargo metadata` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `[dependencies]` (`"kind": null`).
    Normal,
    /// `[build-dependencies]` (`"kind": "build"`).
    Build,
    /// `[dev-dependencies]` (`"kind": "dev"`).
    Dev,
}

impl Kind {
    /// Reads the `kind` field of a dependency entry; `None` for a kind this tool does not know.
    fn from_metadata(kind: &Value) -> Option<Self> {
        match kind {
            Value::Null => Some(Self::Normal),
            Value::String(kind) if kind == "build" => Some(Self::Build),
            Value::String(kind) if kind == "dev" => Some(Self::Dev),
            _ => None,
        }
    }
}

/// One dependency edge that breaks the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    /// The depending package.
    pub(crate) from: String,
    /// The package depended on.
    pub(crate) to: String,
    /// The kind of the edge.
    pub(crate) kind: Kind,
    /// Which rule it breaks.
    pub(crate) reason: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Normal => "",
            Kind::Build => " (build-dependency)",
            Kind::Dev => " (dev-dependency)",
        };
        write!(f, "{} -> {}{kind}: {}", self.from, self.to, self.reason)
    }
}

/// Whether `name` matches one of `patterns`, where a pattern ending in `*` is a prefix.
fn matches_any(name: &str, patterns: &[&str]) -> bool {
    patterns
        .iter()
        .any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *pattern,
        })
}

/// The crates `package` may depend on normally, or `None` if it is not in [`LAYERS`].
fn allowed(package: &str) -> Option<&'static [&'static str]> {
    LAYERS
        .iter()
        .find(|(name, _)| *name == package)
        .map(|(_, allowed)| *allowed)
}

/// The layer of `package` in [`LAYERS`]: 0 without an internal dependency, else one more than
/// the highest layer among its row; a [`TEST_SUPPORT`] package takes the highest layer among its
/// row (it sits beside what it supports, not above it). 0 for a crate not in the table.
pub(crate) fn layer(package: &str) -> usize {
    /// `depth` bounds the recursion should the table ever hold a cycle.
    fn of(package: &str, depth: usize) -> usize {
        let row = allowed(package).unwrap_or_default();
        let highest = row
            .iter()
            .map(|below| {
                if depth > LAYERS.len() {
                    0
                } else {
                    of(below, depth + 1)
                }
            })
            .max();
        match highest {
            None => 0,
            Some(highest) if TEST_SUPPORT.contains(&package) => highest,
            Some(highest) => highest + 1,
        }
    }
    of(package, 0)
}

/// Every crate `package` reaches through the rows of [`LAYERS`] (its row, their rows, ...).
fn below(package: &str) -> BTreeSet<&'static str> {
    let mut reached = BTreeSet::new();
    let mut pending: Vec<&'static str> = allowed(package).unwrap_or_default().to_vec();
    while let Some(next) = pending.pop() {
        if reached.insert(next) {
            pending.extend(allowed(next).unwrap_or_default());
        }
    }
    reached
}

/// Whether the library `from` may dev-depend on the library `to`: `to` is below it, or is a
/// test-support package at or below its layer.
pub(crate) fn dev_allowed(from: &str, to: &str) -> bool {
    below(from).contains(to) || (TEST_SUPPORT.contains(&to) && layer(to) <= layer(from))
}

/// The string field `key` of `value`, or `""`.
fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The array field `key` of `value`, or an empty slice.
fn array_field<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Checks every dependency edge of every workspace package in `metadata` (the JSON of
/// `cargo metadata --format-version 1`) and returns every violation found, in metadata order.
pub(crate) fn check(metadata: &Value) -> Vec<Violation> {
    let mut violations = Vec::new();
    let Some(packages) = metadata.get("packages").and_then(Value::as_array) else {
        violations.push(Violation {
            from: "cargo metadata".to_owned(),
            to: "packages".to_owned(),
            kind: Kind::Normal,
            reason: "the metadata has no `packages` array".to_owned(),
        });
        return violations;
    };
    // With `--no-deps` every package is a workspace member; with full metadata, filter by id.
    let member_ids: Option<BTreeSet<&str>> = metadata
        .get("workspace_members")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect());
    let members: Vec<&Value> = packages
        .iter()
        .filter(|package| {
            member_ids
                .as_ref()
                .is_none_or(|ids| ids.contains(str_field(package, "id")))
        })
        .collect();
    let member_names: BTreeSet<&str> = members
        .iter()
        .map(|package| str_field(package, "name"))
        .collect();

    for package in &members {
        let from = str_field(package, "name");
        for dependency in array_field(package, "dependencies") {
            let to = str_field(dependency, "name");
            let raw_kind = dependency.get("kind").unwrap_or(&Value::Null);
            let Some(kind) = Kind::from_metadata(raw_kind) else {
                violations.push(Violation {
                    from: from.to_owned(),
                    to: to.to_owned(),
                    kind: Kind::Normal,
                    reason: format!("unknown dependency kind {raw_kind}"),
                });
                continue;
            };
            let internal = member_names.contains(to) || to.starts_with("kcache-");
            let mut violation = |reason: String| {
                violations.push(Violation {
                    from: from.to_owned(),
                    to: to.to_owned(),
                    kind,
                    reason,
                });
            };
            if internal {
                check_internal(from, to, kind, &mut violation);
            } else if kind == Kind::Normal {
                check_external(from, to, dependency, &mut violation);
            }
        }
    }
    violations
}

/// Checks an edge from `from` to the workspace (or `kcache-*`) crate `to`.
fn check_internal(from: &str, to: &str, kind: Kind, violation: &mut impl FnMut(String)) {
    let from_library = LIBRARIES.contains(&from);
    if from_library && !LIBRARIES.contains(&to) {
        violation(format!(
            "a library must not depend on `{to}`, which is not a library of the layering table \
             ({GUIDE})"
        ));
        return;
    }
    if kind == Kind::Dev {
        if from_library && !dev_allowed(from, to) {
            violation(format!(
                "a library's tests may use only the crates below it and the test-support \
                 packages ({}) at or below its layer ({GUIDE})",
                TEST_SUPPORT.join(", ")
            ));
        }
        return;
    }
    if let Some(allowed) = allowed(from)
        && !allowed.contains(&to)
    {
        violation(format!("not allowed by the layering table ({GUIDE})"));
    }
}

/// Checks a normal dependency of `from` on the external crate `to` (its metadata entry is
/// `dependency`).
fn check_external(from: &str, to: &str, dependency: &Value, violation: &mut impl FnMut(String)) {
    if LIBRARIES.contains(&from)
        && !NETWORK_HOMES.contains(&from)
        && matches_any(to, NETWORK_CRATES)
    {
        violation(format!(
            "HTTP and TLS crates belong in {} only ({GUIDE})",
            NETWORK_HOMES.join(" and ")
        ));
    }
    if LIBRARIES.contains(&from) && matches_any(to, KUBE_CRATES) {
        check_kube(from, dependency, violation);
    }
    if from == "kcache-store" && matches_any(to, ASYNC_CRATES) {
        violation(format!(
            "kcache-store has no async dependency at all ({GUIDE})"
        ));
    }
    if to == "tokio" && RUNTIME_FREE.contains(&from) {
        let enabled: Vec<String> = array_field(dependency, "features")
            .iter()
            .filter_map(Value::as_str)
            .filter(|feature| RUNTIME_FEATURES.contains(feature))
            .filter(|feature| !RUNTIME_ALLOWED.contains(&(from, *feature)))
            .map(|feature| format!("`{feature}`"))
            .collect();
        if !enabled.is_empty() {
            let features = if enabled.len() == 1 {
                "feature"
            } else {
                "features"
            };
            violation(format!(
                "enables tokio {features} {}: library crates leave the runtime and sockets to the \
                 application (ARCHITECTURE.md, Layers)",
                enabled.join(", ")
            ));
        }
    }
}

/// Checks a library's normal dependency on a kube-rs crate (its metadata entry is `dependency`).
fn check_kube(from: &str, dependency: &Value, violation: &mut impl FnMut(String)) {
    if from != KUBE_HOME {
        violation(format!(
            "kube-rs belongs in {KUBE_HOME} only, behind its `kube` feature ({GUIDE})"
        ));
        return;
    }
    if dependency.get("optional").and_then(Value::as_bool) != Some(true) {
        violation(format!(
            "kube-rs must be an optional dependency (the `kube` feature) of {KUBE_HOME} ({GUIDE})"
        ));
    }
    let tls: Vec<String> = array_field(dependency, "features")
        .iter()
        .filter_map(Value::as_str)
        .filter(|feature| KUBE_TLS_FEATURES.contains(feature))
        .map(|feature| format!("`{feature}`"))
        .collect();
    let defaults = dependency
        .get("uses_default_features")
        .and_then(Value::as_bool)
        != Some(false);
    if defaults || !tls.is_empty() {
        let what = if tls.is_empty() {
            "the default features".to_owned()
        } else {
            tls.join(", ")
        };
        violation(format!(
            "enables {what} of kube-rs: the application's kube-rs picks the TLS stack ({GUIDE})"
        ));
    }
}

/// Runs `cargo metadata` on the workspace at `root` and reports every violation.
pub(crate) fn run(root: &Path) -> Result<(), Failure> {
    let metadata = crate::metadata(root)?;
    let violations = check(&metadata);
    if violations.is_empty() {
        let count = array_field(&metadata, "packages").len();
        eprintln!("deps: every dependency edge of the {count} workspace packages is allowed");
        return Ok(());
    }
    for violation in &violations {
        eprintln!("{violation}");
    }
    Err(Failure::new(format!(
        "deps: {} dependency edge(s) break the layering rules",
        violations.len()
    )))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A dependency entry as `cargo metadata` writes it.
    fn dep(name: &str, kind: Option<&str>, features: &[&str]) -> Value {
        json!({
            "name": name,
            "source": if name.starts_with("kcache-") {
                Value::Null
            } else {
                json!("registry+https://github.com/rust-lang/crates.io-index")
            },
            "req": "^0.1.0",
            "kind": kind,
            "rename": null,
            "optional": false,
            "uses_default_features": true,
            "features": features,
            "target": null,
            "registry": null,
        })
    }

    /// client-http's dependency on kube-client as the `kube` feature declares it: optional,
    /// without default features, with `features`.
    fn kube_dep(features: &[&str]) -> Value {
        let mut dependency = dep("kube-client", None, features);
        dependency["optional"] = json!(true);
        dependency["uses_default_features"] = json!(false);
        dependency
    }

    /// A workspace that follows every rule: the table's edges plus the external crates each
    /// crate is meant to use.
    fn legal() -> Value {
        let mut packages = Vec::new();
        for (name, allowed) in LAYERS {
            let mut dependencies: Vec<Value> =
                allowed.iter().map(|to| dep(to, None, &[])).collect();
            match *name {
                "kcache-store" => dependencies.push(dep("serde", None, &["derive"])),
                "kcache-reflector" | "kcache-informer" | "kcache-queue" | "kcache-testing" => {
                    dependencies.push(dep("tokio", None, &["sync", "time", "macros"]));
                    dependencies.push(dep("futures-util", None, &["std"]));
                    dependencies.push(dep("async-trait", None, &[]));
                }
                "kcache-client-http" | "kcache-testing-server" => {
                    dependencies.push(dep("tokio", None, &["rt", "net"]));
                    dependencies.push(dep("hyper", None, &["client", "http2"]));
                    dependencies.push(dep("hyper-rustls", None, &["ring"]));
                    dependencies.push(dep("rustls", None, &[]));
                    if *name == "kcache-client-http" {
                        dependencies.push(kube_dep(&["client"]));
                    }
                }
                "kcache-xtask" => dependencies.push(dep("serde_json", None, &[])),
                _ => {}
            }
            // Tests may use a runtime anywhere.
            dependencies.push(dep("tokio", Some("dev"), &["full"]));
            packages.push(json!({
                "name": name,
                "version": "0.1.0",
                "id": format!("path+file:///w/{name}#0.1.0"),
                "dependencies": dependencies,
            }));
        }
        let ids: Vec<Value> = packages
            .iter()
            .map(|package| package["id"].clone())
            .collect();
        json!({ "packages": packages, "workspace_members": ids, "version": 1 })
    }

    /// `metadata` with `dependency` added to the package `from` (added as a package if absent).
    fn with_dep(mut metadata: Value, from: &str, dependency: Value) -> Value {
        let packages = metadata["packages"].as_array_mut().expect("packages");
        if let Some(package) = packages.iter_mut().find(|package| package["name"] == from) {
            package["dependencies"]
                .as_array_mut()
                .expect("dependencies")
                .push(dependency);
        } else {
            let id = format!("path+file:///w/{from}#0.1.0");
            packages.push(json!({ "name": from, "id": id, "dependencies": [dependency] }));
            metadata["workspace_members"]
                .as_array_mut()
                .expect("members")
                .push(json!(id));
        }
        metadata
    }

    /// The violations of `metadata`, as the lines `cargo xtask deps` prints.
    fn lines(metadata: &Value) -> Vec<String> {
        check(metadata).iter().map(ToString::to_string).collect()
    }

    /// Asserts that `metadata` has exactly one violation, on `from -> to`, and returns its line.
    fn single(metadata: &Value, from: &str, to: &str) -> String {
        let violations = check(metadata);
        assert_eq!(violations.len(), 1, "{:?}", lines(metadata));
        assert_eq!(
            (violations[0].from.as_str(), violations[0].to.as_str()),
            (from, to)
        );
        violations[0].to_string()
    }

    #[test]
    fn the_real_workspace_passes() {
        let metadata = crate::metadata(&crate::workspace_root()).expect("cargo metadata");
        assert_eq!(lines(&metadata), Vec::<String>::new());
        let names: Vec<&str> = array_field(&metadata, "packages")
            .iter()
            .map(|p| str_field(p, "name"))
            .collect();
        for (name, _) in LAYERS {
            assert!(
                names.contains(name),
                "{name} is missing from the workspace: {names:?}"
            );
        }
    }

    #[test]
    fn every_library_is_in_the_layering_table() {
        for library in LIBRARIES.iter().chain(RUNTIME_FREE).chain(NETWORK_HOMES) {
            assert!(
                allowed(library).is_some(),
                "{library} is missing from LAYERS"
            );
        }
        for (_, allowed) in LAYERS {
            assert!(
                allowed.iter().all(|to| LIBRARIES.contains(to)),
                "{allowed:?}"
            );
        }
    }

    #[test]
    fn the_legal_synthetic_workspace_passes() {
        assert_eq!(lines(&legal()), Vec::<String>::new());
    }

    #[test]
    fn store_depending_on_queue_is_reported() {
        let metadata = with_dep(legal(), "kcache-store", dep("kcache-queue", None, &[]));
        assert_eq!(
            single(&metadata, "kcache-store", "kcache-queue"),
            "kcache-store -> kcache-queue: not allowed by the layering table (ARCHITECTURE.md, Layers)"
        );
    }

    #[test]
    fn informer_depending_on_client_http_is_reported() {
        let metadata = with_dep(
            legal(),
            "kcache-informer",
            dep("kcache-client-http", None, &[]),
        );
        single(&metadata, "kcache-informer", "kcache-client-http");
    }

    #[test]
    fn build_dependency_edges_are_checked_too() {
        let metadata = with_dep(
            legal(),
            "kcache-queue",
            dep("kcache-reflector", Some("build"), &[]),
        );
        let line = single(&metadata, "kcache-queue", "kcache-reflector");
        assert!(line.contains("build-dependency"), "{line}");
    }

    #[test]
    fn xtask_depends_on_none_of_ours() {
        let metadata = with_dep(legal(), "kcache-xtask", dep("kcache-store", None, &[]));
        single(&metadata, "kcache-xtask", "kcache-store");
    }

    #[test]
    fn queue_depending_on_hyper_is_reported() {
        let metadata = with_dep(legal(), "kcache-queue", dep("hyper", None, &[]));
        let line = single(&metadata, "kcache-queue", "hyper");
        assert!(line.contains("HTTP and TLS"), "{line}");
    }

    #[test]
    fn every_network_crate_is_banned_outside_its_homes() {
        for to in [
            "hyper-util",
            "hyper-rustls",
            "h2",
            "tokio-rustls",
            "rustls",
            "rustls-pki-types",
        ] {
            let metadata = with_dep(legal(), "kcache-informer", dep(to, None, &[]));
            single(&metadata, "kcache-informer", to);
        }
    }

    #[test]
    fn kube_rs_belongs_in_client_http_only() {
        for to in ["kube", "kube-client", "kube-core", "kube-runtime"] {
            let metadata = with_dep(legal(), "kcache-informer", dep(to, None, &[]));
            let line = single(&metadata, "kcache-informer", to);
            assert!(
                line.contains("kube-rs belongs in kcache-client-http only"),
                "{line}"
            );
        }
        // The programs and tests may use it.
        let metadata = with_dep(legal(), "kcache-informer", dep("kube", Some("dev"), &[]));
        assert_eq!(lines(&metadata), Vec::<String>::new());
        let metadata = with_dep(legal(), "kcache-testing-e2e", dep("kube", None, &[]));
        assert_eq!(lines(&metadata), Vec::<String>::new());
    }

    #[test]
    fn client_http_uses_kube_rs_optionally_and_without_a_tls_stack() {
        let metadata = with_dep(
            legal(),
            "kcache-client-http",
            kube_dep(&["client", "rustls-tls"]),
        );
        let line = single(&metadata, "kcache-client-http", "kube-client");
        assert!(line.contains("enables `rustls-tls` of kube-rs"), "{line}");
        let metadata = with_dep(legal(), "kcache-client-http", dep("kube-core", None, &[]));
        assert_eq!(
            lines(&metadata),
            [
                "kcache-client-http -> kube-core: kube-rs must be an optional dependency (the \
                 `kube` feature) of kcache-client-http (ARCHITECTURE.md, Layers)",
                "kcache-client-http -> kube-core: enables the default features of kube-rs: the \
                 application's kube-rs picks the TLS stack (ARCHITECTURE.md, Layers)",
            ]
        );
    }

    #[test]
    fn network_crates_as_dev_dependencies_are_allowed() {
        let metadata = with_dep(legal(), "kcache-informer", dep("hyper", Some("dev"), &[]));
        assert_eq!(lines(&metadata), Vec::<String>::new());
    }

    #[test]
    fn store_depending_on_async_crates_is_reported() {
        for to in [
            "tokio",
            "tokio-util",
            "futures-core",
            "futures",
            "async-trait",
        ] {
            let metadata = with_dep(legal(), "kcache-store", dep(to, None, &[]));
            let line = single(&metadata, "kcache-store", to);
            assert!(line.contains("no async"), "{line}");
        }
    }

    #[test]
    fn reflector_enabling_a_tokio_runtime_is_reported() {
        for feature in RUNTIME_FEATURES {
            let metadata = with_dep(
                legal(),
                "kcache-reflector",
                dep("tokio", None, &["sync", feature]),
            );
            let line = single(&metadata, "kcache-reflector", "tokio");
            assert!(line.contains(&format!("`{feature}`")), "{line}");
        }
    }

    #[test]
    fn informer_may_enable_rt_but_no_other_runtime_feature() {
        let metadata = with_dep(
            legal(),
            "kcache-informer",
            dep("tokio", None, &["sync", "rt"]),
        );
        assert_eq!(lines(&metadata), Vec::<String>::new());
        for feature in ["rt-multi-thread", "net", "full"] {
            let metadata = with_dep(
                legal(),
                "kcache-informer",
                dep("tokio", None, &["sync", "rt", feature]),
            );
            let line = single(&metadata, "kcache-informer", "tokio");
            assert!(line.contains(&format!("`{feature}`")), "{line}");
            assert!(!line.contains("`rt`"), "{line}");
        }
        let metadata = with_dep(legal(), "kcache-queue", dep("tokio", None, &["rt"]));
        let line = single(&metadata, "kcache-queue", "tokio");
        assert!(line.contains("`rt`"), "{line}");
    }

    #[test]
    fn tokio_without_runtime_features_is_allowed_in_libraries() {
        let metadata = with_dep(
            legal(),
            "kcache-queue",
            dep("tokio", None, &["sync", "time"]),
        );
        assert_eq!(lines(&metadata), Vec::<String>::new());
    }

    #[test]
    fn layers_follow_the_table_and_test_support_sits_beside() {
        let layers: Vec<(&str, usize)> = LIBRARIES.iter().map(|l| (*l, layer(l))).collect();
        assert_eq!(
            layers,
            [
                ("kcache-store", 0),
                ("kcache-protobuf", 0),
                ("kcache-queue", 1),
                ("kcache-reflector", 1),
                ("kcache-informer", 2),
                ("kcache-client-http", 2),
                ("kcache-testing", 1),
                ("kcache-testing-server", 1),
            ]
        );
    }

    #[test]
    fn dev_dependencies_reach_below_and_test_support_at_or_below() {
        // (from, the libraries its tests may use), every other library being refused.
        let allowed: &[(&str, &[&str])] = &[
            ("kcache-store", &[]),
            ("kcache-protobuf", &[]),
            (
                "kcache-queue",
                &["kcache-store", "kcache-testing", "kcache-testing-server"],
            ),
            (
                "kcache-reflector",
                &["kcache-store", "kcache-testing", "kcache-testing-server"],
            ),
            (
                "kcache-informer",
                &[
                    "kcache-store",
                    "kcache-queue",
                    "kcache-reflector",
                    "kcache-testing",
                    "kcache-testing-server",
                ],
            ),
            (
                "kcache-client-http",
                &[
                    "kcache-store",
                    "kcache-protobuf",
                    "kcache-reflector",
                    "kcache-testing",
                    "kcache-testing-server",
                ],
            ),
            (
                "kcache-testing",
                &[
                    "kcache-store",
                    "kcache-queue",
                    "kcache-reflector",
                    "kcache-testing-server",
                ],
            ),
            (
                "kcache-testing-server",
                &[
                    "kcache-store",
                    "kcache-protobuf",
                    "kcache-queue",
                    "kcache-reflector",
                    "kcache-testing",
                ],
            ),
        ];
        for (from, may) in allowed {
            for to in LIBRARIES.iter().filter(|to| *to != from) {
                let metadata = with_dep(legal(), from, dep(to, Some("dev"), &[]));
                if may.contains(to) {
                    assert_eq!(lines(&metadata), Vec::<String>::new(), "{from} -> {to}");
                } else {
                    let line = single(&metadata, from, to);
                    assert!(line.contains("dev-dependency"), "{line}");
                    assert!(line.contains("test-support"), "{line}");
                }
            }
        }
    }

    #[test]
    fn informer_and_client_http_tests_never_reach_each_other() {
        let metadata = with_dep(
            legal(),
            "kcache-informer",
            dep("kcache-client-http", Some("dev"), &[]),
        );
        single(&metadata, "kcache-informer", "kcache-client-http");
        let metadata = with_dep(
            legal(),
            "kcache-client-http",
            dep("kcache-informer", Some("dev"), &[]),
        );
        single(&metadata, "kcache-client-http", "kcache-informer");
    }

    #[test]
    fn the_e2e_package_may_use_everything_and_no_library_uses_it() {
        let mut metadata = legal();
        for to in LIBRARIES {
            metadata = with_dep(metadata, "kcache-testing-e2e", dep(to, None, &[]));
        }
        metadata = with_dep(metadata, "kcache-testing-e2e", dep("clap", None, &[]));
        assert_eq!(lines(&metadata), Vec::<String>::new());
        for from in LIBRARIES {
            let as_dev = with_dep(
                metadata.clone(),
                from,
                dep("kcache-testing-e2e", Some("dev"), &[]),
            );
            single(&as_dev, from, "kcache-testing-e2e");
        }
    }

    #[test]
    fn the_light_testing_package_has_no_http_stack() {
        for to in ["hyper", "rustls", "tokio-rustls"] {
            let metadata = with_dep(legal(), "kcache-testing", dep(to, None, &[]));
            let line = single(&metadata, "kcache-testing", to);
            assert!(line.contains("HTTP and TLS"), "{line}");
        }
        let metadata = with_dep(legal(), "kcache-testing", dep("tokio", None, &["net"]));
        single(&metadata, "kcache-testing", "tokio");
    }

    #[test]
    fn programs_may_use_everything_but_libraries_may_not_use_programs() {
        let mut metadata = legal();
        for to in LIBRARIES {
            metadata = with_dep(metadata, "kcache-bench", dep(to, None, &[]));
        }
        metadata = with_dep(metadata, "kcache-bench", dep("hyper", None, &[]));
        metadata = with_dep(metadata, "kcache-bench", dep("tokio", None, &["full"]));
        assert_eq!(lines(&metadata), Vec::<String>::new());

        let as_dev = with_dep(
            metadata.clone(),
            "kcache-testing",
            dep("kcache-bench", Some("dev"), &[]),
        );
        let line = single(&as_dev, "kcache-testing", "kcache-bench");
        assert!(line.contains("dev-dependency"), "{line}");
        let as_normal = with_dep(metadata, "kcache-informer", dep("kcache-bench", None, &[]));
        single(&as_normal, "kcache-informer", "kcache-bench");
    }

    #[test]
    fn every_violation_is_reported() {
        let mut metadata = legal();
        metadata = with_dep(metadata, "kcache-store", dep("kcache-queue", None, &[]));
        metadata = with_dep(metadata, "kcache-store", dep("tokio", None, &["rt"]));
        metadata = with_dep(
            metadata,
            "kcache-informer",
            dep("kcache-client-http", None, &[]),
        );
        metadata = with_dep(metadata, "kcache-queue", dep("h2", None, &[]));
        // store -> tokio breaks two rules: async in store, and a runtime feature.
        assert_eq!(lines(&metadata).len(), 5, "{:#?}", lines(&metadata));
    }

    #[test]
    fn malformed_metadata_is_a_violation() {
        assert_eq!(check(&json!({})).len(), 1);
        let metadata = with_dep(
            legal(),
            "kcache-queue",
            dep("kcache-store", Some("weird"), &[]),
        );
        assert!(
            single(&metadata, "kcache-queue", "kcache-store").contains("unknown dependency kind")
        );
    }
}
