//! `RLOCKD CLUSTER PARTITION`: Redis Cluster's own lossy window, over TCP.
//! A primary cut off from the majority keeps granting locks until its own
//! `cluster-node-timeout`; the majority promotes its replica, which never
//! received them; a second client acquires the same lock there, `RLOCKD
//! CHECK` names the two holders and the partition, and after `HEAL` the old
//! primary is a replica of the new one and its grant is gone. A lock whose
//! write the replica acknowledged (`WAIT`) before the partition keeps one
//! holder.

use std::time::{Duration, Instant};

use crate::common::resp::{RawConn, Value};

fn ok() -> Value {
    Value::Simple(b"OK".to_vec())
}

fn text(v: Value) -> String {
    match v {
        Value::Bulk(Some(b)) | Value::Verbatim(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("text expected: {other:?}"),
    }
}

/// Waits (bounded) until `f` holds.
fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_partition_loses_the_minority_primarys_lock_and_check_names_it() {
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut conns: Vec<RawConn> = ports.iter().map(|&p| RawConn::connect(p)).collect();
    // "foo" and "{foo}safe" are in slot 12182: node 2's, replicated by node 5.
    assert_eq!(conns[2].cmd(&["SET", "{foo}safe", "holder-0", "NX", "PX", "600000"]), ok());
    assert_eq!(conns[2].cmd(&["WAIT", "1", "5000"]), Value::Int(1), "the replica has it");
    let p2 = ports[2].to_string();
    let name = text(conns[0].cmd(&["RLOCKD", "CLUSTER", "PARTITION", &p2]));
    let minority = format!("127.0.0.1:{}", ports[2]);
    assert!(name.starts_with(&format!("{minority} | ")), "{name}");
    assert_eq!(
        conns[0].cmd(&["RLOCKD", "CLUSTER", "PARTITION", "0"]),
        Value::Error(b"ERR the cluster is already partitioned: HEAL first".to_vec())
    );

    // The cut-off primary keeps granting: nothing reaches its replica.
    assert_eq!(conns[2].cmd(&["SET", "foo", "holder-1", "NX", "PX", "600000"]), ok());
    assert_eq!(conns[2].cmd(&["WAIT", "1", "100"]), Value::Int(0), "the replica is on the other side");
    assert!(text(conns[2].cmd(&["CLUSTER", "INFO"])).contains("cluster_state:ok"), "before the timeout");
    assert_eq!(cluster.slot_owner(12182), Some(2));

    // cluster-node-timeout (15 s) passes on every node's clock.
    for c in &mut conns {
        assert!(matches!(c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "15001"]), Value::Int(_)));
    }
    wait_until("the majority promotes node 5", || cluster.slot_owner(12182) == Some(5));
    wait_until("the minority refuses", || text(conns[2].cmd(&["CLUSTER", "INFO"])).contains("cluster_state:fail"));
    assert_eq!(
        conns[2].cmd(&["SET", "foo", "holder-x", "NX", "PX", "600000"]),
        Value::Error(b"CLUSTERDOWN The cluster is down".to_vec())
    );
    assert_eq!(conns[2].cmd(&["GET", "foo"]), Value::Error(b"CLUSTERDOWN The cluster is down".to_vec()));
    let ids = cluster.node_ids();
    let seen_by_2 = text(conns[2].cmd(&["CLUSTER", "NODES"]));
    assert!(
        seen_by_2.lines().any(|l| l.starts_with(&ids[0]) && l.contains(" master,fail? ")),
        "node 2 has not heard from node 0: {seen_by_2}"
    );
    let seen_by_0 = text(conns[0].cmd(&["CLUSTER", "NODES"]));
    assert!(
        seen_by_0.lines().any(|l| l.starts_with(&ids[2]) && l.contains(" master,fail - ")),
        "the majority failed node 2: {seen_by_0}"
    );
    wait_until("the majority serves again", || text(conns[0].cmd(&["CLUSTER", "INFO"])).contains("cluster_state:ok"));
    assert_eq!(conns[0].cmd(&["GET", "foo"]), Value::Error(format!("MOVED 12182 127.0.0.1:{}", ports[5]).into()));

    // A second holder on the majority side; the WAITed lock keeps one.
    assert_eq!(conns[5].cmd(&["GET", "foo"]), Value::Bulk(None), "the promoted replica never got it");
    assert_eq!(conns[5].cmd(&["SET", "foo", "holder-2", "NX", "PX", "600000"]), ok());
    assert_eq!(conns[5].cmd(&["SET", "{foo}safe", "holder-3", "NX", "PX", "600000"]), Value::Bulk(None));
    let check = conns[1].cmd(&["RLOCKD", "CHECK"]).bulks();
    assert_eq!(check.len(), 1, "one violation: {check:?}");
    let v = String::from_utf8_lossy(&check[0]).into_owned();
    for part in ["'foo'", "holder-1", "holder-2", "partition", &name] {
        assert!(v.contains(part), "{part:?} in {v}");
    }
    assert!(!v.contains("{foo}safe"), "{v}");

    // Healed: node 2 learns the newer epoch, follows node 5, and loses
    // holder-1's grant.
    let rejoined = text(conns[0].cmd(&["RLOCKD", "CLUSTER", "PARTITION", "HEAL"]));
    assert_eq!(rejoined, minority);
    assert_eq!(cluster.primary_of(2), Some(5));
    let mut back = RawConn::connect(ports[2]);
    wait_until("node 2 resynchronised", || text(back.cmd(&["INFO", "replication"])).contains("master_link_status:up"));
    assert_eq!(back.cmd(&["GET", "foo"]), Value::Error(format!("MOVED 12182 127.0.0.1:{}", ports[5]).into()));
    assert_eq!(back.cmd(&["READONLY"]), ok());
    assert_eq!(back.cmd(&["GET", "foo"]), Value::Bulk(Some(b"holder-2".to_vec())));
    assert!(text(back.cmd(&["CLUSTER", "INFO"])).contains("cluster_state:ok"));
    let seen = text(back.cmd(&["CLUSTER", "NODES"]));
    assert!(!seen.contains("fail"), "{seen}");
    assert_eq!(
        conns[0].cmd(&["RLOCKD", "CLUSTER", "PARTITION", "HEAL"]),
        Value::Error(b"ERR the cluster is not partitioned".to_vec())
    );
}

