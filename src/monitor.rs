//! `MONITOR`: every command the server runs, streamed to the clients that
//! asked, in Redis's line format:
//! `+1700000000.123456 [0 127.0.0.1:5000] "set" "k" "v"`.
//!
//! Fed by the command layer's `call` (this store names nothing above it),
//! so client commands, commands inside EXEC and a script's `redis.call`
//! (shown as `[db lua]`) all appear, once each, after they ran; `EVAL`/`FCALL` (flagged `skip_monitor`) are fed before
//! their script runs, so they precede their commands, as in Redis. Commands
//! refused before running and `admin` commands are not shown; `AUTH` and
//! `HELLO … AUTH` passwords are redacted.

use std::sync::Arc;

use bytes::Bytes;

use crate::client::ClientShared;
use crate::protocol::{Reply, Resp};

/// The clients in `MONITOR` mode.
#[derive(Debug, Default)]
pub struct Monitors {
    clients: Vec<Arc<ClientShared>>,
}

impl Monitors {
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    pub fn add(&mut self, c: Arc<ClientShared>) {
        if !self.clients.iter().any(|m| m.id == c.id) {
            self.clients.push(c);
        }
    }

    /// Removes a client (disconnect, RESET); true if it was monitoring.
    pub fn remove(&mut self, id: u64) -> bool {
        let before = self.clients.len();
        self.clients.retain(|m| m.id != id);
        self.clients.len() != before
    }

    /// Sends one command line to every monitor.
    pub fn feed(&self, now_us: u64, db: usize, source: &str, argv: &[Bytes]) {
        let line = encoded_line(now_us, db, source, argv);
        for m in &self.clients {
            m.push_encoded(line.clone());
        }
    }
}

/// One monitor line, encoded as a status reply (the same in RESP2 and
/// RESP3).
fn encoded_line(now_us: u64, db: usize, source: &str, argv: &[Bytes]) -> Bytes {
    Reply::Status(Bytes::from(format_line(now_us, db, source, argv))).to_bytes(Resp::V2)
}

/// The text of one monitor line.
fn format_line(now_us: u64, db: usize, source: &str, argv: &[Bytes]) -> Vec<u8> {
    let mut out = format!("{}.{:06} [{} {}]", now_us / 1_000_000, now_us % 1_000_000, db, source).into_bytes();
    let redact = redacted(argv);
    for (i, a) in argv.iter().enumerate() {
        out.extend_from_slice(b" ");
        if redact.contains(&i) {
            out.extend_from_slice(b"\"(redacted)\"");
        } else {
            repr(&mut out, a);
        }
    }
    out
}

/// Argument positions Redis redacts: every `AUTH` argument, the user and
/// password after `HELLO … AUTH`, and `MIGRATE`'s `AUTH` password and
/// `AUTH2` user and password (as its option parser meets them).
fn redacted(argv: &[Bytes]) -> Vec<usize> {
    if argv[0].eq_ignore_ascii_case(b"auth") {
        return (1..argv.len()).collect();
    }
    if argv[0].eq_ignore_ascii_case(b"migrate") {
        let mut out = Vec::new();
        let mut j = 6;
        while j < argv.len() {
            let more = argv.len() - 1 - j;
            let a = &argv[j];
            if a.eq_ignore_ascii_case(b"auth") && more >= 1 {
                out.push(j + 1);
                j += 1;
            } else if a.eq_ignore_ascii_case(b"auth2") && more >= 2 {
                out.extend([j + 1, j + 2]);
                j += 2;
            } else if !a.eq_ignore_ascii_case(b"copy") && !a.eq_ignore_ascii_case(b"replace") {
                break; // KEYS (the rest are keys) or a syntax error
            }
            j += 1;
        }
        return out;
    }
    if argv[0].eq_ignore_ascii_case(b"hello") {
        let mut j = 2;
        while j < argv.len() {
            if argv[j].eq_ignore_ascii_case(b"auth") && j + 2 < argv.len() {
                return vec![j + 1, j + 2];
            }
            j += if argv[j].eq_ignore_ascii_case(b"setname") { 2 } else { 1 };
        }
    }
    Vec::new()
}

/// Redis's `sdscatrepr`: a double-quoted string with C escapes.
fn repr(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        match c {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', c]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(c),
            _ => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(argv: &[&[u8]]) -> String {
        let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        String::from_utf8(encoded_line(1_700_000_000_000_123, 3, "127.0.0.1:5000", &argv).to_vec()).unwrap()
    }

    #[test]
    fn lines_quote_and_redact_like_redis() {
        assert_eq!(
            line(&[b"set", b"k", b"a b\"c"]),
            "+1700000000.000123 [3 127.0.0.1:5000] \"set\" \"k\" \"a b\\\"c\"\r\n"
        );
        assert_eq!(
            line(&[b"get", b"\x01\xff\n"]),
            "+1700000000.000123 [3 127.0.0.1:5000] \"get\" \"\\x01\\xff\\n\"\r\n"
        );
        assert_eq!(
            line(&[b"AUTH", b"user", b"pw"]),
            "+1700000000.000123 [3 127.0.0.1:5000] \"AUTH\" \"(redacted)\" \"(redacted)\"\r\n"
        );
        assert_eq!(
            line(&[b"HELLO", b"3", b"SETNAME", b"auth", b"AUTH", b"u", b"p"]),
            "+1700000000.000123 [3 127.0.0.1:5000] \"HELLO\" \"3\" \"SETNAME\" \"auth\" \"AUTH\" \"(redacted)\" \"(redacted)\"\r\n"
        );
        // MIGRATE, as Redis's option parser redacts: AUTH's password,
        // AUTH2's user and password, nothing past KEYS or a bad option.
        let r = |a: &[&[u8]]| redacted(&a.iter().map(|x| Bytes::copy_from_slice(x)).collect::<Vec<_>>());
        let m: [&[u8]; 6] = [b"migrate", b"h", b"1", b"k", b"0", b"5000"];
        assert_eq!(r(&m), Vec::<usize>::new());
        assert_eq!(r(&[&m[..], &[b"COPY", b"AUTH", b"pw"]].concat()), vec![8]);
        assert_eq!(r(&[&m[..], &[b"auth2", b"u", b"pw", b"REPLACE"]].concat()), vec![7, 8]);
        assert_eq!(r(&[&m[..], &[b"KEYS", b"auth", b"x"]].concat()), Vec::<usize>::new());
        assert_eq!(r(&[&m[..], &[b"AUTH"]].concat()), Vec::<usize>::new());
    }
}
