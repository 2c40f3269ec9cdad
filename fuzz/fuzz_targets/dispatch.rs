//! Arbitrary command streams never panic a handler; every reply, encoded in
//! RESP2 and RESP3, decodes with an independent decoder (redis-protocol) to
//! exactly what was encoded; afterwards the server answers and each
//! database's DBSIZE agrees with KEYS.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = rlockd_fuzz::run_dispatch(data) {
        panic!("{e}");
    }
});
