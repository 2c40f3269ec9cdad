//! Load comparison: the same workloads against rlockd and a real
//! redis-server, side by side in one run, over loopback sockets.
//!
//! `cargo bench --bench load` (env: LOAD_SECS per workload and server,
//! default 2; LOAD_CONNS, default 8; LOAD_PIPELINE, default 1;
//! LOAD_FILTER, a substring of workload names). Prints ops/s for each
//! server and the ratio rlockd / redis. Results go into BENCHMARKS.md.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Length of the first complete RESP frame in `b`, if complete.
fn frame_len(b: &[u8]) -> Option<usize> {
    let nl = b.iter().position(|&c| c == b'\n')?;
    let head = &b[1..nl - 1];
    let n = || std::str::from_utf8(head).ok()?.parse::<i64>().ok();
    match b[0] {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' => Some(nl + 1),
        b'$' => {
            let len = n()?;
            if len < 0 {
                return Some(nl + 1);
            }
            let total = nl + 1 + len as usize + 2;
            (b.len() >= total).then_some(total)
        }
        b'*' | b'%' | b'~' => {
            let mut count = n()?;
            if b[0] == b'%' {
                count *= 2;
            }
            let mut off = nl + 1;
            for _ in 0..count.max(0) {
                off += frame_len(&b[off..])?;
            }
            Some(off)
        }
        _ => None,
    }
}

/// A workload: a function building the i-th request of connection `c`.
struct Workload {
    name: &'static str,
    setup: Vec<Vec<Vec<u8>>>,
    request: fn(conn: usize, i: u64) -> Vec<Vec<u8>>,
}

