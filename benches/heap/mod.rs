//! A counting allocator for the heap figures the engine, strands and planner benches print: each
//! installs [`Counting`] as its global allocator, and it counts only inside [`counted`]
//! (outside, it is one relaxed load per allocation, so timings are not skewed).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Counts allocations, bytes allocated and live/peak bytes while [`COUNTING`] is set.
pub struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    ALLOCATED.fetch_add(by, Ordering::Relaxed);
    let live = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank(by: usize) {
    // Frees of blocks allocated before counting started may take LIVE below its start:
    // saturate instead of wrapping.
    let _ = LIVE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| {
        Some(l.saturating_sub(by))
    });
}

// SAFETY: every call forwards to the system allocator unchanged; the counters are plain
// atomics and never affect what is allocated.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            grew(layout.size());
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            shrank(layout.size());
        }
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// What one counted call cost: allocations, bytes allocated, peak live bytes above the
/// start, and the live bytes above the start when it returned (what its result holds).
#[allow(dead_code)] // each bench reads the figures it prints
pub struct Heap {
    pub allocations: usize,
    pub allocated: usize,
    pub peak: usize,
    pub held: usize,
}

pub fn counted<T>(f: impl FnOnce() -> T) -> (T, Heap) {
    ALLOCATIONS.store(0, Ordering::Relaxed);
    ALLOCATED.store(0, Ordering::Relaxed);
    LIVE.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::SeqCst);
    let out = f();
    COUNTING.store(false, Ordering::SeqCst);
    let heap = Heap {
        allocations: ALLOCATIONS.load(Ordering::Relaxed),
        allocated: ALLOCATED.load(Ordering::Relaxed),
        peak: PEAK.load(Ordering::Relaxed),
        held: LIVE.load(Ordering::Relaxed),
    };
    (out, heap)
}
