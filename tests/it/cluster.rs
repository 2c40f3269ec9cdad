//! Cluster mode (`Server::start_cluster`, `rlockd --cluster N`) compared
//! with a real 3-node redis-server cluster (started with `--cluster-enabled
//! yes` and joined by `redis-cli --cluster create`): the same steps on both,
//! replies compared with node ids, ports and ping/pong times named instead
//! of printed (they differ between any two clusters). Then what only rlockd
//! has: test control of slots and nodes.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::oracle::{redis_server_or_skip, OracleKind};
use crate::common::resp::{pretty, RawConn, Value};
use crate::common::skip::skipped;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// A 3-primary redis-server cluster in child processes, killed on drop.
struct RedisCluster {
    children: Vec<Child>,
    ports: Vec<u16>,
    _dir: PathBuf,
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self._dir);
    }
}

fn info_field(port: u16, section: &[&str], field: &str) -> Option<String> {
    let mut c = RawConn::try_connect(port).ok()?;
    let mut args = vec!["CLUSTER"];
    args.extend_from_slice(section);
    let text = match c.cmd(&args) {
        Value::Bulk(Some(b)) | Value::Verbatim(b) => String::from_utf8_lossy(&b).into_owned(),
        _ => return None,
    };
    text.lines().find_map(|l| l.strip_prefix(&format!("{field}:")).map(|v| v.trim().to_string()))
}

/// How many replica lines `CLUSTER NODES` on `port` shows.
fn replicas_known(port: u16) -> usize {
    let Ok(mut c) = RawConn::try_connect(port) else { return 0 };
    match c.cmd(&["CLUSTER", "NODES"]) {
        Value::Bulk(Some(b)) | Value::Verbatim(b) => String::from_utf8_lossy(&b)
            .lines()
            .filter(|l| l.split(' ').nth(2).is_some_and(|f| f.split(',').any(|x| x == "slave")))
            .count(),
        _ => 0,
    }
}

/// A primary, or a replica whose link is up.
fn synced(port: u16) -> bool {
    let Ok(mut c) = RawConn::try_connect(port) else { return false };
    match c.cmd(&["INFO", "replication"]) {
        Value::Bulk(Some(b)) | Value::Verbatim(b) => {
            let t = String::from_utf8_lossy(&b);
            t.contains("role:master") || t.contains("master_link_status:up")
        }
        _ => false,
    }
}

impl RedisCluster {
    /// Starts and joins the cluster, or None (after recording the skip)
    /// without redis-server / redis-cli.
    fn start(extra: &[&str]) -> Option<RedisCluster> {
        Self::start_with_replicas(extra, 0)
    }

    /// With `replicas` replicas per primary (`--cluster-replicas`), ordered
    /// as rlockd orders them: the node `3 + j` replicates node `j`.
    fn start_with_replicas(extra: &[&str], replicas: usize) -> Option<RedisCluster> {
        Self::start_kind(OracleKind::Redis70, extra, replicas)
    }

    /// Of the oracle `kind` (joined by Debian's redis-cli when the oracle
    /// comes without one).
    fn start_kind(kind: OracleKind, extra: &[&str], replicas: usize) -> Option<RedisCluster> {
        let total = 3 * (1 + replicas);
        let server = kind.path_or_skip()?;
        let beside = server.replace("redis-server", "redis-cli");
        let cli = if beside != server && std::path::Path::new(&beside).is_file() {
            beside
        } else {
            redis_server_or_skip()?.replace("redis-server", "redis-cli")
        };
        if !std::path::Path::new(&cli).is_file() {
            skipped("redis-cli is not installed, so the cluster was not compared with Redis");
            return None;
        }
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("redis-cluster-{}", free_port()));
        std::fs::create_dir_all(&dir).expect("cluster dir");
        // A port and its bus port (+10000) must both be free.
        let mut ports = Vec::new();
        while ports.len() < total {
            let p = free_port();
            if p < 55000 && std::net::TcpListener::bind(("127.0.0.1", p + 10000)).is_ok() && !ports.contains(&p) {
                ports.push(p);
            }
        }
        let mut rc = RedisCluster { children: Vec::new(), ports: ports.clone(), _dir: dir.clone() };
        for p in &ports {
            let conf = dir.join(format!("nodes-{p}.conf"));
            let child = Command::new(&server)
                .args(["--port", &p.to_string(), "--bind", "127.0.0.1", "--cluster-enabled", "yes"])
                .args(["--cluster-config-file", conf.to_str().expect("utf-8"), "--save", "", "--appendonly", "no"])
                .args(["--dir", dir.to_str().expect("utf-8"), "--loglevel", "warning"])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            rc.children.push(child);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while ports.iter().any(|p| RawConn::try_connect(*p).is_err()) {
            assert!(Instant::now() < deadline, "redis-server cluster nodes did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let out = Command::new(&cli)
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string()])
            .arg("--cluster-yes")
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli --cluster create");
        assert!(out.status.success(), "redis-cli --cluster create: {}", String::from_utf8_lossy(&out.stdout));
        // Every node must know the whole cluster before the comparison.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ports.iter().all(|p| {
            info_field(*p, &["INFO"], "cluster_state").as_deref() == Some("ok")
                && info_field(*p, &["INFO"], "cluster_known_nodes").as_deref() == Some(&total.to_string())
                && replicas_known(*p) == 3 * replicas
                && synced(*p)
        }) {
            assert!(Instant::now() < deadline, "the redis-server cluster did not converge");
            std::thread::sleep(Duration::from_millis(50));
        }
        // Replica j of the group replicates primary j (redis-cli assigns
        // them in its own order).
        let primary_of = |p: u16| -> usize {
            let mut c = RawConn::connect(p);
            let role = c.cmd(&["ROLE"]);
            let Value::Agg(_, Some(items)) = role else { panic!("ROLE") };
            let port = match &items[2] {
                Value::Int(n) => *n as u16,
                other => panic!("ROLE port: {other:?}"),
            };
            ports.iter().position(|q| *q == port).expect("the primary is a node")
        };
        let mut reps: Vec<u16> = ports[3..].to_vec();
        reps.sort_by_key(|p| primary_of(*p));
        rc.ports = ports[..3].iter().copied().chain(reps).collect();
        Some(rc)
    }
}

/// One cluster under test: a connection per node and how to name its ids
/// and ports.
struct Side {
    conns: Vec<RawConn>,
    ids: Vec<String>,
    ports: Vec<u16>,
    /// Each node's shard id, where the test read them (7.2's `MYSHARDID`).
    shards: Vec<String>,
}

impl Side {
    fn new(ports: &[u16]) -> Side {
        let mut conns: Vec<RawConn> = ports.iter().map(|p| RawConn::connect(*p)).collect();
        let ids = conns
            .iter_mut()
            .map(|c| match c.cmd(&["CLUSTER", "MYID"]) {
                Value::Bulk(Some(b)) => String::from_utf8(b).expect("id"),
                other => panic!("CLUSTER MYID: {other:?}"),
            })
            .collect();
        Side { conns, ids, ports: ports.to_vec(), shards: Vec::new() }
    }

    /// `$ID<n>` and `$PORT<n>` in `args` made this side's.
    fn args(&self, args: &[&str]) -> Vec<String> {
        args.iter()
            .map(|a| {
                let mut a = a.to_string();
                for (i, id) in self.ids.iter().enumerate() {
                    a = a.replace(&format!("$ID{i}"), id).replace(&format!("$PORT{i}"), &self.ports[i].to_string());
                }
                a
            })
            .collect()
    }

    /// A reply with ids and ports named.
    fn norm(&self, text: String) -> String {
        let mut t = text;
        for (i, id) in self.ids.iter().enumerate() {
            t = t.replace(id, &format!("<id{i}>"));
        }
        for (i, id) in self.shards.iter().enumerate() {
            t = t.replace(id, &format!("<shard{i}>"));
        }
        for (i, p) in self.ports.iter().enumerate() {
            t = t.replace(&(u32::from(*p) + 10000).to_string(), &format!("<bus{i}>"));
            t = t.replace(&p.to_string(), &format!("<port{i}>"));
        }
        t
    }

