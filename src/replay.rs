//! `rlockd replay <file> [--until N]`: runs a recording (`RLOCKD RECORD`,
//! `rlockd --record`; format in the library's `control/record.rs`) again.
//!
//! It starts the recorded topology as a child `rlockd` (the recorded
//! options, the recorded ports when they were consecutive, test control on,
//! its stdin watchdog on a pipe only this process holds), opens one
//! connection per recorded client — in ascending order of the recorded
//! client ids, with throw-away connections in between, so each server
//! gives them the ids they had — and feeds every command in the recorded
//! global order, one at a time: before each, the node's clock is frozen at
//! the command's recorded time (`RLOCKD CLOCK SET`), then the command is
//! sent on its client's connection and its reply read (pub/sub messages
//! and invalidations are skipped, as the recording left them out) and
//! compared byte for byte with the recorded one (or its SHA-256).
//!
//! Not compared, because they answer with the process, not the run:
//! [`UNCOMPARED`] (wall time in microseconds, random picks, run ids and
//! cluster node ids, statistics). A Sentinel's own failover (its timers)
//! is not replayed; a failover a command asked for is.
//!
//! The first differing reply is printed with both versions (exit 1);
//! otherwise `N commands, every reply identical`. `--until N` stops before
//! the command of global index N, prints where each recorded node now
//! listens, and keeps the servers up until this process is stopped.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::Duration;

use rlockd::protocol::frames;

/// Commands whose replies are not compared (lowercase, `container|sub`).
pub const UNCOMPARED: &[&str] = &[
    "time",
    "info",
    "randomkey",
    "spop",
    "srandmember",
    "hrandfield",
    "zrandmember",
    "lastsave",
    "role",
    "client|id",
    "client|list",
    "client|info",
    "cluster|nodes",
    "cluster|myid",
    "cluster|slots",
    "cluster|shards",
    "cluster|replicas",
    "cluster|slaves",
    "slowlog|get",
    "latency|latest",
    "latency|history",
    "latency|histogram",
    "memory|stats",
    "memory|doctor",
    "rlockd|clock",
    "rlockd|scripts",
    "rlockd|repl|status",
    "object|idletime",
    "object|freq",
];

const USAGE: &str = "Usage: rlockd replay <file> [--until <n>]

Starts the topology the recording names, feeds each recorded command in its
recorded order at its recorded server time, and compares every reply with the
recorded one: prints \"N commands, every reply identical\", or the first command
whose reply differs with both replies (exit 1). With --until <n> it stops before
the command of index n (the \"i\" of its line) and keeps the servers listening,
their addresses printed, until it is stopped (Ctrl-C).
";

/// The topology's command-line options, as the recording's first line
/// keeps them (the Sentinels' ports are added from their addresses).
pub fn topology_args(s: &super::Settings) -> Vec<String> {
    let mut a = Vec::new();
    let mut opt = |name: &str, v: String| {
        a.push(format!("--{name}"));
        a.push(v);
    };
    if s.nodes > 1 {
        opt("nodes", s.nodes.to_string());
    }
    if s.cluster > 0 {
        opt("cluster", s.cluster.to_string());
        opt("cluster-replicas", s.cluster_replicas.to_string());
    }
    if s.replicas > 0 {
        opt("replicas", s.replicas.to_string());
    }
    if let Some(ms) = s.sentinel_down_after {
        opt("sentinel-down-after", ms.to_string());
    }
    if let Some(pw) = &s.requirepass {
        opt("requirepass", pw.clone());
    }
    opt("databases", s.databases.to_string());
    for (k, v) in &s.params {
        opt(k, v.clone());
    }
    a
}

pub fn main(args: &[String]) -> ExitCode {
    let mut file = None;
    let mut until = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "--until" => {
                match args.get(i + 1).and_then(|n| n.parse::<u64>().ok()) {
                    Some(n) => until = Some(n),
                    None => return fail("--until takes a command index"),
                }
                i += 1;
            }
            a if file.is_none() && !a.starts_with('-') => file = Some(a.to_string()),
            a => return fail(&format!("unexpected argument '{a}'")),
        }
        i += 1;
    }
    let Some(file) = file else { return fail("which recording? (rlockd replay <file>)") };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => return fail(&format!("cannot read '{file}': {e}")),
    };
    match Replay::run(&text, until) {
        Ok(code) => code,
        Err(e) => fail(&e),
    }
}

