//! What one node learns from another's ping, as Redis 7.0's cluster bus
//! decides it (`clusterProcessPacket`, `clusterUpdateSlotsConfigWith`,
//! `clusterHandleConfigEpochCollision`): plain functions on one node's
//! [`State`], no locks, no time. [`super::Topology`] carries the claims
//! between the views.
//!
//! A ping carries its sender's header only: who it is, whether it is a
//! primary or whose replica, its configuration epoch (a replica: its
//! primary's), the current epoch, and the slots it serves (a replica: its
//! primary's, as it sees them). A receiver
//!
//! * raises its current epoch and the sender's configuration epoch to what
//!   the sender says;
//! * takes the sender's role (a primary turned replica loses its slots);
//! * rebinds each slot the sender claims that it sees unassigned, owned by
//!   a node that no longer claims it, or owned by a node with an older
//!   configuration epoch (unless it is importing it);
//! * keeps a slot the sender owns here but no longer claims (its
//!   `DELSLOTS`), marking it unclaimed: clients keep being redirected to
//!   the old owner until another node claims it;
//! * follows the sender when it was a replica of its own primary (or of
//!   itself) and took all of that primary's slots — a failover;
//! * answers with an UPDATE when the sender claims a slot it sees owned by
//!   a node with a newer configuration epoch.

use super::{State, SLOTS};

/// A slot bitmap.
pub type Slots = Vec<u64>;

fn bit(slots: &[u64], s: usize) -> bool {
    slots[s / 64] & (1 << (s % 64)) != 0
}

/// One node's ping (or, as an UPDATE, what a third node knows of `from`).
#[derive(Debug, Clone)]
pub struct Claim {
    pub from: usize,
    /// The primary it replicates, for a replica.
    pub primary: Option<usize>,
    pub config_epoch: u64,
    pub current_epoch: u64,
    pub slots: Slots,
}

impl State {
    /// The slots `node` serves here, as a bitmap.
    fn slot_bits(&self, node: usize) -> Slots {
        let mut out = vec![0u64; SLOTS / 64];
        for s in 0..SLOTS {
            if usize::from(self.owner[s]) == node {
                out[s / 64] |= 1 << (s % 64);
            }
        }
        out
    }

    /// What node `me` says of itself in a ping.
    pub fn claim(&self, me: usize) -> Claim {
        let shard = self.nodes[me].primary.unwrap_or(me);
        Claim {
            from: me,
            primary: self.nodes[me].primary,
            config_epoch: self.node_epoch(me),
            current_epoch: self.current_epoch,
            slots: self.slot_bits(shard),
        }
    }

    /// Node `me` receives `c`: true if its view changed, and the UPDATE
    /// it sends back, if any.
    pub fn receive(&mut self, me: usize, c: &Claim) -> (bool, Option<Claim>) {
        let s = c.from;
        if s == me {
            return (false, None);
        }
        let mut changed = false;
        if c.current_epoch > self.current_epoch {
            self.current_epoch = c.current_epoch;
            changed = true;
        }
        if c.config_epoch > self.nodes[s].config_epoch {
            self.nodes[s].config_epoch = c.config_epoch;
            changed = true;
        }
        let curmaster = self.nodes[me].primary.unwrap_or(me);
        let was_ours = self.nodes[s].primary == Some(curmaster);
        match c.primary {
            None if self.nodes[s].primary.is_some() => {
                self.nodes[s].primary = None;
                changed = true;
            }
            None => {}
            Some(p) => {
                if self.nodes[s].is_primary() {
                    // A primary turned into a replica: its slots go.
                    for slot in 0..SLOTS {
                        if usize::from(self.owner[slot]) == s {
                            self.set_owner(slot as u16, None);
                        }
                    }
                    changed = true;
                }
                if self.nodes[s].primary != Some(p) {
                    self.nodes[s].primary = Some(p);
                    changed = true;
                }
            }
        }
        let mut update = None;
        if c.primary.is_none() {
            let dirty = self.slot_bits(s) != c.slots;
            if dirty {
                changed |= self.update_slots_with(me, s, c.config_epoch, &c.slots, was_ours);
                // The sender claims a slot of a node with a newer epoch.
                for slot in (0..SLOTS).filter(|&j| bit(&c.slots, j)) {
                    let Some(o) = self.owner(slot as u16) else { continue };
                    if o == s || self.unclaimed[slot] {
                        continue;
                    }
                    if self.nodes[o].config_epoch > c.config_epoch {
                        update = Some(Claim {
                            from: o,
                            primary: None,
                            config_epoch: self.nodes[o].config_epoch,
                            current_epoch: self.current_epoch,
                            slots: self.slot_bits(o),
                        });
                        break;
                    }
                }
            }
        }
        // Two primaries with one configuration epoch: the one with the
        // smaller id takes a new one.
        let (sn, mn) = (&self.nodes[s], &self.nodes[me]);
        if sn.is_primary() && mn.is_primary() && sn.config_epoch == mn.config_epoch && sn.id > mn.id {
            self.current_epoch += 1;
            self.nodes[me].config_epoch = self.current_epoch;
            changed = true;
        }
        (changed, update)
    }

