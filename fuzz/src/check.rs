//! Checks that can fail: replies against an independent RESP decoder, and
//! the request parser's output against the bytes it consumed.

use bytes::{Bytes, BytesMut};
use redis_protocol::resp2::types::RangeFrame as R2;
use redis_protocol::resp3::types::RangeFrame as R3;
use rlockd::protocol::{Reply, RequestParser, Resp};

/// A status or error line as Redis writes it: CR and LF become spaces.
fn line_safe(b: &[u8]) -> Vec<u8> {
    b.iter().map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }).collect()
}

/// The frames a reply is sent as (pushes carried before a reply come first).
fn frames(reply: &Reply) -> Vec<&Reply> {
    match reply {
        Reply::AfterPushes(pushes, r) => pushes.iter().chain(std::iter::once(&**r)).collect(),
        r => vec![r],
    }
}

fn same_double(text: &[u8], d: f64) -> bool {
    match std::str::from_utf8(text).ok().and_then(|s| s.parse::<f64>().ok()) {
        Some(x) => (x.is_nan() && d.is_nan()) || x == d || (x - d).abs() <= d.abs() * 1e-15,
        None => false,
    }
}

fn cmp2(buf: &[u8], r: &Reply, f: &R2) -> Result<(), String> {
    let s = |range: &(usize, usize)| &buf[range.0..range.1];
    let ok = match (r, f) {
        (Reply::Status(b), R2::SimpleString(x)) => s(x) == line_safe(b),
        (Reply::Error(b), R2::Error(x)) => s(x) == line_safe(b),
        (Reply::Int(i), R2::Integer(x)) => i == x,
        (Reply::Bool(b), R2::Integer(x)) => i64::from(*b) == *x,
        (Reply::Bulk(b) | Reply::Verbatim(_, b) | Reply::BigNumber(b), R2::BulkString(x)) => s(x) == &b[..],
        (Reply::InlineBulk(b), R2::BulkString(x)) => s(x) == b.as_bytes(),
        (Reply::SharedBulk(b), R2::BulkString(x)) => s(x) == &b[..],
        (Reply::Double(d), R2::BulkString(x)) => same_double(s(x), *d),
        (Reply::Nil | Reply::NilArray, R2::Null) => true,
        (Reply::Array(v) | Reply::Set(v) | Reply::Push(v), R2::Array(x)) => {
            if v.len() != x.len() {
                return Err(format!("RESP2 array of {} decoded as {}", v.len(), x.len()));
            }
            for (a, b) in v.iter().zip(x) {
                cmp2(buf, a, b)?;
            }
            true
        }
        (Reply::Map(pairs), R2::Array(x)) => {
            if pairs.len() * 2 != x.len() {
                return Err(format!("RESP2 map of {} pairs decoded as {} elements", pairs.len(), x.len()));
            }
            for ((k, v), kv) in pairs.iter().zip(x.chunks(2)) {
                cmp2(buf, k, &kv[0])?;
                cmp2(buf, v, &kv[1])?;
            }
            true
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("RESP2: {r:?} decoded as {f:?}"))
    }
}

