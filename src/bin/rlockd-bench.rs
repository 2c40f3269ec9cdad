//! `rlockd-bench`: a load generator for lock workloads, run against several
//! servers in one go, interleaved round by round (A B A B …) so that a noisy
//! machine's drift hits every target alike.
//!
//! ```sh
//! cargo build --release --bins
//! target/release/rlockd-bench spawn:redis-server spawn:rlockd -w lock-unlock,contended -c 16 -r 5
//! ```
//!
//! Targets: `spawn:rlockd` / `spawn:redis-server` (started on a free port
//! for the run and stopped after it; rlockd is the binary beside this one
//! unless `RLOCKD_BIN` names another), `spawn:null` (a bare responder: this
//! binary in a mode that parses each command on a tokio current-thread
//! runtime, as rlockd's event loop does, and answers it from a fixed table —
//! PONG, OK, nil, a script's sha — without doing any work: the limit of this
//! machine, runtime and kernel; its replies are not checked), `spawn:null-uring`
//! (the same responder on one io_uring instead of epoll; TCP only, in a build
//! with `--features io-uring`), or
//! `[name=]host:port` or `[name=]unix:/path` of a running server (`--pid
//! name=PID` adds its CPU time). The first target is the baseline every
//! ratio is taken to. With `--unix`, the spawned targets also listen on a
//! Unix-domain socket (`unixsocket`) and are measured through it.
//!
//! Workloads (`-w`, comma-separated): `ping`, `set`, `get`, `lock-unlock`
//! (Redisson's reentrant lock then unlock by EVALSHA, a fresh name per pair,
//! one owner id per connection), `reentrant` (three holds, three releases),
//! `contended` (tryLock on `--names` names shared by all connections;
//! mutual exclusion is checked from the replies), `renew` (watchdog
//! renewals over `--held` held locks), `semaphore` (acquire and release one
//! permit of `--names` semaphores), `fair` (Redisson's fair lock and unlock,
//! a fresh name per pair), and `script:FILE` (your own script, run by
//! EVALSHA with `--keys`/`--args` templates where `{c}` is the connection,
//! `{i}` the operation's number and `{r}` a random number).
//!
//! `held-memory` is not timed: it acquires `--held` Redisson locks (distinct
//! names, a Redisson-style owner id, 30 s lease) on each target after a
//! FLUSHALL and reports the growth of `used_memory` and `used_memory_rss`
//! per held lock (INFO memory before and after), then removes them.
//!
//! For each workload and target: operations per second (median, min and max
//! of the rounds), latency percentiles (p50, p99, p99.9 of every operation
//! of every round), the server's CPU time per operation when its pid is
//! known, and the median's ratio to the first target's. `--csv`/`--json`
//! write the same table for CI.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LOCK: &str = include_str!("../../lua/reentrant_lock.lua");
const UNLOCK: &str = include_str!("../../lua/reentrant_unlock.lua");
const RENEW: &str = include_str!("../../lua/reentrant_renew.lua");
const SEM_ACQUIRE: &str = include_str!("../../lua/semaphore_acquire.lua");
const SEM_RELEASE: &str = include_str!("../../lua/semaphore_release.lua");
const FAIR_LOCK: &str = include_str!("../../lua/fair_lock.lua");
const FAIR_UNLOCK: &str = include_str!("../../lua/fair_unlock.lua");

const USAGE: &str = "usage: rlockd-bench [options] TARGET...
  TARGET              spawn:rlockd | spawn:redis-server | spawn:null | spawn:null-uring
                      | [name=]host:port | [name=]unix:/path (first = baseline;
                      spawn:null is a bare responder that does no work,
                      spawn:null-uring the same on io_uring, --features io-uring)
  -w, --workload W    comma-separated: ping set get lock-unlock reentrant contended renew
                      semaphore fair script:FILE, held-memory (bytes per held
                      lock, not timed) (default lock-unlock)
  -c, --conns N       connections (default 16)
  -P, --pipeline N    operations in flight per connection (default 1; contended: always 1)
  -d, --duration S    seconds per round and target (default 1)
  -r, --rounds N      rounds, targets interleaved in each (default 5)
      --names N       lock / semaphore names for contended and semaphore (default 8)
      --held N        held locks for renew and held-memory (default 1000)
      --keys T,T      script: KEYS templates ({c} connection, {i} operation, {r} random)
      --args T,T      script: ARGV templates
      --pin CPUS      pin the load threads to these CPUs (e.g. 1 or 0-1)
      --pid NAME=PID  the pid of a target given by address (server CPU per operation)
      --unix          connect to the spawned targets over a Unix socket, not TCP
      --csv FILE      write the results as CSV
      --json FILE     write the results as JSON
  -q, --quiet         no progress line";

struct Opts {
    targets: Vec<TargetSpec>,
    workloads: Vec<String>,
    conns: usize,
    pipeline: usize,
    secs: f64,
    rounds: usize,
    names: usize,
    held: usize,
    keys: Vec<String>,
    args: Vec<String>,
    pin: Vec<usize>,
    pids: HashMap<String, u32>,
    csv: Option<String>,
    json: Option<String>,
    quiet: bool,
    unix: bool,
}

#[derive(Clone)]
enum TargetSpec {
    Spawn(String),
    Addr(String, String),
}

