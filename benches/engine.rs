//! Socket-free paths, timed by criterion: a Redisson lock + unlock through
//! the dispatcher (`cmd::dispatch::process` → EVALSHA → Lua → `redis.call`), with lock
//! recording on (the default) and off; a one-field hash set/get; RESP
//! request parsing and reply encoding. What they leave out — sockets, the
//! event loop — `rlockd-bench` measures against redis-server; these isolate
//! the engine for before/after comparisons of one change.
//!
//! Run with `cargo bench --bench engine` (BENCHMARKS.md has figures).

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion};
use rlockd::protocol::{Reply, RequestParser, Resp};
use rlockd::testing::Harness;

const LOCK: &str = include_str!("../lua/reentrant_lock.lua");
const UNLOCK: &str = include_str!("../lua/reentrant_unlock.lua");
const HOLDER: &str = "3a8a7f4c-0b8e-4a5e-9d0c-6f1f0c9a2b11:57";

fn harness(test_control: bool) -> (Harness, String, String) {
    let params = if test_control { vec![] } else { vec![("test-control".into(), "no".into())] };
    let mut h = Harness::with_config(rlockd::Config { params, ..Default::default() });
    let mut load = |s: &str| match h.run(&["SCRIPT", "LOAD", s]) {
        Reply::Bulk(b) => String::from_utf8(b.to_vec()).expect("sha"),
        other => panic!("SCRIPT LOAD: {other:?}"),
    };
    let (lock, unlock) = (load(LOCK), load(UNLOCK));
    (h, lock, unlock)
}

fn lock_unlock(c: &mut Criterion) {
    for (name, tc) in [("lock+unlock (Redisson, EVALSHA)", true), ("lock+unlock, test-control no", false)] {
        let (mut h, lock, unlock) = harness(tc);
        let mut i = 0u64;
        c.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                let key = format!("lock:{}", i % 1024);
                let channel = format!("redisson_lock__channel:{{{key}}}");
                let r = h.run(&["EVALSHA", &lock, "1", &key, "30000", HOLDER]);
                assert_eq!(r, Reply::Nil);
                let r = h.run(&["EVALSHA", &unlock, "2", &key, &channel, "0", "30000", HOLDER]);
                assert_eq!(r, Reply::Int(1));
            })
        });
    }
}

fn hash(c: &mut Criterion) {
    let (mut h, _, _) = harness(false);
    let mut i = 0u64;
    c.bench_function("HSET + HGET one field", |b| {
        b.iter(|| {
            i += 1;
            let key = format!("hash:{}", i % 1024);
            assert_eq!(h.run(&["HSET", &key, HOLDER, "1"]), Reply::Int(i64::from(i <= 1024)));
            assert_eq!(h.run(&["HGET", &key, HOLDER]), Reply::bulk_str("1"));
        })
    });
}

fn resp(c: &mut Criterion) {
    let mut frame = Vec::new();
    for _ in 0..16 {
        frame.extend_from_slice(
            b"*6\r\n$7\r\nEVALSHA\r\n$40\r\n0123456789abcdef0123456789abcdef01234567\r\n$1\r\n1\r\n$7\r\nlock:42\r\n$5\r\n30000\r\n$38\r\n3a8a7f4c-0b8e-4a5e-9d0c-6f1f0c9a2b11:57\r\n",
        );
    }
    c.bench_function("parse 16 pipelined EVALSHA requests", |b| {
        b.iter(|| {
            let mut p = RequestParser::new();
            let mut buf = BytesMut::from(&frame[..]);
            let mut n = 0;
            while let Ok(Some(argv)) = p.next(&mut buf) {
                n += argv.len();
            }
            assert_eq!(black_box(n), 96);
        })
    });
    let reply = Reply::Array(vec![
        Reply::bulk(Bytes::from_static(b"lock:42")),
        Reply::Int(30000),
        Reply::Nil,
        Reply::bulk(Bytes::from_static(HOLDER.as_bytes())),
    ]);
    for (name, proto) in [("encode a 4-element reply, RESP2", Resp::V2), ("encode a 4-element reply, RESP3", Resp::V3)]
    {
        let mut out = BytesMut::with_capacity(4096);
        c.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                black_box(&reply).encode(proto, &mut out);
                assert!(!out.is_empty());
            })
        });
    }
}

criterion_group!(benches, lock_unlock, hash, resp);
criterion_main!(benches);
