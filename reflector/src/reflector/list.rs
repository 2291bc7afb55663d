//! The reflector's list: client-go's pager (continue tokens, the expired-continue fallback,
//! bounded pages) and the replace that leaves out objects it cannot key.

use std::collections::HashSet;
use std::sync::Arc;

use kcache_store::Object;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{DEFAULT_PAGE_SIZE, Reflector, cancellable};
use crate::{DecodeError, Error, ErrorChain, EventType, ListOptions, ObjectList, ObjectRef};

impl<T: Object> Reflector<T> {
    /// Lists into the store. `Ok(false)` when cancelled. Counted in the reflector's
    /// [metrics](crate::metrics): started, failed, and how long a successful one took.
    pub(super) async fn list(&self, cancel: &CancellationToken) -> Result<bool, Error> {
        let started = Instant::now();
        self.list_started();
        let listed = self.list_into_store(cancel).await;
        match &listed {
            Ok(true) => self.filled(started),
            Ok(false) => {}
            Err(_) => self.metrics.list_errors.increment(1),
        }
        listed
    }

    /// [`list`](Self::list) without its metrics.
    async fn list_into_store(&self, cancel: &CancellationToken) -> Result<bool, Error> {
        let rv = self.relist_resource_version();
        let page_size = match self.page_size {
            Some(n) => n,
            None if self.state().paginated_result => DEFAULT_PAGE_SIZE,
            None if !rv.is_empty() && rv != "0" => 0,
            None => DEFAULT_PAGE_SIZE,
        };
        let opts = ListOptions {
            resource_version: rv.clone(),
            ..self.options()
        };
        let Some(result) = cancellable(cancel, self.pager_list(opts, page_size)).await else {
            return Ok(false);
        };
        let (list, paginated) = match result {
            Err(e) if e.is_gone() || e.is_too_large_rv() => {
                tracing::debug!(error = %ErrorChain(&e), "relisting at the latest version");
                self.set_rv_unavailable(true);
                let opts = ListOptions {
                    resource_version: self.relist_resource_version(),
                    ..self.options()
                };
                match cancellable(cancel, self.pager_list(opts, page_size)).await {
                    None => return Ok(false),
                    Some(r) => r?,
                }
            }
            r => r?,
        };
        {
            let mut s = self.state();
            if rv == "0" && paginated {
                s.paginated_result = true;
            }
            s.rv_unavailable = false;
        }
        for d in &list.skipped {
            self.reporter.decode(d);
        }
        let resource_version = list.resource_version.unwrap_or_default();
        self.store
            .replace_transformed(list.items, &resource_version)
            .map_err(Error::Store)?;
        self.set_last_sync_rv(&resource_version);
        Ok(true)
    }

    /// Adds a page's objects to `into`, each in the `Arc` the store will keep (after the
    /// reflector's transform and the store's own), so that the objects of earlier pages are not held twice while later ones
    /// arrive. Objects without a name (no key can be made for them) go to `skipped`. The
    /// list's resource version is its first page's, as in client-go's pager.
    ///
    /// # Errors
    ///
    /// [`Error::Limit`] when the list now holds more than `max_list_objects` objects.
    fn take_page(&self, page: ObjectList<T>, into: &mut Listed<T>) -> Result<(), Error> {
        let total = (into.items.len() + into.skipped.len())
            .saturating_add(page.items.len() + page.skipped.len());
        if total > self.max_list_objects {
            return Err(Error::Limit(format!(
                "the list brought more than {} objects (the reflector's max_list_objects)",
                self.max_list_objects
            )));
        }
        into.resource_version.get_or_insert(page.resource_version);
        into.items.reserve(page.items.len());
        for o in page.items {
            if has_name(&o) {
                into.items
                    .push(self.store.transform_incoming(self.prepare(o)));
            } else {
                let i = into.items.len() + into.skipped.len();
                into.skipped
                    .push(nameless(format!("list item {i}"), &o, None));
            }
        }
        into.skipped.extend(page.skipped);
        Ok(())
    }

    /// client-go's pager: follows continue tokens, clears the RV on later pages, and after an
    /// expired continue token lists everything at once at the requested RV. Also says whether
    /// the result came in pages.
    async fn pager_list(
        &self,
        mut opts: ListOptions,
        page_size: i64,
    ) -> Result<(Listed<T>, bool), Error> {
        if opts.limit.unwrap_or(0) == 0 {
            opts.limit = (page_size > 0).then_some(page_size);
        }
        let requested_rv = opts.resource_version.clone();
        let requested_rvm = opts.resource_version_match;
        let mut acc = Listed::default();
        let mut paginated = false;
        let mut tokens = HashSet::new();
        loop {
            if tokens.len() >= self.max_list_pages {
                return Err(Error::Limit(format!(
                    "the list did not end within {} pages (the reflector's max_list_pages)",
                    self.max_list_pages
                )));
            }
            let page = match self.lw.list(&opts).await {
                Ok(page) => page,
                Err(e) if e.is_expired() && !opts.continue_token.is_empty() => {
                    tracing::debug!("continue token expired, listing everything at once");
                    opts.limit = None;
                    opts.continue_token.clear();
                    opts.resource_version = requested_rv;
                    opts.resource_version_match = requested_rvm;
                    let mut all = Listed::default();
                    // The pages taken so far are dropped first: this list brings them again.
                    drop(acc);
                    self.take_page(self.lw.list(&opts).await?, &mut all)?;
                    return Ok((all, paginated));
                }
                Err(e) => return Err(e),
            };
            let next = page.next_page_token().map(str::to_owned);
            self.take_page(page, &mut acc)?;
            match next {
                None => return Ok((acc, paginated)),
                Some(token) => {
                    if !tokens.insert(token.clone()) {
                        return Err(Error::Limit(format!(
                            "the server repeated the continue token of an earlier page (after {} pages)",
                            tokens.len()
                        )));
                    }
                    opts.continue_token = token;
                    opts.resource_version.clear();
                    opts.resource_version_match = None;
                    paginated = true;
                }
            }
        }
    }
}

/// A whole list as the pager gathered it: the objects in their `Arc`s, the resource version of
/// its first page (`None` before one came), and the items left out (undecodable or nameless).
struct Listed<T> {
    items: Vec<Arc<T>>,
    resource_version: Option<String>,
    skipped: Vec<DecodeError>,
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            resource_version: None,
            skipped: Vec::new(),
        }
    }
}

/// Whether `obj` has a name (without one no key can be made).
pub(super) fn has_name<T: Object>(obj: &T) -> bool {
    obj.name().is_some_and(|n| !n.is_empty())
}

/// The report of an object without a name.
pub(super) fn nameless<T: Object>(
    context: impl Into<String>,
    obj: &T,
    event_type: Option<EventType>,
) -> DecodeError {
    DecodeError::new(context, "metadata.name is missing or empty")
        .with_event_type(event_type)
        .with_path(Some("metadata.name".to_owned()))
        .with_object(Some(ObjectRef {
            namespace: obj.namespace().map(str::to_owned),
            resource_version: obj.resource_version().map(str::to_owned),
            uid: obj.uid().map(str::to_owned),
            ..ObjectRef::default()
        }))
}
