//! [`LastResourceVersion`]: the resource version a store or a queue last reached, recorded
//! without allocating when it does not change.

/// The last resource version a store or a queue reached (what
/// [`Store::last_sync_resource_version`](crate::Store::last_sync_resource_version) reports).
///
/// A reflector reports the same version twice for most events: the store records it from the
/// object it writes, then [`Store::update_resource_version`](crate::Store::update_resource_version)
/// hands it over again. [`note`](Self::note) makes the second report free: an empty version
/// is ignored (it says nothing about how fresh the store is, as client-go's
/// `TestThreadSafeStoreRV`), an equal one is skipped, and a new one is copied into the buffer
/// already held, so recording versions allocates only when one outgrows the buffer.
///
/// ```
/// use kcache_store::LastResourceVersion;
///
/// let mut last = LastResourceVersion::new();
/// assert!(last.note("41"));
/// assert!(!last.note("41"), "the same version again: nothing to do");
/// assert!(!last.note(""), "an empty version is ignored");
/// assert!(last.is_new("42"));
/// assert!(last.note("42"));
/// assert_eq!(last.get(), Some("42"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LastResourceVersion(Option<String>);

impl LastResourceVersion {
    /// No version yet.
    #[must_use]
    pub const fn new() -> Self {
        Self(None)
    }

    /// The version, if one was recorded.
    #[must_use]
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// Whether [`note`](Self::note) would change it: `rv` is not empty and differs from the
    /// version held. Lets a caller behind a reader/writer lock look under the read lock and take
    /// the write lock only for a new version.
    #[must_use]
    pub fn is_new(&self, rv: &str) -> bool {
        !rv.is_empty() && self.get() != Some(rv)
    }

    /// Records `rv` unless it is empty or already held, reusing the buffer held; returns whether
    /// the version changed.
    pub fn note(&mut self, rv: &str) -> bool {
        if !self.is_new(rv) {
            return false;
        }
        match &mut self.0 {
            Some(held) => {
                held.clear();
                held.push_str(rv);
            }
            None => self.0 = Some(rv.to_owned()),
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_version_reuses_the_buffer() {
        let mut last = LastResourceVersion::new();
        assert!(!last.note(""));
        assert_eq!(last.get(), None);
        last.note("1000");
        let buffer = last.0.as_deref().map(str::as_ptr);
        assert!(last.note("1001"));
        assert_eq!(last.0.as_deref().map(str::as_ptr), buffer);
        assert_eq!(last.get(), Some("1001"));
    }
}
