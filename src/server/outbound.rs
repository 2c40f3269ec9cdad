//! A synchronous request to another server, for a command that waits for
//! the answer on the event loop as Redis's does (`MIGRATE`: a connection
//! made for the call, the commands written at once, the reply lines read
//! back, each step within the command's timeout). `cmd/migrate.rs` builds
//! the request and reads the replies; this file only moves the bytes.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::core::ExchangeError;

/// Connects to `host`:`port`, writes `request`, and reads up to `replies`
/// lines (fewer if the target closes or a read times out).
pub(super) fn exchange(
    host: &str,
    port: &str,
    request: &[u8],
    replies: usize,
    timeout: Duration,
) -> Result<Vec<Vec<u8>>, ExchangeError> {
    let addr =
        format!("{host}:{port}").to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or(ExchangeError::Resolve)?;
    let stream = TcpStream::connect_timeout(&addr, timeout).map_err(|_| ExchangeError::Write)?;
    let _ = stream.set_nodelay(true);
    stream.set_write_timeout(Some(timeout)).map_err(|_| ExchangeError::Write)?;
    stream.set_read_timeout(Some(timeout)).map_err(|_| ExchangeError::Write)?;
    (&stream).write_all(request).map_err(|_| ExchangeError::Write)?;
    let mut reader = BufReader::new(&stream);
    let mut lines = Vec::with_capacity(replies);
    while lines.len() < replies {
        let mut l = Vec::new();
        match reader.read_until(b'\n', &mut l) {
            Ok(n) if n > 0 => lines.push(l),
            _ => break,
        }
    }
    Ok(lines)
}
