//! An owned byte buffer behind a thin pointer: 8 bytes where a
//! `Box<[u8]>` takes 16, its length kept in the allocation's first four
//! bytes. A packed hash holds its pairs in one ([`super::hash_value`]), so
//! that the hash fits 16 bytes and every stored value 24 ([`super::Value`]).
//!
//! The length header costs 4 bytes in the allocation, which the
//! allocator's 16-byte size classes mostly absorb (the 4-byte buffer of a
//! one-pair hash and its header share jemalloc's 8-byte class). An
//! allocation is always a whole size class, so a buffer edited in place
//! (a packed list's pushes and pops) calls the allocator only when its
//! length crosses a class. (Under the system allocator, an embedding
//! program's choice, the requests are rounded the same way.)

use std::alloc::{alloc, dealloc, handle_alloc_error, realloc, Layout};
use std::fmt;
use std::ops::{Deref, DerefMut, Range};
use std::ptr::NonNull;

use crate::memory::jemalloc_class;

/// See the module docs. **Invariant:** the pointer is [`EMPTY`]'s address
/// exactly when the length is 0; otherwise it is an allocation of
/// `layout(len)` holding `len` as a native-endian `u32`, then the bytes.
pub struct ThinBuf(NonNull<u8>);

/// The header every empty buffer points at (never written, never freed).
static EMPTY: u32 = 0;

const HEADER: usize = std::mem::size_of::<u32>();

// SAFETY: a `ThinBuf` owns its bytes as a `Box<[u8]>` does.
unsafe impl Send for ThinBuf {}
// SAFETY: shared access only reads.
unsafe impl Sync for ThinBuf {}

/// The allocation of a buffer of `len` bytes: its header and the bytes,
/// rounded up to the allocator's size class ([`jemalloc_class`]), which
/// the allocator would hand out anyway. Every length of one class has the
/// same layout, so an edit that stays within the class keeps its
/// allocation without asking the allocator (`splice`).
#[inline]
fn layout(len: usize) -> Layout {
    Layout::from_size_align(jemalloc_class(HEADER + len), std::mem::align_of::<u32>())
        .expect("a buffer's size fits a layout")
}

impl ThinBuf {
    /// A copy of `bytes` (at most `u32::MAX` of them).
    pub fn from_slice(bytes: &[u8]) -> ThinBuf {
        ThinBuf::concat(&[bytes])
    }

    /// `parts` end to end, in one allocation (no vector first).
    pub fn concat(parts: &[&[u8]]) -> ThinBuf {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len == 0 {
            return ThinBuf::default();
        }
        let n = u32::try_from(len).expect("a thin buffer holds at most 4 GiB");
        let layout = layout(len);
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { alloc(layout) };
        let Some(p) = NonNull::new(p) else { handle_alloc_error(layout) };
        // SAFETY: the allocation holds the header, aligned for a `u32`,
        // and `len` bytes after it, which the parts fill exactly; no part
        // can overlap a new allocation.
        unsafe {
            p.as_ptr().cast::<u32>().write(n);
            let mut at = p.as_ptr().add(HEADER);
            for part in parts {
                // Empty parts (a form's absent section) cost no call.
                if !part.is_empty() {
                    std::ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
                    at = at.add(part.len());
                }
            }
        }
        ThinBuf(p)
    }

    /// Replaces the bytes in `range` with `parts` end to end, editing the
    /// allocation in place: the tail moves once, and the allocation is
    /// resized (`realloc`) only when the length leaves its size class (a
    /// packed list's push or pop).
    pub fn splice(&mut self, range: Range<usize>, parts: &[&[u8]]) {
        let old = self.stored_len();
        assert!(range.start <= range.end && range.end <= old, "splice {range:?} of {old} bytes");
        let ins: usize = parts.iter().map(|p| p.len()).sum();
        let new = old - (range.end - range.start) + ins;
        if old == 0 || new == 0 {
            // From the shared empty header (the range is then empty, so the
            // parts are the whole), or to it: nothing to resize.
            *self = ThinBuf::concat(parts);
            return;
        }
        let n = u32::try_from(new).expect("a thin buffer holds at most 4 GiB");
        let tail = old - range.end;
        let resize = |p: *mut u8| {
            if layout(new) == layout(old) {
                return NonNull::new(p).expect("an allocation");
            }
            // SAFETY: `p` was allocated with `layout(old)`; the new size
            // is non-zero and fits a layout (checked by `layout`).
            let q = unsafe { realloc(p, layout(old), layout(new).size()) };
            NonNull::new(q).unwrap_or_else(|| handle_alloc_error(layout(new)))
        };
        // SAFETY: `old` and `new` are non-zero, so the pointer is this
        // buffer's own allocation. Growing, the allocation takes `new`
        // bytes before anything moves; shrinking, the tail moves first and
        // the allocation is cut after. The tail's move stays inside the
        // larger of the two sizes, and `parts` (shared borrows while
        // `self` is borrowed mutably) cannot overlap the buffer.
        unsafe {
            if new > old {
                self.0 = resize(self.0.as_ptr());
            }
            let data = self.0.as_ptr().add(HEADER);
            std::ptr::copy(data.add(range.end), data.add(range.start + ins), tail);
            let mut at = data.add(range.start);
            for part in parts {
                // A packed list's length bytes are stored, not copied by a
                // call; empty parts cost nothing.
                match part.len() {
                    0 => {}
                    1 => at.write(part[0]),
                    len => std::ptr::copy_nonoverlapping(part.as_ptr(), at, len),
                }
                at = at.add(part.len());
            }
            if new < old {
                self.0 = resize(self.0.as_ptr());
            }
            self.0.as_ptr().cast::<u32>().write(n);
        }
    }

