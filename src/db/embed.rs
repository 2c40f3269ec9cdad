//! Whether a short string is `embstr` or `raw` where the server embeds the
//! key in the value's object (Redis 8, Valkey 8).
//!
//! Up to Redis 7.4 a string of at most 44 bytes that is not an integer is
//! `embstr`, whatever its key: the object and the value share one
//! 64-byte allocation. Redis 8 and Valkey 8 put the key (and a deadline)
//! in that allocation too, so whether the value still fits depends on the
//! key's length, on whether the key has a deadline when the value is
//! stored, and on how the deadline came: a value that no longer fits is
//! stored `raw`, and stays `raw` until it is stored again. rlockd stores
//! neither layout; it follows the decisions (`OBJECT ENCODING`, and what
//! `DEBUG OBJECT` shows) through [`Embed::keeps`], called by `db` where
//! the servers make them. The rules are measured: every boundary below was
//! probed on redis-server 8.2.3 and valkey-server 8.1.8 for keys of 1 to 50
//! bytes, values of 0 to 46, and each way a string gets its deadline
//! (tests below, `tests/diff/embstr_*.redis`). Redis 8.2.3 answered the
//! same every run. Valkey 8.1.8 now and then keeps `embstr` a string under
//! a key of 32 to 41 bytes that gets a deadline its rule has no room for
//! (when its allocation happens to have some); rlockd answers as Valkey
//! does the other times.

/// Which rule a profile follows (from the version profile).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Embed {
    /// Redis up to 7.4 (and Valkey 7.2): the value's length alone.
    #[default]
    Value,
    /// Redis 8: the key and a deadline share the allocation, and an
    /// allocation with room to spare for a deadline takes one later in
    /// place.
    Redis8,
    /// Valkey 8.
    Valkey8,
}

/// How a string came to be where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Stored under a key without a deadline (a new key, or one whose
    /// deadline the write drops: `SET`, `MSET`, `COPY`/`RENAME` of a key
    /// without one).
    Stored,
    /// Stored over a key that had a deadline: `keeps` whether it keeps it
    /// (`SET … KEEPTTL`) or loses it (`SET`, `GETSET`).
    Overwrote { keeps: bool },
    /// Stored with its deadline known (`RENAME`, `COPY`, `RESTORE` of a
    /// key with one, and every key with one that `DEBUG RELOAD` loads).
    StoredWithDeadline,
    /// A string given a deadline it did not have: an existing one
    /// (`PEXPIRE`, `GETEX … PX`) or one just [`Stored`](Step::Stored)
    /// (`SET … PX`, `SETEX`, `MOVE` of a key with one).
    DeadlineAdded,
}

/// The allocation the servers embed in (a cache line).
const LINE: usize = 64;
/// `robj`.
const OBJECT: usize = 16;
/// A deadline.
const DEADLINE: usize = 8;

/// The bytes of the key as the servers count them when deciding: its
/// length byte, a one-byte header, the bytes and the terminator.
fn key_counted(key: usize) -> usize {
    key + 3
}

/// The bytes of the value: a three-byte header and the terminator.
fn value_counted(value: usize) -> usize {
    value + 4
}

/// Whether key, value and (if `deadline`) a deadline fit the line.
fn fits(key: usize, value: usize, deadline: bool) -> bool {
    OBJECT + key_counted(key) + usize::from(deadline) * DEADLINE + value_counted(value) <= LINE
}

/// The bytes the key really takes in Redis 8's allocation: the length
/// byte and an `sds` with the header its length needs (one byte below 32,
/// three below 256).
fn key_stored(key: usize) -> usize {
    1 + if key < 32 { 1 } else { 3 } + key + 1
}

/// Redis 8: whether the allocation of a string stored without a deadline
/// has room for one (jemalloc rounds it up to its size class).
fn room_for_deadline(key: usize, value: usize) -> bool {
    let need = OBJECT + key_stored(key) + value_counted(value);
    crate::memory::jemalloc_class(need) >= need + DEADLINE
}

/// Valkey 8: whether a string keeps its embedding when it is given a
/// deadline.
fn valkey_takes_deadline(key: usize, value: usize) -> bool {
    OBJECT + DEADLINE + key_stored(key) + value_counted(value) <= LINE + DEADLINE
}

