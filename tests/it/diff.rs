//! The differential suite: every scenario in `tests/diff/*.redis` runs
//! against rlockd and a real redis-server; replies must match byte for byte
//! (or as a step's modifier says), and so must the keyspace afterwards.
//!
//! ## Case file format
//! ```text
//! # comment
//! @test <name>        start a scenario: FLUSHALL on both, fresh RESP2 connections
//! SET k v             a command (inline syntax: "double quotes", 'single', \xHH)
//! [sort] SMEMBERS s   compare after sorting the (top-level) aggregate
//! [pairs] HGETALL h   compare a flat RESP2 array of pairs sorted by key
//! [shape] SPOP s      compare only the reply's type and length
//! [approx] TTL k      integers within 2% (at least 1) of each other; -1/-2 exact
//! [ignore] RANDOMKEY  send, read, do not compare
//! [send] BLPOP l 0    send only; read later with @read
//! @read               read one reply / push on the current connection and compare
//! @conn <name>        switch to (or open) another connection pair
//! @sleep <ms>         pause
//! @raw "<bytes>"      send raw bytes (escapes like \r\n, \xHH) and compare one reply
//! @nokeyspace         skip the keyspace comparison for this scenario
//! @server redis 8.2.3 (before the first @test) the server the file compares
//!                     with: rlockd answers as that version (`redis-version`,
//!                     `valkey-version`) against that real server
//!                     (`redis 7.0.15` when absent; `redis 8.2.3`, `valkey 8.1.8`)
//! ```
//! Connections start in RESP2; `HELLO 3` in a scenario switches both sides.

use std::collections::BTreeMap;
use std::time::Duration;

use super::common::oracle::{Oracle, OracleKind};
use super::common::resp::{RawConn, Value};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Exact,
    Sort,
    Pairs,
    Shape,
    Approx,
    Ignore,
    Send,
}

struct Pair {
    ours: RawConn,
    theirs: RawConn,
}

struct Runner {
    our_port: u16,
    their_port: u16,
    conns: BTreeMap<String, Pair>,
    current: String,
    failures: Vec<String>,
    file: String,
    scenario: String,
    check_keyspace: bool,
}

fn parse_line(line: &str) -> Vec<Vec<u8>> {
    rlockd::protocol::split_args(line.as_bytes())
        .unwrap_or_else(|| panic!("unbalanced quotes in case line: {line}"))
        .into_iter()
        .map(|b| b.to_vec())
        .collect()
}

fn show(v: &Option<Value>) -> String {
    v.as_ref().map_or("<no reply>".to_string(), super::common::resp::pretty)
}

fn approx_eq(a: &Value, b: &Value) -> bool {
    match (a.as_int(), b.as_int()) {
        // -1 (no TTL) and -2 (no key) must match exactly.
        (Some(x), Some(y)) if x < 0 || y < 0 => x == y,
        (Some(x), Some(y)) => {
            // TTLs (seconds) or PTTLs (ms) read a few ms apart on two servers.
            let tol = (x.abs().max(y.abs()) / 50).max(1);
            (x - y).abs() <= tol
        }
        _ => a == b,
    }
}

impl Runner {
    fn pair(&mut self) -> &mut Pair {
        let (op, tp) = (self.our_port, self.their_port);
        self.conns.entry(self.current.clone()).or_insert_with(|| {
            // Long enough for the heaviest scripts of the corpus (the
            // HLL fuzz loops) in a debug build on a loaded 2-core CI
            // machine; a reply that never comes still fails the case.
            let (ours, theirs) = (RawConn::connect(op), RawConn::connect(tp));
            ours.set_read_timeout(Duration::from_secs(60));
            theirs.set_read_timeout(Duration::from_secs(60));
            Pair { ours, theirs }
        })
    }

    fn fail(&mut self, msg: String) {
        self.failures.push(format!("{} / {}: {}", self.file, self.scenario, msg));
    }

    fn compare(&mut self, what: &str, mode: Mode, ours: Option<Value>, theirs: Option<Value>, raw: (Vec<u8>, Vec<u8>)) {
        let ok = match mode {
            Mode::Ignore | Mode::Send => true,
            Mode::Exact => raw.0 == raw.1 && ours.is_some(),
            Mode::Sort => ours.as_ref().map(Value::sorted) == theirs.as_ref().map(Value::sorted),
            Mode::Pairs => ours.as_ref().map(Value::sorted_pairs) == theirs.as_ref().map(Value::sorted_pairs),
            Mode::Shape => ours.as_ref().map(Value::shape) == theirs.as_ref().map(Value::shape),
            Mode::Approx => match (&ours, &theirs) {
                (Some(a), Some(b)) => approx_eq(a, b),
                _ => false,
            },
        };
        if !ok {
            self.fail(format!(
                "{what}\n    rlockd: {}\n    redis:  {}\n    rlockd raw: {:?}\n    redis raw:  {:?}",
                show(&ours),
                show(&theirs),
                String::from_utf8_lossy(&raw.0),
                String::from_utf8_lossy(&raw.1)
            ));
        }
    }

