//! Arbitrary command streams never panic a handler, and every reply is
//! valid RESP2 and RESP3 according to an independent decoder (redis-protocol).
#![no_main]
use libfuzzer_sys::fuzz_target;
use rlockd::protocol::Resp;

fuzz_target!(|data: &[u8]| {
    for reply in rlockd::testing::check_dispatch(data) {
        let v2 = reply.to_bytes(Resp::V2);
        // Redis echoes raw bytes in errors and simple strings (e.g. an unknown
        // command's name); redis-protocol only decodes UTF-8 there.
        if std::str::from_utf8(&v2).is_err() {
            continue;
        }
        let (_, used) = redis_protocol::resp2::decode::decode(&v2).expect("valid RESP2").expect("complete RESP2 frame");
        assert_eq!(used, v2.len(), "one RESP2 frame per reply");
        let v3 = reply.to_bytes(Resp::V3);
        let (_, used) =
            redis_protocol::resp3::decode::complete::decode(&v3).expect("valid RESP3").expect("complete RESP3 frame");
        assert_eq!(used, v3.len(), "one RESP3 frame per reply");
    }
});
