//! A long list: a ring buffer of `Bytes` whose bookkeeping lives in its
//! own allocation, in front of the elements, so the ring itself is one
//! pointer. A small list is packed instead ([`super::list_value`]); it
//! becomes a ring past the packed form's limits.
//!
//! A `VecDeque` keeps its capacity, head and length inline: 32 bytes,
//! which made every stored value 32 bytes (a [`super::Value`] is as large as
//! its largest form). Boxing the deque made the value 24 but cost every list
//! operation a second pointer to follow, a cache miss apart (RPUSH and
//! LRANGE on small lists ran 7-9% slower, BENCHMARKS.md). Here the header
//! shares the elements' allocation: one pointer, then the header and the
//! first elements in the same cache line, as before.
//!
//! The operations are `VecDeque`'s that the list commands use, with its
//! semantics (positions are logical, from the head); `tests::behaves_as_a_vecdeque`
//! runs them against a `VecDeque` as the model.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::fmt;
use std::ops::{Index, IndexMut, Range, RangeBounds};
use std::ptr::NonNull;

use bytes::Bytes;

/// The allocation's first 16 bytes; `cap` elements follow.
#[repr(C)]
struct Header {
    cap: u32,
    head: u32,
    len: u32,
    _pad: u32,
}

/// See the module docs. **Invariant:** `None` is an empty list with no
/// allocation; otherwise the pointer is an allocation of `layout(cap)`
/// whose header says `cap >= 1`, `head < cap`, `len <= cap`, and the
/// elements at physical slots `(head + i) % cap` for `i < len` are
/// initialized (no other slot is).
#[derive(Default)]
pub struct Ring(Option<NonNull<Header>>);

// SAFETY: a `Ring` owns its elements as a `VecDeque<Bytes>` does.
unsafe impl Send for Ring {}
// SAFETY: shared access only reads.
unsafe impl Sync for Ring {}

fn layout(cap: usize) -> (Layout, usize) {
    Layout::new::<Header>()
        .extend(Layout::array::<Bytes>(cap).expect("a list's capacity fits a layout"))
        .expect("a list's capacity fits a layout")
}

impl Ring {
    pub fn new() -> Ring {
        Ring(None)
    }

    /// Room for `n` elements, exactly (none allocated for 0).
    pub fn with_capacity(n: usize) -> Ring {
        let mut l = Ring(None);
        if n > 0 {
            l.regrow(n);
        }
        l
    }

    #[inline]
    fn header(&self) -> Option<&Header> {
        // SAFETY: a live allocation starting with its header.
        self.0.map(|p| unsafe { &*p.as_ptr() })
    }

    #[inline]
    fn header_mut(&mut self) -> Option<&mut Header> {
        // SAFETY: as in `header`, and `&mut self` is the only access.
        self.0.map(|p| unsafe { &mut *p.as_ptr() })
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.header().map_or(0, |h| h.len as usize)
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    fn cap(&self) -> usize {
        self.header().map_or(0, |h| h.cap as usize)
    }

    /// The first element slot (dangling when nothing is allocated).
    #[inline]
    fn slots(&self) -> *mut Bytes {
        match self.0 {
            // SAFETY: the elements start at the layout's offset, inside
            // the allocation.
            Some(p) => unsafe { p.as_ptr().cast::<u8>().add(layout(0).1).cast::<Bytes>() },
            None => NonNull::dangling().as_ptr(),
        }
    }

    /// Physical slot of logical position `i` (`i <= len`, `cap > 0`).
    #[inline]
    fn phys(&self, i: usize) -> usize {
        let h = self.header().expect("allocated");
        let p = h.head as usize + i;
        if p >= h.cap as usize {
            p - h.cap as usize
        } else {
            p
        }
    }

    /// The elements in order, as two slices (the second empty unless the
    /// ring wraps), as `VecDeque::as_slices`.
    #[inline]
    pub fn as_slices(&self) -> (&[Bytes], &[Bytes]) {
        let Some(h) = self.header() else { return (&[], &[]) };
        let (head, len, cap) = (h.head as usize, h.len as usize, h.cap as usize);
        let first = len.min(cap - head);
        let base = self.slots();
        // SAFETY: slots `head..head + first` and `0..len - first` are the
        // initialized ones (the invariant).
        unsafe { (std::slice::from_raw_parts(base.add(head), first), std::slice::from_raw_parts(base, len - first)) }
    }

    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        let (a, b) = self.as_slices();
        a.iter().chain(b.iter())
    }

