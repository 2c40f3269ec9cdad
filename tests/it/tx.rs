//! tx integration tests: MULTI/EXEC/WATCH over TCP with the redis crate and
//! raw RESP.

use std::time::Duration;

use super::common::resp::{RawConn, Value};
use super::common::{self};

fn ok() -> Value {
    Value::Simple(b"OK".to_vec())
}

fn queued() -> Value {
    Value::Simple(b"QUEUED".to_vec())
}

fn bulk(s: &str) -> Value {
    Value::Bulk(Some(s.as_bytes().to_vec()))
}

/// WATCH k, then `touch` runs (on other connections), then MULTI/SET/EXEC:
/// returns EXEC's reply.
fn watch_then(port: u16, setup: &[&[&str]], touch: impl FnOnce(&mut RawConn)) -> Value {
    let mut c = RawConn::connect(port);
    for cmd in setup {
        c.cmd(cmd);
    }
    assert_eq!(c.cmd(&["WATCH", "k"]), ok());
    let mut other = RawConn::connect(port);
    touch(&mut other);
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["SET", "k", "from-tx"]), queued());
    c.cmd(&["EXEC"])
}

#[test]
fn watch_aborted_by_another_clients_write() {
    let srv = common::server();
    let r = watch_then(srv.port(), &[&["SET", "k", "1"]], |o| {
        assert_eq!(o.cmd(&["INCR", "k"]), Value::Int(2));
    });
    assert_eq!(r, Value::Agg(b'*', None));
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["GET", "k"]), bulk("2"));
    // A write to the same value still counts; a read does not.
    let r = watch_then(srv.port(), &[], |o| {
        o.cmd(&["SET", "k", "2"]);
    });
    assert_eq!(r, Value::Agg(b'*', None));
    let r = watch_then(srv.port(), &[], |o| {
        o.cmd(&["GET", "k"]);
        o.cmd(&["EXISTS", "k"]);
        o.cmd(&["SET", "unrelated", "x"]);
    });
    assert_eq!(r, Value::Agg(b'*', Some(vec![ok()])));
}

#[test]
fn watch_aborted_by_expiry() {
    let srv = common::debug_server();
    let port = srv.port();
    // Lazily: nobody deletes it, EXEC notices the deadline passed.
    let mut admin = RawConn::connect(port);
    admin.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let r = watch_then(port, &[&["SET", "k", "v", "PX", "50"]], |_| std::thread::sleep(Duration::from_millis(120)));
    assert_eq!(r, Value::Agg(b'*', None));
    // Deleted by another client's access in between.
    let r = watch_then(port, &[&["SET", "k", "v", "PX", "50"]], |o| {
        std::thread::sleep(Duration::from_millis(120));
        assert_eq!(o.cmd(&["GET", "k"]), Value::Bulk(None));
    });
    assert_eq!(r, Value::Agg(b'*', None));
    // Deleted by active expiry.
    admin.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    let r = watch_then(port, &[&["SET", "k", "v", "PX", "50"]], |o| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while o.cmd(&["DBSIZE"]) != Value::Int(0) {
            assert!(std::time::Instant::now() < deadline, "active expiry never ran");
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    assert_eq!(r, Value::Agg(b'*', None));
    // Already expired when watched: its deletion is no change.
    admin.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let mut c = RawConn::connect(port);
    c.cmd(&["SET", "k", "v", "PX", "10"]);
    std::thread::sleep(Duration::from_millis(40));
    let r = watch_then(port, &[], |o| {
        assert_eq!(o.cmd(&["GET", "k"]), Value::Bulk(None));
    });
    assert_eq!(r, Value::Agg(b'*', Some(vec![ok()])));
}

#[test]
fn flush_and_swapdb_abort_watchers() {
    let srv = common::server();
    let port = srv.port();
    let r = watch_then(port, &[&["SET", "k", "v"]], |o| {
        o.cmd(&["FLUSHALL"]);
    });
    assert_eq!(r, Value::Agg(b'*', None));
    // Flushing a db where the watched key does not exist is no change.
    let r = watch_then(port, &[&["SET", "k", "v"]], |o| {
        o.cmd(&["SELECT", "3"]);
        o.cmd(&["FLUSHDB"]);
    });
    assert_eq!(r, Value::Agg(b'*', Some(vec![ok()])));
    // SWAPDB that makes the watched key appear.
    let r = watch_then(port, &[&["FLUSHALL"]], |o| {
        o.cmd(&["SELECT", "1"]);
        o.cmd(&["SET", "k", "in-db1"]);
        o.cmd(&["SWAPDB", "0", "1"]);
    });
    assert_eq!(r, Value::Agg(b'*', None));
}

#[test]
fn execabort_and_errors_inside_exec() {
    let srv = common::server();
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["SET", "a", "1"]), queued());
    assert!(matches!(c.cmd(&["SET", "a"]), Value::Error(_)));
    assert!(matches!(c.cmd(&["NOSUCHCOMMAND"]), Value::Error(_)));
    assert_eq!(c.cmd(&["EXEC"]), Value::Error(b"EXECABORT Transaction discarded because of previous errors.".to_vec()));
    assert_eq!(c.cmd(&["GET", "a"]), Value::Bulk(None));

    c.cmd(&["SET", "s", "text"]);
    assert_eq!(c.cmd(&["MULTI"]), ok());
    for cmd in [&["INCR", "s"][..], &["SET", "b", "2"], &["INCRBY", "b", "x"], &["INCR", "b"]] {
        assert_eq!(c.cmd(cmd), queued());
    }
    assert_eq!(
        c.cmd(&["EXEC"]),
        Value::Agg(
            b'*',
            Some(vec![
                Value::Error(b"ERR value is not an integer or out of range".to_vec()),
                ok(),
                Value::Error(b"ERR value is not an integer or out of range".to_vec()),
                Value::Int(3),
            ])
        )
    );
    assert_eq!(c.cmd(&["EXEC"]), Value::Error(b"ERR EXEC without MULTI".to_vec()));
    assert_eq!(c.cmd(&["DISCARD"]), Value::Error(b"ERR DISCARD without MULTI".to_vec()));
    c.cmd(&["MULTI"]);
    assert_eq!(c.cmd(&["MULTI"]), Value::Error(b"ERR MULTI calls can not be nested".to_vec()));
    assert_eq!(c.cmd(&["WATCH", "x"]), Value::Error(b"ERR WATCH inside MULTI is not allowed".to_vec()));
    assert_eq!(c.cmd(&["EXEC"]), Value::Agg(b'*', Some(vec![])));
}

