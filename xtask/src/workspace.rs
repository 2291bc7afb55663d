//! The workspace as `cargo metadata --no-deps` describes it: each member's name, whether it has
//! features, its declared `rust-version` and its docs.rs settings, and the target directory.
//!
//! `cargo xtask ci` builds each package as its users and docs.rs do from these facts, so a new
//! package, feature or docs.rs setting is picked up without editing the gate.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::Failure;

/// The members of the workspace and where they build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Workspace {
    /// Every member, in `cargo metadata`'s order.
    pub(crate) packages: Vec<Package>,
    /// The target directory (`CARGO_TARGET_DIR`, or `target/` at the root), which the separate
    /// workspaces (the fuzz targets and the bench program) share to reuse what the gate built.
    pub(crate) target_directory: PathBuf,
}

/// One member of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Package {
    /// The package name (`kcache-store`).
    pub(crate) name: String,
    /// The package version (`0.1.0`).
    pub(crate) version: String,
    /// Whether it may be published to crates.io (no `publish = false`, or crates.io among the
    /// registries it names).
    pub(crate) publishable: bool,
    /// Whether building with `--all-features` differs from the defaults: the package has a
    /// feature other than an empty `default`.
    pub(crate) has_features: bool,
    /// The declared `rust-version`, if any.
    pub(crate) rust_version: Option<String>,
    /// Its `[package.metadata.docs.rs]`, if it has one.
    pub(crate) docs_rs: Option<DocsRs>,
}

/// The settings of `[package.metadata.docs.rs]` that choose features, as docs.rs applies them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DocsRs {
    /// `features`: passed as `--features`.
    pub(crate) features: Vec<String>,
    /// `all-features`: passes `--all-features`.
    pub(crate) all_features: bool,
    /// `no-default-features`: passes `--no-default-features`.
    pub(crate) no_default_features: bool,
}

/// docs.rs settings the gate does not apply. Its docs build runs on the stable toolchain for the
/// host, so these would make it differ from docs.rs's build; a package that needs one makes the
/// gate fail until [`DocsRs`] learns to apply it.
const UNAPPLIED_DOCS_RS_KEYS: &[&str] = &[
    "rustdoc-args",
    "rustc-args",
    "cargo-args",
    "targets",
    "default-target",
    "additional-targets",
];

impl DocsRs {
    /// Reads a `[package.metadata.docs.rs]` table; `Err` says what is wrong with it.
    fn from_table(table: &Map<String, Value>) -> Result<Self, String> {
        let mut docs_rs = Self::default();
        for (key, value) in table {
            match key.as_str() {
                "features" => {
                    let features = value.as_array().ok_or("`features` is not an array")?;
                    for feature in features {
                        let feature = feature
                            .as_str()
                            .ok_or("`features` holds something other than a string")?;
                        docs_rs.features.push(feature.to_owned());
                    }
                }
                "all-features" => {
                    docs_rs.all_features = value.as_bool().ok_or("`all-features` is not a bool")?;
                }
                "no-default-features" => {
                    docs_rs.no_default_features = value
                        .as_bool()
                        .ok_or("`no-default-features` is not a bool")?;
                }
                key if UNAPPLIED_DOCS_RS_KEYS.contains(&key) => {
                    return Err(format!(
                        "`{key}` is not applied by `cargo xtask ci`, so its docs build would not \
                         be docs.rs's (see xtask/src/workspace.rs)"
                    ));
                }
                key => return Err(format!("`{key}` is not a docs.rs setting")),
            }
        }
        Ok(docs_rs)
    }

    /// Cargo's feature flags for these settings, as docs.rs passes them.
    pub(crate) fn cargo_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if !self.features.is_empty() {
            args.push("--features".to_owned());
            args.push(self.features.join(" "));
        }
        if self.all_features {
            args.push("--all-features".to_owned());
        }
        if self.no_default_features {
            args.push("--no-default-features".to_owned());
        }
        args
    }
}

