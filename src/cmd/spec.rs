//! The command table's types: what a handler gets ([`Ctx`]), one row of the
//! table ([`CommandSpec`], built with [`cmd`]) and its [`flags`], and a row
//! as dispatch finds it ([`Command`]).

use std::collections::HashMap;

use bytes::Bytes;

use crate::client::ClientState;
use crate::core::{Core, Shared};
use crate::db::DbView;
use crate::error::{CmdError, CmdResult};
use crate::version::{Profile, Version};

/// Command name → command (lower-case names; looked up once per command,
/// so hashed with the keyspace's fast hasher rather than SipHash).
pub type NameMap = HashMap<Vec<u8>, Command, crate::db::Hasher>;

/// What a handler gets: the whole server state (under the core lock), the
/// calling client, and the server's shared parts.
pub struct Ctx<'a> {
    pub core: &'a mut Core,
    pub client: &'a mut ClientState,
    pub shared: &'a Shared,
}

impl Ctx<'_> {
    /// Runs `f` with key lookups counted as reads or not (keyspace hits and
    /// misses): a write command's `lookupKeyRead` of a source key, or a
    /// read-only command Redis does not count (`MEMORY USAGE`, `RANDOMKEY`).
    pub fn with_read_lookups<R>(&mut self, on: bool, f: impl FnOnce(&mut Self) -> R) -> R {
        let prev = std::mem::replace(&mut self.core.ks.sig.read_lookups, on);
        let r = f(self);
        self.core.ks.sig.read_lookups = prev;
        r
    }

    /// The client's selected database, at the command's frozen time.
    pub fn db(&mut self) -> DbView<'_> {
        self.core.ks.view(self.client.db())
    }

    /// The command's frozen time (unix ms).
    pub fn now_ms(&self) -> u64 {
        self.core.ks.now
    }
}

/// A command handler.
pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> CmdResult;

/// Command flag bits (the names `COMMAND INFO` prints).
pub mod flags {
    pub const WRITE: u64 = 1 << 0;
    pub const READONLY: u64 = 1 << 1;
    pub const DENYOOM: u64 = 1 << 2;
    pub const ADMIN: u64 = 1 << 3;
    pub const PUBSUB: u64 = 1 << 4;
    pub const NOSCRIPT: u64 = 1 << 5;
    pub const BLOCKING: u64 = 1 << 6;
    pub const LOADING: u64 = 1 << 7;
    pub const STALE: u64 = 1 << 8;
    pub const SKIP_MONITOR: u64 = 1 << 9;
    pub const SKIP_SLOWLOG: u64 = 1 << 10;
    pub const FAST: u64 = 1 << 11;
    pub const NO_AUTH: u64 = 1 << 12;
    pub const MAY_REPLICATE: u64 = 1 << 13;
    pub const NO_MANDATORY_KEYS: u64 = 1 << 14;
    pub const NO_MULTI: u64 = 1 << 15;
    pub const MOVABLEKEYS: u64 = 1 << 16;
    pub const ALLOW_BUSY: u64 = 1 << 17;
    pub const NO_ASYNC_LOADING: u64 = 1 << 18;
    pub const ASKING: u64 = 1 << 19;

