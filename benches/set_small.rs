//! Small sets, the two forms side by side in one run: a set of W members
//! in the hash set form (every set before the compact form; a `SetValue`
//! converted with `to_big` first) and in the form a `SetValue` takes at
//! that size (`set`: the packed buffer up to its size limit, the hash set
//! past it). Two shapes of member: integers `0..W` (an intset to Redis) and
//! Redisson-like client ids `<uuid>:<thread>` (41 bytes, the same first 36).
//!
//! Operations: `is_member` (SISMEMBER of a present member), `miss`
//! (SISMEMBER of an absent one), `add_remove` (SADD of a new member, SREM
//! of the oldest: the set stays at W, a semaphore's or a queue's churn),
//! `members` (SMEMBERS' copy of every member).
//!
//! As `benches/zset_small.rs`: the forms alternate in short rounds and each
//! keeps its fastest round, which another process's load can only slow.
//!
//! Run with `cargo bench --bench set_small` (`-- <rounds>`, default 101).

#[path = "common/alternate.rs"]
mod alternate;
use alternate::Op;

use std::hint::black_box;

use rlockd::testing::SetValue;

/// Allocations (the members a reply copies) cost what they cost in the
/// server, which allocates with jemalloc.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn member(shape: &str, t: usize) -> Vec<u8> {
    match shape {
        "int" => t.to_string().into_bytes(),
        _ => format!("8f2b6c1e-4a7d-4e21-9c3b-5d6e7f809a1b:{t:04}").into_bytes(),
    }
}

fn filled(shape: &str, w: usize, big: bool) -> SetValue {
    let mut s = SetValue::new();
    if big {
        s.to_big();
    }
    for t in 0..w {
        s.insert(&member(shape, t));
    }
    s
}

fn op(name: &str, shape: &str, w: usize, big: bool) -> Op {
    let mut s = filled(shape, w, big);
    let members: Vec<Vec<u8>> = (0..w).map(|t| member(shape, t)).collect();
    let absent: Vec<Vec<u8>> = (0..64).map(|t| member(shape, 100_000 + t)).collect();
    // A fixed pseudo-random walk over the members (no RNG in the loop).
    let pick = move |i: usize| (i.wrapping_mul(2_654_435_761) >> 7) % w;
    match name {
        "is_member" => Box::new(move |i| {
            black_box(s.contains(&members[pick(i)]));
        }),
        "miss" => Box::new(move |i| {
            black_box(s.contains(&absent[i % 64]));
        }),
        "add_remove" => {
            // The set holds names[t - w .. t] (mod 4096) before each step.
            let names: Vec<Vec<u8>> = (0..4096).map(|t| member(shape, t)).collect();
            let mut t = w;
            Box::new(move |_| {
                black_box(s.insert(&names[t % 4096]));
                black_box(s.remove(&names[(t - w) % 4096]));
                t += 1;
            })
        }
        "members" => Box::new(move |_| {
            black_box(s.to_vec());
        }),
        _ => unreachable!(),
    }
}

fn main() {
    alternate::print_table(
        alternate::rounds(101),
        &[1, 4, 8, 16, 24, 32, 64, 128],
        &["int", "id"],
        &["is_member", "miss", "add_remove", "members"],
        ["members", "hash set", "set"],
        |w| if filled("int", w, false).is_small() { "buffer" } else { "hash set" },
        op,
    );
}
