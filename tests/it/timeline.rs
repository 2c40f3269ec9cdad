//! `RLOCKD TIMELINE` and `RLOCKD CLAIM` from real traffic over TCP, and
//! the HTML opened in headless Chromium: the checks read the DOM after the
//! page's script ran (lanes, holds, claims, the violation, the marks), not
//! only the text the server sent.
//!
//! Without `chromium` on PATH the browser checks are skipped visibly
//! (`common::skip`), and fail under `RLOCKD_REQUIRE_REDIS=1` (CI, where
//! `.ci/run` installs it).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use redis::{Connection, Script};
use rlockd::locks;

use crate::common::{self, binary::run_in};

/// Hang guard for one browser run; not a speed check.
const LIMIT: Duration = Duration::from_secs(120);

fn chromium() -> Option<&'static str> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("chromium").is_file()))
        .unwrap_or(false);
    if found {
        return Some("chromium");
    }
    if std::env::var("RLOCKD_REQUIRE_REDIS").is_ok_and(|v| v == "1") {
        panic!("chromium is required (RLOCKD_REQUIRE_REDIS=1) but not installed");
    }
    common::skip::skipped(
        "chromium is not installed, so no timeline was opened in a browser (apt-get install chromium; RLOCKD_REQUIRE_REDIS=1 makes this a failure)",
    );
    None
}

/// A fresh directory under the system's temporary one.
fn fresh_dir(what: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("rlockd-timeline-{}-{what}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir
}

/// The DOM of `html` after its scripts ran in headless Chromium, and the
/// wall time of the browser's run; None when the browser is missing.
fn dump_dom(html: &str) -> Option<(String, Duration)> {
    let browser = chromium()?;
    let dir = fresh_dir("browser");
    let file = dir.join("timeline.html");
    std::fs::write(&file, html).expect("write the timeline");
    let profile = dir.join("profile");
    let url = format!("file://{}", file.display());
    let profile_arg = format!("--user-data-dir={}", profile.display());
    let args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        &profile_arg,
        "--dump-dom",
        &url,
    ];
    let started = Instant::now();
    let r = run_in(None, browser, &args, LIMIT);
    let took = started.elapsed();
    assert_eq!(r.code, Some(0), "chromium failed:\n{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
    Some((r.stdout, took))
}

/// How many times `needle` occurs in `dom`.
fn count(dom: &str, needle: &str) -> usize {
    dom.matches(needle).count()
}

/// The value of attribute `name` on `<body>`.
fn body_attr<'a>(dom: &'a str, name: &str) -> Option<&'a str> {
    let body = &dom[dom.find("<body")?..];
    let body = &body[..body.find('>')?];
    let at = body.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(&body[at..at + body[at..].find('"')?])
}

fn rlockd(c: &mut Connection, args: &[&str]) -> redis::RedisResult<redis::Value> {
    let mut cmd = redis::cmd("RLOCKD");
    for a in args {
        cmd.arg(*a);
    }
    cmd.query(c)
}

fn text(c: &mut Connection, args: &[&str]) -> String {
    let mut cmd = redis::cmd("RLOCKD");
    for a in args {
        cmd.arg(*a);
    }
    cmd.query(c).expect("RLOCKD reply")
}

/// The clients here name their library with `CLIENT SETINFO`, which Redis
/// has from 7.2: their servers answer as 7.2.
fn config_7_2() -> rlockd::Config {
    rlockd::Config { params: vec![("redis-version".into(), "7.2.4".into())], ..Default::default() }
}

fn server_7_2() -> rlockd::Server {
    rlockd::Server::start_with(config_7_2()).expect("start rlockd")
}

fn named(srv: &rlockd::Server, name: &str, lib: &str) -> Connection {
    let mut c = common::conn(srv);
    let _: () = redis::cmd("CLIENT").arg("SETNAME").arg(name).query(&mut c).unwrap();
    let _: () = redis::cmd("CLIENT").arg("SETINFO").arg("LIB-NAME").arg(lib).query(&mut c).unwrap();
    c
}