impl Embed {
    /// Whether a string of `value` bytes under a key of `key` bytes that
    /// would be `embstr` by its length alone (at most 44 bytes, not an
    /// integer) stays `embstr` after `step`; for [`Step::DeadlineAdded`],
    /// given that it was `embstr` before.
    pub fn keeps(self, step: Step, key: usize, value: usize) -> bool {
        match (self, step) {
            (Embed::Value, _) => true,
            (_, Step::Stored) => fits(key, value, false),
            (Embed::Redis8, Step::Overwrote { keeps }) => fits(key, value, keeps),
            // Valkey keeps the old object's deadline slot whether or not
            // the deadline stays.
            (Embed::Valkey8, Step::Overwrote { .. }) => fits(key, value, true),
            (Embed::Redis8, Step::StoredWithDeadline) => fits(key, value, true),
            (Embed::Redis8, Step::DeadlineAdded) => room_for_deadline(key, value) || fits(key, value, true),
            (Embed::Valkey8, Step::StoredWithDeadline | Step::DeadlineAdded) => {
                fits(key, value, false) && valkey_takes_deadline(key, value)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values (0 to 46 bytes) that stay `embstr` under a key of `key`
    /// bytes.
    fn kept(embed: Embed, step: Option<Step>, key: usize) -> Vec<usize> {
        let keeps = |v| match step {
            Some(step) => embed.keeps(step, key, v),
            // Stored, then given a deadline: both steps, as `db` applies them.
            None => embed.keeps(Step::Stored, key, v) && embed.keeps(Step::DeadlineAdded, key, v),
        };
        (0..=46).filter(|&v| v <= 44 && keeps(v)).collect()
    }

    fn range(a: usize, b: usize) -> Vec<usize> {
        (a..=b).collect()
    }

    /// Boundaries measured on redis-server 8.2.3 (`OBJECT ENCODING` after
    /// each way of storing, keys of `k` repeated).
    #[test]
    fn redis_8_2_3() {
        let r = Embed::Redis8;
        for (key, max) in [(1, 40), (10, 31), (31, 10), (32, 9), (40, 1), (41, 0)] {
            assert_eq!(kept(r, Some(Step::Stored), key), range(0, max), "SET, key {key}");
        }
        assert!(kept(r, Some(Step::Stored), 42).is_empty());
        // SET … PX, PEXPIRE, SETEX, GETEX, MOVE: the allocation's spare
        // room takes the deadline where the line would not.
        for (key, want) in [
            (1, range(0, 32)),
            (10, range(0, 23)),
            (31, range(0, 2)),
            (32, [0, 1, 8, 9].to_vec()),
            (33, [0, 7, 8].to_vec()),
            (34, range(6, 7)),
            (36, range(4, 5)),
            (38, range(2, 3)),
            (40, range(0, 1)),
            (41, vec![0]),
        ] {
            assert_eq!(kept(r, None, key), want, "SET PX, key {key}");
        }
        // SET … KEEPTTL, and RENAME/COPY/RESTORE with a deadline.
        for (key, max) in [(1, 32), (24, 9), (32, 1), (33, 0)] {
            assert_eq!(kept(r, Some(Step::StoredWithDeadline), key), range(0, max), "key {key}");
            assert_eq!(kept(r, Some(Step::Overwrote { keeps: true }), key), range(0, max), "KEEPTTL, key {key}");
        }
        assert!(kept(r, Some(Step::StoredWithDeadline), 34).is_empty());
        assert_eq!(kept(r, Some(Step::Overwrote { keeps: false }), 1), range(0, 40), "SET over a key with a TTL");
    }

    /// Boundaries measured on valkey-server 8.1.8.
    #[test]
    fn valkey_8_1_8() {
        let v = Embed::Valkey8;
        for (key, max) in [(1, 40), (20, 21), (32, 9), (41, 0)] {
            assert_eq!(kept(v, Some(Step::Stored), key), range(0, max), "SET, key {key}");
        }
        for (key, max) in [(1, 40), (10, 31), (31, 10), (32, 7), (33, 6), (38, 1)] {
            for step in [None, Some(Step::StoredWithDeadline)] {
                assert_eq!(kept(v, step, key), range(0, max), "{step:?}, key {key}");
            }
        }
        assert!(kept(v, None, 40).is_empty());
        // Any SET over a key with a TTL, keeping it or not.
        for (key, max) in [(1, 32), (32, 1), (33, 0)] {
            for keeps in [true, false] {
                assert_eq!(kept(v, Some(Step::Overwrote { keeps }), key), range(0, max), "key {key}");
            }
        }
    }

    #[test]
    fn before_8_the_length_alone() {
        for step in [Some(Step::Stored), Some(Step::StoredWithDeadline), None] {
            assert_eq!(kept(Embed::Value, step, 200), range(0, 44));
        }
    }
}
