//! The request parser never panics; chunked delivery never changes what it
//! parses; each multibulk command re-encodes to the bytes it came from, each
//! unquoted inline command is its line split on whitespace, and every error
//! is one of Redis's protocol error texts.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = rlockd_fuzz::check::check_parser(data) {
        panic!("{e}");
    }
});