    /// Elements `range` (positions in order), as `VecDeque::range`.
    pub fn range(&self, range: impl RangeBounds<usize>) -> Iter<'_> {
        let Range { start, end } = self.bounds(range);
        let (a, b) = self.as_slices();
        let (a_lo, a_hi) = (start.min(a.len()), end.min(a.len()));
        let (b_lo, b_hi) = (start.max(a.len()) - a.len(), end.max(a.len()) - a.len());
        a[a_lo..a_hi].iter().chain(b[b_lo..b_hi].iter())
    }

    fn bounds(&self, range: impl RangeBounds<usize>) -> Range<usize> {
        bounds(range, self.len())
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&Bytes> {
        if i >= self.len() {
            return None;
        }
        // SAFETY: an initialized slot (`i < len`).
        Some(unsafe { &*self.slots().add(self.phys(i)) })
    }

    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Bytes> {
        if i >= self.len() {
            return None;
        }
        // SAFETY: as in `get`, through `&mut self`.
        Some(unsafe { &mut *self.slots().add(self.phys(i)) })
    }

    pub fn front(&self) -> Option<&Bytes> {
        self.get(0)
    }

    pub fn back(&self) -> Option<&Bytes> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// Moves the elements to a new allocation of `cap` slots (at least the
    /// length), in order from slot 0.
    fn regrow(&mut self, cap: usize) {
        let len = self.len();
        assert!(cap >= len && cap >= 1);
        let cap32 = u32::try_from(cap).expect("at most 2^32 elements in a list");
        let (lay, off) = layout(cap);
        // SAFETY: a non-zero size (the header).
        let p = unsafe { alloc(lay) };
        let Some(p) = NonNull::new(p) else { handle_alloc_error(lay) };
        // SAFETY: the elements' offset is inside the new allocation.
        let new_slots = unsafe { p.as_ptr().add(off).cast::<Bytes>() };
        let (a, b) = self.as_slices();
        // SAFETY: the new allocation has room for `len <= cap` elements;
        // the old ones are moved (bitwise), and the old allocation is
        // freed without dropping them.
        unsafe {
            std::ptr::copy_nonoverlapping(a.as_ptr(), new_slots, a.len());
            std::ptr::copy_nonoverlapping(b.as_ptr(), new_slots.add(a.len()), b.len());
            p.as_ptr().cast::<Header>().write(Header { cap: cap32, head: 0, len: len as u32, _pad: 0 });
        }
        if let Some(old) = self.0 {
            let old_cap = self.cap();
            // SAFETY: allocated by `regrow` with this layout.
            unsafe { dealloc(old.as_ptr().cast(), layout(old_cap).0) };
        }
        self.0 = Some(p.cast());
    }

    /// Room for one more: doubles, as `VecDeque` does (4 at least).
    #[inline]
    fn reserve_one(&mut self) {
        let (len, cap) = (self.len(), self.cap());
        if len == cap {
            self.regrow((cap * 2).max(4));
        }
    }

    pub fn push_back(&mut self, x: Bytes) {
        self.reserve_one();
        let at = self.phys(self.len());
        // SAFETY: a free slot (`len < cap`): the one after the last.
        unsafe { self.slots().add(at).write(x) };
        self.header_mut().expect("allocated").len += 1;
    }

    pub fn push_front(&mut self, x: Bytes) {
        self.reserve_one();
        let h = self.header_mut().expect("allocated");
        h.head = if h.head == 0 { h.cap - 1 } else { h.head - 1 };
        h.len += 1;
        let at = h.head as usize;
        // SAFETY: the free slot before the old head.
        unsafe { self.slots().add(at).write(x) };
    }

    pub fn pop_front(&mut self) -> Option<Bytes> {
        if self.is_empty() {
            return None;
        }
        let at = self.phys(0);
        // SAFETY: the head slot is initialized; it leaves the list.
        let x = unsafe { self.slots().add(at).read() };
        let h = self.header_mut().expect("allocated");
        h.head = if h.head + 1 == h.cap { 0 } else { h.head + 1 };
        h.len -= 1;
        Some(x)
    }

    pub fn pop_back(&mut self) -> Option<Bytes> {
        let last = self.len().checked_sub(1)?;
        let at = self.phys(last);
        self.header_mut().expect("allocated").len -= 1;
        // SAFETY: the last slot was initialized; it has left the list.
        Some(unsafe { self.slots().add(at).read() })
    }

    /// Inserts `x` at position `i` (`i <= len`), the elements from `i` on
    /// moving one place back.
    pub fn insert(&mut self, i: usize, x: Bytes) {
        let len = self.len();
        assert!(i <= len, "insert at {i} in a list of {len}");
        // In at the nearer end, then moved to `i`.
        if i < len / 2 {
            self.push_front(x);
            for j in 0..i {
                self.swap(j, j + 1);
            }
        } else {
            self.push_back(x);
            for j in (i..len).rev() {
                self.swap(j, j + 1);
            }
        }
    }

    /// Swaps the elements at positions `a` and `b` (both `< len`).
    fn swap(&mut self, a: usize, b: usize) {
        assert!(a < self.len() && b < self.len());
        let (pa, pb) = (self.phys(a), self.phys(b));
        // SAFETY: two initialized slots.
        unsafe { std::ptr::swap(self.slots().add(pa), self.slots().add(pb)) };
    }

    /// Removes and returns the element at `i`, the ones after it moving one
    /// place forward.
    pub fn remove(&mut self, i: usize) -> Option<Bytes> {
        let len = self.len();
        if i >= len {
            return None;
        }
        // Nearer the front: shift the front part back; else the tail
        // forward. The element ends up at an end and is popped.
        if i < len / 2 {
            for j in (0..i).rev() {
                self.swap(j, j + 1);
            }
            self.pop_front()
        } else {
            for j in i..len - 1 {
                self.swap(j, j + 1);
            }
            self.pop_back()
        }
    }

    /// Keeps the first `n` elements.
    pub fn truncate(&mut self, n: usize) {
        while self.len() > n {
            drop(self.pop_back());
        }
    }

    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Removes the elements in `range`, returning them in order.
    pub fn drain(&mut self, range: impl RangeBounds<usize>) -> std::vec::IntoIter<Bytes> {
        let Range { start, end } = self.bounds(range);
        let (n, len) = (end - start, self.len());
        let mut out = Vec::with_capacity(n);
        if start == 0 {
            for _ in 0..n {
                out.push(self.pop_front().expect("in range"));
            }
            return out.into_iter();
        }
        let base = self.slots();
        // SAFETY: the range's slots are read out (and so become free), then
        // each later element moves `n` places forward, in order, into a
        // slot already freed; the length drops by `n`, so exactly the
        // slots of positions `0..len - n` stay initialized.
        unsafe {
            for i in start..end {
                out.push(base.add(self.phys(i)).read());
            }
            for i in end..len {
                let x = base.add(self.phys(i)).read();
                base.add(self.phys(i - n)).write(x);
            }
        }
        self.header_mut().expect("allocated").len -= n as u32;
        out.into_iter()
    }
}

