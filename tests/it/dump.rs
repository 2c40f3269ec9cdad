//! DUMP / RESTORE across servers: a value DUMPed on redis-server is
//! RESTOREd on rlockd and the reverse, for every type and encoding, and
//! must read back the same on both; the payloads of deterministic
//! encodings must be the same bytes. Corrupt payloads (truncated, bytes
//! flipped under a recomputed CRC, huge declared lengths) get clean errors
//! and leave the server serving.

use super::common::oracle::Oracle;
use super::common::resp::{RawConn, Value};

fn cmd(c: &mut RawConn, args: &[&[u8]]) -> Value {
    c.send(&args.iter().map(|a| a.to_vec()).collect::<Vec<_>>());
    c.read().expect("reply")
}

fn bulk(v: Value) -> Vec<u8> {
    match v {
        Value::Bulk(Some(b)) => b,
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

/// CRC-64/Jones, bit by bit (independent of the server's table version).
fn crc64(data: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &b in data {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x95ac_9329_ac4b_c9b5 } else { crc >> 1 };
        }
    }
    crc
}

/// `body` (type byte and value) with the version-10 footer and its CRC.
fn seal(body: &[u8]) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&10u16.to_le_bytes());
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

/// Type, encoding and canonical contents of `key`.
fn read_back(c: &mut RawConn, key: &str) -> String {
    c.cmd(&["HELLO", "3"]);
    let ty = match c.cmd(&["TYPE", key]) {
        Value::Simple(s) => String::from_utf8_lossy(&s).to_string(),
        other => format!("{other:?}"),
    };
    let val = match ty.as_str() {
        "string" => c.cmd(&["GET", key]),
        "hash" => c.cmd(&["HGETALL", key]).sorted_pairs(),
        "list" => c.cmd(&["LRANGE", key, "0", "-1"]),
        "set" => c.cmd(&["SMEMBERS", key]).sorted(),
        "zset" => c.cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"]),
        "stream" => Value::Agg(
            b'*',
            Some(vec![
                c.cmd(&["XRANGE", key, "-", "+"]),
                c.cmd(&["XINFO", "STREAM", key]),
                c.cmd(&["XINFO", "GROUPS", key]),
                // The summary (no idle times); no group "g": no summary.
                match c.cmd(&["XPENDING", key, "g"]) {
                    Value::Error(_) => Value::Null,
                    v => v,
                },
            ]),
        ),
        _ => Value::Null,
    };
    let enc = c.cmd(&["OBJECT", "ENCODING", key]);
    c.cmd(&["HELLO", "2"]);
    format!("{ty} {enc:?} {}", super::common::resp::pretty(&val))
}

/// A small deterministic generator.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// One command's arguments.
type Args = Vec<Vec<u8>>;
/// A case: its name, the commands that build key `k`, and whether DUMP's
/// bytes are deterministic.
type Case = (String, Vec<Args>, bool);

