//! Lock protocols over TCP with the `redis` crate, using rlockd's own lock
//! scripts (`lua/`, embedded as `rlockd::locks`): Redisson's
//! reentrant, fair and read-write locks, semaphore and count-down latch,
//! redis-py's token lock and Redlock's release. Every scenario checks the
//! replies, the pub/sub notifications and the keyspace.

use std::collections::HashMap;
use std::thread;
use std::time::Duration;

use redis::{Commands, Connection, PubSub, Script};
use rlockd::locks::{self, LockScript};

use super::common;

fn script(s: LockScript) -> Script {
    Script::new(s.source)
}

/// Subscribes `con` to `channel` (the `PubSub` must live as long as the
/// subscription: dropping it unsubscribes).
fn subscribe<'a>(con: &'a mut Connection, channel: &str) -> PubSub<'a> {
    let mut ps = con.as_pubsub();
    ps.subscribe(channel).unwrap();
    ps
}

/// The next pub/sub message: (channel, payload).
fn next_message(ps: &mut PubSub<'_>) -> (String, String) {
    ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let m = ps.get_message().expect("a message");
    (m.get_channel_name().to_string(), m.get_payload().unwrap())
}

/// No message arrives within a short while.
fn no_message(ps: &mut PubSub<'_>) {
    ps.set_read_timeout(Some(Duration::from_millis(150))).unwrap();
    assert!(ps.get_message().is_err(), "unexpected message");
}

struct Reentrant {
    lock: Script,
    unlock: Script,
    renew: Script,
}

impl Reentrant {
    fn new() -> Self {
        Reentrant {
            lock: script(locks::REENTRANT_LOCK),
            unlock: script(locks::REENTRANT_UNLOCK),
            renew: script(locks::REENTRANT_RENEW),
        }
    }
    fn lock(&self, c: &mut Connection, name: &str, lease: u64, holder: &str) -> Option<i64> {
        self.lock.key(name).arg(lease).arg(holder).invoke(c).unwrap()
    }
    fn unlock(&self, c: &mut Connection, name: &str, lease: u64, holder: &str) -> Option<i64> {
        self.unlock.key(name).key(locks::lock_channel(name)).arg(0).arg(lease).arg(holder).invoke(c).unwrap()
    }
    fn renew(&self, c: &mut Connection, name: &str, lease: u64, holder: &str) -> i64 {
        self.renew.key(name).arg(lease).arg(holder).invoke(c).unwrap()
    }
}

#[test]
fn reentrant_lock_acquire_reenter_contend_release() {
    let srv = common::server();
    let mut a = common::conn(&srv);
    let mut b = common::conn(&srv);
    let mut sub_con = common::conn(&srv);
    let mut sub = subscribe(&mut sub_con, &locks::lock_channel("myLock"));
    let r = Reentrant::new();

    assert_eq!(r.lock(&mut a, "myLock", 30_000, "uuid-a:1"), None, "acquired");
    let h: HashMap<String, String> = a.hgetall("myLock").unwrap();
    assert_eq!(h, HashMap::from([("uuid-a:1".to_string(), "1".to_string())]));
    let pttl: i64 = a.pttl("myLock").unwrap();
    assert!((29_000..=30_000).contains(&pttl), "{pttl}");

    assert_eq!(r.lock(&mut a, "myLock", 30_000, "uuid-a:1"), None, "re-entered");
    let count: String = a.hget("myLock", "uuid-a:1").unwrap();
    assert_eq!(count, "2");

    let ttl = r.lock(&mut b, "myLock", 30_000, "uuid-b:1").expect("contended: a pttl");
    assert!((29_000..=30_000).contains(&ttl), "{ttl}");

    assert_eq!(r.unlock(&mut b, "myLock", 30_000, "uuid-b:1"), None, "not the owner");
    assert_eq!(r.unlock(&mut a, "myLock", 30_000, "uuid-a:1"), Some(0), "still held once");
    no_message(&mut sub);
    assert_eq!(r.unlock(&mut a, "myLock", 30_000, "uuid-a:1"), Some(1), "released");
    assert_eq!(next_message(&mut sub), (locks::lock_channel("myLock"), "0".to_string()));
    let exists: bool = a.exists("myLock").unwrap();
    assert!(!exists);
    assert_eq!(r.lock(&mut b, "myLock", 30_000, "uuid-b:1"), None, "free again");
}