fn cmp3(buf: &[u8], r: &Reply, f: &R3) -> Result<(), String> {
    let s = |range: &(usize, usize)| &buf[range.0..range.1];
    let list = |v: &[Reply], x: &mut dyn ExactSizeIterator<Item = &R3>| -> Result<bool, String> {
        if v.len() != x.len() {
            return Err(format!("RESP3 aggregate of {} decoded as {}", v.len(), x.len()));
        }
        for (a, b) in v.iter().zip(x) {
            cmp3(buf, a, b)?;
        }
        Ok(true)
    };
    let ok = match (r, f) {
        (Reply::Status(b), R3::SimpleString { data, .. }) => s(data) == line_safe(b),
        (Reply::Error(b), R3::SimpleError { data, .. }) => s(data) == line_safe(b),
        (Reply::Int(i), R3::Number { data, .. }) => i == data,
        (Reply::Bool(b), R3::Boolean { data, .. }) => b == data,
        (Reply::Bulk(b), R3::BlobString { data, .. }) => s(data) == &b[..],
        (Reply::InlineBulk(b), R3::BlobString { data, .. }) => s(data) == b.as_bytes(),
        (Reply::SharedBulk(b), R3::BlobString { data, .. }) => s(data) == &b[..],
        (Reply::Verbatim(fmt, b), R3::VerbatimString { data, format, .. }) => {
            let f = match format {
                redis_protocol::resp3::types::VerbatimStringFormat::Text => "txt",
                redis_protocol::resp3::types::VerbatimStringFormat::Markdown => "mkd",
            };
            s(data) == &b[..] && f == *fmt
        }
        (Reply::BigNumber(b), R3::BigNumber { data, .. }) => s(data) == &b[..],
        (Reply::Double(d), R3::Double { data, .. }) => (d.is_nan() && data.is_nan()) || d == data,
        (Reply::Nil | Reply::NilArray, R3::Null) => true,
        (Reply::Array(v), R3::Array { data, .. }) => list(v, &mut data.iter())?,
        (Reply::Push(v), R3::Push { data, .. }) => list(v, &mut data.iter())?,
        // A decoded set is a hash set: compare sizes (duplicates would shrink it).
        (Reply::Set(v), R3::Set { data, .. }) => {
            if v.len() != data.len() {
                return Err(format!("RESP3 set of {} decoded as {} distinct", v.len(), data.len()));
            }
            true
        }
        (Reply::Map(pairs), R3::Map { data, .. }) => {
            if pairs.len() != data.len() {
                return Err(format!("RESP3 map of {} decoded as {} distinct keys", pairs.len(), data.len()));
            }
            true
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("RESP3: {r:?} decoded as {f:?}"))
    }
}

/// Encodes `reply` in RESP2 and RESP3, decodes both with redis-protocol and
/// compares what comes back with the reply, element by element; the encoded
/// bytes must be consumed exactly.
pub fn check_reply(reply: &Reply) -> Result<(), String> {
    let expected = frames(reply);
    for resp in [Resp::V2, Resp::V3] {
        let bytes = reply.to_bytes(resp);
        let mut at = 0;
        for r in &expected {
            let rest = &bytes[at..];
            let used = if resp == Resp::V2 {
                let (f, used) = redis_protocol::resp2::decode::decode_range(rest)
                    .map_err(|e| format!("RESP2 decode error {e:?} in {:?}", String::from_utf8_lossy(rest)))?
                    .ok_or_else(|| format!("incomplete RESP2 frame {:?}", String::from_utf8_lossy(rest)))?;
                cmp2(rest, r, &f)?;
                used
            } else {
                let (f, used) = redis_protocol::resp3::decode::complete::decode_range(rest)
                    .map_err(|e| format!("RESP3 decode error {e:?} in {:?}", String::from_utf8_lossy(rest)))?
                    .ok_or_else(|| format!("incomplete RESP3 frame {:?}", String::from_utf8_lossy(rest)))?;
                cmp3(rest, r, &f)?;
                used
            };
            at += used;
        }
        if at != bytes.len() {
            return Err(format!("{resp:?}: {} trailing bytes after the reply", bytes.len() - at));
        }
    }
    Ok(())
}

/// Redis's own texts for a malformed request (`networking.c`).
fn known_protocol_error(msg: &str) -> bool {
    matches!(
        msg,
        "too big mbulk count string"
            | "invalid multibulk length"
            | "too big bulk count string"
            | "invalid bulk length"
            | "too big inline request"
            | "unbalanced quotes in request"
            | "unauthenticated multibulk length"
            | "unauthenticated bulk length"
    ) || (msg.starts_with("expected '$', got '") && msg.ends_with('\''))
}

