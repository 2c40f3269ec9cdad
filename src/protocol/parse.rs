//! Client request parsing: RESP multibulk (`*N\r\n$L\r\n...`) and inline
//! commands (`PING\r\n`, what `redis-cli`/telnet send).
//!
//! The parser is resumable: it consumes each argument from the read buffer as
//! soon as it is complete, so a command with a million arguments or a 512 MB
//! bulk arriving in small reads is never re-scanned. Lengths sent by the peer
//! are validated before anything is reserved, and reservations are capped.

use bytes::{Buf, Bytes, BytesMut};

use crate::num::parse_i64_strict;

/// Largest inline request / header line (Redis `PROTO_INLINE_MAX_SIZE`).
pub const INLINE_MAX: usize = 64 * 1024;
/// Default `proto-max-bulk-len`.
pub const DEFAULT_MAX_BULK: i64 = 512 * 1024 * 1024;
/// Never reserve more than this ahead of the data actually arriving.
const MAX_RESERVE: usize = 1024 * 1024;

/// A protocol violation: Redis replies `-ERR Protocol error: <msg>` and
/// closes the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Protocol error: {0}")]
pub struct ProtocolError(pub String);

impl ProtocolError {
    /// The error reply text (without the leading `-`).
    pub fn reply_text(&self) -> String {
        format!("ERR Protocol error: {}", self.0)
    }
}

/// Resumable request parser; one per connection.
#[derive(Debug)]
pub struct RequestParser {
    /// Arguments of the multibulk in progress.
    args: Vec<Bytes>,
    /// An emptied argument vector handed back by [`Self::recycle`]: the next
    /// multibulk fills it instead of allocating one.
    spare: Vec<Bytes>,
    /// Arguments still expected in the multibulk in progress (0 = none in progress).
    remaining: usize,
    /// Length of the bulk whose header was consumed but whose data has not arrived.
    bulk_len: Option<usize>,
    /// `proto-max-bulk-len`.
    pub max_bulk: i64,
    /// True while the client has not authenticated against `requirepass`:
    /// Redis then limits multibulk counts and bulk lengths.
    pub unauthenticated: bool,
}

impl Default for RequestParser {
    fn default() -> Self {
        Self::new()
    }
}

/// Most arguments [`RequestParser::whole_multibulk`] takes in one piece.
const WHOLE_MAX_ARGS: usize = 16;

/// Redis's limits before authentication (`processMultibulkBuffer`): the
/// arguments of one command, and one argument's length.
const UNAUTH_MAX_ARGS: usize = 10;
const UNAUTH_MAX_BULK: usize = 16384;

/// The decimal at `buf[at..]` up to its `'\r'`, if it is short (at most 10
/// digits), unsigned and without a leading zero: its value and the `'\r'`'s
/// index. `None` for anything else, which the general path reads. It finds
/// the `'\r'` and reads the digits in one pass; `parse_i64_strict` after a
/// search costs ~150 instructions more per request (measured).
fn short_decimal(buf: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut v = 0usize;
    for (i, &c) in buf.get(at..)?.iter().take(11).enumerate() {
        if c == b'\r' {
            let leading_zero = i > 1 && buf[at] == b'0';
            return (i > 0 && !leading_zero).then_some((v, at + i));
        }
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + usize::from(c - b'0');
    }
    None
}

fn find_crlf_line(buf: &[u8]) -> Option<usize> {
    // Position of '\r' that ends the header line (Redis searches for '\r').
    memchr(b'\r', buf)
}

/// Redis looks for the end of a header or inline line with `strchr` on its
/// NUL-terminated query buffer: a NUL before the byte sought hides it, and
/// the request waits for more data (until the size limits refuse it).
fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    let i = hay.iter().position(|&b| b == needle || b == 0)?;
    (hay[i] == needle).then_some(i)
}

impl RequestParser {
    /// A parser with Redis's default limits.
    pub fn new() -> Self {
        RequestParser {
            args: Vec::new(),
            spare: Vec::new(),
            remaining: 0,
            bulk_len: None,
            max_bulk: DEFAULT_MAX_BULK,
            unauthenticated: false,
        }
    }

