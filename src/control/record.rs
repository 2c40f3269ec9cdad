//! The recording of a run (`RLOCKD RECORD`, `rlockd --record <path>`): one
//! JSON line per command executed on any node of the process, in the order
//! the nodes executed them, for the binary's `rlockd replay` to feed again.
//!
//! The recorder is the process's, not a server's: every node of a topology
//! (cluster, replicas, `--nodes`) writes to it, and its global index orders
//! their commands as they ran (each line is taken under its node's core
//! lock, so a node's own lines follow its execution order). Off, it costs
//! the connection one relaxed atomic load per command ([`on`]).
//!
//! Lines (`t` names the kind):
//!
//! * `cmd`: `i` (global index), `node` (`ip:port`), `client` (id), `cname`
//!   and `lib` (`CLIENT SETNAME`/`SETINFO`), `seq` (per connection),
//!   `time_us` (the server clock's time of the command, virtual when
//!   driven), `wall_ms`, `db`, `resp`, `args`, the `reply` — every frame
//!   the command wrote to its client except pub/sub messages and
//!   invalidations (`protocol::frames::is_message`), concatenated, with
//!   their count `frames`; over [`DIGEST_OVER`] bytes its SHA-256
//!   `digest` and `len` instead — `faults` (the injected faults that hit
//!   it), and `blocked` (its reply comes in an `unblock` line), `closed`
//!   (the connection was closed instead of answered), `silent` (`CLIENT
//!   REPLY OFF|SKIP`).
//! * `unblock`: a blocked command's reply (`node`, `client`, `seq`, `time_us`,
//!   `reply`).
//! * `mark`: what test control did to the topology, from the same source
//!   as the timeline's marks (`timeline::Marks::push`): `kind` (`clock`,
//!   `fault`, `crash`, `failover`, `slot`, `link`), `time_ms`, `text`.
//!
//! [`save`] writes a first line, `t: "rlockd-record"`, with the process's
//! topology ([`set_process`]: the binary's command-line options and the
//! ready lines' addresses) before the lines. Bytes that are not UTF-8 are
//! written `{"hex": "…"}`. Memory is bounded: past `MAXBYTES` of lines
//! the recorder keeps what it has (a prefix, which still replays) and
//! counts the lines it dropped.
//!
//! `RLOCKD RECORD …` commands themselves are not recorded.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Replies longer than this are recorded as a digest.
pub const DIGEST_OVER: usize = 4096;

/// The memory a recording takes by default (`RLOCKD RECORD START`).
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

static ON: AtomicBool = AtomicBool::new(false);
static STATE: Mutex<State> = Mutex::new(State::new());

struct State {
    buf: Vec<u8>,
    lines: u64,
    dropped: u64,
    max_bytes: usize,
    next_index: u64,
    /// Per connection (node port, client id): its last sequence number.
    seqs: BTreeMap<(u16, u64), u64>,
    /// Faults that hit a connection's command before its line is written.
    hits: BTreeMap<(u16, u64), Vec<String>>,
    /// Each node's address as written in its lines.
    node_names: BTreeMap<std::net::SocketAddr, String>,
    process: Process,
}

/// What [`save`] writes in the first line: how the process was started.
#[derive(Debug, Clone, Default)]
pub struct Process {
    /// The topology's command-line options (`--cluster 3`, `--replicas 1`…).
    pub args: Vec<String>,
    /// The servers' addresses, in the order of their ready lines.
    pub nodes: Vec<String>,
    /// The Sentinels' addresses.
    pub sentinels: Vec<String>,
}

impl State {
    const fn new() -> State {
        State {
            buf: Vec::new(),
            lines: 0,
            dropped: 0,
            max_bytes: DEFAULT_MAX_BYTES,
            next_index: 0,
            seqs: BTreeMap::new(),
            hits: BTreeMap::new(),
            node_names: BTreeMap::new(),
            process: Process { args: Vec::new(), nodes: Vec::new(), sentinels: Vec::new() },
        }
    }

    fn push(&mut self, line: String) {
        if self.buf.len() + line.len() + 1 > self.max_bytes {
            self.dropped += 1;
            return;
        }
        self.buf.extend_from_slice(line.as_bytes());
        self.buf.push(b'\n');
        self.lines += 1;
    }
}

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// True while recording: the one check a command pays.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Starts a new recording of at most `max_bytes` of lines (the previous
/// one is dropped).
pub fn start(max_bytes: usize) {
    let mut s = state();
    let process = std::mem::take(&mut s.process);
    *s = State::new();
    s.process = process;
    s.max_bytes = max_bytes;
    ON.store(true, Ordering::Relaxed);
}

/// Stops recording; what was recorded stays for [`save`].
pub fn stop() {
    ON.store(false, Ordering::Relaxed);
}

/// Records how the process was started (the binary, once its servers are up).
pub fn set_process(p: Process) {
    state().process = p;
}

