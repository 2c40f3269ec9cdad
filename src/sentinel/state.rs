//! What the Sentinels of a group know, as plain data: the primaries they
//! watch (address, quorum, epochs, timeouts, the down flags, the failover
//! under way), the Sentinels of the group, the old primaries to convert
//! when they are back, the replicas flagged down.
//!
//! Nothing here reads a clock or asks a server: `failover.rs` changes this
//! state from what `nodes.rs` saw, the commands read it. The group keeps
//! it behind one lock, never held across an `.await`.

use std::net::SocketAddr;
use std::time::Instant;

/// Redis's `down-after-milliseconds` for a primary nobody configured.
pub(super) const DOWN_AFTER_MS: u64 = 30_000;

/// Everything the group knows.
#[derive(Debug, Default)]
pub(super) struct State {
    pub masters: Vec<Master>,
    /// The Sentinels of the group, in the order they started; the first
    /// one is the leader every election elects.
    pub sentinels: Vec<Peer>,
    /// The group's current epoch (`+new-epoch`), one more per failover.
    pub epoch: u64,
    /// Old primaries to convert when they are back.
    pub demoted: Vec<Demoted>,
    /// Replicas flagged `+sdown`, by address.
    pub replicas_down: Vec<SocketAddr>,
}

impl State {
    /// A group watching `masters` (name, address), each with `quorum`.
    pub fn new(masters: &[(&str, SocketAddr)], quorum: u32) -> State {
        State { masters: masters.iter().map(|(n, a)| Master::new(n, *a, quorum)).collect(), ..State::default() }
    }

    /// The primary named `name`.
    pub fn master(&self, name: &[u8]) -> Option<&Master> {
        self.masters.iter().find(|m| m.name.as_bytes() == name)
    }

    /// The primary named `name`, to change.
    pub fn master_mut(&mut self, name: &[u8]) -> Option<&mut Master> {
        self.masters.iter_mut().find(|m| m.name.as_bytes() == name)
    }

    /// `down-after-milliseconds` of the primary named `name` (Redis's
    /// default for an old primary whose name is no longer watched).
    pub fn down_after_ms(&self, name: &str) -> u64 {
        self.master(name.as_bytes()).map_or(DOWN_AFTER_MS, |m| m.down_after_ms)
    }

    /// A replica's flags as `SENTINEL REPLICAS` prints them; `down`: the
    /// replica does not answer now.
    pub fn replica_flags(&self, addr: SocketAddr, down: bool) -> &'static str {
        if self.replicas_down.contains(&addr) {
            "s_down,slave,disconnected"
        } else if down {
            "slave,disconnected"
        } else {
            "slave"
        }
    }
}

/// A Sentinel of the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Peer {
    pub id: String,
    pub addr: SocketAddr,
}

/// A primary the group watches.
#[derive(Debug, Clone)]
pub(super) struct Master {
    pub name: String,
    pub addr: SocketAddr,
    pub quorum: u32,
    pub config_epoch: u64,
    pub down_after_ms: u64,
    pub failover_timeout_ms: u64,
    pub parallel_syncs: u64,
    /// Subjectively down since then (`+sdown`).
    pub sdown: Option<Instant>,
    /// Objectively down since then (`+odown`: as many Sentinels as the
    /// quorum agree).
    pub odown: Option<Instant>,
    /// An automatic failover found no replica to promote, or failed: not
    /// tried again until the primary is back.
    pub no_good_slave: bool,
    /// The failover under way: elected, its replica being promoted.
    pub failover: Option<Running>,
}

impl Master {
    /// A primary with Redis's defaults.
    pub fn new(name: &str, addr: SocketAddr, quorum: u32) -> Master {
        Master {
            name: name.to_string(),
            addr,
            quorum,
            config_epoch: 0,
            down_after_ms: DOWN_AFTER_MS,
            failover_timeout_ms: 180_000,
            parallel_syncs: 1,
            sdown: None,
            odown: None,
            no_good_slave: false,
            failover: None,
        }
    }

    /// Sets one option of `SENTINEL SET` to `value` (positive).
    pub fn set(&mut self, option: Setting, value: u64) {
        match option {
            Setting::DownAfter => self.down_after_ms = value,
            Setting::FailoverTimeout => self.failover_timeout_ms = value,
            Setting::ParallelSyncs => self.parallel_syncs = value,
            Setting::Quorum => self.quorum = u32::try_from(value).unwrap_or(u32::MAX),
        }
    }

