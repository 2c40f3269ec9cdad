//! pubsub integration tests: several subscriber connections, patterns and
//! shard channels, RESP2 and RESP3, concurrent publishers, slow subscribers.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::common::resp::{RawConn, Value};
use super::common::{self};

fn bulk(s: &str) -> Value {
    Value::Bulk(Some(s.as_bytes().to_vec()))
}

/// A pub/sub message as RESP2 (`*`) or RESP3 (`>`) sends it.
fn msg(tag: u8, parts: &[&str]) -> Value {
    Value::Agg(tag, Some(parts.iter().map(|p| bulk(p)).collect()))
}

fn confirm(tag: u8, kind: &str, name: &str, n: i64) -> Value {
    Value::Agg(tag, Some(vec![bulk(kind), bulk(name), Value::Int(n)]))
}

/// Waits until `PUBSUB NUMSUB channel` reports `n`.
fn wait_numsub(c: &mut RawConn, channel: &str, n: i64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let v = c.cmd(&["PUBSUB", "NUMSUB", channel]);
        if v == Value::Agg(b'*', Some(vec![bulk(channel), Value::Int(n)])) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn subscribers_patterns_and_shards_each_get_their_messages() {
    let srv = common::server();
    let port = srv.port();
    let mut chan = RawConn::connect(port);
    let mut pat = RawConn::connect(port);
    let mut shard = RawConn::connect(port);
    let mut v3 = RawConn::connect(port);
    let mut publ = RawConn::connect(port);

    assert_eq!(chan.cmd(&["SUBSCRIBE", "orders"]), confirm(b'*', "subscribe", "orders", 1));
    assert_eq!(pat.cmd(&["PSUBSCRIBE", "ord*"]), confirm(b'*', "psubscribe", "ord*", 1));
    assert_eq!(shard.cmd(&["SSUBSCRIBE", "orders"]), confirm(b'*', "ssubscribe", "orders", 1));
    assert!(matches!(v3.cmd(&["HELLO", "3"]), Value::Map(_)));
    v3.send(&[b"SUBSCRIBE".to_vec(), b"orders".to_vec(), b"other".to_vec()]);
    assert_eq!(v3.read(), Some(confirm(b'>', "subscribe", "orders", 1)));
    assert_eq!(v3.read(), Some(confirm(b'>', "subscribe", "other", 2)));

    // Channel + pattern + RESP3 channel; the shard subscriber is separate.
    assert_eq!(publ.cmd(&["PUBLISH", "orders", "o1"]), Value::Int(3));
    assert_eq!(publ.cmd(&["SPUBLISH", "orders", "s1"]), Value::Int(1));
    assert_eq!(publ.cmd(&["PUBLISH", "ordinary", "o2"]), Value::Int(1));
    assert_eq!(publ.cmd(&["PUBLISH", "other", "o3"]), Value::Int(1));
    assert_eq!(publ.cmd(&["PUBLISH", "nobody", "x"]), Value::Int(0));

    assert_eq!(chan.read(), Some(msg(b'*', &["message", "orders", "o1"])));
    assert_eq!(pat.read(), Some(msg(b'*', &["pmessage", "ord*", "orders", "o1"])));
    assert_eq!(pat.read(), Some(msg(b'*', &["pmessage", "ord*", "ordinary", "o2"])));
    assert_eq!(shard.read(), Some(msg(b'*', &["smessage", "orders", "s1"])));
    assert_eq!(v3.read(), Some(msg(b'>', &["message", "orders", "o1"])));
    assert_eq!(v3.read(), Some(msg(b'>', &["message", "other", "o3"])));

    let numsub = publ.cmd(&["PUBSUB", "NUMSUB", "orders", "other", "none"]);
    assert_eq!(
        numsub,
        Value::Agg(
            b'*',
            Some(vec![bulk("orders"), Value::Int(2), bulk("other"), Value::Int(1), bulk("none"), Value::Int(0)])
        )
    );
    assert_eq!(publ.cmd(&["PUBSUB", "NUMPAT"]), Value::Int(1));
    assert_eq!(
        publ.cmd(&["PUBSUB", "SHARDNUMSUB", "orders"]),
        Value::Agg(b'*', Some(vec![bulk("orders"), Value::Int(1)]))
    );

    // A closed subscriber is forgotten.
    drop(chan);
    assert!(wait_numsub(&mut publ, "orders", 1));
}

#[test]
fn resp3_pushes_interleave_with_replies_in_server_order() {
    let srv = common::server();
    let mut sub = RawConn::connect(srv.port());
    let mut publ = RawConn::connect(srv.port());
    sub.cmd(&["HELLO", "3"]);
    assert_eq!(sub.cmd(&["SUBSCRIBE", "ch"]), confirm(b'>', "subscribe", "ch", 1));
    // Normal commands work on a RESP3 subscribed connection.
    assert_eq!(sub.cmd(&["SET", "k", "v"]), Value::Simple(b"OK".to_vec()));
    for i in 0..20 {
        let m = format!("m{i}");
        // The publish completes before the subscriber's next command is
        // sent, so the push must come before that command's reply.
        assert_eq!(publ.cmd(&["PUBLISH", "ch", &m]), Value::Int(1));
        sub.send(&[b"GET".to_vec(), b"k".to_vec()]);
        assert_eq!(sub.read(), Some(msg(b'>', &["message", "ch", &m])));
        assert_eq!(sub.read(), Some(bulk("v")));
    }
    // Our own publish: the message precedes the PUBLISH reply, as in Redis.
    sub.send(&[b"PUBLISH".to_vec(), b"ch".to_vec(), b"self".to_vec()]);
    assert_eq!(sub.read(), Some(msg(b'>', &["message", "ch", "self"])));
    assert_eq!(sub.read(), Some(Value::Int(1)));
    // Pipelined: subscribe confirmations, pushes and replies keep their order.
    let mut batch = Vec::new();
    for args in [&["SUBSCRIBE", "a", "b"][..], &["PUBLISH", "a", "x"], &["PING"], &["UNSUBSCRIBE", "a"]] {
        batch.extend(super::common::resp::encode(&args.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>()));
    }
    sub.send_raw(&batch);
    assert_eq!(sub.read(), Some(confirm(b'>', "subscribe", "a", 2)));
    assert_eq!(sub.read(), Some(confirm(b'>', "subscribe", "b", 3)));
    assert_eq!(sub.read(), Some(msg(b'>', &["message", "a", "x"])));
    assert_eq!(sub.read(), Some(Value::Int(1)));
    assert_eq!(sub.read(), Some(Value::Simple(b"PONG".to_vec())));
    assert_eq!(sub.read(), Some(confirm(b'>', "unsubscribe", "a", 2)));
}

#[test]
fn resp2_subscribed_context() {
    let srv = common::server();
    let mut c = RawConn::connect(srv.port());
    assert_eq!(
        c.cmd(&["UNSUBSCRIBE"]),
        Value::Agg(b'*', Some(vec![bulk("unsubscribe"), Value::Bulk(None), Value::Int(0)]))
    );
    c.cmd(&["SUBSCRIBE", "x"]);
    assert_eq!(c.cmd(&["PING"]), Value::Agg(b'*', Some(vec![bulk("pong"), bulk("")])));
    match c.cmd(&["GET", "k"]) {
        Value::Error(e) => assert!(String::from_utf8_lossy(&e).starts_with("ERR Can't execute 'get'")),
        other => panic!("expected an error, got {other:?}"),
    }
    assert_eq!(c.cmd(&["UNSUBSCRIBE", "x"]), confirm(b'*', "unsubscribe", "x", 0));
    assert_eq!(c.cmd(&["GET", "k"]), Value::Bulk(None));
}

/// 64 publishers each publish `N` numbered messages concurrently; every
/// subscriber (RESP2 channel, RESP2 pattern, RESP3 channel) must get every
/// message exactly once, each publisher's messages in order.
#[test]
fn concurrent_publishers_every_subscriber_gets_everything_in_order() {
    const PUBLISHERS: usize = 64;
    const N: usize = 150;
    let srv = common::server();
    let port = srv.port();

    let mut subs = Vec::new();
    for (kind, resp3) in [("SUBSCRIBE", false), ("PSUBSCRIBE", false), ("SUBSCRIBE", true), ("PSUBSCRIBE", true)] {
        let mut c = RawConn::connect(port);
        if resp3 {
            c.cmd(&["HELLO", "3"]);
        }
        let name = if kind == "SUBSCRIBE" { "load" } else { "lo?d" };
        c.cmd(&[kind, name]);
        subs.push(c);
    }
    let readers: Vec<_> = subs
        .into_iter()
        .map(|mut c| {
            std::thread::spawn(move || {
                let mut next: HashMap<usize, usize> = HashMap::new();
                for _ in 0..PUBLISHERS * N {
                    let v = c.read().expect("message");
                    let Value::Agg(_, Some(items)) = v else { panic!("not a message: {v:?}") };
                    let Some(Value::Bulk(Some(payload))) = items.last() else { panic!("no payload") };
                    let s = String::from_utf8(payload.clone()).expect("utf8");
                    let (p, i) = s.split_once(':').expect("p:i");
                    let (p, i): (usize, usize) = (p.parse().expect("p"), i.parse().expect("i"));
                    let want = next.entry(p).or_insert(0);
                    assert_eq!(i, *want, "publisher {p}: got message {i}, expected {want}");
                    *want += 1;
                }
                // Nothing more than expected arrives.
                c.set_read_timeout(Duration::from_millis(200));
                assert!(c.read().is_none(), "extra message");
                assert_eq!(next.len(), PUBLISHERS);
                assert!(next.values().all(|n| *n == N));
            })
        })
        .collect();

    let started = Instant::now();
    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|p| {
            std::thread::spawn(move || {
                let mut c = RawConn::connect(port);
                // Pipeline in chunks so publishers really interleave.
                for chunk in (0..N).collect::<Vec<_>>().chunks(10) {
                    let mut batch = Vec::new();
                    for i in chunk {
                        batch.extend(super::common::resp::encode(&[
                            b"PUBLISH".to_vec(),
                            b"load".to_vec(),
                            format!("{p}:{i}").into_bytes(),
                        ]));
                    }
                    c.send_raw(&batch);
                    for _ in chunk {
                        assert_eq!(c.read(), Some(Value::Int(4)));
                    }
                }
            })
        })
        .collect();
    for p in publishers {
        p.join().expect("publisher");
    }
    for r in readers {
        r.join().expect("subscriber");
    }
    eprintln!("{} messages to 4 subscribers in {:?}", PUBLISHERS * N, started.elapsed());
}

