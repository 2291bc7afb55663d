//! `cargo xtask tidy`: the repository's file conventions, checked.
//!
//! - Every `*.rs` file under a member's `src/`, `tests/`, `benches/` and `examples/` starts
//!   (after blank lines) with a `//!` doc comment.
//! - Each member's package name is `kcache-` and its folder's path with `-` for `/`
//!   (`testing/server/` holds `kcache-testing-server`).
//! - Each internal dependency in `[workspace.dependencies]` has both `path` and `version`.
//! - Each library of the layering table ([`LIBRARIES`]) is publishable and has the metadata
//!   crates.io and docs.rs show (description, license, repository, readme, documentation,
//!   keywords, categories, rust-version); every other member says `publish = false`.
//!
//! Leftover `dbg!`, `todo!` and `unimplemented!` are clippy's to find: the workspace denies
//! `clippy::dbg_macro`, `clippy::todo` and `clippy::unimplemented`.
//!
//! The checks are pure functions over text; [`run`] feeds them the files of the workspace.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::Failure;
use crate::deps::LIBRARIES;

/// The folders of a member whose `*.rs` files are checked.
const SOURCE_FOLDERS: &[&str] = &["src", "tests", "benches", "examples"];

/// One problem found by tidy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// The file, relative to the workspace root.
    pub(crate) path: PathBuf,
    /// The 1-based line, if the problem has one.
    pub(crate) line: Option<usize>,
    /// What is wrong.
    pub(crate) message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Checks that `text` starts, after blank lines, with a `//!` line.
pub(crate) fn check_header(text: &str) -> Option<String> {
    match text.lines().find(|line| !line.trim().is_empty()) {
        None => Some("empty file: start it with a `//!` doc comment".to_owned()),
        Some(line) if line.trim_start().starts_with("//!") => None,
        Some(_) => {
            Some("the file must start with a `//!` doc comment saying what it is".to_owned())
        }
    }
}

/// Checks that the package in `folder` (its path from the workspace root, `/`-separated) is
/// named `kcache-` and the folder path with `-` for `/`: `testing/server` holds
/// `kcache-testing-server`.
pub(crate) fn check_package_name(name: &str, folder: &str) -> Option<String> {
    let expected = format!("kcache-{}", folder.replace('/', "-"));
    (name != expected).then(|| {
        format!("the package in `{folder}/` is named `{name}`: it must be named `{expected}`")
    })
}

/// crates.io's limit on keywords and on categories per package.
const MAX_KEYWORDS_OR_CATEGORIES: usize = 5;

/// Checks the publishing metadata of one package (an entry of `cargo metadata`'s `packages`):
/// a library ([`LIBRARIES`]) is publishable to crates.io and has every field crates.io and
/// docs.rs show; any other member (a program, a test package, xtask) says `publish = false`.
pub(crate) fn check_publish_metadata(package: &Value) -> Vec<String> {
    let name = package
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // `cargo metadata`: `null` for any registry, `[]` for `publish = false`, else the registries.
    let registries = package.get("publish").and_then(Value::as_array);
    let to_crates_io =
        registries.is_none_or(|list| list.iter().any(|r| r.as_str() == Some("crates-io")));
    if !LIBRARIES.contains(&name) {
        return if registries.is_some_and(Vec::is_empty) {
            Vec::new()
        } else {
            vec![format!(
                "`{name}` is not a library of the layering table: it must say `publish = false`"
            )]
        };
    }
    let mut problems = Vec::new();
    if !to_crates_io {
        problems.push(format!(
            "`{name}` is a library: it must be publishable to crates.io (no `publish` key)"
        ));
    }
    let missing = |key: &str| {
        package
            .get(key)
            .and_then(Value::as_str)
            .is_none_or(|value| value.trim().is_empty())
    };
    for (key, field) in [
        ("description", "description"),
        ("license", "license"),
        ("repository", "repository"),
        ("readme", "readme"),
        ("documentation", "documentation"),
        ("rust_version", "rust-version"),
    ] {
        if missing(key) {
            problems.push(format!("`{name}` has no `{field}`"));
        }
    }
    for field in ["keywords", "categories"] {
        let count = package
            .get(field)
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if count == 0 || count > MAX_KEYWORDS_OR_CATEGORIES {
            problems.push(format!(
                "`{name}` has {count} {field}: crates.io shows 1 to \
                 {MAX_KEYWORDS_OR_CATEGORIES}"
            ));
        }
    }
    problems
}

