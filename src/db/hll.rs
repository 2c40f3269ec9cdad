//! HyperLogLog values, in Redis's own byte layout, so a value written by
//! rlockd reads back on Redis and the other way round.
//!
//! Layout: a 16-byte header — `HYLL`, the encoding (0 dense, 1 sparse),
//! three unused bytes, and the cached cardinality as 8 little-endian bytes
//! whose top bit (bit 7 of the last byte) marks the cache invalid — then
//! the 16384 registers:
//!
//! * **dense**: 6 bits per register, packed little-endian (register `i`
//!   starts at bit `6 i`), 12288 bytes;
//! * **sparse**: run-length opcodes — `00xxxxxx` ZERO (1..64 zero
//!   registers), `01xxxxxx yyyyyyyy` XZERO (1..16384 zero registers),
//!   `1vvvvvxx` VAL (1..4 registers of value 1..32).
//!
//! An element is hashed with MurmurHash64A (seed `0xadc83b19`); the low 14
//! bits pick the register, and the register takes the position of the
//! lowest set bit of the remaining 50 bits (1-based; 51 when all are zero).
//! A sparse value becomes dense when a register needs a value above 32 or
//! the value would grow past `hll-sparse-max-bytes`. The cardinality is
//! Ertl's improved estimator over the register histogram.

/// Registers (2^14).
pub const REGISTERS: usize = 16384;
const P: u32 = 14;
const Q: u32 = 64 - P;
const P_MASK: u64 = (REGISTERS as u64) - 1;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// Header bytes.
pub const HDR: usize = 16;
/// Length of a dense value.
pub const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
const SPARSE_XZERO_MAX_LEN: usize = 16384;
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// A value whose registers cannot be read (`INVALIDOBJ`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// An empty HyperLogLog: sparse, one XZERO run, cache valid at 0.
pub fn new_empty() -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR + 2);
    v.extend_from_slice(b"HYLL");
    v.push(SPARSE);
    v.extend_from_slice(&[0; 11]);
    let mut aux = REGISTERS;
    while aux > 0 {
        let run = aux.min(SPARSE_XZERO_MAX_LEN);
        push_xzero(&mut v, run);
        aux -= run;
    }
    v
}

/// True if `b` is a HyperLogLog as Redis checks it: magic, a known
/// encoding, and the exact length for a dense one.
pub fn is_valid(b: &[u8]) -> bool {
    b.len() >= HDR && &b[..4] == b"HYLL" && b[4] <= SPARSE && (b[4] != DENSE || b.len() == DENSE_SIZE)
}

/// True if the value uses the sparse encoding.
pub fn is_sparse(b: &[u8]) -> bool {
    b[4] == SPARSE
}

/// The cached cardinality, if the cache is valid.
pub fn cached(b: &[u8]) -> Option<u64> {
    (b[15] & 0x80 == 0).then(|| u64::from_le_bytes(b[8..16].try_into().expect("8 bytes")))
}

/// Stores the cached cardinality (valid).
pub fn set_cache(b: &mut [u8], card: u64) {
    b[8..16].copy_from_slice(&card.to_le_bytes());
}

/// Marks the cached cardinality invalid.
pub fn invalidate(b: &mut [u8]) {
    b[15] |= 0x80;
}

// ---------------------------------------------------------------------------
// Hashing

/// MurmurHash64A (Austin Appleby), blocks read little-endian.
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate().rev() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element maps to and the value it offers.
pub fn pat_len(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, 0xadc8_3b19);
    let index = (hash & P_MASK) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

// ---------------------------------------------------------------------------
// Dense registers

fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = u16::from(regs[byte]);
    let b1 = u16::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & u16::from(REGISTER_MAX)) as u8
}

fn dense_put(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = u16::from(val);
    let m = u16::from(REGISTER_MAX);
    regs[byte] = ((u16::from(regs[byte]) & !(m << fb)) | (v << fb)) as u8;
    if let Some(b) = regs.get_mut(byte + 1) {
        let fb8 = 8 - fb;
        *b = ((u16::from(*b) & !(m >> fb8)) | (v >> fb8)) as u8;
    }
}

/// Raises register `i` to `val` if lower; true if it changed.
fn dense_set(regs: &mut [u8], i: usize, val: u8) -> bool {
    if val > dense_get(regs, i) {
        dense_put(regs, i, val);
        true
    } else {
        false
    }
}

// ---------------------------------------------------------------------------
// Sparse opcodes

