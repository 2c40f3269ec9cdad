//! The request parser never panics, and chunked delivery never changes what it parses.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    rlockd::testing::check_parser(data);
});