/// Whether the inline table or value `value` sets the key `key` (`key = ...`).
fn sets_key(value: &str, key: &str) -> bool {
    let mut rest = value;
    while let Some(position) = rest.find(key) {
        let before = rest[..position].chars().next_back();
        let after = rest[position + key.len()..].trim_start();
        if before.is_none_or(|c| c == '{' || c == ',' || c.is_whitespace())
            && after.starts_with('=')
        {
            return true;
        }
        rest = &rest[position + key.len()..];
    }
    false
}

/// What the workspace manifest says about one entry of `[workspace.dependencies]`.
#[derive(Debug, Default)]
struct Entry {
    /// The 1-based line where the entry starts.
    line: usize,
    /// Whether it has a `path`.
    path: bool,
    /// Whether it has a `version`.
    version: bool,
}

/// Checks that every internal dependency (one with a `path`, named like a member in `members`,
/// or named `kcache-*`) in the `[workspace.dependencies]` of `manifest` has both `path` and
/// `version`. Returns (1-based line, message) for each that does not.
pub(crate) fn check_workspace_dependencies(
    manifest: &str,
    members: &[&str],
) -> Vec<(usize, String)> {
    const SECTION: &str = "workspace.dependencies";
    let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
    // `Some(None)`: in `[workspace.dependencies]`; `Some(Some(name))`: in its `.name` subtable.
    let mut section: Option<Option<String>> = None;
    for (index, raw) in manifest.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']').trim();
            section = if header == SECTION {
                Some(None)
            } else {
                header
                    .strip_prefix(SECTION)
                    .and_then(|rest| rest.strip_prefix('.'))
                    .map(|name| Some(unquote(name).to_owned()))
            };
            if let Some(Some(name)) = &section {
                entries.entry(name.clone()).or_insert(Entry {
                    line: index + 1,
                    ..Entry::default()
                });
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match &section {
            None => {}
            Some(Some(name)) => {
                let entry = entries.entry(name.clone()).or_default();
                match unquote(key.trim()) {
                    "path" => entry.path = true,
                    "version" => entry.version = true,
                    _ => {}
                }
            }
            Some(None) => {
                let key = key.trim();
                let (name, field) = match key.split_once('.') {
                    Some((name, field)) => (unquote(name.trim()), Some(unquote(field.trim()))),
                    None => (unquote(key), None),
                };
                let entry = entries.entry(name.to_owned()).or_insert(Entry {
                    line: index + 1,
                    ..Entry::default()
                });
                let value = value.trim();
                match field {
                    Some("path") => entry.path = true,
                    Some("version") => entry.version = true,
                    Some(_) => {}
                    None if value.starts_with('{') => {
                        entry.path |= sets_key(value, "path");
                        entry.version |= sets_key(value, "version");
                    }
                    // `name = "1.2"` is a version.
                    None => entry.version = true,
                }
            }
        }
    }
    entries
        .into_iter()
        .filter(|(name, entry)| {
            entry.path || members.contains(&name.as_str()) || name.starts_with("kcache-")
        })
        .filter_map(|(name, entry)| {
            let missing = match (entry.path, entry.version) {
                (true, true) => return None,
                (false, false) => "`path` and `version`",
                (false, true) => "`path`",
                (true, false) => "`version`",
            };
            Some((
                entry.line,
                format!("internal dependency `{name}` needs {missing}"),
            ))
        })
        .collect()
}

/// `text` without one pair of surrounding double quotes, if it has them.
fn unquote(text: &str) -> &str {
    text.strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or(text)
}