    // Flags of rlockd's own: behaviour dispatch gives a row that Redis
    // keys on the command itself. `COMMAND INFO` never prints them (rows
    // add them with `CommandSpec::hidden_flags`).
    /// Runs the queued transaction (`EXEC`): refused, it discards the
    /// transaction (`EXECABORT`); it writes (or may grow memory) if a
    /// queued command does.
    pub const RUNS_QUEUE: u64 = 1 << 32;
    /// Runs at once inside `MULTI` instead of being queued (`EXEC`,
    /// `DISCARD`, `MULTI`, `WATCH`, `QUIT`, `RESET`).
    pub const NOT_QUEUED: u64 = 1 << 33;
    /// Ends a transaction, so it passes the out-of-memory check of a
    /// command sent inside `MULTI` (`EXEC`, `DISCARD`, `QUIT`, `RESET`).
    pub const ENDS_MULTI: u64 = 1 << 34;
    /// Allowed to a RESP2 client in subscribed context.
    pub const SUBSCRIBED_OK: u64 = 1 << 35;
    /// Runs a script: the write and deny-oom flags the script declares
    /// replace the command's (`EVAL`, `FCALL` and their variants).
    pub const RUNS_SCRIPT: u64 = 1 << 36;
    /// Its first argument names the script it runs, a sha1 or a function
    /// (`EVALSHA`, `FCALL` and their read-only variants), as the lock
    /// history records it.
    pub const NAMES_SCRIPT: u64 = 1 << 37;
    /// Keeps `CLIENT CACHING` in force for the next command (the `CLIENT`
    /// subcommands; a container's flag holds for its subcommands).
    pub const KEEPS_CACHING: u64 = 1 << 38;
    /// Runs while `CLIENT PAUSE` holds other clients (`CLIENT PAUSE`,
    /// `CLIENT UNPAUSE`, test control).
    pub const PAUSE_EXEMPT: u64 = 1 << 39;
    /// Its first argument is a channel the ACL checks (`PUBLISH`, `SPUBLISH`).
    pub const CHANNEL_ARG: u64 = 1 << 40;
    /// Every argument is a channel the ACL checks (`SUBSCRIBE`, `SSUBSCRIBE`).
    pub const CHANNEL_ARGS: u64 = 1 << 41;
    /// Every argument is a channel pattern the ACL checks (`PSUBSCRIBE`).
    pub const PATTERN_ARGS: u64 = 1 << 42;
    /// rlockd's test control (`RLOCKD`): unknown while `test-control` is
    /// off, left out of every listing of the table, never faulted.
    pub const TEST_CONTROL: u64 = 1 << 43;
    /// Refused unless `enable-debug-command` allows the client (Redis's
    /// `CMD_PROTECTED`: `DEBUG`).
    pub const PROTECTED: u64 = 1 << 44;
    /// Recorded for the replicas whenever it succeeds, changed data or not
    /// (Redis's `forceCommandPropagation`: `PUBLISH`, `SPUBLISH`, `FUNCTION
    /// LOAD`/`DELETE`/`FLUSH`/`RESTORE`).
    pub const ALWAYS_PROPAGATED: u64 = 1 << 46;
    /// `noscript` up to Redis 7.0 only: from 7.2 a script may call it and it
    /// does not block there (the blocking pops and moves, `WAIT`).
    pub const SCRIPTS_FROM_7_2: u64 = 1 << 47;
    /// Runs other commands, which the replicas receive instead of it (a
    /// script, `EXEC`'s queue).
    pub const RUNS_OTHERS: u64 = RUNS_SCRIPT | RUNS_QUEUE;

    /// The flags of a container row that hold for its subcommands too.
    pub const INHERITED: u64 = KEEPS_CACHING;

    /// rlockd's own flags by name, for `CommandSpec::hidden_flags`.
    pub const HIDDEN_NAMES: &[(&str, u64)] = &[
        ("runs_queue", RUNS_QUEUE),
        ("not_queued", NOT_QUEUED),
        ("ends_multi", ENDS_MULTI),
        ("subscribed_ok", SUBSCRIBED_OK),
        ("runs_script", RUNS_SCRIPT),
        ("names_script", NAMES_SCRIPT),
        ("keeps_caching", KEEPS_CACHING),
        ("pause_exempt", PAUSE_EXEMPT),
        ("channel_arg", CHANNEL_ARG),
        ("channel_args", CHANNEL_ARGS),
        ("pattern_args", PATTERN_ARGS),
        ("test_control", TEST_CONTROL),
        ("protected", PROTECTED),
        ("always_propagated", ALWAYS_PROPAGATED),
        ("scripts_from_7_2", SCRIPTS_FROM_7_2),
    ];

