//! hash integration tests (over TCP with the redis crate).
