//! Streams over TCP with the redis crate: a BullMQ-style enqueue script,
//! ids from the server clock, idle times, blocking reads and their
//! timeouts on the server clock. (Reply-for-reply fidelity with
//! redis-server is `tests/diff/stream.redis`.)

use std::thread;
use std::time::{Duration, Instant};

use super::common::{self, blocked_clients, wait_blocked};

/// What BullMQ's `addStandardJob` does with the events stream: an id from
/// INCR, the job hash, a LPUSH to `wait`, then `XADD events MAXLEN ~ 10000
/// * event added …` and, as its `trimEvents` does, XTRIM inside the script.
const ENQUEUE: &str = r#"
local jobId = redis.call("INCR", KEYS[1])
local jobKey = KEYS[2] .. jobId
redis.call("HSET", jobKey, "name", ARGV[1], "data", ARGV[2], "timestamp", ARGV[3])
redis.call("LPUSH", KEYS[3], jobId)
local id = redis.call("XADD", KEYS[4], "MAXLEN", "~", 10000, "*", "event", "added", "jobId", jobId, "name", ARGV[1])
redis.call("XADD", KEYS[4], "*", "event", "waiting", "jobId", jobId, "prev", "added")
local trimmed = redis.call("XTRIM", KEYS[4], "MAXLEN", "~", tonumber(ARGV[4]))
return {jobId, id, trimmed, redis.call("XLEN", KEYS[4])}
"#;

#[test]
fn bullmq_style_enqueue_script_adds_and_trims_events() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let keys = ["bull:q:id", "bull:q:", "bull:q:wait", "bull:q:events"];
    let mut last_id = String::new();
    for i in 1..=300i64 {
        let (job, id, _trimmed, len): (i64, String, i64, i64) = redis::cmd("EVAL")
            .arg(ENQUEUE)
            .arg(4)
            .arg(&keys)
            .arg("send-mail")
            .arg(format!("{{\"n\":{i}}}"))
            .arg(1_700_000_000_000i64 + i)
            .arg(10_000)
            .query(&mut c)
            .unwrap();
        assert_eq!(job, i);
        assert_eq!(len, 2 * i, "nothing trimmed below the cap");
        // `*` ids grow strictly and come from the server clock.
        let (ms, seq) = id.split_once('-').expect("ms-seq");
        let ms: u64 = ms.parse().unwrap();
        let _: u64 = seq.parse().unwrap();
        assert!(ms > 1_600_000_000_000, "{id} is a unix ms time");
        if !last_id.is_empty() {
            assert!(cmp_ids(&last_id, &id) == std::cmp::Ordering::Less, "{last_id} then {id}");
        }
        last_id = id;
    }
    let wait: i64 = redis::cmd("LLEN").arg("bull:q:wait").query(&mut c).unwrap();
    assert_eq!(wait, 300);
    // A lower cap: `~` removes whole 100-entry nodes only, never below it.
    let (_, _, trimmed, len): (i64, String, i64, i64) = redis::cmd("EVAL")
        .arg(ENQUEUE)
        .arg(4)
        .arg(&keys)
        .arg("send-mail")
        .arg("{}")
        .arg(0)
        .arg(250)
        .query(&mut c)
        .unwrap();
    assert_eq!(trimmed, 300);
    assert_eq!(len, 302);
    let first: Vec<(String, Vec<(String, String)>)> =
        redis::cmd("XRANGE").arg("bull:q:events").arg("-").arg("+").arg("COUNT").arg(1).query(&mut c).unwrap();
    assert_eq!(first[0].1[1], ("jobId".to_string(), "151".to_string()));
    let ty: String = redis::cmd("TYPE").arg("bull:q:events").query(&mut c).unwrap();
    assert_eq!(ty, "stream");
}

fn cmp_ids(a: &str, b: &str) -> std::cmp::Ordering {
    let parse = |s: &str| {
        let (m, q) = s.split_once('-').unwrap();
        (m.parse::<u64>().unwrap(), q.parse::<u64>().unwrap())
    };
    parse(a).cmp(&parse(b))
}