    fn step(&mut self, line: &str) {
        let (mode, rest) = if let Some(r) = line.strip_prefix('[') {
            let (m, rest) = r.split_once(']').expect("modifier");
            let mode = match m {
                "sort" => Mode::Sort,
                "pairs" => Mode::Pairs,
                "shape" => Mode::Shape,
                "approx" => Mode::Approx,
                "ignore" => Mode::Ignore,
                "send" => Mode::Send,
                other => panic!("unknown modifier [{other}]"),
            };
            (mode, rest.trim())
        } else {
            (Mode::Exact, line)
        };
        let args = parse_line(rest);
        let bytes = super::common::resp::encode(&args);
        let p = self.pair();
        let sent = (p.ours.try_send_raw(&bytes).is_ok(), p.theirs.try_send_raw(&bytes).is_ok());
        if sent != (true, true) {
            if sent.0 != sent.1 {
                self.fail(format!(
                    "{rest}: connection closed on one side only (rlockd open: {}, redis open: {})",
                    sent.0, sent.1
                ));
            }
            return;
        }
        if mode == Mode::Send {
            return;
        }
        let (o, t) = (p.ours.read(), p.theirs.read());
        let raw = (p.ours.last_raw.clone(), p.theirs.last_raw.clone());
        self.compare(rest, mode, o, t, raw);
    }

    fn read_step(&mut self) {
        let p = self.pair();
        let (o, t) = (p.ours.read(), p.theirs.read());
        let raw = (p.ours.last_raw.clone(), p.theirs.last_raw.clone());
        self.compare("@read", Mode::Exact, o, t, raw);
    }

    fn begin(&mut self, name: &str) {
        self.finish();
        self.scenario = name.to_string();
        self.conns.clear();
        self.current = "main".into();
        self.check_keyspace = true;
        let (op, tp) = (self.our_port, self.their_port);
        for port in [op, tp] {
            let mut c = RawConn::connect(port);
            c.cmd(&["FLUSHALL"]);
            c.cmd(&["CONFIG", "SET", "notify-keyspace-events", ""]);
        }
    }

    /// Compares both keyspaces at the end of a scenario.
    fn finish(&mut self) {
        if self.scenario.is_empty() || !self.check_keyspace {
            return;
        }
        let a = dump(self.our_port);
        let b = dump(self.their_port);
        if a != b {
            let diff: Vec<String> = a
                .iter()
                .chain(b.iter())
                .filter(|(k, _)| a.get(*k) != b.get(*k))
                .map(|(k, _)| format!("{k}: rlockd={:?} redis={:?}", a.get(k), b.get(k)))
                .collect();
            self.fail(format!("keyspace differs:\n    {}", diff.join("\n    ")));
        }
    }
}

/// A canonical dump of every database: `db:key` → type, value, TTL class.
fn dump(port: u16) -> BTreeMap<String, String> {
    let mut c = RawConn::connect(port);
    let mut out = BTreeMap::new();
    for db in 0..16 {
        c.cmd(&["SELECT", &db.to_string()]);
        let keys = c.cmd(&["KEYS", "*"]).bulks();
        for k in keys {
            let key = String::from_utf8_lossy(&k).to_string();
            let ty = match c.cmd(&["TYPE", &key]) {
                Value::Simple(s) => String::from_utf8_lossy(&s).to_string(),
                other => format!("{other:?}"),
            };
            let val = match ty.as_str() {
                "string" => c.cmd(&["GET", &key]),
                "hash" => c.cmd(&["HGETALL", &key]).sorted_pairs(),
                "list" => c.cmd(&["LRANGE", &key, "0", "-1"]),
                "set" => c.cmd(&["SMEMBERS", &key]).sorted(),
                "zset" => c.cmd(&["ZRANGE", &key, "0", "-1", "WITHSCORES"]),
                // Entries, the stream's counters and its groups (no times).
                "stream" => Value::Agg(
                    b'*',
                    Some(vec![
                        c.cmd(&["XRANGE", &key, "-", "+"]),
                        c.cmd(&["XINFO", "STREAM", &key]),
                        c.cmd(&["XINFO", "GROUPS", &key]),
                    ]),
                ),
                _ => Value::Null,
            };
            let ttl = match c.cmd(&["PTTL", &key]) {
                Value::Int(t) if t >= 0 => "ttl".to_string(),
                other => format!("{other:?}"),
            };
            out.insert(format!("{db}:{key}"), format!("{ty} {ttl} {}", super::common::resp::pretty(&val)));
        }
    }
    out
}

