//! The Sentinels' state machine: from what the group saw of the servers
//! ([`Seen`], gathered by `nodes.rs`) and the time it is (`now`, passed
//! in: nothing here reads a clock or touches a server), it changes the
//! [`State`] and returns the [`Step`]s to carry out, in order: the events
//! to publish and the [`Act`]s to perform on the servers.
//!
//! A primary down for longer than its `down-after-milliseconds` (strictly,
//! as in Redis) is `+sdown`; with as many Sentinels as its quorum (they all
//! see the same) it is `+odown`, and the group fails it over: `+new-epoch`,
//! `+try-failover`, `+vote-for-leader` (the first Sentinel of the group),
//! `+elected-leader`, `+failover-state-select-slave`, then [`Act::Promote`]
//! of the replica that received most. The driver reports the promotion's
//! outcome to [`promoted`], which returns the rest: `+selected-slave`,
//! `+failover-state-send-slaveof-noone`, `+failover-state-wait-promotion`,
//! `-role-change`, `+promoted-slave`, `+failover-state-reconf-slaves`, the
//! `+slave-reconf-*` of the other replicas, `+failover-end`,
//! `+switch-master`, `+slave` for each replica of the new primary. A
//! failover that finds no replica publishes `-failover-abort-no-good-slave`
//! and is not tried again until the primary is back. The old primary, back,
//! is converted: `-role-change`, `-sdown`, [`Act::Follow`],
//! `+convert-to-slave`. [`check`] also flags crashed replicas (`±sdown`)
//! and follows failovers made without the Sentinels; [`manual`] is
//! `SENTINEL FAILOVER`.
//!
//! A check returns as soon as it asks for a promotion: its outcome changes
//! what the rest of the check sees, so the driver looks again and checks
//! again.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::state::{Demoted, How, Running, State};

/// Redis's text for a primary the group does not watch.
pub(super) const NO_MASTER: &str = "ERR No such master with that name";
/// Redis's text for a failover with no replica to promote.
pub(super) const NO_GOOD_SLAVE: &str = "NOGOODSLAVE No suitable replica to promote";

/// One event the Sentinels publish: its channel and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Event {
    pub kind: &'static str,
    pub text: String,
}

/// What the group does to the servers of the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Act {
    /// Promote the replica on `port` of `primary`, the crashed primary of
    /// `master`, with what it has; then report to [`promoted`].
    Promote { master: String, primary: SocketAddr, port: u16 },
    /// Hand the live `primary` of `master` over to its replica on `port`
    /// (the old primary follows it); then report to [`promoted`].
    HandOver { master: String, primary: SocketAddr, port: u16 },
    /// Make `old`, an old primary back, a replica of `new`.
    Follow { old: SocketAddr, new: SocketAddr },
}

impl Act {
    /// True for an act whose outcome the machine waits for.
    pub fn awaited(&self) -> bool {
        !matches!(self, Act::Follow { .. })
    }
}

/// One thing to carry out, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    Event(Event),
    Do(Act),
}

/// A node down: since when, and whether it is to be noticed at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Down {
    pub since: Instant,
    pub at_once: bool,
}

/// A primary's link to one of its replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Link {
    pub replica: SocketAddr,
    /// The offset the replica acknowledged.
    pub acked: u64,
    pub online: bool,
    pub closed: bool,
    /// The replica is a server of the process the group can find.
    pub known: bool,
}

/// A server of the process the group found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Node {
    /// Its links to its replicas (read of watched primaries only).
    pub links: Vec<Link>,
    /// The primary it follows, if it is a replica.
    pub follows: Option<SocketAddr>,
}

/// What the group saw of the servers at one moment.
#[derive(Debug, Clone, Default)]
pub(super) struct Seen {
    /// The nodes down.
    pub down: Vec<(SocketAddr, Down)>,
    /// The servers found, by address.
    pub nodes: Vec<(SocketAddr, Node)>,
    /// Some node of the process is down (not only those looked at).
    pub any_down: bool,
}

impl Seen {
    /// Since when `addr` is down (`None`: it answers).
    pub fn down(&self, addr: SocketAddr) -> Option<Down> {
        self.down.iter().find(|(a, _)| *a == addr).map(|(_, d)| *d)
    }

    /// The server on `addr`, if the group found it.
    pub fn node(&self, addr: SocketAddr) -> Option<&Node> {
        self.nodes.iter().find(|(a, _)| *a == addr).map(|(_, n)| n)
    }
}

