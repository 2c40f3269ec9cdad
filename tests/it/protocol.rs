//! Wire protocol: pipelining, partial delivery, protocol errors, big values.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::common::{self, resp::RawConn, resp::Value};

#[test]
fn ten_thousand_pipelined_commands_answer_in_order() {
    let srv = common::server();
    let mut c = RawConn::connect(srv.port());
    let mut batch = Vec::new();
    for i in 0..10_000 {
        batch.extend(common::resp::encode(&[
            b"SET".to_vec(),
            format!("k{i}").into_bytes(),
            i.to_string().into_bytes(),
        ]));
        batch.extend(common::resp::encode(&[b"GET".to_vec(), format!("k{i}").into_bytes()]));
    }
    c.send_raw(&batch);
    for i in 0..10_000 {
        assert_eq!(c.read(), Some(Value::Simple(b"OK".to_vec())));
        assert_eq!(c.read(), Some(Value::Bulk(Some(i.to_string().into_bytes()))));
    }
}

#[test]
fn byte_at_a_time_delivery_is_reassembled() {
    let srv = common::server();
    let mut s = TcpStream::connect(srv.addr()).unwrap();
    s.set_nodelay(true).unwrap();
    for b in b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" {
        s.write_all(&[*b]).unwrap();
        std::thread::sleep(Duration::from_micros(200));
    }
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = vec![0u8; 64];
    let mut got = Vec::new();
    while got.len() < b"+OK\r\n$5\r\nhello\r\n".len() {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"+OK\r\n$5\r\nhello\r\n");
}

#[test]
fn protocol_error_closes_only_that_connection() {
    let srv = common::server();
    let mut other = RawConn::connect(srv.port());
    assert_eq!(other.cmd(&["SET", "k", "v"]), Value::Simple(b"OK".to_vec()));
    let mut bad = TcpStream::connect(srv.addr()).unwrap();
    bad.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    bad.write_all(b"*1\r\n$abc\r\n").unwrap();
    let mut out = Vec::new();
    bad.read_to_end(&mut out).unwrap(); // EOF: the server closed it
    assert_eq!(out, b"-ERR Protocol error: invalid bulk length\r\n");
    // The server and the other client carry on; nothing acknowledged is lost.
    assert_eq!(other.cmd(&["GET", "k"]), Value::Bulk(Some(b"v".to_vec())));
}

#[test]
fn garbage_flood_does_not_hurt_the_server() {
    let srv = common::server();
    let mut bad = TcpStream::connect(srv.addr()).unwrap();
    // 1 MB without a newline: "too big inline request".
    let _ = bad.write_all(&vec![b'x'; 1 << 20]);
    bad.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = Vec::new();
    let _ = bad.read_to_end(&mut out);
    assert!(out.starts_with(b"-ERR Protocol error: too big inline request"), "{:?}", String::from_utf8_lossy(&out));
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
}

#[test]
fn large_values_round_trip() {
    let srv = common::server();
    let mut con = common::conn(&srv);
    let big = vec![b'z'; 8 << 20];
    let _: () = redis::cmd("SET").arg("big").arg(&big).query(&mut con).unwrap();
    let back: Vec<u8> = redis::cmd("GET").arg("big").query(&mut con).unwrap();
    assert_eq!(back.len(), big.len());
    assert!(back == big);
    let n: i64 = redis::cmd("STRLEN").arg("big").query(&mut con).unwrap();
    assert_eq!(n, 8 << 20);
}

#[test]
fn unauthenticated_clients_get_small_limits_and_noauth() {
    let srv = rlockd::Server::start_with(rlockd::Config { requirepass: Some("s3cret".into()), ..Default::default() })
        .unwrap();
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["GET", "k"]), Value::Error(b"NOAUTH Authentication required.".to_vec()));
    assert_eq!(
        c.cmd(&["AUTH", "wrong"]),
        Value::Error(b"WRONGPASS invalid username-password pair or user is disabled.".to_vec())
    );
    assert_eq!(c.cmd(&["AUTH", "s3cret"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(c.cmd(&["GET", "k"]), Value::Bulk(None));
    let mut u = TcpStream::connect(srv.addr()).unwrap();
    u.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    u.write_all(b"*20\r\n").unwrap();
    let mut out = Vec::new();
    let _ = u.read_to_end(&mut out);
    assert_eq!(out, b"-ERR Protocol error: unauthenticated multibulk length\r\n");
    // The redis crate authenticates from the URL.
    let mut con = common::conn(&srv);
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn quit_replies_ok_and_closes() {
    let srv = common::server();
    let mut s = TcpStream::connect(srv.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"PING\r\nQUIT\r\nPING\r\n").unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    assert_eq!(out, b"+PONG\r\n+OK\r\n");
}

/// An HTTP request sent to the port (cross-protocol scripting) is dropped
/// without a reply, as Redis does; other clients are unaffected.
#[test]
fn http_requests_are_dropped_without_a_reply() {
    let srv = common::server();
    // A PING read in the same batch loses its reply too (Redis does not
    // write to a client it is about to close); read apart, it is answered.
    let cases: [(&[u8], &[u8]); 3] = [
        (b"POST / HTTP/1.1\r\nHost: x\r\n\r\n", b""),
        (b"*1\r\n$4\r\npost\r\n", b""),
        (b"PING\r\nHost: evil\r\n", b"+PONG\r\n"),
    ];
    for (request, may_precede) in cases {
        let mut s = TcpStream::connect(srv.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(request).unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        assert!(out.is_empty() || out == may_precede, "{:?}: {:?}", String::from_utf8_lossy(request), out);
    }
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
}

/// The fuzz corpora double as regression inputs.
#[test]
fn fuzz_corpus_seeds_pass_the_fuzz_checks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut n = 0;
    for (target, check) in [
        ("parser", (|d: &[u8]| rlockd::testing::check_parser(d)) as fn(&[u8])),
        ("dispatch", |d: &[u8]| {
            rlockd::testing::check_dispatch(d);
        }),
    ] {
        for e in std::fs::read_dir(root.join(target)).unwrap() {
            let data = std::fs::read(e.unwrap().path()).unwrap();
            check(&data);
            n += 1;
        }
    }
    assert!(n >= 4);
}
