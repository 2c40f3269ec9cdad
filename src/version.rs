//! The Redis version rlockd reports (and whose behaviour it follows): in
//! `INFO`, `HELLO` and Lua's `redis.REDIS_VERSION`.

/// The version string (`redis_version` in `INFO`).
pub const REDIS_VERSION: &str = "7.0.15";
/// `REDIS_VERSION_NUM` as Lua sees it (0x00MMmmpp).
pub const REDIS_VERSION_NUM: i64 = 0x0007_000f;