/// True when a node `down` is down for longer than `down_after_ms` at
/// `now` (Redis: strictly longer), or is to be noticed at once.
pub(super) fn down_long_enough(down: Option<Down>, down_after_ms: u64, now: Instant) -> bool {
    down.is_some_and(|d| d.at_once || now.saturating_duration_since(d.since) > Duration::from_millis(down_after_ms))
}

/// One check of every primary, replica and old primary (see the module
/// docs); ends early with an awaited [`Act`].
pub(super) fn check(st: &mut State, now: Instant, seen: &Seen) -> Vec<Step> {
    let mut steps = Vec::new();
    for i in 0..st.masters.len() {
        watch_primary(st, i, now, seen, &mut steps);
        if matches!(steps.last(), Some(Step::Do(act)) if act.awaited()) {
            return steps;
        }
    }
    watch_replicas(st, now, seen, &mut steps);
    watch_demoted(st, now, seen, &mut steps);
    follow_elsewhere(st, seen, &mut steps);
    steps
}

/// `SENTINEL FAILOVER` of the primary named `name`: the events up to the
/// [`Act`] promoting its replica, or Redis's error. A crashed primary's
/// replica that received most is promoted (redis-sentinel still promotes a
/// replica whose link went down recently); a live primary hands over to
/// its first online replica.
pub(super) fn manual(st: &mut State, name: &[u8], seen: &Seen) -> Result<Vec<Step>, &'static str> {
    let i = st.masters.iter().position(|m| m.name.as_bytes() == name).ok_or(NO_MASTER)?;
    let old = st.masters[i].addr;
    let node = seen.node(old).ok_or(NO_GOOD_SLAVE)?;
    let (port, replicas, how) = if seen.down(old).is_some() {
        let (port, linked) = crash_candidate(node);
        (port.ok_or(NO_GOOD_SLAVE)?, linked, How::Crashed { manual: true })
    } else {
        let port = node.links.iter().find(|l| l.online).ok_or(NO_GOOD_SLAVE)?.replica.port();
        (port, node.links.iter().map(|l| l.replica).collect(), How::Live)
    };
    let mut steps = Vec::new();
    let epoch = begin(st, i, &mut steps);
    let master = st.masters[i].name.clone();
    st.masters[i].failover = Some(Running { epoch, old, replicas, how });
    steps.push(Step::Do(match how {
        How::Live => Act::HandOver { master, primary: old, port },
        How::Crashed { .. } => Act::Promote { master, primary: old, port },
    }));
    Ok(steps)
}

/// The outcome of the awaited [`Act`] of `master`'s failover: the new
/// primary's address, or why it failed. Returns the events that follow,
/// or the failure (for a manual failover's client). `old_down`: the old
/// primary is still down.
pub(super) fn promoted(
    st: &mut State,
    master: &str,
    outcome: Result<SocketAddr, String>,
    old_down: bool,
) -> Result<Vec<Event>, String> {
    let Some(i) = st.masters.iter().position(|m| m.name == master) else { return Ok(Vec::new()) };
    let Some(run) = st.masters[i].failover.take() else { return Ok(Vec::new()) };
    let new = match outcome {
        Ok(new) => new,
        Err(e) => {
            if run.how == (How::Crashed { manual: false }) {
                st.masters[i].no_good_slave = true;
            }
            return Err(e);
        }
    };
    let mut steps = Vec::new();
    let others: Vec<SocketAddr> = run.replicas.iter().copied().filter(|a| *a != new).collect();
    end(st, i, run.old, new, &others, run.epoch, &mut steps);
    match run.how {
        How::Live => converted(master, run.old, new, &mut steps),
        How::Crashed { .. } => {
            let m = &mut st.masters[i];
            (m.sdown, m.odown, m.no_good_slave) = (None, None, false);
            let mut d = Demoted { name: master.to_string(), old: run.old, new, sdown: false };
            if old_down {
                event(&mut steps, "+sdown", demoted_text(master, run.old, new));
                d.sdown = true;
            }
            st.demoted.push(d);
        }
    }
    Ok(steps
        .into_iter()
        .filter_map(|s| match s {
            Step::Event(e) => Some(e),
            Step::Do(_) => None,
        })
        .collect())
}

