//! The redirect decision: Redis's `getNodeByQuery`, for one command (or a
//! whole `MULTI` block at `EXEC`) with all its keys, and the error texts of
//! `clusterRedirectClient`.

use bytes::Bytes;

use super::{key_slot, State};

/// Why a node does not serve a command itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    /// `-MOVED <slot> <ip>:<port>`: the slot is another node's.
    Moved(u16, usize),
    /// `-ASK <slot> <ip>:<port>`: the slot is migrating and a key is gone.
    Ask(u16, usize),
    /// Keys of different slots.
    CrossSlot,
    /// Several keys of a slot being moved, not all of them here.
    TryAgain,
    /// The cluster is down.
    Down,
    /// The cluster is down and this is a write (`cluster-allow-reads-when-down`).
    DownReadOnly,
    /// Nobody serves the slot.
    Unbound,
}

impl Redirect {
    /// The error reply, as `clusterRedirectClient` writes it.
    pub fn message(&self, state: &State) -> String {
        let addr = |n: usize| format!("{}:{}", state.nodes[n].ip, state.nodes[n].port);
        match self {
            Redirect::Moved(slot, n) => format!("MOVED {slot} {}", addr(*n)),
            Redirect::Ask(slot, n) => format!("ASK {slot} {}", addr(*n)),
            Redirect::CrossSlot => "CROSSSLOT Keys in request don't hash to the same slot".into(),
            Redirect::TryAgain => "TRYAGAIN Multiple keys request during rehashing of slot".into(),
            Redirect::Down => "CLUSTERDOWN The cluster is down".into(),
            Redirect::DownReadOnly => "CLUSTERDOWN The cluster is down and only accepts read commands".into(),
            Redirect::Unbound => "CLUSTERDOWN Hash slot not served".into(),
        }
    }

    /// The error a script's `redis.call` raises instead (Redis's
    /// `scriptVerifyClusterState`).
    pub fn script_message(&self) -> &'static str {
        match self {
            Redirect::DownReadOnly => {
                "Script attempted to execute a write command while the cluster is down and readonly"
            }
            Redirect::Down => "Script attempted to execute a command while the cluster is down",
            _ => "Script attempted to access a non local key in a cluster node",
        }
    }
}

/// One command (or a `MULTI` block) as the decision sees it.
#[derive(Debug, Default)]
pub struct Query<'a> {
    /// Every key (and shard channel), in order, of every command.
    pub keys: &'a [Bytes],
    /// A sharded pub/sub command is among them (its channels are keys).
    pub shard_pubsub: bool,
    /// A write command is among them.
    pub write: bool,
    /// The command is `MIGRATE`.
    pub migrate: bool,
    /// The client sent `ASKING`, or the command is flagged `asking`.
    pub asking: bool,
    /// The client sent `READONLY`.
    pub readonly: bool,
    /// `cluster-require-full-coverage`.
    pub full_coverage: bool,
    /// `cluster-allow-reads-when-down`.
    pub reads_when_down: bool,
    /// `cluster-allow-pubsubshard-when-down`.
    pub pubsubshard_when_down: bool,
}

/// `Ok` when node `me` serves `q` itself; `exists` says whether a key is
/// here (asked only for a slot being migrated or imported).
pub fn route(state: &State, me: usize, q: &Query<'_>, mut exists: impl FnMut(&[u8]) -> bool) -> Result<(), Redirect> {
    let Some(first) = q.keys.first() else { return Ok(()) };
    let slot = key_slot(first);
    let Some(owner) = state.owner(slot) else { return Err(Redirect::Unbound) };
    let node = &state.nodes[me];
    let migrating = owner == me && node.migrating.contains_key(&slot);
    let importing = !migrating && node.importing.contains_key(&slot);
    let (mut missing, mut existing, mut multiple) = (0, 0, false);
    for key in q.keys {
        if key_slot(key) != slot {
            return Err(Redirect::CrossSlot);
        }
        if importing && !multiple && key != first {
            multiple = true;
        }
        if (migrating || importing) && !q.shard_pubsub {
            if exists(key) {
                existing += 1;
            } else {
                missing += 1;
            }
        }
    }
    if !state.healthy(q.full_coverage) {
        if q.shard_pubsub {
            if !q.pubsubshard_when_down {
                return Err(Redirect::Down);
            }
        } else if !q.reads_when_down {
            return Err(Redirect::Down);
        } else if q.write {
            return Err(Redirect::DownReadOnly);
        }
    }
    if (migrating || importing) && q.migrate {
        return Ok(());
    }
    if migrating && missing > 0 {
        if existing > 0 {
            return Err(Redirect::TryAgain);
        }
        return Err(Redirect::Ask(slot, node.migrating[&slot]));
    }
    if importing && q.asking {
        if multiple && missing > 0 {
            return Err(Redirect::TryAgain);
        }
        return Ok(());
    }
    if (q.readonly || q.shard_pubsub) && !q.write && node.primary == Some(owner) {
        return Ok(());
    }
    if owner != me {
        return Err(Redirect::Moved(slot, owner));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Topology;
    use super::*;

    fn three() -> Topology {
        let addrs: Vec<(String, u16)> = (0..3).map(|i| ("127.0.0.1".to_string(), 7000 + i)).collect();
        Topology::new(&addrs, 3, 0)
    }

    fn q(keys: &[Bytes]) -> Query<'_> {
        Query { keys, full_coverage: true, ..Default::default() }
    }

    #[test]
    fn moved_crossslot_and_tags() {
        let t = three();
        let s = t.view(0);
        let foo = [Bytes::from("foo")]; // slot 12182
        assert_eq!(route(&s, 0, &q(&foo), |_| true), Err(Redirect::Moved(12182, 2)));
        assert_eq!(route(&s, 2, &q(&foo), |_| true), Ok(()));
        assert_eq!(Redirect::Moved(12182, 2).message(&s), "MOVED 12182 127.0.0.1:7002");
        let two = [Bytes::from("a"), Bytes::from("b")];
        assert_eq!(route(&s, 0, &q(&two), |_| true), Err(Redirect::CrossSlot));
        let tagged = [Bytes::from("{a}1"), Bytes::from("{a}2")];
        assert_eq!(route(&s, 2, &q(&tagged), |_| true), Ok(()));
        assert_eq!(route(&s, 0, &q(&[]), |_| true), Ok(()));
    }

    #[test]
    fn migrating_and_importing() {
        let t = three();
        {
            let mut w = t.view_mut(0);
            w.nodes[0].migrating.insert(3300, 1);
            w.nodes[1].importing.insert(3300, 0);
        }
        let s = t.view(0);
        let b = [Bytes::from("b")]; // slot 3300
        assert_eq!(route(&s, 0, &q(&b), |_| true), Ok(()));
        assert_eq!(route(&s, 0, &q(&b), |_| false), Err(Redirect::Ask(3300, 1)));
        let two = [Bytes::from("b"), Bytes::from("{b}x")];
        assert_eq!(route(&s, 0, &q(&two), |k| k == b"b"), Err(Redirect::TryAgain));
        assert_eq!(route(&s, 1, &q(&b), |_| true), Err(Redirect::Moved(3300, 0)));
        let asking = Query { asking: true, ..q(&two) };
        assert_eq!(route(&s, 1, &asking, |k| k == b"b"), Err(Redirect::TryAgain));
        assert_eq!(route(&s, 1, &Query { asking: true, ..q(&b) }, |_| false), Ok(()));
    }
}
