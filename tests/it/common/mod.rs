//! Shared helpers for the integration tests: servers, clients, raw RESP.
// Each test module uses a different subset of these helpers.
#![allow(dead_code)]

pub mod binary;
pub mod oracle;
pub mod resp;
pub mod skip;

use rlockd::Server;

/// Starts an in-process rlockd on a free port.
pub fn server() -> Server {
    Server::start().expect("start rlockd")
}

/// A synchronous `redis` crate connection to `srv`.
pub fn conn(srv: &Server) -> redis::Connection {
    redis::Client::open(srv.url()).expect("client").get_connection().expect("connect")
}

/// An async (tokio) multiplexed `redis` crate connection to `srv`.
pub async fn aconn(srv: &Server) -> redis::aio::MultiplexedConnection {
    redis::Client::open(srv.url()).expect("client").get_multiplexed_async_connection().await.expect("connect")
}
