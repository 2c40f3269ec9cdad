//! protocol integration tests.