#[test]
fn renewal_keeps_a_lock_alive_and_expiry_frees_it() {
    let srv = common::server();
    let mut a = common::conn(&srv);
    let mut b = common::conn(&srv);
    let r = Reentrant::new();
    assert_eq!(r.lock(&mut a, "lease", 300, "uuid-a:1"), None);
    for _ in 0..6 {
        thread::sleep(Duration::from_millis(100));
        assert_eq!(r.renew(&mut a, "lease", 300, "uuid-a:1"), 1);
    }
    assert!(r.lock(&mut b, "lease", 300, "uuid-b:1").is_some(), "still held after 600 ms thanks to renewals");
    assert_eq!(r.renew(&mut b, "lease", 300, "uuid-b:1"), 0, "only the owner renews");
    thread::sleep(Duration::from_millis(450));
    let exists: bool = a.exists("lease").unwrap();
    assert!(!exists, "lease expired");
    assert_eq!(r.renew(&mut a, "lease", 300, "uuid-a:1"), 0, "too late to renew");
    assert_eq!(r.lock(&mut b, "lease", 30_000, "uuid-b:1"), None, "free after expiry");
}

#[test]
fn force_unlock_notifies_waiters() {
    let srv = common::server();
    let mut a = common::conn(&srv);
    let mut sub_con = common::conn(&srv);
    let mut sub = subscribe(&mut sub_con, &locks::lock_channel("fl"));
    let r = Reentrant::new();
    let force = script(locks::FORCE_UNLOCK);
    let none: i64 = force.key("fl").key(locks::lock_channel("fl")).arg(0).invoke(&mut a).unwrap();
    assert_eq!(none, 0);
    r.lock(&mut a, "fl", 30_000, "uuid-a:1");
    r.lock(&mut a, "fl", 30_000, "uuid-a:1");
    let done: i64 = force.key("fl").key(locks::lock_channel("fl")).arg(0).invoke(&mut a).unwrap();
    assert_eq!(done, 1);
    assert_eq!(next_message(&mut sub).1, "0");
    let exists: bool = a.exists("fl").unwrap();
    assert!(!exists);
}