/// Before its `cluster-node-timeout` nothing changes on either side; a
/// partition healed then changes nothing either.
#[test]
fn a_short_partition_changes_nothing() {
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut n0 = RawConn::connect(ports[0]);
    let ids = cluster.node_ids();
    let name = text(n0.cmd(&["RLOCKD", "CLUSTER", "PARTITION", &ids[2], "5"]));
    assert!(name.starts_with(&format!("127.0.0.1:{}, 127.0.0.1:{} | ", ports[2], ports[5])), "{name}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(text(n0.cmd(&["CLUSTER", "INFO"])).contains("cluster_state:ok"));
    assert!(!text(n0.cmd(&["CLUSTER", "NODES"])).contains("fail"));
    assert_eq!(n0.cmd(&["RLOCKD", "CLUSTER", "PARTITION", "HEAL"]), Value::Bulk(Some(Vec::new())));
    assert_eq!(cluster.slot_owner(12182), Some(2));
    // The same from Rust.
    let name = cluster.partition(&[5, 2]).expect("partition");
    assert!(name.starts_with(&format!("127.0.0.1:{}, 127.0.0.1:{} | ", ports[2], ports[5])), "{name}");
    assert!(cluster.partition(&[0]).is_err(), "already partitioned");
    assert_eq!(cluster.heal().expect("heal"), "");
    assert!(cluster.heal().is_err(), "not partitioned");
    assert_eq!(
        n0.cmd(&["RLOCKD", "CLUSTER", "PARTITION", "0", "1", "2", "3", "4", "5"]),
        Value::Error(b"ERR each side of a partition needs a node".to_vec())
    );
}

/// Each node counts its timeout on its own clock: the majority's clocks
/// moved, node 5 is promoted while node 2 still grants; what node 2 grants
/// then is lost as well, and a second holder on node 5 is reported.
#[test]
fn a_grant_after_the_majoritys_failover_is_lost_too() {
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut conns: Vec<RawConn> = ports.iter().map(|&p| RawConn::connect(p)).collect();
    let name = text(conns[0].cmd(&["RLOCKD", "CLUSTER", "PARTITION", "2"]));
    for n in [0, 1, 3, 4, 5] {
        assert!(matches!(conns[n].cmd(&["RLOCKD", "CLOCK", "ADVANCE", "15001"]), Value::Int(_)));
    }
    wait_until("the majority promotes node 5", || cluster.slot_owner(12182) == Some(5));
    // Node 2's own timeout has not run out: it still grants.
    assert!(text(conns[2].cmd(&["CLUSTER", "INFO"])).contains("cluster_state:ok"));
    assert_eq!(conns[2].cmd(&["SET", "foo", "holder-1", "NX", "PX", "600000"]), ok());
    assert_eq!(conns[0].cmd(&["RLOCKD", "CHECK"]), Value::Agg(b'*', Some(vec![])));
    assert_eq!(conns[5].cmd(&["SET", "foo", "holder-2", "NX", "PX", "600000"]), ok());
    let check = conns[0].cmd(&["RLOCKD", "CHECK"]).bulks();
    assert_eq!(check.len(), 1, "one violation: {check:?}");
    let v = String::from_utf8_lossy(&check[0]).into_owned();
    for part in ["'foo'", "holder-1", "holder-2", "after the failover", &name] {
        assert!(v.contains(part), "{part:?} in {v}");
    }
    assert!(matches!(conns[2].cmd(&["RLOCKD", "CLOCK", "ADVANCE", "15001"]), Value::Int(_)));
    wait_until("node 2 refuses", || text(conns[2].cmd(&["CLUSTER", "INFO"])).contains("cluster_state:fail"));
    assert_eq!(text(conns[0].cmd(&["RLOCKD", "CLUSTER", "PARTITION", "HEAL"])), format!("127.0.0.1:{}", ports[2]));
    assert_eq!(cluster.primary_of(2), Some(5));
}

/// The other order: the lock taken on the promoted replica first, then on
/// the cut-off primary, which still grants until its own timeout.
#[test]
fn a_grant_on_the_cut_off_primary_after_one_on_the_majority_is_reported() {
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut conns: Vec<RawConn> = ports.iter().map(|&p| RawConn::connect(p)).collect();
    let name = cluster.partition(&[2]).expect("partition");
    for n in [0, 1, 3, 4, 5] {
        assert!(matches!(conns[n].cmd(&["RLOCKD", "CLOCK", "ADVANCE", "15001"]), Value::Int(_)));
    }
    wait_until("the majority promotes node 5", || cluster.slot_owner(12182) == Some(5));
    assert_eq!(conns[5].cmd(&["SET", "foo", "holder-2", "NX", "PX", "600000"]), ok());
    // Released and taken again: only the holder now counts.
    assert_eq!(conns[5].cmd(&["SET", "{foo}other", "gone", "NX", "PX", "600000"]), ok());
    assert_eq!(conns[5].cmd(&["DEL", "{foo}other"]), Value::Int(1));
    assert_eq!(conns[0].cmd(&["RLOCKD", "CHECK"]), Value::Agg(b'*', Some(vec![])));
    assert_eq!(conns[2].cmd(&["SET", "{foo}other", "mine", "NX", "PX", "600000"]), ok());
    assert_eq!(conns[0].cmd(&["RLOCKD", "CHECK"]), Value::Agg(b'*', Some(vec![])), "nobody holds it there");
    assert_eq!(conns[2].cmd(&["SET", "foo", "holder-1", "NX", "PX", "600000"]), ok());
    let check = conns[0].cmd(&["RLOCKD", "CHECK"]).bulks();
    assert_eq!(check.len(), 1, "one violation: {check:?}");
    let v = String::from_utf8_lossy(&check[0]).into_owned();
    for part in ["'foo'", "holder-1", "holder-2", "it still granted the lock", &name] {
        assert!(v.contains(part), "{part:?} in {v}");
    }
    assert_eq!(cluster.heal().expect("heal"), format!("127.0.0.1:{}", ports[2]));
}
