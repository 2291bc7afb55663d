//! `cargo xtask readme`: the README's "Use it" section built as a user builds it.
//!
//! The section's `toml` block (the dependencies) and `rust` block (the program) are written into
//! a scratch package under `target/readme-check`, with the `kcache/` paths pointing at this
//! checkout and the workspace's `Cargo.lock` as its starting lock, and `cargo check`ed. So the
//! lines a user copies name the right crates, features and tokio features, and the program
//! compiles against today's API.

use std::fs;
use std::path::Path;

use crate::Failure;
use crate::ci::job::Job;

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
        "## An operator",
        "testing/e2e/examples/operator.rs",
        "// <README operator>\n",
        "// </README operator>",
    ),
];

/// Builds the README's "Use it" blocks against the workspace at `root`, and checks that its
/// controller section shows the example program as it is.
pub(crate) fn run(root: &Path) -> Result<(), Failure> {
    let readme = fs::read_to_string(root.join("README.md"))
        .map_err(|e| Failure::new(format!("cannot read README.md: {e}")))?;
    for &(section, file, open, close) in EXAMPLES {
        let example = fs::read_to_string(root.join(file))
            .map_err(|e| Failure::new(format!("cannot read {file}: {e}")))?;
        shows_the_example(&readme, &example, (section, file, open, close))?;
    }
    let (dependencies, program) = use_it_blocks(&readme)?;
    // The workspace's target directory, shared so the kcache crates build once.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), std::path::PathBuf::from);
    let dir = target.join("readme-check");
    let write = |path: &Path, text: &str| {
        fs::write(path, text)
            .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display())))
    };
    fs::create_dir_all(dir.join("src"))
        .map_err(|e| Failure::new(format!("cannot create {}: {e}", dir.display())))?;
    write(&dir.join("Cargo.toml"), &manifest(root, dependencies))?;
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

/// The scratch package's manifest: a package of its own (not a workspace member) with the
/// README's dependency lines, their `kcache/` paths pointing at `root`.
fn manifest(root: &Path, dependencies: &str) -> String {
    let root = root.display().to_string().replace('\\', "/");
    format!(
        "[package]\nname = \"readme-check\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[workspace]\n\n{}",
        dependencies.replace(CHECKOUT, &format!("path = \"{root}/"))
    )
}

/// The first `toml` and the first `rust` fenced block of the "Use it" section.
fn use_it_blocks(readme: &str) -> Result<(&str, &str), Failure> {
    let dependencies = fenced_block(readme, SECTION, "toml")?;
    if !dependencies.contains(CHECKOUT) {
        return Err(Failure::new(format!(
            "the dependencies of `{SECTION}` name no kcache crate by `{CHECKOUT}...\"`"
        )));
    }
    Ok((dependencies, fenced_block(readme, SECTION, "rust")?))
}

/// The text of the first ```` ```lang ```` fenced block of `readme`'s section `heading` (up to
/// the next `## ` heading: a block of a later section does not count).
fn fenced_block<'r>(readme: &'r str, heading: &str, lang: &str) -> Result<&'r str, Failure> {
    let start = readme
        .find(heading)
        .ok_or_else(|| Failure::new(format!("README.md has no `{heading}` section")))?;
    let rest = &readme[start + heading.len()..];
    let section = rest.find("\n## ").map_or(rest, |end| &rest[..end]);
    let fence = format!("```{lang}\n");
    let at = section
        .find(&fence)
        .ok_or_else(|| Failure::new(format!("the `{heading}` section has no ```{lang} block")))?;
    let body = &section[at + fence.len()..];
    let end = body
        .find("```")
        .ok_or_else(|| Failure::new(format!("the ```{lang} block of `{heading}` is not closed")))?;
    Ok(&body[..end])
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
    use super::*;

    const README: &str = "# x\n\n## Use it\n\ntext\n\n```toml\n[dependencies]\n\
        kcache-store = { path = \"kcache/store\" }\n```\n\n```rust\nfn main() {}\n```\n\n\
        ## Next\n\n```rust\nnot this\n```\n";

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
        let (deps, program) = use_it_blocks(README).unwrap();
        assert_eq!(program, "fn main() {}\n");
        let manifest = manifest(Path::new("/src/kcache"), deps);
        assert!(manifest.contains("kcache-store = { path = \"/src/kcache/store\" }"));
        assert!(manifest.contains("[workspace]"), "{manifest}");
    }

    #[test]
    fn a_readme_without_the_section_or_its_blocks_fails() {
        assert!(use_it_blocks("# x\n").is_err());
        assert!(use_it_blocks("## Use it\n\n```toml\n[dependencies]\n```\n").is_err());
        let no_rust =
            "## Use it\n```toml\nx = { path = \"kcache/a\" }\n```\n## Next\n```rust\n```\n";
        assert!(
            use_it_blocks(no_rust).is_err(),
            "a block of the next section does not count"
        );
    }
}