    /// The length in the header (the slice's, through `Deref`).
    #[inline]
    fn stored_len(&self) -> usize {
        // SAFETY: the pointer is a live header (an allocation's or EMPTY).
        unsafe { self.0.as_ptr().cast::<u32>().read() as usize }
    }
}

impl Default for ThinBuf {
    fn default() -> ThinBuf {
        ThinBuf(NonNull::from(&EMPTY).cast())
    }
}

impl Deref for ThinBuf {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` initialized bytes follow the header (none for
        // EMPTY, whose pointer is still non-null and aligned).
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(HEADER), self.stored_len()) }
    }
}

impl DerefMut for ThinBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        let len = self.stored_len();
        if len == 0 {
            // EMPTY is never handed out mutably.
            return &mut [];
        }
        // SAFETY: an allocation this buffer owns, `len` bytes after the
        // header.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_ptr().add(HEADER), len) }
    }
}

impl Drop for ThinBuf {
    fn drop(&mut self) {
        let len = self.stored_len();
        if len > 0 {
            // SAFETY: allocated by `from_slice` with this layout.
            unsafe { dealloc(self.0.as_ptr(), layout(len)) }
        }
    }
}

impl Clone for ThinBuf {
    fn clone(&self) -> ThinBuf {
        ThinBuf::from_slice(self)
    }
}

impl From<Vec<u8>> for ThinBuf {
    fn from(v: Vec<u8>) -> ThinBuf {
        ThinBuf::from_slice(&v)
    }
}

impl PartialEq for ThinBuf {
    fn eq(&self, other: &ThinBuf) -> bool {
        self[..] == other[..]
    }
}

impl Eq for ThinBuf {}

impl fmt::Debug for ThinBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self[..], f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_its_bytes_behind_eight() {
        assert_eq!(std::mem::size_of::<ThinBuf>(), 8);
        assert_eq!(std::mem::size_of::<Option<ThinBuf>>(), 8);
        let empty = ThinBuf::default();
        assert!(empty.is_empty() && empty[..].is_empty());
        assert_eq!(ThinBuf::from_slice(b""), empty);
        for len in [1, 3, 4, 5, 255, 256, 70_000] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let mut b = ThinBuf::from(bytes.clone());
            assert_eq!((b.len(), &b[..]), (len, &bytes[..]));
            let c = b.clone();
            b[0] ^= 0xff;
            assert_ne!(b, c);
            assert_eq!(&c[..], &bytes[..]);
            b[0] ^= 0xff;
            assert_eq!(b, c);
        }
        let joined = ThinBuf::concat(&[b"ab", b"", b"cde"]);
        assert_eq!(&joined[..], b"abcde");
        assert_eq!(ThinBuf::concat(&[b"", b""]), ThinBuf::default());
        let mut e = ThinBuf::default();
        assert!(e.deref_mut().is_empty());
        drop(e.clone());
    }

    /// Random splices against a vector's `splice` as the model: growing,
    /// shrinking, equal sizes, to and from empty.
    #[test]
    fn splices_as_a_vector_does() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let mut b = ThinBuf::default();
        let mut m: Vec<u8> = Vec::new();
        for step in 0..20_000u32 {
            let len = m.len();
            let start = rng.random_range(0..=len);
            let end = rng.random_range(start..=len.min(start + 40));
            let parts: Vec<Vec<u8>> =
                (0..rng.random_range(0..3)).map(|i| vec![(step + i) as u8; rng.random_range(0..30)]).collect();
            let refs: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
            b.splice(start..end, &refs);
            m.splice(start..end, parts.concat());
            assert_eq!(&b[..], &m[..], "step {step}");
            if step % 500 == 0 {
                b.splice(0..b.len(), &[]);
                m.clear();
                assert_eq!(b, ThinBuf::default());
            }
        }
    }
}
