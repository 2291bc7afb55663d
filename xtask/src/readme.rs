//! `cargo xtask readme`: the README's "Use it" section built as a user builds it.
//!
//! The section shows the dependencies twice: as a user names them once the crates are on
//! crates.io (`kcache-informer = "0.1"`), and by path to a checkout (`path = "kcache/..."`).
//! Each `toml` block, with the section's `rust` block (the program), is written into a scratch
//! package under `target/readme-check/`, with the workspace's `Cargo.lock` as its starting lock,
//! and `cargo check`ed: the `kcache/` paths point at this checkout, and the crates.io names are
//! patched to it (`[patch.crates-io]`, so their version requirements must match the crates'
//! version). So the lines a user copies name the right crates, versions, features and tokio
//! features, and the program compiles against today's API.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::Failure;
use crate::ci::job::Job;
use crate::deps::LIBRARIES;

/// The heading of the section whose blocks are built.
const SECTION: &str = "## Use it";

/// The prefix of the README's dependency paths, replaced by this checkout's root.
const CHECKOUT: &str = "path = \"kcache/";

/// The README sections that show an example program: the section's heading, the example's
/// file, and the markers around the part of it the section shows.
const EXAMPLES: &[(&str, &str, &str, &str)] = &[
    (
        "## A controller",
        "testing/e2e/examples/controller.rs",
        "// <README controller>\n",
        "// </README controller>",
    ),
    (
        "## Past one replica",
        "testing/e2e/examples/leader.rs",
        "// <README leader>\n",
        "// </README leader>",
    ),
    (
        "### Sharded caches",
        "testing/e2e/examples/sharded.rs",
        "// <README sharded>\n",
        "// </README sharded>",
    ),
    (
        "## An operator",
        "testing/e2e/examples/operator.rs",
        "// <README operator>\n",
        "// </README operator>",
    ),
];

/// The blocks of the "Use it" section that are built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct UseIt<'r> {
    /// The dependencies as named on crates.io (no `path`).
    published: &'r str,
    /// The dependencies by path to a checkout (`path = "kcache/..."`).
    checkout: &'r str,
    /// The program.
    program: &'r str,
}

/// A library of the workspace, as the crates.io form's patch needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Library {
    /// The package name.
    name: String,
    /// The folder of its manifest.
    dir: String,
    /// The libraries among its normal dependencies.
    uses: Vec<String>,
}

/// Builds the README's "Use it" blocks against the workspace at `root`, in both forms, and
/// checks that its example sections show the example programs as they are.
pub(crate) fn run(root: &Path) -> Result<(), Failure> {
    let readme = fs::read_to_string(root.join("README.md"))
        .map_err(|e| Failure::new(format!("cannot read README.md: {e}")))?;
    for &(section, file, open, close) in EXAMPLES {
        let example = fs::read_to_string(root.join(file))
            .map_err(|e| Failure::new(format!("cannot read {file}: {e}")))?;
        shows_the_example(&readme, &example, (section, file, open, close))?;
    }
    let use_it = use_it_blocks(&readme)?;
    let libraries = libraries(&crate::metadata(root)?);
    // The workspace's target directory, shared so the kcache crates build once.
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let forms = [
        (
            "crates-io",
            published_manifest(use_it.published, &libraries)?,
        ),
        ("checkout", checkout_manifest(root, use_it.checkout)),
    ];
    for (form, manifest) in forms {
        let dir = target.join("readme-check").join(form);
        check(root, &target, &dir, &manifest, use_it.program)?;
    }
    Ok(())
}