/// `+sdown`/`+odown` of the primary `i`, its automatic failover, or
/// `-sdown`/`-odown` when it is back.
fn watch_primary(st: &mut State, i: usize, now: Instant, seen: &Seen, steps: &mut Vec<Step>) {
    let sentinels = st.sentinels.len();
    let m = &mut st.masters[i];
    let down = seen.down(m.addr);
    let text = master_text(&m.name, m.addr);
    if m.sdown.is_none() {
        if !down_long_enough(down, m.down_after_ms, now) {
            return;
        }
        event(steps, "+sdown", text.clone());
        m.sdown = Some(now);
    } else if down.is_none() {
        event(steps, "-sdown", text.clone());
        if m.odown.is_some() {
            event(steps, "-odown", text);
        }
        (m.sdown, m.odown, m.no_good_slave) = (None, None, false);
        return;
    }
    // Down: the Sentinels of the group all see it, so they agree.
    let reached = u32::try_from(sentinels).unwrap_or(u32::MAX) >= m.quorum;
    match (m.odown.is_some(), reached) {
        (false, true) => {
            event(steps, "+odown", format!("{text} #quorum {sentinels}/{}", m.quorum));
            m.odown = Some(now);
        }
        (true, false) => {
            event(steps, "-odown", text);
            m.odown = None;
        }
        _ => {}
    }
    if m.odown.is_some() && !m.no_good_slave {
        fail_over(st, i, seen, steps);
    }
}

/// The automatic failover of the crashed primary `i`: its replica that
/// received most is promoted (the primary is down, it is not asked).
fn fail_over(st: &mut State, i: usize, seen: &Seen, steps: &mut Vec<Step>) {
    let old = st.masters[i].addr;
    // A primary the group cannot find is tried again at the next check.
    let Some(node) = seen.node(old) else { return };
    let (port, replicas) = crash_candidate(node);
    let Some(port) = port else {
        event(steps, "-failover-abort-no-good-slave", master_text(&st.masters[i].name, old));
        st.masters[i].no_good_slave = true;
        return;
    };
    let epoch = begin(st, i, steps);
    let master = st.masters[i].name.clone();
    st.masters[i].failover = Some(Running { epoch, old, replicas, how: How::Crashed { manual: false } });
    steps.push(Step::Do(Act::Promote { master, primary: old, port }));
}

/// A crashed primary's replica to promote: the one that received most
/// (the first of equals) among those still linked; and every linked one.
fn crash_candidate(node: &Node) -> (Option<u16>, Vec<SocketAddr>) {
    let linked: Vec<&Link> = node.links.iter().filter(|l| !l.closed).collect();
    let best = linked.iter().map(|l| l.acked).max();
    let chosen = linked.iter().find(|l| Some(l.acked) == best).map(|l| l.replica.port());
    (chosen, linked.iter().map(|l| l.replica).collect())
}

/// The events before a replica is chosen; returns the failover's epoch.
fn begin(st: &mut State, i: usize, steps: &mut Vec<Step>) -> u64 {
    st.epoch += 1;
    let epoch = st.epoch;
    let leader = st.sentinels.first().map(|p| p.id.clone()).unwrap_or_default();
    let text = master_text(&st.masters[i].name, st.masters[i].addr);
    event(steps, "+new-epoch", epoch.to_string());
    event(steps, "+try-failover", text.clone());
    event(steps, "+vote-for-leader", format!("{leader} {epoch}"));
    event(steps, "+elected-leader", text.clone());
    event(steps, "+failover-state-select-slave", text);
    epoch
}

/// The events from the promotion on, and the group's new view of the
/// primary `i`. `others`: the old primary's other replicas, reconfigured
/// to follow `new`.
fn end(
    st: &mut State,
    i: usize,
    old: SocketAddr,
    new: SocketAddr,
    others: &[SocketAddr],
    epoch: u64,
    steps: &mut Vec<Step>,
) {
    let name = st.masters[i].name.clone();
    let text = master_text(&name, old);
    let promoted = slave_text(new, &name, old);
    event(steps, "+selected-slave", promoted.clone());
    event(steps, "+failover-state-send-slaveof-noone", promoted.clone());
    event(steps, "+failover-state-wait-promotion", promoted.clone());
    event(steps, "-role-change", format!("{promoted} new reported role is master"));
    event(steps, "+promoted-slave", promoted);
    event(steps, "+failover-state-reconf-slaves", text.clone());
    for r in others {
        let t = slave_text(*r, &name, old);
        event(steps, "+slave-reconf-sent", t.clone());
        event(steps, "+slave-reconf-inprog", t.clone());
        event(steps, "+slave-reconf-done", t);
    }
    event(steps, "+failover-end", text);
    let m = &mut st.masters[i];
    (m.addr, m.config_epoch) = (new, epoch);
    event(steps, "+switch-master", format!("{name} {} {} {} {}", old.ip(), old.port(), new.ip(), new.port()));
    for r in others {
        event(steps, "+slave", slave_text(*r, &name, new));
    }
    event(steps, "+slave", demoted_text(&name, old, new));
}

