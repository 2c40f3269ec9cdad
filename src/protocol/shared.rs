//! An immutable byte buffer shared by reference count: a pointer and the
//! length, the count the allocation's first 4 bytes, the bytes after it.
//! The length is kept beside the pointer so that `STRLEN`, or a range read
//! far into a long value, does not touch the allocation's first line. A long string value is one ([`crate::db::str_value`]),
//! and a read hands the same buffer to its reply ([`super::Reply::SharedBulk`]).
//!
//! A `Bytes` kept in a value costs more: a 32-byte handle (boxed, so that
//! the value stays 24 bytes) and, once shared with a reply, a separate
//! header with its count; here a 100-byte value is one 112-byte
//! allocation.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, Ordering};

const HEADER: usize = std::mem::size_of::<AtomicU32>();

/// See the module docs. **Invariant:** `ptr` is a live allocation of
/// `layout(len)` starting with the count of the `SharedBytes` pointing at
/// it, then `len` initialized bytes.
pub struct SharedBytes {
    ptr: NonNull<AtomicU32>,
    len: usize,
}

// SAFETY: the bytes are never written after creation and the count is
// atomic, as in an `Arc<[u8]>`.
unsafe impl Send for SharedBytes {}
// SAFETY: as above.
unsafe impl Sync for SharedBytes {}

fn layout(len: usize) -> Layout {
    Layout::from_size_align(HEADER + len, std::mem::align_of::<AtomicU32>()).expect("a buffer's size fits a layout")
}

impl SharedBytes {
    /// A copy of `b`.
    pub fn copy_from(b: &[u8]) -> SharedBytes {
        let layout = layout(b.len());
        // SAFETY: a non-zero size (the header); the allocation holds the
        // header, aligned for it, and `len` bytes after it, written here
        // from a slice that cannot overlap a new allocation.
        unsafe {
            let p = alloc(layout);
            let Some(p) = NonNull::new(p) else { handle_alloc_error(layout) };
            p.as_ptr().cast::<AtomicU32>().write(AtomicU32::new(1));
            std::ptr::copy_nonoverlapping(b.as_ptr(), p.as_ptr().add(HEADER), b.len());
            SharedBytes { ptr: p.cast(), len: b.len() }
        }
    }

    #[inline]
    fn refs(&self) -> &AtomicU32 {
        // SAFETY: a live allocation starting with its count.
        unsafe { self.ptr.as_ref() }
    }

    /// The bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: `len` initialized bytes follow the count.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<u8>().add(HEADER), self.len) }
    }
}

impl Clone for SharedBytes {
    #[inline]
    fn clone(&self) -> SharedBytes {
        // As `Arc`: a new reference needs no ordering with other accesses.
        let old = self.refs().fetch_add(1, Ordering::Relaxed);
        if old > u32::MAX / 2 {
            // Billions of live replies of one value: never in practice, and
            // wrapping the count would free a buffer still in use.
            std::process::abort();
        }
        SharedBytes { ptr: self.ptr, len: self.len }
    }
}

impl Drop for SharedBytes {
    fn drop(&mut self) {
        if self.refs().fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // The last reference: see every other owner's accesses first.
        fence(Ordering::Acquire);
        // SAFETY: allocated by `copy_from` with this layout; no other
        // reference is left.
        unsafe { dealloc(self.ptr.as_ptr().cast(), layout(self.len)) }
    }
}

impl Deref for SharedBytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for SharedBytes {
    fn eq(&self, other: &SharedBytes) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for SharedBytes {}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&bytes::Bytes::copy_from_slice(self), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_until_the_last_one_goes() {
        assert_eq!(std::mem::size_of::<SharedBytes>(), 16);
        assert_eq!(std::mem::size_of::<Option<SharedBytes>>(), 16);
        for len in [0, 1, 55, 100, 4096, 70_000] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 13) as u8).collect();
            let a = SharedBytes::copy_from(&bytes);
            assert_eq!(&a[..], &bytes[..]);
            let b = a.clone();
            assert_eq!(a.ptr, b.ptr, "one buffer");
            assert_eq!(a.refs().load(Ordering::Relaxed), 2);
            drop(a);
            assert_eq!(&b[..], &bytes[..]);
            // Across threads, as a reply written by another task.
            let c = b.clone();
            std::thread::spawn(move || assert_eq!(c.len(), len)).join().expect("thread");
            assert_eq!(b.refs().load(Ordering::Relaxed), 1);
        }
    }
}
