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

/// A server configured as the oracle's redis-server is: `DEBUG` allowed
/// (`enable-debug-command yes`), the rest at its defaults.
pub fn debug_server() -> Server {
    let params = vec![("enable-debug-command".to_string(), "yes".to_string())];
    Server::start_with(rlockd::Config { params, ..Default::default() }).expect("start rlockd")
}

/// A synchronous `redis` crate connection to `srv`.
pub fn conn(srv: &Server) -> redis::Connection {
    redis::Client::open(srv.url()).expect("client").get_connection().expect("connect")
}

/// An async (tokio) multiplexed `redis` crate connection to `srv`.
pub async fn aconn(srv: &Server) -> redis::aio::MultiplexedConnection {
    redis::Client::open(srv.url()).expect("client").get_multiplexed_async_connection().await.expect("connect")
}

/// `blocked_clients` from `INFO clients`.
pub fn blocked_clients(c: &mut redis::Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("clients").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("blocked_clients in INFO clients")
}

/// Waits until exactly `n` clients are blocked (fails after 5 s).
pub fn wait_blocked(c: &mut redis::Connection, n: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while blocked_clients(c) != n {
        assert!(std::time::Instant::now() < deadline, "expected {n} blocked client(s)");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