/// `range` as positions of a list of `len`, as `VecDeque` checks it.
pub(super) fn bounds(range: impl RangeBounds<usize>, len: usize) -> Range<usize> {
    use std::ops::Bound;
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s + 1,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e + 1,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    assert!(start <= end && end <= len, "range {start}..{end} out of bounds for a list of {len}");
    start..end
}

/// The elements in order (`Ring::iter`, `Ring::range`).
pub type Iter<'a> = std::iter::Chain<std::slice::Iter<'a, Bytes>, std::slice::Iter<'a, Bytes>>;

impl Drop for Ring {
    fn drop(&mut self) {
        let Some(p) = self.0 else { return };
        let (a, b) = self.as_slices();
        let (a, b) = (a as *const [Bytes] as *mut [Bytes], b as *const [Bytes] as *mut [Bytes]);
        // SAFETY: the initialized elements, dropped once; then the
        // allocation made by `regrow` with this layout.
        unsafe {
            std::ptr::drop_in_place(a);
            std::ptr::drop_in_place(b);
            dealloc(p.as_ptr().cast(), layout(self.cap()).0);
        }
    }
}

impl Clone for Ring {
    fn clone(&self) -> Ring {
        self.iter().cloned().collect()
    }
}

impl PartialEq for Ring {
    fn eq(&self, other: &Ring) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Ring {}

impl fmt::Debug for Ring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl FromIterator<Bytes> for Ring {
    fn from_iter<I: IntoIterator<Item = Bytes>>(iter: I) -> Ring {
        let iter = iter.into_iter();
        let mut l = Ring::with_capacity(iter.size_hint().0);
        for x in iter {
            l.push_back(x);
        }
        l
    }
}

impl Extend<Bytes> for Ring {
    fn extend<I: IntoIterator<Item = Bytes>>(&mut self, iter: I) {
        for x in iter {
            self.push_back(x);
        }
    }
}

impl<'a> IntoIterator for &'a Ring {
    type Item = &'a Bytes;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl Index<usize> for Ring {
    type Output = Bytes;