/// `bytes` ends with the multibulk encoding of `argv`, except for the bytes
/// Redis skips without looking at them: the one after each header's `\r`
/// and the two after each argument.
fn ends_with_multibulk(bytes: &[u8], argv: &[Bytes]) -> bool {
    enum Want<'a> {
        Exact(&'a [u8]),
        Skip(usize),
    }
    let n = format!("*{}\r", argv.len());
    let lens: Vec<String> = argv.iter().map(|a| format!("${}\r", a.len())).collect();
    let mut want = vec![Want::Exact(n.as_bytes()), Want::Skip(1)];
    for (a, l) in argv.iter().zip(&lens) {
        want.extend([Want::Exact(l.as_bytes()), Want::Skip(1), Want::Exact(a), Want::Skip(2)]);
    }
    let total: usize = want
        .iter()
        .map(|w| match w {
            Want::Exact(s) => s.len(),
            Want::Skip(n) => *n,
        })
        .sum();
    if bytes.len() < total {
        return false;
    }
    let mut at = bytes.len() - total;
    for w in want {
        match w {
            Want::Exact(s) => {
                if &bytes[at..at + s.len()] != s {
                    return false;
                }
                at += s.len();
            }
            Want::Skip(n) => at += n,
        }
    }
    true
}

/// Splits an inline line that has no quotes: runs of Redis's separators
/// (`isspace` before a token; space, tab, CR, LF or NUL end one).
fn split_unquoted(line: &[u8]) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        while i < line.len() && (line[i].is_ascii_whitespace() || line[i] == 0x0b) {
            i += 1;
        }
        if i >= line.len() {
            break;
        }
        let start = i;
        while i < line.len() && !matches!(line[i], b' ' | b'\t' | b'\r' | b'\n' | 0) {
            i += 1;
        }
        out.push(Bytes::copy_from_slice(&line[start..i]));
        i += 1;
    }
    out
}

/// Parses `data` and checks each command against the bytes it came from:
/// a multibulk command re-encodes to its input (up to the bytes Redis
/// skips unread), an inline command without quotes is its line split on
/// whitespace, and every error is one of Redis's texts. Chunked delivery
/// must not change anything (`rlockd::testing::check_parser`).
pub fn check_parser(data: &[u8]) -> Result<(), String> {
    rlockd::testing::check_parser(data);
    let mut p = RequestParser::new();
    let mut buf = BytesMut::from(data);
    let mut pos = 0;
    loop {
        let before = buf.len();
        match p.next(&mut buf) {
            Ok(Some(argv)) => {
                let consumed = &data[pos..pos + before - buf.len()];
                pos += before - buf.len();
                if argv.is_empty() {
                    return Err(format!("empty command returned from {consumed:?}"));
                }
                if ends_with_multibulk(consumed, &argv) {
                    continue;
                }
                // Inline: the last line of what was consumed.
                let Some(body) = consumed.strip_suffix(b"\n") else {
                    return Err(format!("command {argv:?} does not end its input {consumed:?}"));
                };
                let start = body.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
                let mut line = &body[start..];
                // Empty multibulks (`*0`, `*-1`) skipped before the inline line.
                while line.first() == Some(&b'*') {
                    let cr = line.iter().position(|&c| c == b'\r');
                    match cr.and_then(|cr| rlockd::testing::parse_i64_strict(&line[1..cr]).map(|n| (cr, n))) {
                        Some((cr, n)) if n <= 0 && line.len() >= cr + 2 => line = &line[cr + 2..],
                        _ => return Err(format!("multibulk {line:?} parsed as {argv:?}")),
                    }
                }
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.contains(&0) {
                    return Err(format!("inline {line:?} holds a NUL, which hides its end from Redis"));
                }
                if !line.contains(&b'"') && !line.contains(&b'\'') && split_unquoted(line) != argv {
                    return Err(format!("inline {line:?} parsed as {argv:?}"));
                }
            }
            Ok(None) => return Ok(()),
            Err(e) => {
                return if known_protocol_error(&e.0) {
                    Ok(())
                } else {
                    Err(format!("unknown protocol error {:?}", e.0))
                };
            }
        }
    }
}
