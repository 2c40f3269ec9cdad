//! The only place that knows RESP.
//!
//! * `parse` turns bytes from a client into commands (`Vec<Bytes>`), the
//!   way Redis's `processMultibulkBuffer` / `processInlineBuffer` do, with the
//!   same protocol error texts.
//! * `reply` holds the one [`Reply`] type every command produces and its
//!   RESP2 / RESP3 encoders ([`Resp`]).

pub(crate) mod parse;
mod reply;

pub use parse::{split_args, ProtocolError, RequestParser};
pub use reply::{Reply, Resp};
