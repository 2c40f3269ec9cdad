//! Stored values.

use super::stream::Stream;
use super::zset::ZSet;

/// A hash value: field → value, insertion ordered (HSCAN cursors rely on it).
pub use super::hash_value::HashValue;
/// A list value ([`super::list_value`]).
pub use super::list_value::ListValue;
/// A set value: a packed buffer while small, a hash set beyond.
pub use super::set_value::SetValue;

/// The encoding thresholds of Redis 7.0's compact encodings, as configured
/// (`hash-max-listpack-*`, `zset-max-listpack-*`, `set-max-intset-entries`,
/// `list-max-listpack-size`). A value is compact while it stays within them;
/// Redis checks them when a write adds to a value (and when a whole value is
/// built, or loaded by `RESTORE`), never when they change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncLimits {
    pub hash_entries: usize,
    pub hash_value: usize,
    pub set_intset_entries: usize,
    /// `set-max-listpack-entries` and `-value` (Redis 7.2 and later).
    pub set_listpack_entries: usize,
    pub set_listpack_value: usize,
    pub zset_entries: usize,
    pub zset_value: usize,
    /// `list-max-listpack-size`: entries per quicklist node when positive,
    /// a node size class (-1: 4 kB … -5: 64 kB) when negative.
    pub list_fill: i64,
    /// Redis 7.2 and later: a small set that is not an intset is a
    /// listpack (`set_listpack_*`), not a hashtable. From the profile.
    pub sets_listpack: bool,
    /// Whether a short string's key decides `embstr` (Redis 8, Valkey 8).
    /// From the profile.
    pub embed: super::embed::Embed,
}

impl Default for EncLimits {
    /// Redis 7.0's compiled defaults (the sample redis.conf says 128 hash
    /// entries; the compiled default is 512).
    fn default() -> Self {
        EncLimits {
            hash_entries: 512,
            hash_value: 64,
            set_intset_entries: 512,
            set_listpack_entries: 128,
            set_listpack_value: 64,
            zset_entries: 128,
            zset_value: 64,
            list_fill: -2,
            sets_listpack: false,
            embed: super::embed::Embed::Value,
        }
    }
}

impl EncLimits {
    /// Redis caps the intset at 2^30 entries whatever is configured.
    pub fn intset_entries(&self) -> usize {
        self.set_intset_entries.min(1 << 30)
    }

    /// The most bytes one listpack of a list holds: a negative
    /// `list-max-listpack-size`'s size class (-1: 4 kB … -5: 64 kB), or
    /// Redis's 8 kB safety limit when it counts entries.
    pub fn list_node_bytes(&self) -> usize {
        const LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
        if self.list_fill < 0 {
            LEVELS[usize::try_from(-self.list_fill - 1).unwrap_or(usize::MAX).min(LEVELS.len() - 1)]
        } else {
            8192
        }
    }
}

/// A value of one of the Redis types.
#[derive(Debug, Clone)]
pub enum Value {
    /// 24 bytes: inline when short ([`super::str_value`]).
    Str(super::StrValue),
    Hash(HashValue),
    List(ListValue),
    /// Inline, as `ZSet`: a small set's buffer or a boxed hash set.
    Set(SetValue),
    /// Inline: a [`ZSet`] is two words (a small set's buffer, or a boxed
    /// skip list).
    ZSet(ZSet),
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

    /// What `OBJECT ENCODING` would say on Redis 7.0 for this content built
    /// under `limits` (derived from content, not history).
    pub fn encoding(&self, limits: &EncLimits) -> &'static str {
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
                let max = limits.hash_value;
                let ttl = h.has_ttls();
                if h.len() <= limits.hash_entries && h.iter().all(|(k, v)| k.len() <= max && v.len() <= max) {
                    if ttl {
                        "listpackex"
                    } else {
                        "listpack"
                    }
                } else {
                    "hashtable"
                }
            }
            Value::List(_) => "quicklist",
            Value::Set(s) => {
                // Built by adding its members to an empty intset: integers
                // only stay an intset up to its limit, then a hashtable;
                // a member that is not an integer makes a listpack (7.2).
                let ints = s.iter().all(|m| crate::num::parse_i64_strict(m).is_some());
                if ints && s.len() <= limits.intset_entries() {
                    "intset"
                } else if limits.sets_listpack
                    && !ints
                    && s.len() <= limits.set_listpack_entries
                    && s.iter().all(|m| m.len() <= limits.set_listpack_value)
                {
                    "listpack"
                } else {
                    "hashtable"
                }
            }
            Value::ZSet(z) => {
                if z.len() <= limits.zset_entries && z.max_member_len() <= limits.zset_value {
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
            Value::Hash(h) => h.iter().map(|(k, v)| k.len() + v.len() + 48).sum::<usize>() + 8 * h.volatile(),
            Value::List(l) => l.iter().map(|v| v.len() + 32).sum(),
            Value::Set(s) => s.heap_size(),
            Value::ZSet(z) => z.approx_size(),
            Value::Stream(s) => s.approx_size(),
        }
    }
}
