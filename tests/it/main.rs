//! The integration test binary: real TCP, the real `redis` client crate,
//! and a real redis-server for the differential suite.

mod common;

mod acl;
mod bench_tool;
mod binary;
mod blocking;
mod cluster;
mod command_meta;
mod compat;
mod config;
mod container;
mod control;
mod diff;
mod diff_random;
mod dump;
mod examples;
mod failover_clients;
mod faults;
mod front_ends;
mod fuzz_regressions;
mod hash;
mod hash_ttl;
mod hll_geo;
mod keyspace;
mod layering;
mod lifecycle;
mod limits;
mod list;
mod locks;
mod lua_lib_cves;
mod lua_vm_cves;
mod ordering;
mod protocol;
mod pubsub;
mod readme;
#[rustfmt::skip] // the README's lines, as written there
mod readme_rust;
mod redis84;
mod replication;
mod replication_diff;
mod replication_tcp;
mod rlockd_tree;
mod scripting;
mod sentinel_crash;
mod server_cmds;
mod set;
mod soak;
mod stream;
mod strings;
mod tracking;
mod tx;
mod unix_socket;
mod watchdog;
mod zset;