/// Many clients increment a counter non-atomically under the lock: no
/// update may be lost.
#[test]
fn reentrant_lock_gives_mutual_exclusion() {
    let srv = common::server();
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let url = srv.url();
            thread::spawn(move || {
                let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
                let r = Reentrant::new();
                let holder = format!("uuid-{t}:1");
                for _ in 0..40 {
                    while r.lock(&mut c, "mutex", 10_000, &holder).is_some() {
                        thread::sleep(Duration::from_millis(1));
                    }
                    let v: i64 = c.get::<_, Option<i64>>("counter").unwrap().unwrap_or(0);
                    let _: () = c.set("counter", v + 1).unwrap();
                    assert_eq!(r.unlock(&mut c, "mutex", 10_000, &holder), Some(1));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = common::conn(&srv);
    let total: i64 = c.get("counter").unwrap();
    assert_eq!(total, 240);
}

struct Fair {
    lock: Script,
    unlock: Script,
}

impl Fair {
    fn new() -> Self {
        Fair { lock: script(locks::FAIR_LOCK), unlock: script(locks::FAIR_UNLOCK) }
    }
    fn lock(&self, c: &mut Connection, name: &str, holder: &str, now: i64) -> Option<i64> {
        self.lock
            .key(name)
            .key(locks::fair_queue(name))
            .key(locks::fair_timeouts(name))
            .arg(100_000)
            .arg(holder)
            .arg(5_000)
            .arg(now)
            .invoke(c)
            .unwrap()
    }
    fn unlock(&self, c: &mut Connection, name: &str, holder: &str, now: i64) -> Option<i64> {
        self.unlock
            .key(name)
            .key(locks::fair_queue(name))
            .key(locks::fair_timeouts(name))
            .key(locks::lock_channel(name))
            .arg(0)
            .arg(100_000)
            .arg(holder)
            .arg(now)
            .invoke(c)
            .unwrap()
    }
}

fn queue(c: &mut Connection, name: &str) -> Vec<String> {
    c.lrange(locks::fair_queue(name), 0, -1).unwrap()
}

#[test]
fn fair_lock_hands_over_in_arrival_order() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let f = Fair::new();
    let now = 1_000_000;
    assert_eq!(f.lock(&mut c, "fair", "a:1", now), None);
    let tb = f.lock(&mut c, "fair", "b:1", now).expect("b waits");
    let tc = f.lock(&mut c, "fair", "c:1", now).expect("c waits");
    assert!((99_000..=100_000).contains(&tb), "{tb}");
    assert!(tc > tb + 4_000, "c waits behind b: {tb} {tc}");
    assert_eq!(queue(&mut c, "fair"), vec!["b:1", "c:1"]);
    // b retrying does not requeue it.
    f.lock(&mut c, "fair", "b:1", now).expect("b still waits");
    assert_eq!(queue(&mut c, "fair"), vec!["b:1", "c:1"]);

    let mut sub_b_con = common::conn(&srv);
    let mut sub_b = subscribe(&mut sub_b_con, &format!("{}:b:1", locks::lock_channel("fair")));
    assert_eq!(f.unlock(&mut c, "fair", "a:1", now), Some(1));
    assert_eq!(next_message(&mut sub_b).1, "0", "the head of the queue is told");
    // c cannot jump the queue while b is at its head.
    assert!(f.lock(&mut c, "fair", "c:1", now).is_some());
    assert_eq!(f.lock(&mut c, "fair", "b:1", now), None, "b takes it");
    assert_eq!(queue(&mut c, "fair"), vec!["c:1"]);
    let holders: HashMap<String, String> = c.hgetall("fair").unwrap();
    assert_eq!(holders, HashMap::from([("b:1".to_string(), "1".to_string())]));
    assert_eq!(f.unlock(&mut c, "fair", "b:1", now), Some(1));
    assert_eq!(f.lock(&mut c, "fair", "c:1", now), None, "then c");
    assert!(queue(&mut c, "fair").is_empty());
    let timeouts: Vec<String> = c.zrange(locks::fair_timeouts("fair"), 0, -1).unwrap();
    assert!(timeouts.is_empty());
}

#[test]
fn fair_lock_evicts_a_waiter_that_does_not_come_back() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let f = Fair::new();
    let now = 1_000_000;
    assert_eq!(f.lock(&mut c, "fl", "a:1", now), None);
    f.lock(&mut c, "fl", "b:1", now).expect("b queued");
    f.lock(&mut c, "fl", "c:1", now).expect("c queued");
    assert_eq!(f.unlock(&mut c, "fl", "a:1", now), Some(1));
    // b's retry deadline (about now + 105 s) passes; c's (110 s) has not.
    let later = now + 107_500;
    assert_eq!(f.lock(&mut c, "fl", "c:1", later), None, "c gets it, b was evicted");
    assert!(queue(&mut c, "fl").is_empty());
    let scores: Vec<(String, f64)> = c.zrange_withscores(locks::fair_timeouts("fl"), 0, -1).unwrap();
    assert!(scores.is_empty(), "{scores:?}");
    assert!(f.lock(&mut c, "fl", "b:1", later).is_some(), "b has to queue again");
    assert_eq!(queue(&mut c, "fl"), vec!["b:1"]);
}

struct RwLock {
    read: Script,
    read_unlock: Script,
    write: Script,
    write_unlock: Script,
}

impl RwLock {
    fn new() -> Self {
        RwLock {
            read: script(locks::READ_LOCK),
            read_unlock: script(locks::READ_UNLOCK),
            write: script(locks::WRITE_LOCK),
            write_unlock: script(locks::WRITE_UNLOCK),
        }
    }
    fn read(&self, c: &mut Connection, holder: &str) -> Option<i64> {
        self.read
            .key("rw")
            .key(locks::rwlock_timeout_prefix("rw", holder))
            .arg(30_000)
            .arg(holder)
            .arg(format!("{holder}:write"))
            .invoke(c)
            .unwrap()
    }
    fn read_unlock(&self, c: &mut Connection, holder: &str) -> Option<i64> {
        self.read_unlock
            .key("rw")
            .key(locks::rwlock_channel("rw"))
            .key(locks::rwlock_timeout_prefix("rw", holder))
            .key("{rw}")
            .arg(0)
            .arg(holder)
            .invoke(c)
            .unwrap()
    }
    fn write(&self, c: &mut Connection, holder: &str) -> Option<i64> {
        self.write.key("rw").arg(30_000).arg(format!("{holder}:write")).invoke(c).unwrap()
    }
    fn write_unlock(&self, c: &mut Connection, holder: &str) -> Option<i64> {
        self.write_unlock
            .key("rw")
            .key(locks::rwlock_channel("rw"))
            .arg(0)
            .arg(30_000)
            .arg(format!("{holder}:write"))
            .invoke(c)
            .unwrap()
    }
}

#[test]
fn read_write_lock_combinations() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let mut sub_con = common::conn(&srv);
    let mut sub = subscribe(&mut sub_con, &locks::rwlock_channel("rw"));
    let rw = RwLock::new();

    // Readers share.
    assert_eq!(rw.read(&mut c, "a:1"), None);
    assert_eq!(rw.read(&mut c, "b:1"), None);
    assert_eq!(rw.read(&mut c, "a:1"), None);
    let h: HashMap<String, String> = c.hgetall("rw").unwrap();
    assert_eq!(h.get("mode").map(String::as_str), Some("read"));
    assert_eq!(h.get("a:1").map(String::as_str), Some("2"));
    let t: i64 = c.pttl("{rw}:a:1:rwlock_timeout:2").unwrap();
    assert!(t > 29_000, "each read hold has its own timeout key");
    // A writer waits.
    assert!(rw.write(&mut c, "w:1").is_some());
    // Releasing reads: the lock survives until the last one.
    assert_eq!(rw.read_unlock(&mut c, "x:1"), None, "not a holder");
    assert_eq!(rw.read_unlock(&mut c, "a:1"), Some(0));
    assert_eq!(rw.read_unlock(&mut c, "a:1"), Some(0));
    no_message(&mut sub);
    assert_eq!(rw.read_unlock(&mut c, "b:1"), Some(1));
    assert_eq!(next_message(&mut sub).1, "0");
    let exists: bool = c.exists("rw").unwrap();
    assert!(!exists);

    // A writer excludes readers, re-enters, and may also read.
    assert_eq!(rw.write(&mut c, "w:1"), None);
    assert_eq!(rw.write(&mut c, "w:1"), None);
    assert!(rw.read(&mut c, "a:1").is_some(), "readers wait for the writer");
    assert_eq!(rw.read(&mut c, "w:1"), None, "the writer may read");
    assert_eq!(rw.write_unlock(&mut c, "a:1"), None, "not the writer");
    assert_eq!(rw.write_unlock(&mut c, "w:1"), Some(0));
    assert_eq!(rw.write_unlock(&mut c, "w:1"), Some(1));
    let mode: String = c.hget("rw", "mode").unwrap();
    assert_eq!(mode, "read", "the writer's read hold turns the lock into a read lock");
    assert_eq!(rw.read(&mut c, "a:1"), None, "readers get in now");
}

