//! # rlockd
//!
//! A small, fast, embeddable in-memory server that speaks the Redis
//! protocol (RESP2 and RESP3) and runs Lua lock scripts — Redisson's,
//! redis-py's, redlock's — exactly as Redis 7 does.
//!
//! ```no_run
//! let srv = rlockd::Server::start().expect("start rlockd");
//! println!("connect to {}", srv.url()); // redis://127.0.0.1:PORT
//! // ... point any Redis client at it ...
//! drop(srv); // stops the server
//! ```
//!
//! ## Layers
//! * [`server`] — listener, connection tasks, lifecycle ([`Server`]).
//! * [`protocol`] — the only code that knows RESP: request parsing and the
//!   one [`Reply`](protocol::Reply) type with its RESP2/RESP3 encoders.
//! * [`cmd`] — the command table and dispatch; one handler per command,
//!   shared by TCP clients, `EXEC` and Lua's `redis.call`.
//! * [`db`] — keyspace, values, expiry. [`core`] — the state behind the one
//!   lock that makes commands and scripts atomic.
//! * [`script`] — the Lua engine. [`pubsub`] — channels and delivery.
//!
//! The library only emits `tracing` events; installing a subscriber is the
//! binary's (or your test's) business.

#![warn(clippy::all)]

pub mod blocking;
pub mod client;
pub mod clock;
pub mod cmd;
pub mod config;
pub mod core;
pub mod db;
pub mod error;
pub mod glob;

static ALLOCATOR: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Names the process's allocator for `INFO memory` (`mem_allocator`); the
/// `rlockd` binary sets it when it allocates with jemalloc.
pub fn set_allocator_name(name: &'static str) {
    let _ = ALLOCATOR.set(name);
}

/// The allocator `INFO memory` reports (`libc` unless told otherwise).
pub fn allocator_name() -> &'static str {
    ALLOCATOR.get().copied().unwrap_or("libc")
}
pub mod monitor;
pub mod num;
pub mod protocol;
pub mod pubsub;
pub mod script;
pub mod server;
pub mod testing;
pub mod tx;
pub mod version;

pub use config::Config;
pub use error::Error;
pub use server::Server;
