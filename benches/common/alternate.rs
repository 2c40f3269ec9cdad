//! The timing loop the small-value benches share: two forms of one
//! operation alternate in rounds of 4,096 calls and each keeps its fastest
//! round, which another process's load can only slow (criterion's
//! one-then-the-other medians moved by ±50% between identical runs on a
//! shared 2-core machine; these by under ±10%).

use std::time::Instant;

/// One operation on one form, with its own state; called with a step
/// number that keeps counting across rounds.
pub type Op = Box<dyn FnMut(usize)>;

/// The fastest round of each form, in nanoseconds per call.
pub fn best_of(rounds: usize, forms: &mut [Op; 2]) -> [f64; 2] {
    let mut best = [f64::INFINITY; 2];
    let iters = 4096;
    let mut i = 0;
    for _ in 0..rounds {
        for (f, b) in forms.iter_mut().zip(best.iter_mut()) {
            let t = Instant::now();
            for _ in 0..iters {
                f(i);
                i += 1;
            }
            *b = b.min(t.elapsed().as_nanos() as f64 / iters as f64);
        }
    }
    best
}