/// A live old primary `old` reconfigured as a replica of `new`: it still
/// said it was a primary, then it follows.
fn converted(name: &str, old: SocketAddr, new: SocketAddr, steps: &mut Vec<Step>) {
    let text = demoted_text(name, old, new);
    event(steps, "-role-change", format!("{text} new reported role is master"));
    event(steps, "+convert-to-slave", text);
}

/// Replicas that crashed or came back (Redisson stops and resumes reading
/// from a replica on these events); looked at only while some node is
/// down or some replica flagged.
fn watch_replicas(st: &mut State, now: Instant, seen: &Seen, steps: &mut Vec<Step>) {
    if !seen.any_down && st.replicas_down.is_empty() {
        return;
    }
    for m in st.masters.iter().filter(|m| m.sdown.is_none()) {
        let Some(node) = seen.node(m.addr) else { continue };
        for l in node.links.iter().filter(|l| !l.closed && l.known) {
            let flagged = st.replicas_down.contains(&l.replica);
            let down = seen.down(l.replica);
            if !flagged && down_long_enough(down, m.down_after_ms, now) {
                st.replicas_down.push(l.replica);
                event(steps, "+sdown", slave_text(l.replica, &m.name, m.addr));
            } else if flagged && down.is_none() {
                st.replicas_down.retain(|a| *a != l.replica);
                event(steps, "-sdown", slave_text(l.replica, &m.name, m.addr));
            }
        }
    }
}

/// Old primaries still down (`+sdown` as replicas) or back (converted).
fn watch_demoted(st: &mut State, now: Instant, seen: &Seen, steps: &mut Vec<Step>) {
    for d in st.demoted.clone() {
        let text = demoted_text(&d.name, d.old, d.new);
        let down = seen.down(d.old);
        if down.is_some() {
            if !d.sdown && down_long_enough(down, st.down_after_ms(&d.name), now) {
                event(steps, "+sdown", text);
                for x in st.demoted.iter_mut().filter(|x| x.old == d.old) {
                    x.sdown = true;
                }
            }
            continue;
        }
        st.demoted.retain(|x| x.old != d.old);
        if seen.node(d.old).is_none() {
            continue;
        }
        event(steps, "-role-change", format!("{text} new reported role is master"));
        if d.sdown {
            event(steps, "-sdown", text.clone());
        }
        steps.push(Step::Do(Act::Follow { old: d.old, new: d.new }));
        event(steps, "+convert-to-slave", text);
    }
}

/// Failovers made without the Sentinels (`RLOCKD REPL FAILOVER`,
/// `Server::failover`, `REPLICAOF` on the primary): a watched primary that
/// became a replica is replaced by its primary, with the same events.
fn follow_elsewhere(st: &mut State, seen: &Seen, steps: &mut Vec<Step>) {
    for i in 0..st.masters.len() {
        let old = st.masters[i].addr;
        let Some(new) = seen.node(old).and_then(|n| n.follows) else { continue };
        if new != old {
            let epoch = begin(st, i, steps);
            end(st, i, old, new, &[], epoch, steps);
            converted(&st.masters[i].name.clone(), old, new, steps);
        }
    }
}

fn event(steps: &mut Vec<Step>, kind: &'static str, text: String) {
    steps.push(Step::Event(Event { kind, text }));
}

/// How the events name a primary.
fn master_text(name: &str, addr: SocketAddr) -> String {
    format!("master {name} {} {}", addr.ip(), addr.port())
}

/// How the events name the replica `r` of the primary `master` named `name`.
fn slave_text(r: SocketAddr, name: &str, master: SocketAddr) -> String {
    format!("slave {r} {} {} @ {name} {} {}", r.ip(), r.port(), master.ip(), master.port())
}

/// How the events name an old primary `old` as a replica of `new`.
fn demoted_text(name: &str, old: SocketAddr, new: SocketAddr) -> String {
    slave_text(old, name, new)
}