impl Package {
    /// Reads one entry of `cargo metadata`'s `packages`.
    fn from_metadata(package: &Value) -> Result<Self, Failure> {
        let name = package
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Failure::new("cargo metadata lists a package without a name"))?
            .to_owned();
        let version = package
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        // `null`: any registry; `[]`: `publish = false`; else the registries it may go to.
        let publishable = match package.get("publish") {
            None | Some(Value::Null) => true,
            Some(Value::Array(registries)) => registries
                .iter()
                .any(|registry| registry.as_str() == Some("crates-io")),
            Some(_) => false,
        };
        let has_features = package
            .get("features")
            .and_then(Value::as_object)
            .is_some_and(|features| {
                features.iter().any(|(feature, enables)| {
                    feature != "default" || enables.as_array().is_some_and(|list| !list.is_empty())
                })
            });
        let rust_version = package
            .get("rust_version")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let docs_rs = match package.pointer("/metadata/docs/rs") {
            None | Some(Value::Null) => None,
            Some(Value::Object(table)) => Some(DocsRs::from_table(table).map_err(|message| {
                Failure::new(format!(
                    "[package.metadata.docs.rs] of {name} is invalid: {message}"
                ))
            })?),
            Some(_) => {
                return Err(Failure::new(format!(
                    "[package.metadata.docs.rs] of {name} is not a table"
                )));
            }
        };
        Ok(Self {
            name,
            version,
            publishable,
            has_features,
            rust_version,
            docs_rs,
        })
    }
}

impl Workspace {
    /// Runs `cargo metadata` on the workspace at `root` and reads it.
    pub(crate) fn load(root: &std::path::Path) -> Result<Self, Failure> {
        Self::from_metadata(&crate::metadata(root)?)
    }

    /// Reads the output of `cargo metadata --format-version 1 --no-deps`.
    pub(crate) fn from_metadata(metadata: &Value) -> Result<Self, Failure> {
        let packages = metadata
            .get("packages")
            .and_then(Value::as_array)
            .ok_or_else(|| Failure::new("cargo metadata has no `packages` list"))?
            .iter()
            .map(Package::from_metadata)
            .collect::<Result<Vec<_>, _>>()?;
        let target_directory = metadata
            .get("target_directory")
            .and_then(Value::as_str)
            .map(PathBuf::from)
            .ok_or_else(|| Failure::new("cargo metadata has no `target_directory`"))?;
        Ok(Self {
            packages,
            target_directory,
        })
    }

    /// The `rust-version` every member declares (the workspace's), which the MSRV build uses.
    pub(crate) fn rust_version(&self) -> Result<&str, Failure> {
        let mut versions = self
            .packages
            .iter()
            .map(|package| (package.name.as_str(), package.rust_version.as_deref()));
        let Some((first, version)) = versions.next() else {
            return Err(Failure::new("the workspace has no packages"));
        };
        let version =
            version.ok_or_else(|| Failure::new(format!("{first} declares no rust-version")))?;
        for (name, other) in versions {
            if other != Some(version) {
                return Err(Failure::new(format!(
                    "{name} declares rust-version {other:?} where {first} declares {version:?}: \
                     the MSRV build needs one for the whole workspace"
                )));
            }
        }
        Ok(version)
    }

    /// The members that may be published to crates.io (see [`Package::publishable`]).
    pub(crate) fn publishable(&self) -> impl Iterator<Item = &Package> {
        self.packages.iter().filter(|package| package.publishable)
    }

    /// The members that have features of their own (see [`Package::has_features`]).
    pub(crate) fn with_features(&self) -> impl Iterator<Item = &Package> {
        self.packages.iter().filter(|package| package.has_features)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn package(name: &str, features: &Value, docs_rs: Option<Value>) -> Value {
        let metadata = docs_rs.map_or(Value::Null, |table| json!({"docs": {"rs": table}}));
        json!({
            "name": name,
            "version": "0.1.0",
            "publish": null,
            "features": features,
            "rust_version": "1.88",
            "metadata": metadata,
        })
    }

    fn workspace(packages: &[Value]) -> Result<Workspace, Failure> {
        Workspace::from_metadata(&json!({
            "packages": packages,
            "target_directory": "/tmp/target",
        }))
    }

    #[test]
    fn features_rust_version_and_docs_rs_are_read() {
        let ws = workspace(&[
            package("plain", &json!({}), None),
            package("empty-default", &json!({"default": []}), None),
            package(
                "featured",
                &json!({"default": [], "k8s-openapi": ["dep:k8s-openapi"]}),
                Some(json!({"all-features": true, "features": ["k8s-openapi/latest"]})),
            ),
        ])
        .unwrap();
        assert_eq!(ws.target_directory, PathBuf::from("/tmp/target"));
        let names: Vec<_> = ws.with_features().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["featured"]);
        assert_eq!(ws.rust_version().unwrap(), "1.88");
        let docs_rs = ws.packages[2].docs_rs.clone().unwrap();
        assert_eq!(
            docs_rs.cargo_args(),
            ["--features", "k8s-openapi/latest", "--all-features"]
        );
        assert_eq!(ws.packages[0].docs_rs, None);
    }