fn push_xzero(v: &mut Vec<u8>, len: usize) {
    let l = len - 1;
    v.push(((l >> 8) as u8) | 0x40);
    v.push((l & 0xff) as u8);
}

fn push_zero(v: &mut Vec<u8>, len: usize) {
    v.push((len - 1) as u8);
}

fn val_op(val: u8, len: usize) -> u8 {
    (((val - 1) << 2) | (len as u8 - 1)) | 0x80
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Zero(usize),
    XZero(usize),
    Val(u8, usize),
}

/// The opcode at `p` and its length in bytes (an XZERO cut short by the
/// end reads its second byte as 0, as Redis reads the string's terminator).
fn op_at(s: &[u8], p: usize) -> (Op, usize) {
    let b = s[p];
    if b & 0xc0 == 0 {
        (Op::Zero(usize::from(b & 0x3f) + 1), 1)
    } else if b & 0x80 == 0 {
        let lo = usize::from(s.get(p + 1).copied().unwrap_or(0));
        (Op::XZero(((usize::from(b & 0x3f) << 8) | lo) + 1), 2)
    } else {
        (Op::Val(((b >> 2) & 0x1f) + 1, usize::from(b & 3) + 1), 1)
    }
}

/// Calls `f(first_register, run, value)` for each VAL run of a sparse
/// body; fails (`Corrupt`) as soon as a VAL run would pass the last
/// register, and unless exactly 16384 registers are covered.
fn sparse_runs(body: &[u8], mut f: impl FnMut(usize, usize, u8)) -> Result<(), Corrupt> {
    let mut p = 0;
    let mut idx = 0;
    while p < body.len() {
        let (op, n) = op_at(body, p);
        match op {
            Op::Zero(run) | Op::XZero(run) => idx += run,
            Op::Val(v, run) => {
                if run + idx > REGISTERS {
                    return Err(Corrupt);
                }
                f(idx, run, v);
                idx += run;
            }
        }
        p += n;
    }
    if idx == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// Converts a sparse value to dense in place (header, cache included,
/// kept). Ok(true) if it was converted, Ok(false) if already dense.
pub fn to_dense(hll: &mut Vec<u8>) -> Result<bool, Corrupt> {
    if hll[4] == DENSE {
        return Ok(false);
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR].copy_from_slice(&hll[..HDR]);
    dense[4] = DENSE;
    {
        let regs = &mut dense[HDR..];
        sparse_runs(&hll[HDR..], |first, run, v| {
            for i in first..first + run {
                dense_put(regs, i, v);
            }
        })?;
    }
    *hll = dense;
    Ok(true)
}

/// Raises register `index` of a sparse value to `count`: Redis's in-place
/// edit (split the covering opcode, then merge equal neighbours), or a
/// promotion to dense when the value does not fit or the body would grow
/// past `sparse_max` bytes.
fn sparse_set(hll: &mut Vec<u8>, index: usize, count: u8, sparse_max: usize) -> Result<bool, Corrupt> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(hll, index, count);
    }
    let end = hll.len();
    let mut p = HDR;
    let mut first = 0usize;
    let mut prev: Option<usize> = None;
    let mut span = 0usize;
    let mut op = Op::Zero(0);
    let mut oplen = 1;
    while p < end {
        let (o, n) = op_at(hll, p);
        op = o;
        oplen = n;
        span = match o {
            Op::Zero(r) | Op::XZero(r) | Op::Val(_, r) => r,
        };
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += n;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(Corrupt);
    }
    let mut seq: Vec<u8> = Vec::with_capacity(5);
    match op {
        Op::Val(old, runlen) => {
            if old >= count {
                return Ok(false);
            }
            if runlen == 1 {
                hll[p] = val_op(count, 1);
                merge_adjacent(hll, prev.unwrap_or(HDR));
                return Ok(true);
            }
        }
        Op::Zero(1) => {
            hll[p] = val_op(count, 1);
            merge_adjacent(hll, prev.unwrap_or(HDR));
            return Ok(true);
        }
        _ => {}
    }
    let last = first + span - 1;
    match op {
        Op::Zero(_) | Op::XZero(_) => {
            let zeros = |seq: &mut Vec<u8>, len: usize| {
                if len > SPARSE_ZERO_MAX_LEN {
                    push_xzero(seq, len);
                } else {
                    push_zero(seq, len);
                }
            };
            if index != first {
                zeros(&mut seq, index - first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                zeros(&mut seq, last - index);
            }
        }
        Op::Val(cur, _) => {
            if index != first {
                seq.push(val_op(cur, index - first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(cur, last - index));
            }
        }
    }
    if seq.len() > oplen && hll.len() + seq.len() - oplen > sparse_max {
        return promote(hll, index, count);
    }
    let op_end = (p + oplen).min(end);
    hll.splice(p..op_end, seq);
    merge_adjacent(hll, prev.unwrap_or(HDR));
    Ok(true)
}

/// Redis's clean-up after a sparse edit: from `start`, over at most five
/// opcodes, merges two adjacent VAL opcodes of equal value whose runs fit
/// in one.
fn merge_adjacent(hll: &mut Vec<u8>, start: usize) {
    let mut p = start;
    let mut scan = 5;
    while p < hll.len() && scan > 0 {
        scan -= 1;
        let (op, n) = op_at(hll, p);
        let Op::Val(v1, l1) = op else {
            p += n;
            continue;
        };
        if p + 1 < hll.len() {
            if let (Op::Val(v2, l2), _) = op_at(hll, p + 1) {
                if v1 == v2 && l1 + l2 <= SPARSE_VAL_MAX_LEN {
                    hll[p + 1] = val_op(v1, l1 + l2);
                    hll.remove(p);
                    continue;
                }
            }
        }
        p += 1;
    }
}

fn promote(hll: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    to_dense(hll)?;
    let changed = dense_set(&mut hll[HDR..], index, count);
    debug_assert!(changed, "a promotion always raises the register");
    Ok(changed)
}

/// Raises register `index` to `count` in either encoding.
pub fn set_register(hll: &mut Vec<u8>, index: usize, count: u8, sparse_max: usize) -> Result<bool, Corrupt> {
    if hll[4] == DENSE {
        Ok(dense_set(&mut hll[HDR..], index, count))
    } else {
        sparse_set(hll, index, count, sparse_max)
    }
}

/// Adds an element; Ok(true) if a register changed. The cache is left as
/// is (the caller invalidates it).
pub fn add(hll: &mut Vec<u8>, ele: &[u8], sparse_max: usize) -> Result<bool, Corrupt> {
    let (index, count) = pat_len(ele);
    set_register(hll, index, count, sparse_max)
}

/// Raises `max[i]` to each register of `hll` (one byte per register).
pub fn merge_into(max: &mut [u8], hll: &[u8]) -> Result<(), Corrupt> {
    if hll[4] == DENSE {
        let regs = &hll[HDR..];
        for (i, m) in max.iter_mut().enumerate().take(REGISTERS) {
            *m = (*m).max(dense_get(regs, i));
        }
        Ok(())
    } else {
        sparse_runs(&hll[HDR..], |first, run, v| {
            for m in &mut max[first..first + run] {
                *m = (*m).max(v);
            }
        })
    }
}

/// The 16384 register values of a dense value.
pub fn dense_registers(hll: &[u8]) -> Vec<u8> {
    (0..REGISTERS).map(|i| dense_get(&hll[HDR..], i)).collect()
}

/// `PFDEBUG DECODE` text of a sparse body: `z:len`, `Z:len`, `v:val,len`.
pub fn decode_sparse(hll: &[u8]) -> String {
    let body = &hll[HDR..];
    let mut out = Vec::new();
    let mut p = 0;
    while p < body.len() {
        let (op, n) = op_at(body, p);
        out.push(match op {
            Op::Zero(r) => format!("z:{r}"),
            Op::XZero(r) => format!("Z:{r}"),
            Op::Val(v, r) => format!("v:{v},{r}"),
        });
        p += n;
    }
    out.join(" ")
}

// ---------------------------------------------------------------------------
// Estimation

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let prev = z;
        z += x * y;
        y += y;
        if prev == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let prev = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if prev == z {
            return z / 3.0;
        }
    }
}

