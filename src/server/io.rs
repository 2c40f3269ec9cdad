//! A server's sockets: its listeners and its connections' slots.
//!
//! [`Io`] is what the layers below reach as `core::ServerIo`: a busy
//! script's hook (`serve_busy`: accept what is pending, then have
//! `connection::serve_waiting` serve the connections that wait for input)
//! and `CONFIG SET port`/`bind` (`relisten`).
//!
//! Everything here is used on the server's event-loop thread: by the accept
//! task, by connection tasks, and by a busy script's hook (which blocks that
//! thread and serves sockets itself). The mutexes are never contended; they
//! make the registry shareable with the core ([`ServerIo`]) without `unsafe`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use super::connection::{self, Conns};
use super::socket::{Listener, Stream};
use crate::client::ClientAddr;
use crate::core::{Core, ExchangeError, ServerIo, Shared};

/// The listeners and connections of one server.
pub(crate) struct Io {
    /// Every connection's slot, by client id.
    pub(crate) conns: Arc<Conns>,
    listeners: parking_lot::Mutex<Listeners>,
    shared: Weak<Shared>,
    /// The server's runtime: listeners register with its reactor, also
    /// when another thread reopens them (a crashed node brought back).
    runtime: tokio::runtime::Handle,
}

struct Listeners {
    /// The TCP listeners (which `CONFIG SET port`/`bind` replace), then the
    /// Unix socket's, if any.
    list: Vec<AsyncFd<Listener>>,
    /// The accept task, to wake when the list changes or the busy hook
    /// polled a listener (which replaces the task's registration).
    waker: Option<Waker>,
}

impl Io {
    /// The registry of `shared`'s server, listening on `listeners` (must be
    /// called inside the server's runtime).
    pub(crate) fn new(shared: &Arc<Shared>, listeners: Vec<Listener>) -> Arc<Io> {
        let list = register(listeners);
        Arc::new(Io {
            conns: Arc::new(parking_lot::Mutex::new(HashMap::new())),
            listeners: parking_lot::Mutex::new(Listeners { list, waker: None }),
            shared: Arc::downgrade(shared),
            runtime: tokio::runtime::Handle::current(),
        })
    }

    /// The accept task's poll: the first connection waiting on any listener.
    pub(crate) fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<std::io::Result<(Stream, ClientAddr)>> {
        let mut l = self.listeners.lock();
        if !l.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            l.waker = Some(cx.waker().clone());
        }
        for listener in &l.list {
            loop {
                match listener.poll_read_ready(cx) {
                    Poll::Pending => break,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Ready(Ok(mut ready)) => match ready.try_io(|l| l.get_ref().accept()) {
                        Ok(r) => return Poll::Ready(r),
                        // Nothing pending: readiness cleared, poll again to wait.
                        Err(_would_block) => continue,
                    },
                }
            }
        }
        Poll::Pending
    }

    /// A connection waiting to be accepted, without waiting (the busy hook,
    /// while the reactor does not run: see [`raw`]).
    pub(crate) fn try_accept(&self) -> Option<(Stream, ClientAddr)> {
        let l = self.listeners.lock();
        l.list.iter().find_map(|listener| listener.get_ref().accept().ok())
    }

    /// Stops listening (shutdown) and removes the Unix socket's file.
    pub(crate) fn close_listeners(&self) {
        let old = std::mem::take(&mut self.listeners.lock().list);
        for l in &old {
            l.get_ref().remove_file();
        }
        drop(old);
    }
}

/// Registers listeners with the current runtime's reactor.
fn register(listeners: Vec<Listener>) -> Vec<AsyncFd<Listener>> {
    listeners
        .into_iter()
        .filter_map(|l| match super::socket::register(l, Interest::READABLE) {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::error!("cannot register listener: {e}");
                None
            }
        })
        .collect()
}

impl ServerIo for Io {
    fn serve_busy(&self, core: &mut Core) {
        let Some(shared) = self.shared.upgrade() else { return };
        while let Some((socket, peer)) = self.try_accept() {
            connection::adopt(&shared, &self.conns, core, socket, peer);
        }
        connection::serve_waiting(&self.conns, core, &shared);
    }

    /// As Redis does on `CONFIG SET port` / `bind`: the current listeners
    /// close first (connected clients stay), then the new addresses are
    /// bound, and if that fails the old ones are bound again.
    fn relisten(
        &self,
        bind: &str,
        port: u16,
        old_bind: &str,
        old_port: u16,
        backlog: u32,
    ) -> std::io::Result<SocketAddr> {
        let _reactor = self.runtime.enter();
        let mut l = self.listeners.lock();
        // The Unix socket stays (`unixsocket` cannot change at run time).
        let (mut unix, tcp): (Vec<_>, Vec<_>) =
            std::mem::take(&mut l.list).into_iter().partition(|x| matches!(x.get_ref(), Listener::Unix(..)));
        drop(tcp);
        let tcp = |v: Vec<std::net::TcpListener>| register(v.into_iter().map(Listener::Tcp).collect());
        let result = match super::listen_all(bind, port, backlog) {
            Ok(new) => {
                let addr = new[0].local_addr();
                l.list = tcp(new);
                addr
            }
            Err(e) => {
                match super::listen_all(old_bind, old_port, backlog) {
                    Ok(old) => l.list = tcp(old),
                    Err(e2) => tracing::error!("cannot listen again on {old_bind} port {old_port}: {e2}"),
                }
                Err(e)
            }
        };
        l.list.append(&mut unix);
        if let Some(w) = &l.waker {
            w.wake_by_ref();
        }
        result
    }

    fn stop_listening(&self) {
        self.close_listeners();
    }

    fn change_node(&self, target: Arc<Shared>, change: crate::replication::down::Change, waiter: Option<u64>) {
        self.runtime.spawn(super::crash::change(self.shared.upgrade(), target, change, waiter));
    }

    fn exchange(
        &self,
        host: &str,
        port: &str,
        request: &[u8],
        replies: usize,
        timeout: std::time::Duration,
    ) -> Result<Vec<Vec<u8>>, ExchangeError> {
        super::outbound::exchange(host, port, request, replies, timeout)
    }

    fn sleep(&self, d: std::time::Duration) {
        std::thread::sleep(d);
    }
}
