//! Sorted-set structure benchmarks: a 1M-member set built directly with
//! `rlockd::testing::ZSet` (the sorted set behind ZADD), then the operations ZRANGEBYSCORE ... LIMIT and
//! ZRANK/ZRANGE-by-rank rely on (O(log n) rank and range positioning).
//!
//! The `zset_small/*` group measures lock-shaped windows instead: a sorted
//! set of W = 1 to 128 members (a sliding-window rate limiter, a fair
//! lock's timeouts), kept at W by removing the oldest before adding, in the
//! skip list form (`skiplist`, every sorted set before the compact form)
//! and in the form a `ZSet` of that size takes (`zset`), side by side.
//!
//! Run with `cargo bench --bench zset` (`-- zset_small` for the windows).

use std::hint::black_box;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use rand::{Rng, SeedableRng};
use rlockd::testing::{ScoreBound, ZSet};

const N: usize = 1_000_000;

fn build() -> (ZSet, Vec<Bytes>) {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(42);
    let mut z = ZSet::new();
    let mut members = Vec::with_capacity(N);
    for i in 0..N {
        let m = Bytes::from(format!("member:{i:07}"));
        z.insert(m.clone(), rng.random_range(0.0..1_000_000.0));
        members.push(m);
    }
    (z, members)
}

fn benches(c: &mut Criterion) {
    let (z, members) = build();
    assert_eq!(z.len(), N);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);

    // ZRANGEBYSCORE key min +inf LIMIT 0 10: position by score, walk 10.
    c.bench_function("zset_1m/range_by_score_limit_10", |b| {
        b.iter(|| {
            let min = ScoreBound { value: rng.random_range(0.0..1_000_000.0), exclusive: false };
            let max = ScoreBound { value: f64::INFINITY, exclusive: false };
            let (lo, hi) = z.score_range(min, max);
            let n = (hi - lo).min(10);
            let out: Vec<(usize, f64)> = z.iter_from(lo).take(n).map(|(m, s)| (m.len(), s)).collect();
            black_box(out)
        })
    });

    // ... with an OFFSET deep into the range (LIMIT 5000 10).
    c.bench_function("zset_1m/range_by_score_offset_5000_limit_10", |b| {
        b.iter(|| {
            let min = ScoreBound { value: rng.random_range(0.0..900_000.0), exclusive: true };
            let max = ScoreBound { value: 1_000_000.0, exclusive: false };
            let (lo, hi) = z.score_range(min, max);
            let start = (lo + 5000).min(hi);
            let out: Vec<(usize, f64)> =
                z.iter_from(start).take((hi - start).min(10)).map(|(m, s)| (m.len(), s)).collect();
            black_box(out)
        })
    });

    // ZCOUNT: two O(log n) rank searches.
    c.bench_function("zset_1m/count_by_score", |b| {
        b.iter(|| {
            let a = rng.random_range(0.0..1_000_000.0);
            let (lo, hi) = z.score_range(
                ScoreBound { value: a, exclusive: false },
                ScoreBound { value: a + 10_000.0, exclusive: false },
            );
            black_box(hi - lo)
        })
    });

    // ZRANK member.
    c.bench_function("zset_1m/rank", |b| {
        b.iter(|| {
            let m = &members[rng.random_range(0..N)];
            black_box(z.rank(m))
        })
    });

    // ZRANGE key r r: element at a rank.
    c.bench_function("zset_1m/element_at_rank", |b| {
        b.iter(|| {
            let r = rng.random_range(0..N);
            black_box(z.get_by_rank(r).map(|(m, s)| (m.len(), s)))
        })
    });

    // ZADD of an existing member with a new score (remove + reinsert).
    let mut zz = z.clone();
    c.bench_function("zset_1m/update_score", |b| {
        b.iter(|| {
            let m = members[rng.random_range(0..N)].clone();
            black_box(zz.insert(m, rng.random_range(0.0..1_000_000.0)))
        })
    });
}

/// A window of `w` members `req:<t>` with scores `t`, for `t` in `[0, w)`:
/// in the skip list form when `skiplist` (what every sorted set was before
/// the compact form, and what a set past the compact form's size is), else
/// in the form `ZSet` picks for its size.
fn window(w: usize, skiplist: bool) -> ZSet {
    let mut z = ZSet::new();
    if skiplist {
        z.to_skiplist();
    }
    for t in 0..w {
        z.insert(Bytes::from(format!("req:{t:012}")), t as f64);
    }
    z
}

fn small_windows(c: &mut Criterion) {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
    for w in [1usize, 10, 16, 32, 64, 128] {
        for (form, skiplist) in [("skiplist", true), ("zset", false)] {
            let name = |op: &str| format!("zset_small/{w}/{form}/{op}");
            // ZREMRANGEBYSCORE key -inf (t-w+1 ; ZADD key t req:t — the window slides by one.
            let mut z = window(w, skiplist);
            let mut t = w;
            c.bench_function(&name("slide"), |b| {
                b.iter(|| {
                    let min = ScoreBound { value: f64::NEG_INFINITY, exclusive: false };
                    let max = ScoreBound { value: (t + 1 - w) as f64, exclusive: true };
                    let (lo, hi) = z.score_range(min, max);
                    black_box(z.remove_rank_range(lo, hi));
                    black_box(z.insert(Bytes::from(format!("req:{t:012}")), t as f64));
                    t += 1;
                })
            });
            assert_eq!(z.len(), w);
            let z = window(w, skiplist);
            eprintln!("{w} members, {form}: small form {}", z.is_small());
            let members: Vec<Bytes> = (0..w).map(|t| Bytes::from(format!("req:{t:012}"))).collect();
            // ZRANGEBYSCORE key a +inf over the window's upper half.
            c.bench_function(&name("range_by_score"), |b| {
                b.iter(|| {
                    let min = ScoreBound { value: (w / 2) as f64, exclusive: false };
                    let max = ScoreBound { value: f64::INFINITY, exclusive: false };
                    let (lo, hi) = z.score_range(min, max);
                    let out: Vec<(usize, f64)> = z.iter_from(lo).take(hi - lo).map(|(m, s)| (m.len(), s)).collect();
                    black_box(out)
                })
            });
            c.bench_function(&name("score"), |b| b.iter(|| black_box(z.score(&members[rng.random_range(0..w)]))));
            c.bench_function(&name("rank"), |b| b.iter(|| black_box(z.rank(&members[rng.random_range(0..w)]))));
            // ZADD of an existing member with a new score (a lock's renewal).
            let mut zz = z.clone();
            c.bench_function(&name("update_score"), |b| {
                b.iter(|| {
                    let m = members[rng.random_range(0..w)].clone();
                    black_box(zz.insert(m, rng.random_range(0.0..w as f64)))
                })
            });
        }
    }
}

criterion_group! {
    name = zset;
    config = Criterion::default().sample_size(50);
    targets = benches, small_windows
}
criterion_main!(zset);
