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

/// The rounds a bench was given (its first numeric argument), or `default`.
#[allow(dead_code)] // zset_small.rs takes its own
pub fn rounds(default: usize) -> usize {
    std::env::args().filter_map(|a| a.parse().ok()).next().unwrap_or(default)
}

/// The sizes to run: `var`'s comma-separated list when set, else `default`.
#[allow(dead_code)] // as `rounds`
pub fn sizes(var: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(var)
        .ok()
        .map(|v| v.split(',').filter_map(|w| w.parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// The Markdown table of a two-form bench: for each size `w`, shape and
/// operation, `op(name, shape, w, true)` (the reference form) against
/// `op(name, shape, w, false)` (the value's own form at that size, named by
/// `form(w)`), each its fastest round, and their ratio. `cols` names the
/// shape column, the reference form and the value.
#[allow(clippy::too_many_arguments, dead_code)] // as `rounds`
pub fn print_table(
    rounds: usize,
    ws: &[usize],
    shapes: &[&str],
    names: &[&str],
    cols: [&str; 3],
    form: impl Fn(usize) -> &'static str,
    op: impl Fn(&str, &str, usize, bool) -> Op,
) {
    let [shape_col, reference, value] = cols;
    println!("| W | {shape_col} | operation | {reference} | {value} | {value} / {reference} | {value}'s form |");
    println!("|---:|---|---|---:|---:|---:|---|");
    for &w in ws {
        let form = form(w);
        for shape in shapes {
            for name in names {
                let best = best_of(rounds, &mut [op(name, shape, w, true), op(name, shape, w, false)]);
                println!(
                    "| {w} | {shape} | {name} | {:.0} ns | {:.0} ns | {:.2} | {form} |",
                    best[0],
                    best[1],
                    best[1] / best[0]
                );
            }
        }
    }
}
