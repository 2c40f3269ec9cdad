//! Record and replay (`RLOCKD RECORD`, `rlockd --record`, `rlockd replay`)
//! with real clients: a contended run of redis-py `Lock`s on threads is
//! recorded, then replayed 20 times, each time with every reply identical
//! and the same report; an altered recording is reported at its first
//! differing command (exit 1); `--until N` stops before command N and the
//! servers answer there as they did then.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::binary::{run_in, Binary, Run, BIN};
use crate::common::resp::{RawConn, Value};

/// Hang guard for a client run or a replay; not a speed check.
const LIMIT: Duration = Duration::from_secs(300);

/// Threads taking three locks in turn; each, holding lock `n`, reads its
/// counter and writes it back plus one (lost updates without the lock).
const LOCK_THREADS: &str = r#"
import sys, threading, redis
from redis.lock import Lock

port, threads, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
pool = redis.ConnectionPool(host="127.0.0.1", port=port)

def work(t):
    r = redis.Redis(connection_pool=pool)
    for i in range(rounds):
        n = (t + i) % 3
        lock = Lock(r, f"lock:{n}", timeout=10, sleep=0.002, blocking_timeout=60)
        assert lock.acquire()
        try:
            v = int(r.get(f"counter:{n}") or 0)
            r.set(f"counter:{n}", v + 1)
        finally:
            lock.release()

ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
r = redis.Redis(connection_pool=pool)
print("total", sum(int(r.get(f"counter:{n}") or 0) for n in range(3)))
"#;

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("record_replay");
    std::fs::create_dir_all(&d).expect("scratch directory");
    d.join(name)
}

