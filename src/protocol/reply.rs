//! The single reply type produced by every command, and its encoders.
//!
//! Commands never write to a socket: they return a [`Reply`]. The connection
//! encodes it for the client's protocol version; Lua converts it to Lua
//! values without any RESP in between.

use bytes::{BufMut, Bytes, BytesMut};

use super::shared::SharedBytes;
use crate::num::fmt_double;

/// Protocol version negotiated with `HELLO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Resp {
    /// RESP2, the default of every connection.
    #[default]
    V2,
    /// RESP3 (`HELLO 3`).
    V3,
}

/// A reply, covering RESP3. RESP2 encodes the RESP3-only variants the way
/// Redis does (maps flattened, doubles as bulk strings, booleans as integers,
/// null as a nil bulk or nil array).
#[derive(Debug, Clone)]
pub enum Reply {
    /// `+OK`
    Status(Bytes),
    /// `-ERR ...`: the full text, code included, without the leading `-`.
    Error(Bytes),
    /// `:1`
    Int(i64),
    /// A bulk string (binary-safe).
    Bulk(Bytes),
    /// The same, up to [`InlineBytes::MAX`] bytes held in the reply itself
    /// (a short string value read: no allocation, where a `Bytes` would
    /// need one); equal to the `Bulk` of the same bytes.
    InlineBulk(InlineBytes),
    /// The same, a long string value's own buffer shared with the reply
    /// (one reference count, no copy); equal to the `Bulk` of the same
    /// bytes.
    SharedBulk(SharedBytes),
    /// Null bulk string: RESP2 `$-1`, RESP3 `_`.
    Nil,
    /// Null array: RESP2 `*-1`, RESP3 `_`.
    NilArray,
    /// An array of replies.
    Array(Vec<Reply>),
    /// RESP3 map (RESP2: a flat array of keys and values).
    Map(Vec<(Reply, Reply)>),
    /// RESP3 set (RESP2: an array).
    Set(Vec<Reply>),
    /// RESP3 double (RESP2: a bulk string, printed as Redis 7.0 prints it,
    /// `%.17g`).
    Double(f64),
    /// The same printed as Redis 7.2 and later print it (the shortest
    /// digits that read back the same: `num::fmt_short`).
    ShortDouble(f64),
    /// A double printed in Redis's human long-double form (geo
    /// coordinates): a bulk string in RESP2, a RESP3 double in RESP3.
    HumanDouble(f64),
    /// RESP3 boolean (RESP2: the integer 1 or 0).
    Bool(bool),
    /// Verbatim string with its three-letter format (`txt`).
    Verbatim(&'static str, Bytes),
    /// RESP3 big number (RESP2: a bulk string).
    BigNumber(Bytes),
    /// Out-of-band message (pub/sub); RESP2 sends it as an array.
    Push(Vec<Reply>),
    /// A reply preceded by the pushes its command produced for the same
    /// client: how one element of an EXEC array carries the messages a
    /// RESP3 subscriber published to itself inside the transaction (Redis
    /// writes them into the array as they happen).
    AfterPushes(Vec<Reply>, Box<Reply>),
    /// A reply followed by messages already encoded for the same client:
    /// the invalidations of keys a tracking client's own command changed,
    /// which Redis sends after the command's reply.
    ThenPushes(Box<Reply>, Vec<Bytes>),
}

/// Up to [`InlineBytes::MAX`] bytes, inside a [`Reply`] (which is 56 bytes
/// for its largest variants already).
#[derive(Clone, Copy)]
pub struct InlineBytes {
    len: u8,
    buf: [u8; InlineBytes::MAX],
}

impl InlineBytes {
    /// The most bytes held (the reply stays 56 bytes).
    pub const MAX: usize = 54;

    /// `b` if it fits.
    #[inline]
    pub fn new(b: &[u8]) -> Option<InlineBytes> {
        let mut buf = [0; Self::MAX];
        buf.get_mut(..b.len())?.copy_from_slice(b);
        Some(InlineBytes { len: b.len() as u8, buf })
    }