fn fail(why: &str) -> ExitCode {
    eprintln!("rlockd replay: {why}");
    ExitCode::from(2)
}

/// One recorded line, as the replay needs it.
enum Line {
    Cmd {
        i: u64,
        node: String,
        client: u64,
        seq: u64,
        time_ms: u64,
        args: Vec<Vec<u8>>,
        /// What it wrote to its client (nothing but its subscribe confirmations, if any,
        /// when it blocked or ran under `CLIENT REPLY OFF|SKIP`).
        reply: Expected,
        /// The connection was closed instead.
        closed: bool,
    },
    Unblock {
        i: u64,
        node: String,
        client: u64,
        /// When it was served (or timed out).
        time_ms: u64,
        reply: Option<Expected>,
    },
}

/// A recorded reply: its frames, or their digest.
struct Expected {
    bytes: Option<Vec<u8>>,
    digest: Option<String>,
    len: usize,
    frames: usize,
}

fn parse_line(v: &Json) -> Result<Option<Line>, String> {
    let expected = |v: &Json| -> Result<Expected, String> {
        let frames = v.get("frames").and_then(Json::num).unwrap_or(0) as usize;
        let bytes = v.get("reply").map(Json::bytes).transpose()?;
        let digest = v.get("digest").and_then(Json::str).map(str::to_string);
        let len = v.get("len").and_then(Json::num).unwrap_or(0) as usize;
        Ok(Expected { bytes, digest, len, frames })
    };
    let num = |k: &str| v.get(k).and_then(Json::num).ok_or(format!("a line without '{k}'"));
    let flag = |k: &str| matches!(v.get(k), Some(Json::Bool(true)));
    let node = || v.get("node").and_then(Json::str).map(str::to_string).ok_or("a line without 'node'".to_string());
    Ok(match v.get("t").and_then(Json::str) {
        Some("cmd") => Some(Line::Cmd {
            i: num("i")?,
            node: node()?,
            client: num("client")?,
            seq: num("seq")?,
            time_ms: num("time_us")? / 1000,
            args: match v.get("args") {
                Some(Json::Arr(a)) => a.iter().map(Json::bytes).collect::<Result<_, _>>()?,
                _ => return Err("a command without 'args'".into()),
            },
            reply: expected(v)?,
            closed: flag("closed"),
        }),
        Some("unblock") => Some(Line::Unblock {
            i: num("i")?,
            node: node()?,
            client: num("client")?,
            time_ms: num("time_us")? / 1000,
            reply: if flag("closed") { None } else { Some(expected(v)?) },
        }),
        _ => None,
    })
}

/// A connection to a node and what it has read and not yet used.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn open(addr: SocketAddr) -> Result<Conn, String> {
        let s = TcpStream::connect(addr).map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        let _ = s.set_nodelay(true);
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        Ok(Conn { s, buf: Vec::new() })
    }

    fn send(&mut self, args: &[Vec<u8>]) -> Result<(), String> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.s.write_all(&out).map_err(|e| format!("write: {e}"))
    }

    /// The next frame that is not a message; `None` at end of stream.
    fn frame(&mut self) -> Result<Option<Vec<u8>>, String> {
        loop {
            if let Some(n) = frames::frame_len(&self.buf) {
                let f: Vec<u8> = self.buf.drain(..n).collect();
                if frames::is_message(&f) {
                    continue;
                }
                return Ok(Some(f));
            }
            let mut chunk = [0u8; 16384];
            match self.s.read(&mut chunk) {
                Ok(0) => return Ok(None),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(None),
                Err(e) => return Err(format!("no reply ({e})")),
            }
        }
    }

    /// `n` frames, concatenated (`None`: the connection ended first).
    fn frames(&mut self, n: usize) -> Result<Option<Vec<u8>>, String> {
        let mut all = Vec::new();
        for _ in 0..n {
            match self.frame()? {
                Some(f) => all.extend_from_slice(&f),
                None => return Ok(None),
            }
        }
        Ok(Some(all))
    }

    fn call(&mut self, args: &[&str]) -> Result<Vec<u8>, String> {
        self.send(&args.iter().map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>())?;
        self.frame()?.ok_or_else(|| "connection closed".to_string())
    }
}

