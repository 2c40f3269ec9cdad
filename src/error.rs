//! Errors.
//!
//! [`CmdError`] is what a command handler returns on failure; its `Display`
//! is the exact Redis error text (code included), and it converts into an
//! error [`Reply`](crate::protocol::Reply). [`Error`] is the library's
//! top-level error for starting and running a server.

use bytes::Bytes;

/// A command failure, worded exactly as Redis 7 words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CmdError {
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    #[error("ERR value is not an integer or out of range")]
    NotInteger,
    #[error("ERR value is not a valid float")]
    NotFloat,
    #[error("ERR syntax error")]
    Syntax,
    #[error("ERR no such key")]
    NoSuchKey,
    #[error("ERR index out of range")]
    OutOfRange,
    #[error("ERR increment or decrement would overflow")]
    Overflow,
    #[error("ERR wrong number of arguments for '{0}' command")]
    WrongArity(String),
    #[error("ERR DB index is out of range")]
    DbIndex,
    #[error("NOAUTH Authentication required.")]
    NoAuth,
    #[error("ERR value is out of range")]
    ValueOutOfRange,
    #[error("ERR timeout is negative")]
    NegativeTimeout,
    #[error("ERR timeout is not an integer or out of range")]
    TimeoutNotInteger,
    /// Redis 7.2+: a timeout whose deadline would overflow.
    #[error("ERR timeout is out of range")]
    TimeoutOutOfRange,
    #[error("ERR timeout is not a float or out of range")]
    TimeoutNotFloat,
    #[error("ERR source and destination objects are the same")]
    SameObject,
    #[error("ERR increment would produce NaN or Infinity")]
    NanOrInfinity,
    #[error("ERR count should be greater than or equal to -1")]
    CountBelowMinusOne,
    /// Any other text, code included (`"ERR ..."`, `"NOSCRIPT ..."`).
    #[error("{}", String::from_utf8_lossy(.0))]
    Raw(Bytes),
}

impl CmdError {
    /// An error from its full text, e.g. `CmdError::custom("ERR invalid expire time in 'set' command")`.
    pub fn custom(s: impl Into<String>) -> CmdError {
        CmdError::Raw(Bytes::from(s.into()))
    }

    /// An error echoing a client's argument the way Redis's `%s` does: its
    /// bytes as sent (not a UTF-8 rendering), up to the first NUL.
    pub fn echo(prefix: &str, arg: &[u8], suffix: &str) -> CmdError {
        let arg = &arg[..arg.iter().position(|&c| c == 0).unwrap_or(arg.len())];
        CmdError::Raw([prefix.as_bytes(), arg, suffix.as_bytes()].concat().into())
    }

    /// The full error text as bytes.
    pub fn to_bytes(&self) -> Bytes {
        match self {
            CmdError::Raw(b) => b.clone(),
            other => Bytes::from(other.to_string()),
        }
    }
}

impl From<crate::num::NotInteger> for CmdError {
    fn from(_: crate::num::NotInteger) -> Self {
        CmdError::NotInteger
    }
}

impl From<CmdError> for crate::protocol::Reply {
    fn from(e: CmdError) -> Self {
        crate::protocol::Reply::Error(e.to_bytes())
    }
}

/// Result of a command handler.
pub type CmdResult = Result<crate::protocol::Reply, CmdError>;

/// Errors from starting or running a server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The listening socket could not be bound.
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why binding failed.
        #[source]
        source: std::io::Error,
    },
    /// The server's threads could not be started.
    #[error("cannot start the server runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// A configuration value was refused (the text says which and why).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A topology operation could not be carried out: a failover, a node
    /// taken down or brought back, replicas attaching (the text says what).
    #[error("topology: {0}")]
    Topology(String),
}