#[cfg(test)]
mod tests {
    use super::super::state::Peer;
    use super::*;

    const OLD: u16 = 6379;
    const R1: u16 = 6380;
    const R2: u16 = 6381;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// `n` Sentinels watching `mymaster` on port 6379 with `quorum`.
    fn group(n: u16, quorum: u32) -> State {
        let mut st = State::new(&[("mymaster", addr(OLD))], quorum);
        st.sentinels = (0..n).map(|i| Peer { id: format!("s{i}"), addr: addr(26379 + i) }).collect();
        st
    }

    fn link(port: u16, acked: u64) -> Link {
        Link { replica: addr(port), acked, online: true, closed: false, known: true }
    }

    /// The primary crashed at `t0`, its replicas on 6380 and 6381 (the
    /// first received most).
    fn crashed(t0: Instant) -> Seen {
        Seen {
            down: vec![(addr(OLD), Down { since: t0, at_once: false })],
            nodes: vec![(addr(OLD), Node { links: vec![link(R1, 100), link(R2, 90)], follows: None })],
            any_down: true,
        }
    }

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    /// Steps as `kind text` lines, acts as `do …`.
    fn lines(steps: &[Step]) -> Vec<String> {
        steps
            .iter()
            .map(|s| match s {
                Step::Event(e) => format!("{} {}", e.kind, e.text),
                Step::Do(a) => format!("do {a:?}"),
            })
            .collect()
    }

    fn event_lines(events: &[Event]) -> Vec<String> {
        events.iter().map(|e| format!("{} {}", e.kind, e.text)).collect()
    }

    #[test]
    fn crash_to_switch_master_and_back_in_redis_order() {
        let mut st = group(3, 2);
        let t0 = Instant::now();
        let seen = crashed(t0);
        assert!(check(&mut st, at(t0, 30_000), &seen).is_empty(), "down for exactly down-after-milliseconds");
        let steps = check(&mut st, at(t0, 30_001), &seen);
        let m = "master mymaster 127.0.0.1 6379";
        assert_eq!(
            lines(&steps),
            [
                format!("+sdown {m}"),
                format!("+odown {m} #quorum 3/2"),
                "+new-epoch 1".into(),
                format!("+try-failover {m}"),
                "+vote-for-leader s0 1".into(),
                format!("+elected-leader {m}"),
                format!("+failover-state-select-slave {m}"),
                format!("do {:?}", Act::Promote { master: "mymaster".into(), primary: addr(OLD), port: R1 }),
            ]
        );
        assert_eq!(st.masters[0].flags(true), "s_down,o_down,master");
        let events = promoted(&mut st, "mymaster", Ok(addr(R1)), true).expect("promoted");
        let new = "slave 127.0.0.1:6380 127.0.0.1 6380 @ mymaster 127.0.0.1 6379";
        let other = "slave 127.0.0.1:6381 127.0.0.1 6381 @ mymaster 127.0.0.1 6379";
        let old_as_replica = "slave 127.0.0.1:6379 127.0.0.1 6379 @ mymaster 127.0.0.1 6380";
        assert_eq!(
            event_lines(&events),
            [
                format!("+selected-slave {new}"),
                format!("+failover-state-send-slaveof-noone {new}"),
                format!("+failover-state-wait-promotion {new}"),
                format!("-role-change {new} new reported role is master"),
                format!("+promoted-slave {new}"),
                format!("+failover-state-reconf-slaves {m}"),
                format!("+slave-reconf-sent {other}"),
                format!("+slave-reconf-inprog {other}"),
                format!("+slave-reconf-done {other}"),
                format!("+failover-end {m}"),
                "+switch-master mymaster 127.0.0.1 6379 127.0.0.1 6380".into(),
                "+slave slave 127.0.0.1:6381 127.0.0.1 6381 @ mymaster 127.0.0.1 6380".into(),
                format!("+slave {old_as_replica}"),
                format!("+sdown {old_as_replica}"),
            ]
        );
        let m = &st.masters[0];
        assert_eq!((m.addr, m.config_epoch, m.sdown, m.odown, m.failover.as_ref()), (addr(R1), 1, None, None, None));
        // The new primary answers; the old one is still down: nothing new.
        let mut seen = Seen {
            down: vec![(addr(OLD), Down { since: t0, at_once: false })],
            nodes: vec![(addr(R1), Node { links: vec![link(R2, 100)], follows: None }), (addr(OLD), Node::default())],
            any_down: true,
        };
        assert!(check(&mut st, at(t0, 40_000), &seen).is_empty());
        // The old primary is back: converted into a replica of the new one.
        seen.down.clear();
        seen.any_down = false;
        assert_eq!(
            lines(&check(&mut st, at(t0, 50_000), &seen)),
            [
                format!("-role-change {old_as_replica} new reported role is master"),
                format!("-sdown {old_as_replica}"),
                format!("do {:?}", Act::Follow { old: addr(OLD), new: addr(R1) }),
                format!("+convert-to-slave {old_as_replica}"),
            ]
        );
        assert!(st.demoted.is_empty());
        assert!(check(&mut st, at(t0, 60_000), &seen).is_empty());
    }