#[test]
fn semaphore_permits() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let acquire = script(locks::SEMAPHORE_ACQUIRE);
    let release = script(locks::SEMAPHORE_RELEASE);
    let set = script(locks::SEMAPHORE_SET_PERMITS);
    let chan = locks::semaphore_channel("sem");
    let mut sub_con = common::conn(&srv);
    let mut sub = subscribe(&mut sub_con, &chan);
    let take = |c: &mut Connection, n: i64| -> i64 { acquire.key("sem").arg(n).invoke(c).unwrap() };
    assert_eq!(take(&mut c, 1), 0, "no permits yet");
    let created: i64 = set.key("sem").key(&chan).arg(3).invoke(&mut c).unwrap();
    assert_eq!(created, 1);
    assert_eq!(next_message(&mut sub).1, "3");
    let again: i64 = set.key("sem").key(&chan).arg(9).invoke(&mut c).unwrap();
    assert_eq!(again, 0);
    assert_eq!(take(&mut c, 2), 1);
    assert_eq!(take(&mut c, 2), 0);
    let available: i64 = release.key("sem").key(&chan).arg(1).invoke(&mut c).unwrap();
    assert_eq!(available, 2);
    assert_eq!(next_message(&mut sub).1, "2");
    assert_eq!(take(&mut c, 2), 1);
    let left: i64 = c.get("sem").unwrap();
    assert_eq!(left, 0);
}

