//! Small sorted sets, the two forms side by side in one run: a window of W
//! members `req:<t>` scored `t` (a sliding-window rate limiter, a fair
//! lock's timeouts), in the skip list form (every sorted set before the
//! compact form; a `ZSet` converted with `to_skiplist` first) and in the
//! form a `ZSet` takes at that size (`zset`: the small buffer up to its
//! size limit, the skip list past it).
//!
//! Criterion's run-one-then-the-other medians moved by ±50% on a shared
//! 2-core machine; here the forms alternate in short rounds and each
//! keeps its fastest round, which another process's load can only slow.
//!
//! Run with `cargo bench --bench zset_small` (`-- <rounds>`, default 201;
//! `ONLY=8:slide` runs one row, for a profiler).

#[path = "common/alternate.rs"]
mod alternate;
use alternate::Op;

use std::hint::black_box;

use bytes::Bytes;
use rlockd::testing::{ScoreBound, ZSet};

fn member(t: usize) -> Bytes {
    Bytes::from(format!("req:{t:012}"))
}

fn window(w: usize, skiplist: bool) -> ZSet {
    let mut z = ZSet::new();
    if skiplist {
        z.to_skiplist();
    }
    for t in 0..w {
        z.insert(member(t), t as f64);
    }
    z
}

fn op(name: &str, w: usize, skiplist: bool) -> Op {
    let mut z = window(w, skiplist);
    let members: Vec<Bytes> = (0..w).map(member).collect();
    // A fixed pseudo-random walk over the members (no RNG in the loop).
    let pick = move |i: usize| (i.wrapping_mul(2_654_435_761) >> 7) % w;
    match name {
        // ZREMRANGEBYSCORE key -inf (t-w+1 ; ZADD key t req:t.
        "slide" => {
            let mut t = w;
            let names: Vec<Bytes> = (0..4096).map(|i| member(w + i)).collect();
            Box::new(move |_| {
                let min = ScoreBound { value: f64::NEG_INFINITY, exclusive: false };
                let max = ScoreBound { value: (t + 1 - w) as f64, exclusive: true };
                let (lo, hi) = z.score_range(min, max);
                black_box(z.remove_rank_range(lo, hi));
                black_box(z.insert(names[t % 4096].clone(), t as f64));
                t += 1;
            })
        }
        // ZRANGEBYSCORE key w/2 +inf (the window's upper half).
        "range_by_score" => Box::new(move |_| {
            let min = ScoreBound { value: (w / 2) as f64, exclusive: false };
            let max = ScoreBound { value: f64::INFINITY, exclusive: false };
            let (lo, hi) = z.score_range(min, max);
            let out: Vec<(usize, f64)> = z.iter_from(lo).take(hi - lo).map(|(m, s)| (m.len(), s)).collect();
            black_box(out);
        }),
        "score" => Box::new(move |i| {
            black_box(z.score(&members[pick(i)]));
        }),
        "rank" => Box::new(move |i| {
            black_box(z.rank(&members[pick(i)]));
        }),
        // ZADD of an existing member with a new score (a lock's renewal).
        "update_score" => Box::new(move |i| {
            black_box(z.insert(members[pick(i)].clone(), (pick(i + 17) as f64) + 0.5));
        }),
        _ => unreachable!(),
    }
}

fn main() {
    let rounds: usize = std::env::args().filter_map(|a| a.parse().ok()).next().unwrap_or(201);
    println!("| W | operation | skip list | zset | zset / skip list | zset's form |");
    println!("|---:|---|---:|---:|---:|---|");
    for w in [1usize, 8, 16, 24, 32, 48, 64, 128] {
        let form = if window(w, false).is_small() { "buffer" } else { "skip list" };
        for name in ["slide", "range_by_score", "score", "rank", "update_score"] {
            if std::env::var("ONLY").is_ok_and(|only| only != format!("{w}:{name}")) {
                continue;
            }
            let best = alternate::best_of(rounds, &mut [op(name, w, true), op(name, w, false)]);
            println!("| {w} | {name} | {:.0} ns | {:.0} ns | {:.2} | {form} |", best[0], best[1], best[1] / best[0]);
        }
    }
}