    #[test]
    fn sdown_needs_strictly_more_than_down_after() {
        let mut st = group(1, 1);
        st.masters[0].down_after_ms = 5000;
        let t0 = Instant::now();
        let mut seen = crashed(t0);
        assert!(check(&mut st, at(t0, 4999), &seen).is_empty());
        assert!(check(&mut st, at(t0, 5000), &seen).is_empty());
        let steps = check(&mut st, at(t0, 5001), &seen);
        assert_eq!(
            lines(&steps[..2]),
            ["+sdown master mymaster 127.0.0.1 6379", "+odown master mymaster 127.0.0.1 6379 #quorum 1/1"]
        );
        // A crash to be noticed at once is down at once.
        let mut st = group(1, 1);
        seen.down[0].1.at_once = true;
        assert_eq!(lines(&check(&mut st, t0, &seen)[..1]), ["+sdown master mymaster 127.0.0.1 6379"]);
    }

    #[test]
    fn without_quorum_a_primary_is_only_subjectively_down() {
        let mut st = group(1, 2);
        let t0 = Instant::now();
        let mut seen = crashed(t0);
        assert_eq!(lines(&check(&mut st, at(t0, 30_001), &seen)), ["+sdown master mymaster 127.0.0.1 6379"]);
        assert!(check(&mut st, at(t0, 40_000), &seen).is_empty());
        assert_eq!((st.masters[0].flags(true), st.masters[0].status(), st.epoch), ("s_down,master", "sdown", 0));
        // The quorum lowered: objectively down, failed over.
        st.masters[0].quorum = 1;
        let steps = check(&mut st, at(t0, 40_001), &seen);
        assert_eq!(lines(&steps[..2]), ["+odown master mymaster 127.0.0.1 6379 #quorum 1/1", "+new-epoch 1"]);
        let _ = promoted(&mut st, "mymaster", Err("no".into()), true);
        // Raised again: no longer objectively down; back: no -odown.
        st.masters[0].quorum = 2;
        assert_eq!(lines(&check(&mut st, at(t0, 40_002), &seen)), ["-odown master mymaster 127.0.0.1 6379"]);
        seen.down.clear();
        assert_eq!(lines(&check(&mut st, at(t0, 40_003), &seen)), ["-sdown master mymaster 127.0.0.1 6379"]);
    }

    #[test]
    fn no_replica_aborts_once_until_the_primary_is_back() {
        let mut st = group(1, 1);
        let t0 = Instant::now();
        let mut seen = crashed(t0);
        seen.nodes[0].1.links.iter_mut().for_each(|l| l.closed = true);
        let m = "master mymaster 127.0.0.1 6379";
        assert_eq!(
            lines(&check(&mut st, at(t0, 30_001), &seen)),
            [format!("+sdown {m}"), format!("+odown {m} #quorum 1/1"), format!("-failover-abort-no-good-slave {m}")]
        );
        assert!(check(&mut st, at(t0, 40_000), &seen).is_empty());
        let down = std::mem::take(&mut seen.down);
        assert_eq!(lines(&check(&mut st, at(t0, 50_000), &seen)), [format!("-sdown {m}"), format!("-odown {m}")]);
        // Down again: tried again.
        seen.down = down;
        let steps = check(&mut st, at(t0, 50_001), &seen);
        assert_eq!(lines(&steps).last().expect("steps"), &format!("-failover-abort-no-good-slave {m}"));
    }