/// `*` ids and idle times come from the server clock, which tests move.
#[test]
fn ids_and_idle_times_follow_the_server_clock() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    srv.clock().freeze(true);
    srv.clock().set_ms(2_000_000_000_000);
    let a: String = redis::cmd("XADD").arg("s").arg("*").arg("f").arg("v").query(&mut c).unwrap();
    let b: String = redis::cmd("XADD").arg("s").arg("*").arg("f").arg("v").query(&mut c).unwrap();
    assert_eq!((a.as_str(), b.as_str()), ("2000000000000-0", "2000000000000-1"));
    let _: () = redis::cmd("XGROUP").arg("CREATE").arg("s").arg("g").arg("0").query(&mut c).unwrap();
    let _: redis::Value =
        redis::cmd("XREADGROUP").arg("GROUP").arg("g").arg("c").arg("STREAMS").arg("s").arg(">").query(&mut c).unwrap();
    srv.clock().advance_ms(1500);
    let pending: Vec<(String, String, i64, i64)> =
        redis::cmd("XPENDING").arg("s").arg("g").arg("-").arg("+").arg(10).query(&mut c).unwrap();
    assert_eq!(pending, vec![(a.clone(), "c".into(), 1500, 1), (b.clone(), "c".into(), 1500, 1)]);
    let idle_filtered: Vec<(String, String, i64, i64)> =
        redis::cmd("XPENDING").arg("s").arg("g").arg("IDLE").arg(2000).arg("-").arg("+").arg(10).query(&mut c).unwrap();
    assert!(idle_filtered.is_empty());
    // XAUTOCLAIM takes only entries idle long enough.
    let (next, claimed, deleted): (String, Vec<String>, Vec<String>) = redis::cmd("XAUTOCLAIM")
        .arg("s")
        .arg("g")
        .arg("d")
        .arg(1000)
        .arg("0")
        .arg("COUNT")
        .arg(1)
        .arg("JUSTID")
        .query(&mut c)
        .unwrap();
    assert_eq!((next.as_str(), claimed, deleted), (b.as_str(), vec![a.clone()], vec![]));
    // A clock moved backwards never makes an id go back.
    srv.clock().set_ms(1_000_000_000_000);
    let d: String = redis::cmd("XADD").arg("s").arg("*").arg("f").arg("v").query(&mut c).unwrap();
    assert_eq!(d, "2000000000000-2");
    srv.clock().freeze(false);
}

#[test]
fn blocked_xread_is_woken_by_xadd_from_a_script() {
    let srv = common::server();
    let mut ctl = common::conn(&srv);
    let mut reader = common::conn(&srv);
    let t = thread::spawn(move || {
        let v: redis::Value =
            redis::cmd("XREAD").arg("BLOCK").arg(0).arg("STREAMS").arg("s").arg("$").query(&mut reader).unwrap();
        v
    });
    wait_blocked(&mut ctl, 1);
    let _: String = redis::cmd("EVAL")
        .arg("return redis.call('XADD', KEYS[1], '5-1', 'k', 'v')")
        .arg(1)
        .arg("s")
        .query(&mut ctl)
        .unwrap();
    let got = t.join().unwrap();
    let want = redis::Value::Array(vec![redis::Value::Array(vec![
        redis::Value::BulkString(b"s".to_vec()),
        redis::Value::Array(vec![redis::Value::Array(vec![
            redis::Value::BulkString(b"5-1".to_vec()),
            redis::Value::Array(vec![redis::Value::BulkString(b"k".to_vec()), redis::Value::BulkString(b"v".to_vec())]),
        ])]),
    ])]);
    assert_eq!(got, want);
    assert_eq!(blocked_clients(&mut ctl), 0);
}

/// BLOCK is a deadline on the server clock: frozen, it never passes;
/// advanced past it, the reader gets its null reply at once.
#[test]
fn xread_block_timeout_follows_the_server_clock() {
    let srv = common::server();
    let mut ctl = common::conn(&srv);
    let mut reader = common::conn(&srv);
    srv.clock().freeze(true);
    let t = thread::spawn(move || {
        let v: redis::Value =
            redis::cmd("XREAD").arg("BLOCK").arg(500).arg("STREAMS").arg("s").arg("$").query(&mut reader).unwrap();
        (v, Instant::now())
    });
    wait_blocked(&mut ctl, 1);
    thread::sleep(Duration::from_millis(800));
    assert_eq!(blocked_clients(&mut ctl), 1, "a frozen clock never reaches the deadline");
    let moved = Instant::now();
    srv.clock().advance_ms(600);
    let (v, done) = t.join().unwrap();
    assert_eq!(v, redis::Value::Nil);
    assert!(done.duration_since(moved) < Duration::from_millis(500));
    srv.clock().freeze(false);
}

