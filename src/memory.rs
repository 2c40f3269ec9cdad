//! How much memory the server uses: `used_memory` in `INFO memory`, and
//! what `maxmemory` is compared with.
//!
//! Like Redis's `zmalloc_used_memory()`, the figure is the allocator's: bytes
//! handed out and not yet freed (not RSS, which lags behind frees and counts
//! code and stacks). Where it comes from:
//! * [`CountingAlloc`] wrapped around the global allocator — the `rlockd`
//!   binary wraps jemalloc with it; a program embedding the server may do
//!   the same for exact figures (`#[global_allocator] static A:
//!   rlockd::memory::CountingAlloc<std::alloc::System> = CountingAlloc(std::alloc::System);`);
//! * otherwise glibc's own accounting (`mallinfo2`) of the default allocator;
//! * otherwise (another libc) the resident set size.
//!
//! The figure is the process's: servers started in one process share it.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

static ALLOCATED: AtomicIsize = AtomicIsize::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

/// A global allocator that counts the bytes it has handed out.
pub struct CountingAlloc<A>(pub A);

impl<A> CountingAlloc<A> {
    #[inline]
    fn add(delta: isize) {
        ALLOCATED.fetch_add(delta, Ordering::Relaxed);
        if !COUNTING.load(Ordering::Relaxed) {
            COUNTING.store(true, Ordering::Relaxed);
        }
    }
}

// SAFETY: every call is forwarded unchanged to the wrapped allocator; the
// wrapper only adds to a counter.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAlloc<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            Self::add(layout.size() as isize);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            Self::add(layout.size() as isize);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.dealloc(ptr, layout) };
        Self::add(-(layout.size() as isize));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            Self::add(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Bytes allocated and not freed (see the module docs for the source).
pub fn used_memory() -> u64 {
    if COUNTING.load(Ordering::Relaxed) {
        return ALLOCATED.load(Ordering::Relaxed).max(0) as u64;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's statistics.
        let mi = unsafe { libc::mallinfo2() };
        (mi.uordblks + mi.hblkhd) as u64
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        rss()
    }
}

static PEAK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The highest `used` seen so far (including this one).
pub fn peak(used: u64) -> u64 {
    PEAK.fetch_max(used, Ordering::Relaxed).max(used)
}

/// Where [`used_memory`] comes from, for `INFO memory`.
pub fn source() -> &'static str {
    if COUNTING.load(Ordering::Relaxed) {
        "counted"
    } else if cfg!(all(target_os = "linux", target_env = "gnu")) {
        "mallinfo"
    } else {
        "rss"
    }
}

/// The process's resident set size in bytes (0 where unknown).
pub fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()))
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn used_memory_follows_allocations() {
        let before = super::used_memory();
        let big = vec![1u8; 64 << 20];
        let during = super::used_memory();
        assert!(during >= before + (60 << 20), "{before} -> {during}");
        drop(big);
        let after = super::used_memory();
        assert!(after < during - (60 << 20), "{during} -> {after}");
    }
}
