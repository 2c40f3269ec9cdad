//! The seed's failover story with real clients: a lock acquired on the
//! primary, replication paused, `SENTINEL FAILOVER`, a second client taking
//! the same lock on the promoted replica — and `RLOCKD CHECK` reporting the
//! two holders; with replication complete, no second holder and no
//! violation. The clients find the primary through rlockd's Sentinels, as
//! in production. Deterministic: the failover answers once it is done, and
//! nothing waits on a timer to decide the outcome.

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

fn run_redis_py(mode: &str) -> Option<(String, Vec<rlockd::Server>)> {
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
