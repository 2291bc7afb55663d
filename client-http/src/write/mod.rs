//! Writes: [`ObjectClient`] (`object_client`) gets, creates, replaces, patches and deletes
//! single objects, and reads and writes their `status` and `scale` subresources
//! (`subresource`, the latter as a [`Scale`], `scale`); a patch is a [`Patch`] (`patch`), a
//! delete's preconditions are [`Preconditions`] (`preconditions`); [`finalizer`]
//! (`finalizer`) runs an operator's reconcile under a finalizer. The requests are built by
//! `transport::request` and the answers read by `decode::object`, with the lister-watchers'
//! transport, credentials and errors.
//!
//! [`ObjectClient`]: crate::ObjectClient
//! [`Patch`]: crate::Patch
//! [`Preconditions`]: crate::Preconditions
//! [`finalizer`]: crate::finalizer()
//! [`Scale`]: crate::Scale

pub(crate) mod finalizer;
pub(crate) mod object_client;
pub(crate) mod patch;
pub(crate) mod preconditions;
pub(crate) mod scale;
pub(crate) mod subresource;