fn run_file(path: &std::path::Path, our_port: u16, their_port: u16) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("read case file");
    let mut r = Runner {
        our_port,
        their_port,
        conns: BTreeMap::new(),
        current: "main".into(),
        failures: Vec::new(),
        file: path.file_name().expect("name").to_string_lossy().to_string(),
        scenario: String::new(),
        check_keyspace: true,
    };
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix("@test") {
            r.begin(name.trim());
        } else if let Some(raw) = line.strip_prefix("@raw") {
            let bytes: Vec<u8> = parse_line(raw.trim()).concat();
            let p = r.pair();
            let sent = (p.ours.try_send_raw(&bytes).is_ok(), p.theirs.try_send_raw(&bytes).is_ok());
            if sent.0 != sent.1 {
                r.fail(format!(
                    "@raw: connection closed on one side only (rlockd open: {}, redis open: {})",
                    sent.0, sent.1
                ));
            } else if sent.0 {
                r.read_step();
            }
        } else if line == "@read" {
            r.read_step();
        } else if let Some(name) = line.strip_prefix("@conn") {
            r.current = name.trim().to_string();
        } else if let Some(ms) = line.strip_prefix("@sleep") {
            std::thread::sleep(Duration::from_millis(ms.trim().parse().expect("@sleep ms")));
        } else if line == "@nokeyspace" {
            r.check_keyspace = false;
        } else if line.starts_with("@server") {
            assert!(r.scenario.is_empty(), "{}: @server after the first @test", r.file);
        } else {
            assert!(!r.scenario.is_empty(), "{}: command before the first @test", r.file);
            r.step(line);
        }
    }
    r.finish();
    r.failures
}

/// The server a case file compares with (its `@server` line). `DIFF_SERVER`
/// (`redis 8.2.3`, `valkey 8.1.8`) runs the files without one against that
/// server instead: how far a later profile still differs on the 7.0 suite.
fn server_of(path: &std::path::Path) -> OracleKind {
    let text = std::fs::read_to_string(path).expect("read case file");
    let default = match std::env::var("DIFF_SERVER") {
        Ok(s) => {
            let words: Vec<&str> = s.split_whitespace().collect();
            let kind = match words[..] {
                [server, version] => OracleKind::named(server, version),
                _ => None,
            };
            kind.unwrap_or_else(|| panic!("DIFF_SERVER={s}: not a known server"))
        }
        Err(_) => OracleKind::Redis70,
    };
    for line in text.lines().map(str::trim) {
        if line.starts_with("@test") {
            break;
        }
        if let Some(rest) = line.strip_prefix("@server") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            return match words[..] {
                [server, version] => OracleKind::named(server, version),
                _ => None,
            }
            .unwrap_or_else(|| panic!("{}: unknown @server line: {line}", path.display()));
        }
    }
    default
}

#[test]
fn differential_suite() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diff");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/diff")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "redis"))
        // DIFF_FILES=name,name runs only the case files whose name contains one of them.
        .filter(|p| match std::env::var("DIFF_FILES") {
            Ok(only) => only.split(',').any(|o| p.to_string_lossy().contains(o)),
            Err(_) => true,
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no case files in tests/diff");
    // Each file against the server it names; a server that is not
    // installed skips its files (visibly; a failure under
    // RLOCKD_REQUIRE_REDIS=1).
    let mut by_kind: Vec<(OracleKind, &std::path::PathBuf)> = files.iter().map(|f| (server_of(f), f)).collect();
    by_kind.retain(|(kind, _)| kind.path_or_skip().is_some());
    let results: Vec<(String, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = by_kind
            .iter()
            .map(|&(kind, f)| {
                // Deep enough for replies nested as far as Redis allows (~8000).
                std::thread::Builder::new()
                    .stack_size(256 << 20)
                    .spawn_scoped(s, move || {
                        let oracle = Oracle::start_kind(kind, &[]).expect("the oracle");
                        let params = vec![("enable-debug-command".to_string(), "yes".to_string()), kind.rlockd_param()];
                        let ours = rlockd::Server::start_with(rlockd::Config { params, ..Default::default() })
                            .expect("start rlockd");
                        (f.display().to_string(), run_file(f, ours.port(), oracle.port))
                    })
                    .expect("case thread")
            })
            .collect();
        // A file whose run panicked (a server gone away) is reported as its
        // failure, the other files' results kept.
        handles
            .into_iter()
            .zip(&by_kind)
            .map(|(h, (_, f))| {
                h.join().unwrap_or_else(|_| {
                    (f.display().to_string(), vec![format!("{}: the run panicked (see above)", f.display())])
                })
            })
            .collect()
    });
    let mut all = Vec::new();
    for (file, fails) in &results {
        eprintln!("differential: {file}: {} difference(s)", fails.len());
        all.extend(fails.iter().cloned());
    }
    assert!(all.is_empty(), "{} difference(s) from redis-server:\n{}", all.len(), all.join("\n"));
}
