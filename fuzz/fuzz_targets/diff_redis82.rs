//! The `diff` target against redis-server 8.2.3, rlockd answering as 8.2.3
//! (`redis-version 8.2.3`): the same sequences plus what Redis 7.4 to 8.2
//! added (hash-field expiration, HGETEX/HSETEX/HGETDEL, BITOP's new
//! operations, XDELEX/XACKDEL and the reference options). Needs the oracle
//! `tests/oracles/install.sh` installs (or `RLOCKD_REDIS82_SERVER=/path`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use rlockd_fuzz::diff::Oracle;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = rlockd_fuzz::diff::run_diff_with(data, Oracle::Redis82) {
        panic!("{e}");
    }
});