    /// Parses the next complete command out of `buf`, consuming its bytes.
    /// `Ok(None)`: more data needed. An empty command (`*0`, blank inline
    /// line) is skipped silently as Redis does.
    pub fn next(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        loop {
            if self.remaining == 0 {
                if buf.is_empty() {
                    return Ok(None);
                }
                if buf[0] == b'*' {
                    if let Some(args) = self.whole_multibulk(buf) {
                        return Ok(Some(args));
                    }
                    match self.multibulk_header(buf)? {
                        None => return Ok(None),
                        Some(0) => continue,
                        Some(n) => {
                            self.remaining = n;
                            self.args = std::mem::take(&mut self.spare);
                            self.args.reserve(n.min(64));
                        }
                    }
                } else {
                    match Self::inline(buf)? {
                        None => return Ok(None),
                        Some(args) if args.is_empty() => continue,
                        Some(args) => return Ok(Some(args)),
                    }
                }
            }
            // Inside a multibulk.
            while self.remaining > 0 {
                let len = match self.bulk_len {
                    Some(l) => l,
                    None => match self.bulk_header(buf)? {
                        None => return Ok(None),
                        Some(l) => {
                            self.bulk_len = Some(l);
                            l
                        }
                    },
                };
                if buf.len() < len + 2 {
                    let want = (len + 2 - buf.len()).min(MAX_RESERVE);
                    buf.reserve(want);
                    return Ok(None);
                }
                let arg = buf.split_to(len).freeze();
                // Redis skips the two bytes after the data without checking them.
                buf.advance(2);
                self.args.push(arg);
                self.bulk_len = None;
                self.remaining -= 1;
            }
            return Ok(Some(std::mem::take(&mut self.args)));
        }
    }

    /// Takes back a command's argument vector once it has run (emptied here),
    /// so that the next command does not allocate one. Vectors grown past
    /// the parser's first reservation are let go.
    pub fn recycle(&mut self, mut argv: Vec<Bytes>) {
        if argv.capacity() <= 64 && argv.capacity() > self.spare.capacity() {
            argv.clear();
            self.spare = argv;
        }
    }

    /// A short multibulk already whole in `buf` (what clients send), taken
    /// out with one split: its arguments are slices of it. `None` (nothing
    /// consumed) for anything else — more to come, more than
    /// [`WHOLE_MAX_ARGS`] arguments, a header this path does not read, an
    /// error — which the general path then parses from the same bytes.
    fn whole_multibulk(&mut self, buf: &mut BytesMut) -> Option<Vec<Bytes>> {
        let (n, cr) = short_decimal(buf, 1)?;
        if n == 0 || n > WHOLE_MAX_ARGS || (n > UNAUTH_MAX_ARGS && self.unauthenticated) {
            return None;
        }
        let mut spans = [(0usize, 0usize); WHOLE_MAX_ARGS];
        let mut pos = cr + 2;
        for span in &mut spans[..n] {
            if buf.get(pos) != Some(&b'$') {
                return None;
            }
            let (len, cr) = short_decimal(buf, pos + 1)?;
            if len as i64 > self.max_bulk || (len > UNAUTH_MAX_BULK && self.unauthenticated) {
                return None;
            }
            *span = (cr + 2, len);
            // The data and the two bytes after it (skipped unchecked, as Redis does).
            pos = cr + 2 + len + 2;
            if pos > buf.len() {
                return None;
            }
        }
        let whole = buf.split_to(pos).freeze();
        let mut args = std::mem::take(&mut self.spare);
        args.extend(spans[..n].iter().map(|&(at, len)| whole.slice(at..at + len)));
        Some(args)
    }

    fn multibulk_header(&mut self, buf: &mut BytesMut) -> Result<Option<usize>, ProtocolError> {
        let Some(cr) = find_crlf_line(buf) else {
            if buf.len() > INLINE_MAX {
                return Err(ProtocolError("too big mbulk count string".into()));
            }
            return Ok(None);
        };
        if cr > INLINE_MAX {
            return Err(ProtocolError("too big mbulk count string".into()));
        }
        // Need the '\n' too (Redis requires newline-querybuf+2 <= len).
        if buf.len() < cr + 2 {
            return Ok(None);
        }
        let n = parse_i64_strict(&buf[1..cr]);
        let n = match n {
            Some(n) if n <= i64::from(i32::MAX) => n,
            _ => return Err(ProtocolError("invalid multibulk length".into())),
        };
        if n > UNAUTH_MAX_ARGS as i64 && self.unauthenticated {
            return Err(ProtocolError("unauthenticated multibulk length".into()));
        }
        buf.advance(cr + 2);
        Ok(Some(if n <= 0 { 0 } else { n as usize }))
    }

    fn bulk_header(&mut self, buf: &mut BytesMut) -> Result<Option<usize>, ProtocolError> {
        let Some(cr) = find_crlf_line(buf) else {
            if buf.len() > INLINE_MAX {
                return Err(ProtocolError("too big bulk count string".into()));
            }
            return Ok(None);
        };
        if cr > INLINE_MAX {
            return Err(ProtocolError("too big bulk count string".into()));
        }
        if buf.len() < cr + 2 {
            return Ok(None);
        }
        if buf[0] != b'$' {
            return Err(ProtocolError(format!("expected '$', got '{}'", buf[0] as char)));
        }
        let l = match parse_i64_strict(&buf[1..cr]) {
            Some(l) if l >= 0 && l <= self.max_bulk => l,
            _ => return Err(ProtocolError("invalid bulk length".into())),
        };
        if l > UNAUTH_MAX_BULK as i64 && self.unauthenticated {
            return Err(ProtocolError("unauthenticated bulk length".into()));
        }
        buf.advance(cr + 2);
        Ok(Some(l as usize))
    }

