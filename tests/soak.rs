//! Soak and faults: many threads run thousands of short client lives
//! against one in-process server — connect, take and release the Redisson
//! reentrant lock, acknowledged writes, and clients that vanish mid-frame,
//! mid-script, while blocked, while subscribed and inside MULTI. At the end
//! nothing is lost or leaked: every acknowledged write is still there, the
//! server's client, blocked-client and channel counts are back to nothing,
//! the process holds no more sockets than before, and its RSS is back near
//! the baseline measured after a warm-up.
//!
//! A separate test binary, so the RSS and descriptor counts are this test's
//! alone. `RLOCKD_SOAK_SECS` sets the duration (default 30 s, as in CI; run
//! it for minutes with e.g. `RLOCKD_SOAK_SECS=600 cargo test --release --test soak -- --nocapture`)
//! and `RLOCKD_SOAK_THREADS` the client threads (default 8).

#[path = "it/common/resp.rs"]
#[allow(dead_code)]
mod resp;

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use resp::{RawConn, Value};
use rlockd::locks;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count()
}

fn cmd(c: &mut RawConn, args: &[&str]) -> Value {
    c.cmd(args)
}

fn info_field(c: &mut RawConn, section: &str, field: &str) -> i64 {
    let Value::Bulk(Some(text)) = cmd(c, &["INFO", section]) else { panic!("INFO {section}") };
    let text = String::from_utf8(text).expect("utf8");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
}

/// A tiny deterministic generator per thread (xorshift).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[derive(Default)]
struct Counts {
    cycles: AtomicU64,
    locks: AtomicU64,
    acked: AtomicU64,
    vanished: AtomicU64,
}

/// What one thread wrote and was told was written.
struct Acked {
    phase: u64,
    keys: Vec<(String, String)>,
    counter_key: String,
    increments: i64,
}

fn raw_send(port: u16, bytes: &[u8]) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let _ = s.write_all(bytes);
    // Dropped here: the client vanishes.
}

fn encode(args: &[&str]) -> Vec<u8> {
    resp::encode(&args.iter().map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>())
}

