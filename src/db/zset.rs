//! Sorted set storage.
//!
//! Minimal ordered representation used by the core; the sorted-set family
//! replaces it with an order-statistic structure (O(log n) rank and range).

use std::collections::BTreeSet;

use bytes::Bytes;

use super::Map;

/// Score as an orderable key (scores are never NaN).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score(pub f64);
impl Eq for Score {}
impl PartialOrd for Score {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Score {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.partial_cmp(&o.0).unwrap_or(std::cmp::Ordering::Equal)
    }
}

/// A sorted set: member → score, plus (score, member) order.
#[derive(Debug, Clone, Default)]
pub struct ZSet {
    pub scores: Map<Bytes, f64>,
    pub order: BTreeSet<(Score, Bytes)>,
}

impl ZSet {
    pub fn len(&self) -> usize {
        self.scores.len()
    }
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }
    pub fn max_member_len(&self) -> usize {
        self.scores.keys().map(|k| k.len()).max().unwrap_or(0)
    }
    pub fn approx_size(&self) -> usize {
        self.scores.keys().map(|k| 2 * k.len() + 64).sum()
    }
}