/// Writes the scratch package `dir` (`manifest`, `program` and the workspace's lock) and
/// `cargo check`s it in the `target` directory.
fn check(
    root: &Path,
    target: &Path,
    dir: &Path,
    manifest: &str,
    program: &str,
) -> Result<(), Failure> {
    let write = |path: &Path, text: &str| {
        fs::write(path, text)
            .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display())))
    };
    fs::create_dir_all(dir.join("src"))
        .map_err(|e| Failure::new(format!("cannot create {}: {e}", dir.display())))?;
    write(&dir.join("Cargo.toml"), manifest)?;
    write(&dir.join("src").join("main.rs"), program)?;
    if let Ok(lock) = fs::read_to_string(root.join("Cargo.lock")) {
        write(&dir.join("Cargo.lock"), &lock)?;
    }
    let manifest_path = dir.join("Cargo.toml");
    let manifest_path = manifest_path.to_str().ok_or_else(|| {
        Failure::new(format!(
            "the scratch package's path is not UTF-8: {}",
            manifest_path.display()
        ))
    })?;
    let target_dir = target.to_str().ok_or_else(|| {
        Failure::new(format!(
            "the target directory's path is not UTF-8: {}",
            target.display()
        ))
    })?;
    // A CI job like the others: it does not inherit `K8S_OPENAPI_ENABLED_VERSION`, as the
    // README picks k8s-openapi's version with a feature, as a user does.
    Job::cargo(&["check", "--quiet", "--manifest-path", manifest_path])
        .env("CARGO_TARGET_DIR", target_dir)
        .run(root)
        .map_err(|Failure(why)| {
            Failure::new(format!(
                "the README's \"Use it\" program does not build with its Cargo.toml lines \
                 ({why}); the scratch package is {}",
                dir.display()
            ))
        })
}

/// The libraries ([`LIBRARIES`]) in `metadata` (the output of `cargo metadata --no-deps`).
fn libraries(metadata: &Value) -> Vec<Library> {
    let text = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let list = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    list(metadata, "packages")
        .iter()
        .filter(|package| LIBRARIES.contains(&text(package, "name").as_str()))
        .map(|package| {
            let manifest = text(package, "manifest_path");
            let dir = Path::new(&manifest)
                .parent()
                .map_or_else(String::new, |dir| dir.display().to_string());
            Library {
                name: text(package, "name"),
                dir: dir.replace('\\', "/"),
                uses: list(package, "dependencies")
                    .iter()
                    .filter(|dependency| dependency.get("kind").is_none_or(Value::is_null))
                    .map(|dependency| text(dependency, "name"))
                    .filter(|name| LIBRARIES.contains(&name.as_str()))
                    .collect(),
            }
        })
        .collect()
}

/// A scratch package's manifest: a package of its own (not a workspace member) with `body`.
fn scratch_manifest(body: &str) -> String {
    format!(
        "[package]\nname = \"readme-check\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[workspace]\n\n{body}"
    )
}

/// The checkout form's scratch package: the README's `kcache/` paths pointing at `root`.
fn checkout_manifest(root: &Path, dependencies: &str) -> String {
    let root = root.display().to_string().replace('\\', "/");
    scratch_manifest(&dependencies.replace(CHECKOUT, &format!("path = \"{root}/")))
}

/// The crates.io form's scratch package: the README's lines as they are, and a
/// `[patch.crates-io]` entry pointing at this checkout for each library they name and each
/// library those depend on (cargo warns of an entry the build does not use).
fn published_manifest(dependencies: &str, libraries: &[Library]) -> Result<String, Failure> {
    let mut pending: Vec<String> = dependencies
        .lines()
        .filter_map(|line| line.split_once('=').map(|(key, _)| key.trim()))
        .filter(|key| key.starts_with("kcache-"))
        .map(str::to_owned)
        .collect();
    let mut patched = BTreeSet::new();
    while let Some(name) = pending.pop() {
        let library = libraries
            .iter()
            .find(|library| library.name == name)
            .ok_or_else(|| {
                Failure::new(format!(
                    "the dependencies of `{SECTION}` name `{name}`, which is not a library of \
                     the workspace"
                ))
            })?;
        if patched.insert(&library.name) {
            pending.extend(library.uses.iter().cloned());
        }
    }
    let mut body = format!("{}\n\n[patch.crates-io]\n", dependencies.trim_end());
    for library in libraries.iter().filter(|l| patched.contains(&l.name)) {
        // Writing to a `String` cannot fail.
        let _ = writeln!(body, "{} = {{ path = \"{}\" }}", library.name, library.dir);
    }
    Ok(scratch_manifest(&body))
}

