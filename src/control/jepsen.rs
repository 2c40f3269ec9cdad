//! The lock history as a Jepsen-style history of operations, for checkers
//! built on Jepsen's format (`RLOCKD HISTORY`, `Server::history`).
//!
//! The sources are the ones the timeline reads: each node's lock events
//! ([`super::history`]), its claimed critical sections ([`super::timeline`]'s
//! claims) and the grants a failover lost (the topology's ledger). Each
//! becomes one operation written as two entries, its invocation and its
//! completion, with Jepsen's keys:
//!
//! | key | value |
//! |---|---|
//! | `index` | the entry's position, from 0 |
//! | `time` | nanoseconds since the history's first entry (server time, so whole milliseconds) |
//! | `type` | `invoke`, then `ok` (`fail`: a refused acquire; `info` for both entries of a `nemesis` operation) |
//! | `process` | one integer per holder (owner token), by first appearance; `nemesis` for what the server or a failover did |
//! | `f` | `acquire`, `renew`, `release`, `enter`, `leave`; `expire`, `lose` (nemesis) |
//! | `value` | `key`, `db`, `holder`, `kind`, `count` (hold depth after the operation), `deadline` (lease end, same scale as `time`; `null` when unknown) |
//!
//! and three of rlockd's own beside them: `unix_ms` (server time), `client`
//! (the connection's id, 0: the server) and `command`.
//!
//! The events map as: `acquired` and `reentered` → `acquire` (count 1 or
//! the new depth), `renewed` → `renew`, `released` → `release` (count: the
//! depth left), `expired` → `expire` by the nemesis (the lease ran out: an
//! explicit operation, so a checker needs no clock of its own). A grant
//! lost in a failover is its `acquire` on the old primary (with its lease's
//! `deadline`), then `lose` by the nemesis when the failover dropped it: its
//! client still believes it holds the lock until that deadline. `RLOCKD
//! CLAIM ENTER`/`LEAVE` → `enter`/`leave`: the holder says it is inside its
//! critical section, and it must hold the lock at both ends. A counter's
//! value (semaphores, latches) is no operation.
//!
//! A refused acquire changes no lock, so the history's comparison never
//! sees it; it is caught from the command's reply ([`refused_acquire`]) and
//! written as an `acquire` completed by `fail`: a `SET key token NX …`
//! answered nil while another token holds `key` (redis-py's `Lock`,
//! redsync, node-redlock's single-instance lock), or a script whose first
//! key is a lock held by others, answered the lock's remaining lease in
//! milliseconds exactly (Redisson's lock, fair lock and read-write lock
//! return `pttl` when taken), the holder being the script's first argument
//! that is not an integer. Other refusals (a script answering 0) are not
//! recognised. The newest [`MAX_REFUSALS`] are kept.
//!
//! Order: each node's events and claims in the order they happened there
//! (a claim sits after the last event before it), the nodes and the lost
//! grants merged by time. Each operation is instantaneous on the server, so
//! its completion follows its invocation at once.

use std::fmt::Write;

use bytes::Bytes;

use std::collections::VecDeque;

use super::history::LockEvent;
use super::timeline::{Claim, LostHold};
use crate::protocol::Reply;

/// The most refused acquires kept; past it the oldest go.
pub const MAX_REFUSALS: usize = 10_000;

/// An acquire the server refused (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The history's newest event id when it was refused: where it falls.
    pub after_id: u64,
    pub time_ms: u64,
    pub db: usize,
    pub key: Bytes,
    /// Who asked.
    pub holder: Bytes,
    /// The lock's kind.
    pub kind: &'static str,
    pub client: u64,
    /// The command with its detail (an `EVAL`'s whole script): shared with
    /// the refusal before when the same (a script refused over and over
    /// keeps one copy).
    pub command: std::sync::Arc<str>,
}

/// The newest [`MAX_REFUSALS`] refused acquires.
#[derive(Debug, Default, Clone)]
pub struct Refusals(VecDeque<Refusal>);

impl Refusals {
    pub fn push(&mut self, r: Refusal) {
        if self.0.len() >= MAX_REFUSALS {
            self.0.pop_front();
        }
        self.0.push_back(r);
    }