struct Node {
    addr: SocketAddr,
    /// Opened after the clients' connections, so it takes none of their ids.
    control: Option<Conn>,
    clock_ms: Option<u64>,
}

impl Node {
    fn control(&mut self) -> Result<&mut Conn, String> {
        if self.control.is_none() {
            self.control = Some(Conn::open(self.addr)?);
        }
        Ok(self.control.as_mut().expect("opened"))
    }
}

struct Replay {
    child: Child,
    /// Recorded address → the node now.
    nodes: BTreeMap<String, Node>,
    /// The recorded addresses in the order of the ready lines.
    order: Vec<String>,
    /// Recorded `ip:port` and port → the replay's, for arguments naming a node.
    renames: BTreeMap<Vec<u8>, Vec<u8>>,
    conns: BTreeMap<(String, u64), Conn>,
    /// The topology has replicas: after each command, its node's links are
    /// let deliver what they hold (as in-process replication does at once).
    replicated: bool,
}

impl Drop for Replay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Replay {
    fn run(text: &str, until: Option<u64>) -> Result<ExitCode, String> {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let head = Json::parse(lines.next().ok_or("an empty recording")?)?;
        if head.get("t").and_then(Json::str) != Some("rlockd-record") {
            return Err("not a recording (its first line is not the rlockd-record header)".into());
        }
        let list = |k: &str| -> Vec<String> {
            match head.get(k) {
                Some(Json::Arr(a)) => a.iter().filter_map(|v| v.str().map(str::to_string)).collect(),
                _ => Vec::new(),
            }
        };
        let (args, nodes, sentinels) = (list("args"), list("nodes"), list("sentinels"));
        let mut recorded = Vec::new();
        for (n, l) in lines.enumerate() {
            let v = Json::parse(l).map_err(|e| format!("line {}: {e}", n + 2))?;
            if let Some(line) = parse_line(&v).map_err(|e| format!("line {}: {e}", n + 2))? {
                recorded.push(line);
            }
        }
        let mut nodes = nodes;
        if nodes.is_empty() {
            // Recorded in a process that did not say its topology: standalone
            // nodes, in the order they were first seen.
            for l in &recorded {
                if let Line::Cmd { node, .. } = l {
                    if !nodes.contains(node) {
                        nodes.push(node.clone());
                    }
                }
            }
        }
        let mut r = Replay::start(&args, &nodes, &sentinels)?;
        r.open_clients(&recorded)?;
        for n in r.nodes.values_mut() {
            n.control()?;
        }
        let (mut compared, mut skipped) = (0u64, BTreeSet::new());
        for line in &recorded {
            match line {
                Line::Cmd { i, node, client, seq, time_ms, args, reply, closed } => {
                    if until.is_some_and(|u| *i >= u) {
                        r.hold(*i);
                    }
                    r.set_clock(node, *time_ms)?;
                    let args: Vec<Vec<u8>> =
                        args.iter().map(|a| r.renames.get(a).cloned().unwrap_or_else(|| a.clone())).collect();
                    let key = (node.clone(), *client);
                    let conn = r.conns.get_mut(&key).ok_or("a client with no connection")?;
                    conn.send(&args)?;
                    if *closed {
                        // The same fault closes it again: read to the end.
                        while conn.frame()?.is_some() {}
                        r.conns.remove(&key);
                        continue;
                    }
                    let got = conn.frames(reply.frames)?;
                    if r.replicated {
                        r.settle(node)?;
                    }
                    let name = command_name(&args);
                    if uncompared(&name) {
                        skipped.insert(name);
                        continue;
                    }
                    compared += 1;
                    let same = reply.matches(got.as_deref())
                        || name.starts_with("rlockd|") && reply.matches_masked(got.as_deref());
                    if !same {
                        let what = format!(
                            "command {i} (node {node}, client {client}, its command {seq}): {}",
                            show_args(&args)
                        );
                        return Ok(differs(&what, reply, got.as_deref()));
                    }
                }
                Line::Unblock { i, node, client, time_ms, reply } => {
                    if until.is_some_and(|u| *i >= u) {
                        r.hold(*i);
                    }
                    // A wait that timed out ends when the clock reaches its time.
                    r.set_clock(node, *time_ms)?;
                    let key = (node.clone(), *client);
                    let conn = r.conns.get_mut(&key).ok_or("a blocked client with no connection")?;
                    match reply {
                        Some(reply) => {
                            let got = conn.frames(reply.frames)?;
                            compared += 1;
                            if !reply.matches(got.as_deref()) {
                                return Ok(differs(
                                    &format!("the reply of blocked client {client} (line {i})"),
                                    reply,
                                    got.as_deref(),
                                ));
                            }
                        }
                        None => {
                            r.conns.remove(&key);
                        }
                    }
                }
            }
        }
        if let Some(u) = until {
            r.hold(u);
        }
        let count = recorded.iter().filter(|l| matches!(l, Line::Cmd { .. })).count();
        let mut note = String::new();
        if !skipped.is_empty() {
            let names: Vec<String> = skipped.iter().map(|s| s.to_uppercase().replace('|', " ")).collect();
            note = format!(" ({} compared; not compared: {})", compared, names.join(", "));
        }
        let dropped = head.get("dropped").and_then(Json::num).unwrap_or(0);
        if dropped > 0 {
            note.push_str(&format!(
                " (the recording reached its MAXBYTES: the {dropped} lines after these were not kept)"
            ));
        }
        println!("{count} commands, every reply identical{note}");
        Ok(ExitCode::SUCCESS)
    }

