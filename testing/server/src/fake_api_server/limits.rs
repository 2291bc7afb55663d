//! The size limits of kube-apiserver that the fake server keeps, so that a request refused
//! there for its size is refused here too, and no request, however small, makes the server
//! build something huge while it holds its state's lock.
//!
//! - A request body is at most [`MAX_BODY`] (kube-apiserver's `MaxRequestBodyBytes`, 3 MiB);
//!   over it, 413.
//! - A JSON patch has at most [`MAX_JSON_PATCH_OPERATIONS`] operations (413 beyond), and its
//!   `copy` operations copy at most [`MAX_JSON_PATCH_COPY`] bytes of JSON in all (422 beyond,
//!   `JSONPatchMaxCopyBytes`): a `copy` of an object into its own child doubles the document,
//!   so some forty of them in a small body would otherwise need terabytes.
//! - A patched object whose JSON is over [`MAX_OBJECT`] is not written (413), as the real
//!   server's storage refuses it.

/// Largest request body accepted (POST, PUT, PATCH, DELETE): kube-apiserver's 3 MiB.
pub(crate) const MAX_BODY: usize = 3 << 20;

/// Most operations in one JSON patch, as kube-apiserver allows.
pub(crate) const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Most bytes of JSON the `copy` operations of one JSON patch may copy together (the body
/// limit, as kube-apiserver sets it).
pub(crate) const MAX_JSON_PATCH_COPY: usize = MAX_BODY;

/// Largest object a patch may make, in bytes of JSON (the body limit: an object a client could
/// not send whole is not made by patching either).
pub(crate) const MAX_OBJECT: usize = MAX_BODY;