/// The paused-holder story with Redisson's lock scripts: A takes the lock
/// (re-enters it, renews it) and claims its critical section; B contends;
/// A's connection is frozen and the clock moves past A's lease; B takes
/// the lock while A is still inside; A, resumed, leaves. CHECK reports the
/// claim overlapping B's grant and outliving A's lease, and the timeline
/// draws it.
#[test]
fn a_paused_holder_overlapping_a_claim_is_drawn_in_the_browser() {
    let srv = server_7_2();
    let mut admin = common::conn(&srv);
    let mut a = named(&srv, "worker-a", "redisson-it");
    let mut b = named(&srv, "worker-b", "redisson-it");
    let lock = Script::new(locks::REENTRANT_LOCK.source);
    let renew = Script::new(locks::REENTRANT_RENEW.source);
    let unlock = Script::new(locks::REENTRANT_UNLOCK.source);
    let (ha, hb) = ("aaaa-1111:1", "bbbb-2222:7");
    let acquire = |c: &mut Connection, holder: &str| -> Option<i64> {
        lock.key("orders").arg(30_000).arg(holder).invoke(c).unwrap()
    };
    let _ = text(&mut admin, &["CLOCK", "FREEZE"]);
    assert_eq!(acquire(&mut a, ha), None, "A acquires");
    let _ = text(&mut admin, &["CLOCK", "ADVANCE", "1000"]);
    assert_eq!(acquire(&mut a, ha), None, "A re-enters");
    let _ = text(&mut admin, &["CLOCK", "ADVANCE", "500"]);
    let renewed: i64 = renew.key("orders").arg(30_000).arg(ha).invoke(&mut a).unwrap();
    assert_eq!(renewed, 1);
    assert_eq!(text(&mut a, &["CLAIM", "ENTER", "orders", ha]), "OK");
    assert!(rlockd(&mut admin, &["FAULT", "LATENCY", "1", "CLIENT", "worker-b", "TIMES", "1"]).is_ok());
    assert!(acquire(&mut b, hb).is_some(), "B waits: the lock is held");
    // A pauses (its connection frozen) past its lease.
    assert!(matches!(
        rlockd(&mut admin, &["FAULT", "FREEZE", "600000", "CLIENT", "worker-a"]),
        Ok(redis::Value::Int(_))
    ));
    let _ = text(&mut admin, &["CLOCK", "ADVANCE", "31000"]);
    assert_eq!(acquire(&mut b, hb), None, "B acquires once A's lease ran out");
    let _ = text(&mut admin, &["CLOCK", "ADVANCE", "500"]);
    let _: Option<i64> =
        unlock.key("orders").key(locks::lock_channel("orders")).arg(0).arg(30_000).arg(hb).invoke(&mut b).unwrap();
    let _ = text(&mut admin, &["FAULT", "CLEAR"]);
    assert_eq!(text(&mut a, &["CLAIM", "LEAVE", "orders", ha]), "OK");

    let check: Vec<String> = redis::cmd("RLOCKD").arg("CHECK").query(&mut admin).unwrap();
    assert!(check.iter().any(|v| v.contains("overlaps a grant to bbbb-2222:7")), "{check:?}");
    assert!(check.iter().any(|v| v.contains("outlived its lease")), "{check:?}");
    assert_eq!(srv.check_locks(), check, "the Rust API reports the same");

    let json = text(&mut admin, &["TIMELINE", "KEY", "orders", "FORMAT", "json"]);
    assert!(json.contains("\"holder\":\"aaaa-1111:1\""), "{json}");
    assert!(json.contains("\"end\":\"expired\""), "{json}");
    assert!(json.contains("\"kind\":\"fault\""), "{json}");
    let t = srv.timeline(rlockd::TimelineRange { pattern: Some("orders".into()), ..Default::default() });
    assert_eq!(t.lanes.len(), 1);
    assert_eq!(t.lanes[0].holds.iter().map(|h| h.end).collect::<Vec<_>>(), ["expired", "released"]);
    assert_eq!(t.lanes[0].holds[0].depth.last().map(|d| d.1), Some(2), "re-entered");
    assert_eq!(t.lanes[0].holds[0].renewals.len(), 1);

    let html = text(&mut admin, &["TIMELINE"]);
    assert!(!html.contains("src=") && !html.contains("href="), "no external asset");
    let Some((dom, _)) = dump_dom(&html) else { return };
    assert_eq!(body_attr(&dom, "data-ready"), Some("1"), "the page's script ran");
    assert_eq!(body_attr(&dom, "data-lanes"), Some("1"));
    assert_eq!(body_attr(&dom, "data-holds"), Some("2"));
    assert!(dom.contains("class=\"lane\" data-lock=\"orders\""), "{dom}");
    assert!(dom.contains("data-holder=\"aaaa-1111:1\" data-client="), "{dom}");
    assert!(dom.contains("data-client-name=\"worker-a\" data-end=\"expired\""), "{dom}");
    assert!(dom.contains("data-client-name=\"worker-b\" data-end=\"released\""), "{dom}");
    assert!(dom.contains("library redisson-it"), "the client's library on hover");
    assert_eq!(count(&dom, "<rect class=\"claim\""), 1);
    assert_eq!(count(&dom, "class=\"depth\" data-depth=\"2\""), 1);
    assert_eq!(count(&dom, "class=\"renewal\""), 1);
    assert!(count(&dom, "<g class=\"violation\"") >= 2, "{dom}");
    assert!(dom.contains("overlaps a grant to bbbb-2222:7"));
    assert_eq!(count(&dom, "<g class=\"mark fault\""), 4, "the latency set and hit, the freeze and its clearing");
    assert!(dom.contains("hit: latency on evalsha (client "), "{dom}");
    assert!(count(&dom, "<g class=\"mark clock\"") >= 3);
}

