//! A bounded soak of the `rlockd` binary: many threads connect, lock and
//! unlock, vanish mid-frame, mid-script, while blocked and while subscribed,
//! for `RLOCKD_SOAK_SECS` seconds (default 15; run for minutes with e.g.
//! `RLOCKD_SOAK_SECS=600 cargo test --test it soak -- --nocapture`). Afterwards:
//! every acknowledged write is present, no connection is left behind
//! (`INFO clients`), and once the data is flushed the server's RSS falls
//! back near its starting point.

use std::io::Write;
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::resp::{RawConn, Value};

const UNLOCK: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("VmRSS value")
}

fn info_field(c: &mut RawConn, section: &str, field: &str) -> String {
    let Value::Bulk(Some(text)) = c.cmd(&["INFO", section]) else { panic!("INFO {section}") };
    let text = String::from_utf8(text).expect("INFO is text");
    let prefix = format!("{field}:");
    text.lines().find_map(|l| l.strip_prefix(&prefix)).map(str::to_string).unwrap_or_else(|| panic!("{field} in INFO"))
}

/// Starts the binary on a free port and returns it with its port.
fn start_binary() -> (Proc, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rlockd"))
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start rlockd");
    let mut out = child.stdout.take().expect("stdout");
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while std::io::Read::read(&mut out, &mut byte).expect("read ready line") == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let line = String::from_utf8(line).expect("ready line");
    let port = line
        .rsplit("(port ")
        .next()
        .and_then(|s| s.trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("port in {line:?}"));
    (Proc(child), port)
}

#[test]
fn soak_connect_lock_and_vanish() {
    let secs: u64 = std::env::var("RLOCKD_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(15);
    let (proc_, port) = start_binary();
    let pid = proc_.0.id();
    let mut admin = RawConn::connect(port);
    let baseline = rss_kib(pid);
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let (stop, acked) = (stop.clone(), acked.clone());
            std::thread::spawn(move || {
                let mut written = Vec::new();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                    i += 1;
                    match i % 6 {
                        // A lock taken and released by its owner, plus one acknowledged write.
                        0 | 1 => {
                            let mut c = RawConn::connect(port);
                            let key = format!("lock:{}", i % 16);
                            let token = format!("{t}-{i}");
                            if c.cmd(&["SET", &key, &token, "NX", "PX", "5000"]) == Value::Simple(b"OK".to_vec()) {
                                assert_eq!(c.cmd(&["EVAL", UNLOCK, "1", &key, &token]), Value::Int(1));
                            }
                            let ack = format!("ack:{t}:{i}");
                            assert_eq!(c.cmd(&["SET", &ack, &token]), Value::Simple(b"OK".to_vec()));
                            written.push((ack, token));
                        }
                        // Gone half-way through a frame.
                        2 => {
                            let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
                            let _ = s.write_all(b"*3\r\n$3\r\nSET\r\n$5\r\nhalf");
                        }
                        // Gone while its script runs.
                        3 => {
                            let mut c = RawConn::connect(port);
                            c.send(&[
                                b"EVAL".to_vec(),
                                b"local n = 0 for i = 1, 20000 do n = n + i end return n".to_vec(),
                                b"0".to_vec(),
                            ]);
                        }
                        // Gone while blocked.
                        4 => {
                            let mut c = RawConn::connect(port);
                            c.send(&[b"BLPOP".to_vec(), format!("queue:{t}").into_bytes(), b"0".to_vec()]);
                        }
                        // Gone while subscribed, with messages in flight.
                        _ => {
                            let mut c = RawConn::connect(port);
                            c.send(&[b"SUBSCRIBE".to_vec(), b"unlock".to_vec()]);
                            let mut p = RawConn::connect(port);
                            let _ = p.cmd(&["PUBLISH", "unlock", "released"]);
                        }
                    }
                }
                acked.fetch_add(written.len() as u64, Ordering::Relaxed);
                written
            })
        })
        .collect();
    let mut written = Vec::new();
    for t in threads {
        written.extend(t.join().expect("soak thread"));
    }
    stop.store(true, Ordering::Relaxed);
    assert!(!written.is_empty());
    // Every acknowledged write is there.
    for chunk in written.chunks(500) {
        let mut args = vec!["MGET"];
        args.extend(chunk.iter().map(|(k, _)| k.as_str()));
        let Value::Agg(_, Some(vals)) = admin.cmd(&args) else { panic!("MGET") };
        for ((k, v), got) in chunk.iter().zip(vals) {
            assert_eq!(got, Value::Bulk(Some(v.clone().into_bytes())), "{k} lost");
        }
    }
    // Every vanished client is gone (the server notices closed sockets).
    let guard = Instant::now();
    loop {
        let n: u64 = info_field(&mut admin, "clients", "connected_clients").parse().expect("number");
        let blocked: u64 = info_field(&mut admin, "clients", "blocked_clients").parse().expect("number");
        if n == 1 && blocked == 0 {
            break;
        }
        assert!(guard.elapsed() < Duration::from_secs(30), "{n} clients / {blocked} blocked left behind");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Memory comes back once the data is gone.
    assert_eq!(admin.cmd(&["FLUSHALL"]), Value::Simple(b"OK".to_vec()));
    let guard = Instant::now();
    let limit = baseline * 2 + 16 * 1024;
    loop {
        let now = rss_kib(pid);
        if now <= limit {
            eprintln!(
                "soak: {secs} s, {} acknowledged writes, RSS {baseline} KiB -> {now} KiB",
                acked.load(Ordering::Relaxed)
            );
            break;
        }
        assert!(guard.elapsed() < Duration::from_secs(30), "RSS stayed at {now} KiB (baseline {baseline} KiB)");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(admin.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
}
