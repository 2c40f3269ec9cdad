//! A Sentinel's sockets (the only file of the Sentinel that has any): its
//! listener, the accept loop, and one task per client that reads command
//! lines, runs them (`commands.rs`), writes the replies, and writes the
//! group's events to a subscriber as they come.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::commands::{self, Session};
use super::group::Member;
use crate::protocol::{Reply, RequestParser};

/// A listener on `addr` (port 0: a free one).
pub(super) fn bind(addr: SocketAddr) -> Result<std::net::TcpListener, crate::error::Error> {
    crate::server::listen(addr, 511).map_err(|source| crate::error::Error::Bind { addr: addr.to_string(), source })
}

/// Accepts clients until `shutdown`.
pub(super) async fn serve(
    listener: std::net::TcpListener,
    me: Arc<Member>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
    loop {
        tokio::select! {
            _ = crate::core::shutdown_requested(&mut shutdown) => return,
            r = listener.accept() => match r {
                Ok((socket, _)) => {
                    let _ = socket.set_nodelay(true);
                    tokio::spawn(connection(socket, me.clone(), shutdown.clone()));
                }
                Err(e) => tracing::warn!("sentinel accept failed: {e}"),
            },
        }
    }
}

/// One client: each batch of command lines read is answered in one write.
async fn connection(
    mut socket: tokio::net::TcpStream,
    me: Arc<Member>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let mut s = Session::new(me.next_client_id());
    let mut events = me.bus.subscribe();
    let mut parser = RequestParser::new();
    let mut buf = BytesMut::with_capacity(4096);
    let mut out = BytesMut::new();
    loop {
        tokio::select! {
            _ = crate::core::shutdown_requested(&mut shutdown) => return,
            ev = events.recv() => {
                let Ok(ev) = ev else { continue };
                s.subs.deliver(s.resp, ev.kind, &ev.text, &mut out);
            }
            r = socket.read_buf(&mut buf) => {
                match r {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                loop {
                    match parser.next(&mut buf) {
                        Ok(Some(argv)) => {
                            let reply = commands::run(&me, &mut s, &argv).await;
                            reply.encode(s.resp, &mut out);
                            if s.close {
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            Reply::error(e.reply_text()).encode(s.resp, &mut out);
                            s.close = true;
                            break;
                        }
                    }
                }
            }
        }
        if !out.is_empty() && socket.write_all(&out).await.is_err() {
            return;
        }
        out.clear();
        if s.close {
            return;
        }
    }
}