/// `RLOCKD RECORD STATUS`.
#[derive(Debug, Clone, Copy)]
pub struct Status {
    /// True while recording.
    pub recording: bool,
    /// Lines kept.
    pub lines: u64,
    /// Their bytes.
    pub bytes: usize,
    /// The bound on those bytes (`MAXBYTES`).
    pub max_bytes: usize,
    /// Lines not kept because the bound was reached.
    pub dropped: u64,
}

/// The recording's state now.
pub fn status() -> Status {
    let s = state();
    Status { recording: on(), lines: s.lines, bytes: s.buf.len(), max_bytes: s.max_bytes, dropped: s.dropped }
}

/// Writes the recording to `path` (header line first); returns its lines.
pub fn save(path: &std::path::Path) -> std::io::Result<u64> {
    let s = state();
    let mut head = String::from("{\"t\":\"rlockd-record\",\"format\":1,\"rlockd\":");
    json_str(&mut head, env!("CARGO_PKG_VERSION").as_bytes());
    for (name, list) in [("args", &s.process.args), ("nodes", &s.process.nodes), ("sentinels", &s.process.sentinels)] {
        let _ = write!(head, ",\"{name}\":");
        json_list(&mut head, list.iter().map(|a| a.as_bytes()));
    }
    let _ = writeln!(head, ",\"lines\":{},\"dropped\":{}}}", s.lines, s.dropped);
    let mut out = head.into_bytes();
    out.extend_from_slice(&s.buf);
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, &out)?;
    std::fs::rename(&tmp, path)?;
    Ok(s.lines)
}

/// A command that ran (or was refused, or closed its connection).
pub(crate) struct Command<'a> {
    pub node: std::net::SocketAddr,
    pub client: u64,
    pub name: &'a [u8],
    pub lib: &'a [u8],
    pub time_us: u64,
    pub db: usize,
    pub resp: u8,
    pub args: &'a [bytes::Bytes],
    /// Everything the command wrote to its client.
    pub out: &'a [u8],
    pub faults: Vec<String>,
    pub blocked: bool,
    pub closed: bool,
    pub silent: bool,
}

/// True for `RLOCKD RECORD …`, which is never recorded.
fn is_record_command(args: &[bytes::Bytes]) -> bool {
    args.len() >= 2 && args[0].eq_ignore_ascii_case(b"rlockd") && args[1].eq_ignore_ascii_case(b"record")
}

/// Records `c` as the next line.
pub(crate) fn command(c: &Command<'_>) {
    if is_record_command(c.args) {
        return;
    }
    let wall = wall_ms();
    let mut s = state();
    if !on() {
        return;
    }
    let conn = (c.node.port(), c.client);
    let seq = {
        let n = s.seqs.entry(conn).or_insert(0);
        *n += 1;
        *n
    };
    let hits = s.hits.remove(&conn).unwrap_or_default();
    let i = s.next_index;
    s.next_index += 1;
    let args_len: usize = c.args.iter().map(|a| a.len() + 3).sum();
    let mut l = String::with_capacity(200 + args_len + c.out.len().min(DIGEST_OVER) * 5 / 4);
    l.push_str("{\"t\":\"cmd\",\"i\":");
    num(&mut l, i);
    l.push_str(",\"node\":\"");
    l.push_str(s.node_names.entry(c.node).or_insert_with(|| c.node.to_string()));
    l.push_str("\",\"client\":");
    num(&mut l, c.client);
    l.push_str(",\"cname\":");
    json_str(&mut l, c.name);
    l.push_str(",\"lib\":");
    json_str(&mut l, c.lib);
    for (name, v) in
        [("seq", seq), ("time_us", c.time_us), ("wall_ms", wall), ("db", c.db as u64), ("resp", u64::from(c.resp))]
    {
        l.push_str(",\"");
        l.push_str(name);
        l.push_str("\":");
        num(&mut l, v);
    }
    l.push_str(",\"args\":");
    json_list(&mut l, c.args.iter().map(|a| &a[..]));
    reply_fields(&mut l, c.out);
    if !c.faults.is_empty() || !hits.is_empty() {
        l.push_str(",\"faults\":");
        json_list(&mut l, c.faults.iter().map(|f| f.as_bytes()).chain(hits.iter().map(|h| h.as_bytes())));
    }
    for (flag, set) in [("blocked", c.blocked), ("closed", c.closed), ("silent", c.silent)] {
        if set {
            let _ = write!(l, ",\"{flag}\":true");
        }
    }
    l.push('}');
    s.push(l);
}