#[test]
fn client_unblock_ends_a_blocked_xreadgroup() {
    let srv = common::server();
    let mut ctl = common::conn(&srv);
    let mut reader = common::conn(&srv);
    let _: () = redis::cmd("XGROUP").arg("CREATE").arg("s").arg("g").arg("$").arg("MKSTREAM").query(&mut ctl).unwrap();
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut reader).unwrap();
    let t = thread::spawn(move || {
        let r: redis::RedisResult<redis::Value> = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg("g")
            .arg("c")
            .arg("BLOCK")
            .arg(0)
            .arg("STREAMS")
            .arg("s")
            .arg(">")
            .query(&mut reader);
        r
    });
    wait_blocked(&mut ctl, 1);
    let n: i64 = redis::cmd("CLIENT").arg("UNBLOCK").arg(id).arg("ERROR").query(&mut ctl).unwrap();
    assert_eq!(n, 1);
    let err = t.join().unwrap().unwrap_err();
    assert!(err.to_string().contains("UNBLOCKED"), "{err}");
    // The consumer was never created: nothing was read.
    let consumers: Vec<redis::Value> = redis::cmd("XINFO").arg("CONSUMERS").arg("s").arg("g").query(&mut ctl).unwrap();
    assert!(consumers.is_empty());
}

