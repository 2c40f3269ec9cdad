//! A stored key's name: inline when short, else one exact allocation.
//!
//! Every key in the keyspace pays for its name twice over with `Bytes`:
//! 32 bytes in the map's slot and a separate allocation for the bytes. Lock
//! names are short (`lock:order:42`, `{job}:lock`), so a key of up to
//! [`INLINE_MAX`] bytes is kept inside its 24-byte slot, and a longer one in
//! a boxed slice of exactly its length. It hashes and compares as the byte
//! string it holds, so the map is searched with plain `&[u8]`.
//! A short string value is held the same way ([`super::str_value`]).

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

use bytes::Bytes;

/// The longest name kept inline.
pub const INLINE_MAX: usize = 22;

/// A key's name (see the module docs).
#[derive(Clone)]
pub enum Key {
    /// Length and bytes.
    Inline(u8, [u8; INLINE_MAX]),
    /// Longer names.
    Heap(Box<[u8]>),
}

impl Key {
    /// A copy of `name` (never a slice of a connection's read buffer, which
    /// a `Bytes` would keep alive).
    #[inline]
    pub fn new(name: &[u8]) -> Key {
        if name.len() <= INLINE_MAX {
            let mut buf = [0; INLINE_MAX];
            buf[..name.len()].copy_from_slice(name);
            Key::Inline(name.len() as u8, buf)
        } else {
            Key::Heap(name.into())
        }
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Inline(len, buf) => &buf[..usize::from(*len)],
            Key::Heap(b) => b,
        }
    }

    /// The name as `Bytes` (a copy), for replies and events.
    pub fn to_bytes(&self) -> Bytes {
        Bytes::copy_from_slice(self.as_bytes())
    }
}

impl Deref for Key {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for Key {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for Key {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// As the byte string: `Borrow<[u8]>` requires the same hash.
impl Hash for Key {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl PartialEq for Key {
    #[inline]
    fn eq(&self, other: &Key) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Key {}

impl PartialEq<[u8]> for Key {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_bytes() == other
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&Bytes::copy_from_slice(self.as_bytes()), f)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn is_24_bytes() {
        assert_eq!(std::mem::size_of::<Key>(), 24);
    }

    /// Inline up to 22 bytes, boxed beyond; same bytes and hash as the
    /// slice either way.
    #[test]
    fn holds_and_hashes_as_its_bytes() {
        let s = foldhash::fast::RandomState::default();
        for len in [0, 1, INLINE_MAX - 1, INLINE_MAX, INLINE_MAX + 1, 300] {
            let name: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let k = Key::new(&name);
            assert_eq!(matches!(k, Key::Inline(..)), len <= INLINE_MAX, "len {len}");
            assert_eq!(&k[..], &name[..]);
            assert_eq!(k.to_bytes(), Bytes::from(name.clone()));
            assert_eq!(s.hash_one(&k), s.hash_one(&name[..]));
            assert_eq!(k, Key::new(&name));
        }
        assert_ne!(Key::new(b"ab"), Key::new(b"ab\0"));
    }
}