    /// The bytes held.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for InlineBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&Bytes::copy_from_slice(self.as_bytes()), f)
    }
}

/// Variant by variant, but a bulk string equals another whether inline,
/// shared or neither.
impl PartialEq for Reply {
    fn eq(&self, other: &Reply) -> bool {
        use Reply::*;
        match (self, other) {
            (Bulk(_) | InlineBulk(_) | SharedBulk(_), Bulk(_) | InlineBulk(_) | SharedBulk(_)) => {
                self.as_bulk() == other.as_bulk()
            }
            (Status(a), Status(b)) | (Error(a), Error(b)) | (BigNumber(a), BigNumber(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Nil, Nil) | (NilArray, NilArray) => true,
            (Array(a), Array(b)) | (Set(a), Set(b)) | (Push(a), Push(b)) => a == b,
            (Map(a), Map(b)) => a == b,
            (Double(a), Double(b)) | (ShortDouble(a), ShortDouble(b)) | (HumanDouble(a), HumanDouble(b)) => a == b,
            (Bool(a), Bool(b)) => a == b,
            (Verbatim(f, a), Verbatim(g, b)) => f == g && a == b,
            (AfterPushes(p, a), AfterPushes(q, b)) => p == q && a == b,
            (ThenPushes(a, p), ThenPushes(b, q)) => a == b && p == q,
            _ => false,
        }
    }
}

impl Reply {
    /// The bytes of a bulk string reply, inline or not.
    #[inline]
    pub fn as_bulk(&self) -> Option<&[u8]> {
        match self {
            Reply::Bulk(b) => Some(b),
            Reply::InlineBulk(b) => Some(b.as_bytes()),
            Reply::SharedBulk(b) => Some(b),
            _ => None,
        }
    }

    /// This reply with every [`Reply::Double`] in it printed as Redis 7.2
    /// and later print doubles ([`Reply::ShortDouble`]).
    pub fn with_short_doubles(self) -> Reply {
        match self {
            Reply::Double(d) => Reply::ShortDouble(d),
            Reply::Array(v) => Reply::Array(v.into_iter().map(Reply::with_short_doubles).collect()),
            Reply::Set(v) => Reply::Set(v.into_iter().map(Reply::with_short_doubles).collect()),
            Reply::Push(v) => Reply::Push(v.into_iter().map(Reply::with_short_doubles).collect()),
            Reply::Map(v) => {
                Reply::Map(v.into_iter().map(|(k, v)| (k.with_short_doubles(), v.with_short_doubles())).collect())
            }
            other => other,
        }
    }

    /// `+OK`
    pub const fn ok() -> Reply {
        Reply::Status(Bytes::from_static(b"OK"))
    }
    /// A status reply (`+PONG`).
    pub fn status(s: &'static str) -> Reply {
        Reply::Status(Bytes::from_static(s.as_bytes()))
    }
    /// An error reply from its full text (`"ERR something"`).
    pub fn error(s: impl Into<String>) -> Reply {
        Reply::Error(Bytes::from(s.into()))
    }
    /// A bulk string.
    pub fn bulk(b: impl Into<Bytes>) -> Reply {
        Reply::Bulk(b.into())
    }
    /// A bulk string copied from `s`.
    pub fn bulk_str(s: &str) -> Reply {
        Reply::Bulk(Bytes::copy_from_slice(s.as_bytes()))
    }
    /// True for an error reply (also one preceded by pushes).
    pub fn is_error(&self) -> bool {
        match self {
            Reply::Error(_) => true,
            Reply::AfterPushes(_, r) | Reply::ThenPushes(r, _) => r.is_error(),
            _ => false,
        }
    }
    /// The text of an error reply (also one with pushes around it).
    pub fn error_text(&self) -> Option<&Bytes> {
        match self {
            Reply::Error(text) => Some(text),
            Reply::AfterPushes(_, r) | Reply::ThenPushes(r, _) => r.error_text(),
            _ => None,
        }
    }
    /// Array of bulk strings.
    pub fn bulks<I: IntoIterator<Item = Bytes>>(items: I) -> Reply {
        Reply::Array(items.into_iter().map(Reply::Bulk).collect())
    }