fn estimate(histo: &[u64; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - histo[Q as usize + 1] as f64) / m);
    for j in (1..=Q as usize).rev() {
        z += histo[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histo[0] as f64 / m);
    // llroundl: half away from zero; out of range (registers no hash can
    // produce, e.g. all at 63) gives LLONG_MIN, as on x86-64.
    let e = (ALPHA_INF * m * m / z).round();
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&e) {
        e as i64 as u64
    } else {
        i64::MIN as u64
    }
}

/// The cardinality estimate of a value (not using or touching the cache).
pub fn count(hll: &[u8]) -> Result<u64, Corrupt> {
    let mut histo = [0u64; 64];
    if hll[4] == DENSE {
        let regs = &hll[HDR..];
        for i in 0..REGISTERS {
            histo[usize::from(dense_get(regs, i))] += 1;
        }
    } else {
        // Unlike the merge, the histogram counts every run (no overflow
        // stop), and only the total decides validity.
        let body = &hll[HDR..];
        let mut p = 0;
        let mut idx = 0usize;
        while p < body.len() {
            let (op, n) = op_at(body, p);
            match op {
                Op::Zero(r) | Op::XZero(r) => {
                    histo[0] += r as u64;
                    idx += r;
                }
                Op::Val(v, r) => {
                    histo[usize::from(v)] += r as u64;
                    idx += r;
                }
            }
            p += n;
        }
        if idx != REGISTERS {
            return Err(Corrupt);
        }
    }
    Ok(estimate(&histo))
}