    pub fn iter(&self) -> impl Iterator<Item = &Refusal> {
        self.0.iter()
    }

    /// `command` as a refusal keeps it: the newest refusal's copy if equal.
    pub fn command(&self, command: String) -> std::sync::Arc<str> {
        match self.0.back() {
            Some(r) if *r.command == *command => r.command.clone(),
            _ => command.into(),
        }
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }
}

/// The acquire a command asked for, if its reply refused it: the lock's
/// key, who asked, and for a script the lease it answered (ms), which must
/// be the lock's. `command` is the command's name as the history's actor
/// has it. Only the shapes of the module docs.
pub fn refused_acquire<'a>(
    command: &str,
    is_script: bool,
    argv: &'a [Bytes],
    reply: &Reply,
) -> Option<(&'a Bytes, &'a [u8], Option<i64>)> {
    let integer = |a: &[u8]| !a.is_empty() && std::str::from_utf8(a).is_ok_and(|t| t.parse::<i64>().is_ok());
    match reply {
        Reply::Nil if command == "set" && argv.len() >= 4 => {
            argv[3..].iter().any(|a| a.eq_ignore_ascii_case(b"nx")).then(|| (&argv[1], &argv[2][..], None))
        }
        Reply::Int(ttl) if is_script && *ttl > 0 && argv.len() >= 4 => {
            let numkeys = std::str::from_utf8(&argv[2]).ok()?.parse::<usize>().ok()?;
            if numkeys == 0 || argv.len() < 3 + numkeys {
                return None;
            }
            let holder = argv[3 + numkeys..].iter().find(|a| !integer(a))?;
            Some((&argv[3], &holder[..], Some(*ttl)))
        }
        _ => None,
    }
}

/// The most runs of events made as a replica kept; past it the oldest go
/// (a node changes role rarely: runs of one role are contiguous ids).
const MAX_RUNS: usize = 1_000;

/// The ids of the events a node made as a replica, as runs `(first, last)`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Runs(Vec<(u64, u64)>);

impl Runs {
    /// Events `first..=last` were made as a replica.
    pub fn note(&mut self, first: u64, last: u64) {
        match self.0.last_mut() {
            Some(run) if run.1 + 1 == first => run.1 = last,
            _ => {
                if self.0.len() >= MAX_RUNS {
                    self.0.remove(0);
                }
                self.0.push((first, last));
            }
        }
    }

    /// True if event `id` was made as a replica.
    pub fn contains(&self, id: u64) -> bool {
        let i = self.0.partition_point(|r| r.1 < id);
        self.0.get(i).is_some_and(|r| r.0 <= id)
    }
}

/// What one node contributes to a history.
#[derive(Debug, Default)]
pub struct NodeHistory {
    pub events: Vec<LockEvent>,
    pub claims: Vec<Claim>,
    /// The events it made as a replica: applied from its primary.
    pub replica_runs: Runs,
    pub refusals: Vec<Refusal>,
}

/// How `RLOCKD HISTORY` writes the operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A JSON array, one operation per line.
    Json,
    /// Jepsen's own `history.edn`: one EDN map per line, keywords for keys,
    /// `type`, `f` and the nemesis.
    Edn,
}

/// One operation, before it is numbered and written.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub f: &'static str,
    /// Completed by `fail` (a refused acquire).
    pub fail: bool,
    /// Done by the server or a failover (`process` `nemesis`).
    pub nemesis: bool,
    pub time_ms: u64,
    pub db: usize,
    pub key: Bytes,
    pub holder: Bytes,
    pub kind: &'static str,
    pub count: i64,
    /// The lease's end, unix ms, when known.
    pub deadline_ms: Option<u64>,
    pub client: u64,
    pub command: String,
}

/// Where an operation falls: by time, then the topology's before a node's,
/// then by node and the node's own order.
type Place = (u64, u8, usize, u64);