/// Every `*.rs` file under `dir`, recursively, skipping `target/` and hidden folders; sorted.
fn rust_files(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(&dir)
            .map_err(|error| Failure::new(format!("cannot list {}: {error}", dir.display())))?;
        for entry in entries {
            let entry = entry
                .map_err(|error| Failure::new(format!("cannot list {}: {error}", dir.display())))?;
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let file_type = entry.file_type().map_err(|error| {
                Failure::new(format!("cannot stat {}: {error}", path.display()))
            })?;
            if file_type.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    pending.push(path);
                }
            } else if name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Runs every check on the workspace at `root` and returns the problems found.
fn problems(root: &Path) -> Result<Vec<Problem>, Failure> {
    let metadata = crate::metadata(root)?;
    let relative = |path: &Path| path.strip_prefix(root).unwrap_or(path).to_path_buf();
    let mut problems = Vec::new();
    let mut member_names = Vec::new();
    let packages = metadata
        .get("packages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for package in packages {
        let name = package
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        member_names.push(name);
        let manifest = Path::new(
            package
                .get("manifest_path")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        let Some(dir) = manifest.parent() else {
            continue;
        };
        let folder: Vec<String> = relative(dir)
            .components()
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .collect();
        let folder = folder.join("/");
        if let Some(message) = check_package_name(name, &folder) {
            problems.push(Problem {
                path: relative(manifest),
                line: None,
                message,
            });
        }
        for message in check_publish_metadata(package) {
            problems.push(Problem {
                path: relative(manifest),
                line: None,
                message,
            });
        }
        for source_folder in SOURCE_FOLDERS {
            let source_dir = dir.join(source_folder);
            if !source_dir.is_dir() {
                continue;
            }
            for file in rust_files(&source_dir)? {
                let path = relative(&file);
                let text = fs::read_to_string(&file).map_err(|error| {
                    Failure::new(format!("cannot read {}: {error}", file.display()))
                })?;
                if let Some(message) = check_header(&text) {
                    problems.push(Problem {
                        path,
                        line: Some(1),
                        message,
                    });
                }
            }
        }
    }
    let manifest_path = root.join("Cargo.toml");
    let manifest = fs::read_to_string(&manifest_path).map_err(|error| {
        Failure::new(format!("cannot read {}: {error}", manifest_path.display()))
    })?;
    for (line, message) in check_workspace_dependencies(&manifest, &member_names) {
        problems.push(Problem {
            path: PathBuf::from("Cargo.toml"),
            line: Some(line),
            message,
        });
    }
    Ok(problems)
}

/// Runs tidy on the workspace at `root`, printing every problem found.
pub(crate) fn run(root: &Path) -> Result<(), Failure> {
    let problems = problems(root)?;
    if problems.is_empty() {
        eprintln!("tidy: no problems found");
        return Ok(());
    }
    for problem in &problems {
        eprintln!("{problem}");
    }
    Err(Failure::new(format!(
        "tidy: {} problem(s) found",
        problems.len()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_must_be_a_module_doc_comment() {
        assert_eq!(check_header("//! A module.\nfn f() {}\n"), None);
        assert_eq!(check_header("\n\n  \n//! After blank lines.\n"), None);
        assert!(check_header("").is_some());
        assert!(check_header("\n\n").is_some());
        assert!(check_header("/// An item doc.\nfn f() {}\n").is_some());
        assert!(check_header("// A comment.\n//! Too late.\n").is_some());
        assert!(check_header("#![forbid(unsafe_code)]\n//! Too late.\n").is_some());
        assert!(check_header("use std::fmt;\n").is_some());
    }

    #[test]
    fn package_names_follow_their_folder() {
        assert_eq!(check_package_name("kcache-store", "store"), None);
        assert_eq!(
            check_package_name("kcache-client-http", "client-http"),
            None
        );
        assert!(check_package_name("xtask", "xtask").is_some());
        assert!(check_package_name("kcache-http", "client-http").is_some());
        assert_eq!(
            check_package_name("kcache-testing-server", "testing/server"),
            None
        );
        assert!(check_package_name("kcache-server", "testing/server").is_some());
        assert!(check_package_name("kcache-testing-e2e", "e2e").is_some());
    }

    /// A library's `cargo metadata` entry with every publishing field set.
    fn published(name: &str) -> Value {
        serde_json::json!({
            "name": name,
            "publish": null,
            "description": "What it is",
            "license": "Apache-2.0",
            "repository": "https://example.invalid/kcache",
            "readme": "README.md",
            "documentation": "https://docs.rs/kcache-store",
            "rust_version": "1.89",
            "keywords": ["kubernetes"],
            "categories": ["caching"],
        })
    }

    #[test]
    fn libraries_are_publishable_with_their_metadata() {
        assert_eq!(
            check_publish_metadata(&published("kcache-store")),
            Vec::<String>::new()
        );
        let mut only_crates_io = published("kcache-store");
        only_crates_io["publish"] = serde_json::json!(["crates-io"]);
        assert_eq!(
            check_publish_metadata(&only_crates_io),
            Vec::<String>::new()
        );

        let mut unpublished = published("kcache-queue");
        unpublished["publish"] = serde_json::json!([]);
        unpublished["readme"] = Value::Null;
        unpublished["keywords"] = serde_json::json!(["a", "b", "c", "d", "e", "f"]);
        unpublished["categories"] = serde_json::json!([]);
        assert_eq!(
            check_publish_metadata(&unpublished),
            [
                "`kcache-queue` is a library: it must be publishable to crates.io (no `publish` \
                 key)",
                "`kcache-queue` has no `readme`",
                "`kcache-queue` has 6 keywords: crates.io shows 1 to 5",
                "`kcache-queue` has 0 categories: crates.io shows 1 to 5",
            ]
        );
    }

    #[test]
    fn other_members_are_not_published() {
        let mut program = published("kcache-testing-e2e");
        assert_eq!(check_publish_metadata(&program).len(), 1);
        program["publish"] = serde_json::json!([]);
        assert_eq!(check_publish_metadata(&program), Vec::<String>::new());
        let bare = serde_json::json!({"name": "kcache-xtask", "publish": []});
        assert_eq!(check_publish_metadata(&bare), Vec::<String>::new());
    }

    #[test]
    fn internal_workspace_dependencies_need_path_and_version() {
        let manifest = r#"
[workspace]
members = ["store", "queue"]

[workspace.dependencies]
kcache-store = { path = "store", version = "0.1.0" }
kcache-queue = { path = "queue" }
kcache-informer = { version = "0.1.0" }
kcache-testing.path = "testing"
kcache-testing.version = "0.1.0"
local-helper = { path = "helper" }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
tokio = { version = "1", default-features = false }

[workspace.dependencies.kcache-reflector]
path = "reflector"

[workspace.dependencies.kcache-client-http]
path = "client-http"
version = "0.1.0"

[profile.release]
path = "nonsense"
"#;
        let found = check_workspace_dependencies(manifest, &["kcache-store", "kcache-queue"]);
        let messages: Vec<String> = found
            .iter()
            .map(|(line, message)| format!("{line}: {message}"))
            .collect();
        assert_eq!(
            messages,
            [
                "8: internal dependency `kcache-informer` needs `path`",
                "7: internal dependency `kcache-queue` needs `version`",
                "16: internal dependency `kcache-reflector` needs `version`",
                "11: internal dependency `local-helper` needs `version`",
            ]
        );
    }

    #[test]
    fn the_real_workspace_manifest_is_tidy() {
        let root = crate::workspace_root();
        let manifest = fs::read_to_string(root.join("Cargo.toml")).expect("workspace manifest");
        assert_eq!(check_workspace_dependencies(&manifest, &[]), Vec::new());
    }

    #[test]
    fn xtask_itself_is_tidy() {
        let root = crate::workspace_root();
        for file in rust_files(&root.join("xtask")).expect("list xtask") {
            let text = fs::read_to_string(&file).expect("read");
            assert_eq!(check_header(&text), None, "{}", file.display());
        }
    }
}