/// A subscriber that never reads is disconnected once its pending output
/// passes the pub/sub hard limit; the publisher is never blocked by it and a
/// subscriber that reads keeps receiving everything.
#[test]
fn slow_subscriber_is_cut_off_while_others_keep_up() {
    const MSGS: usize = 600;
    let srv = common::server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0"]),
        Value::Simple(b"OK".to_vec())
    );
    let mut slow = RawConn::connect(port);
    slow.cmd(&["SUBSCRIBE", "firehose"]);
    let slow_id = {
        let mut c = RawConn::connect(port);
        // The slow client's id: the one subscribed (flags=P) in CLIENT LIST.
        let Value::Bulk(Some(list)) = c.cmd(&["CLIENT", "LIST"]) else { panic!("client list") };
        let list = String::from_utf8(list).expect("utf8");
        let line = list.lines().find(|l| l.contains("flags=P")).expect("subscriber line").to_string();
        line.split(' ').next().expect("id").to_string()
    };
    let mut fast = RawConn::connect(port);
    fast.cmd(&["SUBSCRIBE", "firehose"]);
    let payload = "x".repeat(64 * 1024);
    // The fast subscriber reports its progress: the publisher keeps at most
    // WINDOW messages (512 KiB) ahead of it, so a loaded machine that
    // deschedules the reader cannot push it past the 1 MB limit too.
    const WINDOW: usize = 8;
    let received = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let progress = received.clone();
    let reader = std::thread::spawn(move || {
        for i in 0..MSGS {
            progress.store(i, std::sync::atomic::Ordering::Release);
            match fast.read() {
                Some(Value::Agg(b'*', Some(items))) => {
                    assert_eq!(items[0], bulk("message"));
                    assert_eq!(items[2], Value::Bulk(Some(format!("{i}:{}", "x".repeat(64 * 1024)).into_bytes())));
                }
                other => panic!("fast subscriber: message {i}: {:?}", other.map(|v| v.shape())),
            }
        }
        fast
    });
    let mut publ = RawConn::connect(port);
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    for i in 0..MSGS {
        let deadline = Instant::now() + Duration::from_secs(20);
        while i >= received.load(std::sync::atomic::Ordering::Acquire) + WINDOW && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        let t = Instant::now();
        let n = publ.cmd(&["PUBLISH", "firehose", &format!("{i}:{payload}")]);
        slowest = slowest.max(t.elapsed());
        assert!(matches!(n, Value::Int(1) | Value::Int(2)), "publish reply {n:?}");
    }
    let took = started.elapsed();
    eprintln!("published {MSGS} x 64KiB in {took:?} (slowest publish {slowest:?})");
    let _fast = reader.join().expect("fast subscriber got everything");
    // The slow subscriber is gone: only the fast one is counted.
    assert!(
        wait_numsub(&mut publ, "firehose", 1),
        "slow subscriber still subscribed: {}",
        super::common::resp::pretty(&admin.cmd(&["CLIENT", "LIST"]))
    );
    let Value::Bulk(Some(list)) = admin.cmd(&["CLIENT", "LIST"]) else { panic!("client list") };
    assert!(!String::from_utf8_lossy(&list).lines().any(|l| l.starts_with(&format!("{slow_id} "))));
    // Its socket ends after whatever the kernel had buffered.
    slow.set_read_timeout(Duration::from_secs(5));
    let mut got = 0;
    while slow.read().is_some() {
        got += 1;
    }
    assert!(got < MSGS, "the slow subscriber received everything ({got}) instead of being cut off");
}