    #[test]
    fn a_failed_promotion_is_not_tried_again() {
        let mut st = group(1, 1);
        let t0 = Instant::now();
        let seen = crashed(t0);
        assert!(matches!(check(&mut st, at(t0, 30_001), &seen).last(), Some(Step::Do(Act::Promote { .. }))));
        assert_eq!(promoted(&mut st, "mymaster", Err("gone".into()), true), Err("gone".into()));
        assert!(st.masters[0].no_good_slave);
        assert!(check(&mut st, at(t0, 40_000), &seen).is_empty());
        assert_eq!(st.masters[0].addr, addr(OLD));
    }

    #[test]
    fn manual_failover_of_a_live_primary_hands_over_and_converts() {
        let mut st = group(1, 1);
        let mut seen = Seen {
            nodes: vec![(addr(OLD), Node { links: vec![link(R1, 5), link(R2, 9)], follows: None })],
            ..Seen::default()
        };
        seen.nodes[0].1.links[0].online = false;
        assert_eq!(manual(&mut st, b"nope", &seen), Err(NO_MASTER));
        let steps = manual(&mut st, b"mymaster", &seen).expect("started");
        assert_eq!(
            lines(&steps).last().expect("steps"),
            &format!("do {:?}", Act::HandOver { master: "mymaster".into(), primary: addr(OLD), port: R2 })
        );
        let events = promoted(&mut st, "mymaster", Ok(addr(R2)), false).expect("handed over");
        let old = "slave 127.0.0.1:6379 127.0.0.1 6379 @ mymaster 127.0.0.1 6381";
        assert_eq!(
            event_lines(&events[events.len() - 4..]),
            [
                "+slave slave 127.0.0.1:6380 127.0.0.1 6380 @ mymaster 127.0.0.1 6381".to_string(),
                format!("+slave {old}"),
                format!("-role-change {old} new reported role is master"),
                format!("+convert-to-slave {old}"),
            ]
        );
        assert!(st.demoted.is_empty());
        // No online replica, or no primary at all.
        seen.nodes[0].1.links.iter_mut().for_each(|l| l.online = false);
        st.masters[0].addr = addr(OLD);
        assert_eq!(manual(&mut st, b"mymaster", &seen), Err(NO_GOOD_SLAVE));
        seen.nodes.clear();
        assert_eq!(manual(&mut st, b"mymaster", &seen), Err(NO_GOOD_SLAVE));
    }

    #[test]
    fn a_crashed_replica_is_flagged_and_unflagged() {
        let mut st = group(1, 1);
        let t0 = Instant::now();
        let mut seen = Seen {
            down: vec![(addr(R2), Down { since: t0, at_once: false })],
            nodes: vec![(addr(OLD), Node { links: vec![link(R1, 1), link(R2, 1)], follows: None })],
            any_down: true,
        };
        let r2 = "slave 127.0.0.1:6381 127.0.0.1 6381 @ mymaster 127.0.0.1 6379";
        assert!(check(&mut st, at(t0, 30_000), &seen).is_empty());
        assert_eq!(lines(&check(&mut st, at(t0, 30_001), &seen)), [format!("+sdown {r2}")]);
        assert_eq!(st.replica_flags(addr(R2), true), "s_down,slave,disconnected");
        assert!(check(&mut st, at(t0, 30_002), &seen).is_empty());
        seen.down.clear();
        seen.any_down = false;
        assert_eq!(lines(&check(&mut st, at(t0, 30_003), &seen)), [format!("-sdown {r2}")]);
    }

    #[test]
    fn a_failover_made_elsewhere_is_followed() {
        let mut st = group(1, 1);
        let seen =
            Seen { nodes: vec![(addr(OLD), Node { links: vec![], follows: Some(addr(R1)) })], ..Seen::default() };
        let kinds: Vec<&str> = check(&mut st, Instant::now(), &seen)
            .iter()
            .map(|s| match s {
                Step::Event(e) => e.kind,
                Step::Do(_) => "do",
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "+new-epoch",
                "+try-failover",
                "+vote-for-leader",
                "+elected-leader",
                "+failover-state-select-slave",
                "+selected-slave",
                "+failover-state-send-slaveof-noone",
                "+failover-state-wait-promotion",
                "-role-change",
                "+promoted-slave",
                "+failover-state-reconf-slaves",
                "+failover-end",
                "+switch-master",
                "+slave",
                "-role-change",
                "+convert-to-slave",
            ]
        );
        assert_eq!((st.masters[0].addr, st.masters[0].config_epoch), (addr(R1), 1));
    }
}