fn fail(msg: &str) -> ! {
    eprintln!("rlockd-bench: {msg}\n{USAGE}");
    std::process::exit(2)
}

fn parse_cpus(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().unwrap_or_else(|_| fail("bad --pin")), b.parse().unwrap_or_else(|_| fail("bad --pin")));
                out.extend(a..=b);
            }
            None => out.push(part.parse().unwrap_or_else(|_| fail("bad --pin"))),
        }
    }
    out
}

fn parse_args() -> Opts {
    let mut o = Opts {
        targets: Vec::new(),
        workloads: vec!["lock-unlock".into()],
        conns: 16,
        pipeline: 1,
        secs: 1.0,
        rounds: 5,
        names: 8,
        held: 1000,
        keys: Vec::new(),
        args: Vec::new(),
        pin: Vec::new(),
        pids: HashMap::new(),
        csv: None,
        json: None,
        quiet: false,
        unix: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| fail(&format!("{a} needs a value")));
        let num = |v: String| v.parse::<usize>().unwrap_or_else(|_| fail(&format!("bad number {v}")));
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0)
            }
            "-w" | "--workload" => o.workloads = val().split(',').map(str::to_string).collect(),
            "-c" | "--conns" => o.conns = num(val()).max(1),
            "-P" | "--pipeline" => o.pipeline = num(val()).max(1),
            "-d" | "--duration" => o.secs = val().parse().unwrap_or_else(|_| fail("bad --duration")),
            "-r" | "--rounds" => o.rounds = num(val()).max(1),
            "--names" => o.names = num(val()).max(1),
            "--held" => o.held = num(val()).max(1),
            "--keys" => o.keys = val().split(',').map(str::to_string).collect(),
            "--args" => o.args = val().split(',').map(str::to_string).collect(),
            "--pin" => o.pin = parse_cpus(&val()),
            "--pid" => {
                let v = val();
                let (n, p) = v.split_once('=').unwrap_or_else(|| fail("--pid takes NAME=PID"));
                o.pids.insert(n.to_string(), p.parse().unwrap_or_else(|_| fail("bad pid")));
            }
            "--csv" => o.csv = Some(val()),
            "--json" => o.json = Some(val()),
            "-q" | "--quiet" => o.quiet = true,
            "--unix" => o.unix = true,
            t if t.starts_with("spawn:") => o.targets.push(TargetSpec::Spawn(t[6..].to_string())),
            t if !t.starts_with('-') => {
                let (name, addr) = t.split_once('=').unwrap_or((t, t));
                o.targets.push(TargetSpec::Addr(name.to_string(), addr.to_string()));
            }
            other => fail(&format!("unknown option {other}")),
        }
    }
    if o.targets.is_empty() {
        fail("no target");
    }
    o
}

// ---------------------------------------------------------------- targets

