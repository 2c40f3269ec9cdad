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
//! ## What is public
//! * [`Server`] — a running server on its own threads, configured by
//!   [`Config`], stopped by [`Server::stop`] or by dropping it; its
//!   [`Clock`] can be frozen and advanced by tests.
//! * [`Cluster`] — a Redis Cluster of servers in one process
//!   ([`Server::start_cluster`], [`ClusterConfig`]): cluster clients follow
//!   its `MOVED` and `ASK` replies; tests move slots and take nodes down.
//! * [`protocol::Reply`] — a reply, as commands produce it, with its RESP2
//!   and RESP3 encodings.
//! * [`testing`] — commands run without sockets ([`testing::Harness`]) and
//!   the checks the fuzz targets drive.
//! * [`locks`] — the lock scripts rlockd ships (Redisson's,
//!   redis-py's, redlock's), for clients that load them.
//! * [`Error`] — why a server could not start.
//! * Topologies: [`Server::start_with_replicas`] and the replication test
//!   controls ([`ReplicationControl`], [`Server::failover`]), and
//!   [`Sentinel`] groups watching the primaries.
//! * For the `rlockd` binary and other embedders: [`memory::CountingAlloc`]
//!   (exact `used_memory`), [`ParamCheck`] (redis.conf directives checked
//!   as the server checks them), [`protocol::split_args`], [`REDIS_VERSION`],
//!   [`set_allocator_name`]; and the lock views of the test-control API
//!   ([`LockView`], [`Holder`], [`Waiter`]).
//!
//! Everything else (the command table, the keyspace, the Lua engine) is
//! internal; ARCHITECTURE.md describes it.
//!
//! The library only emits `tracing` events; installing a subscriber is the
//! binary's (or your test's) business.

#![warn(clippy::all)]
#![warn(missing_docs)]

// The modules form a stack (drawn in ARCHITECTURE.md, kept one by
// `tests/it/layering.rs`). Only what users need is public.
mod acl;
mod blocking;
mod client;
mod clock;
mod cluster;
mod cmd;
mod config;
mod control;
mod core;
mod db;
mod error;
mod glob;
pub mod memory;
mod monitor;
mod num;
pub mod protocol;
mod pubsub;
mod replication;
mod script;
mod sentinel;
mod server;
mod signal;
pub mod testing;
mod tracking;
mod tx;
mod version;

pub use clock::Clock;
pub use config::{Config, ParamCheck};
pub use control::faults::{Fault, FaultInfo, FaultKind, Scope as FaultScope};
pub use control::history::LockEvent;
pub use control::locks::{Holder, LockView, Waiter};
pub use control::record as recording;
pub use control::timeline::{Range as TimelineRange, Timeline};
pub use error::Error;
pub use script::locks;
pub use script::ScriptProfile;
pub use sentinel::Sentinel;
pub use server::cluster::{Cluster, ClusterConfig};
pub use server::replication::ReplicationControl;
pub use server::{ClaimGuard, Server};
pub use version::{set_allocator_name, REDIS_VERSION};
