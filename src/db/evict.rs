//! Choosing keys to evict when `maxmemory` is exceeded (Redis's `evict.c`).
//!
//! Like Redis, the LRU/LFU policies are approximations by sampling: each
//! round looks at `maxmemory-samples` random keys per database and evicts the
//! best candidate among them. `volatile-ttl` takes the key with the nearest
//! deadline (exact here: the expiry index is ordered). Access times come from
//! each entry's `lru` stamp (seconds on the server clock); rlockd keeps no
//! access frequency, so the LFU policies rank by that stamp too.

use bytes::Bytes;
use rand::Rng;

use super::Db;

/// `maxmemory-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Refuse `deny-oom` commands instead of evicting.
    NoEviction,
    /// Least recently used among all keys.
    AllKeysLru,
    /// Least recently used among keys with a TTL.
    VolatileLru,
    /// Least frequently used among all keys (ranked by access time here).
    AllKeysLfu,
    /// Least frequently used among keys with a TTL (ranked by access time here).
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

    fn volatile_only(self) -> bool {
        matches!(self, Policy::VolatileLru | Policy::VolatileLfu | Policy::VolatileRandom | Policy::VolatileTtl)
    }
}

/// The next key to evict under `policy`: `(database index, key)`, or `None`
/// when nothing is evictable.
pub fn pick(dbs: &[Db], policy: Policy, samples: usize, rng: &mut impl Rng) -> Option<(usize, Bytes)> {
    let samples = samples.max(1);
    match policy {
        Policy::NoEviction => None,
        Policy::VolatileTtl => dbs
            .iter()
            .enumerate()
            .filter_map(|(i, db)| db.expires.first().map(|(at, k)| (*at, i, k)))
            .min_by_key(|(at, _, _)| *at)
            .map(|(_, i, k)| (i, k.clone())),
        Policy::AllKeysRandom | Policy::VolatileRandom => {
            let candidates: Vec<usize> = (0..dbs.len())
                .filter(|&i| if policy.volatile_only() { !dbs[i].expires.is_empty() } else { !dbs[i].map.is_empty() })
                .collect();
            let i = *candidates.get(rng.random_range(0..candidates.len().max(1)))?;
            let db = &dbs[i];
            if policy.volatile_only() {
                // A random key with a TTL: sample the map, fall back on the
                // expiry index when the volatile keys are rare.
                for _ in 0..samples * 4 {
                    let (k, e) = db.map.get_index(rng.random_range(0..db.map.len()))?;
                    if e.expire.is_some() {
                        return Some((i, k.clone()));
                    }
                }
                db.expires.first().map(|(_, k)| (i, k.clone()))
            } else {
                db.map.get_index(rng.random_range(0..db.map.len())).map(|(k, _)| (i, k.clone()))
            }
        }
        Policy::AllKeysLru | Policy::VolatileLru | Policy::AllKeysLfu | Policy::VolatileLfu => {
            let mut best: Option<(u32, usize, &Bytes)> = None;
            for (i, db) in dbs.iter().enumerate() {
                if db.map.is_empty() || (policy.volatile_only() && db.expires.is_empty()) {
                    continue;
                }
                let mut found = 0;
                for _ in 0..samples * 4 {
                    if found == samples {
                        break;
                    }
                    let (k, e) = db.map.get_index(rng.random_range(0..db.map.len())).expect("index in range");
                    if policy.volatile_only() && e.expire.is_none() {
                        continue;
                    }
                    found += 1;
                    if best.is_none_or(|(lru, _, _)| e.lru < lru) {
                        best = Some((e.lru, i, k));
                    }
                }
                if found == 0 && policy.volatile_only() {
                    if let Some((_, k)) = db.expires.first() {
                        let lru = db.map.get(k).map_or(0, |e| e.lru);
                        if best.is_none_or(|(b, _, _)| lru < b) {
                            best = Some((lru, i, k));
                        }
                    }
                }
            }
            best.map(|(_, i, k)| (i, k.clone()))
        }
    }
}
