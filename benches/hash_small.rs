//! Small hashes, the two forms side by side in one run: a hash of W fields
//! in the index map form (a `HashValue` moved with `to_big` first) and in
//! the form a `HashValue` takes at that size (`hash`: the packed buffer up
//! to its size limit, the index map past it). Two shapes of field: short
//! names `f<i>` with one-byte values (a config or counter hash) and
//! Redisson-like client ids `<uuid>:<thread>` (41 bytes, the same first 36)
//! with re-entry counts (a lock's or a read-write lock's hash).
//!
//! Operations: `get` (HGET of a present field), `miss` (HEXISTS of an
//! absent one), `incr` (HINCRBY's read and write back of a count, the
//! length changing every tenth step), `add_remove` (HSET of a new field,
//! HDEL of the oldest: the hash stays at W), `all` (HGETALL's walk).
//!
//! As `benches/set_small.rs`: the forms alternate in short rounds and each
//! keeps its fastest round, which another process's load can only slow.
//!
//! Run with `cargo bench --bench hash_small` (`-- <rounds>`, default 101).

#[path = "common/alternate.rs"]
mod alternate;
use alternate::Op;

use std::hint::black_box;

use rlockd::testing::HashValue;

#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn field(shape: &str, t: usize) -> Vec<u8> {
    match shape {
        "short" => format!("f{t}").into_bytes(),
        _ => format!("8f2b6c1e-4a7d-4e21-9c3b-5d6e7f809a1b:{t:04}").into_bytes(),
    }
}

fn filled(shape: &str, w: usize, big: bool) -> HashValue {
    let mut h = HashValue::default();
    if big {
        h.to_big();
    }
    for t in 0..w {
        h.insert(&field(shape, t), b"1");
    }
    h
}

fn op(name: &str, shape: &str, w: usize, big: bool) -> Op {
    let mut h = filled(shape, w, big);
    let fields: Vec<Vec<u8>> = (0..w).map(|t| field(shape, t)).collect();
    let absent: Vec<Vec<u8>> = (0..64).map(|t| field(shape, 100_000 + t)).collect();
    let pick = move |i: usize| (i.wrapping_mul(2_654_435_761) >> 7) % w;
    match name {
        "get" => Box::new(move |i| {
            black_box(h.get(&fields[pick(i)]));
        }),
        "miss" => Box::new(move |i| {
            black_box(h.contains_key(&absent[i % 64]));
        }),
        "incr" => Box::new(move |i| {
            let f = &fields[pick(i)];
            let n: u64 = std::str::from_utf8(h.get(f).expect("present")).expect("utf8").parse().expect("number");
            let next = if n >= 9 { 1 } else { n + 1 };
            black_box(h.insert(f, next.to_string().as_bytes()));
        }),
        "add_remove" => {
            let names: Vec<Vec<u8>> = (0..4096).map(|t| field(shape, t)).collect();
            let mut t = w;
            Box::new(move |_| {
                black_box(h.insert(&names[t % 4096], b"1"));
                black_box(h.shift_remove(&names[(t - w) % 4096]));
                t += 1;
            })
        }
        "all" => Box::new(move |_| {
            for (f, v) in h.iter() {
                black_box((f, v));
            }
        }),
        _ => unreachable!(),
    }
}

fn main() {
    let ws = alternate::sizes("HASH_SMALL_W", &[1, 4, 8, 12, 16, 24, 32]);
    alternate::print_table(
        alternate::rounds(101),
        &ws,
        &["short", "id"],
        &["get", "miss", "incr", "add_remove", "all"],
        ["fields", "index map", "hash"],
        |w| if filled("short", w, false).is_packed() { "packed" } else { "index map" },
        op,
    );
}
