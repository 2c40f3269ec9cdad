//! How much memory the server uses: `used_memory` in `INFO memory`, and
//! what `maxmemory` is compared with.
//!
//! Like Redis's `zmalloc_used_memory()`, the figure is the allocator's: bytes
//! handed out and not yet freed (not RSS, which lags behind frees and counts
//! code and stacks). As Redis's, it counts what each allocation really takes
//! — the allocator's size class (`malloc_usable_size`), not the size asked
//! for — so a 36-byte buffer counts 48 under jemalloc, on both servers.
//! Where it comes from:
//! * [`CountingAlloc`] wrapped around the global allocator — the `rlockd`
//!   binary wraps jemalloc with it; a program embedding the server may do
//!   the same for exact figures (`#[global_allocator] static A:
//!   rlockd::memory::CountingAlloc<std::alloc::System> = CountingAlloc(std::alloc::System);`);
//!   the allocator's [`SizeClasses`] say what a request really takes;
//! * otherwise glibc's own accounting (`mallinfo2`) of the default allocator;
//! * otherwise (another libc) the resident set size.
//!
//! The figure is the process's: servers started in one process share it.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

static ALLOCATED: AtomicIsize = AtomicIsize::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

/// A global allocator that counts the bytes it has handed out, by the
/// wrapped allocator's [`SizeClasses`].
pub struct CountingAlloc<A>(pub A);

/// What an allocator hands out for a request: the bytes
/// `malloc_usable_size` reports for it.
pub trait SizeClasses {
    /// The bytes the live allocation `ptr` of `layout` takes.
    ///
    /// # Safety
    /// `ptr` is a live allocation of this allocator made with `layout`.
    unsafe fn usable(ptr: *mut u8, layout: Layout) -> usize;
}

/// jemalloc 5's size classes with a 16-byte quantum (x86-64, aarch64):
/// 8, then multiples of 16 to 128, then four classes per doubling
/// (160, 192, 224, 256, 320, …) all the way up, large sizes included.
#[inline]
pub fn jemalloc_class(size: usize) -> usize {
    if size <= 8 {
        return 8;
    }
    if size <= 128 {
        return (size + 15) & !15;
    }
    let lg = usize::BITS - 1 - (size - 1).leading_zeros();
    let step = 1usize << (lg - 2);
    (size + step - 1) & !(step - 1)
}

#[cfg(feature = "jemalloc")]
impl SizeClasses for tikv_jemallocator::Jemalloc {
    /// Computed from the layout alone, in a few instructions (asking
    /// jemalloc costs a call and a lookup on every allocation and free).
    #[inline]
    unsafe fn usable(_: *mut u8, layout: Layout) -> usize {
        // Over-aligned requests take a size that is a multiple of the
        // alignment.
        jemalloc_class(layout.size().next_multiple_of(layout.align()))
    }
}

impl SizeClasses for std::alloc::System {
    /// glibc's `malloc_usable_size` (a chunk taken from a free list can be
    /// larger than the request's own size class); elsewhere, the request.
    #[inline]
    unsafe fn usable(ptr: *mut u8, layout: Layout) -> usize {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            let _ = layout;
            // SAFETY: `ptr` is a live allocation of the system allocator.
            unsafe { libc::malloc_usable_size(ptr.cast()) }
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        {
            let _ = ptr;
            layout.size()
        }
    }
}

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
unsafe impl<A: GlobalAlloc + SizeClasses> GlobalAlloc for CountingAlloc<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            // SAFETY: just allocated with `layout`.
            Self::add(unsafe { A::usable(p, layout) } as isize);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            // SAFETY: just allocated with `layout`.
            Self::add(unsafe { A::usable(p, layout) } as isize);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller guarantees `ptr` is live with `layout`.
        let size = unsafe { A::usable(ptr, layout) };
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.dealloc(ptr, layout) };
        Self::add(-(size as isize));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `ptr` is live with `layout`.
        let old = unsafe { A::usable(ptr, layout) };
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // SAFETY: the caller guarantees `new_size` is valid for the
            // alignment (`GlobalAlloc::realloc`); `p` is live with it.
            let new = unsafe { A::usable(p, Layout::from_size_align_unchecked(new_size, layout.align())) };
            Self::add(new as isize - old as isize);
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
    use super::*;

    /// The size classes counted are the ones jemalloc hands out: for every
    /// size to 64 KiB and a sample of larger ones, what
    /// `malloc_usable_size` reports for a real allocation.
    #[cfg(feature = "jemalloc")]
    #[test]
    fn jemalloc_classes_are_jemallocs() {
        use tikv_jemallocator::Jemalloc;
        let sizes =
            (1..=65536).chain((17..27).flat_map(|lg| [(1usize << lg) - 1, 1 << lg, (1 << lg) + 1, 3 << (lg - 1)]));
        for size in sizes {
            for align in [1, 8, 16, 64] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; freed with the same layout.
                let real = unsafe {
                    let p = Jemalloc.alloc(layout);
                    assert!(!p.is_null());
                    let n = tikv_jemallocator::usable_size(p);
                    Jemalloc.dealloc(p, layout);
                    n
                };
                // SAFETY: the pointer is not read.
                assert_eq!(
                    unsafe { <Jemalloc as SizeClasses>::usable(std::ptr::null_mut(), layout) },
                    real,
                    "size {size} align {align}"
                );
            }
        }
    }

    #[test]
    fn used_memory_follows_allocations() {
        let before = super::used_memory();
        let big = std::hint::black_box(vec![1u8; 64 << 20]);
        let during = super::used_memory();
        assert!(during >= before + (60 << 20), "{before} -> {during}");
        drop(big);
        let after = super::used_memory();
        assert!(after < during - (60 << 20), "{during} -> {after}");
    }
}
