//! What a replica reads from its primary outside the command stream: the
//! one-line replies of the handshake (`+PONG`, `+OK`, `-NOAUTH …`,
//! `+FULLRESYNC <replid> <offset>`, `+CONTINUE [<replid>]`) and the header
//! of the RDB transfer (`$<len>`, or `$EOF:<40-byte mark>` for a diskless
//! one), with the lone `\n` a primary sends to keep the link alive while it
//! prepares the file. The stream itself is commands: [`super::RequestParser`].

use bytes::{Buf, Bytes, BytesMut};

/// Longest line accepted (the `PSYNC` reply and the transfer header are short).
const LINE_MAX: usize = 64 * 1024;

/// One line from a primary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrimaryLine {
    /// `+…` (the text after `+`).
    Status(Bytes),
    /// `-…` (the text after `-`).
    Error(Bytes),
    /// `$<len>`: an RDB file of that many bytes follows.
    Payload(u64),
    /// `$EOF:<mark>`: an RDB file follows, ended by the 40-byte mark.
    PayloadUntil(Bytes),
    /// A bare newline (keep-alive).
    Newline,
}

/// Takes one line from the front of `buf`: `Ok(None)` until it is complete,
/// `Err` for a line too long or of a kind a primary never sends.
pub fn primary_line(buf: &mut BytesMut) -> Result<Option<PrimaryLine>, String> {
    let Some(end) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > LINE_MAX {
            return Err("line too long from the primary".into());
        }
        return Ok(None);
    };
    let mut line = buf.split_to(end + 1).freeze();
    line.truncate(end);
    if line.last() == Some(&b'\r') {
        line.truncate(line.len() - 1);
    }
    if line.is_empty() {
        return Ok(Some(PrimaryLine::Newline));
    }
    let tag = line[0];
    line.advance(1);
    match tag {
        b'+' => Ok(Some(PrimaryLine::Status(line))),
        b'-' => Ok(Some(PrimaryLine::Error(line))),
        b'$' => {
            if let Some(mark) = line.strip_prefix(b"EOF:") {
                if mark.len() != 40 {
                    return Err("bad EOF mark from the primary".into());
                }
                return Ok(Some(PrimaryLine::PayloadUntil(Bytes::copy_from_slice(mark))));
            }
            match std::str::from_utf8(&line).ok().and_then(|s| s.parse::<u64>().ok()) {
                Some(n) => Ok(Some(PrimaryLine::Payload(n))),
                None => Err(format!("bad transfer length from the primary: {}", String::from_utf8_lossy(&line))),
            }
        }
        _ => {
            Err(format!("unexpected reply from the primary: {}", String::from_utf8_lossy(&line[..line.len().min(64)])))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_a_handshake() {
        let mut b =
            BytesMut::from(&b"+PONG\r\n\n$EOF:0123456789012345678901234567890123456789\r\n$12\r\n-NOAUTH x\r\n+OK"[..]);
        assert_eq!(primary_line(&mut b), Ok(Some(PrimaryLine::Status(Bytes::from_static(b"PONG")))));
        assert_eq!(primary_line(&mut b), Ok(Some(PrimaryLine::Newline)));
        assert!(matches!(primary_line(&mut b), Ok(Some(PrimaryLine::PayloadUntil(m))) if m.len() == 40));
        assert_eq!(primary_line(&mut b), Ok(Some(PrimaryLine::Payload(12))));
        assert_eq!(primary_line(&mut b), Ok(Some(PrimaryLine::Error(Bytes::from_static(b"NOAUTH x")))));
        assert_eq!(primary_line(&mut b), Ok(None));
        assert!(primary_line(&mut BytesMut::from(&b"$-5\r\n"[..])).is_err());
        assert!(primary_line(&mut BytesMut::from(&b"*3\r\n"[..])).is_err());
        assert!(primary_line(&mut BytesMut::from(vec![b'a'; LINE_MAX + 1].as_slice())).is_err());
    }
}