    #[test]
    fn versions_and_publishing_are_read() {
        let mut unpublished = package("program", &json!({}), None);
        unpublished["publish"] = json!([]);
        let mut elsewhere = package("private", &json!({}), None);
        elsewhere["publish"] = json!(["my-registry"]);
        let mut crates_io = package("named", &json!({}), None);
        crates_io["publish"] = json!(["crates-io"]);
        let ws = workspace(&[
            package("library", &json!({}), None),
            unpublished,
            elsewhere,
            crates_io,
        ])
        .unwrap();
        assert_eq!(ws.packages[0].version, "0.1.0");
        let names: Vec<_> = ws.publishable().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["library", "named"]);
    }

    #[test]
    fn a_default_feature_that_enables_something_counts_as_a_feature() {
        let ws = workspace(&[package("p", &json!({"default": ["std"]}), None)]).unwrap();
        assert!(ws.packages[0].has_features);
    }

    #[test]
    fn docs_rs_features_are_joined_as_docs_rs_joins_them() {
        let docs_rs = DocsRs {
            features: vec!["a".into(), "b/c".into()],
            all_features: false,
            no_default_features: true,
        };
        assert_eq!(
            docs_rs.cargo_args(),
            ["--features", "a b/c", "--no-default-features"]
        );
        assert!(DocsRs::default().cargo_args().is_empty());
    }

    #[test]
    fn invalid_or_unapplied_docs_rs_settings_fail() {
        for (table, wanted) in [
            (json!({"features": "k8s-openapi"}), "not an array"),
            (json!({"features": [1]}), "other than a string"),
            (json!({"all-features": "yes"}), "not a bool"),
            (json!({"all_features": true}), "not a docs.rs setting"),
            (json!({"rustdoc-args": ["--cfg", "docsrs"]}), "not applied"),
        ] {
            let error = workspace(&[package("p", &json!({}), Some(table))]).unwrap_err();
            assert!(error.0.contains(wanted), "{}", error.0);
        }
        let error = workspace(&[package("p", &json!({}), Some(json!(true)))]).unwrap_err();
        assert!(error.0.contains("not a table"), "{}", error.0);
    }

    #[test]
    fn the_msrv_is_one_version_for_the_whole_workspace() {
        let mut other = package("b", &json!({}), None);
        other["rust_version"] = json!("1.90");
        let ws = workspace(&[package("a", &json!({}), None), other]).unwrap();
        assert!(ws.rust_version().unwrap_err().0.contains("1.90"));
        let mut none = package("c", &json!({}), None);
        none["rust_version"] = Value::Null;
        let ws = workspace(&[none]).unwrap();
        assert!(ws.rust_version().unwrap_err().0.contains("no rust-version"));
    }

    #[test]
    fn the_real_workspace_documents_its_features_on_docs_rs() {
        let ws = Workspace::load(&crate::workspace_root()).unwrap();
        assert!(ws.rust_version().is_ok());
        for package in ws.with_features() {
            assert!(
                package.docs_rs.is_some(),
                "{} has features but no [package.metadata.docs.rs]",
                package.name
            );
        }
        // Their `k8s-openapi` feature builds k8s-openapi, whose build script fails without a
        // Kubernetes version; docs.rs sets no K8S_OPENAPI_ENABLED_VERSION, so they pick one.
        for name in ["kcache-store", "kcache-client-http"] {
            let package = ws.packages.iter().find(|p| p.name == name).unwrap();
            let docs_rs = package.docs_rs.as_ref().unwrap();
            assert!(
                docs_rs.features.iter().any(|f| f == "k8s-openapi/latest"),
                "{name}: {docs_rs:?}"
            );
        }
    }
}
