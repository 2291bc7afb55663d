//! Loading kubeconfig files: parsing, the `KUBECONFIG` list and kubectl's merge rules (the
//! first file to set a value wins).

use std::path::{Path, PathBuf};

use super::resolve::read;
use super::{Kubeconfig, KubeconfigOptions};
use crate::{Error, Result};

/// Makes `path` absolute against `dir` when it is relative.
fn resolve(dir: &Path, path: &mut Option<PathBuf>) {
    if let Some(p) = path
        && p.is_relative()
        && !p.as_os_str().is_empty()
    {
        *p = dir.join(&*p);
    }
}

/// The paths of `$KUBECONFIG`, or `~/.kube/config`.
fn default_paths() -> Vec<PathBuf> {
    if let Some(list) = std::env::var_os("KUBECONFIG")
        && !list.is_empty()
    {
        return std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
    }
    std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".kube").join("config"))
        .into_iter()
        .collect()
}

impl Kubeconfig {
    /// Parses a kubeconfig from YAML (or JSON) text. Relative paths stay as written.
    ///
    /// # Errors
    ///
    /// [`Error::ParseKubeconfig`] with the position of the problem (never the input itself).
    pub fn from_yaml(text: &str) -> Result<Self> {
        Self::parse(text, Path::new("<memory>"))
    }

    fn parse(text: &str, path: &Path) -> Result<Self> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let mut options = serde_saphyr::Options::default();
        // The snippet of the input around an error could show a token.
        options.with_snippet = false;
        serde_saphyr::from_str_with_options::<Option<Self>>(text, options)
            .map(Option::unwrap_or_default)
            .map_err(|e| Error::ParseKubeconfig {
                path: path.to_owned(),
                source: e.to_string().into(),
            })
    }

    /// Reads one kubeconfig file and makes its relative paths absolute against its directory.
    ///
    /// # Errors
    ///
    /// [`Error::ReadFile`] or [`Error::ParseKubeconfig`], with the path.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = read("kubeconfig", path)?;
        let text = String::from_utf8(bytes).map_err(|e| Error::ParseKubeconfig {
            path: path.to_owned(),
            source: Box::new(e.utf8_error()),
        })?;
        let mut kc = Self::parse(&text, path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        kc.resolve_paths(dir);
        Ok(kc)
    }

    fn resolve_paths(&mut self, dir: &Path) {
        for c in self.clusters.iter_mut().filter_map(|c| c.cluster.as_mut()) {
            resolve(dir, &mut c.certificate_authority);
        }
        for u in self.users.iter_mut().filter_map(|u| u.user.as_mut()) {
            resolve(dir, &mut u.client_certificate);
            resolve(dir, &mut u.client_key);
            resolve(dir, &mut u.token_file);
            if let Some(exec) = &mut u.exec
                && exec.command.contains(std::path::MAIN_SEPARATOR)
                && Path::new(&exec.command).is_relative()
            {
                exec.command = dir.join(&exec.command).to_string_lossy().into_owned();
            }
        }
    }

    /// Merges `other` into `self` by kubectl's rules: the first file to define a name keeps
    /// it, and `current-context` comes from the first file that sets one.
    #[must_use]
    pub fn merge(mut self, other: Self) -> Self {
        if self.current_context.as_deref().is_none_or(str::is_empty) {
            self.current_context = other.current_context;
        }
        for c in other.clusters {
            if !self.clusters.iter().any(|x| x.name == c.name) {
                self.clusters.push(c);
            }
        }
        for u in other.users {
            if !self.users.iter().any(|x| x.name == u.name) {
                self.users.push(u);
            }
        }
        for c in other.contexts {
            if !self.contexts.iter().any(|x| x.name == c.name) {
                self.contexts.push(c);
            }
        }
        self
    }

    /// Reads and merges the files `options` name (see [`KubeconfigOptions::paths`]).
    ///
    /// # Errors
    ///
    /// [`Error::NoKubeconfig`] when no file exists; any error of [`read`](Self::read).
    pub fn load(options: &KubeconfigOptions) -> Result<Self> {
        let (paths, must_exist) = match &options.paths {
            Some(paths) => (paths.clone(), true),
            None => (default_paths(), false),
        };
        let mut merged: Option<Self> = None;
        for path in &paths {
            if !must_exist && !path.exists() {
                continue;
            }
            let kc = Self::read(path)?;
            merged = Some(match merged {
                Some(m) => m.merge(kc),
                None => kc,
            });
        }
        merged.ok_or_else(|| Error::NoKubeconfig {
            searched: if paths.is_empty() {
                "nothing: KUBECONFIG and HOME are unset".to_owned()
            } else {
                paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        })
    }
}