    /// Starts the child with the recorded topology and connects to each node.
    fn start(args: &[String], nodes: &[String], sentinels: &[String]) -> Result<Replay, String> {
        let ports: Vec<u16> = nodes.iter().filter_map(|n| n.parse::<SocketAddr>().ok()).map(|a| a.port()).collect();
        let consecutive = !ports.is_empty() && ports.windows(2).all(|w| w[1] == w[0].wrapping_add(1));
        let exe = std::env::current_exe().map_err(|e| format!("cannot find the rlockd binary: {e}"))?;
        let mut cmd = Command::new(exe);
        cmd.args(args);
        let sentinel_ports: Vec<String> =
            sentinels.iter().filter_map(|s| s.parse::<SocketAddr>().ok()).map(|a| a.port().to_string()).collect();
        if !sentinel_ports.is_empty() {
            cmd.arg("--sentinel").arg(sentinel_ports.join(","));
        }
        let port = if consecutive { ports[0] } else { 0 };
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--test-control", "yes"]);
        cmd.env("RLOCKD_STDIN_WATCHDOG", "1").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn().map_err(|e| format!("cannot start rlockd: {e}"))?;
        let out = child.stdout.take().ok_or("no stdout")?;
        let mut ready = Vec::new();
        let mut lines = BufReader::new(out).lines();
        for l in lines.by_ref() {
            let l = l.map_err(|e| e.to_string())?;
            if let Some(addr) = l.split(" on ").nth(1).and_then(|r| r.split(' ').next()) {
                ready.push(addr.to_string());
            }
            if ready.len() == nodes.len() + sentinels.len() {
                break;
            }
        }
        // The child's stdout stays read: a write to a closed pipe would fail it.
        std::thread::spawn(move || for _ in lines {});
        if ready.len() < nodes.len() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("rlockd {} did not start (the recorded ports may be in use)", args.join(" ")));
        }
        let replicated = args.windows(2).any(|w| {
            (w[0] == "--replicas" || w[0] == "--cluster-replicas") && w[1].parse::<u32>().is_ok_and(|n| n > 0)
        });
        let mut r = Replay {
            child,
            nodes: BTreeMap::new(),
            order: nodes.to_vec(),
            renames: BTreeMap::new(),
            conns: BTreeMap::new(),
            replicated,
        };
        for (old, new) in nodes.iter().zip(&ready) {
            let addr: SocketAddr = new.parse().map_err(|_| format!("bad ready line address {new}"))?;
            if old != new {
                r.renames.insert(old.as_bytes().to_vec(), new.as_bytes().to_vec());
                if let Ok(o) = old.parse::<SocketAddr>() {
                    r.renames.insert(o.port().to_string().into_bytes(), addr.port().to_string().into_bytes());
                }
            }
            r.nodes.insert(old.clone(), Node { addr, control: None, clock_ms: None });
        }
        Ok(r)
    }

    /// Opens each recorded client's connection, in ascending id order per
    /// node, throwing away the connections whose ids no recorded client had.
    fn open_clients(&mut self, recorded: &[Line]) -> Result<(), String> {
        let mut wanted: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
        for l in recorded {
            if let Line::Cmd { node, client, .. } = l {
                wanted.entry(node.clone()).or_default().insert(*client);
            }
        }
        for (node, ids) in wanted {
            let addr =
                self.nodes.get(&node).ok_or(format!("a command on {node}, which the header does not list"))?.addr;
            let mut spare = 0;
            for id in ids {
                loop {
                    let mut c = Conn::open(addr)?;
                    let got = c.call(&["CLIENT", "ID"])?;
                    let got: u64 = std::str::from_utf8(&got)
                        .ok()
                        .and_then(|s| s.trim_start_matches(':').trim().parse().ok())
                        .unwrap_or(u64::MAX);
                    // Past it (or too many throw-aways): take this one.
                    if got >= id || spare > 100_000 {
                        self.conns.insert((node.clone(), id), c);
                        break;
                    }
                    spare += 1;
                }
            }
        }
        Ok(())
    }

    /// Freezes `node`'s clock at `ms` (once per change).
    fn set_clock(&mut self, node: &str, ms: u64) -> Result<(), String> {
        let n = self.nodes.get_mut(node).ok_or(format!("unknown node {node}"))?;
        if n.clock_ms == Some(ms) {
            return Ok(());
        }
        // A replayed RLOCKD CLOCK command may have let the clock run: freeze again.
        n.control()?.call(&["RLOCKD", "CLOCK", "FREEZE"])?;
        let r = n.control()?.call(&["RLOCKD", "CLOCK", "SET", &ms.to_string()])?;
        if r.first() != Some(&b':') {
            return Err(format!("RLOCKD CLOCK SET on {node}: {}", String::from_utf8_lossy(&r).trim_end()));
        }
        n.clock_ms = Some(ms);
        Ok(())
    }

    /// Waits until `node`'s replication links that are neither paused nor
    /// broken nor lagged on purpose hold no pending write (2 s at most).
    fn settle(&mut self, node: &str) -> Result<(), String> {
        let n = self.nodes.get_mut(node).ok_or(format!("unknown node {node}"))?;
        for _ in 0..2000 {
            let status = n.control()?.call(&["RLOCKD", "REPL", "STATUS"])?;
            let text = String::from_utf8_lossy(&status);
            let field = |link: &str, name: &str| -> i64 {
                let key = format!("${}\r\n{name}\r\n:", name.len());
                link.split(&key).nth(1).and_then(|v| v.split('\r').next()).and_then(|v| v.parse().ok()).unwrap_or(0)
            };
            let busy = text.split("$7\r\nprimary\r\n").skip(1).any(|link| {
                field(link, "pending_writes") > 0
                    && field(link, "paused") == 0
                    && field(link, "broken") == 0
                    && field(link, "lag_ms") == 0
            });
            if !busy {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// `--until`: says where the servers are and waits to be stopped.
    fn hold(&mut self, at: u64) -> ! {
        println!("stopped before command {at}; the servers are listening:");
        for old in &self.order {
            if let Some(n) = self.nodes.get(old) {
                println!("node {old} at {}", n.addr);
            }
        }
        let _ = std::io::stdout().flush();
        // The child's clocks stay frozen where the replay left them; it exits
        // with this process (its stdin watchdog).
        loop {
            std::thread::park();
        }
    }
}

/// True if `name` (or the container it is a subcommand of) is [`UNCOMPARED`].
fn uncompared(name: &str) -> bool {
    // `COMMAND` alone lists the table in its hash order, as Redis does.
    name == "command"
        || UNCOMPARED.iter().any(|u| name == *u || name.strip_prefix(u).is_some_and(|rest| rest.starts_with('|')))
}

/// The name [`UNCOMPARED`] lists a command under.
fn command_name(args: &[Vec<u8>]) -> String {
    let lower = |a: &[u8]| String::from_utf8_lossy(a).to_ascii_lowercase();
    let first = args.first().map(|a| lower(a)).unwrap_or_default();
    const CONTAINERS: &[&str] = &["command", "client", "cluster", "slowlog", "latency", "memory", "rlockd", "object"];
    match (args.get(1), args.get(2)) {
        (Some(sub), Some(op)) if first == "rlockd" => format!("{first}|{}|{}", lower(sub), lower(op)),
        (Some(sub), _) if CONTAINERS.contains(&first.as_str()) => format!("{first}|{}", lower(sub)),
        _ => first,
    }
}

impl Expected {
    fn matches(&self, got: Option<&[u8]>) -> bool {
        let Some(got) = got else { return false };
        match (&self.bytes, &self.digest) {
            (Some(b), _) => b[..] == got[..],
            (None, Some(d)) => {
                use sha2::Digest;
                got.len() == self.len && &hex(&sha2::Sha256::digest(got)) == d
            }
            (None, None) => got.is_empty(),
        }
    }

    /// True if the replies differ only in a replica's acknowledged offset
    /// (`it had offset N of M` in a lost grant's explanation): a replica
    /// acknowledges every second of wall time, which no replay repeats.
    fn matches_masked(&self, got: Option<&[u8]>) -> bool {
        match (&self.bytes, got) {
            (Some(b), Some(g)) => mask_offsets(b) == mask_offsets(g),
            _ => false,
        }
    }

    fn show(&self) -> String {
        match (&self.bytes, &self.digest) {
            (Some(b), _) => show_bytes(b),
            (None, Some(d)) => format!("{} bytes, sha256 {d}", self.len),
            (None, None) => "(nothing)".into(),
        }
    }
}

/// `b` with each `offset <digits> of` read `offset # of`, and the bulk
/// lengths (which the digits change) dropped.
fn mask_offsets(b: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(b);
    let mut out = String::new();
    for (n, part) in text.split("offset ").enumerate() {
        if n > 0 {
            out.push_str("offset ");
            let digits = part.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && part[digits..].starts_with(" of") {
                out.push('#');
                out.push_str(&part[digits..]);
                continue;
            }
        }
        out.push_str(part);
    }
    out.split("\r\n")
        .filter(|l| !(l.starts_with('$') && l[1..].bytes().all(|c| c.is_ascii_digit())))
        .collect::<Vec<_>>()
        .join("\n")
        .into_bytes()
}

fn differs(what: &str, want: &Expected, got: Option<&[u8]>) -> ExitCode {
    println!("the reply differs at {what}");
    println!("  recorded: {}", want.show());
    match got {
        Some(g) if want.bytes.is_none() && want.digest.is_some() => {
            use sha2::Digest;
            println!("  replayed: {} bytes, sha256 {}", g.len(), hex(&sha2::Sha256::digest(g)));
        }
        Some(g) => println!("  replayed: {}", show_bytes(g)),
        None => println!("  replayed: (the connection was closed)"),
    }
    ExitCode::from(1)
}

fn hex(b: &[u8]) -> String {
    rlockd::recording::hex(b)
}

fn show_bytes(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        match c {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

fn show_args(args: &[Vec<u8>]) -> String {
    args.iter().map(|a| show_bytes(a)).collect::<Vec<_>>().join(" ")
}

/// The JSON the recorder writes: objects, arrays, strings, integers,
/// booleans, null.
#[derive(Debug)]
enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn parse(s: &str) -> Result<Json, String> {
        let mut p = Parser { b: s.as_bytes(), i: 0 };
        let v = p.value()?;
        p.ws();
        if p.i != p.b.len() {
            return Err(format!("trailing characters at {}", p.i));
        }
        Ok(v)
    }

    fn get(&self, k: &str) -> Option<&Json> {
        match self {
            Json::Obj(o) => o.iter().find(|(n, _)| n == k).map(|(_, v)| v),
            _ => None,
        }
    }

    fn str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    fn num(&self) -> Option<u64> {
        match self {
            Json::Num(n) if *n >= 0.0 => Some(*n as u64),
            _ => None,
        }
    }

    /// A string, or `{"hex": …}` for bytes that are not UTF-8.
    fn bytes(&self) -> Result<Vec<u8>, String> {
        match self {
            Json::Str(s) => Ok(s.as_bytes().to_vec()),
            Json::Obj(_) => {
                let h = self.get("hex").and_then(Json::str).ok_or("an object that is not {\"hex\": …}")?;
                (0..h.len() / 2)
                    .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).map_err(|e| e.to_string()))
                    .collect()
            }
            _ => Err("bytes that are neither a string nor {\"hex\": …}".into()),
        }
    }
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.b.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at {}", c as char, self.i))
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.ws();
        match self.b.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut o = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Json::Obj(o));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.eat(b':')?;
                    o.push((k, self.value()?));
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Obj(o));
                        }
                        _ => return Err(format!("expected ',' or '}}' at {}", self.i)),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Json::Arr(a));
                }
                loop {
                    a.push(self.value()?);
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Arr(a));
                        }
                        _ => return Err(format!("expected ',' or ']' at {}", self.i)),
                    }
                }
            }
            Some(b'"') => Ok(Json::Str(self.string()?)),
            Some(b't') if self.b[self.i..].starts_with(b"true") => {
                self.i += 4;
                Ok(Json::Bool(true))
            }
            Some(b'f') if self.b[self.i..].starts_with(b"false") => {
                self.i += 5;
                Ok(Json::Bool(false))
            }
            Some(b'n') if self.b[self.i..].starts_with(b"null") => {
                self.i += 4;
                Ok(Json::Null)
            }
            Some(c) if c.is_ascii_digit() || *c == b'-' => {
                let start = self.i;
                while self.b.get(self.i).is_some_and(|c| c.is_ascii_digit() || b"-+.eE".contains(c)) {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.b[start..self.i]).map_err(|e| e.to_string())?;
                t.parse().map(Json::Num).map_err(|_| format!("bad number {t}"))
            }
            _ => Err(format!("unexpected input at {}", self.i)),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            let c = *self.b.get(self.i).ok_or("unterminated string")?;
            self.i += 1;
            match c {
                b'"' => return String::from_utf8(out).map_err(|e| e.to_string()),
                b'\\' => {
                    let e = *self.b.get(self.i).ok_or("unterminated string")?;
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let h = self.b.get(self.i..self.i + 4).ok_or("short \\u escape")?;
                            let code = u32::from_str_radix(std::str::from_utf8(h).map_err(|e| e.to_string())?, 16)
                                .map_err(|e| e.to_string())?;
                            self.i += 4;
                            let ch = char::from_u32(code).ok_or("a \\u escape that is not a character")?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_back() {
        let v = Json::parse(
            r#"{"t":"cmd","i":3,"args":["SET",{"hex":"ff00"},"a\"\r\n\u0001"],"blocked":true,"x":null,"n":-1.5}"#,
        )
        .unwrap();
        assert_eq!(v.get("i").and_then(Json::num), Some(3));
        let Some(Json::Arr(a)) = v.get("args") else { panic!() };
        assert_eq!(a[1].bytes().unwrap(), vec![0xff, 0]);
        assert_eq!(a[2].bytes().unwrap(), b"a\"\r\n\x01".to_vec());
        assert!(matches!(v.get("blocked"), Some(Json::Bool(true))));
        assert!(Json::parse("{\"a\":1} x").is_err());
    }

    #[test]
    fn names_of_containers_carry_their_subcommand() {
        let a = |s: &[&str]| s.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(command_name(&a(&["CLIENT", "Id"])), "client|id");
        assert_eq!(command_name(&a(&["get", "k"])), "get");
        assert_eq!(command_name(&a(&["RLOCKD", "CLOCK", "INFO"])), "rlockd|clock|info");
        assert_eq!(
            mask_offsets(b"*1\r\n$30\r\nx (it had offset 83 of 144) y\r\n"),
            mask_offsets(b"*1\r\n$29\r\nx (it had offset 0 of 144) y\r\n")
        );
        assert_ne!(mask_offsets(b"$8\r\noffset 1\r\n"), mask_offsets(b"$8\r\noffset 2\r\n"));
        assert!(uncompared("command") && !uncompared("command|info"));
        assert!(uncompared("rlockd|clock|advance") && uncompared("client|id") && !uncompared("rlockd|locks|x"));
    }
}
