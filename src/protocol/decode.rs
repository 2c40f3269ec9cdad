//! Reading an encoded reply back into a [`Reply`]: RESP2 and RESP3 as a
//! Redis server writes them (simple strings, integers, bulk strings, nulls,
//! errors, arrays, sets, maps). Used for data rlockd embeds, recorded from
//! a real server, and for a target's replies to `MIGRATE`; anything
//! malformed or of another type is `None`.

use bytes::Bytes;

use super::Reply;

/// The reply `data` starts with (the rest of `data` is ignored).
pub fn decode(data: &[u8]) -> Option<Reply> {
    Reader { b: data, i: 0 }.value()
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn line(&mut self) -> Option<&[u8]> {
        let start = self.i;
        let end = start + self.b.get(start..)?.windows(2).position(|w| w == b"\r\n")?;
        self.i = end + 2;
        Some(&self.b[start..end])
    }

    fn number(&mut self) -> Option<i64> {
        std::str::from_utf8(self.line()?).ok()?.parse().ok()
    }

    fn count(&mut self) -> Option<usize> {
        usize::try_from(self.number()?).ok()
    }

    fn items(&mut self) -> Option<Vec<Reply>> {
        let n = self.count()?;
        (0..n).map(|_| self.value()).collect()
    }

    fn value(&mut self) -> Option<Reply> {
        let tag = *self.b.get(self.i)?;
        self.i += 1;
        Some(match tag {
            b'+' => Reply::Status(Bytes::copy_from_slice(self.line()?)),
            b'-' => Reply::Error(Bytes::copy_from_slice(self.line()?)),
            b':' => Reply::Int(self.number()?),
            b'$' if self.b.get(self.i..self.i + 4) == Some(b"-1\r\n") => {
                self.i += 4;
                Reply::Nil
            }
            b'*' if self.b.get(self.i..self.i + 4) == Some(b"-1\r\n") => {
                self.i += 4;
                Reply::NilArray
            }
            b'$' => {
                let n = self.count()?;
                let v = Bytes::copy_from_slice(self.b.get(self.i..self.i.checked_add(n)?)?);
                if self.b.get(self.i + n..self.i + n + 2)? != b"\r\n" {
                    return None;
                }
                self.i += n + 2;
                Reply::Bulk(v)
            }
            b'_' => {
                self.line()?;
                Reply::Nil
            }
            b'*' => Reply::Array(self.items()?),
            b'~' => Reply::Set(self.items()?),
            b'%' => {
                let n = self.count()?;
                Reply::Map((0..n).map(|_| Some((self.value()?, self.value()?))).collect::<Option<_>>()?)
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Resp;

    #[test]
    fn decodes_what_the_encoder_writes() {
        let r = Reply::Map(vec![
            (Reply::bulk_str("a"), Reply::Set(vec![Reply::Status(Bytes::from_static(b"x")), Reply::Int(-3)])),
            (Reply::bulk_str("b\r\n"), Reply::Array(vec![Reply::Nil, Reply::bulk_str("")])),
        ]);
        assert_eq!(decode(&r.to_bytes(Resp::V3)), Some(r));
        assert_eq!(decode(b"$-1\r\n"), Some(Reply::Nil));
        assert_eq!(decode(b"*-1\r\n"), Some(Reply::NilArray));
        assert_eq!(decode(b"-ERR no\r\n"), Some(Reply::error("ERR no")));
    }

    #[test]
    fn malformed_input_is_none() {
        for bad in [&b""[..], b"$5\r\nab\r\n", b"*2\r\n:1\r\n", b":x\r\n", b"$-3\r\n", b"!3\r\nerr\r\n", b"$2\r\nabcd"]
        {
            assert_eq!(decode(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
