//! The socket calls of the event loop and of a busy script's hook: a
//! socket registered with the reactor, and reads, writes and accepts made
//! directly on a descriptor.
//!
//! [`Listener`] and [`Stream`] are a TCP or a Unix-domain socket: the
//! connection code reads and writes both through their descriptor with the
//! same calls ([`raw`]), so a Unix client is served by exactly the TCP path.

use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use crate::client::ClientAddr;

/// A listening socket: TCP, or Unix-domain with the path it is bound to.
#[derive(Debug)]
pub(crate) enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, Arc<str>),
}

impl AsRawFd for Listener {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix(l, _) => l.as_raw_fd(),
        }
    }
}

impl Listener {
    /// Accepts a pending connection without waiting, with the peer's
    /// address as clients see it (a Unix peer is the listener's path).
    pub(crate) fn accept(&self) -> std::io::Result<(Stream, ClientAddr)> {
        use std::os::fd::FromRawFd;
        let fd = raw::accept(self)?;
        match self {
            Listener::Tcp(_) => {
                // SAFETY: `fd` is a new connected TCP socket nothing else owns.
                let s = unsafe { TcpStream::from_raw_fd(fd) };
                let peer = s.peer_addr()?;
                Ok((Stream::Tcp(s), ClientAddr::Tcp(peer)))
            }
            Listener::Unix(_, path) => {
                // SAFETY: `fd` is a new connected Unix socket nothing else owns.
                let s = unsafe { UnixStream::from_raw_fd(fd) };
                Ok((Stream::Unix(s), ClientAddr::Unix(path.clone())))
            }
        }
    }

    /// Removes a Unix socket's file (at shutdown, as Redis does).
    pub(crate) fn remove_file(&self) {
        if let Listener::Unix(_, path) = self {
            tracing::info!("Removing the unix socket file.");
            let _ = std::fs::remove_file(&**path);
        }
    }
}

/// A connection: TCP or Unix-domain.
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl std::os::fd::AsFd for Stream {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            Stream::Tcp(s) => s.as_fd(),
            Stream::Unix(s) => s.as_fd(),
        }
    }
}

impl Stream {
    /// Sends FIN after the last reply.
    pub(crate) fn shutdown_write(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Write),
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Write),
        };
    }

    /// The server's end as `CLIENT LIST`'s `laddr` shows it (`peer` is the
    /// client's end; a Unix connection shows the socket's path at both ends).
    pub(crate) fn local_addr(&self, peer: &ClientAddr) -> Option<ClientAddr> {
        match self {
            Stream::Tcp(s) => s.local_addr().ok().map(ClientAddr::Tcp),
            Stream::Unix(_) => Some(peer.clone()),
        }
    }

    /// `TCP_NODELAY`, as Redis sets it on every TCP client.
    pub(crate) fn set_nodelay(&self) {
        if let Stream::Tcp(s) = self {
            let _ = s.set_nodelay(true);
        }
    }
}

/// Binds a non-blocking Unix-domain listener at `path`, as Redis's
/// `unixsocket` does: an old file there is removed first, the backlog is
/// `tcp-backlog`'s, and a non-zero `perm` (`unixsocketperm`) is the file's
/// mode. Unlike Redis, a socket a live server still accepts on is not taken
/// over (`AddrInUse`): two servers of one test given the same path would
/// otherwise leave the first unreachable without a word.
pub(crate) fn listen_unix(path: &str, perm: u32, backlog: u32) -> std::io::Result<Listener> {
    use socket2::{Domain, SockAddr, Socket, Type};
    if UnixStream::connect(path).is_ok() {
        return Err(std::io::ErrorKind::AddrInUse.into());
    }
    let _ = std::fs::remove_file(path);
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    socket.bind(&SockAddr::unix(path)?)?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    socket.set_nonblocking(true)?;
    if perm != 0 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm))?;
    }
    Ok(Listener::Unix(socket.into(), Arc::from(path)))
}

/// Registers a socket (a std type owning its descriptor) with the reactor.
pub(crate) fn register<T: std::os::fd::AsRawFd>(socket: T, interest: Interest) -> std::io::Result<AsyncFd<T>> {
    // SAFETY: `T` (`TcpStream`, `TcpListener`, `OwnedFd`) owns its open
    // descriptor and keeps it, unchanged, until it is dropped with the `AsyncFd`.
    unsafe { AsyncFd::register_with_interest(socket, interest) }.map_err(std::io::Error::from)
}

/// Socket calls made by the busy hook. They go to the kernel directly:
/// tokio's own `try_read`/`try_write` first consult the readiness its
/// reactor last saw, and the reactor does not run while a script blocks the
/// event loop. (Reading behind the reactor's back is safe: a task that later
/// finds nothing to read gets `WouldBlock`, which clears that readiness.)
pub(crate) mod raw {
    use std::os::fd::AsRawFd;

    /// Reads what the socket has into `buf`'s spare capacity, without waiting.
    pub(crate) fn recv(socket: &impl AsRawFd, buf: &mut bytes::BytesMut) -> std::io::Result<usize> {
        let spare = buf.spare_capacity_mut();
        // SAFETY: the pointer and length describe `buf`'s spare capacity,
        // which the kernel writes at most `len` bytes into.
        let n = unsafe { libc::recv(socket.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len(), libc::MSG_DONTWAIT) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = n as usize;
        // SAFETY: the kernel initialised `n` bytes after the current length.
        unsafe { buf.set_len(buf.len() + n) };
        Ok(n)
    }

    /// Writes what the socket takes now of `data`.
    pub(crate) fn send(socket: &impl AsRawFd, data: &[u8]) -> std::io::Result<usize> {
        // SAFETY: `data` is valid for `data.len()` bytes of reading.
        let n = unsafe {
            libc::send(socket.as_raw_fd(), data.as_ptr().cast(), data.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Accepts a pending connection, without waiting: its new descriptor,
    /// which the caller owns.
    pub(crate) fn accept(listener: &impl AsRawFd) -> std::io::Result<std::os::fd::RawFd> {
        // SAFETY: null address pointers are allowed (the peer is read later).
        let fd = unsafe {
            libc::accept4(
                listener.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(fd)
    }
}
