//! Small lists, the two forms side by side in one run: a list of W elements
//! as a ring of `Bytes` (`ListValue::unpack` first) and in the form a
//! `ListValue` takes at that size (`list`: packed up to its limit, a ring
//! past it). Two shapes of element: 10-byte items (a job queue's ids, a
//! window of timestamps) and 40-byte fair-lock waiter ids.
//!
//! Operations: `range` (LRANGE 0 -1: every element as a reply), `index`
//! (LINDEX of a position spread over the list), `queue` (RPUSH then LPOP:
//! the list stays at W), `lpush_rpop` (LPUSH then RPOP, the reliable
//! queue's end), `set` (LSET of a position), `pos_miss` (LPOS of an absent
//! element: a whole walk, as LREM's).
//!
//! As `benches/hash_small.rs`: the forms alternate in short rounds and each
//! keeps its fastest round, which another process's load can only slow.
//!
//! Run with `cargo bench --bench list_small` (`-- <rounds>`, default 101;
//! `LIST_SMALL_W=8,16` for other sizes).

#[path = "common/alternate.rs"]
mod alternate;
use alternate::Op;

use std::hint::black_box;

use rlockd::testing::ListValue;

#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn elem(shape: &str, t: usize) -> Vec<u8> {
    match shape {
        "short" => format!("item:{t:05}").into_bytes(),
        _ => format!("8f2b6c1e-4a7d-4e21-9c3b-5d6e7f809a1b:{t:03}").into_bytes(),
    }
}

fn filled(shape: &str, w: usize, ring: bool) -> ListValue {
    let mut l = ListValue::new();
    if ring {
        l.unpack();
    }
    for t in 0..w {
        l.push_back(&elem(shape, t));
    }
    l
}

fn op(name: &str, shape: &str, w: usize, ring: bool) -> Op {
    let mut l = filled(shape, w, ring);
    let x = elem(shape, 999);
    let pick = move |i: usize| (i.wrapping_mul(2_654_435_761) >> 7) % w;
    match name {
        "range" => Box::new(move |_| {
            black_box(l.replies(..));
        }),
        "index" => Box::new(move |i| {
            black_box(l.reply_at(pick(i)));
        }),
        "queue" => Box::new(move |_| {
            l.push_back(&x);
            black_box(l.pop_front());
        }),
        "lpush_rpop" => Box::new(move |_| {
            l.push_front(&x);
            black_box(l.pop_back());
        }),
        "set" => Box::new(move |i| {
            l.set(pick(i), &x);
        }),
        "pos_miss" => Box::new(move |_| {
            black_box(l.position(b"absent"));
        }),
        _ => unreachable!(),
    }
}

fn main() {
    let ws = alternate::sizes("LIST_SMALL_W", &[1, 8, 16, 32, 64, 128]);
    alternate::print_table(
        alternate::rounds(101),
        &ws,
        &["short", "id"],
        &["range", "index", "queue", "lpush_rpop", "set", "pos_miss"],
        ["elements", "ring", "list"],
        |w| if filled("short", w, false).is_packed() { "packed" } else { "ring" },
        op,
    );
}