    fn run(&mut self, node: usize, args: &[&str]) -> String {
        let args = self.args(args);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let reply = self.conns[node].cmd(&refs);
        render(&refs, &reply, &|t| self.norm(t))
    }
}

/// A reply rendered for comparison; where Redis's order is its dict's
/// (NODES lines, SHARDS entries) it is sorted, and what varies with time
/// (ping/pong times, link creation times, bus message counters) is left out.
fn render(args: &[&str], v: &Value, norm: &dyn Fn(String) -> String) -> String {
    let masked = mask_offsets(args, v);
    let v = &masked;
    let sub = args.get(1).map(|s| s.to_ascii_lowercase()).unwrap_or_default();
    let cluster = args[0].eq_ignore_ascii_case("cluster");
    let text = |v: &Value| match v {
        Value::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
        Value::Verbatim(b) => {
            format!("{}\n(verbatim {})", String::from_utf8_lossy(&b[4..]), String::from_utf8_lossy(&b[..3]))
        }
        other => pretty(other),
    };
    let line = |l: &str| {
        let mut f: Vec<&str> = l.split(' ').collect();
        if f.len() > 5 {
            f[4] = "<ping>";
            f[5] = "<pong>";
        }
        norm(f.join(" "))
    };
    match (cluster, sub.as_str(), v) {
        (true, "nodes", _) => {
            let mut lines: Vec<String> = text(v).lines().map(line).collect();
            lines.sort();
            lines.join("\n")
        }
        (true, "replicas" | "slaves", Value::Agg(_, Some(items))) => {
            let mut lines: Vec<String> = items.iter().map(|i| line(&text(i))).collect();
            lines.sort();
            lines.join("\n")
        }
        (true, "info", _) => {
            norm(text(v).lines().filter(|l| !l.starts_with("cluster_stats_messages")).collect::<Vec<_>>().join("\n"))
        }
        (true, "shards", Value::Agg(_, Some(items))) => {
            let mut shards: Vec<String> = items.iter().map(|s| norm(pretty(s))).collect();
            shards.sort();
            shards.join("\n")
        }
        (true, "links", Value::Agg(_, Some(items))) => {
            // How many links are up at a given moment varies on a real cluster.
            // which peer is listed first (dict order).
            let first = norm(items.first().map(|l| pretty(&l.shape_only())).unwrap_or_default());
            format!("links: {}", (0..3).fold(first, |t, i| t.replace(&format!("<id{i}>"), "<id>")))
        }
        _ => norm(pretty(v)),
    }
}