    pub const NAMES: &[(&str, u64)] = &[
        ("write", WRITE),
        ("readonly", READONLY),
        ("denyoom", DENYOOM),
        ("admin", ADMIN),
        ("pubsub", PUBSUB),
        ("noscript", NOSCRIPT),
        ("blocking", BLOCKING),
        ("loading", LOADING),
        ("stale", STALE),
        ("skip_monitor", SKIP_MONITOR),
        ("skip_slowlog", SKIP_SLOWLOG),
        ("fast", FAST),
        ("no_auth", NO_AUTH),
        ("may_replicate", MAY_REPLICATE),
        ("no_mandatory_keys", NO_MANDATORY_KEYS),
        ("no_multi", NO_MULTI),
        ("movablekeys", MOVABLEKEYS),
        ("allow_busy", ALLOW_BUSY),
        ("no_async_loading", NO_ASYNC_LOADING),
        ("asking", ASKING),
    ];

    /// Parses a space-separated list of Redis's flags. It runs when the
    /// table is compiled (rows are `static`): an unknown name is a compile
    /// error.
    pub const fn parse(s: &str) -> u64 {
        parse_in(s, false)
    }

    /// Parses a list of Redis's flags and rlockd's own ([`HIDDEN_NAMES`]).
    pub const fn parse_hidden(s: &str) -> u64 {
        parse_in(s, true)
    }