struct Target {
    name: String,
    /// `host:port`, or `unix:/path`.
    addr: String,
    pid: Option<u32>,
    child: Option<Child>,
    /// Whether replies are checked (not for the bare responder, which
    /// answers every script with nil).
    checked: bool,
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
            // Killed, so it could not remove its socket file itself.
            if let Some(path) = self.addr.strip_prefix("unix:") {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

fn start(spec: &TargetSpec, pids: &HashMap<String, u32>, unix: bool) -> Target {
    match spec {
        TargetSpec::Addr(name, addr) => {
            Target { name: name.clone(), addr: addr.clone(), pid: pids.get(name).copied(), child: None, checked: true }
        }
        TargetSpec::Spawn(what) => {
            let port = free_port();
            let own = || std::env::current_exe().expect("own path");
            let program = match what.as_str() {
                "rlockd" => {
                    std::env::var("RLOCKD_BIN").unwrap_or_else(|_| own().with_file_name("rlockd").display().to_string())
                }
                "redis-server" => "redis-server".to_string(),
                "null" | "null-uring" => own().display().to_string(),
                other => fail(&format!(
                    "spawn:{other}: only spawn:rlockd, spawn:redis-server, spawn:null and spawn:null-uring"
                )),
            };
            let path = unix.then(|| {
                let p = std::env::temp_dir().join(format!("rlockd-bench-{}-{what}.sock", std::process::id()));
                p.display().to_string()
            });
            let mut args: Vec<String> = if what == "null" {
                vec![NULL_SERVER_FLAG.into(), port.to_string()]
            } else if what == "null-uring" {
                if unix {
                    fail("spawn:null-uring listens on TCP only");
                }
                vec![NULL_URING_SERVER_FLAG.into(), port.to_string()]
            } else {
                ["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
                    .map(String::from)
                    .to_vec()
            };
            if let Some(p) = &path {
                if what != "null" {
                    args.push("--unixsocket".into());
                }
                args.push(p.clone());
            }
            let child = Command::new(&program)
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| fail(&format!("cannot start {program}: {e}")));
            let t = Target {
                name: what.clone(),
                addr: path.map_or_else(|| format!("127.0.0.1:{port}"), |p| format!("unix:{p}")),
                pid: Some(child.id()),
                child: Some(child),
                checked: !what.starts_with("null"),
            };
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Ok(mut s) = Link::connect(&t.addr) {
                    if s.write_all(b"PING\r\n").is_ok() {
                        let mut line = String::new();
                        if BufReader::new(s).read_line(&mut line).is_ok() && line.starts_with("+PONG") {
                            break;
                        }
                    }
                }
                if Instant::now() > deadline {
                    fail(&format!("{program} did not answer on {}", t.addr));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            t
        }
    }
}

/// User + system CPU time of `pid`, in seconds.
fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks / hz)
}

// ---------------------------------------------------------------- RESP

fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A reply, as much as the workloads look at.
#[derive(Debug, Clone, PartialEq)]
enum R {
    Ok,
    Nil,
    Int(i64),
    Err(String),
    Other,
}

/// Parses one complete reply at the start of `b`: (reply, length).
fn parse(b: &[u8]) -> Option<(R, usize)> {
    let nl = b.iter().position(|&c| c == b'\n')?;
    let head = std::str::from_utf8(&b[1..nl.saturating_sub(1)]).ok()?;
    let n = || head.parse::<i64>().ok();
    Some(match b[0] {
        b'+' => (if head == "OK" { R::Ok } else { R::Other }, nl + 1),
        b'-' => (R::Err(head.to_string()), nl + 1),
        b':' => (R::Int(n()?), nl + 1),
        b'_' => (R::Nil, nl + 1),
        b'$' => {
            let len = n()?;
            if len < 0 {
                return Some((R::Nil, nl + 1));
            }
            let total = nl + 1 + len as usize + 2;
            if b.len() < total {
                return None;
            }
            (R::Other, total)
        }
        b'*' | b'%' | b'~' => {
            let mut count = n()?;
            if count < 0 {
                return Some((R::Nil, nl + 1));
            }
            if b[0] == b'%' {
                count *= 2;
            }
            let mut off = nl + 1;
            for _ in 0..count {
                off += parse(&b[off..])?.1;
            }
            (R::Other, off)
        }
        b',' | b'#' | b'(' => (R::Other, nl + 1),
        _ => return None,
    })
}

/// A connection to a target: TCP (`host:port`) or Unix-domain (`unix:/path`).
enum Link {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Link {
    fn connect(addr: &str) -> std::io::Result<Link> {
        match addr.strip_prefix("unix:") {
            Some(path) => UnixStream::connect(path).map(Link::Unix),
            None => {
                let s = TcpStream::connect(addr)?;
                s.set_nodelay(true)?;
                Ok(Link::Tcp(s))
            }
        }
    }
}

impl Read for Link {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Link::Tcp(s) => s.read(buf),
            Link::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Link {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Link::Tcp(s) => s.write(buf),
            Link::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Conn {
    s: Link,
    buf: Vec<u8>,
    start: usize,
}

impl Conn {
    fn open(addr: &str) -> Conn {
        let s = Link::connect(addr).unwrap_or_else(|e| fail(&format!("connect {addr}: {e}")));
        Conn { s, buf: Vec::with_capacity(64 * 1024), start: 0 }
    }
    fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap_or_else(|e| fail(&format!("write: {e}")));
    }
    fn read(&mut self) -> R {
        loop {
            if let Some((r, len)) = parse(&self.buf[self.start..]) {
                self.consume(len);
                return r;
            }
            self.fill();
        }
    }
    /// Reads what the socket has into the buffer.
    fn fill(&mut self) {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.s.read(&mut chunk).unwrap_or_else(|e| fail(&format!("read: {e}")));
        if n == 0 {
            fail("the server closed the connection");
        }
        self.buf.extend_from_slice(&chunk[..n]);
    }
    /// Drops the first `len` unread bytes (a reply just parsed).
    fn consume(&mut self, len: usize) {
        self.start += len;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }
    fn cmd(&mut self, args: &[&[u8]]) -> R {
        let mut out = Vec::new();
        encode(&mut out, args);
        self.send(&out);
        self.read()
    }
    /// The text of a bulk-string reply (INFO).
    fn bulk(&mut self, args: &[&[u8]]) -> String {
        let mut out = Vec::new();
        encode(&mut out, args);
        self.send(&out);
        loop {
            let b = &self.buf[self.start..];
            if let Some((_, len)) = parse(b) {
                let eol = b.iter().position(|&c| c == b'\n').unwrap_or(0);
                if b[0] != b'$' || len < eol + 3 {
                    fail(&format!("expected a bulk reply: {}", String::from_utf8_lossy(&b[..eol])));
                }
                let text = String::from_utf8_lossy(&b[eol + 1..len - 2]).into_owned();
                self.consume(len);
                return text;
            }
            self.fill();
        }
    }
    /// A numeric field of `INFO memory`.
    fn memory_field(&mut self, name: &str) -> u64 {
        let info = self.bulk(&[b"INFO", b"memory"]);
        info.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| fail(&format!("no {name} in INFO memory")))
    }
    fn load(&mut self, script: &str) -> String {
        let sha = sha1_smol::Sha1::from(script.as_bytes()).digest().to_string();
        let r = self.cmd(&[b"SCRIPT", b"LOAD", script.as_bytes()]);
        if matches!(r, R::Err(_)) {
            fail(&format!("SCRIPT LOAD failed: {r:?}"));
        }
        sha
    }
}

// ---------------------------------------------------------------- workloads

/// One operation: its commands, and what each must answer (None: anything
/// but an error).
type Op = Vec<(Vec<Vec<u8>>, Option<R>)>;

#[derive(Clone)]
struct Shas {
    lock: String,
    unlock: String,
    renew: String,
    acquire: String,
    release: String,
    fair_lock: String,
    fair_unlock: String,
    user: String,
}

fn b(s: impl Into<String>) -> Vec<u8> {
    s.into().into_bytes()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// The `i`-th operation of connection `c`, for the workloads that can be
/// pipelined (every reply is known in advance).
fn op(w: &str, sh: &Shas, o: &Opts, c: usize, i: u64, rng: &mut u64) -> Op {
    let owner = format!("3a8a7f4c-0b8e-4a5e-9d0c-6f1f0c9a2b11:{c}");
    let lock = |name: &str| vec![b("EVALSHA"), b(&sh.lock), b("1"), b(name), b("30000"), b(&owner)];
    let unlock = |name: &str| {
        vec![
            b("EVALSHA"),
            b(&sh.unlock),
            b("2"),
            b(name),
            b(format!("redisson_lock__channel:{{{name}}}")),
            b("0"),
            b("30000"),
            b(&owner),
        ]
    };
    match w {
        "ping" => vec![(vec![b("PING")], None)],
        "set" => vec![(vec![b("SET"), b(format!("key:{c}:{}", i % 1000)), b("value")], Some(R::Ok))],
        "get" => vec![(vec![b("GET"), b(format!("key:{c}:{}", i % 1000))], None)],
        "lock-unlock" => {
            let name = format!("lock:{c}:{i}");
            vec![(lock(&name), Some(R::Nil)), (unlock(&name), Some(R::Int(1)))]
        }
        "reentrant" => {
            let name = format!("lock:{c}:{i}");
            let mut v: Op = (0..3).map(|_| (lock(&name), Some(R::Nil))).collect();
            v.push((unlock(&name), Some(R::Int(0))));
            v.push((unlock(&name), Some(R::Int(0))));
            v.push((unlock(&name), Some(R::Int(1))));
            v
        }
        "renew" => {
            let per = (o.held / o.conns).max(1) as u64;
            let name = format!("held:{c}:{}", i % per);
            vec![(vec![b("EVALSHA"), b(&sh.renew), b("1"), b(name), b("30000"), b(&owner)], Some(R::Int(1)))]
        }
        "semaphore" => {
            let name = format!("sem:{}", (c as u64 + i) % o.names as u64);
            vec![
                (vec![b("EVALSHA"), b(&sh.acquire), b("1"), b(&name), b("1")], Some(R::Int(1))),
                (
                    vec![b("EVALSHA"), b(&sh.release), b("2"), b(&name), b(format!("redisson_sc:{{{name}}}")), b("1")],
                    None,
                ),
            ]
        }
        "fair" => {
            let name = format!("fair:{c}:{i}");
            let (q, t) = (format!("redisson_lock_queue:{{{name}}}"), format!("redisson_lock_timeout:{{{name}}}"));
            let now = now_ms().to_string();
            vec![
                (
                    vec![
                        b("EVALSHA"),
                        b(&sh.fair_lock),
                        b("3"),
                        b(&name),
                        b(&q),
                        b(&t),
                        b("30000"),
                        b(&owner),
                        b("5000"),
                        b(&now),
                    ],
                    Some(R::Nil),
                ),
                (
                    vec![
                        b("EVALSHA"),
                        b(&sh.fair_unlock),
                        b("4"),
                        b(&name),
                        b(q),
                        b(t),
                        b(format!("redisson_lock__channel:{{{name}}}")),
                        b("0"),
                        b("30000"),
                        b(&owner),
                        b(now),
                    ],
                    Some(R::Int(1)),
                ),
            ]
        }
        w if w.starts_with("script:") => {
            let fill = |t: &String, rng: &mut u64| {
                *rng ^= *rng << 13;
                *rng ^= *rng >> 7;
                *rng ^= *rng << 17;
                b(t.replace("{c}", &c.to_string())
                    .replace("{i}", &i.to_string())
                    .replace("{r}", &(*rng % 1_000_000).to_string()))
            };
            let mut cmd = vec![b("EVALSHA"), b(&sh.user), b(o.keys.len().to_string())];
            for t in o.keys.iter().chain(o.args.iter()) {
                cmd.push(fill(t, rng));
            }
            vec![(cmd, None)]
        }
        other => fail(&format!("unknown workload {other}")),
    }
}

/// What one round of one workload on one target measured.
#[derive(Default)]
struct Round {
    ops: u64,
    secs: f64,
    cpu: Option<f64>,
    /// Latency of each operation, in microseconds.
    lat: Vec<u32>,
}

fn setup(w: &str, t: &Target, o: &Opts) -> Shas {
    let mut c = Conn::open(&t.addr);
    c.cmd(&[b"FLUSHALL"]);
    let user = match w.strip_prefix("script:") {
        Some(file) => {
            let body = std::fs::read_to_string(file).unwrap_or_else(|e| fail(&format!("{file}: {e}")));
            c.load(&body)
        }
        None => String::new(),
    };
    let sh = Shas {
        lock: c.load(LOCK),
        unlock: c.load(UNLOCK),
        renew: c.load(RENEW),
        acquire: c.load(SEM_ACQUIRE),
        release: c.load(SEM_RELEASE),
        fair_lock: c.load(FAIR_LOCK),
        fair_unlock: c.load(FAIR_UNLOCK),
        user,
    };
    if w == "renew" {
        let per = (o.held / o.conns).max(1);
        for conn in 0..o.conns {
            let owner = format!("3a8a7f4c-0b8e-4a5e-9d0c-6f1f0c9a2b11:{conn}");
            let mut out = Vec::new();
            for j in 0..per {
                let name = format!("held:{conn}:{j}");
                encode(&mut out, &[b"EVALSHA", sh.lock.as_bytes(), b"1", name.as_bytes(), b"30000", owner.as_bytes()]);
            }
            c.send(&out);
            for _ in 0..per {
                c.read();
            }
        }
    }
    if w == "semaphore" {
        for n in 0..o.names {
            c.cmd(&[b"SET", format!("sem:{n}").as_bytes(), b"1000000"]);
        }
    }
    sh
}

/// Bytes per held lock on `t`: (used_memory, used_memory_rss) growth
/// divided by `n` locks acquired with Redisson's lock script.
fn held_memory(t: &Target, n: usize) -> (f64, f64) {
    let mut c = Conn::open(&t.addr);
    c.cmd(&[b"FLUSHALL"]);
    let lock = c.load(LOCK);
    std::thread::sleep(Duration::from_millis(300));
    let (used0, rss0) = (c.memory_field("used_memory"), c.memory_field("used_memory_rss"));
    let owner = b"3a8a7f4c-0b8e-4a5e-9d0c-6f1f0c9a2b11:1";
    for start in (0..n).step_by(1000) {
        let mut out = Vec::new();
        let end = (start + 1000).min(n);
        for i in start..end {
            let name = format!("lock:{i}");
            encode(&mut out, &[b"EVALSHA", lock.as_bytes(), b"1", name.as_bytes(), b"30000", owner]);
        }
        c.send(&out);
        for _ in start..end {
            if !matches!(c.read(), R::Nil) {
                fail("held-memory: a lock was not acquired");
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let (used1, rss1) = (c.memory_field("used_memory"), c.memory_field("used_memory_rss"));
    c.cmd(&[b"FLUSHALL"]);
    let per = |a: u64, b: u64| (b as f64 - a as f64) / n as f64;
    (per(used0, used1), per(rss0, rss1))
}

fn pin(cpus: &[usize], n: usize) {
    if cpus.is_empty() {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpus[n % cpus.len()], &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn run_round(w: &str, t: &Target, o: &Arc<Opts>, sh: &Shas) -> Round {
    let stop = Arc::new(AtomicBool::new(false));
    let violations = Arc::new(AtomicU64::new(0));
    // Contended: who holds each name, as the replies say (0: nobody).
    let holders: Arc<Vec<AtomicU64>> = Arc::new((0..o.names).map(|_| AtomicU64::new(0)).collect());
    let cpu0 = t.pid.and_then(cpu_secs);
    let start = Instant::now();
    let threads: Vec<_> = (0..o.conns)
        .map(|c| {
            let checked = t.checked;
            let (stop, violations, holders, o, sh, w, addr) = (
                stop.clone(),
                violations.clone(),
                holders.clone(),
                o.clone(),
                sh.clone(),
                w.to_string(),
                t.addr.clone(),
            );
            std::thread::spawn(move || {
                pin(&o.pin, c);
                let mut conn = Conn::open(&addr);
                let mut lat = Vec::new();
                let mut ops = 0u64;
                let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (c as u64 + 1);
                let mut i = 0u64;
                let mut out = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    if w == "contended" {
                        contended_op(&mut conn, &sh, &o, (c, i, checked), &holders, &violations);
                        i += 1;
                        ops += 1;
                    } else {
                        out.clear();
                        let mut expect = Vec::new();
                        for _ in 0..o.pipeline {
                            for (cmd, want) in op(&w, &sh, &o, c, i, &mut rng) {
                                let args: Vec<&[u8]> = cmd.iter().map(Vec::as_slice).collect();
                                encode(&mut out, &args);
                                expect.push(want);
                            }
                            i += 1;
                        }
                        conn.send(&out);
                        for want in expect {
                            let got = conn.read();
                            if let R::Err(e) = &got {
                                fail(&format!("{w}: the server answered -{e}"));
                            }
                            if let (Some(want), true) = (want, checked) {
                                if got != want {
                                    fail(&format!("{w}: expected {want:?}, got {got:?}"));
                                }
                            }
                        }
                        ops += o.pipeline as u64;
                    }
                    let us = t0.elapsed().as_micros().min(u32::MAX as u128) as u32;
                    lat.push(us);
                }
                (ops, lat)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(o.secs));
    stop.store(true, Ordering::Relaxed);
    let mut r = Round::default();
    for h in threads {
        let (ops, lat) = h.join().expect("load thread");
        r.ops += ops;
        r.lat.extend(lat);
    }
    r.secs = start.elapsed().as_secs_f64();
    r.cpu = match (cpu0, t.pid.and_then(cpu_secs)) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let v = violations.load(Ordering::Relaxed);
    if v > 0 {
        fail(&format!("contended: {v} times two connections held the same lock at once"));
    }
    r
}

/// tryLock on a shared name; on success check that nobody else holds it
/// by the replies seen so far, then release. The slot is cleared before
/// the release is sent, so a later holder never finds it taken by us.
fn contended_op(
    conn: &mut Conn,
    sh: &Shas,
    o: &Opts,
    (c, i, checked): (usize, u64, bool),
    holders: &[AtomicU64],
    violations: &AtomicU64,
) {
    let slot = (c as u64 * 7 + i) as usize % o.names;
    let name = format!("contended:{slot}");
    let owner = format!("3a8a7f4c-0b8e-4a5e-9d0c-6f1f0c9a2b11:{c}");
    let me = c as u64 + 1;
    match conn.cmd(&[b"EVALSHA", sh.lock.as_bytes(), b"1", name.as_bytes(), b"30000", owner.as_bytes()]) {
        R::Nil => {
            if checked && holders[slot].compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire).is_err() {
                violations.fetch_add(1, Ordering::Relaxed);
            }
            holders[slot].store(0, Ordering::Release);
            let channel = format!("redisson_lock__channel:{{{name}}}");
            let r = conn.cmd(&[
                b"EVALSHA",
                sh.unlock.as_bytes(),
                b"2",
                name.as_bytes(),
                channel.as_bytes(),
                b"0",
                b"30000",
                owner.as_bytes(),
            ]);
            if checked && r != R::Int(1) {
                fail(&format!("contended: unlock answered {r:?}"));
            }
        }
        R::Int(_) => {}
        other => fail(&format!("contended: lock answered {other:?}")),
    }
}

// ---------------------------------------------------------------- report

struct Cell {
    workload: String,
    target: String,
    median: f64,
    min: f64,
    max: f64,
    p50: u32,
    p99: u32,
    p999: u32,
    cpu_us_per_op: Option<f64>,
    ratio: f64,
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let idx = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn main() {
    let mut raw = std::env::args().skip(1);
    if raw.next().as_deref() == Some(NULL_SERVER_FLAG) {
        let port = raw.next().and_then(|p| p.parse().ok()).unwrap_or_else(|| fail("the bare responder needs a port"));
        null_server(port, raw.next());
    }
    let mut raw = std::env::args().skip(1);
    if raw.next().as_deref() == Some(NULL_URING_SERVER_FLAG) {
        let port = raw.next().and_then(|p| p.parse().ok()).unwrap_or_else(|| fail("the bare responder needs a port"));
        null_uring_server(port);
    }
    let o = Arc::new(parse_args());
    let targets: Vec<Target> = o.targets.iter().map(|s| start(s, &o.pids, o.unix)).collect();
    let mut cells = Vec::new();
    for w in &o.workloads {
        if w == "held-memory" {
            println!("{} held Redisson locks: growth of INFO memory per lock", o.held);
            println!();
            println!("| target | used_memory B/lock | used_memory_rss B/lock | ratio (used_memory) |");
            println!("|---|---:|---:|---:|");
            let mut base = 0.0;
            for (ti, t) in targets.iter().enumerate() {
                if !t.checked {
                    println!("| {} | n/a | n/a | n/a |", t.name);
                    continue;
                }
                let (used, rss) = held_memory(t, o.held);
                if ti == 0 {
                    base = used;
                }
                println!("| {} | {used:.0} | {rss:.0} | {:.2} |", t.name, used / base);
            }
            println!();
            continue;
        }
        let mut rounds: Vec<Vec<Round>> = (0..targets.len()).map(|_| Vec::new()).collect();
        let shas: Vec<Shas> = targets.iter().map(|t| setup(w, t, &o)).collect();
        for r in 0..o.rounds {
            for (ti, t) in targets.iter().enumerate() {
                if !o.quiet {
                    eprint!("\r{w}: round {}/{} on {}            ", r + 1, o.rounds, t.name);
                }
                rounds[ti].push(run_round(w, t, &o, &shas[ti]));
            }
        }
        if !o.quiet {
            eprint!("\r{}\r", " ".repeat(60));
        }
        let mut base = 0.0;
        for (ti, t) in targets.iter().enumerate() {
            let rs = &rounds[ti];
            let mut rates: Vec<f64> = rs.iter().map(|r| r.ops as f64 / r.secs).collect();
            rates.sort_by(|a, b| a.total_cmp(b));
            let median = rates[rates.len() / 2];
            let mut lat: Vec<u32> = rs.iter().flat_map(|r| r.lat.iter().copied()).collect();
            lat.sort_unstable();
            let ops: u64 = rs.iter().map(|r| r.ops).sum();
            let cpu = rs.iter().map(|r| r.cpu).sum::<Option<f64>>().map(|s| s * 1e6 / ops.max(1) as f64);
            if ti == 0 {
                base = median;
            }
            cells.push(Cell {
                workload: w.clone(),
                target: t.name.clone(),
                median,
                min: rates[0],
                max: rates[rates.len() - 1],
                p50: percentile(&lat, 50.0),
                p99: percentile(&lat, 99.0),
                p999: percentile(&lat, 99.9),
                cpu_us_per_op: cpu,
                ratio: median / base,
            });
        }
    }
    if cells.is_empty() {
        return;
    }
    println!(
        "{} connections, pipeline {}, {} rounds of {} s per target (interleaved); latency per operation{}",
        o.conns,
        o.pipeline,
        o.rounds,
        o.secs,
        if o.pipeline > 1 { " batch" } else { "" }
    );
    println!();
    println!(
        "| workload | target | ops/s (median) | min | max | p50 µs | p99 µs | p99.9 µs | server CPU µs/op | ratio |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in &cells {
        println!(
            "| {} | {} | {:.0} | {:.0} | {:.0} | {} | {} | {} | {} | {:.2} |",
            c.workload,
            c.target,
            c.median,
            c.min,
            c.max,
            c.p50,
            c.p99,
            c.p999,
            c.cpu_us_per_op.map_or("-".into(), |v| format!("{v:.2}")),
            c.ratio
        );
    }
    if let Some(path) = &o.csv {
        let mut s =
            String::from("workload,target,ops_median,ops_min,ops_max,p50_us,p99_us,p999_us,cpu_us_per_op,ratio\n");
        for c in &cells {
            s.push_str(&format!(
                "{},{},{:.1},{:.1},{:.1},{},{},{},{},{:.4}\n",
                c.workload,
                c.target,
                c.median,
                c.min,
                c.max,
                c.p50,
                c.p99,
                c.p999,
                c.cpu_us_per_op.map_or(String::new(), |v| format!("{v:.3}")),
                c.ratio
            ));
        }
        std::fs::write(path, s).unwrap_or_else(|e| fail(&format!("{path}: {e}")));
    }
    if let Some(path) = &o.json {
        let items: Vec<String> = cells
            .iter()
            .map(|c| {
                format!(
                    "{{\"workload\":\"{}\",\"target\":\"{}\",\"ops_median\":{:.1},\"ops_min\":{:.1},\"ops_max\":{:.1},\"p50_us\":{},\"p99_us\":{},\"p999_us\":{},\"cpu_us_per_op\":{},\"ratio\":{:.4}}}",
                    c.workload.replace('"', "\\\""),
                    c.target.replace('"', "\\\""),
                    c.median,
                    c.min,
                    c.max,
                    c.p50,
                    c.p99,
                    c.p999,
                    c.cpu_us_per_op.map_or("null".into(), |v| format!("{v:.3}")),
                    c.ratio
                )
            })
            .collect();
        std::fs::write(path, format!("[{}]\n", items.join(","))).unwrap_or_else(|e| fail(&format!("{path}: {e}")));
    }
}

// ---------------------------------------------------------------- bare responder

/// The hidden first argument that runs this binary as `spawn:null`.
const NULL_SERVER_FLAG: &str = "--serve-null";

/// `spawn:null`: one tokio current-thread event loop, as rlockd's, reading
/// each connection's input, framing every complete command and answering it
/// from a fixed table, one write per read. No keyspace, no scripts: what is
/// left is the cost of the runtime, the syscalls and RESP framing. With
/// `unix_path`, it also listens on that Unix socket.
fn null_server(port: u16, unix_path: Option<String>) -> ! {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().expect("a tokio runtime");
    rt.block_on(async move {
        if let Some(path) = unix_path {
            let _ = std::fs::remove_file(&path);
            let listener = tokio::net::UnixListener::bind(&path)
                .unwrap_or_else(|e| fail(&format!("bare responder: bind {path}: {e}")));
            tokio::spawn(async move {
                loop {
                    let Ok((socket, _)) = listener.accept().await else { continue };
                    tokio::spawn(null_connection(socket));
                }
            });
        }
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap_or_else(|e| fail(&format!("bare responder: bind 127.0.0.1:{port}: {e}")));
        loop {
            let Ok((socket, _)) = listener.accept().await else { continue };
            let _ = socket.set_nodelay(true);
            tokio::spawn(null_connection(socket));
        }
    })
}

async fn null_connection<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut socket: S) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut input = Vec::with_capacity(16 * 1024);
    let mut out = Vec::with_capacity(16 * 1024);
    loop {
        match socket.read_buf(&mut input).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut at = 0;
        while let Some((args, len)) = frame_command(&input[at..]) {
            null_reply(&args, &mut out);
            at += len;
        }
        input.drain(..at);
        if !out.is_empty() {
            if socket.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
    }
}

/// One complete command at the start of `b` (a RESP array of bulk strings,
/// or an inline line): its arguments and its length.
fn frame_command(b: &[u8]) -> Option<(Vec<&[u8]>, usize)> {
    let line_end = |from: usize| b[from..].windows(2).position(|w| w == b"\r\n").map(|p| from + p);
    let number = |from: usize, to: usize| std::str::from_utf8(&b[from..to]).ok()?.parse::<usize>().ok();
    if b.first()? != &b'*' {
        let end = b.iter().position(|&c| c == b'\n')?;
        let line = b[..end].strip_suffix(b"\r").unwrap_or(&b[..end]);
        return Some((line.split(|c| c.is_ascii_whitespace()).filter(|a| !a.is_empty()).collect(), end + 1));
    }
    let end = line_end(1)?;
    let n = number(1, end)?;
    let mut at = end + 2;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        if b.get(at)? != &b'$' {
            return None;
        }
        let end = line_end(at + 1)?;
        let len = number(at + 1, end)?;
        let start = end + 2;
        if b.len() < start + len + 2 {
            return None;
        }
        args.push(&b[start..start + len]);
        at = start + len + 2;
    }
    Some((args, at))
}

fn null_reply(args: &[&[u8]], out: &mut Vec<u8>) {
    let name = args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
    match name.as_slice() {
        b"PING" => out.extend_from_slice(b"+PONG\r\n"),
        b"GET" | b"EVAL" | b"EVALSHA" | b"EVAL_RO" | b"EVALSHA_RO" | b"FCALL" => out.extend_from_slice(b"$-1\r\n"),
        b"SCRIPT" if args.len() == 3 && args[1].eq_ignore_ascii_case(b"load") => {
            let sha = sha1_smol::Sha1::from(args[2]).digest().to_string();
            out.extend_from_slice(format!("${}\r\n{sha}\r\n", sha.len()).as_bytes());
        }
        _ => out.extend_from_slice(b"+OK\r\n"),
    }
}

/// The hidden first argument that runs this binary as `spawn:null-uring`.
const NULL_URING_SERVER_FLAG: &str = "--serve-null-uring";

#[cfg(not(all(target_os = "linux", feature = "io-uring")))]
fn null_uring_server(_port: u16) -> ! {
    fail("spawn:null-uring needs a build with `--features io-uring` (Linux only)")
}

/// `spawn:null-uring`: `spawn:null` driven by one io_uring instead of epoll.
/// One thread, one ring: an accept always in flight, and per connection
/// either a receive or a send in flight (one write per read, as `spawn:null`
/// and rlockd do), so a connection's replies go out in the order its commands
/// came in. The same framing and reply table as `spawn:null`.
#[cfg(all(target_os = "linux", feature = "io-uring"))]
fn null_uring_server(port: u16) -> ! {
    use io_uring::{opcode, squeue, types, IoUring};
    use std::os::fd::{AsRawFd, IntoRawFd};

    const ACCEPT: u64 = u64::MAX;
    struct Conn {
        fd: i32,
        input: Vec<u8>,
        out: Vec<u8>,
        sent: usize,
    }
    fn recv(c: &mut Conn, id: usize) -> squeue::Entry {
        if c.input.capacity() - c.input.len() < 4096 {
            c.input.reserve(16 * 1024);
        }
        let spare = c.input.spare_capacity_mut();
        opcode::Recv::new(types::Fd(c.fd), spare.as_mut_ptr().cast(), spare.len() as u32).build().user_data(id as u64)
    }
    fn send(c: &Conn, id: usize) -> squeue::Entry {
        let rest = &c.out[c.sent..];
        opcode::Send::new(types::Fd(c.fd), rest.as_ptr(), rest.len() as u32).build().user_data(id as u64)
    }

    let listener = std::net::TcpListener::bind(("127.0.0.1", port))
        .unwrap_or_else(|e| fail(&format!("bare responder: bind 127.0.0.1:{port}: {e}")));
    let lfd = listener.as_raw_fd();
    let mut ring = IoUring::new(1024).unwrap_or_else(|e| fail(&format!("io_uring: {e}")));
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut pending: Vec<squeue::Entry> = Vec::new();
    let accept =
        opcode::Accept::new(types::Fd(lfd), std::ptr::null_mut(), std::ptr::null_mut()).build().user_data(ACCEPT);
    pending.push(accept.clone());
    loop {
        {
            let mut sq = ring.submission();
            for e in pending.drain(..) {
                // SAFETY: every buffer an entry points into lives in `conns`
                // and is neither moved nor freed until its completion arrives
                // (one operation in flight per connection).
                unsafe { sq.push(&e) }.unwrap_or_else(|_| fail("io_uring: submission queue full"));
            }
        }
        ring.submit_and_wait(1).unwrap_or_else(|e| fail(&format!("io_uring: {e}")));
        let done: Vec<(u64, i32)> = ring.completion().map(|c| (c.user_data(), c.result())).collect();
        for (data, res) in done {
            if data == ACCEPT {
                pending.push(accept.clone());
                if res < 0 {
                    continue;
                }
                let stream = unsafe { <std::net::TcpStream as std::os::fd::FromRawFd>::from_raw_fd(res) };
                let _ = stream.set_nodelay(true);
                let fd = stream.into_raw_fd();
                let id = free.pop().unwrap_or_else(|| {
                    conns.push(None);
                    conns.len() - 1
                });
                let mut c =
                    Conn { fd, input: Vec::with_capacity(16 * 1024), out: Vec::with_capacity(16 * 1024), sent: 0 };
                pending.push(recv(&mut c, id));
                conns[id] = Some(c);
                continue;
            }
            let id = data as usize;
            let Some(c) = conns[id].as_mut() else { continue };
            if res <= 0 {
                unsafe { libc::close(c.fd) };
                conns[id] = None;
                free.push(id);
                continue;
            }
            if !c.out.is_empty() {
                // A send completed.
                c.sent += res as usize;
                if c.sent < c.out.len() {
                    pending.push(send(c, id));
                } else {
                    c.out.clear();
                    c.sent = 0;
                    pending.push(recv(c, id));
                }
                continue;
            }
            // SAFETY: the kernel wrote `res` bytes into the spare capacity.
            unsafe { c.input.set_len(c.input.len() + res as usize) };
            let mut at = 0;
            while let Some((args, len)) = frame_command(&c.input[at..]) {
                null_reply(&args, &mut c.out);
                at += len;
            }
            c.input.drain(..at);
            if c.out.is_empty() {
                pending.push(recv(c, id));
            } else {
                pending.push(send(c, id));
            }
        }
    }
}
