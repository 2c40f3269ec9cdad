//! strings integration tests.
