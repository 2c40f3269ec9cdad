//! Sentinel (see below).
