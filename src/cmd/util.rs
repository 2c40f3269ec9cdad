//! Argument helpers shared by the command families.

use bytes::Bytes;

use crate::error::CmdError;
use crate::num;

/// Case-insensitive comparison of an argument with an ASCII keyword.
#[inline]
pub fn eq(arg: &[u8], kw: &str) -> bool {
    arg.eq_ignore_ascii_case(kw.as_bytes())
}

/// Strict integer (`ERR value is not an integer or out of range`).
#[inline]
pub fn int(arg: &[u8]) -> Result<i64, CmdError> {
    Ok(num::parse_int(arg)?)
}

/// Double (`ERR value is not a valid float`).
#[allow(dead_code)] // a helper kept for the command families
pub fn float(arg: &[u8]) -> Result<f64, CmdError> {
    num::parse_double(arg).ok_or(CmdError::NotFloat)
}

/// Bytes of a `Display` value.
#[allow(dead_code)] // a helper kept for the command families
pub fn bytes_of(s: impl ToString) -> Bytes {
    Bytes::from(s.to_string())
}

/// A text report (INFO, CLIENT INFO, MEMORY DOCTOR…): a verbatim string
/// for a RESP3 client, a bulk string otherwise.
pub fn info_text(ctx: &super::Ctx<'_>, line: String) -> crate::protocol::Reply {
    use crate::protocol::{Reply, Resp};
    let text = Bytes::from(line);
    if ctx.client.resp == Resp::V3 {
        Reply::Verbatim("txt", text)
    } else {
        Reply::Bulk(text)
    }
}

/// `SCAN`-family cursor (`ERR invalid cursor`).
pub fn cursor(arg: &[u8]) -> Result<u64, CmdError> {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| CmdError::custom("ERR invalid cursor"))
}

/// Options shared by the SCAN family: `MATCH pattern`, `COUNT n`, `TYPE t`.
#[derive(Debug, Default)]
pub struct ScanOpts {
    pub pattern: Option<Bytes>,
    pub count: usize,
    pub type_filter: Option<Bytes>,
}

/// Parses SCAN options from `args` (after the cursor). `allow_type` for SCAN itself.
pub fn scan_opts(args: &[Bytes], allow_type: bool) -> Result<ScanOpts, CmdError> {
    let mut o = ScanOpts { count: 10, ..Default::default() };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let has_next = i + 1 < args.len();
        if eq(a, "count") && has_next {
            let c = int(&args[i + 1])?;
            if c < 1 {
                return Err(CmdError::Syntax);
            }
            o.count = c as usize;
            i += 2;
        } else if eq(a, "match") && has_next {
            let p = args[i + 1].clone();
            o.pattern = if &p[..] == b"*" { None } else { Some(p) };
            i += 2;
        } else if allow_type && eq(a, "type") && has_next {
            o.type_filter = Some(args[i + 1].clone());
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok(o)
}

/// Redis-style `start`/`end` index normalisation for inclusive ranges
/// (`GETRANGE`, `LRANGE`…). Returns `None` for an empty range.
#[allow(dead_code)] // a helper kept for the command families
pub fn normalize_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut s = if start < 0 { len + start } else { start };
    let mut e = if end < 0 { len + end } else { end };
    if s < 0 {
        s = 0;
    }
    if e < 0 {
        e = 0;
    }
    if e >= len {
        e = len - 1;
    }
    if s > e || len == 0 {
        return None;
    }
    Some((s as usize, e as usize))
}
