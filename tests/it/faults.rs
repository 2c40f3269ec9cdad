//! Injected faults (`RLOCKD FAULT …` and the `Server` methods), each seen
//! from a real client: the `redis` crate, or a raw socket where the bytes on
//! the wire are the point. Durations here are lower bounds of injected
//! delays (a sleep never ends early), never performance thresholds.

use std::time::{Duration, Instant};

use rlockd::{Fault, FaultKind, FaultScope};

use crate::common::resp::{RawConn, Value};
use crate::common::{conn, server};

const REENTRANT_LOCK: &str = include_str!("../../lua/reentrant_lock.lua");

fn rlockd(c: &mut redis::Connection, args: &[&str]) -> redis::RedisResult<redis::Value> {
    let mut cmd = redis::cmd("RLOCKD");
    for a in args {
        cmd.arg(*a);
    }
    cmd.query(c)
}

fn fault_id(c: &mut redis::Connection, args: &[&str]) -> i64 {
    let mut a = vec!["FAULT"];
    a.extend_from_slice(args);
    match rlockd(c, &a).expect("FAULT accepted") {
        redis::Value::Int(id) => id,
        other => panic!("FAULT replied {other:?}"),
    }
}

#[test]
fn error_fault_answers_the_next_matching_commands_then_stops() {
    let srv = server();
    let mut c = conn(&srv);
    let id = fault_id(
        &mut c,
        &["ERROR", "LOADING Redis is loading the dataset in memory", "COMMAND", "set", "KEY", "lock:*", "TIMES", "2"],
    );
    assert!(id > 0);
    // Another key and another command are untouched.
    let _: () = redis::cmd("SET").arg("other").arg("1").query(&mut c).unwrap();
    let _: Option<String> = redis::cmd("GET").arg("lock:a").query(&mut c).unwrap();
    for _ in 0..2 {
        let err = redis::cmd("SET").arg("lock:a").arg("me").query::<()>(&mut c).unwrap_err();
        assert_eq!(err.code(), Some("LOADING"), "{err:?}");
        assert!(err.to_string().contains("Redis is loading the dataset in memory"), "{err}");
    }
    // The command never ran; after two hits the fault is gone.
    let v: Option<String> = redis::cmd("GET").arg("lock:a").query(&mut c).unwrap();
    assert_eq!(v, None);
    let _: () = redis::cmd("SET").arg("lock:a").arg("me").query(&mut c).unwrap();
    assert!(srv.faults().is_empty());
}

#[test]
fn error_fault_on_a_queued_command_aborts_the_transaction() {
    let srv = server();
    let mut c = RawConn::connect(srv.port());
    assert!(matches!(
        c.cmd(&[
            "RLOCKD",
            "FAULT",
            "ERROR",
            "READONLY You can't write against a read only replica.",
            "COMMAND",
            "incr"
        ]),
        Value::Int(_)
    ));
    assert_eq!(c.cmd(&["MULTI"]), Value::Simple(b"OK".to_vec()));
    assert!(matches!(c.cmd(&["INCR", "n"]), Value::Error(e) if e.starts_with(b"READONLY")));
    let Value::Error(e) = c.cmd(&["EXEC"]) else { panic!("EXEC should abort") };
    assert!(e.starts_with(b"EXECABORT"), "{}", String::from_utf8_lossy(&e));
    assert_eq!(c.cmd(&["EXISTS", "n"]), Value::Int(0));
}

#[test]
fn latency_fault_holds_replies_back_for_matching_clients_only() {
    let srv = server();
    let mut slow = conn(&srv);
    let mut fast = conn(&srv);
    let _: () = redis::cmd("CLIENT").arg("SETNAME").arg("worker-1").query(&mut slow).unwrap();
    let mut ctl = conn(&srv);
    fault_id(&mut ctl, &["LATENCY", "300", "JITTER", "20", "CLIENT", "worker-*"]);
    let t = Instant::now();
    let _: String = redis::cmd("PING").query(&mut slow).unwrap();
    assert!(t.elapsed() >= Duration::from_millis(300), "{:?}", t.elapsed());
    // Hits are counted per command.
    assert_eq!(srv.faults()[0].hits, 1);
    let _: String = redis::cmd("PING").query(&mut fast).unwrap();
    assert_eq!(srv.faults()[0].hits, 1, "another client is not slowed");
    assert_eq!(srv.clear_faults(None), 1);
}