fn from_event(e: &LockEvent) -> Option<Op> {
    let (f, nemesis) = match e.event {
        "acquired" | "reentered" => ("acquire", false),
        "renewed" => ("renew", false),
        "released" => ("release", false),
        "expired" => ("expire", true),
        _ => return None,
    };
    Some(Op {
        f,
        fail: false,
        nemesis,
        time_ms: e.time_ms,
        db: e.db,
        key: e.key.clone(),
        holder: e.holder.clone(),
        kind: e.kind,
        count: e.count,
        deadline_ms: None,
        client: e.client,
        command: e.command.clone(),
    })
}

/// The operations of `nodes` and of the `lost` grants, on the locks whose
/// key matches `pattern`, in order (see the module docs). Of several
/// nodes (a cluster's), the events one made as a replica are left out: the
/// node that made them as a primary has them.
pub fn operations(nodes: &[NodeHistory], lost: &[LostHold], pattern: Option<&[u8]>) -> Vec<Op> {
    let wanted = |key: &[u8]| pattern.is_none_or(|p| crate::glob::matches(p, key, false));
    let mut placed: Vec<(Place, Op)> = Vec::new();
    let several = nodes.len() > 1;
    for (n, node) in nodes.iter().enumerate() {
        // A node's own order: event `id` at 2·id, a claim just after the
        // newest event it saw. Its times follow that order unless the
        // clock was moved back; the merge below keeps the node's order.
        let mut mine: Vec<(u64, Op)> = Vec::new();
        for e in node.events.iter().filter(|e| wanted(&e.key) && !(several && node.replica_runs.contains(e.id))) {
            if let Some(op) = from_event(e) {
                mine.push((2 * e.id, op));
            }
        }
        let kind_of = |key: &Bytes| node.events.iter().rev().find(|e| e.key == key).map_or("", |e| e.kind);
        for c in node.claims.iter().filter(|c| wanted(&c.key)) {
            let (enter_id, leave_id) = c.event_ids();
            let claim = |f, time_ms| Op {
                f,
                fail: false,
                nemesis: false,
                time_ms,
                db: c.db,
                key: c.key.clone(),
                holder: c.holder.clone(),
                kind: kind_of(&c.key),
                count: 0,
                deadline_ms: None,
                client: c.client,
                command: format!("rlockd claim {f}"),
            };
            mine.push((2 * enter_id + 1, claim("enter", c.enter_ms)));
            if let (Some(t), Some(id)) = (c.leave_ms, leave_id) {
                mine.push((2 * id + 1, claim("leave", t)));
            }
        }
        for r in node.refusals.iter().filter(|r| wanted(&r.key)) {
            let op = Op {
                f: "acquire",
                fail: true,
                nemesis: false,
                time_ms: r.time_ms,
                db: r.db,
                key: r.key.clone(),
                holder: r.holder.clone(),
                kind: r.kind,
                count: 0,
                deadline_ms: None,
                client: r.client,
                command: r.command.to_string(),
            };
            mine.push((2 * r.after_id + 1, op));
        }
        // Claims and refusals after the same event: by time.
        mine.sort_by_key(|(seq, op)| (*seq, op.time_ms));
        // Times made non-decreasing along the node's order for the merge
        // only; each operation keeps its own.
        let mut latest = 0;
        for (seq, op) in mine {
            latest = latest.max(op.time_ms);
            placed.push(((latest, 1, n, seq), op));
        }
    }
    for (i, g) in lost.iter().enumerate().filter(|(_, g)| wanted(&g.key)) {
        // Its acquire, if a node recorded it, carries its lease's end.
        let recorded = placed.iter_mut().find(|(_, o)| {
            o.f == "acquire" && o.db == g.db && o.key == g.key && o.holder == g.holder && o.time_ms == g.start_ms
        });
        let granted_here = recorded.is_some();
        if let Some((_, o)) = recorded {
            o.deadline_ms = o.deadline_ms.or(g.until_ms);
        }
        let op = |f, nemesis, time_ms| Op {
            f,
            fail: false,
            nemesis,
            time_ms,
            db: g.db,
            key: g.key.clone(),
            holder: g.holder.clone(),
            kind: "",
            count: 1,
            deadline_ms: g.until_ms,
            client: if nemesis { 0 } else { g.client },
            command: if nemesis { "(failover)".into() } else { "(lost in a failover)".into() },
        };
        if !granted_here {
            placed.push(((g.start_ms, 0, 0, 2 * i as u64), op("acquire", false, g.start_ms)));
        }
        placed.push(((g.lost_ms, 0, 0, 2 * i as u64 + 1), op("lose", true, g.lost_ms)));
    }
    placed.sort_by_key(|(at, _)| *at);
    placed.into_iter().map(|(_, op)| op).collect()
}

