//! What the engine needs from the server it runs in.
//!
//! The engine knows nothing of the server: it runs Lua and, when a script
//! calls `redis.call`, asks its [`ScriptHost`] to run the command. The host
//! (the `EVAL`/`FCALL` handlers, in `cmd::scripting`) owns everything on
//! the server's side of a run, as Redis's `script.c` does for
//! `script_lua.c`: the script's pseudo-client, the checks a script's command
//! must pass (unknown command, arity, `noscript`, writes from a read-only
//! script), the busy-script state, and `SCRIPT KILL`.

use bytes::Bytes;

use crate::protocol::Reply;

/// A command the host refused to run for a script; the engine raises it as
/// an error table (`{err = message}`), as Redis does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptErr {
    /// No such command (or subcommand).
    UnknownCommand,
    /// Wrong number of arguments.
    WrongArity,
    /// The command is flagged `noscript`.
    NotAllowed,
    /// A write command from a read-only script (`EVAL_RO`, `no-writes`).
    WriteInReadOnly,
    /// Refused by a server limit, worded with its own code
    /// (`-OOM command not allowed…`, `-NOREPLICAS …`).
    Limit(&'static str),
    /// Refused by the ACL of the script's user (Redis's wording per
    /// reason: command, key or channel, and per version).
    Denied(String),
}

impl ScriptErr {
    /// Redis's error text (raised as `ERR <text>`, or with the code a
    /// leading `-` gives).
    /// (Valkey 8.1 leaves out the word "Redis", but in the refusal of a
    /// `noscript` command.)
    pub fn message(&self, valkey: bool) -> &str {
        match self {
            ScriptErr::UnknownCommand if valkey => "Unknown command called from script",
            ScriptErr::WrongArity if valkey => "Wrong number of args calling command from script",
            ScriptErr::UnknownCommand => "Unknown Redis command called from script",
            ScriptErr::WrongArity => "Wrong number of args calling Redis command from script",
            ScriptErr::NotAllowed => "This Redis command is not allowed from script",
            ScriptErr::WriteInReadOnly => "Write commands are not allowed from read-only scripts.",
            ScriptErr::Limit(text) => text,
            ScriptErr::Denied(text) => text,
        }
    }
}

/// What the host tells the engine about a command it ran for a script:
/// the parts of a script's deterministic profile only the command table
/// knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallInfo {
    /// The command's name (a container's, for a subcommand).
    pub command: &'static str,
    /// How many keys it named.
    pub keys: u32,
    /// It is a write command (its keys count as written, else as read).
    pub write: bool,
    /// Time the command's handler took, as the host measured it for its
    /// own statistics (the engine reads no clock per call).
    pub nanos: u64,
}

/// What the engine tells its host when a script starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunInfo {
    /// The script is a function (`FCALL`), not an `EVAL` script.
    pub is_function: bool,
    /// The script may not write (`EVAL_RO`, `FCALL_RO`, `no-writes`).
    pub readonly: bool,
    /// The script declared `allow-oom`.
    pub allow_oom: bool,
}

/// What the host answers when asked whether to interrupt the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// Go on.
    Continue,
    /// Stop: `SCRIPT KILL` / `FUNCTION KILL`.
    Kill,
    /// Stop: the server is shutting down (`SHUTDOWN NOSAVE`).
    Shutdown,
}

/// The server side of a script run. One host serves one run: [`begin`],
/// then any number of [`call`] and [`interrupt`], then [`end`].
///
/// [`begin`]: ScriptHost::begin
/// [`call`]: ScriptHost::call
/// [`interrupt`]: ScriptHost::interrupt
/// [`end`]: ScriptHost::end
pub trait ScriptHost {
    /// The script starts. Returns true if the host wants [`interrupt`]
    /// asked while the script runs (it has a busy threshold).
    ///
    /// [`interrupt`]: ScriptHost::interrupt
    fn begin(&mut self, run: RunInfo) -> bool;

    /// Runs one command of the script (`redis.call`, `redis.pcall`), its
    /// reply shaped for RESP3 when `resp3` (`redis.setresp(3)`). `Err` is a
    /// refusal before the command ran; a command's own error is an
    /// `Ok(Reply::Error)`, beside what the command was.
    fn call(&mut self, argv: &[Bytes], resp3: bool) -> Result<(Reply, CallInfo), ScriptErr>;

    /// `redis.acl_check_cmd`: whether the script's user may run `argv`;
    /// None if it names no command.
    fn acl_check(&self, argv: &[Bytes]) -> Option<bool>;

    /// Asked between Lua instructions: lets the host serve others while
    /// the script is slow, and says whether to stop the script.
    fn interrupt(&mut self) -> Interrupt;

    /// The script ended with `reply`. `error_counted`: the reply repeats an
    /// error the host already counted (a `redis.call` error returned as is).
    /// Returns the script's time since [`begin`], in nanoseconds.
    ///
    /// [`begin`]: ScriptHost::begin
    fn end(&mut self, reply: &Reply, error_counted: bool) -> u64;
}
