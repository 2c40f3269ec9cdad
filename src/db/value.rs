//! Stored values.

use std::collections::VecDeque;

use bytes::Bytes;
use indexmap::IndexSet;

use super::stream::Stream;
use super::zset::ZSet;
use super::Hasher;

/// A hash value: field → value, insertion ordered (HSCAN cursors rely on it).
pub use super::hash_value::HashValue;
/// A set value.
pub type SetValue = IndexSet<Bytes, Hasher>;
/// A list value.
pub type ListValue = VecDeque<Bytes>;

/// Redis 7.0's default `hash-max-listpack-entries` (512; the sample
/// redis.conf says 128, the compiled default is 512): past it a hash is a
/// hashtable. `CONFIG SET` of the parameter does not move this yet.
pub const HASH_MAX_LISTPACK_ENTRIES: usize = 512;

/// A value of one of the Redis types.
#[derive(Debug, Clone)]
pub enum Value {
    Str(Bytes),
    Hash(HashValue),
    List(ListValue),
    Set(Box<SetValue>),
    ZSet(Box<ZSet>),
    Stream(Box<Stream>),
}

impl Value {
    /// The name `TYPE` reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
        }
    }

    /// Empty hashes, lists, sets and sorted sets must not exist (an empty
    /// stream may).
    pub fn is_empty_aggregate(&self) -> bool {
        match self {
            Value::Str(_) => false,
            Value::Hash(h) => h.is_empty(),
            Value::List(l) => l.is_empty(),
            Value::Set(s) => s.is_empty(),
            Value::ZSet(z) => z.is_empty(),
            Value::Stream(_) => false,
        }
    }

    /// What `OBJECT ENCODING` would say on Redis 7.0 for this content with
    /// default thresholds (derived from content, not history).
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => {
                if s.len() <= 20 && crate::num::parse_i64_strict(s).is_some() {
                    "int"
                } else if s.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
            Value::Hash(h) => {
                if h.len() <= HASH_MAX_LISTPACK_ENTRIES && h.iter().all(|(k, v)| k.len() <= 64 && v.len() <= 64) {
                    "listpack"
                } else {
                    "hashtable"
                }
            }
            Value::List(_) => "quicklist",
            Value::Set(s) => {
                if s.len() <= 512 && s.iter().all(|m| crate::num::parse_i64_strict(m).is_some()) {
                    "intset"
                } else {
                    "hashtable"
                }
            }
            Value::ZSet(z) => {
                if z.len() <= 128 && z.max_member_len() <= 64 {
                    "listpack"
                } else {
                    "skiplist"
                }
            }
            Value::Stream(_) => "stream",
        }
    }

    /// Rough heap size in bytes (MEMORY USAGE, INFO estimates).
    pub fn approx_size(&self) -> usize {
        match self {
            Value::Str(s) => s.len(),
            Value::Hash(h) => h.iter().map(|(k, v)| k.len() + v.len() + 48).sum(),
            Value::List(l) => l.iter().map(|v| v.len() + 32).sum(),
            Value::Set(s) => s.iter().map(|v| v.len() + 40).sum(),
            Value::ZSet(z) => z.approx_size(),
            Value::Stream(s) => s.approx_size(),
        }
    }
}
