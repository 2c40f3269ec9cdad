//! Choosing keys to evict when `maxmemory` is exceeded (Redis's `evict.c`).
//!
//! Like Redis, the LRU/LFU policies are approximations by sampling: each
//! round looks at `maxmemory-samples` random keys per database and evicts the
//! best candidate among them. `volatile-ttl` takes the key with the nearest
//! deadline (exact here: the expiry index is ordered). The LRU policies rank
//! by each entry's access stamp (seconds on the server clock), the LFU ones by
//! its access counter, which the same `Entry::lru` word holds while an LFU
//! policy is selected (see [`Lfu`]).

use bytes::Bytes;
use rand::Rng;

use super::Db;

/// The initial access counter of a new key under an LFU policy (Redis's
/// `LFU_INIT_VAL`), so that new keys are not evicted before they had a
/// chance to be used.
pub const LFU_INIT_VAL: u8 = 5;

/// Redis 7.0's approximate LFU, as documented: a key's access word is
/// `minutes << 8 | counter`, with `minutes` the last decrement time in
/// minutes (16 bits, wrapping) and `counter` an 8-bit logarithmic counter.
/// An access first decays the counter by one per `lfu-decay-time` minutes
/// elapsed, then increments it with probability
/// `1 / ((counter - LFU_INIT_VAL) * lfu-log-factor + 1)` (always below the
/// initial value), saturating at 255.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lfu {
    /// `lfu-log-factor`.
    pub log_factor: u32,
    /// `lfu-decay-time`, minutes (0: never decay).
    pub decay_time: u32,
}

impl Lfu {
    /// Minutes on the server clock, 16 bits.
    fn minutes(now_ms: u64) -> u32 {
        ((now_ms / 60_000) & 0xFFFF) as u32
    }

    /// The access word of a new key (or of `RESTORE … FREQ counter`).
    pub fn word(now_ms: u64, counter: u8) -> u32 {
        Self::minutes(now_ms) << 8 | u32::from(counter)
    }

    /// The counter of `word` after the decay due at `now_ms` (what `OBJECT
    /// FREQ` answers and eviction ranks by; the word is not changed).
    pub fn counter(&self, word: u32, now_ms: u64) -> u8 {
        let counter = (word & 0xFF) as u8;
        if self.decay_time == 0 {
            return counter;
        }
        let (now, then) = (Self::minutes(now_ms), (word >> 8) & 0xFFFF);
        let elapsed = if now >= then { now - then } else { 65535 - then + now };
        let periods = elapsed / self.decay_time;
        counter.saturating_sub(u8::try_from(periods).unwrap_or(u8::MAX))
    }

    /// The word after one access at `now_ms`; `r` is a uniform draw in `[0, 1)`.
    pub fn access(&self, word: u32, now_ms: u64, r: f64) -> u32 {
        let mut counter = self.counter(word, now_ms);
        if counter < 255 {
            let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
            if r < 1.0 / (base * f64::from(self.log_factor) + 1.0) {
                counter += 1;
            }
        }
        Self::word(now_ms, counter)
    }
}

/// `maxmemory-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Refuse `deny-oom` commands instead of evicting.
    #[default]
    NoEviction,
    /// Least recently used among all keys.
    AllKeysLru,
    /// Least recently used among keys with a TTL.
    VolatileLru,
    /// Least frequently used among all keys.
    AllKeysLfu,
    /// Least frequently used among keys with a TTL.
    VolatileLfu,
    /// Any key.
    AllKeysRandom,
    /// Any key with a TTL.
    VolatileRandom,
    /// The key with the nearest deadline.
    VolatileTtl,
}

impl Policy {
    /// Parses a validated `maxmemory-policy` value.
    pub fn parse(s: &str) -> Policy {
        match s {
            "allkeys-lru" => Policy::AllKeysLru,
            "volatile-lru" => Policy::VolatileLru,
            "allkeys-lfu" => Policy::AllKeysLfu,
            "volatile-lfu" => Policy::VolatileLfu,
            "allkeys-random" => Policy::AllKeysRandom,
            "volatile-random" => Policy::VolatileRandom,
            "volatile-ttl" => Policy::VolatileTtl,
            _ => Policy::NoEviction,
        }
    }

    /// True for `allkeys-lfu` and `volatile-lfu`: entries keep an access
    /// counter instead of an access time.
    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    /// Whether an RDB file saved under this policy keeps each key's access
    /// time (LRU) or counter (LFU): the other policies' loads start them
    /// afresh.
    pub fn saves_access(self) -> bool {
        matches!(self, Policy::AllKeysLru | Policy::VolatileLru) || self.is_lfu()
    }

    fn volatile_only(self) -> bool {
        matches!(self, Policy::VolatileLru | Policy::VolatileLfu | Policy::VolatileRandom | Policy::VolatileTtl)
    }
}