    fn index(&self, i: usize) -> &Bytes {
        let len = self.len();
        self.get(i).unwrap_or_else(|| panic!("index {i} out of bounds for a list of {len}"))
    }
}

impl IndexMut<usize> for Ring {
    fn index_mut(&mut self, i: usize) -> &mut Bytes {
        let len = self.len();
        self.get_mut(i).unwrap_or_else(|| panic!("index {i} out of bounds for a list of {len}"))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    /// Random operations against a `VecDeque` as the model, across
    /// wrap-around and growth: the same contents, lengths and returns.
    #[test]
    fn behaves_as_a_vecdeque() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
        for round in 0..200 {
            let mut l = Ring::with_capacity(rng.random_range(0..4));
            let mut m: VecDeque<Bytes> = VecDeque::new();
            for step in 0..200u32 {
                let x = Bytes::from(format!("e{round}:{step}"));
                let len = m.len();
                match rng.random_range(0..12) {
                    0 | 1 => {
                        l.push_back(x.clone());
                        m.push_back(x);
                    }
                    2 | 3 => {
                        l.push_front(x.clone());
                        m.push_front(x);
                    }
                    4 => assert_eq!(l.pop_front(), m.pop_front()),
                    5 => assert_eq!(l.pop_back(), m.pop_back()),
                    6 => {
                        let i = rng.random_range(0..=len);
                        l.insert(i, x.clone());
                        m.insert(i, x);
                    }
                    7 => {
                        let i = rng.random_range(0..len + 2);
                        assert_eq!(l.remove(i), m.remove(i));
                    }
                    8 if len > 0 => {
                        let a = rng.random_range(0..=len);
                        let b = rng.random_range(a..=len);
                        assert!(l.drain(a..b).eq(m.drain(a..b)));
                    }
                    9 => {
                        let n = rng.random_range(0..len + 2);
                        l.truncate(n);
                        m.truncate(n);
                    }
                    10 if len > 0 => {
                        let a = rng.random_range(0..=len);
                        let b = rng.random_range(a..=len);
                        assert!(l.range(a..b).eq(m.range(a..b)));
                        assert!(l.range(a..).rev().eq(m.range(a..).rev()));
                        let i = rng.random_range(0..len);
                        l[i] = x.clone();
                        m[i] = x;
                    }
                    11 if step % 50 == 0 => {
                        l.clear();
                        m.clear();
                    }
                    _ => {}
                }
                assert_eq!(l.len(), m.len());
                assert!(l.iter().eq(m.iter()), "round {round} step {step}");
                assert_eq!(l.front(), m.front());
                assert_eq!(l.back(), m.back());
                assert_eq!(l.get(l.len()), None);
                let copy = l.clone();
                assert_eq!(copy, l);
            }
            let collected: Ring = m.iter().cloned().collect();
            assert_eq!(collected, l);
        }
    }

    #[test]
    fn one_pointer_and_a_header() {
        assert_eq!(std::mem::size_of::<Ring>(), 8);
        let l = Ring::default();
        assert!(l.is_empty() && l.iter().next().is_none());
        assert_eq!(layout(1).0.size(), 16 + 32);
        let l: Ring = [Bytes::from_static(b"x")].into_iter().collect();
        assert_eq!(l.cap(), 1, "exactly as many as collected");
    }
}
