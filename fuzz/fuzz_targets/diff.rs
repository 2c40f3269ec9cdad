//! Generated command sequences (scripts included) sent to an in-process
//! rlockd and to a real redis-server: every reply must be byte-identical
//! (up to what Redis leaves unspecified), and so must the keys left.
//! Needs `redis-server` on PATH (or `REDIS_SERVER=/path/to/redis-server`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = rlockd_fuzz::diff::run_diff(data) {
        panic!("{e}");
    }
});