    const fn parse_in(s: &str, hidden: bool) -> u64 {
        let b = s.as_bytes();
        let mut bits = 0;
        let mut i = 0;
        while i < b.len() {
            if b[i] == b' ' {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && b[i] != b' ' {
                i += 1;
            }
            bits |= match bit_in(NAMES, b, start, i) {
                Some(bit) => bit,
                None if hidden => match bit_in(HIDDEN_NAMES, b, start, i) {
                    Some(bit) => bit,
                    None => panic!("unknown command flag in the command table"),
                },
                None => panic!("unknown command flag in the command table"),
            };
        }
        bits
    }

    /// The bit of the flag named by `b[start..end]` in `names`.
    const fn bit_in(names: &[(&str, u64)], b: &[u8], start: usize, end: usize) -> Option<u64> {
        let mut n = 0;
        while n < names.len() {
            let name = names[n].0.as_bytes();
            if name.len() == end - start {
                let mut k = 0;
                while k < name.len() && name[k] == b[start + k] {
                    k += 1;
                }
                if k == name.len() {
                    return Some(names[n].1);
                }
            }
            n += 1;
        }
        None
    }
}

/// One row of the command table.
#[derive(Debug)]
pub struct CommandSpec {
    /// Lower-case name (`"get"`; for a subcommand just `"setname"`).
    pub name: &'static str,
    pub handler: Handler,
    pub arity: i32,
    /// Space-separated flags, as `COMMAND INFO` prints them.
    pub flags: &'static str,
    /// The same flags as bits ([`flags`]), computed when the table is
    /// compiled, with the hidden ones.
    pub flag_bits: u64,
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    /// Space-separated ACL categories (`"@write @string @fast"`).
    pub acl: &'static str,
    pub subcommands: &'static [CommandSpec],
    /// One-line summary for `COMMAND DOCS`.
    pub summary: &'static str,
    /// Redis version that introduced the command.
    pub since: &'static str,
    /// The Valkey version that introduced it: a command only Valkey has
    /// (`since` empty), or one Valkey added apart from Redis (empty: in
    /// Valkey while Redis had it by 7.2.4).
    pub valkey_since: &'static str,
    /// A test-control subcommand's arguments, operations and `RLOCKD HELP`
    /// lines (`cmd/control.rs`).
    pub ops: Option<&'static OpTable>,
    /// The arity Redis 7.0 had where 7.2 changed it (0: the same), which
    /// `COMMAND INFO` prints and the handler enforces under 7.0.
    pub arity_7_0: i32,
    /// The flags and ACL categories Redis 7.2 and later print where they
    /// changed (empty: the same as `flags` / `acl`); behaviour that changed
    /// with them is a hidden flag (`scripts_from_7_2`).
    pub flags_7_2: &'static str,
    pub acl_7_2: &'static str,
    /// What Valkey 8 prints as the row's flags, where it differs.
    pub flags_valkey: &'static str,
}

/// Builds a table row.
#[allow(clippy::too_many_arguments)]
pub const fn cmd(
    name: &'static str,
    handler: Handler,
    arity: i32,
    flags: &'static str,
    first_key: i32,
    last_key: i32,
    step: i32,
    acl: &'static str,
) -> CommandSpec {
    CommandSpec {
        name,
        handler,
        arity,
        flags,
        flag_bits: flags::parse(flags),
        first_key,
        last_key,
        step,
        acl,
        subcommands: &[],
        summary: "",
        since: "",
        valkey_since: "",
        ops: None,
        arity_7_0: 0,
        flags_7_2: "",
        acl_7_2: "",
        flags_valkey: "",
    }
}

impl CommandSpec {
    /// Adds subcommands (this row becomes a container).
    pub const fn subs(mut self, subs: &'static [CommandSpec]) -> Self {
        self.subcommands = subs;
        self
    }
    /// Adds flags that dispatch honours but `COMMAND INFO` does not print:
    /// rlockd's own ([`flags::HIDDEN_NAMES`]), or Redis's where Redis too
    /// keeps them inside (Redis 7.0's PFCOUNT is `may_replicate` inside: it
    /// may write the value's cached cardinality, so read-only scripts
    /// refuse it).
    pub const fn hidden_flags(mut self, flags: &'static str) -> Self {
        self.flag_bits |= flags::parse_hidden(flags);
        self
    }
    /// Adds `COMMAND DOCS` text.
    pub const fn doc(mut self, summary: &'static str, since: &'static str) -> Self {
        self.summary = summary;
        self.since = since;
        self
    }
    /// A Redis command Valkey added on its own after it forked, from
    /// Valkey `since` (`CLUSTER SLOT-STATS`: Valkey 8.0, Redis 8.2).
    pub const fn valkey_since(mut self, since: &'static str) -> Self {
        self.valkey_since = since;
        self
    }
    /// What Redis 7.2 and later print as the row's flags and ACL categories
    /// (`WAIT` became `blocking`, `@blocking`; the blocking pops lost
    /// `noscript`).
    pub const fn in_7_2(mut self, flags: &'static str, acl: &'static str) -> Self {
        self.flags_7_2 = flags;
        self.acl_7_2 = acl;
        self
    }
    /// What Valkey 8 prints as the row's flags (`no_multi`,
    /// `skip_commandlog`, `loading` on more introspection commands).
    pub const fn in_valkey(mut self, flags: &'static str) -> Self {
        self.flags_valkey = flags;
        self
    }
    /// The flags `COMMAND INFO` prints under `profile`.
    pub fn flags_in(&self, profile: crate::version::Profile) -> &'static str {
        if !self.flags_valkey.is_empty() && profile.is_valkey() {
            self.flags_valkey
        } else if !self.flags_7_2.is_empty() && profile.at_least(7, 2, 0) {
            self.flags_7_2
        } else {
            self.flags
        }
    }
    /// The ACL categories under `profile`.
    pub fn acl_in(&self, profile: crate::version::Profile) -> &'static str {
        if !self.acl_7_2.is_empty() && profile.at_least(7, 2, 0) {
            self.acl_7_2
        } else {
            self.acl
        }
    }
    /// Redis 7.0's arity, where 7.2 changed it (`COMMAND GETKEYS`).
    pub const fn arity_7_0(mut self, arity: i32) -> Self {
        self.arity_7_0 = arity;
        self
    }
    /// Adds a test-control subcommand's operations (`cmd/control.rs`).
    pub const fn ops(mut self, ops: &'static OpTable) -> Self {
        self.ops = Some(ops);
        self
    }
    /// Makes it a command only Valkey has, from Valkey `since`.
    pub const fn valkey_only(mut self, summary: &'static str, since: &'static str) -> Self {
        self.summary = summary;
        self.valkey_since = since;
        self
    }
}