/// Blocks an `XREADGROUP GROUP g alice BLOCK 0 STREAMS s >` on a new
/// connection; the thread returns its reply (the error's code and text).
fn blocked_group_reader(srv: &rlockd::Server) -> thread::JoinHandle<Result<redis::Value, (String, String)>> {
    let mut c = common::conn(srv);
    thread::spawn(move || {
        redis::cmd("XREADGROUP")
            .arg(&["GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">"])
            .query::<redis::Value>(&mut c)
            .map_err(|e| (e.code().unwrap_or("").to_string(), e.detail().unwrap_or("").to_string()))
    })
}

#[test]
fn a_blocked_xreadgroup_is_answered_when_its_stream_goes() {
    let srv = common::server();
    let mut ctl = common::conn(&srv);
    // Each way a stream can go while a group reader waits on it.
    let triggers: &[(&str, &[&[&str]])] = &[
        ("DEL", &[&["DEL", "s"]]),
        ("UNLINK", &[&["UNLINK", "s"]]),
        ("SET", &[&["SET", "s", "str"]]),
        ("transaction", &[&["MULTI"], &["DEL", "s"], &["SADD", "s", "e1"], &["EXEC"]]),
        ("FLUSHDB", &[&["FLUSHDB"]]),
        ("FLUSHALL ASYNC", &[&["FLUSHALL", "ASYNC"]]),
        ("SWAPDB", &[&["SWAPDB", "0", "1"], &["SELECT", "1"], &["FLUSHDB"], &["SELECT", "0"]]),
        ("RENAME of a list", &[&["RPUSH", "l", "a"], &["RENAME", "l", "s"]]),
        ("expiry", &[&["PEXPIRE", "s", "20"]]),
    ];
    for (name, cmds) in triggers {
        let _: () = redis::cmd("FLUSHALL").query(&mut ctl).unwrap();
        let _: String = redis::cmd("XADD").arg(&["s", "1-0", "f", "v"]).query(&mut ctl).unwrap();
        let _: String = redis::cmd("XGROUP").arg(&["CREATE", "s", "g", "$"]).query(&mut ctl).unwrap();
        let reader = blocked_group_reader(&srv);
        wait_blocked(&mut ctl, 1);
        for c in cmds.iter() {
            let _: redis::Value = redis::cmd(c[0]).arg(&c[1..]).query(&mut ctl).unwrap();
        }
        let got = reader.join().unwrap();
        assert_eq!(got, Err(("UNBLOCKED".to_string(), "the stream key no longer exists".to_string())), "after {name}");
        assert_eq!(blocked_clients(&mut ctl), 0, "after {name}");
    }
    // Its group destroyed, the stream still there: NOGROUP.
    let _: () = redis::cmd("FLUSHALL").query(&mut ctl).unwrap();
    let _: String = redis::cmd("XGROUP").arg(&["CREATE", "s", "g", "$", "MKSTREAM"]).query(&mut ctl).unwrap();
    let reader = blocked_group_reader(&srv);
    wait_blocked(&mut ctl, 1);
    let _: i64 = redis::cmd("XGROUP").arg(&["DESTROY", "s", "g"]).query(&mut ctl).unwrap();
    let (code, text) = reader.join().unwrap().unwrap_err();
    assert_eq!(
        (code.as_str(), text.as_str()),
        ("NOGROUP", "the consumer group this client was blocked on no longer exists")
    );
}

#[test]
fn xread_and_pops_keep_waiting_when_their_stream_goes() {
    let srv = common::server();
    let mut ctl = common::conn(&srv);
    let mut popper = common::conn(&srv);
    let pop =
        thread::spawn(move || -> (String, String) { redis::cmd("BLPOP").arg(&["s", "0"]).query(&mut popper).unwrap() });
    wait_blocked(&mut ctl, 1);
    let _: String = redis::cmd("XADD").arg(&["s", "5-0", "f", "v"]).query(&mut ctl).unwrap();
    let mut reader = common::conn(&srv);
    let read = thread::spawn(move || -> redis::Value {
        redis::cmd("XREAD").arg(&["BLOCK", "0", "STREAMS", "s", "$"]).query(&mut reader).unwrap()
    });
    wait_blocked(&mut ctl, 2);
    for c in [&["DEL", "s"][..], &["SET", "s", "str"], &["FLUSHALL"], &["XADD", "s", "1-0", "f", "v"], &["DEL", "s"]] {
        let _: redis::Value = redis::cmd(c[0]).arg(&c[1..]).query(&mut ctl).unwrap();
    }
    assert_eq!(blocked_clients(&mut ctl), 2, "both still wait (the new stream's 1-0 is below 5-0)");
    let _: i64 = redis::cmd("RPUSH").arg(&["s", "x"]).query(&mut ctl).unwrap();
    assert_eq!(pop.join().unwrap(), ("s".to_string(), "x".to_string()));
    let _: String = redis::cmd("XADD").arg(&["s", "6-0", "f", "v"]).query(&mut ctl).unwrap();
    type Entries = Vec<(String, Vec<String>)>;
    let got: Vec<(String, Entries)> = redis::FromRedisValue::from_redis_value(&read.join().unwrap()).unwrap();
    assert_eq!(got, vec![("s".to_string(), vec![("6-0".to_string(), vec!["f".to_string(), "v".to_string()])])]);
}

/// Redis 8.2's reference policies against redis-server 8.2.3 on seeded
/// random sequences over one stream in small nodes: XADD (with trimming),
/// groups created and moved, reads, XACK, XDEL, XDELEX, XACKDEL and XTRIM
/// under every policy; after each command the stream's figures, entries,
/// groups (but their consumer counts: Redis 7.2 creates a consumer on a
/// read that delivers nothing, which the 8.2 profile does not have yet)
/// and PEL summaries must agree. The scripted cases are
/// `tests/diff/stream_redis82.redis`; this found none of its own yet.
#[test]
fn reference_policies_match_redis_8_2_on_random_sequences() {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::common::oracle::{Oracle, OracleKind};
    use super::common::resp::{pretty, RawConn, Value};

    let Some(oracle) = Oracle::start_kind(OracleKind::Redis82, &[]) else {
        return;
    };
    let config = rlockd::Config { params: vec![OracleKind::Redis82.rlockd_param()], ..Default::default() };
    let srv = rlockd::Server::start_with(config).expect("rlockd");
    let (mut ours, mut theirs) = (RawConn::connect(srv.port()), RawConn::connect(oracle.port));
    // XINFO GROUPS without each group's consumer count.
    let strip = |cmd: &[String], v: Value| match v {
        Value::Agg(t, Some(groups)) if cmd[..2] == ["XINFO", "GROUPS"] => Value::Agg(
            t,
            Some(
                groups
                    .into_iter()
                    .map(|g| match g {
                        Value::Agg(t, Some(f)) => Value::Agg(
                            t,
                            Some(
                                f.into_iter()
                                    .enumerate()
                                    .filter(|(i, _)| !(2..4).contains(i))
                                    .map(|(_, x)| x)
                                    .collect(),
                            ),
                        ),
                        other => other,
                    })
                    .collect(),
            ),
        ),
        other => other,
    };
    let mut diffs = Vec::new();
    for seed in 1..=12u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let node = ["2", "3", "5", "100"][rng.random_range(0..4)];
        for c in [&mut ours, &mut theirs] {
            c.cmd(&["FLUSHALL"]);
            c.cmd(&["CONFIG", "SET", "stream-node-max-entries", node]);
        }
        let mut next = 1u64;
        let mut history: Vec<String> = Vec::new();
        'steps: for _ in 0..150 {
            let pick = |rng: &mut SmallRng, from: &[&str]| from[rng.random_range(0..from.len())].to_string();
            let id = |rng: &mut SmallRng| format!("{}-1", rng.random_range(0..next + 2));
            let policy = |rng: &mut SmallRng| -> Vec<String> {
                match rng.random_range(0..6) {
                    0 => vec![],
                    1 => vec!["KEEPREF".into()],
                    2 | 3 => vec!["DELREF".into()],
                    _ => vec!["ACKED".into()],
                }
            };
            let group = |rng: &mut SmallRng| pick(rng, &["g1", "g2", "g3"]);
            let trim = |rng: &mut SmallRng| -> Vec<String> {
                let mut t = vec![pick(rng, &["MAXLEN", "MINID"])];
                if rng.random_bool(0.4) {
                    t.push(pick(rng, &["~", "="]));
                }
                t.push(if t[0] == "MAXLEN" { rng.random_range(0..9).to_string() } else { id(rng) });
                t.extend(policy(rng));
                t
            };
            let ids = |rng: &mut SmallRng| -> Vec<String> {
                let n = rng.random_range(1..4);
                let mut v = vec!["IDS".to_string(), n.to_string()];
                v.extend((0..n).map(|_| id(rng)));
                v
            };
            let r: f64 = rng.random();
            let cmd: Vec<String> = if r < 0.25 {
                let mut c = vec!["XADD".to_string(), "s".into()];
                if rng.random_bool(0.3) {
                    c.extend(trim(&mut rng));
                }
                c.extend([format!("{next}-1"), "f".into(), next.to_string()]);
                next += 1;
                c
            } else if r < 0.32 {
                let at = pick(&mut rng, &["0", "$", "x"]);
                let at = if at == "x" { id(&mut rng) } else { at };
                vec!["XGROUP".into(), "CREATE".into(), "s".into(), group(&mut rng), at]
            } else if r < 0.36 {
                let at = pick(&mut rng, &["0", "$", "x"]);
                let at = if at == "x" { id(&mut rng) } else { at };
                vec!["XGROUP".into(), "SETID".into(), "s".into(), group(&mut rng), at]
            } else if r < 0.48 {
                let (g, c, n) = (group(&mut rng), pick(&mut rng, &["c1", "c2"]), rng.random_range(1..5).to_string());
                ["XREADGROUP", "GROUP", &g, &c, "COUNT", &n, "STREAMS", "s", ">"].map(String::from).to_vec()
            } else if r < 0.55 {
                let mut c = vec!["XACK".to_string(), "s".into(), group(&mut rng)];
                c.extend(ids(&mut rng).split_off(2));
                c
            } else if r < 0.58 {
                vec!["XDEL".into(), "s".into(), id(&mut rng)]
            } else if r < 0.70 {
                let mut c = vec!["XDELEX".to_string(), "s".into()];
                c.extend(policy(&mut rng));
                c.extend(ids(&mut rng));
                c
            } else if r < 0.85 {
                let mut c = vec!["XACKDEL".to_string(), "s".into(), group(&mut rng)];
                c.extend(policy(&mut rng));
                c.extend(ids(&mut rng));
                c
            } else {
                let mut c = vec!["XTRIM".to_string(), "s".into()];
                c.extend(trim(&mut rng));
                c
            };
            history.push(cmd.join(" "));
            let mut checks = vec![cmd];
            for c in [&["XINFO", "STREAM", "s"][..], &["XRANGE", "s", "-", "+"], &["XINFO", "GROUPS", "s"]] {
                checks.push(c.iter().map(|s| s.to_string()).collect());
            }
            for g in ["g1", "g2", "g3"] {
                checks.push(["XPENDING", "s", g].map(String::from).to_vec());
            }
            for c in checks {
                let args: Vec<&str> = c.iter().map(String::as_str).collect();
                let (a, b) = (strip(&c, ours.cmd(&args)), strip(&c, theirs.cmd(&args)));
                if a != b {
                    let recent = history.iter().rev().take(10).rev().cloned().collect::<Vec<_>>().join("\n      ");
                    diffs.push(format!(
                        "seed {seed} (nodes of {node}): {}\n    rlockd: {}\n    redis:  {}\n    after:\n      {recent}",
                        c.join(" "),
                        pretty(&a),
                        pretty(&b)
                    ));
                    break 'steps;
                }
            }
        }
    }
    for c in [&mut ours, &mut theirs] {
        c.cmd(&["CONFIG", "SET", "stream-node-max-entries", "100"]);
    }
    assert!(diffs.is_empty(), "{} difference(s) from redis-server 8.2.3:\n{}", diffs.len(), diffs.join("\n"));
}