    fn inline(buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        let Some(nl) = memchr(b'\n', buf) else {
            if buf.len() > INLINE_MAX {
                return Err(ProtocolError("too big inline request".into()));
            }
            return Ok(None);
        };
        let line = buf.split_to(nl + 1);
        let mut end = nl;
        if end > 0 && line[end - 1] == b'\r' {
            end -= 1;
        }
        match split_args(&line[..end]) {
            Some(args) => Ok(Some(args)),
            None => Err(ProtocolError("unbalanced quotes in request".into())),
        }
    }
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// C's `isspace`, which Redis's `sdssplitargs` uses: ASCII whitespace plus
/// the vertical tab.
fn is_c_space(c: u8) -> bool {
    c.is_ascii_whitespace() || c == 0x0b
}

/// Redis `sdssplitargs`: whitespace-separated words, "double quotes" with
/// C escapes (`\n`, `\xHH`…), 'single quotes' with only `\'`. A closing quote
/// must be followed by a space or the end. `None` on unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Bytes>> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && is_c_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return Some(out);
        }
        let mut cur = Vec::new();
        let mut inq = false;
        let mut insq = false;
        loop {
            if inq {
                if i >= n {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 3 < n && line[i + 1] == b'x' {
                    if let (Some(h), Some(l)) = (hex_val(line[i + 2]), hex_val(line[i + 3])) {
                        cur.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < n {
                    i += 1;
                    cur.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if c == b'"' {
                    if i + 1 < n && !is_c_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
                i += 1;
            } else if insq {
                if i >= n {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < n && !is_c_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
                i += 1;
            } else {
                if i >= n {
                    break;
                }
                match line[i] {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        i += 1;
                        break;
                    }
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => cur.push(c),
                }
                i += 1;
            }
        }
        out.push(Bytes::from(cur));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> (Vec<Vec<Bytes>>, Option<ProtocolError>) {
        let mut p = RequestParser::new();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        loop {
            match p.next(&mut buf) {
                Ok(Some(c)) => out.push(c),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[test]
    fn multibulk_and_inline_mix() {
        let (cmds, err) = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n  set a \"b c\"\r\n*0\r\n\r\n");
        assert!(err.is_none());
        assert_eq!(cmds.len(), 3);
        assert_eq!(cmds[0], vec![Bytes::from("GET"), Bytes::from("k")]);
        assert_eq!(cmds[1], vec![Bytes::from("PING")]);
        assert_eq!(cmds[2], vec![Bytes::from("set"), Bytes::from("a"), Bytes::from("b c")]);
    }

    #[test]
    fn byte_at_a_time_delivery_gives_the_same_commands() {
        let input = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\nECHO 'x y'\n";
        let mut p = RequestParser::new();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for &b in input.iter() {
            buf.extend_from_slice(&[b]);
            while let Some(c) = p.next(&mut buf).unwrap() {
                out.push(c);
            }
        }
        assert_eq!(out.len(), 2);
        assert_eq!(out[0][2], Bytes::from("va\r\nl"));
        assert_eq!(out[1], vec![Bytes::from("ECHO"), Bytes::from("x y")]);
    }

    /// The one-split path for whole multibulks and the general path (taken
    /// here by delivering a byte at a time) give the same commands and the
    /// same error, at its edges: leading zeros, empty arguments, the argument
    /// count limit, the unauthenticated limits, a short count line.
    #[test]
    fn whole_multibulks_parse_as_the_general_path_does() {
        fn run(input: &[u8], unauthenticated: bool, chunk: usize) -> (Vec<Vec<Bytes>>, Option<ProtocolError>) {
            let mut p = RequestParser { unauthenticated, ..RequestParser::new() };
            let mut buf = BytesMut::new();
            let mut out = Vec::new();
            for piece in input.chunks(chunk) {
                buf.extend_from_slice(piece);
                loop {
                    match p.next(&mut buf) {
                        Ok(Some(c)) => {
                            out.push(c.clone());
                            p.recycle(c);
                        }
                        Ok(None) => break,
                        Err(e) => return (out, Some(e)),
                    }
                }
            }
            (out, None)
        }
        let many = |n: usize, len: usize| {
            let mut v = format!("*{n}\r\n").into_bytes();
            for _ in 0..n {
                v.extend_from_slice(format!("${len}\r\n{}\r\n", "x".repeat(len)).as_bytes());
            }
            v
        };
        let mut inputs: Vec<Vec<u8>> = [
            &b"*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$0\r\n\r\n"[..],
            b"*01\r\n$4\r\nPING\r\n",
            b"*1\r\n$04\r\nPING\r\n",
            b"*1\r\n$0\r\n\r\n",
            b"*0\r\n*1\r\n$1\r\nx\r\n",
            b"*-1\r\n*1\r\n$1\r\nx\r\n",
            b"*1\r\n$4\r\nPINGxy*1\r\n$1\r\nx\r\n",
            b"*2\r\n$1\r\na\r\n+b\r\n",
            b"*1\r\n$99999999999\r\n",
            b"*12345678901\r\n",
            b"*1\r\n$4\r\nPI",
        ]
        .iter()
        .map(|i| i.to_vec())
        .collect();
        for (n, len) in [(10, 3), (11, 3), (16, 1), (17, 1), (1, 16384), (1, 16385)] {
            inputs.push(many(n, len));
        }
        for input in &inputs {
            for unauthenticated in [false, true] {
                let whole = run(input, unauthenticated, input.len());
                assert_eq!(whole, run(input, unauthenticated, 1), "{:?}", String::from_utf8_lossy(input));
            }
        }
        assert_eq!(run(&many(11, 3), true, usize::MAX).1.unwrap().0, "unauthenticated multibulk length");
        assert_eq!(run(&many(1, 16385), true, usize::MAX).1.unwrap().0, "unauthenticated bulk length");
        assert_eq!(run(&many(17, 1), false, usize::MAX).0[0].len(), 17);
    }

    #[test]
    fn protocol_errors_have_redis_texts() {
        let cases: &[(&[u8], &str)] = &[
            (b"*abc\r\n", "invalid multibulk length"),
            (b"*1\r\n+foo\r\n", "expected '$', got '+'"),
            (b"*1\r\n$-5\r\n", "invalid bulk length"),
            (b"*1\r\n$999999999999\r\n", "invalid bulk length"),
            (b"*3000000000\r\n", "invalid multibulk length"),
            (b"set \"a\r\n", "unbalanced quotes in request"),
            (b"set \"a\"b\r\n", "unbalanced quotes in request"),
        ];
        for (input, msg) in cases {
            let (_, err) = parse_all(input);
            assert_eq!(err.unwrap().0, *msg, "input {:?}", String::from_utf8_lossy(input));
        }
        let big = vec![b'a'; INLINE_MAX + 10];
        assert_eq!(parse_all(&big).1.unwrap().0, "too big inline request");
    }

    #[test]
    fn huge_declared_lengths_reserve_little() {
        let mut p = RequestParser::new();
        let mut buf = BytesMut::from(&b"*1000000\r\n$500000000\r\nab"[..]);
        assert!(p.next(&mut buf).unwrap().is_none());
        assert!(buf.capacity() < 4 * MAX_RESERVE);
    }

    #[test]
    fn a_nul_hides_the_end_of_a_line_as_in_redis() {
        for input in [&b"PING\0\r\n"[..], b"\0abc\r\nPING\r\n", b"*1\0\r\n$4\r\nPING\r\n", b"*1\r\n$4\0\r\nPING\r\n"] {
            assert_eq!(parse_all(input), (vec![], None), "{input:?}");
        }
        let mut big = b"\0abc\r\n".to_vec();
        big.resize(INLINE_MAX + 10, b'x');
        assert_eq!(parse_all(&big).1.unwrap().0, "too big inline request");
        let mut big = b"*1\r\n$4\0\r\n".to_vec();
        big.resize(INLINE_MAX + 10, b'y');
        assert_eq!(parse_all(&big).1.unwrap().0, "too big bulk count string");
        // A NUL inside an argument is data.
        assert_eq!(parse_all(b"*1\r\n$3\r\na\0b\r\n").0, vec![vec![Bytes::from_static(b"a\0b")]]);
    }

    #[test]
    fn inline_separators_are_c_isspace() {
        let args = split_args(b"\x0bECHO\x0b\x0bx").unwrap();
        assert_eq!(args, vec![Bytes::from("ECHO\x0b\x0bx")]);
        assert_eq!(split_args(b"ECHO \"a\"\x0b").unwrap(), vec![Bytes::from("ECHO"), Bytes::from("a")]);
    }

    #[test]
    fn inline_escapes() {
        let args = split_args(br#"a "\x41\n" 'it\'s'"#).unwrap();
        assert_eq!(args, vec![Bytes::from("a"), Bytes::from("A\n"), Bytes::from("it's")]);
    }
}