/// Records the reply a blocked command finally got (`out`: what was
/// written for it), or its connection's end (`out` is `None`), at the
/// server's time `time_us` (a replay moves its clock there, so a timeout
/// ends the wait as it did).
pub(crate) fn unblocked(node: std::net::SocketAddr, client: u64, time_us: u64, out: Option<&[u8]>) {
    let wall = wall_ms();
    let mut s = state();
    if !on() {
        return;
    }
    let seq = s.seqs.get(&(node.port(), client)).copied().unwrap_or(0);
    let i = s.next_index;
    s.next_index += 1;
    let mut l = format!(
        "{{\"t\":\"unblock\",\"i\":{i},\"node\":\"{node}\",\"client\":{client},\"seq\":{seq},\"time_us\":{time_us},\"wall_ms\":{wall}"
    );
    match out {
        Some(out) => reply_fields(&mut l, out),
        None => l.push_str(",\"closed\":true"),
    }
    l.push('}');
    s.push(l);
}

/// Records a mark test control left for the timeline.
pub(crate) fn mark(time_ms: u64, kind: &str, text: &str) {
    if !on() {
        return;
    }
    let wall = wall_ms();
    let mut s = state();
    let i = s.next_index;
    s.next_index += 1;
    let mut l =
        format!("{{\"t\":\"mark\",\"i\":{i},\"kind\":\"{kind}\",\"time_ms\":{time_ms},\"wall_ms\":{wall},\"text\":");
    json_str(&mut l, text.as_bytes());
    l.push('}');
    s.push(l);
}

/// Notes a fault that hit the command `client` of `node` is running (its
/// line, written after it, lists it).
pub(crate) fn fault_hit(node: std::net::SocketAddr, client: u64, what: String) {
    if !on() {
        return;
    }
    state().hits.entry((node.port(), client)).or_default().push(what);
}

/// Appends `v` in decimal.
fn num(l: &mut String, v: u64) {
    l.push_str(itoa::Buffer::new().format(v));
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// `,"reply":…,"frames":n` (or the digest) for what a command wrote.
fn reply_fields(l: &mut String, out: &[u8]) {
    let all = crate::protocol::frames::split(out);
    let frames: Vec<&[u8]> = all.iter().copied().filter(|f| !crate::protocol::frames::is_message(f)).collect();
    let len: usize = frames.iter().map(|f| f.len()).sum();
    if frames.len() == all.len() && len == out.len() && len <= DIGEST_OVER {
        // No message among them: the bytes as written.
        l.push_str(",\"reply\":");
        json_str(l, out);
        l.push_str(",\"frames\":");
        num(l, frames.len() as u64);
        return;
    }
    if len > DIGEST_OVER {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        for f in &frames {
            h.update(f);
        }
        let _ = write!(l, ",\"digest\":\"{}\",\"len\":{len}", hex(&h.finalize()));
    } else {
        l.push_str(",\"reply\":");
        json_str(l, &frames.concat());
    }
    let _ = write!(l, ",\"frames\":{}", frames.len());
}

/// The lowercase hex digits of `b`.
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

fn json_list<'a>(l: &mut String, items: impl Iterator<Item = &'a [u8]>) {
    l.push('[');
    for (n, a) in items.enumerate() {
        if n > 0 {
            l.push(',');
        }
        json_str(l, a);
    }
    l.push(']');
}

/// `b` as a JSON string, or `{"hex":"…"}` if it is not UTF-8.
fn json_str(l: &mut String, b: &[u8]) {
    let Ok(s) = std::str::from_utf8(b) else {
        let _ = write!(l, "{{\"hex\":\"{}\"}}", hex(b));
        return;
    };
    l.push('"');
    // Runs of bytes that need no escape are copied whole (every escaped byte is ASCII, so
    // the runs end on character boundaries).
    let mut from = 0;
    for (i, c) in s.bytes().enumerate() {
        let esc = match c {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            c if c < 0x20 => "",
            _ => continue,
        };
        l.push_str(&s[from..i]);
        if esc.is_empty() {
            let _ = write!(l, "\\u{c:04x}");
        } else {
            l.push_str(esc);
        }
        from = i + 1;
    }
    l.push_str(&s[from..]);
    l.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_json_and_bytes_hex() {
        let mut l = String::new();
        json_str(&mut l, b"a\"b\\c\r\n\x01");
        assert_eq!(l, r#""a\"b\\c\r\n\u0001""#);
        l.clear();
        json_str(&mut l, b"\xff\x00");
        assert_eq!(l, r#"{"hex":"ff00"}"#);
    }

    #[test]
    fn replies_drop_messages_and_digest_large_ones() {
        let mut l = String::new();
        reply_fields(&mut l, b"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n+OK\r\n");
        assert_eq!(l, r#","reply":"+OK\r\n","frames":1"#);
        l.clear();
        let big = format!("${}\r\n{}\r\n", 5000, "x".repeat(5000));
        reply_fields(&mut l, big.as_bytes());
        assert!(l.starts_with(",\"digest\":\"") && l.ends_with(",\"len\":5009,\"frames\":1"), "{l}");
    }
}