/// The crates.io `toml` block, the checkout `toml` block and the first `rust` block of the
/// "Use it" section.
fn use_it_blocks(readme: &str) -> Result<UseIt<'_>, Failure> {
    let blocks = fenced_blocks(readme, SECTION, "toml")?;
    let checkout = blocks
        .iter()
        .find(|block| block.contains(CHECKOUT))
        .ok_or_else(|| {
            Failure::new(format!(
                "the dependencies of `{SECTION}` name no kcache crate by `{CHECKOUT}...\"`"
            ))
        })?;
    let published = blocks
        .iter()
        .find(|block| {
            !block.contains("path =")
                && block
                    .lines()
                    .any(|line| line.trim_start().starts_with("kcache-"))
        })
        .ok_or_else(|| {
            Failure::new(format!(
                "`{SECTION}` has no `toml` block naming the kcache crates as on crates.io \
                 (without `path`)"
            ))
        })?;
    Ok(UseIt {
        published,
        checkout,
        program: fenced_block(readme, SECTION, "rust")?,
    })
}

/// The text of every ```` ```lang ```` fenced block of `readme`'s section `heading` (up to the
/// next `## ` heading: a block of a later section does not count), in order; at least one.
fn fenced_blocks<'r>(readme: &'r str, heading: &str, lang: &str) -> Result<Vec<&'r str>, Failure> {
    let start = readme
        .find(heading)
        .ok_or_else(|| Failure::new(format!("README.md has no `{heading}` section")))?;
    let rest = &readme[start + heading.len()..];
    let mut section = rest.find("\n## ").map_or(rest, |end| &rest[..end]);
    let fence = format!("```{lang}\n");
    let mut blocks = Vec::new();
    while let Some(at) = section.find(&fence) {
        let body = &section[at + fence.len()..];
        let end = body.find("```").ok_or_else(|| {
            Failure::new(format!("a ```{lang} block of `{heading}` is not closed"))
        })?;
        blocks.push(&body[..end]);
        section = &body[end + "```".len()..];
    }
    if blocks.is_empty() {
        return Err(Failure::new(format!(
            "the `{heading}` section has no ```{lang} block"
        )));
    }
    Ok(blocks)
}

/// The text of the first ```` ```lang ```` fenced block of `readme`'s section `heading`.
fn fenced_block<'r>(readme: &'r str, heading: &str, lang: &str) -> Result<&'r str, Failure> {
    Ok(fenced_blocks(readme, heading, lang)?[0])
}

