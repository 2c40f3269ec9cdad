//! What the process reports about itself: the Redis version rlockd follows
//! (in `INFO`, `HELLO` and Lua's `redis.REDIS_VERSION`) and its allocator.

/// The Redis version rlockd follows: the default of the `redis-version`
/// parameter (what `INFO`'s `redis_version` and `HELLO`'s `version` report),
/// and always Lua's `redis.REDIS_VERSION`.
pub const REDIS_VERSION: &str = "7.0.15";
/// `REDIS_VERSION_NUM` as Lua sees it (0x00MMmmpp).
pub const REDIS_VERSION_NUM: i64 = 0x0007_000f;

static ALLOCATOR: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Names the process's allocator for `INFO memory` (`mem_allocator`); the
/// `rlockd` binary sets it when it allocates with jemalloc.
pub fn set_allocator_name(name: &'static str) {
    let _ = ALLOCATOR.set(name);
}

/// The allocator `INFO memory` reports (`libc` unless told otherwise).
pub fn allocator_name() -> &'static str {
    ALLOCATOR.get().copied().unwrap_or("libc")
}