#[test]
fn count_down_latch() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let set = script(locks::LATCH_SET_COUNT);
    let down = script(locks::LATCH_COUNT_DOWN);
    let chan = locks::latch_channel("latch");
    let mut sub_con = common::conn(&srv);
    let mut sub = subscribe(&mut sub_con, &chan);
    let created: i64 = set.key("latch").key(&chan).arg(1).arg(2).invoke(&mut c).unwrap();
    assert_eq!(created, 1);
    assert_eq!(next_message(&mut sub).1, "1");
    let created: i64 = set.key("latch").key(&chan).arg(1).arg(5).invoke(&mut c).unwrap();
    assert_eq!(created, 0, "only once");
    let n: i64 = down.key("latch").key(&chan).arg(0).invoke(&mut c).unwrap();
    assert_eq!(n, 1);
    no_message(&mut sub);
    let n: i64 = down.key("latch").key(&chan).arg(0).invoke(&mut c).unwrap();
    assert_eq!(n, 0);
    assert_eq!(next_message(&mut sub).1, "0", "waiters are released at zero");
    let exists: bool = c.exists("latch").unwrap();
    assert!(!exists);
}

#[test]
fn token_lock_release_extend_reacquire() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let release = script(locks::TOKEN_RELEASE);
    let extend = script(locks::TOKEN_EXTEND);
    let reacquire = script(locks::TOKEN_REACQUIRE);
    let got: Option<String> =
        redis::cmd("SET").arg("tok").arg("t1").arg("NX").arg("PX").arg(10_000).query(&mut c).unwrap();
    assert_eq!(got.as_deref(), Some("OK"));
    let r: i64 = release.key("tok").arg("t2").invoke(&mut c).unwrap();
    assert_eq!(r, 0, "a foreign token cannot release");
    let r: i64 = extend.key("tok").arg("t1").arg(5_000).arg("0").invoke(&mut c).unwrap();
    assert_eq!(r, 1);
    let pttl: i64 = c.pttl("tok").unwrap();
    assert!((14_000..=15_000).contains(&pttl), "added: {pttl}");
    let r: i64 = extend.key("tok").arg("t1").arg(3_000).arg("1").invoke(&mut c).unwrap();
    assert_eq!(r, 1);
    let pttl: i64 = c.pttl("tok").unwrap();
    assert!((2_000..=3_000).contains(&pttl), "replaced: {pttl}");
    let r: i64 = reacquire.key("tok").arg("t1").arg(20_000).invoke(&mut c).unwrap();
    assert_eq!(r, 1);
    let pttl: i64 = c.pttl("tok").unwrap();
    assert!((19_000..=20_000).contains(&pttl), "{pttl}");
    let r: i64 = reacquire.key("tok").arg("t2").arg(20_000).invoke(&mut c).unwrap();
    assert_eq!(r, 0);
    let r: i64 = release.key("tok").arg("t1").invoke(&mut c).unwrap();
    assert_eq!(r, 1);
    let exists: bool = c.exists("tok").unwrap();
    assert!(!exists);
}