    /// Encodes this reply for `resp` and appends it to `out`.
    pub fn encode(&self, resp: Resp, out: &mut BytesMut) {
        match self {
            Reply::Status(s) => {
                out.put_u8(b'+');
                put_line_safe(out, s);
            }
            Reply::Error(s) => {
                out.put_u8(b'-');
                put_line_safe(out, s);
            }
            Reply::Int(i) => {
                out.put_u8(b':');
                put_int(out, *i);
                out.put_slice(b"\r\n");
            }
            Reply::Bulk(b) => put_bulk(out, b),
            Reply::InlineBulk(b) => put_bulk(out, b.as_bytes()),
            Reply::SharedBulk(b) => put_bulk(out, b),
            Reply::Nil => out.put_slice(if resp == Resp::V3 { b"_\r\n" } else { b"$-1\r\n" }),
            Reply::NilArray => out.put_slice(if resp == Resp::V3 { b"_\r\n" } else { b"*-1\r\n" }),
            Reply::Array(items) => {
                put_header(out, b'*', items.len());
                for it in items {
                    it.encode(resp, out);
                }
            }
            Reply::Set(items) => {
                put_header(out, if resp == Resp::V3 { b'~' } else { b'*' }, items.len());
                for it in items {
                    it.encode(resp, out);
                }
            }
            Reply::Push(items) => {
                push_header(out, resp, items.len());
                for it in items {
                    it.encode(resp, out);
                }
            }
            Reply::Map(pairs) => {
                if resp == Resp::V3 {
                    put_header(out, b'%', pairs.len());
                } else {
                    put_header(out, b'*', pairs.len() * 2);
                }
                for (k, v) in pairs {
                    k.encode(resp, out);
                    v.encode(resp, out);
                }
            }
            Reply::Double(_) | Reply::ShortDouble(_) => {
                let s = match self {
                    Reply::ShortDouble(d) => crate::num::fmt_short(*d),
                    Reply::Double(d) => fmt_double(*d),
                    _ => unreachable!("a double"),
                };
                if resp == Resp::V3 {
                    out.put_u8(b',');
                    out.put_slice(s.as_bytes());
                    out.put_slice(b"\r\n");
                } else {
                    put_bulk(out, s.as_bytes());
                }
            }
            Reply::HumanDouble(d) => {
                let s = crate::num::fmt_human_double(*d);
                if resp == Resp::V3 {
                    out.put_u8(b',');
                    out.put_slice(s.as_bytes());
                    out.put_slice(b"\r\n");
                } else {
                    put_bulk(out, s.as_bytes());
                }
            }
            Reply::Bool(b) => {
                if resp == Resp::V3 {
                    out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" });
                } else {
                    out.put_slice(if *b { b":1\r\n" } else { b":0\r\n" });
                }
            }
            Reply::Verbatim(fmt, b) => {
                if resp == Resp::V3 {
                    put_header(out, b'=', b.len() + 4);
                    out.put_slice(fmt.as_bytes());
                    out.put_u8(b':');
                    out.put_slice(b);
                    out.put_slice(b"\r\n");
                } else {
                    put_bulk(out, b);
                }
            }
            Reply::BigNumber(b) => {
                if resp == Resp::V3 {
                    out.put_u8(b'(');
                    out.put_slice(b);
                    out.put_slice(b"\r\n");
                } else {
                    put_bulk(out, b);
                }
            }
            Reply::AfterPushes(pushes, reply) => {
                for p in pushes {
                    p.encode(resp, out);
                }
                reply.encode(resp, out);
            }
            Reply::ThenPushes(reply, pushes) => {
                reply.encode(resp, out);
                for p in pushes {
                    out.put_slice(p);
                }
            }
        }
    }

