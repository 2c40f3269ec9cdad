//! Lock scripts shipped with rlockd (the `lua/` directory), embedded so
//! tests, benchmarks and applications can run them with `EVAL`/`EVALSHA`.
//!
//! They implement the protocols of Redisson (reentrant, fair and
//! read-write locks, semaphore, count-down latch — same keys, hash fields,
//! channels and return values, so they interoperate with Redisson clients),
//! of redis-py's `Lock` (token release/extend/reacquire) and of Redlock.
//! Each file documents its `KEYS` and `ARGV`.
//!
//! ```no_run
//! use rlockd::locks;
//! let acquire = locks::REENTRANT_LOCK;
//! println!("{} is {} bytes, sha {}", acquire.name, acquire.source.len(), acquire.sha1());
//! ```

/// One embedded script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockScript {
    /// File name without `.lua`.
    pub name: &'static str,
    /// The Lua source.
    pub source: &'static str,
}

/// Lower-case hex SHA1 of a script body: the name `EVALSHA` knows it by.
pub use super::sha1_hex;

impl LockScript {
    /// The SHA1 `EVALSHA` knows it by.
    pub fn sha1(&self) -> String {
        super::sha1_hex(self.source.as_bytes())
    }
}

macro_rules! scripts {
    ($($(#[$doc:meta])* $id:ident = $file:literal;)*) => {
        $(
            $(#[$doc])*
            pub const $id: LockScript = LockScript {
                name: $file,
                source: include_str!(concat!("../../lua/", $file, ".lua")),
            };
        )*
        /// Every embedded script.
        pub const ALL: &[LockScript] = &[$($id),*];
    };
}

scripts! {
    /// Reentrant lock: acquire (nil) or the holder's pttl.
    REENTRANT_LOCK = "reentrant_lock";
    /// Reentrant lock: release one hold; publishes when fully released.
    REENTRANT_UNLOCK = "reentrant_unlock";
    /// Reentrant lock: renew the lease (watchdog).
    REENTRANT_RENEW = "reentrant_renew";
    /// Reentrant lock: release whoever holds it.
    FORCE_UNLOCK = "force_unlock";
    /// Fair lock: acquire or queue up.
    FAIR_LOCK = "fair_lock";
    /// Fair lock: release and wake the next waiter.
    FAIR_UNLOCK = "fair_unlock";
    /// Read-write lock: read hold.
    READ_LOCK = "read_lock";
    /// Read-write lock: release a read hold.
    READ_UNLOCK = "read_unlock";
    /// Read-write lock: write hold.
    WRITE_LOCK = "write_lock";
    /// Read-write lock: release a write hold.
    WRITE_UNLOCK = "write_unlock";
    /// Semaphore: take permits.
    SEMAPHORE_ACQUIRE = "semaphore_acquire";
    /// Semaphore: release permits.
    SEMAPHORE_RELEASE = "semaphore_release";
    /// Semaphore: initialise permits once.
    SEMAPHORE_SET_PERMITS = "semaphore_set_permits";
    /// Count-down latch: set the count once.
    LATCH_SET_COUNT = "latch_set_count";
    /// Count-down latch: count down.
    LATCH_COUNT_DOWN = "latch_count_down";
    /// redis-py Lock: release if the token matches.
    TOKEN_RELEASE = "token_release";
    /// redis-py Lock: extend the TTL if the token matches.
    TOKEN_EXTEND = "token_extend";
    /// redis-py Lock: reset the TTL if the token matches.
    TOKEN_REACQUIRE = "token_reacquire";
    /// Redlock: delete if the token matches.
    REDLOCK_RELEASE = "redlock_release";
}

/// Redisson's channel for a lock's unlock messages.
pub fn lock_channel(lock: &str) -> String {
    format!("redisson_lock__channel:{{{lock}}}")
}

/// Redisson's fair lock queue (list) key.
pub fn fair_queue(lock: &str) -> String {
    format!("redisson_lock_queue:{{{lock}}}")
}

/// Redisson's fair lock timeout (sorted set) key.
pub fn fair_timeouts(lock: &str) -> String {
    format!("redisson_lock_timeout:{{{lock}}}")
}

/// Redisson's read-write lock channel.
pub fn rwlock_channel(lock: &str) -> String {
    format!("redisson_rwlock:{{{lock}}}")
}

/// Prefix of a read holder's per-hold timeout keys.
pub fn rwlock_timeout_prefix(lock: &str, holder: &str) -> String {
    format!("{{{lock}}}:{holder}:rwlock_timeout")
}

/// Redisson's semaphore channel.
pub fn semaphore_channel(name: &str) -> String {
    format!("redisson_sc:{{{name}}}")
}

/// Redisson's count-down latch channel.
pub fn latch_channel(name: &str) -> String {
    format!("redisson_countdownlatch__channel__{{{name}}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_compiles() {
        let mut eng = crate::script::Scripting::new();
        for s in ALL {
            let sha = eng.create_script(&bytes::Bytes::from_static(s.source.as_bytes())).expect(s.name);
            assert_eq!(sha, s.sha1());
        }
        assert_eq!(lock_channel("a"), "redisson_lock__channel:{a}");
        assert_eq!(rwlock_timeout_prefix("a", "u:1"), "{a}:u:1:rwlock_timeout");
    }
}