/// The next key to evict under `policy`: `(database index, key)`, or `None`
/// when nothing is evictable. `lfu` (set while an LFU policy is selected)
/// ranks the samples by their decayed counter at `now_ms`, lowest first.
pub fn pick(
    dbs: &[Db],
    policy: Policy,
    samples: usize,
    lfu: Option<Lfu>,
    now_ms: u64,
    rng: &mut impl Rng,
) -> Option<(usize, Bytes)> {
    let samples = samples.max(1);
    match policy {
        Policy::NoEviction => None,
        Policy::VolatileTtl => dbs
            .iter()
            .enumerate()
            .filter_map(|(i, db)| db.first_expiring().map(|(at, k)| (at, i, k)))
            .min_by_key(|(at, _, _)| *at)
            .map(|(_, i, k)| (i, k.to_bytes())),
        Policy::AllKeysRandom | Policy::VolatileRandom => {
            let candidates: Vec<usize> = (0..dbs.len())
                .filter(|&i| if policy.volatile_only() { dbs[i].has_expiring() } else { !dbs[i].map.is_empty() })
                .collect();
            let i = *candidates.get(rng.random_range(0..candidates.len().max(1)))?;
            let db = &dbs[i];
            if policy.volatile_only() {
                // A random key with a TTL: sample the map, fall back on the
                // expiry index when the volatile keys are rare.
                for _ in 0..samples * 4 {
                    let (k, e) = db.map.get_index(rng.random_range(0..db.map.len()))?;
                    if e.expire().is_some() {
                        return Some((i, k.to_bytes()));
                    }
                }
                db.first_expiring().map(|(_, k)| (i, k.to_bytes()))
            } else {
                db.map.get_index(rng.random_range(0..db.map.len())).map(|(k, _)| (i, k.to_bytes()))
            }
        }
        Policy::AllKeysLru | Policy::VolatileLru | Policy::AllKeysLfu | Policy::VolatileLfu => {
            // Lower ranks go first: the access stamp (older first) or the
            // decayed access counter (rarer first).
            let rank = |word: u32| lfu.map_or(word, |l| u32::from(l.counter(word, now_ms)));
            let mut best: Option<(u32, usize, &super::Key)> = None;
            for (i, db) in dbs.iter().enumerate() {
                if db.map.is_empty() || (policy.volatile_only() && !db.has_expiring()) {
                    continue;
                }
                let mut found = 0;
                for _ in 0..samples * 4 {
                    if found == samples {
                        break;
                    }
                    let (k, e) = db.map.get_index(rng.random_range(0..db.map.len())).expect("index in range");
                    if policy.volatile_only() && e.expire().is_none() {
                        continue;
                    }
                    found += 1;
                    let r = rank(e.lru);
                    if best.is_none_or(|(b, _, _)| r < b) {
                        best = Some((r, i, k));
                    }
                }
                if found == 0 && policy.volatile_only() {
                    if let Some((_, k)) = db.first_expiring() {
                        let r = db.map.get(&k[..]).map_or(0, |e| rank(e.lru));
                        if best.is_none_or(|(b, _, _)| r < b) {
                            best = Some((r, i, k));
                        }
                    }
                }
            }
            best.map(|(_, i, k)| (i, k.to_bytes()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: u64 = 60_000;

    #[test]
    fn lfu_counter_decays_per_period_and_across_the_minute_wrap() {
        let lfu = Lfu { log_factor: 10, decay_time: 2 };
        let t0 = 100 * MINUTE;
        let w = Lfu::word(t0, 20);
        assert_eq!(lfu.counter(w, t0 + MINUTE), 20);
        assert_eq!(lfu.counter(w, t0 + 5 * MINUTE), 18);
        assert_eq!(lfu.counter(w, t0 + 1000 * MINUTE), 0, "saturates at 0");
        // The minutes are 16 bits: a word stamped just before the wrap. Past
        // it Redis counts 65535 - then + now, one minute short.
        let late = 65_534 * MINUTE;
        let w = Lfu::word(late, 20);
        assert_eq!(lfu.counter(w, late + MINUTE), 20);
        assert_eq!(lfu.counter(w, late + 4 * MINUTE), 19);
        assert_eq!(lfu.counter(w, late + 5 * MINUTE), 18);
        let never = Lfu { log_factor: 10, decay_time: 0 };
        assert_eq!(never.counter(w, late + 1000 * MINUTE), 20);
    }

    #[test]
    fn lfu_access_increments_with_the_documented_probability() {
        let lfu = Lfu { log_factor: 10, decay_time: 1 };
        let t = 7 * MINUTE;
        // Below or at the initial value every access counts.
        assert_eq!(lfu.access(Lfu::word(t, 3), t, 0.999) & 0xFF, 4);
        assert_eq!(lfu.access(Lfu::word(t, LFU_INIT_VAL), t, 0.999) & 0xFF, 6);
        // At 15: p = 1 / ((15 - 5) * 10 + 1) = 1/101.
        assert_eq!(lfu.access(Lfu::word(t, 15), t, 0.0098) & 0xFF, 16);
        assert_eq!(lfu.access(Lfu::word(t, 15), t, 0.0100) & 0xFF, 15);
        assert_eq!(lfu.access(Lfu::word(t, 255), t, 0.0) & 0xFF, 255, "saturates");
        // An access stores the decayed counter and the current minute.
        let w = lfu.access(Lfu::word(t, 15), t + 3 * MINUTE, 0.5);
        assert_eq!((w & 0xFF, w >> 8), (12, 10));
    }
}
