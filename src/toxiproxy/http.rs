//! Just enough HTTP/1.1 for Toxiproxy's clients: a request line, headers, a
//! body by `Content-Length` or chunked, keep-alive; one response at a time.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Headers larger than this are refused (431), bodies larger than
/// [`MAX_BODY`] too (413).
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 16 * 1024 * 1024;

pub struct Request {
    pub method: String,
    /// The path, percent-decoded, without the query.
    pub path: String,
    pub user_agent: String,
    pub body: Vec<u8>,
    keep_alive: bool,
}

pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(status: u16, body: String) -> Response {
        Response { status, content_type: "application/json", body: body.into_bytes() }
    }

    /// Go's `http.Error`: the text and a newline, as plain text.
    pub fn text(status: u16, text: &str) -> Response {
        Response { status, content_type: "text/plain; charset=utf-8", body: format!("{text}\n").into_bytes() }
    }

    pub fn empty(status: u16) -> Response {
        Response { status, content_type: "", body: Vec::new() }
    }
}

/// A connection's buffered bytes.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    pub fn new(stream: TcpStream) -> Conn {
        Conn { stream, buf: Vec::new() }
    }

    async fn fill(&mut self) -> Option<()> {
        let mut tmp = [0u8; 8192];
        match self.stream.read(&mut tmp).await {
            Ok(0) | Err(_) => None,
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                Some(())
            }
        }
    }

    /// The next request; `Err` with a response to send before closing
    /// when it is malformed, `Ok(None)` when the peer closed.
    pub async fn request(&mut self) -> Result<Option<Request>, Response> {
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i;
            }
            if self.buf.len() > MAX_HEAD {
                return Err(Response::text(431, "431 Request Header Fields Too Large"));
            }
            if self.fill().await.is_none() {
                return Ok(None);
            }
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        self.buf.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let mut first = lines.next().unwrap_or_default().split(' ');
        let (Some(method), Some(target), Some(version)) = (first.next(), first.next(), first.next()) else {
            return Err(Response::text(400, "400 Bad Request"));
        };
        let mut length = 0usize;
        let mut chunked = false;
        let mut keep_alive = version == "HTTP/1.1";
        let mut user_agent = String::new();
        let mut continue_first = false;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else { continue };
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => match value.parse() {
                    Ok(n) if n <= MAX_BODY => length = n,
                    Ok(_) => return Err(Response::text(413, "413 Request Entity Too Large")),
                    Err(_) => return Err(Response::text(400, "400 Bad Request")),
                },
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => {
                    if value.eq_ignore_ascii_case("close") {
                        keep_alive = false;
                    } else if value.eq_ignore_ascii_case("keep-alive") {
                        keep_alive = true;
                    }
                }
                "user-agent" => user_agent = value.to_string(),
                "expect" => continue_first = value.eq_ignore_ascii_case("100-continue"),
                _ => {}
            }
        }
        // curl asks before sending a body over 1 KiB, as Go's server answers.
        if continue_first && (chunked || length > 0) && self.buf.is_empty() {
            let _ = self.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await;
        }
        let body = if chunked { self.chunked_body().await? } else { self.exact(length).await? };
        let path = target.split('?').next().unwrap_or_default();
        Ok(Some(Request { method: method.to_string(), path: percent_decode(path), user_agent, body, keep_alive }))
    }

    async fn exact(&mut self, n: usize) -> Result<Vec<u8>, Response> {
        while self.buf.len() < n {
            if self.fill().await.is_none() {
                return Err(Response::text(400, "400 Bad Request"));
            }
        }
        Ok(self.buf.drain(..n).collect())
    }

    async fn line(&mut self) -> Result<String, Response> {
        loop {
            if let Some(i) = find(&self.buf, b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return Ok(line);
            }
            if self.buf.len() > MAX_HEAD || self.fill().await.is_none() {
                return Err(Response::text(400, "400 Bad Request"));
            }
        }
    }

    async fn chunked_body(&mut self) -> Result<Vec<u8>, Response> {
        let mut body = Vec::new();
        loop {
            let size_line = self.line().await?;
            let hex = size_line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(hex, 16).map_err(|_| Response::text(400, "400 Bad Request"))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while !self.line().await?.is_empty() {}
                return Ok(body);
            }
            if body.len() + size > MAX_BODY {
                return Err(Response::text(413, "413 Request Entity Too Large"));
            }
            body.extend(self.exact(size).await?);
            self.line().await?;
        }
    }

    /// Writes `r`; `false` when the connection is to close.
    pub async fn respond(&mut self, req: Option<&Request>, r: Response) -> bool {
        let keep_alive = req.is_some_and(|q| q.keep_alive);
        let mut head = format!("HTTP/1.1 {} {}\r\n", r.status, reason(r.status));
        if !r.content_type.is_empty() {
            head.push_str(&format!("Content-Type: {}\r\n", r.content_type));
        }
        if r.content_type.starts_with("text/plain") {
            head.push_str("X-Content-Type-Options: nosniff\r\n");
        }
        if r.status != 204 {
            head.push_str(&format!("Content-Length: {}\r\n", r.body.len()));
        }
        if !keep_alive {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&r.body);
        self.stream.write_all(&out).await.is_ok() && keep_alive
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(hex, 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        413 => "Request Entity Too Large",
        431 => "Request Header Fields Too Large",
        _ => "Internal Server Error",
    }
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("/proxies/a%20b"), "/proxies/a b");
        assert_eq!(percent_decode("/x%2"), "/x%2");
        assert_eq!(percent_decode("/x%zz"), "/x%zz");
    }
}