fn run_workload(port: u16, w: &Workload, conns: usize, pipeline: usize, secs: f64) -> f64 {
    {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut buf = Vec::new();
        for cmd in std::iter::once(vec![b"FLUSHALL".to_vec()]).chain(w.setup.iter().cloned()) {
            let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_slice()).collect();
            s.write_all(&encode(&args)).unwrap();
            read_replies(&mut s, &mut buf, 1);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..conns)
        .map(|c| {
            let stop = stop.clone();
            let total = total.clone();
            let req = w.request;
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                s.set_nodelay(true).unwrap();
                let mut buf = Vec::with_capacity(64 * 1024);
                let mut i = 0u64;
                let mut out = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    out.clear();
                    for _ in 0..pipeline {
                        let a = req(c, i);
                        let args: Vec<&[u8]> = a.iter().map(|x| x.as_slice()).collect();
                        out.extend_from_slice(&encode(&args));
                        i += 1;
                    }
                    s.write_all(&out).unwrap();
                    read_replies(&mut s, &mut buf, pipeline);
                    total.fetch_add(pipeline as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    total.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

fn read_replies(s: &mut TcpStream, buf: &mut Vec<u8>, mut n: usize) {
    thread_local! {
        static CHUNK: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 64 * 1024]);
    }
    CHUNK.with(|c| read_into(s, buf, &mut n, &mut c.borrow_mut()));
}

fn read_into(s: &mut TcpStream, buf: &mut Vec<u8>, n: &mut usize, chunk: &mut [u8]) {
    loop {
        let mut off = 0;
        while *n > 0 {
            match frame_len(&buf[off..]) {
                Some(len) => {
                    assert!(buf[off] != b'-', "error reply: {}", String::from_utf8_lossy(&buf[off..off + len]));
                    off += len;
                    *n -= 1;
                }
                None => break,
            }
        }
        buf.drain(..off);
        if *n == 0 {
            return;
        }
        let r = s.read(chunk).unwrap();
        assert!(r > 0, "server closed the connection");
        buf.extend_from_slice(&chunk[..r]);
    }
}

struct Redis(Child, u16);
impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_redis() -> Option<Redis> {
    let port = std::net::TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let r = Redis(child, port);
    for _ in 0..200 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(r);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

fn b(s: impl Into<String>) -> Vec<u8> {
    s.into().into_bytes()
}

/// The server under test allocates with jemalloc, as the `rlockd` binary does.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use rlockd::locks::{REDLOCK_RELEASE, REENTRANT_LOCK, REENTRANT_UNLOCK};

/// The script's SHA1, computed once (the client must not burn the CPU the
/// servers share).
fn sha(script: &rlockd::locks::LockScript) -> Vec<u8> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<&'static str, Vec<u8>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    cache.lock().unwrap().entry(script.name).or_insert_with(|| script.sha1().into_bytes()).clone()
}

fn load(script: &rlockd::locks::LockScript) -> Vec<Vec<u8>> {
    vec![b("SCRIPT"), b("LOAD"), script.source.as_bytes().to_vec()]
}

fn workloads() -> Vec<Workload> {
    vec![
        Workload { name: "ping", setup: vec![], request: |_, _| vec![b("PING")] },
        Workload {
            name: "set",
            setup: vec![],
            request: |c, i| vec![b("SET"), b(format!("k{c}:{}", i % 1000)), b("v")],
        },
        Workload {
            name: "get",
            setup: vec![vec![b("SET"), b("k"), b("value")]],
            request: |_, _| vec![b("GET"), b("k")],
        },
        Workload {
            name: "lock: SET NX PX + DEL",
            setup: vec![],
            request: |c, i| {
                if i % 2 == 0 {
                    vec![b("SET"), b(format!("lock:{c}")), b("token"), b("NX"), b("PX"), b("30000")]
                } else {
                    vec![b("DEL"), b(format!("lock:{c}"))]
                }
            },
        },
        Workload {
            name: "lock: SET NX PX contended",
            setup: vec![],
            request: |_, _| vec![b("SET"), b("lock"), b("token"), b("NX"), b("PX"), b("30000")],
        },
        Workload {
            name: "lua: Redisson reentrant lock + unlock (EVALSHA)",
            setup: vec![load(&REENTRANT_LOCK), load(&REENTRANT_UNLOCK)],
            request: |c, i| {
                let lock = b(format!("lock:{c}"));
                let holder = b(format!("8743c9c0-0795-4907-87fd-6c719a6b4586:{c}"));
                if i % 2 == 0 {
                    vec![b("EVALSHA"), sha(&REENTRANT_LOCK), b("1"), lock, b("30000"), holder]
                } else {
                    let channel = b(format!("redisson_lock__channel:{{lock:{c}}}"));
                    vec![b("EVALSHA"), sha(&REENTRANT_UNLOCK), b("2"), lock, channel, b("0"), b("30000"), holder]
                }
            },
        },
        Workload {
            name: "lua: Redisson reentrant lock contended (returns pttl)",
            setup: vec![
                load(&REENTRANT_LOCK),
                vec![b("HSET"), b("lock"), b("owner:1"), b("1")],
                vec![b("PEXPIRE"), b("lock"), b("600000")],
            ],
            request: |c, _| {
                vec![b("EVALSHA"), sha(&REENTRANT_LOCK), b("1"), b("lock"), b("30000"), b(format!("w:{c}"))]
            },
        },
        Workload {
            name: "lua: redlock acquire (SET NX PX) + release (EVALSHA)",
            setup: vec![load(&REDLOCK_RELEASE)],
            request: |c, i| {
                let key = b(format!("rl:{c}"));
                if i % 2 == 0 {
                    vec![b("SET"), key, b("tok"), b("NX"), b("PX"), b("30000")]
                } else {
                    vec![b("EVALSHA"), sha(&REDLOCK_RELEASE), b("1"), key, b("tok")]
                }
            },
        },
    ]
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes --bench; ignore arguments.
    let secs: f64 = std::env::var("LOAD_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(2.0);
    let conns: usize = std::env::var("LOAD_CONNS").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
    let pipeline: usize = std::env::var("LOAD_PIPELINE").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let filter = std::env::var("LOAD_FILTER").unwrap_or_default();
    let rounds: usize = std::env::var("LOAD_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let ours = rlockd::Server::start().expect("rlockd");
    let theirs = start_redis();
    if theirs.is_none() {
        eprintln!("redis-server not found: measuring rlockd alone");
    }
    println!(
        "# load comparison: {conns} connections, pipeline {pipeline}, median of {rounds} alternating rounds of {secs}s"
    );
    println!("| workload | rlockd ops/s | redis-server ops/s | rlockd / redis |");
    println!("|---|---:|---:|---:|");
    for w in workloads().iter().filter(|w| w.name.contains(&filter)) {
        // Alternate the servers round by round to spread machine noise; report medians.
        let mut os = Vec::new();
        let mut rs = Vec::new();
        for _ in 0..rounds.max(1) {
            if let Some(r) = theirs.as_ref() {
                rs.push(run_workload(r.1, w, conns, pipeline, secs));
            }
            os.push(run_workload(ours.port(), w, conns, pipeline, secs));
        }
        let o = median(&mut os);
        let r = (!rs.is_empty()).then(|| median(&mut rs));
        match r {
            Some(r) => println!("| {} | {:.0} | {:.0} | {:.2} |", w.name, o, r, o / r),
            None => println!("| {} | {:.0} | - | - |", w.name, o),
        }
    }
}
