//! The `reason`s and causes of a [`Status`](crate::Status) that the reflector's rules key on
//! (client-go's `metav1.StatusReason` values), so decisions never depend on message text.

/// The reason of a compacted (too old) resource version or an expired continue token.
pub const EXPIRED: &str = "Expired";
/// The legacy (Kubernetes 1.17 and older) form of [`EXPIRED`].
pub const GONE: &str = "Gone";
/// The reason of a throttled request (429).
pub const TOO_MANY_REQUESTS: &str = "TooManyRequests";
/// The reason of a server-side timeout (504), also used for a too large resource version.
pub const TIMEOUT: &str = "Timeout";
/// The reason of a 500 answer.
pub const INTERNAL_ERROR: &str = "InternalError";
/// The reason of invalid request options (422).
pub const INVALID: &str = "Invalid";
/// The reason of a bad request (400).
pub const BAD_REQUEST: &str = "BadRequest";
/// The reason of a missing object (404), or of a path the server does not serve.
pub const NOT_FOUND: &str = "NotFound";
/// The reason of a write that lost to another (409): a stale resource version or a failed
/// precondition.
pub const CONFLICT: &str = "Conflict";
/// The reason of a create whose name is taken (409).
pub const ALREADY_EXISTS: &str = "AlreadyExists";
/// The cause type of a resource version newer than the server has seen.
pub const CAUSE_RESOURCE_VERSION_TOO_LARGE: &str = "ResourceVersionTooLarge";
/// The message text that marks a too large resource version.
pub const TOO_LARGE_RESOURCE_VERSION_MESSAGE: &str = "Too large resource version";
