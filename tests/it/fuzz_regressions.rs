//! Regression tests for what the fuzz targets (`fuzz/`) found, each sent to
//! rlockd and, where it is about Redis's answer, to redis-server as well.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::common::oracle::Oracle;

/// Sends `bytes` on a fresh connection and reads everything until the
/// server closes it (the read timeout is only a hang guard).
fn exchange(port: u16, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    s.write_all(bytes).expect("write");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// Redis finds the end of a request line with `strchr`, which stops at a
/// NUL: a NUL before the CR/LF hides the line end, the request waits for
/// more bytes and is refused once it passes 64 KiB (rlockd used to parse
/// up to the CR/LF and answer at once). Found while writing the parser
/// target's inline check.
#[test]
fn nul_before_the_end_of_a_request_line() {
    let Some(oracle) = Oracle::start() else {
        return;
    };
    let ours = rlockd::Server::start().expect("rlockd");
    let pad = |head: &[u8]| {
        let mut v = head.to_vec();
        v.resize(70_000, b'x');
        v
    };
    let cases: Vec<Vec<u8>> = vec![
        pad(b"PING\0\r\n"),
        pad(b"\0abc\r\nPING\r\n"),
        pad(b"ECHO a\0b c\r\nPING\r\n"),
        pad(b"*1\0\r\n$4\r\nPING\r\n"),
        pad(b"*1\r\n$4\0\r\nPING\r\n"),
        pad(b"PING\r\n*1\r\n$4\0\r\nPING\r\n"),
        b"*1\r\n$4\r\nPI\0G\r\n*2\r\n$4\r\nECHO\r\n$3\r\na\0b\r\nQUIT\r\n".to_vec(),
        b"PING\r\n\0\r\n".to_vec().into_iter().chain(b"x".repeat(70_000)).collect(),
    ];
    for case in &cases {
        let (a, b) = (exchange(ours.port(), case), exchange(oracle.port, case));
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "request {:?}…",
            String::from_utf8_lossy(&case[..case.len().min(40)])
        );
        assert!(!b.is_empty(), "redis answered something");
    }
    let mut c = super::common::conn(&ours);
    let pong: String = redis::cmd("PING").query(&mut c).expect("still serving");
    assert_eq!(pong, "PONG");
}