/// Runs the lock threads against `port`; `None` without Python.
fn run_lock_threads(port: u16, threads: u32, rounds: u32) -> Option<String> {
    let python = crate::examples::redis_py("the recorded redis-py lock run")?;
    let script = scratch("lock_threads.py");
    std::fs::write(&script, LOCK_THREADS).expect("write the script");
    let args = [script.to_str().expect("utf-8"), &port.to_string(), &threads.to_string(), &rounds.to_string()];
    let r = run_in(None, python.to_str().expect("utf-8"), &args, LIMIT);
    assert_eq!(r.code, Some(0), "lock threads:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    assert_eq!(r.stdout.trim(), format!("total {}", threads * rounds), "lost updates under the lock");
    Some(r.stdout)
}

fn replay(file: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["replay", file.to_str().expect("utf-8")];
    args.extend(extra);
    run_in(None, BIN, &args, LIMIT)
}

/// Records the redis-py run with `RLOCKD RECORD START` / `SAVE`.
fn record_lock_run(name: &str) -> Option<PathBuf> {
    let srv = Binary::start(&["--port", "0"]);
    let mut c = RawConn::connect(srv.port);
    assert_eq!(c.cmd(&["RLOCKD", "RECORD", "START", "MAXBYTES", "50000000"]), Value::Simple(b"OK".to_vec()));
    run_lock_threads(srv.port, 8, 15)?;
    assert_eq!(c.cmd(&["RLOCKD", "RECORD", "STOP"]), Value::Simple(b"OK".to_vec()));
    let file = scratch(name);
    let Value::Int(lines) = c.cmd(&["RLOCKD", "RECORD", "SAVE", file.to_str().expect("utf-8")]) else {
        panic!("RECORD SAVE")
    };
    assert!(lines > 100, "{lines} lines recorded");
    Some(file)
}

/// The commands recorded (lines of `t: cmd`).
fn commands(text: &str) -> usize {
    text.lines().filter(|l| l.starts_with("{\"t\":\"cmd\"")).count()
}

#[test]
fn a_recorded_redis_py_lock_run_replays_identically_20_times() {
    let Some(file) = record_lock_run("redis_py_locks.jsonl") else { return };
    let text = std::fs::read_to_string(&file).expect("the recording");
    let n = commands(&text);
    // Every thread's connection is a client of its own, with its library.
    assert!(text.contains("\"args\":[\"SET\",\"lock:0\""), "no lock acquisition recorded");
    assert!(text.contains("\"args\":[\"EVALSHA\""), "no lock release recorded");
    let mut first = None;
    for round in 0..20 {
        let r = replay(&file, &[]);
        assert_eq!(r.code, Some(0), "replay {round}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        assert!(r.stdout.starts_with(&format!("{n} commands, every reply identical")), "replay {round}: {}", r.stdout);
        match &first {
            None => first = Some(r.stdout),
            Some(f) => assert_eq!(&r.stdout, f, "replay {round} reported differently"),
        }
    }
}

#[test]
fn an_altered_recording_reports_the_first_differing_command() {
    let Some(file) = record_lock_run("redis_py_altered.jsonl") else { return };
    let text = std::fs::read_to_string(&file).expect("the recording");
    // The first GET of a counter that answered a number: say it answered 41.
    let (at, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("\"args\":[\"GET\",\"counter:") && l.contains("\"reply\":\"$1\\r\\n"))
        .expect("a GET of a counter with a one-digit value");
    let i: u64 = line.split("\"i\":").nth(1).and_then(|r| r.split(',').next()).and_then(|n| n.parse().ok()).expect("i");
    let altered_line = {
        let start = line.find("\"reply\":\"$1\\r\\n").expect("reply") + "\"reply\":\"".len();
        let end = start + line[start..].find('"').expect("end of reply");
        format!("{}$2\\r\\n41\\r\\n{}", &line[..start], &line[end..])
    };
    let mut lines: Vec<&str> = text.lines().collect();
    lines[at] = &altered_line;
    let altered = scratch("redis_py_altered_edit.jsonl");
    std::fs::write(&altered, lines.join("\n") + "\n").expect("write");
    let r = replay(&altered, &[]);
    assert_eq!(r.code, Some(1), "stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    let mut out = r.stdout.lines();
    let head = out.next().unwrap_or_default();
    assert!(head.starts_with(&format!("the reply differs at command {i} ")), "{}", r.stdout);
    assert!(head.contains("GET counter:"), "{head}");
    assert_eq!(out.next(), Some("  recorded: $2\\r\\n41\\r\\n"), "{}", r.stdout);
    let replayed = out.next().unwrap_or_default();
    assert!(replayed.starts_with("  replayed: $1\\r\\n"), "{}", r.stdout);
}

/// `--until N`: the servers stay up, in the state just before command N.
#[test]
fn until_stops_before_the_command_and_leaves_the_servers_answering() {
    let Some(file) = record_lock_run("redis_py_until.jsonl") else { return };
    let text = std::fs::read_to_string(&file).expect("the recording");
    // The 20th write of counter:1 (SET counter:1 20): stop just before it.
    let line = text
        .lines()
        .find(|l| l.contains("\"args\":[\"SET\",\"counter:1\",\"20\"]"))
        .expect("the 20th SET of counter:1");
    let i: u64 = line.split("\"i\":").nth(1).and_then(|r| r.split(',').next()).and_then(|n| n.parse().ok()).expect("i");
    let mut child = Command::new(BIN)
        .args(["replay", file.to_str().expect("utf-8"), "--until", &i.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the replay");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let out = child.stdout.take().expect("stdout");
    let child = Kill(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let head = rx.recv_timeout(LIMIT).expect("the replay's stop line");
    assert_eq!(head, format!("stopped before command {i}; the servers are listening:"));
    let node = rx.recv_timeout(LIMIT).expect("the node's line");
    let port: u16 = node.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("{node}"));
    let mut c = RawConn::connect(port);
    // The 19 writes before it are there, and the lock is held by the writer.
    assert_eq!(c.cmd(&["GET", "counter:1"]), Value::Bulk(Some(b"19".to_vec())));
    let Value::Agg(_, Some(locks)) = c.cmd(&["RLOCKD", "LOCKS", "lock:1"]) else { panic!("RLOCKD LOCKS") };
    assert_eq!(locks.len(), 1, "lock:1 is held at that point");
    drop(child);
}

/// `rlockd --record <path>` records from the first command and writes the
/// file when the server stops (SIGTERM); the file replays.
#[test]
fn the_record_option_saves_on_exit() {
    let file = scratch("option.jsonl");
    let _ = std::fs::remove_file(&file);
    let mut srv = Binary::start(&["--port", "0", "--record", file.to_str().expect("utf-8")]);
    let mut c = RawConn::connect(srv.port);
    assert_eq!(c.cmd(&["SET", "k", "v", "PX", "5000"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "1000"]).as_int().map(|_| ()), Some(()));
    let Value::Int(ttl) = c.cmd(&["PTTL", "k"]) else { panic!("PTTL") };
    assert!((3900..=4000).contains(&ttl), "{ttl}");
    let Value::Agg(_, Some(status)) = c.cmd(&["RLOCKD", "RECORD", "STATUS"]) else { panic!("STATUS") };
    assert_eq!(status[0], Value::Bulk(Some(b"recording".to_vec())));
    assert_eq!(status[1], Value::Int(1));
    assert_eq!(status[3], Value::Int(4), "three commands and the clock's mark (RECORD itself is not recorded)");
    // SAFETY: a signal to the child we started.
    unsafe { libc::kill(srv.pid() as i32, libc::SIGTERM) };
    assert!(srv.wait_exit(Duration::from_secs(20)).success());
    let text = std::fs::read_to_string(&file).expect("the recording written on exit");
    let mut lines = text.lines();
    assert!(lines.next().unwrap_or_default().starts_with("{\"t\":\"rlockd-record\",\"format\":1,"), "{text}");
    assert_eq!(commands(&text), 3, "{text}");
    assert!(text.contains("{\"t\":\"mark\","), "the clock move is a mark: {text}");
    let r = replay(&file, &[]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    // A clock command reads the running clock again after the move: its
    // reply is not compared (the replay's clock is frozen).
    assert_eq!(r.stdout, "3 commands, every reply identical (2 compared; not compared: RLOCKD CLOCK ADVANCE)\n");
}

/// `n` consecutive free ports (a replay binds the recorded ones again).
fn free_ports(n: u16) -> u16 {
    for _ in 0..100 {
        let first = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        if first > 65000 {
            continue;
        }
        if (0..n).all(|i| std::net::TcpListener::bind(("127.0.0.1", first + i)).is_ok()) {
            return first;
        }
    }
    panic!("no {n} consecutive free ports");
}

fn int(v: Value) -> i64 {
    v.as_int().unwrap_or_else(|| panic!("not an integer: {v:?}"))
}

/// A primary and its replica: redis-py lock threads under an injected
/// latency, an injected error, then replication paused, a lock written,
/// the replica promoted (`RLOCKD REPL FAILOVER`) and the lock granted again
/// there — `RLOCKD CHECK` reports the two holders. Replayed 20 times.
#[test]
fn a_recorded_failover_with_faults_replays_identically_20_times() {
    let port = free_ports(2);
    let replica = port + 1;
    let file = scratch("failover.jsonl");
    {
        let _srv = Binary::start(&["--port", &port.to_string(), "--replicas", "1"]);
        let mut p = RawConn::connect(port);
        assert_eq!(p.cmd(&["RLOCKD", "RECORD", "START"]), Value::Simple(b"OK".to_vec()));
        p.cmd(&["RLOCKD", "FAULT", "LATENCY", "3", "COMMAND", "evalsha", "TIMES", "20"]);
        if run_lock_threads(port, 6, 10).is_none() {
            return;
        }
        let mut faulty = RawConn::connect(port);
        assert_eq!(faulty.cmd(&["CLIENT", "SETNAME", "faulty"]), Value::Simple(b"OK".to_vec()));
        p.cmd(&["RLOCKD", "FAULT", "ERROR", "ERR injected", "CLIENT", "faulty", "TIMES", "2"]);
        for want in [Value::Error(b"ERR injected".to_vec()), Value::Error(b"ERR injected".to_vec())] {
            assert_eq!(faulty.cmd(&["SET", "job", "a", "NX", "PX", "30000"]), want);
        }
        assert_eq!(faulty.cmd(&["SET", "job", "a", "NX", "PX", "30000"]), Value::Simple(b"OK".to_vec()));
        assert!(int(p.cmd(&["RLOCKD", "REPL", "PAUSE"])) >= 1);
        assert_eq!(faulty.cmd(&["SET", "order", "a", "NX", "PX", "30000"]), Value::Simple(b"OK".to_vec()));
        p.cmd(&["RLOCKD", "REPL", "FAILOVER", &replica.to_string()]);
        let mut r = RawConn::connect(replica);
        assert_eq!(r.cmd(&["SET", "order", "b", "NX", "PX", "30000"]), Value::Simple(b"OK".to_vec()));
        let Value::Agg(_, Some(violations)) = r.cmd(&["RLOCKD", "CHECK"]) else { panic!("CHECK") };
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(p.cmd(&["RLOCKD", "RECORD", "STOP"]), Value::Simple(b"OK".to_vec()));
        int(p.cmd(&["RLOCKD", "RECORD", "SAVE", file.to_str().expect("utf-8")]));
    }
    let text = std::fs::read_to_string(&file).expect("the recording");
    assert!(text.contains("\"faults\":[\"hit: latency\"]"), "no command hit by the latency fault");
    assert!(text.contains("\"faults\":[\"hit: error 'ERR injected' on set"), "no command hit by the error fault");
    assert!(text.contains("{\"t\":\"mark\",") && text.contains("\"kind\":\"failover\""), "no failover mark");
    assert!(text.contains("\"nodes\":[\"127.0.0.1:"), "{}", text.lines().next().unwrap_or_default());
    let n = commands(&text);
    let mut first = None;
    for round in 0..20 {
        let r = replay(&file, &[]);
        assert_eq!(r.code, Some(0), "replay {round}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        assert!(r.stdout.starts_with(&format!("{n} commands, every reply identical")), "replay {round}: {}", r.stdout);
        match &first {
            None => first = Some(r.stdout),
            Some(f) => assert_eq!(&r.stdout, f, "replay {round} reported differently"),
        }
    }
}

/// The lock threads through redis-py's `RedisCluster` (the locks and
/// counters spread over the nodes by slot).
const CLUSTER_LOCK_THREADS: &str = r#"
import sys, threading
from redis.cluster import RedisCluster
from redis.lock import Lock

port, threads, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rc = RedisCluster(host="127.0.0.1", port=port)

def work(t):
    for i in range(rounds):
        n = (t + i) % 3
        lock = Lock(rc, f"lock:{n}", timeout=10, sleep=0.002, blocking_timeout=60)
        assert lock.acquire()
        try:
            v = int(rc.get(f"counter:{n}") or 0)
            rc.set(f"counter:{n}", v + 1)
        finally:
            lock.release()

ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
print("total", sum(int(rc.get(f"counter:{n}") or 0) for n in range(3)))
"#;

/// A cluster of 3: redis-py `RedisCluster` lock threads recorded on every
/// node, replayed 20 times.
#[test]
fn a_recorded_cluster_run_replays_identically_20_times() {
    let Some(python) = crate::examples::redis_py("the recorded redis-py cluster run") else { return };
    let port = free_ports(3);
    let file = scratch("cluster.jsonl");
    {
        let _srv = Binary::start(&["--port", &port.to_string(), "--cluster", "3"]);
        let mut c = RawConn::connect(port);
        assert_eq!(c.cmd(&["RLOCKD", "RECORD", "START"]), Value::Simple(b"OK".to_vec()));
        let script = scratch("cluster_lock_threads.py");
        std::fs::write(&script, CLUSTER_LOCK_THREADS).expect("write the script");
        let args = [script.to_str().expect("utf-8"), &port.to_string(), "6", "10"];
        let r = run_in(None, python.to_str().expect("utf-8"), &args, LIMIT);
        assert_eq!(r.code, Some(0), "cluster lock threads:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        assert_eq!(r.stdout.trim(), "total 60");
        int(c.cmd(&["RLOCKD", "RECORD", "SAVE", file.to_str().expect("utf-8")]));
    }
    let text = std::fs::read_to_string(&file).expect("the recording");
    for i in 0..3 {
        assert!(text.contains(&format!("\"node\":\"127.0.0.1:{}\"", port + i)), "node {i} recorded nothing");
    }
    let n = commands(&text);
    let mut first = None;
    for round in 0..20 {
        let r = replay(&file, &[]);
        assert_eq!(r.code, Some(0), "replay {round}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        assert!(r.stdout.starts_with(&format!("{n} commands, every reply identical")), "replay {round}: {}", r.stdout);
        match &first {
            None => first = Some(r.stdout),
            Some(f) => assert_eq!(&r.stdout, f, "replay {round} reported differently"),
        }
    }
}

/// Redisson (16 threads on 3 RLocks, an injected latency, a failover: the
/// Java example `RecordMain`) on a primary with a replica, recorded and
/// replayed 20 times.
#[test]
fn a_recorded_redisson_run_replays_identically_20_times() {
    let has = |program: &str, arg: &str| {
        Command::new(program).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
    };
    if !has("java", "-version") || !has("mvn", "-v") {
        crate::common::skip::skipped(
            "a JDK (17+) and Maven are not installed, so the recorded Redisson run was not run",
        );
        return;
    }
    let port = free_ports(2);
    let file = scratch("redisson.jsonl");
    {
        let _srv = Binary::start(&["--port", &port.to_string(), "--replicas", "1"]);
        let mut c = RawConn::connect(port);
        assert_eq!(c.cmd(&["RLOCKD", "RECORD", "START"]), Value::Simple(b"OK".to_vec()));
        let build = Path::new(env!("CARGO_TARGET_TMPDIR")).join("examples").join("java-record");
        let args = format!("{port} {}", port + 1);
        let r = crate::examples::run_java_example(&build, Some("example.RecordMain"), &args, LIMIT);
        assert_eq!(r.code, Some(0), "RecordMain:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("total=96 first=true second=true"), "{}", r.stdout);
        int(c.cmd(&["RLOCKD", "RECORD", "SAVE", file.to_str().expect("utf-8")]));
    }
    let text = std::fs::read_to_string(&file).expect("the recording");
    assert!(text.contains("\"faults\":[\"hit: latency\"]"), "no command hit by the latency fault");
    assert!(text.contains("\"kind\":\"failover\""), "no failover mark");
    let n = commands(&text);
    let mut first = None;
    for round in 0..20 {
        let r = replay(&file, &[]);
        assert_eq!(r.code, Some(0), "replay {round}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        assert!(r.stdout.starts_with(&format!("{n} commands, every reply identical")), "replay {round}: {}", r.stdout);
        match &first {
            None => first = Some(r.stdout),
            Some(f) => assert_eq!(&r.stdout, f, "replay {round} reported differently"),
        }
    }
}

/// `--nodes 3` (independent servers, as for Redlock): lock threads on each
/// node in turn, replayed 20 times; `--until` there leaves all three nodes
/// answering as they were.
#[test]
fn a_recorded_run_on_three_independent_nodes_replays_identically_20_times() {
    let port = free_ports(3);
    let file = scratch("nodes.jsonl");
    {
        let _srv = Binary::start(&["--port", &port.to_string(), "--nodes", "3"]);
        let mut c = RawConn::connect(port);
        assert_eq!(c.cmd(&["RLOCKD", "RECORD", "START"]), Value::Simple(b"OK".to_vec()));
        for i in 0..3 {
            if run_lock_threads(port + i, 4, 6).is_none() {
                return;
            }
        }
        int(c.cmd(&["RLOCKD", "RECORD", "SAVE", file.to_str().expect("utf-8")]));
    }
    let text = std::fs::read_to_string(&file).expect("the recording");
    assert!(text.lines().next().unwrap_or_default().contains("\"args\":[\"--nodes\",\"3\","), "{text:.300}");
    let n = commands(&text);
    let mut first = None;
    for round in 0..20 {
        let r = replay(&file, &[]);
        assert_eq!(r.code, Some(0), "replay {round}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        assert!(r.stdout.starts_with(&format!("{n} commands, every reply identical")), "replay {round}: {}", r.stdout);
        match &first {
            None => first = Some(r.stdout),
            Some(f) => assert_eq!(&r.stdout, f, "replay {round} reported differently"),
        }
    }
    // Stop before the first command on the third node: the first two have their totals, the
    // third nothing yet.
    let third = format!("\"node\":\"127.0.0.1:{}\"", port + 2);
    let line = text.lines().find(|l| l.contains(&third)).expect("a command on the third node");
    let i: u64 = line.split("\"i\":").nth(1).and_then(|r| r.split(',').next()).and_then(|n| n.parse().ok()).expect("i");
    let mut child = Command::new(BIN)
        .args(["replay", file.to_str().expect("utf-8"), "--until", &i.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the replay");
    let out = child.stdout.take().expect("stdout");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _child = Kill(child);
    let mut lines = BufReader::new(out).lines().map_while(Result::ok);
    assert_eq!(lines.next(), Some(format!("stopped before command {i}; the servers are listening:")));
    for node in 0..3u16 {
        let l = lines.next().expect("a node's line");
        assert_eq!(l, format!("node 127.0.0.1:{0} at 127.0.0.1:{0}", port + node));
        let mut c = RawConn::connect(port + node);
        let total: i64 = (0..3)
            .map(|k| match c.cmd(&["GET", &format!("counter:{k}")]) {
                Value::Bulk(Some(v)) => String::from_utf8_lossy(&v).parse().expect("a count"),
                _ => 0,
            })
            .sum();
        assert_eq!(total, if node < 2 { 24 } else { 0 }, "node {node}");
    }
}

/// Blocked commands: one served by another client's push, one that times out
/// (the replay moves the clock to the recorded time of its end), and a
/// subscriber receiving a message that is not compared.
#[test]
fn blocked_commands_and_messages_replay() {
    let srv = Binary::start(&["--port", "0"]);
    let mut c = RawConn::connect(srv.port);
    assert_eq!(c.cmd(&["RLOCKD", "RECORD", "START"]), Value::Simple(b"OK".to_vec()));
    let mut waiter = RawConn::connect(srv.port);
    waiter.send(&[b"BLPOP".to_vec(), b"q".to_vec(), b"0".to_vec()]);
    let mut sub = RawConn::connect(srv.port);
    assert!(matches!(sub.cmd(&["SUBSCRIBE", "ch"]), Value::Agg(..)));
    // Its BLPOP has arrived once the server counts a blocked client.
    for _ in 0..200 {
        let Value::Bulk(Some(info)) = c.cmd(&["INFO", "clients"]) else { panic!("INFO") };
        if String::from_utf8_lossy(&info).contains("blocked_clients:1") {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(c.cmd(&["LPUSH", "q", "x"]), Value::Int(1));
    assert!(matches!(waiter.read(), Some(Value::Agg(..))));
    assert_eq!(c.cmd(&["BLPOP", "nothing", "0.2"]), Value::Agg(b'*', None));
    assert_eq!(c.cmd(&["PUBLISH", "ch", "m"]), Value::Int(1));
    let file = scratch("blocked.jsonl");
    int(c.cmd(&["RLOCKD", "RECORD", "SAVE", file.to_str().expect("utf-8")]));
    drop(srv);
    let text = std::fs::read_to_string(&file).expect("the recording");
    assert_eq!(text.matches("\"blocked\":true").count(), 2, "{text}");
    assert_eq!(text.matches("{\"t\":\"unblock\"").count(), 2, "{text}");
    for round in 0..3 {
        let r = replay(&file, &[]);
        assert_eq!(r.code, Some(0), "replay {round}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        let want = format!("{} commands, every reply identical", commands(&text));
        assert!(r.stdout.starts_with(&want), "{}", r.stdout);
    }
}

/// `MAXBYTES` bounds the recording: past it lines are counted, not kept, and
/// the prefix kept still replays (the report says what was left out).
#[test]
fn a_bounded_recording_keeps_its_beginning() {
    let file = scratch("bounded.jsonl");
    {
        let srv = Binary::start(&["--port", "0"]);
        let mut c = RawConn::connect(srv.port);
        assert_eq!(c.cmd(&["RLOCKD", "RECORD", "START", "MAXBYTES", "600"]), Value::Simple(b"OK".to_vec()));
        for i in 0..5 {
            assert_eq!(c.cmd(&["SET", &format!("k{i}"), "v"]), Value::Simple(b"OK".to_vec()));
        }
        let Value::Agg(_, Some(status)) = c.cmd(&["RLOCKD", "RECORD", "STATUS"]) else { panic!("STATUS") };
        let (kept, bytes, max, dropped) =
            (int(status[3].clone()), int(status[5].clone()), status[7].clone(), status[9].clone());
        assert_eq!(max, Value::Int(600));
        assert!(bytes <= 600 && kept >= 1, "{status:?}");
        assert_eq!(dropped, Value::Int(5 - kept), "{status:?}");
        assert_eq!(int(c.cmd(&["RLOCKD", "RECORD", "SAVE", file.to_str().expect("utf-8")])), kept);
    }
    let r = replay(&file, &[]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("every reply identical (the recording reached its MAXBYTES"), "{}", r.stdout);
}

/// A primary with a replica watched by a Sentinel: redis-py lock threads and
/// a failover asked of a node (`RLOCKD REPL FAILOVER`), recorded and
/// replayed 20 times with the same Sentinel in place (it watches, and its
/// own timers decide nothing within the run's seconds).
#[test]
fn a_recorded_run_under_a_sentinel_replays_identically_20_times() {
    let port = free_ports(3);
    let (replica, sentinel) = (port + 1, port + 2);
    let file = scratch("sentinel.jsonl");
    {
        let _srv =
            Binary::start(&["--port", &port.to_string(), "--replicas", "1", "--sentinel", &sentinel.to_string()]);
        let mut p = RawConn::connect(port);
        assert_eq!(p.cmd(&["RLOCKD", "RECORD", "START"]), Value::Simple(b"OK".to_vec()));
        if run_lock_threads(port, 4, 10).is_none() {
            return;
        }
        let mut s = RawConn::connect(sentinel);
        let Value::Agg(_, Some(addr)) = s.cmd(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"]) else {
            panic!("the Sentinel names the primary")
        };
        assert_eq!(addr[1], Value::Bulk(Some(port.to_string().into_bytes())));
        assert_eq!(p.cmd(&["SET", "order", "a", "NX", "PX", "30000"]), Value::Simple(b"OK".to_vec()));
        p.cmd(&["WAIT", "1", "1000"]);
        p.cmd(&["RLOCKD", "REPL", "FAILOVER", &replica.to_string()]);
        let mut r = RawConn::connect(replica);
        assert_eq!(
            r.cmd(&["SET", "order", "b", "NX", "PX", "30000"]),
            Value::Bulk(None),
            "the lock went over with WAIT"
        );
        assert_eq!(p.cmd(&["RLOCKD", "RECORD", "STOP"]), Value::Simple(b"OK".to_vec()));
        int(p.cmd(&["RLOCKD", "RECORD", "SAVE", file.to_str().expect("utf-8")]));
    }
    let text = std::fs::read_to_string(&file).expect("the recording");
    assert!(text.contains("\"sentinels\":[\"127.0.0.1:"), "{}", text.lines().next().unwrap_or_default());
    let n = commands(&text);
    let mut first = None;
    for round in 0..20 {
        let r = replay(&file, &[]);
        assert_eq!(r.code, Some(0), "replay {round}:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        assert!(r.stdout.starts_with(&format!("{n} commands, every reply identical")), "replay {round}: {}", r.stdout);
        match &first {
            None => first = Some(r.stdout),
            Some(f) => assert_eq!(&r.stdout, f, "replay {round} reported differently"),
        }
    }
}