/// A string as JSON or EDN writes it (both read `\"`, `\\` and `\uXXXX`).
fn string(out: &mut String, b: &[u8]) {
    super::timeline::json_b(out, b);
}

/// The operations written as a history: each as its invocation and its
/// completion, numbered, in `format` (see the module docs).
pub fn write(ops: &[Op], format: Format) -> String {
    let edn = format == Format::Edn;
    let t0 = ops.iter().map(|o| o.time_ms).min().unwrap_or(0);
    let ns = |ms: u64| (i128::from(ms) - i128::from(t0)) * 1_000_000;
    let mut processes: Vec<&Bytes> = Vec::new();
    let mut out = String::with_capacity(64 + ops.len() * 2 * 260);
    if !edn {
        out.push_str("[\n");
    }
    let (kw, sep, null) = if edn { (":", " ", "nil") } else { ("\"", ":", "null") };
    let key = |out: &mut String, k: &str| {
        out.push_str(kw);
        out.push_str(k);
        if !edn {
            out.push('"');
        }
        out.push_str(sep);
    };
    let word = |out: &mut String, w: &str| {
        if edn {
            out.push(':');
            out.push_str(w);
        } else {
            string(out, w.as_bytes());
        }
    };
    let mut index = 0usize;
    for op in ops {
        let process = if op.nemesis {
            None
        } else {
            Some(processes.iter().position(|p| **p == op.holder).unwrap_or_else(|| {
                processes.push(&op.holder);
                processes.len() - 1
            }))
        };
        let completion = match (op.nemesis, op.fail) {
            (true, _) => "info",
            (false, true) => "fail",
            (false, false) => "ok",
        };
        for type_ in [if op.nemesis { "info" } else { "invoke" }, completion] {
            if index > 0 {
                out.push_str(if edn { "\n" } else { ",\n" });
            }
            out.push('{');
            key(&mut out, "index");
            let _ = write!(out, "{index}, ");
            key(&mut out, "time");
            let _ = write!(out, "{}, ", ns(op.time_ms));
            key(&mut out, "type");
            word(&mut out, type_);
            out.push_str(", ");
            key(&mut out, "process");
            match process {
                Some(p) => {
                    let _ = write!(out, "{p}");
                }
                None => word(&mut out, "nemesis"),
            }
            out.push_str(", ");
            key(&mut out, "f");
            word(&mut out, op.f);
            out.push_str(", ");
            key(&mut out, "value");
            out.push('{');
            key(&mut out, "key");
            string(&mut out, &op.key);
            out.push_str(", ");
            key(&mut out, "db");
            let _ = write!(out, "{}, ", op.db);
            key(&mut out, "holder");
            string(&mut out, &op.holder);
            out.push_str(", ");
            key(&mut out, "kind");
            string(&mut out, op.kind.as_bytes());
            out.push_str(", ");
            key(&mut out, "count");
            let _ = write!(out, "{}, ", op.count);
            key(&mut out, "deadline");
            match op.deadline_ms {
                Some(d) => {
                    let _ = write!(out, "{}", ns(d));
                }
                None => out.push_str(null),
            }
            out.push_str("}, ");
            key(&mut out, "unix_ms");
            let _ = write!(out, "{}, ", op.time_ms);
            key(&mut out, "client");
            let _ = write!(out, "{}, ", op.client);
            key(&mut out, "command");
            string(&mut out, op.command.as_bytes());
            out.push('}');
            index += 1;
        }
    }
    match (edn, index > 0) {
        (true, true) => out.push('\n'),
        (true, false) => {}
        (false, true) => out.push_str("\n]\n"),
        (false, false) => out.push_str("]\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: u64, time_ms: u64, event: &'static str, holder: &str, count: i64) -> LockEvent {
        LockEvent {
            id,
            time_ms,
            db: 0,
            key: Bytes::from_static(b"lock"),
            kind: "token",
            event,
            holder: Bytes::copy_from_slice(holder.as_bytes()),
            count,
            client: if event == "expired" { 0 } else { 7 },
            command: if event == "expired" { "(expiry)".into() } else { "set".into() },
        }
    }

    #[test]
    fn events_become_invocations_and_completions() {
        let node = NodeHistory {
            events: vec![
                event(1, 1_000, "acquired", "a", 1),
                event(2, 1_001, "reentered", "a", 2),
                event(3, 1_002, "renewed", "a", 2),
                event(4, 1_003, "released", "a", 1),
                event(5, 1_004, "expired", "a", 0),
                event(6, 1_004, "acquired", "b", 1),
                event(7, 1_005, "counter", "", 3),
            ],
            ..Default::default()
        };
        let ops = operations(&[node], &[], None);
        let fs: Vec<(&str, bool, i64)> = ops.iter().map(|o| (o.f, o.nemesis, o.count)).collect();
        assert_eq!(
            fs,
            [
                ("acquire", false, 1),
                ("acquire", false, 2),
                ("renew", false, 2),
                ("release", false, 1),
                ("expire", true, 0),
                ("acquire", false, 1)
            ]
        );
        let json = write(&ops, Format::Json);
        let lines: Vec<&str> = json.lines().collect();
        assert_eq!(lines.len(), 2 + 12, "{json}");
        assert_eq!(
            lines[1],
            r#"{"index":0, "time":0, "type":"invoke", "process":0, "f":"acquire", "value":{"key":"lock", "db":0, "holder":"a", "kind":"token", "count":1, "deadline":null}, "unix_ms":1000, "client":7, "command":"set"},"#
        );
        assert!(
            lines[10].starts_with(r#"{"index":9, "time":4000000, "type":"info", "process":"nemesis", "f":"expire""#)
        );
        assert!(lines[12].contains(r#""index":11, "time":4000000, "type":"ok", "process":1, "f":"acquire""#));
        let edn = write(&ops, Format::Edn);
        assert_eq!(
            edn.lines().next(),
            Some(
                r#"{:index 0, :time 0, :type :invoke, :process 0, :f :acquire, :value {:key "lock", :db 0, :holder "a", :kind "token", :count 1, :deadline nil}, :unix_ms 1000, :client 7, :command "set"}"#
            )
        );
        assert_eq!(edn.lines().count(), 12);
        assert_eq!(write(&[], Format::Json), "[\n]\n");
        assert_eq!(write(&[], Format::Edn), "");
    }

    #[test]
    fn a_lost_grant_is_an_acquire_then_a_loss_merged_by_time() {
        let node = NodeHistory { events: vec![event(1, 5_000, "acquired", "b", 1)], ..Default::default() };
        let lost = LostHold {
            db: 0,
            key: Bytes::from_static(b"lock"),
            holder: Bytes::from_static(b"a"),
            client: 3,
            start_ms: 1_000,
            until_ms: Some(31_000),
            lost_ms: 4_000,
        };
        let ops = operations(&[node], std::slice::from_ref(&lost), None);
        let seen: Vec<(&str, &[u8], u64)> = ops.iter().map(|o| (o.f, &o.holder[..], o.time_ms)).collect();
        assert_eq!(seen, [("acquire", &b"a"[..], 1_000), ("lose", b"a", 4_000), ("acquire", b"b", 5_000)]);
        assert_eq!(ops[0].deadline_ms, Some(31_000));
        let json = write(&ops, Format::Json);
        assert!(json.contains(r#""deadline":30000000000"#), "{json}");
        // Its acquire is not repeated when the node recorded it.
        let node = NodeHistory { events: vec![event(1, 1_000, "acquired", "a", 1)], ..Default::default() };
        let ops = operations(&[node], &[lost], None);
        assert_eq!(ops.iter().map(|o| o.f).collect::<Vec<_>>(), ["acquire", "lose"]);
        assert_eq!(ops[0].deadline_ms, Some(31_000));
        // A pattern keeps only its locks.
        assert!(operations(&[], &[], Some(b"other*")).is_empty());
    }

    /// Of several nodes, what one applied from its primary is the primary's
    /// (once); a lone node's history keeps it.
    #[test]
    fn events_made_as_a_replica_count_once() {
        let mut runs = Runs::default();
        runs.note(2, 2);
        runs.note(3, 4);
        runs.note(7, 7);
        assert_eq!(runs, Runs(vec![(2, 4), (7, 7)]));
        assert_eq!((0..9).filter(|&i| runs.contains(i)).collect::<Vec<_>>(), [2, 3, 4, 7]);
        let primary = NodeHistory { events: vec![event(1, 1_000, "acquired", "a", 1)], ..Default::default() };
        let replica = || NodeHistory {
            events: vec![event(1, 1_000, "acquired", "a", 1), event(2, 2_000, "acquired", "b", 1)],
            replica_runs: Runs(vec![(1, 1)]),
            ..Default::default()
        };
        let holders = |ops: Vec<Op>| ops.into_iter().map(|o| o.holder).collect::<Vec<_>>();
        assert_eq!(holders(operations(&[primary, replica()], &[], None)), ["a", "b"]);
        assert_eq!(holders(operations(&[replica()], &[], None)), ["a", "b"]);
    }

    #[test]
    fn refused_acquires_are_told_by_their_reply() {
        let argv = |a: &[&str]| a.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect::<Vec<_>>();
        let set = argv(&["SET", "lock", "tok", "NX", "PX", "30000"]);
        assert_eq!(refused_acquire("set", false, &set, &Reply::Nil), Some((&set[1], &b"tok"[..], None)));
        assert_eq!(refused_acquire("set", false, &set, &Reply::ok()), None);
        let plain = argv(&["SET", "lock", "tok", "PX", "30000"]);
        assert_eq!(refused_acquire("set", false, &plain, &Reply::Nil), None);
        // Redisson's tryLock: KEYS[1], ARGV = lease, holder.
        let eval = argv(&["EVALSHA", "sha", "1", "lock", "30000", "uuid:1"]);
        assert_eq!(
            refused_acquire("evalsha", true, &eval, &Reply::Int(2500)),
            Some((&eval[3], &b"uuid:1"[..], Some(2500)))
        );
        assert_eq!(refused_acquire("evalsha", true, &eval, &Reply::Nil), None);
        assert_eq!(refused_acquire("evalsha", true, &eval, &Reply::Int(0)), None);
        assert_eq!(refused_acquire("evalsha", true, &argv(&["EVALSHA", "sha", "0", "1"]), &Reply::Int(5)), None);
        assert_eq!(
            refused_acquire("evalsha", true, &argv(&["EVALSHA", "sha", "1", "lock", "30000"]), &Reply::Int(5)),
            None
        );
        assert_eq!(
            refused_acquire("evalsha", true, &argv(&["EVALSHA", "sha", "x", "lock", "u"]), &Reply::Int(5)),
            None
        );
        let node = NodeHistory {
            events: vec![event(1, 1_000, "acquired", "a", 1)],
            refusals: vec![Refusal {
                after_id: 1,
                time_ms: 1_000,
                db: 0,
                key: Bytes::from_static(b"lock"),
                holder: Bytes::from_static(b"b"),
                kind: "token",
                client: 8,
                command: "set".into(),
            }],
            ..Default::default()
        };
        let ops = operations(&[node], &[], None);
        assert_eq!(ops.iter().map(|o| (o.f, o.fail)).collect::<Vec<_>>(), [("acquire", false), ("acquire", true)]);
        let json = write(&ops, Format::Json);
        assert!(json.contains(r#""index":3, "time":0, "type":"fail", "process":1, "f":"acquire""#), "{json}");
    }

    #[test]
    fn strings_are_escaped() {
        let mut s = String::new();
        string(&mut s, b"a\"b\\c\n\x01");
        assert_eq!(s, r#""a\"b\\c\u000a\u0001""#);
    }
}