    /// Convenience: the encoded bytes.
    pub fn to_bytes(&self, resp: Resp) -> Bytes {
        let mut b = BytesMut::new();
        self.encode(resp, &mut b);
        b.freeze()
    }
}

impl From<i64> for Reply {
    fn from(i: i64) -> Self {
        Reply::Int(i)
    }
}
impl From<Bytes> for Reply {
    fn from(b: Bytes) -> Self {
        Reply::Bulk(b)
    }
}
impl From<Option<Bytes>> for Reply {
    fn from(b: Option<Bytes>) -> Self {
        b.map_or(Reply::Nil, Reply::Bulk)
    }
}

/// `$<len>\r\n`: the header of an RDB file sent to a replica (the file
/// follows with no trailing CRLF, as Redis sends it).
pub fn payload_header(out: &mut BytesMut, len: usize) {
    put_header(out, b'$', len);
}

/// The header of an out-of-band message of `len` items (RESP3 `>`, RESP2
/// `*`), for a message whose items are encoded one by one: a tracking
/// invalidation carries the tracking client's null whatever protocol its
/// receiver speaks, as Redis writes it.
pub fn push_header(out: &mut BytesMut, resp: Resp, len: usize) {
    put_header(out, if resp == Resp::V3 { b'>' } else { b'*' }, len);
}

fn put_int(out: &mut BytesMut, i: i64) {
    let mut buf = itoa::Buffer::new();
    out.put_slice(buf.format(i).as_bytes());
}

fn put_header(out: &mut BytesMut, tag: u8, len: usize) {
    out.put_u8(tag);
    let mut buf = itoa::Buffer::new();
    out.put_slice(buf.format(len).as_bytes());
    out.put_slice(b"\r\n");
}

fn put_bulk(out: &mut BytesMut, b: &[u8]) {
    put_header(out, b'$', b.len());
    out.put_slice(b);
    out.put_slice(b"\r\n");
}

/// Simple strings and errors cannot carry CR/LF: Redis replaces them with
/// spaces, which also keeps a script's error text from breaking the stream.
fn put_line_safe(out: &mut BytesMut, s: &[u8]) {
    if s.iter().any(|&c| c == b'\r' || c == b'\n') {
        out.extend(s.iter().map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }));
    } else {
        out.put_slice(s);
    }
    out.put_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp2_and_resp3_encodings() {
        let r = Reply::Map(vec![(Reply::bulk_str("a"), Reply::Double(1.5))]);
        assert_eq!(&r.to_bytes(Resp::V2)[..], b"*2\r\n$1\r\na\r\n$3\r\n1.5\r\n");
        assert_eq!(&r.to_bytes(Resp::V3)[..], b"%1\r\n$1\r\na\r\n,1.5\r\n");
        assert_eq!(&Reply::Nil.to_bytes(Resp::V2)[..], b"$-1\r\n");
        assert_eq!(&Reply::NilArray.to_bytes(Resp::V2)[..], b"*-1\r\n");
        assert_eq!(&Reply::NilArray.to_bytes(Resp::V3)[..], b"_\r\n");
        assert_eq!(&Reply::Bool(true).to_bytes(Resp::V2)[..], b":1\r\n");
        assert_eq!(&Reply::Int(-42).to_bytes(Resp::V3)[..], b":-42\r\n");
        assert_eq!(&Reply::Double(f64::INFINITY).to_bytes(Resp::V3)[..], b",inf\r\n");
    }

    #[test]
    fn newlines_in_errors_become_spaces() {
        let r = Reply::error("ERR a\r\nb");
        assert_eq!(&r.to_bytes(Resp::V2)[..], b"-ERR a  b\r\n");
    }
}