#[test]
fn redlock_release_only_with_the_right_token() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let release = script(locks::REDLOCK_RELEASE);
    let _: () = redis::cmd("SET").arg("rl").arg("tok-a").arg("NX").arg("PX").arg(30_000).query(&mut c).unwrap();
    let r: i64 = release.key("rl").arg("tok-b").invoke(&mut c).unwrap();
    assert_eq!(r, 0);
    let r: i64 = release.key("rl").arg("tok-a").invoke(&mut c).unwrap();
    assert_eq!(r, 1);
    let r: i64 = release.key("rl").arg("tok-a").invoke(&mut c).unwrap();
    assert_eq!(r, 0);
}

/// The scripts Redisson itself sends (from the seeds' protocol: same keys,
/// fields and channel), typed inline, interoperate with ours.
#[test]
fn redisson_style_inline_scripts_interoperate() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let redisson_lock = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hincrby', KEYS[1], ARGV[2], 1); \
        redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
        redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; \
        return redis.call('pttl', KEYS[1]);";
    let theirs: Option<i64> =
        redis::cmd("EVAL").arg(redisson_lock).arg(1).arg("mix").arg(30_000).arg("u:1").query(&mut c).unwrap();
    assert_eq!(theirs, None);
    let r = Reentrant::new();
    assert_eq!(r.lock(&mut c, "mix", 30_000, "u:1"), None, "our script re-enters their lock");
    assert_eq!(r.unlock(&mut c, "mix", 30_000, "u:1"), Some(0));
    assert_eq!(r.unlock(&mut c, "mix", 30_000, "u:1"), Some(1));
}

/// `tests/diff/locks.redis` runs these very scripts inline on both servers;
/// it must embed the current `lua/` sources (escaped for the case-file
/// syntax: `\\`, `\"`, `\n`).
#[test]
fn differential_cases_embed_the_current_scripts() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/diff/locks.redis");
    let text = std::fs::read_to_string(path).unwrap();
    for s in locks::ALL {
        let escaped = s.source.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n").replace('\t', "\\t");
        assert!(text.contains(&format!("\"{escaped}\"")), "{}.lua changed: update its copy in {path}", s.name);
    }
}

/// A list-based handoff: a waiter blocked in BLPOP is served by a script
/// that releases the lock and pushes the token in one step.
#[test]
fn a_script_push_serves_a_blocked_waiter() {
    let srv = common::server();
    let mut holder = common::conn(&srv);
    let url = srv.url();
    let waiter = thread::spawn(move || {
        let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
        let got: (String, String) = redis::cmd("BLPOP").arg("handoff").arg(10).query(&mut c).unwrap();
        got
    });
    thread::sleep(Duration::from_millis(100));
    let _: () = holder.set("guard", "holder").unwrap();
    let release = Script::new(
        "if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) \
         return redis.call('rpush', KEYS[2], 'token') end return 0",
    );
    let n: i64 = release.key("guard").key("handoff").arg("holder").invoke(&mut holder).unwrap();
    assert_eq!(n, 1);
    assert_eq!(waiter.join().unwrap(), ("handoff".to_string(), "token".to_string()));
    let len: i64 = holder.llen("handoff").unwrap();
    assert_eq!(len, 0);
}
