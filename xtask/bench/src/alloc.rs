//! A counting global allocator: bytes in use now and at the peak, for memory figures.

use std::alloc::{GlobalAlloc, Layout};

#[cfg(feature = "mimalloc")]
use mimalloc::MiMalloc as Inner;
/// The allocator underneath the counters: the system's, or mimalloc with `--features mimalloc`.
#[cfg(not(feature = "mimalloc"))]
use std::alloc::System as Inner;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// Wraps the allocator and counts live bytes.
pub struct Counting;

// Signed: memory allocated while counting was off may be freed while it is on.
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static ON: AtomicBool = AtomicBool::new(true);

/// Turns counting on or off. Counting makes every allocation touch shared counters, which
/// slows multi-threaded decoding down: throughput is measured with it off.
pub fn set_counting(on: bool) {
    ON.store(on, Ordering::SeqCst);
}

fn grew(size: usize) {
    if ON.load(Ordering::Relaxed) {
        let size = isize::try_from(size).unwrap_or(isize::MAX);
        let now = CURRENT.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

fn shrank(size: usize) {
    if ON.load(Ordering::Relaxed) {
        CURRENT.fetch_sub(
            isize::try_from(size).unwrap_or(isize::MAX),
            Ordering::Relaxed,
        );
    }
}

// SAFETY: every call is forwarded unchanged to the inner allocator; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { Inner.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { Inner.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { Inner.dealloc(ptr, layout) };
        shrank(layout.size());
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { Inner.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

/// Bytes allocated and not yet freed (while counting was on).
pub fn current() -> isize {
    CURRENT.load(Ordering::Relaxed)
}

/// Starts a new peak measurement from the current level.
pub fn reset_peak() {
    PEAK.store(current(), Ordering::Relaxed);
}

/// The highest level since the last [`reset_peak`].
pub fn peak() -> isize {
    PEAK.load(Ordering::Relaxed)
}