/// Replication offsets (in `ROLE` and `CLUSTER SHARDS`) zeroed: they count
/// the heartbeat `PING`s, which come on timers in both servers.
fn mask_offsets(args: &[&str], v: &Value) -> Value {
    fn shards(v: &Value) -> Value {
        match v {
            Value::Agg(t, Some(items)) => {
                let mut out: Vec<Value> = items.iter().map(shards).collect();
                for i in 1..out.len() {
                    if out[i - 1] == Value::Bulk(Some(b"replication-offset".to_vec())) {
                        out[i] = Value::Int(0);
                    }
                }
                Value::Agg(*t, Some(out))
            }
            Value::Map(p) => Value::Map(
                p.iter()
                    .map(|(k, x)| {
                        if *k == Value::Bulk(Some(b"replication-offset".to_vec())) {
                            (k.clone(), Value::Int(0))
                        } else {
                            (k.clone(), shards(x))
                        }
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    match (args[0].to_ascii_lowercase().as_str(), v) {
        ("role", Value::Agg(t, Some(items))) if items.len() == 5 => {
            let mut items = items.clone();
            items[4] = Value::Int(0);
            Value::Agg(*t, Some(items))
        }
        ("role", Value::Agg(t, Some(items))) if items.len() == 3 => {
            let mut items = items.clone();
            items[1] = Value::Int(0);
            if let Value::Agg(rt, Some(reps)) = &items[2] {
                let reps = reps
                    .iter()
                    .map(|r| match r {
                        Value::Agg(t, Some(f)) if f.len() == 3 => {
                            Value::Agg(*t, Some(vec![f[0].clone(), f[1].clone(), Value::Bulk(Some(b"0".to_vec()))]))
                        }
                        other => other.clone(),
                    })
                    .collect();
                items[2] = Value::Agg(*rt, Some(reps));
            }
            Value::Agg(*t, Some(items))
        }
        ("cluster", _) if args.get(1).is_some_and(|a| a.eq_ignore_ascii_case("shards")) => shards(v),
        _ => v.clone(),
    }
}

trait ShapeOnly {
    fn shape_only(&self) -> Value;
}

impl ShapeOnly for Value {
    /// Integers zeroed (creation times).
    fn shape_only(&self) -> Value {
        match self {
            Value::Int(_) => Value::Int(0),
            Value::Agg(t, Some(items)) => Value::Agg(*t, Some(items.iter().map(ShapeOnly::shape_only).collect())),
            Value::Map(p) => Value::Map(p.iter().map(|(k, v)| (k.clone(), v.shape_only())).collect()),
            other => other.clone(),
        }
    }
}

/// Runs `steps` on both clusters and compares every reply.
fn compare(ours: &mut Side, redis: &mut Side, steps: &[(usize, &[&str])]) {
    let mut diffs = Vec::new();
    for (node, args) in steps {
        let a = ours.run(*node, args);
        let b = redis.run(*node, args);
        if a != b {
            diffs.push(format!("node {node} {args:?}\n  rlockd: {a}\n  redis:  {b}"));
        }
    }
    assert!(diffs.is_empty(), "{} replies differ:\n{}", diffs.len(), diffs.join("\n"));
}

/// Keys used below, by slot: "b" 3300 (node 0), "c" 7365 (node 1), "foo"
/// 12182 (node 2), "k2" 449 (node 0).
#[test]
fn cluster_replies_match_redis() {
    let Some(rc) = RedisCluster::start(&[]) else { return };
    let cluster = rlockd::Server::start_cluster(3).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut ours = Side::new(&ports);
    let mut redis = Side::new(&rc.ports);
    let steps: &[(usize, &[&str])] = &[
        (0, &["CLUSTER", "INFO"]),
        (1, &["CLUSTER", "INFO"]),
        (0, &["CLUSTER", "SLOTS"]),
        (0, &["CLUSTER", "SHARDS"]),
        (0, &["CLUSTER", "NODES"]),
        (2, &["CLUSTER", "NODES"]),
        (0, &["CLUSTER", "MYID"]),
        (0, &["CLUSTER", "LINKS"]),
        (0, &["CLUSTER", "HELP"]),
        (0, &["CLUSTER", "KEYSLOT", "foo"]),
        (0, &["CLUSTER", "KEYSLOT", "{user1}:a"]),
        (0, &["CLUSTER", "KEYSLOT", ""]),
        (0, &["CLUSTER", "KEYSLOT", "foo{}{bar}"]),
        (0, &["CLUSTER", "KEYSLOT", "foo{{bar}}zap"]),
        (0, &["CLUSTER", "REPLICAS", "$ID0"]),
        (0, &["CLUSTER", "REPLICAS", "nope"]),
        (0, &["CLUSTER", "COUNT-FAILURE-REPORTS", "$ID1"]),
        (0, &["CLUSTER", "COUNTKEYSINSLOT", "20000"]),
        (0, &["CLUSTER", "COUNTKEYSINSLOT", "x"]),
        (0, &["CLUSTER", "GETKEYSINSLOT", "3300", "-1"]),
        (0, &["CLUSTER", "SETSLOT", "99999", "STABLE"]),
        (0, &["CLUSTER", "SETSLOT", "3300", "NODE", "abc"]),
        (0, &["CLUSTER", "SETSLOT", "3300", "FOO"]),
        (0, &["CLUSTER", "SETSLOT", "3300", "MIGRATING", "abc"]),
        (0, &["CLUSTER", "SETSLOT", "12000", "MIGRATING", "$ID1"]),
        (0, &["CLUSTER", "SETSLOT", "3300", "IMPORTING", "$ID0"]),
        (0, &["CLUSTER", "ADDSLOTS", "100"]),
        (0, &["CLUSTER", "ADDSLOTS", "x"]),
        (0, &["CLUSTER", "ADDSLOTSRANGE", "5", "1"]),
        (0, &["CLUSTER", "ADDSLOTSRANGE", "5"]),
        (0, &["CLUSTER", "DELSLOTSRANGE", "1", "2", "3"]),
        (0, &["CLUSTER", "SET-CONFIG-EPOCH", "5"]),
        (0, &["CLUSTER", "SAVECONFIG"]),
        (0, &["CLUSTER", "NOPE"]),
        (0, &["READONLY"]),
        (0, &["READWRITE"]),
        (0, &["ASKING"]),
        // Redirects and refusals.
        (0, &["SET", "foo", "1"]),
        (2, &["SET", "foo", "1"]),
        (0, &["SET", "b", "1"]),
        (0, &["CLUSTER", "FLUSHSLOTS"]),
        (0, &["GET", "c"]),
        (0, &["MSET", "a", "1", "b", "2"]),
        (0, &["MSET", "{b}1", "1", "{b}2", "2"]),
        (0, &["DEL", "b", "k2"]),
        (0, &["SPUBLISH", "ch", "hi"]),
        (0, &["SSUBSCRIBE", "ch", "a"]),
        (0, &["PUBLISH", "ch", "hi"]),
        (0, &["SELECT", "1"]),
        (0, &["SELECT", "x"]),
        (0, &["SELECT", "0"]),
        (0, &["EVAL", "return redis.call('get','foo')", "0"]),
        (0, &["EVAL", "return redis.call('get','foo')", "1", "b"]),
        (0, &["EVAL", "return redis.call('get',KEYS[1])", "1", "c"]),
        (0, &["EVAL", "return 1", "2", "b", "k2"]),
        (0, &["EVAL", "redis.call('set','b',1); return redis.call('set','k2',1)", "0"]),
        (0, &["EVAL", "return redis.call('mget','b','k2')", "0"]),
        (0, &["EVAL", "return redis.call('get','b')", "1", "b"]),
        (0, &["CLUSTER", "COUNTKEYSINSLOT", "3300"]),
        (0, &["CLUSTER", "GETKEYSINSLOT", "3300", "10"]),
        (0, &["MULTI"]),
        (0, &["SET", "b", "2"]),
        (0, &["SET", "k2", "2"]),
        (0, &["EXEC"]),
        (0, &["EXEC"]),
        (0, &["MULTI"]),
        (0, &["SET", "foo", "2"]),
        (0, &["SET", "b", "3"]),
        (0, &["EXEC"]),
        (0, &["MULTI"]),
        (0, &["GET", "b"]),
        (0, &["EXEC"]),
        (0, &["INFO", "CLUSTER"]),
    ];
    compare(&mut ours, &mut redis, steps);
    // RESP3: maps in SHARDS, LINKS and SLOTS, verbatim text in NODES and INFO.
    for side in [&mut ours, &mut redis] {
        let Value::Map(hello) = side.conns[1].cmd(&["HELLO", "3"]) else { panic!("HELLO 3") };
        let mode = hello.iter().find(|(k, _)| *k == Value::Bulk(Some(b"mode".to_vec()))).map(|(_, v)| v.clone());
        assert_eq!(mode, Some(Value::Bulk(Some(b"cluster".to_vec()))));
    }
    let steps: &[(usize, &[&str])] = &[
        (1, &["CLUSTER", "SLOTS"]),
        (1, &["CLUSTER", "SHARDS"]),
        (1, &["CLUSTER", "LINKS"]),
        (1, &["CLUSTER", "NODES"]),
        (1, &["CLUSTER", "INFO"]),
        (1, &["CLUSTER", "MYID"]),
        (1, &["GET", "b"]),
    ];
    compare(&mut ours, &mut redis, steps);
}

/// What Redis 7.2 to 8.2 added to `CLUSTER` (`MYSHARDID`, `SLOT-STATS`),
/// against a redis-server 8.2.3 cluster, rlockd answering as 8.2.3: shard
/// ids are named as node ids are (each side's own), the rest byte for byte.
#[test]
fn cluster_redis82_commands_match_redis() {
    cluster_later_commands_match(OracleKind::Redis82);
}

/// The same against a valkey-server 8.1.8 cluster (Valkey has both since 8.0).
#[test]
fn cluster_valkey81_commands_match_valkey() {
    cluster_later_commands_match(OracleKind::Valkey81);
}

fn cluster_later_commands_match(kind: OracleKind) {
    let Some(rc) = RedisCluster::start_kind(kind, &[], 0) else { return };
    let mut config = rlockd::ClusterConfig::new(3);
    config.node.params.push(kind.rlockd_param());
    let cluster = rlockd::Cluster::start(config).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut ours = Side::new(&ports);
    let mut redis = Side::new(&rc.ports);
    for side in [&mut ours, &mut redis] {
        let shards: Vec<String> = (0..3)
            .map(|n| match side.conns[n].cmd(&["CLUSTER", "MYSHARDID"]) {
                Value::Bulk(Some(b)) => String::from_utf8(b).expect("shard id"),
                other => panic!("CLUSTER MYSHARDID: {other:?}"),
            })
            .collect();
        assert!(shards.iter().all(|s| s.len() == 40 && s.bytes().all(|c| c.is_ascii_hexdigit())), "{shards:?}");
        let distinct: std::collections::BTreeSet<&String> = shards.iter().collect();
        assert_eq!(distinct.len(), 3, "a shard each: {shards:?}");
        // Shard ids are named by their node, as node ids are.
        side.shards = shards;
    }
    let steps: &[(usize, &[&str])] = &[
        (0, &["CLUSTER", "MYSHARDID"]),
        (2, &["CLUSTER", "MYSHARDID"]),
        (0, &["CLUSTER", "MYSHARDID", "x"]),
        (0, &["SET", "b", "1"]),
        (0, &["SET", "{b}2", "1"]),
        (0, &["SET", "k2", "1"]),
        (2, &["SET", "foo", "1"]),
        (0, &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "3299", "3301"]),
        (0, &["CLUSTER", "SLOT-STATS", "slotsrange", "5459", "5462"]),
        (1, &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "3"]),
        (0, &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "5", "1"]),
        (0, &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "16384"]),
        (0, &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "-1", "2"]),
        (0, &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "x", "2"]),
        (0, &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "1", "2", "3"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "3"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY", "KEY-COUNT", "LIMIT", "3", "ASC"]),
        (2, &["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "DESC", "LIMIT", "2"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "0"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "16385"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "x"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "1", "LIMIT", "2"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "ASC", "DESC"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "foo"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY", "cpu-usec"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY", "nope"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY"]),
        (0, &["CLUSTER", "SLOT-STATS", "bogus", "1"]),
        (0, &["CLUSTER", "SLOT-STATS"]),
    ];
    compare(&mut ours, &mut redis, steps);
    for side in [&mut ours, &mut redis] {
        assert!(matches!(side.conns[0].cmd(&["HELLO", "3"]), Value::Map(_)));
    }
    let steps: &[(usize, &[&str])] = &[
        (0, &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "3299", "3301"]),
        (0, &["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "2"]),
        (0, &["CLUSTER", "MYSHARDID"]),
    ];
    compare(&mut ours, &mut redis, steps);
}

/// A slot moved by hand, as `redis-cli --cluster reshard` moves it: ASK
/// for keys already gone, TRYAGAIN for a split multi-key command, MOVED
/// once the slot is done.
#[test]
fn resharding_matches_redis() {
    let Some(rc) = RedisCluster::start(&[]) else { return };
    let cluster = rlockd::Server::start_cluster(3).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut ours = Side::new(&ports);
    let mut redis = Side::new(&rc.ports);
    let steps: &[(usize, &[&str])] = &[
        (0, &["SET", "b", "1"]),
        (0, &["SET", "{b}y", "2", "PX", "100000"]),
        (0, &["CLUSTER", "SETSLOT", "3300", "MIGRATING", "$ID1"]),
        (1, &["CLUSTER", "SETSLOT", "3300", "IMPORTING", "$ID0"]),
        (0, &["CLUSTER", "NODES"]),
        (1, &["CLUSTER", "NODES"]),
        (0, &["GET", "b"]),
        (0, &["GET", "{b}x"]),
        (0, &["MGET", "b", "{b}x"]),
        (1, &["GET", "b"]),
        (0, &["MIGRATE", "127.0.0.1", "$PORT1", "b", "0", "5000"]),
        (0, &["MIGRATE", "127.0.0.1", "$PORT1", "b", "0", "5000"]),
        (0, &["GET", "b"]),
        (0, &["MGET", "b", "{b}y"]),
        (1, &["ASKING"]),
        (1, &["GET", "b"]),
        (1, &["GET", "b"]),
        (1, &["ASKING"]),
        (1, &["MGET", "b", "{b}y"]),
        (1, &["ASKING"]),
        (1, &["MGET", "b", "b"]),
        (1, &["ASKING"]),
        (1, &["MULTI"]),
        (1, &["GET", "b"]),
        (1, &["EXEC"]),
        (0, &["CLUSTER", "COUNTKEYSINSLOT", "3300"]),
        (1, &["CLUSTER", "COUNTKEYSINSLOT", "3300"]),
        (0, &["CLUSTER", "SETSLOT", "3300", "NODE", "$ID1"]),
        (0, &["MIGRATE", "127.0.0.1", "$PORT1", "", "0", "5000", "KEYS", "{b}y"]),
        (0, &["MIGRATE", "127.0.0.1", "$PORT1", "", "0", "5000", "KEYS", "{b}y"]),
        (1, &["EXISTS", "{b}y"]),
        (1, &["CLUSTER", "GETKEYSINSLOT", "3300", "10"]),
        (1, &["CLUSTER", "SETSLOT", "3300", "NODE", "$ID1"]),
        (0, &["CLUSTER", "SETSLOT", "3300", "NODE", "$ID1"]),
        (2, &["CLUSTER", "SETSLOT", "3300", "NODE", "$ID1"]),
        (0, &["GET", "b"]),
        (1, &["GET", "b"]),
        (1, &["CLUSTER", "NODES"]),
        (0, &["CLUSTER", "SLOTS"]),
    ];
    compare(&mut ours, &mut redis, steps);
}

/// `PUBLISH` on one node reaches subscribers on every node (the cluster
/// bus carries it), and counts only the publishing node's receivers, as on
/// the real cluster; `SPUBLISH` stays in its shard.
#[test]
fn publish_reaches_every_node() {
    let cluster = rlockd::Server::start_cluster(3).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut sub2 = RawConn::connect(ports[2]);
    sub2.cmd(&["SUBSCRIBE", "news"]);
    let mut sub0 = RawConn::connect(ports[0]);
    sub0.cmd(&["SUBSCRIBE", "news"]);
    let mut shard = RawConn::connect(ports[2]);
    // "foo" hashes to slot 12182, node 2's.
    shard.cmd(&["SSUBSCRIBE", "foo"]);
    let mut p = RawConn::connect(ports[0]);
    assert_eq!(p.cmd(&["PUBLISH", "news", "hello"]), Value::Int(1));
    let msg = |s: &str| {
        Value::Agg(
            b'*',
            Some(vec![
                Value::Bulk(Some(b"message".to_vec())),
                Value::Bulk(Some(b"news".to_vec())),
                Value::Bulk(Some(s.as_bytes().to_vec())),
            ]),
        )
    };
    assert_eq!(sub0.read(), Some(msg("hello")));
    assert_eq!(sub2.read(), Some(msg("hello")));
    let mut p2 = RawConn::connect(ports[2]);
    assert_eq!(p2.cmd(&["SPUBLISH", "foo", "x"]), Value::Int(1));
    assert_eq!(p.cmd(&["SPUBLISH", "foo", "x"]), Value::Error(format!("MOVED 12182 127.0.0.1:{}", ports[2]).into()));
}

/// `RLOCKD CLUSTER MOVESLOT` moves a slot all at once, or key by key with
/// the slot left MIGRATING/IMPORTING (clients get ASK) until it is done.
#[test]
fn control_moves_a_slot() {
    let cluster = rlockd::Server::start_cluster(3).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let ids = cluster.node_ids();
    let mut n0 = RawConn::connect(ports[0]);
    let mut n1 = RawConn::connect(ports[1]);
    // Slot 3300: "b" and keys tagged {b}.
    for k in ["b", "{b}1", "{b}2", "{b}3"] {
        assert_eq!(n0.cmd(&["SET", k, "v"]), Value::Simple(b"OK".to_vec()));
    }
    assert_eq!(n0.cmd(&["PEXPIRE", "{b}3", "100000"]), Value::Int(1));
    assert_eq!(n0.cmd(&["RLOCKD", "CLUSTER", "MOVESLOT", "3300", "1", "KEYS", "2"]), Value::Int(2));
    assert_eq!(n0.cmd(&["CLUSTER", "COUNTKEYSINSLOT", "3300"]), Value::Int(2));
    assert_eq!(n1.cmd(&["CLUSTER", "COUNTKEYSINSLOT", "3300"]), Value::Int(2));
    let Value::Bulk(Some(nodes)) = n0.cmd(&["CLUSTER", "NODES"]) else { panic!("NODES") };
    assert!(String::from_utf8_lossy(&nodes).contains(&format!("[3300->-{}]", ids[1])));
    // Keys already moved: ASK; a multi-key command split by the move: TRYAGAIN.
    let moved: Vec<Vec<u8>> = n1.cmd(&["CLUSTER", "GETKEYSINSLOT", "3300", "10"]).bulks();
    let moved = String::from_utf8(moved[0].clone()).unwrap();
    let ask = format!("ASK 3300 127.0.0.1:{}", ports[1]);
    assert_eq!(n0.cmd(&["GET", &moved]), Value::Error(ask.into()));
    let Value::Agg(_, Some(left)) = n0.cmd(&["CLUSTER", "GETKEYSINSLOT", "3300", "10"]) else { panic!() };
    let Value::Bulk(Some(left)) = &left[0] else { panic!() };
    let left = String::from_utf8(left.clone()).unwrap();
    assert_eq!(
        n0.cmd(&["MGET", &moved, &left]),
        Value::Error(b"TRYAGAIN Multiple keys request during rehashing of slot".to_vec())
    );
    n1.cmd(&["ASKING"]);
    assert_eq!(n1.cmd(&["GET", &moved]), Value::Bulk(Some(b"v".to_vec())));
    // The rest, and the slot is node 1's: MOVED from node 0, TTLs kept.
    assert_eq!(n0.cmd(&["RLOCKD", "CLUSTER", "MOVESLOT", "3300", &ids[1]]), Value::Int(2));
    assert_eq!(n0.cmd(&["GET", "b"]), Value::Error(format!("MOVED 3300 127.0.0.1:{}", ports[1]).into()));
    assert_eq!(n1.cmd(&["DBSIZE"]), Value::Int(4));
    assert!(n1.cmd(&["PTTL", "{b}3"]).as_int().is_some_and(|t| t > 0 && t <= 100000));
    assert_eq!(cluster.slot_owner(3300), Some(1));
    let Value::Bulk(Some(info)) = n1.cmd(&["CLUSTER", "INFO"]) else { panic!("INFO") };
    assert!(String::from_utf8_lossy(&info).contains("cluster_my_epoch:4"), "the importing node's epoch is bumped");
}

/// A node taken down: its port refuses, the others answer CLUSTERDOWN for
/// keys (not for keyless commands) and show it failed; brought back, it
/// has its keys and the cluster is ok again.
#[test]
fn control_takes_a_node_down_and_back() {
    let cluster = rlockd::Server::start_cluster(3).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut n2 = RawConn::connect(ports[2]);
    assert_eq!(n2.cmd(&["SET", "foo", "1"]), Value::Simple(b"OK".to_vec()));
    let mut n0 = RawConn::connect(ports[0]);
    assert_eq!(n0.cmd(&["RLOCKD", "CLUSTER", "DOWN", "2"]), Value::Simple(b"OK".to_vec()));
    assert!(RawConn::try_connect(ports[2]).is_err(), "a node that is down refuses connections");
    assert_eq!(n2.read(), None, "its clients are disconnected");
    assert_eq!(n0.cmd(&["GET", "b"]), Value::Error(b"CLUSTERDOWN The cluster is down".to_vec()));
    assert_eq!(n0.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    let Value::Bulk(Some(info)) = n0.cmd(&["CLUSTER", "INFO"]) else { panic!("INFO") };
    let info = String::from_utf8_lossy(&info).into_owned();
    assert!(info.contains("cluster_state:fail") && info.contains("cluster_slots_fail:5461"), "{info}");
    let Value::Bulk(Some(nodes)) = n0.cmd(&["CLUSTER", "NODES"]) else { panic!("NODES") };
    assert!(String::from_utf8_lossy(&nodes).contains("master,fail"));
    assert_eq!(n0.cmd(&["RLOCKD", "CLUSTER", "DOWN", "2"]), Value::Error(b"ERR node 2 is already down".to_vec()));
    assert_eq!(n0.cmd(&["RLOCKD", "CLUSTER", "UP", "2"]), Value::Simple(b"OK".to_vec()));
    let mut n2 = RawConn::connect(ports[2]);
    assert_eq!(n2.cmd(&["GET", "foo"]), Value::Bulk(Some(b"1".to_vec())));
    assert_eq!(n0.cmd(&["GET", "b"]), Value::Bulk(None));
    // A node taking itself down goes once it has answered.
    assert_eq!(n2.cmd(&["RLOCKD", "CLUSTER", "DOWN", "2"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(n2.read(), None);
    cluster.bring_up(2).expect("bring up");
    assert_eq!(RawConn::connect(ports[2]).cmd(&["GET", "foo"]), Value::Bulk(Some(b"1".to_vec())));
}

/// `rlockd --cluster 3` with announced addresses (a NAT'd or containerised
/// cluster): redirects and `CLUSTER SLOTS` name them, node `i` announcing
/// the base port plus `i`.
#[test]
fn binary_announces_given_addresses() {
    let srv = crate::common::binary::Binary::start(&[
        "--cluster",
        "3",
        "--port",
        "0",
        "--cluster-announce-ip",
        "10.1.2.3",
        "--cluster-announce-port",
        "30000",
    ]);
    let mut c = RawConn::connect(srv.port);
    assert_eq!(c.cmd(&["SET", "foo", "1"]), Value::Error(b"MOVED 12182 10.1.2.3:30002".to_vec()));
    let Value::Agg(_, Some(ranges)) = c.cmd(&["CLUSTER", "SLOTS"]) else { panic!("SLOTS") };
    let Value::Agg(_, Some(first)) = &ranges[1] else { panic!("range") };
    let Value::Agg(_, Some(node)) = &first[2] else { panic!("node") };
    assert_eq!(node[0], Value::Bulk(Some(b"10.1.2.3".to_vec())));
    assert_eq!(node[1], Value::Int(30001));
    assert_eq!(c.cmd(&["CONFIG", "GET", "cluster-enabled"]).bulks()[1], b"yes".to_vec());
}

/// `redis-cli -c` follows MOVED from one node to the next.
#[test]
fn redis_cli_follows_redirects() {
    let Some(server) = crate::common::oracle::redis_server_path() else {
        skipped("redis-cli is not installed, so redis-cli -c was not run against the cluster");
        return;
    };
    let cli = server.replace("redis-server", "redis-cli");
    let cluster = rlockd::Server::start_cluster(3).expect("cluster");
    let port = cluster.addrs()[0].port().to_string();
    let run = |args: &[&str]| {
        let out = Command::new(&cli).args(["-c", "-p", &port]).args(args).output().expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(run(&["SET", "foo", "bar"]), "OK");
    assert_eq!(run(&["GET", "foo"]), "bar");
    assert_eq!(cluster.with_node(2, |s| s.locks().len()), Some(0));
    let mut n2 = RawConn::connect(cluster.addrs()[2].port());
    assert_eq!(n2.cmd(&["GET", "foo"]), Value::Bulk(Some(b"bar".to_vec())), "the key is on node 2");
}

/// A 3-primary, 3-replica cluster (`--cluster-replicas 1`) against Redis's:
/// the replica lines, entries and roles, what a replica answers with and
/// without `READONLY`, and `CLUSTER FAILOVER`'s refusals.
#[test]
fn cluster_with_replicas_matches_redis() {
    let Some(rc) = RedisCluster::start_with_replicas(&[], 1) else { return };
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut ours = Side::new(&ports);
    let mut redis = Side::new(&rc.ports);
    settle_replicas(&mut ours);
    settle_replicas(&mut redis);
    let steps: &[(usize, &[&str])] = &[
        (0, &["CLUSTER", "INFO"]),
        (3, &["CLUSTER", "INFO"]),
        (0, &["CLUSTER", "NODES"]),
        (4, &["CLUSTER", "NODES"]),
        (0, &["CLUSTER", "SLOTS"]),
        (5, &["CLUSTER", "SLOTS"]),
        (3, &["CLUSTER", "SHARDS"]),
        (0, &["CLUSTER", "REPLICAS", "$ID0"]),
        (1, &["CLUSTER", "SLAVES", "$ID2"]),
        (0, &["CLUSTER", "REPLICAS", "$ID3"]),
        (0, &["CLUSTER", "COUNT-FAILURE-REPORTS", "$ID3"]),
        (3, &["ROLE"]),
        (0, &["ROLE"]),
        (0, &["SET", "b", "1"]),
        (0, &["WAIT", "1", "5000"]),
        (3, &["GET", "b"]),
        (3, &["SET", "b", "2"]),
        (3, &["GET", "foo"]),
        (3, &["READONLY"]),
        (3, &["GET", "b"]),
        (3, &["MGET", "b", "{b}x"]),
        (3, &["SET", "b", "2"]),
        (3, &["GET", "foo"]),
        (3, &["EXISTS", "b"]),
        (3, &["READWRITE"]),
        (3, &["GET", "b"]),
        (3, &["CLUSTER", "COUNTKEYSINSLOT", "3300"]),
        (3, &["CLUSTER", "GETKEYSINSLOT", "3300", "10"]),
        (0, &["CLUSTER", "FAILOVER"]),
        (3, &["CLUSTER", "FAILOVER", "NOW"]),
        (3, &["CLUSTER", "FAILOVER", "FORCE", "x"]),
        (3, &["CLUSTER", "REPLICATE", "$ID0"]),
        (3, &["CLUSTER", "SETSLOT", "3300", "STABLE"]),
        (3, &["INFO", "CLUSTER"]),
    ];
    compare(&mut ours, &mut redis, steps);
}

/// A write on each primary that every replica acknowledged, and every
/// node listing every replica in `CLUSTER SLOTS` (Redis lists a replica
/// only once its offset, which gossip carries, is not 0).
fn settle_replicas(side: &mut Side) {
    for (node, key) in [(0, "{b}settle"), (1, "{c}settle"), (2, "{foo}settle")] {
        assert_eq!(side.conns[node].cmd(&["SET", key, "1"]), Value::Simple(b"OK".to_vec()));
        assert_eq!(side.conns[node].cmd(&["WAIT", "1", "5000"]), Value::Int(1));
    }
    let ports = side.ports.clone();
    wait_until("every replica in CLUSTER SLOTS", || {
        ports.iter().all(|p| {
            let Ok(mut c) = RawConn::try_connect(*p) else { return false };
            match c.cmd(&["CLUSTER", "SLOTS"]) {
                Value::Agg(_, Some(ranges)) => {
                    ranges.iter().all(|r| matches!(r, Value::Agg(_, Some(e)) if e.len() == 4))
                }
                _ => false,
            }
        })
    });
}

/// Every string in `v`, depth first.
fn all_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Bulk(Some(b)) | Value::Simple(b) => out.push(String::from_utf8_lossy(b).into_owned()),
        Value::Agg(_, Some(items)) => items.iter().for_each(|i| all_strings(i, out)),
        Value::Map(pairs) => pairs.iter().for_each(|(k, x)| {
            all_strings(k, out);
            all_strings(x, out);
        }),
        _ => {}
    }
}

/// Waits (bounded) until `f` holds.
fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn text(v: Value) -> String {
    match v {
        Value::Bulk(Some(b)) | Value::Verbatim(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("text expected: {other:?}"),
    }
}

/// `CLUSTER FAILOVER` on a replica of both clusters: once the cluster
/// settles, the same roles, flags, slots and epochs.
#[test]
fn cluster_failover_matches_redis() {
    let Some(rc) = RedisCluster::start_with_replicas(&[], 1) else { return };
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut ours = Side::new(&ports);
    let mut redis = Side::new(&rc.ports);
    for side in [&mut ours, &mut redis] {
        settle_replicas(side);
        assert_eq!(side.conns[0].cmd(&["SET", "b", "1"]), Value::Simple(b"OK".to_vec()));
        assert_eq!(side.conns[3].cmd(&["CLUSTER", "FAILOVER"]), Value::Simple(b"OK".to_vec()));
        // Settled: every node sees node 3 as the primary of slot 3300 and
        // node 0 as its replica.
        let (id0, id3) = (side.ids[0].clone(), side.ids[3].clone());
        let ports = side.ports.clone();
        wait_until("the failover to settle", || {
            ports.iter().all(|p| {
                let Ok(mut c) = RawConn::try_connect(*p) else { return false };
                let nodes = text(c.cmd(&["CLUSTER", "NODES"]));
                nodes.lines().any(|l| l.starts_with(&id0) && l.contains(&format!("slave {id3}")))
                    && nodes.lines().any(|l| l.starts_with(&id3) && l.contains("master") && l.ends_with(" 0-5460"))
            }) && synced(ports[0])
        });
    }
    let steps: &[(usize, &[&str])] = &[
        (1, &["CLUSTER", "NODES"]),
        (0, &["CLUSTER", "NODES"]),
        (3, &["CLUSTER", "INFO"]),
        (0, &["CLUSTER", "INFO"]),
        (1, &["CLUSTER", "SLOTS"]),
        (0, &["ROLE"]),
        (3, &["ROLE"]),
        (0, &["GET", "b"]),
        (3, &["GET", "b"]),
        (3, &["CLUSTER", "FAILOVER"]),
        (0, &["CLUSTER", "REPLICAS", "$ID3"]),
    ];
    compare(&mut ours, &mut redis, steps);
}

/// A lock held while its primary fails over with the stream paused: the
/// promoted replica never got it, a second client acquires it, and `RLOCKD
/// CHECK` on any node reports the two holders; `RLOCKD LOCKS` on any node
/// shows every primary's locks.
#[test]
fn lossy_failover_is_a_violation_seen_from_every_node() {
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut n0 = RawConn::connect(ports[0]);
    let mut n2 = RawConn::connect(ports[2]);
    // Slot 3300 ("{b}…") is node 0's; "foo" is node 2's.
    assert_eq!(n2.cmd(&["SET", "foo", "a", "NX", "PX", "60000"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(n0.cmd(&["RLOCKD", "REPL", "PAUSE"]), Value::Int(1));
    assert_eq!(n0.cmd(&["SET", "{b}lock", "holder-1", "NX", "PX", "60000"]), Value::Simple(b"OK".to_vec()));
    let mut n1 = RawConn::connect(ports[1]);
    let locks = n1.cmd(&["RLOCKD", "LOCKS", "TEXT"]);
    let locks = text(locks);
    assert!(locks.contains("{b}lock") && locks.contains("foo"), "every primary's locks from node 1: {locks}");
    let mut events = Vec::new();
    all_strings(&n1.cmd(&["RLOCKD", "EVENTS"]), &mut events);
    assert!(events.iter().any(|e| e == "{b}lock") && events.iter().any(|e| e == "foo"), "{events:?}");
    assert_eq!(n1.cmd(&["RLOCKD", "CLUSTER", "FAILOVER", "0"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(cluster.slot_owner(3300), Some(3));
    assert_eq!(cluster.primary_of(0), Some(3));
    assert_eq!(n0.cmd(&["GET", "{b}lock"]), Value::Error(format!("MOVED 3300 127.0.0.1:{}", ports[3]).into()));
    let mut n3 = RawConn::connect(ports[3]);
    assert_eq!(n3.cmd(&["GET", "{b}lock"]), Value::Bulk(None), "the promoted replica never got the lock");
    assert_eq!(n1.cmd(&["RLOCKD", "CHECK"]), Value::Agg(b'*', Some(vec![])));
    assert_eq!(n3.cmd(&["SET", "{b}lock", "holder-2", "NX", "PX", "60000"]), Value::Simple(b"OK".to_vec()));
    let check = n1.cmd(&["RLOCKD", "CHECK"]).bulks();
    assert_eq!(check.len(), 1, "one violation");
    let v = String::from_utf8_lossy(&check[0]).into_owned();
    assert!(v.contains("{b}lock") && v.contains("holder-1") && v.contains("holder-2"), "{v}");
    assert_eq!(n2.cmd(&["RLOCKD", "CHECK"]).bulks(), check, "the same from another node");
    let Value::Bulk(Some(info)) = n1.cmd(&["CLUSTER", "INFO"]) else { panic!("INFO") };
    assert!(String::from_utf8_lossy(&info).contains("cluster_current_epoch:7"), "the promotion's epoch");
}

/// A primary taken down with a replica: `CLUSTERDOWN` until the replica
/// takes its place after `cluster-node-timeout`; back, the old primary is
/// the new one's replica and has its writes.
#[test]
fn primary_down_is_replaced_by_its_replica() {
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut n1 = RawConn::connect(ports[1]);
    let mut n5 = RawConn::connect(ports[5]);
    assert_eq!(n5.cmd(&["CONFIG", "SET", "cluster-node-timeout", "200"]), Value::Simple(b"OK".to_vec()));
    let mut n2 = RawConn::connect(ports[2]);
    assert_eq!(n2.cmd(&["SET", "foo", "1"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(n2.cmd(&["WAIT", "1", "5000"]), Value::Int(1));
    assert_eq!(n1.cmd(&["RLOCKD", "CLUSTER", "DOWN", "2"]), Value::Simple(b"OK".to_vec()));
    // Until the replica is promoted the cluster is down (this answer may
    // already be the promoted one's if the timeout passed meanwhile).
    let first = n1.cmd(&["GET", "foo"]);
    let moved = Value::Error(format!("MOVED 12182 127.0.0.1:{}", ports[5]).into());
    assert!(first == Value::Error(b"CLUSTERDOWN The cluster is down".to_vec()) || first == moved, "{first:?}");
    wait_until("the replica's promotion", || cluster.slot_owner(12182) == Some(5));
    assert_eq!(n1.cmd(&["GET", "foo"]), moved);
    assert_eq!(n5.cmd(&["GET", "foo"]), Value::Bulk(Some(b"1".to_vec())));
    assert_eq!(n5.cmd(&["SET", "foo", "2"]), Value::Simple(b"OK".to_vec()));
    let nodes = text(n1.cmd(&["CLUSTER", "NODES"]));
    let ids = cluster.node_ids();
    assert!(nodes.lines().any(|l| l.starts_with(&ids[2]) && l.contains(" master,fail - ")), "{nodes}");
    assert!(text(n1.cmd(&["CLUSTER", "INFO"])).contains("cluster_state:ok"));
    assert_eq!(n1.cmd(&["RLOCKD", "CLUSTER", "UP", "2"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(cluster.primary_of(2), Some(5));
    let mut back = RawConn::connect(ports[2]);
    wait_until("the old primary to resynchronise", || {
        text(back.cmd(&["INFO", "replication"])).contains("master_link_status:up")
    });
    assert_eq!(back.cmd(&["GET", "foo"]), Value::Error(format!("MOVED 12182 127.0.0.1:{}", ports[5]).into()));
    assert_eq!(back.cmd(&["READONLY"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(back.cmd(&["GET", "foo"]), Value::Bulk(Some(b"2".to_vec())));
    // Test control promotes at once: node 2 takes its slots back.
    assert_eq!(n1.cmd(&["RLOCKD", "CLUSTER", "FAILOVER", "2"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(cluster.slot_owner(12182), Some(2));
}

/// The README's replicas-and-failover block, as written there: each
/// `redis-cli -p 700N …` line run on node N of an rlockd cluster of 3
/// primaries and 3 replicas (ports 7000+ may be taken, so each node is on a
/// free port), the replies as the comments say.
#[test]
fn readme_failover_block() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    let start = "rlockd --cluster 3 --cluster-replicas 1 --port 7000 &";
    let block: Vec<&str> = readme
        .split("```sh\n")
        .find(|b| b.starts_with(start))
        .expect("the README's failover block")
        .split("```")
        .next()
        .expect("block")
        .lines()
        .skip(1)
        .collect();
    assert_eq!(block.len(), 5, "{block:?}");
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut replies = Vec::new();
    for line in &block {
        let command = line.split('#').next().expect("command").trim();
        let words: Vec<String> = command.split_whitespace().map(|w| w.trim_matches('\'').to_string()).collect();
        assert_eq!((words[0].as_str(), words[1].as_str()), ("redis-cli", "-p"), "{line}");
        let node: usize = words[2].strip_prefix("700").expect("port 700N").parse().expect("node");
        let args: Vec<&str> = words[3..].iter().map(String::as_str).collect();
        replies.push(RawConn::connect(ports[node]).cmd(&args));
    }
    let ok = Value::Simple(b"OK".to_vec());
    assert_eq!(replies[..4], [Value::Int(1), ok.clone(), ok.clone(), ok]);
    let check = replies[4].bulks();
    assert_eq!(check.len(), 1, "{:?}", replies[4]);
    assert!(String::from_utf8_lossy(&check[0]).contains("client-1"));
    assert_eq!(cluster.slot_owner(0), Some(3));
}

/// The README's Rust lines: `Cluster::failover` promotes a replica and
/// returns once it serves its primary's slots.
#[test]
fn rust_failover() {
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).unwrap();
    let mut n0 = RawConn::connect(cluster.addrs()[0].port());
    assert_eq!(n0.cmd(&["SET", "b", "1"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(n0.cmd(&["WAIT", "1", "5000"]), Value::Int(1));
    cluster.failover(3).unwrap(); // node 3 (node 0's replica) takes node 0's slots
    assert_eq!(cluster.primary_of(0), Some(3));
    assert_eq!(cluster.slot_owner(3300), Some(3));
    let mut n3 = RawConn::connect(cluster.addrs()[3].port());
    assert_eq!(n3.cmd(&["GET", "b"]), Value::Bulk(Some(b"1".to_vec())));
    // A primary's index: its replica (node 0 now) takes over.
    cluster.failover(3).unwrap();
    assert_eq!(cluster.slot_owner(3300), Some(0));
    cluster.take_down(4).unwrap();
    assert!(cluster.failover(1).is_err(), "node 1's only replica is down");
}

/// `CLUSTER FAILOVER` without an option waits until the replica has what
/// its primary wrote (the stream lagging here), so a lock taken just before
/// survives; `FORCE` with the stream paused promotes at once and loses it.
#[test]
fn manual_failover_waits_for_the_replica_force_does_not() {
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let (mut n0, mut n3) = (RawConn::connect(ports[0]), RawConn::connect(ports[3]));
    assert_eq!(n0.cmd(&["RLOCKD", "REPL", "LAG", "300"]), Value::Int(1));
    assert_eq!(n0.cmd(&["SET", "{b}lock", "a", "NX", "PX", "60000"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(n3.cmd(&["CLUSTER", "FAILOVER"]), Value::Simple(b"OK".to_vec()));
    wait_until("node 3 to take slot 3300", || cluster.slot_owner(3300) == Some(3));
    assert_eq!(n3.cmd(&["GET", "{b}lock"]), Value::Bulk(Some(b"a".to_vec())));
    assert_eq!(n0.cmd(&["GET", "{b}lock"]), Value::Error(format!("MOVED 3300 127.0.0.1:{}", ports[3]).into()));
    assert_eq!(n3.cmd(&["RLOCKD", "REPL", "PAUSE"]), Value::Int(1));
    assert_eq!(n3.cmd(&["SET", "{b}lock2", "x", "NX", "PX", "60000"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(n0.cmd(&["CLUSTER", "FAILOVER", "FORCE"]), Value::Simple(b"OK".to_vec()));
    wait_until("node 0 to take slot 3300 back", || cluster.slot_owner(3300) == Some(0));
    assert_eq!(n0.cmd(&["GET", "{b}lock2"]), Value::Bulk(None), "FORCE promoted without the paused write");
    assert_eq!(n0.cmd(&["GET", "{b}lock"]), Value::Bulk(Some(b"a".to_vec())));
}

/// Every node's view of the cluster, and what it answers for slot 12182
/// ("foo"), node by node.
fn each_node_view(n: usize) -> Vec<(usize, &'static [&'static str])> {
    let mut steps: Vec<(usize, &'static [&'static str])> = Vec::new();
    for node in 0..n {
        steps.extend_from_slice(&[
            (node, &["CLUSTER", "INFO"][..]),
            (node, &["CLUSTER", "SLOTS"][..]),
            (node, &["CLUSTER", "SHARDS"][..]),
            (node, &["CLUSTER", "NODES"][..]),
            (node, &["GET", "foo"][..]),
            (node, &["SET", "foo", "1"][..]),
            (node, &["GET", "b"][..]),
        ]);
    }
    steps
}

/// `CLUSTER DELSLOTS` on a slot's owner (redis-py's
/// `test_not_require_full_coverage_cluster_down_error`): only that node
/// forgets the slot (`CLUSTERDOWN Hash slot not served`, `cluster_state:fail`
/// there); the others keep redirecting to it, before gossip and after. A
/// node that then claims the slot (`DELSLOTS` + `ADDSLOTS` on node 1, with
/// an older epoch than the old owner's) wins it on every node, the old
/// owner included, once gossip has carried its claim.
#[test]
fn delslots_is_one_nodes_view_as_in_redis() {
    let Some(rc) = RedisCluster::start(&[]) else { return };
    let cluster = rlockd::Server::start_cluster(3).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut ours = Side::new(&ports);
    let mut redis = Side::new(&rc.ports);
    compare(&mut ours, &mut redis, &[(2, &["CLUSTER", "DELSLOTS", "12182"]), (2, &["CLUSTER", "DELSLOTS", "12182"])]);
    // At once, then after gossip (a few ping periods).
    compare(&mut ours, &mut redis, &each_node_view(3));
    std::thread::sleep(Duration::from_millis(1500));
    compare(&mut ours, &mut redis, &each_node_view(3));
    compare(
        &mut ours,
        &mut redis,
        &[
            (1, &["CLUSTER", "ADDSLOTS", "12182"]),
            (0, &["CLUSTER", "ADDSLOTS", "12182"]),
            (1, &["CLUSTER", "DELSLOTS", "12182"]),
            (1, &["CLUSTER", "ADDSLOTS", "12182"]),
            (1, &["GET", "foo"]),
        ],
    );
    for side in [&mut ours, &mut redis] {
        let (id1, ports) = (side.ids[1].clone(), side.ports.clone());
        wait_until("node 1's claim of slot 12182 to reach every node", || {
            ports.iter().all(|p| {
                let Ok(mut c) = RawConn::try_connect(*p) else { return false };
                let nodes = text(c.cmd(&["CLUSTER", "NODES"]));
                nodes.lines().any(|l| l.starts_with(&id1) && l.ends_with(" 5461-10922 12182"))
                    && text(c.cmd(&["CLUSTER", "INFO"])).contains("cluster_state:ok")
            })
        });
    }
    compare(&mut ours, &mut redis, &each_node_view(3));
}

/// With gossip held (`RLOCKD CLUSTER GOSSIP HOLD`), a slot moved from node 0
/// to node 1 is known to those two only: node 2 still redirects to node 0
/// (which redirects to node 1) until a round (`STEP`) carries node 1's
/// claim; `RUN` lets gossip go on by itself.
#[test]
fn held_gossip_keeps_the_old_owner_elsewhere() {
    let cluster = rlockd::Server::start_cluster(3).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let ids = cluster.node_ids();
    let mut n: Vec<RawConn> = ports.iter().map(|p| RawConn::connect(*p)).collect();
    let ok = Value::Simple(b"OK".to_vec());
    let moved = |to: usize| Value::Error(format!("MOVED 3300 127.0.0.1:{}", ports[to]).into());
    assert_eq!(n[0].cmd(&["SET", "b", "1"]), ok);
    assert_eq!(n[2].cmd(&["RLOCKD", "CLUSTER", "GOSSIP", "HOLD"]), ok);
    assert_eq!(n[2].cmd(&["RLOCKD", "CLUSTER", "GOSSIP", "STEP"]), Value::Int(0), "the views agree");
    assert_eq!(n[0].cmd(&["RLOCKD", "CLUSTER", "MOVESLOT", "3300", "1"]), Value::Int(1));
    assert_eq!(cluster.slot_owner(3300), Some(1));
    assert_eq!(n[0].cmd(&["GET", "b"]), moved(1));
    assert_eq!(n[1].cmd(&["GET", "b"]), Value::Bulk(Some(b"1".to_vec())));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(n[2].cmd(&["GET", "b"]), moved(0), "node 2 has not heard of the move");
    let nodes = text(n[2].cmd(&["CLUSTER", "NODES"]));
    assert!(nodes.lines().any(|l| l.starts_with(&ids[0]) && l.ends_with(" 0-5460")), "{nodes}");
    assert!(text(n[2].cmd(&["CLUSTER", "INFO"])).contains("cluster_current_epoch:3"));
    assert!(text(n[1].cmd(&["CLUSTER", "INFO"])).contains("cluster_my_epoch:4"));
    // One round: node 1's claim, with its new epoch, reaches node 2.
    assert_eq!(n[2].cmd(&["RLOCKD", "CLUSTER", "GOSSIP", "STEP"]), Value::Int(2));
    assert_eq!(n[2].cmd(&["GET", "b"]), moved(1));
    let nodes = text(n[2].cmd(&["CLUSTER", "NODES"]));
    assert!(nodes.lines().any(|l| l.starts_with(&ids[0]) && l.ends_with(" 0-3299 3301-5460")), "{nodes}");
    assert!(text(n[2].cmd(&["CLUSTER", "INFO"])).contains("cluster_current_epoch:4"));
    assert_eq!(n[2].cmd(&["RLOCKD", "CLUSTER", "GOSSIP", "STEP"]), Value::Int(0));
    // Held, a node's own DELSLOTS + ADDSLOTS stays its own; RUN spreads it.
    assert_eq!(n[0].cmd(&["CLUSTER", "DELSLOTS", "12182"]), ok);
    assert_eq!(n[0].cmd(&["CLUSTER", "ADDSLOTS", "12182"]), ok);
    assert_eq!(n[0].cmd(&["GET", "foo"]), Value::Bulk(None));
    assert_eq!(n[1].cmd(&["GET", "foo"]), Value::Error(format!("MOVED 12182 127.0.0.1:{}", ports[2]).into()));
    assert_eq!(n[1].cmd(&["RLOCKD", "CLUSTER", "GOSSIP", "RUN"]), ok);
    // Node 0's epoch (1) is older than node 2's (3), which still claims it.
    for (i, c) in n.iter_mut().enumerate() {
        let want =
            if i == 2 { Value::Bulk(None) } else { Value::Error(format!("MOVED 12182 127.0.0.1:{}", ports[2]).into()) };
        assert_eq!(c.cmd(&["GET", "foo"]), want, "node {i}");
    }
    assert_eq!(n[0].cmd(&["RLOCKD", "CLUSTER", "GOSSIP", "BOGUS"]), Value::Error(b"ERR syntax error".to_vec()));
}

/// A failover with gossip held: the promoted replica serves the slots at
/// once; the other nodes redirect to the old primary until a round carries
/// the new claim, then the old primary follows the new one everywhere.
#[test]
fn held_gossip_delays_a_promotion_elsewhere() {
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let ids = cluster.node_ids();
    let (mut n0, mut n1) = (RawConn::connect(ports[0]), RawConn::connect(ports[1]));
    let ok = Value::Simple(b"OK".to_vec());
    assert_eq!(n0.cmd(&["SET", "b", "1"]), ok);
    assert_eq!(n0.cmd(&["WAIT", "1", "5000"]), Value::Int(1));
    assert_eq!(n1.cmd(&["RLOCKD", "CLUSTER", "GOSSIP", "HOLD"]), ok);
    assert_eq!(n1.cmd(&["RLOCKD", "CLUSTER", "FAILOVER", "3"]), ok);
    assert_eq!(cluster.slot_owner(3300), Some(3));
    let mut n3 = RawConn::connect(ports[3]);
    assert_eq!(n3.cmd(&["GET", "b"]), Value::Bulk(Some(b"1".to_vec())));
    assert_eq!(n1.cmd(&["GET", "b"]), Value::Error(format!("MOVED 3300 127.0.0.1:{}", ports[0]).into()));
    assert_eq!(n1.cmd(&["RLOCKD", "CLUSTER", "GOSSIP", "RUN"]), ok);
    assert_eq!(n1.cmd(&["GET", "b"]), Value::Error(format!("MOVED 3300 127.0.0.1:{}", ports[3]).into()));
    assert_eq!(cluster.primary_of(0), Some(3));
    let nodes = text(n1.cmd(&["CLUSTER", "NODES"]));
    assert!(nodes.lines().any(|l| l.starts_with(&ids[0]) && l.contains(&format!(" slave {} ", ids[3]))), "{nodes}");
    assert!(text(n1.cmd(&["CLUSTER", "INFO"])).contains("cluster_current_epoch:7"));
}