    /// Node `me` receives an UPDATE about node `u.from` (Redis ignores one
    /// that is not newer than what it knows).
    pub fn receive_update(&mut self, me: usize, u: &Claim) -> bool {
        let n = u.from;
        if n == me || self.nodes[n].config_epoch >= u.config_epoch {
            return false;
        }
        if u.current_epoch > self.current_epoch {
            self.current_epoch = u.current_epoch;
        }
        let curmaster = self.nodes[me].primary.unwrap_or(me);
        let was_ours = self.nodes[n].primary == Some(curmaster);
        self.nodes[n].primary = None;
        self.nodes[n].config_epoch = u.config_epoch;
        self.update_slots_with(me, n, u.config_epoch, &u.slots, was_ours);
        true
    }

    /// Redis's `clusterUpdateSlotsConfigWith`, seen from node `me`:
    /// `sender` claims `slots` with `epoch`. `was_ours`: the sender was a
    /// replica of `me`'s primary (or of `me`), so taking all that
    /// primary's slots is a failover `me` follows.
    fn update_slots_with(&mut self, me: usize, sender: usize, epoch: u64, slots: &[u64], was_ours: bool) -> bool {
        let curmaster = self.nodes[me].primary.unwrap_or(me);
        let (mut changed, mut took_ours) = (false, false);
        for j in 0..SLOTS {
            let owner = self.owner(j as u16);
            if bit(slots, j) {
                if owner == Some(sender) {
                    if std::mem::take(&mut self.unclaimed[j]) {
                        changed = true;
                    }
                    continue;
                }
                if self.nodes[me].importing.contains_key(&(j as u16)) {
                    continue;
                }
                let rebind = match owner {
                    None => true,
                    Some(o) => self.unclaimed[j] || self.nodes[o].config_epoch < epoch,
                };
                if rebind {
                    took_ours |= owner == Some(curmaster);
                    self.set_owner(j as u16, Some(sender));
                    changed = true;
                }
            } else if owner == Some(sender) && !self.unclaimed[j] {
                self.unclaimed[j] = true;
                changed = true;
            }
        }
        if took_ours && was_ours && self.slot_count(curmaster) == 0 {
            // Failed over: follow the new primary.
            self.nodes[me].primary = Some(sender);
            self.nodes[me].migrating.clear();
            self.nodes[me].importing.clear();
            changed = true;
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::super::Topology;

    fn three() -> Topology {
        let addrs: Vec<(String, u16)> = (0..3).map(|i| ("127.0.0.1".to_string(), 7000 + i)).collect();
        Topology::new(&addrs, 3, 0)
    }

    #[test]
    fn delslots_is_not_spread_but_a_new_claim_is() {
        let t = three();
        t.view_mut(2).set_owner(12182, None);
        t.step();
        assert_eq!(t.view(0).owner(12182), Some(2), "the others keep the old owner");
        assert_eq!(t.view(2).owner(12182), None);
        // Node 1 claims it with an older epoch: it wins, as the owner no
        // longer claims it.
        t.view_mut(1).set_owner(12182, None);
        t.view_mut(1).set_owner(12182, Some(1));
        t.step();
        for n in 0..3 {
            assert_eq!(t.view(n).owner(12182), Some(1), "node {n}");
        }
    }

    #[test]
    fn a_stolen_slot_goes_back_to_the_newer_epoch() {
        let t = three();
        t.view_mut(1).set_owner(12182, Some(1));
        t.step();
        for n in 0..3 {
            assert_eq!(t.view(n).owner(12182), Some(2), "node {n}");
        }
    }

    #[test]
    fn a_promotion_converges() {
        let addrs: Vec<(String, u16)> = (0..6).map(|i| ("127.0.0.1".to_string(), 7000 + i)).collect();
        let t = Topology::new(&addrs, 3, 0);
        assert_eq!(t.step(), 0);
        assert_eq!(t.promote(3), Some(0));
        for n in 0..6 {
            assert_eq!(t.view(n).owner(0), Some(3), "node {n}");
        }
        assert_eq!(t.primary_of(0), Some(3));
        let mut rounds = 0;
        while t.step() != 0 {
            rounds += 1;
            assert!(rounds < 4, "the views keep changing");
        }
        for n in 0..6 {
            let v = t.view(n);
            assert_eq!(v.nodes[0].primary, Some(3), "node {n}");
            assert_eq!(v.current_epoch, 7, "node {n}");
        }
    }
}