fn client_life(port: u16, t: usize, n: u64, rng: &mut Rng, acked: &mut Acked, counts: &Counts) {
    match rng.below(10) {
        // Take and release the reentrant lock (twice, re-entering), as Redisson does.
        0..=2 => {
            let mut c = RawConn::connect(port);
            let lock = format!("lock:{}", rng.below(16));
            let holder = format!("soak-{t}:{n}");
            let got = cmd(&mut c, &["EVAL", locks::REENTRANT_LOCK.source, "1", &lock, "30000", &holder]);
            if got == Value::Bulk(None) {
                let again = cmd(&mut c, &["EVAL", locks::REENTRANT_LOCK.source, "1", &lock, "30000", &holder]);
                assert_eq!(again, Value::Bulk(None), "re-entering a held lock");
                let chan = locks::lock_channel(&lock);
                for expect in [Value::Int(0), Value::Int(1)] {
                    let r = cmd(
                        &mut c,
                        &["EVAL", locks::REENTRANT_UNLOCK.source, "2", &lock, &chan, "0", "30000", &holder],
                    );
                    assert_eq!(r, expect, "unlock of {lock}");
                }
                counts.locks.fetch_add(1, Ordering::Relaxed);
            } else {
                assert!(matches!(got, Value::Int(ttl) if ttl > 0), "lock held elsewhere answers its TTL: {got:?}");
            }
        }
        // Acknowledged writes: a SET and a scripted HINCRBY, pipelined.
        3 | 4 => {
            let mut c = RawConn::connect(port);
            let key = format!("ack:{}:{t}:{n}", acked.phase);
            let val = format!("v{}", rng.below(1 << 40));
            c.send_raw(&[encode(&["SET", &key, &val]), encode(&["PING"])].concat());
            assert_eq!(c.read(), Some(Value::Simple(b"OK".to_vec())));
            assert_eq!(c.read(), Some(Value::Simple(b"PONG".to_vec())));
            acked.keys.push((key, val));
            let script = "return redis.call('hincrby', KEYS[1], 'n', 1)";
            let r = cmd(&mut c, &["EVAL", script, "1", &acked.counter_key]);
            assert!(matches!(r, Value::Int(_)), "HINCRBY: {r:?}");
            acked.increments += 1;
            counts.acked.fetch_add(2, Ordering::Relaxed);
        }
        // Vanish mid-frame: half a command, then gone.
        5 => {
            let whole = encode(&["SET", &format!("never:{t}:{n}"), "0123456789"]);
            let cut = 1 + rng.below(whole.len() as u64 - 1) as usize;
            raw_send(port, &whole[..cut]);
            counts.vanished.fetch_add(1, Ordering::Relaxed);
        }
        // Vanish mid-script: a script that runs a while, its caller gone before the reply.
        6 => {
            let script = "local x = 0 for i = 1, 200000 do x = x + i end redis.call('set', KEYS[1], x) return x";
            raw_send(port, &encode(&["EVAL", script, "1", &format!("script:{t}")]));
            counts.vanished.fetch_add(1, Ordering::Relaxed);
        }
        // Vanish while subscribed (a channel, a pattern), with publishers around.
        7 => {
            let mut c = RawConn::connect(port);
            let chan = format!("chan:{}", rng.below(4));
            c.send_raw(&[encode(&["SUBSCRIBE", &chan]), encode(&["PSUBSCRIBE", "chan:*"])].concat());
            c.read();
            c.read();
            let mut p = RawConn::connect(port);
            assert!(matches!(cmd(&mut p, &["PUBLISH", &chan, "hello"]), Value::Int(n) if n >= 1));
            counts.vanished.fetch_add(1, Ordering::Relaxed);
        }
        // Vanish while blocked, or inside MULTI with commands queued.
        8 => {
            let mut c = RawConn::connect(port);
            c.send_raw(&encode(&["BLPOP", &format!("queue:{t}"), "0"]));
            assert_eq!(cmd(&mut RawConn::connect(port), &["PING"]), Value::Simple(b"PONG".to_vec()));
            counts.vanished.fetch_add(1, Ordering::Relaxed);
        }
        _ => {
            let mut c = RawConn::connect(port);
            assert_eq!(cmd(&mut c, &["MULTI"]), Value::Simple(b"OK".to_vec()));
            assert_eq!(cmd(&mut c, &["SET", &format!("never:{t}:{n}"), "x"]), Value::Simple(b"QUEUED".to_vec()));
            counts.vanished.fetch_add(1, Ordering::Relaxed);
        }
    }
    counts.cycles.fetch_add(1, Ordering::Relaxed);
}

