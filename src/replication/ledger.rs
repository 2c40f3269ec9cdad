//! Lock grants lost in a failover, and the second holders they allow.
//!
//! When a replica is promoted, every lock holder the old primary had that
//! the new primary does not have is a *lost grant*: its client was told it
//! holds the lock, and the write that said so never reached the replica.
//! Until that holder's lease ends, anyone else acquiring the same lock on
//! the new primary makes two holders at once — the failure Redlock exists
//! for. The ledger is shared by every node of one topology, so `RLOCKD
//! CHECK` on any of them reports the violation.

use bytes::Bytes;

/// One holder the old primary had and the new one lost.
#[derive(Debug, Clone)]
pub struct LostGrant {
    pub db: usize,
    pub key: Bytes,
    pub holder: Bytes,
    /// Unix ms when its lease ends (`None`: no TTL, held until released).
    pub until_ms: Option<u64>,
    /// The old and the new primary (`host:port`).
    pub from: String,
    pub to: String,
    /// Who acquired it on the old primary (`client N, command`), if known.
    pub granted_by: Option<String>,
    /// When it was acquired there (unix ms), if known.
    pub granted_ms: Option<u64>,
    /// When the failover lost it (unix ms).
    pub lost_ms: u64,
    /// The stream offsets the replica had and the primary had reached.
    pub replica_offset: u64,
    pub primary_offset: u64,
    /// The partition of the cluster bus the failover happened in
    /// (`RLOCKD CLUSTER PARTITION`), as [`Ledger::partition`] names it.
    pub partition: Option<String>,
}

impl LostGrant {
    /// ` (on the minority side of the partition …)` when it was lost to a
    /// partition, else nothing: how a violation names it.
    fn minority_note(&self) -> String {
        self.partition.as_deref().map(|p| format!(" (on the minority side of the partition {p})")).unwrap_or_default()
    }
}

/// Lost grants and the violations found against them.
#[derive(Debug, Default)]
pub struct Ledger {
    pub lost: Vec<LostGrant>,
    pub violations: Vec<String>,
    /// Where and when each of `violations` was found (same order), for the
    /// timeline: (unix ms, db, key).
    pub violation_at: Vec<(u64, usize, Bytes)>,
    /// Failovers so far, with how many grants each lost (for the log).
    pub failovers: Vec<String>,
    /// The cluster bus's partition now, named by its sides (`a:p, b:q |
    /// c:r`): a failover during it records it with its lost grants.
    pub partition: Option<String>,
    /// During a partition, the holders the watching primaries granted and
    /// still have (db, key, holder, `client N (command)`): a grant the
    /// cut-off primary makes afterwards is a second holder of theirs.
    pub held: Vec<(usize, Bytes, Bytes, String)>,
    /// What test control did to the topology, for the timeline: clock
    /// moves, faults, crashes, failovers, slot moves (shared by its nodes
    /// as the ledger is).
    pub marks: crate::control::timeline::Marks,
    /// Every grant lost so far (kept after its lease ends, unlike `lost`),
    /// for the timeline; bounded as the marks are.
    pub lost_log: Vec<LostGrant>,
}

impl Ledger {
    /// Keeps `lost` for the timeline (the newest [`crate::control::timeline::MAX_MARKS`]).
    pub fn log_lost(&mut self, lost: &[LostGrant]) {
        self.lost_log.extend(lost.iter().cloned());
        let max = crate::control::timeline::MAX_MARKS;
        if self.lost_log.len() > max {
            self.lost_log.drain(..self.lost_log.len() - max);
        }
    }