/// The Rust API's claim: a guard that leaves when dropped; the same
/// checks as over TCP.
#[test]
fn the_rust_claim_guard_marks_a_section() {
    let srv = server_7_2();
    let mut c = common::conn(&srv);
    srv.clock().freeze(true);
    let ok: Option<String> =
        redis::cmd("SET").arg("job").arg("tok-a").arg("NX").arg("PX").arg(10_000).query(&mut c).unwrap();
    assert_eq!(ok.as_deref(), Some("OK"));
    {
        let _inside = srv.claim("job", "tok-a");
    }
    assert!(srv.check_locks().is_empty(), "{:?}", srv.check_locks());
    {
        let _inside = srv.claim("job", "tok-a");
        srv.advance_clock(11_000);
        let ok: Option<String> =
            redis::cmd("SET").arg("job").arg("tok-b").arg("NX").arg("PX").arg(10_000).query(&mut c).unwrap();
        assert_eq!(ok.as_deref(), Some("OK"));
    }
    let v = srv.check_locks();
    assert!(
        v.iter().any(|v| v.contains("tok-a's claimed critical section") && v.contains("outlived its lease")),
        "{v:?}"
    );
    let t = srv.timeline(Default::default());
    assert_eq!(t.lanes[0].claims.len(), 2);
    assert!(t.lanes[0].claims.iter().all(|c| c.leave_ms.is_some()));
}

