//! The socket calls of the event loop and of a busy script's hook: a
//! socket registered with the reactor, and reads, writes and accepts made
//! directly on a descriptor.

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

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

    /// Accepts a pending connection, without waiting.
    pub(crate) fn accept(listener: &impl AsRawFd) -> std::io::Result<std::net::TcpStream> {
        use std::os::fd::FromRawFd;
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
        // SAFETY: `accept4` returned a new descriptor that nothing else owns.
        Ok(unsafe { std::net::TcpStream::from_raw_fd(fd) })
    }
}