    /// What the topology contributes to a timeline.
    pub fn timeline_facts(&self) -> crate::control::timeline::TopologyFacts {
        crate::control::timeline::TopologyFacts {
            marks: self.marks.iter().cloned().collect(),
            lost: self
                .lost_log
                .iter()
                .map(|g| crate::control::timeline::LostHold {
                    db: g.db,
                    key: g.key.clone(),
                    holder: g.holder.clone(),
                    // `granted_by` reads `client <id> (<command>)`.
                    client: g
                        .granted_by
                        .as_deref()
                        .and_then(|b| b.strip_prefix("client "))
                        .and_then(|b| b.split(' ').next())
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0),
                    start_ms: g.granted_ms.unwrap_or(g.lost_ms),
                    until_ms: g.until_ms,
                    lost_ms: g.lost_ms,
                })
                .collect(),
            violations: self
                .violation_at
                .iter()
                .zip(&self.violations)
                .map(|((t, db, key), text)| crate::control::timeline::Violation {
                    time_ms: *t,
                    db: *db,
                    key: key.clone(),
                    text: text.clone(),
                })
                .collect(),
        }
    }

    /// Forgets the violations (`RLOCKD CHECK RESET`).
    pub fn reset_violations(&mut self) {
        self.violations.clear();
        self.violation_at.clear();
    }

    /// True when a lock event can matter (a grant lost already, or a
    /// partition that may lose one).
    pub fn watching(&self) -> bool {
        !self.lost.is_empty() || self.partition.is_some()
    }

    /// A lock was acquired on a primary at `now_ms` by `holder` (`client`,
    /// `command`): a violation if a lost grant of that lock was still within
    /// its lease.
    pub fn acquired(&mut self, db: usize, key: &[u8], holder: &[u8], now_ms: u64, client: u64, command: &str) {
        if self.partition.is_some() {
            self.held.push((
                db,
                Bytes::copy_from_slice(key),
                Bytes::copy_from_slice(holder),
                format!("client {client}, {command}"),
            ));
        }
        self.lost.retain(|g| g.until_ms.is_none_or(|t| t > now_ms));
        let mut found = Vec::new();
        for g in &self.lost {
            if g.db != db || g.key != key || g.holder == holder {
                continue;
            }
            let lease = match g.until_ms {
                Some(t) => format!("its lease ran {} ms more", t - now_ms),
                None => "it had no lease".to_string(),
            };
            let by = g.granted_by.as_deref().map(|b| format!(", granted by {b}")).unwrap_or_default();
            let cut = g.minority_note();
            found.push(format!(
                "lock '{}' (db {}): held by {} on the old primary {}{cut}{by}, a write the replica never received (it had offset {} of {}), and acquired by {} (client {client}, {command}) on the new primary {} after the failover while {lease}",
                String::from_utf8_lossy(key),
                db,
                String::from_utf8_lossy(&g.holder),
                g.from,
                g.replica_offset,
                g.primary_offset,
                String::from_utf8_lossy(holder),
                g.to,
            ));
        }
        let key = Bytes::copy_from_slice(key);
        for v in found {
            self.violation(v, now_ms, db, &key);
        }
    }

    /// Records a violation once, with where and when it was found.
    fn violation(&mut self, text: String, at_ms: u64, db: usize, key: &Bytes) {
        if !self.violations.contains(&text) {
            self.violations.push(text);
            self.violation_at.push((at_ms, db, key.clone()));
        }
    }

    /// A watching primary's holder released the lock or lost it to expiry.
    pub fn gone(&mut self, db: usize, key: &[u8], holder: &[u8]) {
        self.held.retain(|(d, k, h, _)| !(*d == db && k == key && h == holder));
    }

    /// The cut-off primary granted `g` after its replacement: lost when
    /// it rejoins, and a second holder now if the replacement's side holds
    /// the lock already.
    pub fn cut_off_grant(&mut self, g: LostGrant) {
        let mut found = Vec::new();
        for (db, key, holder, by) in &self.held {
            if *db != g.db || *key != g.key || *holder == g.holder {
                continue;
            }
            let cut = g.minority_note();
            found.push(format!(
                "lock '{}' (db {}): held by {} ({by}) on the new primary {}, and acquired by {} on the old primary {}{cut}, granted by {}: cut off and replaced, it still granted the lock",
                String::from_utf8_lossy(key),
                db,
                String::from_utf8_lossy(holder),
                g.to,
                String::from_utf8_lossy(&g.holder),
                g.from,
                g.granted_by.as_deref().unwrap_or("an unknown client"),
            ));
        }
        let at = g.granted_ms.unwrap_or(g.lost_ms);
        for v in found {
            self.violation(v, at, g.db, &g.key);
        }
        self.log_lost(std::slice::from_ref(&g));
        self.lost.push(g);
    }
}
