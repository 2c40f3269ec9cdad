//! Lua scripts generated from a grammar (`lua_gen`: nested statements,
//! metatables, coroutines, loadstring of generated code, long and deep
//! tables, redis.call with unpacked argv) run through EVAL on an in-process
//! server: no crash, every reply decodes with redis-protocol and matches what
//! was encoded, and the server still runs scripts and answers afterwards.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = rlockd_fuzz::run_lua(data) {
        panic!("{e}");
    }
});