#[test]
fn client_list_shows_multi_flag() {
    let srv = common::server();
    let mut c = RawConn::connect(srv.port());
    let flags = |c: &mut RawConn| match c.cmd(&["CLIENT", "INFO"]) {
        Value::Bulk(Some(b)) => {
            let s = String::from_utf8(b).expect("utf8");
            s.split(' ').find_map(|f| f.strip_prefix("flags=").map(str::to_string)).expect("flags")
        }
        other => panic!("CLIENT INFO: {other:?}"),
    };
    assert_eq!(flags(&mut c), "N");
    c.cmd(&["MULTI"]);
    let mut other = RawConn::connect(srv.port());
    let Value::Bulk(Some(list)) = other.cmd(&["CLIENT", "LIST"]) else { panic!("client list") };
    let list = String::from_utf8(list).expect("utf8");
    assert_eq!(list.lines().filter(|l| l.contains(" flags=x ")).count(), 1, "{list}");
    c.cmd(&["DISCARD"]);
    assert_eq!(flags(&mut c), "N");
}

/// Optimistic locking with the redis crate's `transaction` helper: 8
/// threads increment one counter through WATCH/MULTI/EXEC; every EXEC that
/// succeeds saw an unchanged value, so no increment is lost.
#[test]
fn concurrent_watch_increments_lose_nothing() {
    const THREADS: usize = 8;
    const EACH: usize = 40;
    let srv = common::server();
    let url = srv.url();
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                let mut con = redis::Client::open(url).expect("client").get_connection().expect("connect");
                let mut aborted = 0usize;
                for _ in 0..EACH {
                    let _: () = redis::transaction(&mut con, &["counter"], |con, pipe| {
                        let v: Option<i64> = redis::cmd("GET").arg("counter").query(con)?;
                        let r: Option<()> = pipe.set("counter", v.unwrap_or(0) + 1).ignore().query(con)?;
                        if r.is_none() {
                            aborted += 1;
                        }
                        Ok(r)
                    })
                    .expect("transaction");
                }
                aborted
            })
        })
        .collect();
    let aborted: usize = handles.into_iter().map(|h| h.join().expect("thread")).sum();
    let mut con = common::conn(&srv);
    let v: i64 = redis::cmd("GET").arg("counter").query(&mut con).expect("get");
    assert_eq!(v, (THREADS * EACH) as i64);
    eprintln!("{} increments, {aborted} EXECs aborted by WATCH and retried", THREADS * EACH);
}

/// The redis crate's async atomic pipeline (MULTI … EXEC on a multiplexed
/// connection), including a PUBLISH inside the transaction.
#[tokio::test]
async fn async_atomic_pipeline() {
    let srv = common::server();
    let mut sub = RawConn::connect(srv.port());
    sub.cmd(&["SUBSCRIBE", "tx-events"]);
    let mut con = common::aconn(&srv).await;
    let (incr, got, receivers): (i64, String, i64) = redis::pipe()
        .atomic()
        .set("a", 1)
        .ignore()
        .incr("a", 2)
        .get("a")
        .publish("tx-events", "done")
        .query_async(&mut con)
        .await
        .expect("exec");
    assert_eq!((incr, got.as_str(), receivers), (3, "3", 1));
    let msg = tokio::task::spawn_blocking(move || sub.read()).await.expect("join");
    assert_eq!(msg, Some(Value::Agg(b'*', Some(vec![bulk("message"), bulk("tx-events"), bulk("done")]))));
}
