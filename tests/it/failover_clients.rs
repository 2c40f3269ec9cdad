//! The seed's failover story with real clients: a lock acquired on the
//! primary, replication paused, a failover (redis-py: `SENTINEL FAILOVER`;
//! ioredis + redlock and Redisson: the primary crashed with `RLOCKD REPL
//! CRASH … NOW` and failed over by the Sentinels), a second client taking
//! the same lock on the promoted replica — and `RLOCKD CHECK` reporting the
//! two holders; with replication complete, no second holder and no
//! violation. The clients find the primary through rlockd's Sentinels and
//! follow `+switch-master` as in production. Deterministic: the failover
//! answers once it is done (or the clients wait for `+switch-master`), and
//! nothing waits on a timer to decide the outcome.
//!
//! Then the cluster twin (redis-py `RedisCluster` + `Lock`, ioredis
//! `Cluster` + redlock, Redisson `useClusterServers()` + RLock): a partition of the cluster bus instead of a paused
//! stream, the majority's failover after `cluster-node-timeout` on the
//! server clocks.

use std::path::Path;
use std::time::Duration;

use crate::common::binary::run_in;

/// Hang guard for one client run; not a speed check.
const LIMIT: Duration = Duration::from_secs(300);

/// A primary with one replica, and three Sentinels watching it.
fn topology() -> (Vec<rlockd::Server>, Vec<rlockd::Sentinel>) {
    let nodes = rlockd::Server::start_with_replicas(1, rlockd::Config::default()).expect("start");
    let ip = "127.0.0.1".parse().expect("ip");
    let sentinels =
        rlockd::Sentinel::start_group(ip, &[0, 0, 0], &[("mymaster", nodes[0].addr())], 2).expect("sentinels");
    (nodes, sentinels)
}

fn ports(sentinels: &[rlockd::Sentinel]) -> String {
    sentinels.iter().map(|s| s.port().to_string()).collect::<Vec<_>>().join(",")
}