/// Commands that build key `k`, and whether DUMP's bytes are deterministic
/// (hash-table order is not, on either server).
fn cases() -> Vec<Case> {
    let a = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Args>();
    let many = |head: &[&str], items: Vec<String>| {
        let mut v = a(head);
        v.extend(items.into_iter().map(String::into_bytes));
        v
    };
    let mut out: Vec<Case> = vec![
        ("int string".into(), vec![a(&["SET", "k", "-70000"])], true),
        ("short string".into(), vec![a(&["SET", "k", "hello"])], true),
        ("long integer string".into(), vec![a(&["SET", "k", "123456789012345"])], true),
        ("list".into(), vec![a(&["RPUSH", "k", "a", "1", "-5000", "70000", "9999999999", "x"])], true),
        ("big list".into(), vec![many(&["RPUSH", "k"], (0..5000).map(|i| format!("item:{i}")).collect())], true),
        ("intset".into(), vec![a(&["SADD", "k", "5", "-100000", "3"])], true),
        ("intset64".into(), vec![a(&["SADD", "k", "5", "-10000000000", "3"])], true),
        ("set".into(), vec![a(&["SADD", "k", "x", "y", "1"])], false),
        ("big set".into(), vec![many(&["SADD", "k"], (0..600).map(|i| i.to_string()).collect())], false),
        ("hash listpack".into(), vec![a(&["HSET", "k", "f", "v", "n", "-3", "big", "12345678901234"])], true),
        (
            "hash table".into(),
            // Values past hash-max-listpack-value (64) make a hashtable on both
            // servers. (rlockd counts hash-max-listpack-entries as 128 where
            // redis-server 7.0 defaults to 512: a hash of 129..=512 short
            // fields differs in OBJECT ENCODING, outside DUMP.)
            vec![many(
                &["HSET", "k"],
                (0..100).flat_map(|i| [format!("f{i}"), format!("v{i}{}", "x".repeat(70))]).collect(),
            )],
            false,
        ),
        (
            "zset listpack".into(),
            vec![a(&["ZADD", "k", "1.5", "a", "-2", "b", "inf", "c", "0", "d", "1e100", "e"])],
            true,
        ),
        (
            "zset skiplist".into(),
            vec![many(
                &["ZADD", "k"],
                (0..300).flat_map(|i| [format!("{}", f64::from(i) / 3.0), format!("m{i}")]).collect(),
            )],
            true,
        ),
        (
            "stream with groups".into(),
            vec![
                many(&["XADD", "k", "1-1"], vec!["a".into(), "1".into(), "b".into(), "hello".into()]),
                a(&["XADD", "k", "1-2", "a", "2", "b", "x"]),
                a(&["XADD", "k", "5-0", "c", "3"]),
                a(&["XGROUP", "CREATE", "k", "g", "0"]),
                a(&["XGROUP", "CREATE", "k", "g2", "$"]),
            ],
            true,
        ),
        (
            "big stream".into(),
            (1..400)
                .map(|i| {
                    many(&["XADD", "k"], vec![format!("{i}-0"), "f".into(), format!("v{i}"), "n".into(), i.to_string()])
                })
                .collect(),
            true,
        ),
        (
            // Deleted entries are not kept in rlockd's nodes: other bytes, same stream.
            "stream after XDEL and XTRIM".into(),
            (1..300)
                .map(|i| many(&["XADD", "k"], vec![format!("{i}-0"), "f".into(), "v".into()]))
                .chain([a(&["XDEL", "k", "200-0", "250-0"]), a(&["XTRIM", "k", "MAXLEN", "~", "150"])])
                .collect(),
            false,
        ),
        (
            // Delivery and seen times differ between the servers.
            "stream with consumers".into(),
            vec![
                a(&["XADD", "k", "1-1", "a", "1"]),
                a(&["XADD", "k", "2-1", "a", "2"]),
                a(&["XADD", "k", "3-1", "a", "3"]),
                a(&["XGROUP", "CREATE", "k", "g", "0"]),
                a(&["XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "k", ">"]),
                a(&["XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "k", ">"]),
                a(&["XGROUP", "CREATECONSUMER", "k", "g", "carol"]),
                a(&["XADD", "k", "4-1", "a", "4"]),
            ],
            false,
        ),
    ];
    let mut rng = Rng(42);
    for i in 0..40 {
        let n = 21 + (rng.next() % 4000) as usize;
        let kind = rng.next() % 3;
        let v: Vec<u8> = (0..n)
            .map(|_| match kind {
                0 => b"abcd"[(rng.next() % 4) as usize],
                1 => b"lorem ipsum dolor "[(rng.next() % 18) as usize],
                _ => rng.next() as u8,
            })
            .collect();
        out.push((format!("random string {i}"), vec![vec![b"SET".to_vec(), b"k".to_vec(), v]], true));
    }
    out
}

#[test]
fn values_cross_between_servers() {
    let Some(oracle) = Oracle::start() else {
        return;
    };
    let srv = rlockd::Server::start().expect("rlockd");
    let mut ours = RawConn::connect(srv.port());
    let mut redis = RawConn::connect(oracle.port);
    let mut failures = Vec::new();
    for (name, setup, deterministic) in cases() {
        for c in [&mut ours, &mut redis] {
            c.cmd(&["FLUSHALL"]);
            for args in &setup {
                c.send(args);
                c.read().expect("reply");
            }
        }
        let from_redis = bulk(cmd(&mut redis, &[b"DUMP", b"k"]));
        let from_ours = bulk(cmd(&mut ours, &[b"DUMP", b"k"]));
        if deterministic && from_redis != from_ours {
            failures.push(format!("{name}: DUMP bytes differ"));
        }
        let r1 = cmd(&mut ours, &[b"RESTORE", b"r", b"0", &from_redis]);
        let r2 = cmd(&mut redis, &[b"RESTORE", b"r", b"0", &from_ours]);
        if r1 != Value::Simple(b"OK".to_vec()) || r2 != Value::Simple(b"OK".to_vec()) {
            failures.push(format!("{name}: RESTORE on rlockd {r1:?}, on redis-server {r2:?}"));
            continue;
        }
        let want = read_back(&mut redis, "k");
        for (who, got) in [
            ("rlockd's original", read_back(&mut ours, "k")),
            ("redis payload restored on rlockd", read_back(&mut ours, "r")),
            ("rlockd payload restored on redis-server", read_back(&mut redis, "r")),
        ] {
            if got != want {
                let at = got.bytes().zip(want.bytes()).take_while(|(a, b)| a == b).count();
                let from = at.saturating_sub(200);
                let (g, w) = (got.get(from..).unwrap_or(&got), want.get(from..).unwrap_or(&want));
                failures.push(format!("{name}: {who}, from byte {from}:\n  got  {g:.400}\n  want {w:.400}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Reads one 6- or 14-bit length at `p[i]`.
fn small_len(p: &[u8], i: usize) -> (usize, usize) {
    match p[i] >> 6 {
        0 => (usize::from(p[i]), i + 1),
        1 => ((usize::from(p[i] & 0x3f) << 8) | usize::from(p[i + 1]), i + 2),
        _ => panic!("unexpected length byte {:#x}", p[i]),
    }
}

/// The index just past the RDB string at `p[i]` (raw or LZF).
fn skip_string(p: &[u8], i: usize) -> usize {
    if p[i] == 0xc3 {
        let (clen, j) = small_len(p, i + 1);
        let (_, j) = small_len(p, j);
        j + clen
    } else {
        let (len, j) = small_len(p, i);
        j + len
    }
}

/// Every reply to a corrupt payload must be one of these (or OK, when the
/// damage still decodes to a valid value).
fn clean_reply(v: &Value) -> bool {
    match v {
        Value::Simple(s) => s == b"OK",
        Value::Error(e) => e == b"ERR DUMP payload version or checksum are wrong" || e == b"ERR Bad data format",
        _ => false,
    }
}

#[test]
fn corrupt_payloads_get_clean_errors() {
    let srv = rlockd::Server::start().expect("rlockd");
    let mut c = RawConn::connect(srv.port());
    let mut payloads = Vec::new();
    for (_, setup, _) in cases().into_iter().take(17) {
        c.cmd(&["FLUSHALL"]);
        for args in &setup {
            c.send(args);
            c.read().expect("reply");
        }
        payloads.push(bulk(cmd(&mut c, &[b"DUMP", b"k"])));
    }
    let restore = |c: &mut RawConn, p: &[u8]| -> Value {
        let v = cmd(c, &[b"RESTORE", b"x", b"0", p, b"REPLACE"]);
        assert!(clean_reply(&v), "unclean reply {v:?} to payload {p:?}");
        if v == Value::Simple(b"OK".to_vec()) {
            let _ = read_back(c, "x"); // a value that decoded must read back
        }
        v
    };
    let checksum = Value::Error(b"ERR DUMP payload version or checksum are wrong".to_vec());
    let mut rng = Rng(7);
    for p in &payloads {
        // Truncated: the footer moves, so the CRC check refuses it.
        for cut in (0..p.len()).step_by((p.len() / 40).max(1)) {
            assert_eq!(restore(&mut c, &p[..cut]), checksum, "truncated at {cut}");
        }
        // A flipped byte without a new CRC.
        let mut f = p.clone();
        f[0] ^= 0x10;
        assert_eq!(restore(&mut c, &f), checksum);
        // Flipped bytes in the body under a recomputed CRC: whatever decodes.
        let body = &p[..p.len() - 10];
        for _ in 0..300 {
            let mut b = body.to_vec();
            for _ in 0..1 + rng.next() % 3 {
                let at = (rng.next() as usize) % b.len();
                b[at] ^= 1 << (rng.next() % 8);
            }
            restore(&mut c, &seal(&b));
        }
        // The body cut short under a recomputed CRC.
        for cut in (1..body.len()).step_by((body.len() / 20).max(1)) {
            restore(&mut c, &seal(&body[..cut]));
        }
    }
    let bad = Value::Error(b"ERR Bad data format".to_vec());
    // Huge declared lengths: a string, an LZF string, a list of nodes, a set,
    // a hash, a sorted set, a listpack claiming 4 GB, an intset claiming
    // 2^32 members.
    let huge: Vec<Vec<u8>> = vec![
        vec![0, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        vec![0, 0x80, 0xff, 0xff, 0xff, 0xff, b'a'],
        vec![0, 0xc3, 0x02, 0x80, 0x7f, 0xff, 0xff, 0xff, 0x00, b'a'],
        vec![0, 0xc3, 0x02, 0x81, 0, 0, 0, 1, 0, 0, 0, 0, 0x00, b'a'],
        vec![18, 0x80, 0xff, 0xff, 0xff, 0xff, 2, 1, b'a'],
        vec![2, 0x80, 0xff, 0xff, 0xff, 0xff, 1, b'a'],
        vec![4, 0x81, 0, 0, 0, 1, 0, 0, 0, 0, 1, b'a', 1, b'b'],
        vec![5, 0x80, 0x10, 0, 0, 0, 1, b'a', 0, 0, 0, 0, 0, 0, 0xf0, 0x3f],
        vec![16, 10, 0xff, 0xff, 0xff, 0xff, 2, 0, 1, 1, 1, 1, 0xff],
        vec![11, 12, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 2, 0],
        vec![17, 12, 12, 0, 0, 0, 0xfe, 0xff, 0x81, b'a', 2, 1, 1, 0xff],
        vec![99, 1, b'a'],
    ];
    for h in &huge {
        assert_eq!(restore(&mut c, &seal(h)), bad, "payload body {h:?}");
    }
    // A hash with a repeated field: refused (sanitize-dump-payload yes).
    assert_eq!(restore(&mut c, &seal(&[4, 2, 1, b'a', 1, b'b', 1, b'a', 1, b'c'])), bad);
    // A sorted set with a NaN score.
    let mut nan = vec![5, 1, 1, b'a'];
    nan.extend_from_slice(&f64::NAN.to_le_bytes());
    assert_eq!(restore(&mut c, &seal(&nan)), bad);
    // A stream whose declared length disagrees with its entries: type,
    // one node, its 16-byte key, its listpack, then the length (3).
    let stream = &payloads[13];
    let body = &stream[..stream.len() - 10];
    assert_eq!(&body[..3], &[19, 1, 16]);
    let len_at = skip_string(body, 19);
    assert_eq!(body[len_at], 3, "the stream's length follows its one node");
    let mut wrong_len = body.to_vec();
    wrong_len[len_at] = 4;
    assert_eq!(restore(&mut c, &seal(&wrong_len)), bad, "wrong stream length");
    assert_eq!(c.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    // Still serving, and a good payload still restores.
    let good = &payloads[1];
    assert_eq!(cmd(&mut c, &[b"RESTORE", b"ok", b"0", good]), Value::Simple(b"OK".to_vec()));
    assert_eq!(c.cmd(&["GET", "ok"]), Value::Bulk(Some(b"hello".to_vec())));
}