/// One argument of a test-control operation (or of a subcommand without
/// operations), as `RLOCKD HELP` writes it and `RLOCKD SCHEMA` describes it.
#[derive(Debug)]
pub struct Arg {
    /// Its name (`ms`, `replica-port`; for a word alone, as `NOW`, the word).
    pub name: &'static str,
    /// What it is: `integer`, `text`, `key`, `pattern`, `port`, `node`, `choice`
    /// (one of `choices`) or `flag` (the word `token` alone).
    pub kind: &'static str,
    /// The word before its value (`JITTER <ms>`, `KEYS <n>`), or `""`.
    pub token: &'static str,
    pub optional: bool,
    pub choices: &'static [&'static str],
}

/// A required argument of that kind.
pub const fn arg(name: &'static str, kind: &'static str) -> Arg {
    Arg { name, kind, token: "", optional: false, choices: &[] }
}

impl Arg {
    /// Makes it optional.
    pub const fn opt(mut self) -> Arg {
        self.optional = true;
        self
    }
    /// Puts a word before its value.
    pub const fn token(mut self, token: &'static str) -> Arg {
        self.token = token;
        self
    }
    /// Makes it one of `choices` (lower case; sent in any case).
    pub const fn choice(mut self, choices: &'static [&'static str]) -> Arg {
        self.kind = "choice";
        self.choices = choices;
        self
    }
    /// How many words of the command line it takes.
    pub const fn width(&self) -> usize {
        let token = if self.token.is_empty() { 0 } else { 1 };
        let value = if matches!(self.kind.as_bytes(), b"flag") { 0 } else { 1 };
        token + value
    }
}

/// An optional word alone (`NOW`, `TEXT`): its name and the word.
pub const fn flag(name: &'static str, word: &'static str) -> Arg {
    Arg { name, kind: "flag", token: word, optional: true, choices: &[] }
}

/// One operation of a test-control subcommand (`RLOCKD CLOCK ADVANCE`,
/// `RLOCKD FAULT LATENCY`): a row of its subcommand's [`OpTable`].
#[derive(Debug)]
pub struct Op {
    /// Lower-case name.
    pub name: &'static str,
    pub args: &'static [Arg],
    /// Words that may follow the arguments, each with a value, in any
    /// order (`FAULT`'s scope: `command`, `key`, `client`…).
    pub options: &'static [&'static str],
    /// The handler counts its own arguments (options follow them, or a
    /// wrong count has an error of its own); otherwise the runner checks
    /// the count against `args` and answers the table's `unknown` error.
    pub counts_own: bool,
    /// The fields of the map it replies (of each map, for an array of
    /// them), in their order.
    pub fields: &'static [&'static str],
    /// The group it belongs to among its subcommand's operations (`kind`:
    /// a fault kind of `FAULT`), or `""`.
    pub group: &'static str,
    /// Gets the whole command line (`RLOCKD <sub> <op> …`).
    pub handler: Handler,
    /// Its `RLOCKD HELP` lines (empty: described by the lines of the
    /// operation before it, as `CLOCK FREEZE | RESUME`).
    pub help: &'static [&'static str],
}

/// An operation whose count of arguments the runner checks.
pub const fn op(name: &'static str, args: &'static [Arg], handler: Handler, help: &'static [&'static str]) -> Op {
    Op { name, args, options: &[], counts_own: false, fields: &[], group: "", handler, help }
}

