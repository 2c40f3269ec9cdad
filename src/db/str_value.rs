//! A stored string value, in 24 bytes.
//!
//! A `Bytes` is 32 bytes, which made every `Value` 40 and every stored
//! entry 56. Held here in 24, the value is 32 and the entry 48, and a short
//! value (a counter, a flag, a token up to 22 bytes) needs no allocation of
//! its own: it is a [`Key`], inline when short, else one exact allocation.
//! A read answers such a value with a copy inside the reply itself
//! ([`Reply::InlineBulk`], up to 54 bytes: no allocation, no reference
//! count), as Redis copies a value into its reply buffer. A longer value
//! ([`SHARED_MIN`] bytes and more) is stored in one reference-counted
//! allocation ([`SharedBytes`]: its count, then the bytes) that
//! its replies share ([`Reply::SharedBulk`]). A long value that has been
//! edited (`APPEND`, `SETRANGE`, `SETBIT`…) is a `Bytes` with room to grow
//! behind a box instead, so that appends in a loop stay amortized (a
//! shared buffer is exact and would be copied on every edit). Readers of a
//! long string (`GETBIT`, `BITCOUNT`, `GETRANGE`) look at it in place
//! whatever its form.

use std::fmt;
use std::ops::Deref;

use bytes::{Bytes, BytesMut};

use super::Key;
use crate::protocol::InlineBytes;
use crate::protocol::Reply;
use crate::protocol::SharedBytes;

/// From this length a value is shared with its replies: what a reply can
/// hold inline is copied into it, anything longer would need an allocation
/// per read where a shared `Bytes` needs a reference count.
pub const SHARED_MIN: usize = InlineBytes::MAX + 1;

/// See the module docs.
#[derive(Clone)]
pub enum StrValue {
    /// Shorter than [`SHARED_MIN`].
    Small(Key),
    /// Long, as stored: one allocation shared with its replies.
    Long(SharedBytes),
    /// Long and edited: a `Bytes` with spare room.
    Shared(Box<Bytes>),
}

impl StrValue {
    /// A copy of `b`.
    #[inline]
    pub fn new(b: &[u8]) -> StrValue {
        if b.len() < SHARED_MIN {
            StrValue::Small(Key::new(b))
        } else {
            StrValue::Long(SharedBytes::copy_from(b))
        }
    }

    /// `v` as a value (a long one copied into its shared buffer).
    pub fn from_vec(v: Vec<u8>) -> StrValue {
        if v.len() < SHARED_MIN {
            StrValue::edited(v)
        } else {
            StrValue::new(&v)
        }
    }

    /// `v` after an edit, kept without a copy where it is long enough to
    /// have its own buffer, with its spare room when long.
    fn edited(v: Vec<u8>) -> StrValue {
        if v.len() <= super::key::INLINE_MAX {
            StrValue::Small(Key::new(&v))
        } else if v.len() < SHARED_MIN {
            StrValue::Small(Key::Heap(v.into_boxed_slice()))
        } else {
            StrValue::Shared(Box::new(Bytes::from(v)))
        }
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            StrValue::Small(k) => k,
            StrValue::Long(b) => b,
            StrValue::Shared(b) => b,
        }
    }

    /// The value as a bulk reply: inside the reply when short, shared when
    /// long (see the module docs).
    #[inline]
    pub fn reply(&self) -> Reply {
        match self {
            StrValue::Small(k) => Reply::InlineBulk(InlineBytes::new(k).expect("shorter than SHARED_MIN")),
            StrValue::Long(b) => Reply::SharedBulk(b.clone()),
            StrValue::Shared(b) => Reply::Bulk(Bytes::clone(b)),
        }
    }

    /// The value as `Bytes`: shared when edited and long, else a copy.
    #[inline]
    pub fn to_bytes(&self) -> Bytes {
        match self {
            StrValue::Small(k) => k.to_bytes(),
            StrValue::Long(b) => Bytes::copy_from_slice(b),
            StrValue::Shared(b) => Bytes::clone(b),
        }
    }

    /// Changes the bytes through a `Vec` with room for `extra` more
    /// (`APPEND`, `SETRANGE`, `SETBIT`, `BITFIELD`, `PFADD`). A buffer of
    /// its own grows to exactly what it holds: the allocator grows it in
    /// place within its size class (classes are a quarter apart), so
    /// appends in a loop copy the string only when it crosses one. A long
    /// value shared with a reply still being written is copied first.
    pub fn edit<R>(&mut self, extra: usize, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        let mut v = match std::mem::replace(self, StrValue::Small(Key::new(b""))) {
            StrValue::Small(Key::Inline(len, buf)) => {
                let mut v = Vec::with_capacity(usize::from(len) + extra);
                v.extend_from_slice(&buf[..usize::from(len)]);
                v
            }
            StrValue::Small(Key::Heap(b)) => b.into_vec(),
            StrValue::Long(b) => {
                let mut v = Vec::with_capacity(b.len() + extra);
                v.extend_from_slice(&b);
                v
            }
            StrValue::Shared(b) => match Bytes::try_into_mut(*b) {
                Ok(unique) => Vec::from(unique),
                Err(shared) => Vec::from(BytesMut::from(&shared[..])),
            },
        };
        v.reserve_exact(extra);
        let r = f(&mut v);
        *self = StrValue::edited(v);
        r
    }
}

