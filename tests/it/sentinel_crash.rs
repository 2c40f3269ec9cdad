//! A primary that crashes, noticed by the Sentinels: `+sdown` after
//! `down-after-milliseconds`, `+odown`, the automatic failover with Redis's
//! events, and the old primary converted into a replica when it is back.
//! Compared with a real redis-sentinel watching a real redis-server primary
//! and replica whose primary is killed (`kill -9`) and restarted; then the
//! lost lock of the seed's story through a crash instead of a manual
//! failover. The tests wait on events, never on a timer, for the outcome.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::resp::{RawConn, Value};

/// Hang guard for one event; not a timing target (redis-sentinel converts
/// an old primary some seconds after it is back).
const EVENT_LIMIT: Duration = Duration::from_secs(60);

/// `n` consecutive free ports below the kernel's ephemeral range: a crashed
/// node's port is free until it comes back, and a server another test
/// starts on port 0 must not take it meanwhile.
fn quiet_ports(n: u16) -> u16 {
    use std::hash::{BuildHasher, RandomState};
    loop {
        let base = 20_000 + (RandomState::new().hash_one(Instant::now()) % 12_000) as u16;
        let held: Vec<_> = (base..base + n).filter_map(|p| TcpListener::bind(("127.0.0.1", p)).ok()).collect();
        if held.len() == usize::from(n) {
            return base;
        }
    }
}

/// A primary and its replica on quiet ports.
fn primary_and_replica() -> Vec<rlockd::Server> {
    let mut config = rlockd::Config::default();
    config.bind.set_port(quiet_ports(2));
    rlockd::Server::start_with_replicas(1, config).expect("start")
}

/// A child process killed (SIGKILL, as a crash) on drop.
struct Proc(Child);

impl Proc {
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(program: &str, args: &[&str]) -> Proc {
    Proc(
        Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {program}: {e}")),
    )
}

/// Connects once `port` answers (bounded).
fn connect(port: u16) -> RawConn {
    let deadline = Instant::now() + EVENT_LIMIT;
    loop {
        if let Ok(mut c) = RawConn::try_connect(port) {
            if c.cmd(&["PING"]) == Value::Simple(b"PONG".to_vec()) {
                return c;
            }
        }
        assert!(Instant::now() < deadline, "nothing answers on port {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads the events `sub` (subscribed to `*`) receives until one for which
/// `last` holds; each as "channel text".
fn events_until(sub: &mut RawConn, last: impl Fn(&str) -> bool) -> Vec<String> {
    sub.set_read_timeout(EVENT_LIMIT);
    let mut out = Vec::new();
    loop {
        let Some(event @ Value::Agg(_, Some(_))) = sub.read() else { panic!("no event; so far: {out:#?}") };
        let text: Vec<String> = event.bulks().iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
        if text[0] != "pmessage" {
            continue;
        }
        let event = format!("{} {}", text[2], text[3]);
        let done = last(&event);
        out.push(event);
        if done {
            return out;
        }
    }
}

/// A bulk or verbatim reply as text.
fn text(v: &Value) -> String {
    match v {
        Value::Bulk(Some(b)) | Value::Verbatim(b) | Value::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("not text: {other:?}"),
    }
}

fn subscribe_all(port: u16) -> RawConn {
    let mut sub = connect(port);
    let confirm = sub.cmd(&["PSUBSCRIBE", "*"]);
    assert!(matches!(confirm, Value::Agg(_, Some(_))), "{confirm:?}");
    sub
}

/// Ports by role — `<old>` primary, `<new>` the replica the Sentinel
/// selected (Redis breaks ties between equal replicas by run id), `<other>`
/// the other replicas, `<sentinel>` — and the leader's id as `<id>`.
fn normalised(events: &[String], primary: u16, replicas: &[u16], sentinel: u16) -> Vec<String> {
    let selected = events
        .iter()
        .find_map(|e| e.strip_prefix("+selected-slave slave 127.0.0.1:"))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|p| p.parse::<u16>().ok());
    let mut names = vec![(primary, "<old>".to_string()), (sentinel, "<sentinel>".to_string())];
    for r in replicas {
        names.push((*r, if Some(*r) == selected { "<new>" } else { "<other>" }.to_string()));
    }
    events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            if let Some(rest) = e.strip_prefix("+vote-for-leader ") {
                e = format!("+vote-for-leader <id> {}", rest.split(' ').nth(1).unwrap_or_default());
            }
            for (p, name) in &names {
                e = e.replace(&p.to_string(), name);
            }
            e
        })
        .collect()
}

/// The `SENTINEL SET` lines both Sentinels answer (before the crash).
fn set_commands() -> Vec<Vec<&'static str>> {
    vec![
        vec!["SENTINEL", "SET", "mymaster", "down-after-milliseconds", "abc"],
        vec!["SENTINEL", "SET", "mymaster", "down-after-milliseconds", "0"],
        vec!["SENTINEL", "SET", "mymaster", "quorum", "-1"],
        vec!["SENTINEL", "SET", "mymaster", "nope", "1"],
        vec!["SENTINEL", "SET", "mymaster", "down-after-milliseconds"],
        vec!["SENTINEL", "SET", "nope", "down-after-milliseconds", "5"],
        vec!["SENTINEL", "SET", "mymaster", "failover-timeout", "10000", "parallel-syncs"],
        vec!["SENTINEL", "SET", "mymaster", "failover-timeout", "10000", "parallel-syncs", "1"],
        vec!["SENTINEL", "SET", "mymaster", "down-after-milliseconds", "2000"],
    ]
}