/// Polls `f` until it is true; the deadline only guards against a hang.
fn eventually(what: &str, mut f: impl FnMut() -> Option<String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match f() {
            None => return,
            Some(why) if Instant::now() > deadline => panic!("{what}: {why}"),
            Some(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn run_phase(port: u16, threads: usize, secs: u64, seed: u64, counts: &Arc<Counts>) -> Vec<Acked> {
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (stop, counts) = (stop.clone(), counts.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (t as u64 + 1));
                let mut acked =
                    Acked { phase: seed, keys: Vec::new(), counter_key: format!("counter:{seed}:{t}"), increments: 0 };
                let mut n = 0u64;
                // Bounded by count as well as by time.
                while !stop.load(Ordering::Relaxed) && n < 1_000_000 {
                    client_life(port, t, n, &mut rng, &mut acked, &counts);
                    n += 1;
                }
                acked
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    handles.into_iter().map(|h| h.join().expect("soak thread")).collect()
}

fn settled(port: u16) -> Option<String> {
    let mut c = RawConn::connect(port);
    let clients = info_field(&mut c, "clients", "connected_clients");
    let blocked = info_field(&mut c, "clients", "blocked_clients");
    let channels = info_field(&mut c, "stats", "pubsub_channels");
    let patterns = info_field(&mut c, "stats", "pubsub_patterns");
    let (Value::Bulk(Some(list)), Value::Int(numpat)) =
        (cmd(&mut c, &["CLIENT", "LIST"]), cmd(&mut c, &["PUBSUB", "NUMPAT"]))
    else {
        return Some("CLIENT LIST / PUBSUB NUMPAT".into());
    };
    let listed = list.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
    let state = (clients, listed, blocked, channels, patterns, numpat);
    (state != (1, 1, 0, 0, 0, 0)).then(|| {
        format!("clients={clients} listed={listed} blocked={blocked} channels={channels} patterns={patterns}/{numpat}")
    })
}

fn verify(port: u16, acked: &[Acked]) -> usize {
    let mut c = RawConn::connect(port);
    let mut checked = 0;
    for a in acked {
        for chunk in a.keys.chunks(500) {
            let mut args = vec!["MGET"];
            args.extend(chunk.iter().map(|(k, _)| k.as_str()));
            let Value::Agg(_, Some(got)) = cmd(&mut c, &args) else { panic!("MGET") };
            for ((k, v), g) in chunk.iter().zip(got) {
                assert_eq!(g, Value::Bulk(Some(v.clone().into_bytes())), "acknowledged write {k} lost");
                checked += 1;
            }
        }
        let n = cmd(&mut c, &["HGET", &a.counter_key, "n"]).as_int().unwrap_or(0);
        assert_eq!(n, a.increments, "acknowledged increments of {}", a.counter_key);
    }
    checked
}

#[test]
fn soak_connect_lock_unlock_and_vanish() {
    let secs = env("RLOCKD_SOAK_SECS", 30);
    let threads = env("RLOCKD_SOAK_THREADS", 8) as usize;
    let srv = rlockd::Server::start().expect("start rlockd");
    let port = srv.port();
    let counts = Arc::new(Counts::default());

    // Warm-up: the allocator's arenas, the script cache and the runtime's
    // threads reach their working size; the baseline is taken after it.
    let warm_secs = (secs / 6).max(2);
    let warm = run_phase(port, threads, warm_secs, 1, &counts);
    eventually("clients left after the warm-up", || settled(port));
    let (rss0, fds0) = (rss_kib(), open_fds());

    let main = run_phase(port, threads, secs, 2, &counts);
    let mid_rss = rss_kib();
    eventually("clients left after the soak", || settled(port));
    let checked = verify(port, &warm) + verify(port, &main);
    let (rss1, fds1) = (rss_kib(), open_fds());
    eprintln!(
        "soak: {secs} s + {warm_secs} s warm-up, {threads} threads: {} client lives ({} lock/unlock, {} acknowledged writes, {} vanished); \
         {checked} acknowledged keys verified; RSS {rss0} KiB after warm-up, {mid_rss} KiB at the end of the load, {rss1} KiB settled; fds {fds0} -> {fds1}",
        counts.cycles.load(Ordering::Relaxed),
        counts.locks.load(Ordering::Relaxed),
        counts.acked.load(Ordering::Relaxed),
        counts.vanished.load(Ordering::Relaxed),
    );
    assert!(counts.vanished.load(Ordering::Relaxed) > 0 && counts.locks.load(Ordering::Relaxed) > 0);
    assert!(fds1 <= fds0 + 2, "sockets leaked: {fds0} descriptors after the warm-up, {fds1} at the end");
    // The acknowledged keys themselves stay (tens of bytes each): allow for
    // them plus allocator slack; a leak per client life grows past this.
    let keys_kib = (checked as u64 * 200) / 1024;
    assert!(
        rss1 <= rss0 + rss0 / 2 + keys_kib + 16 * 1024,
        "RSS grew from {rss0} KiB to {rss1} KiB ({checked} keys kept)"
    );
    let mut c = RawConn::connect(port);
    assert_eq!(cmd(&mut c, &["PING"]), Value::Simple(b"PONG".to_vec()));
}