/// A clean history draws no violation.
#[test]
fn two_clients_taking_turns_draw_no_violation() {
    let srv = server_7_2();
    let mut a = named(&srv, "a", "redis-py");
    let mut b = named(&srv, "b", "redis-py");
    for (i, token) in ["tok-a", "tok-b", "tok-a2"].into_iter().enumerate() {
        let c = if i == 1 { &mut b } else { &mut a };
        let ok: Option<String> =
            redis::cmd("SET").arg("job").arg(token).arg("NX").arg("PX").arg(10_000).query(c).unwrap();
        assert_eq!(ok.as_deref(), Some("OK"));
        assert_eq!(text(c, &["CLAIM", "ENTER", "job", token]), "OK");
        assert_eq!(text(c, &["CLAIM", "LEAVE", "job", token]), "OK");
        let _: i64 = redis::cmd("DEL").arg("job").query(c).unwrap();
    }
    let check: Vec<String> = redis::cmd("RLOCKD").arg("CHECK").query(&mut a).unwrap();
    assert!(check.is_empty(), "{check:?}");
    let html = text(&mut a, &["TIMELINE"]);
    let Some((dom, _)) = dump_dom(&html) else { return };
    assert_eq!(body_attr(&dom, "data-ready"), Some("1"));
    assert_eq!(body_attr(&dom, "data-holds"), Some("3"));
    assert_eq!(body_attr(&dom, "data-violations"), Some("0"));
    assert_eq!(count(&dom, "<rect class=\"claim\""), 3);
}

/// redis-py's lossy failover without Python: A's grant is never
/// replicated, the Sentinels promote the replica, B takes the same lock
/// there. The timeline on the new primary shows both holders (A's as a
/// grant the failover lost), the failover mark and the violation.
#[test]
fn a_lossy_sentinel_failover_shows_both_holders_and_the_failover() {
    let nodes = rlockd::Server::start_with_replicas(1, config_7_2()).expect("start");
    let ip = "127.0.0.1".parse().expect("ip");
    let sentinels =
        rlockd::Sentinel::start_group(ip, &[0, 0, 0], &[("mymaster", nodes[0].addr())], 2).expect("sentinels");
    let mut a = named(&nodes[0], "client-a", "redis-py");
    let _ = text(&mut a, &["REPL", "PAUSE"]);
    let ok: Option<String> =
        redis::cmd("SET").arg("order:42").arg("token-a").arg("NX").arg("PX").arg(30_000).query(&mut a).unwrap();
    assert_eq!(ok.as_deref(), Some("OK"));
    let mut s = redis::Client::open(format!("redis://127.0.0.1:{}", sentinels[0].port()))
        .expect("client")
        .get_connection()
        .expect("connect");
    let _: () = redis::cmd("SENTINEL").arg("FAILOVER").arg("mymaster").query(&mut s).unwrap();
    let (_, port): (String, u16) =
        redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg("mymaster").query(&mut s).unwrap();
    assert_eq!(port, nodes[1].port(), "the replica was promoted");
    let mut b = named(&nodes[1], "client-b", "redis-py");
    let ok: Option<String> =
        redis::cmd("SET").arg("order:42").arg("token-b").arg("NX").arg("PX").arg(30_000).query(&mut b).unwrap();
    assert_eq!(ok.as_deref(), Some("OK"), "the new primary never saw A's grant");
    let t = nodes[1].timeline(Default::default());
    assert_eq!(t.lanes.len(), 1);
    let holds: Vec<(&[u8], &str)> = t.lanes[0].holds.iter().map(|h| (&h.holder[..], h.end)).collect();
    assert_eq!(holds, [(&b"token-a"[..], "lost"), (b"token-b", "held")]);
    let html = text(&mut b, &["TIMELINE"]);
    let Some((dom, _)) = dump_dom(&html) else { return };
    assert_eq!(body_attr(&dom, "data-ready"), Some("1"));
    assert!(dom.contains("class=\"lane\" data-lock=\"order:42\""));
    assert!(dom.contains("data-holder=\"token-a\""), "{dom}");
    assert!(dom.contains("class=\"hold lost\""), "{dom}");
    assert!(dom.contains("data-holder=\"token-b\""), "{dom}");
    assert_eq!(count(&dom, "<g class=\"mark failover\""), 1, "{dom}");
    assert_eq!(body_attr(&dom, "data-violations"), Some("1"), "{dom}");
    assert!(dom.contains("on the new primary"), "the ledger's explanation");
}