/// Whether the `rust` block of the README's `section` is the marked part of the example
/// `file`, so the README never shows code that is not the one built and run.
fn shows_the_example(
    readme: &str,
    example: &str,
    (section, file, open, close): (&str, &str, &str, &str),
) -> Result<(), Failure> {
    let body = fenced_block(readme, section, "rust")?;
    let marked = example
        .find(open)
        .map(|at| &example[at + open.len()..])
        .and_then(|b| b.find(close).map(|end| &b[..end]))
        .ok_or_else(|| Failure::new(format!("{file} has no `{open}` ... `{close}` part")))?;
    if body == marked {
        Ok(())
    } else {
        Err(Failure::new(format!(
            "the README's `{section}` block differs from the marked part of {file}: copy it again"
        )))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const README: &str = "# x\n\n## Use it\n\ntext\n\n```toml\n[dependencies]\n\
        kcache-informer = { version = \"0.1\", features = [\"x\"] }\n```\n\nor\n\n\
        ```toml\n[dependencies]\n\
        kcache-store = { path = \"kcache/store\" }\n```\n\n```rust\nfn main() {}\n```\n\n\
        ## Next\n\n```toml\nkcache-next = \"1\"\n```\n\n```rust\nnot this\n```\n";

    fn library(name: &str, dir: &str, uses: &[&str]) -> Library {
        Library {
            name: name.to_owned(),
            dir: dir.to_owned(),
            uses: uses.iter().map(|&u| u.to_owned()).collect(),
        }
    }

    #[test]
    fn the_controller_section_must_show_the_example_as_it_is() {
        let example = "use x;\n// <README controller>\nfn a() {}\n// </README controller>\n";
        let readme = "## A controller\n\n```rust\nfn a() {}\n```\n";
        assert!(shows_the_example(readme, example, EXAMPLES[0]).is_ok());
        let stale = "## A controller\n\n```rust\nfn b() {}\n```\n";
        assert!(shows_the_example(stale, example, EXAMPLES[0]).is_err());
        let elsewhere = "## A controller\n\ntext\n\n## Next\n\n```rust\nfn a() {}\n```\n";
        assert!(
            shows_the_example(elsewhere, example, EXAMPLES[0]).is_err(),
            "a block of the next section does not count"
        );
    }

    #[test]
    fn the_blocks_of_the_section_are_found_and_the_paths_point_at_the_checkout() {
        let use_it = use_it_blocks(README).unwrap();
        assert_eq!(use_it.program, "fn main() {}\n");
        assert!(use_it.published.contains("kcache-informer = { version"));
        let manifest = checkout_manifest(Path::new("/src/kcache"), use_it.checkout);
        assert!(manifest.contains("kcache-store = { path = \"/src/kcache/store\" }"));
        assert!(manifest.contains("[workspace]"), "{manifest}");
    }

    #[test]
    fn the_crates_io_form_is_patched_to_the_checkout_with_what_it_uses() {
        let libraries = [
            library("kcache-store", "/k/store", &[]),
            library("kcache-queue", "/k/queue", &["kcache-store"]),
            library("kcache-reflector", "/k/reflector", &["kcache-store"]),
            library(
                "kcache-informer",
                "/k/informer",
                &["kcache-store", "kcache-queue", "kcache-reflector"],
            ),
            library("kcache-testing", "/k/testing", &["kcache-store"]),
        ];
        let use_it = use_it_blocks(README).unwrap();
        let manifest = published_manifest(use_it.published, &libraries).unwrap();
        assert!(
            manifest.ends_with(
                "kcache-informer = { version = \"0.1\", features = [\"x\"] }\n\n\
                 [patch.crates-io]\n\
                 kcache-store = { path = \"/k/store\" }\n\
                 kcache-queue = { path = \"/k/queue\" }\n\
                 kcache-reflector = { path = \"/k/reflector\" }\n\
                 kcache-informer = { path = \"/k/informer\" }\n"
            ),
            "{manifest}"
        );
        let unknown = published_manifest("kcache-nothing = \"0.1\"\n", &libraries);
        assert!(unknown.unwrap_err().0.contains("kcache-nothing"));
    }

    #[test]
    fn libraries_are_read_from_the_metadata() {
        let metadata = json!({"packages": [
            {"name": "kcache-store", "manifest_path": "/k/store/Cargo.toml", "dependencies": [
                {"name": "serde", "kind": null},
            ]},
            {"name": "kcache-queue", "manifest_path": "/k/queue/Cargo.toml", "dependencies": [
                {"name": "kcache-store", "kind": null},
                {"name": "kcache-testing", "kind": "dev"},
            ]},
            {"name": "kcache-testing-e2e", "manifest_path": "/k/testing/e2e/Cargo.toml"},
        ]});
        assert_eq!(
            libraries(&metadata),
            [
                library("kcache-store", "/k/store", &[]),
                library("kcache-queue", "/k/queue", &["kcache-store"]),
            ]
        );
    }

    #[test]
    fn a_readme_without_the_section_or_its_blocks_fails() {
        assert!(use_it_blocks("# x\n").is_err());
        assert!(use_it_blocks("## Use it\n\n```toml\n[dependencies]\n```\n").is_err());
        let no_rust = "## Use it\n```toml\nx = { path = \"kcache/a\" }\n```\n\
            ```toml\nkcache-a = \"1\"\n```\n## Next\n```rust\n```\n";
        assert!(
            use_it_blocks(no_rust).is_err(),
            "a block of the next section does not count"
        );
        let no_published =
            "## Use it\n```toml\nx = { path = \"kcache/a\" }\n```\n```rust\nfn main() {}\n```\n";
        let error = use_it_blocks(no_published).unwrap_err();
        assert!(error.0.contains("crates.io"), "{}", error.0);
    }
}
