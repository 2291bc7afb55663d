//! [`wait_for_cache_sync`]: wait until several informers (or registrations) have synced.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How often the sync state is checked.
const POLL: Duration = Duration::from_millis(100);

/// Waits until every check returns true; `false` if `cancel` fires first (client-go's
/// `WaitForCacheSync`).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use kcache_informer::{SharedIndexInformer, wait_for_cache_sync};
/// use kcache_store::DynamicObject;
/// use kcache_testing::FakeListerWatcher;
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let pods = SharedIndexInformer::<DynamicObject>::new(
///     Arc::new(FakeListerWatcher::new()),
///     Duration::ZERO,
/// );
/// let cancel = CancellationToken::new();
/// // Nothing runs the informer here, so it never syncs; cancelling ends the wait.
/// cancel.cancel();
/// assert!(!wait_for_cache_sync(&cancel, &[&|| pods.has_synced()]).await);
/// # }
/// ```
pub async fn wait_for_cache_sync(
    cancel: &CancellationToken,
    checks: &[&(dyn Fn() -> bool + Sync)],
) -> bool {
    loop {
        if checks.iter().all(|c| c()) {
            return true;
        }
        tokio::select! {
            () = cancel.cancelled() => return false,
            () = tokio::time::sleep(POLL) => {}
        }
    }
}