#[test]
fn close_before_loses_the_command_close_after_loses_only_the_reply() {
    let srv = server();
    let mut ctl = conn(&srv);
    fault_id(&mut ctl, &["CLOSE", "BEFORE", "COMMAND", "eval", "TIMES", "1"]);
    let mut victim = conn(&srv);
    let r: redis::RedisResult<redis::Value> =
        redis::cmd("EVAL").arg(REENTRANT_LOCK).arg(1).arg("lockA").arg(30000).arg("uuid-1:1").query(&mut victim);
    assert!(r.is_err(), "connection should be closed: {r:?}");
    let exists: i64 = redis::cmd("EXISTS").arg("lockA").query(&mut ctl).unwrap();
    assert_eq!(exists, 0, "the command was lost before it ran");

    fault_id(&mut ctl, &["CLOSE", "AFTER", "COMMAND", "eval", "TIMES", "1"]);
    let mut victim = conn(&srv);
    let r: redis::RedisResult<redis::Value> =
        redis::cmd("EVAL").arg(REENTRANT_LOCK).arg(1).arg("lockA").arg(30000).arg("uuid-1:1").query(&mut victim);
    assert!(r.is_err(), "the reply never arrives: {r:?}");
    // The lock was taken all the same: the client does not know it holds it.
    let holder: Option<i64> = redis::cmd("HGET").arg("lockA").arg("uuid-1:1").query(&mut ctl).unwrap();
    assert_eq!(holder, Some(1));
}

#[test]
fn freeze_stops_matching_connections_while_the_clock_runs_on() {
    let srv = server();
    let mut frozen = RawConn::connect(srv.port());
    assert_eq!(frozen.cmd(&["CLIENT", "SETNAME", "partitioned"]), Value::Simple(b"OK".to_vec()));
    let mut other = RawConn::connect(srv.port());
    let mut ctl = RawConn::connect(srv.port());
    assert_eq!(ctl.cmd(&["SET", "lease", "x", "PX", "100"]), Value::Simple(b"OK".to_vec()));
    assert!(matches!(ctl.cmd(&["RLOCKD", "FAULT", "FREEZE", "400", "CLIENT", "partitioned"]), Value::Int(_)));
    let t = Instant::now();
    frozen.send(&[b"GET".to_vec(), b"lease".to_vec()]);
    // Others are served meanwhile.
    assert_eq!(other.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    // The frozen client hears nothing until the freeze ends; by then the
    // lease ran out on the server's clock.
    assert_eq!(frozen.read(), Some(Value::Bulk(None)));
    assert!(t.elapsed() >= Duration::from_millis(350), "{:?}", t.elapsed());
}

#[test]
fn slow_and_cut_writes_mid_reply() {
    let srv = server();
    let mut c = RawConn::connect(srv.port());
    let value = "v".repeat(100);
    assert_eq!(c.cmd(&["SET", "big", &value]), Value::Simple(b"OK".to_vec()));
    assert!(matches!(
        c.cmd(&["RLOCKD", "FAULT", "SLOWWRITE", "10", "20", "COMMAND", "get", "TIMES", "1"]),
        Value::Int(_)
    ));
    let t = Instant::now();
    // 107 bytes in pieces of 10, 20 ms apart: complete, and late.
    assert_eq!(c.cmd(&["GET", "big"]), Value::Bulk(Some(value.clone().into_bytes())));
    assert!(t.elapsed() >= Duration::from_millis(200), "{:?}", t.elapsed());

    assert!(matches!(c.cmd(&["RLOCKD", "FAULT", "CUTWRITE", "20", "COMMAND", "get"]), Value::Int(_)));
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", srv.port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    std::io::Write::write_all(&mut s, b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n").unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    // Twenty bytes of the reply, then the connection closes.
    assert_eq!(got, format!("$100\r\n{}", &value[..14]).into_bytes());
}

#[test]
fn dropped_and_delayed_unlock_messages() {
    let srv = server();
    let mut sub = RawConn::connect(srv.port());
    sub.send(&[b"SUBSCRIBE".to_vec(), b"redisson_lock__channel:{a}".to_vec()]);
    assert!(sub.read().is_some());
    let mut c = conn(&srv);
    fault_id(&mut c, &["DROPMSG", "CHANNEL", "redisson_lock__channel:*", "TIMES", "1"]);
    // PUBLISH still counts the receiver: the message is lost in transit.
    let n: i64 = redis::cmd("PUBLISH").arg("redisson_lock__channel:{a}").arg("lost").query(&mut c).unwrap();
    assert_eq!(n, 1);
    fault_id(&mut c, &["DELAYMSG", "250", "CHANNEL", "redisson_lock__channel:*"]);
    let t = Instant::now();
    let _: i64 = redis::cmd("PUBLISH").arg("redisson_lock__channel:{a}").arg("late").query(&mut c).unwrap();
    let msg = sub.read().expect("the delayed message");
    assert!(t.elapsed() >= Duration::from_millis(250), "{:?}", t.elapsed());
    // The first one never came.
    assert_eq!(msg.bulks()[2], b"late".to_vec());
    let list = rlockd(&mut c, &["FAULT", "LIST"]).unwrap();
    let redis::Value::Array(items) = list else { panic!("FAULT LIST: {list:?}") };
    assert_eq!(items.len(), 1, "the DROPMSG fault used its one time");
    let cleared: i64 = redis::cmd("RLOCKD").arg("FAULT").arg("CLEAR").query(&mut c).unwrap();
    assert_eq!(cleared, 1);
    let _: i64 = redis::cmd("PUBLISH").arg("redisson_lock__channel:{a}").arg("now").query(&mut c).unwrap();
    assert_eq!(sub.read().expect("message").bulks()[2], b"now".to_vec());
}

