//! A fixed amount of lock work through the dispatcher, without sockets, for
//! counting instructions: run it under `valgrind --tool=callgrind` and divide
//! the total by the number of operations. Instruction counts do not depend
//! on what else the machine is doing, so two builds (before and after a
//! change) compare exactly on a noisy 2-core machine. BENCHMARKS.md has the
//! figures and the commands.
//!
//! ```sh
//! cargo build --release --example script_cost
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \
//!     target/release/examples/script_cost lock-unlock 20000
//! callgrind_annotate /tmp/cg.out | head -n 20      # "PROGRAM TOTALS"
//! ```
//!
//! `SCRIPT_COST_PARAMS=test-control=no` runs it with lock recording off.
//!
//! Workloads: `lock-unlock` (Redisson's reentrant lock then unlock via
//! EVALSHA, a fresh lock name each time), `set-get` (SET then GET), `get`
//! (one key read again and again),
//! `hset-hget` (a one-field hash written and read), `ping`. Each first runs
//! the workload 1,000 times (warm-up, not counted apart: run it with 0 to
//! measure the fixed cost and subtract).

use rlockd::protocol::Reply;
use rlockd::testing::Harness;

const LOCK: &str = include_str!("../lua/reentrant_lock.lua");
const UNLOCK: &str = include_str!("../lua/reentrant_unlock.lua");

fn sha(h: &mut Harness, script: &str) -> String {
    match h.run(&["SCRIPT", "LOAD", script]) {
        Reply::Bulk(b) => String::from_utf8(b.to_vec()).expect("sha"),
        other => panic!("SCRIPT LOAD: {other:?}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let workload = args.get(1).map(String::as_str).unwrap_or("lock-unlock");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    // `SCRIPT_COST_PARAMS="test-control=no"`: parameters as the binary's
    // `--name value` (comma-separated).
    let params = std::env::var("SCRIPT_COST_PARAMS").unwrap_or_default();
    let params = params.split(',').filter_map(|p| p.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect();
    let mut h = Harness::with_config(rlockd::Config { params, ..Default::default() });
    let (lock, unlock) = (sha(&mut h, LOCK), sha(&mut h, UNLOCK));
    let holder = "3a8a7f4c-0b8e-4a5e-9d0c-6f1f0c9a2b11:57";
    let one = |i: usize, h: &mut Harness| match workload {
        "lock-unlock" => {
            let name = format!("lock:{i}");
            let channel = format!("redisson_lock__channel:{{{name}}}");
            let r = h.run(&["EVALSHA", &lock, "1", &name, "30000", holder]);
            assert_eq!(r, Reply::Nil, "lock");
            let r = h.run(&["EVALSHA", &unlock, "2", &name, &channel, "0", "30000", holder]);
            assert_eq!(r, Reply::Int(1), "unlock");
        }
        "set-get" => {
            let key = format!("key:{i}");
            assert_eq!(h.run(&["SET", &key, "value"]), Reply::ok());
            assert_eq!(h.run(&["GET", &key]), Reply::bulk_str("value"));
        }
        "get" => {
            // The same key read again and again (a cached value).
            if i == 0 {
                assert_eq!(h.run(&["SET", "key", "value"]), Reply::ok());
            }
            assert_eq!(h.run(&["GET", "key"]), Reply::bulk_str("value"));
        }
        "hset-hget" => {
            let key = format!("hash:{i}");
            assert_eq!(h.run(&["HSET", &key, holder, "1"]), Reply::Int(1));
            assert_eq!(h.run(&["HGET", &key, holder]), Reply::bulk_str("1"));
        }
        "ping" => assert_eq!(h.run(&["PING"]), Reply::status("PONG")),
        other => panic!("unknown workload {other}: lock-unlock, set-get, get, hset-hget or ping"),
    };
    for i in 0..1000 {
        one(i, &mut h);
    }
    for i in 0..n {
        one(1000 + i, &mut h);
    }
    println!("{workload}: {n} operations");
}
