//! A raw RESP2/RESP3 client for byte-exact comparisons.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// A TCP or Unix-domain connection.
enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Sock {
    fn try_clone(&self) -> std::io::Result<Sock> {
        Ok(match self {
            Sock::Tcp(s) => Sock::Tcp(s.try_clone()?),
            Sock::Unix(s) => Sock::Unix(s.try_clone()?),
        })
    }

    fn set_read_timeout(&self, d: Option<Duration>) -> std::io::Result<()> {
        match self {
            Sock::Tcp(s) => s.set_read_timeout(d),
            Sock::Unix(s) => s.set_read_timeout(d),
        }
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A decoded reply, keeping everything needed to compare exactly.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Simple(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    /// `*`, `~`, `>` with their tag; `None` for a null array.
    Agg(u8, Option<Vec<Value>>),
    /// `%` map.
    Map(Vec<(Value, Value)>),
    Null,
    Double(Vec<u8>),
    Bool(bool),
    Verbatim(Vec<u8>),
    Big(Vec<u8>),
}

/// A readable rendering (bytes shown as lossy strings).
pub fn pretty(v: &Value) -> String {
    let s = |b: &[u8]| format!("{:?}", String::from_utf8_lossy(b));
    match v {
        Value::Simple(b) => format!("+{}", s(b)),
        Value::Error(b) => format!("-{}", s(b)),
        Value::Int(i) => format!(":{i}"),
        Value::Bulk(Some(b)) => s(b),
        Value::Bulk(None) => "nil".into(),
        Value::Agg(t, None) => format!("{}nil", *t as char),
        Value::Agg(t, Some(items)) => {
            format!("{}[{}]", *t as char, items.iter().map(pretty).collect::<Vec<_>>().join(", "))
        }
        Value::Map(p) => format!(
            "%{{{}}}",
            p.iter().map(|(k, v)| format!("{}: {}", pretty(k), pretty(v))).collect::<Vec<_>>().join(", ")
        ),
        Value::Null => "_".into(),
        Value::Double(b) => format!(",{}", String::from_utf8_lossy(b)),
        Value::Bool(b) => format!("#{b}"),
        Value::Verbatim(b) => format!("={}", s(b)),
        Value::Big(b) => format!("({}", String::from_utf8_lossy(b)),
    }
}

impl Value {
    /// Sorts aggregate elements (for replies whose order is unspecified).
    pub fn sorted(&self) -> Value {
        match self {
            Value::Agg(t, Some(items)) => {
                let mut v = items.clone();
                v.sort_by_key(|x| format!("{x:?}"));
                Value::Agg(*t, Some(v))
            }
            Value::Map(pairs) => {
                let mut v = pairs.clone();
                v.sort_by_key(|x| format!("{:?}", x.0));
                Value::Map(v)
            }
            other => other.clone(),
        }
    }

    /// Sorts a flat RESP2 array of (key, value) pairs by key.
    pub fn sorted_pairs(&self) -> Value {
        match self {
            Value::Agg(t, Some(items)) if items.len() % 2 == 0 => {
                let mut pairs: Vec<&[Value]> = items.chunks(2).collect();
                pairs.sort_by_key(|p| format!("{:?}", p[0]));
                Value::Agg(*t, Some(pairs.into_iter().flatten().cloned().collect()))
            }
            other => other.sorted(),
        }
    }

    /// Type and length only.
    pub fn shape(&self) -> String {
        match self {
            Value::Agg(t, Some(items)) => format!("{}{}", *t as char, items.len()),
            Value::Agg(t, None) => format!("{}nil", *t as char),
            Value::Map(p) => format!("%{}", p.len()),
            Value::Bulk(Some(_)) => "$".into(),
            Value::Bulk(None) => "$nil".into(),
            Value::Error(e) => format!("-{}", String::from_utf8_lossy(e).split(' ').next().unwrap_or("")),
            Value::Int(_) => ":".into(),
            Value::Simple(_) => "+".into(),
            Value::Null => "_".into(),
            Value::Double(_) => ",".into(),
            Value::Bool(_) => "#".into(),
            Value::Verbatim(_) => "=".into(),
            Value::Big(_) => "(".into(),
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bulk(Some(b)) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        }
    }

    pub fn bulks(&self) -> Vec<Vec<u8>> {
        match self {
            Value::Agg(_, Some(items)) => items
                .iter()
                .filter_map(|v| match v {
                    Value::Bulk(Some(b)) | Value::Simple(b) => Some(b.clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// A raw connection.
pub struct RawConn {
    w: Sock,
    r: BufReader<Sock>,
    /// Every byte read, for exact comparisons of a reply.
    pub last_raw: Vec<u8>,
}

pub fn encode(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

impl RawConn {
    pub fn connect(port: u16) -> RawConn {
        Self::try_connect(port).expect("connect")
    }

    /// Like [`connect`](Self::connect), reporting failure instead of panicking.
    pub fn try_connect(port: u16) -> std::io::Result<RawConn> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_nodelay(true)?;
        Self::over(Sock::Tcp(s))
    }

    /// A connection to the Unix socket at `path`.
    pub fn connect_unix(path: &std::path::Path) -> RawConn {
        Self::over(Sock::Unix(UnixStream::connect(path).expect("connect"))).expect("connect")
    }

    fn over(s: Sock) -> std::io::Result<RawConn> {
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(RawConn { w: s.try_clone()?, r: BufReader::new(s), last_raw: Vec::new() })
    }

    pub fn set_read_timeout(&self, d: Duration) {
        self.w.set_read_timeout(Some(d)).expect("timeout");
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).expect("write");
    }

    /// Like [`send_raw`](Self::send_raw), reporting a closed connection instead of panicking.
    pub fn try_send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.w.write_all(bytes)
    }

    pub fn send(&mut self, args: &[Vec<u8>]) {
        self.send_raw(&encode(args));
    }

    /// Sends a command and reads its reply.
    pub fn cmd(&mut self, args: &[&str]) -> Value {
        let a: Vec<Vec<u8>> = args.iter().map(|s| s.as_bytes().to_vec()).collect();
        self.send(&a);
        self.read().expect("reply")
    }

    /// Reads one reply (None on timeout / EOF).
    pub fn read(&mut self) -> Option<Value> {
        self.last_raw.clear();
        self.read_value()
    }

    fn line(&mut self) -> Option<Vec<u8>> {
        let mut l = Vec::new();
        let n = self.r.read_until(b'\n', &mut l).ok()?;
        if n == 0 {
            return None;
        }
        self.last_raw.extend_from_slice(&l);
        if l.ends_with(b"\r\n") {
            l.truncate(l.len() - 2);
        }
        Some(l)
    }

    fn read_value(&mut self) -> Option<Value> {
        let l = self.line()?;
        let (t, rest) = (l[0], &l[1..]);
        let num = || std::str::from_utf8(rest).ok().and_then(|s| s.parse::<i64>().ok());
        Some(match t {
            b'+' => Value::Simple(rest.to_vec()),
            b'-' => Value::Error(rest.to_vec()),
            b':' => Value::Int(num()?),
            b'$' | b'=' | b'!' => {
                let n = num()?;
                if n < 0 {
                    return Some(Value::Bulk(None));
                }
                let mut buf = vec![0u8; n as usize + 2];
                self.r.read_exact(&mut buf).ok()?;
                self.last_raw.extend_from_slice(&buf);
                buf.truncate(n as usize);
                if t == b'=' {
                    Value::Verbatim(buf)
                } else if t == b'!' {
                    Value::Error(buf)
                } else {
                    Value::Bulk(Some(buf))
                }
            }
            b'*' | b'~' | b'>' => {
                let n = num()?;
                if n < 0 {
                    return Some(Value::Agg(t, None));
                }
                let mut v = Vec::new();
                for _ in 0..n {
                    v.push(self.read_value()?);
                }
                Value::Agg(t, Some(v))
            }
            b'%' | b'|' => {
                let n = num()?;
                let mut v = Vec::new();
                for _ in 0..n {
                    let k = self.read_value()?;
                    let val = self.read_value()?;
                    v.push((k, val));
                }
                if t == b'|' {
                    // Attribute: skip it and read the real reply.
                    return self.read_value();
                }
                Value::Map(v)
            }
            b'_' => Value::Null,
            b',' => Value::Double(rest.to_vec()),
            b'#' => Value::Bool(rest == b"t"),
            b'(' => Value::Big(rest.to_vec()),
            _ => Value::Error(format!("unparseable reply line {:?}", String::from_utf8_lossy(&l)).into_bytes()),
        })
    }
}