/// 10,000 lock events (5,000 token locks taken and released over 100
/// keys) drawn and opened in the browser: every hold is in the DOM. The
/// document's size and the browser's times are printed (BENCHMARKS.md:
/// `cargo test --test it timeline_of_10000 -- --nocapture`); nothing here
/// checks a speed.
#[test]
fn a_timeline_of_10000_events_opens_in_the_browser() {
    let srv = server_7_2();
    let mut c = named(&srv, "bulk", "redis-rs");
    let mut pipe = redis::pipe();
    for i in 0..5_000 {
        let key = format!("bulk:{}", i % 100);
        pipe.cmd("SET").arg(&key).arg(format!("t{i}")).arg("NX").arg("PX").arg(60_000).ignore();
        pipe.cmd("DEL").arg(&key).ignore();
    }
    let _: () = pipe.query(&mut c).unwrap();
    let events: Vec<redis::Value> = redis::cmd("RLOCKD").arg("EVENTS").query(&mut c).unwrap();
    assert_eq!(events.len(), 10_000);
    let started = Instant::now();
    let html = text(&mut c, &["TIMELINE"]);
    let served = started.elapsed();
    let Some((dom, browser)) = dump_dom(&html) else { return };
    assert_eq!(body_attr(&dom, "data-ready"), Some("1"));
    assert_eq!(body_attr(&dom, "data-lanes"), Some("100"));
    assert_eq!(body_attr(&dom, "data-holds"), Some("5000"));
    eprintln!(
        "timeline of 10000 events: {} bytes, served in {} ms (debug build), first layout {} ms after navigation, chromium run {} ms",
        html.len(),
        served.as_millis(),
        body_attr(&dom, "data-layout-ms").unwrap_or("?"),
        browser.as_millis()
    );
}

/// A cluster slot moved under a held lock: the timeline of any node shows
/// the lock's lane and the slot move's mark; a user who may read only
/// other keys sees no lane.
#[test]
fn a_slot_move_under_a_held_lock_is_marked() {
    use crate::common::resp::{RawConn, Value};
    let cluster = rlockd::Server::start_cluster(3).expect("cluster");
    let ports: Vec<u16> = cluster.addrs().iter().map(|a| a.port()).collect();
    let mut n0 = RawConn::connect(ports[0]);
    // Slot 3300 ("b") is node 0's.
    assert_eq!(n0.cmd(&["SET", "b", "tok", "NX", "PX", "30000"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(n0.cmd(&["RLOCKD", "CLUSTER", "MOVESLOT", "3300", "1"]), Value::Int(1));
    let mut n2 = RawConn::connect(ports[2]);
    let Value::Bulk(Some(html)) = n2.cmd(&["RLOCKD", "TIMELINE"]) else { panic!("TIMELINE") };
    let html = String::from_utf8(html).expect("utf-8");
    let t = cluster.with_node(2, |s| s.timeline(Default::default())).expect("node 2");
    assert_eq!(t.lanes.iter().map(|l| &l.key[..]).collect::<Vec<_>>(), [&b"b"[..]]);
    assert!(t.marks.iter().any(|m| m.kind == "slot" && m.text.contains("slot 3300")), "{:?}", t.marks);
    assert_eq!(
        n2.cmd(&["ACL", "SETUSER", "other", "on", "nopass", "~other:*", "+@all"]),
        Value::Simple(b"OK".to_vec())
    );
    let mut other = RawConn::connect(ports[2]);
    assert_eq!(other.cmd(&["AUTH", "other", "x"]), Value::Simple(b"OK".to_vec()));
    let Value::Bulk(Some(json)) = other.cmd(&["RLOCKD", "TIMELINE", "FORMAT", "json"]) else { panic!("TIMELINE") };
    assert!(String::from_utf8_lossy(&json).contains("\"lanes\":[]"), "{}", String::from_utf8_lossy(&json));
    let Some((dom, _)) = dump_dom(&html) else { return };
    assert_eq!(body_attr(&dom, "data-ready"), Some("1"));
    assert!(dom.contains("class=\"lane\" data-lock=\"b\""), "{dom}");
    assert_eq!(count(&dom, "<g class=\"mark slot\""), 1, "{dom}");
}