impl Deref for StrValue {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl From<&[u8]> for StrValue {
    fn from(b: &[u8]) -> StrValue {
        StrValue::new(b)
    }
}

impl From<&str> for StrValue {
    fn from(s: &str) -> StrValue {
        StrValue::new(s.as_bytes())
    }
}

impl From<String> for StrValue {
    fn from(s: String) -> StrValue {
        StrValue::from_vec(s.into_bytes())
    }
}

impl fmt::Debug for StrValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_bytes(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_24_bytes() {
        assert_eq!(std::mem::size_of::<StrValue>(), 24);
        // And the inline reply does not make replies larger.
        assert_eq!(std::mem::size_of::<Reply>(), 56);
    }

    /// Edits keep the bytes across both limits, both ways; a long value's
    /// reply shares its buffer, and an edit while a reply holds it leaves
    /// the reply as it was.
    #[test]
    fn edits_cross_both_limits_both_ways() {
        let mut v = StrValue::from("abc");
        let mut model = b"abc".to_vec();
        for i in 0..120u32 {
            let byte = (i % 251) as u8;
            let len = v.edit(1, |b| {
                b.push(byte);
                b.len()
            });
            model.push(byte);
            assert_eq!((&v[..], v.len()), (&model[..], len));
            let form = match &v {
                StrValue::Small(Key::Inline(..)) => 0,
                StrValue::Small(Key::Heap(_)) => 1,
                StrValue::Shared(_) => 2,
                StrValue::Long(_) => panic!("an edited value keeps room to grow"),
            };
            assert_eq!(form, usize::from(len > super::super::key::INLINE_MAX) + usize::from(len >= SHARED_MIN));
            assert_eq!(v.reply().as_bulk(), Some(&model[..]));
        }
        let reply = v.to_bytes();
        assert_eq!(reply.as_ptr(), v.as_ptr(), "shared, not copied");
        v.edit(0, |b| b[0] = b'x');
        assert_eq!((reply[0], v[0]), (b'a', b'x'));
        v.edit(0, |b| b.truncate(5));
        assert!(matches!(v, StrValue::Small(Key::Inline(5, _))));
        assert_eq!(v.to_bytes(), Bytes::from_static(b"xbc\x00\x01"));
        assert_eq!(StrValue::new(&[7; 2000]).to_bytes(), Bytes::from(vec![7; 2000]));
        assert!(matches!(StrValue::new(&[7; 54]).reply(), Reply::InlineBulk(_)));
        assert!(matches!(StrValue::new(&[7; 55]).reply(), Reply::SharedBulk(_)));
    }

    /// A long value stored whole is one shared buffer: its reply shares
    /// it; an edit copies it once into the growable form, leaving a reply
    /// that holds the old bytes as it was.
    #[test]
    fn a_stored_long_value_is_shared_then_edited() {
        let bytes: Vec<u8> = (0..100u8).collect();
        for mut v in [StrValue::new(&bytes), StrValue::from_vec(bytes.clone())] {
            assert!(matches!(v, StrValue::Long(_)));
            let reply = v.reply();
            let Reply::SharedBulk(shared) = &reply else { panic!("shared") };
            assert_eq!(shared.as_ptr(), v.as_ptr(), "shared, not copied");
            assert_eq!(v.to_bytes(), Bytes::from(bytes.clone()));
            v.edit(1, |b| b.push(100));
            assert!(matches!(v, StrValue::Shared(_)));
            assert_eq!((reply.as_bulk(), v.len()), (Some(&bytes[..]), 101));
            let copy = v.clone();
            assert_eq!(&copy[..], &v[..]);
        }
    }
}
