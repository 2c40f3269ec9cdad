//! keyspace integration tests.
