//! A counting allocator: bytes in use now and at the peak, and blocks in use now. Only `kcache-bench-counted` makes it
//! its global allocator; in every other process of the bench the counters stay at zero and the
//! allocator is the plain one (the system's, or mimalloc with `--features mimalloc`).

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicIsize, Ordering};

#[cfg(feature = "mimalloc")]
use mimalloc::MiMalloc as Inner;
/// The allocator underneath the counters: the system's, or mimalloc with `--features mimalloc`.
#[cfg(not(feature = "mimalloc"))]
use std::alloc::System as Inner;

/// Wraps the allocator and counts live bytes (the sizes asked for, not the allocator's own
/// overhead).
#[derive(Debug)]
pub struct Counting;

// Signed: a reading is a difference of two levels.
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static BLOCKS: AtomicIsize = AtomicIsize::new(0);

fn allocated() {
    BLOCKS.fetch_add(1, Ordering::Relaxed);
}

fn freed() {
    BLOCKS.fetch_sub(1, Ordering::Relaxed);
}

fn grew(size: usize) {
    let size = isize::try_from(size).unwrap_or(isize::MAX);
    let now = CURRENT.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrank(size: usize) {
    CURRENT.fetch_sub(
        isize::try_from(size).unwrap_or(isize::MAX),
        Ordering::Relaxed,
    );
}

// SAFETY: every call is forwarded unchanged to the inner allocator; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { Inner.alloc(layout) };
        if !p.is_null() {
            allocated();
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { Inner.alloc_zeroed(layout) };
        if !p.is_null() {
            allocated();
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { Inner.dealloc(ptr, layout) };
        freed();
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

/// Bytes allocated and not yet freed.
pub fn current() -> isize {
    CURRENT.load(Ordering::Relaxed)
}

/// Blocks allocated and not yet freed (a reallocation keeps its block).
pub fn blocks() -> isize {
    BLOCKS.load(Ordering::Relaxed)
}

/// Starts a new peak measurement from the current level.
pub fn reset_peak() {
    PEAK.store(current(), Ordering::Relaxed);
}

/// The highest level since the last [`reset_peak`].
pub fn peak() -> isize {
    PEAK.load(Ordering::Relaxed)
}
