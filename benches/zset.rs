//! Sorted-set structure benchmarks: a 1M-member set built directly with
//! `rlockd::testing::ZSet` (the sorted set behind ZADD), then the operations ZRANGEBYSCORE ... LIMIT and
//! ZRANK/ZRANGE-by-rank rely on (O(log n) rank and range positioning).
//!
//! Run with `cargo bench --bench zset`.

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
            let out: Vec<(&Bytes, f64)> = z.iter_from(lo).take(n).collect();
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
            let out: Vec<(&Bytes, f64)> = z.iter_from(start).take((hi - start).min(10)).collect();
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

criterion_group! {
    name = zset;
    config = Criterion::default().sample_size(50);
    targets = benches
}
criterion_main!(zset);