/// The estimate of raw registers (one byte each: a union being counted).
pub fn count_raw(max: &[u8]) -> u64 {
    let mut histo = [0u64; 64];
    for &r in max.iter().take(REGISTERS) {
        histo[usize::from(r & 63)] += 1;
    }
    estimate(&histo)
}

// ---------------------------------------------------------------------------
// Self test (PFSELFTEST)

/// Checks the register packing, that sparse and dense values agree, and
/// that estimates stay within the expected error; the error text on
/// failure, as `PFSELFTEST` reports it.
pub fn selftest(mut rand: impl FnMut() -> u64) -> Result<(), String> {
    // Register packing: write random values, read them back.
    let mut regs = vec![0u8; DENSE_SIZE - HDR];
    let mut expect = vec![0u8; REGISTERS];
    for _ in 0..100 {
        for (i, e) in expect.iter_mut().enumerate() {
            let v = (rand() & u64::from(REGISTER_MAX)) as u8;
            *e = v;
            dense_put(&mut regs, i, v);
        }
        for (i, &e) in expect.iter().enumerate() {
            if dense_get(&regs, i) != e {
                return Err(format!("TESTFAILED Register error at index {i}"));
            }
        }
    }
    // Sparse and dense agree; the error stays within bounds.
    let mut sparse = new_empty();
    let mut dense = new_empty();
    to_dense(&mut dense).map_err(|_| "TESTFAILED dense conversion failed".to_string())?;
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let seed = rand();
    let mut checkpoint = 1u64;
    for j in 1..=1_000_000u64 {
        let ele = (j ^ seed).to_le_bytes();
        add(&mut sparse, &ele, 3000).map_err(|_| "TESTFAILED corrupt sparse value".to_string())?;
        add(&mut dense, &ele, 3000).map_err(|_| "TESTFAILED corrupt dense value".to_string())?;
        if j != checkpoint {
            continue;
        }
        let a = count(&dense).map_err(|_| "TESTFAILED corrupt dense value".to_string())?;
        let b = count(&sparse).map_err(|_| "TESTFAILED corrupt sparse value".to_string())?;
        if a != b {
            return Err(format!("TESTFAILED dense/sparse disagree: {a} vs {b}"));
        }
        // Redis's bound: six standard errors, and at most 1 at cardinality
        // 10 (where a collision is likely enough to fail a relative bound);
        // the absolute error as an integer in the message.
        let maxerr = if j == 10 { 1 } else { (relerr * 6.0 * j as f64).ceil() as u64 };
        let abserr = j.abs_diff(a);
        if abserr > maxerr {
            return Err(format!("TESTFAILED Too big error. card:{j} abserr:{abserr}"));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_value_is_redis_bytes() {
        let v = new_empty();
        assert_eq!(v.len(), 18);
        assert_eq!(&v[16..], &[0x7f, 0xff]);
        assert_eq!(count(&v), Ok(0));
    }

    #[test]
    fn register_packing_roundtrips() {
        let mut regs = vec![0u8; DENSE_SIZE - HDR];
        for i in 0..REGISTERS {
            dense_put(&mut regs, i, (i % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&regs, i), (i % 64) as u8);
        }
    }

    #[test]
    fn sparse_and_dense_agree() {
        let mut s = new_empty();
        let mut d = new_empty();
        to_dense(&mut d).unwrap();
        for i in 0..5000u32 {
            let e = i.to_string();
            add(&mut s, e.as_bytes(), 1 << 20).unwrap();
            add(&mut d, e.as_bytes(), 1 << 20).unwrap();
            if i % 97 == 0 {
                assert_eq!(count(&s), count(&d));
            }
        }
        let mut s2 = s.clone();
        to_dense(&mut s2).unwrap();
        assert_eq!(&s2[HDR..], &d[HDR..]);
    }
}
