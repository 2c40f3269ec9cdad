//! Cutting a stream of encoded replies into whole frames, as a client reads
//! them: RESP2 and every RESP3 type. The recorder (`control/record.rs`)
//! splits what one command wrote to its client with it, and the binary's
//! replay reads the replies of the servers it feeds with it.

/// The length of the frame `buf` starts with, if `buf` holds all of it.
pub fn frame_len(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
    skip(buf, &mut i)?;
    Some(i)
}

/// Splits `buf` into its whole frames; the rest (an incomplete frame) is
/// left out.
pub fn split(buf: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = buf;
    while let Some(n) = frame_len(rest) {
        out.push(&rest[..n]);
        rest = &rest[n..];
    }
    out
}

/// True for a frame the server sends on its own, not as a command's reply:
/// a pub/sub message (`message`, `pmessage`, `smessage`, RESP2 arrays or
/// RESP3 pushes) or a client-side caching `invalidate` push.
pub fn is_message(frame: &[u8]) -> bool {
    let push = frame.first() == Some(&b'>');
    if !push && frame.first() != Some(&b'*') {
        return false;
    }
    let Some(eol) = frame.windows(2).position(|w| w == b"\r\n") else { return false };
    let first = &frame[eol + 2..];
    let Some(eol) = first.windows(2).position(|w| w == b"\r\n") else { return false };
    if first.first() != Some(&b'$') && first.first() != Some(&b'+') {
        return false;
    }
    let word = if first[0] == b'+' {
        &first[1..eol]
    } else {
        let Some(n) = std::str::from_utf8(&first[1..eol]).ok().and_then(|s| s.parse::<usize>().ok()) else {
            return false;
        };
        match first.get(eol + 2..eol + 2 + n) {
            Some(w) => w,
            None => return false,
        }
    };
    matches!(word, b"message" | b"pmessage" | b"smessage") || (push && word == b"invalidate")
}

fn line<'a>(buf: &'a [u8], i: &mut usize) -> Option<&'a [u8]> {
    let start = *i;
    let end = start + buf.get(start..)?.windows(2).position(|w| w == b"\r\n")?;
    *i = end + 2;
    Some(&buf[start..end])
}

fn number(buf: &[u8], i: &mut usize) -> Option<i64> {
    std::str::from_utf8(line(buf, i)?).ok()?.parse().ok()
}

fn skip(buf: &[u8], i: &mut usize) -> Option<()> {
    let tag = *buf.get(*i)?;
    *i += 1;
    match tag {
        b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => {
            line(buf, i)?;
        }
        b'$' | b'!' | b'=' => {
            let n = number(buf, i)?;
            if n >= 0 {
                let end = i.checked_add(n as usize)?.checked_add(2)?;
                if buf.len() < end {
                    return None;
                }
                *i = end;
            }
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = number(buf, i)?;
            let items = if matches!(tag, b'%' | b'|') { n.max(0) * 2 } else { n.max(0) };
            for _ in 0..items {
                skip(buf, i)?;
            }
            if tag == b'|' {
                // An attribute precedes the value it describes.
                skip(buf, i)?;
            }
        }
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_cut_whole() {
        let s = b"+OK\r\n$3\r\nabc\r\n*2\r\n:1\r\n$-1\r\n%1\r\n+a\r\n~1\r\n,1.5\r\n$5\r\nab";
        let f = split(s);
        assert_eq!(f, vec![&b"+OK\r\n"[..], b"$3\r\nabc\r\n", b"*2\r\n:1\r\n$-1\r\n", b"%1\r\n+a\r\n~1\r\n,1.5\r\n"]);
        assert_eq!(frame_len(b"*2\r\n:1\r\n"), None);
    }

    #[test]
    fn messages_are_told_from_replies() {
        assert!(is_message(b"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n"));
        assert!(is_message(b">4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$1\r\nc\r\n$1\r\nm\r\n"));
        assert!(is_message(b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"));
        assert!(!is_message(b"*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n"));
        assert!(!is_message(b"*2\r\n$7\r\nmessage\r\n$2\r\nhi\r\n"[..4].as_ref()));
        assert!(!is_message(b"*1\r\n$10\r\ninvalidate\r\n"));
        assert!(!is_message(b"$7\r\nmessage\r\n"));
    }
}