    /// Its flags as `SENTINEL MASTER` prints them, in redis-sentinel's
    /// order; `down`: the primary does not answer now.
    pub fn flags(&self, down: bool) -> &'static str {
        match (self.sdown.is_some(), self.odown.is_some()) {
            (true, true) => "s_down,o_down,master",
            (true, false) => "s_down,master",
            _ if down => "master,disconnected",
            _ => "master",
        }
    }

    /// Its status as `INFO sentinel` prints it.
    pub fn status(&self) -> &'static str {
        if self.odown.is_some() {
            "odown"
        } else if self.sdown.is_some() {
            "sdown"
        } else {
            "ok"
        }
    }
}

/// An option `SENTINEL SET` changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Setting {
    DownAfter,
    FailoverTimeout,
    ParallelSyncs,
    Quorum,
}

impl Setting {
    /// The option named `name` (lower case).
    pub fn named(name: &str) -> Option<Setting> {
        match name {
            "down-after-milliseconds" => Some(Setting::DownAfter),
            "failover-timeout" => Some(Setting::FailoverTimeout),
            "parallel-syncs" => Some(Setting::ParallelSyncs),
            "quorum" => Some(Setting::Quorum),
            _ => None,
        }
    }
}

/// A failover between its election and its promotion's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Running {
    pub epoch: u64,
    /// The primary failed over.
    pub old: SocketAddr,
    /// Its replicas then: those the promoted one leaves are reconfigured.
    pub replicas: Vec<SocketAddr>,
    pub how: How,
}

/// How a failover goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum How {
    /// The primary is down: a replica is promoted with what it has, the
    /// old primary converted when it is back; `manual` for `SENTINEL
    /// FAILOVER` (a failure is its client's to hear, not a flag).
    Crashed { manual: bool },
    /// The primary answers (`SENTINEL FAILOVER`): it hands over to the
    /// replica and follows it at once.
    Live,
}

/// An old primary that was down when it was failed over: converted into a
/// replica of `new` once it is back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Demoted {
    /// The name of the primary it was.
    pub name: String,
    pub old: SocketAddr,
    pub new: SocketAddr,
    /// `+sdown` published for it as a replica.
    pub sdown: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn a_new_primary_has_redis_defaults() {
        let st = State::new(&[("mymaster", addr(6379))], 2);
        let m = st.master(b"mymaster").expect("watched");
        assert_eq!((m.quorum, m.down_after_ms, m.failover_timeout_ms, m.parallel_syncs), (2, 30_000, 180_000, 1));
        assert_eq!((m.flags(false), m.status()), ("master", "ok"));
        assert!(st.master(b"other").is_none());
        assert_eq!(st.down_after_ms("other"), DOWN_AFTER_MS);
    }

    #[test]
    fn settings_by_name() {
        let mut st = State::new(&[("mymaster", addr(6379))], 2);
        let m = st.master_mut(b"mymaster").expect("watched");
        for (name, value) in [("down-after-milliseconds", 5000), ("failover-timeout", 9), ("parallel-syncs", 3)] {
            m.set(Setting::named(name).expect("known"), value);
        }
        m.set(Setting::Quorum, u64::MAX);
        assert_eq!((m.down_after_ms, m.failover_timeout_ms, m.parallel_syncs, m.quorum), (5000, 9, 3, u32::MAX));
        assert_eq!(Setting::named("bogus"), None);
        assert_eq!(st.down_after_ms("mymaster"), 5000);
    }

    #[test]
    fn flags_follow_the_down_marks() {
        let mut m = Master::new("m", addr(1), 1);
        assert_eq!(m.flags(true), "master,disconnected");
        m.sdown = Some(Instant::now());
        assert_eq!((m.flags(true), m.status()), ("s_down,master", "sdown"));
        m.odown = m.sdown;
        assert_eq!((m.flags(true), m.status()), ("s_down,o_down,master", "odown"));
        let mut st = State::default();
        assert_eq!(st.replica_flags(addr(2), false), "slave");
        assert_eq!(st.replica_flags(addr(2), true), "slave,disconnected");
        st.replicas_down.push(addr(2));
        assert_eq!(st.replica_flags(addr(2), true), "s_down,slave,disconnected");
    }
}