#[test]
fn kill_drops_matching_connections_now() {
    let srv = server();
    let mut a = conn(&srv);
    let _: () = redis::cmd("CLIENT").arg("SETNAME").arg("doomed").query(&mut a).unwrap();
    let mut b = conn(&srv);
    let mut ctl = conn(&srv);
    let n: i64 =
        rlockd(&mut ctl, &["FAULT", "KILL", "CLIENT", "doom*"]).and_then(|v| redis::from_redis_value(&v)).unwrap();
    assert_eq!(n, 1);
    assert!(redis::cmd("PING").query::<String>(&mut a).is_err(), "killed");
    let _: String = redis::cmd("PING").query(&mut b).unwrap();
    // The controlling connection is never its own victim.
    let n: i64 = rlockd(&mut ctl, &["FAULT", "KILL"]).and_then(|v| redis::from_redis_value(&v)).unwrap();
    assert_eq!(n, 1);
    let _: String = redis::cmd("PING").query(&mut ctl).unwrap();
    // (A closed connection is unregistered before its socket closes.)
    assert!(redis::cmd("PING").query::<String>(&mut b).is_err(), "killed");
    // The same through the Rust API (which has no connection of its own).
    let mut d = conn(&srv);
    let _: String = redis::cmd("PING").query(&mut d).unwrap();
    assert_eq!(srv.kill_clients(&FaultScope::default()), 2);
    assert!(redis::cmd("PING").query::<String>(&mut d).is_err(), "killed");
}

#[test]
fn rust_api_and_wire_share_one_store() {
    let srv = server();
    let id = srv.add_fault(
        Fault::new(FaultKind::Error("BUSY Redis is busy running a script.".into())).command("evalsha").times(1),
    );
    let mut c = conn(&srv);
    let list = rlockd(&mut c, &["FAULT", "LIST"]).unwrap();
    let text = format!("{list:?}");
    assert!(text.contains("evalsha") && text.contains("BUSY"), "{text}");
    let err = redis::cmd("EVALSHA").arg("0".repeat(40)).arg(0).query::<()>(&mut c).unwrap_err();
    assert_eq!(err.code(), Some("BUSY"));
    assert_eq!(srv.clear_faults(Some(id)), 0, "used up");
    // Errors of the namespace itself.
    let e = rlockd(&mut c, &["FAULT", "EXPLODE"]).unwrap_err();
    assert!(e.to_string().contains("unknown fault"), "{e}");
    let e = rlockd(&mut c, &["FAULT", "DROPMSG", "COMMAND", "get"]).unwrap_err();
    assert!(e.to_string().contains("CHANNEL"), "{e}");
    let e = rlockd(&mut c, &["FAULT", "LATENCY", "-5"]).unwrap_err();
    assert!(e.to_string().contains("out of range"), "{e}");
}

/// A fault scoped to a client name and counted with TIMES is spent on what
/// the client's code sends, not on its library's connection handshake
/// (HELLO with SETNAME, CLIENT SETINFO, SELECT, AUTH), as redis-py and
/// Lettuce send it; a COMMAND pattern can still aim at the handshake.
#[test]
fn times_is_not_spent_on_a_client_libraries_handshake() {
    let srv = server();
    let mut ctl = conn(&srv);
    // CLIENT SETINFO is answered from Redis 7.2 (under 7.0.15 it is an
    // unknown subcommand, as on redis-server 7.0.15).
    let _: () = redis::cmd("CONFIG").arg("SET").arg("redis-version").arg("7.2.4").query(&mut ctl).expect("7.2.4");
    fault_id(&mut ctl, &["ERROR", "ERR injected", "CLIENT", "worker", "TIMES", "1"]);
    let mut w = RawConn::connect(srv.port());
    assert!(matches!(w.cmd(&["HELLO", "3", "AUTH", "default", "any", "SETNAME", "worker"]), Value::Map(_)));
    assert_eq!(w.cmd(&["CLIENT", "SETINFO", "LIB-NAME", "redis-py"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(w.cmd(&["CLIENT", "SETINFO", "LIB-VER", "5.0.1"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(w.cmd(&["SELECT", "0"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(w.cmd(&["AUTH", "default", "any"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(w.cmd(&["CLIENT", "SETNAME", "worker"]), Value::Simple(b"OK".to_vec()));
    // The first command of the client's own is the one faulted, once.
    assert_eq!(w.cmd(&["GET", "k"]), Value::Error(b"ERR injected".to_vec()));
    assert_eq!(w.cmd(&["GET", "k"]), Value::Null);
    assert!(srv.faults().is_empty());
    // Named with COMMAND, the handshake is faulted like anything else.
    fault_id(&mut ctl, &["ERROR", "ERR no setinfo", "COMMAND", "client|setinfo", "CLIENT", "worker", "TIMES", "1"]);
    assert_eq!(w.cmd(&["CLIENT", "SETINFO", "LIB-NAME", "x"]), Value::Error(b"ERR no setinfo".to_vec()));
    assert_eq!(w.cmd(&["CLIENT", "SETINFO", "LIB-NAME", "x"]), Value::Simple(b"OK".to_vec()));
}