fn is_old_primary_sdown(e: &str) -> bool {
    e.starts_with("+sdown slave")
}

fn is_converted(e: &str) -> bool {
    e.starts_with("+convert-to-slave")
}

/// What a real redis-sentinel publishes when the primary is killed and
/// restarted (`crash`) or on `SENTINEL FAILOVER`, and its `SENTINEL SET`
/// replies; `None` without redis-sentinel.
fn redis_run(crash: bool, replicas: u16) -> Option<(Vec<String>, Vec<Value>)> {
    let server = crate::common::oracle::redis_server_or_skip()?;
    let sentinel = std::path::Path::new(&server).with_file_name("redis-sentinel");
    if !sentinel.is_file() {
        crate::common::skip::skipped("redis-sentinel is not installed, so the crash events were not compared");
        return None;
    }
    let base = quiet_ports(2 + replicas);
    let (pp, sp) = (base, base + 1);
    let rps: Vec<u16> = (0..replicas).map(|i| base + 2 + i).collect();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sentinel-crash-{sp}"));
    std::fs::create_dir_all(&dir).expect("dir");
    let node = |port: u16, extra: &[&str]| {
        let port = port.to_string();
        let mut args = vec!["--port", &port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
        args.extend_from_slice(&["--repl-diskless-sync-delay", "0", "--repl-diskless-load", "swapdb"]);
        args.extend_from_slice(extra);
        spawn(&server, &args)
    };
    let mut primary = node(pp, &[]);
    let _replicas: Vec<Proc> = rps.iter().map(|rp| node(*rp, &["--replicaof", "127.0.0.1", &pp.to_string()])).collect();
    let mut p = connect(pp);
    let deadline = Instant::now() + EVENT_LIMIT;
    while text(&p.cmd(&["INFO", "replication"])).matches("state=online").count() < usize::from(replicas) {
        assert!(Instant::now() < deadline, "the replica never came online");
        std::thread::sleep(Duration::from_millis(20));
    }
    let conf = dir.join("sentinel.conf");
    std::fs::write(
        &conf,
        format!("port {sp}\nbind 127.0.0.1\ndir {}\nsentinel monitor mymaster 127.0.0.1 {pp} 1\n", dir.display()),
    )
    .expect("sentinel.conf");
    let sentinel_proc = spawn(sentinel.to_str().expect("utf-8"), &[conf.to_str().expect("utf-8")]);
    let mut s = connect(sp);
    // Until it is connected to the replica it found (flags exactly "slave")
    // and has its INFO (a known replication offset).
    let settled = |v: &Value| match v {
        Value::Agg(_, Some(v)) if v.len() == usize::from(replicas) => v.iter().all(|r| {
            let fields = r.bulks();
            let get = |k: &str| fields.iter().position(|f| f == k.as_bytes()).map(|i| fields[i + 1].clone());
            get("flags").as_deref() == Some(b"slave") && get("slave-repl-offset").is_some_and(|o| o != b"0")
        }),
        _ => false,
    };
    while !settled(&s.cmd(&["SENTINEL", "REPLICAS", "mymaster"])) {
        assert!(Instant::now() < deadline, "redis-sentinel never saw the replica");
        std::thread::sleep(Duration::from_millis(20));
    }
    let replies = set_commands().iter().map(|c| s.cmd(c)).collect();
    let mut sub = subscribe_all(sp);
    let mut events = Vec::new();
    let _back = if crash {
        primary.kill();
        events = events_until(&mut sub, is_old_primary_sdown);
        Some(node(pp, &[]))
    } else {
        assert_eq!(s.cmd(&["SENTINEL", "FAILOVER", "mymaster"]), Value::Simple(b"OK".to_vec()));
        None
    };
    events.extend(events_until(&mut sub, is_converted));
    drop(sentinel_proc);
    let _ = std::fs::remove_dir_all(&dir);
    Some((normalised(&events, pp, &rps, sp), replies))
}

#[test]
fn crash_events_match_redis_sentinel() {
    // On a loaded machine redis-sentinel may see the promoted replica miss
    // its pings for down-after-milliseconds right after the switch and
    // flag it down too (then abort a second failover): that run of the
    // oracle says nothing about the crash, and is made again (bounded).
    let mut runs = 0;
    let (theirs, their_replies) = loop {
        let Some((events, replies)) = redis_run(true, 1) else { return };
        runs += 1;
        if runs == 3 || !events.iter().any(|e| e.starts_with("+sdown master mymaster 127.0.0.1 <new>")) {
            break (events, replies);
        }
    };
    let nodes = primary_and_replica();
    let ip = "127.0.0.1".parse().expect("ip");
    let group = rlockd::Sentinel::start_group(ip, &[0], &[("mymaster", nodes[0].addr())], 1).expect("sentinel");
    let mut s = connect(group[0].port());
    let our_replies: Vec<Value> = set_commands().iter().map(|c| s.cmd(c)).collect();
    assert_eq!(our_replies, their_replies);
    let mut sub = subscribe_all(group[0].port());
    // Down for 2 s (SENTINEL SET above) before the Sentinel acts.
    nodes[0].crash(false).expect("crash");
    assert!(RawConn::try_connect(nodes[0].port()).is_err(), "a crashed node's port refuses connections");
    let mut ours = events_until(&mut sub, is_old_primary_sdown);
    nodes[0].revive().expect("revive");
    ours.extend(events_until(&mut sub, is_converted));
    let ours = normalised(&ours, nodes[0].port(), &[nodes[1].port()], group[0].port());
    assert_eq!(ours, theirs);
    // The old primary follows the new one.
    let mut old = connect(nodes[0].port());
    let Value::Agg(_, Some(role)) = old.cmd(&["ROLE"]) else { panic!("ROLE") };
    assert_eq!(role[0], Value::Bulk(Some(b"slave".to_vec())));
    assert_eq!(role[2], Value::Int(i64::from(nodes[1].port())));
}

/// The seed's story through a crash: a lock granted by the primary while
/// replication is paused, the primary crashed (`RLOCKD REPL CRASH … NOW`,
/// sent to the replica), the Sentinels fail over, a second client takes
/// the same lock on the promoted replica, and `RLOCKD CHECK` reports two
/// holders. The old primary, revived, becomes a replica and drops its copy.
#[test]
fn crash_failover_loses_an_unreplicated_lock() {
    let nodes = primary_and_replica();
    let ip = "127.0.0.1".parse().expect("ip");
    let group = rlockd::Sentinel::start_group(ip, &[0, 0, 0], &[("mymaster", nodes[0].addr())], 2).expect("sentinels");
    let mut sub = subscribe_all(group[2].port());
    let (pp, rp) = (nodes[0].port().to_string(), nodes[1].port().to_string());
    let mut a = connect(nodes[0].port());
    assert_eq!(a.cmd(&["RLOCKD", "REPL", "PAUSE"]), Value::Int(1));
    assert_eq!(a.cmd(&["SET", "order:42", "token-a", "NX", "PX", "30000"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(a.cmd(&["WAIT", "1", "50"]), Value::Int(0));
    let mut r = connect(nodes[1].port());
    assert_eq!(r.cmd(&["RLOCKD", "REPL", "CRASH", &pp, "NOW"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(a.read(), None, "the crashed primary's clients are cut");
    // The default down-after-milliseconds (30 s) is not waited for: NOW.
    let events = events_until(&mut sub, |e| e.starts_with("+switch-master"));
    assert_eq!(events[0], format!("+sdown master mymaster 127.0.0.1 {pp}"));
    assert_eq!(events[1], format!("+odown master mymaster 127.0.0.1 {pp} #quorum 3/2"));
    assert_eq!(events.last().expect("event"), &format!("+switch-master mymaster 127.0.0.1 {pp} 127.0.0.1 {rp}"));
    let mut s = connect(group[0].port());
    let addr = s.cmd(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"]);
    assert_eq!(addr.bulks(), vec![b"127.0.0.1".to_vec(), rp.as_bytes().to_vec()]);
    // Client B on the promoted replica: the lock is free there.
    let mut b = connect(nodes[1].port());
    assert_eq!(b.cmd(&["SET", "order:42", "token-b", "NX", "PX", "30000"]), Value::Simple(b"OK".to_vec()));
    let Value::Agg(_, Some(violations)) = b.cmd(&["RLOCKD", "CHECK"]) else { panic!("RLOCKD CHECK") };
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(text(&violations[0]).contains("order:42"), "{violations:?}");
    // Back, the old primary is converted and holds what the new one holds.
    assert_eq!(b.cmd(&["RLOCKD", "REPL", "REVIVE", &pp]), Value::Simple(b"OK".to_vec()));
    let events = events_until(&mut sub, is_converted);
    assert_eq!(
        events.iter().map(|e| e.split(' ').next().unwrap_or_default()).collect::<Vec<_>>(),
        ["+slave", "+sdown", "-role-change", "-sdown", "+convert-to-slave"]
    );
    assert_eq!(b.cmd(&["WAIT", "1", "10000"]), Value::Int(1));
    let mut old = connect(nodes[0].port());
    assert_eq!(old.cmd(&["GET", "order:42"]), Value::Bulk(Some(b"token-b".to_vec())));
    assert_eq!(
        old.cmd(&["SET", "x", "1"]),
        Value::Error(b"READONLY You can't write against a read only replica.".to_vec())
    );
}

/// Test control's errors: a node crashed twice, revived while up, one that
/// is not of this process.
#[test]
fn crash_control_errors() {
    let nodes = primary_and_replica();
    let mut r = connect(nodes[1].port());
    let pp = nodes[0].port().to_string();
    assert_eq!(
        r.cmd(&["RLOCKD", "REPL", "REVIVE", &pp]),
        Value::Error(format!("ERR the node on port {pp} is not down").into_bytes())
    );
    assert_eq!(r.cmd(&["RLOCKD", "REPL", "CRASH", &pp]), Value::Simple(b"OK".to_vec()));
    assert_eq!(
        r.cmd(&["RLOCKD", "REPL", "CRASH", &pp]),
        Value::Error(format!("ERR the node on port {pp} is already down").into_bytes())
    );
    assert!(nodes[0].crash(false).is_err());
    let Value::Bulk(Some(info)) = r.cmd(&["INFO", "replication"]) else { panic!("INFO") };
    assert!(String::from_utf8_lossy(&info).contains("master_link_status:down"));
    assert!(
        matches!(r.cmd(&["RLOCKD", "REPL", "CRASH", "1"]), Value::Error(e) if e.starts_with(b"ERR no rlockd node"))
    );
    assert_eq!(r.cmd(&["RLOCKD", "REPL", "CRASH", "x"]), Value::Error(b"ERR invalid port".to_vec()));
    nodes[0].revive().expect("revive");
    // No Sentinel: it comes back as the primary it was, its replica in sync.
    let mut p = connect(nodes[0].port());
    assert_eq!(p.cmd(&["SET", "k", "v"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(p.cmd(&["WAIT", "1", "10000"]), Value::Int(1));
    assert_eq!(r.cmd(&["GET", "k"]), Value::Bulk(Some(b"v".to_vec())));
}

/// `SENTINEL FAILOVER` of a live primary: the same events as redis-sentinel,
/// the old primary still a primary for a moment, then converted.
#[test]
fn manual_failover_events_match_redis_sentinel() {
    let Some((theirs, _)) = redis_run(false, 1) else { return };
    let nodes = primary_and_replica();
    let ip = "127.0.0.1".parse().expect("ip");
    let group = rlockd::Sentinel::start_group(ip, &[0], &[("mymaster", nodes[0].addr())], 1).expect("sentinel");
    let mut s = connect(group[0].port());
    let mut sub = subscribe_all(group[0].port());
    assert_eq!(s.cmd(&["SENTINEL", "FAILOVER", "mymaster"]), Value::Simple(b"OK".to_vec()));
    let ours = events_until(&mut sub, is_converted);
    let ours = normalised(&ours, nodes[0].port(), &[nodes[1].port()], group[0].port());
    assert_eq!(ours, theirs);
}

/// Two replicas: the one not promoted is reconfigured to follow the new
/// primary (`+slave-reconf-sent`, `-inprog`, `-done`), as redis-sentinel does.
#[test]
fn crash_with_two_replicas_matches_redis_sentinel() {
    let Some((theirs, _)) = redis_run(true, 2) else { return };
    if theirs.iter().any(|e| e.starts_with("+sdown master mymaster 127.0.0.1 <new>")) {
        // The oracle's own timing hiccup (see crash_events_match_redis_sentinel).
        crate::common::skip::skipped("redis-sentinel flagged its new primary down on this loaded machine");
        return;
    }
    let mut config = rlockd::Config::default();
    config.bind.set_port(quiet_ports(3));
    let nodes = rlockd::Server::start_with_replicas(2, config).expect("start");
    let ip = "127.0.0.1".parse().expect("ip");
    let group = rlockd::Sentinel::start_group(ip, &[0], &[("mymaster", nodes[0].addr())], 1).expect("sentinel");
    let mut s = connect(group[0].port());
    assert_eq!(
        s.cmd(&["SENTINEL", "SET", "mymaster", "down-after-milliseconds", "2000"]),
        Value::Simple(b"OK".to_vec())
    );
    let mut sub = subscribe_all(group[0].port());
    nodes[0].crash(false).expect("crash");
    let mut ours = events_until(&mut sub, is_old_primary_sdown);
    nodes[0].revive().expect("revive");
    ours.extend(events_until(&mut sub, is_converted));
    let ours = normalised(&ours, nodes[0].port(), &[nodes[1].port(), nodes[2].port()], group[0].port());
    assert_eq!(ours, theirs);
}

/// A crashed replica is flagged `+sdown` as a replica (clients such as
/// Redisson stop reading from it) and `-sdown` when it is back; the primary
/// is left alone.
#[test]
fn a_crashed_replica_is_flagged_down_and_back() {
    let nodes = primary_and_replica();
    let ip = "127.0.0.1".parse().expect("ip");
    let group = rlockd::Sentinel::start_group(ip, &[0], &[("mymaster", nodes[0].addr())], 1).expect("sentinel");
    let mut sub = subscribe_all(group[0].port());
    nodes[1].crash(true).expect("crash");
    let text =
        format!("slave 127.0.0.1:{r} 127.0.0.1 {r} @ mymaster 127.0.0.1 {p}", r = nodes[1].port(), p = nodes[0].port());
    assert_eq!(events_until(&mut sub, |e| e.starts_with("+sdown")), [format!("+sdown {text}")]);
    // Flags as redis-sentinel writes them for a killed replica (Redisson's
    // periodic scan of SENTINEL REPLICAS skips such a replica).
    let mut s = connect(group[0].port());
    let flags = |s: &mut RawConn| {
        let Value::Agg(_, Some(replicas)) = s.cmd(&["SENTINEL", "REPLICAS", "mymaster"]) else { panic!("REPLICAS") };
        let fields = replicas[0].bulks();
        let at = fields.iter().position(|f| f == b"flags").expect("flags");
        String::from_utf8_lossy(&fields[at + 1]).into_owned()
    };
    assert_eq!(flags(&mut s), "s_down,slave,disconnected");
    nodes[1].revive().expect("revive");
    assert_eq!(events_until(&mut sub, |e| e.starts_with("-sdown")), [format!("-sdown {text}")]);
    assert_eq!(flags(&mut s), "slave");
    let addr = s.cmd(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"]);
    assert_eq!(addr.bulks()[1], nodes[0].port().to_string().into_bytes());
}

/// `SENTINEL FAILOVER` of a primary that crashed before its
/// `down-after-milliseconds` passed: the replica is promoted (as
/// redis-sentinel promotes a replica whose link went down recently), not
/// refused with NOGOODSLAVE; the old primary is converted when it is back.
#[test]
fn manual_failover_of_a_crashed_primary_promotes_its_replica() {
    let nodes = primary_and_replica();
    let ip = "127.0.0.1".parse().expect("ip");
    let group = rlockd::Sentinel::start_group(ip, &[0], &[("mymaster", nodes[0].addr())], 1).expect("sentinel");
    let mut sub = subscribe_all(group[0].port());
    let (pp, rp) = (nodes[0].port().to_string(), nodes[1].port().to_string());
    let mut a = connect(nodes[0].port());
    assert_eq!(a.cmd(&["SET", "k", "v"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(a.cmd(&["WAIT", "1", "10000"]), Value::Int(1));
    let mut r = connect(nodes[1].port());
    // Not NOW: the default down-after-milliseconds (30 s) keeps it unflagged.
    assert_eq!(r.cmd(&["RLOCKD", "REPL", "CRASH", &pp]), Value::Simple(b"OK".to_vec()));
    let mut s = connect(group[0].port());
    assert_eq!(s.cmd(&["SENTINEL", "FAILOVER", "mymaster"]), Value::Simple(b"OK".to_vec()));
    let events = events_until(&mut sub, |e| e.starts_with("+switch-master"));
    assert!(events.iter().all(|e| !e.starts_with("+odown")), "{events:?}");
    assert_eq!(events.last().expect("event"), &format!("+switch-master mymaster 127.0.0.1 {pp} 127.0.0.1 {rp}"));
    let addr = s.cmd(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"]);
    assert_eq!(addr.bulks(), vec![b"127.0.0.1".to_vec(), rp.as_bytes().to_vec()]);
    assert_eq!(r.cmd(&["SET", "k2", "v2"]), Value::Simple(b"OK".to_vec()), "the replica is a primary");
    assert_eq!(r.cmd(&["GET", "k"]), Value::Bulk(Some(b"v".to_vec())));
    // A second failover has no replica to promote: the old primary is down.
    assert_eq!(
        s.cmd(&["SENTINEL", "FAILOVER", "mymaster"]),
        Value::Error(b"NOGOODSLAVE No suitable replica to promote".to_vec())
    );
    assert_eq!(r.cmd(&["RLOCKD", "REPL", "REVIVE", &pp]), Value::Simple(b"OK".to_vec()));
    events_until(&mut sub, is_converted);
    assert_eq!(r.cmd(&["WAIT", "1", "10000"]), Value::Int(1));
    let mut old = connect(nodes[0].port());
    assert_eq!(old.cmd(&["GET", "k2"]), Value::Bulk(Some(b"v2".to_vec())));
}