#[test]
fn soft_limit_disconnects_after_its_duration() {
    let srv = common::server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    admin.cmd(&["CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 256kb 1"]);
    let mut slow = RawConn::connect(port);
    slow.cmd(&["SUBSCRIBE", "soft"]);
    let payload = "y".repeat(64 * 1024);
    let mut publ = RawConn::connect(port);
    let deadline = Instant::now() + Duration::from_secs(30);
    // Keep it over the soft limit for more than a second.
    loop {
        let n = publ.cmd(&["PUBLISH", "soft", &payload]);
        if n == Value::Int(0) {
            break;
        }
        assert!(Instant::now() < deadline, "never disconnected by the soft limit");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(slow);
}

/// RESET and QUIT leave every subscription.
#[test]
fn reset_and_disconnect_drop_subscriptions() {
    let srv = common::server();
    let mut a = RawConn::connect(srv.port());
    let mut b = RawConn::connect(srv.port());
    let mut admin = RawConn::connect(srv.port());
    a.cmd(&["SUBSCRIBE", "r"]);
    a.cmd(&["PSUBSCRIBE", "r*"]);
    b.cmd(&["SSUBSCRIBE", "r"]);
    assert_eq!(a.cmd(&["RESET"]), Value::Simple(b"RESET".to_vec()));
    assert_eq!(admin.cmd(&["PUBLISH", "r", "x"]), Value::Int(0));
    assert_eq!(admin.cmd(&["PUBSUB", "NUMPAT"]), Value::Int(0));
    assert_eq!(b.cmd(&["QUIT"]), Value::Simple(b"OK".to_vec()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while admin.cmd(&["SPUBLISH", "r", "x"]) != Value::Int(0) {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The `redis` crate's own (sync) pub/sub API works against rlockd.
#[test]
fn redis_crate_pubsub() {
    let srv = common::server();
    let mut sub_con = common::conn(&srv);
    let mut ps = sub_con.as_pubsub();
    ps.subscribe("crate-chan").expect("subscribe");
    ps.psubscribe("crate-*").expect("psubscribe");
    ps.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut con = common::conn(&srv);
    let n: i64 = redis::cmd("PUBLISH").arg("crate-chan").arg("hello").query(&mut con).expect("publish");
    assert_eq!(n, 2);
    let m1 = ps.get_message().expect("message");
    let m2 = ps.get_message().expect("message");
    assert_eq!((m1.get_channel_name(), m1.from_pattern()), ("crate-chan", false));
    assert_eq!(m1.get_payload::<String>().expect("payload"), "hello");
    assert_eq!((m2.get_channel_name(), m2.from_pattern()), ("crate-chan", true));
    assert_eq!(m2.get_pattern::<String>().expect("pattern"), "crate-*");
    ps.unsubscribe("crate-chan").expect("unsubscribe");
    ps.punsubscribe("crate-*").expect("punsubscribe");
}

/// A RESP3 subscriber that publishes to itself inside MULTI/EXEC gets its
/// messages (and keyspace events) inside the EXEC array, each before the
/// reply of the command that caused it: the bytes redis-server 7.0 sends.
#[test]
fn own_messages_inside_exec_come_inside_the_array() {
    use std::io::{Read, Write};
    let srv = common::server();
    let mut s = std::net::TcpStream::connect(srv.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let read_all = |s: &mut std::net::TcpStream| {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        out
    };
    s.write_all(b"HELLO 3\r\nCONFIG SET notify-keyspace-events KEA\r\nSUBSCRIBE ch\r\nPSUBSCRIBE __keyevent@0__:*\r\n")
        .unwrap();
    read_all(&mut s);
    s.write_all(b"MULTI\r\nPUBLISH ch one\r\nSET k v\r\nPUBLISH ch two\r\nPING\r\nEXEC\r\n").unwrap();
    let got = read_all(&mut s);
    let want = "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*4\r\n\
                >3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$3\r\none\r\n:1\r\n\
                >4\r\n$8\r\npmessage\r\n$16\r\n__keyevent@0__:*\r\n$18\r\n__keyevent@0__:set\r\n$1\r\nk\r\n+OK\r\n\
                >3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$3\r\ntwo\r\n:1\r\n+PONG\r\n";
    assert_eq!(String::from_utf8_lossy(&got), want);
}

const REENTRANT_LOCK: &str = include_str!("../../lua/reentrant_lock.lua");
const REENTRANT_UNLOCK: &str = include_str!("../../lua/reentrant_unlock.lua");

/// Every message `ps` receives until one arrives on channel `end`, as
/// (pattern, channel, payload) lines.
fn messages_until(ps: &mut redis::PubSub<'_>, end: &str) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let m = ps.get_message().expect("a message before the end marker");
        let pattern: String = if m.from_pattern() { m.get_pattern().expect("pattern") } else { String::new() };
        let line = format!("{pattern} {} {}", m.get_channel_name(), m.get_payload::<String>().expect("payload"));
        if m.get_channel_name() == end {
            return out;
        }
        out.push(line);
    }
}

/// A Redisson lock taken twice and released twice through its scripts,
/// with keyspace notifications on; then the end marker.
fn lock_round(con: &mut redis::Connection) {
    let _: () = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg("KEA").query(con).unwrap();
    for _ in 0..2 {
        let _: Option<i64> =
            redis::cmd("EVAL").arg(REENTRANT_LOCK).arg(1).arg("myLock").arg(30000).arg("uuid-1:1").query(con).unwrap();
    }
    for _ in 0..2 {
        let _: Option<i64> = redis::cmd("EVAL")
            .arg(REENTRANT_UNLOCK)
            .arg(2)
            .arg("myLock")
            .arg("redisson_lock__channel:{myLock}")
            .arg(0)
            .arg(30000)
            .arg("uuid-1:1")
            .query(con)
            .unwrap();
    }
    let _: i64 = redis::cmd("PUBLISH").arg("end").arg("x").query(con).unwrap();
}

/// Lock events go to the clients that asked for them — an exact SUBSCRIBE
/// of the channel, or a pattern naming the `__rlockd__` prefix — and to no
/// other pattern subscriber, while every count a Redis client can read
/// (PUBLISH's receivers, PUBSUB NUMPAT / CHANNELS / NUMSUB) stays Redis's.
#[test]
fn lock_events_reach_only_the_listeners_that_asked() {
    let srv = common::server();
    let mut cons: Vec<redis::Connection> = (0..4).map(|_| common::conn(&srv)).collect();
    let [star_con, keys_con, exact_con, named_con] = &mut cons[..] else { unreachable!() };
    let mut star = star_con.as_pubsub();
    star.psubscribe("*").unwrap();
    let mut keys = keys_con.as_pubsub();
    keys.psubscribe("__key*__:*").unwrap();
    keys.subscribe("end").unwrap();
    let mut exact = exact_con.as_pubsub();
    exact.subscribe(&["__rlockd__:lockevents", "end"]).unwrap();
    let mut named = named_con.as_pubsub();
    named.psubscribe("__rlockd__:*").unwrap();
    named.subscribe("end").unwrap();
    for ps in [&mut star, &mut keys, &mut exact, &mut named] {
        ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    }
    let mut con = common::conn(&srv);
    lock_round(&mut con);

    let (star, keys, exact, named) = (
        messages_until(&mut star, "end"),
        messages_until(&mut keys, "end"),
        messages_until(&mut exact, "end"),
        messages_until(&mut named, "end"),
    );
    assert!(!star.is_empty() && !keys.is_empty(), "keyspace events reach both patterns: {star:?} {keys:?}");
    for (who, got) in [("*", &star), ("__key*__:*", &keys)] {
        assert!(got.iter().all(|m| !m.contains("__rlockd__")), "{who} got a lock event: {got:?}");
    }
    // acquired, reentered, released (count 1), released.
    let events = |got: &[String]| got.iter().filter(|m| m.contains(" __rlockd__:lockevents {")).count();
    assert_eq!(events(&exact), 4, "{exact:?}");
    assert_eq!(events(&named), 4, "{named:?}");
    assert!(named.iter().all(|m| m.starts_with("__rlockd__:* ")), "{named:?}");

    // The counts are Redis's: a client's own PUBLISH on the channel reaches
    // every subscriber whose pattern matches it, `*` included.
    let n: i64 = redis::cmd("PUBLISH").arg("__rlockd__:lockevents").arg("hi").query(&mut con).unwrap();
    assert_eq!(n, 3);
    let numpat: i64 = redis::cmd("PUBSUB").arg("NUMPAT").query(&mut con).unwrap();
    assert_eq!(numpat, 3);
    let numsub: (String, i64) =
        redis::cmd("PUBSUB").arg("NUMSUB").arg("__rlockd__:lockevents").query(&mut con).unwrap();
    assert_eq!(numsub.1, 1);
    let mut channels: Vec<String> = redis::cmd("PUBSUB").arg("CHANNELS").query(&mut con).unwrap();
    channels.sort();
    assert_eq!(channels, ["__rlockd__:lockevents", "end"]);
}

/// A `PSUBSCRIBE *` listener sees, message for message, what it sees on
/// redis-server while a lock script takes and releases a lock.
#[test]
fn a_star_listener_sees_what_redis_sends_while_a_lock_script_runs() {
    let Some(oracle) = super::common::oracle::Oracle::start() else { return };
    let srv = common::server();
    let mut seen = Vec::new();
    for url in [srv.url(), format!("redis://127.0.0.1:{}", oracle.port)] {
        let client = redis::Client::open(url).unwrap();
        let mut sub_con = client.get_connection().unwrap();
        let mut ps = sub_con.as_pubsub();
        ps.psubscribe("*").unwrap();
        ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut con = client.get_connection().unwrap();
        lock_round(&mut con);
        seen.push(messages_until(&mut ps, "end"));
    }
    assert!(seen[1].len() > 4, "redis-server sent keyspace events: {:?}", seen[1]);
    assert_eq!(seen[0], seen[1], "rlockd (left) and redis-server (right)");
}
