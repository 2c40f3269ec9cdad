//! Replication between rlockd nodes of one process: the stream's effects on
//! the replica, offsets, `WAIT`, read-only replicas, the link's test
//! controls, and failovers that keep or lose a lock.

use crate::common::resp::{RawConn, Value};

const REENTRANT_LOCK: &str = include_str!("../../lua/reentrant_lock.lua");

fn ok() -> Value {
    Value::Simple(b"OK".to_vec())
}

fn bulk(s: &str) -> Value {
    Value::Bulk(Some(s.as_bytes().to_vec()))
}

/// `INFO replication` as field → value.
fn info(c: &mut RawConn) -> std::collections::HashMap<String, String> {
    let Value::Bulk(Some(text)) = c.cmd(&["INFO", "replication"]) else { panic!("INFO") };
    String::from_utf8(text)
        .expect("utf-8")
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn pair() -> (Vec<rlockd::Server>, RawConn, RawConn) {
    let nodes = rlockd::Server::start_with_replicas(1, rlockd::Config::default()).expect("start");
    let p = RawConn::connect(nodes[0].port());
    let r = RawConn::connect(nodes[1].port());
    (nodes, p, r)
}

#[test]
fn writes_reach_the_replica_and_wait_counts_it() {
    let (nodes, mut p, mut r) = pair();
    assert_eq!(p.cmd(&["SET", "a", "1"]), ok());
    assert_eq!(p.cmd(&["WAIT", "1", "0"]), Value::Int(1));
    assert_eq!(r.cmd(&["GET", "a"]), bulk("1"));
    // SELECT 0 (23 bytes), SET a 1 (27 bytes), then the REPLCONF GETACK *
    // (37 bytes) the blocked WAIT asked for, as Redis counts them; the
    // replica acknowledged what preceded the GETACK.
    let pi = info(&mut p);
    assert_eq!(pi["role"], "master");
    assert_eq!(pi["connected_slaves"], "1");
    assert_eq!(pi["master_repl_offset"], "87");
    // The acknowledgement WAIT got (50), or the once-a-second one (87).
    let slave0 = |o: u64| format!("ip=127.0.0.1,port={},state=online,offset={o},lag=0", nodes[1].port());
    assert!(pi["slave0"] == slave0(50) || pi["slave0"] == slave0(87), "{}", pi["slave0"]);
    let ri = info(&mut r);
    assert_eq!(ri["role"], "slave");
    assert_eq!(ri["master_port"], nodes[0].port().to_string());
    assert_eq!(ri["master_link_status"], "up");
    assert_eq!(ri["slave_repl_offset"], "87");
    assert_eq!(ri["master_replid"], pi["master_replid"]);
    let role = p.cmd(&["ROLE"]);
    let acked = |o: &str| {
        Value::Agg(
            b'*',
            Some(vec![
                bulk("master"),
                Value::Int(87),
                Value::Agg(
                    b'*',
                    Some(vec![Value::Agg(
                        b'*',
                        Some(vec![bulk("127.0.0.1"), bulk(&nodes[1].port().to_string()), bulk(o)]),
                    )]),
                ),
            ]),
        )
    };
    assert!(role == acked("50") || role == acked("87"), "{role:?}");
    assert_eq!(
        r.cmd(&["ROLE"]),
        Value::Agg(
            b'*',
            Some(vec![
                bulk("slave"),
                bulk("127.0.0.1"),
                Value::Int(i64::from(nodes[0].port())),
                bulk("connected"),
                Value::Int(87)
            ])
        )
    );
    // Read-only replica; its stream is not.
    assert_eq!(
        r.cmd(&["SET", "b", "1"]),
        Value::Error(b"READONLY You can't write against a read only replica.".to_vec())
    );
    let Value::Error(e) = r.cmd(&["EVAL", "return redis.call('set','b','1')", "0"]) else { panic!("script write") };
    assert!(e.starts_with(b"READONLY You can't write against a read only replica."), "{}", String::from_utf8_lossy(&e));
    assert_eq!(r.cmd(&["WAIT", "0", "0"]), Value::Error(b"ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.".to_vec()));
}

#[test]
fn scripts_replicate_their_effects_and_expiry_deletes() {
    let (nodes, mut p, mut r) = pair();
    assert!(p.cmd(&["RLOCKD", "CLOCK", "FREEZE"]).as_int().is_some());
    // A Redisson lock: HINCRBY + PEXPIRE, replicated as MULTI, hincrby,
    // PEXPIREAT, EXEC.
    assert_eq!(p.cmd(&["EVAL", REENTRANT_LOCK, "1", "myLock", "30000", "uuid-1:1"]), Value::Bulk(None));
    assert_eq!(p.cmd(&["WAIT", "1", "0"]), Value::Int(1));
    assert_eq!(r.cmd(&["HGET", "myLock", "uuid-1:1"]), bulk("1"));
    let Value::Int(pt) = p.cmd(&["PEXPIRETIME", "myLock"]) else { panic!("PEXPIRETIME") };
    assert_eq!(r.cmd(&["PEXPIRETIME", "myLock"]), Value::Int(pt), "the deadline is replicated, not the TTL");
    let (po, ro) = (info(&mut p)["master_repl_offset"].clone(), info(&mut r)["master_repl_offset"].clone());
    assert_eq!(po, ro);
    // The lease runs out on the primary's clock: the replica learns by a DEL.
    assert!(r.cmd(&["RLOCKD", "CLOCK", "FREEZE"]).as_int().is_some());
    p.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "30000"]);
    let mut p2 = RawConn::connect(nodes[0].port());
    assert_eq!(p2.cmd(&["SET", "x", "1"]), ok());
    assert_eq!(p2.cmd(&["WAIT", "1", "0"]), Value::Int(1));
    assert_eq!(r.cmd(&["EXISTS", "myLock"]), Value::Int(0));
    assert_eq!(info(&mut p)["master_repl_offset"], info(&mut r)["master_repl_offset"]);
    drop(nodes);
}

