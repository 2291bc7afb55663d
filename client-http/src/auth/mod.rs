//! Request authentication at run time: the `Authorization` header of each request, refreshed
//! from token files and exec plugins; `secret` (credentials that never print) and
//! `impersonate` (the `Impersonate-*` headers) beside it.

pub(crate) mod impersonate;
pub(crate) mod secret;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use http::HeaderValue;

use crate::config::{ExecConfig, run_exec};
use crate::transport::tls::{CertSlot, certified_key};
use crate::{Auth, Config, Error, Result, Secret};

/// The credential for one request: the header (if any) and the generation it belongs to, so a
/// 401 can invalidate exactly that credential.
#[derive(Debug, Clone)]
pub(crate) struct Credential {
    pub(crate) header: Option<HeaderValue>,
    pub(crate) generation: u64,
}

/// Produces credentials for requests.
#[derive(Debug)]
pub(crate) enum Authenticator {
    None,
    Static(HeaderValue),
    TokenFile(TokenFile),
    Exec(ExecAuth),
}

/// A sensitive header value (never logged by `http`'s `Debug`, never indexed by HPACK).
fn header(value: &str, what: &str) -> Result<HeaderValue> {
    let mut v = HeaderValue::from_str(value)
        .map_err(|_| Error::invalid(what, "contains characters not allowed in an HTTP header"))?;
    v.set_sensitive(true);
    Ok(v)
}

fn bearer(token: &Secret) -> Result<HeaderValue> {
    header(&format!("Bearer {}", token.expose().trim()), "token")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Authenticator {
    pub(crate) fn new(config: &Config, slot: Arc<CertSlot>) -> Result<Self> {
        Ok(match &config.auth {
            Auth::None => Self::None,
            Auth::Bearer(token) => Self::Static(bearer(token)?),
            Auth::Basic { username, password } => {
                let raw = format!("{username}:{}", password.expose());
                let encoded = base64::engine::general_purpose::STANDARD.encode(raw);
                Self::Static(header(&format!("Basic {encoded}"), "username/password")?)
            }
            Auth::TokenFile { path, fallback } => Self::TokenFile(TokenFile {
                path: path.clone(),
                fallback: fallback.as_ref().map(bearer).transpose()?,
                refresh: config.token_file_refresh,
                state: Mutex::new(FileState::default()),
            }),
            Auth::Exec(exec) => Self::Exec(ExecAuth {
                config: (**exec).clone(),
                slot,
                state: Mutex::new(ExecState::default()),
                run_lock: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// The credential to send now.
    pub(crate) async fn credential(&self) -> Result<Credential> {
        match self {
            Self::None => Ok(Credential {
                header: None,
                generation: 0,
            }),
            Self::Static(h) => Ok(Credential {
                header: Some(h.clone()),
                generation: 0,
            }),
            Self::TokenFile(f) => f.credential(),
            Self::Exec(e) => e.credential().await,
        }
    }

    /// A request with the credential of `generation` got a 401: drop it if it is still the
    /// current one. Whether retrying once can help.
    pub(crate) fn unauthorized(&self, generation: u64) -> bool {
        match self {
            Self::None | Self::Static(_) => false,
            Self::TokenFile(f) => {
                let mut s = lock(&f.state);
                if s.generation == generation {
                    s.read_at = None;
                }
                true
            }
            Self::Exec(e) => {
                let mut s = lock(&e.state);
                if s.cached
                    .as_ref()
                    .is_some_and(|c| c.generation == generation)
                {
                    tracing::debug!(generation, "401: the exec credential will be renewed");
                    s.cached = None;
                }
                true
            }
        }
    }
}

/// A token file, re-read when older than `refresh` or after a 401.
#[derive(Debug)]
pub(crate) struct TokenFile {
    path: PathBuf,
    fallback: Option<HeaderValue>,
    refresh: Duration,
    state: Mutex<FileState>,
}

#[derive(Debug, Default)]
struct FileState {
    header: Option<HeaderValue>,
    read_at: Option<Instant>,
    generation: u64,
}

impl TokenFile {
    fn credential(&self) -> Result<Credential> {
        let mut s = lock(&self.state);
        if s.read_at.is_none_or(|at| at.elapsed() >= self.refresh) {
            // A small file; client-go reads it inline as well.
            match std::fs::read_to_string(&self.path) {
                Ok(token) if !token.trim().is_empty() => {
                    let h = bearer(&Secret::new(token))?;
                    if s.header.as_ref() != Some(&h) {
                        s.generation += 1;
                        s.header = Some(h);
                    }
                }
                Ok(_) => {
                    tracing::warn!(path = %self.path.display(), "token file is empty; keeping the last token");
                }
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), error = %e, "could not re-read the token file; keeping the last token");
                }
            }
            s.read_at = Some(Instant::now());
        }
        if let Some(header) = s.header.clone().or_else(|| self.fallback.clone()) {
            Ok(Credential {
                header: Some(header),
                generation: s.generation,
            })
        } else {
            // Retry the read on the next request.
            s.read_at = None;
            Err(Error::read_file(
                "tokenFile",
                self.path.clone(),
                std::io::Error::other("no token could be read from it"),
            ))
        }
    }
}

/// An exec plugin's credential, cached until it expires or a 401 invalidates it.
#[derive(Debug)]
pub(crate) struct ExecAuth {
    config: ExecConfig,
    slot: Arc<CertSlot>,
    state: Mutex<ExecState>,
    /// One plugin run at a time; the others wait for its result.
    run_lock: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct ExecState {
    cached: Option<Cached>,
    generations: u64,
}

#[derive(Debug, Clone)]
struct Cached {
    header: Option<HeaderValue>,
    expires: Option<SystemTime>,
    generation: u64,
}

impl ExecAuth {
    fn fresh(&self) -> Option<Credential> {
        let s = lock(&self.state);
        let c = s.cached.as_ref()?;
        if c.expires.is_some_and(|e| SystemTime::now() >= e) {
            return None;
        }
        Some(Credential {
            header: c.header.clone(),
            generation: c.generation,
        })
    }

    async fn credential(&self) -> Result<Credential> {
        if let Some(c) = self.fresh() {
            return Ok(c);
        }
        // An async mutex, held across the plugin run on purpose: concurrent requests wait for
        // one run instead of starting their own. The std mutex is never held across an await.
        let _running = self.run_lock.lock().await;
        if let Some(c) = self.fresh() {
            return Ok(c);
        }
        tracing::debug!(command = %self.config.command, "running the exec credential plugin");
        let out = run_exec(&self.config).await?;
        if let Some(identity) = &out.identity {
            self.slot.set(certified_key(identity)?);
        }
        let header = out.token.as_ref().map(bearer).transpose()?;
        let mut s = lock(&self.state);
        s.generations += 1;
        let cached = Cached {
            header,
            expires: out.expires,
            generation: s.generations,
        };
        s.cached = Some(cached.clone());
        Ok(Credential {
            header: cached.header,
            generation: cached.generation,
        })
    }
}