impl Op {
    /// Its handler counts its arguments itself.
    pub const fn counts_own(mut self) -> Op {
        self.counts_own = true;
        self
    }
    /// Words with a value that may follow its arguments.
    pub const fn options(mut self, options: &'static [&'static str]) -> Op {
        self.options = options;
        self.counts_own = true;
        self
    }
    /// The fields of the map(s) it replies.
    pub const fn fields(mut self, fields: &'static [&'static str]) -> Op {
        self.fields = fields;
        self
    }
    /// Puts it in a group (`kind`).
    pub const fn group(mut self, group: &'static str) -> Op {
        self.group = group;
        self
    }
    /// Whether `n` words fit its arguments: the required ones and any
    /// choice of the optional ones.
    pub fn count_fits(&self, n: usize) -> bool {
        // The sums the optional arguments can add, as bits (they are few).
        let mut sums: u64 = 1;
        let mut need = 0;
        for a in self.args {
            if a.optional {
                sums |= sums << a.width();
            } else {
                need += a.width();
            }
        }
        n >= need && n - need < 64 && sums & (1 << (n - need)) != 0
    }
}

/// A check an [`OpTable`] makes before it looks its operation up.
pub type OpCheck = fn(&Ctx<'_>) -> Result<(), CmdError>;

/// What a test-control subcommand takes: its own arguments or its
/// operations, its `RLOCKD HELP` lines and how it answers what it does not
/// know. The row's handler is `cmd::control::run_ops` when it has
/// operations.
#[derive(Debug)]
pub struct OpTable {
    /// The subcommand's own arguments (a subcommand without operations:
    /// `LOCKS [<pattern>] [TEXT]`).
    pub args: &'static [Arg],
    pub ops: &'static [Op],
    /// Its `RLOCKD HELP` lines, before its operations'.
    pub help: &'static [&'static str],
    /// The fields of the map(s) it replies (a subcommand without
    /// operations).
    pub fields: &'static [&'static str],
    /// The error for an unknown operation or a wrong count (gets the whole
    /// command line).
    pub unknown: fn(&[Bytes]) -> CmdError,
    /// A check made before the operation is looked up (the cluster's: is
    /// this node one).
    pub check: Option<OpCheck>,
    /// Runs when no operation is named (`CHECK`).
    pub default: Option<Handler>,
}

/// A subcommand's table with no operations.
pub const fn no_ops(args: &'static [Arg], help: &'static [&'static str]) -> OpTable {
    OpTable { args, ops: &[], help, fields: &[], unknown: |_| CmdError::Syntax, check: None, default: None }
}

/// Handler of a container row: never called (dispatch picks a subcommand).
pub fn container(_: &mut Ctx<'_>, _: &[Bytes]) -> CmdResult {
    Err(CmdError::Syntax)
}

/// A resolved command (table row plus what dispatch needs).
#[derive(Debug)]
pub struct Command {
    pub spec: &'static CommandSpec,
    /// Index into per-command statistics.
    pub id: usize,
    /// `"get"`, or `"client|setname"` for a subcommand.
    pub fullname: String,
    pub flags: u64,
    /// The family (`"string"`, `"server"`…), for `COMMAND DOCS`.
    pub group: &'static str,
    pub subcommands: NameMap,
    /// The first version that answers it, per flavour (`version::Flavor`): Redis's
    /// `since`, and for Valkey the Valkey version (what came to Redis after
    /// the 7.2.4 Valkey forked from is not in Valkey).
    pub available: [Version; 2],
}

impl Command {
    pub fn has(&self, f: u64) -> bool {
        self.flags & f != 0
    }

    /// Whether a server answering as `profile` has this command.
    #[inline]
    pub fn answers_in(&self, profile: &Profile) -> bool {
        profile.has(&self.available)
    }
    pub fn is_write(&self) -> bool {
        self.has(flags::WRITE)
    }
}