pub(crate) fn run_redis_py(mode: &str) -> Option<(String, Vec<rlockd::Server>)> {
    let python = crate::examples::redis_py("the redis-py Sentinel failover")?;
    let (nodes, sentinels) = topology();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/examples/python");
    let r = run_in(Some(&dir), python.to_str().expect("utf-8"), &["failover.py", &ports(&sentinels), mode], LIMIT);
    assert_eq!(r.code, Some(0), "failover.py {mode}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    Some((r.stdout, nodes))
}

#[test]
fn redis_py_sentinel_lossy_failover_reports_two_holders() {
    let Some((out, nodes)) = run_redis_py("lossy") else { return };
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(first, "lossy: WAIT=0 second-holder=True violations=1", "{out}");
    assert!(out.contains("lock 'order:42'"), "{out}");
    // The same report through the Rust API, on either node.
    assert_eq!(nodes[0].check_locks().len(), 1);
    assert_eq!(nodes[1].check_locks().len(), 1);
}

#[test]
fn redis_py_sentinel_failover_after_replication_is_safe() {
    let Some((out, nodes)) = run_redis_py("replicated") else { return };
    assert_eq!(out.trim_end(), "replicated: WAIT=1 second-holder=False violations=0");
    assert!(nodes[1].check_locks().is_empty());
}

fn run_ioredis(mode: &str) -> Option<(String, Vec<rlockd::Server>)> {
    let work = crate::examples::node_work("the ioredis Sentinel failover")?;
    let (nodes, sentinels) = topology();
    let r = run_in(Some(&work), "node", &["failover.js", &ports(&sentinels), mode], LIMIT);
    assert_eq!(r.code, Some(0), "failover.js {mode}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    Some((r.stdout, nodes))
}

/// ioredis (`sentinels`, `failoverDetector`) and redlock: the primary
/// crashes before the lock reached the replica; client B gets the lock on
/// the promoted replica, and client A has followed `+switch-master` there.
#[test]
fn ioredis_sentinel_crash_loses_the_lock() {
    let Some((out, nodes)) = run_ioredis("lossy") else { return };
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(first, "lossy: WAIT=0 second-holder=true violations=1 a-follows=true", "{out}");
    assert!(out.contains("lock 'order:42'"), "{out}");
    assert_eq!(nodes[1].check_locks().len(), 1);
}

#[test]
fn ioredis_sentinel_crash_after_replication_is_safe() {
    let Some((out, nodes)) = run_ioredis("replicated") else { return };
    assert_eq!(out.trim_end(), "replicated: WAIT=1 second-holder=false violations=0 a-follows=true");
    assert!(nodes[1].check_locks().is_empty());
}

/// Redisson's `useSentinelServers()` (three Sentinels: its
/// `checkSentinelsList` wants two or more from `SENTINEL SENTINELS`) with
/// RLock, `FailoverMain.java` in `mode`; its summary line (without the
/// count of `WAIT`s the lock took, which retries make vary), that count,
/// and the nodes.
fn run_redisson(mode: &str) -> Option<(String, u64, Vec<rlockd::Server>)> {
    let has = |program: &str, arg: &str| {
        std::process::Command::new(program)
            .arg(arg)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has("java", "-version") || !has("mvn", "-v") {
        crate::common::skip::skipped("a JDK (17+) and Maven are not installed, so the Redisson failover was not run");
        return None;
    }
    let (nodes, sentinels) = topology();
    // A build directory per mode: the modes may compile at the same time.
    let build = Path::new(env!("CARGO_TARGET_TMPDIR")).join("examples").join(format!("java-failover-{mode}"));
    let args = format!("{} {mode}", ports(&sentinels));
    let r = crate::examples::run_java_example(&build, Some("example.FailoverMain"), &args, LIMIT);
    assert_eq!(r.code, Some(0), "FailoverMain {mode}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    // Maven may wrap the program's output in colour resets.
    let out = r.stdout.replace("\u{1b}[0m", "");
    let line = out.lines().find(|l| l.starts_with(mode)).unwrap_or_else(|| panic!("no summary line:\n{out}"));
    let waits = line.split(' ').find_map(|w| w.strip_prefix("WAITs=")).map_or(0, |n| n.parse().expect("a count"));
    let summary = line.split(' ').filter(|w| !w.starts_with("WAITs=")).collect::<Vec<_>>().join(" ");
    Some((format!("{summary}\n{out}"), waits, nodes))
}

/// The seed's story with Redisson: with `checkLockSyncedSlaves(false)` the
/// lock the replica never received is granted, the primary crashes, and a
/// second Redisson client gets the same lock on the promoted replica.
#[test]
fn redisson_sentinel_crash_loses_the_lock() {
    let Some((out, waits, nodes)) = run_redisson("lossy") else { return };
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(first, "lossy: first=true second-holder=true violations=1 a-follows=true promoted=true", "{out}");
    assert!(waits >= 1, "Redisson follows its lock script with WAIT when there are replicas");
    assert!(out.contains("lock 'order:42'"), "{out}");
    assert_eq!(nodes[1].check_locks().len(), 1);
}

/// What `WAIT` changes: by default Redisson refuses a lock no replica
/// acknowledged ("None of slaves were synced") and takes its write back,
/// so the second client after the failover is the only holder.
#[test]
fn redisson_refuses_a_lock_no_replica_acknowledged() {
    let Some((out, waits, nodes)) = run_redisson("lossy-checked") else { return };
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(
        first, "lossy-checked: first=refused second-holder=true violations=0 a-follows=true promoted=true",
        "{out}"
    );
    assert!(waits >= 1);
    assert!(nodes[1].check_locks().is_empty());
}

#[test]
fn redisson_sentinel_crash_after_replication_is_safe() {
    let Some((out, waits, nodes)) = run_redisson("replicated") else { return };
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(first, "replicated: first=true second-holder=false violations=0 a-follows=true promoted=true", "{out}");
    assert!(waits >= 1);
    assert!(nodes[1].check_locks().is_empty());
}

/// Redisson's `useMasterSlaveServers()` with `ReadMode.SLAVE` on the same
/// primary and replica: reads go to the replica, which answers what it has
/// received — the lock after Redisson's `WAIT`, a stale value while
/// replication is paused, the new one once it has caught up.
#[test]
fn redisson_master_slave_reads_from_the_replica() {
    let Some((out, _, _nodes)) = run_redisson("replica-read") else { return };
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "replica-read: locked=true seen-on-replica=true fresh=true stale-while-paused=true caught-up=true gets-on-replica=3",
        "{out}"
    );
}

/// The cluster twin: a partition of the cluster bus (`RLOCKD CLUSTER
/// PARTITION`) cuts the lock's primary off from the majority, which promotes
/// its replica after `cluster-node-timeout` (passed with `RLOCKD CLOCK
/// ADVANCE`); `clients/examples/python/cluster_partition.py` in `mode` with
/// redis-py's `RedisCluster` and `Lock`.
fn run_redis_py_partition(mode: &str) -> Option<(String, rlockd::Cluster)> {
    let python = crate::examples::redis_py("the redis-py cluster partition")?;
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let seed = cluster.addrs()[0].port().to_string();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/examples/python");
    let r = run_in(Some(&dir), python.to_str().expect("utf-8"), &["cluster_partition.py", &seed, mode], LIMIT);
    assert_eq!(r.code, Some(0), "cluster_partition.py {mode}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    Some((r.stdout, cluster))
}

#[test]
fn redis_py_cluster_partition_grants_a_second_holder() {
    let Some((out, cluster)) = run_redis_py_partition("lossy") else { return };
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(first, "lossy: WAIT=0 second-holder=True violations=1 a-holds-after-heal=False", "{out}");
    assert!(out.contains("lock 'order:42'") && out.contains("on the minority side of the partition"), "{out}");
    // "order:42" is node 1's, replicated by node 4.
    assert_eq!(cluster.primary_of(1), Some(4), "the old primary follows its replacement");
}

#[test]
fn redis_py_cluster_partition_after_wait_keeps_one_holder() {
    let Some((out, _cluster)) = run_redis_py_partition("waited") else { return };
    assert_eq!(out.trim_end(), "waited: WAIT=1 second-holder=False violations=0 a-holds-after-heal=True");
}

/// The same with ioredis's `Cluster` and redlock
/// (`clients/examples/node/cluster_partition.js`).
fn run_ioredis_partition(mode: &str) -> Option<(String, rlockd::Cluster)> {
    let work = crate::examples::node_work("the ioredis cluster partition")?;
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let seed = cluster.addrs()[0].port().to_string();
    let r = run_in(Some(&work), "node", &["cluster_partition.js", &seed, mode], LIMIT);
    assert_eq!(r.code, Some(0), "cluster_partition.js {mode}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    Some((r.stdout, cluster))
}

#[test]
fn ioredis_cluster_partition_grants_a_second_holder() {
    let Some((out, cluster)) = run_ioredis_partition("lossy") else { return };
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(first, "lossy: WAIT=0 second-holder=true violations=1 a-holds-after-heal=false", "{out}");
    assert!(out.contains("lock 'order:42'") && out.contains("on the minority side of the partition"), "{out}");
    assert_eq!(cluster.primary_of(1), Some(4), "the old primary follows its replacement");
}

#[test]
fn ioredis_cluster_partition_after_wait_keeps_one_holder() {
    let Some((out, _cluster)) = run_ioredis_partition("waited") else { return };
    assert_eq!(out.trim_end(), "waited: WAIT=1 second-holder=false violations=0 a-holds-after-heal=true");
}

/// The same with Redisson's `useClusterServers()` and RLock
/// (`ClusterPartitionMain.java`): its summary line.
fn run_redisson_partition(mode: &str) -> Option<String> {
    let has = |program: &str, arg: &str| {
        std::process::Command::new(program)
            .arg(arg)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has("java", "-version") || !has("mvn", "-v") {
        crate::common::skip::skipped("a JDK (17+) and Maven are not installed, so the Redisson partition was not run");
        return None;
    }
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let build = Path::new(env!("CARGO_TARGET_TMPDIR")).join("examples").join(format!("java-cluster-partition-{mode}"));
    let args = format!("redis://127.0.0.1:{} {mode}", cluster.addrs()[0].port());
    let r = crate::examples::run_java_example(&build, Some("example.ClusterPartitionMain"), &args, LIMIT);
    assert_eq!(r.code, Some(0), "ClusterPartitionMain {mode}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    let out = r.stdout.replace("\u{1b}[0m", "");
    Some(out)
}

#[test]
fn redisson_cluster_partition_grants_a_second_holder() {
    let Some(out) = run_redisson_partition("lossy") else { return };
    assert!(out.lines().any(|l| l == "lossy: second-holder=true violations=1 first-holds-after-heal=false"), "{out}");
    assert!(out.contains("lock 'order:42'") && out.contains("on the minority side of the partition"), "{out}");
}

#[test]
fn redisson_cluster_partition_after_wait_keeps_one_holder() {
    let Some(out) = run_redisson_partition("waited") else { return };
    assert!(out.lines().any(|l| l == "waited: second-holder=false violations=0 first-holds-after-heal=true"), "{out}");
}
