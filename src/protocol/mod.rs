//! The only place that knows RESP.
//!
//! * `parse` turns bytes from a client into commands (`Vec<Bytes>`), the
//!   way Redis's `processMultibulkBuffer` / `processInlineBuffer` do, with the
//!   same protocol error texts.
//! * `reply` holds the one [`Reply`] type every command produces and its
//!   RESP2 / RESP3 encoders ([`Resp`]).
//! * `decode` reads an encoded reply back into a [`Reply`] (the command
//!   metadata rlockd embeds, recorded from a Redis server; a `MIGRATE`
//!   target's replies).
//! * `replica` reads what a replica's primary sends outside the command
//!   stream: the handshake's replies and the RDB transfer's header.
//! * `frames` cuts a stream of replies into whole frames and tells a
//!   pub/sub message from a reply (the recorder; the binary's replay).
//!
//! Nothing outside this module writes or reads RESP framing: messages
//! queued for a client (pub/sub, invalidations, `MONITOR` lines) and the
//! errors a connection gets before it has a client are [`Reply`] values
//! encoded here.

mod decode;
pub mod frames;
pub(crate) mod parse;
mod replica;
mod reply;
mod shared;

pub(crate) use decode::decode;
pub use parse::{split_args, ProtocolError, RequestParser};
pub(crate) use replica::{primary_line, PrimaryLine};
pub(crate) use reply::{payload_header, push_header};
pub use reply::{InlineBytes, Reply, Resp};
pub use shared::SharedBytes;
