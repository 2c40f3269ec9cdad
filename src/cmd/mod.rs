//! The command table and dispatch.
//!
//! Every command is one row ([`CommandSpec`]): name, handler, arity
//! (negative = at least), flags, key positions, ACL categories, and
//! subcommands for container commands (`CLIENT`, `CONFIG`, `SCRIPT`…). Each
//! type family registers its own block of rows (`generic`, `string`, `hash`…);
//! [`families`] lists them and [`table`] holds the table built from them.
//! Behaviour that Redis keys on a command itself is a flag of its row
//! ([`flags`], the hidden ones included), never a comparison of names.
//!
//! Handlers are plain synchronous functions `(&mut Ctx, &[Bytes]) ->
//! CmdResult`: they never touch a socket, so the same implementation serves a
//! TCP client ([`dispatch::process`]), a Lua `redis.call` ([`call::call`] via
//! the scripting layer) and `EXEC`.
//!
//! The room's floors, lowest first: [`spec`] (the types), [`registry`],
//! [`util`], [`help`], [`meta`]; [`session`] and [`access`]; [`call`]; the
//! command families; [`dispatch`].
//!
//! **Invariant:** [`dispatch::process`] applies Redis's pre-call checks in
//! Redis's order; [`call::call`] is the only place a handler is invoked, and
//! the only place the command's frozen time is taken (at nesting depth 0).

pub mod access;
pub mod acl;
pub mod bitmap;
pub mod blocking;
pub mod call;
pub mod client;
pub mod cluster;
pub mod command;
pub mod config;
pub mod connection;
pub(crate) mod control;
pub(crate) mod crash;
pub mod diag;
pub mod dispatch;
pub mod dump;
pub mod generic;
pub mod geo;
pub mod hash;
pub mod help;
pub mod hll;
pub mod info;
pub(crate) mod limits;
pub mod list;
pub mod meta;
pub mod migrate;
pub mod pubsub;
pub mod registry;
pub(crate) mod replication;
pub mod scripting;
pub mod server;
pub mod session;
pub mod set;
pub mod sort;
pub mod spec;
pub mod standalone;
pub mod stream;
pub mod string;
pub mod tx;
pub mod util;
pub mod zset;

use std::sync::OnceLock;

// The types and the lookup every family uses, at the room's door.
pub(crate) use registry::c_str_prefix;
pub use registry::{arity_ok, lookup, unknown_command_error, unknown_subcommand_error, Lookup, Table};
pub use spec::{arg, cmd, container, flag, flags, no_ops, op, Arg, Command, CommandSpec, Ctx, Op, OpTable};

/// Families and their `COMMAND DOCS` group names.
pub fn families() -> [(&'static str, &'static [CommandSpec]); 29] {
    [
        ("generic", generic::COMMANDS),
        ("string", string::COMMANDS),
        ("server", server::COMMANDS),
        ("server", connection::COMMANDS),
        ("server", client::COMMANDS),
        ("server", config::COMMANDS),
        ("server", command::COMMANDS),
        ("server", info::COMMANDS),
        ("server", diag::COMMANDS),
        ("hash", hash::COMMANDS),
        ("list", list::COMMANDS),
        ("set", set::COMMANDS),
        ("sorted-set", zset::COMMANDS),
        ("scripting", scripting::COMMANDS),
        ("pubsub", pubsub::COMMANDS),
        ("transactions", tx::COMMANDS),
        ("list", blocking::LIST_COMMANDS),
        ("sorted-set", blocking::ZSET_COMMANDS),
        ("cluster", cluster::COMMANDS),
        ("server", acl::COMMANDS),
        ("bitmap", bitmap::COMMANDS),
        ("generic", sort::COMMANDS),
        ("server", standalone::COMMANDS),
        ("server", replication::COMMANDS),
        ("stream", stream::COMMANDS),
        ("geo", geo::COMMANDS),
        ("hyperloglog", hll::COMMANDS),
        ("generic", dump::COMMANDS),
        ("server", control::COMMANDS),
    ]
}

/// The command table (built once per process; immutable).
pub fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| registry::build(&families()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_builds_and_flags_parse() {
        let t = table();
        assert!(t.get(b"GET").is_some());
        assert!(t.get(b"get").is_some());
        let c = t.get(b"client").unwrap();
        assert!(c.subcommands.contains_key(&b"setname"[..]));
        for c in t.commands.values() {
            assert!(c.spec.arity != 0, "{} has arity 0", c.fullname);
            for s in c.subcommands.values() {
                assert!(s.spec.arity != 0, "{} has arity 0", s.fullname);
            }
        }
    }

    #[test]
    fn hidden_flags_stay_inside() {
        let t = table();
        let exec = t.get(b"exec").unwrap();
        assert!(exec.has(flags::RUNS_QUEUE) && exec.has(flags::NOT_QUEUED));
        assert!(!exec.spec.flags.contains("runs_queue"), "COMMAND INFO prints the row's Redis flags only");
        // A container's inherited flag holds for its subcommands.
        let setname = &t.get(b"client").unwrap().subcommands[&b"setname"[..]];
        assert!(setname.has(flags::KEEPS_CACHING));
        assert!(!t.get(b"get").unwrap().has(flags::KEEPS_CACHING));
        // `SLOWLOG RESET` is not `RESET`: flags belong to the command, not its name.
        let slowlog_reset = &t.get(b"slowlog").unwrap().subcommands[&b"reset"[..]];
        assert!(!slowlog_reset.has(flags::SUBSCRIBED_OK) && !slowlog_reset.has(flags::NOT_QUEUED));
    }

    #[test]
    #[should_panic(expected = "unknown command flag")]
    fn printed_flags_refuse_hidden_names() {
        flags::parse(std::hint::black_box("write runs_queue"));
    }
}
