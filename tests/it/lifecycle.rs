//! A server always stops: dropped or stopped with no client ever connected,
//! and with clients mid-command, blocked, subscribed or inside a script.
//! Regression for the lost shutdown signal (a `watch::send` with no
//! subscriber yet was dropped, so `stop()` hung forever).

use std::time::{Duration, Instant};

use crate::common::resp::{RawConn, Value};
use rlockd::Server;

/// Stopping must not take long; a hang fails the test instead of CI.
fn stop_within(srv: Server, limit: Duration) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        srv.stop();
        let _ = tx.send(());
    });
    rx.recv_timeout(limit).expect("server did not stop");
}

#[test]
fn stop_and_drop_with_no_client_ever_connected() {
    for i in 0..300 {
        let srv = Server::start().expect("start");
        if i % 2 == 0 {
            stop_within(srv, Duration::from_secs(10));
        } else {
            // Dropping is the same stop; run it on a watched thread too.
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                drop(srv);
                let _ = tx.send(());
            });
            rx.recv_timeout(Duration::from_secs(10)).expect("drop did not stop the server");
        }
    }
}

#[test]
fn port_is_released_after_stop() {
    let srv = Server::start().expect("start");
    let addr = srv.addr();
    stop_within(srv, Duration::from_secs(10));
    assert!(std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err());
}

#[tokio::test(flavor = "current_thread")]
async fn stop_from_current_thread_runtime() {
    for _ in 0..100 {
        let srv = Server::start().expect("start");
        drop(srv);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_from_multi_thread_runtime() {
    for _ in 0..100 {
        let srv = Server::start().expect("start");
        drop(srv);
    }
}

#[test]
fn stop_with_clients_mid_command_blocked_subscribed_and_in_script() {
    for _ in 0..10 {
        // A short busy threshold so the probe below sees BUSY quickly.
        let srv = Server::start_with(rlockd::Config {
            params: vec![("busy-reply-threshold".into(), "50".into())],
            ..Default::default()
        })
        .expect("start");
        let port = srv.port();
        // Idle, and half-way through a frame.
        let mut idle = RawConn::connect(port);
        assert_eq!(idle.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
        let mut partial = RawConn::connect(port);
        partial.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk");
        // Blocked forever.
        let mut blocked = RawConn::connect(port);
        blocked.send(&[b"BLPOP".to_vec(), b"nothing".to_vec(), b"0".to_vec()]);
        // Subscribed.
        let mut sub = RawConn::connect(port);
        sub.send(&[b"SUBSCRIBE".to_vec(), b"ch".to_vec()]);
        assert!(sub.read().is_some());
        // A script that never ends by itself.
        let mut script = RawConn::connect(port);
        script.send(&[b"EVAL".to_vec(), b"while true do end".to_vec(), b"0".to_vec()]);
        // Wait until the script holds the server (PING answers BUSY).
        let mut probe = RawConn::connect(port);
        let t0 = Instant::now();
        loop {
            match probe.cmd(&["PING"]) {
                Value::Error(e) if e.starts_with(b"BUSY") => break,
                _ if t0.elapsed() > Duration::from_secs(10) => panic!("script never became busy"),
                _ => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        stop_within(srv, Duration::from_secs(15));
        // Every client sees its connection closed.
        for c in [&mut idle, &mut partial, &mut blocked, &mut sub, &mut probe] {
            c.set_read_timeout(Duration::from_secs(5));
            assert_eq!(c.read(), None);
        }
    }
}