#[test]
fn a_paused_link_leaves_writes_unacknowledged() {
    let (_nodes, mut p, mut r) = pair();
    assert_eq!(p.cmd(&["RLOCKD", "REPL", "PAUSE"]), Value::Int(1));
    assert_eq!(p.cmd(&["SET", "k", "v"]), ok());
    assert_eq!(p.cmd(&["WAIT", "1", "100"]), Value::Int(0));
    assert_eq!(r.cmd(&["EXISTS", "k"]), Value::Int(0));
    assert_eq!(p.cmd(&["RLOCKD", "REPL", "RESUME"]), Value::Int(1));
    assert_eq!(p.cmd(&["WAIT", "1", "0"]), Value::Int(1));
    assert_eq!(r.cmd(&["GET", "k"]), bulk("v"));
    // A broken link: the replica says so, and catches up when restored.
    assert_eq!(p.cmd(&["RLOCKD", "REPL", "BREAK"]), Value::Int(1));
    assert_eq!(info(&mut r)["master_link_status"], "down");
    assert_eq!(info(&mut p)["connected_slaves"], "0");
    assert_eq!(p.cmd(&["SET", "k", "w"]), ok());
    assert_eq!(p.cmd(&["WAIT", "1", "50"]), Value::Int(0));
    assert_eq!(p.cmd(&["RLOCKD", "REPL", "RESTORE"]), Value::Int(1));
    assert_eq!(p.cmd(&["WAIT", "1", "0"]), Value::Int(1));
    assert_eq!(r.cmd(&["GET", "k"]), bulk("w"));
}

#[test]
fn a_lossy_failover_gives_a_lock_two_holders_and_check_says_so() {
    let (nodes, mut p, mut r) = pair();
    assert_eq!(p.cmd(&["RLOCKD", "REPL", "PAUSE"]), Value::Int(1));
    assert_eq!(p.cmd(&["SET", "lock", "token-1", "NX", "PX", "30000"]), ok());
    assert_eq!(p.cmd(&["WAIT", "1", "10"]), Value::Int(0));
    assert_eq!(r.cmd(&["EXISTS", "lock"]), Value::Int(0));
    assert_eq!(p.cmd(&["RLOCKD", "REPL", "FAILOVER"]), bulk(&nodes[1].addr().to_string()));
    assert_eq!(r.cmd(&["EXISTS", "lock"]), Value::Int(0));
    assert_eq!(info(&mut r)["role"], "master");
    assert_eq!(info(&mut p)["role"], "slave");
    // The acknowledged lock is gone: a second client takes it.
    assert_eq!(r.cmd(&["SET", "lock", "token-2", "NX", "PX", "30000"]), ok());
    for c in [&mut r, &mut p] {
        let Value::Agg(_, Some(v)) = c.cmd(&["RLOCKD", "CHECK"]) else { panic!("CHECK") };
        assert_eq!(v.len(), 1, "{v:?}");
        let Value::Bulk(Some(text)) = &v[0] else { panic!("{v:?}") };
        let text = String::from_utf8_lossy(text);
        assert!(text.contains("lock 'lock'") && text.contains("token-1") && text.contains("token-2"), "{text}");
    }
    // The old primary follows the new one, without the lost write.
    assert_eq!(r.cmd(&["WAIT", "1", "0"]), Value::Int(1));
    assert_eq!(p.cmd(&["GET", "lock"]), bulk("token-2"));
    assert_eq!(nodes[0].check_locks().len(), 1);
    assert_eq!(r.cmd(&["RLOCKD", "CHECK", "RESET"]), ok());
    assert!(nodes[0].check_locks().is_empty(), "the topology's ledger is shared");
}

#[test]
fn a_failover_after_full_replication_loses_nothing() {
    let (nodes, mut p, mut r) = pair();
    assert_eq!(p.cmd(&["SET", "lock", "token-1", "NX", "PX", "30000"]), ok());
    assert_eq!(p.cmd(&["WAIT", "1", "0"]), Value::Int(1));
    assert_eq!(nodes[0].failover().expect("failover"), nodes[1].addr());
    assert_eq!(r.cmd(&["SET", "lock", "token-2", "NX", "PX", "30000"]), Value::Bulk(None));
    let Value::Agg(_, Some(v)) = r.cmd(&["RLOCKD", "CHECK"]) else { panic!("CHECK") };
    assert!(v.is_empty(), "{v:?}");
    assert!(nodes[1].check_locks().is_empty());
}
